"""TB012 and its fix (``codemod.transform.idioms.mask``): an assert that a mask was given goes where the code after
it handles a None mask, on a target whose generate() drops an all-ones mask (5.18 on)."""

from __future__ import annotations

import ast

import pytest

from codemod.analyse.blockers import TreeFacts
from codemod.analyse.mask_rule import MASK
from codemod.transform.idioms import IdiomTarget, migrate

ON_5_23 = IdiomTarget("5.23.0", from_legacy_cache=False)
ON_5_17 = IdiomTarget("5.17.0", from_legacy_cache=False)

#: DeepSeek-V3's eager attention, cut to the mask
ATTENTION = """
class Attention(nn.Module):
    def forward(self, hidden_states, attention_mask=None):
        attn_weights = self.scores(hidden_states)
        assert attention_mask is not None
        if attention_mask is not None:
            attn_weights = attn_weights + attention_mask
        return attn_weights
"""
ATTENTION_FIXED = ATTENTION.replace("        assert attention_mask is not None\n", "")


def test_the_assert_goes_where_a_none_check_follows() -> None:
    result = migrate(ATTENTION, ON_5_23)
    assert result.source == ATTENTION_FIXED
    assert [e.code for e in result.edits] == ["TB012"]
    assert list(MASK.find(ast.parse(ATTENTION), TreeFacts()))
    assert not list(MASK.find(ast.parse(result.source), TreeFacts()))


@pytest.mark.parametrize(
    ("source", "target", "why"),
    [
        pytest.param(ATTENTION, ON_5_17, "5.17's generate() passes the all-ones mask on", id="5.17-target"),
        pytest.param(ATTENTION_FIXED, ON_5_23, "nothing asserted", id="no-assert"),
        pytest.param(
            ATTENTION.replace("attention_mask is not None\n        if", "position_ids is not None\n        if"),
            ON_5_23,
            "generate() still passes position ids",
            id="other-name",
        ),
    ],
)
def test_nothing_to_delete(source: str, target: IdiomTarget, why: str) -> None:
    assert migrate(source, target).source == source, why


def test_an_assert_the_code_relies_on_is_reported() -> None:
    relies = ATTENTION.replace("        if attention_mask is not None:\n            attn", "        attn").replace(
        "            attn_weights = attn_weights + attention_mask",
        "        attn_weights = attn_weights + attention_mask",
    )
    result = migrate(relies, ON_5_23)
    assert result.source == relies
    assert [(n.code, n.reason) for n in result.not_migrated] == [
        ("TB012", "the code after it does not check for None")
    ]
