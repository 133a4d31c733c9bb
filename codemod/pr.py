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

Layout: the pure planning (groups, branch names, commit messages, bodies, hashes, decisions) comes
first and is tested without git; then the git and GitHub edges; then :func:`run_pr`, which wires them.
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import os
import re
import tempfile
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from codemod import __version__, git
from codemod.classify import Action as OverrideAction
from codemod.contracts import Held, HeldCause, Verdict
from codemod.errors import CodemodError, redact
from codemod.github import DEFAULT_API_URL, GitHubClient, GitHubError
from codemod.migration import MIXIN_MODEL, ClassOutcome, Migration, ModelOutcome

BRANCH_PREFIX = "codemod/prepare-inputs/"
DEFAULT_LABEL = "transformers-codemod"
GROUP_BY = ("model", "family", "all")
MARKER_TEMPLATE = "<!-- transformers-codemod plan={hash} -->"
_MARKER = re.compile(r"<!--\s*transformers-codemod\s+plan=([0-9a-f]+)\s*-->")
_GIT_TIMEOUT_S = 600
_TITLE_MODELS = 3

Migrate = Callable[[Path, list[str], list[str]], Migration]
Echo = Callable[[str], None]


class PrError(CodemodError):
    """A failure the user can act on, as one line without secrets; the CLI exits with status 2."""


@dataclasses.dataclass(frozen=True)
class Identity:
    """Who the bot's commits are by: commits by anyone else on its branches mean "hands off"."""

    name: str = "transformers-codemod"
    email: str = "transformers-codemod@users.noreply.github.com"

    def __str__(self) -> str:
        return f"{self.name} <{self.email}>"


BOT = Identity()


# ---------------------------------------------------------------------------------------------
# Pure planning: which models go into which branch, with which commits and which description.
# ---------------------------------------------------------------------------------------------


def changed_classes(model: ModelOutcome) -> tuple[ClassOutcome, ...]:
    """The classes whose override the migration changed (``keep`` is no change and is not published)."""
    return tuple(c for c in model.classes if c.action is not OverrideAction.KEEP)


def screen(models: Sequence[ModelOutcome]) -> tuple[tuple[ModelOutcome, ...], tuple[Held, ...]]:
    """Split models into publishable ones and withheld ones (``Held``, by model).

    A model is withheld when a changed class is not ``identical``; and because a file holds one
    content, any model that shares a file with a withheld model is withheld too (to a fixpoint).
    """
    reasons: dict[str, Held] = {}
    for model in models:
        bad = next((c for c in changed_classes(model) if c.verdict is not Verdict.IDENTICAL), None)
        if bad is not None:
            detail = f" ({bad.detail})" if bad.detail else ""
            reasons[model.model] = Held(model.model, HeldCause.NOT_IDENTICAL,
                                        f"{bad.class_name} was not verified identical: {bad.verdict}{detail}")
    for _ in range(len(models)):
        tainted = {f: m.model for m in models if m.model in reasons for f in m.files}
        newly = {
            m.model: Held(m.model, HeldCause.SHARES_A_FILE, f"shares {f} with withheld {tainted[f]}")
            for m in models
            if m.model not in reasons
            for f in m.files
            if f in tainted
        }
        if not newly:
            break
        reasons.update(newly)
    kept = tuple(m for m in models if m.model not in reasons and (m.files or changed_classes(m)))
    return kept, tuple(reasons[m] for m in sorted(reasons))


def family_keys(model: ModelOutcome) -> tuple[str, ...]:
    """The first path component under ``models/`` of each of the model's files, most common first."""
    counts: dict[str, int] = {}
    for file in model.files:
        parts = Path(file).parts
        if "models" in parts[:-1]:
            index = len(parts) - 1 - parts[::-1].index("models")  # the innermost models/ directory
            if index + 1 < len(parts) - 1:
                counts[parts[index + 1]] = counts.get(parts[index + 1], 0) + 1
    return tuple(sorted(counts, key=lambda key: (-counts[key], key)))


