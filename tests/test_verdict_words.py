"""Verdict words that mean one thing: ``identical``, ``differs`` (tokens or scores), ``inputs-differ`` (the same
tokens, other prepared inputs), ``crashed`` (the new code raises), ``unverified``; and the scenarios the new code
extends, a column of their own, never the first difference."""

from __future__ import annotations

import io
import json

import pytest
from rich.console import Console

from codemod.contracts import Verdict
from codemod.migrate import failing
from codemod.publish.report import render_verify_table, verdict_record, verify_document, verify_markdown
from codemod.verify.compare import ClassVerdict, compare
from codemod.verify.session import VerifyReport

from .test_compare import cached, ok, side, tensor, uncached

#: the old code's run of a scenario, and the new code's: other prepared inputs, the same tokens and scores
OTHER_INPUTS = (
    ok(name="beam-search"),
    ok(name="beam-search", calls=[{"input_ids": tensor([5, 6]), "decoder_inputs_embeds": tensor([1])}, {}]),
)
OTHER_TOKENS = ok(name="sampling"), ok(name="sampling", sequences=((5, 6, 9),))
RAISES = ok(name="static-cache"), {"name": "static-cache", "status": "error", "error": "TypeError: boom", "calls": []}
#: the old code failed, the new code generates what greedy does
EXTENDS = (
    {"name": "assisted", "status": "error", "error": "IndexError: no", "calls": [{"input_ids": tensor([5, 6])}]},
    ok(name="assisted"),
)


def _verdict(*pairs: tuple[dict, dict]) -> ClassVerdict:
    """A class that caches (a cached and an uncached run the same on both sides) and ran ``pairs`` besides."""
    old = [cached(), uncached(name="greedy-no-cache"), *(o for o, _ in pairs)]
    new = [ok(), ok(name="greedy-no-cache"), *(n for _, n in pairs)]
    return compare("m.py::A", side(*old, caches=True), side(*new, caches=True))


@pytest.mark.parametrize(
    ("pairs", "verdict", "decided_by"),
    [
        pytest.param((), "identical", None, id="nothing-else"),
        pytest.param((OTHER_INPUTS,), "inputs-differ", "beam-search", id="same-tokens-other-inputs"),
        pytest.param((OTHER_TOKENS,), "differs", "sampling", id="other-tokens"),
        pytest.param((RAISES,), "crashed", "static-cache", id="the-new-code-raises"),
        # the worst scenario decides, and names the first difference: not the inputs of another one
        pytest.param((OTHER_INPUTS, OTHER_TOKENS), "differs", "sampling", id="tokens-over-inputs"),
        pytest.param((OTHER_INPUTS, RAISES), "crashed", "static-cache", id="a-crash-over-inputs"),
        pytest.param((EXTENDS, OTHER_INPUTS), "inputs-differ", "beam-search", id="an-extension-is-no-difference"),
    ],
)
def test_each_verdict_is_decided_by_its_worst_scenario(
    pairs: tuple[tuple[dict, dict], ...], verdict: str, decided_by: str | None
) -> None:
    found = _verdict(*pairs)
    assert found.verdict == verdict, found.detail
    first = found.first_difference
    assert (first.scenario if first is not None else None) == decided_by
    assert found.detail.startswith(f"{decided_by}: ") if decided_by else found.detail == ""


def test_inputs_differ_is_not_kept_and_is_repaired_like_a_difference() -> None:
    """``apply --verify`` treats it as any verdict but identical: a repair where whole keys differ, else a revert."""
    found = _verdict(OTHER_INPUTS)
    report = VerifyReport((found,), (), (), "cpu", "python", 1.0, "HEAD")
    assert failing(report, keep_unverified=True) == {"m.py::A": f"inputs-differ: {found.detail}"}
    repair = found.repair()
    assert repair is not None and repair.remove == ("decoder_inputs_embeds",)


def test_an_extension_has_its_own_column_and_field() -> None:
    found = _verdict(EXTENDS)
    assert found.verdict == "identical" and found.extended == ("assisted",) and found.detail == ""
    record = verdict_record(found)
    assert record["extends"] == ["assisted"] and record["first_difference"] is None
    report = VerifyReport((found,), (), (), "cpu", "python", 1.0, "HEAD")
    row = next(line for line in verify_markdown(report).splitlines() if line.startswith("| `A`"))
    cells = [cell.strip() for cell in row.strip("|").split("|")]
    assert cells[-2:] == ["assisted", ""]  # extends; first difference / why
    buffer = io.StringIO()
    render_verify_table(report, Console(file=buffer, width=200, color_system=None))
    assert "extends" in buffer.getvalue() and "extends:" not in buffer.getvalue()


def test_the_json_summary_counts_every_word() -> None:
    report = VerifyReport((_verdict(OTHER_INPUTS), _verdict()), (), (), "cpu", "python", 1.0, "HEAD")
    summary = json.loads(json.dumps(verify_document(report)))["summary"]
    assert summary[Verdict.INPUTS_DIFFER] == 1 and summary[Verdict.IDENTICAL] == 1 and summary[Verdict.DIFFERS] == 0
