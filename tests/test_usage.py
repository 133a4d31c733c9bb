"""How classes are used (``codemod/verify/usage.py``): the settings and variants a tiny model gets.

Runs in the 4.45.2 verification environment, like ``tests/test_tiny.py``: one script decides the
variants of a set of real classes, builds the composite, and prints what it found.
"""

from __future__ import annotations

import ast
import sys
import textwrap
from pathlib import Path

import pytest

from tests.test_tiny import _run

USAGE = Path(__file__).resolve().parent.parent / "codemod" / "verify" / "usage.py"

SCRIPT = textwrap.dedent(
    r"""
    import importlib, json, warnings
    warnings.filterwarnings("ignore")
    import torch
    torch.set_num_threads(1)
    import tiny, usage

    CLASSES = {
        "RobertaForCausalLM": "transformers.models.roberta.modeling_roberta",
        "BertLMHeadModel": "transformers.models.bert.modeling_bert",
        "BertForMaskedLM": "transformers.models.bert.modeling_bert",
        "GPT2LMHeadModel": "transformers.models.gpt2.modeling_gpt2",
        "LlamaForCausalLM": "transformers.models.llama.modeling_llama",
        "BartForConditionalGeneration": "transformers.models.bart.modeling_bart",
        "BertGenerationDecoder": "transformers.models.bert_generation.modeling_bert_generation",
        "GPTBigCodeForCausalLM": "transformers.models.gpt_bigcode.modeling_gpt_bigcode",
        "Phi3ForCausalLM": "transformers.models.phi3.modeling_phi3",
    }
    out = {}
    for name, module in CLASSES.items():
        cls = getattr(importlib.import_module(module), name)
        chosen = {}
        def primary(c, config):
            chosen.update(usage.primary_settings(c, config))
            return chosen
        model, notes = tiny.tiny_model(cls, seed=0, primary=primary)
        variants = usage.variants(cls, model.config, dict(chosen))
        out[name] = {"primary": chosen, "is_decoder": model.config.is_decoder,
                     "variants": [v.name for v in variants],
                     "scenarios": {v.name: list(v.scenarios) if v.scenarios else None for v in variants}}

    # each variant of GPTBigCode builds a model whose cache has that variant's layout (the rank of a layer's tensor)
    cls = getattr(importlib.import_module(CLASSES["GPTBigCodeForCausalLM"]), "GPTBigCodeForCausalLM")
    ranks = {}
    for variant in usage.variants(cls, tiny.tiny_model(cls, seed=0)[0].config, {}):
        if not (variant.primary or variant.name.startswith("multi_query")):
            continue  # (its cross-attention variants do not build with one shared head: "not implemented for MQA")
        model, _ = tiny.tiny_model(cls, seed=0, settings=variant.settings)
        with torch.no_grad():
            cache = model(torch.tensor([[3, 4, 5]]), use_cache=True).past_key_values
        ranks[variant.name] = cache[0].dim()
    out["layouts"] = ranks

    # Phi-3's long-rope variant: the switch to the long factors happens inside a scenario's sequence, and its
    # override drops the cache that step (the prepared dict has no cache at that step, the ids are all of them)
    cls = getattr(importlib.import_module(CLASSES["Phi3ForCausalLM"]), "Phi3ForCausalLM")
    (variant,) = [v for v in usage.variants(cls, tiny.tiny_model(cls, seed=0)[0].config, {}) if v.name == "long-rope"]
    model, _ = tiny.tiny_model(cls, seed=0, settings=variant.settings)
    steps = []
    original = model.prepare_inputs_for_generation
    def record_steps(*args, **kwargs):
        prepared = original(*args, **kwargs)
        steps.append([prepared["input_ids"].shape[1], prepared.get("past_key_values") is None])
        return prepared
    model.prepare_inputs_for_generation = record_steps
    inputs = tiny.generation_inputs(model, seed=0)
    with torch.no_grad():
        model.generate(**inputs, max_new_tokens=4, min_new_tokens=4, do_sample=False)
    out["long_rope"] = {"prompt": inputs["input_ids"].shape[1], "steps": steps,
                        "original": model.config.original_max_position_embeddings}

    # the composite: a decoder head with cross-attention inside an EncoderDecoderModel generates
    cls = getattr(importlib.import_module(CLASSES["RobertaForCausalLM"]), "RobertaForCausalLM")
    decoder, _ = tiny.tiny_model(cls, seed=0, settings={"is_decoder": True, "add_cross_attention": True})
    composite = usage.encoder_decoder(decoder, seed=0)
    inputs = tiny.generation_inputs(composite, seed=0)
    seen = []
    original = composite.decoder.prepare_inputs_for_generation
    def record(*args, **kwargs):
        prepared = original(*args, **kwargs)
        seen.append(sorted(k for k, v in prepared.items() if v is not None))
        return prepared
    composite.decoder.prepare_inputs_for_generation = record
    with torch.no_grad():
        tokens = composite.generate(**inputs, max_new_tokens=4, min_new_tokens=4, do_sample=False)
    out["composite"] = {"shape": list(tokens.shape), "decoder_calls": len(seen), "cached": "past_key_values" in seen[-1]}

    # the scenarios a class's own code requires: the llava family's legacy prompt path
    required = {}
    for name, module in (("LlavaForConditionalGeneration", "llava"), ("VideoLlavaForConditionalGeneration", "video_llava"),
                         ("LlavaOnevisionForConditionalGeneration", "llava_onevision"),
                         ("ChameleonForConditionalGeneration", "chameleon"), ("GPT2LMHeadModel", "gpt2"),
                         ("Phi3ForCausalLM", "phi3")):
        cls = getattr(importlib.import_module(f"transformers.models.{module}.modeling_{module}"), name)
        required[name] = usage.required_scenarios(cls)
    class InheritsLlava(getattr(importlib.import_module("transformers.models.llava.modeling_llava"),
                                "LlavaForConditionalGeneration")):
        pass
    required["InheritsLlava"] = usage.required_scenarios(InheritsLlava)
    out["required"] = required

    # the wrappers run with another decoder too, built around the same encoder; it generates
    wrappers = {}
    for name, module in (("VisionEncoderDecoderModel", "vision_encoder_decoder"),
                         ("EncoderDecoderModel", "encoder_decoder")):
        cls = getattr(importlib.import_module(f"transformers.models.{module}.modeling_{module}"), name)
        model, _ = tiny.tiny_model(cls, seed=0)
        found = {}
        for variant in usage.variants(cls, model.config, {}):
            if not (variant.composite or "").startswith(usage.OTHER_DECODER):
                continue
            rebuilt = usage.with_decoder(model, variant.composite[len(usage.OTHER_DECODER):], seed=0)
            inputs = tiny.generation_inputs(rebuilt, seed=0)
            with torch.no_grad():
                tokens = rebuilt.generate(**inputs, max_new_tokens=3, min_new_tokens=3, do_sample=False)
            found[variant.name] = {"decoder": type(rebuilt.decoder).__name__, "encoder": type(rebuilt.encoder).__name__,
                                   "same_encoder": rebuilt.encoder is model.encoder, "new_tokens": tokens.shape[1] - 1,
                                   "scenarios": list(variant.scenarios or ())}
        wrappers[name] = {"own": model.config.decoder.model_type, "others": found}
    out["wrappers"] = wrappers
    print("RESULT " + json.dumps(out))
    """
)


