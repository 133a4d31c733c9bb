"""Reductions that keep an override's own statements *after* ``super()`` (``Judge.kept_after``).

The shape: the generic boilerplate (slicing, the dict, the position ids) goes, the statements that compute
what the override computes its own way stay as they are, after ``super()``, with those they read from, and
the keys taken from them replace the fallback's. Classified from small hand-written methods in the shapes
of 4.45's Mllama, Qwen2-VL and Bloom; planned and rewritten in a copy of the fixture checkout.
"""

from __future__ import annotations

import ast
import textwrap
from pathlib import Path

import pytest

from codemod.analyse.classify import Action, Category, Extra, classify_override
from codemod.analyse.mixin import MixinProfile, hoisted_profile
from codemod.analyse.recognise import _exposed
from codemod.contracts import ExtraHow
from codemod.transform.apply import initial_plan, settle
from codemod.transform.plan import EditKind, kept_inputs, reduce_override

from .test_classify import override
from .test_plan import checkout_copy, scan_of

#: the generic part the shapes below share: 4.45's slicing, position ids and inputs_embeds idioms
_GENERIC_START = '''
    if past_key_values is not None:
        if inputs_embeds is not None:  # Exception 1
            input_ids = input_ids[:, -cache_position.shape[0] :]
        elif input_ids.shape[1] != cache_position.shape[0]:  # Default case
            input_ids = input_ids[:, cache_position]
'''
_GENERIC_DICT = '''
    # if `inputs_embeds` are passed, we only want to use them in the 1st generation step
    if inputs_embeds is not None and cache_position[0] == 0:
        model_inputs = {"inputs_embeds": inputs_embeds, "input_ids": None}
    else:
        model_inputs = {"input_ids": input_ids.clone(memory_format=torch.contiguous_format), "inputs_embeds": None}
'''
#: 4.45's 4D mask for a static cache, through the module's helper (the hoisted mixin builds the same)
_STATIC_MASK = '''
    if isinstance(past_key_values, StaticCache) and attention_mask.ndim == 2:
        if model_inputs["inputs_embeds"] is not None:
            batch_size, sequence_length, _ = inputs_embeds.shape
            device = inputs_embeds.device
        else:
            batch_size, sequence_length = input_ids.shape
            device = input_ids.device

        dtype = self.lm_head.weight.dtype
        min_dtype = torch.finfo(dtype).min

        attention_mask = _prepare_4d_causal_attention_mask_with_cache_position(
            attention_mask,
            sequence_length=sequence_length,
            target_length=past_key_values.get_max_length(),
            dtype=dtype,
            device=device,
            min_dtype=min_dtype,
            cache_position=cache_position,
            batch_size=batch_size,
        )
'''
_SIGNATURE = '''
def prepare_inputs_for_generation(
    self,
    input_ids,
    past_key_values=None,
    attention_mask=None,
    inputs_embeds=None,
    cache_position=None,
    position_ids=None,
    use_cache=True,
    pixel_values=None,
    **kwargs,
):'''

#: Mllama: the image inputs only while image tokens are left in the (sliced) ids
IMAGE_TOKENS = _SIGNATURE + _GENERIC_START + '''
    if attention_mask is not None and position_ids is None:
        # create position_ids on the fly for batch generation
        position_ids = attention_mask.long().cumsum(-1) - 1
        position_ids.masked_fill_(attention_mask == 0, 1)
        if past_key_values:
            position_ids = position_ids[:, -input_ids.shape[1] :]
''' + _GENERIC_DICT + '''
    model_inputs.update(
        {
            "position_ids": position_ids,
            "cache_position": cache_position,
            "past_key_values": past_key_values,
            "use_cache": use_cache,
            "attention_mask": attention_mask,
        }
    )

    # the images' features are cached in the cross-attention layers after the prefill
    if (input_ids == self.config.image_token_index).any():
        model_inputs["pixel_values"] = pixel_values
    return model_inputs
'''

