"""Normalise an override's conditions: names abstracted, tests reduced to the atoms every model means alike."""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Mapping

from codemod.analyse.analysis import Param
from codemod.analyse.index import Override
from codemod.analyse.mixin import Era, MixinProfile
from codemod.contracts import (
    ParamKind,
)
from codemod.transform.hooks.vocabulary import Atom


@dataclasses.dataclass(frozen=True)
class OverrideContext:
    """What the normaliser needs to know about one override."""

    params: frozenset[str]
    kwargs: str | None  # the name of its ``**kwargs``
    era: Era
    #: ``past_key_values is None`` is the first step: a legacy-cache model of the cache-position era
    #: (generate() passes no cache on the first step; only models with Cache classes get one)
    no_past_is_first: bool
    prefix: str  # the model prefix of its class name (``LlavaNext``), abstracted in code
    defaults: tuple[Param, ...] = ()  # its parameters, with their defaults


def context_of(o: Override, profile: MixinProfile) -> OverrideContext:
    params = o.analysis.params
    kwargs = next((p.name for p in params if p.kind is ParamKind.VAR_KEYWORDS), None)
    legacy = profile.era is Era.CACHE_POSITION and o.attribute("_supports_cache_class") != "True"
    return OverrideContext(
        frozenset(p.name for p in params), kwargs, profile.era, legacy, model_prefix(o.class_name), params
    )


_CLASS_SUFFIXES = ("For", "Model", "LMHead", "WithLMHead", "PreTrained", "TextModel", "Text", "Generation", "Decoder")


def model_prefix(class_name: str) -> str:
    """``LlavaNextForConditionalGeneration`` -> ``LlavaNext``: what the class name says before its role."""
    cut = len(class_name)
    for suffix in _CLASS_SUFFIXES:
        found = class_name.find(suffix, 1)
        if found > 0:
            cut = min(cut, found)
    return class_name[:cut]


class _Abstract(ast.NodeTransformer):
    """Names that differ between models for no reason: the ``**kwargs`` name, the model prefix."""

    def __init__(self, context: OverrideContext) -> None:
        self.context = context

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if self.context.kwargs is not None and node.id == self.context.kwargs:
            return ast.copy_location(ast.Name("kwargs", node.ctx), node)
        prefix = self.context.prefix
        if prefix and node.id.startswith(prefix) and node.id != prefix:
            return ast.copy_location(ast.Name("Model" + node.id[len(prefix) :], node.ctx), node)
        return node


def normalised_code(code: str, context: OverrideContext) -> str | None:
    """``code`` laid out by ``ast`` with the names ``_Abstract`` abstracts; None when it does not parse."""
    try:
        tree = ast.parse(code.strip())
    except SyntaxError:
        return None
    return ast.unparse(_Abstract(context).visit(tree))


@dataclasses.dataclass(frozen=True)
class Formula:
    """A condition: an atom, its negation, a conjunction or disjunction, or a constant."""

    op: str  # "atom", "not", "and", "or", "const"
    atom: str = ""
    args: tuple[Formula, ...] = ()
    value: bool = True


TRUE_FORMULA = Formula("const")


def atom_formula(name: str) -> Formula:
    return Formula("atom", name)


def not_of(formula: Formula) -> Formula:
    return Formula("not", args=(formula,))


def all_of(*formulas: Formula) -> Formula:
    return Formula("and", args=formulas)


def formula_of(node: ast.expr, context: OverrideContext, key: str) -> Formula:
    if isinstance(node, ast.BoolOp):
        return Formula(
            "and" if isinstance(node.op, ast.And) else "or",
            args=tuple(formula_of(v, context, key) for v in node.values),
        )
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return not_of(formula_of(node.operand, context, key))
    if isinstance(node, ast.Constant) and isinstance(node.value, bool):
        return Formula("const", value=node.value)
    atom = atom_of(node, context, key)
    if atom is not None:
        return atom
    return atom_formula("code: " + ast.unparse(_Abstract(context).visit(node)))


def atom_of(node: ast.expr, context: OverrideContext, key: str) -> Formula | None:
    """A condition that means the same in every model, with its polarity; None for other code."""
    if isinstance(node, ast.Name):
        if node.id == "is_first_iteration" and "is_first_iteration" in context.params:
            return atom_formula(Atom.FIRST.value)
        if node.id == "use_cache" and "use_cache" in context.params:
            # its default does not matter: generate() always passes use_cache (classify.GENERATE_PROVIDES)
            return atom_formula(Atom.USE_CACHE.value)
        return None
    if reads_kwarg(node, context, "use_cache"):
        return atom_formula(Atom.USE_CACHE.value)
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        left, op, right = node.left, node.ops[0], node.comparators[0]
        # cache_position[0] == 0 / != 0 / > 0
        if (
            isinstance(left, ast.Subscript)
            and isinstance(left.value, ast.Name)
            and left.value.id == "cache_position"
            and isinstance(left.slice, ast.Constant)
            and left.slice.value == 0
            and isinstance(right, ast.Constant)
            and right.value == 0
            and context.era is Era.CACHE_POSITION
        ):
            if isinstance(op, ast.Eq):
                return atom_formula(Atom.FIRST.value)
            if isinstance(op, (ast.NotEq, ast.Gt)):
                return not_of(atom_formula(Atom.FIRST.value))
        if isinstance(right, ast.Constant) and right.value is None and isinstance(op, (ast.Is, ast.IsNot)):
            positive = isinstance(op, ast.Is)  # ``x is None``
            if isinstance(left, ast.Name) and left.id == "past_key_values":
                atom = atom_formula(Atom.FIRST.value if context.no_past_is_first else Atom.NO_PAST.value)
                return atom if positive else not_of(atom)
            if (isinstance(left, ast.Name) and left.id == key) or reads_kwarg(left, context, key):
                given = atom_formula(Atom.GIVEN.value)
                return not_of(given) if positive else given
    return None


def reads_kwarg(node: ast.expr, context: OverrideContext, name: str) -> bool:
    """``kwargs.get("name"[, default])`` or ``kwargs["name"]``."""
    if context.kwargs is None:
        return False
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "get"
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == context.kwargs
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and node.args[0].value == name
    ):
        return True
    return (
        isinstance(node, ast.Subscript)
        and isinstance(node.value, ast.Name)
        and node.value.id == context.kwargs
        and isinstance(node.slice, ast.Constant)
        and node.slice.value == name
    )


def atoms_of(formula: Formula) -> set[str]:
    if formula.op == "atom":
        return {formula.atom}
    return set().union(*(atoms_of(f) for f in formula.args))


def formula_holds(formula: Formula, assignment: Mapping[str, bool]) -> bool:
    if formula.op == "atom":
        return assignment[formula.atom]
    if formula.op == "not":
        return not formula_holds(formula.args[0], assignment)
    if formula.op == "and":
        return all(formula_holds(f, assignment) for f in formula.args)
    if formula.op == "or":
        return any(formula_holds(f, assignment) for f in formula.args)
    return formula.value
