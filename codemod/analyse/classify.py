"""Classify each override relative to what it falls back to: a category, and separately an action.

The **category** says what the override does relative to its fallback (the mixin, or a parent's override):

- **generic**: in the standard generate flow it prepares what the fallback prepares, and it has no
  handling of its own elsewhere (near-misses of old boilerplate outside that flow are *differences*);
- **kwargs-forwarding**: the fallback's preparation plus extra keys (an input passed only on the first
  step, a constant, a default, a key dropped, set to None or sliced with the ids);
- **bespoke**: model-specific: an input computed its own way (kept as it is, or not understood), a
  cache key of its own, or a difference that changes what is prepared in the standard flow (the ids
  unsliced with a cache, fewer inputs than the fallback builds: CTRL, OpenAI GPT, Git).

The **action** says what the tool does: ``delete`` (generic; a bespoke one whose only own handling is
such a difference, which verification then judges), ``reduce`` to ``super()`` (the extra keys after it;
a bespoke override's own statements kept in front of it or around a swapped delegation; a generic one's
guard kept in front), ``keep`` (anything else).

Every finding carries its reasons: the behaviours recognised, the extra keys, each statement not
understood (with its line), and the *differences*: ways the override is only nearly what the mixin
does (it omits an input the mixin would add, keeps only the last token, ...); a note says why a
category is bespoke when no bespoke reason does.

Pure: a function of the index and the mixin profile.
"""

from __future__ import annotations

import ast
import dataclasses
import textwrap
from collections.abc import Iterable, Sequence

from codemod.analyse.analysis import BodyAnalysis, Delegation, OutputKey, Recognised, TopLevel
from codemod.analyse.fallback import UPDATE_METHOD, FallbackKind
from codemod.analyse.index import Index, Override
from codemod.analyse.mixin import Era, MixinProfile, profile_from_analysis
from codemod.contracts import CACHE_NAMES, ExtraHow, ParamKind, ReasonKind, ValueOrigin, Vocabulary
from codemod.rules.base import IDS_SLICING
from codemod.rules.slice_by_past_length import LEGACY_TUPLE_DETAIL
from codemod.sources import FileKind

#: behaviours that only cut tensors to the new tokens (the ids, and the inputs sliced with them)
SLICING = frozenset({*IDS_SLICING, "slice-to-last-token", "slice-with-ids"})
# Keys every generic implementation handles itself; an override passing them through adds nothing.
IDS_KEYS = frozenset({"input_ids", "decoder_input_ids"})
#: keys generate() always puts into the model kwargs: a parameter default for them never applies
GENERATE_PROVIDES = frozenset({"use_cache", "past_key_values", "attention_mask", "cache_position", "encoder_outputs"})
#: names a cache goes by; passing one under another key than ``past_key_values`` is model-specific
#: the parameter the 5.x mixin slices the ids by; None passes every id
SLICE_LENGTH = "next_sequence_length"
#: the inputs a fallback prepares itself (slices, builds or passes as the cache): an override that computes
#: one of them its own way is model-specific; the other keys are extras on top of the fallback's preparation
CORE_INPUTS = (
    IDS_KEYS
    | CACHE_NAMES
    | frozenset(
        {
            "inputs_embeds",
            "attention_mask",
            "decoder_attention_mask",
            "position_ids",
            "decoder_position_ids",
            "cache_position",
            "next_sequence_length",
        }
    )
)


class Category(Vocabulary):
    GENERIC = "generic"
    KWARGS_FORWARDING = "kwargs-forwarding"
    BESPOKE = "bespoke"


class Action(Vocabulary):
    DELETE = "delete"
    REDUCE = "reduce"
    KEEP = "keep"


@dataclasses.dataclass(frozen=True)
class Reason:
    """One piece of evidence. ``kind``: behaviour, extra, difference, bespoke, unrecognised, evidence, note,
    fallback (what a deletion or super() reaches, when that is not simply the mixin)."""

    kind: ReasonKind
    text: str
    line: int | None = None
    rule: str | None = None  # the recogniser's code, for behaviours
    #: what a ``# Overwritten --`` mark quotes of it: what the fallback lacks (a bespoke behaviour with
    #: a detail), or the statement a reduction keeps as it is (a "kept as is" note)
    subject: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", ReasonKind(self.kind))

    def __str__(self) -> str:
        where = f" (line {self.line})" if self.line else ""
        return f"{self.kind}: {self.text}{where}"


