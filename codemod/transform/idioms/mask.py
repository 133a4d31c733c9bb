"""TB012's fix: ``assert attention_mask is not None`` goes where the statement after it already handles a None
mask (``if attention_mask is not None:``). A None mask then means what 5.18's generate() means by dropping it:
no padding; the causal part is the model's own (a one-token step needs none). Elsewhere it is reported.
"""

from __future__ import annotations

import libcst as cst
import libcst.matchers as m

from codemod.analyse.blockers import blocks
from codemod.analyse.mask_rule import MASK
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
