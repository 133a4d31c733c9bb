"""Reductions: an override cut to its ``super()`` call and the statements after it that re-create what it does
that the mixin does not (its extras), and the words that say what it keeps.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import re
from collections.abc import Iterable, Sequence

import libcst as cst

from codemod.analyse.analysis import Nested, Recognised
from codemod.analyse.classify import CORE_INPUTS, GENERATE_PROVIDES, Extra, Finding
from codemod.analyse.index import Override
from codemod.contracts import (
    ExtraHow,
    ParamKind,
    ReasonKind,
    Repair,
    ValueOrigin,
)


def param_list(override: Override) -> tuple[str, list[str], str | None, str | None]:
    """(ids parameter, other named parameters, *args name, **kwargs name)."""
    params = [p for p in override.analysis.params if p.name != "self"]
    ids = next((p.name for p in params if p.kind is ParamKind.POSITIONAL), "input_ids")
    args = next((p.name for p in params if p.kind is ParamKind.VAR_ARGS), None)
    kwargs = next((p.name for p in params if p.kind is ParamKind.VAR_KEYWORDS), None)
    named = [p.name for p in params if p.kind.named and p.name != ids]
    return ids, named, args, kwargs


#: the extras re-created by one statement after super(), or one under a test (``key``: the key as code,
#: ``quoted``: the source as code)
_ONE_STATEMENT = {
    ExtraHow.DROP: "model_inputs.pop({key}, None)",
    ExtraHow.SET_NONE: "model_inputs[{key}] = None",
    ExtraHow.PASSTHROUGH: "model_inputs[{key}] = {source}",
    ExtraHow.PASSTHROUGH_GIVEN: "if {source} is not None:\n    model_inputs[{key}] = {source}",
    ExtraHow.RENAMED: "model_inputs[{key}] = model_inputs.pop({quoted})",
}


def extra_statements(override: Override, extras: Sequence[Extra], slim: bool = False) -> list[str] | None:
    """Statements that re-create the model-specific keys after ``super()``; None if they cannot be."""
    lines: list[str] = []
    _, parameters, _, var_keywords = param_list(override)
    named = set(parameters) if not slim else set()
    outputs = override.analysis.outputs
    for extra in extras:
        key = json.dumps(extra.key)  # double quotes, as transformers writes them
        if extra.how in _ONE_STATEMENT:
            lines += (
                _ONE_STATEMENT[extra.how]
                .format(key=key, source=extra.source, quoted=json.dumps(extra.source))
                .split("\n")
            )
            continue
        if extra.how is ExtraHow.LAST_TOKEN:
            test = _last_token_guard(override)
            if test is None:
                return None
            # the old code's own cut, under its own test
            lines += [f"if {test}:", f"    model_inputs[{key}] = model_inputs[{key}][:, -1:]"]
            continue
        if extra.how is ExtraHow.LATER_STEP_NONE:
            if any(e.how is ExtraHow.COMPUTED and e.key == extra.key for e in extras):
                continue  # the statements kept after super() compute it, None on the later steps included
            cut = _later_step_none(override, extra.key)
            if cut is not None:  # a parameter set to None under the cache test (else: as the dict wrote it, below)
                test = _cache_test(override, cut)
                if test is None:
                    return None  # written as the dict wrote it, the key would be the caller's value on every step
                lines += [f"if {test}:", f"    model_inputs[{key}] = None"]
                continue
        if extra.how is ExtraHow.NONE_WHEN_GIVEN:
            given = extra.key if extra.key in parameters else f"{var_keywords}.get({key})" if var_keywords else None
            if given is None:
                return None  # the caller's value reaches no name the reduction could test
            lines += [f"if {given} is not None:", f"    model_inputs[{key}] = None"]
            continue
        if extra.how in (ExtraHow.KEEP_STATEMENTS, ExtraHow.KEEP_AFTER, ExtraHow.CUT, ExtraHow.WITHHELD):
            continue  # the statements themselves stay, in front of super() or after it (see Edit.keep, Edit.keep_after);
            # a withheld input is popped in front of super() (reduce_override)
        if extra.how is ExtraHow.DEFAULT:
            if extra.key not in named:  # a named parameter reaches super() with its default already
                lines.append(f"model_inputs.setdefault({key}, {extra.source})")
            continue
        if extra.how is ExtraHow.SLICED:
            return None  # the slicing statement would have to move with it; keep the override
        writes = [o for o in outputs if o.key == extra.key and o.value.origin is not ValueOrigin.DROPPED]
        # an unconditional write makes the ones before it dead code
        last_plain = max((i for i, o in enumerate(writes) if not o.conditions), default=0)
        writes = writes[last_plain:]
        if not writes or any(not o.expr for o in writes):
            return None
        for write in writes:
            statement = f"model_inputs[{key}] = {_double_quoted(write.expr)}"
            if write.conditions:
                condition = " and ".join(f"({c})" if len(write.conditions) > 1 else c for c in write.conditions)
                lines += [f"if {condition}:", f"    {statement}"]
            else:
                lines.append(statement)
    return lines


class _DoubleQuotes(cst.CSTTransformer):
    def leave_SimpleString(self, original_node: cst.SimpleString, updated_node: cst.SimpleString) -> cst.SimpleString:
        value = updated_node.value
        if value.startswith("'") and not value.startswith("'''") and '"' not in value and "\\" not in value:
            return updated_node.with_changes(value='"' + value[1:-1] + '"')
        return updated_node


def _double_quoted(expression: str) -> str:
    """An expression the scan recorded normalised (``ast.unparse``: single quotes) as transformers writes it, in double
    quotes (``decoder_inputs["input_ids"]``); as it is where a string holds a quote or a backslash, or does not parse."""
    if "'" not in expression:
        return expression
    try:
        node = cst.parse_expression(expression).visit(_DoubleQuotes())
    except cst.ParserSyntaxError:
        return expression
    return cst.Module(body=[]).code_for_node(node) if isinstance(node, cst.BaseExpression) else expression


def _last_token_guard(override: Override) -> str | None:
    """The test under which the override cut its ids to the last token (``slice-to-last-token``), on its
    cache parameter; None when the scan saw no such cut, or one under another test."""
    from codemod.rules.slice_to_last_token import RULE as LAST_TOKEN

    cut = next((r for r in override.analysis.recognised if r.code == LAST_TOKEN.code), None)
    return _cache_test(override, cut)


def _later_step_none(override: Override, key: str) -> Recognised | None:
    """The statement that set the parameter the override passes as ``key`` to None under a cache test
    (``later-step-none``); None when no such statement gives the key its value (a dict written under the
    test itself)."""
    from codemod.rules.later_step_none import RULE as LATER_STEP_NONE

    a = override.analysis
    final = [o for o in a.outputs if o.key == key and o.value.origin is not ValueOrigin.DROPPED]
    if not final or final[-1].conditions or not final[-1].expr:
        return None
    name = final[-1].expr
    return next((r for r in a.recognised if r.code == LATER_STEP_NONE.code and r.facet("name") == name), None)


def _cache_test(override: Override, recognised: Recognised | None) -> str | None:
    """The cache test a recognised statement stood under (its ``guard`` facet), written on the override's
    cache parameter (a name the guards know as a cache), for a reduction to repeat after super(); a test of
    the step's position (``later-step``) as it was written; None without either."""
    from codemod.rules.guards import PAST_NAMES

    if recognised is None:
        return None
    test = recognised.facet("test")
    if recognised.facet("guard") == "later-step" and test:
        # a test of the step's position, as written: the names it reads (parameters, as the rule checked where it
        # stood) must be what they were there when it runs again after super(), so no statement may rebind them
        written = {n for t in override.analysis.top_level for n in t.writes}
        return test if not names_in(test) & written else None
    cache = next((p.name for p in override.analysis.params if p.name in PAST_NAMES), None)
    if cache is None:
        return None
    return {"past-truthy": cache, "past-not-none": f"{cache} is not None"}.get(recognised.facet("guard") or "")