#: Qwen2-VL: rope positions of its own, from the sliced ids, and the pixels on the first step only
ROPE_POSITIONS = _SIGNATURE + _GENERIC_START + '''
    rope_deltas = kwargs.get("rope_deltas", None)
    if attention_mask is not None and position_ids is None:
        if cache_position[0] == 0:
            position_ids, rope_deltas = self.get_rope_index(input_ids, attention_mask)
        else:
            position_ids = torch.arange(input_ids.shape[1], device=input_ids.device) + rope_deltas
''' + _GENERIC_DICT + _STATIC_MASK + '''
    model_inputs.update(
        {
            "position_ids": position_ids,
            "past_key_values": past_key_values,
            "use_cache": use_cache,
            "attention_mask": attention_mask,
            "pixel_values": pixel_values,
            "rope_deltas": rope_deltas,
        }
    )
    return model_inputs
'''

FORWARD = ("input_ids", "attention_mask", "position_ids", "past_key_values", "inputs_embeds", "use_cache",
           "cache_position", "pixel_values", "rope_deltas")


@pytest.fixture(scope="module")
def hoisted() -> MixinProfile:
    return hoisted_profile()


def _finding(source: str, hoisted: MixinProfile):  # type: ignore[no-untyped-def]
    return classify_override(override(source, forward_params=FORWARD), hoisted)


# ------------------------------------------------------------------------------------------- classify


def test_statements_reading_the_sliced_ids_stay_after_super_with_the_slicing(hoisted: MixinProfile) -> None:
    """Mllama: the image check reads the sliced ids, so the slicing stays with it (after super(), where it
    changes nothing super() prepares); the check sets the dict's keys itself, so no key is re-created."""
    finding = _finding(IMAGE_TOKENS, hoisted)
    assert (finding.category, finding.action) == (Category.BESPOKE, Action.REDUCE)
    assert [e for e in finding.extras if e.how in (ExtraHow.KEEP_AFTER, ExtraHow.COMPUTED)] == [
        Extra("", ExtraHow.KEEP_AFTER, "0,4")]
    notes = [r.text for r in finding.reasons if r.kind == "note"]
    assert "kept as is after super(): if (input_ids == self.config.image_token_index).any(): …" in notes
    assert "bespoke: its own input handling, kept as it is after super(), is model-specific" in notes
    assert not [r for r in finding.reasons if r.kind.keeps]


def test_keys_computed_by_the_kept_statements_are_set_from_them(hoisted: MixinProfile) -> None:
    """Qwen2-VL: position ids and rope deltas of its own replace the mixin's; the rest is the mixin's."""
    finding = _finding(ROPE_POSITIONS, hoisted)
    assert finding.action is Action.REDUCE
    assert [e for e in finding.extras if e.how in (ExtraHow.KEEP_AFTER, ExtraHow.COMPUTED)] == [
        Extra("", ExtraHow.KEEP_AFTER, "0,1,2"),
        Extra("position_ids", ExtraHow.COMPUTED), Extra("rope_deltas", ExtraHow.COMPUTED)]


#: CLVP: position ids of its own only when conditioned on embeddings; otherwise the generic ones it built before
CONDITIONED_POSITIONS = _SIGNATURE + _GENERIC_START + '''
    if attention_mask is not None and position_ids is None:
        position_ids = attention_mask.long().cumsum(-1) - 1
        position_ids.masked_fill_(attention_mask == 0, 1)
        if past_key_values:
            position_ids = position_ids[:, -input_ids.shape[1] :]
    if pixel_values is not None and past_key_values is not None:
        position_ids = torch.tensor([input_ids.shape[-1]], dtype=torch.long, device=input_ids.device)
''' + _GENERIC_DICT + _STATIC_MASK + '''
    model_inputs.update(
        {
            "position_ids": position_ids,
            "past_key_values": past_key_values,
            "use_cache": use_cache,
            "attention_mask": attention_mask,
        }
    )
    return model_inputs
'''


def test_a_key_set_by_a_kept_statement_only_sometimes_keeps_what_set_it_otherwise(hoisted: MixinProfile) -> None:
    """``model_inputs["position_ids"] = position_ids`` after super() reads the name wherever the override did: where
    the model-specific statement did not set it, the generic one before it did, so that one stays too (without
    it the name would be unbound)."""
    finding = _finding(CONDITIONED_POSITIONS, hoisted)
    assert finding.action is Action.REDUCE
    assert [e for e in finding.extras if e.how in (ExtraHow.KEEP_AFTER, ExtraHow.COMPUTED)] == [
        Extra("", ExtraHow.KEEP_AFTER, "0,1,2"), Extra("position_ids", ExtraHow.COMPUTED)]


