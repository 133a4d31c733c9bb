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
from codemod.transform.apply import settle
from codemod.transform.plan import EditKind, initial_plan, kept_inputs, reduce_override

from .test_classify import override
from .test_plan import checkout_copy, scan_of

#: the generic part the shapes below share: 4.45's slicing, position ids and inputs_embeds idioms
_GENERIC_START = """
    if past_key_values is not None:
        if inputs_embeds is not None:  # Exception 1
            input_ids = input_ids[:, -cache_position.shape[0] :]
        elif input_ids.shape[1] != cache_position.shape[0]:  # Default case
            input_ids = input_ids[:, cache_position]
"""
_GENERIC_DICT = """
    # if `inputs_embeds` are passed, we only want to use them in the 1st generation step
    if inputs_embeds is not None and cache_position[0] == 0:
        model_inputs = {"inputs_embeds": inputs_embeds, "input_ids": None}
    else:
        model_inputs = {"input_ids": input_ids.clone(memory_format=torch.contiguous_format), "inputs_embeds": None}
"""


def _updated(*keys: str) -> str:
    """The dict's ``update`` with these keys, each from the local of its name, and the return (4.45's layout)."""
    entries = "".join(f'            "{key}": {key},\n' for key in keys)
    return f"\n    model_inputs.update(\n        {{\n{entries}        }}\n    )\n    return model_inputs\n"


#: 4.45's 4D mask for a static cache, through the module's helper (the hoisted mixin builds the same)
_STATIC_MASK = """
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
"""
_SIGNATURE = """
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
):"""

#: Mllama: the image inputs only while image tokens are left in the (sliced) ids
IMAGE_TOKENS = (
    _SIGNATURE
    + _GENERIC_START
    + """
    if attention_mask is not None and position_ids is None:
        # create position_ids on the fly for batch generation
        position_ids = attention_mask.long().cumsum(-1) - 1
        position_ids.masked_fill_(attention_mask == 0, 1)
        if past_key_values:
            position_ids = position_ids[:, -input_ids.shape[1] :]
"""
    + _GENERIC_DICT
    + """
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
"""
)

#: Qwen2-VL: rope positions of its own, from the sliced ids, and the pixels on the first step only
ROPE_POSITIONS = (
    _SIGNATURE
    + _GENERIC_START
    + """
    rope_deltas = kwargs.get("rope_deltas", None)
    if attention_mask is not None and position_ids is None:
        if cache_position[0] == 0:
            position_ids, rope_deltas = self.get_rope_index(input_ids, attention_mask)
        else:
            position_ids = torch.arange(input_ids.shape[1], device=input_ids.device) + rope_deltas
"""
    + _GENERIC_DICT
    + _STATIC_MASK
    + """
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
"""
)

FORWARD = (
    "input_ids",
    "attention_mask",
    "position_ids",
    "past_key_values",
    "inputs_embeds",
    "use_cache",
    "cache_position",
    "pixel_values",
    "rope_deltas",
)


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
        Extra("", ExtraHow.KEEP_AFTER, "0,4")
    ]
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
        Extra("position_ids", ExtraHow.COMPUTED),
        Extra("rope_deltas", ExtraHow.COMPUTED),
    ]


#: CLVP: position ids of its own only when conditioned on embeddings; otherwise the generic ones it built before
CONDITIONED_POSITIONS = (
    _SIGNATURE
    + _GENERIC_START
    + """
    if attention_mask is not None and position_ids is None:
        position_ids = attention_mask.long().cumsum(-1) - 1
        position_ids.masked_fill_(attention_mask == 0, 1)
        if past_key_values:
            position_ids = position_ids[:, -input_ids.shape[1] :]
    if pixel_values is not None and past_key_values is not None:
        position_ids = torch.tensor([input_ids.shape[-1]], dtype=torch.long, device=input_ids.device)
"""
    + _GENERIC_DICT
    + _STATIC_MASK
    + _updated("position_ids", "past_key_values", "use_cache", "attention_mask")
)


