"""Apply: plan → rewrite every file in memory → keep what stays consistent → diff or write.

``compute_changes`` never writes: it plans, rewrites each file in memory, and drops whole shards
whose files would not parse or compile, or whose ``# Copied from`` markers would no longer hold,
until what is left is consistent. ``diff`` renders that; ``write`` puts it on disk atomically.
"""

from __future__ import annotations

import ast
import codecs
import dataclasses
import difflib
import os
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

from codemod.analyse import copies, soundness
from codemod.analyse.classify import Action
from codemod.analyse.index import Override
from codemod.analyse.mixin import Era
from codemod.analyse.scan import ScanResult
from codemod.checkout import Checkout, real_path
from codemod.contracts import CopyScope, CopyStatus, Held, HeldCause
from codemod.rules.generic_mixin import REFUSING_EMBEDS
from codemod.sources import read_source
from codemod.style import checkout_line_length
from codemod.transform.alias import with_aliases
from codemod.transform.hooks import hooked_result, mine, plan_with_hooks
from codemod.transform.plan import Edit, Plan, checkout_era, initial_plan
from codemod.transform.predict import predicted_repairs
from codemod.transform.rewrite import FileRewrite, rewrite_source
from codemod.writes import Replacement, put_back, replace_all
from codemod.writes import WriteError as WriteError  # raised by write, caught by its callers

_MAX_ROUNDS = 8


@dataclasses.dataclass(frozen=True)
class Changes:
    plan: Plan
    rewrites: tuple[FileRewrite, ...]  # one per changed file, in path order
    #: the shards settling dropped, and why: a file would not compile, or a copy marker would break
    dropped: tuple[Held, ...]
    #: (generated file, modular source): same edit made in both, as no converter was run
    mirrored: tuple[tuple[str, str], ...]

    @property
    def changed(self) -> bool:
        return any(r.changed for r in self.rewrites)

    def summary(self, result: ScanResult) -> dict[str, int]:
        by_id = result.index.by_id()
        actions = dict(self.plan.actions)
        deleted = [by_id[i] for i, a in actions.items() if a is Action.DELETE]
        reduced = [by_id[i] for i, a in actions.items() if a is Action.REDUCE]
        kept = [i for i, a in actions.items() if a is Action.KEEP]
        old_lines = sum(len(r.old_text().splitlines()) for r in self.rewrites)
        new_lines = sum(len(r.new_text().splitlines()) for r in self.rewrites)
        return {
            "deleted": len(deleted),
            "reduced": len(reduced),
            "kept": len(kept),
            "held": len(self.plan.held),
            "files": sum(1 for r in self.rewrites if r.changed),
            "lines_removed": old_lines - new_lines,
            "override_lines_deleted": sum(o.lines for o in deleted),
        }


class Reader:
    """Reads a file as it would be after the rewrite (an overlay over the disk)."""

    def __init__(self, checkout: Checkout, rewrites: Iterable[FileRewrite]) -> None:
        self.overlay = {(checkout.root / r.path).resolve(): r.new_text() for r in rewrites if r.error is None}

    def __call__(self, path: Path) -> str:
        path = path.resolve()
        if path in self.overlay:
            return self.overlay[path]
        return read_source(path)


def _rewrite_job(job: tuple[str, bytes, list[Edit], int]) -> FileRewrite:
    return rewrite_source(*job)


def _rewrite_all(
    checkout: Checkout,
    by_file: dict[str, list[Edit]],
    jobs: int | None = None,
    only: set[str] | None = None,
) -> list[FileRewrite]:
    """Rewrite the planned files (``only`` these, if given) in memory; libcst is slow on big modules, so
    in a process pool."""
    # the code written in each file is laid out at its project's line length (its ruff or black configuration)
    work = [
        (path, (checkout.root / path).read_bytes(), edits, checkout_line_length(checkout, path))
        for path, edits in sorted(by_file.items())
        if only is None or path in only
    ]
    workers = min(jobs or os.cpu_count() or 1, len(work))
    if workers <= 1 or len(work) < 4:
        return [_rewrite_job(job) for job in work]
    with ProcessPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(_rewrite_job, work, chunksize=1))


