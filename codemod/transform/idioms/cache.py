"""Legacy tuple caches onto the ``Cache`` object generate() hands the model (TB001, TB002, TB003).

Three places of the 4.3x Llama shape, migrated together or not at all (a model loop that passes a ``Cache`` to
attentions that index it as a tuple runs no better than before):

- the attention: ``if past_key_value is not None:`` followed by exactly ``key = torch.cat([past_key_value[0], key],
  dim=2)`` and the same for ``[1]`` becomes ``key, value = past_key_value.update(key, value, self.layer_idx)``;
  ``past_key_value = (key, value) if use_cache else None`` goes (the cache is what the layer returns) and
  ``kv_seq_len += past_key_value[0].shape[-2]`` reads ``past_key_value.get_seq_length(self.layer_idx)``; the
  attention gets a layer index where it has none (``layer_index``);
- the model loop: ``past_key_values[0][0].shape[2]`` reads ``past_key_values.get_seq_length()``, after a
  ``DynamicCache`` is made from what was given (none, or tuples) when a cache is used; a layer is handed the cache
  itself (``past_key_values[idx] if past_key_values is not None else None`` -> ``past_key_values``), and
  ``next_decoder_cache += (layer_outputs[1],)`` keeps the cache the layer returns;
- ``prepare_inputs_for_generation``: ``past_key_values[0][0].shape[2]`` reads ``get_seq_length()``.

Whatever else indexes a cache in the file, or a result in which the blocker rules still find a tuple idiom, leaves
the file's caches as they are, each idiom reported with its line and why.
"""

from __future__ import annotations

import ast
import re

import libcst as cst

from codemod.transform.idioms.base import (
    IdiomEdit,
    IdiomTarget,
    NotMigrated,
    Plan,
    Source,
    apply,
    classes,
    functions,
    one_line,
    parameters,
    squeezed,
    walk,
)
from codemod.transform.idioms.layer_index import thread

LAYER_PAST = ("past_key_value", "layer_past")
MODEL_PAST = "past_key_values"
PRESENTS = re.compile(r"^(presents|present_key_values|next_decoder_cache|next_cache|new_past|next_past)$")
_PAST_LENGTH = re.compile(rf"^{MODEL_PAST}\[0\]\[0\]\.shape\[-?2\]$")
_LAYER_OF = re.compile(rf"^\(?{MODEL_PAST}\[(\w+)\]if{MODEL_PAST}(isnotNone)?elseNone\)?$")


def _statements(function: cst.FunctionDef) -> list[cst.BaseStatement]:
    return list(function.body.body) if isinstance(function.body, cst.IndentedBlock) else []


def _cat(source: Source, statement: cst.BaseStatement, past: str, index: int) -> str | None:
    """``x = torch.cat([past[index], x], dim=2)`` -> x."""
    pattern = rf"^(\w+)=torch\.cat\([\[(]{past}\[{index}\],\1[\])],dim=-?2\)$"
    found = re.match(pattern, squeezed(source.statement_code(statement)))
    return found.group(1) if found else None


