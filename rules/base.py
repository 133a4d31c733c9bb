"""What a behaviour recogniser is, and what it reports.

A recogniser ("rule") looks at the statements of a ``prepare_inputs_for_generation`` body, starting
at one position, and either declines or claims one or more consecutive statements, saying which
behaviour they implement. The engine (``codemod.analyse.recognise``) walks the body, descends into ``if``
blocks whose test is a known guard (``rules.guards``), and reports every statement that no rule
claims. Rules never see the whole file and never import torch: they are pure functions of syntax.

Every rule module has a docstring whose first line is ``CODE name: summary``, then what the rule
recognises and why it matters (its description), and an ``Example::`` block that the rule
recognises; a ``RULE`` object; its ``CASES``: the positive examples (``Case``) and the near misses
that are not the behaviour, each with why (``NoOp``), from which ``tests/test_rules.py`` generates
its tests; and, where the rule says, ``ERAS``: what the mixins of which releases do about it
(``EraNote``), and ``BECOMES``: what an override that only does the behaviour becomes, where that is not
simply deleted (``rules.doc``). ``discover`` finds the rule modules of a package (``rules.ALL``).
"""

from __future__ import annotations

import dataclasses
import importlib
import pkgutil
import re
import textwrap
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from types import ModuleType
from typing import TYPE_CHECKING, TypedDict

import libcst as cst

# Value and ValueOrigin are part of the rule authors' API: re-exported for the rule modules
from codemod.analyse.analysis import Delegation
from codemod.contracts import Value as Value
from codemod.contracts import ValueOrigin as ValueOrigin
from codemod.contracts import Vocabulary
from codemod.rules._pattern import Captures, Template


class Kind(Vocabulary):
    """How a behaviour relates to what a generic mixin can do."""

    #: standard input preparation that a generic mixin may implement (slicing, positions, masks...)
    STANDARD = "standard"
    #: plumbing with no behaviour of its own (building the output dict, reading kwargs)
    PLUMBING = "plumbing"
    #: model-specific: the override must stay
    BESPOKE = "bespoke"


#: the behaviours that cut the ids to the tokens the cache has not seen, each its own way
IDS_SLICING = (
    "slice-by-cache-position",
    "slice-by-past-length",
    "slice-by-cache-length",
    "slice-by-next-sequence-length",
)


@dataclasses.dataclass(frozen=True)
class Context:
    """What a rule may know besides the statements: the signature and the enclosing guards."""

    params: tuple[str, ...]
    ids_param: str  # "input_ids", or "decoder_input_ids" for some encoder-decoder models
    var_kwargs: str | None  # name of the ``**kwargs`` parameter
    output_names: tuple[str, ...] = ("model_inputs",)  # the variables the function returns
    #: parameters after ``*args`` / ``*``: a ``*args`` spread never passes them on
    keyword_only: tuple[str, ...] = ()
    #: parameters before ``/``: a keyword of their name reaches ``**kwargs``, not them
    positional_only: tuple[str, ...] = ()
    guards: tuple[str, ...] = ()  # e.g. ("past", "first-step"), innermost last
    #: the code of each guard's test, as written (``not (...)`` in an ``else``), innermost last
    tests: tuple[str, ...] = ()
    symbols: Mapping[str, Value] = dataclasses.field(default_factory=dict)

    def value_of(self, name: str) -> Value:
        if name in self.symbols:
            return self.symbols[name]
        if name == self.ids_param:
            return Value(ValueOrigin.IDS, "unsliced")
        if name in self.params:
            return Value(ValueOrigin.PARAM, name)
        return Value(ValueOrigin.EXPR, name)

    @property
    def under_past(self) -> bool:
        return any(g.startswith("past") for g in self.guards)

    @property
    def step(self) -> str | None:
        """``first-step`` or ``later-step`` when a guard says which, else None."""
        for guard in reversed(self.guards):
            if guard in ("first-step", "later-step"):
                return guard
        return None


