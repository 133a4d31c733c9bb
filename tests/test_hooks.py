"""Tests for ``codemod.transform.hooks`` (the miner), ``codemod.transform.hook_changes`` and ``codemod hooks`` / ``apply --hooks``.

Three levels:

- parts and clustering on small hand-written override snippets, classified against the 5.x-shaped
  mixin of ``fixtures/hooks_checkout`` (no checkout is scanned for the parts; the clustering tests put
  the snippets' findings into the fixture's scan result);
- the whole tree: ``fixtures/hooks_checkout`` (see fixtures/README.md) through ``codemod hooks`` and
  ``codemod apply --hooks`` in process, as a CI log sees them;
- the acceptance numbers on transformers 5.23.0 (network: the release is fetched once and cached).
"""

from __future__ import annotations

import ast
import dataclasses
import difflib
import json
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from codemod.analyse.analysis import Unrecognised
from codemod.analyse.classify import Action, Category, Extra, Finding, classify_override
from codemod.analyse.fallback import Fallback, FallbackKind
from codemod.analyse.index import Override
from codemod.analyse.mixin import MixinProfile, profile_from_source
from codemod.analyse.recognise import analyse_source
from codemod.analyse.scan import ScanResult, scan
from codemod.checkout import resolve
from codemod.cli import app
from codemod.contracts import ExtraHow
from codemod.sources import FileKind
from codemod.transform.hooks import (
    MIN_MODELS,
    Atom,
    Change,
    HookKind,
    Idiom,
    ValueKind,
    condition_code,
    failing_clusters,
    hook_for,
    member_change,
    mine,
    model_prefix,
    normalised_code,
    part_of,
)
from codemod.transform.hooks.normalise import context_of
from codemod.transform.hooks.statements import _whole_body
from codemod.transform.plan import Plan, Shard
from tests.conftest import FIXTURES, copy_fixture

HOOKS_CHECKOUT = FIXTURES / "hooks_checkout"
MIXIN = "src/transformers/generation/utils.py"
PKG = "src/transformers/models"
runner = CliRunner()

FIRST, USE_CACHE = Atom.FIRST.value, Atom.USE_CACHE.value
NONE, PREPARED, CALLER, CONFIG = ValueKind.NONE, ValueKind.PREPARED, ValueKind.CALLER, ValueKind.CONFIG


@pytest.fixture(scope="module")
def profile() -> MixinProfile:
    """The fixture's mixin: the 5.x shape (ids cut by next_sequence_length, multimodal inputs on the first step)."""
    return profile_from_source((HOOKS_CHECKOUT / MIXIN).read_text(encoding="utf-8"), MIXIN)


#: what a deletion or super() reaches from the snippets' classes, as a scan resolves it for a model of the fixture
REACHES_MIXIN = Fallback(FallbackKind.MIXIN, "GenerationMixin of the fixture", "GenerationMixin", MIXIN)


def override(
    source: str,
    *,
    model: str = "toy",
    class_name: str = "ToyForCausalLM",
    forward_params: tuple[str, ...] | None = None,
) -> Override:
    source = textwrap.dedent(source).lstrip("\n")
    path = f"{PKG}/{model}/modeling_{model}.py"
    return Override(
        id=f"{path}::{class_name}",
        file=path,
        kind=FileKind.MODELING,
        model=model,
        class_name=class_name,
        line=1,
        start_line=1,
        end_line=source.count("\n"),
        bases=("ToyPreTrainedModel", "GenerationMixin"),
        analysis=analyse_source(source),
        forward_params=forward_params,
        attributes=(),
        module_functions=(),
        copied_from=None,
        copy_group=None,
        generated_from=None,
        overwritten=None,
        deprecated=False,
        in_library=True,
        fallback=REACHES_MIXIN,
    )


def finding(source: str, profile: MixinProfile, forward_params: tuple[str, ...] | None = None) -> Finding:
    return classify_override(override(source, forward_params=forward_params), profile)


def method(*body: str, params: str = "input_ids, **kwargs", call: str = "input_ids, **kwargs") -> str:
    """An override that calls super() first, then ``body`` (lines of the method, 4-space indented)."""
    lines = "".join(f"    {line}\n" for line in body)
    return (
        f"def prepare_inputs_for_generation(self, {params}):\n"
        f"    model_inputs = super().prepare_inputs_for_generation({call})\n{lines}    return model_inputs\n"
    )


OWN = Atom.OWN.value


def own_condition_method(
    *computing: str,
    test: str = "legacy or is_first_iteration",
    passes: tuple[str, ...] = ('model_inputs["image_grid"] = image_grid',),
    params: str = "input_ids, image_grid=None, is_first_iteration=False, **kwargs",
) -> str:
    """The llava family's shape: statements computing a condition of its own, super(), and an ``if`` on it."""
    lines = "".join(f"    {line}\n" for line in computing)
    body = "".join(f"        {line}\n" for line in passes)
    return (
        f"def prepare_inputs_for_generation(self, {params}):\n{lines}"
        "    model_inputs = super().prepare_inputs_for_generation(input_ids, is_first_iteration=is_first_iteration, "
        "**kwargs)\n"
        f"    if {test}:\n{body}    return model_inputs\n"
    )


LEGACY = "legacy = input_ids is not None and (input_ids == self.config.image_token_index).sum(1).max() < 4"
OWN_CONDITION = own_condition_method("# fewer image tokens than features: the model expands the token itself", LEGACY)
#: Video-LLaVA's: under a guard, two names of its own, an input among what it reads
OWN_CONDITION_GUARDED = own_condition_method(
    "if input_ids is not None:",
    "    short = (input_ids == self.config.image_token_index).sum(1).max() < 4",
    "    legacy = short and image_grid is not None",
)

STEP = "input_ids, use_cache=True, is_first_iteration=False, **kwargs"
STEP_CALL = "input_ids, use_cache=use_cache, is_first_iteration=is_first_iteration, **kwargs"

# --------------------------------------------------------------------------------------------- parts

#: (id, override, key, the idiom's atoms, its table, the argument it abstracts)
PARTS = [
    ("set-to-none", method('model_inputs["position_ids"] = None'), "position_ids", (), (NONE,), ""),
    ("popped", method('model_inputs.pop("position_ids", None)'), "position_ids", (), (NONE,), ""),
    (
        "popped-from-kwargs-before-super",
        "def prepare_inputs_for_generation(self, input_ids, **kwargs):\n"
        '    kwargs.pop("position_ids", None)\n'
        "    return super().prepare_inputs_for_generation(input_ids, **kwargs)\n",
        "position_ids",
        (),
        (NONE,),
        "",
    ),
    (
        "after-prefill",
        method(
            "if use_cache and not is_first_iteration:",
            '    model_inputs["attention_mask"] = None',
            params=STEP,
            call=STEP_CALL,
        ),
        "attention_mask",
        (FIRST, USE_CACHE),
        (PREPARED, NONE, PREPARED, PREPARED),
        "",
    ),
    # a parameter not handed to super(), passed on the first step or without a cache: the same function of the
    # step as the mask above (for a key the mixin does not prepare, "prepared" is the caller's value)
    (
        "prefill-only-parameter",
        method(
            'if is_first_iteration or not kwargs.get("use_cache", True):',
            '    model_inputs["image_grid"] = image_grid',
            params="input_ids, image_grid=None, is_first_iteration=False, **kwargs",
            call="input_ids, is_first_iteration=is_first_iteration, **kwargs",
        ),
        "image_grid",
        (FIRST, USE_CACHE),
        (PREPARED, NONE, PREPARED, PREPARED),
        "",
    ),
    (
        "first-step-only",
        method(
            "if not is_first_iteration:",
            '    model_inputs["attention_mask"] = None',
            params="input_ids, is_first_iteration=False, **kwargs",
            call="input_ids, is_first_iteration=is_first_iteration, **kwargs",
        ),
        "attention_mask",
        (FIRST,),
        (NONE, PREPARED),
        "",
    ),
    (
        "from-config-before-super",
        "def prepare_inputs_for_generation(self, input_ids, **kwargs):\n"
        '    kwargs["logits_to_keep"] = self.config.num_logits_to_keep\n'
        "    return super().prepare_inputs_for_generation(input_ids, **kwargs)\n",
        "logits_to_keep",
        (),
        (CONFIG,),
        "num_logits_to_keep",
    ),
    (
        "from-config-after-super",
        method('model_inputs["logits_to_keep"] = self.config.num_logits_to_keep'),
        "logits_to_keep",
        (),
        (CONFIG,),
        "num_logits_to_keep",
    ),
    (
        "unsliced-prefill",
        method(
            "if is_first_iteration or not use_cache:",
            '    model_inputs["token_type_ids"] = kwargs.get("token_type_ids")',
            "else:",
            '    model_inputs["token_type_ids"] = None',
            params=STEP,
            call=STEP_CALL,
        ),
        "token_type_ids",
        (FIRST, USE_CACHE),
        (CALLER, NONE, CALLER, CALLER),
        "",
    ),
    # a statement no rule understands that sets another key only, after the dict is made (PaliGemma's 4D mask and
    # its 1-indexed positions): the first-step input can still be read off the recognised writes
    (
        "beside-a-statement-setting-another-key",
        method(
            "if attention_mask.ndim == 2:",
            '    batch_size = model_inputs["input_ids"].shape[0]',
            '    model_inputs["attention_mask"] = build_mask(attention_mask, batch_size, is_first_iteration)',
            'if model_inputs.get("position_ids") is not None:',
            '    model_inputs["position_ids"] += 1',
            "if is_first_iteration:",
            '    model_inputs["image_grid"] = image_grid',
            params="input_ids, attention_mask=None, image_grid=None, is_first_iteration=False, **kwargs",
            call="input_ids, attention_mask=attention_mask, is_first_iteration=is_first_iteration, **kwargs",
        ),
        "image_grid",
        (FIRST,),
        (NONE, PREPARED),
        "",
    ),
    # a condition the override computes itself in front of super() (4.45's llava family: a legacy prompt needs the
    # image on every step): the input is passed on the first step or while the model's own condition holds
    ("own-condition", OWN_CONDITION, "image_grid", (FIRST, OWN), (NONE, PREPARED, PREPARED, PREPARED), ""),
    (
        "own-condition-in-a-guard",
        OWN_CONDITION_GUARDED,
        "image_grid",
        (FIRST, OWN),
        (NONE, PREPARED, PREPARED, PREPARED),
        "",
    ),
]


