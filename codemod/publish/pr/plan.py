"""What ``codemod pr`` publishes, decided without I/O: dataclasses in, dataclasses out.

From a :class:`~codemod.migration.Migration`: which models are withheld and why (:func:`screen`), which
go into which branch (:func:`group_models`), and each branch's commits, title, body, plan hash and the
pull requests' labels (:func:`plan_prs`); then, given what the remote and GitHub say about a branch,
what to do with it (:func:`decide`) and how the outcome reads (:class:`PrReport`). All of it is tested
without git or a network.
"""

from __future__ import annotations

import dataclasses
import enum
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from codemod import __version__
from codemod.analyse.classify import Action as OverrideAction
from codemod.contracts import Held, HeldCause, Verdict
from codemod.errors import CodemodError
from codemod.groups import UnionFind
from codemod.migration import MIXIN_MODEL, ClassOutcome, Migration, ModelOutcome

BRANCH_PREFIX = "codemod/prepare-inputs/"
DEFAULT_LABEL = "transformers-codemod"
GROUP_BY = ("model", "family", "all")
_MARKER = re.compile(r"<!--\s*transformers-codemod\s+plan=([0-9a-f]+)\s*-->")
_TITLE_MODELS = 3


class PrError(CodemodError):
    """A failure the user can act on, as one line without secrets; the CLI exits with status 2."""


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
            reasons[model.model] = Held(
                model.model,
                HeldCause.NOT_IDENTICAL,
                f"{bad.class_name} was not verified identical: {bad.verdict}{detail}",
            )
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
    a family directory". A group of several is named after the model the others' changes follow
    (their ``lead``), or, by family, after its directory."""
    links = UnionFind()
    for model in models:
        links.add(f"model:{model.model}")
        for token in [f"dir:{k}" for k in family_keys(model) if by_directory] + [f"file:{f}" for f in model.files]:
            links.union(f"model:{model.model}", token)
    by_name = {f"model:{m.model}": m for m in models}
    components = [[by_name[item] for item in members if item in by_name] for members in links.groups()]
    return tuple(sorted((Group(_group_name(c, by_directory), tuple(c)) for c in components), key=lambda g: g.name))


def _group_name(members: Sequence[ModelOutcome], by_directory: bool) -> str:
    if by_directory:  # a model's family: its most common directory under models/, or its own name without one
        return min((family_keys(m) or (m.model,))[0] for m in members)
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
        subject = f"{model.model}: give GenerationMixin a generic prepare_inputs_for_generation"
        why = (
            "This release's GenerationMixin.prepare_inputs_for_generation only raises, so every model\n"
            "carries its own. It gets a generic implementation (slicing by the cache, position_ids from\n"
            "the attention mask, inputs_embeds on the first step, the static-cache 4D mask, extra inputs\n"
            "forwarded): the overrides removed in the commits that follow rely on it."
        )
    elif not classes:
        subject = f"{model.model}: update files generated from models whose overrides are removed"
        why = (
            "No override of this model's own changes; these files are generated from (or shared with)\n"
            "models whose prepare_inputs_for_generation overrides are removed in this branch."
        )
    else:
        subject = f"{model.model}: {_verb(classes)}"
        why = (
            "GenerationMixin.prepare_inputs_for_generation now builds the inputs these overrides built by\n"
            "hand, so they are removed (or reduced to what is still model-specific). Generation was run\n"
            "before and after the change on the scenarios listed and gave identical outputs.\n\n"
        ) + "\n".join(
            f"- {c.class_name} ({c.file})\n"
            f"  category: {c.category}; action: {c.action}; lines removed: {c.lines_removed}\n"
            f"  verdict: {c.verdict}; scenarios: {_scenarios(c)}"
            for c in classes
        )
    return CommitPlan(model.model, model.files, subject, f"{why}\n\nGenerated by transformers-codemod {__version__}.")


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
        what, action = (
            ("mixin", "generic implementation added") if model.model == MIXIN_MODEL else ("generated", "update")
        )
        rows.append(f"| — | {', '.join(f'`{_cell(f)}`' for f in model.files)} | {what} | {action} | 0 | — | — |")
        return "\n".join(rows)
    # files the change touches outside its classes: copies of a removed method lose their
    # "# Copied from" marker, generated files follow their modular source
    own = {c.file for c in changed_classes(model)}
    others = [f for f in model.files if f not in own]
    if others:
        rows.append("")
        rows.append(
            "Also touched (copies that lose their `# Copied from` marker, files generated from a modular "
            f"source): {', '.join(f'`{_cell(f)}`' for f in others)}"
        )
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
    sections.append(f"<!-- transformers-codemod plan={hash_} -->")
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
    #: every pull request's labels: the bot's own first, then the user's
    labels: tuple[str, ...] = (DEFAULT_LABEL,)


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


def plan_prs(migration: Migration, group_by: str, base: str, labels: Sequence[str] = ()) -> PrPlan:
    """The whole plan: screen the migration, group it, and plan one branch per group."""
    kept, withheld = screen(migration.models)
    # Every removed override relies on the mixin's new implementation: it goes first into every
    # branch (the same commit content in each, so the branches merge in any order), never alone.
    mixin = tuple(m for m in kept if m.model == MIXIN_MODEL)
    groups = tuple(
        Group(g.name, (*mixin, *g.models)) for g in group_models([m for m in kept if m.model != MIXIN_MODEL], group_by)
    )
    names = [branch_name(g.name) for g in groups]
    if len(set(names)) != len(names):
        raise PrError(f"two groups map to the same branch name: {sorted(n for n in names if names.count(n) > 1)[0]}")
    branches = tuple(plan_branch(g, base) for g in groups)
    return PrPlan(branches, withheld, tuple(migration.reverted), tuple(dict.fromkeys([DEFAULT_LABEL, *labels])))


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
    labels: tuple[str, ...] = ()

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
            labels=tuple(str(label.get("name", "")) for label in data.get("labels") or () if isinstance(label, dict)),
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
    """The idempotency and politeness rules, in order; see :mod:`codemod.publish.pr`."""
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
# How the outcome reads.
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


def outcome(
    plan: BranchPlan, decision: Decision, pull: PullRequest | None = None, pushed: bool = False
) -> GroupOutcome:
    """How a branch ended; ``pull`` is the pull request written (default: the one the decision is about)."""
    pull = pull or decision.pull
    return GroupOutcome(
        plan.branch,
        plan.model_names,
        decision.action,
        decision.reason,
        pull.number if pull else None,
        pull.html_url if pull else "",
        pushed,
    )


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
