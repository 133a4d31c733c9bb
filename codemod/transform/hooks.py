"""Hooks mined from repeated bodies: model-specific parts that three or more models share, moved into the mixin.

Pure: a function of the scan. Each override's model-specific parts are the keys its finding lists as
extras (``classify.Extra``). A part is normalised to what it *does* to its key, whatever the names,
the layout or the model prefix: the value the key ends with (the caller's, what the mixin prepared,
None, a config attribute, a default, a literal, or other code) under every combination of the
conditions it depends on (the first step, ``use_cache``, whether the caller gave the input, or a test
no rule understands, normalised with ``ast``), a truth table with the conditions it does not depend on
left out. Two parts with the same table are the same idiom: ``model_inputs["position_ids"] = None``
and ``model_inputs.pop("token_type_ids", None)`` both leave their key out (the model's forward sees
None either way), ``if use_cache and not is_first_iteration: model_inputs["attention_mask"] = None``
and ``if is_first_iteration or not use_cache: model_inputs["target_sizes"] = target_sizes`` (a
parameter not handed to ``super()``) both pass the key on the first step or without a cache only.

Parts are clustered by idiom; where three or more *models* share one (a modular source and the file
generated from it are one model), the cluster proposes a hook: a class attribute naming the inputs
(or mapping them to a config attribute, a default, a literal) and the few lines of the mixin's
``prepare_inputs_for_generation`` that read it. Each member's change follows: the override deleted
when nothing model-specific is left, reduced to ``super()`` with what is left (overrides that build
their own dict, ≤ 4.45), or trimmed of the statements the hook takes over (overrides that already call
``super()``); with the attribute set on the class. A member whose change cannot be made safely is
listed with why (a sub-model delegation, a statement no rule understands, a parameter ``generate()``
accepts only because the override names it, ...), and so are the near misses: parts of the same
kind whose table differs, with how.

Statements no rule understands are clustered too (normalised code, model prefixes abstracted). Where they
are three or more models' whole bodies, the same code that the mixin's method can run in their place (the
masked LMs' dummy token of 4.45), the hook is that code under ``if self.<attribute>:`` at the start of the
mixin's method, and each member is reduced to a ``super()`` call that keeps its signature (generate() reads it):
verification proves each, as it proves any change. Other such clusters are proposals for a maintainer (an
overridable mixin method), never applied.

``plan_with_hooks`` turns the clusters into a plan (``codemod.transform.plan``): the members' findings as the
hooked mixin would classify them go through ``make_plan`` like any other (modular families, copies,
the soundness checks), and the hook edits are added to each member's shard, so that a member whose
verification fails is reverted with its part of the hook, as other shards are.
"""

from __future__ import annotations

import ast
import builtins
import dataclasses
import itertools
import json
import re
import textwrap
from collections.abc import Iterable, Mapping, Sequence

import libcst as cst

from codemod.analyse.analysis import BodyAnalysis, Delegation, OutputKey, Param, TopLevel, Unrecognised
from codemod.analyse.classify import GENERATE_PROVIDES, RESULT, Action, Category, Extra, Finding, Reason
from codemod.analyse.fallback import FallbackKind
from codemod.analyse.index import Override
from codemod.analyse.mixin import MIXIN_CLASS, Era, MixinProfile
from codemod.analyse.scan import ScanResult
from codemod.contracts import (
    ExtraHow,
    Held,
    HeldCause,
    OverrideId,
    ParamKind,
    ReasonKind,
    Repair,
    ValueOrigin,
    Vocabulary,
)
from codemod.transform.plan import Edit, EditKind, HookCode, Plan, Trim, initial_plan, unnamable
from codemod.transform.rewrite import negated

#: a hook is proposed where at least this many models share an idiom
MIN_MODELS = 3
#: the mixin's method a model overrides with the statements that compute its own condition (``Atom.OWN``), and the
#: local the mixin keeps its answer in
NEEDS_METHOD = "_generation_needs_first_step_inputs"
NEEDED_LOCAL = "first_step_inputs_needed"
#: a part whose value depends on more conditions than this is not tabulated (nothing real comes close)
_MAX_ATOMS = 4


class HookKind(Vocabulary):
    """What a mined hook does to the inputs a model names in its class attribute."""

    DROPPED = "dropped"  # left out, always (the model's forward builds them itself)
    DROPPED_WHEN = "dropped-when"  # left out when a step condition holds (after the first step / prefill)
    UNSLICED_WHEN = "unsliced-when"  # the caller's value, unsliced, while a condition holds; None otherwise
    NONE_WHEN_GIVEN = "none-when-given"  # None where the caller gives it; as the mixin prepares it otherwise
    FROM_CONFIG = "from-config"  # a config attribute
    DEFAULT = "default"  # a default when the caller gives none
    CONSTANT = "constant"  # a literal
    STATEMENTS = "statements"  # repeated statements no rule understands: applied only as whole bodies
    OTHER = "other"  # an idiom with no template: a proposal


class ValueKind(Vocabulary):
    """The value a part's key ends with, for one combination of its conditions."""

    NONE = "none"  # None, or left out: the model's forward sees None either way
    PREPARED = "prepared"  # what the fallback prepared (for a key it does not handle: the caller's value)
    CALLER = "caller"  # the caller's value as given, where the fallback would prepare another (sliced)
    CALLER_OR_DEFAULT = "caller-or-default"  # the caller's value, or a default when none is given
    CONFIG = "config"  # ``self.config.<attribute>``
    LITERAL = "literal"  # a literal
    OTHER = "other"  # any other code


class Atom(Vocabulary):
    """The conditions a part may depend on that mean the same in every model."""

    FIRST = "first-step"  # ``is_first_iteration`` (5.x), ``cache_position[0] == 0`` (cache-position era)
    USE_CACHE = "use-cache"  # ``use_cache`` (a parameter, or read from ``**kwargs``)
    NO_PAST = "no-cache-yet"  # ``past_key_values is None``
    GIVEN = "given"  # the caller gave the input (``<input> is not None``)
    #: a condition the override computes itself, in front of ``super()``, from its arguments and the config
    #: (4.45's llava family: ``legacy_processing``, a prompt with fewer image tokens than the image has features):
    #: a hook on it asks the model's ``_generation_needs_first_step_inputs``, where those statements move
    OWN = "own-condition"


class Change(Vocabulary):
    """What happens to a member's override when its class takes the hook."""

    DELETE = "delete"  # nothing model-specific is left
    REDUCE = "reduce"  # super() and what is left (an override that builds its own dict)
    TRIM = "trim"  # the statements the hook takes over removed; the rest stays
    BLOCKED = "blocked"  # not changed: ``why``


@dataclasses.dataclass(frozen=True)
class Idiom:
    """What a part does to its key: the value (a ``ValueKind``) for each combination of ``atoms`` (the
    first atom the most significant bit of the row number), the atoms it does not depend on left out."""

    atoms: tuple[str, ...]
    table: tuple[ValueKind, ...]

    def describe(self) -> str:
        kinds = set(self.table)
        if len(kinds) == 1:
            return _PHRASE[self.table[0]] + " always"
        parts = []
        for kind in dict.fromkeys(self.table):
            rows = [i for i, value in enumerate(self.table) if value is kind]
            parts.append(f"{_PHRASE[kind]} {_simple_words(self.atoms, rows)}")
        return "; ".join(parts)


_PHRASE = {
    ValueKind.NONE: "left out",
    ValueKind.PREPARED: "as the mixin prepares it",
    ValueKind.CALLER: "the caller's value, unsliced",
    ValueKind.CALLER_OR_DEFAULT: "the caller's value or a default",
    ValueKind.CONFIG: "a config attribute",
    ValueKind.LITERAL: "a literal",
    ValueKind.OTHER: "computed by other code",
}


@dataclasses.dataclass(frozen=True)
class Part:
    """One model-specific key of one override, normalised."""

    override: OverrideId
    model: str
    key: str
    idiom: Idiom | None  # None: its value passes through code no rule understands
    #: what the key is set to where the idiom abstracts it (the config attribute, the default's or literal's code)
    argument: str = ""
    #: why the part could not be tabulated (``idiom`` None)
    opaque: str = ""


@dataclasses.dataclass(frozen=True)
class Hook:
    """The mixin change a cluster proposes: the class attribute and the code that reads it."""

    kind: HookKind
    attribute: str
    #: the attribute's declaration on the mixin (with a comment line), 4-space indented at class level
    declaration: str
    #: statements at the start of the mixin's method (before it prepares anything), and before its return
    prologue: str
    epilogue: str
    summary: str

    def code(self) -> HookCode:
        return HookCode(self.attribute, self.declaration, self.prologue, self.epilogue)


@dataclasses.dataclass(frozen=True)
class Member:
    """An override whose class would set the hook's attribute."""

    override: OverrideId
    model: str
    class_name: str
    file: str
    keys: tuple[str, ...]
    #: the attribute as the class sets it (``_generation_dropped_inputs = ("position_ids",)``)
    assignment: str
    change: Change
    why: str = ""  # why it is blocked
    #: TRIM: the top-level statements removed (indices into the method body, the docstring counts)
    removed: tuple[int, ...] = ()
    lines: int = 0  # the override's lines today
    #: TRIM: the parameters that leave the signature with the removed statements (see :class:`MemberChange`)
    unnamed: tuple[str, ...] = ()
    #: DELETE of an override with its own condition (:class:`OwnCondition`): the statements that move into the
    #: class's ``_generation_needs_first_step_inputs`` (indices into the body), and that method without them
    moved: tuple[int, ...] = ()
    method: str = ""
    #: REDUCE of a whole body the hook runs that differs from the hook's code only in how it checks the config
    #: (RoFormer's ``assert`` where BERT raises ``ValueError``): those checks, kept in front of ``super()`` (indices
    #: into the body), so that a config that fails them fails as it did
    guards: tuple[int, ...] = ()

    @property
    def applicable(self) -> bool:
        return self.change is not Change.BLOCKED


@dataclasses.dataclass(frozen=True)
class NearMiss:
    """A part like the cluster's that does not join it."""

    override: OverrideId
    model: str
    key: str
    why: str


@dataclasses.dataclass(frozen=True)
class Cluster:
    name: str  # the hook's attribute (or, for a proposal, a name for it)
    kind: HookKind
    idiom: Idiom | None  # None for repeated statements
    description: str
    hook: Hook | None  # None: a proposal with no template (or statements no rule understands)
    members: tuple[Member, ...]
    near_misses: tuple[NearMiss, ...] = ()
    #: repeated statements: the representative code
    code: str = ""
    #: why the hook is not applied (no template, too few members it can change, no mixin to add it to)
    not_applied: str = ""

    @property
    def models(self) -> tuple[str, ...]:
        return tuple(sorted({m.model for m in self.members}))

    @property
    def applicable_models(self) -> tuple[str, ...]:
        return tuple(sorted({m.model for m in self.members if m.applicable}))

    @property
    def applied(self) -> bool:
        return self.hook is not None and not self.not_applied