@pytest.mark.parametrize(
    ("source", "key", "atoms", "table", "argument"), [p[1:] for p in PARTS], ids=[p[0] for p in PARTS]
)
def test_a_part_is_what_it_does_to_its_key(
    profile: MixinProfile, source: str, key: str, atoms: tuple[str, ...], table: tuple[ValueKind, ...], argument: str
) -> None:
    part = part_of(finding(source, profile), key, profile)
    assert part.opaque == ""
    assert part.idiom == Idiom(atoms, table)
    assert part.argument == argument


#: the same idiom written differently: the names, the layout and the order of a condition do not count
SAME = [
    (
        "none-or-popped",
        method('model_inputs["position_ids"] = None'),
        method('model_inputs.pop("position_ids", None)'),
    ),
    (
        "laid-out",
        method('model_inputs["position_ids"] = None'),
        "def prepare_inputs_for_generation(\n    self,\n    input_ids,\n    **model_kwargs,\n):\n"
        "    model_inputs = super().prepare_inputs_for_generation(\n        input_ids,\n        **model_kwargs,\n    )\n"
        '    # the forward builds them\n\n    model_inputs["position_ids"] = None\n\n    return model_inputs\n',
    ),
    (
        "condition-reordered",
        method(
            "if use_cache and not is_first_iteration:",
            '    model_inputs["attention_mask"] = None',
            params=STEP,
            call=STEP_CALL,
        ),
        method(
            "if not is_first_iteration and use_cache:",
            '    model_inputs["attention_mask"] = None',
            params=STEP,
            call=STEP_CALL,
        ),
    ),
    (
        "use-cache-from-kwargs",
        method(
            "if is_first_iteration or not use_cache:",
            '    model_inputs["image_grid"] = image_grid',
            params="input_ids, image_grid=None, use_cache=True, is_first_iteration=False, **kwargs",
            call="input_ids, use_cache=use_cache, is_first_iteration=is_first_iteration, **kwargs",
        ),
        method(
            'if is_first_iteration or not kwargs.get("use_cache", True):',
            '    model_inputs["image_grid"] = image_grid',
            params="input_ids, image_grid=None, is_first_iteration=False, **kwargs",
            call="input_ids, is_first_iteration=is_first_iteration, **kwargs",
        ),
    ),
]


@pytest.mark.parametrize(("one", "other"), [s[1:] for s in SAME], ids=[s[0] for s in SAME])
def test_parts_written_differently_are_one_idiom(profile: MixinProfile, one: str, other: str) -> None:
    key = next(k for k in ("position_ids", "attention_mask", "image_grid") if k in one)
    first, second = part_of(finding(one, profile), key, profile), part_of(finding(other, profile), key, profile)
    assert first.idiom is not None and first.idiom == second.idiom


#: parts that are not tabulated (never a member; a near miss where the key is a cluster's), with why
OPAQUE = [
    # the write after the return holds only after the first step; the recognised writes do not say so
    (
        "early-return",
        method(
            "if is_first_iteration:",
            "    return model_inputs",
            'model_inputs["position_ids"] = None',
            params="input_ids, is_first_iteration=False, **kwargs",
            call="input_ids, is_first_iteration=is_first_iteration, **kwargs",
        ),
        "position_ids",
        "returns early",
    ),
    # ``update`` names no key: it could set position_ids again
    (
        "unrecognised-statement",
        method('model_inputs["position_ids"] = None', "model_inputs.update(self.extra_inputs)"),
        "position_ids",
        "a statement no rule understands",
    ),
    # what a statement no rule understands may do to the key, whatever else it does
    *[
        (
            f"unrecognised-{name}",
            method(
                statement,
                "if is_first_iteration:",
                '    model_inputs["pixel_values"] = pixel_values',
                params="input_ids, pixel_values=None, is_first_iteration=False, **kwargs",
                call="input_ids, is_first_iteration=is_first_iteration, **kwargs",
            ),
            "pixel_values",
            "a statement no rule understands",
        )
        for name, statement in [
            ("sets-it", 'model_inputs["pixel_values"], extra = self.encode(pixel_values)'),
            ("sets-a-key-it-cannot-name", "model_inputs[self.image_key] = None"),
            ("rebinds-its-source", "pixel_values = self.processor(pixel_values)"),
            ("rebinds-its-condition", "is_first_iteration = self.first"),
            ("rebinds-the-dict", "model_inputs = dict(model_inputs)"),
            ("changes-it-in-place", "pixel_values.mul_(self.scale)"),
            ("changes-the-dicts-value-in-place", 'model_inputs["pixel_values"].clamp_(0, 1)'),
            ("aliases-it", 'images = model_inputs["pixel_values"]'),
            ("hands-the-dict-on", "self.fill(model_inputs)"),
            ("changes-kwargs", "kwargs.clear()"),
        ]
    ],
    # before the dict is made, whatever it assigns may be an input the mixin prepares the key from
    (
        "unrecognised-before-super",
        "def prepare_inputs_for_generation(self, input_ids, attention_mask=None, **kwargs):\n"
        "    attention_mask = attention_mask[:, : self.config.max_length]\n"
        "    model_inputs = super().prepare_inputs_for_generation(input_ids, attention_mask=attention_mask, **kwargs)\n"
        '    model_inputs["position_ids"] = None\n'
        "    return model_inputs\n",
        "position_ids",
        "a statement no rule understands",
    ),
    # a condition of its own only where nothing else depends on what computes it, and nothing is changed by it
    *[
        (f"own-condition-{name}", source, "image_grid", "a statement no rule understands")
        for name, source in [
            (
                "read-elsewhere",
                own_condition_method(
                    LEGACY, passes=('model_inputs["image_grid"] = image_grid', 'model_inputs["legacy"] = legacy')
                ),
            ),
            (
                "passes-something-else",
                own_condition_method(LEGACY, passes=('model_inputs["image_grid"] = image_grid * 2',)),
            ),
            ("changes-an-input", own_condition_method("legacy = input_ids.masked_fill_(input_ids < 0, 0).sum() > 4")),
            ("rebinds-an-input", own_condition_method("input_ids, legacy = input_ids[:, 1:], True")),
            (
                "reads-what-the-mixin-names",
                own_condition_method(
                    "legacy = attention_mask is not None",
                    params="input_ids, attention_mask=None, image_grid=None, is_first_iteration=False, **kwargs",
                ),
            ),
            ("not-the-first-step", own_condition_method(LEGACY, test="legacy or kwargs.get('use_cache')")),
            (
                "set-elsewhere-too",
                own_condition_method(LEGACY, passes=('model_inputs["image_grid"] = image_grid',)).replace(
                    "    return model_inputs", '    model_inputs["image_grid"] = None\n    return model_inputs'
                ),
            ),
            (
                "with-an-else",
                own_condition_method(LEGACY, passes=('model_inputs["image_grid"] = image_grid',)).replace(
                    "    return model_inputs",
                    '    else:\n        model_inputs["image_grid"] = None\n    return model_inputs',
                ),
            ),
        ]
    ],
    # pop without a default raises where nothing prepared the key; a hook's pop(name, None) would not
    ("pop-without-default", method('model_inputs.pop("position_ids")'), "position_ids", "without a default"),
    ("del", method('del model_inputs["token_type_ids"]'), "token_type_ids", "without a default"),
    # the mixin cuts token_type_ids to the new tokens: a value handed to super() is not the value the model gets
    (
        "handled-key-before-super",
        "def prepare_inputs_for_generation(self, input_ids, **kwargs):\n"
        '    kwargs["token_type_ids"] = self.config.default_token_types\n'
        "    return super().prepare_inputs_for_generation(input_ids, **kwargs)\n",
        "token_type_ids",
        "before super()",
    ),
]


@pytest.mark.parametrize(("source", "key", "why"), [o[1:] for o in OPAQUE], ids=[o[0] for o in OPAQUE])
def test_a_part_that_cannot_be_read_is_opaque(profile: MixinProfile, source: str, key: str, why: str) -> None:
    part = part_of(finding(source, profile), key, profile)
    assert part.idiom is None
    assert why in part.opaque


@pytest.mark.parametrize(
    ("class_name", "prefix"),
    [
        ("LlavaNextForConditionalGeneration", "LlavaNext"),
        ("Qwen2_5OmniTalkerForConditionalGeneration", "Qwen2_5OmniTalker"),
        ("MambaForCausalLM", "Mamba"),
        ("CTRLLMHeadModel", "CTRL"),
        ("GPT2LMHeadModel", "GPT2"),
    ],
)
def test_model_prefix(class_name: str, prefix: str) -> None:
    assert model_prefix(class_name) == prefix


def test_normalised_code_abstracts_the_model_prefix_and_the_kwargs_name(profile: MixinProfile) -> None:
    code = "model_inputs = LlavaNextHelper(model_kwargs)\nvalue  =  ( LlavaNext )"
    o = override(
        "def prepare_inputs_for_generation(self, input_ids, **model_kwargs):\n    return {}\n",
        class_name="LlavaNextForConditionalGeneration",
    )
    other = override(
        "def prepare_inputs_for_generation(self, input_ids, **kwargs):\n    return {}\n", class_name="FuyuForCausalLM"
    )
    assert normalised_code(code, context_of(o, profile)) == "model_inputs = ModelHelper(kwargs)\nvalue = LlavaNext"
    assert (
        normalised_code("model_inputs = FuyuHelper(kwargs)", context_of(other, profile))
        == "model_inputs = ModelHelper(kwargs)"
    )
    assert normalised_code("if x:", context_of(o, profile)) is None  # does not parse


SPELLING = {
    FIRST: ("is_first_iteration", "not is_first_iteration"),
    USE_CACHE: ('kwargs.get("use_cache", True)', 'not kwargs.get("use_cache", True)'),
}


@pytest.mark.parametrize(
    ("atoms", "rows", "code"),
    [
        ((FIRST,), [0], "not is_first_iteration"),
        ((FIRST, USE_CACHE), [1], 'not is_first_iteration and kwargs.get("use_cache", True)'),
        ((FIRST, USE_CACHE), [0, 2, 3], 'is_first_iteration or not kwargs.get("use_cache", True)'),
        # no conjunction or disjunction of literals: the rows spelt out
        (
            (FIRST, USE_CACHE),
            [0, 3],
            '(not is_first_iteration and not kwargs.get("use_cache", True)) or '
            '(is_first_iteration and kwargs.get("use_cache", True))',
        ),
    ],
)
def test_condition_code_is_as_short_as_a_person_would_write_it(
    atoms: tuple[str, ...], rows: list[int], code: str
) -> None:
    assert condition_code(atoms, rows, SPELLING) == code


