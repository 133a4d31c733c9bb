"""The planner: a decision for each finding, then the rules of ``codemod.transform.plan`` that keep the code
base consistent (generated files, the modular trap, copies, marks), and the shards of edits.
"""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Iterable, Mapping, Sequence

from codemod.analyse import plain_safety, soundness
from codemod.analyse.classify import Action, Extra, Finding
from codemod.analyse.fallback import FallbackKind
from codemod.analyse.index import CopyLink, Index, Override
from codemod.analyse.mixin import MIXIN_CLASS, Era
from codemod.contracts import (
    CopyScope,
    CopyStatus,
    ExtraHow,
    Held,
    HeldCause,
    OriginKind,
    Repair,
)
from codemod.groups import UnionFind
from codemod.sources import METHOD, FileKind
from codemod.transform.edits import Edit, EditKind, Shard, Trim
from codemod.transform.reduce import (
    DROPPED_INPUTS,
    Reduction,
    as_mark,
    cuts_of,
    extra_statements,
    extras_summary,
    grouped_statements,
    keep_reason,
    keeps_own,
    kept_after,
    kept_statements,
    names_in,
    param_list,
    reduce_override,
    repair_extras,
    swap_parameters,
    without_cuts,
)


@dataclasses.dataclass
class _Decision:
    action: Action
    edit: EditKind | None  # DELETE / REDUCE / REMOVE, or None to leave the body
    body: str = ""
    mark: str = ""
    reason: str = ""
    keep: tuple[int, ...] = ()  # statements a REDUCE keeps (see Edit.keep)
    keep_params: tuple[str, ...] = ()  # parameters a REDUCE or TRIM keeps (see Edit.keep_params)
    extras: tuple[Extra, ...] = ()  # what a REDUCE re-creates after super()
    remove: tuple[int, ...] = ()  # statements a TRIM removes (see Edit.remove)

    @property
    def keep_after(self) -> tuple[int, ...]:
        """Statements a REDUCE keeps after the super() call (see Edit.keep_after)."""
        return kept_after(self.extras)


def _reduced(reduction: Reduction, extras: tuple[Extra, ...], summary: str, reason: str) -> _Decision:
    """The decision to reduce an override to ``reduction``, which re-creates ``extras`` after super()."""
    return _Decision(
        Action.REDUCE,
        EditKind.REDUCE,
        body=reduction.body,
        mark=summary,
        reason=reason,
        keep=kept_statements(extras),
        keep_params=reduction.keep_params,
        extras=extras,
    )


def _unreachable(o: Override) -> bool:
    """No base defines the method, or what does is not known: nothing may take the override's place."""
    return o.fallback is not None and o.fallback.kind in (FallbackKind.NONE, FallbackKind.UNKNOWN)


#: the mark of an override whose whole body a mined hook runs in the mixin: generate() reads the method's
#: signature (it refuses ``inputs_embeds`` a signature does not name, and checks the model kwargs against it)
_MOVED_WHOLE = "the mixin's hook prepares its inputs; kept for its signature, which generate() reads"


#: the same, for one that keeps its own check of the config in front (``hooks.Member.guards``)
_MOVED_WHOLE_CHECKED = "the mixin's hook prepares its inputs; keeps its own check, and its signature for generate()"


