"""TB006's fix: the private generation helpers whose signatures changed, onto what they did.

- ``self._extract_past_from_model_output(outputs, standardize_cache_format=...)`` -> ``outputs.past_key_values``:
  4.43's returned the outputs' ``past_key_values`` (or ``mems``, ``past_buckets_states``) and converted it only
  for a model with ``_convert_to_standard_cache``; 4.44 dropped the parameter and 4.49 the method. Left as it is
  in a file that names the other caches or defines the converter.
- ``standardize_cache_format=...`` handed to any other call (``super()._update_model_kwargs_for_generation``) is
  dropped: 4.44 removed the parameter, and the value only ever asked for that conversion.
"""

from __future__ import annotations

import re

import libcst as cst

from codemod.analyse.blockers import blocks
from codemod.transform.idioms.base import IdiomEdit, IdiomTarget, NotMigrated, Plan, Source, functions, walk

#: what 4.43's helper also read, or converted with: a file naming one is left as it is
_OTHER_CACHES = re.compile(r"\b(mems|past_buckets_states|_convert_to_standard_cache)\b")


def private_helpers(source: Source, target: IdiomTarget) -> Plan:
    """The plan that moves the calls of 4.43's private helpers onto what they did, on a target from 4.44."""
    plan = Plan()
    if not blocks("4.44.0", target.release):
        return plan
    own = {f.name.value for f in functions(source.module)}
    for node in walk(source.module):
        if not isinstance(node, cst.Call):
            continue
        keyword = [a for a in node.args if a.keyword is not None and a.keyword.value == "standardize_cache_format"]
        func = node.func
        if isinstance(func, cst.Attribute) and func.attr.value in own and not isinstance(func.value, cst.Call):
            continue  # the file's own method takes what it takes (``super().x(...)`` is the library's)
        if _is_extract(node):
            _extract(source, node, plan)
        elif keyword:
            args = [a for a in node.args if a not in keyword]
            if args:  # the last one keeps the dropped one's layout before the parenthesis
                after = node.args[-1].whitespace_after_arg
                args[-1] = args[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT, whitespace_after_arg=after)
            plan.replace[node] = node.with_changes(args=args)
            plan.edits.append(IdiomEdit("TB006", source.line(node), "standardize_cache_format dropped"))
    return plan


def _is_extract(call: cst.Call) -> bool:
    func = call.func
    return (
        isinstance(func, cst.Attribute)
        and func.attr.value == "_extract_past_from_model_output"
        and isinstance(func.value, cst.Name)
        and func.value.value == "self"
    )


def _extract(source: Source, call: cst.Call, plan: Plan) -> None:
    line = source.line(call)
    positional = [a for a in call.args if a.keyword is None and not a.star]
    others = [a for a in call.args if a.keyword is not None and a.keyword.value != "standardize_cache_format"]
    if len(positional) != 1 or others or any(a.star for a in call.args):
        plan.not_migrated.append(NotMigrated("TB006", line, "not _extract_past_from_model_output(outputs)"))
        return
    if _OTHER_CACHES.search(source.text):
        plan.not_migrated.append(NotMigrated("TB006", line, "the file names another cache or converts it"))
        return
    new = f"{source.code(positional[0].value)}.past_key_values"
    plan.replace[call] = cst.parse_expression(new)
    plan.edits.append(IdiomEdit("TB006", line, new))