def test_a_key_set_by_a_kept_statement_only_sometimes_keeps_what_set_it_otherwise(hoisted: MixinProfile) -> None:
    """``model_inputs["position_ids"] = position_ids`` after super() reads the name wherever the override did: where
    the model-specific statement did not set it, the generic one before it did, so that one stays too (without
    it the name would be unbound)."""
    finding = _finding(CONDITIONED_POSITIONS, hoisted)
    assert finding.action is Action.REDUCE
    assert [e for e in finding.extras if e.how in (ExtraHow.KEEP_AFTER, ExtraHow.COMPUTED)] == [
        Extra("", ExtraHow.KEEP_AFTER, "0,1,2"),
        Extra("position_ids", ExtraHow.COMPUTED),
    ]


@pytest.mark.parametrize(
    "source",
    [
        pytest.param(
            """
            def prepare_inputs_for_generation(self, input_ids, past_key_values=None, attention_mask=None, **kwargs):
                attention_mask = attention_mask[:, -self.config.attention_window_size :]
                position_ids = attention_mask.long().cumsum(-1) - 1
                position_ids.masked_fill_(attention_mask == 0, 1)
                if past_key_values:
                    position_ids = position_ids[:, -input_ids.shape[1] :]
                model_inputs = {"input_ids": input_ids, "position_ids": position_ids}
                model_inputs.update({"past_key_values": past_key_values, "attention_mask": attention_mask})
                return model_inputs
            """,
            # super() builds the positions from the caller's mask, the override from its cropped one
            id="a-generic-statement-that-goes-reads-what-a-kept-one-computed",
        ),
        pytest.param(
            """
            def prepare_inputs_for_generation(self, input_ids, past_key_values=None, **kwargs):
                if past_key_values is not None:
                    input_ids = input_ids[:, -1:]
                input_ids = self.remap_vocabulary(input_ids)
                return {"input_ids": input_ids, "past_key_values": past_key_values, **kwargs}
            """,
            # everything but the dict would stay: not worth a change
            id="most-of-the-method-would-stay",
        ),
        pytest.param(
            """
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
            """,
            # the ids it remaps reach the dict through a recognised idiom that records no expression
            id="a-key-computed-from-them-has-no-expression-to-set-it-by",
        ),
        pytest.param(
            """
            def prepare_inputs_for_generation(self, input_ids, past_key_values=None, **kwargs):
                if self.config.legacy:
                    return {"input_ids": input_ids}
                model_inputs = {"input_ids": input_ids, "past_key_values": past_key_values}
                model_inputs.update({"attention_mask": kwargs.get("attention_mask")})
                model_inputs.update({"use_cache": kwargs.get("use_cache")})
                model_inputs.update({"position_ids": kwargs.get("position_ids")})
                model_inputs.update({"token_type_ids": kwargs.get("token_type_ids")})
                return model_inputs
            """,
            id="it-returns-early",
        ),
        pytest.param(
            """
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
            """,
            # RecurrentGemma slices with no cache guard (its cache is its own): the mixin slices by what its cache holds
            id="the-ids-are-sliced-without-a-cache-guard",
        ),
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
    assert reduction.tail == (
        'model_inputs["position_ids"] = position_ids\nmodel_inputs["rope_deltas"] = rope_deltas\nreturn model_inputs\n'
    )
    # position_ids is an input the mixin prepares (from the mask): it still gets the caller's; pixel_values, passed
    # on as the mixin does, reaches it through **kwargs
    assert "position_ids" in reduction.keywords
    assert "pixel_values" not in reduction.keep_params


# ------------------------------------------------------------------------------------------- rewrite


MODEL = """
import torch

from ...generation import GenerationMixin
from ...modeling_utils import PreTrainedModel


class MinnowForConditionalGeneration(PreTrainedModel, GenerationMixin):
    _supports_cache_class = True

    def forward(self, input_ids=None, attention_mask=None, position_ids=None, past_key_values=None, inputs_embeds=None,
                use_cache=None, cache_position=None, pixel_values=None):
        return input_ids
"""


def test_the_rewritten_method_keeps_the_statements_after_super_with_their_comments(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
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
    assert (
        new[start:]
        == """\
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
"""
    )
    ast.parse(new)


def test_the_overwritten_line_of_a_statement_kept_after_super_heads_the_body_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # upstream's own mark above the first statement (5.x's XLM): that statement moves after super(), the mark
    # stays the body's first line, and is not written a second time
    monkeypatch.setenv("CODEMOD_CACHE_DIR", str(tmp_path / "cache"))
    marked = IMAGE_TOKENS.replace(
        _GENERIC_START, "\n    # Overwritten -- the images go on the prefill only" + _GENERIC_START, 1
    )
    assert marked != IMAGE_TOKENS
    method = textwrap.indent(textwrap.dedent(marked).lstrip("\n"), "    ")
    root = checkout_copy(tmp_path / "co", {"minnow/modeling_minnow.py": textwrap.dedent(MODEL) + "\n" + method})
    result = scan_of(root)
    rewrite = next(r for r in settle(result, initial_plan(result)).rewrites if r.path.endswith("modeling_minnow.py"))
    new = rewrite.new.decode()
    body = new[new.index("    def prepare_inputs_for_generation(") :]
    assert body.count("# Overwritten --") == 1, body
    lines = body.splitlines()
    after_signature = lines.index("    ):") + 1
    assert lines[after_signature].lstrip().startswith("# Overwritten --"), body
    assert lines[after_signature + 1].lstrip().startswith("model_inputs = super().prepare_inputs_for_generation("), (
        body
    )
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


def test_the_verification_of_a_reduction_needs_what_its_kept_statements_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
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


# ------------------------------------------------------------------------------------------- what the fallback does
# inside what stays: the ids' slicing goes from a kept statement (``ExtraHow.CUT``), and a read of the ids only for
# their device needs no slicing kept (``TopLevel.placement_reads``)

#: 4.45's legacy slicing by the cache's length, inside a block guarded by the cache (8 spaces in)
_PAST_LENGTH_SLICING = """
        past_length = past_key_values[0][0].shape[2]

        # Some generation methods already pass only the last input ID
        if input_ids.shape[1] > past_length:
            remove_prefix_length = past_length
        else:
            # Default to old behavior: keep only final ID
            remove_prefix_length = input_ids.shape[1] - 1

        input_ids = input_ids[:, remove_prefix_length:]"""

#: CLVP: its own position ids read the ids only for their length before the slicing and their device after it
DEVICE_ONLY = (
    _SIGNATURE
    + """
    ids_length = input_ids.shape[-1]
    token_type_ids = kwargs.get("token_type_ids", None)
    if past_key_values:"""
    + _PAST_LENGTH_SLICING
    + """
        if token_type_ids is not None:
            token_type_ids = token_type_ids[:, -input_ids.shape[1] :]
    if pixel_values is not None and past_key_values is not None:
        position_ids = torch.tensor([ids_length], dtype=torch.long, device=input_ids.device)
"""
    + _GENERIC_DICT
    + _updated("position_ids", "past_key_values", "use_cache", "token_type_ids")
)

#: RoCBert: its own inputs cut to the last token in the block that also slices the ids
OWN_INPUTS_IN_THE_SLICING_BLOCK = (
    """
def prepare_inputs_for_generation(self, input_ids, shape_ids=None, past_key_values=None, attention_mask=None, **kwargs):
    if attention_mask is None:
        attention_mask = input_ids.new_ones(input_ids.shape)

    # cut decoder_input_ids if past_key_values is used
    if past_key_values is not None:"""
    + _PAST_LENGTH_SLICING
    + """
        if shape_ids is not None:
            shape_ids = shape_ids[:, -1:]

    return {
        "input_ids": input_ids,
        "shape_ids": shape_ids,
        "attention_mask": attention_mask,
        "past_key_values": past_key_values,
    }
"""
)

#: RoCBert's forward: no position ids the mixin would build
OWN_FORWARD = ("input_ids", "shape_ids", "attention_mask", "past_key_values")

#: Jamba: one branch slices the ids, the other makes its cache, in front of the generic part
CACHE_IN_THE_OTHER_BRANCH = (
    _SIGNATURE
    + """
    empty_past_kv = past_key_values is None

    # If we have cache: let's slice `input_ids` through `cache_position`, to keep only the unprocessed tokens
    if not empty_past_kv:
        if inputs_embeds is not None:  # Exception 1
            input_ids = input_ids[:, -cache_position.shape[0] :]
        elif input_ids.shape[1] != cache_position.shape[0]:  # Default case
            input_ids = input_ids[:, cache_position]
    else:
        past_key_values = HybridCache(self.config, input_ids.shape[0], self.dtype, device=self.device)

    if attention_mask is not None and position_ids is None:
        position_ids = attention_mask.long().cumsum(-1) - 1
        position_ids.masked_fill_(attention_mask == 0, 1)
        if not empty_past_kv:
            position_ids = position_ids[:, -input_ids.shape[1] :]

    if inputs_embeds is not None and empty_past_kv:
        model_inputs = {"inputs_embeds": inputs_embeds}
    else:
        model_inputs = {"input_ids": input_ids.contiguous()}
"""
    + _updated("position_ids", "past_key_values", "use_cache", "attention_mask", "cache_position")
)


def test_a_read_of_the_ids_only_for_their_device_keeps_no_slicing(hoisted: MixinProfile) -> None:
    """CLVP: the conditioning positions take the ids' device; a slice lives where the ids do, so neither the slicing
    nor the ``token_type_ids`` it cut along (the mixin cuts them itself) stays after super()."""
    finding = _finding(DEVICE_ONLY, hoisted)
    assert finding.action is Action.REDUCE
    assert [e for e in finding.extras if e.how in (ExtraHow.KEEP_AFTER, ExtraHow.COMPUTED, ExtraHow.CUT)] == [
        Extra("", ExtraHow.KEEP_AFTER, "0,3"),
        Extra("position_ids", ExtraHow.COMPUTED),
    ]


def test_the_ids_slicing_is_cut_out_of_a_block_kept_after_super(hoisted: MixinProfile) -> None:
    """RoCBert: the block stays for its own inputs; the ids' slicing in it goes, and so does the key that passed the
    sliced ids on (the mixin's sliced ids stand)."""
    finding = classify_override(override(OWN_INPUTS_IN_THE_SLICING_BLOCK, forward_params=OWN_FORWARD), hoisted)
    assert finding.action is Action.REDUCE
    assert [e for e in finding.extras if e.how in (ExtraHow.KEEP_AFTER, ExtraHow.COMPUTED, ExtraHow.CUT)] == [
        Extra("input_ids", ExtraHow.CUT, "7"),
        Extra("", ExtraHow.KEEP_AFTER, "1"),
        Extra("shape_ids", ExtraHow.COMPUTED),
    ]


def test_the_ids_slicing_is_cut_out_of_a_statement_kept_in_front_of_super(hoisted: MixinProfile) -> None:
    finding = _finding(CACHE_IN_THE_OTHER_BRANCH, hoisted)
    assert finding.action is Action.REDUCE
    assert [e for e in finding.extras if e.how in (ExtraHow.KEEP_STATEMENTS, ExtraHow.CUT)] == [
        Extra("", ExtraHow.CUT, "17"),
        Extra("", ExtraHow.KEEP_STATEMENTS, "0,1"),
    ]


#: RoCBert's shape with more of the generic dict: worth reducing even with its slicing kept, so that a case the cut
#: refuses still reduces, the slicing and the sliced ids' key kept
_LONGER_DICT = OWN_INPUTS_IN_THE_SLICING_BLOCK.replace(
    """        "past_key_values": past_key_values,
    }""",
    """        "past_key_values": past_key_values,
        "use_cache": kwargs.get("use_cache"),
        "token_type_ids": kwargs.get("token_type_ids"),
    }""",
)


@pytest.mark.parametrize(
    ("source", "computed"),
    [
        pytest.param(
            _LONGER_DICT.replace("shape_ids = shape_ids[:, -1:]", "shape_ids = self.shapes_of(input_ids)"),
            ("input_ids", "shape_ids"),
            # the block reads the sliced ids after the slicing: they must stay sliced there
            id="the-block-reads-the-sliced-ids-after-it",
        ),
        pytest.param(
            _LONGER_DICT.replace(
                '"shape_ids": shape_ids,', '"shape_ids": shape_ids,\n        "ids_length": input_ids.shape[1],'
            ),
            ("ids_length", "input_ids", "shape_ids"),
            # a key the reduction sets reads the sliced ids
            id="a-key-reads-the-sliced-ids",
        ),
    ],
)
def test_no_cut(hoisted: MixinProfile, source: str, computed: tuple[str, ...]) -> None:
    assert source != _LONGER_DICT
    forward = (*OWN_FORWARD, "use_cache", "token_type_ids", "ids_length")
    finding = classify_override(override(source, forward_params=forward), hoisted)
    # still reduced, the slicing kept in its block and the sliced ids set from it
    assert finding.action is Action.REDUCE
    assert [e for e in finding.extras if e.how in (ExtraHow.KEEP_AFTER, ExtraHow.COMPUTED, ExtraHow.CUT)] == [
        Extra("", ExtraHow.KEEP_AFTER, "1"),
        *(Extra(key, ExtraHow.COMPUTED) for key in computed),
    ]


def test_the_longer_shape_is_cut_too(hoisted: MixinProfile) -> None:
    """The control for ``test_no_cut``: the same method without what refuses the cut is cut."""
    finding = classify_override(
        override(_LONGER_DICT, forward_params=(*OWN_FORWARD, "use_cache", "token_type_ids")), hoisted
    )
    assert Extra("input_ids", ExtraHow.CUT, "7") in finding.extras


MODEL_WITH_OWN_INPUTS = MODEL.replace("pixel_values=None):", "pixel_values=None, shape_ids=None):")


@pytest.mark.parametrize(
    ("method", "after"),
    [
        pytest.param(
            OWN_INPUTS_IN_THE_SLICING_BLOCK,
            """\
    def prepare_inputs_for_generation(self, input_ids, shape_ids=None, past_key_values=None, **kwargs):
        # Overwritten -- then its own input handling (shape_ids = shape_ids[:, -1:]); its own shape_ids from them
        model_inputs = super().prepare_inputs_for_generation(input_ids, past_key_values=past_key_values, **kwargs)

        if past_key_values is not None:
            if shape_ids is not None:
                shape_ids = shape_ids[:, -1:]
        model_inputs["shape_ids"] = shape_ids
        return model_inputs
""",
            id="after-super",
        ),
        pytest.param(
            CACHE_IN_THE_OTHER_BRANCH,
            """\
    def prepare_inputs_for_generation(
        self, input_ids, past_key_values=None, inputs_embeds=None, cache_position=None, use_cache=True, **kwargs
    ):
        # Overwritten -- its own input handling first (empty_past_kv = past_key_values is None)
        empty_past_kv = past_key_values is None

        if empty_past_kv:
            past_key_values = HybridCache(self.config, input_ids.shape[0], self.dtype, device=self.device)
        return super().prepare_inputs_for_generation(
            input_ids,
            past_key_values=past_key_values,
            inputs_embeds=inputs_embeds,
            cache_position=cache_position,
            use_cache=use_cache,
            **kwargs,
        )
""",
            id="in-front-of-super",
        ),
    ],
)
def test_the_rewritten_method_has_no_slicing_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, method: str, after: str
) -> None:
    monkeypatch.setenv("CODEMOD_CACHE_DIR", str(tmp_path / "cache"))
    body = textwrap.indent(textwrap.dedent(method).lstrip("\n"), "    ")
    root = checkout_copy(
        tmp_path / "co", {"minnow/modeling_minnow.py": textwrap.dedent(MODEL_WITH_OWN_INPUTS) + "\n" + body}
    )
    result = scan_of(root)
    rewrite = next(r for r in settle(result, initial_plan(result)).rewrites if r.path.endswith("modeling_minnow.py"))
    new = rewrite.new.decode()
    assert new[new.index("    def prepare_inputs_for_generation(") :] == after
    ast.parse(new)


@pytest.mark.parametrize(
    ("code", "placed"),
    [
        ("p = torch.tensor([n], device=input_ids.device)", ("input_ids",)),
        ("p = torch.zeros(2, dtype=mask.dtype, device=mask.device)", ("mask",)),
        ("p = torch.tensor([input_ids.shape[1]], device=input_ids.device)", ()),  # its length is a value read
        ("p = input_ids", ()),
        ("x += y.device", ("y",)),  # ``x``, read by the augmented assignment, is no placement read
    ],
)
def test_placement_reads(code: str, placed: tuple[str, ...]) -> None:
    import libcst as cst

    from codemod.analyse.recognise import _placement_reads

    statement = cst.parse_module(code + "\n").body[0]
    assert isinstance(statement, cst.SimpleStatementLine)
    assert _placement_reads(statement, _exposed(statement)) == placed


@pytest.mark.parametrize(
    ("code", "touched"),
    [
        # read, indexed, sliced, an attribute read, arithmetic: the objects stay as they were
        ("ids = ids[:, -cache_position.shape[0] :]", ()),
        ("if past is not None:\n    ids = ids[:, cache_position]", ()),
        ("delta = cache_position[0] + rope_deltas", ()),
        # a method of it called, it handed to a call (positionally or by keyword), stored into or through, in place,
        # deleted
        ("cache_position.add_(1)", ("cache_position",)),
        ("x.a.b(1)", ("x",)),
        ("mask = build(mask, cache_position=cache_position)", ("cache_position", "mask")),
        ("n = len(ids.shape)", ("ids",)),
        ("model_inputs['k'] = v", ("model_inputs",)),
        ("self.config.k = 5", ("self",)),
        ("if a:\n    cache_position += 1", ("cache_position",)),
        ("total += cache_position[0]", ("total",)),  # read to add to another name: only that one changes
        ("del cache", ("cache",)),
    ],
)
def test_touched(code: str, touched: tuple[str, ...]) -> None:
    """``TopLevel.touched``: what a statement between super() and the statements a hook removes may change of what
    they read (``codemod.transform.hooks._unaffected_by``)."""
    import libcst as cst

    from codemod.analyse.recognise import _touched

    statement = cst.parse_module(code + "\n").body[0]
    assert isinstance(statement, (cst.SimpleStatementLine, cst.BaseCompoundStatement))
    assert _touched(statement) == touched


# ------------------------------------------------------------------------------------------- when the cut differs


def test_an_uncut_repair_puts_the_slicing_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A cut verification finds different is no reason to lose the whole reduction: ``Repair(uncut=True)`` plans it
    as it was before cuts, the slicing kept in its block and the sliced ids set again."""
    from codemod.contracts import Repair

    monkeypatch.setenv("CODEMOD_CACHE_DIR", str(tmp_path / "cache"))
    body = textwrap.indent(textwrap.dedent(OWN_INPUTS_IN_THE_SLICING_BLOCK).lstrip("\n"), "    ")
    root = checkout_copy(
        tmp_path / "co", {"minnow/modeling_minnow.py": textwrap.dedent(MODEL_WITH_OWN_INPUTS) + "\n" + body}
    )
    result = scan_of(root)
    oid = next(o.id for o in result.index.overrides if o.class_name == "MinnowForConditionalGeneration")
    cut = next(e for e in initial_plan(result).edits() if e.override_id == oid)
    uncut = next(e for e in initial_plan(result, {oid: Repair(uncut=True)}).edits() if e.override_id == oid)
    assert cut.cuts and not uncut.cuts
    assert (cut.kind, cut.keep_after) == (uncut.kind, uncut.keep_after) == (EditKind.REDUCE, (1,))
    assert 'model_inputs["input_ids"] = input_ids' not in cut.text
    assert uncut.text.index('model_inputs["input_ids"] = input_ids') < uncut.text.index('model_inputs["shape_ids"]')


def test_a_cut_that_does_not_verify_is_planned_uncut_and_verified_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from codemod import migrate
    from codemod.checkout import resolve
    from codemod.contracts import Verdict
    from codemod.migrate import run_migration_on
    from codemod.verify.compare import ClassVerdict
    from codemod.verify.session import VerifyReport

    monkeypatch.setenv("CODEMOD_CACHE_DIR", str(tmp_path / "cache"))
    body = textwrap.indent(textwrap.dedent(OWN_INPUTS_IN_THE_SLICING_BLOCK).lstrip("\n"), "    ")
    root = checkout_copy(
        tmp_path / "co", {"minnow/modeling_minnow.py": textwrap.dedent(MODEL_WITH_OWN_INPUTS) + "\n" + body}
    )
    written = root / "src/transformers/models/minnow/modeling_minnow.py"
    seen: list[bool] = []

    def verify_change(checkout, targets, **kwargs):  # the slicing is what this model needs: without it, it differs
        sliced = "remove_prefix_length" in written.read_text()
        seen.append(sliced)
        verdicts = tuple(
            ClassVerdict(
                t.override_id,
                Verdict.IDENTICAL if sliced or "Minnow" not in t.override_id else Verdict.DIFFERS,
                detail="greedy: tokens differ",
            )
            for t in targets
        )
        return VerifyReport(verdicts, tuple(targets), (), "cpu", "python", 1.0, "HEAD")

    monkeypatch.setattr(migrate, "verify_change", verify_change)
    run = run_migration_on(resolve(root, with_git=False))
    assert seen == [False, True]
    assert "MinnowForConditionalGeneration" not in {h.subject.rsplit("::", 1)[-1] for h in run.reverted}
    edit = next(
        e
        for e in run.final.plan.edits()
        if e.override_id and e.override_id.endswith("::MinnowForConditionalGeneration")
    )
    assert edit.kind is EditKind.REDUCE and not edit.cuts
    assert "remove_prefix_length" in written.read_text()


# ------------------------------------------------------------------------------------------- set back to the caller's


@pytest.mark.parametrize("key", ["attention_mask", "position_ids", "token_type_ids"])
def test_an_input_set_back_to_the_callers_value_after_super_is_an_extra(hoisted: MixinProfile, key: str) -> None:
    """A first pass's repair (Chameleon's mask as the caller gives it, not the 4D one the mixin makes for a static
    cache) read again by a second pass: the override keeps doing something the mixin does not."""
    source = f'''
def prepare_inputs_for_generation(self, input_ids, {key}=None, **kwargs):
    model_inputs = super().prepare_inputs_for_generation(input_ids, {key}={key}, **kwargs)
    model_inputs["{key}"] = {key}
    return model_inputs
'''
    finding = _finding(source, hoisted)
    assert Extra(key, ExtraHow.PASSTHROUGH, key) in finding.extras
    assert finding.action is not Action.DELETE


def test_an_input_the_mixin_passes_as_given_set_back_after_super_is_no_extra(hoisted: MixinProfile) -> None:
    """``use_cache`` reaches forward as the caller gives it: setting it back changes nothing."""
    source = """
def prepare_inputs_for_generation(self, input_ids, use_cache=None, **kwargs):
    model_inputs = super().prepare_inputs_for_generation(input_ids, use_cache=use_cache, **kwargs)
    model_inputs["use_cache"] = use_cache
    return model_inputs
"""
    assert _finding(source, hoisted).extras == ()
