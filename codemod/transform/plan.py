"""Plan: from findings to edits, grouped into shards that must change together.

Pure: a function of the scan. The plan follows the findings' actions, then keeps the code base
consistent:

- an override in a generated file follows the override it is generated from (its modular class,
  or the parent the converter copies it from), and both files get the same edit;
- the modular trap: a modular class whose parent model defines the method cannot simply lose its
  override (the converter would copy the parent's in); it gets the converter's removal stub;
- ``# Copied from`` groups change as one unit: a copy whose source changes differently loses its
  marker (method-level) or gets ``# Ignore copy`` (class-level); a class-level copy cannot lose a
  method its source keeps, so that deletion is held back;
- every override that stays in the selection is marked ``# Overwritten -- <reason>``;
- a stub mixin (≤ 4.45) first gets the generic implementation (``rules.generic_mixin``).
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence

import libcst as cst

from codemod.analyse import soundness
from codemod.analyse.analysis import Nested, Recognised
from codemod.analyse.classify import CORE_INPUTS, GENERATE_PROVIDES, Action, Extra, Finding
from codemod.analyse.fallback import FallbackKind
from codemod.analyse.index import CopyLink, Index, Override
from codemod.analyse.mixin import MIXIN_CLASS, Era
from codemod.contracts import (
    CopyScope,
    CopyStatus,
    ExtraHow,
    Held,
    HeldCause,
    OriginKind,
    ParamKind,
    ReasonKind,
    Repair,
    ValueOrigin,
    Vocabulary,
)
from codemod.groups import UnionFind
from codemod.sources import METHOD, FileKind


class EditKind(Vocabulary):
    DELETE = "delete"  # remove the method, with its comments and marker
    REDUCE = "reduce"  # same signature; the body calls super() and keeps the model-specific keys
    REMOVE = "remove"  # modular source: the converter's removal stub (raise AttributeError)
    MARK = "mark"  # add "# Overwritten -- <text>"
    DROP_MARKER = "drop-marker"  # remove the method's "# Copied from" (its source changes differently)
    IGNORE_COPY = "ignore-copy"  # add "# Ignore copy" (a class-level copy no longer covers the method)
    HOIST = "hoist"  # install the generic implementation in the stub mixin
    ADD_MIXIN_BASE = "add-mixin-base"  # GenerationMixin among the bases, so can_generate() stays true
    SWAP_DELEGATE = "swap-delegate"  # ask super() where the override asked a sub-model; keep the rest
    HOOK = "hook"  # a mined hook in the mixin: its class attribute and the code that reads it (``Edit.hook``)
    SET_ATTRIBUTE = "set-attribute"  # a class attribute on the model class (``text``: the assignment)
    TRIM = "trim"  # remove the method's top-level statements at ``Edit.remove`` (a hook does what they did)
    #: a method next to the override (``text``: it, ending in its ``return``), with the override's top-level
    #: statements at ``Edit.keep`` moved in front of that ``return`` (a hook asks the model's own condition)
    ADD_METHOD = "add-method"


@dataclasses.dataclass(frozen=True)
class HookCode:
    """What a mined hook (``codemod.transform.hooks``) adds to the mixin: a class attribute that model classes set,
    and the statements of ``prepare_inputs_for_generation`` that read it, at its start (``prologue``) and
    right before its final ``return model_inputs`` (``epilogue``); each 4-space indented at level 0."""

    attribute: str
    declaration: str
    prologue: str = ""
    epilogue: str = ""


@dataclasses.dataclass(frozen=True)
class Edit:
    file: str
    class_name: str
    kind: EditKind
    override_id: str | None
    reason: str
    #: REDUCE/REMOVE/HOIST: the new body (or method, for HOIST), 4-space indented; MARK: the reason; TRIM: the new
    #: reason of an ``# Overwritten --`` mark this tool wrote (empty: the mark stays as it is)
    text: str = ""
    #: REDUCE: indices of the original body's statements to keep, in front of the new body; ADD_METHOD: to move
    keep: tuple[int, ...] = ()
    #: REDUCE/TRIM: the parameters the method still names (others reach super() through **kwargs);
    #: empty to keep the signature as it is
    keep_params: tuple[str, ...] = ()
    #: HOOK: the attribute and code to add to the mixin
    hook: HookCode | None = None
    #: TRIM: indices of the original body's statements to remove
    remove: tuple[int, ...] = ()
    #: REDUCE: indices of the original body's statements to keep right after the new body's first statement
    #: (the super() call): what they compute replaces what the fallback prepared
    keep_after: tuple[int, ...] = ()
    #: REDUCE/TRIM/SWAP_DELEGATE: a body that ends in ``model_inputs = super().<method>(...)`` and ``return
    #: model_inputs`` returns the call itself, as a person writes it (not in a modular family: the converter inlines
    #: a modular source's top-level ``return super()`` call, and regenerates the files made from it)
    direct_return: bool = False
    #: REDUCE: runs of statements inside the kept statements to leave out of them (the fallback does what they did)
    cuts: tuple[Nested, ...] = ()
    #: the override whose shard holds the edit, where that is not ``override_id``'s: a loose copy's marker (see
    #: ``CopyLink.follows``) goes with the change of the override check_copies compares it with
    shard: str | None = None
    #: REDUCE/TRIM: where the method ends as nothing but a ``super()`` call kept for its signature, the class names the
    #: mixin's method with that signature instead (``codemod.transform.alias``); ADD_MIXIN_BASE: only where it does
    alias: bool = False


@dataclasses.dataclass(frozen=True)
class Trim:
    """What a mined hook (``codemod.transform.hooks``) takes out of an override that calls super() already."""

    #: indices of the body's top-level statements to remove (see Edit.remove)
    remove: tuple[int, ...]
    #: parameters that leave the signature: only the removed statements read them, and the method withheld them
    #: from super(); through **kwargs they now reach the mixin, whose hook sets the input from them (Fuyu's
    #: ``image_patches``)
    unnamed: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class Shard:
    """Edits that only make sense together (a copy group, a modular family, or one override)."""

    id: str
    kind: str  # "override", "copy-group" or "modular"
    members: tuple[str, ...]  # override ids
    edits: tuple[Edit, ...]
    #: the member the others follow (the source of the copies, the modular parent); its own id alone
    source: str = ""


@dataclasses.dataclass(frozen=True)
class Plan:
    shards: tuple[Shard, ...]
    hoist: Edit | None
    #: overrides whose finding asked for a change that the plan holds back, with the cause
    held: tuple[Held, ...]
    #: the action each selected override ends with
    actions: tuple[tuple[str, Action], ...]
    notes: tuple[str, ...] = ()

    def edits(self) -> list[Edit]:
        out = [self.hoist] if self.hoist else []
        return out + [e for s in self.shards for e in s.edits]

    def by_file(self) -> dict[str, list[Edit]]:
        files: dict[str, list[Edit]] = {}
        for edit in self.edits():
            files.setdefault(edit.file, []).append(edit)
        return files

    def action_of(self, override_id: str) -> Action | None:
        return dict(self.actions).get(override_id)

    def without(self, dropped: Iterable[Held], detail: str | None = None) -> Plan:
        """The same plan minus the shards ``dropped`` holds back (their overrides kept, each with its shard's
        cause, and ``detail`` or else the shard's own)."""
        by_shard = {h.subject: h for h in dropped}
        members = {m: by_shard[s.id] for s in self.shards if s.id in by_shard for m in s.members}
        shards = tuple(s for s in self.shards if s.id not in by_shard)
        actions = tuple((i, Action.KEEP if i in members else a) for i, a in self.actions)
        held = self.held + tuple(
            Held(m, h.cause, h.detail if detail is None else detail)
            for m, h in sorted(members.items())
            if self.action_of(m) is not Action.KEEP
        )
        hoist = self.hoist if any(a is not Action.KEEP for _, a in actions) else None
        return dataclasses.replace(self, shards=shards, actions=actions, held=held, hoist=hoist)

    def digest(self) -> str:
        payload = [(e.file, e.class_name, e.kind.value, e.text, *(["alias"] if e.alias else [])) for e in self.edits()]
        return hashlib.sha256(json.dumps(payload).encode()).hexdigest()[:16]


# --------------------------------------------------------------------------------------------- reduce


def _param_list(override: Override) -> tuple[str, list[str], str | None, str | None]:
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


def _extra_statements(override: Override, extras: Sequence[Extra], slim: bool = False) -> list[str] | None:
    """Statements that re-create the model-specific keys after ``super()``; None if they cannot be."""
    lines: list[str] = []
    _, parameters, _, var_keywords = _param_list(override)
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
        return test if not _names(test) & written else None
    cache = next((p.name for p in override.analysis.params if p.name in PAST_NAMES), None)
    if cache is None:
        return None
    return {"past-truthy": cache, "past-not-none": f"{cache} is not None"}.get(recognised.facet("guard") or "")


def _names(code: str) -> set[str]:
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
    kept = [t for t in override.analysis.top_level if t.index in (*_kept_statements(extras), *_kept_after(extras))]
    # what the kept statements read, and what they assign (a parameter they reset must reach super()
    # as they left it, not as the caller gave it through **kwargs)
    kept_names = {n for t in kept for n in (*t.reads, *t.writes)}
    needed = _names(body) | kept_names | {e.source for e in extras}
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
    statements = _extra_statements(override, extras, slim=slim)
    if statements is None:
        return None
    ids, named, args, kwargs = _param_list(override)
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
    tail = [*_grouped_statements(statements), "return model_inputs"]
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
    kept = {*_kept_statements(extras), *_kept_after(extras)}
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
    groups += [{n for o in a.outputs if o.key == key for n in _names(o.expr) if n in optional} for key in keys]
    return [frozenset(g) for g in groups if g]


def _set_after(override: Override, extras: Sequence[Extra]) -> set[str]:
    """The parameters a reduction does not hand to ``super()`` because only what it keeps after the call reads
    them: the statements kept after it and the keys it computes there (Mllama's ``pixel_values``, passed only
    while image tokens remain). The inputs a mixin prepares itself (``MIXIN_KEYS``) and the keys the override
    passes on as the fallback does still go to ``super()``."""
    after = _kept_after(extras)
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


def _grouped_statements(statements: Sequence[str]) -> list[str]:
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


def _kept_statements(extras: Sequence[Extra], how: ExtraHow = ExtraHow.KEEP_STATEMENTS) -> tuple[int, ...]:
    return tuple(int(i) for e in extras if e.how is how for i in e.source.split(",") if i)


def _kept_after(extras: Sequence[Extra]) -> tuple[int, ...]:
    return _kept_statements(extras, ExtraHow.KEEP_AFTER)


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


def _keeps_own(finding: Finding) -> bool:
    """Whether the finding has a reason that keeps it as it is (a bespoke or unrecognised one): what a kept
    override's mark quotes. Its category may be bespoke for other reasons too (a difference in the standard
    flow, its own statements kept in front of super()); those are no reason of their own to mark it."""
    return any(r.kind.keeps for r in finding.reasons)


def _keep_reason(finding: Finding) -> str:
    """A one-line ``# Overwritten --`` reason: what the override does that the mixin does not."""
    for kind in (ReasonKind.BESPOKE, ReasonKind.UNRECOGNISED):
        for reason in finding.reasons:
            if reason.kind is not kind:
                continue
            if kind is ReasonKind.UNRECOGNISED:
                text = f"model-specific input preparation ({reason.text.rstrip(' …')})"
            else:
                text = reason.subject if reason.rule and reason.subject is not None else reason.text
            return _as_mark(text)
    return "kept: see the transformers-codemod report"


# --------------------------------------------------------------------------------------------- plan


@dataclasses.dataclass
class _Decision:
    action: Action
    edit: EditKind | None  # DELETE / REDUCE / REMOVE, or None to leave the body
    body: str = ""
    mark: str = ""
    reason: str = ""
    keep: tuple[int, ...] = ()  # statements a REDUCE keeps (see Edit.keep)
    keep_params: tuple[str, ...] = ()  # parameters a REDUCE or TRIM keeps (see Edit.keep_params)
    extras: tuple[Extra, ...] = ()  # what a REDUCE re-creates after super()
    remove: tuple[int, ...] = ()  # statements a TRIM removes (see Edit.remove)

    @property
    def keep_after(self) -> tuple[int, ...]:
        """Statements a REDUCE keeps after the super() call (see Edit.keep_after)."""
        return _kept_after(self.extras)


def _repair_extras(repair: Repair, override: Override) -> tuple[Extra, ...]:
    """The extras that re-create what verification found the mixin prepares differently. A key passed on as the
    caller gives it is read from the parameter of its name, or else from ``**kwargs`` (GPT-2's mask)."""
    ids, named, _, var_keywords = _param_list(override)

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


def _unreachable(o: Override) -> bool:
    """No base defines the method, or what does is not known: nothing may take the override's place."""
    return o.fallback is not None and o.fallback.kind in (FallbackKind.NONE, FallbackKind.UNKNOWN)


def _as_mark(text: str) -> str:
    """A reason as the text of a ``# Overwritten --`` mark: no full stop. The rewrite fits it to the line it stands on
    (``formatting.fitted_mark``: the file's line length, not a fixed width)."""
    return text.rstrip(".")


#: the mark of an override whose whole body a mined hook runs in the mixin: generate() reads the method's
#: signature (it refuses ``inputs_embeds`` a signature does not name, and checks the model kwargs against it)
_MOVED_WHOLE = "the mixin's hook prepares its inputs; kept for its signature, which generate() reads"
#: the same, for one that keeps its own check of the config in front (``hooks.Member.guards``)
_MOVED_WHOLE_CHECKED = "the mixin's hook prepares its inputs; keeps its own check, and its signature for generate()"


class _Planner:
    def __init__(
        self,
        index: Index,
        findings: Sequence[Finding],
        hoist_needed: bool,
        mixin_file: str | None,
        repairs: dict[str, Repair] | None = None,
        override_enables_generation: bool = False,
        mixin_reach: soundness.Reach | None = None,
        mark_kept: bool = False,
        hold_unproven: bool = False,
        trims: dict[str, Trim] | None = None,
        moved_whole: frozenset[str] = frozenset(),
        left_out: Mapping[str, frozenset[str]] | None = None,
    ) -> None:
        self.repairs = repairs or {}
        #: keys the mixin's mined hooks leave out for an override (``_generation_dropped_inputs``): never passed to
        #: forward, so nothing to drop after super() for them
        self.left_out = dict(left_out or {})
        #: overrides whose whole body a mined hook runs in the mixin, which returns before it prepares anything:
        #: what the mixin would pass to forward is no concern of theirs
        self.moved_whole = moved_whole
        #: no verification follows: hold back the changes only verification could prove
        self.hold_unproven = hold_unproven
        self.trims = trims or {}
        #: mark the overrides that stay as they are (comment-only edits: only when asked)
        self.mark_kept = mark_kept
        self.override_enables_generation = override_enables_generation
        #: what the mixin passes to forward; None: no forward check (a plan made without a profile)
        self.mixin_reach = mixin_reach
        self.index = index
        self.by_id = index.by_id()
        self.findings: dict[str, Finding] = {f.override.id: f for f in findings}
        self.hoist_needed = hoist_needed
        self.mixin_file = mixin_file
        self.decisions: dict[str, _Decision] = {}
        self.held: list[Held] = []
        self.notes: list[str] = []
        self.extra_edits: list[Edit] = []

    def hold(self, override_id: str, cause: HeldCause, reason: str, mark: str | None = None) -> None:
        decision = self.decisions[override_id]
        if decision.action is not Action.KEEP:
            self.held.append(Held(override_id, cause, reason))
        self.decisions[override_id] = _Decision(Action.KEEP, None, mark=reason if mark is None else mark)

    def initial(self) -> None:
        for oid, f in self.findings.items():
            repair = self.repairs.get(oid)
            params = {p.name for p in f.override.analysis.params}
            # what a reduction passes on as the caller gives it, it reads from a parameter or else from **kwargs
            has_var_keywords = _param_list(f.override)[3] is not None
            if (
                repair is not None
                and f.action in (Action.DELETE, Action.REDUCE)
                and set(repair.keep) <= params
                and (set(repair.passthrough) <= params or has_var_keywords)
            ):
                # verification showed where the mixin prepares something else: keep the override's
                # behaviour by reducing it to super() (its parameters passed on) with those keys fixed
                outputs = {o.key for o in f.override.analysis.outputs}
                # a last-token cut of a key the override does not prepare is a composite's (its decoder's ids)
                repaired = tuple(
                    e
                    for e in _repair_extras(repair, f.override)
                    if e.how is not ExtraHow.LAST_TOKEN or e.key in outputs
                )
                extras = (*(without_cuts(f.extras) if repair.uncut else f.extras), *repaired)
                swap = next((e.source for e in f.extras if e.how is ExtraHow.SWAP_DELEGATE), None)
                fixes = _extra_statements(f.override, repaired, slim=True) if swap is not None else None
                if swap is not None and fixes:
                    # super() instead of the sub-model, and after it what the sub-model's own override did
                    summary = extras_summary(repaired)
                    self.decisions[oid] = _Decision(
                        Action.REDUCE,
                        EditKind.SWAP_DELEGATE,
                        body="\n".join(_grouped_statements(fixes)) + "\n",
                        mark=f"asks super() instead of {swap}; keeps its own input handling; {summary}",
                        reason=f"reduced: super() instead of {swap}, after verification: {summary}",
                        # a fix that reads a parameter keeps every one (slimming drops some)
                        keep_params=() if _names("\n".join(fixes)) & params else swap_parameters(f.override),
                        extras=extras,
                    )
                    continue
                reduction = reduce_override(f.override, extras)
                if reduction is not None:
                    summary = extras_summary(extras)
                    self.decisions[oid] = _Decision(
                        Action.REDUCE,
                        EditKind.REDUCE,
                        body=reduction.body,
                        mark=summary,
                        reason=f"reduced to super() after verification: {summary}",
                        keep=_kept_statements(extras),
                        keep_params=reduction.keep_params,
                        extras=extras,
                    )
                    continue
            if f.action is Action.DELETE:
                self.decisions[oid] = _Decision(
                    Action.DELETE, EditKind.DELETE, reason="generic: the mixin does the same"
                )
            elif f.action is Action.REDUCE and any(e.how is ExtraHow.SWAP_DELEGATE for e in f.extras):
                delegate = next(e.source for e in f.extras if e.how is ExtraHow.SWAP_DELEGATE)
                self.decisions[oid] = _Decision(
                    Action.REDUCE,
                    EditKind.SWAP_DELEGATE,
                    mark=f"asks super() instead of {delegate}; keeps its own input handling",
                    reason=f"reduced: super() instead of {delegate}",
                    keep_params=swap_parameters(f.override),
                )
            elif f.action is Action.REDUCE:
                reduction = reduce_override(f.override, f.extras)
                if reduction is None:
                    self.decisions[oid] = _Decision(
                        Action.KEEP,
                        None,
                        mark=_keep_reason(f) if _keeps_own(f) else f"keeps {extras_summary(f.extras)}",
                    )
                    self.held.append(
                        Held(
                            oid,
                            HeldCause.NOT_RECREATABLE,
                            "its extra keys cannot be re-created after super() (a sliced input)",
                        )
                    )
                else:
                    summary = (
                        (_MOVED_WHOLE_CHECKED if _kept_statements(f.extras) else _MOVED_WHOLE)
                        if oid in self.moved_whole
                        else extras_summary(f.extras, f)
                    )
                    self.decisions[oid] = _Decision(
                        Action.REDUCE,
                        EditKind.REDUCE,
                        body=reduction.body,
                        mark=summary,
                        reason=f"reduced to super(): {summary}",
                        keep=_kept_statements(f.extras),
                        keep_params=reduction.keep_params,
                        extras=f.extras,
                    )
            else:
                mark = _keep_reason(f) if _keeps_own(f) else extras_summary(f.extras)
                if not (_keeps_own(f) or f.extras) or _unreachable(f.override):
                    # kept as it is (a converter's removal stub, a maintainer's override), or nothing to overwrite
                    # (no base defines the method): nothing to add
                    mark = ""
                self.decisions[oid] = _Decision(Action.KEEP, None, mark=mark)
        for oid, trim in self.trims.items():
            if oid in self.decisions and self.decisions[oid].action is Action.KEEP:
                # statements a mined hook does in the mixin now (codemod.transform.hooks); the rest of the method stays as
                # the maintainers wrote it, comments and all, so it gets no mark
                signature = self.by_id[oid].analysis.params
                keep_params = tuple(p.name for p in signature if p.name not in trim.unnamed) if trim.unnamed else ()
                self.decisions[oid] = _Decision(
                    Action.REDUCE,
                    EditKind.TRIM,
                    remove=trim.remove,
                    keep_params=keep_params,
                    reason="trimmed: the mixin's hook does what the removed statements did",
                )
        for oid, decision in list(self.decisions.items()):
            decision = self.decisions[oid] = self.fit_forward(self.findings[oid], decision)
            why = self.refusal(self.findings[oid], decision)
            if why is not None:
                self.decisions[oid] = _Decision(Action.KEEP, None, mark=_as_mark(why))
                self.held.append(Held(oid, HeldCause.REFUSED, f"refused: {why}"))
            elif self.hold_unproven and self.findings[oid].flow and decision.action is not Action.KEEP:
                # not behaviour-preserving by construction: what generate() feeds the model would change
                flow = self.findings[oid].flow[0]
                self.hold(
                    oid,
                    HeldCause.UNPROVEN,
                    f"unproven without --verify: it would change what is prepared in "
                    f"the standard generate flow ({flow})",
                    mark=_as_mark(flow),
                )

    def fit_forward(self, f: Finding, decision: _Decision) -> _Decision:
        """In a checkout, keys the mixin would pass that ``forward`` does not take are dropped after super(),
        as the old closed dict never passed them (verification checks the result; it made the same repair).
        Outside one the same holds where verification follows (remote Phi-3 and the ``cache_position`` of a
        mixin for models with Cache classes); without it nothing runs the model to check it: the refusal below
        keeps the override instead."""
        o = f.override
        if (
            (not o.in_library and self.hold_unproven)
            or self.mixin_reach is None
            or o.id in self.moved_whole
            or decision.edit not in (EditKind.DELETE, EditKind.REDUCE)
        ):
            return decision
        reach = soundness.reach_of(o, self.mixin_reach)
        extras = decision.extras
        reduction = reduce_override(o, extras) if decision.edit is EditKind.REDUCE else None
        missing: tuple[str, ...] = ()
        for _ in range(3):  # a reduction hands super() its parameters, which may add keys to drop
            keywords = reduction.keywords if reduction is not None else ()
            more = tuple(
                k for k in soundness.not_taken(o, self._forwarded(o, reach, keywords, extras)) if k not in missing
            )
            if not more:
                break
            missing += more
            extras = (*extras, *(Extra(key, ExtraHow.DROP) for key in more))
            reduction = reduce_override(o, extras)
            if reduction is None:
                return decision  # the refusal says why
        if not missing or reduction is None:
            return decision
        summary = extras_summary(extras, f)
        return _Decision(
            Action.REDUCE,
            EditKind.REDUCE,
            body=reduction.body,
            mark=summary,
            reason=f"reduced to super(): {summary} ({o.class_name}.forward does not take {', '.join(missing)})",
            keep=_kept_statements(extras),
            keep_params=reduction.keep_params,
            extras=extras,
        )

    def _forwarded(
        self, o: Override, reach: soundness.Reach, keywords: Iterable[str] = (), extras: Iterable[Extra] = ()
    ) -> set[str]:
        """The keys the mixin passes to ``o``'s forward (``soundness.forwarded_keys``), less those its hooks leave out
        for the class: what the forward check and the keys to drop after super() are about."""
        return soundness.forwarded_keys(o, reach, keywords, extras) - self._left_out(o)

    def _left_out(self, o: Override) -> frozenset[str]:
        """What the mixin leaves out for ``o``'s class: the keys this plan's hooks drop for it, and those its class
        names in the attribute of a hook written before (a second pass over the tree a first one left)."""
        written = o.attribute(DROPPED_INPUTS)
        try:
            names: object = ast.literal_eval(written) if written is not None else ()
        except (ValueError, SyntaxError):
            names = ()
        named = frozenset(n for n in names if isinstance(n, str)) if isinstance(names, tuple) else frozenset[str]()
        return self.left_out.get(o.id, frozenset()) | named

    def refusal(self, f: Finding, decision: _Decision) -> str | None:
        """Why a change would leave code that cannot run (``codemod.analyse.soundness``), or None."""
        o = f.override
        if decision.edit not in (EditKind.DELETE, EditKind.REDUCE):
            return None
        if o.fallback is not None and _unreachable(o):  # classify keeps these; a repair must not bring them back
            return f"nothing takes the method's place: {o.fallback.detail}"
        # what the mixin passes to forward (no concern of an override whose whole body it runs and returns)
        reach = (
            soundness.reach_of(o, self.mixin_reach)
            if self.mixin_reach is not None and o.id not in self.moved_whole
            else None
        )
        if decision.edit is EditKind.DELETE:
            return soundness.forward_refusal(o, self._forwarded(o, reach)) if reach is not None else None
        extras = decision.extras
        reduction = reduce_override(o, extras)
        if reduction is None:
            return None
        kept = _kept_statements(extras)
        return (
            soundness.ids_refusal(o)
            or soundness.dead_statements(o, kept, reduction.body)
            or soundness.dead_statements(o, _kept_after(extras), reduction.tail, where="after")
            or soundness.signature_refusal(o, reduction.keywords, reduction.spreads_kwargs)
            or (
                soundness.forward_refusal(o, self._forwarded(o, reach, reduction.keywords, extras))
                if reach is not None
                else None
            )
            or (soundness.interference(o, kept, reach) if reach is not None else None)
        )

    def generated(self) -> None:
        """A generated override changes only as the code it is generated from changes."""
        for oid, f in self.findings.items():
            origin = f.override.generated_from
            if origin is None:
                continue
            if origin.kind is OriginKind.MODULAR_CLASS and origin.modular_id is not None:  # always named
                source = origin.modular_id
            elif origin.kind is OriginKind.INHERITED and origin.source_id is not None:
                source = origin.source_id
            else:
                self.hold(
                    oid,
                    HeldCause.UNTRACED,
                    f"generated file; where its method comes from is {origin.kind}: {origin.detail}",
                )
                continue
            theirs = self.decisions.get(source)
            mine = self.decisions[oid]
            if theirs is None:
                # marked only where its source is marked, or the converter would undo it
                self.hold(
                    oid,
                    HeldCause.SOURCE_NOT_CHANGED,
                    f"generated from {source}, which this run does not change",
                    mark="",
                )
                continue
            if theirs.action is mine.action:
                continue
            # disagreement: the source decides for both when it keeps; otherwise hold both
            reason = f"generated from {source}, which the scan classifies differently ({theirs.action.value} vs {mine.action.value})"
            self.hold(oid, HeldCause.SOURCE_DISAGREES, reason)
            if theirs.action is not Action.KEEP and origin.kind is OriginKind.MODULAR_CLASS:
                self.hold(source, HeldCause.SOURCE_DISAGREES, reason)

    def modular_trap(self) -> None:
        """A modular override whose deletion would make the converter copy a parent's override in
        (``Override.inherited_from``, from the index) is removed with a stub instead."""
        for oid, decision in list(self.decisions.items()):
            if decision.action is not Action.DELETE or self.by_id[oid].kind is not FileKind.MODULAR:
                continue
            parent = self.by_id[oid].inherited_from
            if parent is None:
                continue
            parent_decision = self.decisions.get(parent)
            if parent_decision is not None and parent_decision.action is Action.DELETE:
                continue
            name = self.by_id[oid].class_name
            self.decisions[oid] = _Decision(
                Action.DELETE,
                EditKind.REMOVE,
                body=f'raise AttributeError("{name} uses GenerationMixin.prepare_inputs_for_generation")\n',
                reason=f"modular trap: deleting it would make the converter copy {parent}'s override in; "
                "the removal stub makes the generated class use the mixin",
            )

    def copies(self) -> None:
        """Keep ``# Copied from`` groups consistent with what changes."""
        for oid, o in self.by_id.items():
            link = o.copied_from
            if link is None:
                continue
            if link.follows is not None and link.check.status is CopyStatus.CONSISTENT:
                followed = self.decisions.get(link.follows)
                if followed is not None and followed.action is not Action.KEEP:
                    # check_copies compares it with that override's method, which changes: the marker goes, in the
                    # shard of the override that changes (kept however this copy's own change fares)
                    self.extra_edits.append(
                        Edit(
                            o.file,
                            o.class_name,
                            EditKind.DROP_MARKER,
                            oid,
                            f"check_copies compares it with {link.follows}'s method, which changes",
                            shard=link.follows,
                        )
                    )
            if link.source_id is None or link.check.status is not CopyStatus.CONSISTENT:
                decision = self.decisions.get(oid)
                if link.scope is CopyScope.METHOD and decision is not None and decision.action is Action.REDUCE:
                    # a source outside what is read (remote code copying a transformers model), or one it drifted
                    # from: whatever the source does, the reduced method is no copy of it
                    self.extra_edits.append(
                        Edit(
                            o.file, o.class_name, EditKind.DROP_MARKER, oid, "reduced: no longer a copy of its source"
                        )
                    )
                continue
            assert link.source_id is not None  # a consistent copy names its source
            mine = self.decisions.get(oid)
            theirs = self.decisions.get(link.source_id)
            my_action = mine.action if mine else Action.KEEP
            their_action = theirs.action if theirs else Action.KEEP
            same = my_action is their_action and (
                my_action is not Action.REDUCE
                or (mine is not None and theirs is not None and _same_reduction(mine, theirs, link))  # both reduce
            )
            if same:
                continue
            if link.scope is CopyScope.METHOD:
                if my_action is not Action.DELETE:
                    self.extra_edits.append(
                        Edit(
                            o.file,
                            o.class_name,
                            EditKind.DROP_MARKER,
                            oid,
                            f"its source {link.source_id} changes differently",
                        )
                    )
                continue
            # class-level copy
            if my_action is Action.DELETE:
                self.hold(
                    oid, HeldCause.COPY_SOURCE_KEEPS, f"class-level copy of {link.source_id}, whose {METHOD} stays"
                )
                my_action = Action.KEEP
            self.extra_edits.append(
                Edit(
                    o.file,
                    o.class_name,
                    EditKind.IGNORE_COPY,
                    oid,
                    f"class-level copy of {link.source_id}, whose {METHOD} changes differently",
                )
            )

    def marks(self) -> dict[str, str]:
        """``# Overwritten`` reasons. A copy that stays a copy must be marked exactly like its source
        (after the marker's replacements) or check_copies fails, so copies inherit their source's mark."""
        unlinked = {e.override_id for e in self.extra_edits}
        marks: dict[str, str] = {}

        def mark_of(oid: str, seen: tuple[str, ...] = ()) -> str:
            if oid in marks:
                return marks[oid]
            o, decision = self.by_id[oid], self.decisions.get(oid)
            if decision is None or decision.action is Action.DELETE:
                marks[oid] = ""  # a deleted method carries no mark, whatever its source's
                return ""
            if decision.edit is EditKind.REDUCE:
                # the new body replaces the old one and its comment: keep the maintainers' reason
                own = o.overwritten or decision.mark
            else:
                own = "" if o.overwritten else decision.mark
            origin = o.generated_from
            source = (
                origin.modular_id
                if origin is not None and origin.kind is OriginKind.MODULAR_CLASS
                else origin.source_id
                if origin is not None and origin.kind is OriginKind.INHERITED
                else None
            )
            if source is not None and source in self.by_id and source not in seen:
                # the converter writes the generated method from its source, comments included
                own = mark_of(source, (*seen, oid)) if self.decisions.get(source) is not None else ""
                marks[oid] = own
                return own
            link = o.copied_from
            if (
                link is not None
                and link.source_id is not None
                and link.check.status is CopyStatus.CONSISTENT
                and oid not in unlinked
                and link.source_id not in seen
            ):
                from codemod.analyse.copies import apply_replacements

                source_mark = mark_of(link.source_id, (*seen, oid))
                own = apply_replacements(source_mark, link.marker.replacements) if source_mark else ""
            marks[oid] = own
            return own

        for oid in self.decisions:
            mark_of(oid)
        return marks

    def shards(self) -> list[Shard]:
        edits: dict[str, list[Edit]] = {}
        marks = self.marks()
        for oid, decision in self.decisions.items():
            o = self.by_id[oid]
            own = edits.setdefault(oid, [])
            if decision.edit is not None:
                own.append(
                    Edit(
                        o.file,
                        o.class_name,
                        decision.edit,
                        oid,
                        decision.reason,
                        decision.body,
                        decision.keep,
                        decision.keep_params,
                        remove=decision.remove,
                        keep_after=decision.keep_after,
                        cuts=cuts_of(o, decision.extras),
                    )
                )
            if (
                decision.edit is EditKind.DELETE
                and self.override_enables_generation
                and o.inherits_generation_mixin is False
            ):
                own.append(
                    Edit(
                        o.file,
                        o.class_name,
                        EditKind.ADD_MIXIN_BASE,
                        oid,
                        "can_generate() looks for GenerationMixin among the bases once the override is gone",
                        mixin_import(o),
                    )
                )
            elif (
                decision.edit in (EditKind.DELETE, EditKind.REDUCE)
                and o.fallback is not None
                and o.fallback.adds_mixin_base
            ):
                own.append(
                    Edit(
                        o.file,
                        o.class_name,
                        EditKind.ADD_MIXIN_BASE,
                        oid,
                        "PreTrainedModel is not a GenerationMixin in the target release: without the override "
                        "(or for super()) the class needs it among its bases",
                        mixin_import(o),
                    )
                )
            if marks.get(oid) and (decision.edit is not None or self.mark_kept):
                own.append(Edit(o.file, o.class_name, EditKind.MARK, oid, "stays: marked", marks[oid]))
        for edit in self.extra_edits:
            edits.setdefault(edit.shard or edit.override_id or "", []).append(edit)
        # shards: connected by copy links and generated-from links
        group = UnionFind()
        derived: set[str] = set()  # members that follow another member
        for oid in edits:
            group.add(oid)
            member = self.by_id.get(oid)
            if member is None:
                continue
            if member.copied_from and member.copied_from.source_id in edits:
                group.union(oid, member.copied_from.source_id)
                derived.add(oid)
            origin = member.generated_from
            if origin is not None:
                for linked in (origin.modular_id, origin.source_id):
                    if linked in edits:
                        group.union(oid, linked)
                        derived.add(oid)
        shards = []
        for members in group.groups():
            shard_edits = tuple(e for m in members for e in edits[m])
            if not shard_edits:
                continue
            kinds = {
                "copy" if self.by_id[m].copied_from else "generated" if self.by_id[m].generated_from else ""
                for m in members
            }
            kind = "override" if len(members) == 1 else ("copy-group" if "copy" in kinds else "modular")
            source = next((m for m in members if m not in derived), members[0])
            if not any(
                self.by_id[m].kind is FileKind.MODULAR or self.by_id[m].generated_from is not None
                for m in members
                if m in self.by_id
            ):
                shard_edits = tuple(
                    dataclasses.replace(e, direct_return=True) if e.kind in _DIRECT_RETURN_KINDS else e
                    for e in shard_edits
                )
            shards.append(Shard(members[0], kind, tuple(members), shard_edits, source))
        return sorted(shards, key=lambda s: s.id)


#: the edits that leave a method ending in its super() call (``Edit.direct_return``)
_DIRECT_RETURN_KINDS = frozenset({EditKind.REDUCE, EditKind.TRIM, EditKind.SWAP_DELEGATE})


def mixin_import(o: Override) -> str:
    """The import of GenerationMixin for the file of ``o``: relative inside the transformers package,
    from ``transformers`` anywhere else (remote code, third-party packages)."""
    parts = o.file.split("/")
    if o.in_library and "transformers" in parts:
        dots = "." * (len(parts) - parts.index("transformers") - 1)
        return f"from {dots}generation import {MIXIN_CLASS}"
    return f"from transformers import {MIXIN_CLASS}"


def _same_reduction(mine: _Decision, theirs: _Decision, link: CopyLink) -> bool:
    from codemod.analyse.copies import apply_replacements

    return apply_replacements(theirs.body, link.marker.replacements) == mine.body


def make_plan(
    index: Index,
    findings: Sequence[Finding],
    *,
    mixin_era: Era,
    mixin_file: str | None,
    repairs: dict[str, Repair] | None = None,
    override_enables_generation: bool = False,
    mixin_reach: soundness.Reach | None = None,
    mark_kept: bool = False,
    hold_unproven: bool = False,
    trims: dict[str, Trim] | None = None,
    moved_whole: frozenset[str] = frozenset(),
    left_out: Mapping[str, frozenset[str]] | None = None,
) -> Plan:
    """Plan the migration of ``findings`` (already filtered by --only/--skip).

    An override the plan changes carries its ``# Overwritten --`` reason; one that stays as it is is
    marked only with ``mark_kept`` (a comment-only edit is churn in a migration, so it is asked for).

    ``repairs`` maps an override to the fixes verification found its reduction needs (keys the mixin
    adds to drop, keys to set to None, parameters to keep passing); it turns a deletion into such a
    reduction. ``mixin_reach``: what the mixin passes to ``forward`` (``soundness.Reach``), for the check that
    every key a change makes reach ``forward`` is one it takes. ``hold_unproven``: no verification
    follows (``apply`` on model code outside transformers), so a change that would alter what the
    standard generate flow prepares (``Finding.flow``) is held back with its reason. ``trims`` maps an
    override the findings keep to what a trim takes out of it (``Trim``: for the members of a mined hook,
    ``codemod.transform.hooks``, that call ``super()`` already): planned like any change, so a generated file and
    its modular source trim together. ``moved_whole``: overrides reduced to ``super()`` because a mined hook runs their
    whole body in the mixin (which returns their own dict before preparing anything). ``left_out``: the keys the
    mined hooks make the mixin leave out for an override (none of them reaches forward).
    """
    planner = _Planner(
        index,
        findings,
        mixin_era is Era.STUB,
        mixin_file,
        repairs,
        override_enables_generation,
        mixin_reach,
        mark_kept,
        hold_unproven,
        trims,
        moved_whole,
        left_out,
    )
    planner.initial()
    planner.generated()
    planner.modular_trap()
    planner.copies()
    shards = planner.shards()
    actions = tuple(sorted((oid, d.action) for oid, d in planner.decisions.items()))
    changes = any(a is not Action.KEEP for _, a in actions)
    hoist = None
    if planner.hoist_needed and changes and mixin_file is not None:
        from codemod.rules.generic_mixin import HOIST_SOURCE

        hoist = Edit(
            mixin_file,
            MIXIN_CLASS,
            EditKind.HOIST,
            None,
            "the mixin is a stub: install the generic implementation first",
            HOIST_SOURCE,
        )
    return Plan(tuple(shards), hoist, tuple(planner.held), actions, tuple(planner.notes))
