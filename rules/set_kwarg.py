"""PI192 set-kwarg: set or replace a keyword argument before handing `**kwargs` on.

Example::

    kwargs["logits_to_keep"] = self.config.num_logits_to_keep
"""

import libcst as cst

from codemod.rules._pattern import node_code
from codemod.rules.base import Case, Context, Kind, Match, NoOp, Rule, Statements, parse_docstring
from codemod.rules.values import kwargs_key, step_value, value_of


class SetKwarg(Rule):
    kind = Kind.PLUMBING

    def __init__(self) -> None:
        self.code, self.name, self.summary, self.example = parse_docstring(__doc__)

    def match(self, statements: Statements, start: int, ctx: Context) -> Match | None:
        statement = statements[start]
        if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
            return None
        assign = statement.body[0]
        if not isinstance(assign, cst.Assign) or len(assign.targets) != 1:
            return None
        key = kwargs_key(assign.targets[0].target, ctx)
        if key is None:
            return None
        return Match(
            1,
            self.name,
            key,
            outputs={key: step_value(value_of(assign.value, ctx), ctx)},
            via_kwargs=True,
            output_code={key: node_code(assign.value)},
        )


RULE = SetKwarg()

#: what an override that only does this becomes (rules.doc)
BECOMES = "reduced: `super()`, then the key set as the override sets it"

CASES = (
    Case(
        "from-the-config",
        RULE.example,
        detail="logits_to_keep",
    ),
    NoOp(
        "variable-key",
        """
        kwargs[name] = 1
        """,
        why="a key the rule cannot read (a variable)",
        unrecognised="kwargs[name] = 1",
    ),
)