def names_in(code: str) -> set[str]:
    """The names ``code`` reads or writes (empty when it does not parse)."""
    try:
        return {n.id for n in ast.walk(ast.parse(code)) if isinstance(n, ast.Name)}
    except SyntaxError:
        return set()


#: the class attribute of the mined hook for inputs a model computes itself (``codemod.transform.hooks``): the
#: mixin leaves out every key a class names in it
DROPPED_INPUTS = "_generation_dropped_inputs"


#: keys a mixin of some era, or generate() through it, may put in the prepared inputs itself
MIXIN_KEYS = (
    CORE_INPUTS
    | GENERATE_PROVIDES
    | {"token_type_ids", "num_logits_to_keep", "logits_to_keep", "decoder_inputs_embeds"}
)


def unnamable(override: Override, name: str) -> bool:
    """Whether parameter ``name`` can leave the signature and still reach ``super()`` as the caller gives it,
    through ``**kwargs`` (which the caller must then read it from): a None default (what a caller leaving it out
    gives the fallback), a ``forward`` that names it (generate() accepts a model kwarg when this signature or,
    through ``**kwargs``, ``forward`` names it), not the ids or ``inputs_embeds`` (generate() looks for them in
    this signature), and a signature with ``**kwargs`` and no ``*args`` (whose positions a parameter less would
    shift). What else in the body reads it is the caller's to check."""
    a = override.analysis
    kinds = {p.kind for p in a.params}
    param = next((p for p in a.params if p.name == name), None)
    return (
        param is not None
        and param.kind.named
        and param.default == "None"
        and name not in (a.ids_param, "inputs_embeds", "self")
        and override.forward_params is not None
        and name in override.forward_params
        and ParamKind.VAR_KEYWORDS in kinds
        and ParamKind.VAR_ARGS not in kinds
    )


