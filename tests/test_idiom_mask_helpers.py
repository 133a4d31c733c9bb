"""TB008's fix for the mask helpers 4.35 removed (``codemod.transform.idioms.mask_helpers``): the float pair bound to
``AttentionMaskConverter``'s, Bloom's boolean pair written in the module; (before, after) pairs, what is reported,
and the written helpers run against the values 4.33.3's Bloom gives (in the verification environment)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from codemod.transform.idioms import IdiomTarget, migrate
from codemod.transform.idioms.mask_helpers import BLOOM_CAUSAL, BLOOM_EXPAND
from tests.test_tiny import _run

ON_4_46 = IdiomTarget("4.46.3", from_legacy_cache=True)
ON_4_34 = IdiomTarget("4.34.1", from_legacy_cache=True)

#: MPT's hf_prefixlm_converter.py, cut to its imports
HEADER = "import torch\nfrom transformers.models.opt.modeling_opt import OPTForCausalLM\n"
OPT = "from transformers.models.opt.modeling_opt import _expand_mask as _expand_mask_opt\n"
BLOOM = "from transformers.models.bloom.modeling_bloom import _make_causal_mask as _make_causal_mask_bloom, logging\n"
USE = "\n\ndef f(mask):\n    return _expand_mask_opt(mask, torch.float32)\n"


def test_opts_helper_is_bound_to_the_attention_mask_converters() -> None:
    result = migrate(HEADER + OPT + USE, ON_4_46)
    assert result.source == (
        HEADER + "from transformers.modeling_attn_mask_utils import AttentionMaskConverter\n\n\n"
        "_expand_mask_opt = AttentionMaskConverter._expand_mask  # opt's _expand_mask, which 4.35 moved there\n" + USE
    )
    assert [e.code for e in result.edits] == ["TB008"]


def test_blooms_helper_is_written_in_the_module_and_the_rest_of_the_import_kept() -> None:
    result = migrate(HEADER + BLOOM + USE, ON_4_46)
    assert "from transformers.models.bloom.modeling_bloom import logging\n" in result.source
    assert BLOOM_CAUSAL.format(name="_make_causal_mask_bloom") in result.source
    assert [e.code for e in result.edits] == ["TB008"]


@pytest.mark.parametrize(
    ("source", "target", "why"),
    [
        pytest.param(HEADER + OPT + USE, ON_4_34, "4.34 still defines them", id="4.34-target"),
        pytest.param(HEADER + USE, ON_4_46, "nothing removed is imported", id="no-import"),
    ],
)
def test_nothing_to_bind(source: str, target: IdiomTarget, why: str) -> None:
    assert migrate(source, target).source == source, why


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        pytest.param(
            HEADER + "from transformers.models.falcon.modeling_falcon import _expand_mask\n",
            "falcon's helpers are not known",
            id="falcon-takes-other-arguments",
        ),
        pytest.param(BLOOM, "the module does not import torch", id="bloom-without-torch"),
    ],
)
def test_a_helper_not_known_is_reported(source: str, reason: str) -> None:
    result = migrate(source, ON_4_46)
    assert result.source == source
    assert [(n.code, n.reason) for n in result.not_migrated] == [("TB008", reason)]


#: the written Bloom helpers against the values 4.33.3's modeling_bloom gives (computed there once, below)
VALUES = textwrap.dedent(
    r"""
    import json
    import torch
    exec(EXPAND)
    exec(CAUSAL)
    mask = torch.tensor([[0, 1, 1], [1, 1, 1]])
    expanded = _expand_mask_bloom(mask, 2)
    causal = _make_causal_mask_bloom((1, 2), torch.device("cpu"), 1)
    print("RESULT " + json.dumps({"expanded": expanded.tolist(), "shape": list(expanded.shape),
                                  "causal": causal.tolist(), "dtype": str(causal.dtype)}))
    """
)


def test_the_written_bloom_helpers_give_4_33_3s_values(verify_env: tuple[Path, Path], tmp_path: Path) -> None:
    script = VALUES.replace("EXPAND", repr(BLOOM_EXPAND.format(name="_expand_mask_bloom"))).replace(
        "CAUSAL", repr(BLOOM_CAUSAL.format(name="_make_causal_mask_bloom"))
    )
    found = _run(verify_env, script, tmp_path)
    # 4.33.3: ~(mask[:, None, None, :].bool()).expand(2, 1, 2, 3), and the causal mask with one past position
    assert found["shape"] == [2, 1, 2, 3]
    assert found["expanded"] == [[[[True, False, False]] * 2], [[[False, False, False]] * 2]]
    assert found["causal"] == [[[[False, False, True], [False, False, False]]]] and found["dtype"] == "torch.bool"