@dataclasses.dataclass(frozen=True)
class HookReport:
    """Every cluster of three or more models, in the order: applied hooks first, largest first."""

    clusters: tuple[Cluster, ...]
    era: Era
    #: the mixin file a hook is added to (the checkout's ``generation/utils.py``), None for a tree
    mixin_file: str | None
    #: the hooks go into the generic implementation apply installs first (a ≤ 4.45 stub mixin)
    hoisted: bool
    #: the attributes of the hooks the mixin's method reads already (an earlier ``apply --hooks``)
    in_mixin: frozenset[str] = frozenset()

    def applied(self) -> tuple[Cluster, ...]:
        return tuple(c for c in self.clusters if c.applied)

    def moved_whole(self) -> frozenset[str]:
        """The overrides whose whole body an applied hook runs in the mixin."""
        return frozenset(
            m.override for c in self.applied() if c.kind is HookKind.STATEMENTS for m in c.members if m.applicable
        )

    def whole_body(self, override_id: str) -> Cluster | None:
        """The applied cluster that runs ``override_id``'s whole body in the mixin, if any."""
        return next(
            (
                c
                for c in self.applied()
                if c.kind is HookKind.STATEMENTS and any(m.override == override_id and m.applicable for m in c.members)
            ),
            None,
        )

    def moves_own_condition(self, override_id: str) -> bool:
        """Whether an applied hook moves the override's own condition into a method of its class."""
        return any(m.override == override_id and m.applicable and m.method for c in self.applied() for m in c.members)

    def hooked_keys(self, override_id: str) -> dict[str, Cluster]:
        """Key -> the applied cluster that takes it over, for an override that is an applicable member."""
        out: dict[str, Cluster] = {}
        for cluster in self.applied():
            for member in cluster.members:
                if member.override == override_id and member.applicable:
                    out.update({key: cluster for key in member.keys})
        return out


# --------------------------------------------------------------------------------------------- normalise


@dataclasses.dataclass(frozen=True)
class _Context:
    """What the normaliser needs to know about one override."""

    params: frozenset[str]
    kwargs: str | None  # the name of its ``**kwargs``
    era: Era
    #: ``past_key_values is None`` is the first step: a legacy-cache model of the cache-position era
    #: (generate() passes no cache on the first step; only models with Cache classes get one)
    no_past_is_first: bool
    prefix: str  # the model prefix of its class name (``LlavaNext``), abstracted in code
    defaults: tuple[Param, ...] = ()  # its parameters, with their defaults


def _context(o: Override, profile: MixinProfile) -> _Context:
    params = o.analysis.params
    kwargs = next((p.name for p in params if p.kind is ParamKind.VAR_KEYWORDS), None)
    legacy = profile.era is Era.CACHE_POSITION and o.attribute("_supports_cache_class") != "True"
    return _Context(frozenset(p.name for p in params), kwargs, profile.era, legacy, model_prefix(o.class_name), params)


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

    def __init__(self, context: _Context) -> None:
        self.context = context

    def visit_Name(self, node: ast.Name) -> ast.AST:
        if self.context.kwargs is not None and node.id == self.context.kwargs:
            return ast.copy_location(ast.Name("kwargs", node.ctx), node)
        prefix = self.context.prefix
        if prefix and node.id.startswith(prefix) and node.id != prefix:
            return ast.copy_location(ast.Name("Model" + node.id[len(prefix) :], node.ctx), node)
        return node


def normalised_code(code: str, context: _Context) -> str | None:
    """``code`` laid out by ``ast`` with the names ``_Abstract`` abstracts; None when it does not parse."""
    try:
        tree = ast.parse(code.strip())
    except SyntaxError:
        return None
    return ast.unparse(_Abstract(context).visit(tree))


@dataclasses.dataclass(frozen=True)
class _Formula:
    """A condition: an atom, its negation, a conjunction or disjunction, or a constant."""

    op: str  # "atom", "not", "and", "or", "const"
    atom: str = ""
    args: tuple[_Formula, ...] = ()
    value: bool = True


_TRUE = _Formula("const")


def _a(name: str) -> _Formula:
    return _Formula("atom", name)


def _not(formula: _Formula) -> _Formula:
    return _Formula("not", args=(formula,))


def _all(*formulas: _Formula) -> _Formula:
    return _Formula("and", args=formulas)


def _formula(node: ast.expr, context: _Context, key: str) -> _Formula:
    if isinstance(node, ast.BoolOp):
        return _Formula(
            "and" if isinstance(node.op, ast.And) else "or", args=tuple(_formula(v, context, key) for v in node.values)
        )
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return _not(_formula(node.operand, context, key))
    if isinstance(node, ast.Constant) and isinstance(node.value, bool):
        return _Formula("const", value=node.value)
    atom = _atom(node, context, key)
    if atom is not None:
        return atom
    return _a("code: " + ast.unparse(_Abstract(context).visit(node)))


def _atom(node: ast.expr, context: _Context, key: str) -> _Formula | None:
    """A condition that means the same in every model, with its polarity; None for other code."""
    if isinstance(node, ast.Name):
        if node.id == "is_first_iteration" and "is_first_iteration" in context.params:
            return _a(Atom.FIRST.value)
        if node.id == "use_cache" and "use_cache" in context.params:
            # its default does not matter: generate() always passes use_cache (classify.GENERATE_PROVIDES)
            return _a(Atom.USE_CACHE.value)
        return None
    if _reads_kwarg(node, context, "use_cache"):
        return _a(Atom.USE_CACHE.value)
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
                return _a(Atom.FIRST.value)
            if isinstance(op, (ast.NotEq, ast.Gt)):
                return _not(_a(Atom.FIRST.value))
        if isinstance(right, ast.Constant) and right.value is None and isinstance(op, (ast.Is, ast.IsNot)):
            positive = isinstance(op, ast.Is)  # ``x is None``
            if isinstance(left, ast.Name) and left.id == "past_key_values":
                atom = _a(Atom.FIRST.value if context.no_past_is_first else Atom.NO_PAST.value)
                return atom if positive else _not(atom)
            if (isinstance(left, ast.Name) and left.id == key) or _reads_kwarg(left, context, key):
                given = _a(Atom.GIVEN.value)
                return _not(given) if positive else given
    return None


def _reads_kwarg(node: ast.expr, context: _Context, name: str) -> bool:
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


def _atoms_of(formula: _Formula) -> set[str]:
    if formula.op == "atom":
        return {formula.atom}
    return set().union(*(_atoms_of(f) for f in formula.args))


def _holds(formula: _Formula, assignment: Mapping[str, bool]) -> bool:
    if formula.op == "atom":
        return assignment[formula.atom]
    if formula.op == "not":
        return not _holds(formula.args[0], assignment)
    if formula.op == "and":
        return all(_holds(f, assignment) for f in formula.args)
    if formula.op == "or":
        return any(_holds(f, assignment) for f in formula.args)
    return formula.value


# --------------------------------------------------------------------------------------------- parts


@dataclasses.dataclass(frozen=True)
class _Write:
    condition: _Formula  # _TRUE when unconditional
    value: ValueKind
    argument: str = ""


def handled_keys(profile: MixinProfile) -> frozenset[str]:
    """The keys the mixin prepares itself (slices, builds, drops): for any other key, what it prepares is
    the caller's value as given."""
    analysis = profile.analysis
    if analysis is None:
        return frozenset()
    named = {p.name for p in analysis.params if p.kind.named} - {"self"}
    return frozenset(
        named
        | set(analysis.output_values())
        | set(profile.never_forwarded)
        | set(profile.first_step_only_inputs)
        | {"decoder_attention_mask", "decoder_position_ids"}
    )


def _value(out: OutputKey, key: str, context: _Context) -> list[_Write]:
    """The writes one output assignment makes (a ``a if test else b`` is two)."""
    condition = _TRUE
    conditions = []
    for text in out.conditions:
        try:
            conditions.append(_formula(ast.parse(text, mode="eval").body, context, key))
        except SyntaxError:
            conditions.append(_a("code: " + text))
    if conditions:
        condition = _all(*conditions) if len(conditions) > 1 else conditions[0]
    origin, name = out.value.origin, out.value.name
    if origin in (ValueOrigin.NONE, ValueOrigin.DROPPED):
        return [_Write(condition, ValueKind.NONE)]
    if origin is ValueOrigin.CONST:
        if re.fullmatch(r"self\.config\.[A-Za-z_][A-Za-z0-9_]*", out.expr.replace(" ", "")):
            return [_Write(condition, ValueKind.CONFIG, out.expr.replace(" ", "").split(".")[-1])]
        return [_Write(condition, ValueKind.LITERAL, name)]
    if origin is ValueOrigin.PARAM_DEFAULT:
        given, _, default = name.partition("=")
        if given == key:
            return [_Write(condition, ValueKind.CALLER_OR_DEFAULT, default)]
    if origin is ValueOrigin.PARAM and name == key and not out.conditions:
        declared = next((p.default for p in context.defaults if p.name == key), None)
        if declared is not None and declared != "None":
            return [_Write(condition, ValueKind.CALLER_OR_DEFAULT, declared)]
    if origin in (ValueOrigin.PARAM, ValueOrigin.FIRST_STEP, ValueOrigin.LATER_STEP) and name == key:
        expression = _expression(out.expr)
        if isinstance(expression, ast.IfExp):
            # ``x if test else None``: the recogniser folded the step test into the value
            test = _formula(expression.test, context, key)
            body = _plain_value(expression.body, key, context)
            orelse = _plain_value(expression.orelse, key, context)
            if body is not None and orelse is not None:
                return [_Write(_all(condition, test), body), _Write(_all(condition, _not(test)), orelse)]
            return [_Write(condition, ValueKind.OTHER, out.expr)]
        if origin is not ValueOrigin.PARAM and not out.conditions:
            return [_Write(condition, ValueKind.OTHER, out.expr)]  # a step test somewhere else: not ours to read
        return [_Write(condition, ValueKind.CALLER)]
    return [_Write(condition, ValueKind.OTHER, out.expr or str(out.value))]


def _expression(code: str) -> ast.expr | None:
    try:
        return ast.parse(code, mode="eval").body if code else None
    except SyntaxError:
        return None


def _plain_value(node: ast.expr, key: str, context: _Context) -> ValueKind | None:
    if isinstance(node, ast.Constant) and node.value is None:
        return ValueKind.NONE
    if (isinstance(node, ast.Name) and node.id == key) or _reads_kwarg(node, context, key):
        return ValueKind.CALLER
    return None


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


def _statement_tree(u: Unrecognised) -> ast.Module | None:
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
    context = _context(o, profile)
    guarded: list[tuple[TopLevel, str, tuple[str, ...]]] = []
    for t in a.top_level[call.index :]:
        u = next((u for u in a.unrecognised if u.line == t.line), None)
        tree = _statement_tree(u) if u is not None and not t.recognised else None
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
        if len(names) == 1 and len(tests) == 1 and _atom(tests[0], context, "") == _a(Atom.FIRST.value) and keys:
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
        trees = [_statement_tree(u) for u in parts]
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


def _within(line: int | None, spans: Iterable[tuple[int, int]]) -> bool:
    return line is not None and any(start <= line <= end for start, end in spans)


