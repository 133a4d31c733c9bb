"""TB010's fix (``codemod.transform.idioms.buffers``): a module whose non-persistent buffers 5.x's ``from_pretrained``
leaves empty keeps its arguments, and the model's ``_init_weights`` rebuilds the buffers from them. (before, after)
pairs on 5.23.0, what is left as it is and why; ``tests/test_idiom_buffers_end_to_end.py`` loads the result."""

from __future__ import annotations

import ast

import pytest

from codemod.analyse.blocker_rules import RULES
from codemod.analyse.blockers import TreeFacts
from codemod.transform.idioms import IdiomTarget, migrate
from codemod.transform.idioms.buffers import RESTORE

FIVE = IdiomTarget("5.23.0", from_legacy_cache=False)
FOUR = IdiomTarget("4.57.1", from_legacy_cache=True)

ROTARY = """
import torch
from torch import nn
from transformers import PreTrainedModel


class RotaryEmbedding(nn.Module):
    def __init__(self, dim, base=10000, device=None):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2).float().to(device) / dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)

    def forward(self, t):
        return torch.outer(t, self.inv_freq)
"""

KEEP = '        self.__dict__.setdefault("_init_kwargs", {{{}}})  # TB010: _init_weights rebuilds its buffers from these\n'
ROTARY_KEPT = ROTARY.replace(
    "        super().__init__()\n",
    KEEP.format('"dim": dim, "base": base, "device": device') + "        super().__init__()\n",
)
HEADER = "from transformers import PreTrainedModel\n"
WITH_RESTORE = HEADER + "\n\n" + RESTORE + "\n"

MODEL_WITH_INIT = '''

class ToyPreTrainedModel(PreTrainedModel):
    def _init_weights(self, module):
        """Normal weights."""
        if isinstance(module, nn.Linear):
            module.weight.data.normal_()
'''
MODEL_WITH_INIT_FIXED = '''

class ToyPreTrainedModel(PreTrainedModel):
    def _init_weights(self, module):
        """Normal weights."""
        if isinstance(module, (RotaryEmbedding,)):
            _restore_buffers(module)
        if isinstance(module, nn.Linear):
            module.weight.data.normal_()
'''
MODEL_WITHOUT_INIT = """

class ToyPreTrainedModel(PreTrainedModel):
    base_model_prefix = "model"
"""
MODEL_WITHOUT_INIT_FIXED = """

class ToyPreTrainedModel(PreTrainedModel):
    base_model_prefix = "model"

    def _init_weights(self, module):
        super()._init_weights(module)
        if isinstance(module, (RotaryEmbedding,)):
            _restore_buffers(module)
"""
SCALED = """

class ScaledRotaryEmbedding(RotaryEmbedding):
    def __init__(self, dim, scale=1.0, **kwargs):
        self.scale = scale
        super().__init__(dim, **kwargs)
"""
SCALED_FIXED = SCALED.replace(
    "        self.scale = scale\n",
    KEEP.format('"dim": dim, "scale": scale, **kwargs') + "        self.scale = scale\n",
)


def _fixed(before: str) -> str:
    return before.replace(ROTARY, ROTARY_KEPT).replace(HEADER, WITH_RESTORE, 1)


@pytest.mark.parametrize(
    ("before", "after"),
    [
        pytest.param(
            ROTARY + MODEL_WITH_INIT, _fixed(ROTARY) + MODEL_WITH_INIT_FIXED, id="init-weights-gets-a-branch"
        ),
        pytest.param(
            ROTARY + MODEL_WITHOUT_INIT, _fixed(ROTARY) + MODEL_WITHOUT_INIT_FIXED, id="init-weights-calling-super"
        ),
        pytest.param(
            ROTARY + SCALED + MODEL_WITH_INIT,
            _fixed(ROTARY) + SCALED_FIXED + MODEL_WITH_INIT_FIXED,
            id="a-subclass-keeps-its-own-arguments-first",
        ),
    ],
)
def test_the_buffers_are_rebuilt_by_init_weights_on_5x(before: str, after: str) -> None:
    result = migrate(before, FIVE)
    assert result.source == after
    assert [e.code for e in result.edits] == ["TB010"]
    assert result.not_migrated == ()
    # the rule no longer fires on what the fix wrote
    rule = next(r for r in RULES if r.code == "TB010")
    assert list(rule.find(ast.parse(before), TreeFacts()))
    assert not list(rule.find(ast.parse(result.source), TreeFacts()))


@pytest.mark.parametrize(
    ("source", "target", "why"),
    [
        pytest.param(ROTARY + MODEL_WITH_INIT, FOUR, "4.x builds the model with real buffers", id="4x-target"),
        pytest.param(
            ROTARY.replace("persistent=False", "persistent=True") + MODEL_WITH_INIT,
            FIVE,
            "a persistent buffer is saved with the weights",
            id="persistent",
        ),
        pytest.param(
            ROTARY
            + MODEL_WITH_INIT.replace("nn.Linear", "(nn.Linear, RotaryEmbedding)").replace(
                "module.weight.data.normal_()", "module.inv_freq.copy_(make())"
            ),
            FIVE,
            "the model's _init_weights restores it",
            id="restored-already",
        ),
    ],
)
def test_nothing_to_rebuild(source: str, target: IdiomTarget, why: str) -> None:
    result = migrate(source, target)
    assert result.source == source, why
    assert not [e for e in result.edits if e.code == "TB010"]


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        pytest.param(
            ROTARY.replace(
                "        super().__init__()\n", "        super().__init__()\n        self.w = nn.Linear(2, 2)\n"
            )
            + MODEL_WITH_INIT,
            "the module builds parameters",
            id="holds-parameters",
        ),
        pytest.param(
            ROTARY.replace("def __init__(self, dim, base=10000, device=None)", "def __init__(self, *args)").replace(
                "inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2).float().to(device) / dim))",
                "inv_freq = make(*args)",
            )
            + MODEL_WITH_INIT,
            "*args",
            id="star-args",
        ),
        pytest.param(ROTARY, "no PreTrainedModel in the file", id="no-model-in-the-file"),
        pytest.param(
            ROTARY + MODEL_WITH_INIT.replace("_init_weights(self, module)", "_init_weights(self, module, std)"),
            "_init_weights is not (self, module)",
            id="other-init-weights",
        ),
    ],
)
def test_a_buffer_that_cannot_be_rebuilt_is_reported(source: str, reason: str) -> None:
    result = migrate(source, FIVE)
    assert result.source == source
    assert any(n.code == "TB010" and reason in n.reason for n in result.not_migrated), result.not_migrated
