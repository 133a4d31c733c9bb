"""Never write code that cannot run: the checks an edit must pass before it is written.

Before rewriting (``refusal``, pure, from the facts the plan has):

- a reduction needs a positional ids parameter to hand to ``super()`` (``def f(self, *args, **kwargs)``
  has none: ``input_ids`` would be an undefined name);
- a statement a reduction keeps in front of ``super()`` must still matter: every name it assigns is
  read afterwards (``if cache_position[0] != 0: pixel_values = None`` is dead once ``pixel_values``
  reaches ``super()`` through ``**kwargs``);
- a closed parent override (no ``**kwargs``) cannot take the keywords a reduction hands it;
- every key the fallback would pass to the model's ``forward`` is one it accepts, or it takes
  ``**kwargs``: the mixin forwards every model kwarg (``use_cache`` always, the keywords a reduction
  passes, the keys it sets itself), where the old closed dict passed only what it listed.

After rewriting (``new_problems``): pyflakes on the file before and after. A rewrite may remove
problems but must add none: no undefined name, unused variable or import, or redefinition.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from collections import Counter
from collections.abc import Iterable

from codemod.analyse.analysis import BodyAnalysis
from codemod.analyse.classify import IDS_KEYS, Extra
from codemod.analyse.fallback import FallbackKind
from codemod.analyse.index import Override
from codemod.contracts import ExtraHow, ParamKind

#: keys generate() puts into the model kwargs in every release; the mixin forwards them to forward
GENERATE_ALWAYS = frozenset({"use_cache"})


@dataclasses.dataclass(frozen=True)
class Reach:
    """What the fallback passes to ``forward`` besides what a reduction adds."""

    #: the fallback forwards every keyword argument (the mixin); False: a closed dict (a parent's)
    forwards_kwargs: bool
    #: the keys it sets itself (the mixin's ``inputs_embeds``, ``cache_position``; a closed parent's keys)
    sets: frozenset[str]
    #: keys it never passes (``labels``)
    never: frozenset[str] = frozenset()
    #: the inputs it reads itself (its parameters, the keys it prepares): what a kept statement must leave alone
    reads: frozenset[str] = frozenset()
    #: keys it sets only for a class whose attribute says so: (key, attribute) (``cache_position`` where
    #: ``self._supports_cache_class``)
    when_attribute: frozenset[tuple[str, str]] = frozenset()


def reach_of(override: Override, mixin: Reach) -> Reach:
    """The mixin's reach, or the closed dict of the parent override a deletion or super() reaches."""
    fallback = override.fallback
    if fallback is not None and fallback.kind is FallbackKind.PARENT and fallback.analysis is not None:
        analysis = fallback.analysis
        return Reach(
            analysis.forwards_kwargs,
            frozenset(analysis.output_values()) - IDS_KEYS,
            frozenset(analysis.dropped),
            inputs_read(analysis),
        )
    return mixin


def inputs_read(analysis: BodyAnalysis) -> frozenset[str]:
    """What an implementation reads of its inputs: its named parameters and the keys it prepares."""
    params = {p.name for p in analysis.params if p.kind.named} - {"self"}
    return frozenset(params | set(analysis.output_values()))


def _encoder_decoder(override: Override) -> bool:
    values = override.analysis.output_values()
    return "decoder_input_ids" in values or any(p.name == "decoder_input_ids" for p in override.analysis.params)


def forwarded_keys(
    override: Override, reach: Reach, keywords: Iterable[str] = (), extras: Iterable[Extra] = ()
) -> set[str]:
    """The keys ``forward`` receives once the override is deleted (no ``keywords`` or ``extras``) or
    reduced to ``super()`` called with ``keywords`` and followed by ``extras``, that the old override
    did not pass it."""
    keys = set(reach.sets) | {
        key for key, attribute in reach.when_attribute if override.attribute(attribute) == "True"
    }
    if _encoder_decoder(override):
        keys.discard("inputs_embeds")  # the mixin feeds embeddings to decoder-only models only
    if reach.forwards_kwargs:
        keys |= GENERATE_ALWAYS | set(keywords)
    # a withheld key is popped before super(): it reaches forward only where the fallback sets it itself
    not_passed = (ExtraHow.DROP, ExtraHow.KEEP_STATEMENTS, ExtraHow.SWAP_DELEGATE, ExtraHow.WITHHELD)
    for extra in extras:
        if extra.key and extra.how not in not_passed:
            keys.add(extra.key)
    dropped = {e.key for e in extras if e.how is ExtraHow.DROP}
    # what the old override passed already reached forward: only the keys it did not pass are new
    old = override.analysis
    passed = set(old.output_values())
    if old.forwards_kwargs:
        passed |= GENERATE_ALWAYS | set(keywords)
    return keys - passed - dropped - set(reach.never) - IDS_KEYS


def not_taken(override: Override, keys: Iterable[str]) -> tuple[str, ...]:
    """The ``keys`` the class's ``forward`` takes neither as parameters nor through ``**kwargs``
    (none when ``forward`` is not known)."""
    forward = override.forward_params
    if forward is None or any(p.startswith("**") for p in forward):
        return ()
    return tuple(sorted(set(keys) - {p.lstrip("*") for p in forward}))