def part_of(f: Finding, key: str, profile: MixinProfile) -> Part:
    """Normalise what ``f``'s override does to ``key``."""
    o = f.override
    a = o.analysis
    model = o.model or o.class_name
    context = _context(o, profile)
    # the statements of its own condition change no input: the ``if`` on it passes its keys (read below)
    own = own_condition(o, profile)
    own_spans = own.spans if own is not None else ()
    changing = next((u for u in a.unrecognised if not _within(u.line, own_spans) and _may_change(a, u, key)), None)
    if changing is not None:
        # a statement no rule understands may change the key however it likes (``model_inputs.update(...)``
        # does not name it): its value cannot be read off the recognised writes
        return Part(
            o.id, model, key, None, opaque=f"a statement no rule understands (line {changing.line}) may change it"
        )
    early = next((t for t in a.top_level[:-1] if t.returns), None)
    if early is not None:
        # the writes after an early return hold only when it does not return: a condition no write records
        return Part(
            o.id,
            model,
            key,
            None,
            opaque=f"returns early (line {early.line}): the writes after it are "
            "conditional on a test they do not record",
        )
    strict = next(
        (r for r in a.recognised if r.behaviour == "drop-key" and r.detail == key and r.facet("missing") == "raises"),
        None,
    )
    if strict is not None:
        # ``model_inputs.pop(key)`` / ``del model_inputs[key]``: a KeyError where nothing prepared it, which a hook's
        # ``pop(name, None)`` would not raise
        return Part(
            o.id,
            model,
            key,
            None,
            opaque=f"drops it without a default (line {strict.line}): raises when it is missing",
        )
    handled = key in handled_keys(profile)
    before = next(
        (
            out
            for out in a.outputs
            if out.key == key and out.via_kwargs and out.value.origin not in (ValueOrigin.NONE, ValueOrigin.DROPPED)
        ),
        None,
    )
    if handled and before is not None:
        # handed to super() in **kwargs: the mixin prepares it from there (slices it, drops it after the first step)
        return Part(
            o.id, model, key, None, opaque=f"set before super() (line {before.line}), which prepares it further"
        )
    mixin_params = {p.name for p in profile.analysis.params if p.kind.named} if profile.analysis else set()
    # what the key is when no write applies: what super() prepared, or nothing at all
    withheld = key in a.withheld or _popped_before(a, key)
    if (
        key in mixin_params
        and a.delegation is Delegation.SUPER
        and (
            withheld
            or key not in {out.key for out in a.outputs}
            or any(out.key == key and (out.via_kwargs or _before_super(a, out.line)) for out in a.outputs)
        )
    ):
        return Part(
            o.id,
            model,
            key,
            None,
            opaque=f"changes {key}, which the mixin reads itself: not an input it "
            "passes on, but how it prepares the others",
        )
    if a.delegation is None:
        base = ValueKind.PREPARED if a.forwards_kwargs and key not in {p.name for p in a.params} else ValueKind.NONE
    elif a.delegation is Delegation.STORED_METHOD:
        return Part(o.id, model, key, None, opaque=f"takes its inputs from {a.delegates_to}, bound at run time")
    else:  # super(), or a sub-model of the release, prepared by the same mixin
        base = ValueKind.NONE if withheld else ValueKind.PREPARED
    writes: list[_Write] = []
    for out in a.outputs:
        if out.key == key:
            writes.extend(_value(out, key, context))
    if own is not None and key in own.keys:
        writes.append(_Write(_Formula("or", args=(_a(Atom.OWN.value), _a(Atom.FIRST.value))), ValueKind.CALLER))
    if not writes and not withheld and key not in a.dropped:
        return Part(o.id, model, key, None, opaque="no assignment of it was recognised")
    if handled and a.delegation is not None and any(w.value is ValueKind.CALLER_OR_DEFAULT for w in writes):
        # a default handed to super() is prepared further by the mixin (sliced, dropped after the first step)
        return Part(o.id, model, key, None, opaque="its default is handed to super(), which prepares it further")
    if not handled:
        # a key the mixin does not handle: when the caller gives none, whatever passes it on passes None, the
        # same to the forward as leaving it out; so "only if given" adds nothing
        writes = [dataclasses.replace(w, condition=_given(w.condition)) for w in writes]
    atoms = sorted(set().union(*(_atoms_of(w.condition) for w in writes)) if writes else set())
    if any(w.value is ValueKind.CALLER and not handled for w in writes):
        # for a key the mixin does not handle, what it prepares is the caller's value
        writes = [
            dataclasses.replace(w, value=ValueKind.PREPARED) if w.value is ValueKind.CALLER else w for w in writes
        ]
    if len(atoms) > _MAX_ATOMS:
        return Part(o.id, model, key, None, opaque=f"depends on {len(atoms)} conditions")
    arguments = {
        w.argument for w in writes if w.value in (ValueKind.CONFIG, ValueKind.LITERAL, ValueKind.CALLER_OR_DEFAULT)
    }
    table = []
    for bits in itertools.product((False, True), repeat=len(atoms)):
        assignment = dict(zip(atoms, bits, strict=False))
        value = base
        for write in writes:
            if _holds(write.condition, assignment):
                value = write.value
        table.append(value)
    idiom = _minimal(tuple(atoms), tuple(table))
    argument = next(iter(arguments)) if len(arguments) == 1 else ""
    if any(w.value is ValueKind.OTHER for w in writes):
        other = next(w.argument for w in writes if w.value is ValueKind.OTHER)
        argument = normalised_code(other, context) or other
    return Part(o.id, model, key, idiom, argument)


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


def _may_change(a: BodyAnalysis, u: Unrecognised, key: str) -> bool:
    """Whether the statement ``u`` (no rule understands it) may change what the override ends with under ``key``.

    Only a statement after the one that made the dict is read (before it, whatever it assigns may be an input
    the mixin prepares ``key`` from: Bark's cut mask makes the positions), as code: it may not rebind the dict,
    ``**kwargs``, ``key`` or a name ``key``'s writes read (their values or their conditions), set or delete
    ``key`` or a key it cannot name, or hand the dict or ``**kwargs`` to any call but a read (``.get``). PaliGemma's
    4D mask for a static cache sets ``attention_mask`` only: its ``pixel_values`` can still be read off the rest."""
    owner = _owner(a, u.line)
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
            names |= _names_in(out.expr) | {n for condition in out.conditions for n in _names_in(condition)}
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


def _names_in(expression: str) -> set[str]:
    try:
        return {n.id for n in ast.walk(ast.parse(expression, mode="eval")) if isinstance(n, ast.Name)}
    except SyntaxError:
        return set()


def _owner(a: BodyAnalysis, line: int) -> TopLevel | None:
    """The top-level statement that holds ``line``."""
    found = None
    for t in a.top_level:
        if t.line <= line:
            found = t
    return found


def _before_super(a: BodyAnalysis, line: int) -> bool:
    """``line`` is in the statement that calls ``super()`` or in one before it: what it sets is an input of
    the mixin, not something the mixin prepared."""
    call = next((t for t in a.top_level if "super" in t.reads), None)
    owner = _owner(a, line)
    return call is not None and owner is not None and owner.line <= call.line


def _given(formula: _Formula) -> _Formula:
    """``formula`` with "the caller gave the input" taken as true."""
    if formula.op == "atom" and formula.atom == Atom.GIVEN.value:
        return _TRUE
    if formula.args:
        return dataclasses.replace(formula, args=tuple(_given(f) for f in formula.args))
    return formula


def _popped_before(a: BodyAnalysis, key: str) -> bool:
    """``kwargs.pop(key)`` in front of ``super()``: a key dropped with no output assignment recording it."""
    return key in a.dropped and not any(
        out.key == key and out.value.origin is ValueOrigin.DROPPED for out in a.outputs
    )


def _minimal(atoms: tuple[str, ...], table: tuple[ValueKind, ...]) -> Idiom:
    """The same function without the atoms it does not depend on."""
    for position in range(len(atoms) - 1, -1, -1):
        bit = len(atoms) - 1 - position
        if all(table[row] is table[row | (1 << bit)] for row in range(len(table)) if not row & (1 << bit)):
            atoms = atoms[:position] + atoms[position + 1 :]
            table = tuple(value for row, value in enumerate(table) if not row & (1 << bit))
    return Idiom(atoms, table)


# --------------------------------------------------------------------------------------------- hooks


def _condition_words(atoms: Sequence[str], rows: Iterable[int]) -> str:
    words = {
        Atom.FIRST.value: "on the first step",
        Atom.USE_CACHE.value: "with a cache",
        Atom.NO_PAST.value: "before there is a cache",
        Atom.GIVEN.value: "the caller gives it",
        Atom.OWN.value: "the model needs them",
    }
    negated = {
        Atom.FIRST.value: "after the first step",
        Atom.USE_CACHE.value: "without a cache",
        Atom.NO_PAST.value: "once there is a cache",
        Atom.GIVEN.value: "the caller gives none",
        Atom.OWN.value: "the model does not need them",
    }
    terms = []
    for row in rows:
        literals = []
        for position, atom in enumerate(atoms):
            on = bool(row >> (len(atoms) - 1 - position) & 1)
            literals.append((words if on else negated).get(atom, f"{'' if on else 'not '}{atom}"))
        terms.append(" and ".join(literals) or "always")
    return " or ".join(terms)


def _spelling(era: Era, kwargs: str, params: Iterable[str] = ()) -> dict[str, tuple[str, str]]:
    """How the mixin of ``era`` spells each atom, and its negation (``use_cache`` as its parameter, where it
    names one, else read from ``**kwargs`` with generate()'s default, as the 5.x mixin reads it)."""
    first = (
        ("is_first_iteration", "not is_first_iteration")
        if era is Era.NEXT_SEQUENCE_LENGTH
        else ("cache_position[0] == 0", "cache_position[0] != 0")
    )
    use_cache = "use_cache" if "use_cache" in set(params) else f'{kwargs}.get("use_cache", True)'
    return {
        Atom.FIRST.value: first,
        Atom.USE_CACHE.value: (use_cache, f"not {use_cache}"),
        Atom.NO_PAST.value: ("past_key_values is None", "past_key_values is not None"),
        Atom.OWN.value: (NEEDED_LOCAL, f"not {NEEDED_LOCAL}"),
    }


def condition_code(atoms: Sequence[str], rows: Sequence[int], spelling: Mapping[str, tuple[str, str]]) -> str | None:
    """Python for "the row is one of ``rows``", as short as a person would write it (one literal, a
    conjunction, a disjunction, or else every row spelt out); None when an atom has no spelling."""
    if any(atom not in spelling for atom in atoms):
        return None
    size = 1 << len(atoms)
    chosen = set(rows)

    def literal(position: int, on: bool) -> str:
        return spelling[atoms[position]][0 if on else 1]

    def bit(row: int, position: int) -> bool:
        return bool(row >> (len(atoms) - 1 - position) & 1)

    # a conjunction of literals
    for signs in itertools.product((None, False, True), repeat=len(atoms)):
        if all(s is None for s in signs):
            continue
        covered = {row for row in range(size) if all(s is None or bit(row, p) is s for p, s in enumerate(signs))}
        if covered == chosen:
            return " and ".join(literal(p, s) for p, s in enumerate(signs) if s is not None)
    # a disjunction of literals
    for signs in itertools.product((None, False, True), repeat=len(atoms)):
        if all(s is None for s in signs):
            continue
        covered = {row for row in range(size) if any(s is not None and bit(row, p) is s for p, s in enumerate(signs))}
        if covered == chosen:
            return " or ".join(literal(p, s) for p, s in enumerate(signs) if s is not None)
    terms = ["(" + " and ".join(literal(p, bit(row, p)) for p in range(len(atoms))) + ")" for row in sorted(chosen)]
    return " or ".join(terms)


