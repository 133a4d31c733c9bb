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
            "first_cached": scenarios.holds_cache(result["calls"][0]) if result.get("calls") else None,
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
    assert not continued["first_cached"] and not greedy["first_cached"]
    # both beams of each row come back: twice the beam search's rows
    assert len(result["beam-search-returned"]["sequences"]) == 2 * len(result["beam-search"]["sequences"])
    # prompt lookup: no assistant model, candidates found in the prompt
    assert result["prompt-lookup"]["inputs"]["prompt_lookup_num_tokens"] == 2
    assert "assistant_model" not in result["prompt-lookup"]["inputs"]