def _shards_of(plan: Plan, files: set[str]) -> set[str]:
    return {s.id for s in plan.shards if any(e.file in files for e in s.edits)}


def _broken_copies(result: ScanResult, plan: Plan, rewrites: Sequence[FileRewrite]) -> dict[str, Held]:
    """Shards whose rewrite leaves a consistent ``# Copied from`` marker inconsistent: shard -> why."""
    checkout = result.index.checkout
    changed = {r.path for r in rewrites if r.changed}
    if not changed:
        return {}
    read = Reader(checkout, rewrites)
    actions = dict(plan.actions)
    shard_of = {m: s.id for s in plan.shards for m in s.members}
    broken: dict[str, Held] = {}
    for o in result.index.overrides:
        link = o.copied_from
        if link is None or link.check.status is not CopyStatus.CONSISTENT or link.check.target_file is None:
            continue
        if o.file not in changed and link.check.target_file not in changed:
            continue
        if actions.get(o.id) is Action.DELETE and link.scope is CopyScope.METHOD:
            continue  # the marker went with the method
        lines = read(checkout.root / o.file).splitlines()
        span = _definition_span(lines, o, link.scope)
        if span is None:
            continue  # the class or the method is gone (deleted with its marker)
        marker = copies.marker_above(lines, span[0])
        if marker is None:
            continue  # the plan dropped it
        check = copies.check_copy(checkout, marker, lines, span[0], span[1], read)
        if check.status is not CopyStatus.CONSISTENT:
            for member in (o.id, link.source_id):
                if member in shard_of:
                    broken[shard_of[member]] = Held(
                        shard_of[member],
                        HeldCause.COPY_WOULD_BREAK,
                        f"{o.id}: its '# Copied from' would become {check.status}: {check.detail}",
                    )
    return broken


def _longer_reductions(result: ScanResult, plan: Plan, rewrites: Sequence[FileRewrite]) -> dict[str, Held]:
    """Shards with a reduction that leaves its method longer than it was: shard -> why. What verification's repairs
    add to a reduction (the masked LMs drop three keys the mixin passes, after the dummy token kept in front of
    super()) can make it so; an override that says the same in more lines is no reduction. The method's length
    before is the index's; each rewritten file is parsed once."""
    by_path = {r.path: r for r in rewrites if r.changed}
    by_id = result.index.by_id()
    shard_of = {m: s.id for s in plan.shards for m in s.members}
    reduced: dict[str, list[Override]] = {}
    for oid, action in plan.actions:
        o = by_id.get(oid)
        if action is Action.REDUCE and o is not None and o.file in by_path and oid in shard_of:
            reduced.setdefault(o.file, []).append(o)
    longer: dict[str, Held] = {}
    for path, overrides in reduced.items():
        tree = _parsed(by_path[path].new_text())
        for o in overrides:
            new = _span_in(tree, o, CopyScope.METHOD) if tree is not None else None
            if new is not None and new[1] - new[0] + 1 > o.lines:
                longer[shard_of[o.id]] = Held(
                    shard_of[o.id],
                    HeldCause.LONGER,
                    f"{o.id}: reduced, it would be {new[1] - new[0] + 1} lines where it is {o.lines}",
                )
    return longer


def _parsed(text: str) -> ast.Module | None:
    try:
        return ast.parse(text)
    except SyntaxError:
        return None


def _definition_span(lines: Sequence[str], o: Override, scope: str) -> tuple[int, int] | None:
    """Lines of the copy (the class, or its method) in the rewritten text."""
    tree = _parsed("\n".join(lines))
    return _span_in(tree, o, scope) if tree is not None else None


def _span_in(tree: ast.Module, o: Override, scope: str) -> tuple[int, int] | None:
    """Lines of ``o``'s class (or its method) in ``tree``: from its first decorator to its end."""
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == o.class_name:
            target: ast.ClassDef | ast.FunctionDef | None
            if scope is CopyScope.CLASS:
                target = node
            else:
                target = next(
                    (
                        n
                        for n in node.body
                        if isinstance(n, ast.FunctionDef) and n.name == "prepare_inputs_for_generation"
                    ),
                    None,
                )
                if target is None:
                    return None
            start = min([d.lineno for d in target.decorator_list] + [target.lineno])
            return start, target.end_lineno or start
    return None


