"""The scenarios that give inputs closed dicts dropped, on real 4.45.2 classes. Head masks: the masks it gives are the shapes each ``forward`` takes (the
decoder's for a decoder-only model and for ``decoder_head_mask``/``cross_attn_head_mask``, the encoder's for an
encoder-decoder's ``head_mask``; Musicgen's composites take ``decoder_head_mask`` through ``**kwargs``, which
their forwards hand to the decoder), and they change the next-token logits, so a deletion that starts (or stops)
passing them shows. Also the reason the scenario exists: a closed dict of 4.45.2 (GPT-2's) drops the caller's
head mask, the generic mixin forwards it. Decoder embeddings (``decoder-inputs-embeds``): BART's and T5's
closed dicts drop them and generate from the decoder start id, so a forward beside those ids refuses them once
the mixin passes them on; the scenario's embeddings are ones the model runs with. Caller position ids
(``position-ids``): GPT-2's override replaced them by None. Run as ``tests/test_tiny.py`` runs its checks
(``network``, ``slow``). A decoder prompt's mask (``decoder-prompt``): Speech2Text's dict left it out. A cache the
caller filled (``prefilled-cache``): ProphetNet cuts the first step's ids to the last token.
"""

from __future__ import annotations

import textwrap

import pytest

from tests.test_tiny import _ok, _run

pytestmark = [pytest.mark.network, pytest.mark.slow]