def slim_parameters(override: Override, extras: Sequence[Extra], body: str) -> tuple[str, ...]:
    """The parameters a reduced override still names; the others reach ``super()`` through
    ``**kwargs``, as the mixin takes them (a None the caller leaves out is the same None to the
    model's forward). Empty means: keep the signature as it is.

    Kept: the ids, ``inputs_embeds`` (generate() looks for it in the signature), what the body and
    the extras use, required parameters, defaults other than None (values super() would not know),
    and any the class's ``forward`` does not take: generate() accepts a model kwarg when this
    signature or, through ``**kwargs``, ``forward`` names it. No ``**kwargs`` or a ``*args`` (whose
    positions a dropped parameter would shift): the signature stays.
    """
    params = [p for p in override.analysis.params if p.name != "self"]
    kept = [t for t in override.analysis.top_level if t.index in (*kept_statements(extras), *kept_after(extras))]
    # what the kept statements read, and what they assign (a parameter they reset must reach super()
    # as they left it, not as the caller gave it through **kwargs)
    kept_names = {n for t in kept for n in (*t.reads, *t.writes)}
    needed = names_in(body) | kept_names | {e.source for e in extras}
    keep = tuple(p.name for p in params if p.name in needed or not unnamable(override, p.name))
    return keep if len(keep) < len(params) else ()


def swap_parameters(override: Override) -> tuple[str, ...]:
    """The parameters a swapped delegation (``super()`` instead of ``self.language_model``) still names;
    empty: the signature stays. Dropped: those the body reads only in the delegated call (there as
    ``name=name``: the rewrite checks it), with a None default, that ``forward`` takes, and not the ids
    or ``inputs_embeds``: through ``**kwargs`` they reach super() as they did (see ``slim_parameters``)."""
    a = override.analysis
    if not a.forwards_kwargs:
        return ()
    from codemod.rules.delegate import RULE as DELEGATE

    call_lines = {r.line for r in a.recognised if r.code == DELEGATE.code}
    others = {n for t in a.top_level if t.line not in call_lines for n in t.reads}
    params = [p for p in a.params if p.name != "self"]
    dropped = {p.name for p in params if p.name not in others and unnamable(override, p.name)}
    return tuple(p.name for p in params if p.name not in dropped) if dropped else ()