def test_usage_imports_only_stdlib_torch_and_transformers() -> None:
    tree = ast.parse(USAGE.read_text(encoding="utf-8"))
    roots = {
        alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names
    }
    roots |= {
        node.module.split(".")[0]
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module
    }
    assert roots <= set(sys.stdlib_module_names) | {"torch", "transformers"}, roots


@pytest.fixture(scope="module")
def usage_results(verify_env, tmp_path_factory) -> dict:  # noqa: F811 - the shared fixture
    return _run(verify_env, SCRIPT, tmp_path_factory.mktemp("usage"))


@pytest.mark.network
@pytest.mark.slow
@pytest.mark.parametrize("name", ["RobertaForCausalLM", "BertLMHeadModel", "BertGenerationDecoder"])
def test_a_decoder_head_of_an_encoder_family_is_built_as_a_decoder_with_its_other_uses_as_variants(
    usage_results, name
) -> None:
    """Built from defaults these heads are plain encoders that never cache: a user generating with
    them sets is_decoder=True, and may also run them without it or under an encoder."""
    found = usage_results[name]
    assert found["primary"] == {"is_decoder": True} and found["is_decoder"] is True
    assert found["variants"][0] == "as-used"
    assert {"is_decoder=False", "cross-attention", "encoder-decoder"} <= set(found["variants"])
    assert "greedy-no-cache" in found["scenarios"]["encoder-decoder"]