@dataclasses.dataclass(frozen=True)
class PlanOptions:
    """What a plan is made against, and what shapes its changes besides the findings."""

    #: the era of the checkout's own mixin (a stub, ≤ 4.45, first gets the generic implementation) and its file
    mixin_era: Era
    mixin_file: str | None
    #: override -> the fixes verification found its reduction needs (keys the mixin adds to drop, keys to set to
    #: None, parameters to keep passing): it turns a deletion into such a reduction
    repairs: Mapping[str, Repair] | None = None
    #: the override is what makes the class generate (``can_generate()``): a deletion adds the mixin base
    override_enables_generation: bool = False
    #: what the mixin passes to ``forward`` (``soundness.Reach``), for the check that every key a change makes reach
    #: ``forward`` is one it takes; None: no forward check (a plan made without a profile)
    mixin_reach: soundness.Reach | None = None
    #: mark the overrides that stay as they are (a comment-only edit is churn in a migration, so it is asked for)
    mark_kept: bool = False
    #: no verification follows (``apply`` on model code outside transformers): a change that would alter what the
    #: standard generate flow prepares (``Finding.flow``) is held back with its reason
    hold_unproven: bool = False
    #: override the findings keep -> what a trim takes out of it (``Trim``: for the members of a mined hook,
    #: ``codemod.transform.hooks``, that call ``super()`` already): planned like any change, so a generated file and
    #: its modular source trim together
    trims: Mapping[str, Trim] | None = None
    #: overrides reduced to ``super()`` because a mined hook runs their whole body in the mixin (which returns their
    #: own dict before preparing anything)
    moved_whole: frozenset[str] = frozenset()
    #: override -> the keys the mined hooks make the mixin leave out for it (none of them reaches forward)
    left_out: Mapping[str, frozenset[str]] | None = None
    #: override -> the keywords other classes of its file pass when they generate through its class
    #: (``plain_safety.driven_keywords``): a change that forwards one the old closed dict dropped drops it after
    #: super()
    driven: Mapping[str, frozenset[str]] | None = None
    #: overrides whose decoder ids a ``generate()`` makes (``plain_safety.gives_decoder_ids``): shorter than the
    #: cache when generation continues from a returned one
    ids_given: frozenset[str] = frozenset()


