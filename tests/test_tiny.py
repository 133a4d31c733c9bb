"""Tiny random models (the package ``codemod/verify/tiny``): built, fed and run in the verification environment.

``tiny`` runs where torch is (the environment made for a release by ``codemod.environment``),
not in the repo's own venv: every torch check here is a script run in a subprocess with
PYTHONPATH = ``<release>/src`` + ``codemod/verify``. One script runs all the model checks and
prints one JSON document; the tests read it. The environment and the release are made once per
machine (the first run downloads them: ``network``, ``slow``).
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
TINY = REPO / "codemod" / "verify" / "tiny"
VERSION = "4.45.2"

# ----------------------------------------------------------------------------------- the script

CHECKS = textwrap.dedent(
    r"""
    import hashlib, importlib, json, sys, traceback, warnings
    warnings.filterwarnings("ignore")
    import torch
    torch.set_num_threads(1)
    import tiny

    G = dict(max_new_tokens=6, min_new_tokens=6, do_sample=False)
    out = {}

    def load(module, name):
        return getattr(importlib.import_module(module), name)

    def state_hash(model):
        digest = hashlib.sha256()
        for key, value in sorted(model.state_dict().items()):
            digest.update(key.encode())
            digest.update(value.detach().contiguous().float().numpy().tobytes())
        return digest.hexdigest()

    def generate(model, **kwargs):
        with torch.no_grad():
            return model.generate(**kwargs, **G).tolist()

    def run(name, fn):
        try:
            out[name] = {"ok": True, **fn()}
        except tiny.TinyModelError as error:
            out[name] = {"ok": False, "tiny_error": str(error)}
        except Exception as error:
            out[name] = {"ok": False, "error": f"{type(error).__name__}: {error}", "tb": traceback.format_exc()[-1500:]}

    def lm(module, name, embeds=True):
        def check():
            model, notes = tiny.tiny_model(load(module, name), seed=0)
            result = {"notes": len(notes), "params": sum(p.numel() for p in model.parameters())}
            inputs = tiny.generation_inputs(model, seed=0)
            result["input_keys"] = sorted(inputs)
            result["greedy"] = generate(model, **inputs)
            padded = tiny.generation_inputs(model, batch_size=2, seed=1, left_pad=2)
            result["padded_mask"] = padded["attention_mask"].tolist()
            result["padded_ids"] = padded["input_ids"].tolist()
            result["pad_id"] = model.generation_config.pad_token_id
            result["padded"] = generate(model, **padded)
            result["no_cache"] = generate(model, **inputs, use_cache=False)
            result["no_cache_same"] = result["no_cache"] == result["greedy"]
            result["beams"] = generate(model, **padded, num_beams=2)
            if embeds and not model.config.is_encoder_decoder:
                rest = dict(inputs)
                ids = rest.pop("input_ids")
                with torch.no_grad():
                    rest["inputs_embeds"] = model.get_input_embeddings()(ids)
                result["embeds"] = generate(model, **rest)
            result["is_encoder_decoder"] = bool(model.config.is_encoder_decoder)
            return result
        return check

    run("llama", lm("transformers.models.llama.modeling_llama", "LlamaForCausalLM"))
    run("gpt2", lm("transformers.models.gpt2.modeling_gpt2", "GPT2LMHeadModel"))
    run("bart", lm("transformers.models.bart.modeling_bart", "BartForConditionalGeneration"))
    run("t5", lm("transformers.models.t5.modeling_t5", "T5ForConditionalGeneration"))
    run("mamba", lm("transformers.models.mamba.modeling_mamba", "MambaForCausalLM", embeds=False))
    # a hybrid whose default fast Mamba kernels exist only on CUDA
    run("jamba", lm("transformers.models.jamba.modeling_jamba", "JambaForCausalLM"))

    def llava():
        model, _ = tiny.tiny_model(load("transformers.models.llava.modeling_llava", "LlavaForConditionalGeneration"))
        inputs = tiny.generation_inputs(model, seed=0)
        result = {"text": generate(model, **inputs)}
        image_inputs = tiny.multimodal_inputs(model, inputs, seed=0)
        result["multimodal_keys"] = sorted(image_inputs or {})
        if image_inputs is not None:
            token = model.config.image_token_index
            result["image_tokens"] = int((image_inputs["input_ids"] == token).sum())
            result["multimodal"] = generate(model, **image_inputs)
        return result

    run("llava", llava)

    def image_family():
        # as a processor prepares them (as many image tokens as the tower makes features), so that
        # assisted decoding with an image runs: 4.45's legacy merge path could not
        result = {}
        for module, name in (("llava", "LlavaForConditionalGeneration"),
                             ("llava_next", "LlavaNextForConditionalGeneration"),
                             ("video_llava", "VideoLlavaForConditionalGeneration"),
                             ("paligemma", "PaliGemmaForConditionalGeneration")):
            cls = load(f"transformers.models.{module}.modeling_{module}", name)
            model, _ = tiny.tiny_model(cls, seed=0)
            assistant, _ = tiny.tiny_model(cls, seed=1)
            inputs = tiny.multimodal_inputs(model, tiny.generation_inputs(model, seed=0), seed=0)
            if inputs is None:
                result[name] = None
                continue
            result[name] = {"keys": sorted(inputs), "assisted": generate(model, **inputs, assistant_model=assistant)}
        return {"models": result}

    run("image-family", image_family)

    def vocab():
        # every special id of the default config is a valid id of the tiny one
        result = {}
        for module, name in (
            ("transformers.models.gpt2.modeling_gpt2", "GPT2LMHeadModel"),
            ("transformers.models.llava.modeling_llava", "LlavaForConditionalGeneration"),
            ("transformers.models.mllama.modeling_mllama", "MllamaForCausalLM"),
            ("transformers.models.t5.modeling_t5", "T5ForConditionalGeneration"),
        ):
            cls = load(module, name)
            config = tiny.tiny_config(cls)
            text = config.get_text_config() if hasattr(config, "get_text_config") else config
            specials = sorted(tiny.special_token_ids(cls.config_class()))
            result[name] = {"vocab": text.vocab_size, "max_special": max(specials) if specials else None,
                            "layers": text.num_hidden_layers if hasattr(text, "num_hidden_layers") else None}
        result["sections"] = tiny.scale_sections([16, 24, 24], 8)
        return result

    run("vocab", vocab)

    def composites():
        # 4.45's composite audio configs need their parts passed in; the melody one keeps its
        # codebook start token in the decoder config
        result = {}
        for module, name in (
            ("transformers.models.musicgen.modeling_musicgen", "MusicgenForConditionalGeneration"),
            ("transformers.models.musicgen_melody.modeling_musicgen_melody", "MusicgenMelodyForConditionalGeneration"),
        ):
            model, _ = tiny.tiny_model(load(module, name), seed=0)
            inputs = tiny.generation_inputs(model, seed=0)
            hop = 1
            for ratio in model.config.audio_encoder.upsampling_ratios:
                hop *= ratio
            result[name] = {"params": sum(p.numel() for p in model.parameters()), "hop": hop,
                            "shape": list(model.generate(**inputs, max_new_tokens=4, min_new_tokens=4,
                                                         do_sample=False).shape)}
        return result

    run("composites", composites)

    def fixup_reasons():
        # every fixup applied to a model is in its build notes, with why the fixup exists
        _, notes = tiny.tiny_model(load("transformers.models.musicgen.modeling_musicgen",
                                        "MusicgenForConditionalGeneration"), seed=0)
        return {"notes": [note for note in notes if ": fixup for " in note],
                "why": {name: fixup.why for name, fixup in tiny.FIXUPS.items()}}

    run("fixup-reasons", fixup_reasons)

    def mamba_mixers():
        # the config dicts 5.15's Bamba and FalconH1 save from their defaults (the head size derived from 4096 wide),
        # as the fixups see them once the tables have shrunk the rest
        saved = {"mamba_n_heads": 128, "mamba_d_head": 64, "mamba_n_groups": 1, "mamba_d_state": 256,
                 "mamba_chunk_size": 256, "mamba_expand": 2, "hidden_size": 64}
        out = {}
        for model_type, extra in (("bamba", {"attn_layer_indices": None}), ("falcon_h1", {"mamba_d_ssm": 1024})):
            d = {**saved, **extra}
            tiny.FIXUPS[model_type].apply(d, tiny.SIZES[0])
            out[model_type] = d
        return out

    run("mamba-mixers", mamba_mixers)

    def configs_before_5():
        # config dicts as 4.46 - 4.57's defaults save them, next to 5.x's, through the fixups
        out = {}
        for era, word in (("4.46", "mamba"), ("5.x", "linear_attention")):
            # Zamba's layers between the hybrid ones: 4.46 - 4.57 build a layer for "mamba" only
            d = {"layers_block_type": [word, word, "hybrid", word, word, word, "hybrid"], "num_hidden_layers": 7}
            tiny.FIXUPS["zamba"].apply(d, tiny.SIZES[0])
            out[f"zamba {era}"] = d
        # GraniteMoeHybrid: layer_types None (4.57, read by index) or 5.x's list
        for era, types in (("4.57", None), ("5.x", ["linear_attention", "linear_attention"])):
            d = {"layer_types": types, "num_hidden_layers": 2}
            tiny.FIXUPS["granitemoehybrid"].apply(d, tiny.SIZES[0])
            out[f"granitemoehybrid {era}"] = d
        # Qwen3-VL's text config: no sections, in 4.57's rope_scaling (None) or 5.x's rope_parameters
        for era, rope in (("4.57", {"rope_scaling": None, "rope_theta": 5000000.0}),
                          ("5.x", {"rope_parameters": {"rope_type": "default", "rope_theta": 5000000.0}})):
            d = {**rope, "head_dim": 16, "hidden_size": 64}
            tiny.FIXUPS["qwen3_vl_text"].apply(d, tiny.SIZES[0])
            out[f"qwen3_vl_text {era}"] = d
        # 4.57's Aria maps image sizes (numbers) to query counts: a key need not be a string
        out["aria ids"] = sorted(tiny.special_token_ids({"projector_patch_to_query_dict": {1225: 128, 4900: 256},
                                                         "image_token_index": 9, "text_config": {"pad_token_id": 2}}))
        return out

    run("configs-before-5", configs_before_5)

    def patches():
        # pix2struct's main input: patches led by their row and column
        model, _ = tiny.tiny_model(load("transformers.models.pix2struct.modeling_pix2struct",
                                        "Pix2StructForConditionalGeneration"), seed=0)
        inputs = tiny.generation_inputs(model, batch_size=2, seed=0, left_pad=2)
        patches = inputs["flattened_patches"]
        return {"keys": sorted(inputs), "places": patches[1, :5, :2].tolist(), "padding": patches[0, :2].abs().sum().item(),
                "mask": inputs["attention_mask"].tolist(), "generated": generate(model, **inputs)}

    run("patches", patches)

    def errors():
        result = {}
        for key, module, name in (
            ("qdqbert", "transformers.models.deprecated.qdqbert.modeling_qdqbert", "QDQBertLMHeadModel"),
            ("markuplm", "transformers.models.markuplm.modeling_markuplm", "MarkupLMModel"),
        ):
            try:
                model, _ = tiny.tiny_model(load(module, name))
                tiny.generation_inputs(model)
                result[key] = None
            except tiny.TinyModelError as error:
                result[key] = str(error)
        class NoConfig:
            pass
        try:
            tiny.tiny_model(NoConfig)
            result["no_config"] = None
        except tiny.TinyModelError as error:
            result["no_config"] = str(error)
        return result

    run("errors", errors)

    def weights():
        cls = load("transformers.models.llama.modeling_llama", "LlamaForCausalLM")
        return {"seed0": state_hash(tiny.tiny_model(cls, seed=0)[0]), "seed1": state_hash(tiny.tiny_model(cls, seed=1)[0])}

    run("weights", weights)
    print("RESULT " + json.dumps(out))
    """
)

HASH_ONLY = textwrap.dedent(
    r"""
    import hashlib, json
    import tiny
    from transformers.models.llama.modeling_llama import LlamaForCausalLM
    model, _ = tiny.tiny_model(LlamaForCausalLM, seed=0)
    digest = hashlib.sha256()
    for key, value in sorted(model.state_dict().items()):
        digest.update(key.encode())
        digest.update(value.detach().contiguous().float().numpy().tobytes())
    print("RESULT " + json.dumps({"seed0": digest.hexdigest()}))
    """
)


# -------------------------------------------------------------------------------------- fixtures


def _run(verify_env: tuple[Path, Path], script: str, tmp_path: Path) -> dict:
    python, src = verify_env
    path = tmp_path / "script.py"
    path.write_text(script, encoding="utf-8")
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(src), str(TINY.parent)]),
        "TOKENIZERS_PARALLELISM": "false",
        "OMP_NUM_THREADS": "1",
    }
    done = subprocess.run([str(python), str(path)], capture_output=True, text=True, env=env, timeout=600)
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert done.returncode == 0 and lines, f"script failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return json.loads(lines[-1][len("RESULT ") :])


@pytest.fixture(scope="module")
def results(verify_env: tuple[Path, Path], tmp_path_factory: pytest.TempPathFactory) -> dict:
    return _run(verify_env, CHECKS, tmp_path_factory.mktemp("tiny"))


def _ok(results: dict, name: str) -> dict:
    entry = results[name]
    assert entry["ok"], f"{name}: {entry.get('tiny_error') or entry.get('error')}\n{entry.get('tb', '')}"
    return entry


# ---------------------------------------------------------------------------------- no torch needed


def test_tiny_imports_only_stdlib_torch_and_transformers():
    """tiny runs in the verification environment: no codemod, no libcst/typer/rich there (its own
    modules it imports relatively)."""
    roots = set()
    for node in (n for path in TINY.glob("*.py") for n in ast.walk(ast.parse(path.read_text(encoding="utf-8")))):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    allowed = set(sys.stdlib_module_names) | {"torch", "transformers", "numpy"}
    assert roots <= allowed, roots - allowed
    assert "codemod" not in roots


# ---------------------------------------------------------------------------------- in the env


@pytest.mark.network
@pytest.mark.slow
@pytest.mark.parametrize("name", ["llama", "gpt2", "mamba", "jamba"])
def test_decoder_only_generates(results, name):
    entry = _ok(results, name)
    assert entry["params"] < 5_000_000
    assert not entry["is_encoder_decoder"]
    assert [len(row) for row in entry["greedy"]] == [7 + 6]
    assert [len(row) for row in entry["padded"]] == [7 + 6, 7 + 6]
    assert [len(row) for row in entry["beams"]] == [7 + 6, 7 + 6]
    assert entry["no_cache_same"], "greedy decoding with and without the cache must agree"
    if name != "mamba":
        assert [len(row) for row in entry["embeds"]] == [6]  # only the new tokens come back


@pytest.mark.network
@pytest.mark.slow
@pytest.mark.parametrize("name", ["bart", "t5"])
def test_encoder_decoder_generates(results, name):
    entry = _ok(results, name)
    assert entry["is_encoder_decoder"]
    assert entry["input_keys"] == ["attention_mask", "input_ids"]
    # a decoder start token, then 6 new ones (min_new_tokens keeps eos away)
    assert [len(row) for row in entry["greedy"]] == [1 + 6]
    assert [len(row) for row in entry["beams"]] == [1 + 6, 1 + 6]
    assert entry["no_cache_same"]


@pytest.mark.network
@pytest.mark.slow
def test_left_padding_masks_the_first_row(results):
    entry = _ok(results, "llama")
    assert entry["padded_mask"] == [[0, 0, 1, 1, 1, 1, 1], [1] * 7]
    assert entry["padded_ids"][0][:2] == [entry["pad_id"]] * 2
    assert entry["pad_id"] is not None


@pytest.mark.network
@pytest.mark.slow
def test_random_ids_avoid_special_tokens(results):
    gpt2 = _ok(results, "gpt2")
    assert 50256 not in gpt2["greedy"][0][:7]
    assert gpt2["pad_id"] == 50256  # no pad in GPT-2's config: eos stands in


@pytest.mark.network
@pytest.mark.slow
def test_vocabulary_holds_every_special_token(results):
    entry = _ok(results, "vocab")
    for name in (
        "GPT2LMHeadModel",
        "LlavaForConditionalGeneration",
        "MllamaForCausalLM",
        "T5ForConditionalGeneration",
    ):
        info = entry[name]
        assert info["vocab"] >= 99
        if info["max_special"] is not None:
            assert info["vocab"] > info["max_special"], name
    assert entry["GPT2LMHeadModel"]["vocab"] == 50257  # bos/eos 50256
    assert entry["LlavaForConditionalGeneration"]["vocab"] == 32001  # image_token_index 32000
    assert entry["MllamaForCausalLM"]["layers"] == 2
    assert entry["T5ForConditionalGeneration"]["vocab"] == 99  # pad 0, eos 1: the minimum
    assert entry["sections"] == [2, 3, 3]


@pytest.mark.network
@pytest.mark.slow
def test_multimodal_text_path_and_image(results):
    entry = _ok(results, "llava")
    assert [len(row) for row in entry["text"]] == [7 + 6]
    assert "pixel_values" in entry["multimodal_keys"]
    assert entry["image_tokens"] > 0
    assert len(entry["multimodal"][0]) == 7 + entry["image_tokens"] + 6


@pytest.mark.network
@pytest.mark.slow
def test_image_models_get_images_as_a_processor_prepares_them(results):
    entry = _ok(results, "image-family")["models"]
    assert len(entry) == 4
    for name, image in entry.items():
        assert image is not None, f"{name}: no multimodal inputs"
        assert {"input_ids", "attention_mask"} <= set(image["keys"]), name
        assert len(image["assisted"]) == 1 and image["assisted"][0], name
    assert "pixel_values_images" in entry["VideoLlavaForConditionalGeneration"]["keys"]
    assert "image_sizes" in entry["LlavaNextForConditionalGeneration"]["keys"]


@pytest.mark.network
@pytest.mark.slow
def test_composite_audio_models_build_and_generate(results):
    entry = _ok(results, "composites")
    for name in ("MusicgenForConditionalGeneration", "MusicgenMelodyForConditionalGeneration"):
        assert entry[name]["params"] < 5_000_000
        # the codes come back decoded: a waveform of one hop of samples per new code
        assert entry[name]["shape"] == [1, 1, 4 * entry[name]["hop"]]


@pytest.mark.network
@pytest.mark.slow
def test_fixups_applied_are_in_the_notes_with_their_reasons(results):
    entry = _ok(results, "fixup-reasons")
    why = entry["why"]
    assert all(why.values()), [name for name, reason in why.items() if not reason]
    # each level's fixup, where it ran: the composite's after its parts'
    assert entry["notes"] == [
        f"audio_encoder.: fixup for encodec: {why['encodec']}",
        f"decoder.: fixup for musicgen_decoder: {why['musicgen_decoder']}",
        f"config: fixup for musicgen: {why['musicgen']}",
    ]


@pytest.mark.network
@pytest.mark.slow
def test_hybrid_mamba_mixers_are_sized_for_the_tiny_model(results):
    """5.15's Bamba and FalconH1 save the head size their 4096-wide defaults derived next to 128 heads, 256 states
    and chunks of 256: shrunk by the tables alone, their scan wanted 8 to 32 GiB and every scenario failed alike on
    both sides (unverified). The fixup gives them the tiny model's heads, the head size derived again, and small
    states and chunks."""
    entry = _ok(results, "mamba-mixers")
    for model_type in ("bamba", "falcon_h1"):
        d = entry[model_type]
        assert d["mamba_n_heads"] == 4 and d["mamba_d_head"] == "auto" and d["mamba_n_groups"] == 1
        assert d["mamba_d_state"] == 16 and d["mamba_chunk_size"] == 16
        assert (d["mamba_expand"] * d["hidden_size"]) % d["mamba_n_heads"] == 0
    assert entry["bamba"]["attn_layer_indices"] == [1]  # and the last layer attends, as before
    assert entry["falcon_h1"]["mamba_d_ssm"] is None  # expand x hidden


def test_configs_as_releases_before_5_save_them_build(results):
    """4.46 - 4.57 save some defaults that 5.x changed, and with them no tiny model built, so every change to the
    class was reverted as unverifiable (4.57.1: Zamba, GraniteMoeHybrid, Qwen3-VL and its MoE, Aria):
    - Zamba builds a layer for "mamba" and "hybrid" only: given 5.x's "linear_attention", it ran out of layers;
    - GraniteMoeHybrid's layer_types is None, which the model reads by index;
    - Qwen3-VL's rope_scaling is None, which its rotary embedding reads with .get: its sections go there, scaled to
      the tiny head (half of it, 8), where 5.x keeps them in rope_parameters;
    - Aria's config has a dict keyed by numbers, which the token-id walk called ``endswith`` on.
    5.x's dicts come out as before."""
    entry = _ok(results, "configs-before-5")
    for era, word in (("4.46", "mamba"), ("5.x", "linear_attention")):
        d = entry[f"zamba {era}"]
        assert d["layers_block_type"] == [word] * (d["num_hidden_layers"] - 2) + ["hybrid", "hybrid"]
    assert entry["granitemoehybrid 4.57"]["layer_types"] == ["mamba", "attention"]
    assert entry["granitemoehybrid 5.x"]["layer_types"] == ["linear_attention", "linear_attention"]
    old, new = entry["qwen3_vl_text 4.57"], entry["qwen3_vl_text 5.x"]
    assert "rope_parameters" not in old and sum(old["rope_scaling"]["mrope_section"]) == 8
    assert old["rope_scaling"]["rope_type"] == "default" and old["rope_scaling"]["rope_theta"] == 5000000.0
    assert "rope_scaling" not in new and sum(new["rope_parameters"]["mrope_section"]) == 8
    assert entry["aria ids"] == [2, 9]


