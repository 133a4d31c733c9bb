"""Propose a hook for an idiom: the class attribute and the mixin code that reads it."""

from __future__ import annotations

import dataclasses
import json
import re
import textwrap
from collections.abc import Mapping, Sequence

from codemod.analyse.mixin import Era, MixinProfile
from codemod.contracts import (
    ParamKind,
)
from codemod.transform.hooks.model import Hook, Idiom, Part
from codemod.transform.hooks.vocabulary import (
    NEEDED_LOCAL,
    NEEDS_METHOD,
    Atom,
    HookKind,
    ValueKind,
    condition_code,
    simple_words,
    spelling_of,
)

#: the attributes of the conditions models use: (kind, the condition's words) -> (name, why models set it)
_NAMES = {
    (HookKind.DROPPED_WHEN, "after the first step and with a cache"): (
        "_generation_inputs_dropped_after_prefill",
        "the model reads them only while it fills its cache",
    ),
    (HookKind.DROPPED_WHEN, "after the first step"): (
        "_generation_inputs_dropped_after_first_step",
        "the model reads them only on the first forward",
    ),
    (HookKind.DROPPED_WHEN, "after the first step unless the model needs them"): (
        "_generation_inputs_dropped_after_first_step_unless_needed",
        "the model reads them only on the first "
        f"forward, unless its `{NEEDS_METHOD}` says this step needs them too (4.45's llava family on a legacy prompt: "
        "one image token the model expands itself, on every step)",
    ),
    (HookKind.UNSLICED_WHEN, "on the first step or without a cache"): (
        "_generation_unsliced_prefill_inputs",
        "a mask that reads them by position needs them from the start of the "
        "sequence, also for a prefill cut in chunks",
    ),
    (HookKind.UNSLICED_WHEN, "on the first step"): (
        "_generation_unsliced_first_step_inputs",
        "a mask that reads them by position needs them from the start",
    ),
}


#: hooks for a key that always ends with one kind of value, whatever the step: value kind -> (hook kind,
#: attribute, its annotation: a mapping to config attribute names or to values, its doc, the comment
#: above its code, the code)
_VALUE_HOOKS: dict[ValueKind, tuple[HookKind, str, str, str, str, str]] = {
    ValueKind.CONFIG: (
        HookKind.FROM_CONFIG,
        "_generation_inputs_from_config",
        "mapping",
        "Inputs set from the model's config, whatever the caller passes: input name -> config attribute",
        "Inputs set from the config",
        "for name, attribute in self.{name}.items():\n    model_inputs[name] = getattr(self.config, attribute)\n",
    ),
    ValueKind.CALLER_OR_DEFAULT: (
        HookKind.DEFAULT,
        "_generation_input_defaults",
        "values",
        "Inputs with a model-specific default when the caller gives none: input name -> default",
        "Model-specific defaults",
        "for name, default in self.{name}.items():\n    model_inputs.setdefault(name, default)\n",
    ),
    ValueKind.LITERAL: (
        HookKind.CONSTANT,
        "_generation_constant_inputs",
        "values",
        "Inputs the model always gets with the same value, whatever the caller passes: input name -> value",
        "Inputs with a fixed value",
        "for name, value in self.{name}.items():\n    model_inputs[name] = value\n",
    ),
}


