"""PI191 read-kwarg: read a model input out of `**kwargs` into a local name.

Plumbing: the local then stands for that input, as if it were a parameter.

Example::

    token_type_ids = kwargs.get("token_type_ids", None)
"""

from collections.abc import Sequence

import libcst as cst

from rules.base import Context, Kind, Match, Rule, Value, parse_docstring
from rules.values import kwargs_key


class ReadKwarg(Rule):
    kind = Kind.PLUMBING

    def __init__(self) -> None:
        self.code, self.name, self.summary, self.example = parse_docstring(__doc__)

    def match(self, statements: Sequence[cst.BaseStatement], start: int, ctx: Context) -> Match | None:
        statement = statements[start]
        if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
            return None
        assign = statement.body[0]
        if not isinstance(assign, cst.Assign) or len(assign.targets) != 1:
            return None
        target = assign.targets[0].target
        key = kwargs_key(assign.value, ctx)
        if key is None or not isinstance(target, cst.Name):
            return None
        popped = isinstance(assign.value, cst.Call) and assign.value.func.attr.value == "pop"  # type: ignore[attr-defined]
        return Match(1, self.name, f"{key} ({'popped' if popped else 'read'})",
                     defines={target.value: Value("param", key)},
                     drops=(key,) if popped else ())


RULE = ReadKwarg()