def test_a_condition_no_rule_understands_has_no_code() -> None:
    assert condition_code(("code: self.foo",), [1], SPELLING) is None


@pytest.mark.parametrize(
    ("idiom", "kind", "name"),
    [
        (Idiom((), (NONE,)), HookKind.DROPPED, "_generation_dropped_inputs"),
        (
            Idiom((FIRST, USE_CACHE), (PREPARED, NONE, PREPARED, PREPARED)),
            HookKind.DROPPED_WHEN,
            "_generation_inputs_dropped_after_prefill",
        ),
        (
            Idiom((FIRST, USE_CACHE), (CALLER, NONE, CALLER, CALLER)),
            HookKind.UNSLICED_WHEN,
            "_generation_unsliced_prefill_inputs",
        ),
        (Idiom((), (CONFIG,)), HookKind.FROM_CONFIG, "_generation_inputs_from_config"),
        # GPT-2's family: a caller's positions are ignored, the mask's are used
        (
            Idiom((Atom.GIVEN.value,), (PREPARED, NONE)),
            HookKind.NONE_WHEN_GIVEN,
            "_generation_inputs_ignored_when_given",
        ),
        # the llava family: the image after the first step only while the model's own condition holds
        (
            Idiom((FIRST, OWN), (NONE, PREPARED, PREPARED, PREPARED)),
            HookKind.DROPPED_WHEN,
            "_generation_inputs_dropped_after_first_step_unless_needed",
        ),
    ],
)
def test_each_idiom_has_its_hook(profile: MixinProfile, idiom: Idiom, kind: HookKind, name: str) -> None:
    found, hook, _ = hook_for(idiom, profile)
    assert found is kind and hook is not None and hook.attribute == name
    # the declaration and the code parse, and the code reads the attribute
    ast.parse(hook.declaration)
    ast.parse(hook.prologue + hook.epilogue)
    assert f"self.{name}" in hook.prologue + hook.epilogue
    assert hook.declaration.startswith("# ")  # says why models set it


def test_an_idiom_with_no_template_is_a_proposal(profile: MixinProfile) -> None:
    kind, hook, why = hook_for(Idiom((FIRST,), (CONFIG, NONE)), profile)
    assert (kind, hook) == (HookKind.OTHER, None)
    assert "no hook template" in why


# --------------------------------------------------------------------------------------------- members


def test_a_forward_that_takes_the_key_in_kwargs_blocks_the_member(profile: MixinProfile) -> None:
    """None and left out are the same to a forward that names the input, not to one that hands **kwargs on."""
    source = method('model_inputs["position_ids"] = None')
    idioms = {"position_ids": Idiom((), (NONE,))}
    named = finding(source, profile, forward_params=("input_ids", "position_ids", "**kwargs"))
    loose = finding(source, profile, forward_params=("input_ids", "**kwargs"))
    assert member_change(named, ["position_ids"], profile, idioms).change is Change.DELETE
    found = member_change(loose, ["position_ids"], profile, idioms)
    assert found.change is Change.BLOCKED and "does not name position_ids" in found.why


def test_a_member_that_pops_the_key_as_the_hook_does_needs_no_forward_naming_it(profile: MixinProfile) -> None:
    """VisionEncoderDecoder pops ``decoder_head_mask``, which its forward takes only in **kwargs: the dropped-inputs
    hook pops it too, so that forward gets the same (nothing) either way. A member that sets the key to None stays
    blocked (the hook would leave out what it passed as None), and so does the pop under a hook that sets None."""
    idioms = {"decoder_head_mask": Idiom((), (NONE,))}
    popped = finding(
        method('model_inputs.pop("decoder_head_mask", None)'), profile, forward_params=("input_ids", "**kwargs")
    )
    assert member_change(popped, ["decoder_head_mask"], profile, idioms).change is Change.DELETE
    set_none = finding(
        method('model_inputs["decoder_head_mask"] = None'), profile, forward_params=("input_ids", "**kwargs")
    )
    found = member_change(set_none, ["decoder_head_mask"], profile, idioms)
    assert found.change is Change.BLOCKED and "does not name decoder_head_mask" in found.why
    # the same pop under a hook that writes None where it leaves the key out (the caller's input ignored): not alike
    ignored = member_change(
        popped, ["decoder_head_mask"], profile, {"decoder_head_mask": Idiom((Atom.GIVEN.value,), (PREPARED, NONE))}
    )
    assert ignored.change is Change.BLOCKED and "does not name decoder_head_mask" in ignored.why


#: an encoder-decoder wrapper as 4.45.2's first pass leaves it: super(), its decoder's mask and ids (its deletion
#: differed: the mixin would pass the caller's mask), and the pop of decoder_head_mask the dropped-inputs hook does
REDUCED_WRAPPER = method(
    "decoder_inputs = self.decoder.prepare_inputs_for_generation(input_ids, past_key_values=past_key_values)",
    'decoder_attention_mask = decoder_inputs["attention_mask"] if "attention_mask" in decoder_inputs else None',
    'model_inputs["decoder_attention_mask"] = decoder_attention_mask',
    'model_inputs["decoder_input_ids"] = decoder_inputs["input_ids"]',
    'model_inputs.pop("decoder_head_mask", None)',
    params="input_ids, past_key_values=None, **kwargs",
    call="input_ids, past_key_values=past_key_values, **kwargs",
)
WRAPPER_FORWARD = ("input_ids", "decoder_input_ids", "decoder_attention_mask", "past_key_values", "**kwargs")


def test_an_already_reduced_member_keeps_what_it_prepares_its_own_way(profile: MixinProfile) -> None:
    """``apply --hooks`` on its own output: the wrapper is trimmed of the pop, not deleted: a deletion would lose the
    decoder's mask."""
    idioms = {"decoder_head_mask": Idiom((), (NONE,))}
    f = finding(REDUCED_WRAPPER, profile, forward_params=WRAPPER_FORWARD)
    assert f.flow, "the decoder's own mask is a flow difference"
    found = member_change(f, ["decoder_head_mask"], profile, idioms)
    assert (found.change, found.removed) == (Change.TRIM, (5,))
    # with nothing of its own left but the pop, the member goes
    popped = finding(
        method('model_inputs.pop("decoder_head_mask", None)'), profile, forward_params=("input_ids", "**kwargs")
    )
    assert member_change(popped, ["decoder_head_mask"], profile, idioms).change is Change.DELETE


@pytest.mark.parametrize(
    ("params", "call", "change"),
    [
        # a default of its own applies wherever a caller leaves the input out: the trim keeps the signature
        (
            "input_ids, output_router_logits=False, **kwargs",
            "input_ids, output_router_logits=output_router_logits, **kwargs",
            Change.TRIM,
        ),
        # generate() always passes use_cache: its default is seen only by a composite asking a decoder without it,
        # which verification runs
        ("input_ids, use_cache=True, **kwargs", "input_ids, use_cache=use_cache, **kwargs", Change.DELETE),
        # the mixin's own default for the same input is no default of the override's
        (STEP, STEP_CALL, Change.DELETE),
    ],
)
def test_a_default_of_its_own_keeps_the_member_from_being_deleted(
    profile: MixinProfile, params: str, call: str, change: Change
) -> None:
    source = method('model_inputs["position_ids"] = None', params=params, call=call)
    found = member_change(finding(source, profile), ["position_ids"], profile, {"position_ids": Idiom((), (NONE,))})
    assert found.change is change


def test_a_trim_removes_only_the_hooked_statements(profile: MixinProfile) -> None:
    source = method('model_inputs["position_ids"] = None', 'model_inputs["output_router_logits"] = True')
    f = finding(source, profile)
    found = member_change(f, ["position_ids"], profile, {"position_ids": Idiom((), (NONE,))})
    assert (found.change, found.removed, found.unnamed) == (Change.TRIM, (1,), ())


@pytest.mark.parametrize(
    "between",
    [
        # no rule understands it, and it reaches the hooked key, or a key it cannot name
        'if model_inputs.get("position_ids") is not None:\n        model_inputs["position_ids"] += 1',
        "if past_key_values is not None:\n        model_inputs[self.key] = None",
        # reads the hooked key off the prepared dict: it would see the hook's value (set inside super())
        'model_inputs["decoder_position_ids"] = model_inputs["position_ids"]',
        # a value computed off the prepared dict: the engine cannot say what it reads
        'model_inputs["attention_mask"] = model_inputs["attention_mask"][:, -1:]',
        # a statement no rule understands that hands the dict on may do either
        "self.log(model_inputs)",
        # a key computed off the prepared dict under a name of its own (a rule understands it, not what it reads)
        'model_inputs["decoder_mask"] = model_inputs.get("position_ids")',
        # another key, a literal, but under a test that reads the hooked key off the prepared dict
        'if model_inputs["position_ids"] is not None:\n        model_inputs["is_decoder"] = True',
    ],
)
def test_a_statement_between_super_and_the_trimmed_ones_blocks_the_trim(profile: MixinProfile, between: str) -> None:
    source = method(between, 'model_inputs["position_ids"] = None')
    found = member_change(finding(source, profile), ["position_ids"], profile, {"position_ids": Idiom((), (NONE,))})
    assert found.change is Change.BLOCKED and "between super()" in found.why


@pytest.mark.parametrize(
    "between",
    [
        'model_inputs["is_decoder"] = True',  # BLIP's reduction: a literal under another key
        'model_inputs["past_buckets_states"] = past_key_values',  # Reformer's: a parameter under another key
        'model_inputs.pop("head_mask", None)',  # another key dropped
        "self.counter += 1",  # names no dict: nothing the hook sets can reach it
        # RoCBert's reduction: its own ids cut after the first step, no rule understands it, never names the dict
        "if past_key_values is not None:\n        shape_ids = kwargs.get('shape_ids')[:, -1:]",
        # Bloom's: another key set from a local of its own (a static cache's 2D mask padded to the cache's size)
        'model_inputs["attention_mask"] = padded_mask',
        # PaliGemma's: no rule understands them, and they use the dict by other constant keys only
        'if model_inputs.get("inputs_embeds") is not None:\n        size = model_inputs["inputs_embeds"].shape[1]\n'
        '        model_inputs["attention_mask"] = build(size)',
        'if model_inputs.get("attention_mask") is not None:\n        model_inputs["attention_mask"] += 1',
        # no rule understands it, and read as code it names the dict only for another key
        'if model_inputs.get("inputs_embeds") is not None:\n        self.counter += 1',
    ],
)
def test_a_statement_between_that_the_hook_cannot_affect_leaves_the_trim(profile: MixinProfile, between: str) -> None:
    """It sets or drops only other keys, from parameters or literals: it does the same whether the hooked key was
    dropped inside super() or after it, so the hooked statement goes and it stays where it was."""
    source = method(
        between,
        'model_inputs["position_ids"] = None',
        params="input_ids, past_key_values=None, **kwargs",
        call="input_ids, past_key_values=past_key_values, **kwargs",
    )
    found = member_change(finding(source, profile), ["position_ids"], profile, {"position_ids": Idiom((), (NONE,))})
    assert (found.change, found.removed) == (Change.TRIM, (2,))