CHECKS = textwrap.dedent(
    r"""
    import importlib, json, traceback, warnings
    warnings.filterwarnings("ignore")
    import torch
    torch.set_num_threads(1)
    import tiny, scenarios
    from input_scenarios import HEAD_MASKS, decoder_start_ids

    out = {}
    CLASSES = {
        "gpt2": ("transformers.models.gpt2.modeling_gpt2", "GPT2LMHeadModel"),
        "bert": ("transformers.models.bert.modeling_bert", "BertLMHeadModel"),
        "bart": ("transformers.models.bart.modeling_bart", "BartForConditionalGeneration"),
        "bart_causal": ("transformers.models.bart.modeling_bart", "BartForCausalLM"),
        "t5": ("transformers.models.t5.modeling_t5", "T5ForConditionalGeneration"),
        "musicgen": ("transformers.models.musicgen.modeling_musicgen", "MusicgenForCausalLM"),
        "musicgen_composite": ("transformers.models.musicgen.modeling_musicgen", "MusicgenForConditionalGeneration"),
        "melody_composite": ("transformers.models.musicgen_melody.modeling_musicgen_melody",
                             "MusicgenMelodyForConditionalGeneration"),
        "llama": ("transformers.models.llama.modeling_llama", "LlamaForCausalLM"),
    }

    def check(module, name):
        cls = getattr(importlib.import_module(module), name)
        model, _ = tiny.tiny_model(cls, seed=0)
        try:
            kwargs = scenarios.head_masks(model, None, 0)
        except scenarios.Skip as skip:
            return {"skipped": str(skip)}
        masks = {k: list(v.shape) for k, v in kwargs.items() if k in HEAD_MASKS}
        inputs = {k: v for k, v in kwargs.items() if k not in HEAD_MASKS and k != "do_sample"}
        inputs.update(decoder_start_ids(model, inputs))
        with torch.no_grad():
            plain = model(**inputs).logits[:, -1]
            masked = model(**inputs, **{k: v for k, v in kwargs.items() if k in HEAD_MASKS}).logits[:, -1]
        result = {"masks": masks, "moved": float((plain - masked).abs().max())}
        if name == "GPT2LMHeadModel":
            ids = inputs["input_ids"]
            prepared = model.prepare_inputs_for_generation(ids, attention_mask=torch.ones_like(ids),
                                                           head_mask=kwargs["head_mask"], use_cache=True)
            result["prepared_keys"] = sorted(prepared)
        return result

    def dropped(module, name, scenario, key):
        # the scenario's kwargs, and what 4.45.2's own override makes of the input at the first step
        cls = getattr(importlib.import_module(module), name)
        model, _ = tiny.tiny_model(cls, seed=0)
        kwargs = scenario(model, None, 0)
        given = kwargs[key]
        ids = kwargs.get("input_ids")
        if model.config.is_encoder_decoder:
            start = model.generation_config.decoder_start_token_id
            batch = next(v for v in kwargs.values() if torch.is_tensor(v)).shape[0]
            ids = kwargs.get("decoder_input_ids", torch.full((batch, 1), start, dtype=torch.long))
        skip = ("input_ids", "decoder_input_ids", "do_sample")
        prepared = model.prepare_inputs_for_generation(ids, **{k: v for k, v in kwargs.items() if k not in skip},
                                                       cache_position=torch.arange(ids.shape[1]), use_cache=True)
        try:
            with torch.no_grad():
                ran = model.generate(**kwargs, max_new_tokens=3, min_new_tokens=3).shape[1]
        except Exception as error:
            ran = f"{type(error).__name__}: {error}"
        return {"shape": list(given.shape), "prepared": prepared.get(key) is not None, "generated": ran}

    for key, (module, name, scenario, input_name) in {
        "bart_embeds": ("transformers.models.bart.modeling_bart", "BartForConditionalGeneration",
                        scenarios.decoder_inputs_embeds, "decoder_inputs_embeds"),
        "t5_embeds": ("transformers.models.t5.modeling_t5", "T5ForConditionalGeneration",
                      scenarios.decoder_inputs_embeds, "decoder_inputs_embeds"),
        "s2t_prompt": ("transformers.models.speech_to_text.modeling_speech_to_text", "Speech2TextForConditionalGeneration",
                       scenarios.decoder_prompt, "decoder_attention_mask"),
        "gpt2_positions": ("transformers.models.gpt2.modeling_gpt2", "GPT2LMHeadModel", scenarios.position_ids, "position_ids"),
        "llama_positions": ("transformers.models.llama.modeling_llama", "LlamaForCausalLM", scenarios.position_ids,
                            "position_ids"),
    }.items():
        try:
            out[key] = {"ok": True, **dropped(module, name, scenario, input_name)}
        except Exception as error:
            out[key] = {"ok": False, "error": f"{type(error).__name__}: {error}", "tb": traceback.format_exc()[-1500:]}

    def prefilled(module, name):
        # the ids the first step prepares when the caller's cache holds the prompt's first tokens
        cls = getattr(importlib.import_module(module), name)
        model, _ = tiny.tiny_model(cls, seed=0)
        kwargs = scenarios.prefilled_cache(model, None, 0)
        calls = scenarios.record_calls(model)
        with torch.no_grad():
            model.generate(**kwargs, max_new_tokens=3, min_new_tokens=3)
        return {"prompt": list(kwargs["input_ids"].shape), "first_ids": calls[0]["input_ids"]["tensor"]}

    for key, (module, name) in {
        "prophetnet_prefilled": ("transformers.models.prophetnet.modeling_prophetnet", "ProphetNetForCausalLM"),
        "llama_prefilled": ("transformers.models.llama.modeling_llama", "LlamaForCausalLM"),
    }.items():
        try:
            out[key] = {"ok": True, **prefilled(module, name)}
        except Exception as error:
            out[key] = {"ok": False, "error": f"{type(error).__name__}: {error}", "tb": traceback.format_exc()[-1500:]}

    for key, (module, name) in CLASSES.items():
        try:
            out[key] = {"ok": True, **check(module, name)}
        except Exception as error:
            out[key] = {"ok": False, "error": f"{type(error).__name__}: {error}", "tb": traceback.format_exc()[-1500:]}
    print("RESULT " + json.dumps(out))
    """
)


@pytest.fixture(scope="module")
def results(verify_env, tmp_path_factory: pytest.TempPathFactory) -> dict:
    return _run(verify_env, CHECKS, tmp_path_factory.mktemp("head_masks"))