#: the attributes of the conditions models use: (kind, the condition's words) -> (name, why models set it)
_NAMES = {
    (HookKind.DROPPED_WHEN, "after the first step and with a cache"): (
        "_generation_inputs_dropped_after_prefill",
        "the model reads them only while it fills its cache",
    ),
    (HookKind.DROPPED_WHEN, "after the first step"): (
        "_generation_inputs_dropped_after_first_step",
        "the model reads them only on the first forward",
    ),
    (HookKind.DROPPED_WHEN, "after the first step unless the model needs them"): (
        "_generation_inputs_dropped_after_first_step_unless_needed",
        "the model reads them only on the first "
        f"forward, unless its `{NEEDS_METHOD}` says this step needs them too (4.45's llava family on a legacy prompt: "
        "one image token the model expands itself, on every step)",
    ),
    (HookKind.UNSLICED_WHEN, "on the first step or without a cache"): (
        "_generation_unsliced_prefill_inputs",
        "a mask that reads them by position needs them from the start of the "
        "sequence, also for a prefill cut in chunks",
    ),
    (HookKind.UNSLICED_WHEN, "on the first step"): (
        "_generation_unsliced_first_step_inputs",
        "a mask that reads them by position needs them from the start",
    ),
}


#: hooks for a key that always ends with one kind of value, whatever the step: value kind -> (hook kind,
#: attribute, its annotation: a mapping to config attribute names or to values, its doc, the comment
#: above its code, the code)
_VALUE_HOOKS: dict[ValueKind, tuple[HookKind, str, str, str, str, str]] = {
    ValueKind.CONFIG: (
        HookKind.FROM_CONFIG,
        "_generation_inputs_from_config",
        "mapping",
        "Inputs set from the model's config, whatever the caller passes: input name -> config attribute",
        "Inputs set from the config",
        "for name, attribute in self.{name}.items():\n    model_inputs[name] = getattr(self.config, attribute)\n",
    ),
    ValueKind.CALLER_OR_DEFAULT: (
        HookKind.DEFAULT,
        "_generation_input_defaults",
        "values",
        "Inputs with a model-specific default when the caller gives none: input name -> default",
        "Model-specific defaults",
        "for name, default in self.{name}.items():\n    model_inputs.setdefault(name, default)\n",
    ),
    ValueKind.LITERAL: (
        HookKind.CONSTANT,
        "_generation_constant_inputs",
        "values",
        "Inputs the model always gets with the same value, whatever the caller passes: input name -> value",
        "Inputs with a fixed value",
        "for name, value in self.{name}.items():\n    model_inputs[name] = value\n",
    ),
}


def _simple_words(atoms: Sequence[str], rows: Sequence[int]) -> str:
    spelling = {
        Atom.FIRST.value: ("on the first step", "after the first step"),
        Atom.USE_CACHE.value: ("with a cache", "without a cache"),
        Atom.NO_PAST.value: ("before there is a cache", "once there is a cache"),
        Atom.OWN.value: ("the model needs them", "the model does not need them"),
    }
    words = condition_code(atoms, rows, spelling) or _condition_words(atoms, rows)
    return words.replace(" and the model does not need them", " unless the model needs them")


def hook_for(idiom: Idiom, profile: MixinProfile) -> tuple[HookKind, Hook | None, str]:
    """The hook a cluster of ``idiom`` proposes: (kind, the hook or None, its name or why there is none).

    Each hook's code runs right before the mixin's ``return model_inputs``, where the members' own
    statements ran (after ``super()``); the unsliced inputs are read before the mixin pops and cuts them."""
    kinds = set(idiom.table)
    analysis = profile.analysis
    kwargs = next((p.name for p in analysis.params if p.kind is ParamKind.VAR_KEYWORDS), None) if analysis else None
    typed = profile.era is Era.NEXT_SEQUENCE_LENGTH  # 5.x: Python ≥ 3.10, annotated like the rest of the class
    names_type, mapping_type, values_type = (
        ("tuple[str, ...]", "dict[str, str]", "dict[str, object]") if typed else ("", "", "")
    )
    if kinds == {ValueKind.NONE}:
        kind, name = HookKind.DROPPED, "_generation_dropped_inputs"
        return (
            kind,
            _hook(
                kind,
                name,
                names_type,
                "()",
                "Inputs the model's forward computes itself, never passed to it "
                "(left out: the forward's default is None, the same as passing None)",
                epilogue=f"# Inputs the model computes itself (`{name}`)\n"
                f"for name in self.{name}:\n    model_inputs.pop(name, None)\n",
            ),
            name,
        )
    if len(kinds) == 1 and idiom.atoms == () and idiom.table[0] in _VALUE_HOOKS:
        kind, name, typing, doc, comment, loop = _VALUE_HOOKS[idiom.table[0]]
        annotation = mapping_type if typing == "mapping" else values_type
        return (
            kind,
            _hook(kind, name, annotation, "{}", doc, epilogue=f"# {comment} (`{name}`)\n" + loop.format(name=name)),
            name,
        )
    if kwargs is None:
        return HookKind.OTHER, None, "the mixin takes no **kwargs to read the step's flags from"
    params = {p.name for p in analysis.params} if analysis else set()
    spelling = _spelling(profile.era, kwargs, params)
    needs = {Atom.FIRST.value: "is_first_iteration" if profile.era is Era.NEXT_SEQUENCE_LENGTH else "cache_position"}
    for atom in idiom.atoms:
        if atom in needs and needs[atom] not in params:
            return HookKind.OTHER, None, f"the mixin has no {needs[atom]} parameter to tell the first step by"
    if idiom.atoms == (Atom.GIVEN.value,) and tuple(idiom.table) == (ValueKind.PREPARED, ValueKind.NONE):
        # GPT-2's family: a caller's position_ids are ignored (the forward counts positions itself), those the mask
        # gives are used. What the caller gave is read first: the mixin fills the same key in when none is given.
        kind, name = HookKind.NONE_WHEN_GIVEN, "_generation_inputs_ignored_when_given"
        return (
            kind,
            _hook(
                kind,
                name,
                names_type,
                "()",
                "Inputs the model ignores where a caller passes them: None "
                "then (its forward makes its own), as the mixin prepares them otherwise",
                prologue=f"# Read before the mixin fills them in (`{name}`)\n"
                f"inputs_given = [name for name in self.{name} if {kwargs}.get(name) is not None]\n",
                epilogue=f"# None where the caller gave them (`{name}`)\n"
                "for name in inputs_given:\n    model_inputs[name] = None\n",
            ),
            name,
        )
    if kinds == {ValueKind.PREPARED, ValueKind.NONE}:
        rows = [i for i, v in enumerate(idiom.table) if v is ValueKind.NONE]
        code = condition_code(idiom.atoms, rows, spelling)
        if code is None:
            return HookKind.OTHER, None, "its condition is code no rule understands"
        words = _simple_words(idiom.atoms, rows)
        kind = HookKind.DROPPED_WHEN
        name, why = _NAMES.get((kind, words), ("_generation_inputs_dropped_" + _slug(words), ""))
        prologue, method = "", ""
        if Atom.OWN.value in idiom.atoms:
            # the model's own condition, asked before the mixin prepares anything: the statements that computed it
            # read the arguments as the override was given them
            ids = analysis.ids_param if analysis is not None else None
            if ids is None:
                return HookKind.OTHER, None, "the mixin takes no ids to ask the model's own condition with"
            prologue = (
                f"# Asked before anything is prepared (`{NEEDS_METHOD}`)\n"
                f"{NEEDED_LOCAL} = self.{NEEDS_METHOD}({ids}, **{kwargs})\n"
            )
            docstring = textwrap.wrap(
                f"Whether this step needs the inputs in `{name}` too: asked with the arguments "
                "of `prepare_inputs_for_generation` as given, before anything is prepared. A "
                "model whose prompt can ask for them on later steps overrides it.",
                100,
            )
            quotes = '"""'
            method = (
                f"\ndef {NEEDS_METHOD}(self, {ids}, **{kwargs}){' -> bool' if typed else ''}:\n"
                + "".join(f"    {'' if i else quotes}{line}\n" for i, line in enumerate(docstring))
                + f"    {quotes}\n    return False\n"
            )
        comment = "".join(f"# {line}\n" for line in textwrap.wrap(f"Inputs left out {words} (`{name}`)", 100))
        hook = _hook(
            kind,
            name,
            names_type,
            "()",
            f"Inputs left out {words}" + (f": {why}" if why else ""),
            prologue=prologue,
            epilogue=f"{comment}if {code}:\n    for name in self.{name}:\n        model_inputs.pop(name, None)\n",
        )
        return kind, dataclasses.replace(hook, declaration=hook.declaration + method), name
    if kinds == {ValueKind.CALLER, ValueKind.NONE}:
        rows = [i for i, v in enumerate(idiom.table) if v is ValueKind.CALLER]
        code = condition_code(idiom.atoms, rows, spelling)
        if code is None:
            return HookKind.OTHER, None, "its condition is code no rule understands"
        words = _simple_words(idiom.atoms, rows)
        kind = HookKind.UNSLICED_WHEN
        name, why = _NAMES.get((kind, words), ("_generation_unsliced_inputs_" + _slug(words), ""))
        return (
            kind,
            _hook(
                kind,
                name,
                names_type,
                "()",
                f"Inputs passed whole (as the caller gives them, not cut to the "
                f"new tokens) {words}, and as None otherwise" + (f": {why}" if why else ""),
                prologue=f"# Read before they are cut to the new tokens (`{name}`)\n"
                f"unsliced_inputs = {{name: {kwargs}.get(name) for name in self.{name}}}\n",
                epilogue=f"# Whole {words}, None otherwise (`{name}`)\n"
                "for name, value in unsliced_inputs.items():\n"
                f"    model_inputs[name] = value if {code} else None\n",
            ),
            name,
        )
    return HookKind.OTHER, None, f"no hook template for an input {idiom.describe()}"