@dataclasses.dataclass(frozen=True)
class Match:
    """A rule's claim on ``consumed`` statements."""

    consumed: int
    behaviour: str
    detail: str = ""
    #: variables the claimed statements (re)define, and what they hold afterwards
    defines: Mapping[str, Value] = dataclasses.field(default_factory=dict)
    #: keys the claimed statements put into the output dict
    outputs: Mapping[str, Value] = dataclasses.field(default_factory=dict)
    #: the outputs go through ``**kwargs`` (set before a delegated call, which passes them on)
    via_kwargs: bool = False
    #: the expression each output key is given, as code (for a rewrite that keeps the key)
    output_code: Mapping[str, str] = dataclasses.field(default_factory=dict)
    #: keys the claimed statements remove from the output dict
    drops: tuple[str, ...] = ()
    #: the output dict starts afresh here (``model_inputs = {...}``)
    resets_outputs: bool = False
    #: every remaining keyword argument reaches the output (``**kwargs`` forwarded)
    forwards_kwargs: bool = False
    #: the output comes from another implementation (``super()``, a sub-model)
    delegates_to: str | None = None
    #: which kind of implementation ``delegates_to`` is
    delegation: Delegation | None = None
    #: the claimed statements return from the function
    returns: bool = False
    #: parameters that a delegated call (``super()``, a sub-model) is not given
    withholds: tuple[str, ...] = ()
    #: further behaviours the same statements implement (a mixin block may do several things)
    implies: tuple[str, ...] = ()
    #: structured variant information for the comparison with the mixin (e.g. slice="last token")
    facets: Mapping[str, str] = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Coverage:
    """Whether a mixin does what an override's behaviour does, and how it differs if only nearly."""

    covered: bool
    differences: tuple[str, ...] = ()
    #: when not covered: what the mixin lacks
    missing: str = ""
    #: differences that change what is prepared in the standard generate flow (listed like the others,
    #: and they make the override not generic; ``differences`` are near-misses outside that flow)
    flow_differences: tuple[str, ...] = ()


#: The statements of a block that a rule is shown: a body's, or a one-line suite's small statements
#: (``if past: input_ids = input_ids[:, -1:]``), which no rule claims but the engine walks alike.
Statements = Sequence[cst.BaseStatement] | Sequence[cst.BaseSmallStatement]

#: A mixin's behaviours as the comparison sees them: behaviour name -> facets of its occurrences.
MixinBehaviours = Mapping[str, Sequence[Mapping[str, str]]]


def _source(text: str) -> str:
    """Statements as written in a case: dedented, from the first line to the last, one newline at the end."""
    return textwrap.dedent(text).strip("\n") + "\n"


@dataclasses.dataclass(frozen=True)
class Case:
    """A positive example: statements of an override's body that are the rule's behaviour.

    The tests analyse ``source`` as loose statements of an override (its parameters are those of
    ``tests/test_rules.PARAMS``) and check that the rule claims ``behaviour`` (default: the rule's
    name) once, reporting exactly ``detail`` and ``facets``. Every behaviour recognised in ``source``
    is that one, the further ones the same claim implements (``implies``, claimed by the rule too)
    or ones other rules recognise (``others``); the statements left unrecognised are exactly
    ``unrecognised`` (normalised code; none unless given), and ``lines`` are the claim's first and
    last line, where given.
    """

    id: str
    source: str
    detail: str
    facets: Mapping[str, str] = dataclasses.field(default_factory=dict)
    behaviour: str = ""
    implies: tuple[str, ...] = ()
    others: tuple[str, ...] = ()
    unrecognised: tuple[str, ...] = ()
    lines: tuple[int, int] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "source", _source(self.source))


@dataclasses.dataclass(frozen=True)
class NoOp:
    """A near miss: statements that are not the rule's behaviour, and ``why`` not.

    The tests check that the rule claims nothing in ``source`` and that the statement whose
    normalised code contains ``unrecognised`` is listed as unrecognised (nothing is skipped silently).
    """

    id: str
    source: str
    why: str
    unrecognised: str

    def __post_init__(self) -> None:
        object.__setattr__(self, "source", _source(self.source))


@dataclasses.dataclass(frozen=True)
class EraNote:
    """What the mixins of some releases do about a rule's behaviour (``releases``: e.g. ``4.46 – 5.2``)."""

    releases: str
    does: str


