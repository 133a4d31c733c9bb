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

import os
from collections.abc import Callable, Sequence
from pathlib import Path

from codemod.errors import redact
from codemod.github import DEFAULT_API_URL, GitHubClient, GitHubError
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


def run_pr(
    path: Path,
    *,
    repo: str,
    remote: str,
    base: str,
    api_url: str = DEFAULT_API_URL,
    group_by: str = "model",
    max_open: int | None = None,
    only: Sequence[str] = (),
    skip: Sequence[str] = (),
    dry_run: bool = False,
    labels: Sequence[str] = (),
    token: str | None = None,
    identity: Identity = BOT,
    migrate: Migrate | None = None,
    echo: Callable[[str], None] = print,
    scratch: Path | None = None,
) -> PrReport:
    """scan → apply → verify in a throwaway worktree of ``REMOTE/BASE``, then publish one PR per group.

    ``token`` defaults to ``$GITHUB_TOKEN`` (optional with ``dry_run``, which makes only GET requests).
    ``echo`` receives the dry-run listing and one line per group; the returned report says the same.
    Raises :class:`PrError` (one line, no secrets) on any git or API failure.
    """
    token = token if token is not None else os.environ.get("GITHUB_TOKEN") or None
    if token is None and not dry_run:
        raise PrError("GITHUB_TOKEN is not set: codemod pr needs a token that can push and open pull requests")
    if max_open is not None and max_open < 0:
        raise PrError("--max-open must be 0 or more")
    if group_by not in GROUP_BY:
        raise PrError(f"--group-by must be one of {', '.join(GROUP_BY)}, not {group_by!r}")
    secrets = (token,) if token else ()
    journal = publish.Journal()
    try:  # every git or API failure becomes one redacted line that says what was already written
        client = GitHubClient(repo, token, api_url)
        top, subdir = branches.repository_root(path)
        git = branches.Git(top, secrets)
        open_count = publish.open_by_bot(client)
        base_sha, remote_branches = branches.fetch(git, remote, base)
        with branches.worktree(git, base_sha, scratch) as tree:
            migration = (migrate or _default_migrate)(tree / subdir, list(only), list(skip))
            plan = plan_prs(migration, group_by, base, labels)
            outcomes = []
            for branch in plan.branches:
                remote_branch = branches.remote_branch(git, remote_branches.get(branch.branch), base_sha, identity)
                decision = decide(
                    branch,
                    BranchState(remote_branch, publish.pulls_of(client, branch.branch)),
                    open_count=open_count,
                    max_open=max_open,
                )
                if dry_run:
                    echo(describe_plan(branch, decision))
                if dry_run or not decision.writes:
                    result = outcome(branch, decision)
                else:
                    pushed = branches.push_branch(
                        git, tree / subdir, base_sha, remote, branch, decision.lease, identity
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