def _slug(words: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", words.lower()).strip("_")


def _hook(
    kind: HookKind, name: str, annotation: str, empty: str, summary: str, *, prologue: str = "", epilogue: str = ""
) -> Hook:
    typed = f": {annotation}" if annotation else ""
    comment = textwrap.wrap(f"{summary}.", 110)
    declaration = "".join(f"# {line}\n" for line in comment) + f"{name}{typed} = {empty}\n"
    return Hook(kind, name, declaration, prologue, epilogue, summary)


def assignment(cluster_kind: HookKind, attribute: str, parts: Sequence[Part]) -> str:
    """The class attribute a member sets."""
    if cluster_kind in (HookKind.FROM_CONFIG, HookKind.DEFAULT, HookKind.CONSTANT):
        if cluster_kind is HookKind.FROM_CONFIG:
            items = ", ".join(f"{json.dumps(p.key)}: {json.dumps(p.argument)}" for p in parts)
        else:
            items = ", ".join(f"{json.dumps(p.key)}: {p.argument}" for p in parts)
        return f"{attribute} = {{{items}}}"
    names = ", ".join(json.dumps(p.key) for p in parts)
    return f"{attribute} = ({names}{',' if len(parts) == 1 else ''})"


# --------------------------------------------------------------------------------------------- members

#: values a hook always sets (never None, never left out)
_ALWAYS_SET = frozenset({ValueKind.CONFIG, ValueKind.LITERAL, ValueKind.CALLER_OR_DEFAULT})


@dataclasses.dataclass(frozen=True)
class MemberChange:
    """How a member's override changes once the mixin does its hooked inputs."""

    change: Change
    why: str = ""  # why it is blocked
    #: TRIM: the top-level statements removed (indices into the method body, the docstring counts)
    removed: tuple[int, ...] = ()
    #: TRIM: parameters only the removed statements read, which the method withheld from super(): they leave the
    #: signature and reach super() through ``**kwargs``, where the hook reads them (Fuyu's ``image_patches``)
    unnamed: tuple[str, ...] = ()
    #: DELETE: the statements of the override's own condition, and the method they move into (see :class:`Member`)
    moved: tuple[int, ...] = ()
    method: str = ""


def needs_method(own: OwnCondition, ids: str, kwargs: str) -> str:
    """The model's ``_generation_needs_first_step_inputs`` without the statements that move into it (the rewrite puts
    them in front of its ``return``): the parameters they read, with the override's defaults."""
    params = ", ".join(["self", ids, *(f"{p.name}={p.default or 'None'}" for p in own.reads), f"**{kwargs}"])
    return f"def {NEEDS_METHOD}({params}):\n    return {own.local}\n"


def _blocked(why: str) -> MemberChange:
    return MemberChange(Change.BLOCKED, why)


def _reduced_its_own_way(f: Finding) -> bool:
    """Whether ``f``'s override, already reduced to super(), still prepares other inputs than the mixin in the standard
    flow (an encoder-decoder wrapper's decoder mask, kept after super() where verification found it mattered): a hook
    may take over some of its statements, never the whole method (``apply --hooks`` on its own output)."""
    return f.override.analysis.delegation is Delegation.SUPER and bool(f.flow)


def member_change(
    f: Finding,
    hooked: Iterable[str],
    profile: MixinProfile,
    idioms: Mapping[str, Idiom],
    *,
    keep_signature: bool = False,
) -> MemberChange:
    """How ``f``'s override changes once the mixin does ``hooked`` (its keys) for it. ``keep_signature``: never
    a deletion (verification found the signature to matter: see :func:`trimmed`)."""
    o = f.override
    a = o.analysis
    hooked = set(hooked)
    if o.fallback is not None and o.fallback.kind is not FallbackKind.MIXIN:
        return _blocked(f"a deletion or super() reaches {o.fallback.detail}, not the mixin the hook goes into")
    if a.delegation in (Delegation.SUBMODEL, Delegation.STORED_METHOD):
        return _blocked(f"takes its inputs from {a.delegates_to}.prepare_inputs_for_generation, not super()")
    own = own_condition(o, profile)
    moving = own is not None and set(own.keys) <= hooked
    if own is not None and not moving and set(own.keys) & hooked:
        return _blocked(
            f"its own condition ({own.local}) passes {', '.join(own.keys)}: they move together or not at all"
        )
    # the statements of its own condition move into the class's method for the mixin: nothing of them stays
    bespoke = next(
        (r for r in f.reasons if r.kind.keeps and not (moving and own is not None and _within(r.line, own.spans))),
        None,
    )
    if bespoke is not None and a.delegation is not Delegation.SUPER:
        return _blocked(
            f"stays for what the mixin does not do ({bespoke.text.splitlines()[0][:80]}): its other "
            "statements are not all recognised, so nothing checks the part can move"
        )
    if o.forward_params is not None and any(p.startswith("**") for p in o.forward_params):
        # a hook leaves out what a member may have set to None (and the other way round): the same to a forward
        # that names the input (its default is None), not to one that takes it in **kwargs and hands it on
        named = {p for p in o.forward_params if not p.startswith("*")}
        loose = sorted(
            k
            for k in hooked
            if k in idioms
            and not set(idioms[k].table) <= _ALWAYS_SET
            and k not in named
            and not _left_out_alike(a, k, idioms[k], profile)
        )
        if loose:
            return _blocked(
                f"{o.class_name}.forward does not name {', '.join(loose)}: None and left out may not be the same to it"
            )
    remaining = [
        e for e in f.extras if e.key not in hooked or e.how in (ExtraHow.KEEP_STATEMENTS, ExtraHow.SWAP_DELEGATE)
    ]
    mixin_params = {p.name for p in profile.analysis.params} if profile.analysis else set()
    provided = {k for k in hooked if k in idioms and set(idioms[k].table) == {ValueKind.CALLER_OR_DEFAULT}}
    # an override that already calls super() and does something the mixin does not (Fuyu's ids cut to the last
    # token) can still be trimmed: its own statements stay where they are, only those that set hooked inputs go, with
    # the checks of any trim below (they do nothing else; nothing runs between super() and them)
    if (
        not remaining
        and bespoke is None
        and not _reduced_its_own_way(f)
        and not signature_kept(a, profile, provided)
        and not keep_signature
    ):
        forward = set(o.forward_params or ())
        if o.forward_params is not None:
            ids = a.ids_param
            unknown = sorted(
                p.name
                for p in a.params
                if p.kind.named
                and p.name not in ("self", ids)
                and p.name not in forward
                and p.name not in mixin_params
            )
            if unknown:
                return _blocked(
                    f"generate() accepts {', '.join(unknown)} only because the override names "
                    f"{'it' if len(unknown) == 1 else 'them'} ({o.class_name}.forward does not): "
                    "deleting it would make generate() refuse the input"
                )
        if moving and own is not None:
            ids, kwargs = a.ids_param, next((p.name for p in a.params if p.kind is ParamKind.VAR_KEYWORDS), None)
            if ids is None or kwargs is None:
                return _blocked("its own condition needs the ids and **kwargs to be asked with")
            return MemberChange(Change.DELETE, moved=own.statements, method=needs_method(own, ids, kwargs))
        return MemberChange(Change.DELETE)
    if moving and own is not None:
        return _blocked(
            f"its own condition ({own.local}) moves into {NEEDS_METHOD} only with the whole override, and "
            "something else stays"
        )
    if a.delegation is None:
        return MemberChange(Change.REDUCE)
    # already super(): remove the statements that only set hooked keys
    if not a.forwards_kwargs:
        return _blocked("its super() call hands on no **kwargs: the hooked inputs would not reach the mixin")
    removed = _statements_of(a, hooked)
    if removed is None:
        return _blocked("a statement setting a hooked input also does something else")
    unnamed = []
    for key in sorted(hooked):
        if _popped_before(a, key):
            return _blocked(
                f"it drops {key} before super(): removing its statement would lose the input (a deletion "
                "would not, but something else stays)"
            )
        if key in a.withheld:
            if not _unnamable(o, key, removed):
                return _blocked(
                    f"it does not hand {key} to super(): removing its statement would lose the input "
                    "(a deletion would not, but something else stays)"
                )
            unnamed.append(key)
    atoms = set().union(*(set(idioms[k].atoms) for k in hooked if k in idioms))
    flags = {
        Atom.FIRST.value: "is_first_iteration" if profile.era is Era.NEXT_SEQUENCE_LENGTH else "cache_position",
        Atom.USE_CACHE.value: "use_cache",
    }
    for atom in sorted(atoms):
        flag = flags.get(atom)
        if flag is not None and flag in a.withheld:
            return _blocked(f"it does not hand {flag} to super(): the mixin's test is not the override's")
    ordered = a.top_level
    call = next((t.index for t in ordered if "super" in t.reads), None)
    gone = [t for t in ordered if t.index in removed]
    between = next(
        (
            t
            for t in ordered
            if call is not None
            and call < t.index < max(removed)
            and t.index not in removed
            and not _unaffected_by(a, t, hooked, gone)
        ),
        None,
    )
    if between is not None:
        # the hook runs inside super(): a statement between the call and the removed ones would see its values
        return _blocked(
            f"line {between.line} runs between super() and the statements the hook replaces: it would see "
            "the hook's values where it saw the mixin's"
        )
    return MemberChange(Change.TRIM, removed=removed, unnamed=tuple(unnamed))


#: the hooks whose code pops their inputs (``model_inputs.pop(name, None)``) where it does not leave what the mixin
#: prepared: what they leave out is absent, never None
_POPPING_HOOKS = frozenset({HookKind.DROPPED, HookKind.DROPPED_WHEN})


def _left_out_alike(a: BodyAnalysis, key: str, idiom: Idiom, profile: MixinProfile) -> bool:
    """Whether the member and the idiom's hook both leave ``key`` out where either does: the member only pops it
    (never sets it to None), and the hook pops it too. Then a forward that takes the key only in ``**kwargs`` gets
    the same from both (VisionEncoderDecoder's ``decoder_head_mask``, RAG's ``assistant_model``)."""
    writes = [out for out in a.outputs if out.key == key]
    return (
        bool(writes)
        and all(out.value.origin is ValueOrigin.DROPPED and not out.via_kwargs for out in writes)
        and hook_for(idiom, profile)[0] in _POPPING_HOOKS
    )


#: values a statement takes from the method's parameters or writes as they are: never read off the prepared dict
_OWN_VALUES = frozenset(
    {ValueOrigin.PARAM, ValueOrigin.PARAM_DEFAULT, ValueOrigin.CONST, ValueOrigin.NONE, ValueOrigin.DROPPED}
)


def _unaffected_by(a: BodyAnalysis, t: TopLevel, hooked: set[str], removed: Sequence[TopLevel]) -> bool:
    """Whether statement ``t``, standing between super() and the statements a trim removes, does the same when the
    hook has already set the hooked keys inside super(), and the removed statements the same after it.

    The hook changes nothing but the dict super() returns (``**kwargs`` reach super() unpacked: a copy). So ``t``
    must not read that dict, but where it sets other keys of it (as recognised code: an unrecognised part could read
    anything) from values that do not come from it: BLIP's ``model_inputs["is_decoder"] = True``, Reformer's
    ``past_buckets_states`` from its ``past_key_values`` parameter, Bloom's static-cache mask from its own
    ``attention_mask``. Statements that never name the dict qualify whether a rule understands them or not
    (RoCBert's cut of its shape and pronunciation ids). And it must not rebind the dict, nor change what the
    removed statements read besides it (``TopLevel.touched``: ``cache_position.add_(1)``), nor touch ``self`` at all
    where they read it (for a config attribute: ``self.config.x = 5`` or ``self.bump()`` in front of them changes
    what the hook, running before it, reads)."""
    theirs = {n for r in removed for n in r.reads} - {n for r in removed for n in r.writes} - {RESULT}
    if t.returns or "super" in t.reads or RESULT in t.writes or set(t.writes) & theirs:
        return False
    outputs = [out for out in a.outputs if _owner(a, out.line) is t]
    if set(t.reads) & theirs:
        # reading what they read is harmless only where the code says it is read and nothing more: it never names
        # the dict and only reads their objects (Qwen2-VL's own cut of its ids by ``cache_position``, before its
        # later-step ``pixel_values``), or uses the dict by other keys only
        if not outputs and RESULT not in t.reads and "self" not in theirs and not set(t.touched) & theirs:
            return True
        return not outputs and _other_keys_only(a, t, hooked, theirs)
    if not outputs:
        return RESULT not in t.reads or _other_keys_only(a, t, hooked, theirs)
    return t.recognised and all(
        out.key not in hooked
        and not out.via_kwargs
        and (out.value.origin in _OWN_VALUES or RESULT not in _names_in(out.expr))
        and not any(RESULT in _names_in(condition) for condition in out.conditions)
        for out in outputs
    )


def _other_keys_only(a: BodyAnalysis, t: TopLevel, hooked: set[str], theirs: set[str]) -> bool:
    """Whether statement ``t``, which no rule understands, uses the dict ``super()`` returned only by constant keys
    that no hook sets (``model_inputs["inputs_embeds"].shape``, ``model_inputs.get("position_ids")``, ``x["k"] += 1``),
    read or written: it never hands the dict on, rebinds it, or reaches a hooked key, so the hook's values are not
    what it sees (PaliGemma's static-cache mask and its 1-indexed positions, between ``super()`` and its first-step
    ``pixel_values``). What the removed statements read (``theirs``: PaliGemma's ``cache_position``) it may read,
    never ``self``, never bind, and never call a method of (``cache_position.add_(1)``). Only where no rule claimed
    any of it: a recognised part is not code this reads."""
    if "self" in theirs and "self" in t.reads:
        return False
    span = range(t.line, (t.end_line or t.line) + 1)
    if any(r.line in span for r in a.recognised):
        return False
    parts = [u for u in a.unrecognised if u.line in span]
    if not parts:
        return False
    for u in parts:
        tree = _statement_tree(u)
        if tree is None:
            return False
        parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Name) and node.id in theirs:
                parent = parents.get(node)
                if not isinstance(node.ctx, ast.Load) or (
                    isinstance(parent, (ast.Attribute, ast.Subscript))
                    and parent.value is node
                    and not isinstance(parent.ctx, ast.Load)
                ):
                    return False
                if isinstance(parent, ast.Attribute) and isinstance(parents.get(parent), ast.Call):
                    return False  # a method of it, which may change it
                continue
            if not (isinstance(node, ast.Name) and node.id == RESULT):
                continue
            parent = parents.get(node)
            if isinstance(parent, ast.Subscript) and parent.value is node:
                key = parent.slice.value if isinstance(parent.slice, ast.Constant) else None
            elif (
                isinstance(parent, ast.Attribute)
                and parent.attr == "get"
                and isinstance(parents.get(parent), ast.Call)
            ):
                call = parents[parent]
                assert isinstance(call, ast.Call)
                key = call.args[0].value if call.args and isinstance(call.args[0], ast.Constant) else None
            else:
                return False
            if not isinstance(key, str) or key in hooked:
                return False
    return True