@pytest.mark.parametrize(
    "source",
    [
        pytest.param('''
            def prepare_inputs_for_generation(self, input_ids, past_key_values=None, attention_mask=None, **kwargs):
                attention_mask = attention_mask[:, -self.config.attention_window_size :]
                position_ids = attention_mask.long().cumsum(-1) - 1
                position_ids.masked_fill_(attention_mask == 0, 1)
                if past_key_values:
                    position_ids = position_ids[:, -input_ids.shape[1] :]
                model_inputs = {"input_ids": input_ids, "position_ids": position_ids}
                model_inputs.update({"past_key_values": past_key_values, "attention_mask": attention_mask})
                return model_inputs
            ''',
            # super() builds the positions from the caller's mask, the override from its cropped one
            id="a-generic-statement-that-goes-reads-what-a-kept-one-computed"),
        pytest.param('''
            def prepare_inputs_for_generation(self, input_ids, past_key_values=None, **kwargs):
                if past_key_values is not None:
                    input_ids = input_ids[:, -1:]
                input_ids = self.remap_vocabulary(input_ids)
                return {"input_ids": input_ids, "past_key_values": past_key_values, **kwargs}
            ''',
            # everything but the dict would stay: not worth a change
            id="most-of-the-method-would-stay"),
        pytest.param('''
            def prepare_inputs_for_generation(self, input_ids, past_key_values=None, inputs_embeds=None, **kwargs):
                if past_key_values is not None:
                    input_ids = input_ids[:, -1:]
                if self.config.remap:
                    input_ids = self.remap_vocabulary(input_ids)
                if inputs_embeds is not None and past_key_values is None:
                    model_inputs = {"inputs_embeds": inputs_embeds}
                else:
                    model_inputs = {"input_ids": input_ids}
                model_inputs.update({"past_key_values": past_key_values, "use_cache": kwargs.get("use_cache")})
                model_inputs.update({"attention_mask": kwargs.get("attention_mask")})
                model_inputs.update({"token_type_ids": kwargs.get("token_type_ids")})
                model_inputs.update({"position_ids": kwargs.get("position_ids")})
                return model_inputs
            ''',
            # the ids it remaps reach the dict through a recognised idiom that records no expression
            id="a-key-computed-from-them-has-no-expression-to-set-it-by"),
        pytest.param('''
            def prepare_inputs_for_generation(self, input_ids, past_key_values=None, **kwargs):
                if self.config.legacy:
                    return {"input_ids": input_ids}
                model_inputs = {"input_ids": input_ids, "past_key_values": past_key_values}
                model_inputs.update({"attention_mask": kwargs.get("attention_mask")})
                model_inputs.update({"use_cache": kwargs.get("use_cache")})
                model_inputs.update({"position_ids": kwargs.get("position_ids")})
                model_inputs.update({"token_type_ids": kwargs.get("token_type_ids")})
                return model_inputs
            ''',
            id="it-returns-early"),
        pytest.param('''
            def prepare_inputs_for_generation(self, input_ids, attention_mask=None, inputs_embeds=None,
                                              cache_position=None, **kwargs):
                if inputs_embeds is not None:
                    input_ids = input_ids[:, -cache_position.shape[0] :]
                elif input_ids.shape[1] != cache_position.shape[0]:
                    input_ids = input_ids[:, cache_position]
                window = attention_mask[:, -self.config.attention_window_size :]
                if inputs_embeds is not None and cache_position[0] == 0:
                    model_inputs = {"inputs_embeds": inputs_embeds, "input_ids": None}
                else:
                    model_inputs = {"input_ids": input_ids.clone(memory_format=torch.contiguous_format), "inputs_embeds": None}
                model_inputs.update(
                    {
                        "attention_mask": window,
                        "cache_position": cache_position,
                        "use_cache": kwargs.get("use_cache"),
                        "position_ids": kwargs.get("position_ids"),
                    }
                )
                return model_inputs
            ''',
            # RecurrentGemma slices with no cache guard (its cache is its own): the mixin slices by what its cache holds
            id="the-ids-are-sliced-without-a-cache-guard"),
    ],
)
def test_no_reduction_after_super(hoisted: MixinProfile, source: str) -> None:
    finding = _finding(source, hoisted)
    assert finding.action is Action.KEEP
    assert not any(e.how in (ExtraHow.KEEP_AFTER, ExtraHow.COMPUTED) for e in finding.extras)


