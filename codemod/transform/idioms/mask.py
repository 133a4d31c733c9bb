"""The fixes for what 5.18's generate() dropping an all-ones attention mask breaks.

- TB012: ``assert attention_mask is not None`` goes where the statement after it already handles a None mask
  (``if attention_mask is not None:``). A None mask then means what generate() means by dropping it: no padding;
  the causal part is the model's own (a one-token step needs none). Elsewhere it is reported.
- TB013: a default mask ``torch.ones((batch_size, n))`` whose length never counted the cache gets the cached
  tokens added (``n + _cached_length(past_key_values)``): the mask 5.17's generate() passed, all ones over every
  token. Nothing changes where a mask is given.
"""

from __future__ import annotations

import ast

import libcst as cst
import libcst.matchers as m

from codemod.analyse.blockers import blocks
from codemod.analyse.mask_rule import MASK, UNCACHED_DEFAULT, uncached_default
from codemod.transform.idioms.base import IdiomEdit, IdiomTarget, NotMigrated, Plan, Source, squeezed, walk


def mask_asserts(source: Source, target: IdiomTarget) -> Plan:
    """The plan that deletes each mask assert a None check follows, on a target from 5.18."""
    plan = Plan()
    if not blocks(MASK.release, target.release):
        return plan
    for node in walk(source.module):
        if not isinstance(node, cst.IndentedBlock):
            continue
        body = list(node.body)
        for index, statement in enumerate(body):
            name = _asserted(source, statement)
            if name is None:
                continue
            line = source.line(statement)
            after = body[index + 1] if index + 1 < len(body) else None
            if not (
                isinstance(after, cst.If) and squeezed(source.code(after.test)) == squeezed(f"{name} is not None")
            ):
                plan.not_migrated.append(NotMigrated("TB012", line, "the code after it does not check for None"))
                continue
            plan.replace[statement] = cst.RemoveFromParent()
            plan.edits.append(IdiomEdit("TB012", line, f"deleted: the next statement handles a None {name}"))
    return plan


def _asserted(source: Source, statement: cst.BaseStatement) -> str | None:
    """The mask name of ``assert <x>attention_mask is not None`` alone on its line, else None."""
    if not m.matches(statement, m.SimpleStatementLine([m.Assert(test=m.Comparison())])):
        return None
    assert isinstance(statement, cst.SimpleStatementLine)
    test = statement.body[0].test  # type: ignore[attr-defined]
    if not (isinstance(test.left, cst.Name) and test.left.value.endswith("attention_mask")):
        return None
    return test.left.value if squeezed(source.code(test)) == squeezed(f"{test.left.value} is not None") else None


CACHED_LENGTH = '''def _cached_length(past_key_values):
    """The tokens a cache holds (a Cache, or 4.x's tuple of layer pasts), 0 without one: 5.18's generate() drops an
    all-ones attention mask, so a default mask has to cover them."""
    if past_key_values is None:
        return 0
    if hasattr(past_key_values, "get_seq_length"):
        return past_key_values.get_seq_length()
    return past_key_values[0][0].shape[-2]'''


def uncached_defaults(source: Source, target: IdiomTarget) -> Plan:
    """The plan that counts the cached tokens into each default mask TB013 finds, on a target from 5.18."""
    plan = Plan()
    if not blocks(UNCACHED_DEFAULT.release, target.release):
        return plan
    tree = source.syntax
    if tree is None:
        return plan
    lengths: dict[tuple[int, int], str] = {}
    for function in (n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)):
        cache = next((a.arg for a in (*function.args.args, *function.args.kwonlyargs) if a.arg.startswith("past")), "")
        for _, length in uncached_default(function):  # only in a function given a cache
            lengths[(length.lineno, length.col_offset)] = cache
    for node in walk(source.module):
        position = source.positions.get(node) if isinstance(node, cst.Name) else None
        if position is None or (position.start.line, position.start.column) not in lengths:
            continue
        assert isinstance(node, cst.Name)
        new = f"{node.value} + _cached_length({lengths[(position.start.line, position.start.column)]})"
        plan.replace[node] = cst.parse_expression(new)
        plan.edits.append(IdiomEdit("TB013", position.start.line, f"torch.ones((..., {new}))"))
    if plan.edits:
        plan.definitions.append(CACHED_LENGTH)
    return plan