def test_flattened_patches_carry_rows_and_columns(results):
    entry = _ok(results, "patches")
    assert entry["keys"] == ["attention_mask", "flattened_patches"]
    assert entry["places"] == [[1, 1], [1, 2], [1, 3], [1, 4], [2, 1]]
    assert entry["padding"] == 0 and entry["mask"][0][:3] == [0, 0, 1]
    assert [len(row) for row in entry["generated"]] == [1 + 6, 1 + 6]


@pytest.mark.network
@pytest.mark.slow
def test_unsupported_classes_raise_a_clear_tiny_model_error(results):
    entry = _ok(results, "errors")
    assert entry["qdqbert"] and "pytorch-quantization" in entry["qdqbert"]
    assert entry["markuplm"] and "language-model head" in entry["markuplm"]
    assert entry["no_config"] and "config_class" in entry["no_config"]
    for reason in (entry["qdqbert"], entry["markuplm"], entry["no_config"]):
        assert "\n" not in reason


@pytest.mark.network
@pytest.mark.slow
def test_same_seed_same_weights_across_processes(results, verify_env, tmp_path):
    weights = _ok(results, "weights")
    assert weights["seed0"] != weights["seed1"]
    again = _run(verify_env, HASH_ONLY, tmp_path)
    assert again["seed0"] == weights["seed0"]