def test_a_statement_between_that_assigns_what_the_trimmed_ones_read_blocks_the_trim(profile: MixinProfile) -> None:
    """The removed statement read ``router_default`` after the statement between assigned it: the hook, which runs
    before, would not see that value."""
    source = method(
        "router_default = self.config.output_router_logits",
        'model_inputs["output_router_logits"] = kwargs.get("output_router_logits", router_default)',
    )
    found = member_change(
        finding(source, profile),
        ["output_router_logits"],
        profile,
        {"output_router_logits": Idiom((), (ValueKind.CALLER_OR_DEFAULT,))},
    )
    assert found.change is Change.BLOCKED and "between super()" in found.why


@pytest.mark.parametrize(
    "between",
    [
        "self.config.num_logits_to_keep = 5",  # the config attribute the removed statement reads, changed in place
        "self.bump()",  # a method that may change it
        "setattr(self.config, 'num_logits_to_keep', 5)",
    ],
)
def test_a_statement_between_that_touches_what_the_trimmed_ones_read_blocks_the_trim(
    profile: MixinProfile, between: str
) -> None:
    """The hook reads the config inside super(), before this statement runs: the removed statement read it after."""
    source = method(between, 'model_inputs["logits_to_keep"] = self.config.num_logits_to_keep')
    found = member_change(
        finding(source, profile), ["logits_to_keep"], profile, {"logits_to_keep": Idiom((), (CONFIG,))}
    )
    assert found.change is Change.BLOCKED and "between super()" in found.why


#: Qwen2-VL's own cut of its ids by ``cache_position`` (a rule understands it), kept after super() for its positions
IDS_CUT = (
    "if past_key_values is not None:",
    "    if inputs_embeds is not None:",
    "        input_ids = input_ids[:, -cache_position.shape[0] :]",
    "    elif input_ids.shape[1] != cache_position.shape[0]:",
    "        input_ids = input_ids[:, cache_position]",
)


@pytest.mark.parametrize(
    ("between", "change"),
    [
        # it reads cache_position, which the removed test reads too, and only reads it
        pytest.param(IDS_CUT, Change.TRIM, id="reads-only"),
        # a method of it, or an in-place add, under a test a rule understands: what the hook read is not what the
        # removed test read
        pytest.param(("cache_position.add_(1)",), Change.BLOCKED, id="method"),
        pytest.param(("if past_key_values is not None:", "    cache_position += 1"), Change.BLOCKED, id="in-place"),
    ],
)
def test_a_statement_between_that_reads_what_the_trimmed_ones_read(
    profile: MixinProfile, between: tuple[str, ...], change: Change
) -> None:
    """Qwen2-VL (4.45) cuts its ids by ``cache_position`` after super() for its rope positions, then sets
    ``pixel_values`` to None under ``cache_position[0] != 0``. The cut only reads ``cache_position``
    (``TopLevel.touched`` is empty): the hook, reading it inside super() before, sees the same step. Before, any
    statement a rule understands that read a name the removed ones read blocked the trim."""
    source = method(
        *between,
        "rope = self.rope(input_ids)",
        'model_inputs["rope"] = rope',
        "if cache_position[0] != 0:",
        '    model_inputs["image_grid"] = None',
        params="input_ids, past_key_values=None, inputs_embeds=None, cache_position=None, **kwargs",
        call="input_ids, past_key_values=past_key_values, inputs_embeds=inputs_embeds, "
        "cache_position=cache_position, **kwargs",
    )
    f = finding(
        source,
        profile,
        forward_params=("input_ids", "past_key_values", "inputs_embeds", "cache_position", "image_grid", "rope"),
    )
    assert Extra("image_grid", ExtraHow.LATER_STEP_NONE) in f.extras
    found = member_change(f, ["image_grid"], profile, {"image_grid": Idiom((FIRST,), (NONE, CALLER))})
    assert found.change is change, found.why
    if change is Change.BLOCKED:
        assert "between super()" in found.why


def test_a_member_with_statements_of_its_own_is_trimmed_not_blocked(profile: MixinProfile) -> None:
    """Fuyu's reduction: super(), a first-step input, then its ids cut to the last token (nothing the mixin does).
    The hooked statement goes; the cut stays where it was, after where the hook now runs."""
    source = method(
        'model_inputs["image_patches"] = image_patches if is_first_iteration else None',
        "if past_key_values:",
        '    model_inputs["input_ids"] = model_inputs["input_ids"][:, -1:]',
        params="input_ids, past_key_values=None, image_patches=None, is_first_iteration=False, **kwargs",
        call="input_ids, past_key_values=past_key_values, is_first_iteration=is_first_iteration, **kwargs",
    )
    f = finding(source, profile, forward_params=("input_ids", "past_key_values", "image_patches"))
    assert any(r.kind.keeps for r in f.reasons)  # the cut is the override's own
    found = member_change(f, ["image_patches"], profile, {"image_patches": Idiom((FIRST,), (NONE, CALLER))})
    # the parameter super() never got leaves the signature: through **kwargs it reaches the mixin's hook
    assert (found.change, found.removed, found.unnamed) == (Change.TRIM, (1,), ("image_patches",))


@pytest.mark.parametrize(
    ("params", "forward_params", "read_again"),
    [
        # read again after the removed statement: it has to stay
        ("input_ids, image_patches=None, is_first_iteration=False, **kwargs", ("input_ids", "image_patches"), True),
        # a default of its own would be lost: a caller leaving it out gives the mixin nothing
        ("input_ids, image_patches=1, is_first_iteration=False, **kwargs", ("input_ids", "image_patches"), False),
        # generate() accepts the input through the signature alone (forward does not name it)
        ("input_ids, image_patches=None, is_first_iteration=False, **kwargs", ("input_ids",), False),
    ],
)
def test_a_withheld_parameter_leaves_the_signature_only_when_nothing_else_needs_it(
    profile: MixinProfile, params: str, forward_params: tuple[str, ...], read_again: bool
) -> None:
    # the ids cut to the last token, the member's own: it is trimmed, not deleted
    body = [
        'model_inputs["image_patches"] = image_patches if is_first_iteration else None',
        "if not is_first_iteration:",
        '    model_inputs["input_ids"] = model_inputs["input_ids"][:, -1:]',
    ]
    if read_again:
        body.append('model_inputs["patch_count"] = image_patches.shape[0]')
    source = method(*body, params=params, call="input_ids, is_first_iteration=is_first_iteration, **kwargs")
    found = member_change(
        finding(source, profile, forward_params=forward_params),
        ["image_patches"],
        profile,
        {"image_patches": Idiom((FIRST,), (NONE, CALLER))},
    )
    assert found.change is Change.BLOCKED and "does not hand image_patches to super()" in found.why


# --------------------------------------------------------------------------------------------- clustering


@pytest.fixture(scope="module")
def fixture_scan(tmp_path_factory: pytest.TempPathFactory) -> ScanResult:
    root = copy_fixture(HOOKS_CHECKOUT, tmp_path_factory.mktemp("hooks") / "checkout")
    return scan(resolve(root), use_cache=False)


def mined(base: ScanResult, *snippets: tuple[str, str]) -> list:
    """The clusters of ``(model, override)`` snippets, in the fixture's checkout (its mixin, its profile)."""
    findings = tuple(
        classify_override(
            override(
                code,
                model=model,
                class_name=f"{model.title()}ForCausalLM",
                forward_params=("input_ids", "position_ids", "attention_mask"),
            ),
            base.profile,
        )
        for model, code in snippets
    )
    return list(mine(dataclasses.replace(base, findings=findings)).clusters)


NONE_POSITIONS = method('model_inputs["position_ids"] = None')
POPPED_POSITIONS = method('model_inputs.pop("position_ids", None)')


def test_three_models_sharing_an_idiom_make_a_hook(fixture_scan: ScanResult) -> None:
    clusters = mined(fixture_scan, ("ant", NONE_POSITIONS), ("bee", POPPED_POSITIONS), ("cat", NONE_POSITIONS))
    assert [(c.name, c.models, c.applied) for c in clusters] == [
        ("_generation_dropped_inputs", ("ant", "bee", "cat"), True)
    ]
    assert {m.change for m in clusters[0].members} == {Change.DELETE}
    assert {m.assignment for m in clusters[0].members} == {'_generation_dropped_inputs = ("position_ids",)'}


#: GPT-2's positions as 4.45's reduction left them: the caller's ignored, the mask's used
IGNORED_POSITIONS = method('if kwargs.get("position_ids") is not None:', '    model_inputs["position_ids"] = None')


def test_inputs_ignored_when_the_caller_gives_them_make_a_hook(fixture_scan: ScanResult) -> None:
    """What the caller gave is read in the prologue, before the mixin fills the key in from the mask."""
    clusters = mined(fixture_scan, ("ant", IGNORED_POSITIONS), ("bee", IGNORED_POSITIONS), ("cat", IGNORED_POSITIONS))
    (cluster,) = clusters
    assert (cluster.name, cluster.kind, cluster.applied) == (
        "_generation_inputs_ignored_when_given",
        HookKind.NONE_WHEN_GIVEN,
        True,
    )
    assert cluster.hook is not None
    assert "kwargs.get(name) is not None" in cluster.hook.prologue and "= None" in cluster.hook.epilogue
    assert {m.change for m in cluster.members} == {Change.DELETE}
    assert {m.assignment for m in cluster.members} == {'_generation_inputs_ignored_when_given = ("position_ids",)'}


def test_an_input_the_mixin_names_is_no_member_of_the_ignored_inputs_hook(fixture_scan: ScanResult) -> None:
    """Noop: the hook reads what the caller gave from the mixin's **kwargs, and the mixin takes attention_mask as a
    parameter of its own: the same idiom on it makes no cluster (control: position_ids above)."""
    ignored_mask = method('if kwargs.get("attention_mask") is not None:', '    model_inputs["attention_mask"] = None')
    clusters = mined(fixture_scan, ("ant", ignored_mask), ("bee", ignored_mask), ("cat", ignored_mask))
    assert [c for c in clusters if c.kind is HookKind.NONE_WHEN_GIVEN and c.members] == []


