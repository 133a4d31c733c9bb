"""Tiny composites built and driven as their users drive them (issue 41): CLVP's composite conditioned on a voice
and generating through its speech decoder, Musicgen-Melody's composite conditioned on a melody, and audio codecs
whose codebooks are not all zeros (all zeros, every code decodes to the same audio, which hid a regression)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.test_tiny import _run

SCRIPT = textwrap.dedent(
    r"""
    import json, os, tempfile, warnings
    warnings.filterwarnings("ignore")
    import torch
    import scenarios, tiny, worker
    from transformers.models.clvp.modeling_clvp import ClvpModelForConditionalGeneration
    from transformers.models.musicgen_melody.modeling_musicgen_melody import MusicgenMelodyForConditionalGeneration
    from transformers.models.llama.modeling_llama import LlamaForCausalLM

    folder = tempfile.mkdtemp()
    out = {}

    def run(name, model, part):
        recorded = getattr(model, part) if part else None
        return scenarios.run_scenario(
            name, model, model, seed=0, device="cpu", inputs_path=os.path.join(folder, name), build=True,
            recorded=recorded,
        )

    clvp, _ = tiny.tiny_model(ClvpModelForConditionalGeneration, seed=0)
    part = worker.driven_part(clvp)
    greedy = run("greedy", clvp, part)
    out["clvp"] = {
        "part": part,
        "inputs": greedy.get("inputs"),
        "status": greedy["status"],
        "error": greedy.get("error"),
        "sequences": greedy.get("sequences"),
        "floats": len(greedy.get("scores") or []),
        "calls": len(greedy.get("calls") or []),
    }

    melody, notes = tiny.tiny_model(MusicgenMelodyForConditionalGeneration, seed=0)
    plain, with_melody = run("greedy", melody, ""), run("multimodal", melody, "")
    quantizer = melody.audio_encoder.quantizer
    codes = torch.tensor([[[1, 2, 3, 4]], [[5, 6, 7, 8]]]).transpose(0, 1)  # (codebooks=1, batch=2, frames)
    with torch.no_grad():
        decoded = quantizer.decode(codes)
    out["melody"] = {
        "notes": [n for n in notes if "codebook" in n],
        "given": with_melody.get("inputs"),
        "statuses": [plain["status"], with_melody["status"]],
        "same_scores": plain.get("scores") == with_melody.get("scores"),
        "codes_decode_alike": bool(torch.equal(decoded[0], decoded[1])),
    }
    llama, _ = tiny.tiny_model(LlamaForCausalLM, seed=0)
    out["llama_part"] = worker.driven_part(llama)
    print("RESULT " + json.dumps(out), file=worker.PROTOCOL)  # the worker points sys.stdout at stderr
    """
)


def test_composites_run_as_their_users_run_them(verify_env: tuple[Path, Path], tmp_path: Path) -> None:
    result = _run(verify_env, SCRIPT, tmp_path)
    clvp = result["clvp"]
    # the composite has no method of its own: its speech decoder's prepared inputs are recorded and compared
    assert clvp["part"] == "speech_decoder_model"
    assert clvp["status"] == "ok", clvp["error"]
    assert clvp["inputs"]["input_features"][1] > 1  # the voice: mel features (batch, bins, frames)
    assert clvp["calls"] == 6
    # its output (speech ids and the similarity logits) is compared, not nothing
    assert len(clvp["sequences"][0]) == 6 and clvp["floats"] > 0
    melody = result["melody"]
    assert melody["statuses"] == ["ok", "ok"]
    assert melody["given"]["input_features"][2] == 12  # chroma features (batch, frames, num_chroma)
    assert not melody["same_scores"], "the melody conditions what is generated"
    assert melody["notes"] and not melody["codes_decode_alike"]
    assert result["llama_part"] == "", "a class with its own method (here the mixin stub's override) records itself"


MIMI_SCRIPT = textwrap.dedent(
    r"""
    import json, torch
    from tiny.build import random_codebooks
    from transformers.models.mimi.configuration_mimi import MimiConfig
    from transformers.models.mimi.modeling_mimi import MimiEuclideanCodebook

    config = MimiConfig(codebook_size=8, codebook_dim=4)
    holder = torch.nn.ModuleDict({"quantizer": MimiEuclideanCodebook(config)})
    notes = []
    random_codebooks(holder, 0, notes)
    codebook = holder["quantizer"]
    with torch.no_grad():
        decoded = codebook.decode(torch.tensor([[1, 2]]))
        states = torch.randn((3, 4), generator=torch.Generator().manual_seed(0))
        codes = codebook.quantize(states)
    print("RESULT " + json.dumps({
        "notes": notes,
        "decode_alike": bool(torch.equal(decoded[0, 0], decoded[0, 1])),
        "codes": codes.tolist(),
    }))
    """
)


def test_a_codec_whose_codes_are_a_sum_over_their_usage_gets_random_codes_too(
    verify_env: tuple[Path, Path], tmp_path: Path
) -> None:
    """Mimi's codebook (the codec of 5.x's Moshi, CSM and Kyutai speech-to-text) keeps its code vectors as a sum
    (``embed_sum``) over their usage (ones): all zeros, every code decodes to the same vector and every frame encodes
    to code 0, so the audio a caller gives reaches the model as nothing."""
    result = _run(verify_env, MIMI_SCRIPT, tmp_path)
    assert result["notes"] and "quantizer.embed_sum" in result["notes"][0]
    assert not result["decode_alike"]
    assert len(set(result["codes"])) > 1, result["codes"]
