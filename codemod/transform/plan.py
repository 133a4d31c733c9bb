"""Plan: from findings to edits, grouped into shards that must change together.

Pure: a function of the scan. The plan follows the findings' actions, then keeps the code base
consistent:

- an override in a generated file follows the override it is generated from (its modular class,
  or the parent the converter copies it from), and both files get the same edit;
- the modular trap: a modular class whose parent model defines the method cannot simply lose its
  override (the converter would copy the parent's in); it gets the converter's removal stub;
- ``# Copied from`` groups change as one unit: a copy whose source changes differently loses its
  marker (method-level) or gets ``# Ignore copy`` (class-level); a class-level copy cannot lose a
  method its source keeps, so that deletion is held back;
- every override that stays in the selection is marked ``# Overwritten -- <reason>``;
- a stub mixin (≤ 4.45) first gets the generic implementation (``rules.generic_mixin``).

The plan's data is ``codemod.transform.edits``, the reductions ``codemod.transform.reduce``, the rules above
``codemod.transform.planner``; this module makes the plan (``make_plan``; ``initial_plan`` for a scan) and is where
the rest of the tool imports them from.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping, Sequence

from codemod.analyse import soundness
from codemod.analyse.classify import Action, Finding
from codemod.analyse.index import Index
from codemod.analyse.mixin import MIXIN_CLASS, Era, MixinProfile
from codemod.analyse.scan import ScanResult
from codemod.contracts import Repair, ValueOrigin
from codemod.transform.edits import Edit, EditKind, HookCode, Plan, Shard, Trim
from codemod.transform.planner import Planner, PlanOptions, mixin_import
from codemod.transform.reduce import (
    MIXIN_KEYS,
    extras_summary,
    kept_inputs,
    own_inputs_read,
    reduce_override,
    slim_parameters,
    unnamable,
)

__all__ = [
    "MIXIN_KEYS",
    "Edit",
    "EditKind",
    "HookCode",
    "Plan",
    "PlanOptions",
    "Shard",
    "Trim",
    "checkout_era",
    "extras_summary",
    "initial_plan",
    "kept_inputs",
    "make_plan",
    "mixin_import",
    "mixin_reach",
    "own_inputs_read",
    "reduce_override",
    "slim_parameters",
    "unnamable",
]


def make_plan(index: Index, findings: Sequence[Finding], options: PlanOptions) -> Plan:
    """Plan the migration of ``findings`` (already filtered by --only/--skip), as ``options`` say (``PlanOptions``).

    An override the plan changes carries its ``# Overwritten --`` reason; one that stays as it is is
    marked only with ``options.mark_kept``."""
    planner = Planner(index, findings, options)
    planner.initial()
    planner.generated()
    planner.modular_trap()
    planner.copies()
    shards = planner.shards()
    actions = tuple(sorted((oid, d.action) for oid, d in planner.decisions.items()))
    changes = any(a is not Action.KEEP for _, a in actions)
    hoist = None
    if planner.hoist_needed and changes and options.mixin_file is not None:
        from codemod.rules.generic_mixin import HOIST_SOURCE

        hoist = Edit(
            options.mixin_file,
            MIXIN_CLASS,
            EditKind.HOIST,
            None,
            "the mixin is a stub: install the generic implementation first",
            HOIST_SOURCE,
        )
    return Plan(tuple(shards), hoist, tuple(planner.held), actions, tuple(planner.notes))


def initial_plan(
    result: ScanResult,
    repairs: dict[str, Repair] | None = None,
    *,
    mark_kept: bool = False,
    hold_unproven: bool = False,
    trims: dict[str, Trim] | None = None,
    moved_whole: frozenset[str] = frozenset(),
    left_out: Mapping[str, frozenset[str]] | None = None,
) -> Plan:
    """The plan of a scan: ``make_plan`` against the scan's mixin (its era, file and reach), with these options."""
    checkout = result.index.checkout
    mixin_file = checkout.relative(checkout.mixin_file) if checkout.mixin_file else None
    driven, ids_given = drivers(result)
    return make_plan(
        result.index,
        result.findings,
        PlanOptions(
            mixin_era=checkout_era(result),
            mixin_file=mixin_file,
            repairs=repairs,
            override_enables_generation=result.profile.override_enables_generation,
            mixin_reach=mixin_reach(result.profile),
            mark_kept=mark_kept,
            hold_unproven=hold_unproven,
            trims=trims,
            moved_whole=moved_whole,
            left_out=left_out,
            driven=driven,
            ids_given=ids_given,
        ),
    )


def drivers(result: ScanResult) -> tuple[dict[str, frozenset[str]], frozenset[str]]:
    """For the overrides the findings change, from their files' text (``codemod.analyse.plain_safety``): the
    keywords other classes pass when they generate through an override's class (none where there are none), and
    the overrides whose decoder ids a ``generate()`` makes."""
    from codemod.analyse import plain_safety
    from codemod.sources import READ_ERRORS, read_source

    root = result.index.checkout.root
    trees: dict[str, ast.Module | None] = {}  # each file parsed once, however many of its overrides change
    driven: dict[str, frozenset[str]] = {}
    ids_given: set[str] = set()
    for f in result.findings:
        o = f.override
        if f.action is Action.KEEP:
            continue
        if o.file not in trees:
            try:
                trees[o.file] = plain_safety.parsed(read_source(root / o.file))
            except READ_ERRORS:
                trees[o.file] = None
        keys = plain_safety.driven_keywords(trees[o.file], o.class_name)
        if keys:
            driven[o.id] = keys
        if plain_safety.gives_decoder_ids(trees[o.file], o.class_name):
            ids_given.add(o.id)
    return driven, frozenset(ids_given)


def mixin_reach(profile: MixinProfile) -> soundness.Reach:
    """What the mixin itself passes to ``forward``: the keys its body always sets (``inputs_embeds`` for
    decoder-only models, ``cache_position`` where it passes the parameter on); every model kwarg besides."""
    analysis = profile.analysis
    if analysis is None:
        return soundness.Reach(True, frozenset())
    sets = {
        o.key
        for o in analysis.outputs
        if not o.guards and not o.conditions and o.value.origin in (ValueOrigin.PARAM, ValueOrigin.FIRST_STEP)
    }
    # a behaviour that passes its key only for a class whose attribute says so (the mixin's
    # ``if self._supports_cache_class: model_inputs["cache_position"] = cache_position``, synthesise-cache-position)
    claimed = {o.value.name: o.key for o in analysis.outputs if o.value.origin is ValueOrigin.BEHAVIOUR}
    when = {
        (claimed[r.behaviour], attribute)
        for r in analysis.recognised
        if r.behaviour in claimed and (attribute := r.facet("passed_when")) is not None
    }
    return soundness.Reach(
        True, frozenset(sets), frozenset(profile.never_forwarded), soundness.inputs_read(analysis), frozenset(when)
    )


def checkout_era(result: ScanResult) -> Era:
    # The profile of a stub mixin is the hoisted implementation's; the hoist is needed when the
    # checkout's own method is the stub, which the profile's source says.
    return Era.STUB if result.profile.hoisted and result.index.checkout.mixin_file is not None else result.profile.era
