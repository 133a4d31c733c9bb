"""Tiny models whose image inputs (or config) the generic rules can't guess, on 4.45.2: Qwen2-VL (token ids
its config class lacks, rotary sections, flattened patches with their grid), Idefics2 (images per row, a
pixel mask, one image token per resampler latent), CLVP's decoder head (a class that takes a part of
its family's composite config), and the inputs beside the text that the multimodal scenarios give the classes
whose reductions keep statements about them (Mllama's tiles, Kosmos-2's image embeddings, CLVP's conditioning,
RoCBert's shape and pronunciation ids, Qwen2-Audio's mel features). Run as ``tests/test_tiny.py`` runs its checks: one script in the
verification environment, one JSON document read by the tests (``network``, ``slow``).
"""

from __future__ import annotations

import textwrap

import pytest

from tests.test_tiny import VERSION, _ok, _run

CHECKS = textwrap.dedent(
    r"""
    import functools, importlib, json, tempfile, traceback, warnings
    warnings.filterwarnings("ignore")
    import torch
    torch.set_num_threads(1)
    import tiny

    G = dict(max_new_tokens=6, min_new_tokens=6, do_sample=False)
    out = {}

    def load(module, name):
        return getattr(importlib.import_module(module), name)

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

    def last_logits(model, inputs):
        with torch.no_grad():
            return model(**inputs).logits[:, -1]

    def image_matters(model, inputs, key="pixel_values"):
        # other pixels, other next-token logits: the image went through the vision tower into the prompt
        other = dict(inputs)
        other[key] = inputs[key] + 1.0
        return float((last_logits(model, inputs) - last_logits(model, other)).abs().max())

    def recorded_steps(model, inputs, **extra):
        # what prepare_inputs_for_generation hands the forward at each step: which image inputs are set
        steps = []
        original = model.prepare_inputs_for_generation

        @functools.wraps(original)  # generate() reads its signature
        def wrapper(*args, **kwargs):
            prepared = original(*args, **kwargs)
            steps.append(sorted(k for k in ("pixel_values", "image_hidden_states", "image_grid_thw")
                                if prepared.get(k) is not None))
            return prepared

        model.prepare_inputs_for_generation = wrapper
        try:
            generate(model, **inputs, **extra)
        finally:
            del model.prepare_inputs_for_generation
        return steps

    def qwen2_vl():
        cls = load("transformers.models.qwen2_vl.modeling_qwen2_vl", "Qwen2VLForConditionalGeneration")
        model, notes = tiny.tiny_model(cls, seed=0)
        assistant, _ = tiny.tiny_model(cls, seed=1)
        config = model.config
        result = {"fixup_notes": [n for n in notes if "fixup for qwen2_vl" in n]}
        names = ("image_token_id", "video_token_id", "vision_start_token_id", "vision_end_token_id")
        result["ids"] = {name: getattr(config, name, None) for name in names}
        result["vocab"] = config.vocab_size
        result["sections"] = config.rope_scaling["mrope_section"]
        result["half_head"] = config.hidden_size // config.num_attention_heads // 2
        text = tiny.generation_inputs(model, seed=0)
        result["text"] = generate(model, **text)
        inputs = tiny.multimodal_inputs(model, text, seed=0)
        if inputs is None:
            return result
        result["keys"] = sorted(inputs)
        ids = inputs["input_ids"][0].tolist()
        result["ids_row"] = ids
        result["grid"] = inputs["image_grid_thw"].tolist()
        result["video_grid"] = inputs["video_grid_thw"].tolist() if "video_grid_thw" in inputs else None
        result["video_shape"] = list(inputs["pixel_values_videos"].shape) if "pixel_values_videos" in inputs else None
        result["video_matters"] = image_matters(model, inputs, "pixel_values_videos") if result["video_grid"] else None
        result["pixel_shape"] = list(inputs["pixel_values"].shape)
        result["merge"] = config.vision_config.spatial_merge_size
        result["patch_width"] = (config.vision_config.in_channels * config.vision_config.temporal_patch_size
                                 * config.vision_config.patch_size ** 2)
        with torch.no_grad():
            _, deltas = model.get_rope_index(inputs["input_ids"], inputs["image_grid_thw"], inputs.get("video_grid_thw"),
                                             inputs["attention_mask"])
        result["rope_deltas"] = deltas.flatten().tolist()
        result["image_matters"] = image_matters(model, inputs)
        result["multimodal"] = generate(model, **inputs)
        result["assisted"] = generate(model, **inputs, assistant_model=assistant)
        padded = tiny.multimodal_inputs(model, tiny.generation_inputs(model, batch_size=2, seed=0, left_pad=3), seed=0)
        result["padded_grid"] = None if padded is None else padded["image_grid_thw"].tolist()
        result["padded_mask"] = None if padded is None else padded["attention_mask"].tolist()
        result["padded"] = None if padded is None else generate(model, **padded)
        return result

    run("qwen2_vl", qwen2_vl)

    def idefics2():
        cls = load("transformers.models.idefics2.modeling_idefics2", "Idefics2ForConditionalGeneration")
        model, _ = tiny.tiny_model(cls, seed=0)
        assistant, _ = tiny.tiny_model(cls, seed=1)
        config = model.config
        result = {"latents": config.perceiver_config.resampler_n_latents, "image_token": config.image_token_id}
        text = tiny.generation_inputs(model, seed=0)
        inputs = tiny.multimodal_inputs(model, text, seed=0)
        if inputs is None:
            return result
        result["keys"] = sorted(inputs)
        result["pixel_shape"] = list(inputs["pixel_values"].shape)
        result["mask_shape"] = list(inputs["pixel_attention_mask"].shape)
        result["mask_dtype"] = str(inputs["pixel_attention_mask"].dtype)
        result["image_tokens"] = (inputs["input_ids"] == config.image_token_id).sum(-1).tolist()
        result["image_matters"] = image_matters(model, inputs)
        result["multimodal"] = generate(model, **inputs)
        result["steps"] = recorded_steps(model, inputs)
        result["assisted"] = generate(model, **inputs, assistant_model=assistant)
        padded = tiny.multimodal_inputs(model, tiny.generation_inputs(model, batch_size=2, seed=0, left_pad=3), seed=0)
        result["padded_tokens"] = None if padded is None else (padded["input_ids"] == config.image_token_id).sum(-1).tolist()
        result["padded"] = None if padded is None else generate(model, **padded)
        return result

    run("idefics2", idefics2)

    def clvp():
        cls = load("transformers.models.clvp.modeling_clvp", "ClvpForCausalLM")
        model, notes = tiny.tiny_model(cls, seed=0)
        result = {"config": type(model.config).__name__, "notes": [n for n in notes if "sub-config" in n],
                  "params": sum(p.numel() for p in model.parameters())}
        inputs = tiny.generation_inputs(model, seed=0)
        result["greedy"] = generate(model, **inputs)
        # the verifier saves the model and loads it through the class (its config_class is the composite)
        folder = tempfile.mkdtemp()
        model.save_pretrained(folder, safe_serialization=False)
        loaded = cls.from_pretrained(folder).eval()
        result["loaded_greedy"] = generate(loaded, **inputs)  # the same weights and generation config
        # a class that takes the composite itself is built from it, as before
        whole, whole_notes = tiny.tiny_model(load("transformers.models.clvp.modeling_clvp",
                                                  "ClvpModelForConditionalGeneration"), seed=0)
        result["whole_config"] = type(whole.config).__name__
        result["whole_notes"] = [n for n in whole_notes if "sub-config" in n]
        return result

    run("clvp", clvp)

    def first_logits(model, inputs):
        # the first step's next-token logits through generate() (CLVP's conditioning only goes in there)
        with torch.no_grad():
            out = model.generate(**inputs, max_new_tokens=1, do_sample=False, output_logits=True,
                                 return_dict_in_generate=True)
        return out.logits[0]

    def own_inputs(module, name, probe, settings=None):
        # a model's own inputs beside its text, as the multimodal scenarios give them: their keys and
        # shapes, and that each one reaches the next-token logits
        model, notes = tiny.tiny_model(load(module, name), seed=0, settings=settings)
        text = tiny.generation_inputs(model, seed=0)
        inputs = tiny.multimodal_inputs(model, text, seed=0)
        if inputs is None:
            return {"keys": None}
        result = {"keys": sorted(inputs), "shapes": {k: list(v.shape) for k, v in inputs.items()},
                  "gates": [n for n in notes if "gates opened" in n],
                  "text_length": text["input_ids"].shape[1], "matters": {}}
        for key in probe:
            value, other = inputs[key], dict(inputs)
            other[key] = value + 1.0 if value.is_floating_point() else (value + 1) % (int(value.max()) + 2)
            result["matters"][key] = float((first_logits(model, inputs) - first_logits(model, other)).abs().max())
        result["greedy"] = generate(model, **inputs)
        result["values"] = {k: v.tolist() for k, v in inputs.items() if k in ("aspect_ratio_ids", "aspect_ratio_mask",
                                                                               "image_embeds_position_mask")}
        if "cross_attention_mask" in inputs:
            result["values"]["cross_rows"] = inputs["cross_attention_mask"][0, :, 0].tolist()
            result["values"]["image_at"] = inputs["input_ids"][0].tolist().index(model.config.image_token_index)
        return result

    run("mllama", lambda: own_inputs("transformers.models.mllama.modeling_mllama", "MllamaForConditionalGeneration",
                               ["pixel_values"]))
    run("kosmos2_text", lambda: own_inputs("transformers.models.kosmos2.modeling_kosmos2", "Kosmos2TextForCausalLM", ["image_embeds"]))
    run("clvp_conditioning", lambda: own_inputs("transformers.models.clvp.modeling_clvp", "ClvpForCausalLM", ["conditioning_embeds"]))
    run("roc_bert", lambda: own_inputs("transformers.models.roc_bert.modeling_roc_bert", "RoCBertForCausalLM",
                                       ["input_shape_ids", "input_pronunciation_ids"], {"is_decoder": True}))

    def qwen2_audio():
        result = own_inputs("transformers.models.qwen2_audio.modeling_qwen2_audio", "Qwen2AudioForConditionalGeneration",
                            ["input_features"])
        model, _ = tiny.tiny_model(load("transformers.models.qwen2_audio.modeling_qwen2_audio",
                                        "Qwen2AudioForConditionalGeneration"), seed=0)
        inputs = tiny.multimodal_inputs(model, tiny.generation_inputs(model, seed=0), seed=0)
        result["audio_tokens"] = (inputs["input_ids"] == model.config.audio_token_index).sum(-1).tolist()
        result["window"] = 2 * model.config.audio_config.max_source_positions
        padded = tiny.multimodal_inputs(model, tiny.generation_inputs(model, batch_size=2, seed=0, left_pad=3), seed=0)
        result["real_frames"] = padded["feature_attention_mask"].sum(-1).tolist()
        result["padded_greedy"] = generate(model, **padded)
        return result

    run("qwen2_audio", qwen2_audio)

    def ambiguous():
        # a composite whose two parts would both build the class: which part it is can't be told, so
        # neither is taken and the build fails as before
        from transformers import GPT2Config, GPT2LMHeadModel, PretrainedConfig

        class TwoParts(PretrainedConfig):
            model_type = "two_parts_for_test"

            def __init__(self, first=None, second=None, **kwargs):
                super().__init__(**kwargs)
                self.first = GPT2Config(**(first or {}))
                self.second = GPT2Config(**(second or {}))

        class TwoPartsHead(GPT2LMHeadModel):
            config_class = TwoParts

        try:
            tiny.tiny_model(TwoPartsHead, seed=0)
            return {"error": None}
        except tiny.TinyModelError as error:
            return {"error": str(error)}

    run("ambiguous", ambiguous)
    def musicgen_guidance():
        # the decoder alone and the composite: the text inputs as they are, and a guidance scale above 1
        result = {}
        for module, name in (("transformers.models.musicgen.modeling_musicgen", "MusicgenForCausalLM"),
                             ("transformers.models.musicgen_melody.modeling_musicgen_melody",
                              "MusicgenMelodyForConditionalGeneration")):
            model, _ = tiny.tiny_model(load(module, name), seed=0)
            text = tiny.generation_inputs(model, seed=0)
            inputs = tiny.multimodal_inputs(model, text, seed=0)
            result[name] = None if inputs is None else {
                "extra": {k: list(v.shape) if torch.is_tensor(v) else v for k, v in inputs.items() if k not in text},
                "text_kept": all(inputs[k] is text[k] for k in text),
                "greedy": generate(model, **inputs),
            }
        return result

    run("musicgen_guidance", musicgen_guidance)

    def llava_legacy():
        # a prompt with one image token where the config wants image_seq_length: 4.45's legacy merge path, which
        # needs the image on every step (the override passes it while legacy_processing)
        model, _ = tiny.tiny_model(load("transformers.models.llava.modeling_llava", "LlavaForConditionalGeneration"),
                                   seed=0)
        token = model.config.image_token_index
        text = tiny.generation_inputs(model, batch_size=2, seed=0, left_pad=3)
        legacy = tiny.legacy_image_inputs(model, text, seed=0)
        full = tiny.multimodal_inputs(model, text, seed=0)
        result = {"seq_length": model.config.image_seq_length, "tokens": (legacy["input_ids"] == token).sum(-1).tolist(),
                  "full_tokens": (full["input_ids"] == token).sum(-1).tolist(),
                  "legacy_steps": recorded_steps(model, legacy), "full_steps": recorded_steps(model, full),
                  "image_matters": image_matters(model, legacy)}
        # no image_seq_length to fall short of: no legacy prompt
        onevision, _ = tiny.tiny_model(load("transformers.models.llava_onevision.modeling_llava_onevision",
                                            "LlavaOnevisionForConditionalGeneration"), seed=0)
        result["onevision"] = tiny.legacy_image_inputs(onevision, tiny.generation_inputs(onevision, seed=0), seed=0)
        return result

    run("llava_legacy", llava_legacy)
    print("RESULT " + json.dumps(out))
    """
)


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The checks' JSON, run in the verification environment of the 4.45.2 release (made once per machine)."""
    from codemod.checkout import resolve
    from codemod.environment import ensure_environment
    from codemod.fetch import release_checkout

    checkout = resolve(release_checkout(VERSION))
    assert checkout.package_dir is not None
    environment = (ensure_environment(checkout).python, checkout.package_dir.parent)
    return _run(environment, CHECKS, tmp_path_factory.mktemp("tiny-multimodal"))