def compute_changes(
    result: ScanResult,
    jobs: int | None = None,
    *,
    mark_kept: bool = False,
    hold_unproven: bool = False,
    hooks: bool = False,
) -> Changes:
    """Plan and rewrite (in memory) the migration of ``result.findings`` (``mark_kept``: also mark the
    overrides that stay as they are; ``hold_unproven``: no verification follows, see ``make_plan``;
    ``hooks``: the hooks mined from them too, ``codemod.transform.hooks``: the hook in the mixin, its members rewritten).
    The repairs the scan's facts predict (``predict``) are planned up front, as ``apply --verify`` plans them."""
    repairs = predicted_repairs(result.findings) or None
    if hooks:
        report = mine(result)
        plan = plan_with_hooks(result, report, repairs, mark_kept=mark_kept, hold_unproven=hold_unproven)
        return settle(hooked_result(result, report), plan, jobs)
    changes = settle(result, initial_plan(result, repairs, mark_kept=mark_kept, hold_unproven=hold_unproven), jobs)
    if hold_unproven:  # the idiom fixes change how the model runs: unsafe, as ruff says (codemod.transform.idioms)
        return changes
    from codemod.transform.idioms.tree import with_idioms

    return with_idioms(result, changes)


def settle(result: ScanResult, plan: Plan, jobs: int | None = None) -> Changes:
    """Rewrite ``plan`` in memory, dropping shards until every file compiles and every copy holds.

    Files are read from disk: the checkout must hold the code the plan was made from."""
    index = result.index
    checkout = index.checkout
    # a method left as nothing but a super() call kept for its signature names the installed mixin's variant instead
    plan = with_aliases(
        plan, {o.id: o for o in index.overrides}, _carries_variant(result), result.profile.override_enables_generation
    )
    dropped: list[Held] = []
    done: dict[str, FileRewrite] = {}  # path -> its rewrite under the current plan's edits
    flakes: dict[str, Held] = {}  # path -> the pyflakes problems its rewrite adds
    edits_of: dict[str, list[Edit]] = {}
    for _ in range(_MAX_ROUNDS):
        # a later round rewrites (and re-checks) only the files whose edits dropping shards changed
        by_file = plan.by_file()
        stale = {path for path, edits in by_file.items() if edits_of.get(path) != edits}
        fresh = _rewrite_all(checkout, by_file, jobs, only=stale)
        edits_of = by_file
        done = {path: r for path, r in done.items() if path in by_file and path not in stale}
        done.update((r.path, r) for r in fresh)
        flakes = {path: why for path, why in flakes.items() if path in done and path not in stale}
        flakes.update(_new_flakes(fresh, jobs))
        rewrites = [done[path] for path in sorted(done)]
        failing = {r.path: Held(r.path, HeldCause.WOULD_NOT_COMPILE, r.error) for r in rewrites if r.error}
        failing.update(flakes)
        problems = {
            shard: Held(shard, f.cause, f"{path}: {f.detail}")
            for path, f in failing.items()
            for shard in _shards_of(plan, {path})
        }
        if plan.hoist is not None and plan.hoist.file in failing:
            # no change stands without the implementation it hands the work to
            why = f"{plan.hoist.file}: {failing[plan.hoist.file].detail}"
            problems = {s.id: Held(s.id, HeldCause.HOIST_FAILS, why) for s in plan.shards}
        if not problems:
            problems = _broken_copies(result, plan, rewrites)
        if not problems:
            problems = _longer_reductions(result, plan, rewrites)
        if not problems:
            break
        dropped.extend(problems[shard] for shard in sorted(problems))
        # each shard says its own why (the problems of one round are of different shards and kinds)
        plan = plan.without(problems.values())
    else:  # pragma: no cover - each round drops at least one shard
        raise RuntimeError("the plan did not settle")
    mirrored = sorted(
        {
            (o.file, o.generated_from.modular_file)
            for o in index.overrides
            if o.generated_from is not None
            and o.generated_from.modular_file
            and o.file in {r.path for r in rewrites if r.changed}
        }
    )
    return Changes(plan, tuple(r for r in rewrites if r.changed or r.error), tuple(dropped), tuple(mirrored))


