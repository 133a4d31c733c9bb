"""The scenarios of the wide check that verification lacked (issue 41), run in the verification environment on a
tiny Llama: continuing from a returned cache, beam search returning both beams, prompt lookup."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.test_tiny import _run

SCRIPT = textwrap.dedent(
    r"""
    import json, os, tempfile, warnings
    warnings.filterwarnings("ignore")
    import scenarios, tiny
    from transformers.models.llama.modeling_llama import LlamaForCausalLM

    model, _ = tiny.tiny_model(LlamaForCausalLM, seed=0)
    folder = tempfile.mkdtemp()
    out = {}
    for name in ("greedy", "continue-from-cache", "beam-search", "beam-search-returned", "prompt-lookup"):
        result = scenarios.run_scenario(
            name, model, model, seed=0, device="cpu", inputs_path=os.path.join(folder, name), build=True
        )
        out[name] = {
            "status": result["status"],
            "error": result.get("error"),
            "sequences": result.get("sequences"),
            "steps": len(result.get("scores") or []),
            "rows": [len(step) for step in result.get("scores") or []],
            "calls": len(result.get("calls") or []),
            "cached": [scenarios.holds_cache(call) for call in result.get("calls") or []],
            "widths": [(call.get("input_ids") or {}).get("tensor", [0])[-1] for call in result.get("calls") or []],
            "inputs": result.get("inputs"),
        }
    print("RESULT " + json.dumps(out))
    """
)


def test_the_new_scenarios_run_as_their_callers_run_them(verify_env: tuple[Path, Path], tmp_path: Path) -> None:
    result = _run(verify_env, SCRIPT, tmp_path)
    assert all(r["status"] == "ok" for r in result.values()), result
    greedy, continued = result["greedy"], result["continue-from-cache"]
    # two calls, the second from the first's cache: greedy decoding continued generates what one call generates, with
    # every step's scores (three of the first call, three of the second)
    assert continued["sequences"] == greedy["sequences"]
    assert continued["steps"] == greedy["steps"] == 6
    assert continued["calls"] == 6  # the second call's first step is one call, with the returned cache
    assert not continued["cached"][0] and not greedy["cached"][0]
    # the second call starts from the returned cache: its first step is cached, and gives the one token it lacks
    assert continued["cached"][3] and continued["widths"][3] == 1
    # both beams of each row come back: twice the beam search's rows
    assert len(result["beam-search-returned"]["sequences"]) == 2 * len(result["beam-search"]["sequences"])
    # prompt lookup: no assistant model, candidates found in the prompt
    assert result["prompt-lookup"]["inputs"]["prompt_lookup_num_tokens"] == 2
    assert "assistant_model" not in result["prompt-lookup"]["inputs"]
    # and candidates were found in the repeated prompt: the first step checks them with the prompt (a random tiny model
    # rejects them, and its own tokens rarely repeat into candidates on a cached step)
    lookup = result["prompt-lookup"]
    assert lookup["widths"][0] > lookup["inputs"]["input_ids"][1], lookup["widths"]


STATIC_SCRIPT = textwrap.dedent(
    r"""
    import json, warnings
    warnings.filterwarnings("ignore")
    import scenarios, tiny
    from transformers.models.gpt2.modeling_gpt2 import GPT2LMHeadModel
    from transformers.models.llama.modeling_llama import LlamaForCausalLM

    class NoFlagLlama(LlamaForCausalLM):  # as 5.x's classes: no _supports_static_cache to read
        _supports_static_cache = None

        def generate(self, *args, **kwargs):  # and, as 5.x's generate(), none read there either
            type(self)._supports_static_cache = True
            try:
                return super().generate(*args, **kwargs)
            finally:
                type(self)._supports_static_cache = None

    class NoFlagGPT2(GPT2LMHeadModel):
        _supports_static_cache = None

    out = {}
    for cls in (LlamaForCausalLM, NoFlagLlama, GPT2LMHeadModel, NoFlagGPT2):
        model, _ = tiny.tiny_model(cls, seed=0)
        try:
            out[cls.__name__] = sorted(scenarios.static_cache(model, None, 0))
        except scenarios.Skip as skip:
            out[cls.__name__] = "skip: " + str(skip)
    print("RESULT " + json.dumps(out))
    """
)


def test_without_a_static_cache_flag_a_short_run_decides(verify_env: tuple[Path, Path], tmp_path: Path) -> None:
    """5.x's classes say nothing of a static cache (no ``_supports_static_cache``): the scenario tries it on the old
    code instead of skipping every class. Where the flag is there (4.x), it decides as before."""
    result = _run(verify_env, STATIC_SCRIPT, tmp_path)
    wanted = ["attention_mask", "cache_implementation", "do_sample", "input_ids"]
    # without the flag, also the defaults 5.x's generation configs leave None (Musicgen's generate() reads them raw)
    tried = sorted([*wanted, "num_beams", "num_return_sequences"])
    assert result["LlamaForCausalLM"] == wanted and result["NoFlagLlama"] == tried
    assert result["GPT2LMHeadModel"] == "skip: the model does not support a static cache"
    # the short run decides, not the flag: 4.45's generate() gives a model without Cache classes its legacy cache
    # whatever the implementation asked (as 5.x's gives XLNet, Reformer and RWKV theirs): no static cache reaches its
    # forward, and greedy decoding under the scenario's name would be no evidence of one
    assert result["NoFlagGPT2"] == "skip: generate() gives the model a cache of its own, not a static one"
