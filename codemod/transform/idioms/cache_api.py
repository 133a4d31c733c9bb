"""The ``Cache`` methods later releases removed, onto what they offer (TB009).

- ``cache.get_usable_length(n, layer_idx)`` -> ``cache.get_seq_length(layer_idx)``: 4.53.3's returned the layer's
  past length unless the cache had a maximum it would overflow, which the ``DynamicCache`` generate() makes for
  these models has not;
- ``cache.seen_tokens`` -> ``cache.get_seq_length()``: the tokens a ``DynamicCache`` holds are those it has seen;
- on 5.x, ``DynamicCache.from_legacy_cache(tuples)`` -> ``DynamicCache(tuples)``, and
  ``cache.to_legacy_cache() if use_legacy_cache else cache`` -> ``cache`` (5.x models return the Cache itself).
  Any other ``to_legacy_cache()`` is reported.
"""

from __future__ import annotations

import re

import libcst as cst

from codemod.analyse.blockers import blocks
from codemod.analyse.cache_api_rule import REMOVED_METHODS
from codemod.transform.idioms.base import IdiomEdit, IdiomTarget, NotMigrated, Plan, Source, functions, squeezed, walk

_CACHE_NAME = re.compile(r"^(layer_)?past(_key_values?|_kv)?$|^(next_)?(decoder_)?cache$")


def _usable_length(source: Source, call: cst.Call, receiver: str) -> str | None:
    """``get_usable_length(n[, layer_idx])`` -> the ``get_seq_length`` call (None: other arguments)."""
    positional = [a for a in call.args if a.keyword is None and not a.star]
    keywords = {a.keyword.value: a for a in call.args if a.keyword is not None}
    if any(a.star for a in call.args) or len(positional) + len(keywords) != len(call.args):
        return None
    if set(keywords) - {"new_seq_length", "layer_idx"} or len(positional) > 2:
        return None
    layer = positional[1] if len(positional) == 2 else keywords.get("layer_idx")
    return f"{receiver}.get_seq_length({source.code(layer.value) if layer is not None else ''})"


def cache_methods(source: Source, target: IdiomTarget) -> Plan:
    """The plan that moves the removed ``Cache`` methods onto ``get_seq_length`` and the 5.x constructor."""
    plan = Plan()
    if not blocks("4.54.0", target.release):
        return plan
    own = {f.name.value for f in functions(source.module)} & set(REMOVED_METHODS)
    # what is written to, not read: ``cache.seen_tokens = n`` and ``cache.seen_tokens -= n`` (ipex-llm's)
    stores = {id(t.target) for t in walk(source.module) if isinstance(t, (cst.AssignTarget, cst.AugAssign))}
    for node in walk(source.module):
        new: str | None = None
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.func.attr.value not in own:
            method, receiver = node.func.attr.value, source.code(node.func.value)
            if method == "get_usable_length":
                new = _usable_length(source, node, receiver)
                why = "get_usable_length with arguments other than (n[, layer_idx])"
            elif method == "from_legacy_cache" and receiver == "DynamicCache" and not target.from_legacy_cache:
                new = f"DynamicCache({', '.join(source.code(a) for a in node.args)})"
                why = ""
            else:
                continue
        elif isinstance(node, cst.Attribute) and node.attr.value == "seen_tokens" and "seen_tokens" not in own:
            receiver = source.code(node.value)
            if not _CACHE_NAME.match(receiver):
                continue
            new, why = (None, "seen_tokens is set here, not read") if id(node) in stores else (None, "")
            if new is None and not why:
                new = f"{receiver}.get_seq_length()"
        elif isinstance(node, cst.IfExp) and blocks("5.0.0", target.release) and "to_legacy_cache" not in own:
            body, orelse = squeezed(source.code(node.body)), squeezed(source.code(node.orelse))
            if body != f"{orelse}.to_legacy_cache()":
                continue
            new, why = source.code(node.orelse), ""
        else:
            continue
        if new is None:
            plan.not_migrated.append(NotMigrated("TB009", source.line(node), why))
            continue
        plan.replace[node] = cst.parse_expression(new)
        plan.edits.append(IdiomEdit("TB009", source.line(node), new))
    _legacy_calls_left(source, target, plan, own)
    return plan


def _legacy_calls_left(source: Source, target: IdiomTarget, plan: Plan, own: set[str]) -> None:
    """Every ``to_legacy_cache()`` no edit removes, reported (5.x has no legacy form to return)."""
    if not blocks("5.0.0", target.release) or "to_legacy_cache" in own:
        return
    covered = {id(n) for replaced in plan.replace for n in walk(replaced)}
    for node in walk(source.module):
        if isinstance(node, cst.Attribute) and node.attr.value == "to_legacy_cache" and id(node) not in covered:
            why = "5.x has no legacy tuples to return: return the Cache itself"
            plan.not_migrated.append(NotMigrated("TB009", source.line(node), why))
