"""TB011 and its fix (``codemod.transform.idioms.rope``): model code reading ``config.rope_scaling`` the 4.x way
reads it through ``_rope_scaling``, which gives 4.x's value from what 5.x's config holds. (before, after) pairs
on 5.23.0, no-ops with why, and the helper run against both shapes of config."""

from __future__ import annotations

import ast
import types

import pytest

from codemod.analyse.blockers import TreeFacts
from codemod.analyse.rope_rule import ROPE
from codemod.transform.idioms import IdiomTarget, migrate
from codemod.transform.idioms.rope import ROPE_SCALING

FIVE = IdiomTarget("5.23.0", from_legacy_cache=False)
FOUR = IdiomTarget("4.57.1", from_legacy_cache=True)

HEADER = "from transformers import PreTrainedModel\n"
ATTENTION = """

class Attention(nn.Module):
    def _init_rope(self):
        if self.config.rope_scaling is None:
            self.rotary_emb = RotaryEmbedding(self.head_dim)
        else:
            scaling_type = self.config.rope_scaling["type"]
            scaling_factor = self.config.rope_scaling["factor"]
"""
ATTENTION_FIXED = """

class Attention(nn.Module):
    def _init_rope(self):
        if _rope_scaling(self.config) is None:
            self.rotary_emb = RotaryEmbedding(self.head_dim)
        else:
            scaling_type = _rope_scaling(self.config)["type"]
            scaling_factor = _rope_scaling(self.config)["factor"]
"""
CONFIG = """

class ToyConfig(PretrainedConfig):
    def _rope_scaling_validation(self):
        if self.rope_scaling is None:
            return
"""
BUILDER = """

def rope(config):
    return Scaled(config) if config.rope_scaling else Plain(config)
"""
BUILDER_FIXED = """

def rope(config):
    return Scaled(config) if _rope_scaling(config) else Plain(config)
"""


def _with_helper(code: str) -> str:
    return code.replace(HEADER, HEADER + "\n\n" + ROPE_SCALING + "\n", 1)


@pytest.mark.parametrize(
    ("before", "after"),
    [
        pytest.param(HEADER + ATTENTION, _with_helper(HEADER + ATTENTION_FIXED), id="is-none-and-type"),
        pytest.param(HEADER + BUILDER, _with_helper(HEADER + BUILDER_FIXED), id="truth"),
        pytest.param(
            HEADER + CONFIG + ATTENTION, _with_helper(HEADER + CONFIG + ATTENTION_FIXED), id="config-class-left-alone"
        ),
    ],
)
def test_rope_scaling_is_read_as_4x_gave_it_on_5x(before: str, after: str) -> None:
    result = migrate(before, FIVE)
    assert result.source == after
    assert {e.code for e in result.edits} == {"TB011"}
    assert list(ROPE.find(ast.parse(before), TreeFacts()))
    assert not list(ROPE.find(ast.parse(result.source), TreeFacts()))


@pytest.mark.parametrize(
    ("source", "target", "why"),
    [
        pytest.param(HEADER + ATTENTION, FOUR, "4.x's rope_scaling is the plain attribute", id="4x-target"),
        pytest.param(HEADER + CONFIG, FIVE, "the config's own check runs before 5.x standardises", id="config-only"),
        pytest.param(
            HEADER + 'def factor(config):\n    return config.rope_scaling.get("factor", 1.0)\n',
            FIVE,
            "a read with a default for a key the standardised dict keeps",
            id="factor-only",
        ),
    ],
)
def test_nothing_to_read_differently(source: str, target: IdiomTarget, why: str) -> None:
    assert migrate(source, target).source == source, why


@pytest.mark.parametrize(
    ("held", "expected"),
    [
        pytest.param(None, None, id="4x-none"),
        pytest.param({"rope_type": "default", "rope_theta": 10000.0}, None, id="5x-standardised-default"),
        pytest.param({"type": "linear", "factor": 2.0}, {"type": "linear", "factor": 2.0}, id="4x-scaled"),
        pytest.param(
            {"type": "dynamic", "factor": 2.0, "rope_type": "dynamic", "rope_theta": 1e6},
            {"type": "dynamic", "factor": 2.0, "rope_type": "dynamic", "rope_theta": 1e6},
            id="5x-scaled-from-a-4x-config-json",
        ),
        pytest.param(
            {"rope_type": "linear", "factor": 4.0},
            {"rope_type": "linear", "factor": 4.0, "type": "linear"},
            id="5x-rope-type-only",
        ),
    ],
)
def test_the_helper_gives_4x_value(held: dict[str, object] | None, expected: dict[str, object] | None) -> None:
    namespace: dict[str, object] = {}
    exec(ROPE_SCALING, namespace)  # noqa: S102 - the helper the fix writes into model code
    helper = namespace["_rope_scaling"]
    assert callable(helper)
    assert helper(types.SimpleNamespace(rope_scaling=held)) == expected
