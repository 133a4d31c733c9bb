"""A condition an override computes itself in front of ``super()`` (``Atom.OWN``), and what the statements
of a body may change.
"""

from __future__ import annotations

import ast
import dataclasses
import textwrap

from codemod.analyse.analysis import BodyAnalysis, Delegation, Param, TopLevel, Unrecognised
from codemod.analyse.classify import RESULT
from codemod.analyse.index import Override
from codemod.analyse.mixin import MixinProfile
from codemod.contracts import (
    ParamKind,
)
from codemod.transform.hooks.normalise import atom_formula, atom_of, context_of
from codemod.transform.hooks.vocabulary import Atom


@dataclasses.dataclass(frozen=True)
class OwnCondition:
    """A condition an override computes itself (``Atom.OWN``): top-level statements in front of ``super()`` that
    assign only names of their own, read only its arguments (and ``self``), and that nothing else reads but one
    ``if <name> or <first step>:`` after the call, whose body passes inputs on as given
    (``model_inputs["pixel_values"] = pixel_values``). 4.45's llava family::

        legacy_processing = input_ids is not None and (input_ids == self.config.image_token_index).sum(1).max() < ...
        model_inputs = super().prepare_inputs_for_generation(input_ids, ...)
        if legacy_processing or cache_position[0] == 0:
            model_inputs["pixel_values"] = pixel_values

    The statements can move into the model's ``_generation_needs_first_step_inputs``, which the mixin asks with the
    arguments as given, before it prepares anything: the same values the statements read where they were."""

    local: str  # the name the ``if`` tests
    statements: tuple[int, ...]  # the statements that compute it (indices into the body: the docstring counts)
    spans: tuple[tuple[int, int], ...]  # their lines, and the ``if``'s
    keys: tuple[str, ...]  # the inputs the ``if`` passes
    reads: tuple[Param, ...]  # the parameters the statements read besides the ids, with their defaults


def statement_tree(u: Unrecognised) -> ast.Module | None:
    try:
        return ast.parse(textwrap.dedent(u.source or u.code))
    except SyntaxError:
        return None


def _passes_on(node: ast.If, result: str, params: set[str]) -> tuple[str, ...] | None:
    """The inputs an ``if`` body passes on as given (``result["k"] = k``, ``k`` a parameter), None for anything else."""
    keys = []
    for statement in node.body:
        if not (isinstance(statement, ast.Assign) and len(statement.targets) == 1):
            return None
        target, value = statement.targets[0], statement.value
        if not (
            isinstance(target, ast.Subscript)
            and isinstance(target.value, ast.Name)
            and target.value.id == result
            and isinstance(target.slice, ast.Constant)
            and isinstance(target.slice.value, str)
            and isinstance(value, ast.Name)
            and value.id == target.slice.value
            and value.id in params
        ):
            return None
        keys.append(value.id)
    return tuple(keys) if keys and not node.orelse else None


def _pure(tree: ast.Module, names: set[str]) -> bool:
    """Code that binds only ``names`` and changes nothing in place (no item or attribute set, no mutating call)."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.Global, ast.Nonlocal, ast.Delete, ast.AugAssign, ast.Return)):
            return False
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load) and node.id not in names:
            return False
        if isinstance(node, (ast.Subscript, ast.Attribute)) and not isinstance(node.ctx, ast.Load):
            return False
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and (node.func.attr.endswith("_") or node.func.attr in _MUTATING_METHODS)
        ):
            return False
    return True


def own_condition(o: Override, profile: MixinProfile) -> OwnCondition | None:
    """The override's own condition (see :class:`OwnCondition`), or None."""
    a = o.analysis
    call = next((t for t in a.top_level if "super" in t.reads), None)
    if a.delegation is not Delegation.SUPER or call is None or call.writes != (RESULT,):
        return None
    params = {p.name for p in a.params} - {"self"}
    context = context_of(o, profile)
    guarded: list[tuple[TopLevel, str, tuple[str, ...]]] = []
    for t in a.top_level[call.index :]:
        u = next((u for u in a.unrecognised if u.line == t.line), None)
        tree = statement_tree(u) if u is not None and not t.recognised else None
        node = tree.body[0] if tree is not None and len(tree.body) == 1 else None
        if (
            not isinstance(node, ast.If)
            or not isinstance(node.test, ast.BoolOp)
            or not isinstance(node.test.op, ast.Or)
        ):
            continue
        names = [v for v in node.test.values if isinstance(v, ast.Name) and v.id not in params]
        tests = [v for v in node.test.values if v not in names]
        keys = _passes_on(node, RESULT, params)
        if (
            len(names) == 1
            and len(tests) == 1
            and atom_of(tests[0], context, "") == atom_formula(Atom.FIRST.value)
            and keys
        ):
            guarded.append((t, names[0].id, keys))
    if len(guarded) != 1:
        return None
    test, local, keys = guarded[0]
    if any(out.key in keys for out in a.outputs) or set(keys) & set(a.dropped):
        return None  # the key is set or dropped elsewhere too: which write holds depends on where
    before = [t for t in a.top_level if t.index < call.index]
    computing = [t for t in before if t.writes and not set(t.writes) & (params | {RESULT})]
    own = {n for t in computing for n in t.writes}
    if local not in own:
        return None
    recognised_lines = {r.line for r in a.recognised}
    for t in computing:
        span = range(t.line, (t.end_line or t.line) + 1)
        parts = [u for u in a.unrecognised if u.line in span]
        trees = [statement_tree(u) for u in parts]
        if (
            t.recognised
            or recognised_lines & set(span)
            or not parts
            or any(tree is None or not _pure(tree, own) for tree in trees)
        ):
            return None
        if not set(t.reads) <= params | own | {"self"}:
            return None
        # what a statement in front of it assigns must not be something it reads: it reads the arguments as given
        if any(
            set(other.writes) & set(t.reads) for other in before if other.index < t.index and other not in computing
        ):
            return None
    # nothing else reads what they compute: the ``if`` alone, and only the name it tests
    if any(set(t.reads) & own for t in a.top_level if t not in computing and t is not test) or set(
        test.reads
    ) & own != {local}:
        return None
    ids = a.ids_param
    mixin_named = {p.name for p in profile.analysis.params if p.kind.named} if profile.analysis else set()
    read = sorted({n for t in computing for n in t.reads} & params - {ids})
    if set(read) & mixin_named:
        return None  # the mixin asks its method with its **kwargs: not the inputs it names itself
    by_name = {p.name: p for p in a.params}
    spans = tuple((t.line, t.end_line or t.line) for t in (*computing, test))
    return OwnCondition(local, tuple(t.index for t in computing), spans, keys, tuple(by_name[n] for n in read))