@pytest.mark.network
@pytest.mark.slow
def test_qwen2_vl_config_gets_the_hub_token_ids_and_rotary_sections(results):
    entry = _ok(results, "qwen2_vl")
    ids = entry["ids"]
    # 4.45's config class has none of them: the fixup adds them past the text ids, inside the vocabulary
    assert all(isinstance(value, int) for value in ids.values()), ids
    assert len(set(ids.values())) == 4 and max(ids.values()) < entry["vocab"]
    assert entry["fixup_notes"] and "token ids" in entry["fixup_notes"][0]
    assert sum(entry["sections"]) == entry["half_head"] and len(entry["sections"]) == 3
    assert [len(row) for row in entry["text"]] == [7 + 6]


@pytest.mark.network
@pytest.mark.slow
def test_qwen2_vl_generates_with_an_image_as_its_processor_prepares_it(results):
    entry = _ok(results, "qwen2_vl")
    assert entry.get("keys") == [
        "attention_mask",
        "image_grid_thw",
        "input_ids",
        "pixel_values",
        "pixel_values_videos",
        "video_grid_thw",
    ], entry.get("keys")
    ids, grid, merge = entry["ids_row"], entry["grid"], entry["merge"]
    ((t, h, w),) = grid
    # and a video of two frames, its own token, patches and grid: the path only a video reaches
    ((vt, vh, vw),) = entry["video_grid"]
    video_count = vt * vh * vw // merge**2
    assert vt == 2 and ids.count(entry["ids"]["video_token_id"]) == video_count
    assert entry["video_shape"] == [vt * vh * vw, entry["patch_width"]] and entry["video_matters"] > 0
    assert h != w  # a grid that is not square: rows and columns can't be swapped unnoticed
    count = t * h * w // merge**2
    token, start, end = (
        entry["ids"][name] for name in ("image_token_id", "vision_start_token_id", "vision_end_token_id")
    )
    first = ids.index(token)
    assert ids.count(token) == count
    assert ids[first - 1] == start and ids[first + count] == end and first > 1  # some text before the image
    assert entry["pixel_shape"] == [t * h * w, entry["patch_width"]]
    # 3D positions: the image's rows and columns advance the positions by max(h, w) / merge, not by its tokens
    assert entry["rope_deltas"] == [max(h, w) // merge - count + max(vt, vh // merge, vw // merge) - video_count]
    assert entry["image_matters"] > 0
    assert [len(row) for row in entry["multimodal"]] == [len(ids) + 6]
    assert [len(row) for row in entry["assisted"]] == [len(ids) + 6]
    assert entry["padded_grid"] == [[t, h, w]] * 2
    assert entry["padded_mask"][0][:3] == [0, 0, 0] and all(entry["padded_mask"][1])
    assert len(entry["padded"]) == 2


@pytest.mark.network
@pytest.mark.slow
def test_idefics2_gets_images_with_one_token_per_resampler_latent(results):
    entry = _ok(results, "idefics2")
    assert entry.get("keys") == ["attention_mask", "input_ids", "pixel_attention_mask", "pixel_values"], entry.get(
        "keys"
    )
    batch, images, channels, height, width = entry["pixel_shape"]
    assert (batch, images) == (1, 1)
    assert entry["mask_shape"] == [1, 1, height, width] and entry["mask_dtype"] == "torch.bool"
    assert entry["image_tokens"] == [entry["latents"]]
    assert entry["image_matters"] > 0
    assert len(entry["multimodal"]) == 1 and len(entry["assisted"]) == 1
    assert entry["padded_tokens"] == [entry["latents"]] * 2 and len(entry["padded"]) == 2


@pytest.mark.network
@pytest.mark.slow
def test_idefics2_reads_the_pixels_once_then_the_image_hidden_states(results):
    steps = _ok(results, "idefics2")["steps"]
    assert len(steps) == 6
    assert steps[0] == ["pixel_values"]
    assert all(step == ["image_hidden_states"] for step in steps[1:]), steps


@pytest.mark.network
@pytest.mark.slow
def test_a_head_that_takes_one_part_of_its_composite_config_builds_from_that_part(results):
    entry = _ok(results, "clvp")
    assert entry["config"] == "ClvpDecoderConfig"
    assert len(entry["notes"]) == 1 and "ClvpConfig.decoder_config" in entry["notes"][0]
    assert entry["params"] < 5_000_000
    assert [len(row) for row in entry["greedy"]] == [7 + 6]
    assert entry["loaded_greedy"] == entry["greedy"]
    assert entry["whole_config"] == "ClvpConfig" and entry["whole_notes"] == []


@pytest.mark.network
@pytest.mark.slow
def test_a_composite_with_two_parts_that_build_the_class_takes_neither(results):
    entry = _ok(results, "ambiguous")
    assert entry["error"] and "no tiny size builds" in entry["error"]


@pytest.mark.network
@pytest.mark.slow
def test_mllama_gets_tiled_images_behind_one_image_token(results):
    entry = _ok(results, "mllama")
    assert entry["keys"] == [
        "aspect_ratio_ids",
        "aspect_ratio_mask",
        "attention_mask",
        "cross_attention_mask",
        "input_ids",
        "pixel_values",
    ], entry["keys"]
    shapes, values = entry["shapes"], entry["values"]
    batch, images, tiles = shapes["pixel_values"][:3]
    length = entry["text_length"] + 1  # one <|image|> token
    assert shapes["input_ids"] == [batch, length] and shapes["cross_attention_mask"] == [batch, length, images, tiles]
    used = sum(values["aspect_ratio_mask"][0][0])
    assert 1 < used <= tiles and values["aspect_ratio_ids"] == [[values["aspect_ratio_ids"][0][0]]]
    # the text attends to the image's tiles from its token on, and to no padding tile
    at = values["image_at"]
    assert all(row == [0] * tiles for row in values["cross_rows"][:at])
    assert all(row == [1] * used + [0] * (tiles - used) for row in values["cross_rows"][at:])
    # a fresh Mllama closes its cross-attention behind tanh(0): opened, the image reaches the logits
    assert entry["gates"] and entry["gates"][0].startswith(
        "5 zero-initialised gates opened"
    )  # 2 tile, 1 position, 2 cross-attention
    assert entry["matters"]["pixel_values"] > 0
    assert [len(row) for row in entry["greedy"]] == [length + 6]


@pytest.mark.network
@pytest.mark.slow
def test_kosmos2_text_model_gets_image_embeddings_in_place_of_marked_tokens(results):
    entry = _ok(results, "kosmos2_text")
    assert entry["keys"] == ["attention_mask", "image_embeds", "image_embeds_position_mask", "input_ids"], entry[
        "keys"
    ]
    marks = entry["values"]["image_embeds_position_mask"][0]
    count = entry["shapes"]["image_embeds"][1]
    assert sum(marks) == count and marks[0] == 0 and marks[1 : 1 + count] == [1] * count
    assert entry["matters"]["image_embeds"] > 0
    assert entry["gates"] == []  # nothing closed: nothing opened


@pytest.mark.network
@pytest.mark.slow
def test_clvp_decoder_is_driven_by_conditioning_embeddings(results):
    entry = _ok(results, "clvp_conditioning")
    assert entry["keys"] == ["conditioning_embeds"], entry["keys"]
    assert entry["matters"]["conditioning_embeds"] > 0
    # its generate() turns them into the first step's embeddings, and the start token into the ids
    assert [len(row) for row in entry["greedy"]] == [1 + 6]


@pytest.mark.network
@pytest.mark.slow
def test_roc_bert_gets_shape_and_pronunciation_ids_per_token(results):
    entry = _ok(results, "roc_bert")
    assert entry["keys"] == ["attention_mask", "input_ids", "input_pronunciation_ids", "input_shape_ids"], entry[
        "keys"
    ]
    shapes = entry["shapes"]
    assert shapes["input_shape_ids"] == shapes["input_pronunciation_ids"] == shapes["input_ids"]
    assert entry["matters"]["input_shape_ids"] > 0 and entry["matters"]["input_pronunciation_ids"] > 0


@pytest.mark.network
@pytest.mark.slow
def test_qwen2_audio_gets_mel_features_behind_one_audio_token(results):
    """4.45's Qwen2-Audio expands its one audio token into the encoder's features itself (its prompt holds one per
    row): the features fill the encoder's fixed window (the first clip all of it) and reach the next-token logits."""
    entry = _ok(results, "qwen2_audio")
    assert entry["keys"] == ["attention_mask", "feature_attention_mask", "input_features", "input_ids"], entry["keys"]
    shapes = entry["shapes"]
    assert entry["audio_tokens"] == [1]
    assert shapes["input_ids"] == [1, entry["text_length"] + 1]
    assert shapes["input_features"][-1] == shapes["feature_attention_mask"][-1] == entry["window"]
    assert entry["matters"]["input_features"] > 0
    assert [len(row) for row in entry["greedy"]] == [entry["text_length"] + 1 + 6]
    # a batch: the first clip fills the window, the other is shorter (padded to it, as the processor pads)
    window = entry["window"]
    assert entry["real_frames"] == [window, window * 3 // 4]
    assert len(entry["padded_greedy"]) == 2


@pytest.mark.network
@pytest.mark.slow
def test_musicgen_gets_a_guidance_scale_above_one(results):
    """Musicgen's guidance; Musicgen-Melody's composite also its melody, chroma features (batch, frames, num_chroma),
    as its users condition it (issue 41: without one its reduction that rebuilt the conditioning every step passed)."""
    entry = _ok(results, "musicgen_guidance")
    melody = {"MusicgenForCausalLM": {}, "MusicgenMelodyForConditionalGeneration": {"input_features": [1, 5, 12]}}
    for name, extra in melody.items():
        assert entry[name] is not None, name
        assert entry[name]["extra"] == {"guidance_scale": 3.0, **extra} and entry[name]["text_kept"]
        assert entry[name]["greedy"]


@pytest.mark.network
@pytest.mark.slow
def test_a_legacy_llava_prompt_has_one_image_token_and_needs_the_image_on_every_step(results):
    entry = _ok(results, "llava_legacy")
    assert entry["tokens"] == [1, 1] and entry["full_tokens"] == [entry["seq_length"]] * 2 and entry["seq_length"] > 1
    assert entry["image_matters"] > 0
    # the legacy path gets the image on each of its 6 steps, the processor's prompt on the first only
    assert entry["legacy_steps"] == [["pixel_values"]] * 6, entry["legacy_steps"]
    assert entry["full_steps"] == [["pixel_values"]] + [[]] * 5, entry["full_steps"]
    assert entry["onevision"] is None
