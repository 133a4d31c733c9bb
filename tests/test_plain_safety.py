"""Plain ``diff``/``apply`` (no verification follows) holds back or repairs the changes whose effect on generation
only verification would see (``codemod.analyse.plain_safety``, issue 41): on small synthetic models in a copy of the
fixture checkout, each fact against a twin without it (the no-op case says why it stays a change).
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from codemod.analyse import plain_safety
from codemod.analyse.classify import Action
from codemod.analyse.scan import ScanResult, scan
from codemod.checkout import resolve
from codemod.contracts import HeldCause
from codemod.transform.plan import Plan, initial_plan

from .conftest import MINI_CHECKOUT, copy_fixture

PKG = "src/transformers/models"
HEADER = """
import torch

from ...generation import GenerationMixin
from ...modeling_utils import PreTrainedModel

"""


@pytest.fixture(autouse=True)
def _private_cache(codemod_cache: Path) -> None:
    """Every test scans with a private cache dir."""


def scanned(tmp_path: Path, model: str, body: str) -> ScanResult:
    """A copy of the fixture checkout with ``modeling_<model>.py`` holding ``body`` (dedented)."""
    root = copy_fixture(MINI_CHECKOUT, tmp_path / "co")
    folder = root / PKG / model
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text("", encoding="utf-8")
    (folder / f"modeling_{model}.py").write_text(HEADER.lstrip("\n") + textwrap.dedent(body), encoding="utf-8")
    return scan(resolve(root, with_git=False), use_cache=False, jobs=1)


def oid(model: str, cls: str) -> str:
    return f"{PKG}/{model}/modeling_{model}.py::{cls}"


def plans(result: ScanResult) -> tuple[Plan, Plan]:
    """The plain plan (held back what only verification proves) and the one ``--verify`` starts from."""
    return initial_plan(result, hold_unproven=True), initial_plan(result)


# --------------------------------------------------------------------------------------------- held back

#: the ids rewritten (a delay pattern, as Musicgen's decoders apply) before the last-token cut
REWRITES_IDS = """
class RookForCausalLM(PreTrainedModel, GenerationMixin):
    def forward(self, input_ids=None, past_key_values=None, attention_mask=None, use_cache=None):
        return input_ids

    def prepare_inputs_for_generation(self, input_ids, past_key_values=None, attention_mask=None, use_cache=None, **kwargs):
        input_ids = self.apply_pattern(input_ids)
        if past_key_values is not None:
            input_ids = input_ids[:, -1:]
        return {"input_ids": input_ids, "past_key_values": past_key_values, "attention_mask": attention_mask, "use_cache": use_cache}
"""
#: the same cut of the ids generate() gives: the mixin's cut by cache_position is the same in every flow it runs
KEEPS_IDS = REWRITES_IDS.replace("        input_ids = self.apply_pattern(input_ids)\n", "")
#: the ids and the positions built from the mask cut to the last token together (Fuyu)
CUTS_POSITIONS = """
class RookForCausalLM(PreTrainedModel, GenerationMixin):
    def forward(self, input_ids=None, past_key_values=None, attention_mask=None, position_ids=None, use_cache=None):
        return input_ids

    def prepare_inputs_for_generation(self, input_ids, past_key_values=None, attention_mask=None, **kwargs):
        if past_key_values:
            input_ids = input_ids[:, -1:]
        position_ids = kwargs.get("position_ids", None)
        if attention_mask is not None and position_ids is None:
            position_ids = attention_mask.long().cumsum(-1) - 1
            position_ids.masked_fill_(attention_mask == 0, 1)
            if past_key_values:
                position_ids = position_ids[:, -1].unsqueeze(-1)
        return {"input_ids": input_ids, "position_ids": position_ids, "past_key_values": past_key_values, "attention_mask": attention_mask}
"""


#: decoder ids without encoder_outputs: generate() does not run it as an encoder-decoder (Musicgen-Melody's composite)
NOT_ENCODER_DECODER = """
class RookForConditionalGeneration(PreTrainedModel, GenerationMixin):
    def forward(self, input_ids=None, decoder_input_ids=None, encoder_hidden_states=None, past_key_values=None, attention_mask=None, use_cache=None):
        return decoder_input_ids

    def prepare_inputs_for_generation(self, decoder_input_ids, encoder_hidden_states=None, past_key_values=None, attention_mask=None, use_cache=None, **kwargs):
        if past_key_values is not None:
            decoder_input_ids = decoder_input_ids[:, -1:]
        return {"input_ids": None, "encoder_hidden_states": encoder_hidden_states, "past_key_values": past_key_values, "decoder_input_ids": decoder_input_ids, "attention_mask": attention_mask, "use_cache": use_cache}