#: the read-only methods a statement may call on the dict it builds or on ``**kwargs`` without changing a key
_READING_METHODS = frozenset({"get", "keys", "items", "values", "copy"})


#: the methods that change a list, a dict or a set in place (a tensor's end in ``_``)
_MUTATING_METHODS = frozenset(
    {
        "append",
        "extend",
        "insert",
        "remove",
        "sort",
        "reverse",
        "update",
        "pop",
        "popitem",
        "setdefault",
        "clear",
        "add",
        "discard",
    }
)


def may_change(a: BodyAnalysis, u: Unrecognised, key: str) -> bool:
    """Whether the statement ``u`` (no rule understands it) may change what the override ends with under ``key``.

    Only a statement after the one that made the dict is read (before it, whatever it assigns may be an input
    the mixin prepares ``key`` from: Bark's cut mask makes the positions), as code: it may not rebind the dict,
    ``**kwargs``, ``key`` or a name ``key``'s writes read (their values or their conditions), set or delete
    ``key`` or a key it cannot name, or hand the dict or ``**kwargs`` to any call but a read (``.get``). PaliGemma's
    4D mask for a static cache sets ``attention_mask`` only: its ``pixel_values`` can still be read off the rest."""
    owner = owner_of(a, u.line)
    made = next((t for t in a.top_level if t.builds_output and RESULT in t.writes), None)
    if owner is None or made is None or owner.index <= made.index or owner.returns:
        return True
    try:
        tree = ast.parse(textwrap.dedent(u.source or u.code))
    except SyntaxError:
        return True
    kwargs = {p.name for p in a.params if p.kind is ParamKind.VAR_KEYWORDS}
    containers = {RESULT} | kwargs
    names = {key} | containers
    for out in a.outputs:
        if out.key == key:
            names |= names_in_expression(out.expr) | {
                n for condition in out.conditions for n in names_in_expression(condition)
            }
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}

    def mutated(node: ast.expr) -> bool:
        """``node`` changed in place: an item or attribute set on it, a mutating method called (``.add_``), or
        bound to another name (which the statement may then change)."""
        parent = parents.get(node)
        if isinstance(parent, (ast.Assign, ast.AnnAssign, ast.NamedExpr, ast.withitem)) or (
            isinstance(parent, ast.Tuple) and isinstance(parents.get(parent), ast.Assign)
        ):
            return True
        if (
            isinstance(parent, (ast.Subscript, ast.Attribute))
            and parent.value is node
            and not isinstance(parent.ctx, ast.Load)
        ):
            return True
        return (
            isinstance(parent, ast.Attribute)
            and parent.value is node
            and isinstance(parents.get(parent), ast.Call)
            and (parent.attr.endswith("_") or parent.attr in _MUTATING_METHODS)
        )

    for node in ast.walk(tree):
        if isinstance(node, (ast.Global, ast.Nonlocal)) or (isinstance(node, ast.keyword) and node.arg == "out"):
            return True
        if not isinstance(node, ast.Name):
            continue
        if not isinstance(node.ctx, ast.Load):
            if node.id in names:
                return True
            continue
        if node.id not in containers:
            if node.id in names and mutated(node):
                return True
            continue
        parent = parents.get(node)
        if isinstance(parent, ast.Subscript) and parent.value is node:
            constant = parent.slice.value if isinstance(parent.slice, ast.Constant) else None
            if (not isinstance(constant, str) or constant == key) and (
                not isinstance(parent.ctx, ast.Load) or mutated(parent)
            ):
                return True
            continue
        if (
            isinstance(parent, ast.Attribute)
            and parent.attr in _READING_METHODS
            and isinstance(parents.get(parent), ast.Call)
        ):
            continue
        if (
            isinstance(parent, ast.Compare)
            and isinstance(parent.ops[0], (ast.In, ast.NotIn))
            and node is not parent.left
        ):
            continue  # ``"x" in model_inputs``
        return True
    return False


def names_in_expression(expression: str) -> set[str]:
    try:
        return {n.id for n in ast.walk(ast.parse(expression, mode="eval")) if isinstance(n, ast.Name)}
    except SyntaxError:
        return set()


def owner_of(a: BodyAnalysis, line: int) -> TopLevel | None:
    """The top-level statement that holds ``line``."""
    found = None
    for t in a.top_level:
        if t.line <= line:
            found = t
    return found


def before_super(a: BodyAnalysis, line: int) -> bool:
    """``line`` is in the statement that calls ``super()`` or in one before it: what it sets is an input of
    the mixin, not something the mixin prepared."""
    call = next((t for t in a.top_level if "super" in t.reads), None)
    owner = owner_of(a, line)
    return call is not None and owner is not None and owner.line <= call.line
