"""``codemod pr``: publish the verified migration as pull requests, politely and idempotently.

The bot is meant to run unattended (a cron job in CI) against a transformers fork, so it must

* never modify the user's checkout: everything happens in a detached ``git worktree`` of
  ``REMOTE/BASE`` in a temporary directory, removed at the end even on errors;
* publish only verified changes: the engine (``codemod.migrate.run_migration``, injected as
  ``migrate``) keeps only what it verified, and a model is additionally withheld when any of its
  changed classes has a verdict other than ``identical`` (a model's files change together —
  modular sources and the files generated from them — so half a model would be a broken change);
* be quiet when nothing changed: each pull request carries ``<!-- transformers-codemod plan=… -->``,
  a hash of its part of the plan; the same hash means no push and no API write;
* step back when people step in: a branch with a commit by anyone but the bot is left alone, a
  pull request closed without merging keeps its models out until their plan changes, and no more
  than ``--max-open`` bot pull requests are open at once;
* never leak the token (it stays in an HTTP header; every message is redacted) and never leave a
  half-done state unexplained: an error says what was already pushed and that the next run reuses it.

:func:`run_pr` runs the stages in this order, the side effects at either end and the pure planning
between them: :mod:`.branches` fetches the base and the bot's branches and makes the worktree the
engine migrates; :mod:`.plan` screens, groups and describes the result and, from what the remote and
GitHub say about each branch, decides what it needs; :mod:`.branches` then pushes its commits and
:mod:`.publish` opens or updates its pull request.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Sequence
from pathlib import Path

from codemod.errors import redact
from codemod.github import DEFAULT_API_URL, GitHubClient, GitHubError, Retry
from codemod.migration import Migration
from codemod.publish.pr import branches, publish
from codemod.publish.pr.branches import BOT, Identity
from codemod.publish.pr.plan import (
    GROUP_BY,
    Action,
    BranchState,
    PrError,
    PrReport,
    decide,
    describe_plan,
    outcome,
    plan_prs,
)

Migrate = Callable[[Path, list[str], list[str]], Migration]


def _default_migrate(root: Path, only: list[str], skip: list[str]) -> Migration:
    from codemod.migrate import run_migration  # the engine is heavy and optional at import time

    return run_migration(root, only=only, skip=skip)


@dataclasses.dataclass(frozen=True)
class PrOptions:
    """What ``codemod pr`` publishes, and where: the repository (``OWNER/NAME``) on ``api_url``, the git
    ``remote`` to fetch ``base`` from and push to, one pull request per ``group_by``, at most ``max_open`` of
    the bot's open at once, the models (``only`` / ``skip``), ``labels`` besides the bot's; ``dry_run`` writes
    nothing."""

    repo: str
    remote: str
    base: str
    api_url: str = DEFAULT_API_URL
    group_by: str = "model"
    max_open: int | None = None
    only: Sequence[str] = ()
    skip: Sequence[str] = ()
    dry_run: bool = False
    labels: Sequence[str] = ()


def _print(line: str) -> None:
    print(line)


@dataclasses.dataclass(frozen=True)
class PrRuntime:
    """How a run is wired: ``token`` (default: ``$GITHUB_TOKEN``; optional with ``dry_run``, which makes only GET
    requests), the commits' ``identity``, the engine (``migrate``), where lines go (``echo``: the dry-run
    listing, one line per group, each retry of the API), the temporary worktree's parent (``scratch``) and how
    the API's transient failures are retried (``retry``; its log goes to ``echo``)."""

    token: str | None = None
    identity: Identity = BOT
    migrate: Migrate | None = None
    echo: Callable[[str], None] = _print
    scratch: Path | None = None
    retry: Retry = Retry()


def run_pr(path: Path, options: PrOptions, runtime: PrRuntime = PrRuntime()) -> PrReport:
    """scan → apply → verify in a throwaway worktree of ``REMOTE/BASE``, then publish one PR per group.

    ``runtime.echo`` receives the dry-run listing and one line per group; the returned report says the same.
    Raises :class:`PrError` (one line, no secrets) on any git or API failure.
    """
    repo, remote, base, labels = options.repo, options.remote, options.base, options.labels
    max_open, dry_run, group_by, echo = options.max_open, options.dry_run, options.group_by, runtime.echo
    token = runtime.token if runtime.token is not None else os.environ.get("GITHUB_TOKEN") or None
    if token is None and not dry_run:
        raise PrError("GITHUB_TOKEN is not set: codemod pr needs a token that can push and open pull requests")
    if max_open is not None and max_open < 0:
        raise PrError("--max-open must be 0 or more")
    if group_by not in GROUP_BY:
        raise PrError(f"--group-by must be one of {', '.join(GROUP_BY)}, not {group_by!r}")
    secrets = (token,) if token else ()
    journal = publish.Journal()
    try:  # every git or API failure becomes one redacted line that says what was already written
        retry = dataclasses.replace(runtime.retry, log=echo)
        client = GitHubClient(repo, token, options.api_url, retry=retry)
        top, subdir = branches.repository_root(path)
        git = branches.Git(top, secrets)
        open_count = publish.open_by_bot(client)
        base_sha, remote_branches = branches.fetch(git, remote, base)
        with branches.worktree(git, base_sha, runtime.scratch) as tree:
            migrate = runtime.migrate or _default_migrate
            migration = migrate(tree / subdir, list(options.only), list(options.skip))
            plan = plan_prs(migration, group_by, base, labels)
            outcomes = []
            for branch in plan.branches:
                remote_branch = branches.remote_branch(
                    git, remote_branches.get(branch.branch), base_sha, runtime.identity
                )
                decision = decide(
                    branch,
                    BranchState(remote_branch, publish.pulls_of(client, branch.branch)),
                    open_count=open_count,
                    max_open=max_open,
                )
                if dry_run:
                    echo(describe_plan(branch, decision))
                if decision.action == Action.UNCHANGED and not dry_run:
                    result = publish.complete(client, branch, decision, plan.labels, journal)  # labels left out
                elif dry_run or not decision.writes:
                    result = outcome(branch, decision)
                else:
                    pushed = branches.push_branch(
                        git, tree / subdir, base_sha, remote, branch, decision.lease, runtime.identity
                    )
                    result = publish.write(client, branch, decision, plan.labels, journal, remote if pushed else None)
                if decision.action == Action.CREATE:
                    open_count += 1
                echo(result.line(dry_run))
                outcomes.append(result)
    except (GitHubError, PrError) as error:
        raise PrError(redact(f"{error}{journal.suffix()}", secrets)) from None
    report = PrReport(tuple(outcomes), plan.withheld, plan.reverted, dry_run)
    for line in report.lines()[len(outcomes) :]:
        echo(line)
    return report