class Rule:
    """Base class: subclasses set ``code``, ``name``, ``kind`` and implement ``match``.

    ``covered_by`` names the mixin behaviours that do the same as this one; ``coverage`` may be
    overridden where facets matter (e.g. a static-cache mask only for ``StaticCache``).
    ``description``, ``cases``, ``eras``, ``becomes`` and ``module`` come from the rule's module (``discover``).
    """

    code: str
    name: str
    kind: Kind
    summary: str
    example: str
    covered_by: tuple[str, ...] = ()
    description: str = ""
    cases: tuple[Case | NoOp, ...] = ()
    eras: tuple[EraNote, ...] = ()
    #: what an override that only does this becomes, where the module says (its ``BECOMES``)
    becomes: str = ""
    module: str = ""

    @property
    def positives(self) -> tuple[Case, ...]:
        return tuple(case for case in self.cases if isinstance(case, Case))

    @property
    def noops(self) -> tuple[NoOp, ...]:
        return tuple(case for case in self.cases if isinstance(case, NoOp))

    def match(self, statements: Statements, start: int, ctx: Context) -> Match | None:
        raise NotImplementedError

    def coverage(self, facets: Mapping[str, str], mixin: MixinBehaviours) -> Coverage:
        if self.kind is Kind.PLUMBING:
            return Coverage(True)
        if any(name in mixin for name in self.covered_by or (self.name,)):
            return Coverage(True)
        return Coverage(False, missing=f"the mixin does not {self.summary[0].lower()}{self.summary[1:]}")

    def __repr__(self) -> str:
        return f"<{self.code} {self.name}>"


_HEADER = re.compile(r"^(?P<code>[A-Z]{2}\d{3}) (?P<name>[a-z0-9-]+): (?P<summary>.+)$")


class DocstringError(ValueError):
    """A rule module's docstring lacks the ``CODE name: summary`` header or the ``Example::`` block."""


class RuleModuleError(Exception):
    """A module of a rules package is not a well-formed rule (raised at import, naming the module)."""


def parse_docstring(doc: str | None) -> tuple[str, str, str, str]:
    """``(code, name, summary, example)`` from a rule module's docstring."""
    if not doc:
        raise DocstringError("rule modules need a docstring")
    lines = doc.strip().splitlines()
    header = _HEADER.match(lines[0].strip())
    if not header:
        raise DocstringError(f"rule docstring must start with 'CODE name: summary', got {lines[0]!r}")
    text = doc.split("Example::", 1)
    if len(text) != 2:
        raise DocstringError(f"{header['code']}: rule docstring needs an 'Example::' block")
    example_lines = []
    for line in text[1].splitlines()[1:]:
        if line.strip() and not line.startswith("    "):
            break
        example_lines.append(line)
    example = textwrap.dedent("\n".join(example_lines)).strip()
    return header["code"], header["name"], header["summary"], example


def parse_description(doc: str) -> str:
    """The prose of a rule module's docstring between its header line and its ``Example::`` block."""
    return textwrap.dedent(doc.strip().partition("\n")[2]).split("Example::", 1)[0].strip()


def discover(package: str, path: Iterable[str], helpers: Collection[str] = ()) -> tuple[Rule, ...]:
    """The rules of ``package`` (found on ``path``), in code order.

    Every module but the private ones (``_name``) and ``helpers`` is a rule module: importing it must
    give a ``RULE`` whose code, name and example are its docstring's, and ``CASES`` (``Case`` and
    ``NoOp``, ids unique), ``ERAS`` (``EraNote``) and ``BECOMES`` (a string) where it has them; the
    rule is given its description, cases, era notes, ``becomes`` and module name. Anything else raises ``RuleModuleError`` naming
    the module, so that a rule cannot be silently left out.
    """
    found: dict[str, Rule] = {}
    names: dict[str, str] = {}
    for info in sorted(pkgutil.iter_modules(list(path)), key=lambda info: info.name):
        if info.name.startswith("_") or info.name in helpers:
            continue
        qualified = f"{package}.{info.name}"
        try:
            module = importlib.import_module(qualified)
        except DocstringError as error:
            raise RuleModuleError(f"{qualified}: {error}") from error
        rule = _rule_of(module)
        if rule.code in found or rule.name in names:
            taken = found[rule.code].module if rule.code in found else names[rule.name]
            raise RuleModuleError(f"{qualified}: {rule.code} {rule.name} repeats the code or the name of {taken}")
        found[rule.code] = rule
        names[rule.name] = qualified
    return tuple(found[code] for code in sorted(found))


