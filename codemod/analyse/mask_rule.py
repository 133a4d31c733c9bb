"""TB012: model code that asserts it was given an attention mask, which 5.18's generate() no longer passes when
the mask is all ones.

From 5.18.0 ``generate()`` drops an attention mask without padding before the first step (decoder-only models
whose ``forward`` takes one: "no padding, faster mask creation"). DeepSeek-V3's remote attention asserts
``attention_mask is not None`` before adding it, while its model loop hands the layers
``_prepare_4d_causal_attention_mask(None, ...)``, which is None for a one-token step: every cached step fails.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from codemod.analyse.blockers import BlockerRule, Example, Hit, NearMiss, TreeFacts


def asserted_mask(statement: ast.stmt) -> str | None:
    """The name ``assert <x>attention_mask is not None`` asserts, else None."""
    if not isinstance(statement, ast.Assert):
        return None
    test = statement.test
    if not (
        isinstance(test, ast.Compare)
        and len(test.ops) == 1
        and isinstance(test.ops[0], ast.IsNot)
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value is None
        and isinstance(test.left, ast.Name)
    ):
        return None
    return test.left.id if test.left.id.endswith("attention_mask") else None


def _mask_asserts(tree: ast.Module, facts: TreeFacts) -> Iterator[Hit]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Assert) and asserted_mask(node) is not None:
            yield Hit(node.lineno, ast.unparse(node))


MASK = BlockerRule(
    "TB012",
    "asserted-attention-mask",
    "asserts it was given an attention mask, which generate() drops when it has no padding",
    "5.18.0",
    "generation/utils.py: 5.18.0's generate() sets model_kwargs['attention_mask'] = None when it is all ones "
    "(decoder-only, forward takes one; 'we will never have padding'); 5.17.0 passes it on",
    "handle a None mask (no padding): build the causal mask from the shapes, or skip adding it for one query",
    _mask_asserts,
    (
        Example(
            "deepseek",
            "def forward(self, hidden_states, attention_mask=None):\n    assert attention_mask is not None\n"
            "    if attention_mask is not None:\n        attn_weights = attn_weights + attention_mask\n",
        ),
    ),
    (
        NearMiss(
            "checked",
            "def forward(self, hidden_states, attention_mask=None):\n    if attention_mask is not None:\n"
            "        attn_weights = attn_weights + attention_mask\n",
            "the code already handles a None mask",
        ),
        NearMiss(
            "other-name",
            "def forward(self, x, position_ids=None):\n    assert position_ids is not None\n",
            "generate() still passes position ids",
        ),
    ),
)