def test_the_defaults_hook_names_every_default_of_its_members_signature(fixture_scan: ScanResult) -> None:
    """Mixtral's ``use_cache=True`` beside its ``output_router_logits=False``: with both in the attribute nothing
    but the signature keeps the override, so it goes (verification runs it inside a composite, which passes no
    use_cache)."""
    params = "input_ids, output_router_logits=False, use_cache=True, **kwargs"
    code = (
        "def prepare_inputs_for_generation(self, " + params + "):\n"
        "    model_inputs = super().prepare_inputs_for_generation(input_ids, **kwargs)\n"
        '    model_inputs["output_router_logits"] = output_router_logits\n'
        '    model_inputs["use_cache"] = use_cache\n'
        "    return model_inputs\n"
    )
    forward = ("input_ids", "position_ids", "attention_mask", "output_router_logits", "use_cache")
    findings = tuple(
        classify_override(
            override(code, model=model, class_name=f"{model.title()}ForCausalLM", forward_params=forward),
            fixture_scan.profile,
        )
        for model in ("ant", "bee", "cat")
    )
    (cluster,) = mine(dataclasses.replace(fixture_scan, findings=findings)).clusters
    assert {m.assignment for m in cluster.members} == {
        '_generation_input_defaults = {"output_router_logits": False, "use_cache": True}'
    }
    assert {m.change for m in cluster.members} == {Change.DELETE}


def test_two_models_are_no_cluster(fixture_scan: ScanResult) -> None:
    """Noop: fewer than MIN_MODELS models share the idiom, so nothing is proposed."""
    assert MIN_MODELS == 3
    assert mined(fixture_scan, ("ant", NONE_POSITIONS), ("bee", POPPED_POSITIONS)) == []


def test_a_hook_the_mixin_has_already_takes_a_single_member(fixture_scan: ScanResult) -> None:
    """An earlier ``apply --hooks`` put the hook's code into the mixin (the first pass, for the pass over the tree it
    left): a member costs the mixin nothing, so one model is enough, and failing members never revert the hook."""
    loop = "for name in self._generation_dropped_inputs:\n    model_inputs.pop(name, None)"
    profile = dataclasses.replace(
        fixture_scan.profile,
        unrecognised=(
            *fixture_scan.profile.unrecognised,
            Unrecognised(900, 901, loop.replace("\n", " "), source=loop),
        ),
    )
    base = dataclasses.replace(fixture_scan, profile=profile)
    findings = (
        classify_override(
            override(
                NONE_POSITIONS, model="ant", class_name="AntForCausalLM", forward_params=("input_ids", "position_ids")
            ),
            profile,
        ),
    )
    report = mine(dataclasses.replace(base, findings=findings))
    (cluster,) = report.clusters
    assert (cluster.name, cluster.models, cluster.applied) == ("_generation_dropped_inputs", ("ant",), True)
    assert report.in_mixin == frozenset({"_generation_dropped_inputs"})
    # a second member that stays while the first fails: one model left, and the hook still not reverted
    (member,) = cluster.members
    plan = Plan(
        shards=(Shard("s", "override", (member.override,), ()),),
        hoist=None,
        held=(),
        actions=((member.override, Action.DELETE), ("other", Action.DELETE)),
    )
    assert failing_clusters(plan, dataclasses.replace(report, in_mixin=frozenset()), ["other"]) != {}
    assert failing_clusters(plan, report, ["other"]) == {}


def test_a_near_miss_is_listed_and_does_not_join(fixture_scan: ScanResult) -> None:
    after_prefill = method(
        "if use_cache and not is_first_iteration:",
        '    model_inputs["attention_mask"] = None',
        params=STEP,
        call=STEP_CALL,
    )
    every_later_step = method(
        "if not is_first_iteration:",
        '    model_inputs["attention_mask"] = None',
        params="input_ids, is_first_iteration=False, **kwargs",
        call="input_ids, is_first_iteration=is_first_iteration, **kwargs",
    )
    clusters = mined(
        fixture_scan, ("ant", after_prefill), ("bee", after_prefill), ("cat", after_prefill), ("dog", every_later_step)
    )
    (cluster,) = clusters
    assert cluster.name == "_generation_inputs_dropped_after_prefill" and cluster.models == ("ant", "bee", "cat")
    (near,) = cluster.near_misses
    assert (near.model, near.key) == ("dog", "attention_mask")
    assert "left out after the first step" in near.why


def test_a_hook_too_few_members_can_take_is_a_proposal(fixture_scan: ScanResult) -> None:
    """Noop: three models share the idiom, but one is blocked (its forward hands **kwargs on): no hook."""
    loose = override(
        NONE_POSITIONS, model="cat", class_name="CatForCausalLM", forward_params=("input_ids", "**kwargs")
    )
    findings = [
        classify_override(
            override(
                code,
                model=model,
                class_name=f"{model.title()}ForCausalLM",
                forward_params=("input_ids", "position_ids"),
            ),
            fixture_scan.profile,
        )
        for model, code in (("ant", NONE_POSITIONS), ("bee", POPPED_POSITIONS))
    ]
    findings.append(classify_override(loose, fixture_scan.profile))
    (cluster,) = mine(dataclasses.replace(fixture_scan, findings=tuple(findings))).clusters
    assert not cluster.applied and "only 2 of its models" in cluster.not_applied
    assert cluster.applicable_models == ("ant", "bee")


# --------------------------------------------------------------------------------------------- whole bodies

#: a masked LM's whole body in 4.45 (a dummy token to predict): statements no rule understands, then one dict
DUMMY_TOKEN = """\
def prepare_inputs_for_generation(self, input_ids, attention_mask=None, **model_kwargs):
    effective_batch_size = input_ids.shape[0]
    if self.config.pad_token_id is None:
        raise ValueError("The PAD token should be defined for generation")
    attention_mask = torch.cat([attention_mask, attention_mask.new_zeros((attention_mask.shape[0], 1))], dim=-1)
    dummy_token = torch.full((effective_batch_size, 1), self.config.pad_token_id, dtype=torch.long,
                             device=input_ids.device)
    input_ids = torch.cat([input_ids, dummy_token], dim=1)
    return {"input_ids": input_ids, "attention_mask": attention_mask}
"""


def test_three_models_with_the_same_whole_body_make_a_hook(fixture_scan: ScanResult) -> None:
    """The code moves into the mixin under ``if self.<attribute>:``; each member keeps a super() call for its
    signature (generate() refuses ``inputs_embeds`` a signature does not name)."""
    (cluster,) = mined(fixture_scan, ("ant", DUMMY_TOKEN), ("bee", DUMMY_TOKEN), ("cat", DUMMY_TOKEN))
    name = "_generation_inputs_as_ant_for_causal_lm"
    assert (cluster.name, cluster.kind, cluster.applied, cluster.models) == (
        name,
        HookKind.STATEMENTS,
        True,
        ("ant", "bee", "cat"),
    )
    assert {(m.change, m.assignment) for m in cluster.members} == {(Change.REDUCE, f"{name} = True")}
    assert cluster.hook is not None
    prologue = ast.parse(cluster.hook.prologue).body
    assert len(prologue) == 1 and ast.unparse(prologue[0].test) == f"self.{name}"  # type: ignore[attr-defined]
    assert isinstance(prologue[0].body[-1], ast.Return)  # type: ignore[attr-defined]
    assert f"{name}: bool = False" in cluster.hook.declaration  # the 5.x-shaped mixin is annotated


WHOLE_BODY_NOOPS = [
    (
        "reads-its-kwargs",
        DUMMY_TOKEN.replace(
            "effective_batch_size = input_ids.shape[0]",
            "effective_batch_size = input_ids.shape[0] + len(model_kwargs)",
        ),
        "reads model_kwargs, which the mixin's method does not have",
    ),
    (
        "a-module-helper",
        DUMMY_TOKEN.replace("torch.cat([input_ids, dummy_token], dim=1)", "append_token(input_ids, dummy_token)"),
        "reads append_token",
    ),
    (
        "a-default-of-its-own",
        DUMMY_TOKEN.replace("attention_mask=None", "attention_mask=1"),
        "no parameter attention_mask=1",
    ),
    ("no-kwargs", DUMMY_TOKEN.replace(", **model_kwargs", ""), "the first parameter or the **kwargs differ"),
    (
        "a-recognised-statement",
        DUMMY_TOKEN.replace("    return {", "    model_inputs = {}\n    return {"),
        "more than statements no rule understands",
    ),
    (
        "a-conditional-key",
        DUMMY_TOKEN.replace(
            '    return {"input_ids": input_ids, "attention_mask": attention_mask}',
            '    if attention_mask is None:\n        return {"input_ids": input_ids}\n'
            '    return {"input_ids": input_ids, "attention_mask": attention_mask}',
        ),
        "more than statements no rule understands",
    ),
]


@pytest.mark.parametrize(("odd", "why"), [pytest.param(code, why, id=name) for name, code, why in WHOLE_BODY_NOOPS])
def test_a_whole_body_the_mixin_cannot_run_as_it_is_stays(fixture_scan: ScanResult, odd: str, why: str) -> None:
    """Noop for the odd one out (the code would mean something else in the mixin, or it is no whole body): the
    three others still take the hook, and the odd one is listed with why."""
    (cluster,) = [
        c
        for c in mined(fixture_scan, ("ant", DUMMY_TOKEN), ("bee", DUMMY_TOKEN), ("cat", DUMMY_TOKEN), ("dog", odd))
        if c.applied
    ]
    assert cluster.applicable_models == ("ant", "bee", "cat")
    body = _whole_body(classify_override(override(odd), fixture_scan.profile), fixture_scan.profile)
    assert body.code == "" and why in body.why, body.why
    dog = next((m for m in cluster.members if m.model == "dog"), None)
    if dog is not None:  # the same statements no rule understands: a member, blocked, with why
        assert dog.change is Change.BLOCKED and why in dog.why, dog.why


@pytest.mark.parametrize(
    "fallback",
    [None, Fallback(FallbackKind.PARENT, "BertForMaskedLM's override", "BertForMaskedLM")],
    ids=["unresolved", "a-parent-override"],
)
def test_a_whole_body_moves_only_where_super_is_known_to_reach_the_mixin(
    fixture_scan: ScanResult, fallback: Fallback | None
) -> None:
    """Noop: the hook runs in the mixin, so a member's super() must be resolved to it, not assumed."""
    o = dataclasses.replace(override(DUMMY_TOKEN), fallback=fallback)
    body = _whole_body(classify_override(o, fixture_scan.profile), fixture_scan.profile)
    assert body.code == "" and "not the mixin" in body.why