# ------------------------------------------------------------------------------------------- plan


def test_a_parameter_only_the_kept_statements_read_is_not_handed_to_super(hoisted: MixinProfile) -> None:
    """The mixin would pass pixel_values on every step; the kept check passes them only with image tokens."""
    finding = _finding(IMAGE_TOKENS, hoisted)
    reduction = reduce_override(finding.override, finding.extras)
    assert reduction is not None
    assert "pixel_values" not in reduction.keywords
    assert "pixel_values" in reduction.keep_params  # the kept statement reads it: it stays in the signature
    assert reduction.body.startswith("model_inputs = super().prepare_inputs_for_generation(")
    assert reduction.tail == "return model_inputs\n"


def test_computed_keys_follow_the_kept_statements(hoisted: MixinProfile) -> None:
    finding = _finding(ROPE_POSITIONS, hoisted)
    reduction = reduce_override(finding.override, finding.extras)
    assert reduction is not None
    assert reduction.tail == ('model_inputs["position_ids"] = position_ids\n'
                              'model_inputs["rope_deltas"] = rope_deltas\nreturn model_inputs\n')
    # position_ids is an input the mixin prepares (from the mask): it still gets the caller's; pixel_values, passed
    # on as the mixin does, reaches it through **kwargs
    assert "position_ids" in reduction.keywords
    assert "pixel_values" not in reduction.keep_params


# ------------------------------------------------------------------------------------------- rewrite


MODEL = '''
import torch

from ...generation import GenerationMixin
from ...modeling_utils import PreTrainedModel


class MinnowForConditionalGeneration(PreTrainedModel, GenerationMixin):
    _supports_cache_class = True

    def forward(self, input_ids=None, attention_mask=None, position_ids=None, past_key_values=None, inputs_embeds=None,
                use_cache=None, cache_position=None, pixel_values=None):
        return input_ids
'''


