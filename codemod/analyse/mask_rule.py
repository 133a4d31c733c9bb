"""TB012, TB013: model code that relies on being given an attention mask, which 5.18's generate() no longer passes
when the mask is all ones.

From 5.18.0 ``generate()`` drops an attention mask without padding before the first step (decoder-only models
whose ``forward`` takes one: "no padding, faster mask creation"). DeepSeek-V3's remote attention asserts
``attention_mask is not None`` before adding it, while its model loop hands the layers
``_prepare_4d_causal_attention_mask(None, ...)``, which is None for a one-token step: every cached step fails
(TB012). StableLM-epoch's model builds a default mask, ``torch.ones((batch_size, seq_length_with_past))``, from a
length it never adds the cached tokens to: the mask is one token long on every cached step (TB013).
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


def uncached_default(function: ast.FunctionDef) -> Iterator[tuple[ast.Call, ast.Name]]:
    """Each ``torch.ones((batch, n), ...)`` made under ``if <x>attention_mask is None:`` in ``function``, with its
    length ``n``, where ``n`` is a name the function sets without ever counting the cache in (no assignment to it
    names a past, none adds to it), in a function given a cache (a parameter named ``past...``)."""
    if not any(a.arg.startswith("past") for a in (*function.args.args, *function.args.kwonlyargs)):
        return
    sets: dict[str, list[ast.AST]] = {}
    for node in ast.walk(function):
        if isinstance(node, ast.Assign):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    sets.setdefault(target.id, []).append(node.value)
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)) and isinstance(node.target, ast.Name):
            sets.setdefault(node.target.id, []).append(node)
    for node in ast.walk(function):
        if not (isinstance(node, ast.If) and _is_none_test(node.test)):
            continue
        for statement in node.body:
            call = statement.value if isinstance(statement, ast.Assign) else None
            if not (isinstance(call, ast.Call) and ast.unparse(call.func) == "torch.ones" and call.args):
                continue
            shape = call.args[0]
            length = shape.elts[-1] if isinstance(shape, ast.Tuple) and len(shape.elts) == 2 else None
            if not isinstance(length, ast.Name) or length.id not in sets:
                continue
            given = sets[length.id]
            if all(not isinstance(v, ast.AugAssign) and "past" not in ast.unparse(v) for v in given):
                yield call, length


def _is_none_test(test: ast.expr) -> bool:
    return (
        isinstance(test, ast.Compare)
        and isinstance(test.left, ast.Name)
        and test.left.id.endswith("attention_mask")
        and isinstance(test.ops[0], ast.Is)
        and isinstance(test.comparators[0], ast.Constant)
        and test.comparators[0].value is None
    )


def _uncached_defaults(tree: ast.Module, facts: TreeFacts) -> Iterator[Hit]:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            for call, _ in uncached_default(node):
                yield Hit(call.lineno, ast.unparse(call))


_STABLELM = (
    "def forward(self, input_ids, attention_mask=None, past_key_values=None):\n"
    "    batch_size, seq_length = input_ids.shape\n"
    "    seq_length_with_past = seq_length\n"
    "    if attention_mask is None:\n"
    "        attention_mask = torch.ones((batch_size, seq_length_with_past), dtype=torch.bool)\n"
)

UNCACHED_DEFAULT = BlockerRule(
    "TB013",
    "uncached-default-mask",
    "builds a default attention mask without the cached tokens, which generate() no longer covers for it",
    "5.18.0",
    "generation/utils.py: 5.18.0's generate() sets model_kwargs['attention_mask'] = None when it is all ones "
    "(5.17.0 passes it on), so the model's own default is built on every cached step, one token long",
    "count the cached tokens in: `past_key_values.get_seq_length()`",
    _uncached_defaults,
    (Example("stablelm-epoch", _STABLELM),),
    (
        NearMiss(
            "counted",
            _STABLELM.replace(
                "    if attention_mask is None:",
                "    if past_key_values is not None:\n"
                "        seq_length_with_past = seq_length_with_past + past_key_values[0][0].shape[2]\n"
                "    if attention_mask is None:",
            ),
            "the length counts the cached tokens (4.3x Llama's)",
        ),
        NearMiss(
            "no-cache",
            _STABLELM.replace(", past_key_values=None", ""),
            "a forward given no cache: the mask covers what it is given",
        ),
    ),
)
