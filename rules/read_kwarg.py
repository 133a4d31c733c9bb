"""PI191 read-kwarg: read a model input out of `**kwargs` into a local name.

Plumbing: the local then stands for that input, as if it were a parameter. A fall-back to the
config's setting when the input is not given (the 5.0 – 5.2 mixin's ``use_cache``) is part of the
read: it is the value the model's forward would use anyway.

Example::

    token_type_ids = kwargs.get("token_type_ids", None)
"""

import libcst as cst

from codemod.rules._pattern import Template, node_code, string_key
from codemod.rules.base import Case, Context, Kind, Match, NoOp, Rule, Statements, Value, ValueOrigin, parse_docstring
from codemod.rules.values import kwargs_key

_CONFIG_DEFAULT = Template.parse(
    """
    if $name is None:
        $name = getattr(self.config, $key, $_)
    """
)


class ReadKwarg(Rule):
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
        target = assign.targets[0].target
        key = kwargs_key(assign.value, ctx)
        if key is None or not isinstance(target, cst.Name):
            return None
        # a kwargs key is read by ``kwargs.get(...)`` or ``kwargs.pop(...)``: the call is a method's
        popped = (
            isinstance(assign.value, cst.Call)
            and isinstance(assign.value.func, cst.Attribute)
            and assign.value.func.attr.value == "pop"
        )
        how, consumed = "popped" if popped else "read", 1
        fallback = _CONFIG_DEFAULT.match(statements, start + 1)
        value = Value(ValueOrigin.PARAM, key)
        if fallback is not None and fallback.code("name") == target.value and string_key(fallback.nodes["key"]) == key:
            how, consumed = f"{how}; the config's setting when not given", 2
        elif isinstance(assign.value, cst.Call) and len(assign.value.args) > 1:
            default = node_code(assign.value.args[1].value)
            if default != "None":
                # a default the model gets when the caller gives nothing, where the mixin gives nothing
                value = Value(ValueOrigin.PARAM_DEFAULT, f"{key}={default}")
                how = f"{how}; {default} when not given"
        return Match(
            consumed, self.name, f"{key} ({how})", defines={target.value: value}, drops=(key,) if popped else ()
        )


RULE = ReadKwarg()

CASES = (
    Case(
        "get",
        RULE.example,
        detail="token_type_ids (read)",
    ),
    Case(
        "subscript",
        """
        token_type_ids = kwargs['token_type_ids']
        """,
        detail="token_type_ids (read)",
    ),
    Case(
        "pop",
        """
        image_sizes = kwargs.pop("image_sizes", None)
        """,
        detail="image_sizes (popped)",
    ),
    Case(
        "config-fallback",
        """
        output_attentions = kwargs.get("output_attentions")
        if output_attentions is None:  # the forward's own default
            output_attentions = getattr(self.config, "output_attentions", False)
        """,
        detail="output_attentions (read; the config's setting when not given)",
    ),
    NoOp(
        "variable-key",
        """
        token_type_ids = kwargs.get(name)
        """,
        why="a key the rule cannot read (a variable)",
        unrecognised="kwargs.get(name)",
    ),
    NoOp(
        "other-dict",
        """
        token_type_ids = other.get("token_type_ids")
        """,
        why="a dict that is not **kwargs",
        unrecognised="other.get",
    ),
    Case(
        "another-setting-is-not-the-fallback",
        """
        output_attentions = kwargs.get("output_attentions")
        if output_attentions is None:
            output_attentions = getattr(self.config, "output_hidden_states", False)
        """,
        # falling back to a different config setting is not the forward's own default: the read stays one line
        detail="output_attentions (read)",
        unrecognised=("output_attentions = getattr(self.config, 'output_hidden_states', False)",),
        lines=(1, 1),
    ),
)