@pytest.mark.parametrize(
    ("prologue", "error"),
    [
        # the block returns: what it assigns never reaches the method's own statements
        ("if self._flag:\n    attention_mask = None\n    return {}\n", None),
        # it falls through: the method would see the hook's attention_mask where the caller's was
        ("if self._flag:\n    attention_mask = None\n", "already uses the name 'attention_mask'"),
        ("attention_mask = None\n", "already uses the name 'attention_mask'"),
        # an else branch falls through too
        (
            "if self._flag:\n    return {}\nelse:\n    attention_mask = None\n",
            "already uses the name 'attention_mask'",
        ),
    ],
    ids=["returns", "falls-through", "unguarded", "else-branch"],
)
def test_a_hook_may_reassign_the_methods_parameters_only_in_a_block_that_returns(
    prologue: str, error: str | None
) -> None:
    from codemod.sources import MIXIN_CLASS
    from codemod.transform.plan import Edit, EditKind, HookCode
    from codemod.transform.rewrite import rewrite_source

    hook = HookCode("_flag", "_flag = False\n", prologue=prologue)
    rewritten = rewrite_source(
        MIXIN,
        (HOOKS_CHECKOUT / MIXIN).read_bytes(),
        [Edit(MIXIN, MIXIN_CLASS, EditKind.HOOK, None, "_flag", hook=hook)],
    )
    if error is None:
        assert rewritten.error is None and rewritten.changed
    else:
        assert rewritten.error is not None and error in rewritten.error, rewritten.error


def test_already_reduced_wrappers_sharing_the_hook_stay_with_their_own_statements(fixture_scan: ScanResult) -> None:
    """The plan's side of the same (``hooked_findings``): three such wrappers make the dropped-inputs hook, each member
    a trim, and each finding stays the override's (kept, its other statements where they are), never a deletion."""
    from codemod.transform.hooks import hooked_findings

    findings = tuple(
        classify_override(
            override(REDUCED_WRAPPER, model=model, class_name=f"{model.title()}Model", forward_params=WRAPPER_FORWARD),
            fixture_scan.profile,
        )
        for model in ("ant", "bee", "cat")
    )
    result = dataclasses.replace(fixture_scan, findings=findings)
    report = mine(result)
    (cluster,) = report.applied()
    assert cluster.name == "_generation_dropped_inputs"
    assert {(m.change, m.removed) for m in cluster.members} == {(Change.TRIM, (5,))}
    assert {(f.action, f.category) for f in hooked_findings(result, report)} == {(Action.KEEP, Category.BESPOKE)}


#: the same body checking its config with ``assert`` (4.45's RoFormer and RemBERT), where the others raise ValueError
ASSERTED_DUMMY_TOKEN = DUMMY_TOKEN.replace(
    '    if self.config.pad_token_id is None:\n        raise ValueError("The PAD token should be defined for generation")\n',
    '    assert self.config.pad_token_id is not None, "The PAD token should be defined for generation"\n',
)


@pytest.mark.parametrize(
    ("statement", "condition"),
    [
        ("assert self.config.pad_token_id is not None, 'no pad'", "self.config.pad_token_id is not None"),
        (
            "if self.config.pad_token_id is None:\n    raise ValueError('no pad')",
            "self.config.pad_token_id is not None",
        ),
        ("if not self.config.tie_word_embeddings:\n    raise ValueError", "self.config.tie_word_embeddings"),
        ("if x == 1:\n    raise ValueError\n    raise TypeError", "x != 1"),
        ("if x > 1:\n    raise ValueError", "not x > 1"),
    ],
)
def test_a_check_lets_the_method_go_on_under_its_condition(statement: str, condition: str) -> None:
    """``assert c`` and ``if not c: raise`` are the same check: they group alike, whatever the exception."""
    from codemod.transform.hooks.statements import _passes_when

    assert _passes_when(statement) == condition


@pytest.mark.parametrize(
    "statement",
    [
        pytest.param("if x is None:\n    raise ValueError\nelse:\n    y = 1", id="an-else-branch"),
        pytest.param("if x is None:\n    y = 1\n    raise ValueError", id="assigns-before-raising"),
        pytest.param("x = 1", id="no-check"),
        pytest.param("if x is None: raise ValueError\ny = 1", id="two-statements"),
    ],
)
def test_a_statement_that_does_more_than_check_is_no_check(statement: str) -> None:
    """Noop: only a statement that raises and does nothing else may stay in front of super() as the member's own."""
    from codemod.transform.hooks.statements import _passes_when

    assert _passes_when(statement) is None


def test_a_whole_body_that_checks_its_config_its_own_way_keeps_the_check(fixture_scan: ScanResult) -> None:
    """A fourth model with the same body but ``assert`` where the others raise joins the hook (its code is theirs)
    and keeps its assert in front of super(): a config without a pad token still fails with AssertionError."""
    from codemod.transform.hooks import hooked_findings

    findings = tuple(
        classify_override(
            override(
                code,
                model=model,
                class_name=f"{model.title()}ForCausalLM",
                forward_params=("input_ids", "attention_mask"),
            ),
            fixture_scan.profile,
        )
        for model, code in (
            ("ant", DUMMY_TOKEN),
            ("bee", DUMMY_TOKEN),
            ("cat", DUMMY_TOKEN),
            ("dog", ASSERTED_DUMMY_TOKEN),
        )
    )
    result = dataclasses.replace(fixture_scan, findings=findings)
    report = mine(result)
    (cluster,) = report.applied()
    assert cluster.applicable_models == ("ant", "bee", "cat", "dog")
    assert (
        cluster.hook is not None and "raise ValueError" in cluster.hook.prologue
    )  # the three's code, not the fourth's
    guards = {m.model: m.guards for m in cluster.members}
    assert guards == {"ant": (), "bee": (), "cat": (), "dog": (1,)}  # the body's second statement
    extras = {f.override.model: f.extras for f in hooked_findings(result, report)}
    assert extras["dog"] == (Extra("", ExtraHow.KEEP_STATEMENTS, "1"),) and extras["ant"] == ()


#: what a first pass leaves of a member that keeps its check: the check and super()
CHECK_ONLY = """\
def prepare_inputs_for_generation(self, input_ids, **model_kwargs):
    assert self.config.pad_token_id is not None, "The PAD token should be defined for generation"
    return super().prepare_inputs_for_generation(input_ids, **model_kwargs)
"""


def test_bodies_that_only_check_are_no_repeated_code(fixture_scan: ScanResult) -> None:
    """Noop: three overrides whose only statements no rule understands are their checks share no code to move (the
    second pass over a tree the first one left, where RoFormer's and RemBERT's masked LMs are just that)."""
    assert mined(fixture_scan, ("ant", CHECK_ONLY), ("bee", CHECK_ONLY), ("cat", CHECK_ONLY)) == []


@pytest.mark.parametrize(
    ("odd", "why"),
    [
        pytest.param(
            DUMMY_TOKEN.replace("if self.config.pad_token_id is None:", "if self.config.vocab_size is None:"),
            "another condition: the hook's own check would raise where its code did not",
            id="another-condition",
        ),
        pytest.param(
            DUMMY_TOKEN.replace(
                "    if self.config.pad_token_id is None:\n        raise ValueError("
                '"The PAD token should be defined for generation")\n',
                "",
            ),
            "no check: the hook's would raise where its code failed otherwise",
            id="no-check",
        ),
        pytest.param(
            ASSERTED_DUMMY_TOKEN.replace(
                "assert self.config.pad_token_id is not None",
                "assert effective_batch_size > 0 and self.config.pad_token_id is not None",
            ),
            "its check reads what a statement before it computed: it cannot run first",
            id="reads-a-local",
        ),
    ],
)
def test_a_whole_body_that_checks_something_else_does_not_join(fixture_scan: ScanResult, odd: str, why: str) -> None:
    """Noop for the odd one: the three others take the hook, the fourth is listed, blocked, not reduced."""
    (cluster,) = [
        c
        for c in mined(fixture_scan, ("ant", DUMMY_TOKEN), ("bee", DUMMY_TOKEN), ("cat", DUMMY_TOKEN), ("dog", odd))
        if c.applied
    ]
    assert cluster.applicable_models == ("ant", "bee", "cat"), why
    # the same code once its checks are left out: a member, listed blocked, not left out of the report
    (dog,) = [m for m in cluster.members if m.model == "dog"]
    assert dog.change is Change.BLOCKED and not dog.guards, why


def test_two_models_with_the_same_whole_body_are_a_proposal_at_most(fixture_scan: ScanResult) -> None:
    """Noop: fewer than MIN_MODELS models share the body."""
    assert not any(c.applied for c in mined(fixture_scan, ("ant", DUMMY_TOKEN), ("bee", DUMMY_TOKEN)))


def test_a_whole_body_hook_is_applied_to_the_mixin_and_its_members(fixture_scan: ScanResult) -> None:
    """The members become reductions (their signature stays) whose dict the mixin prepares, and the hook goes into
    the mixin's method, whose parameters its block reassigns: it returns, so the method's own code never sees them."""
    from codemod.sources import MIXIN_CLASS
    from codemod.transform.hooks import hooked_findings
    from codemod.transform.plan import Edit, EditKind
    from codemod.transform.rewrite import rewrite_source

    findings = tuple(
        classify_override(
            override(
                DUMMY_TOKEN,
                model=model,
                class_name=f"{model.title()}ForCausalLM",
                forward_params=("input_ids", "attention_mask"),
            ),
            fixture_scan.profile,
        )
        for model in ("ant", "bee", "cat")
    )
    result = dataclasses.replace(fixture_scan, findings=findings)
    report = mine(result)
    assert report.moved_whole() == {f.override.id for f in findings}
    assert {(f.action, f.extras, f.flow) for f in hooked_findings(result, report)} == {(Action.REDUCE, (), ())}
    (cluster,) = report.applied()
    assert cluster.hook is not None
    hook = Edit(MIXIN, MIXIN_CLASS, EditKind.HOOK, None, cluster.name, hook=cluster.hook.code())
    rewritten = rewrite_source(MIXIN, (HOOKS_CHECKOUT / MIXIN).read_bytes(), [hook])
    assert rewritten.error is None and rewritten.changed
    after = rewritten.new.decode()
    ast.parse(after)
    assert "        if self._generation_inputs_as_ant_for_causal_lm:\n" in after