@dataclasses.dataclass(frozen=True)
class Extra:
    """A model-specific key that a reduced override must keep producing.

    ``how``: ``first-step`` (the input ``source`` on the first step only), ``later-step``,
    ``constant`` (``source`` is the code), ``drop`` (the key is removed), ``none`` (set to None),
    ``keep-statements`` (the top-level statements, by index in ``source``, that a reduction keeps
    in front of ``super()``), ``swap-delegate`` (the override takes its inputs from a sub-model, ``source``: a reduction asks
    ``super()`` instead and keeps everything else), ``default`` (a default the override gives when the caller passes nothing; ``source`` is its
    code), ``later-step-none`` (set to None after the first step), ``set-none`` (a key the model's forward
    requires, given as None; only from verification's repairs), ``passthrough`` (the parameter ``source``
    as the caller gave it, where the mixin would rebuild it; only from verification's repairs),
    ``sliced`` (cut to the new tokens like the ids), ``adjusted`` (given to the mixin changed).
    """

    key: str
    how: ExtraHow
    source: str = ""

    def __post_init__(self) -> None:
        object.__setattr__(self, "how", ExtraHow(self.how))  # a name outside the vocabulary fails here


@dataclasses.dataclass(frozen=True)
class Finding:
    override: Override
    category: Category
    action: Action
    reasons: tuple[Reason, ...]
    extras: tuple[Extra, ...] = ()
    #: the differences that change what is prepared in the standard generate flow (also listed among the
    #: reasons): a deletion or reduction of such an override is proven only by verification
    flow: tuple[str, ...] = ()

    @property
    def differences(self) -> tuple[Reason, ...]:
        return tuple(r for r in self.reasons if r.kind is ReasonKind.DIFFERENCE)


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
                continue
            self.add(ReasonKind.BEHAVIOUR, text, r.line, r.code)
            for difference in coverage.differences:
                self.differ(difference, r.line)
            for difference in coverage.flow_differences:
                self.differ(difference, r.line, flow=True)

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
        a = self.a
        if a.delegation is Delegation.SUBMODEL:
            self.differ(
                f"takes its inputs from {a.delegates_to}.prepare_inputs_for_generation; the mixin "
                "would prepare them with this model's own config and forward"
            )
        values = a.output_values()
        line_of = {o.key: o.line for o in a.outputs}
        for key, value in values.items():
            origin, name = value.origin, value.name
            line = line_of.get(key)
            if key in IDS_KEYS:
                if origin is ValueOrigin.IDS or (origin is ValueOrigin.NONE and key == "input_ids"):
                    continue
            if (
                key != "past_key_values"
                and (key in CACHE_NAMES or name in CACHE_NAMES)
                and origin is not ValueOrigin.NONE
            ):
                self.compute(key, f"passes its cache as {key!r}, a key the mixin does not use", line)
                continue
            if key == "past_key_values" and origin is ValueOrigin.PARAM and name in CACHE_NAMES and name != key:
                # generate() fills past_key_values, not this name: setting the key from it after super()
                # would replace the cache the mixin just prepared
                self.add(
                    ReasonKind.BESPOKE,
                    f"passes past_key_values from its parameter {name!r}, which generate() does not "
                    "fill; set after super(), it would replace the cache the mixin prepared",
                    line,
                )
                continue
            if key == name == "past_key_values" and origin in (ValueOrigin.PARAM, ValueOrigin.LATER_STEP):
                continue  # the cache, passed (when there is one) as the mixin passes it
            if origin is ValueOrigin.PARAM_DEFAULT:
                given, _, default = name.partition("=")
                if given == key:
                    self.extra(
                        key,
                        ExtraHow.DEFAULT,
                        default,
                        line,
                        f"{key} is {default} when not given; the mixin passes nothing then",
                    )
                    continue
            if origin is ValueOrigin.PARAM:
                if name == key:
                    declared = next((p.default for p in a.params if p.name == key), None)
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
                    elif a.delegation is Delegation.SUPER and key in PREPARED_FROM_CALLER:
                        # set after super() (a first pass's repair: Chameleon's mask), it undoes what the mixin made of
                        # the caller's value (a 4D mask for a static cache, positions cut to the new tokens)
                        self.extra(
                            key,
                            ExtraHow.PASSTHROUGH,
                            key,
                            line,
                            f"{key} as the caller gives it, not as {self._fallback_name} prepares it",
                        )
                    continue  # passed through: the fallback forwards every keyword argument
                self.extra(key, ExtraHow.ADJUSTED, name, line, f"{key} is given the value of {name}")
                continue
            if origin is ValueOrigin.BEHAVIOUR:
                if name.startswith("slice-with-ids:") and name.split(":", 1)[1] != key:
                    self.add(ReasonKind.BESPOKE, f"{key} comes from the sliced {name.split(':', 1)[1]}", line)
                continue  # judged with its behaviour
            if origin is ValueOrigin.FIRST_STEP:
                if key in self.profile.first_step_only_inputs or (key == "inputs_embeds" and name == "inputs_embeds"):
                    continue
                self.extra(key, ExtraHow.FIRST_STEP, name, line, f"{key} only on the first step")
                continue
            if origin is ValueOrigin.LATER_STEP:
                self.extra(key, ExtraHow.LATER_STEP, name, line, f"{key} only after the first step")
                continue
            if origin is ValueOrigin.NONE:
                if key == "inputs_embeds" or (key == "input_ids" and "decoder_input_ids" in values):
                    continue
                if name == ValueOrigin.LATER_STEP:  # None on the later steps only
                    if key in self.profile.first_step_only_inputs:
                        continue  # the mixin drops it after the first step too
                    self.extra(key, ExtraHow.LATER_STEP_NONE, "", line, f"{key} is set to None after the first step")
                    continue
                self.extra(
                    key, ExtraHow.NONE, name, line, f"{key} is set to None" + (f" on the {name}" if name else "")
                )
                if key == SLICE_LENGTH:
                    self.differ(
                        f"passes every id on every step although it passes a cache: with {key} None the mixin "
                        "does not slice them",
                        line,
                        flow=True,
                    )
                continue
            if origin is ValueOrigin.CONST:
                self.extra(key, ExtraHow.CONSTANT, name, line, f"{key} is always {name}")
                continue
            if origin is ValueOrigin.IDS:
                self.add(ReasonKind.BESPOKE, f"passes the ids as {key!r}", line)
                continue
            if name.isidentifier():
                self.compute(key, f"passes {key} as computed by statements not recognised", line)
            else:
                self.compute(key, f"computes {key} as `{name}`", line)
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
        """Top-level statements a reduction can keep as they are, in front of ``super()``.

        Possible when the only model-specific code is a run of statements at the start of the body
        (e.g. Phi-3 resetting the cache when its rope scaling switches) and everything after it is
        generic: the statements stay, the rest becomes ``super().prepare_inputs_for_generation(...)``
        called with whatever they left in the parameters. Empty when the shape does not allow it."""
        a = self.a
        if a.delegates_to is not None or any(r.kind is ReasonKind.BESPOKE for r in self.reasons):
            return ()
        statements = list(a.top_level)
        kept = [t for t in statements if not t.recognised]
        if not kept:
            return ()
        prefix = statements[: len(kept)]
        if prefix != kept or any(t.builds_output or t.returns for t in kept):
            return ()
        # the extras written later must only use names the kept statements or the parameters provide
        params = {p.name for p in a.params}
        dropped_writes = {n for t in statements[len(kept) :] for n in t.writes} - params
        for out in a.outputs:
            if out.expr and _names_in(out.expr) & dropped_writes:
                return ()
        indices = tuple(t.index for t in kept)
        later = {n for e in self.extras for n in _names_in(e.source)} if self.extras else set()
        self._cut(self._cuts(indices, later))
        return indices

    def kept_after(self) -> tuple[tuple[int, ...], tuple[str, ...]] | None:
        """Top-level statements a reduction can keep as they are *after* ``super()``, and the keys it then
        sets from what they computed; None when the shape does not allow it.

        The model-specific statements (not recognised, or recognised as what the fallback does not do) stay,
        with the statements they read from (the ids' slicing, a local), in their order, after the fallback
        has prepared its inputs from the caller's ones: they compute what the override computes its own way
        (Qwen2-VL's rope position ids, Mllama's image inputs while image tokens remain, Bloom's static-cache
        mask) from the same inputs, and the keys taken from them replace the fallback's. Everything else (the
        dict, the generic behaviours) is the fallback's. Refused when a statement that goes would compute
        from what a model-specific one computed (the fallback prepares it from the caller's inputs), when a
        kept statement returns or makes the dict, or a key taken from them has no expression to set it by."""
        a = self.a
        if a.delegates_to is not None or (self.fallback is not None and self.fallback.kind is not FallbackKind.MIXIN):
            return None  # a parent's closed dict is no mixin to hand the generic part to
        statements = a.top_level
        # it ends by returning its dict, by name or as a literal the outputs record
        if (
            not statements
            or not statements[-1].returns
            or not (statements[-1].reads == (RESULT,) or statements[-1].builds_output)
            or any(t.returns for t in statements[:-1])
        ):
            return None
        # every reason that keeps the override must be a statement kept as it is or a key taken from one
        rule_lines = [r.line for r in self.reasons if r.kind is ReasonKind.BESPOKE and r.rule and r.line]
        if any(
            r.kind is ReasonKind.BESPOKE and not (r.rule and r.line) and r not in self.computed_keys.values()
            for r in self.reasons
        ):
            return None

        def within(t: TopLevel, line: int) -> bool:
            return t.line <= line <= max(t.end_line, t.line)

        by_index = {t.index: t for t in statements}
        seeds = {t.index for t in statements[:-1] if not t.recognised or any(within(t, line) for line in rule_lines)}
        if any(by_index[i].returns or RESULT in by_index[i].writes for i in seeds):
            return None
        # the statements the kept ones and the keys taken from them read, from the writers before them (what each
        # reads may come from any earlier writer), until nothing more is needed
        kept: set[int] = set(seeds)
        # ids sliced with no cache guard: once the method goes, a fallback that slices by its cache would pass them all
        unguarded = [r.line for r in a.recognised if r.facet("guard") == "none" and r.behaviour in IDS_SLICING]
        while True:
            keys = self._taken_keys(statements, seeds, kept)
            if keys is None:
                return None
            # (a name read only for its device or dtype needs no slicing of it: a statement that only slices is no writer)
            needed = [
                (
                    by_index[i].line,
                    set(by_index[i].exposed) - set(by_index[i].placement_reads),
                    set(by_index[i].placement_reads),
                )
                for i in kept
            ]
            needed += [(o.line, _names_in(o.expr), set()) for key in keys for o in _final_writes(a, key)]
            more = {
                w.index
                for line, names, placed in needed
                for w in statements
                if w.line < line
                and w.index not in kept
                and set(w.writes) & ((names | (set() if self._only_slices(w) else placed)) - {RESULT})
            }
            if not more:
                break
            if any(by_index[i].builds_output or by_index[i].returns for i in more):
                return None
            kept |= more
        if any(within(t, line) for line in unguarded for t in statements if t.index not in kept):
            return None
        # the ids slicing inside the kept statements is the fallback's: it goes, and the fallback's sliced ids stand
        ids_keys = [
            key for key in keys if key in IDS_KEYS and all(o.expr.strip() == key for o in _final_writes(a, key))
        ]
        cuts = self._cuts(
            tuple(kept),
            {n for key in keys if key not in ids_keys for o in _final_writes(a, key) for n in _names_in(o.expr)},
        )
        released = ""
        if cuts and any(name in IDS_KEYS for r in cuts for name in (r.nested.writes if r.nested else ())):
            if len(ids_keys) != 1 or self._writes_outside(kept, cuts, ids_keys):
                cuts = ()
            else:
                released = ids_keys[0]
                keys = {key: None for key in keys if key != released}
        for key in keys:
            writes = _final_writes(a, key)
            if not writes or any(not o.expr for o in writes):
                return None
            # a kept statement reading the dict would see the fallback's value where the override's came first
            first = min(o.line for o in writes)
            if any(RESULT in by_index[i].exposed and by_index[i].line > first for i in kept):
                return None
        # worth a change only where enough of the method goes: the statements that go (each with the comments and
        # blank lines above it), less the super() call (about three lines), a line per key and the return
        ends = [max(t.end_line, t.line) for t in statements]
        removed = sum(
            end - (ends[p - 1] if p else t.line - 1)
            for p, (t, end) in enumerate(zip(statements, ends, strict=False))
            if t.index not in kept
        )
        removed += sum(r.end_line - r.line + 1 for r in cuts)
        if removed - (3 + len(keys) + 1) < AFTER_SUPER_SAVES_AT_LEAST:
            return None
        self._cut(cuts, released)
        return tuple(sorted(kept)), tuple(keys)

    def _cuts(self, kept: Sequence[int], read_later: set[str]) -> tuple[Recognised, ...]:
        """The ids slicing (``IDS_SLICING``) inside the ``kept`` top-level statements that nothing kept after it
        reads (``read_later``: what the code after them reads): the fallback slices the ids itself (Jamba's
        ``if`` slices them in one branch and makes its cache in the other; the cache stays, the slicing goes)."""
        a = self.a
        by_index = {t.index: t for t in a.top_level}
        cuts: dict[tuple[int | str, ...], Recognised] = {}
        for r in a.recognised:
            n = r.nested
            top = n.path[0] if n is not None else None
            if (
                n is None
                or not isinstance(top, int)
                or r.behaviour not in IDS_SLICING
                or top not in kept
                or n.read_after
                or n.path in cuts
            ):
                continue
            later = [by_index[i] for i in kept if i > top and i in by_index]
            if (
                any(set(n.writes) & (set(t.exposed) - set(t.placement_reads)) for t in later)
                or set(n.writes) & read_later
            ):
                continue
            cuts[n.path] = r
        return tuple(cuts.values())

    def decoder_mask_after(self) -> tuple[tuple[int, ...], tuple[str, ...]] | None:
        """An encoder-decoder wrapper that passes its decoder's own mask (``decoder-delegate`` with the mask) keeps the
        statements asking the decoder after ``super()``, and sets ``decoder_attention_mask`` and ``decoder_input_ids``
        from them: a decoder whose method makes a mask of ones when asked without one (BERT's, TrOCR's, MBart's) still
        gets it, one that makes none (GPT-2's) none, where the mixin would pass the caller's (none by default; an
        Electra decoder builds its default without counting the cache); and a decoder that slices its ids its own way
        still slices them (BigBird's reads its past length off a cache that stops growing: the oracle's tokens differed
        when the mixin sliced them). The rest (the cache, the other keys) is the mixin's. None for any other shape."""
        from codemod.rules.decoder_delegate import RULE as DECODER_DELEGATE

        a = self.a
        if (self.fallback is not None and self.fallback.kind is not FallbackKind.MIXIN) or a.delegation is not None:
            return None  # a parent's closed dict is no mixin to hand the rest to
        found = next((r for r in a.recognised if r.code == DECODER_DELEGATE.code and r.facet("mask") == "true"), None)
        if found is None:
            return None
        statements = [t for t in a.top_level if found.line <= t.line <= max(found.end_line, found.line)]
        if not statements or any(t.returns or t.builds_output for t in statements):
            return None
        written = {n for t in statements for n in t.writes}
        keys = ("decoder_attention_mask", "decoder_input_ids")
        for key in keys:
            writes = _final_writes(a, key)
            if (
                len(writes) != 1
                or writes[0].conditions
                or not writes[0].expr
                or not _names_in(writes[0].expr) <= written
            ):
                return None  # each key from what the kept statements wrote, unconditionally
        self.reasons.append(
            Reason(
                ReasonKind.NOTE,
                "kept as is after super(): asks self.decoder for the mask its own "
                "method makes (all ones, or none) and the ids as it slices them, and passes them as "
                "decoder_attention_mask and decoder_input_ids",
                found.line,
                subject="asks self.decoder for its mask and ids",
            )
        )
        return tuple(t.index for t in statements), keys

    def _writes_outside(self, kept: Iterable[int], cuts: Sequence[Recognised], names: Iterable[str]) -> bool:
        """Whether the kept statements assign one of ``names`` other than in the ``cuts`` (or may: code that does
        not parse)."""
        a = self.a
        cut_lines = {(r.line, r.end_line) for r in cuts}
        indices = set(kept)
        spans = [(t.line, max(t.end_line, t.line)) for t in a.top_level if t.index in indices]
        wanted = set(names)

        def inside(line: int) -> bool:
            return any(start <= line <= end for start, end in spans)

        for r in a.recognised:
            if r.nested and inside(r.line) and (r.line, r.end_line) not in cut_lines and set(r.nested.writes) & wanted:
                return True
        for u in a.unrecognised:
            if inside(u.line):
                try:
                    tree = ast.parse(textwrap.dedent(u.source or u.code))
                except SyntaxError:
                    return True
                if {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)} & wanted:
                    return True
        return False

    def _cut(self, cuts: Sequence[Recognised], released: str = "") -> None:
        if cuts:
            self.extras.append(Extra(released, ExtraHow.CUT, ",".join(str(r.line) for r in cuts)))

    def _only_slices(self, statement: TopLevel) -> bool:
        """Whether ``statement`` is nothing but slicing the rules recognise (the ids by the cache, the inputs that go
        with them): what it writes lives where it did."""
        inside = [r for r in self.a.recognised if statement.line <= r.line <= max(statement.end_line, statement.line)]
        return statement.recognised and bool(inside) and all(r.behaviour in SLICING for r in inside)

    def _taken_keys(self, statements: Sequence[TopLevel], seeds: set[int], kept: set[int]) -> dict[str, None] | None:
        """The keys a reduction keeping ``kept`` after super() sets from what they computed (in order); None when
        a statement that goes would compute from what a model-specific one computed, or a key is set both inside
        and outside the kept statements."""
        a = self.a
        tainted: set[str] = set()
        for t in statements:
            if t.index in seeds or (t.index in kept and set(t.exposed) & tainted):
                tainted |= set(t.writes) - {RESULT}
            elif set(t.exposed) & tainted and not t.builds_output:
                return (
                    None  # a generic statement computing from them: the fallback computes it from the caller's inputs
                )

        def within(t: TopLevel, line: int) -> bool:
            return t.line <= line <= max(t.end_line, t.line)

        keys = dict.fromkeys(self.computed_keys)
        for key in a.output_values():
            writes = _final_writes(a, key)
            inside = [o for o in writes if any(within(t, o.line) for t in statements if t.index in kept)]
            if inside:
                if len(inside) != len(writes):
                    return None
                keys.pop(key, None)  # the kept statement sets it itself
                continue
            for o in writes:
                if o.expr and _names_in(o.expr) & tainted:
                    keys[key] = None
                elif not o.expr and any(within(t, o.line) and set(t.exposed) & tainted for t in statements):
                    return None
        return keys

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
            indices, keys = after
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
        return any(_handles_inputs(u.code, params) for u in self.a.unrecognised)