@dataclasses.dataclass(frozen=True)
class Reduction:
    """A reduced override: its new body, and the parameters its signature keeps (empty: all)."""

    body: str
    keep_params: tuple[str, ...] = ()
    #: the keywords the super() call passes, and whether it spreads **kwargs
    keywords: tuple[str, ...] = ()
    spreads_kwargs: bool = False
    #: the code after the super() call (what statements kept after it must still matter to)
    tail: str = ""


def reduce_override(override: Override, extras: Sequence[Extra], slim: bool = True) -> Reduction | None:
    """``super()`` with the inputs, then the extras; None when the extras cannot be re-created.

    With ``slim``, the parameters ``slim_parameters`` drops reach ``super()`` through ``**kwargs``
    (the rewrite drops them from the signature); otherwise every parameter goes to ``super()`` by
    keyword except those only the extras use.
    """
    statements = extra_statements(override, extras, slim=slim)
    if statements is None:
        return None
    ids, named, args, kwargs = param_list(override)
    keep_params = slim_parameters(override, extras, "\n".join(statements)) if slim else ()
    if keep_params:
        named = [p for p in named if p in keep_params]
    # parameters only the extras consume; everything else goes to super() as before
    extra_sources = {e.source for e in extras if e.how in (ExtraHow.FIRST_STEP, ExtraHow.LATER_STEP)} | {
        e.key for e in extras if e.how in (ExtraHow.FIRST_STEP, ExtraHow.LATER_STEP)
    }
    # a parameter handed to super() only to be dropped after is not handed at all: where no mixin ever
    # sets the key itself (a model-specific one), nothing is then left to drop
    unpassed = {e.key for e in extras if e.how is ExtraHow.DROP and e.key in named and e.key not in MIXIN_KEYS}
    drops = {f"model_inputs.pop({json.dumps(key)}, None)" for key in unpassed}
    statements = [s for s in statements if s not in drops]
    standard = [
        p for p in named if p not in extra_sources and p not in unpassed and p not in _set_after(override, extras)
    ]
    # a default the signature keeps reaches super() by keyword, and the mixin hands it on: nothing to set
    passed_defaults = {
        f"model_inputs.setdefault({json.dumps(e.key)}, {e.source})"
        for e in extras
        if e.how is ExtraHow.DEFAULT and e.key in standard
    }
    statements = [s for s in statements if s not in passed_defaults]
    arguments = [ids] + ([f"*{args}"] if args else []) + [f"{p}={p}" for p in standard]
    if kwargs:
        arguments.append(f"**{kwargs}")
    # an input withheld from super() reaches the method through **kwargs only (classify: ``_withholds_positions``)
    withheld = [e.key for e in extras if e.how is ExtraHow.WITHHELD]
    if withheld and (not kwargs or any(key in named for key in withheld)):
        return None
    head = [f"{kwargs}.pop({json.dumps(key)}, None)" for key in withheld]
    call = "\n".join([*head, f"model_inputs = super().prepare_inputs_for_generation({', '.join(arguments)})"])
    tail = [*grouped_statements(statements), "return model_inputs"]
    return Reduction(
        "\n".join([call, *tail]) + "\n", keep_params, tuple(standard), bool(kwargs), "\n".join(tail) + "\n"
    )


def kept_inputs(override: Override, extras: Sequence[Extra]) -> list[frozenset[str]]:
    """For each statement a reduction keeps (in front of super() or after it) and each key it computes after it,
    the model's own optional inputs it reads (``own_inputs_read``): what verification must have given the method,
    one of each group, for its verdict to be about them (Musicgen's delay pattern and its classifier-free guidance
    are two statements, two groups). So is each of them the reduction sets to None after super() on the later steps
    or when the caller gives it (``later-step-none``, ``none-when-given``): a run that never gave it (Musicgen-Melody's
    decoder without the conditioning) says nothing of that statement. ``codemod verify`` on the written tree asks
    the same of the statements the change removed (``session._own_inputs_handled``)."""
    kept = {*kept_statements(extras), *kept_after(extras)}
    groups = own_inputs_read(override, kept, [e.key for e in extras if e.how is ExtraHow.COMPUTED])
    optional = _own_optional(override)
    set_none = [
        frozenset({e.key})
        for e in extras
        if e.how in (ExtraHow.LATER_STEP_NONE, ExtraHow.NONE_WHEN_GIVEN) and e.key in optional
    ]
    return list(dict.fromkeys([*groups, *set_none]))