@pytest.mark.network
@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("BertForMaskedLM", "a masked LM generates as an encoder"),
        ("LlamaForCausalLM", "a decoder-only model ignores is_decoder, and attends to no encoder"),
        ("BartForConditionalGeneration", "an encoder-decoder's decoder is inside it"),
    ],
)
def test_classes_that_are_used_as_their_defaults_say_are_left_as_they_are(usage_results, name, why) -> None:
    found = usage_results[name]
    assert "is_decoder" not in found["primary"], why
    assert not {"is_decoder=False", "cross-attention", "encoder-decoder"} & set(found["variants"]), why


@pytest.mark.network
@pytest.mark.slow
def test_a_decoder_only_head_with_cross_attention_also_runs_as_the_decoder_of_a_wrapper(usage_results) -> None:
    """GPT-2 needs no ``is_decoder`` (its primary settings stay its own), yet attends to an encoder with
    ``add_cross_attention``: ViT-GPT2 and bert2gpt2 run it as the decoder of a wrapper, which asks its method for
    the mask (none, where BERT's makes one of ones)."""
    found = usage_results["GPT2LMHeadModel"]
    assert "is_decoder" not in found["primary"]
    assert {"cross-attention", "encoder-decoder"} <= set(found["variants"])


@pytest.mark.network
@pytest.mark.slow
@pytest.mark.parametrize(
    ("name", "own", "other"), [("VisionEncoderDecoderModel", "gpt2", "bert"), ("EncoderDecoderModel", "bert", "gpt2")]
)
def test_a_wrapper_also_runs_with_the_decoder_it_was_not_built_with(usage_results, name, own, other) -> None:
    """A wrapper's verdict on its default decoder says nothing of another: 4.45's pass the decoder's own mask, which
    BERT's method makes and GPT-2's does not (VisionEncoderDecoderModel was called identical on GPT-2 alone)."""
    wrapper = usage_results["wrappers"][name]
    assert wrapper["own"] == own
    (variant,) = wrapper["others"].values()
    assert variant["decoder"] == {"bert": "BertLMHeadModel", "gpt2": "GPT2LMHeadModel"}[other]
    assert variant["same_encoder"] and variant["new_tokens"] == 3
    assert {"greedy", "left-padded-batch", "assisted"} <= set(variant["scenarios"])


@pytest.mark.network
@pytest.mark.slow
def test_sdpa_models_also_run_eagerly(usage_results) -> None:
    assert "eager" in usage_results["LlamaForCausalLM"]["variants"]


@pytest.mark.network
@pytest.mark.slow
def test_the_composite_generates_through_the_decoders_method_with_a_cache(usage_results) -> None:
    composite = usage_results["composite"]
    assert composite["shape"] == [1, 1 + 4]  # the decoder start token, then the new ones
    assert composite["decoder_calls"] == 4 and composite["cached"]


@pytest.mark.network
@pytest.mark.slow
def test_a_cache_layout_switch_runs_the_other_layout_too(usage_results) -> None:
    """GPTBigCode reads its past length by ``config.multi_query``: the default (one shared head, a layer's
    cache a 3-d tensor) and the other value (a head each, 4-d) both reach the code, the slicing scenarios
    on the second."""
    found = usage_results["GPTBigCodeForCausalLM"]
    assert "multi_query=False" in found["variants"]
    assert {"left-padded-batch", "assisted", "prefilled-cache"} <= set(found["scenarios"]["multi_query=False"])
    layouts = usage_results["layouts"]
    assert (layouts["as-used"], layouts["multi_query=False"]) == (3, 4)
    # a model with no such switch gets no such variant
    assert not [v for v in usage_results["LlamaForCausalLM"]["variants"] if v.startswith("multi_query")]