#: inputs the mixin makes something of, from what the caller gives: an override setting one back to its parameter
#: after super() keeps the caller's value
PREPARED_FROM_CALLER = frozenset({"attention_mask", "position_ids", "token_type_ids"})

#: the name of the dict an override builds and returns (the fallback's, after a reduction)
RESULT = "model_inputs"
#: a reduction keeping statements after super() is made where it saves at least this many lines (estimated: the
#: statements that go, with the comments above them, less the super() call and the keys set after it): where the
#: model's own handling is nearly all of the method, the method stays as its maintainers wrote it
AFTER_SUPER_SAVES_AT_LEAST = 5


def _final_writes(analysis: BodyAnalysis, key: str) -> list[OutputKey]:
    """The assignments of ``key`` that decide its final value: from the last unconditional one on."""
    writes = [o for o in analysis.outputs if o.key == key and o.value.origin is not ValueOrigin.DROPPED]
    last_plain = max((i for i, o in enumerate(writes) if not o.conditions), default=0)
    return writes[last_plain:]


def _names_in(expression: str) -> set[str]:
    try:
        return {n.id for n in ast.walk(ast.parse(expression, mode="eval")) if isinstance(n, ast.Name)}
    except SyntaxError:
        return set()


def _handles_inputs(code: str, params: frozenset[str]) -> bool:
    """Whether a statement a reduction keeps as it is computes an input its own way (model-specific).

    It does when it rebinds a parameter (an input changed before it is prepared: the masked LMs' dummy
    token, Musicgen's delay pattern, Phi-3's cache reset), writes or removes a key the fallback prepares
    itself (``CORE_INPUTS``: PaliGemma's 1-indexed position_ids), or puts a computed value under another
    key. It does not when it is a guard (``assert``, ``if …: raise``), sets a local that a condition reads
    (llava's ``legacy_processing``), or gives another key a parameter's value or a constant."""
    try:
        tree = ast.parse(textwrap.dedent(code))
    except SyntaxError:
        return True
    if all(_is_guard(statement) for statement in tree.body):
        return False
    for node in ast.walk(tree):
        for target, value in _writes(node):
            if isinstance(target, ast.Name):
                if target.id in params:
                    return True
            elif isinstance(target, ast.Subscript):
                key = target.slice
                if not (isinstance(key, ast.Constant) and isinstance(key.value, str)) or key.value in CORE_INPUTS:
                    return True
                if not _plain(value, params):
                    return True
            else:
                return True  # an attribute, a starred target: not an input the fallback knows
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "pop":
            popped = node.args[0] if node.args else None
            if not (isinstance(popped, ast.Constant) and isinstance(popped.value, str)) or popped.value in CORE_INPUTS:
                return True
        if isinstance(node, ast.Delete):
            return True
    return False