@pytest.mark.parametrize(
    ("name", "masks"),
    [
        ("gpt2", {"head_mask"}),
        ("bert", {"head_mask"}),
        ("bart_causal", {"head_mask", "cross_attn_head_mask"}),
        ("bart", {"head_mask", "decoder_head_mask", "cross_attn_head_mask"}),
        ("t5", {"head_mask", "decoder_head_mask", "cross_attn_head_mask"}),
        ("musicgen", {"head_mask", "cross_attn_head_mask"}),
        # the composites name no head mask: their forwards hand ``decoder_*`` keywords to the decoder
        ("musicgen_composite", {"decoder_head_mask"}),
        ("melody_composite", {"decoder_head_mask"}),
    ],
)
def test_masks_fit_the_stack_they_are_for(results: dict, name: str, masks: set[str]) -> None:
    """Each mask the forward names, of the (layers, heads) its stack has: the scenario built them only after a
    forward ran with them, and the logits check below runs them again."""
    entry = _ok(results, name)
    assert "masks" in entry and set(entry["masks"]) == masks, entry
    for key, shape in entry["masks"].items():
        assert len(shape) == 2 and shape[0] >= 1 and shape[1] >= 2, (key, shape)


@pytest.mark.parametrize("name", ["gpt2", "bert", "bart", "t5", "musicgen", "musicgen_composite", "melody_composite"])
def test_masks_move_the_logits(results: dict, name: str) -> None:
    """A mask that changed nothing would let a dropped or added mask pass unseen: with the attention the model
    runs by default, as the scenario runs it (SDPA falls back to eager for a head mask)."""
    entry = _ok(results, name)
    assert entry["moved"] > 1e-4, entry


def test_a_model_without_head_masks_skips(results: dict) -> None:
    entry = _ok(results, "llama")
    assert "skipped" in entry and "head mask" in entry["skipped"], entry


def test_gpt2s_closed_dict_drops_the_callers_head_mask(results: dict) -> None:
    """Why the scenario exists: 4.45.2's GPT-2 override returns a closed dict without ``head_mask``, so
    ``generate(head_mask=...)`` ran unmasked; the generic mixin would pass it on."""
    entry = _ok(results, "gpt2")
    assert "head_mask" not in entry["prepared_keys"], entry


@pytest.mark.parametrize("name", ["bart_embeds", "t5_embeds"])
def test_decoder_embeddings_are_dropped_by_the_old_dicts(results: dict, name: str) -> None:
    """4.45.2's BART and T5 generate with the caller's decoder embeddings by ignoring them: the scenario is one
    the old side runs, and one where the mixin (which forwards them beside the decoder ids) crashes."""
    entry = _ok(results, name)
    assert entry["prepared"] is False and isinstance(entry["generated"], int) and entry["generated"] >= 4, entry
    assert len(entry["shape"]) == 3 and entry["shape"][1] == 1, entry


def test_gpt2_replaces_the_callers_positions_by_none(results: dict) -> None:
    entry = _ok(results, "gpt2_positions")
    assert entry["prepared"] is False and entry["shape"] == [2, 7], entry
    assert isinstance(entry["generated"], int), entry


def test_llama_hands_the_callers_positions_on(results: dict) -> None:
    """The mixin's idiom: what a deletion of GPT-2's override would do with them. (4.45.2's Llama then fails
    a few steps on, a mask and positions of other lengths: the scenario is one its old code cannot run, so a
    deletion that makes it run is an extension, and one that fails alike is no evidence.)"""
    entry = _ok(results, "llama_positions")
    assert entry["prepared"] is True, entry
    assert isinstance(entry["generated"], str) and "size of tensor" in entry["generated"], entry


def test_speech2text_drops_the_callers_decoder_mask(results: dict) -> None:
    """The decoder prompt's mask, one token masked out, which 4.45.2's Speech2Text override leaves out (its
    decoder attends to every prompt token); the mixin forwards it."""
    entry = _ok(results, "s2t_prompt")
    assert entry["prepared"] is False and entry["shape"] == [2, 3], entry
    assert isinstance(entry["generated"], int) and entry["generated"] >= 6, entry


def test_a_prefilled_cache_tells_a_last_token_cut_from_the_mixins_slice(results: dict) -> None:
    """``prefilled-cache``: the caller's cache holds 4 of the prompt's 7 tokens. Llama's override (as the mixin)
    prepares the 3 it has not seen; 4.45.2's ProphetNet cuts the ids to the last token whenever there is a cache,
    so a deletion of its override changes what such a call generates."""
    llama, prophetnet = _ok(results, "llama_prefilled"), _ok(results, "prophetnet_prefilled")
    assert llama["prompt"] == prophetnet["prompt"] == [1, 7]
    assert llama["first_ids"] == [1, 3], llama
    assert prophetnet["first_ids"] == [1, 1], prophetnet