def _own_optional(override: Override) -> set[str]:
    """The model's own optional inputs: parameters defaulting to None that no mixin prepares."""
    return {
        p.name for p in override.analysis.params if p.kind.named and p.default == "None" and p.name not in MIXIN_KEYS
    }


def own_inputs_read(override: Override, statements: Iterable[int], keys: Iterable[str] = ()) -> list[frozenset[str]]:
    """The model's own optional inputs (``_own_optional``) that each of the top-level ``statements`` (body indices)
    and each output ``keys``' value reads, a group for each that reads any."""
    a = override.analysis
    optional = _own_optional(override)
    indices = set(statements)
    groups = [{n for n in t.exposed if n in optional} for t in a.top_level if t.index in indices]
    groups += [{n for o in a.outputs if o.key == key for n in names_in(o.expr) if n in optional} for key in keys]
    return [frozenset(g) for g in groups if g]


def _set_after(override: Override, extras: Sequence[Extra]) -> set[str]:
    """The parameters a reduction does not hand to ``super()`` because only what it keeps after the call reads
    them: the statements kept after it and the keys it computes there (Mllama's ``pixel_values``, passed only
    while image tokens remain). The inputs a mixin prepares itself (``MIXIN_KEYS``) and the keys the override
    passes on as the fallback does still go to ``super()``."""
    after = kept_after(extras)
    computed = {e.key for e in extras if e.how is ExtraHow.COMPUTED}
    if not after and not computed:
        return set()
    a = override.analysis
    read = {n for t in a.top_level if t.index in after for n in t.exposed} | computed
    passed_on = set(a.output_values()) - computed
    return {p.name for p in a.params if p.name in read and p.name not in MIXIN_KEYS and p.name not in passed_on}


#: how many keys in a row are removed in one loop rather than one ``pop`` each
DROPS_IN_A_LOOP = 3


_DROP = re.compile(r'model_inputs\.pop\(("[^"]+"), None\)')


def _grouped_drops(statements: Sequence[str]) -> list[str]:
    """Runs of ``DROPS_IN_A_LOOP`` or more ``model_inputs.pop(key, None)`` as one loop over the keys, as a person
    would write them; the keys stay in their order. (The rewrite lays the code out at the file's line length.)"""
    out: list[str] = []
    run: list[str] = []

    def flush() -> None:
        out.extend(_drop_loop(run) if len(run) >= DROPS_IN_A_LOOP else (f"model_inputs.pop({k}, None)" for k in run))
        run.clear()

    for statement in statements:
        found = _DROP.fullmatch(statement)
        if found is None:
            flush()
            out.append(statement)
        else:
            run.append(found.group(1))
    flush()
    return out


def grouped_statements(statements: Sequence[str]) -> list[str]:
    """The statements after super() as a person would write them: drops in a loop, one block per test."""
    return _merged_tests(_grouped_drops(statements))


def _merged_tests(lines: Sequence[str]) -> list[str]:
    """Two blocks under the same test, one after the other, as one (Musicgen-Melody's decoder sets its
    encoder's states to None and cuts its ids under one cache test): the first block's lines only set
    keys of ``model_inputs``, so where the test does not read ``model_inputs`` it holds for both."""
    out: list[str] = []
    test: str | None = None  # the test of the block the last line belongs to, when it may take the next one
    for line in lines:
        if line.startswith("if ") and line == test and "model_inputs" not in line:
            continue
        if not line.startswith(" "):
            test = line if line.startswith("if ") and line.endswith(":") else None
        elif not line.startswith("    model_inputs["):
            test = None  # a body that does something else may change what the test reads
        out.append(line)
    return out


