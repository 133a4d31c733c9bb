"""What a scenario gives a class, by what its ``forward`` takes (``scenarios``), run in the verification environment
the worker runs in: a tiny Llama, and subclasses whose ``forward`` names the inputs 5.x's models take."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.test_tiny import _run

SCRIPT = textwrap.dedent(
    r"""
    import json, warnings
    warnings.filterwarnings("ignore")
    import torch
    import scenarios, tiny
    from transformers.models.llama.modeling_llama import LlamaForCausalLM

    class WithTokenTypes(LlamaForCausalLM):
        # 5.x's vision-language models: the processor's token types (0 for text) beside the ids
        def forward(self, input_ids=None, attention_mask=None, mm_token_type_ids=None, moe_mm_token_type_ids=None,
                    **kwargs):
            return super().forward(input_ids=input_ids, attention_mask=attention_mask, **kwargs)

    class WithSegments(LlamaForCausalLM):
        def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, mm_token_type_ids=None, **kwargs):
            return super().forward(input_ids=input_ids, attention_mask=attention_mask, **kwargs)

    out = {}
    for cls in (LlamaForCausalLM, WithTokenTypes, WithSegments):
        model, _ = tiny.tiny_model(cls, seed=0)
        try:
            kwargs = scenarios.token_type_ids(model, None, 0)
        except scenarios.Skip as skip:
            out[cls.__name__] = {"skip": str(skip)}
            continue
        given = {k: v.tolist() for k, v in kwargs.items() if k.endswith("token_type_ids")}
        with torch.no_grad():
            generated = model.generate(**kwargs, max_new_tokens=3).tolist()
        out[cls.__name__] = {"given": given, "mask": kwargs["attention_mask"].tolist(), "generated": len(generated)}
    print("RESULT " + json.dumps(out))
    """
)


def test_the_token_type_scenario_gives_a_multimodal_models_token_types(
    verify_env: tuple[Path, Path], tmp_path: Path
) -> None:
    """5.23's Ernie 4.5 VL MoE drops its ``mm_token_type_ids`` and ``moe_mm_token_type_ids`` after the first step, a
    statement the dropped-after-prefill hook takes over; no scenario gave them, so its verdict said nothing of that.
    The token-type scenario gives the token types a forward takes, all text (zeros: no image behind them), in its
    left-padded batch, with the segment ids where it takes those too."""
    result = _run(verify_env, SCRIPT, tmp_path)
    skip = "forward takes no token_type_ids (nor mm_token_type_ids, moe_mm_token_type_ids)"
    assert result["LlamaForCausalLM"] == {"skip": skip}
    types = result["WithTokenTypes"]
    assert set(types["given"]) == {"mm_token_type_ids", "moe_mm_token_type_ids"}
    rows = [len(row) for row in types["mask"]]
    assert all(value == [[0] * n for n in rows] for value in types["given"].values())
    assert types["mask"][0][:2] == [0, 0] and types["generated"] == 2  # the left-padded batch, generated from
    both = result["WithSegments"]
    assert set(both["given"]) == {"token_type_ids", "mm_token_type_ids"}
    assert not any(any(row) for row in both["given"]["mm_token_type_ids"])