def _unnamable(o: Override, name: str, removed: tuple[int, ...]) -> bool:
    """Whether parameter ``name``, which the method does not hand to super(), can leave the signature with the
    ``removed`` statements (only they read it), reaching super() and the hook through ``**kwargs``
    (``plan.unnamable``)."""
    return unnamable(o, name) and all(name not in t.reads for t in o.analysis.top_level if t.index not in removed)


def _own_defaults(a: BodyAnalysis, profile: MixinProfile) -> list[Param]:
    """The named parameters (not ``self``, not the ids) with a default of the override's own: not None, and not
    the mixin's default for the same parameter."""
    mixin = {p.name: p.default for p in profile.analysis.params} if profile.analysis is not None else {}
    ids = a.ids_param
    return [
        p
        for p in a.params
        if p.kind.named
        and p.name not in ("self", ids)
        and p.default not in (None, "None")
        and mixin.get(p.name) != p.default
    ]


def _signature_defaults(
    idiom: Idiom, members: Sequence[Part], findings: Mapping[str, Finding], profile: MixinProfile
) -> list[Part]:
    """The other defaults of the defaults hook's members' signatures (Mixtral's ``use_cache=True`` beside its
    ``output_router_logits=False``), as parts of the same cluster: the attribute names every default the
    signature gave an input the override passes on, so that nothing but its signature would keep the override.
    ``use_cache`` is among them: generate() always passes it, so only a direct caller that leaves it out sees the
    default, which ``setdefault`` in the hook gives as the signature did."""
    have = {(p.override, p.key) for p in members}
    models = {p.override: p.model for p in members}
    out: list[Part] = []
    for override_id, model in models.items():
        a = findings[override_id].override.analysis
        passed = {o.key for o in a.outputs}
        out += [
            Part(override_id, model, p.name, idiom, argument=p.default or "")
            for p in _own_defaults(a, profile)
            if p.name in passed and (override_id, p.name) not in have
        ]
    return out


def signature_kept(a: BodyAnalysis, profile: MixinProfile, provided: Iterable[str] = ()) -> str:
    """Why the override's signature matters beyond its body (empty: it does not), so that a hook member is trimmed
    or reduced, never deleted: a default of its own for an input (``output_router_logits=False``; the mixin's own
    default for it is no reason), which applies wherever a caller leaves the input out, unless a hook now gives
    it (``provided``). Not for what generate() always passes (``use_cache``): only a composite asking its decoder
    without it sees that default, and verification runs each BERT-style decoder head inside one (a member it fails
    for is trimmed instead, ``trimmed``)."""
    skipped = {*GENERATE_PROVIDES, *provided}
    defaults = [f"{p.name}={p.default}" for p in _own_defaults(a, profile) if p.name not in skipped]
    return f"its default{'s' if len(defaults) > 1 else ''} {', '.join(defaults)}" if defaults else ""


def signature_trims(report: HookReport, result: ScanResult, members: Iterable[str]) -> dict[str, Trim]:
    """Override id -> what a trim removes, for the ``members`` a hook deletes that can be trimmed
    instead (with the same checks as any trim: see :func:`member_change`): the override keeps its signature and
    whatever else it does. For a member whose deletion verification found to change what generate() does
    through the signature (it took ``inputs_embeds`` the old signature refused, or lost a default a composite's
    decoder relied on)."""
    chosen = set(members)
    hooked: dict[str, dict[str, Idiom]] = {}
    for cluster in report.applied():
        for member in cluster.members:
            if (
                member.applicable
                and member.change is Change.DELETE
                and member.override in chosen
                and cluster.idiom is not None
            ):
                hooked.setdefault(member.override, {}).update(dict.fromkeys(member.keys, cluster.idiom))
    findings = {f.override.id: f for f in result.findings}
    out: dict[str, Trim] = {}
    for oid, idioms in hooked.items():
        found = member_change(findings[OverrideId(oid)], idioms, result.profile, idioms, keep_signature=True)
        if found.change is Change.TRIM:
            out[oid] = Trim(found.removed, found.unnamed)
    return out


def _statements_of(a: BodyAnalysis, keys: set[str]) -> tuple[int, ...] | None:
    """The top-level statements that do nothing but set ``keys`` (None when one of them does more)."""

    def owner(line: int) -> TopLevel | None:
        return _owner(a, line)

    chosen: dict[int, TopLevel] = {}
    for out in a.outputs:
        if out.key in keys:
            t = owner(out.line)
            if t is None:
                return None
            chosen[t.index] = t
    for t in chosen.values():
        others = [out for out in a.outputs if owner(out.line) is t and out.key not in keys]
        # a name it assigns that no other statement reads (a drop loop's ``key``) goes with it harmlessly
        read_elsewhere = {n for other in a.top_level if other is not t for n in other.reads}
        if others or t.returns or set(t.writes) & read_elsewhere or "super" in t.reads or not t.recognised:
            return None
    return tuple(sorted(chosen))


# --------------------------------------------------------------------------------------------- mine


def parts(result: ScanResult) -> list[Part]:
    """Every model-specific key of every override the scan selected, normalised."""
    out = []
    for f in result.findings:
        if any(e.how in (ExtraHow.KEEP_AFTER, ExtraHow.COMPUTED) for e in f.extras):
            continue  # its keys come from what it keeps after super(), not from a hook's reading of them
        keys = dict.fromkeys(
            e.key
            for e in f.extras
            if e.key and e.how not in (ExtraHow.KEEP_STATEMENTS, ExtraHow.SWAP_DELEGATE, ExtraHow.WITHHELD)
        )
        for key in keys:
            out.append(part_of(f, key, result.profile))
    return out


@dataclasses.dataclass
class _Draft:
    """A cluster being mined: its idiom, hook, and the parts of each member override."""

    idiom: Idiom
    kind: HookKind
    hook: Hook | None
    name: str
    parts: dict[OverrideId, list[Part]]
    members: list[Part]

    def models(self, overrides: Iterable[str]) -> set[str]:
        return {self.parts[OverrideId(o)][0].model for o in overrides}


def mine(result: ScanResult) -> HookReport:
    """Cluster the overrides' model-specific parts; keep the idioms three or more models share."""
    profile = result.profile
    checkout = result.index.checkout
    mixin_file = (
        checkout.relative(checkout.mixin_file) if checkout.mixin_file is not None and profile.analysis else None
    )
    hoisted = profile.hoisted and mixin_file is not None
    findings: dict[str, Finding] = {f.override.id: f for f in result.findings}
    found = parts(result)
    in_mixin = attributes_read(profile)
    by_idiom: dict[Idiom, list[Part]] = {}
    for part in found:
        if part.idiom is not None and set(part.idiom.table) != {ValueKind.PREPARED}:
            by_idiom.setdefault(part.idiom, []).append(part)
    idioms_of: dict[str, dict[str, Idiom]] = {}
    for part in found:
        if part.idiom is not None:
            idioms_of.setdefault(part.override, {})[part.key] = part.idiom
    drafts = []
    for idiom, members in by_idiom.items():
        kind, hook, name = hook_for(idiom, profile)
        if len({p.model for p in members}) < _models_needed(hook, in_mixin):
            continue
        if hook is not None and kind in (HookKind.FROM_CONFIG, HookKind.DEFAULT, HookKind.CONSTANT):
            # a dict attribute maps each key to its argument: parts without one single argument cannot say it
            members = [p for p in members if p.argument]
        if hook is not None and kind is HookKind.DEFAULT:
            defaults = _signature_defaults(idiom, members, findings, profile)
            members = [*members, *defaults]
            for part in defaults:
                idioms_of.setdefault(part.override, {})[part.key] = idiom
        if hook is not None and kind is HookKind.NONE_WHEN_GIVEN and profile.analysis is not None:
            # the hook reads what the caller gave from the mixin's **kwargs: not an input the mixin names
            named = {p.name for p in profile.analysis.params}
            members = [p for p in members if p.key not in named]
        by_override: dict[OverrideId, list[Part]] = {}
        for part in members:
            by_override.setdefault(part.override, []).append(part)
        drafts.append(_Draft(idiom, kind, hook, name, by_override, members))
    # A member's change depends on every hook it takes: with all of them, nothing may be left (a deletion);
    # with some, a trim. Which hooks are applied depends on how many models each can change: settle both.
    applied = {id(d) for d in drafts if d.hook is not None and mixin_file is not None}
    changes: dict[tuple[int, str], MemberChange] = {}
    for _ in range(len(drafts) + 1):
        joint: dict[str, list[str]] = {}
        for d in drafts:
            if id(d) in applied:
                for override_id, own in d.parts.items():
                    joint.setdefault(override_id, []).extend(p.key for p in own)
        for d in drafts:
            for override_id, own in d.parts.items():
                if d.hook is None:
                    changes[id(d), override_id] = _blocked("no hook template")
                    continue
                keys = joint[override_id] if id(d) in applied else [p.key for p in own]
                changes[id(d), override_id] = member_change(
                    findings[override_id], keys, profile, idioms_of.get(override_id, {})
                )
        settled = {
            id(d)
            for d in drafts
            if id(d) in applied
            and len(d.models(o for o in d.parts if changes[id(d), o].change is not Change.BLOCKED))
            >= _models_needed(d.hook, in_mixin)
        }
        if settled == applied:
            break
        applied = settled
    clusters = []
    for d in drafts:
        cluster_members = []
        for override_id, own in d.parts.items():
            o = findings[override_id].override
            outcome = changes[id(d), override_id]
            cluster_members.append(
                Member(
                    OverrideId(override_id),
                    own[0].model,
                    o.class_name,
                    o.file,
                    tuple(p.key for p in own),
                    assignment(d.kind, d.hook.attribute, own) if d.hook else "",
                    outcome.change,
                    outcome.why,
                    outcome.removed,
                    o.lines,
                    outcome.unnamed,
                    outcome.moved,
                    outcome.method,
                )
            )
        cluster_members.sort(key=lambda m: (m.model, m.file, m.class_name))
        not_applied = ""
        applicable = {m.model for m in cluster_members if m.applicable}
        if d.hook is None:
            not_applied = d.name
        elif mixin_file is None:
            not_applied = f"no mixin file to add it to ({profile.source})"
        elif id(d) not in applied:
            not_applied = f"only {len(applicable)} of its models can take it (at least {_models_needed(d.hook, in_mixin)} needed)"
        name = d.hook.attribute if d.hook else "_generation_" + _slug(d.idiom.describe())[:40]
        clusters.append(
            Cluster(
                name,
                d.kind,
                d.idiom,
                d.idiom.describe(),
                d.hook,
                tuple(cluster_members),
                tuple(_near_misses(d.idiom, d.members, found)),
                not_applied=not_applied,
            )
        )
    clusters += _statement_clusters(result, mixin_file)
    clusters.sort(key=lambda c: (not c.applied, -len(c.models), c.name))
    return HookReport(
        tuple(clusters),
        profile.era,
        mixin_file,
        hoisted,
        frozenset(c.name for c in clusters if c.hook is not None and c.name in in_mixin),
    )


