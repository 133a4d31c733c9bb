"""Classify each override relative to what it falls back to: a category, and separately an action.

The category says what the override does relative to its fallback (the mixin, or a parent's override):
generic, kwargs-forwarding (the fallback's preparation plus extra keys) or bespoke (model-specific); the
action says what the tool does with it: delete it, reduce it to ``super()`` or keep it. Every finding
carries its reasons (the behaviours recognised, the extra keys, the statements not understood, the
differences from the fallback), so that a reader can check the verdict. Pure: a function of the index and
the mixin profile. See docs/design/classify.md for what each category and action means.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Sequence

from codemod.analyse import reduction
from codemod.analyse.analysis import Delegation, Recognised
from codemod.analyse.fallback import UPDATE_METHOD, FallbackKind
from codemod.analyse.findings import Action as Action  # the findings' types are re-exported: stages import them here
from codemod.analyse.findings import Category as Category
from codemod.analyse.findings import Extra as Extra
from codemod.analyse.findings import Finding as Finding
from codemod.analyse.findings import Reason as Reason
from codemod.analyse.index import Index, Override
from codemod.analyse.mixin import Era, MixinProfile, profile_from_analysis
from codemod.analyse.reduction import CORE_INPUTS as CORE_INPUTS  # re-exported: the plan and hooks use it
from codemod.analyse.reduction import IDS_KEYS as IDS_KEYS  # re-exported: the soundness check uses it
from codemod.analyse.reduction import RESULT as RESULT  # re-exported: the hooks use it
from codemod.analyse.reduction import KeptAfter
from codemod.analyse.target import TargetOrigin
from codemod.contracts import CACHE_NAMES, ExtraHow, ParamKind, ReasonKind, Value, ValueOrigin
from codemod.rules.base import IDS_SLICING, Rule
from codemod.rules.slice_by_past_length import LEGACY_TUPLE_DETAIL
from codemod.rules.slice_to_last_token import CACHE_BEFORE_FIRST_STEP
from codemod.rules.slice_to_last_token import RULE as LAST_TOKEN
from codemod.sources import FileKind

#: keys generate() always puts into the model kwargs: a parameter default for them never applies
GENERATE_PROVIDES = frozenset({"use_cache", "past_key_values", "attention_mask", "cache_position", "encoder_outputs"})
#: the parameter the 5.x mixin slices the ids by; None passes every id
SLICE_LENGTH = "next_sequence_length"
#: inputs the mixin makes something of, from what the caller gives: an override setting one back to its parameter
#: after super() keeps the caller's value
PREPARED_FROM_CALLER = frozenset({"attention_mask", "position_ids", "token_type_ids"})
#: why a cut kept for the target's cache before the first step is still tried: the old code ran it after that step
ERA_CUT_NOTE = (
    "the target itself breaks this cut (until 4.53, 4.55 for `if past_key_values:`, generate() made no such cache "
    "before the first step: the cut ran after it): `apply --verify --from <the release it was written for>` tries "
    "the generic plan as a repair, kept only where verified"
)


class _Judge:
    """Collects reasons for one override; the category follows from what was collected."""

    def __init__(self, override: Override, profile: MixinProfile, behaviours: dict[str, list[dict[str, str]]]) -> None:
        self.o = override
        self.a = override.analysis
        self.profile = profile
        self.mixin = behaviours
        self.reasons: list[Reason] = []
        self.extras: list[Extra] = []
        #: a reason that keeps the override as it is (``ReasonKind.keeps``): decides the action
        self.bespoke = False
        #: the differences that change what is prepared in the standard generate flow: not generic
        self.flow: list[str] = []
        #: keys the override computes its own way (each with its bespoke reason): statements kept after super()
        #: can re-create them (``kept_after``)
        self.computed_keys: dict[str, Reason] = {}
        self.fallback = override.fallback
        #: a deletion or super() reaches nothing known: whatever the body does, the override stays
        self.unreachable = self.fallback is not None and self.fallback.kind in (
            FallbackKind.NONE,
            FallbackKind.UNKNOWN,
        )
        #: what the fallback returns: every keyword argument forwarded (the mixin), or a closed dict of these keys
        fallback_analysis = profile.analysis
        self.closed_fallback: frozenset[str] | None = None
        if fallback_analysis is not None and not fallback_analysis.forwards_kwargs:
            self.closed_fallback = frozenset(fallback_analysis.output_values())

    def add(
        self, kind: ReasonKind, text: str, line: int | None = None, rule: str | None = None, subject: str | None = None
    ) -> None:
        self.reasons.append(Reason(kind, text, line, rule, subject))
        if kind.keeps:
            self.bespoke = True

    def extra(self, key: str, how: ExtraHow, source: str, line: int | None, text: str) -> None:
        self.extras.append(Extra(key, how, source))
        self.add(ReasonKind.EXTRA, text, line)

    def compute(self, key: str, text: str, line: int | None) -> None:
        """A key the override computes its own way: bespoke, unless statements kept after super() re-create it."""
        self.add(ReasonKind.BESPOKE, text, line)
        self.computed_keys[key] = self.reasons[-1]

    def differ(self, text: str, line: int | None = None, *, flow: bool = False) -> None:
        """A difference; ``flow``: one that changes what is prepared in the standard generate flow
        (``generate()`` on a tokenized prompt, the model's default cache, one new token per step)."""
        self.add(ReasonKind.DIFFERENCE, text, line)
        if flow:
            self.flow.append(text)

    # ---------------------------------------------------------------------------------------------

    def judge(self) -> Finding:
        if self.o.kind is FileKind.MODULAR and self.a.behaviours == {"raises"}:
            # Not an override: the modular class removes the one it would inherit.
            self.add(
                ReasonKind.NOTE,
                "removes the inherited override: the generated class uses the mixin; deleting this "
                "stub would make the converter copy the parent's override back in",
            )
            return Finding(self.o, Category.GENERIC, Action.KEEP, tuple(self.reasons))
        if not self.profile.implements and not self.profile.behaviours:
            self.add(ReasonKind.BESPOKE, "the mixin implements nothing to compare with")
        if self.profile.override_enables_generation and self.o.inherits_generation_mixin is False:
            self.add(
                ReasonKind.NOTE,
                "does not inherit GenerationMixin: in this release the override is what makes "
                "can_generate() true; a deletion adds GenerationMixin to the class's bases",
            )
        self.reach()
        self.behaviours()
        self.stale_positions()
        swap = self.delegation()
        for u in self.a.unrecognised:
            text = u.code.splitlines()[0] + (" …" if "\n" in u.code else "")
            if swap:
                # a reduction asks super() instead of the sub-model and keeps these statements as they are
                self.add(ReasonKind.NOTE, f"kept as is: {text}", u.line, subject=text)
            else:
                self.add(ReasonKind.UNRECOGNISED, text, u.line)
        if swap:
            self.extras.append(Extra("", ExtraHow.SWAP_DELEGATE, self.a.delegates_to or ""))
        self.outputs()
        self.omissions()
        if self.o.overwritten:
            self.add(ReasonKind.EVIDENCE, f"marked '# Overwritten -- {self.o.overwritten}'")
        return self.verdict()

    def reach(self) -> None:
        """What a deletion or super() reaches, as the index resolved it (see ``codemod.analyse.fallback``)."""
        fallback = self.fallback
        if fallback is None:
            return
        if fallback.kind is FallbackKind.NONE:
            self.add(
                ReasonKind.FALLBACK,
                f"kept: a deletion would leave {self.o.class_name} without the method and super() "
                f"would raise AttributeError: {fallback.detail}",
            )
        elif fallback.kind is FallbackKind.UNKNOWN:
            self.add(
                ReasonKind.FALLBACK, f"kept: what a deletion or super() would reach is not known: {fallback.detail}"
            )
        elif fallback.kind is FallbackKind.PARENT:
            self.add(
                ReasonKind.FALLBACK,
                f"judged against {fallback.detail}, which a deletion or super() reaches before the mixin",
            )
        elif fallback.adds_mixin_base:
            self.add(
                ReasonKind.FALLBACK,
                f"reaches {fallback.detail}; a deletion or super() adds GenerationMixin to the bases",
            )

    def delegation(self) -> bool:
        """Whether a delegation to another object's method becomes ``super()`` (a reduction that swaps it).

        Only a sub-model of the release being migrated is known to be prepared like the class itself (its
        own override goes the same way, and verification compares them); a stored bound method, or a
        sub-model of code outside transformers, may be prepared in any way."""
        a = self.a
        if a.delegation is Delegation.STORED_METHOD:
            self.add(
                ReasonKind.BESPOKE,
                f"takes its inputs from {a.delegates_to}(...), a method stored on the instance "
                "and bound to another object at run time: super() would not prepare them the same way",
            )
            return False
        if a.delegation is not Delegation.SUBMODEL:
            return False
        if self.fallback is not None and self.fallback.kind is not FallbackKind.MIXIN:
            return False  # the fallback's reason says why it stays
        if not self.o.in_library:
            self.add(
                ReasonKind.BESPOKE,
                f"takes its inputs from {a.delegates_to}.prepare_inputs_for_generation, a model of "
                "code outside the release: super() is not known to prepare them the same way",
            )
            return False
        if self.o.delegate_work is not None:
            # super() would skip what the sub-model's own override does, and a verifier without the model's
            # inputs for it (images, say) would not notice
            owner, work = self.o.delegate_work
            self.add(
                ReasonKind.BESPOKE,
                f"takes its inputs from {a.delegates_to} ({owner}), whose own override does "
                f"model-specific work ({work}): super() would skip it",
            )
            return False
        return True

    def behaviours(self) -> None:
        from codemod import rules
        from codemod.rules.base import Kind

        for r in self.a.recognised:
            rule = rules.BY_NAME.get(r.behaviour)
            if rule is None or rule.kind is Kind.PLUMBING:
                continue
            text = f"{r.behaviour}" + (f" ({r.detail})" if r.detail else "")
            coverage = rule.coverage(dict(r.facets), self.mixin)
            if rule.kind is Kind.BESPOKE and not coverage.covered:
                self.add(
                    ReasonKind.BESPOKE,
                    f"{text}: {rule.summary}",
                    r.line,
                    r.code,
                    subject=rule.summary if r.detail else None,
                )
                continue
            if not coverage.covered:
                if r.behaviour == "slice-with-ids":
                    name = r.facet("names") or r.detail
                    self.extra(name, ExtraHow.SLICED, name, r.line, f"{name} is cut to the new tokens like the ids")
                    continue
                self.add(
                    ReasonKind.BESPOKE,
                    f"{text}: {coverage.missing}",
                    r.line,
                    r.code,
                    subject=coverage.missing if r.detail else None,
                )
                self._era_cut_note(rule, r)
                continue
            self.add(ReasonKind.BEHAVIOUR, text, r.line, r.code)
            for difference in coverage.differences:
                self.differ(difference, r.line)
            for difference in coverage.flow_differences:
                self.differ(difference, r.line, flow=True)

    def _era_cut_note(self, rule: Rule, r: Recognised) -> None:
        """A tree judged against a release: where only the target's cache before the first step makes the cut
        bespoke, the old code is broken by the target itself, and a migration across releases tries it."""
        target = self.profile.target
        if rule.code != LAST_TOKEN.code or target is None or target.origin is TargetOrigin.CHECKOUT:
            return
        before = {k: v for k, v in self.mixin.items() if k != CACHE_BEFORE_FIRST_STEP}
        if CACHE_BEFORE_FIRST_STEP in self.mixin and rule.coverage(dict(r.facets), before).covered:
            self.add(ReasonKind.NOTE, ERA_CUT_NOTE, r.line)

    def stale_positions(self) -> None:
        """A class whose own ``_update_model_kwargs_for_generation`` never moves ``cache_position`` on (it does not call
        super(), which does) keeps generate()'s first positions on every step: a mixin that slices the ids by them
        would feed the first step's tokens again (4.45's Musicgen-Melody composite: step 1 got its pad column, not
        its new token). An override that slices the ids its own way, by the cache, is then the model's own."""
        if not self.o.stale_cache_position or "slice-by-cache-position" not in self.mixin:
            return
        own = [
            r
            for r in self.a.recognised
            if r.behaviour in (*IDS_SLICING, "slice-to-last-token") and r.behaviour != "slice-by-cache-position"
        ]
        if own and self._withholds_positions(own):
            self.extra(
                "cache_position",
                ExtraHow.WITHHELD,
                "",
                own[0].line,
                f"cache_position withheld from super(): its class's {UPDATE_METHOD} never moves it on, and the "
                f"mixin, given none, counts the new tokens from the legacy cache as this override does "
                f"({own[0].behaviour})",
            )
            return
        if own:
            self.add(
                ReasonKind.BESPOKE,
                f"its class's {UPDATE_METHOD} never moves cache_position on (it calls no super()): "
                f"the mixin would slice the ids by the first step's positions on every step; "
                f"it slices them its own way ({own[0].behaviour})",
                own[0].line,
                own[0].code,
            )

    def _withholds_positions(self, own: Sequence[Recognised]) -> bool:
        """Whether a reduction can leave the stale ``cache_position`` out of ``super()`` and have the mixin slice the ids
        as ``own`` does: the mixin derives the positions from a legacy tuple cache when it is given none
        (``cache-position-from-cache``, the generic implementation a stub era gets), the override counts the past
        length from that cache and nothing else, never reads ``cache_position`` itself (it reaches ``**kwargs``,
        where the reduction pops it)."""
        a = self.a
        return (
            "cache-position-from-cache" in self.mixin
            and all(r.behaviour == "slice-by-past-length" and r.detail.startswith(LEGACY_TUPLE_DETAIL) for r in own)
            and any(p.kind is ParamKind.VAR_KEYWORDS for p in a.params)
            and all(p.name != "cache_position" for p in a.params)
            and not any("cache_position" in t.reads for t in a.top_level)
        )

    def outputs(self) -> None:
        """Each key of the dict the override returns, judged against what the fallback prepares; then the keys
        it removes or does not pass on."""
        a = self.a
        if a.delegation is Delegation.SUBMODEL:
            self.differ(
                f"takes its inputs from {a.delegates_to}.prepare_inputs_for_generation; the mixin "
                "would prepare them with this model's own config and forward"
            )
        values = a.output_values()
        line_of = {o.key: o.line for o in a.outputs}
        for key, value in values.items():
            self._output(key, value, line_of.get(key), values)
        self._removed_outputs(values)

    def _output(self, key: str, value: Value, line: int | None, values: dict[str, Value]) -> None:
        origin, name = value.origin, value.name
        if key in IDS_KEYS and (origin is ValueOrigin.IDS or (origin is ValueOrigin.NONE and key == "input_ids")):
            return
        if self._cache_output(key, value, line):
            return
        given, _, default = name.partition("=")
        if origin is ValueOrigin.PARAM_DEFAULT and given == key:
            self.extra(
                key,
                ExtraHow.DEFAULT,
                default,
                line,
                f"{key} is {default} when not given; the mixin passes nothing then",
            )
        elif origin is ValueOrigin.PARAM:
            self._param_output(key, name, line)
        elif origin is ValueOrigin.BEHAVIOUR:
            if name.startswith("slice-with-ids:") and name.split(":", 1)[1] != key:
                self.add(ReasonKind.BESPOKE, f"{key} comes from the sliced {name.split(':', 1)[1]}", line)
            # else judged with its behaviour
        elif origin is ValueOrigin.FIRST_STEP:
            if not (
                key in self.profile.first_step_only_inputs or (key == "inputs_embeds" and name == "inputs_embeds")
            ):
                self.extra(key, ExtraHow.FIRST_STEP, name, line, f"{key} only on the first step")
        elif origin is ValueOrigin.LATER_STEP:
            self.extra(key, ExtraHow.LATER_STEP, name, line, f"{key} only after the first step")
        elif origin is ValueOrigin.NONE:
            self._none_output(key, name, line, values)
        elif origin is ValueOrigin.CONST:
            self.extra(key, ExtraHow.CONSTANT, name, line, f"{key} is always {name}")
        elif origin is ValueOrigin.IDS:
            self.add(ReasonKind.BESPOKE, f"passes the ids as {key!r}", line)
        elif name.isidentifier():
            self.compute(key, f"passes {key} as computed by statements not recognised", line)
        else:
            self.compute(key, f"computes {key} as `{name}`", line)

    def _cache_output(self, key: str, value: Value, line: int | None) -> bool:
        """Whether ``key`` is a cache, judged here: one under another name than ``past_key_values`` is the model's
        own, as is ``past_key_values`` taken from a parameter generate() does not fill."""
        origin, name = value.origin, value.name
        if key != "past_key_values" and (key in CACHE_NAMES or name in CACHE_NAMES) and origin is not ValueOrigin.NONE:
            self.compute(key, f"passes its cache as {key!r}, a key the mixin does not use", line)
            return True
        if key == "past_key_values" and origin is ValueOrigin.PARAM and name in CACHE_NAMES and name != key:
            # generate() fills past_key_values, not this name: setting the key from it after super()
            # would replace the cache the mixin just prepared
            self.add(
                ReasonKind.BESPOKE,
                f"passes past_key_values from its parameter {name!r}, which generate() does not "
                "fill; set after super(), it would replace the cache the mixin prepared",
                line,
            )
            return True
        # the cache, passed (when there is one) as the mixin passes it
        return key == name == "past_key_values" and origin in (ValueOrigin.PARAM, ValueOrigin.LATER_STEP)

    def _param_output(self, key: str, name: str, line: int | None) -> None:
        """A key given a parameter's value: passed through (the fallback forwards every keyword argument) unless
        the parameter has a default of its own, the fallback's closed dict drops it, or the fallback rebuilds it."""
        if name != key:
            self.extra(key, ExtraHow.ADJUSTED, name, line, f"{key} is given the value of {name}")
            return
        declared = next((p.default for p in self.a.params if p.name == key), None)
        if declared is not None and declared != "None" and key not in GENERATE_PROVIDES:
            self.extra(
                key,
                ExtraHow.DEFAULT,
                declared,
                line,
                f"{key} is {declared} when not given; the mixin passes nothing then",
            )
        elif self.closed_fallback is not None and key not in self.closed_fallback:
            self.extra(
                key,
                ExtraHow.PASSTHROUGH,
                key,
                line,
                f"{key} is passed on; the dict {self._fallback_name} returns drops it",
            )
        elif self.a.delegation is Delegation.SUPER and key in PREPARED_FROM_CALLER:
            # set after super() (a first pass's repair: Chameleon's mask), it undoes what the mixin made of
            # the caller's value (a 4D mask for a static cache, positions cut to the new tokens)
            self.extra(
                key,
                ExtraHow.PASSTHROUGH,
                key,
                line,
                f"{key} as the caller gives it, not as {self._fallback_name} prepares it",
            )

    def _none_output(self, key: str, name: str, line: int | None, values: dict[str, Value]) -> None:
        """A key set to None: on every step, or (``name`` the later step) after the first one."""
        if key == "inputs_embeds" or (key == "input_ids" and "decoder_input_ids" in values):
            return
        if name == ValueOrigin.LATER_STEP:  # None on the later steps only
            if key not in self.profile.first_step_only_inputs:  # else the mixin drops it after the first step too
                self.extra(key, ExtraHow.LATER_STEP_NONE, "", line, f"{key} is set to None after the first step")
            return
        self.extra(key, ExtraHow.NONE, name, line, f"{key} is set to None" + (f" on the {name}" if name else ""))
        if key == SLICE_LENGTH:
            self.differ(
                f"passes every id on every step although it passes a cache: with {key} None the mixin "
                "does not slice them",
                line,
                flow=True,
            )

    def _removed_outputs(self, values: dict[str, Value]) -> None:
        """The keys the override removes, and the inputs it does not pass on to the call it delegates to."""
        a = self.a
        for key in dict.fromkeys(a.dropped):
            if key not in values:
                self.extra(key, ExtraHow.DROP, "", None, f"removes {key}")
        for name in a.withheld:
            if name not in values and name not in self.profile.never_forwarded:
                self.extra(
                    name,
                    ExtraHow.DROP,
                    "",
                    None,
                    f"does not pass {name} on to {a.delegates_to or 'the call it delegates to'}",
                )

    def omissions(self) -> None:
        """What the mixin would add or change that this override does not do."""
        a = self.a
        if a.delegation is Delegation.SUPER:
            return
        values = a.output_values()
        behaviours = a.behaviours
        forward = set(self.o.forward_params or ())
        #: what the dict holds is the override's own preparation (a sub-model's is the sub-model's: what it
        #: leaves out is not known here, and the swap to super() brings the mixin's back)
        own = a.delegation is not Delegation.SUBMODEL
        # position_ids: the mixin builds them when forward accepts them
        if (
            "position-ids-from-mask" in self.mixin
            and "position_ids" not in values
            and "position-ids-from-mask" not in behaviours
        ):
            if self.o.forward_params is None:
                self.differ("may receive position_ids from the mixin (forward not found in this file)")
            elif "position_ids" in forward:
                self.differ(
                    "forward accepts position_ids: the mixin builds them from the attention mask, "
                    "this override never passes them",
                    flow=own,
                )
        # the ids: sliced by the mixin
        slicing = {*IDS_SLICING, "slice-to-last-token", "state-space-cache", "decoder-delegate"}
        if not behaviours & slicing and any(k in values and values[k].origin is ValueOrigin.IDS for k in IDS_KEYS):
            uses_cache = "past_key_values" in values or "past_key_values" in {p.name for p in a.params}
            if uses_cache:
                self.differ(
                    "passes the ids unsliced although it passes a cache; the mixin slices them to the uncached tokens",
                    flow=own,
                )
            elif self.profile.era is Era.NEXT_SEQUENCE_LENGTH:
                self.differ(
                    "passes every id on every step; the 5.x mixin keeps the last next_sequence_length ids", flow=own
                )
        # cache_position: forwarded by the 4.46 mixin for models with Cache classes
        if (
            "synthesise-cache-position" in self.mixin
            and "cache_position" not in values
            and self.o.attribute("_supports_cache_class") == "True"
            and (self.o.forward_params is None or "cache_position" in forward)
        ):
            self.differ("the mixin also passes cache_position (the model supports Cache classes)")
        if not a.forwards_kwargs and "forward-kwargs" in self.mixin:
            self.differ("returns a closed dict: other model kwargs are dropped, the mixin forwards them")
        if (
            self.fallback is not None
            and self.fallback.kind is FallbackKind.PARENT
            and self.closed_fallback is not None
        ):
            for key in sorted(self.closed_fallback - set(values) - IDS_KEYS - {"inputs_embeds"}):
                self.differ(f"{self._fallback_name} also passes {key}; this override does not", flow=own)
        if "inputs-embeds-first-step" in self.mixin and "inputs-embeds-first-step" not in behaviours:
            if "inputs_embeds" in forward and not self._is_encoder_decoder():
                self.differ("ignores inputs_embeds; the mixin feeds them on the first step")
        if (
            "static-cache-mask" in self.mixin
            and "static-cache-mask" not in behaviours
            and self.o.attribute("_supports_static_cache") == "True"
        ):
            self.differ("with a static cache the mixin builds a 4D attention mask; this override passes the 2D one")

    @property
    def _fallback_name(self) -> str:
        fallback = self.fallback
        parent = fallback.class_name if fallback is not None and fallback.kind is FallbackKind.PARENT else None
        return parent if parent is not None else "the mixin"  # a PARENT fallback always names its class

    def _is_encoder_decoder(self) -> bool:
        return "decoder_input_ids" in self.a.output_values() or (
            len(self.a.params) > 1 and self.a.params[1].name == "decoder_input_ids"
        )

    def kept_prefix(self) -> tuple[int, ...]:
        """Top-level statements a reduction can keep as they are, in front of ``super()`` (``reduction.kept_prefix``);
        none while a bespoke reason stands."""
        a = self.a
        if a.delegates_to is not None or any(r.kind is ReasonKind.BESPOKE for r in self.reasons):
            return ()
        later = {n for e in self.extras for n in reduction.names_in(e.source)} if self.extras else set()
        indices, cuts = reduction.kept_prefix(a, later)
        self._cut(cuts)
        return indices

    def kept_after(self) -> KeptAfter | None:
        """Top-level statements a reduction can keep as they are *after* ``super()`` (``reduction.kept_after``):
        only against the mixin, and only where every reason that keeps the override is a statement kept as it is
        or a key taken from one."""
        a = self.a
        if a.delegates_to is not None or (self.fallback is not None and self.fallback.kind is not FallbackKind.MIXIN):
            return None  # a parent's closed dict is no mixin to hand the generic part to
        rule_lines = [r.line for r in self.reasons if r.kind is ReasonKind.BESPOKE and r.rule and r.line]
        if any(
            r.kind is ReasonKind.BESPOKE and not (r.rule and r.line) and r not in self.computed_keys.values()
            for r in self.reasons
        ):
            return None
        after = reduction.kept_after(a, rule_lines, tuple(self.computed_keys))
        if after is not None:
            self._cut(after.cuts, after.released)
        return after

    def decoder_mask_after(self) -> KeptAfter | None:
        """An encoder-decoder wrapper passing its decoder's own mask keeps asking the decoder after ``super()``
        (``reduction.decoder_mask_after``)."""
        a = self.a
        if (self.fallback is not None and self.fallback.kind is not FallbackKind.MIXIN) or a.delegation is not None:
            return None  # a parent's closed dict is no mixin to hand the rest to
        found = reduction.decoder_mask_after(a)
        if found is None:
            return None
        delegation, after = found
        self.reasons.append(
            Reason(
                ReasonKind.NOTE,
                "kept as is after super(): asks self.decoder for the mask its own "
                "method makes (all ones, or none) and the ids as it slices them, and passes them as "
                "decoder_attention_mask and decoder_input_ids",
                delegation.line,
                subject="asks self.decoder for its mask and ids",
            )
        )
        return after

    def _cut(self, cuts: Sequence[Recognised], released: str = "") -> None:
        if cuts:
            self.extras.append(Extra(released, ExtraHow.CUT, ",".join(str(r.line) for r in cuts)))

    def verdict(self) -> Finding:
        a = self.a
        kept = self.kept_prefix() if self.bespoke else ()
        after = self.kept_after() if self.bespoke and not kept else None
        if after is None and not kept:
            after = self.decoder_mask_after()
        swap = any(e.how is ExtraHow.SWAP_DELEGATE for e in self.extras)
        #: statements a reduction keeps as they are (in front of super(), after it, or around a swapped
        #: delegation) that handle the inputs their own way: model-specific, whatever the action
        own_handling = bool(kept or swap) and self._keeps_own_handling() or after is not None
        if after is not None:
            indices, keys = after.indices, after.keys
            for position, reason in enumerate(self.reasons):
                if reason.kind.keeps:
                    self.reasons[position] = Reason(
                        ReasonKind.NOTE, f"kept as is after super(): {reason.text}", reason.line, subject=reason.text
                    )
            self.bespoke = False
            if indices:  # none: only keys it sets from its parameters (Reformer's cache under its own name)
                self.extras.append(Extra("", ExtraHow.KEEP_AFTER, ",".join(map(str, indices))))
            self.extras += [Extra(key, ExtraHow.COMPUTED) for key in keys]
        if kept:
            for reason in self.reasons:
                if reason.kind is ReasonKind.UNRECOGNISED:
                    self.reasons[self.reasons.index(reason)] = Reason(
                        ReasonKind.NOTE,
                        f"kept as is in front of super(): {reason.text}",
                        reason.line,
                        subject=reason.text,
                    )
            self.bespoke = False
            self.extras.append(Extra("", ExtraHow.KEEP_STATEMENTS, ",".join(map(str, kept))))
        action: Action
        if self.bespoke:
            action = Action.KEEP
        elif self.extras:
            action = Action.KEEP if a.delegation is Delegation.SUPER else Action.REDUCE
            if a.delegation is Delegation.SUPER:
                self.add(ReasonKind.NOTE, "already reduced: it calls super().prepare_inputs_for_generation")
        else:
            action = Action.DELETE
        if action is Action.DELETE and self.o.overwritten:
            action = Action.KEEP
            self.add(ReasonKind.NOTE, "kept: maintainers marked it overwritten; verify before removing it")
        if self.unreachable:
            action = Action.KEEP  # the fallback reason says why
        where = "around super()" if swap else "after super()" if after is not None else "in front of super()"
        category = self.category(own_handling, where=where)
        return Finding(self.o, category, action, tuple(self.reasons), tuple(self.extras), tuple(self.flow))

    def category(self, own_handling: bool, where: str) -> Category:
        """What the override does relative to its fallback, apart from what the tool does with it."""
        if self.bespoke:
            return Category.BESPOKE  # its bespoke or unrecognised reasons say why
        if own_handling:
            self.add(ReasonKind.NOTE, f"bespoke: its own input handling, kept as it is {where}, is model-specific")
            return Category.BESPOKE
        if self.flow:
            self.add(
                ReasonKind.NOTE,
                f"bespoke, not generic: in the standard generate flow it prepares other inputs than "
                f"{self._fallback_name} ({self.flow[0]})",
            )
            return Category.BESPOKE
        if any(e.how is not ExtraHow.KEEP_STATEMENTS for e in self.extras):
            return Category.KWARGS_FORWARDING
        return Category.GENERIC  # a guard kept in front of super() (an assert) prepares nothing

    def _keeps_own_handling(self) -> bool:
        params = frozenset(p.name for p in self.a.params)
        return any(reduction.handles_inputs(u.code, params) for u in self.a.unrecognised)


def judged_against(override: Override, profile: MixinProfile) -> MixinProfile:
    """The profile an override is classified against: its parent's own override when that is what a
    deletion or super() reaches (``fallback`` parent-override), else the mixin's."""
    fallback = override.fallback
    if fallback is None or fallback.kind is not FallbackKind.PARENT or fallback.analysis is None:
        return profile
    parent = profile_from_analysis(fallback.analysis, fallback.location or fallback.class_name or "parent")
    return dataclasses.replace(
        parent,
        override_enables_generation=profile.override_enables_generation,
        target=profile.target,
        pretrained_model_generative=profile.pretrained_model_generative,
    )


def classify_override(override: Override, profile: MixinProfile) -> Finding:
    against = judged_against(override, profile)
    return _Judge(override, against, against.behaviour_facets()).judge()


def classify(index: Index, profile: MixinProfile, only: Iterable[str] = (), skip: Iterable[str] = ()) -> list[Finding]:
    behaviours = profile.behaviour_facets()
    chosen = select(index.overrides, only, skip)
    out = []
    for o in chosen:
        against = judged_against(o, profile)
        out.append(_Judge(o, against, behaviours if against is profile else against.behaviour_facets()).judge())
    return out


def select(overrides: Iterable[Override], only: Iterable[str] = (), skip: Iterable[str] = ()) -> list[Override]:
    """Filter by model name (``llama``), also matching a class name or file path for remote code."""
    only_set, skip_set = {s.lower() for s in only}, {s.lower() for s in skip}

    def names(o: Override) -> set[str]:
        return {n.lower() for n in (o.model, o.class_name) if n}

    return [o for o in overrides if (not only_set or names(o) & only_set) and not (names(o) & skip_set)]
