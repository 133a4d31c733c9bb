"""After the scan, no stage parses a checkout file again except to edit it.

The index parses every candidate file once (libcst, for the recognisers and positions) and keeps
what later stages need (facts, copy links, modular origins, what a modular deletion would inherit).
Planning and settling a migration then parse a file's original text only where they must: once with
libcst to rewrite it, once with ``ast`` for the pyflakes comparison of before and after, and once with ``ast``
for what plain mode asks of the file's other classes (``plan.drivers``: which composites drive a changed class);
a file the
plan does not touch is not parsed at all, and a later settling round re-parses only the files whose
edits changed. The counts are taken on the fixture checkout, by the text each parse is given.
"""

from __future__ import annotations

import ast
import collections
import hashlib
from pathlib import Path

import libcst as cst
import pytest

from codemod.analyse.scan import scan
from codemod.checkout import resolve
from codemod.contracts import Held, HeldCause
from codemod.transform import apply

from .conftest import MINI_CHECKOUT, copy_fixture


def _digest(source: str | bytes) -> str:
    return hashlib.sha1(source.encode("utf-8") if isinstance(source, str) else source).hexdigest()


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    root = copy_fixture(MINI_CHECKOUT, tmp_path / "mini")
    result = scan(resolve(root), use_cache=False, jobs=1)
    originals = {_digest(p.read_bytes()): str(p.relative_to(root)) for p in root.rglob("*.py")}
    originals.update({_digest(p.read_text(encoding="utf-8")): str(p.relative_to(root)) for p in root.rglob("*.py")})
    counts: collections.Counter[tuple[str, str]] = collections.Counter()
    real_cst, real_ast = cst.parse_module, ast.parse

    def counting_cst(source, *args, **kwargs):
        counts["libcst", originals.get(_digest(source), "")] += 1
        return real_cst(source, *args, **kwargs)

    def counting_ast(source, *args, **kwargs):
        if isinstance(source, (str, bytes)):
            counts["ast", originals.get(_digest(source), "")] += 1
        return real_ast(source, *args, **kwargs)

    monkeypatch.setattr(cst, "parse_module", counting_cst)
    monkeypatch.setattr(ast, "parse", counting_ast)
    changes = apply.compute_changes(result, jobs=1)
    return changes, {key: n for key, n in counts.items() if key[1]}  # "": a rewritten text or a snippet


def test_only_the_files_a_plan_edits_are_parsed_again(parses) -> None:
    changes, counts = parses
    planned = set(changes.plan.by_file())
    assert planned, "the fixture plan edits nothing: the test would prove nothing"
    assert {file for _, file in counts} <= planned
    # the counter sees the parses there are: each planned file is parsed to be rewritten
    assert {file for kind, file in counts if kind == "libcst"} == planned
    for file in planned:
        assert counts.get(("libcst", file), 0) <= 1, (file, counts)  # to rewrite it
        # the pyflakes baseline, and the plan's drivers (plain_safety), each once
        assert counts.get(("ast", file), 0) <= 2, (file, counts)


def test_a_settling_round_rewrites_only_the_files_whose_edits_changed(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    root = copy_fixture(MINI_CHECKOUT, tmp_path / "mini")
    result = scan(resolve(root), use_cache=False, jobs=1)
    first_plan = apply.initial_plan(result)
    victim = next(
        s
        for s in first_plan.shards
        if len({e.file for e in s.edits}) == 1
        and s.edits[0].file != (first_plan.hoist.file if first_plan.hoist else None)
    )
    victim_file = victim.edits[0].file
    rewritten: list[str] = []
    real_job, real_flakes = apply._rewrite_job, apply._new_flakes
    calls = {"flakes": 0}

    def counting_job(job):
        rewritten.append(job[0])
        return real_job(job)

    def failing_once(rewrites, jobs):
        calls["flakes"] += 1
        found = real_flakes(rewrites, jobs)
        if calls["flakes"] == 1:  # the first round: as if the victim's rewrite added an undefined name
            found[victim_file] = Held(
                victim_file, HeldCause.WOULD_ADD_FLAKES, "the rewrite would add undefined name 'x'"
            )
        return found

    monkeypatch.setattr(apply, "_rewrite_job", counting_job)
    monkeypatch.setattr(apply, "_new_flakes", failing_once)
    changes = apply.settle(result, first_plan, jobs=1)
    assert changes.dropped == (
        Held(victim.id, HeldCause.WOULD_ADD_FLAKES, f"{victim_file}: the rewrite would add undefined name 'x'"),
    )
    first_round = set(first_plan.by_file())
    assert len(rewritten) >= len(first_round) and calls["flakes"] == 2
    # the second round: only files whose edits changed (the victim's, if another shard still edits it)
    again = rewritten[len(first_round) :]
    assert set(again) <= {victim_file}, again
    assert victim_file not in {r.path for r in changes.rewrites if r.changed} or victim_file in again