def attributes_read(profile: MixinProfile) -> frozenset[str]:
    """The ``self.<attribute>`` names the mixin's method reads in code no rule understands: the hooks an earlier
    ``apply --hooks`` added (the second pass over the tree the first left, or a run over a migrated checkout)."""
    return frozenset(m for u in profile.unrecognised for m in re.findall(r"self\.(\w+)", u.source or u.code))


def _models_needed(hook: Hook | None, in_mixin: frozenset[str]) -> int:
    """How many models a hook needs to be applied: ``MIN_MODELS`` to be worth the mixin's code, one where the
    mixin has that code already (a member then costs the mixin nothing)."""
    return 1 if hook is not None and hook.attribute in in_mixin else MIN_MODELS


def _near_misses(idiom: Idiom, members: Sequence[Part], found: Sequence[Part]) -> list[NearMiss]:
    """Parts that look like the cluster's and do not join it, with why: the same key done differently
    (or through code no rule understands), or the same kinds of value under other conditions."""
    inside = {p.override for p in members}
    keys = {p.key for p in members}
    kinds = set(idiom.table)
    out: dict[tuple[str, str], NearMiss] = {}
    for part in found:
        if part.override in inside or (part.model, part.key) in out:
            continue
        if part.idiom is None:
            if part.key in keys:
                out[part.model, part.key] = NearMiss(part.override, part.model, part.key, part.opaque)
            continue
        if part.idiom == idiom:
            continue
        if part.key in keys or (set(part.idiom.table) == kinds and len(kinds) > 1):
            out[part.model, part.key] = NearMiss(
                part.override, part.model, part.key, f"{part.idiom.describe()}; the cluster's are {idiom.describe()}"
            )
    return sorted(out.values(), key=lambda n: (n.model, n.key))


def _statement_clusters(result: ScanResult, mixin_file: str | None) -> list[Cluster]:
    """Overrides whose statements no rule understands are the same code (normalised). Where three or more
    models' whole bodies are the same code that the mixin's method can run as it is (:func:`_whole_body`), the
    cluster is a hook: that code, under ``if self.<attribute>:``, at the start of the mixin's method, and each
    member reduced to ``super()`` with the attribute set. Otherwise a proposal."""
    groups: dict[str, list[Finding]] = {}
    for f in result.findings:
        o = f.override
        unrecognised = o.analysis.unrecognised
        if not unrecognised:
            continue
        context = _context(o, result.profile)
        codes = [normalised_code(u.code, context) for u in unrecognised]
        if any(c is None for c in codes):
            continue
        # a check that only raises is left out of the key: bodies that do the same and check alike (``assert`` or
        # ``raise``, another message) are one cluster, and a member whose checks are its own keeps them (_Body.guards)
        key = "\n".join(c for c in codes if c and _passes_when(c) is None)
        if key:  # nothing but checks (a member's own, kept in front of super() by a first pass): no code to share
            groups.setdefault(key, []).append(f)
    out = []
    for code, found in groups.items():
        models = {f.override.model or f.override.class_name for f in found}
        if len(models) < MIN_MODELS:
            continue
        found.sort(key=lambda f: (f.override.model or f.override.class_name, f.override.file, f.override.class_name))
        bodies = {f.override.id: _whole_body(f, result.profile) for f in found}
        movable = [body for body in bodies.values() if body.code]
        shared = max(movable, key=lambda b: sum(1 for m in movable if m.code == b.code), default=None)
        # the same code, or the same code checking the same conditions its own way (it keeps its checks)
        takers = {
            oid
            for oid, body in bodies.items()
            if shared is not None
            and body.code
            and (
                body.code == shared.code
                or (body.unguarded == shared.unguarded and body.guards and body.conditions == shared.conditions)
            )
        }
        first = code.splitlines()[0]
        lines = code.count("\n") + 1
        description = (
            f"{lines} statement{'s' if lines > 1 else ''} no rule understands, the same in each (first: {first[:70]})"
        )
        if (
            shared is not None
            and mixin_file is not None
            and len({f.override.model or f.override.class_name for f in found if f.override.id in takers})
            >= MIN_MODELS
        ):
            representative = next(f.override for f in found if bodies[f.override.id].code == shared.code)
            name = "_generation_inputs_as_" + re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", representative.class_name).lower()
            hook = _whole_body_hook(name, representative.class_name, bodies[representative.id].source, result.profile)
            members = tuple(
                _statements_member(
                    f.override,
                    Change.REDUCE,
                    assignment=f"{name} = True",
                    guards=() if bodies[f.override.id].code == shared.code else bodies[f.override.id].guards,
                )
                if f.override.id in takers
                else _statements_member(
                    f.override, Change.BLOCKED, bodies[f.override.id].why or "its body is other code than the others'"
                )
                for f in found
            )
            out.append(
                Cluster(
                    name, HookKind.STATEMENTS, None, f"the whole body: {description}", hook, members, code=shared.code
                )
            )
            continue
        why = "statements no rule understands: a proposal for an overridable mixin method, not applied"
        members = tuple(
            _statements_member(f.override, Change.BLOCKED, bodies[f.override.id].why or why) for f in found
        )
        out.append(
            Cluster(
                "_prepare_" + _slug(first)[:40],
                HookKind.STATEMENTS,
                None,
                description,
                None,
                members,
                code=code,
                not_applied=why,
            )
        )
    return out


def _statements_member(
    o: Override, change: Change, why: str = "", *, assignment: str = "", guards: tuple[int, ...] = ()
) -> Member:
    """A member of a cluster of statements no rule understands (it hooks no key)."""
    return Member(
        o.id, o.model or o.class_name, o.class_name, o.file, (), assignment, change, why, (), o.lines, guards=guards
    )


@dataclasses.dataclass(frozen=True)
class _Body:
    """An override's whole body as the mixin's method would run it (``code``, normalised: the same in every member
    that does the same; ``source``, as written), or why it cannot (``why``)."""

    code: str = ""
    why: str = ""
    source: str = ""
    #: the top-level statements that only check (``_passes_when``): indices into the body, and the conditions they
    #: let the method go on under (sorted); ``unguarded``: ``code`` without them
    guards: tuple[int, ...] = ()
    conditions: tuple[str, ...] = ()
    unguarded: str = ""


def _whole_body(f: Finding, profile: MixinProfile) -> _Body:
    """``f``'s body as code the mixin's method can run in its place: statements no rule understands, then one
    ``return {...}`` of names (no condition, nothing dropped), reading only its own locals, builtins, ``self``,
    ``torch`` (which every era's generation/utils.py imports) and parameters the mixin's method has under the same
    name with the same default. A body that reads anything else (its ``**kwargs``, a name of its module) would mean
    something else there. The override must take ``**kwargs``: its reduction hands every input on through them."""
    o = f.override
    a = o.analysis
    mixin = profile.analysis
    if mixin is None:
        return _Body(why="no mixin method to move it into")
    if o.fallback is None or o.fallback.kind is not FallbackKind.MIXIN:
        # the code runs in the mixin only if super() reaches it: resolved, not assumed
        reached = o.fallback.detail if o.fallback is not None else "nothing resolved"
        return _Body(why=f"super() reaches {reached}, not the mixin")
    statements = a.top_level
    body, last = statements[:-1], statements[-1] if statements else None
    if (
        a.delegation is not None
        or last is None
        or not last.returns
        or len(a.recognised) != 1
        or a.dropped
        or [(u.line, u.end_line) for u in a.unrecognised] != [(t.line, t.end_line) for t in body]
    ):
        return _Body(why="its body is more than statements no rule understands and one return of a dict")
    if not a.outputs or any(
        out.line != last.line or out.guards or out.conditions or not out.expr.isidentifier() for out in a.outputs
    ):
        return _Body(why="it returns more than a dict of names")
    shared = {p.name: p for p in mixin.params}
    ids, mixin_ids = a.ids_param, mixin.ids_param
    if ids != mixin_ids or not any(p.kind is ParamKind.VAR_KEYWORDS for p in a.params):
        return _Body(why="its signature is not the mixin's: the first parameter or the **kwargs differ")
    for p in a.params:
        if (
            p.kind.named
            and p.name not in ("self", ids)
            and (p.name not in shared or shared[p.name].default != p.default)
        ):
            return _Body(why=f"the mixin's method has no parameter {p.name}={p.default}")
    known = {"self", "torch", ids, *(p.name for p in a.params if p.kind.named), *dir(builtins)}
    for t in statements:
        foreign = sorted(set(t.exposed) - known)
        if foreign:
            return _Body(why=f"line {t.line} reads {', '.join(foreign)}, which the mixin's method does not have")
        known.update(t.writes)
    returned = ", ".join(f"{json.dumps(out.key)}: {out.expr}" for out in a.outputs)
    ret = f"return {{{returned}}}"
    # ``source``: the statements as written (comments, layout, one blank line where groups had any)
    written = [re.sub(r"\A\n+", "\n", u.source) if u.source else u.code for u in a.unrecognised]
    # a check can move in front of super() (ahead of the statements before it) only where what it reads is what it
    # read there: ``self`` and parameters nothing before it assigns (the loop above refused any other name)
    guards: list[int] = []
    conditions: list[str] = []
    assigned: set[str] = set()
    for t, u in zip(body, a.unrecognised, strict=False):
        condition = _passes_when(u.code)
        if condition is not None and not set(t.exposed) & assigned:
            guards.append(t.index)
            conditions.append(condition)
        assigned.update(t.writes)
    unguarded = [u.code for t, u in zip(body, a.unrecognised, strict=False) if t.index not in guards]
    return _Body(
        "\n".join([*(u.code for u in a.unrecognised), ret]),
        source="\n".join([written[0].lstrip("\n"), *written[1:], "", ret]),
        guards=tuple(guards),
        conditions=tuple(sorted(conditions)),
        unguarded="\n".join([*unguarded, ret]),
    )


