"""What ``diff`` and ``apply`` say they (would) write, and why, in a few lines for the terminal or a log.

A change reaches beyond the selected models: a copy of a changed override changes with it or is marked
``# Ignore copy`` (so that ``utils/check_copies.py`` still passes), and on a release whose mixin only
raises (<= 4.45) the generic implementation is installed in ``GenerationMixin``, which every deletion
relies on. The summary groups the files by that reason, so that a user who asked for two models and sees
thirteen files written reads why.
"""

from __future__ import annotations

from collections.abc import Sequence

from codemod.analyse.classify import Action
from codemod.analyse.scan import ScanResult
from codemod.contracts import Held
from codemod.publish.report import count
from codemod.sources import model_name
from codemod.transform.apply import Changes
from codemod.transform.plan import EditKind

#: edits that add to or install code in the mixin (the stub's generic implementation, a mined hook)
_MIXIN = frozenset({EditKind.HOIST, EditKind.HOOK})
#: edits that change an override's code (the rest mark it, or keep a copy marker true)
_CODE = frozenset(
    {
        EditKind.DELETE,
        EditKind.REDUCE,
        EditKind.REMOVE,
        EditKind.SWAP_DELEGATE,
        EditKind.SET_ATTRIBUTE,
        EditKind.TRIM,
        EditKind.ADD_METHOD,
    }
)

SELECTED = "for the selected models"
CHANGED = "for the overrides changed"
COPIES = "to keep copies consistent (a copy changes with its source, or is marked '# Ignore copy')"
MIXIN = "to install code in GenerationMixin (the generic implementation every deletion relies on, or hooks)"


def totals(result: ScanResult, changes: Changes) -> str:
    """One line: what happens to the overrides, and to the files and their lines."""
    s = changes.summary(result)
    removed = s["lines_removed"]
    # a hoisted mixin can add more lines than a few reductions remove
    lines = f"{count(removed, 'line')} removed" if removed >= 0 else f"{count(-removed, 'line')} more than before"
    return (
        f"{count(s['deleted'], 'override')} deleted, {s['reduced']} reduced, {s['kept']} kept ({s['held']} held back); "
        f"{count(s['files'], 'file')}, {lines}"
    )


def written_groups(result: ScanResult, changes: Changes, only: Sequence[str]) -> list[tuple[str, list[str]]]:
    """(why, the files written for it) for each reason that has files, in the order the module names them:
    the selected models' own files (every model's, without ``--only``), the copies kept consistent with
    them, the mixin."""
    by_id = result.index.by_id()
    selected = {m.lower() for m in only}
    changing = {oid for oid, action in changes.plan.actions if action is not Action.KEEP}
    groups: dict[str, list[str]] = {}
    for rewrite in changes.rewrites:
        if not rewrite.changed:
            continue
        kinds = {e.kind for e in rewrite.applied}
        models = {
            (by_id[e.override_id].model or "").lower()
            for e in rewrite.applied
            if e.kind in _CODE and e.override_id in changing and e.override_id in by_id
        }
        if kinds & _MIXIN:
            why = MIXIN
        elif models and (not selected or models & selected):
            why = SELECTED if selected else CHANGED
        else:
            why = COPIES
        groups.setdefault(why, []).append(rewrite.path)
    order = (SELECTED, CHANGED, COPIES, MIXIN)
    return [(why, groups[why]) for why in order if why in groups]


#: the models a group's line names before it counts the rest
NAMED = 8


def group_lines(result: ScanResult, changes: Changes, only: Sequence[str]) -> list[str]:
    """``  3 files for the selected models: llama, gpt2``: one indented line per reason, naming its models;
    none when every file is written for one reason (the totals say it)."""
    checkout = result.index.checkout
    groups = written_groups(result, changes, only)
    if len(groups) < 2:
        return []
    lines = []
    for why, files in groups:
        models = sorted({m for f in files if (m := model_name(checkout, checkout.root / f)) is not None})
        more = f" and {len(models) - NAMED} more" if len(models) > NAMED else ""
        named = f": {', '.join(models[:NAMED])}{more}" if models and why != MIXIN else ""
        lines.append(f"  {count(len(files), 'file')} {why}{named}")
    return lines


def held_line(held: Held, verb: str = "held back") -> str:
    """``held back <class path>: <why>``, the class path once (a reason may start with it already)."""
    return f"{verb} {held.subject}: {held.detail.removeprefix(f'{held.subject}: ')}"
