"""TB011: model code that reads ``config.rope_scaling`` as 4.x gave it, which 5.x's config standardises.

Up to 4.57.1 ``rope_scaling`` is a plain attribute: None without scaling, else what ``config.json`` held
(``{"type": "linear", "factor": 2.0}``). From 5.0.0 it is a property returning ``rope_parameters``, which the
config fills for every model (``{"rope_type": "default", "rope_theta": ...}`` without scaling). So a model that
asks ``config.rope_scaling is None`` takes its scaled branch and looks for ``["type"]`` (InternLM2's ``KeyError:
'type'`` on load). Read outside the tree's config classes (their ``__init__`` reads it before 5.x standardises).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from codemod.analyse.blockers import BlockerRule, Example, Hit, NearMiss, TreeFacts

CONFIG_BASES = ("PretrainedConfig", "PreTrainedConfig")


def is_config_read(node: ast.AST) -> bool:
    """``config.rope_scaling`` or ``<x>.config.rope_scaling``, read."""
    if not (isinstance(node, ast.Attribute) and node.attr == "rope_scaling" and isinstance(node.ctx, ast.Load)):
        return False
    holder = node.value
    return (isinstance(holder, ast.Name) and holder.id.endswith("config")) or (
        isinstance(holder, ast.Attribute) and holder.attr.endswith("config")
    )


def config_classes(tree: ast.Module) -> list[ast.ClassDef]:
    return [
        c
        for c in ast.walk(tree)
        if isinstance(c, ast.ClassDef) and any(ast.unparse(b).rsplit(".", 1)[-1] in CONFIG_BASES for b in c.bases)
    ]


def _as_4x(read: ast.Attribute, parents: dict[int, ast.AST]) -> bool:
    """Whether the read is used the 4.x way: tested against None or for truth, or indexed by ``"type"``."""
    parent = parents.get(id(read))
    if isinstance(parent, ast.Compare) and any(
        isinstance(c, ast.Constant) and c.value is None for c in parent.comparators
    ):
        return True
    if isinstance(parent, (ast.If, ast.IfExp, ast.While)) and parent.test is read:
        return True
    if isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.Not):
        return True
    if isinstance(parent, ast.BoolOp):
        return True
    return (
        isinstance(parent, ast.Subscript) and isinstance(parent.slice, ast.Constant) and parent.slice.value == "type"
    )


def _standardised_reads(tree: ast.Module, facts: TreeFacts) -> Iterator[Hit]:
    inside_configs = {id(n) for c in config_classes(tree) for n in ast.walk(c)}
    parents = {id(child): node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    for node in ast.walk(tree):
        if is_config_read(node) and id(node) not in inside_configs and _as_4x(node, parents):  # type: ignore[arg-type]
            line = getattr(node, "lineno", 0)
            statement = parents.get(id(node))
            yield Hit(line, ast.unparse(statement if statement is not None else node))


ROPE = BlockerRule(
    "TB011",
    "standardised-rope-scaling",
    "reads config.rope_scaling as 4.x gave it (None without scaling, a 'type' key)",
    "5.0.0",
    "configuration_utils.py: 4.57.1 has rope_scaling as a plain attribute; 5.0.0 makes it a property returning "
    "rope_parameters, and modeling_rope_utils.py's standardize_rope_params fills it for every model "
    "(setdefault('rope_type', ... 'default'), setdefault('rope_theta', ...)): never None, and 'type' only where "
    "config.json had it",
    "`config.rope_parameters['rope_type']` ('default' without scaling) and the target's `ROPE_INIT_FUNCTIONS`",
    _standardised_reads,
    (
        Example(
            "is-none",
            "class Attention(nn.Module):\n    def _init_rope(self):\n        if self.config.rope_scaling is None:\n"
            "            self.rotary_emb = RotaryEmbedding(self.head_dim)\n        else:\n"
            '            scaling_type = self.config.rope_scaling["type"]\n',
            hits=2,
        ),
        Example("truth", "def rope(config):\n    return Scaled(config) if config.rope_scaling else Plain(config)\n"),
    ),
    (
        NearMiss(
            "config-validation",
            "class ToyConfig(PretrainedConfig):\n    def _rope_scaling_validation(self):\n"
            "        if self.rope_scaling is None:\n            return\n",
            "the config's own check runs in its __init__, before 5.x standardises the value",
        ),
        NearMiss(
            "factor-only",
            'def factor(config):\n    return config.rope_scaling.get("factor", 1.0)\n',
            "a read with a default for a key the standardised dict keeps",
        ),
    ),
)