def _passes_when(code: str) -> str | None:
    """For a statement that only checks, ``assert <test>[, message]`` or ``if <test>: raise ...`` (nothing else), the
    condition it lets the method go on under (``x is not None`` for both ``assert x is not None`` and ``if x is None:
    raise ...``: the rewrite's ``negated``), laid out as ``ast`` writes it, so that every member's compares alike;
    None for any other statement."""
    try:
        statement = cst.parse_statement(code.strip())
    except cst.ParserSyntaxError:
        return None
    if (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Assert)
    ):
        test = statement.body[0].test
    elif isinstance(statement, cst.If) and statement.orelse is None:
        block = statement.body
        smalls = (
            block.body
            if isinstance(block, cst.SimpleStatementSuite)
            else [
                small
                for line in block.body
                for small in (line.body if isinstance(line, cst.SimpleStatementLine) else [line])
            ]
        )
        if not all(isinstance(small, cst.Raise) for small in smalls):
            return None
        test = negated(statement.test)
    else:
        return None
    return ast.unparse(ast.parse(cst.Module(body=[]).code_for_node(test), mode="eval").body)


def _whole_body_hook(name: str, class_name: str, code: str, profile: MixinProfile) -> Hook:
    typed = profile.era is Era.NEXT_SEQUENCE_LENGTH
    summary = (
        f"Models that prepare their inputs as {class_name}'s override did (the same code in each; no rule "
        "understands it) set this True: the mixin runs that code in their place"
    )
    return _hook(
        HookKind.STATEMENTS,
        name,
        "bool" if typed else "",
        "False",
        summary,
        prologue=f"# The inputs as {class_name}'s override prepared them (`{name}`)\n"
        f"if self.{name}:\n{textwrap.indent(code, '    ')}\n",
    )


# --------------------------------------------------------------------------------------------- plan


def hooked_findings(result: ScanResult, report: HookReport, keep_signature: Iterable[str] = ()) -> tuple[Finding, ...]:
    """The findings as the mixin with the applied hooks would classify them: a member's hooked keys are
    the mixin's, so its extras lose them (none left: generic, deleted; ``keep_signature``: trimmed instead)."""
    keep_signature = set(keep_signature)
    out = []
    for f in result.findings:
        moved = report.whole_body(f.override.id)
        if moved is not None:
            note = Reason(
                ReasonKind.NOTE, f"its whole body runs in the mixin: the {moved.name} hook ({moved.description})"
            )
            guards = next(m.guards for m in moved.members if m.override == f.override.id)
            kept: tuple[Extra, ...] = ()
            notes = [note]
            if (
                guards
            ):  # its own checks stay in front of super(), where they run first, as they did before the hook's code
                kept = (Extra("", ExtraHow.KEEP_STATEMENTS, ",".join(map(str, guards))),)
                notes.append(
                    Reason(
                        ReasonKind.NOTE,
                        "kept as is in front of super(): its own check of the config (the "
                        "hook's code checks the same condition its own way)",
                    )
                )
            out.append(
                dataclasses.replace(f, action=Action.REDUCE, extras=kept, reasons=(*f.reasons, *notes), flow=())
            )
            continue
        hooked = report.hooked_keys(f.override.id)
        if not hooked:
            out.append(f)
            continue
        remaining = tuple(
            e for e in f.extras if e.key not in hooked or e.how in (ExtraHow.KEEP_STATEMENTS, ExtraHow.SWAP_DELEGATE)
        )
        lines = {out_.line for out_ in f.override.analysis.outputs if out_.key in hooked}
        reasons = tuple(
            r
            for r in f.reasons
            if not (r.kind is ReasonKind.EXTRA and (r.line in lines or (r.text.split() or [""])[0] in hooked))
        )
        reasons += tuple(
            Reason(
                ReasonKind.NOTE,
                f"{', '.join(sorted(k for k, c in hooked.items() if c is cluster))}: "
                f"the mixin's {cluster.name} hook ({cluster.description})",
            )
            for cluster in dict.fromkeys(hooked.values())
        )
        provided = {k for k, c in hooked.items() if c.kind is HookKind.DEFAULT}
        # what the mixin does not do (Fuyu's ids cut to the last token) keeps the override: only trimmed; the
        # statements of a condition of its own move into its _generation_needs_first_step_inputs (a member's method)
        moves = report.moves_own_condition(f.override.id)
        condition = own_condition(f.override, result.profile) if moves else None
        spans = condition.spans if condition is not None else ()
        own = any(r.kind.keeps and not _within(r.line, spans) for r in f.reasons)
        if condition is not None:
            reasons = tuple(r for r in reasons if not (r.kind.keeps and _within(r.line, spans)))
            reasons += (
                Reason(
                    ReasonKind.NOTE,
                    f"its own condition ({condition.local}) moves into {NEEDS_METHOD}, "
                    "which the mixin asks before it prepares anything",
                ),
            )
        if (
            not remaining
            and not own
            and not _reduced_its_own_way(f)
            and not signature_kept(f.override.analysis, result.profile, provided)
            and f.override.id not in keep_signature
        ):
            out.append(
                dataclasses.replace(f, category=Category.GENERIC, action=Action.DELETE, reasons=reasons, extras=())
            )
        elif f.override.analysis.delegation is None:
            out.append(dataclasses.replace(f, action=Action.REDUCE, reasons=reasons, extras=remaining))
        else:  # already super(): trimmed below, not by the planner
            out.append(dataclasses.replace(f, action=Action.KEEP, reasons=reasons, extras=remaining))
    return tuple(out)


def hooked_result(result: ScanResult, report: HookReport, keep_signature: Iterable[str] = ()) -> ScanResult:
    return dataclasses.replace(result, findings=hooked_findings(result, report, keep_signature))


def plan_with_hooks(
    result: ScanResult,
    report: HookReport,
    repairs: dict[str, Repair] | None = None,
    *,
    mark_kept: bool = False,
    hold_unproven: bool = False,
    keep_signature: Mapping[str, Trim] | None = None,
) -> Plan:
    """The migration plan of ``result`` with the applied hooks: each member's shard gets its change
    (the planner's deletion or reduction, or the trim), the class attribute, and the hook in the mixin
    (the same edit in every member's shard, written once: the hook stays as long as one member does).
    ``keep_signature``: members trimmed (of these statements) rather than deleted (:func:`signature_trims`)."""
    kept = dict(keep_signature or {})
    plan = initial_plan(
        hooked_result(result, report, kept),
        repairs,
        mark_kept=mark_kept,
        hold_unproven=hold_unproven,
        trims={**trims(report), **kept},
        moved_whole=report.moved_whole(),
        left_out=left_out(report),
    )
    return extend(plan, report)


def left_out(report: HookReport) -> dict[str, frozenset[str]]:
    """Override id -> the keys the applied hooks make the mixin leave out for its class (always: none of them
    reaches forward)."""
    out: dict[str, set[str]] = {}
    for cluster in report.applied():
        if cluster.kind is HookKind.DROPPED:
            for member in cluster.members:
                if member.applicable:
                    out.setdefault(member.override, set()).update(member.keys)
    return {oid: frozenset(keys) for oid, keys in out.items()}


def trims(report: HookReport) -> dict[str, Trim]:
    """Override id -> what to remove, for the applicable members that call ``super()`` already (the statements
    every hook it takes does in the mixin now, and the parameters only they read)."""
    removed: dict[str, set[int]] = {}
    unnamed: dict[str, set[str]] = {}
    for cluster in report.applied():
        for member in cluster.members:
            if member.applicable and member.change is Change.TRIM:
                removed.setdefault(member.override, set()).update(member.removed)
                unnamed.setdefault(member.override, set()).update(member.unnamed)
    return {oid: Trim(tuple(sorted(statements)), tuple(sorted(unnamed[oid]))) for oid, statements in removed.items()}


def extend(plan: Plan, report: HookReport) -> Plan:
    """``plan`` (made from the hooked findings, with the trims) with the hook edits added to the shards of
    the members it changes: a member the planner keeps (held back, refused) takes no hook."""
    if report.mixin_file is None:
        return plan
    members: dict[str, list[tuple[Cluster, Member]]] = {}
    for cluster in report.applied():
        for member in cluster.members:
            if member.applicable:
                members.setdefault(member.override, []).append((cluster, member))
    actions = dict(plan.actions)
    shards = []
    for shard in plan.shards:
        edits = list(shard.edits)
        for oid in shard.members:
            if oid not in members or actions.get(oid, Action.KEEP) is Action.KEEP:
                continue
            for cluster, member in members[oid]:
                assert cluster.hook is not None  # an applied cluster has one
                edits.append(
                    Edit(
                        member.file,
                        member.class_name,
                        EditKind.SET_ATTRIBUTE,
                        oid,
                        f"takes the mixin's {cluster.name} hook",
                        member.assignment,
                    )
                )
                if member.method:
                    edits.append(
                        Edit(
                            member.file,
                            member.class_name,
                            EditKind.ADD_METHOD,
                            oid,
                            f"its own condition, asked by the mixin's {cluster.name} hook",
                            member.method,
                            keep=member.moved,
                        )
                    )
                edits.append(
                    Edit(
                        report.mixin_file,
                        MIXIN_CLASS,
                        EditKind.HOOK,
                        oid,
                        f"the {cluster.name} hook ({cluster.description})",
                        hook=cluster.hook.code(),
                    )
                )
        shards.append(dataclasses.replace(shard, edits=tuple(edits)))
    hoist = plan.hoist
    if hoist is None and report.hoisted and any(a is not Action.KEEP for a in actions.values()):
        hoist = _hoist(report.mixin_file)
    return dataclasses.replace(plan, shards=tuple(shards), hoist=hoist)


def _hoist(mixin_file: str) -> Edit:
    from codemod.rules.generic_mixin import HOIST_SOURCE

    return Edit(
        mixin_file,
        MIXIN_CLASS,
        EditKind.HOIST,
        None,
        "the mixin is a stub: install the generic implementation first",
        HOIST_SOURCE,
    )


def failing_clusters(plan: Plan, report: HookReport, failed: Iterable[str]) -> dict[str, Held]:
    """Shards to revert besides the failed ones: the members of a hook that, without the failed members,
    fewer than ``MIN_MODELS`` models would still use (the hook is not worth adding for them)."""
    failed = set(failed)
    actions = dict(plan.actions)
    shard_of = {m: s.id for s in plan.shards for m in s.members}
    out: dict[str, Held] = {}
    for cluster in report.applied():
        if cluster.name in report.in_mixin:
            continue  # the mixin had it before this plan: it stays, and a member costs it nothing
        staying = [
            m
            for m in cluster.members
            if m.applicable and m.override not in failed and actions.get(m.override, Action.KEEP) is not Action.KEEP
        ]
        if staying and len({m.model for m in staying}) < MIN_MODELS:
            why = (
                f"reverted: the {cluster.name} hook would serve {len({m.model for m in staying})} model(s) once the "
                f"failed members are reverted (at least {MIN_MODELS} needed)"
            )
            for shard in (shard_of[m.override] for m in staying if m.override in shard_of):
                out.setdefault(shard, Held(shard, HeldCause.HOOK_TOO_SMALL, why))
    return out


def shards_of_members(plan: Plan, report: HookReport) -> set[str]:
    """The shards that hold an applied hook's members."""
    ids = {m.override for c in report.applied() for m in c.members if m.applicable}
    return {s.id for s in plan.shards if set(s.members) & ids}


__all__ = [
    "MIN_MODELS",
    "Atom",
    "Change",
    "Cluster",
    "Hook",
    "HookKind",
    "HookReport",
    "Idiom",
    "Member",
    "NearMiss",
    "Part",
    "ValueKind",
    "extend",
    "failing_clusters",
    "hook_for",
    "hooked_findings",
    "hooked_result",
    "mine",
    "part_of",
    "parts",
    "plan_with_hooks",
    "shards_of_members",
    "trims",
]