def hook_for(idiom: Idiom, profile: MixinProfile) -> tuple[HookKind, Hook | None, str]:
    """The hook a cluster of ``idiom`` proposes: (kind, the hook or None, its name or why there is none).

    Each hook's code runs right before the mixin's ``return model_inputs``, where the members' own
    statements ran (after ``super()``); the unsliced inputs are read before the mixin pops and cuts them."""
    kinds = set(idiom.table)
    analysis = profile.analysis
    kwargs = next((p.name for p in analysis.params if p.kind is ParamKind.VAR_KEYWORDS), None) if analysis else None
    typed = profile.era is Era.NEXT_SEQUENCE_LENGTH  # 5.x: Python ≥ 3.10, annotated like the rest of the class
    names_type, mapping_type, values_type = (
        ("tuple[str, ...]", "dict[str, str]", "dict[str, object]") if typed else ("", "", "")
    )
    if kinds == {ValueKind.NONE}:
        name = "_generation_dropped_inputs"
        return _proposed(
            new_hook(
                HookKind.DROPPED,
                name,
                names_type,
                "()",
                "Inputs the model's forward computes itself, never passed to it "
                "(left out: the forward's default is None, the same as passing None)",
                epilogue=f"# Inputs the model computes itself (`{name}`)\n"
                f"for name in self.{name}:\n    model_inputs.pop(name, None)\n",
            )
        )
    if len(kinds) == 1 and idiom.atoms == () and idiom.table[0] in _VALUE_HOOKS:
        kind, name, typing, doc, comment, loop = _VALUE_HOOKS[idiom.table[0]]
        annotation = mapping_type if typing == "mapping" else values_type
        epilogue = f"# {comment} (`{name}`)\n" + loop.format(name=name)
        return _proposed(new_hook(kind, name, annotation, "{}", doc, epilogue=epilogue))
    if kwargs is None:
        return HookKind.OTHER, None, "the mixin takes no **kwargs to read the step's flags from"
    params = {p.name for p in analysis.params} if analysis else set()
    spelling = spelling_of(profile.era, kwargs, params)
    needs = {Atom.FIRST.value: "is_first_iteration" if profile.era is Era.NEXT_SEQUENCE_LENGTH else "cache_position"}
    for atom in idiom.atoms:
        if atom in needs and needs[atom] not in params:
            return HookKind.OTHER, None, f"the mixin has no {needs[atom]} parameter to tell the first step by"
    if idiom.atoms == (Atom.GIVEN.value,) and tuple(idiom.table) == (ValueKind.PREPARED, ValueKind.NONE):
        return _none_when_given_hook(kwargs, names_type)
    if kinds == {ValueKind.PREPARED, ValueKind.NONE}:
        ids = analysis.ids_param if analysis is not None else None
        return _dropped_when_hook(idiom, spelling, kwargs, ids, names_type, typed=typed)
    if kinds == {ValueKind.CALLER, ValueKind.NONE}:
        return _unsliced_when_hook(idiom, spelling, kwargs, names_type)
    return HookKind.OTHER, None, f"no hook template for an input {idiom.describe()}"


def _none_when_given_hook(kwargs: str, names_type: str) -> tuple[HookKind, Hook | None, str]:
    # GPT-2's family: a caller's position_ids are ignored (the forward counts positions itself), those the mask
    # gives are used. What the caller gave is read first: the mixin fills the same key in when none is given.
    name = "_generation_inputs_ignored_when_given"
    return _proposed(
        new_hook(
            HookKind.NONE_WHEN_GIVEN,
            name,
            names_type,
            "()",
            "Inputs the model ignores where a caller passes them: None "
            "then (its forward makes its own), as the mixin prepares them otherwise",
            prologue=f"# Read before the mixin fills them in (`{name}`)\n"
            f"inputs_given = [name for name in self.{name} if {kwargs}.get(name) is not None]\n",
            epilogue=f"# None where the caller gave them (`{name}`)\n"
            "for name in inputs_given:\n    model_inputs[name] = None\n",
        )
    )


def _dropped_when_hook(
    idiom: Idiom,
    spelling: Mapping[str, tuple[str, str]],
    kwargs: str,
    ids: str | None,
    names_type: str,
    *,
    typed: bool,
) -> tuple[HookKind, Hook | None, str]:
    """Inputs left out while a condition holds (``ids``: the mixin's ids parameter, to ask a model's own
    condition with)."""
    rows = [i for i, v in enumerate(idiom.table) if v is ValueKind.NONE]
    code = condition_code(idiom.atoms, rows, spelling)
    if code is None:
        return HookKind.OTHER, None, "its condition is code no rule understands"
    words = simple_words(idiom.atoms, rows)
    kind = HookKind.DROPPED_WHEN
    name, why = _NAMES.get((kind, words), ("_generation_inputs_dropped_" + slug(words), ""))
    prologue, method = "", ""
    if Atom.OWN.value in idiom.atoms:
        # the model's own condition, asked before the mixin prepares anything: the statements that computed it
        # read the arguments as the override was given them
        if ids is None:
            return HookKind.OTHER, None, "the mixin takes no ids to ask the model's own condition with"
        prologue = (
            f"# Asked before anything is prepared (`{NEEDS_METHOD}`)\n"
            f"{NEEDED_LOCAL} = self.{NEEDS_METHOD}({ids}, **{kwargs})\n"
        )
        method = _needs_method_code(name, ids, kwargs, typed=typed)
    comment = "".join(f"# {line}\n" for line in textwrap.wrap(f"Inputs left out {words} (`{name}`)", 100))
    hook = new_hook(
        kind,
        name,
        names_type,
        "()",
        f"Inputs left out {words}" + (f": {why}" if why else ""),
        prologue=prologue,
        epilogue=f"{comment}if {code}:\n    for name in self.{name}:\n        model_inputs.pop(name, None)\n",
    )
    return _proposed(dataclasses.replace(hook, declaration=hook.declaration + method))