def test_the_rewritten_method_keeps_the_statements_after_super_with_their_comments(tmp_path: Path,
                                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CODEMOD_CACHE_DIR", str(tmp_path / "cache"))
    method = textwrap.indent(textwrap.dedent(IMAGE_TOKENS).lstrip("\n"), "    ")
    root = checkout_copy(tmp_path / "co", {"minnow/modeling_minnow.py": textwrap.dedent(MODEL) + "\n" + method})
    result = scan_of(root)
    plan = initial_plan(result)
    oid = next(o.id for o in result.index.overrides if o.class_name == "MinnowForConditionalGeneration")
    edit = next(e for e in plan.edits() if e.override_id == oid)
    assert (edit.kind, edit.keep_after) == (EditKind.REDUCE, (0, 4))
    rewrite = next(r for r in settle(result, plan).rewrites if r.path.endswith("modeling_minnow.py"))
    new = rewrite.new.decode()
    start = new.index("    def prepare_inputs_for_generation(")
    assert new[start:] == '''\
    def prepare_inputs_for_generation(
        self,
        input_ids,
        past_key_values=None,
        inputs_embeds=None,
        cache_position=None,
        use_cache=True,
        pixel_values=None,
        **kwargs,
    ):
        # Overwritten -- then its own input handling (if (input_ids == self.config.image_token_index).any():)
        model_inputs = super().prepare_inputs_for_generation(
            input_ids,
            past_key_values=past_key_values,
            inputs_embeds=inputs_embeds,
            cache_position=cache_position,
            use_cache=use_cache,
            **kwargs,
        )
        if past_key_values is not None:
            if inputs_embeds is not None:  # Exception 1
                input_ids = input_ids[:, -cache_position.shape[0] :]
            elif input_ids.shape[1] != cache_position.shape[0]:  # Default case
                input_ids = input_ids[:, cache_position]

        # the images' features are cached in the cross-attention layers after the prefill
        if (input_ids == self.config.image_token_index).any():
            model_inputs["pixel_values"] = pixel_values
        return model_inputs
'''
    ast.parse(new)


def test_the_overwritten_line_of_a_statement_kept_after_super_heads_the_body_once(tmp_path: Path,
                                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # upstream's own mark above the first statement (5.x's XLM): that statement moves after super(), the mark
    # stays the body's first line, and is not written a second time
    monkeypatch.setenv("CODEMOD_CACHE_DIR", str(tmp_path / "cache"))
    marked = IMAGE_TOKENS.replace(_GENERIC_START, "\n    # Overwritten -- the images go on the prefill only" + _GENERIC_START, 1)
    assert marked != IMAGE_TOKENS
    method = textwrap.indent(textwrap.dedent(marked).lstrip("\n"), "    ")
    root = checkout_copy(tmp_path / "co", {"minnow/modeling_minnow.py": textwrap.dedent(MODEL) + "\n" + method})
    result = scan_of(root)
    rewrite = next(r for r in settle(result, initial_plan(result)).rewrites if r.path.endswith("modeling_minnow.py"))
    new = rewrite.new.decode()
    body = new[new.index("    def prepare_inputs_for_generation("):]
    assert body.count("# Overwritten --") == 1, body
    lines = body.splitlines()
    after_signature = lines.index("    ):") + 1
    assert lines[after_signature].lstrip().startswith("# Overwritten --"), body
    assert lines[after_signature + 1].lstrip().startswith("model_inputs = super().prepare_inputs_for_generation("), body
    ast.parse(new)


# ------------------------------------------------------------------------------------------- the engine


@pytest.mark.parametrize(
    ("code", "exposed"),
    [
        ("x = y + 1", ("y",)),
        ("x = x + 1", ("x",)),  # reads its own name before assigning it
        ("x += 1", ("x",)),
        ("model_inputs['k'] = v", ("model_inputs", "v")),  # a subscript's base is read
        # assigned in both branches, then read: its own
        ("if a:\n    n = 1\nelse:\n    n = 2\nm = n", ("a",)),
        # assigned in one branch only: the read may take it from before
        ("if a:\n    n = 1\nm = n", ("a", "n")),
        # a loop may not run: what it assigns may come from before
        ("for i in r:\n    n = i\nm = n", ("n", "r")),
    ],
)
def test_exposed_reads(code: str, exposed: tuple[str, ...]) -> None:
    import libcst as cst

    statement = cst.parse_module(f"if True:\n{textwrap.indent(code, '    ')}\n").body[0]
    assert isinstance(statement, cst.If)
    # the names of the wrapper's own test are not reads of the code under test
    assert tuple(n for n in _exposed(statement) if n != "True") == exposed


# ------------------------------------------------------------------------------------------- evidence


def test_the_verification_of_a_reduction_needs_what_its_kept_statements_read(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """Mllama's image check, kept after super(), is only exercised by a run that gives it pixel values: its target
    carries that need to the comparison (``runner.Target.needs``; ``compare`` judges it)."""
    from codemod.verify.session import targets_from_plan

    monkeypatch.setenv("CODEMOD_CACHE_DIR", str(tmp_path / "cache"))
    method = textwrap.indent(textwrap.dedent(IMAGE_TOKENS).lstrip("\n"), "    ")
    root = checkout_copy(tmp_path / "co", {"minnow/modeling_minnow.py": textwrap.dedent(MODEL) + "\n" + method})
    result = scan_of(root)
    finding = next(f for f in result.findings if f.override.class_name == "MinnowForConditionalGeneration")
    assert kept_inputs(finding.override, finding.extras) == [frozenset({"pixel_values"})]
    targets, _ = targets_from_plan(result, initial_plan(result))
    target = next(t for t in targets if t.class_name == "MinnowForConditionalGeneration")
    assert target.needs == (frozenset({"pixel_values"}),)