def _drop_loop(keys: Sequence[str]) -> list[str]:
    return [f"for key in ({', '.join(keys)}):", "    model_inputs.pop(key, None)"]


def kept_statements(extras: Sequence[Extra], how: ExtraHow = ExtraHow.KEEP_STATEMENTS) -> tuple[int, ...]:
    """The indices of the top-level statements a reduction keeps in front of super() (``how``: or after it)."""
    return tuple(int(i) for e in extras if e.how is how for i in e.source.split(",") if i)


def kept_after(extras: Sequence[Extra]) -> tuple[int, ...]:
    """The indices of the top-level statements a reduction keeps after super()."""
    return kept_statements(extras, ExtraHow.KEEP_AFTER)


def without_cuts(extras: Sequence[Extra]) -> tuple[Extra, ...]:
    """The extras as they were before any cut (``Repair.uncut``): the slicing stays in the kept statements, and the
    ids key a cut released is set from them again, first of the keys they compute."""
    released = [Extra(e.key, ExtraHow.COMPUTED) for e in extras if e.how is ExtraHow.CUT and e.key]
    out: list[Extra] = []
    for e in extras:
        if e.how is not ExtraHow.CUT:
            out += [e, *released] if e.how is ExtraHow.KEEP_AFTER else [e]
    return tuple(out)


def cuts_of(override: Override, extras: Sequence[Extra]) -> tuple[Nested, ...]:
    """Where the runs the ``CUT`` extras name (by their first line) stand inside the kept statements."""
    lines = {int(n) for e in extras if e.how is ExtraHow.CUT for n in e.source.split(",") if n}
    found = {r.nested.path: r.nested for r in override.analysis.recognised if r.line in lines and r.nested is not None}
    return tuple(found.values())


def extras_summary(extras: Sequence[Extra], finding: Finding | None = None) -> str:
    phrases = {
        ExtraHow.FIRST_STEP: "{key} only on the first step",
        ExtraHow.LATER_STEP: "{key} only after the first step",
        ExtraHow.LATER_STEP_NONE: "no {key} after the first step",
        ExtraHow.CONSTANT: "{key} = {source}",
        ExtraHow.NONE: "{key} = None",
        ExtraHow.DROP: "drops {key}",
        ExtraHow.SET_NONE: "{key} = None",
        ExtraHow.PASSTHROUGH: "{key} as the caller gives it",
        ExtraHow.PASSTHROUGH_GIVEN: "{key} as the caller gives it, if it does",
        ExtraHow.LAST_TOKEN: "{key} cut to the last token",
        ExtraHow.RENAMED: "{key} for what the mixin calls {source}",
        ExtraHow.NONE_WHEN_GIVEN: "no {key} from the caller",
        ExtraHow.DEFAULT: "{key} = {source} by default",
        ExtraHow.SWAP_DELEGATE: "super() instead of {source}",
        ExtraHow.KEEP_STATEMENTS: "its own input handling first",
        ExtraHow.KEEP_AFTER: "then its own input handling",
        ExtraHow.COMPUTED: "its own {key}",
        ExtraHow.ADJUSTED: "{key} from {source}",
        ExtraHow.SLICED: "{key} sliced with the ids",
        ExtraHow.WITHHELD: "no {key} (its generate() never moves it on)",
    }
    computed = [e.key for e in extras if e.how is ExtraHow.COMPUTED]
    # (a cut is what the fallback does: nothing of the model's own to name)
    parts = [
        phrases.get(e.how, "{key}").format(key=e.key, source=e.source)
        for e in extras
        if e.how not in (ExtraHow.COMPUTED, ExtraHow.CUT)
    ]
    if computed:  # one phrase for the keys it sets its own way after super() (from the statements kept there)
        after = next((i + 1 for i, p in enumerate(parts) if p == phrases[ExtraHow.KEEP_AFTER]), None)
        phrase = phrases[ExtraHow.COMPUTED].format(key=", ".join(computed)) + (" from them" if after else "")
        parts.insert(after if after is not None else len(parts), phrase)
    if finding is not None and any(e.how in (ExtraHow.KEEP_STATEMENTS, ExtraHow.KEEP_AFTER) for e in extras):
        first = next((r.subject for r in finding.reasons if r.kind is ReasonKind.NOTE and r.subject), "")
        kept = (phrases[ExtraHow.KEEP_STATEMENTS], phrases[ExtraHow.KEEP_AFTER])
        if first:
            parts = [p if p not in kept else f"{p} ({_quote(first.rstrip(' …'))})" for p in parts]
    return "; ".join(dict.fromkeys(parts))


