"""Whether two recorded inputs hold the same thing, and where two runs' prepared inputs first differ.

The workers record each value ``prepare_inputs_for_generation`` returned as a summary (see
``recording.summarize``): tensors by shape, dtype and values (or statistics, or a hash), caches by type
and length. Floats agree within a tight tolerance; a key set to None is the same as a key left out.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from codemod.verify.documents import Difference, PreparedCall, Summary

RTOL = 1e-4
ATOL = 1e-5


def _close(a: float, b: float) -> bool:
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    if math.isinf(a) or math.isinf(b):
        return a == b
    return abs(a - b) <= ATOL + RTOL * abs(b)


def same_values(a: Sequence[Any], b: Sequence[Any], floating: bool) -> bool:
    if len(a) != len(b):
        return False
    if not floating:
        return list(a) == list(b)
    return all(_close(float(x), float(y)) for x, y in zip(a, b, strict=False))


def _short(summary: Summary) -> str:
    if summary is None:
        return "None"
    if isinstance(summary, dict) and "tensor" in summary:
        values = summary.get("values")
        shown = "" if values is None else f" {values[:6]}{'…' if len(values) > 6 else ''}"
        return f"tensor{tuple(summary['tensor'])} {summary['dtype']}{shown}"
    if isinstance(summary, dict) and "cache" in summary:
        return f"{summary['cache']}(length={summary['length']})"
    text = repr(summary)
    return text if len(text) <= 80 else text[:77] + "..."


def same_summary(a: Summary, b: Summary) -> bool:
    """Whether two recorded inputs (see ``recording.summarize``) hold the same thing."""
    if isinstance(a, dict) and isinstance(b, dict) and "tensor" in a and "tensor" in b:
        if a["tensor"] != b["tensor"] or a["dtype"] != b["dtype"]:
            return False
        if "values" in a and "values" in b:
            return same_values(a["values"], b["values"], "float" in a["dtype"] or "bfloat" in a["dtype"])
        if "stats" in a and "stats" in b:  # a large float tensor: sums, extremes and its first values
            return same_values(a["stats"], b["stats"], floating=True)
        return a.get("sha256") == b.get("sha256")
    if isinstance(a, dict) and isinstance(b, dict) and "dict" in a and "dict" in b:
        return same_call(a["dict"], b["dict"])
    if isinstance(a, dict) and isinstance(b, dict) and "seq" in a and "seq" in b:
        return len(a["seq"]) == len(b["seq"]) and all(
            same_summary(x, y) for x, y in zip(a["seq"], b["seq"], strict=False)
        )
    if isinstance(a, float) and isinstance(b, float):
        return _close(a, b)
    return bool(a == b)  # decoded JSON: a bool already


def same_call(a: PreparedCall, b: PreparedCall) -> bool:
    return _call_difference(a, b) is None


def _call_difference(old: PreparedCall, new: PreparedCall) -> tuple[str, str, str] | None:
    """(key, old, new) of the first difference between two prepared dicts; a key set to None is
    the same as a key left out (the model's forward sees None either way). A mask of ones is not the
    same as none: Electra's forward builds its default without counting the cache."""
    keys = sorted({k for k, v in old.items() if v is not None} | {k for k, v in new.items() if v is not None})
    for key in keys:
        a, b = old.get(key), new.get(key)
        if not same_summary(a, b):
            at = _first_differing_value(a, b)
            if at is not None:  # the six values shown may all agree: say where they do not
                assert isinstance(a, dict) and isinstance(b, dict)  # tensors, as _first_differing_value checked
                return key, f"{_short(a)} ([{at}] = {a['values'][at]})", f"{_short(b)} ([{at}] = {b['values'][at]})"
            return key, _short(a), _short(b)
    return None


def _first_differing_value(a: Summary, b: Summary) -> int | None:
    """The flat index of the first value two recorded tensors of one shape and dtype disagree on, or None."""
    if not (
        isinstance(a, dict)
        and isinstance(b, dict)
        and "values" in a
        and "values" in b
        and a.get("tensor") == b.get("tensor")
        and a.get("dtype") == b.get("dtype")
    ):
        return None
    floating = "float" in a["dtype"]
    return next(
        (
            i
            for i, (x, y) in enumerate(zip(a["values"], b["values"], strict=False))
            if not same_values([x], [y], floating)
        ),
        None,
    )


def first_call_difference(
    scenario: str, old_calls: Sequence[PreparedCall], new_calls: Sequence[PreparedCall]
) -> Difference | None:
    for step, (a, b) in enumerate(zip(old_calls, new_calls, strict=False)):
        found = _call_difference(a, b)
        if found is not None:
            key, old, new = found
            return Difference(scenario, "prepared-inputs", step, key, old, new)
    if len(old_calls) != len(new_calls):
        step = min(len(old_calls), len(new_calls))
        return Difference(
            scenario, "prepared-inputs", step, None, f"{len(old_calls)} calls", f"{len(new_calls)} calls"
        )
    return None