"""
#: decoder ids a composite's generate() makes, and inputs_embeds it passes (SeamlessM4T's text-to-unit model)
DRIVEN_WITH_EMBEDDINGS = """
class RookForConditionalGeneration(PreTrainedModel, GenerationMixin):
    def forward(self, input_ids=None, inputs_embeds=None, attention_mask=None, decoder_input_ids=None, encoder_outputs=None, past_key_values=None, use_cache=None):
        return decoder_input_ids

    def prepare_inputs_for_generation(self, decoder_input_ids, past_key_values=None, attention_mask=None, use_cache=None, encoder_outputs=None, **kwargs):
        if past_key_values is not None:
            decoder_input_ids = decoder_input_ids[:, -1:]
        return {"input_ids": None, "encoder_outputs": encoder_outputs, "past_key_values": past_key_values, "decoder_input_ids": decoder_input_ids, "attention_mask": attention_mask, "use_cache": use_cache}


class RookSpeech(PreTrainedModel):
    def __init__(self, config):
        super().__init__(config)
        self.t2u = RookForConditionalGeneration(config)

    def generate(self, embeds, **kwargs):
        kwargs["decoder_input_ids"] = torch.zeros((1, 1), dtype=torch.long)
        return self.t2u.generate(inputs_embeds=embeds, **kwargs)
"""


@pytest.mark.parametrize(
    ("body", "cls", "why"),
    [
        pytest.param(REWRITES_IDS, "RookForCausalLM", "rewrites input_ids", id="ids-rewritten-before-the-cut"),
        pytest.param(
            CUTS_POSITIONS, "RookForCausalLM", "the positions it builds to the last token", id="positions-cut-with-ids"
        ),
        pytest.param(NOT_ENCODER_DECODER, "RookForConditionalGeneration", "no encoder_outputs", id="not-enc-dec"),
        pytest.param(
            DRIVEN_WITH_EMBEDDINGS, "RookForConditionalGeneration", "decoder ids a generate() makes", id="given-embeds"
        ),
        # no-op: the cut is of generate()'s own ids, which the mixin cuts the same way (the held-back reason, if
        # any, is another one)
        pytest.param(KEEPS_IDS, "RookForCausalLM", None, id="noop-ids-as-given"),
    ],
)
def test_plain_holds_back_a_cut_the_mixin_makes_otherwise(
    tmp_path: Path, body: str, cls: str, why: str | None
) -> None:
    result = scanned(tmp_path, "rook", body)
    target = oid("rook", cls)
    plain, verified = plans(result)
    held = {h.subject: h for h in plain.held}
    assert verified.action_of(target) is not Action.KEEP  # --verify still tries it
    if why is None:
        assert target not in held or why_of(held[target].detail) is None
        return
    assert plain.action_of(target) is Action.KEEP
    assert held[target].cause is HeldCause.UNPROVEN
    assert why in held[target].detail
    assert held[target].detail.startswith("unproven without --verify: ")


def why_of(detail: str) -> str | None:
    """The plain_safety reason in a held-back text (None where another check held it)."""
    markers = (
        "rewrites input_ids",
        "the positions it builds",
        "expands the ids",
        "no encoder_outputs",
        "a generate()",
    )
    return next((m for m in markers if m in detail), None)


# --------------------------------------------------------------------------------------------- repaired

#: a decoder whose composite generates through it with a key the old closed dict dropped (CLVP's return_dict)
DRIVEN = """
class RookDecoder(PreTrainedModel, GenerationMixin):
    def forward(self, input_ids=None, past_key_values=None, attention_mask=None, use_cache=None, return_dict=None):
        return input_ids

    def prepare_inputs_for_generation(self, input_ids, past_key_values=None, attention_mask=None, **kwargs):
        if past_key_values is not None:
            input_ids = input_ids[:, -1:]
        return {"input_ids": input_ids, "past_key_values": past_key_values, "attention_mask": attention_mask, "use_cache": kwargs.get("use_cache")}


class RookComposite(PreTrainedModel):
    def __init__(self, config):
        super().__init__(config)
        self.decoder = RookDecoder(config)

    def generate(self, input_ids, generation_config=None):
        return self.decoder.generate(input_ids, generation_config=generation_config, KEYWORD=True)
"""


@pytest.mark.parametrize(
    ("keyword", "dropped"),
    [
        pytest.param("return_dict", True, id="composite-key-dropped-after-super"),
        # no-op: generate() takes output_hidden_states into its generation config: it never reaches the override
        pytest.param("output_hidden_states", False, id="noop-generate-consumes-it"),
    ],
)
def test_a_key_a_composite_passes_is_dropped_as_the_old_dict_did(tmp_path: Path, keyword: str, dropped: bool) -> None:
    result = scanned(tmp_path, "rook", DRIVEN.replace("KEYWORD", keyword))
    target = oid("rook", "RookDecoder")
    for plan in plans(result):
        bodies = "".join(edit.text for edit in plan.edits() if edit.override_id == target)
        assert (f'pop("{keyword}", None)' in bodies) is dropped
        assert plan.action_of(target) is not Action.KEEP


# --------------------------------------------------------------------------------------------- the facts, from text

COMPOSITE = """
class Part:
    pass


class Whole:
    def __init__(self):
        self.part = Part()

    def generate(self, ids):
        kwargs = {}
        kwargs["decoder_input_ids"] = ids[:, :1]
        return self.part.generate(ids, return_dict=True, max_new_tokens=3, **kwargs)


class Other:
    def generate(self, ids):
        return self.something.generate(ids, flag=True)