BASE_KEPT = textwrap.dedent(
    r"""
    import json
    from transformers import LlamaConfig, LlamaForCausalLM
    import tiny
    # a repository's config.json: values the class's defaults do not have, which the shrinking leaves alone
    base = {**LlamaConfig().to_dict(), "attention_bias": True, "rms_norm_eps": 1e-3, "vocab_size": 32000}
    model, notes = tiny.tiny_model(LlamaForCausalLM, seed=0, base=base)
    config = model.config
    print("RESULT " + json.dumps({"bias": config.attention_bias, "eps": config.rms_norm_eps,
                                  "hidden": config.hidden_size, "layers": config.num_hidden_layers}))
    """
)


@pytest.mark.network
@pytest.mark.slow
def test_a_repositorys_config_keeps_what_the_shrinking_leaves_alone(verify_env, tmp_path):
    found = _run(verify_env, BASE_KEPT, tmp_path)
    assert found["bias"] is True and found["eps"] == 1e-3  # not LlamaConfig's False and 1e-6
    assert found["hidden"] < 4096 and found["layers"] < 32  # and still shrunk


OLD_RELEASE = textwrap.dedent(
    r"""
    import json, warnings
    warnings.filterwarnings("ignore")
    import tiny
    from transformers.models.llama.modeling_llama import LlamaForCausalLM

    class BeforeGenerationConfig(LlamaForCausalLM):
        # a model as releases before 4.26 built it: no generation_config
        def __init__(self, config):
            super().__init__(config)
            del self.generation_config

    model, notes = tiny.tiny_model(BeforeGenerationConfig, seed=0)
    model.generation_config.pad_token_id = 7
    # as loaded (save_pretrained, from_pretrained: what each side runs), and a later release's None left alone
    loaded = BeforeGenerationConfig(model.config)
    again = tiny.with_generation_config(loaded)
    latest = LlamaForCausalLM(model.config)
    latest.generation_config = None
    print("RESULT " + json.dumps({"aliased": model.generation_config is model.config,
                                  "pad": model.config.pad_token_id, "notes": notes,
                                  "loaded": again and loaded.generation_config is loaded.config,
                                  "none_kept": not tiny.with_generation_config(latest)
                                  and latest.generation_config is None}))
    """
)


