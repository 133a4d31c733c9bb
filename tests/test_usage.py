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

from tests.test_tiny import _run, verify_env  # noqa: F401 - the session fixture, shared

USAGE = Path(__file__).resolve().parent.parent / "codemod" / "verify" / "usage.py"

SCRIPT = textwrap.dedent(
    r'''
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
    print("RESULT " + json.dumps(out))
    '''
)


def test_usage_imports_only_stdlib_torch_and_transformers() -> None:
    tree = ast.parse(USAGE.read_text(encoding="utf-8"))
    roots = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names}
    roots |= {node.module.split(".")[0] for node in ast.walk(tree)
              if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module}
    assert roots <= set(sys.stdlib_module_names) | {"torch", "transformers"}, roots


@pytest.fixture(scope="module")
def usage_results(verify_env, tmp_path_factory) -> dict:  # noqa: F811 - the shared fixture
    return _run(verify_env, SCRIPT, tmp_path_factory.mktemp("usage"))


@pytest.mark.network
@pytest.mark.slow
@pytest.mark.parametrize("name", ["RobertaForCausalLM", "BertLMHeadModel", "BertGenerationDecoder"])
def test_a_decoder_head_of_an_encoder_family_is_built_as_a_decoder_with_its_other_uses_as_variants(usage_results,
                                                                                                   name) -> None:
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
        ("GPT2LMHeadModel", "a decoder-only model ignores is_decoder"),
        ("LlamaForCausalLM", "a decoder-only model ignores is_decoder"),
        ("BartForConditionalGeneration", "an encoder-decoder's decoder is inside it"),
    ],
)
def test_classes_that_are_used_as_their_defaults_say_are_left_as_they_are(usage_results, name, why) -> None:
    found = usage_results[name]
    assert "is_decoder" not in found["primary"], why
    assert not {"is_decoder=False", "cross-attention", "encoder-decoder"} & set(found["variants"]), why


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
    assert "image_seq_length and video_seq_length" in required["VideoLlavaForConditionalGeneration"]["multimodal-legacy"]
    assert required["InheritsLlava"] == required["LlavaForConditionalGeneration"]
    for name in ("LlavaOnevisionForConditionalGeneration", "ChameleonForConditionalGeneration", "GPT2LMHeadModel"):
        assert required[name] == {}, name
    # Phi-3's cache reset runs only where a sequence passes original_max_position_embeddings: the long-rope variant
    assert set(required["Phi3ForCausalLM"]) == {"long-rope/greedy"}