def _is_guard(statement: ast.stmt) -> bool:
    """``assert …`` or ``if …: raise …``: it refuses a call and prepares nothing."""
    if isinstance(statement, ast.Assert):
        return True
    return (
        isinstance(statement, ast.If)
        and not statement.orelse
        and all(isinstance(s, ast.Raise) for s in statement.body)
    )


def _writes(node: ast.AST) -> list[tuple[ast.expr, ast.expr | None]]:
    """The targets a node assigns, each with the value it gets (None: computed from the old value, or unpacked)."""
    pairs: list[tuple[ast.expr, ast.expr | None]] = []
    if isinstance(node, ast.Assign):
        for target in node.targets:
            if isinstance(target, (ast.Tuple, ast.List)):
                pairs += [(t, None) for t in target.elts]
            else:
                pairs.append((target, node.value))
    elif isinstance(node, ast.AugAssign):
        pairs.append((node.target, None))
    elif isinstance(node, ast.AnnAssign):
        pairs.append((node.target, node.value))
    elif isinstance(node, ast.NamedExpr):
        pairs.append((node.target, node.value))
    elif isinstance(node, (ast.For, ast.comprehension)):
        targets = node.target.elts if isinstance(node.target, (ast.Tuple, ast.List)) else [node.target]
        pairs += [(t, None) for t in targets]
    elif (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr in ("update", "setdefault")
    ):
        argument = node.args[0] if node.args else None
        if node.func.attr == "setdefault" and len(node.args) == 2:
            pairs.append((ast.Subscript(value=node.func.value, slice=node.args[0], ctx=ast.Store()), node.args[1]))
        elif isinstance(argument, ast.Dict) and not node.keywords:
            pairs += [
                (ast.Subscript(value=node.func.value, slice=k, ctx=ast.Store()), v)
                for k, v in zip(argument.keys, argument.values, strict=False)
                if k is not None
            ]
        else:
            pairs.append((ast.Starred(value=node.func.value, ctx=ast.Store()), None))  # keys not known
    return pairs


def _plain(value: ast.expr | None, params: frozenset[str]) -> bool:
    """A value an extra key may get without the override computing it: a parameter as given, or a constant."""
    return isinstance(value, ast.Constant) or (isinstance(value, ast.Name) and value.id in params)


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