class _Unit:
    """The plan for one module, built up function by function."""

    def __init__(self, source: Source) -> None:
        self.source = source
        self.plan = Plan()
        self.reasons: dict[int, str] = {}
        self.attention_classes: set[str] = set()
        self.loops = 0

    def edit(self, code: str, node: cst.CSTNode, became: cst.CSTNode | cst.RemovalSentinel, text: str) -> None:
        self.plan.replace[node] = became
        self.plan.edits.append(IdiomEdit(code, self.source.line(node), text))

    def attention(self, cls: cst.ClassDef, function: cst.FunctionDef, past: str) -> None:
        body = _statements(function)
        for at, statement in enumerate(body):
            if not (
                isinstance(statement, cst.If) and squeezed(self.source.code(statement.test)) == f"{past}isnotNone"
            ):
                continue
            inner = list(statement.body.body) if isinstance(statement.body, cst.IndentedBlock) else []
            if len(inner) != 2 or statement.orelse is not None:
                continue
            key, value = _cat(self.source, inner[0], past, 0), _cat(self.source, inner[1], past, 1)
            if key is None or value is None:
                continue
            update = f"{key}, {value} = {past}.update({key}, {value}, self.layer_idx)"
            new = self.source.statement(update)
            assert isinstance(inner[0], cst.SimpleStatementLine) and isinstance(new, cst.SimpleStatementLine)
            self.edit("TB002", inner[0], new.with_changes(leading_lines=inner[0].leading_lines), update)
            self.edit(
                "TB002", inner[1], cst.RemoveFromParent(), f"(in the update on line {self.source.line(inner[0])})"
            )
            after = body[at + 1] if at + 1 < len(body) else None
            tuple_again = rf"^{past}=\({key},{value}\)(ifuse_cacheelseNone)?$"
            if after is not None and re.match(tuple_again, squeezed(self.source.statement_code(after))):
                self.edit("TB002", after, cst.RemoveFromParent(), f"{past} stays the cache")
            self.attention_classes.add(cls.name.value)
            self._seq_lengths(function, past)
            return

    def _seq_lengths(self, function: cst.FunctionDef, past: str) -> None:
        """``n += past[0].shape[-2]`` before the update: the layer's past length."""
        for node in walk(function):
            if isinstance(node, cst.AugAssign) and re.match(
                rf"^{past}\[0\]\.shape\[-?2\]$", squeezed(self.source.code(node.value))
            ):
                became = cst.parse_expression(f"{past}.get_seq_length(self.layer_idx)")
                self.edit("TB001", node.value, became, one_line(f"{past}.get_seq_length(self.layer_idx)"))

    def past_lengths(self, function: cst.FunctionDef) -> list[cst.CSTNode]:
        found: list[cst.CSTNode] = []
        for node in walk(function):
            if isinstance(node, cst.Subscript) and _PAST_LENGTH.match(squeezed(self.source.code(node))):
                self.edit("TB001", node, cst.parse_expression(f"{MODEL_PAST}.get_seq_length()"), "get_seq_length()")
                found.append(node)
        return found

    def model_loop(self, function: cst.FunctionDef, target: IdiomTarget) -> None:
        # the cache is made before the past length is read, or (a loop that never reads it) before the layers get it
        layer_pasts = [
            n for n in walk(function) if isinstance(n, cst.IfExp) and _LAYER_OF.match(squeezed(self.source.code(n)))
        ]
        anchors = self.past_lengths(function) + layer_pasts
        if not anchors:
            return
        body = _statements(function)
        first = min(i for i, s in enumerate(body) if any(any(n is a for a in anchors) for n in walk(s)))
        if "use_cache" not in parameters(function):
            self.reasons[self.source.line(function)] = "the model loop takes no use_cache to decide on a cache"
            return
        if any(_sets_use_cache(self.source, s) for s in body[first:]):
            # a cache made for a use_cache that changes later may not be the one the loop means
            self.reasons[self.source.line(function)] = "use_cache is set again after the past length is read"
            return
        make = (
            f"DynamicCache.from_legacy_cache({MODEL_PAST})"
            if target.from_legacy_cache
            else f"DynamicCache({MODEL_PAST})"
        )
        build = self.source.statement(
            f"if (use_cache or {MODEL_PAST} is not None) and not isinstance({MODEL_PAST}, Cache):\n"
            f"    {MODEL_PAST} = {make}"
        )
        self.plan.before[body[first]] = [build.with_changes(leading_lines=())]
        self.plan.edits.append(IdiomEdit("TB001", self.source.line(body[first]), f"{MODEL_PAST} = {make}"))
        self.plan.imports += [("transformers.cache_utils", "Cache"), ("transformers.cache_utils", "DynamicCache")]
        self.loops += 1
        for layer_past in layer_pasts:
            self.edit("TB001", layer_past, cst.Name(MODEL_PAST), f"{MODEL_PAST} (the cache itself)")
        for node in walk(function):
            if isinstance(node, cst.AugAssign) and isinstance(node.target, cst.Name):
                self._present(node)

    def _present(self, node: cst.AugAssign) -> None:
        """``presents += (x,)`` -> ``presents = x``: the layer returns the cache it updated."""
        target = node.target
        value = node.value
        if not (isinstance(target, cst.Name) and PRESENTS.match(target.value) and isinstance(value, cst.Tuple)):
            return
        if len(value.elements) != 1 or not isinstance(node.operator, cst.AddAssign):
            return
        new = cst.Assign([cst.AssignTarget(target)], value.elements[0].value)
        self.edit("TB003", node, new, one_line(self.source.code(new)))


def _sets_use_cache(source: Source, statement: cst.CSTNode) -> bool:
    """Whether ``statement`` sets ``use_cache`` to anything but ``False`` (what gradient checkpointing does)."""
    for node in walk(statement):
        if isinstance(node, cst.Assign) and any(
            isinstance(t.target, cst.Name) and t.target.value == "use_cache" for t in node.targets
        ):
            if squeezed(source.code(node.value)) != "False":
                return True
    return False


def _legacy_hits(text: str) -> list[tuple[str, int, str]]:
    """What the blocker rules TB001-TB003 find in ``text``: (code, line, code text)."""
    from codemod.analyse.blocker_rules import RULES
    from codemod.analyse.blockers import TreeFacts

    tree = ast.parse(text)
    wanted = {"TB001", "TB002", "TB003"}
    return sorted({(r.code, h.line, h.code) for r in RULES if r.code in wanted for h in r.find(tree, TreeFacts())})


def migrate_caches(source: Source, target: IdiomTarget) -> Plan:
    """The plan that moves the module's tuple caches onto ``Cache`` (empty, with reasons, where it cannot)."""
    hits = _legacy_hits(source.module.code)
    if not hits:
        return Plan()
    unit = _Unit(source)
    for cls in classes(source.module):
        for function in functions(cls):
            names = parameters(function)
            past = next((p for p in LAYER_PAST if p in names), None)
            if function.name.value == "prepare_inputs_for_generation":
                unit.past_lengths(function)
            elif past is not None:
                unit.attention(cls, function, past)
            elif MODEL_PAST in names:
                unit.model_loop(function, target)
    why = _consistent(source, unit, target)
    if why is None:
        return unit.plan
    return Plan(not_migrated=[NotMigrated(code, line, unit.reasons.get(line, why)) for code, line, _ in hits])


def _consistent(source: Source, unit: _Unit, target: IdiomTarget) -> str | None:
    """Why the module's cache plan cannot stand (None: it can)."""
    if unit.reasons:
        line, reason = min(unit.reasons.items())
        return f"line {line}: {reason}"
    if not unit.attention_classes or not unit.loops:
        return "the attention and the model loop are not both in this file in the recognised 4.3x shape"
    threaded = thread(source, unit.attention_classes)
    if isinstance(threaded, str):
        return f"no layer index for the attention: {threaded}"
    unit.plan.merge(threaded)
    left = _legacy_hits(apply(source, unit.plan))
    if left:
        code, _, text = left[0]
        return f"{code} still in the migrated file ({text}): a cache idiom not recognised exactly"
    return None