class Planner:
    """A plan in the making (``plan.make_plan`` runs its stages in order): a decision per finding, then the rules
    that keep the code base consistent, then the shards."""

    def __init__(self, index: Index, findings: Sequence[Finding], options: PlanOptions) -> None:
        self.repairs = options.repairs or {}
        #: keys the mixin's mined hooks leave out for an override (``_generation_dropped_inputs``): never passed to
        #: forward, so nothing to drop after super() for them
        self.left_out = dict(options.left_out or {})
        self.driven = options.driven or {}
        self.ids_given = options.ids_given
        #: overrides whose whole body a mined hook runs in the mixin, which returns before it prepares anything:
        #: what the mixin would pass to forward is no concern of theirs
        self.moved_whole = options.moved_whole
        #: no verification follows: hold back the changes only verification could prove
        self.hold_unproven = options.hold_unproven
        self.trims = options.trims or {}
        #: mark the overrides that stay as they are (comment-only edits: only when asked)
        self.mark_kept = options.mark_kept
        self.override_enables_generation = options.override_enables_generation
        #: what the mixin passes to forward; None: no forward check (a plan made without a profile)
        self.mixin_reach = options.mixin_reach
        self.index = index
        self.by_id = index.by_id()
        self.findings: dict[str, Finding] = {f.override.id: f for f in findings}
        self.hoist_needed = options.mixin_era is Era.STUB
        self.mixin_file = options.mixin_file
        self.decisions: dict[str, _Decision] = {}
        self.held: list[Held] = []
        self.notes: list[str] = []
        self.extra_edits: list[Edit] = []

    def hold(self, override_id: str, cause: HeldCause, reason: str, mark: str | None = None) -> None:
        decision = self.decisions[override_id]
        if decision.action is not Action.KEEP:
            self.held.append(Held(override_id, cause, reason))
        self.decisions[override_id] = _Decision(Action.KEEP, None, mark=reason if mark is None else mark)

    def initial(self) -> None:
        """A decision for each finding (its action, or the reduction verification asked for), then the trims of the
        mined hooks, then the checks that hold a change back."""
        for oid, f in self.findings.items():
            repair = self.repairs.get(oid)
            repaired = self.repaired(f, repair) if repair is not None else None
            self.decisions[oid] = repaired if repaired is not None else self.decided(f)
        for oid, trim in self.trims.items():
            if oid in self.decisions and self.decisions[oid].action is Action.KEEP:
                # statements a mined hook does in the mixin now (codemod.transform.hooks); the rest of the method stays as
                # the maintainers wrote it, comments and all, so it gets no mark
                signature = self.by_id[oid].analysis.params
                keep_params = tuple(p.name for p in signature if p.name not in trim.unnamed) if trim.unnamed else ()
                self.decisions[oid] = _Decision(
                    Action.REDUCE,
                    EditKind.TRIM,
                    remove=trim.remove,
                    keep_params=keep_params,
                    reason="trimmed: the mixin's hook does what the removed statements did",
                )
        for oid, decision in list(self.decisions.items()):
            decision = self.withhold_positions(self.findings[oid], decision)
            decision = self.decisions[oid] = self.fit_forward(self.findings[oid], decision)
            why = self.refusal(self.findings[oid], decision)
            if why is not None:
                self.decisions[oid] = _Decision(Action.KEEP, None, mark=as_mark(why))
                self.held.append(Held(oid, HeldCause.REFUSED, f"refused: {why}"))
            elif self.hold_unproven and self.findings[oid].flow and decision.action is not Action.KEEP:
                # not behaviour-preserving by construction: what generate() feeds the model would change
                flow = self.findings[oid].flow[0]
                self.hold(
                    oid,
                    HeldCause.UNPROVEN,
                    f"unproven without --verify: it would change what is prepared in "
                    f"the standard generate flow ({flow})",
                    mark=as_mark(flow),
                )
            elif self.hold_unproven and decision.action is not Action.KEEP:
                # the mixin cuts the ids by cache_position; the old override its own way (plain_safety)
                unsafe = plain_safety.unproven(
                    self.findings[oid].override, oid in self.ids_given, self.driven.get(oid, frozenset())
                )
                if unsafe is not None:
                    self.hold(oid, HeldCause.UNPROVEN, f"unproven without --verify: {unsafe}", mark=as_mark(unsafe))

    def repaired(self, f: Finding, repair: Repair) -> _Decision | None:
        """The reduction of ``f``'s override with the fixes verification found (``repair``); None where it cannot be
        made (a parameter to keep that it does not have, a reduction that cannot be written)."""
        params = {p.name for p in f.override.analysis.params}
        # what a reduction passes on as the caller gives it, it reads from a parameter or else from **kwargs
        has_var_keywords = param_list(f.override)[3] is not None
        if not (
            f.action in (Action.DELETE, Action.REDUCE)
            and set(repair.keep) <= params
            and (set(repair.passthrough) <= params or has_var_keywords)
        ):
            return None
        # verification showed where the mixin prepares something else: keep the override's
        # behaviour by reducing it to super() (its parameters passed on) with those keys fixed
        outputs = {o.key for o in f.override.analysis.outputs}
        # a last-token cut of a key the override does not prepare is a composite's (its decoder's ids)
        repaired = tuple(
            e for e in repair_extras(repair, f.override) if e.how is not ExtraHow.LAST_TOKEN or e.key in outputs
        )
        extras = (*(without_cuts(f.extras) if repair.uncut else f.extras), *repaired)
        swap = next((e.source for e in f.extras if e.how is ExtraHow.SWAP_DELEGATE), None)
        fixes = extra_statements(f.override, repaired, slim=True) if swap is not None else None
        if swap is not None and fixes:
            # super() instead of the sub-model, and after it what the sub-model's own override did
            summary = extras_summary(repaired)
            return _Decision(
                Action.REDUCE,
                EditKind.SWAP_DELEGATE,
                body="\n".join(grouped_statements(fixes)) + "\n",
                mark=f"asks super() instead of {swap}; keeps its own input handling; {summary}",
                reason=f"reduced: super() instead of {swap}, after verification: {summary}",
                # a fix that reads a parameter keeps every one (slimming drops some)
                keep_params=() if names_in("\n".join(fixes)) & params else swap_parameters(f.override),
                extras=extras,
            )
        reduction = reduce_override(f.override, extras)
        if reduction is None:
            return None
        summary = extras_summary(extras)
        return _reduced(reduction, extras, summary, f"reduced to super() after verification: {summary}")

    def decided(self, f: Finding) -> _Decision:
        """The decision ``f``'s action asks for (a reduction that cannot be written is held back)."""
        oid = f.override.id
        if f.action is Action.DELETE:
            return _Decision(Action.DELETE, EditKind.DELETE, reason="generic: the mixin does the same")
        if f.action is Action.REDUCE and any(e.how is ExtraHow.SWAP_DELEGATE for e in f.extras):
            delegate = next(e.source for e in f.extras if e.how is ExtraHow.SWAP_DELEGATE)
            return _Decision(
                Action.REDUCE,
                EditKind.SWAP_DELEGATE,
                mark=f"asks super() instead of {delegate}; keeps its own input handling",
                reason=f"reduced: super() instead of {delegate}",
                keep_params=swap_parameters(f.override),
            )
        if f.action is Action.REDUCE:
            reduction = reduce_override(f.override, f.extras)
            if reduction is None:
                self.held.append(
                    Held(
                        oid,
                        HeldCause.NOT_RECREATABLE,
                        "its extra keys cannot be re-created after super() (a sliced input)",
                    )
                )
                return _Decision(
                    Action.KEEP, None, mark=keep_reason(f) if keeps_own(f) else f"keeps {extras_summary(f.extras)}"
                )
            summary = (
                (_MOVED_WHOLE_CHECKED if kept_statements(f.extras) else _MOVED_WHOLE)
                if oid in self.moved_whole
                else extras_summary(f.extras, f)
            )
            return _reduced(reduction, f.extras, summary, f"reduced to super(): {summary}")
        mark = keep_reason(f) if keeps_own(f) else extras_summary(f.extras)
        if not (keeps_own(f) or f.extras) or _unreachable(f.override):
            # kept as it is (a converter's removal stub, a maintainer's override), or nothing to overwrite
            # (no base defines the method): nothing to add
            mark = ""
        return _Decision(Action.KEEP, None, mark=mark)

    def withhold_positions(self, f: Finding, decision: _Decision) -> _Decision:
        """An override that cuts decoder ids a ``generate()`` makes to the last token keeps ``cache_position`` from
        super(): continuing from a returned cache those ids are shorter than the cache, where the generic mixin,
        given no positions, keeps the last id as the old cut did (and cache_position would select none)."""
        o = f.override
        if (
            not self.hoist_needed
            or o.id not in self.ids_given
            or decision.edit not in (EditKind.DELETE, EditKind.REDUCE)
            or any(e.how is ExtraHow.WITHHELD for e in decision.extras)
            or not plain_safety.withholds_positions(o)
            # given inputs_embeds, the mixin counts no positions from the cache (SeamlessM4T's text-to-unit model)
            or "inputs_embeds" in self.driven.get(o.id, frozenset())
        ):
            return decision
        extras = (*decision.extras, Extra("cache_position", ExtraHow.WITHHELD, ""))
        reduction = reduce_override(o, extras)
        if reduction is None:
            return decision
        summary = extras_summary(extras, f)
        why = f"reduced to super(): {summary} (its decoder ids come from generate(), shorter than a returned cache)"
        return _reduced(reduction, extras, summary, why)

    def fit_forward(self, f: Finding, decision: _Decision) -> _Decision:
        """In a checkout, keys the mixin would pass that ``forward`` does not take are dropped after super(),
        as the old closed dict never passed them (verification checks the result; it made the same repair).
        Outside one the same holds where verification follows (remote Phi-3 and the ``cache_position`` of a
        mixin for models with Cache classes); without it nothing runs the model to check it: the refusal below
        keeps the override instead."""
        o = f.override
        if (
            (not o.in_library and self.hold_unproven)
            or self.mixin_reach is None
            or o.id in self.moved_whole
            or decision.edit not in (EditKind.DELETE, EditKind.REDUCE)
        ):
            return decision
        reach = soundness.reach_of(o, self.mixin_reach)
        extras = decision.extras
        reduction = reduce_override(o, extras) if decision.edit is EditKind.REDUCE else None
        missing: tuple[str, ...] = ()
        for _ in range(3):  # a reduction hands super() its parameters, which may add keys to drop
            keywords = reduction.keywords if reduction is not None else ()
            forwarded = self._forwarded(o, reach, keywords, extras)
            # the old closed dict never passed these either: a key forward does not take, a parameter the reduction
            # hands super() that forward takes only through **kwargs, one a composite hands this class when it
            # generates through it (the mixin's own keys in a forward's **kwargs are the norm: left alone)
            spreads = reduction.spreads_kwargs if reduction is not None else True
            driven = plain_safety.forwarded_driven(o, self.driven.get(o.id, ()), keywords, spreads)
            unwanted = {
                *soundness.not_taken(o, forwarded),
                *plain_safety.only_through_kwargs(o, forwarded & set(keywords)),
                *(driven - self._left_out(o)),
            }
            more = tuple(sorted(k for k in unwanted if k not in missing))
            if not more:
                break
            missing += more
            extras = (*extras, *(Extra(key, ExtraHow.DROP) for key in more))
            reduction = reduce_override(o, extras)
            if reduction is None:
                return decision  # the refusal says why
        if not missing or reduction is None:
            return decision
        summary = extras_summary(extras, f)
        refused = set(soundness.not_taken(o, missing))
        why = (
            f"reduced to super(): {summary} ({o.class_name}.forward does not take {', '.join(missing)})"
            if refused == set(missing)
            else f"reduced to super(): {summary} (the old dict never passed {', '.join(missing)} to forward)"
        )
        return _reduced(reduction, extras, summary, why)

    def _forwarded(
        self, o: Override, reach: soundness.Reach, keywords: Iterable[str] = (), extras: Iterable[Extra] = ()
    ) -> set[str]:
        """The keys the mixin passes to ``o``'s forward (``soundness.forwarded_keys``), less those its hooks leave out
        for the class: what the forward check and the keys to drop after super() are about."""
        return soundness.forwarded_keys(o, reach, keywords, extras) - self._left_out(o)

    def _left_out(self, o: Override) -> frozenset[str]:
        """What the mixin leaves out for ``o``'s class: the keys this plan's hooks drop for it, and those its class
        names in the attribute of a hook written before (a second pass over the tree a first one left)."""
        written = o.attribute(DROPPED_INPUTS)
        try:
            names: object = ast.literal_eval(written) if written is not None else ()
        except (ValueError, SyntaxError):
            names = ()
        named = frozenset(n for n in names if isinstance(n, str)) if isinstance(names, tuple) else frozenset[str]()
        return self.left_out.get(o.id, frozenset()) | named

    def refusal(self, f: Finding, decision: _Decision) -> str | None:
        """Why a change would leave code that cannot run (``codemod.analyse.soundness``), or None."""
        o = f.override
        if decision.edit not in (EditKind.DELETE, EditKind.REDUCE):
            return None
        if o.fallback is not None and _unreachable(o):  # classify keeps these; a repair must not bring them back
            return f"nothing takes the method's place: {o.fallback.detail}"
        # what the mixin passes to forward (no concern of an override whose whole body it runs and returns)
        reach = (
            soundness.reach_of(o, self.mixin_reach)
            if self.mixin_reach is not None and o.id not in self.moved_whole
            else None
        )
        if decision.edit is EditKind.DELETE:
            return soundness.forward_refusal(o, self._forwarded(o, reach)) if reach is not None else None
        extras = decision.extras
        reduction = reduce_override(o, extras)
        if reduction is None:
            return None
        kept = kept_statements(extras)
        return (
            soundness.ids_refusal(o)
            or soundness.dead_statements(o, kept, reduction.body)
            or soundness.dead_statements(o, kept_after(extras), reduction.tail, where="after")
            or soundness.signature_refusal(o, reduction.keywords, reduction.spreads_kwargs)
            or (
                soundness.forward_refusal(o, self._forwarded(o, reach, reduction.keywords, extras))
                if reach is not None
                else None
            )
            or (soundness.interference(o, kept, reach) if reach is not None else None)
        )

    def generated(self) -> None:
        """A generated override changes only as the code it is generated from changes."""
        for oid, f in self.findings.items():
            origin = f.override.generated_from
            if origin is None:
                continue
            if origin.kind is OriginKind.MODULAR_CLASS and origin.modular_id is not None:  # always named
                source = origin.modular_id
            elif origin.kind is OriginKind.INHERITED and origin.source_id is not None:
                source = origin.source_id
            else:
                self.hold(
                    oid,
                    HeldCause.UNTRACED,
                    f"generated file; where its method comes from is {origin.kind}: {origin.detail}",
                )
                continue
            theirs = self.decisions.get(source)
            mine = self.decisions[oid]
            if theirs is None:
                # marked only where its source is marked, or the converter would undo it
                self.hold(
                    oid,
                    HeldCause.SOURCE_NOT_CHANGED,
                    f"generated from {source}, which this run does not change",
                    mark="",
                )
                continue
            if theirs.action is mine.action:
                continue
            # disagreement: the source decides for both when it keeps; otherwise hold both
            reason = f"generated from {source}, which the scan classifies differently ({theirs.action.value} vs {mine.action.value})"
            self.hold(oid, HeldCause.SOURCE_DISAGREES, reason)
            if theirs.action is not Action.KEEP and origin.kind is OriginKind.MODULAR_CLASS:
                self.hold(source, HeldCause.SOURCE_DISAGREES, reason)

    def modular_trap(self) -> None:
        """A modular override whose deletion would make the converter copy a parent's override in
        (``Override.inherited_from``, from the index) is removed with a stub instead."""
        for oid, decision in list(self.decisions.items()):
            if decision.action is not Action.DELETE or self.by_id[oid].kind is not FileKind.MODULAR:
                continue
            parent = self.by_id[oid].inherited_from
            if parent is None:
                continue
            parent_decision = self.decisions.get(parent)
            if parent_decision is not None and parent_decision.action is Action.DELETE:
                continue
            name = self.by_id[oid].class_name
            self.decisions[oid] = _Decision(
                Action.DELETE,
                EditKind.REMOVE,
                body=f'raise AttributeError("{name} uses GenerationMixin.prepare_inputs_for_generation")\n',
                reason=f"modular trap: deleting it would make the converter copy {parent}'s override in; "
                "the removal stub makes the generated class use the mixin",
            )

    def copies(self) -> None:
        """Keep ``# Copied from`` groups consistent with what changes."""
        for oid, o in self.by_id.items():
            link = o.copied_from
            if link is None:
                continue
            if link.follows is not None and link.check.status is CopyStatus.CONSISTENT:
                followed = self.decisions.get(link.follows)
                if followed is not None and followed.action is not Action.KEEP:
                    # check_copies compares it with that override's method, which changes: the marker goes, in the
                    # shard of the override that changes (kept however this copy's own change fares)
                    self.extra_edits.append(
                        Edit(
                            o.file,
                            o.class_name,
                            EditKind.DROP_MARKER,
                            oid,
                            f"check_copies compares it with {link.follows}'s method, which changes",
                            shard=link.follows,
                        )
                    )
            if link.source_id is None or link.check.status is not CopyStatus.CONSISTENT:
                decision = self.decisions.get(oid)
                if link.scope is CopyScope.METHOD and decision is not None and decision.action is Action.REDUCE:
                    # a source outside what is read (remote code copying a transformers model), or one it drifted
                    # from: whatever the source does, the reduced method is no copy of it
                    self.extra_edits.append(
                        Edit(
                            o.file, o.class_name, EditKind.DROP_MARKER, oid, "reduced: no longer a copy of its source"
                        )
                    )
                continue
            assert link.source_id is not None  # a consistent copy names its source
            mine = self.decisions.get(oid)
            theirs = self.decisions.get(link.source_id)
            my_action = mine.action if mine else Action.KEEP
            their_action = theirs.action if theirs else Action.KEEP
            same = my_action is their_action and (
                my_action is not Action.REDUCE
                or (mine is not None and theirs is not None and _same_reduction(mine, theirs, link))  # both reduce
            )
            if same:
                continue
            if link.scope is CopyScope.METHOD:
                if my_action is not Action.DELETE:
                    self.extra_edits.append(
                        Edit(
                            o.file,
                            o.class_name,
                            EditKind.DROP_MARKER,
                            oid,
                            f"its source {link.source_id} changes differently",
                        )
                    )
                continue
            # class-level copy
            if my_action is Action.DELETE:
                self.hold(
                    oid, HeldCause.COPY_SOURCE_KEEPS, f"class-level copy of {link.source_id}, whose {METHOD} stays"
                )
                my_action = Action.KEEP
            self.extra_edits.append(
                Edit(
                    o.file,
                    o.class_name,
                    EditKind.IGNORE_COPY,
                    oid,
                    f"class-level copy of {link.source_id}, whose {METHOD} changes differently",
                )
            )

    def marks(self) -> dict[str, str]:
        """``# Overwritten`` reasons. A copy that stays a copy must be marked exactly like its source
        (after the marker's replacements) or check_copies fails, so copies inherit their source's mark."""
        unlinked = {e.override_id for e in self.extra_edits}
        marks: dict[str, str] = {}

        def mark_of(oid: str, seen: tuple[str, ...] = ()) -> str:
            if oid in marks:
                return marks[oid]
            o, decision = self.by_id[oid], self.decisions.get(oid)
            if decision is None or decision.action is Action.DELETE:
                marks[oid] = ""  # a deleted method carries no mark, whatever its source's
                return ""
            if decision.edit is EditKind.REDUCE:
                # the new body replaces the old one and its comment: keep the maintainers' reason
                own = o.overwritten or decision.mark
            else:
                own = "" if o.overwritten else decision.mark
            origin = o.generated_from
            source = (
                origin.modular_id
                if origin is not None and origin.kind is OriginKind.MODULAR_CLASS
                else origin.source_id
                if origin is not None and origin.kind is OriginKind.INHERITED
                else None
            )
            if source is not None and source in self.by_id and source not in seen:
                # the converter writes the generated method from its source, comments included
                own = mark_of(source, (*seen, oid)) if self.decisions.get(source) is not None else ""
                marks[oid] = own
                return own
            link = o.copied_from
            if (
                link is not None
                and link.source_id is not None
                and link.check.status is CopyStatus.CONSISTENT
                and oid not in unlinked
                and link.source_id not in seen
            ):
                from codemod.analyse.copies import apply_replacements

                source_mark = mark_of(link.source_id, (*seen, oid))
                own = apply_replacements(source_mark, link.marker.replacements) if source_mark else ""
            marks[oid] = own
            return own

        for oid in self.decisions:
            mark_of(oid)
        return marks

    def shards(self) -> list[Shard]:
        edits: dict[str, list[Edit]] = {}
        marks = self.marks()
        for oid, decision in self.decisions.items():
            edits.setdefault(oid, []).extend(self.edits_of(oid, decision, marks.get(oid)))
        for edit in self.extra_edits:
            edits.setdefault(edit.shard or edit.override_id or "", []).append(edit)
        # shards: connected by copy links and generated-from links
        group = UnionFind()
        derived: set[str] = set()  # members that follow another member
        for oid in edits:
            group.add(oid)
            member = self.by_id.get(oid)
            if member is None:
                continue
            if member.copied_from and member.copied_from.source_id in edits:
                group.union(oid, member.copied_from.source_id)
                derived.add(oid)
            origin = member.generated_from
            if origin is not None:
                for linked in (origin.modular_id, origin.source_id):
                    if linked in edits:
                        group.union(oid, linked)
                        derived.add(oid)
        shards = []
        for members in group.groups():
            shard_edits = tuple(e for m in members for e in edits[m])
            if shard_edits:
                shards.append(self.shard(members, shard_edits, derived))
        return sorted(shards, key=lambda s: s.id)

    def edits_of(self, oid: str, decision: _Decision, mark: str | None) -> list[Edit]:
        """The edits of one override's decision: its change, the mixin base its class then needs, its mark."""
        o = self.by_id[oid]
        own = []
        if decision.edit is not None:
            own.append(
                Edit(
                    o.file,
                    o.class_name,
                    decision.edit,
                    oid,
                    decision.reason,
                    decision.body,
                    decision.keep,
                    decision.keep_params,
                    remove=decision.remove,
                    keep_after=decision.keep_after,
                    cuts=cuts_of(o, decision.extras),
                )
            )
        if (
            decision.edit is EditKind.DELETE
            and self.override_enables_generation
            and o.inherits_generation_mixin is False
        ):
            own.append(
                Edit(
                    o.file,
                    o.class_name,
                    EditKind.ADD_MIXIN_BASE,
                    oid,
                    "can_generate() looks for GenerationMixin among the bases once the override is gone",
                    mixin_import(o),
                )
            )
        elif (
            decision.edit in (EditKind.DELETE, EditKind.REDUCE)
            and o.fallback is not None
            and o.fallback.adds_mixin_base
        ):
            own.append(
                Edit(
                    o.file,
                    o.class_name,
                    EditKind.ADD_MIXIN_BASE,
                    oid,
                    "PreTrainedModel is not a GenerationMixin in the target release: without the override "
                    "(or for super()) the class needs it among its bases",
                    mixin_import(o),
                )
            )
        if mark and (decision.edit is not None or self.mark_kept):
            own.append(Edit(o.file, o.class_name, EditKind.MARK, oid, "stays: marked", mark))
        return own

    def shard(self, members: Sequence[str], shard_edits: tuple[Edit, ...], derived: set[str]) -> Shard:
        """The shard of ``members`` (connected by copy and generated-from links; ``derived``: those that follow
        another), with their edits."""
        kinds = {
            "copy" if self.by_id[m].copied_from else "generated" if self.by_id[m].generated_from else ""
            for m in members
        }
        kind = "override" if len(members) == 1 else ("copy-group" if "copy" in kinds else "modular")
        source = next((m for m in members if m not in derived), members[0])
        if not any(
            self.by_id[m].kind is FileKind.MODULAR or self.by_id[m].generated_from is not None
            for m in members
            if m in self.by_id
        ):
            shard_edits = tuple(
                dataclasses.replace(e, direct_return=True) if e.kind in _DIRECT_RETURN_KINDS else e
                for e in shard_edits
            )
        return Shard(members[0], kind, tuple(members), shard_edits, source)


#: the edits that leave a method ending in its super() call (``Edit.direct_return``)
_DIRECT_RETURN_KINDS = frozenset({EditKind.REDUCE, EditKind.TRIM, EditKind.SWAP_DELEGATE})


def mixin_import(o: Override) -> str:
    """The import of GenerationMixin for the file of ``o``: relative inside the transformers package,
    from ``transformers`` anywhere else (remote code, third-party packages)."""
    parts = o.file.split("/")
    if o.in_library and "transformers" in parts:
        dots = "." * (len(parts) - parts.index("transformers") - 1)
        return f"from {dots}generation import {MIXIN_CLASS}"
    return f"from transformers import {MIXIN_CLASS}"


def _same_reduction(mine: _Decision, theirs: _Decision, link: CopyLink) -> bool:
    from codemod.analyse.copies import apply_replacements

    return apply_replacements(theirs.body, link.marker.replacements) == mine.body