def _quote(code: str, width: int = 60) -> str:
    """``code`` for a one-line comment: whole when it fits, else cut between words with " …" (a cut in
    the middle of a name or an unclosed parenthesis reads as a typo)."""
    if len(code) <= width:
        return code
    cut = code[: width - 2].rsplit(" ", 1)[0].rstrip(" ,(")
    return f"{cut} …"


def keeps_own(finding: Finding) -> bool:
    """Whether the finding has a reason that keeps it as it is (a bespoke or unrecognised one): what a kept
    override's mark quotes. Its category may be bespoke for other reasons too (a difference in the standard
    flow, its own statements kept in front of super()); those are no reason of their own to mark it."""
    return any(r.kind.keeps for r in finding.reasons)


def keep_reason(finding: Finding) -> str:
    """A one-line ``# Overwritten --`` reason: what the override does that the mixin does not."""
    for kind in (ReasonKind.BESPOKE, ReasonKind.UNRECOGNISED):
        for reason in finding.reasons:
            if reason.kind is not kind:
                continue
            if kind is ReasonKind.UNRECOGNISED:
                text = f"model-specific input preparation ({reason.text.rstrip(' …')})"
            else:
                text = reason.subject if reason.rule and reason.subject is not None else reason.text
            return as_mark(text)
    return "kept: see the transformers-codemod report"


def repair_extras(repair: Repair, override: Override) -> tuple[Extra, ...]:
    """The extras that re-create what verification found the mixin prepares differently. A key passed on as the
    caller gives it is read from the parameter of its name, or else from ``**kwargs`` (GPT-2's mask)."""
    ids, named, _, var_keywords = param_list(override)

    def given(key: str) -> str:
        return key if key in (ids, *named) or var_keywords is None else f"{var_keywords}.get({json.dumps(key)})"

    return (
        *(Extra(key, ExtraHow.DROP) for key in repair.remove),
        # named as None where the caller gave none, the mixin's own value where the old code's was None
        *(
            Extra(key, ExtraHow.PASSTHROUGH, given(key))
            for key in repair.ungiven
            if key not in repair.remove and key not in repair.passthrough
        ),
        # a None the old code passed and the new code leaves out; a value the caller gives still goes through
        *(Extra(key, ExtraHow.DEFAULT, "None") for key in repair.set_none),
        # also missing where the caller gave nothing (a later round's ``keep``): the old code built its own there
        *(
            Extra(key, ExtraHow.PASSTHROUGH_GIVEN if key in repair.keep else ExtraHow.PASSTHROUGH, given(key))
            for key in repair.passthrough
        ),
        *(Extra(key, ExtraHow.LAST_TOKEN) for key in repair.last_token),
        *(Extra(key, ExtraHow.RENAMED, mixin_key) for key, mixin_key in repair.renamed),
        # a key removed outright needs no None when the caller gives it
        *(Extra(key, ExtraHow.NONE_WHEN_GIVEN) for key in repair.none_when_given if key not in repair.remove),
    )


def as_mark(text: str) -> str:
    """A reason as the text of a ``# Overwritten --`` mark: no full stop. The rewrite fits it to the line it stands on
    (``formatting.fitted_mark``: the file's line length, not a fixed width)."""
    return text.rstrip(".")