def _rule_of(module: ModuleType) -> Rule:
    name = module.__name__
    rule = getattr(module, "RULE", None)
    if not isinstance(rule, Rule):
        raise RuleModuleError(f"{name}: a rule module needs a RULE (a rules.base.Rule), or it recognises nothing")
    try:
        code, rule_name, _, example = parse_docstring(module.__doc__)
    except DocstringError as error:
        raise RuleModuleError(f"{name}: {error}") from error
    if (rule.code, rule.name, rule.example) != (code, rule_name, example):
        raise RuleModuleError(f"{name}: RULE is {rule.code} {rule.name}, the docstring says {code} {rule_name}")
    cases = tuple(getattr(module, "CASES", ()))
    eras = tuple(getattr(module, "ERAS", ()))
    becomes = getattr(module, "BECOMES", "")
    if not all(isinstance(case, (Case, NoOp)) for case in cases):
        raise RuleModuleError(f"{name}: CASES holds only Case and NoOp objects")
    if not all(isinstance(note, EraNote) for note in eras):
        raise RuleModuleError(f"{name}: ERAS holds only EraNote objects")
    if not isinstance(becomes, str):
        raise RuleModuleError(f"{name}: BECOMES is a string")
    ids = [case.id for case in cases]
    if len(set(ids)) != len(ids):
        raise RuleModuleError(f"{name}: case ids repeat: {sorted({i for i in ids if ids.count(i) > 1})}")
    assert module.__doc__ is not None  # parse_docstring has read it
    rule.description = parse_description(module.__doc__)
    rule.cases, rule.eras, rule.becomes, rule.module = cases, eras, becomes, name
    return rule


Check = Callable[[Captures, Context, str], "Match | None"]


class TemplateRule(Rule):
    """A rule given by code templates, each with a label (its variant).

    ``check(captures, ctx, variant)`` turns a template match into a ``Match``, or returns ``None``
    to decline (e.g. the guard context is wrong).
    """

    def __init__(
        self, doc: str | None, kind: Kind, templates: Mapping[str, str], check: Check, covered_by: tuple[str, ...] = ()
    ) -> None:
        self.code, self.name, self.summary, self.example = parse_docstring(doc)
        self.kind = kind
        self.covered_by = covered_by
        self.templates = tuple((variant, Template.parse(t)) for variant, t in templates.items())
        self._check = check

    def match(self, statements: Statements, start: int, ctx: Context) -> Match | None:
        best: Match | None = None
        for variant, template in self.templates:
            captures = template.match(statements, start)
            if captures is None:
                continue
            found = self._check(captures, ctx, variant)
            if found is None:
                continue
            found = dataclasses.replace(found, consumed=len(template), behaviour=found.behaviour or self.name)
            if best is None or found.consumed > best.consumed:
                best = found
        return best


if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing's own from Python 3.11

    class ClaimFields(TypedDict, total=False):
        """The fields of a ``Match`` that a template rule's check gives ``claim`` (all but the first two)."""

        detail: str
        defines: Mapping[str, Value]
        outputs: Mapping[str, Value]
        via_kwargs: bool
        output_code: Mapping[str, str]
        drops: tuple[str, ...]
        resets_outputs: bool
        forwards_kwargs: bool
        delegates_to: str | None
        delegation: Delegation | None
        returns: bool
        withholds: tuple[str, ...]
        implies: tuple[str, ...]
        facets: Mapping[str, str]


def claim(behaviour: str = "", **fields: Unpack[ClaimFields]) -> Match:
    """A Match whose ``consumed`` is filled in by the TemplateRule."""
    return Match(consumed=0, behaviour=behaviour, **fields)