def family_key(model: ModelOutcome) -> str:
    """A model's family: its most common directory under ``models/``, or its own name without one."""
    keys = family_keys(model)
    return keys[0] if keys else model.model


@dataclasses.dataclass(frozen=True)
class Group:
    """Models that go into one pull request; ``name`` becomes the branch's last component."""

    name: str
    models: tuple[ModelOutcome, ...]


def group_models(models: Sequence[ModelOutcome], group_by: str) -> tuple[Group, ...]:
    """One group per model, per family (shared directory under ``models/`` or overlapping files), or one."""
    if group_by not in GROUP_BY:
        raise PrError(f"--group-by must be one of {', '.join(GROUP_BY)}, not {group_by!r}")
    ordered = sorted(models, key=lambda m: m.model)
    if not ordered:
        return ()
    if group_by == "all":
        return (Group("all", tuple(ordered)),)
    return _components(ordered, by_directory=group_by == "family")


def _components(models: Sequence[ModelOutcome], *, by_directory: bool) -> tuple[Group, ...]:
    """Connected components of "shares a file" (a file holds one content: models whose changes
    meet in a file land together, whatever the grouping), and with ``by_directory`` also "shares
    a family directory" (union-find over models). A group of several is named after the model the
    others' changes follow (their ``lead``), or, by family, after its directory."""
    parent = list(range(len(models)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    owner: dict[str, int] = {}
    for i, model in enumerate(models):
        for token in [f"dir:{k}" for k in family_keys(model) if by_directory] + [f"file:{f}" for f in model.files]:
            if token in owner:
                parent[find(i)] = find(owner[token])
            else:
                owner[token] = i
    components: dict[int, list[ModelOutcome]] = {}
    for i, model in enumerate(models):
        components.setdefault(find(i), []).append(model)
    groups = [Group(_group_name(members, by_directory), tuple(members)) for members in components.values()]
    return tuple(sorted(groups, key=lambda g: g.name))


def _group_name(members: Sequence[ModelOutcome], by_directory: bool) -> str:
    if by_directory:
        return min(family_key(m) for m in members)
    if len(members) == 1:
        return members[0].model
    names = [m.lead or m.model for m in members]
    return min(names, key=lambda name: (-names.count(name), name))


def branch_name(group: str) -> str:
    """``codemod/prepare-inputs/<group>``, with the group reduced to characters safe in a ref name."""
    slug = re.sub(r"[^a-z0-9._-]+", "-", group.lower()).strip("-.")
    slug = re.sub(r"\.{2,}", ".", slug).removesuffix(".lock") or "group"
    return BRANCH_PREFIX + slug


def plan_hash(models: Sequence[ModelOutcome]) -> str:
    """The group's part of the plan (files, classes, actions; no timings, verdict texts or SHAs)."""
    return Migration(models=tuple(sorted(models, key=lambda m: m.model))).plan_hash


def marker(hash_: str) -> str:
    return MARKER_TEMPLATE.format(hash=hash_)


def parse_marker(body: str | None) -> str | None:
    """The plan hash a pull request's description carries, or None (not the bot's, or edited away)."""
    match = _MARKER.search(body or "")
    return match.group(1) if match else None


@dataclasses.dataclass(frozen=True)
class CommitPlan:
    """One commit per model: its files, and a message that says what changed and why it is safe."""

    model: str
    files: tuple[str, ...]
    subject: str
    body: str

    @property
    def message(self) -> str:
        return f"{self.subject}\n\n{self.body}\n"


def _verb(classes: Sequence[ClassOutcome]) -> str:
    actions = {c.action for c in classes}
    if actions <= {"delete"}:
        return "remove prepare_inputs_for_generation overrides now covered by GenerationMixin"
    if "delete" not in actions:
        return "reduce prepare_inputs_for_generation overrides to what GenerationMixin does not cover"
    return "remove or reduce prepare_inputs_for_generation overrides now covered by GenerationMixin"


def _scenarios(c: ClassOutcome) -> str:
    return ", ".join(c.scenarios) if c.scenarios else "none recorded"


def plan_commit(model: ModelOutcome) -> CommitPlan:
    classes = changed_classes(model)
    if model.model == MIXIN_MODEL and not classes:
        why = (
            "This release's GenerationMixin.prepare_inputs_for_generation only raises, so every model\n"
            "carries its own. It gets a generic implementation (slicing by the cache, position_ids from\n"
            "the attention mask, inputs_embeds on the first step, the static-cache 4D mask, extra inputs\n"
            "forwarded): the overrides removed in the commits that follow rely on it."
        )
        body = f"{why}\n\nGenerated by transformers-codemod {__version__}."
        return CommitPlan(model.model, model.files, f"{model.model}: give GenerationMixin a generic prepare_inputs_for_generation", body)
    if not classes:
        subject = f"{model.model}: update files generated from models whose overrides are removed"
        why = (
            "No override of this model's own changes; these files are generated from (or shared with)\n"
            "models whose prepare_inputs_for_generation overrides are removed in this branch."
        )
        body = f"{why}\n\nGenerated by transformers-codemod {__version__}."
        return CommitPlan(model.model, model.files, subject, body)
    why = (
        "GenerationMixin.prepare_inputs_for_generation now builds the inputs these overrides built by\n"
        "hand, so they are removed (or reduced to what is still model-specific). Generation was run\n"
        "before and after the change on the scenarios listed and gave identical outputs."
    )
    items = "\n".join(
        f"- {c.class_name} ({c.file})\n"
        f"  category: {c.category}; action: {c.action}; lines removed: {c.lines_removed}\n"
        f"  verdict: {c.verdict}; scenarios: {_scenarios(c)}"
        for c in classes
    )
    body = f"{why}\n\n{items}\n\nGenerated by transformers-codemod {__version__}."
    return CommitPlan(model.model, model.files, f"{model.model}: {_verb(classes)}", body)


def _named(group: Group) -> list[ModelOutcome]:
    """The group's models without the mixin that travels with every group."""
    return [m for m in group.models if m.model != MIXIN_MODEL]


def pr_title(group: Group) -> str:
    classes = [c for m in group.models for c in changed_classes(m)]
    named = _named(group)
    if len(named) == 1:
        return f"{named[0].model}: {_verb(classes)}"
    names = [m.model for m in named]
    more = len(names) - _TITLE_MODELS
    shown = ", ".join(names[:_TITLE_MODELS]) + (f", +{more} more" if more > 0 else "")
    return f"{group.name}: {_verb(classes)} ({shown})"


def _cell(text: object) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def model_table(model: ModelOutcome) -> str:
    rows = [
        "| Class | File | Category | Action | Lines removed | Verification | Scenarios |",
        "|---|---|---|---|---:|---|---|",
    ]
    for c in changed_classes(model):
        rows.append(
            f"| `{_cell(c.class_name)}` | `{_cell(c.file)}` | {_cell(c.category)} | {_cell(c.action)} "
            f"| {c.lines_removed} | {_cell(c.verdict)} | {_cell(_scenarios(c))} |"
        )
    if len(rows) == 2:
        what, action = ("mixin", "generic implementation added") if model.model == MIXIN_MODEL else ("generated", "update")
        rows.append(f"| — | {', '.join(f'`{_cell(f)}`' for f in model.files)} | {what} | {action} | 0 | — | — |")
        return "\n".join(rows)
    # files the change touches outside its classes: copies of a removed method lose their
    # "# Copied from" marker, generated files follow their modular source
    own = {c.file for c in changed_classes(model)}
    others = [f for f in model.files if f not in own]
    if others:
        rows.append("")
        rows.append("Also touched (copies that lose their `# Copied from` marker, files generated from a modular "
                    f"source): {', '.join(f'`{_cell(f)}`' for f in others)}")
    return "\n".join(rows)


def pr_body(group: Group, hash_: str, base: str) -> str:
    """The description: why, a table per model, how to reproduce, and the plan marker (no SHAs, no times)."""
    lines = sum(m.lines_removed for m in group.models)
    named = _named(group)
    models = ",".join(m.model for m in named)
    sections = [
        f"This pull request removes `prepare_inputs_for_generation` overrides that `GenerationMixin` now covers "
        f"({lines} lines across {len(named)} model{'s' if len(named) != 1 else ''}). "
        "Every change was verified by running generation before and after it: the outputs are identical.",
    ]
    if len(named) != len(group.models):
        sections.append(
            "`GenerationMixin.prepare_inputs_for_generation` only raises in this release: the first commit gives it the "
            "generic implementation the removed overrides rely on (the same change in every pull request of this bot)."
        )
    for model in group.models:
        sections.append(f"### `{model.model}`\n\n{model_table(model)}")
    sections.append(
        "### Reproduce locally\n\n"
        f"From a checkout of `{base}`:\n\n"
        "```bash\n"
        "pip install transformers-codemod   # `codemod verify` also needs: pip install 'transformers-codemod[verify]'\n"
        f"codemod apply --verify . --only {models}\n"
        f"codemod verify . --only {models}\n"
        "```"
    )
    sections.append(
        "<sub>Opened by [transformers-codemod](https://pypi.org/project/transformers-codemod/). It updates this pull "
        "request in place when the plan changes and leaves the branch alone once anyone else pushes to it; "
        "closing it without merging keeps these models out until their plan changes.</sub>"
    )
    sections.append(marker(hash_))
    return "\n\n".join(sections) + "\n"


@dataclasses.dataclass(frozen=True)
class BranchPlan:
    """Everything one pull request will hold: deterministic given the migration and the grouping."""

    group: str
    branch: str
    base: str
    models: tuple[ModelOutcome, ...]
    commits: tuple[CommitPlan, ...]
    plan_hash: str
    title: str
    body: str

    @property
    def model_names(self) -> tuple[str, ...]:
        return tuple(m.model for m in self.models)


@dataclasses.dataclass(frozen=True)
class PrPlan:
    branches: tuple[BranchPlan, ...]
    withheld: tuple[Held, ...] = ()
    reverted: tuple[Held, ...] = ()


def plan_branch(group: Group, base: str) -> BranchPlan:
    hash_ = plan_hash(group.models)
    return BranchPlan(
        group=group.name,
        branch=branch_name(group.name),
        base=base,
        models=group.models,
        commits=tuple(plan_commit(m) for m in group.models),
        plan_hash=hash_,
        title=pr_title(group),
        body=pr_body(group, hash_, base),
    )


def plan_prs(migration: Migration, group_by: str, base: str) -> PrPlan:
    """The whole plan: screen the migration, group it, and plan one branch per group."""
    kept, withheld = screen(migration.models)
    # Every removed override relies on the mixin's new implementation: it goes first into every
    # branch (the same commit content in each, so the branches merge in any order), never alone.
    mixin = tuple(m for m in kept if m.model == MIXIN_MODEL)
    groups = tuple(Group(g.name, (*mixin, *g.models)) for g in group_models([m for m in kept if m.model != MIXIN_MODEL], group_by))
    names = [branch_name(g.name) for g in groups]
    if len(set(names)) != len(names):
        raise PrError(f"two groups map to the same branch name: {sorted(n for n in names if names.count(n) > 1)[0]}")
    return PrPlan(tuple(plan_branch(g, base) for g in groups), withheld, tuple(migration.reverted))


# ---------------------------------------------------------------------------------------------
# Pure decisions: given a branch plan and what GitHub and the remote say, what to do.
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class PullRequest:
    number: int
    state: str  # open / closed
    merged: bool
    body: str
    head_ref: str
    head_sha: str
    html_url: str

    @classmethod
    def from_api(cls, data: Mapping[str, Any]) -> PullRequest:
        head = data.get("head") or {}
        return cls(
            number=int(data["number"]),
            state=str(data.get("state", "")),
            merged=bool(data.get("merged_at")),
            body=str(data.get("body") or ""),
            head_ref=str(head.get("ref", "")),
            head_sha=str(head.get("sha", "")),
            html_url=str(data.get("html_url", "")),
        )

    @property
    def plan_hash(self) -> str | None:
        return parse_marker(self.body)

    @property
    def by_bot(self) -> bool:
        return self.head_ref.startswith(BRANCH_PREFIX) or self.plan_hash is not None


@dataclasses.dataclass(frozen=True)
class RemoteBranch:
    sha: str
    #: commits on the branch since the merge base that are not the bot's, as "abc1234 by Name <email>"
    foreign: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class BranchState:
    remote: RemoteBranch | None
    pulls: tuple[PullRequest, ...]


class Action(str, enum.Enum):
    CREATE = "open"
    UPDATE = "update"
    UNCHANGED = "unchanged"
    SKIP_FOREIGN = "skip: someone else's commits"
    SKIP_CLOSED = "skip: closed without merging"
    SKIP_MERGED = "skip: already merged"
    SKIP_MAX_OPEN = "skip: --max-open reached"


@dataclasses.dataclass(frozen=True)
class Decision:
    action: Action
    reason: str
    pull: PullRequest | None = None
    #: the SHA the remote branch must still have when pushing ("" = the branch must not exist)
    lease: str = ""

    @property
    def writes(self) -> bool:
        return self.action in (Action.CREATE, Action.UPDATE)


def decide(plan: BranchPlan, state: BranchState, *, open_count: int, max_open: int | None) -> Decision:
    """The idempotency and politeness rules, in order; see the module docstring."""
    lease = state.remote.sha if state.remote else ""
    if state.remote and state.remote.foreign:
        more = f" and {len(state.remote.foreign) - 1} more" if len(state.remote.foreign) > 1 else ""
        who = f"{state.remote.foreign[0]}{more}"
        why = f"{plan.branch} has a commit by someone else ({who}); left alone (delete the branch to let the bot redo it)"
        return Decision(Action.SKIP_FOREIGN, why)
    open_pull = next((p for p in state.pulls if p.state == "open"), None)
    if open_pull is not None:
        if open_pull.plan_hash is None:
            why = f"#{open_pull.number} no longer carries the plan marker (edited by hand?); left alone"
            return Decision(Action.SKIP_FOREIGN, why, open_pull)
        if open_pull.plan_hash == plan.plan_hash:
            return Decision(Action.UNCHANGED, f"#{open_pull.number} is up to date (plan {plan.plan_hash})", open_pull)
        why = f"#{open_pull.number}: plan {open_pull.plan_hash} -> {plan.plan_hash}"
        return Decision(Action.UPDATE, why, open_pull, lease)
    closed = sorted((p for p in state.pulls if p.state == "closed"), key=lambda p: p.number)
    if closed and closed[-1].plan_hash == plan.plan_hash:
        last = closed[-1]
        if last.merged:
            return Decision(Action.SKIP_MERGED, f"#{last.number} with this plan was merged", last)
        why = f"#{last.number} with this plan was closed without merging; skipped until the plan changes"
        return Decision(Action.SKIP_CLOSED, why, last)
    if max_open is not None and open_count >= max_open:
        why = f"not opened: {open_count} bot pull requests are open (--max-open {max_open})"
        return Decision(Action.SKIP_MAX_OPEN, why, lease=lease)
    return Decision(Action.CREATE, f"new plan {plan.plan_hash}", lease=lease)


# ---------------------------------------------------------------------------------------------
# The git edge.
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Git:
    """``git`` in a repository, with errors as one redacted line and no interactive prompts."""

    cwd: Path
    secrets: tuple[str, ...] = ()

    def run(
        self, *args: str, cwd: Path | None = None, env: Mapping[str, str] | None = None, input: str | None = None
    ) -> str:
        return git.run(cwd or self.cwd, *args, error=PrError, secrets=self.secrets, env=env, input=input,
                       timeout=_GIT_TIMEOUT_S).stdout


def repository_root(path: Path) -> tuple[Path, Path]:
    """The repository's top level and ``path`` relative to it (the checkout root the plan's files are under)."""
    path = path.resolve()
    if not path.is_dir():
        raise PrError(f"{path} is not a directory (codemod pr needs a transformers git checkout)")
    try:
        top = Path(Git(path).run("rev-parse", "--show-toplevel").strip()).resolve()
    except PrError:
        raise PrError(f"{path} is not inside a git checkout") from None
    return top, path.relative_to(top)


def fetch(git: Git, remote: str, base: str) -> tuple[str, dict[str, str]]:
    """``git fetch REMOTE BASE`` plus the bot's branches; the base SHA and ``{branch: sha}`` on the remote."""
    tracking = f"refs/remotes/{remote}/"
    git.run(
        "fetch", "--no-tags", "--prune", remote,
        f"+refs/heads/{base}:{tracking}{base}",
        f"+refs/heads/{BRANCH_PREFIX}*:{tracking}{BRANCH_PREFIX}*",
    )
    base_sha = git.run("rev-parse", "--verify", f"{tracking}{base}^{{commit}}").strip()
    listing = git.run("for-each-ref", "--format=%(objectname) %(refname)", f"{tracking}{BRANCH_PREFIX}")
    branches = {}
    for line in listing.splitlines():
        sha, ref = line.split(" ", 1)
        branches[ref.removeprefix(tracking)] = sha
    return base_sha, branches


def foreign_commits(git: Git, sha: str, base_sha: str, identity: Identity) -> tuple[str, ...]:
    """Commits on the branch since its merge base with the base whose author or committer is not the bot."""
    log = git.run("log", "--format=%h%x1f%an%x1f%ae%x1f%cn%x1f%ce", sha, "--not", base_sha)
    foreign = []
    for line in log.splitlines():
        short, an, ae, cn, ce = line.split("\x1f")
        bot = an == identity.name and ae.lower() == identity.email.lower() and ce.lower() == identity.email.lower()
        if not bot:
            foreign.append(f"{short} by {an} <{ae}>" + ("" if (cn, ce) == (an, ae) else f", committed by {cn} <{ce}>"))
    return tuple(foreign)


def worktree(repo: Git, base_sha: str, scratch: Path | None) -> contextlib.AbstractContextManager[Path]:
    """A detached worktree of the base in a temporary directory (under ``scratch``), removed and pruned
    whatever happens."""
    return git.worktree(repo.cwd, base_sha, error=PrError, secrets=repo.secrets, parent=scratch, name="checkout")


def build_branch(git: Git, root: Path, base_sha: str, plan: BranchPlan, identity: Identity, index: Path) -> str:
    """One commit per model on top of the base, from the worktree's files, without touching any index or ref.

    A private index (``GIT_INDEX_FILE``) starts as the base's tree; each model's files are added to it
    and committed with ``commit-tree`` as the bot. A file shared by two models lands in the first
    commit; the second model still gets its own (possibly empty) commit, so every model has one.
    """
    env = {
        "GIT_INDEX_FILE": str(index),
        "GIT_LITERAL_PATHSPECS": "1",
        "GIT_AUTHOR_NAME": identity.name,
        "GIT_AUTHOR_EMAIL": identity.email,
        "GIT_COMMITTER_NAME": identity.name,
        "GIT_COMMITTER_EMAIL": identity.email,
    }
    index.unlink(missing_ok=True)
    git.run("read-tree", base_sha, cwd=root, env=env)
    parent = base_sha
    for commit in plan.commits:
        listed = git.run("ls-files", "-z", "--", *commit.files, cwd=root, env=env) if commit.files else ""
        tracked = set(listed.split("\0"))
        paths = [f for f in commit.files if f in tracked or (root / f).exists()]
        if paths:
            git.run("add", "-A", "--", *paths, cwd=root, env=env)
        tree = git.run("write-tree", cwd=root, env=env).strip()
        parent = git.run(
            "commit-tree", "--no-gpg-sign", tree, "-p", parent, "-F", "-", cwd=root, env=env, input=commit.message
        ).strip()
    return parent


def same_tree(git: Git, a: str, b: str) -> bool:
    return git.run("rev-parse", f"{a}^{{tree}}").strip() == git.run("rev-parse", f"{b}^{{tree}}").strip()


def push(git: Git, remote: str, sha: str, branch: str, lease: str) -> None:
    """Force-push with a lease on the SHA we observed ("" = must not exist), so nobody's work is lost."""
    ref = f"refs/heads/{branch}"
    git.run("push", "--porcelain", f"--force-with-lease={ref}:{lease}", remote, f"{sha}:{ref}")


# ---------------------------------------------------------------------------------------------
# The report.
# ---------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class GroupOutcome:
    branch: str
    models: tuple[str, ...]
    action: Action
    reason: str
    pr_number: int | None = None
    pr_url: str = ""
    pushed: bool = False

    def line(self, dry_run: bool) -> str:
        verbs = {Action.CREATE: "opened", Action.UPDATE: "updated", Action.UNCHANGED: "unchanged"}
        if dry_run:
            verbs.update({Action.CREATE: "would open", Action.UPDATE: "would update"})
        verb = verbs.get(self.action, "skipped")
        number = f" #{self.pr_number}" if self.pr_number else ""
        url = f" {self.pr_url}" if self.pr_url else ""
        pushed = " (pushed)" if self.pushed else ""
        return f"{verb}{number} {self.branch} [{', '.join(self.models)}]{pushed}: {self.reason}{url}"


@dataclasses.dataclass(frozen=True)
class PrReport:
    outcomes: tuple[GroupOutcome, ...]
    withheld: tuple[Held, ...] = ()
    reverted: tuple[Held, ...] = ()
    dry_run: bool = False

    def lines(self) -> list[str]:
        lines = [o.line(self.dry_run) for o in self.outcomes] or ["nothing to publish"]
        lines += [f"withheld {h.subject}: {h.detail}" for h in self.withheld]
        lines += [f"reverted {h.subject}: {h.detail}" for h in self.reverted]
        return lines

    def by_action(self, action: Action) -> tuple[GroupOutcome, ...]:
        return tuple(o for o in self.outcomes if o.action == action)


def describe_plan(plan: BranchPlan, decision: Decision) -> str:
    """What ``--dry-run`` shows for one branch: the decision, the commits, the title and the body."""
    head = f"== {plan.branch} [{', '.join(plan.model_names)}]: {decision.action.value} ({decision.reason})"
    if not decision.writes:
        return head
    commits = "\n".join(
        f"-- commit {i}/{len(plan.commits)}: {c.subject}\n   files: {', '.join(c.files)}\n{c.body}"
        for i, c in enumerate(plan.commits, 1)
    )
    target = f"edit #{decision.pull.number}" if decision.pull else "open pull request"
    return f"{head}\n{commits}\n-- {target}: {plan.title}\n{plan.body}"


# ---------------------------------------------------------------------------------------------
# Orchestration.
# ---------------------------------------------------------------------------------------------


def _default_migrate(root: Path, only: list[str], skip: list[str]) -> Migration:
    from codemod.migrate import run_migration  # the engine is heavy and optional at import time

    return run_migration(root, only=only, skip=skip)


def _split(values: Sequence[str]) -> list[str]:
    return [v.strip() for value in values for v in value.split(",") if v.strip()]


@dataclasses.dataclass
class _Journal:
    """What this run already wrote, so that an error can say exactly what it left behind."""

    done: list[str] = dataclasses.field(default_factory=list)

    def suffix(self) -> str:
        return f" (done before the error: {'; '.join(self.done)})" if self.done else ""


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
    echo: Echo = print,
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
    try:
        client = GitHubClient(repo, token, api_url)
    except GitHubError as error:
        raise PrError(redact(str(error), secrets)) from None
    top, subdir = repository_root(path)
    git = Git(top, secrets)
    all_labels = list(dict.fromkeys([DEFAULT_LABEL, *labels]))
    journal = _Journal()
    try:
        open_count = sum(1 for p in map(PullRequest.from_api, client.open_pulls()) if p.by_bot)
        base_sha, remote_branches = fetch(git, remote, base)
        with worktree(git, base_sha, scratch) as tree:
            migration = (migrate or _default_migrate)(tree / subdir, _split(only), _split(skip))
            plan = plan_prs(migration, group_by, base)
            outcomes = []
            for branch in plan.branches:
                state = _branch_state(git, client, branch, remote_branches.get(branch.branch), base_sha, identity)
                decision = decide(branch, state, open_count=open_count, max_open=max_open)
                if dry_run:
                    echo(describe_plan(branch, decision))
                    outcome = _outcome(branch, decision)
                else:
                    outcome = _execute(
                        git, client, tree / subdir, base_sha, remote, branch, decision, identity, all_labels, journal
                    )
                if decision.action == Action.CREATE:
                    open_count += 1
                echo(outcome.line(dry_run))
                outcomes.append(outcome)
    except GitHubError as error:
        raise PrError(redact(f"{error}{journal.suffix()}", secrets)) from None
    except PrError as error:
        raise PrError(redact(f"{error}{journal.suffix()}", secrets)) from None
    report = PrReport(tuple(outcomes), plan.withheld, plan.reverted, dry_run)
    for line in report.lines()[len(outcomes):]:
        echo(line)
    return report


def _branch_state(
    git: Git, client: GitHubClient, plan: BranchPlan, sha: str | None, base_sha: str, identity: Identity
) -> BranchState:
    remote = RemoteBranch(sha, foreign_commits(git, sha, base_sha, identity)) if sha else None
    pulls = tuple(PullRequest.from_api(p) for p in client.pulls_for_branch(plan.branch))
    return BranchState(remote, tuple(p for p in pulls if p.head_ref == plan.branch))


def _outcome(plan: BranchPlan, decision: Decision, **extra: Any) -> GroupOutcome:
    pull = decision.pull
    fields: dict[str, Any] = {"pr_number": pull.number if pull else None, "pr_url": pull.html_url if pull else ""}
    fields.update(extra)
    return GroupOutcome(plan.branch, plan.model_names, decision.action, decision.reason, **fields)


def _execute(
    git: Git, client: GitHubClient, root: Path, base_sha: str, remote: str, plan: BranchPlan,
    decision: Decision, identity: Identity, labels: list[str], journal: _Journal,
) -> GroupOutcome:
    """Carry out a CREATE or UPDATE: build the commits, push if the content differs, then write to GitHub."""
    if not decision.writes:
        return _outcome(plan, decision)
    with tempfile.TemporaryDirectory(prefix="codemod-pr-index-") as scratch:
        head = build_branch(git, root, base_sha, plan, identity, Path(scratch) / "index")
    pushed = False
    if not decision.lease or not same_tree(git, decision.lease, head):
        push(git, remote, head, plan.branch, decision.lease)
        pushed = True
        journal.done.append(f"pushed {plan.branch}")
    try:
        if decision.action == Action.UPDATE:
            assert decision.pull is not None
            data = client.update_pull(decision.pull.number, title=plan.title, body=plan.body)
            journal.done.append(f"updated #{decision.pull.number}")
        else:
            data = client.create_pull(title=plan.title, head=plan.branch, base=plan.base, body=plan.body)
            journal.done.append(f"opened #{data['number']}")
    except GitHubError as error:
        if pushed:
            journal.done.remove(f"pushed {plan.branch}")  # the message below says it, once
            verb, done = ("update", "updated") if decision.action == Action.UPDATE else ("open", "opened")
            raise PrError(
                f"{error} — branch {plan.branch} was pushed to {remote} but its pull request could not be {done}; "
                f"the next run will reuse the branch and {verb} it"
            ) from None
        raise
    pull = PullRequest.from_api(data)
    try:
        client.add_labels(pull.number, labels)
    except GitHubError as error:
        state = "updated" if decision.pull else "open"
        raise PrError(
            f"{error} — #{pull.number} ({plan.branch}) is {state} but has no labels yet; "
            f"add {', '.join(labels)} by hand"
        ) from None
    return GroupOutcome(
        plan.branch, plan.model_names, decision.action, decision.reason, pull.number, pull.html_url, pushed
    )