def test_a_model_without_generation_config_reads_its_settings_from_the_config(
    verify_env: tuple[Path, Path], tmp_path: Path
) -> None:
    found = _run(verify_env, OLD_RELEASE, tmp_path)
    assert found["aliased"] and found["pad"] == 7 and found["loaded"] and found["none_kept"]
    assert any("generation_config: the config" in n for n in found["notes"])


LENGTHS = textwrap.dedent(
    r"""
    import json, warnings
    warnings.filterwarnings("ignore")
    import torch, transformers, scenarios, tiny
    from transformers.models.llama.modeling_llama import LlamaForCausalLM

    model, _ = tiny.tiny_model(LlamaForCausalLM, seed=0)
    ids = torch.tensor([[3, 4, 5, 6, 7]])
    now = scenarios.lengths(model, {"input_ids": ids}, 6)
    transformers.__version__ = "4.25.1"  # as a release before 4.26 says it is
    before = scenarios.lengths(model, {"input_ids": ids}, 6)
    from transformers.models.t5.modeling_t5 import T5ForConditionalGeneration
    seq2seq, _ = tiny.tiny_model(T5ForConditionalGeneration, seed=0)
    start = scenarios.lengths(seq2seq, {"input_ids": ids}, 6)  # the decoder starts from its start token
    given = scenarios.lengths(seq2seq, {"input_ids": ids, "decoder_input_ids": ids[:, :2]}, 6)
    print("RESULT " + json.dumps({"now": now, "before": before, "start": start, "given": given}))
    """
)


def test_a_release_before_4_26_is_asked_for_its_new_tokens_with_min_length(
    verify_env: tuple[Path, Path], tmp_path: Path
) -> None:
    found = _run(verify_env, LENGTHS, tmp_path)
    assert found["now"] == {"max_new_tokens": 6, "min_new_tokens": 6}
    assert found["before"] == {"max_new_tokens": 6, "min_length": 11}  # the prompt's 5 ids count there
    # an encoder-decoder's length is its decoder's: the start token, or the decoder ids it was given
    assert found["start"] == {"max_new_tokens": 6, "min_length": 7}
    assert found["given"] == {"max_new_tokens": 6, "min_length": 8}