def forward_refusal(override: Override, keys: Iterable[str]) -> str | None:
    """Why ``forward`` cannot take ``keys``: a parameter it lacks, or (outside a checkout, where
    verification runs the model instead) a ``forward`` that is not found."""
    keys = set(keys)
    if override.forward_params is None:
        if override.in_library:
            return None
        return (
            f"{override.class_name}.forward is not found: the keys the fallback would pass it "
            f"({', '.join(sorted(keys))}) cannot be checked"
        )
    missing = not_taken(override, keys)
    if not missing:
        return None
    return (
        f"{override.class_name}.forward takes neither {', '.join(missing)} nor **kwargs: the fallback would pass "
        f"{'it' if len(missing) == 1 else 'them'} (TypeError)"
    )


def ids_refusal(override: Override) -> str | None:
    if any(p.kind is ParamKind.POSITIONAL and p.name != "self" for p in override.analysis.params):
        return None
    return "its signature has no positional ids parameter to hand to super() (only *args)"


def signature_refusal(override: Override, keywords: Iterable[str], spreads_kwargs: bool) -> str | None:
    """A parent override without ``**kwargs`` cannot take keywords it does not name."""
    fallback = override.fallback
    if fallback is None or fallback.kind is not FallbackKind.PARENT or fallback.analysis is None:
        return None
    params = fallback.analysis.params
    if any(p.kind is ParamKind.VAR_KEYWORDS for p in params):
        return None
    named = {p.name for p in params}
    unknown = sorted(set(keywords) - named)
    if spreads_kwargs:
        return f"{fallback.class_name}.prepare_inputs_for_generation takes no **kwargs to hand on"
    if unknown:
        return f"{fallback.class_name}.prepare_inputs_for_generation takes no {', '.join(unknown)}"
    return None


def dead_statements(override: Override, kept: Iterable[int], body: str, where: str = "in front of") -> str | None:
    """A kept statement whose assignments nothing reads any more (the new ``body`` follows them)."""
    statements = {t.index: t for t in override.analysis.top_level}
    order = [statements[i] for i in kept if i in statements]
    read_after = _names_read(body)
    for position in range(len(order) - 1, -1, -1):
        statement = order[position]
        # a name the statement reads itself is its own working variable (``past_length`` in Phi-3's
        # cache reset); one nothing reads at all is a dead store
        dead = sorted(set(statement.writes) - read_after - set(statement.reads) - {"_"})
        if dead:
            return (
                f"the statement at line {statement.line}, kept {where} super(), assigns "
                f"{', '.join(dead)}, which nothing reads any more"
            )
        read_after |= set(statement.reads)
    return None


def interference(override: Override, kept: Iterable[int], reach: Reach) -> str | None:
    """Outside a checkout nothing runs old and new code side by side: a statement kept in front of
    ``super()`` may only prepare what the fallback does not read itself (Habana's ``token_idx`` slicing of
    ``input_ids`` followed by the mixin's own slicing is neither the old code nor the mixin)."""
    if override.in_library:
        return None
    statements = {t.index: t for t in override.analysis.top_level}
    for index in kept:
        statement = statements.get(index)
        touched = sorted(set(statement.writes) & reach.reads) if statement is not None else []
        if touched and statement is not None:
            return (
                f"the statement at line {statement.line}, kept in front of super(), changes "
                f"{', '.join(touched)}, which the fallback prepares itself: how the two combine is not verified"
            )
    return None


def _names_read(code: str) -> set[str]:
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return set()
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Store)}


# --------------------------------------------------------------------------------------------- after


#: pyflakes messages that mean code that cannot run, or an effect that went dead
_PROBLEMS = (
    "UndefinedName",
    "UndefinedLocal",
    "UndefinedExport",
    "UnusedVariable",
    "UnusedImport",
    "RedefinedWhileUnused",
    "UnusedAnnotation",
)


_LINE = re.compile(r"line \d+")


def problems(text: str, filename: str = "<rewrite>") -> Counter[str]:
    """The pyflakes problems of ``text``, as (kind, message) without line numbers, counted."""
    from pyflakes import checker, messages

    try:
        tree = ast.parse(text, filename=filename)
    except SyntaxError:
        return Counter({"SyntaxError": 1})
    found: Counter[str] = Counter()
    for message in checker.Checker(tree, filename=filename).messages:
        kind = type(message).__name__
        if kind in _PROBLEMS and isinstance(message, messages.Message):
            # what and which names, not where: an import added at the top shifts every line number
            text = _LINE.sub("line …", message.message % message.message_args)
            found[f"{kind}: {text}"] += 1
    return found


def new_problems(old: str, new: str, filename: str = "<rewrite>") -> list[str]:
    """What pyflakes finds in ``new`` that it did not find (as often) in ``old``."""
    return sorted((problems(new, filename) - problems(old, filename)).elements())
