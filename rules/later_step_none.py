"""PI172 later-step-none: once there is a cache, set a parameter to None: an input the model takes on the first step only.

Musicgen's decoders hand the encoder's states (the conditioning) to the first forward pass alone,
and later ones read it from the cache; the cut of the ids to the last token usually shares the
block. The name then reaches the prepared inputs as the caller gave it on the first step and None
on the later ones; a reduction sets the key to None after ``super()`` under the same cache test
(the rule records it as the ``guard`` facet, the name as ``name``). The example is the same shape on
an image input. Qwen2-VL (and the remote code written after it) tells the later steps by their
position instead (``if cache_position[0] != 0:``, the ``later-step`` guard): the same input, and the
test as written (the ``test`` facet), which reads only parameters the override never rebinds, is the
one a reduction repeats.

Example::

    if past_key_values is not None:
        pixel_values = None
"""

from __future__ import annotations

import ast

import libcst as cst
import libcst.matchers as m

from codemod.rules.base import (
    Case,
    Context,
    EraNote,
    Kind,
    Match,
    NoOp,
    Rule,
    Statements,
    Value,
    ValueOrigin,
    parse_docstring,
)

#: the cache tests a reduction can repeat after super() (as the last-token cut does): an empty Cache is
#: falsy, so ``if past_key_values:`` and ``is not None`` differ on the first step
PAST_GUARDS = ("past-not-none", "past-truthy")

#: the tests of the later steps by position (``rules.guards``) a reduction can repeat after super() as written: they
#: read only these parameters (the step's position, or 5.x's first-iteration flag and the caching flag)
STEP_NAMES = frozenset({"cache_position", "is_first_iteration", "use_cache"})

#: the cache and its step counters: a reduction never sets these after super()
CACHE_LIKE = ("past_key_values", "past", "past_key_value", "cache_position", "use_cache")


class LaterStepNone(Rule):
    # plumbing: what it does is the value it leaves in the name (None on the later steps); the key that
    # carries it becomes a "set to None after the first step" extra, which a reduction re-creates
    kind = Kind.PLUMBING

    def __init__(self) -> None:
        self.code, self.name, self.summary, self.example = parse_docstring(__doc__)

    def match(self, statements: Statements, start: int, ctx: Context) -> Match | None:
        statement = statements[start]
        if not m.matches(
            statement, m.SimpleStatementLine(body=[m.Assign(targets=[m.AssignTarget(m.Name())], value=m.Name("None"))])
        ):
            return None
        assert isinstance(statement, cst.SimpleStatementLine)
        assign = statement.body[0]
        assert isinstance(assign, cst.Assign) and isinstance(assign.targets[0].target, cst.Name)
        name = assign.targets[0].target.value
        # the innermost guard must be the cache test, and the name a parameter still as the caller gave it:
        # a local, or one already computed, set to None is another thing
        guard = ctx.guards[-1] if ctx.guards else None
        facets = {"guard": guard or "", "name": name}
        if guard == "later-step":
            test = ctx.tests[-1] if len(ctx.tests) == len(ctx.guards) else ""
            if not _repeatable(test, ctx):
                return None
            facets["test"] = test
        elif guard not in PAST_GUARDS:
            return None
        if name not in ctx.params or ctx.value_of(name) != Value(ValueOrigin.PARAM, name):
            return None
        if name in (ctx.ids_param, "input_ids", "decoder_input_ids", "inputs_embeds", "attention_mask", *CACHE_LIKE):
            return None  # what the mixin itself prepares: not a model-specific input
        return Match(
            1,
            self.name,
            f"{name} on the first step only",
            defines={name: Value(ValueOrigin.NONE, ValueOrigin.LATER_STEP.value)},
            facets=facets,
        )


def _repeatable(test: str, ctx: Context) -> bool:
    """Whether a later-step test can be written again after super() and mean the same: it reads only the step's
    parameters (``STEP_NAMES``), each still as the caller gave it. (That the body after it leaves them alone too is
    the plan's to check: ``codemod.transform.reduce._cache_test``.)"""
    try:
        names = {n.id for n in ast.walk(ast.parse(test, mode="eval")) if isinstance(n, ast.Name)}
    except SyntaxError:
        return False
    return (
        bool(names)
        and names <= STEP_NAMES
        and all(n in ctx.params and ctx.value_of(n) == Value(ValueOrigin.PARAM, n) for n in names)
    )


RULE = LaterStepNone()

#: what an override that only does this becomes (rules.doc); the mixin does not do it
BECOMES = "reduced: `super()`, then the key set to None under the same test"

ERAS = (
    EraNote(
        "4.x", "no mixin knows which inputs a model takes on the first step only: the reduction sets the key itself"
    ),
    EraNote("5.x", "the mixin drops the inputs a model lists as first-step-only after prefill"),
)

CASES = (
    Case(
        "first-step-input",
        RULE.example,
        detail="pixel_values on the first step only",
        facets={"guard": "past-not-none", "name": "pixel_values"},
    ),
    Case(
        "truthy-cache",
        """
        if past_key_values:
            input_ids = input_ids[:, -1:]
            token_type_ids = None
        """,
        detail="token_type_ids on the first step only",
        facets={"guard": "past-truthy", "name": "token_type_ids"},
        others=("slice-to-last-token",),
    ),
    Case(
        "step-position",
        """
        if cache_position[0] != 0:
            pixel_values = None
        """,
        detail="pixel_values on the first step only",
        facets={"guard": "later-step", "name": "pixel_values", "test": "cache_position[0] != 0"},
    ),
    NoOp(
        "a-local",
        """
        if past_key_values is not None:
            hidden = None
        """,
        why="a local, not a parameter: nothing the caller gave is withheld",
        unrecognised="hidden = None",
    ),
    NoOp(
        "no-cache-guard",
        """
        if past_key_values is None:
            pixel_values = None
        """,
        why="the guard says there is no cache: this is the first step",
        unrecognised="pixel_values = None",
    ),
    NoOp(
        "step-of-a-local",
        """
        step = cache_position[0]
        if step != 0:
            pixel_values = None
        """,
        why="the test reads a local: the engine cannot tell it is the step's position",
        unrecognised="pixel_values = None",
    ),
    NoOp(
        "unguarded",
        """
        pixel_values = None
        """,
        why="without a cache guard the input is withheld on every step",
        unrecognised="pixel_values = None",
    ),
)