# --------------------------------------------------------------------------------------------- the tree

#: the fixture's clusters: hook -> (members it changes, members it cannot)
TREE = {
    "_generation_dropped_inputs": ({"newt", "owl", "pike", "toad", "wren"}, {"mole"}),
    "_generation_inputs_dropped_after_prefill": ({"crane", "heron", "ibis", "koi"}, {"mole"}),
    "_generation_inputs_from_config": ({"jay", "kite", "lark", "wren"}, set()),
}
#: files no hook may touch: the near miss (its mask left out after the first step, cache or not) and the blocked
NOT_TOUCHED = [f"{PKG}/loon/modeling_loon.py", f"{PKG}/mole/modeling_mole.py"]


@pytest.fixture
def checkout(tmp_path: Path, codemod_cache: Path) -> Path:
    return copy_fixture(HOOKS_CHECKOUT, tmp_path / "hooks_checkout")


def invoke(*args: str | Path):
    return runner.invoke(app, [str(a) for a in args])


def python_files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*.py"))}


def test_hooks_json_lists_each_cluster_with_its_members(checkout: Path) -> None:
    result = invoke("hooks", checkout, "--format", "json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    clusters = {c["name"]: c for c in document["clusters"]}
    assert set(clusters) == set(TREE)
    for name, (changed, blocked) in TREE.items():
        c = clusters[name]
        assert c["applied"] and c["mixin_diff"].startswith(f"--- a/{MIXIN}")
        assert {m["model"] for m in c["members"] if m["status"] == "applied"} == changed
        assert {m["model"] for m in c["members"] if m["status"] != "applied"} == blocked
        assert all(m["diff"] for m in c["members"] if m["status"] == "applied")
        assert c["lines_saved"] == c["member_lines_saved"] - c["mixin_lines_added"]
    assert [(n["model"], n["key"]) for n in clusters["_generation_inputs_dropped_after_prefill"]["near_misses"]] == [
        ("loon", "attention_mask")
    ]
    assert document["summary"]["applied"] == 3
    # Wren takes two hooks: its one diff is listed under both, and counted once
    wren = [m for c in document["clusters"] for m in c["members"] if m["model"] == "wren"]
    assert len(wren) == 2 and wren[0]["diff"] == wren[1]["diff"] and wren[0]["lines_saved"] > 0
    assert (
        document["summary"]["lines_saved"]
        == sum(c["lines_saved"] for c in document["clusters"]) - wren[0]["lines_saved"]
    )


def test_hooks_table_in_a_log_has_no_line_longer_than_its_content(checkout: Path) -> None:
    """Before: each cluster's heading was rich's rule at LOG_WIDTH (65536 columns), and table cells padded."""
    result = invoke("hooks", checkout)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert max(len(line) for line in lines) < 400
    assert [line for line in lines if line.startswith("── ")] == [
        f"── {name} ({kind}) " + "─" * (100 - len(f"{name} ({kind})") - 4)
        for name, kind in (
            ("_generation_dropped_inputs", "dropped"),
            ("_generation_inputs_dropped_after_prefill", "dropped-when"),
            ("_generation_inputs_from_config", "from-config"),
        )
    ]
    table = [line for line in lines if line.startswith(("│", " mole", " newt"))]
    assert table and all(line == line.rstrip() for line in table)
    assert "near miss loon (attention_mask): left out after the first step" in result.stdout
    assert result.stdout.rstrip().endswith("lines saved (the members' lines less the mixin's)")


def test_hooks_without_diffs(checkout: Path) -> None:
    result = invoke("hooks", checkout, "--no-diffs")
    assert result.exit_code == 0, result.output
    assert "+++ b/" not in result.stdout and "_generation_dropped_inputs" in result.stdout


def test_hooks_markdown(checkout: Path) -> None:
    result = invoke("hooks", checkout, "--format", "markdown")
    assert result.exit_code == 0, result.output
    assert result.stdout.startswith("## Hooks mined from repeated overrides")
    assert "| `_generation_inputs_from_config` |" in result.stdout and "```diff" in result.stdout


def test_diff_with_hooks_reports_changes_and_writes_nothing(checkout: Path) -> None:
    before = python_files(checkout)
    result = invoke("diff", checkout, "--hooks")
    assert result.exit_code == 1, result.output
    assert (
        f"+++ b/{MIXIN}" in result.stdout
        and "+    _generation_inputs_from_config: dict[str, str] = {}" in result.stdout
    )
    assert python_files(checkout) == before


def _changed_lines(old: bytes, new: bytes) -> tuple[list[str], list[str]]:
    """The lines a rewrite removes and adds."""
    diff = list(difflib.ndiff(old.decode().splitlines(), new.decode().splitlines()))
    return [d[2:] for d in diff if d.startswith("- ")], [d[2:] for d in diff if d.startswith("+ ")]


def test_apply_with_hooks_adds_the_hooks_and_rewrites_the_members(checkout: Path) -> None:
    before = python_files(checkout)
    result = invoke("apply", checkout, "--hooks")
    assert result.exit_code == 0, result.output
    after = python_files(checkout)
    changed = {path for path in after if after[path] != before[path]}
    members = {f"{PKG}/{model}/modeling_{model}.py" for changed_models, _ in TREE.values() for model in changed_models}
    assert changed == members | {MIXIN, f"{PKG}/pike/modular_pike.py"}
    for path in NOT_TOUCHED:
        assert after[path] == before[path]
    for path in changed:
        ast.parse(after[path])  # every written file parses
    # the mixin: each hook declared once and read once; nothing of the method removed
    mixin = after[MIXIN].decode()
    removed, added = _changed_lines(before[MIXIN], after[MIXIN])
    assert removed == []
    for name in TREE:
        assert mixin.count(f"    {name}: ") == 1 and f"self.{name}" in mixin
    assert 'if not is_first_iteration and kwargs.get("use_cache", True):' in [line.strip() for line in added]
    # each member: its class sets the attribute, its override is gone (or, Ibis, trimmed), the rest byte for byte
    after_prefill = '_generation_inputs_dropped_after_prefill = ("{}",)'.format
    from_config = '_generation_inputs_from_config = {"logits_to_keep": "num_logits_to_keep"}'
    positions = '_generation_dropped_inputs = ("position_ids",)'
    expect = {
        "heron": [after_prefill("attention_mask")],
        "ibis": [after_prefill("image_grid")],
        "koi": [after_prefill("image_grid")],
        "crane": [after_prefill("image_grid")],
        "jay": [from_config],
        "kite": [from_config],
        "lark": [from_config],
        "newt": [positions],
        "owl": [positions],
        "pike": [positions],
        "toad": [positions],
        "wren": [positions, from_config],  # deleted: with both hooks, nothing model-specific is left
    }
    for model, assignments in expect.items():
        for path in {f"{PKG}/{model}/modeling_{model}.py", f"{PKG}/{model}/modular_{model}.py"} & changed:
            removed, added = _changed_lines(before[path], after[path])
            if model == "crane":
                # trimmed: the grid's statement goes, and the parameter only it read (super() never got it, the
                # hook finds it in **kwargs); its own cut of the ids stays
                signature = "def prepare_inputs_for_generation(self, input_ids, is_first_iteration=False, **kwargs):"
                assert [line.strip() for line in added if line.strip()] == [*assignments, signature], (path, added)
                assert [line.strip() for line in removed] == [
                    "def prepare_inputs_for_generation(",
                    "self,",
                    "input_ids,",
                    "image_grid=None,",
                    "is_first_iteration=False,",
                    "**kwargs,",
                    "):",
                    'if is_first_iteration or not kwargs.get("use_cache", True):',
                    'model_inputs["image_grid"] = image_grid',
                ]
                assert 'model_inputs["input_ids"] = model_inputs["input_ids"][:, -1:]' in after[path].decode()
                continue
            assert [line.strip() for line in added if line.strip()] == assignments, (path, added)
            old_method = _method_lines(before[path])
            assert set(removed) <= old_method, (path, set(removed) - old_method)
            if model == "ibis":
                assert [line.strip() for line in removed] == [
                    "if not is_first_iteration and use_cache:",
                    'model_inputs["image_grid"] = None',
                ]
                assert "def prepare_inputs_for_generation" in after[path].decode()
            else:
                assert "def prepare_inputs_for_generation" not in after[path].decode()


def _method_lines(text: bytes) -> set[str]:
    """The lines of the file's prepare_inputs_for_generation (and the blank line above it)."""
    source = text.decode()
    lines = source.splitlines()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef) and node.name == "prepare_inputs_for_generation":
            assert node.end_lineno is not None
            return set(lines[node.lineno - 2 : node.end_lineno])
    return set()


def test_apply_with_hooks_twice_changes_nothing_more(checkout: Path) -> None:
    """Noop: once applied, no override has a part left to mine, and the mixin's hooks are not added again."""
    assert invoke("apply", checkout, "--hooks").exit_code == 0
    once = python_files(checkout)
    result = invoke("apply", checkout, "--hooks")
    assert result.exit_code == 0, result.output
    assert python_files(checkout) == once


def test_apply_with_hooks_needs_a_mixin_of_its_own(tmp_path: Path, codemod_cache: Path) -> None:
    """A tree of model code (no generation/utils.py) has nowhere to put a hook: one error line, exit 2."""
    tree = tmp_path / "models"
    tree.mkdir()
    (tree / "modeling_owl.py").write_bytes((HOOKS_CHECKOUT / PKG / "owl" / "modeling_owl.py").read_bytes())
    result = invoke("apply", tree, "--hooks")
    assert result.exit_code == 2
    assert "no mixin of its own to add hooks to" in result.stderr


# --------------------------------------------------------------------------------------------- 5.23.0


