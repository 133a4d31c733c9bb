"""TB012, TB013 and their fixes (``codemod.transform.idioms.mask``), on a target whose generate() drops an all-ones
mask (5.18 on): an assert that a mask was given goes where the code after it handles a None mask, and a default mask
built without the cached tokens gets them."""

from __future__ import annotations

import ast

import pytest

from codemod.analyse.blockers import TreeFacts
from codemod.analyse.mask_rule import MASK, UNCACHED_DEFAULT
from codemod.transform.idioms import IdiomTarget, migrate
from codemod.transform.idioms.mask import CACHED_LENGTH

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


#: StableLM-epoch's model loop, cut to its default mask: the length never counts the cache
DEFAULT = """import torch


class Model(PreTrainedModel):
    def forward(self, input_ids, attention_mask=None, past_key_values=None):
        batch_size, seq_length = input_ids.shape
        seq_length_with_past = seq_length
        past_key_values_length = 0
        if attention_mask is None:
            attention_mask = torch.ones(
                (batch_size, seq_length_with_past),
                dtype=torch.bool,
            )
        return attention_mask
"""


def test_a_default_mask_gets_the_cached_tokens_on_5_18_on() -> None:
    result = migrate(DEFAULT, ON_5_23)
    assert [e.code for e in result.edits] == ["TB013"]
    assert "(batch_size, seq_length_with_past + _cached_length(past_key_values))," in result.source
    assert "def _cached_length(past_key_values):" in result.source
    assert list(UNCACHED_DEFAULT.find(ast.parse(DEFAULT), TreeFacts()))
    # what the fix wrote counts the past in: the rule no longer fires on it
    assert not list(UNCACHED_DEFAULT.find(ast.parse(result.source), TreeFacts()))


@pytest.mark.parametrize(
    ("held", "length"),
    [
        pytest.param(None, 0, id="no-cache"),
        pytest.param("cache", 5, id="a-cache-object"),
        pytest.param("tuples", 5, id="4x-tuples-of-layer-pasts"),
    ],
)
def test_the_cached_length_helper(held: str | None, length: int) -> None:
    namespace: dict[str, object] = {}
    exec(CACHED_LENGTH, namespace)  # noqa: S102 - the helper the fix writes into model code
    helper = namespace["_cached_length"]
    assert callable(helper)

    class Cache:
        def get_seq_length(self) -> int:
            return 5

    class Past:
        shape = (1, 2, 5, 4)

    given = {None: None, "cache": Cache(), "tuples": ((Past(), Past()),)}[held]
    assert helper(given) == length


@pytest.mark.parametrize(
    ("source", "target", "why"),
    [
        pytest.param(DEFAULT, ON_5_17, "5.17's generate() passes the all-ones mask on", id="5.17-target"),
        pytest.param(
            DEFAULT.replace(
                "        if attention_mask is None:",
                "        if past_key_values is not None:\n"
                "            seq_length_with_past = seq_length_with_past + past_key_values.get_seq_length()\n"
                "        if attention_mask is None:",
            ),
            ON_5_23,
            "the length counts the cached tokens (4.3x Llama's)",
            id="counted",
        ),
        pytest.param(
            DEFAULT.replace(", past_key_values=None", ""), ON_5_23, "a forward given no cache", id="no-cache"
        ),
    ],
)
def test_a_default_mask_left_as_it_is(source: str, target: IdiomTarget, why: str) -> None:
    assert migrate(source, target).source == source, why