def _needs_method_code(name: str, ids: str, kwargs: str, *, typed: bool) -> str:
    """The mixin's ``_generation_needs_first_step_inputs``, which a model with its own condition overrides."""
    docstring = textwrap.wrap(
        f"Whether this step needs the inputs in `{name}` too: asked with the arguments "
        "of `prepare_inputs_for_generation` as given, before anything is prepared. A "
        "model whose prompt can ask for them on later steps overrides it.",
        100,
    )
    quotes = '"""'
    return (
        f"\ndef {NEEDS_METHOD}(self, {ids}, **{kwargs}){' -> bool' if typed else ''}:\n"
        + "".join(f"    {'' if i else quotes}{line}\n" for i, line in enumerate(docstring))
        + f"    {quotes}\n    return False\n"
    )


def _unsliced_when_hook(
    idiom: Idiom, spelling: Mapping[str, tuple[str, str]], kwargs: str, names_type: str
) -> tuple[HookKind, Hook | None, str]:
    """Inputs passed whole (not cut to the new tokens) while a condition holds, None otherwise."""
    rows = [i for i, v in enumerate(idiom.table) if v is ValueKind.CALLER]
    code = condition_code(idiom.atoms, rows, spelling)
    if code is None:
        return HookKind.OTHER, None, "its condition is code no rule understands"
    words = simple_words(idiom.atoms, rows)
    kind = HookKind.UNSLICED_WHEN
    name, why = _NAMES.get((kind, words), ("_generation_unsliced_inputs_" + slug(words), ""))
    return _proposed(
        new_hook(
            kind,
            name,
            names_type,
            "()",
            f"Inputs passed whole (as the caller gives them, not cut to the "
            f"new tokens) {words}, and as None otherwise" + (f": {why}" if why else ""),
            prologue=f"# Read before they are cut to the new tokens (`{name}`)\n"
            f"unsliced_inputs = {{name: {kwargs}.get(name) for name in self.{name}}}\n",
            epilogue=f"# Whole {words}, None otherwise (`{name}`)\n"
            "for name, value in unsliced_inputs.items():\n"
            f"    model_inputs[name] = value if {code} else None\n",
        )
    )


def slug(words: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", words.lower()).strip("_")


def _proposed(hook: Hook) -> tuple[HookKind, Hook | None, str]:
    """What ``hook_for`` answers for a hook it proposes: (its kind, it, its attribute)."""
    return hook.kind, hook, hook.attribute


def new_hook(
    kind: HookKind, name: str, annotation: str, empty: str, summary: str, *, prologue: str = "", epilogue: str = ""
) -> Hook:
    typed = f": {annotation}" if annotation else ""
    comment = textwrap.wrap(f"{summary}.", 110)
    declaration = "".join(f"# {line}\n" for line in comment) + f"{name}{typed} = {empty}\n"
    return Hook(kind, name, declaration, prologue, epilogue, summary)


def assignment(cluster_kind: HookKind, attribute: str, parts: Sequence[Part]) -> str:
    """The class attribute a member sets."""
    if cluster_kind in (HookKind.FROM_CONFIG, HookKind.DEFAULT, HookKind.CONSTANT):
        if cluster_kind is HookKind.FROM_CONFIG:
            items = ", ".join(f"{json.dumps(p.key)}: {json.dumps(p.argument)}" for p in parts)
        else:
            items = ", ".join(f"{json.dumps(p.key)}: {p.argument}" for p in parts)
        return f"{attribute} = {{{items}}}"
    names = ", ".join(json.dumps(p.key) for p in parts)
    return f"{attribute} = ({names}{',' if len(parts) == 1 else ''})"