@pytest.mark.network
@pytest.mark.slow
def test_release_5_23_has_three_clusters_of_three_models_or_more() -> None:
    """The issue's acceptance: on 5.23.0 ``codemod hooks`` reports at least three clusters of at least three
    models, with the hooks the issue expects, each changing at least three models, and the plan that
    ``apply --hooks`` writes rewrites every file cleanly."""
    from codemod.fetch import fetch_release
    from codemod.transform.apply import compute_changes

    result = scan(resolve(fetch_release("5.23.0")))  # the shared cached checkout: read only
    report = mine(result)
    applied = {c.name: c for c in report.applied()}
    big = [c for c in report.clusters if len(c.models) >= MIN_MODELS]
    assert len(big) >= 3
    for cluster in applied.values():
        assert len(cluster.applicable_models) >= MIN_MODELS, cluster.name
    assert set(applied["_generation_inputs_from_config"].applicable_models) == {
        "bamba",
        "falcon_h1",
        "nemotron_h",
        "zamba",
        "zamba2",
    }
    assert {"exaone4_5", "glm_image", "hyperclovax_vision_v2", "qwen2_5_omni"} <= set(
        applied["_generation_dropped_inputs"].applicable_models
    )
    assert {"gemma3", "gemma4", "gemma4_unified", "molmo2"} <= set(
        applied["_generation_unsliced_prefill_inputs"].applicable_models
    )
    assert "ernie4_5_vl_moe" in applied["_generation_inputs_dropped_after_prefill"].applicable_models
    changes = compute_changes(result, hooks=True)
    assert changes.dropped == ()
    assert all(r.error is None for r in changes.rewrites)
    mixin = next(r for r in changes.rewrites if r.path == MIXIN)
    for name in applied:
        assert f"self.{name}" in mixin.new_text()


# --------------------------------------------------------------------------------------------- 4.45.2


@pytest.mark.network
@pytest.mark.slow
def test_release_4_45_masked_lms_share_their_whole_body() -> None:
    """4.45.2's BERT-family masked LMs are one body (a dummy token to predict): the mixin the stub era gets runs it
    for them, and each keeps a super() call for its signature. RemBERT's and RoFormer's assert where the others
    raise (another exception for a config without a pad token): members that keep their assert in front of
    super()."""
    from codemod.fetch import fetch_release
    from codemod.transform.apply import compute_changes

    result = scan(resolve(fetch_release("4.45.2")))  # the shared cached checkout: read only
    report = mine(result)
    (cluster,) = [c for c in report.applied() if c.kind is HookKind.STATEMENTS]
    assert cluster.name == "_generation_inputs_as_bert_for_masked_lm"
    assert set(cluster.applicable_models) == {
        "bert",
        "big_bird",
        "ernie",
        "megatron_bert",
        "nezha",
        "qdqbert",
        "rembert",
        "roformer",
    }
    assert {m.change for m in cluster.members} == {Change.REDUCE}
    assert {m.model for m in cluster.members if m.guards} == {"rembert", "roformer"}
    changes = compute_changes(result, hooks=True)
    members = {m.override for m in cluster.members}
    assert not [h for h in changes.dropped if any(m in h.detail or m == h.subject for m in members)]
    bert = next(r for r in changes.rewrites if r.path.endswith("models/bert/modeling_bert.py")).new_text()
    assert "    _generation_inputs_as_bert_for_masked_lm = True\n" in bert
    assert "dummy_token" not in bert
    mixin = next(r for r in changes.rewrites if r.path == MIXIN).new_text()
    assert "if self._generation_inputs_as_bert_for_masked_lm:" in mixin and "dummy_token = torch.full(" in mixin
    roformer = next(r for r in changes.rewrites if r.path.endswith("models/roformer/modeling_roformer.py")).new_text()
    masked_lm = roformer[roformer.index("class RoFormerForMaskedLM") : roformer.index("class RoFormerForCausalLM")]
    # its closed dict dropped the caller's head mask and cross-attention inputs: the member pops them after super()
    assert (
        'assert self.config.pad_token_id is not None, "The PAD token should be defined for generation"\n'
        "        model_inputs = super().prepare_inputs_for_generation(input_ids, **model_kwargs)\n"
        '        for key in ("head_mask", "encoder_hidden_states", "encoder_attention_mask"):\n'
        "            model_inputs.pop(key, None)\n"
        "        return model_inputs\n" in masked_lm
    )
    assert "dummy_token" not in masked_lm
    # `codemod hooks` shows each member as apply --hooks writes it, the popped inputs included
    from codemod.transform.apply import settle
    from codemod.transform.hook_changes import member_plan
    from codemod.transform.hooks import hooked_result

    shown = settle(hooked_result(result, report), member_plan(result, report)).plan
    for member in members:
        assert {e for e in shown.edits() if e.override_id == member} == {
            e for e in changes.plan.edits() if e.override_id == member
        }, member


def test_an_own_condition_is_asked_of_a_method_the_model_overrides(profile: MixinProfile) -> None:
    """The mixin asks ``_generation_needs_first_step_inputs`` with the arguments as given, before it prepares
    anything (the statements that computed the condition read them so), and drops the inputs after the first step
    unless it said yes. The default says no: a model that sets only the attribute drops them after the first step."""
    _, hook, _ = hook_for(Idiom((FIRST, OWN), (NONE, PREPARED, PREPARED, PREPARED)), profile)
    assert hook is not None
    assert "first_step_inputs_needed = self._generation_needs_first_step_inputs(input_ids, **kwargs)" in hook.prologue
    assert "if not is_first_iteration and not first_step_inputs_needed:" in hook.epilogue
    declared = ast.parse(hook.declaration).body
    assert [type(node).__name__ for node in declared] == ["AnnAssign", "FunctionDef"]
    default = declared[1]
    assert isinstance(default, ast.FunctionDef) and default.name == "_generation_needs_first_step_inputs"
    assert ast.unparse(default.body[-1]) == "return False"
    assert max(len(line) for line in (hook.declaration + hook.epilogue).splitlines()) <= 110


@pytest.mark.parametrize(
    ("source", "moved", "method"),
    [
        (
            OWN_CONDITION,
            (0,),
            "def _generation_needs_first_step_inputs(self, input_ids, **kwargs):\n    return legacy\n",
        ),
        # what the statements read besides the ids comes through **kwargs: a parameter of the method, as it defaulted
        (
            OWN_CONDITION_GUARDED,
            (0,),
            "def _generation_needs_first_step_inputs(self, input_ids, image_grid=None, "
            "**kwargs):\n    return legacy\n",
        ),
    ],
)
def test_a_member_with_an_own_condition_is_deleted_and_its_statements_move(
    profile: MixinProfile, source: str, moved: tuple[int, ...], method: str
) -> None:
    f = finding(source, profile)
    idioms = {"image_grid": Idiom((FIRST, OWN), (NONE, PREPARED, PREPARED, PREPARED))}
    change = member_change(f, {"image_grid"}, profile, idioms)
    assert (change.change, change.moved, change.method) == (Change.DELETE, moved, method), change.why
    ast.parse(change.method)


def test_an_own_condition_moves_only_with_every_input_it_passes(profile: MixinProfile) -> None:
    source = own_condition_method(
        LEGACY,
        passes=('model_inputs["image_grid"] = image_grid', 'model_inputs["grid_sizes"] = grid_sizes'),
        params="input_ids, image_grid=None, grid_sizes=None, is_first_iteration=False, **kwargs",
    )
    f = finding(source, profile)
    idiom = Idiom((FIRST, OWN), (NONE, PREPARED, PREPARED, PREPARED))
    assert part_of(f, "grid_sizes", profile).idiom == idiom
    half = member_change(f, {"image_grid"}, profile, {"image_grid": idiom})
    assert half.change is Change.BLOCKED and "move together" in half.why
    assert (
        member_change(f, {"image_grid", "grid_sizes"}, profile, {"image_grid": idiom, "grid_sizes": idiom}).change
        is Change.DELETE
    )


#: three llava-like models of the 4.45 era as a first pass leaves them (super() instead of the language model): the
#: image on the first step or while the prompt takes the legacy path, a test each computes in front of super()
LLAVA_LIKE = '''
"""{name}: a llava-like model (fixture of tests/test_hooks.py)."""

from torch import nn

from ...generation import GenerationMixin
from ...modeling_utils import PreTrainedModel


class {name}ForConditionalGeneration(PreTrainedModel, GenerationMixin):
    def __init__(self, config):
        super().__init__(config)
        self.lm_head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)

    def forward(self, input_ids=None, pixel_values=None, attention_mask=None, position_ids=None, past_key_values=None,
                inputs_embeds=None, use_cache=None, cache_position=None):
        return self.lm_head(inputs_embeds)

    def prepare_inputs_for_generation(self, input_ids, inputs_embeds=None, pixel_values=None, cache_position=None, **kwargs):
        # fewer image tokens than the image has features: the model expands the token itself
        legacy_processing = (
            input_ids is not None
            and (input_ids == self.config.image_token_index).sum(1).max() < self.config.image_seq_length
        )
        model_inputs = super().prepare_inputs_for_generation(
            input_ids, inputs_embeds=inputs_embeds, cache_position=cache_position, **kwargs
        )
        if legacy_processing or cache_position[0] == 0:
            model_inputs["pixel_values"] = pixel_values
        return model_inputs
'''


def test_apply_with_hooks_moves_an_own_condition_into_a_method_of_each_member(tmp_path: Path) -> None:
    """The whole tree, 4.45's shape (a stub mixin): the generic implementation is installed with the hook, which asks
    the model's own method before it prepares anything; each override is deleted and its condition's statements
    stand where it stood, in a method of the class (the comment with them). A second apply changes nothing."""
    from tests.test_plan import checkout_copy

    models = {"ant": "Ant", "bee": "Bee", "cat": "Cat"}
    root = checkout_copy(
        tmp_path / "co", {f"{m}/modeling_{m}.py": LLAVA_LIKE.format(name=n) for m, n in models.items()}
    )
    result = invoke("apply", root, "--hooks", "--only", ",".join(models))
    assert result.exit_code == 0, result.output
    attribute = "_generation_inputs_dropped_after_first_step_unless_needed"
    mixin = (root / MIXIN).read_text(encoding="utf-8")
    assert f"    {attribute} = ()" in mixin
    assert "first_step_inputs_needed = self._generation_needs_first_step_inputs(input_ids, **kwargs)" in mixin
    assert "if cache_position[0] != 0 and not first_step_inputs_needed:" in mixin
    assert mixin.count("def _generation_needs_first_step_inputs(") == 1
    for model in models:
        text = (root / PKG / model / f"modeling_{model}.py").read_text(encoding="utf-8")
        ast.parse(text)
        assert "def prepare_inputs_for_generation" not in text
        assert f'    {attribute} = ("pixel_values",)\n' in text
        method = text[text.index("    def _generation_needs_first_step_inputs(self, input_ids, **kwargs):") :]
        assert method.splitlines()[1:3] == [
            "        # fewer image tokens than the image has features: the model expands the token itself",
            "        return (",
        ]
    ast.parse(mixin)
    before = python_files(root)
    again = invoke("apply", root, "--hooks", "--only", ",".join(models))
    assert again.exit_code == 0, again.output
    assert python_files(root) == before