def _flakes_job(rewrite: FileRewrite) -> tuple[str, list[str]]:
    return rewrite.path, soundness.new_problems(rewrite.old_text(), rewrite.new_text(), rewrite.path)


def _new_flakes(rewrites: Sequence[FileRewrite], jobs: int | None) -> dict[str, Held]:
    """Files whose rewrite adds pyflakes problems (an undefined name, a dead store, an unused import):
    path -> what. A rewrite may remove problems, never add one."""
    changed = [r for r in rewrites if r.changed]
    workers = min(jobs or os.cpu_count() or 1, len(changed))
    found: Iterable[tuple[str, list[str]]]
    if workers <= 1 or len(changed) < 8:
        found = map(_flakes_job, changed)
    else:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            found = list(pool.map(_flakes_job, changed, chunksize=4))
    return {
        path: Held(path, HeldCause.WOULD_ADD_FLAKES, "the rewrite would add " + "; ".join(problems)[:200])
        for path, problems in found
        if problems
    }


def _carries_variant(result: ScanResult) -> bool:
    """Whether the checkout's mixin is (or the plan's hoist makes it) the one this tool installs, with the method
    that refuses ``inputs_embeds`` (``codemod.transform.alias``): a stub era, or a tree an earlier pass migrated."""
    if checkout_era(result) is Era.STUB:
        return True
    mixin_file = result.index.checkout.mixin_file
    return mixin_file is not None and mixin_file.is_file() and f"def {REFUSING_EMBEDS}(" in read_source(mixin_file)


# --------------------------------------------------------------------------------------------- output


def unified_diff(changes: Changes) -> str:
    return "".join(line for r in changes.rewrites if r.changed for line in _diff_lines(r))


def unified_diff_bytes(changes: Changes) -> bytes:
    """``unified_diff`` with each file's lines in that file's own encoding, as git prints a diff: a patch
    of a latin-1 file, or of a file with a BOM, applies to its bytes. The ``---``/``+++`` paths are UTF-8."""
    out = []
    for r in changes.rewrites:
        if r.changed:
            codec = _line_codec(r.encoding)
            out += [
                line.encode("utf-8" if n < 2 else codec, "surrogateescape") for n, line in enumerate(_diff_lines(r))
            ]
    return b"".join(out)


def _line_codec(encoding: str) -> str:
    """The codec that gives a file's bytes back line by line: a BOM is part of the first line, not of each."""
    return "utf-8" if codecs.lookup(encoding).name == "utf-8-sig" else encoding


def _diff_lines(r: FileRewrite) -> list[str]:
    codec = _line_codec(r.encoding)
    lines = difflib.unified_diff(
        r.old.decode(codec).splitlines(keepends=True),
        r.new.decode(codec).splitlines(keepends=True),
        fromfile=f"a/{r.path}",
        tofile=f"b/{r.path}",
    )
    return [line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines]


def write(checkout: Checkout, changes: Changes) -> list[str]:
    """Write every changed file, all or nothing; returns the paths written (``codemod.writes.replace_all``).

    A file that changed on disk since it was read stops the write (its edit is never overwritten); Ctrl-C and
    any failure put back each original already replaced. A symlink is written through (its target changes,
    the link stays a link)."""
    changed = [r for r in changes.rewrites if r.changed]
    replace_all(checkout.root, [Replacement(real_path(checkout.root / r.path), r.path, r.old, r.new) for r in changed])
    return [r.path for r in changed]


def restore(checkout: Checkout, originals: dict[str, bytes]) -> list[str]:
    """Put ``originals`` (path -> bytes) back, each atomically; returns the paths that could not be."""
    return put_back({real_path(checkout.root / path): (path, data) for path, data in originals.items()})