@pytest.mark.network
@pytest.mark.slow
def test_a_long_context_rope_the_class_reads_switches_within_the_scenarios(usage_results) -> None:
    """Phi-3's override drops its cache the step a sequence passes ``original_max_position_embeddings`` (4,096 in a
    tiny config: never). The long-rope variant puts that step at the second new token: the whole sequence again,
    without a cache, then one token at a time."""
    found = usage_results["Phi3ForCausalLM"]
    assert "long-rope" in found["variants"] and "long" in found["scenarios"]["long-rope"]
    long_rope = usage_results["long_rope"]
    assert (long_rope["prompt"], long_rope["original"]) == (7, 8)
    assert long_rope["steps"] == [[7, False], [1, False], [9, True], [1, False]], long_rope["steps"]
    # a class whose code does not read the original length gets no such variant
    assert "long-rope" not in usage_results["LlamaForCausalLM"]["variants"]


@pytest.mark.network
@pytest.mark.slow
def test_a_class_whose_method_reads_image_seq_length_requires_the_legacy_prompt(usage_results) -> None:
    """4.45's LLaVA and Video-LLaVA compare the prompt's image (and video) tokens with the config's
    ``image_seq_length``/``video_seq_length``: only the legacy prompt takes that path, so it is required
    (``compare.unrun``). A class that inherits the method requires it too; others do not."""
    required = usage_results["required"]
    assert set(required["LlavaForConditionalGeneration"]) == {"multimodal-legacy"}
    assert "image_seq_length" in required["LlavaForConditionalGeneration"]["multimodal-legacy"]
    assert (
        "image_seq_length and video_seq_length" in required["VideoLlavaForConditionalGeneration"]["multimodal-legacy"]
    )
    assert required["InheritsLlava"] == required["LlavaForConditionalGeneration"]
    for name in ("LlavaOnevisionForConditionalGeneration", "ChameleonForConditionalGeneration", "GPT2LMHeadModel"):
        assert required[name] == {}, name
    # Phi-3's cache reset runs only where a sequence passes original_max_position_embeddings: the long-rope variant
    assert set(required["Phi3ForCausalLM"]) == {"long-rope/greedy"}


# ------------------------------------------------------------------- the wrappers' other decoders, without torch


class _Sub:
    def __init__(self, model_type: str) -> None:
        self.model_type = model_type


class _WrapperConfig:
    is_encoder_decoder = True

    def __init__(self, decoder: str) -> None:
        self.decoder = _Sub(decoder)


class _Wrapper:
    def __init__(self, config=None, encoder=None, decoder=None) -> None:  # type: ignore[no-untyped-def]
        pass


class _NotAWrapper:
    def __init__(self, config) -> None:  # type: ignore[no-untyped-def]
        pass


@pytest.mark.parametrize(
    ("own", "others"),
    [("gpt2", ["decoder=bert"]), ("bert", ["decoder=gpt2"]), ("trocr", ["decoder=bert", "decoder=gpt2"])],
)
def test_a_wrapper_gets_a_variant_per_decoder_kind_its_config_does_not_use(own: str, others: list[str]) -> None:
    from codemod.verify import usage

    variants = usage.other_decoders(_Wrapper, _WrapperConfig(own))
    assert [v.name for v in variants] == others
    assert all(v.composite == usage.OTHER_DECODER + v.name.split("=")[1] for v in variants)
    assert all(set(v.scenarios or ()) == set(usage.ENCODER_DECODER_SCENARIOS) for v in variants)


@pytest.mark.parametrize(
    ("cls", "config", "why"),
    [
        (_NotAWrapper, _WrapperConfig("gpt2"), "built from a config alone: not built around any decoder"),
        (_Wrapper, _Sub("bert"), "no decoder config to read its kind from"),
    ],
)
def test_not_a_wrapper(cls: type, config: object, why: str) -> None:
    from codemod.verify import usage

    assert usage.other_decoders(cls, config) == [], why
