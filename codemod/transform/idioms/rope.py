"""TB011's fix: model code reading ``config.rope_scaling`` the 4.x way reads it through ``_rope_scaling(config)``,
a module-level function that gives what 4.x gave (None without scaling, else the dict with its ``"type"``) from
the ``rope_parameters`` 5.x standardises. Every read of a config's ``rope_scaling`` outside the tree's config
classes in a file TB011 fires on goes through it, so the file reads one value everywhere.
"""

from __future__ import annotations

import ast

import libcst as cst

from codemod.analyse.blockers import TreeFacts, blocks
from codemod.analyse.rope_rule import ROPE, config_classes, is_config_read
from codemod.transform.idioms.base import IdiomEdit, IdiomTarget, Plan, Source, walk

ROPE_SCALING = '''def _rope_scaling(config):
    """config.rope_scaling as transformers 4.x gave it: 5.0 returns the rope_parameters it standardises, set for
    every model (rope_type "default" without scaling) and with "type" only where config.json had it."""
    scaling = getattr(config, "rope_scaling", None)
    if not scaling:
        return None
    kind = scaling.get("type", scaling.get("rope_type"))
    if kind in (None, "default"):
        return None
    return {**scaling, "type": kind}'''


def rope_scaling(source: Source, target: IdiomTarget) -> Plan:
    """The plan that reads each config's ``rope_scaling`` through ``_rope_scaling`` on a 5.x target."""
    plan = Plan()
    if not blocks("5.0.0", target.release):
        return plan
    tree = source.syntax
    if tree is None or not list(ROPE.find(tree, TreeFacts())):
        return plan
    inside_configs = {id(n) for c in config_classes(tree) for n in ast.walk(c)}
    reads = {
        (node.lineno, node.col_offset)
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and is_config_read(node) and id(node) not in inside_configs
    }
    for node in walk(source.module):
        if not (isinstance(node, cst.Attribute) and node.attr.value == "rope_scaling"):
            continue
        position = source.positions.get(node)
        if position is None or (position.start.line, position.start.column) not in reads:
            continue
        new = f"_rope_scaling({source.code(node.value)})"
        plan.replace[node] = cst.parse_expression(new)
        plan.edits.append(IdiomEdit("TB011", position.start.line, new))
    if plan.edits:
        plan.definitions.append(ROPE_SCALING)
    return plan