"""


@pytest.mark.parametrize(
    ("cls", "keys", "ids_given"),
    [
        pytest.param("Part", {"return_dict"}, True, id="driven-by-whole"),
        # no-op: no class of the file names Other and drives it (Other drives something else)
        pytest.param("Other", set(), False, id="noop-drives-but-not-driven"),
        # no-op: Whole's own generate() calls a part's; nothing in the file drives Whole
        pytest.param("Whole", set(), True, id="own-generate-gives-decoder-ids"),
    ],
)
def test_driven_keywords_and_given_decoder_ids(cls: str, keys: set[str], ids_given: bool) -> None:
    text = textwrap.dedent(COMPOSITE)
    assert plain_safety.driven_keywords(plain_safety.parsed(text), cls) == keys
    assert plain_safety.gives_decoder_ids(plain_safety.parsed(text), cls) is ids_given


#: an encoder-decoder whose own generate() gives the decoder ids (SeamlessM4T's target-language start token)
GIVES_DECODER_IDS = """
class RookForConditionalGeneration(PreTrainedModel, GenerationMixin):
    def forward(self, input_ids=None, attention_mask=None, decoder_input_ids=None, encoder_outputs=None, past_key_values=None, use_cache=None):
        return decoder_input_ids

    def prepare_inputs_for_generation(self, decoder_input_ids, past_key_values=None, attention_mask=None, use_cache=None, encoder_outputs=None, **kwargs):
        if past_key_values is not None:
            decoder_input_ids = decoder_input_ids[:, -1:]
        return {"input_ids": None, "encoder_outputs": encoder_outputs, "past_key_values": past_key_values, "decoder_input_ids": decoder_input_ids, "attention_mask": attention_mask, "use_cache": use_cache}

    def generate(self, input_ids, **kwargs):
        return super().generate(input_ids, decoder_input_ids=torch.zeros((1, 1), dtype=torch.long), **kwargs)
"""


@pytest.mark.parametrize(
    ("body", "withheld"),
    [
        pytest.param(GIVES_DECODER_IDS, True, id="generate-gives-decoder-ids"),
        # no-op: the caller's decoder ids grow with the cache; the mixin's cut by cache_position is the old one
        pytest.param(GIVES_DECODER_IDS.split("    def generate")[0], False, id="noop-caller-gives-them"),
    ],
)
def test_decoder_ids_a_generate_makes_keep_cache_position_from_super(
    tmp_path: Path, body: str, withheld: bool
) -> None:
    result = scanned(tmp_path, "rook", body)
    target = oid("rook", "RookForConditionalGeneration")
    for plan in plans(result):
        assert plan.action_of(target) is not Action.KEEP
        bodies = "".join(edit.text for edit in plan.edits() if edit.override_id == target)
        assert ('kwargs.pop("cache_position", None)' in bodies) is withheld


#: a composite whose kept statements read a parameter of its own that its closed dict never passed (Musicgen's
#: decoder_delay_pattern_mask); its forward takes it only through **kwargs, where it goes is not known
OWN_PARAMETER = """
class RookForConditionalGeneration(PreTrainedModel, GenerationMixin):
    def forward(self, input_ids=None, decoder_input_ids=None, encoder_outputs=None, past_key_values=None, attention_mask=None, use_cache=None, FORWARD):
        return decoder_input_ids

    def prepare_inputs_for_generation(self, decoder_input_ids, past_key_values=None, attention_mask=None, use_cache=None, encoder_outputs=None, pattern=None, **kwargs):
        if pattern is None:
            decoder_input_ids, pattern = self.build_pattern(decoder_input_ids)
        decoder_input_ids = self.apply_pattern(decoder_input_ids, pattern)
        if past_key_values is not None:
            past_length = past_key_values[0][0].shape[2]
            if decoder_input_ids.shape[1] > past_length:
                remove_prefix_length = past_length
            else:
                remove_prefix_length = decoder_input_ids.shape[1] - 1
            decoder_input_ids = decoder_input_ids[:, remove_prefix_length:]
        return {"input_ids": None, "encoder_outputs": encoder_outputs, "past_key_values": past_key_values, "decoder_input_ids": decoder_input_ids, "attention_mask": attention_mask, "use_cache": use_cache}
"""


@pytest.mark.parametrize(
    ("forward", "passed"),
    [
        pytest.param("**kwargs", False, id="forward-kwargs-only"),
        # no-op: forward names the parameter: a reduction may hand it on (verification compares what it does)
        pytest.param("pattern=None, **kwargs", True, id="noop-forward-names-it"),
    ],
)
def test_a_parameter_forward_takes_only_through_kwargs_stays_out(tmp_path: Path, forward: str, passed: bool) -> None:
    result = scanned(tmp_path, "rook", OWN_PARAMETER.replace("FORWARD", forward))
    target = oid("rook", "RookForConditionalGeneration")
    plan = initial_plan(result)
    bodies = "".join(edit.text for edit in plan.edits() if edit.override_id == target)
    assert "super().prepare_inputs_for_generation(" in bodies
    assert ("pattern=pattern" in bodies) is passed
