"""After the scan, no stage parses a checkout file again except to edit it.

The index parses every candidate file once (libcst, for the recognisers and positions) and keeps
what later stages need (facts, copy links, modular origins, what a modular deletion would inherit).
Planning and settling a migration then parse a file's original text only where they must: once with
libcst to rewrite it, once with ``ast`` for the pyflakes comparison of before and after; a file the
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

from codemod import apply
from codemod.checkout import resolve
from codemod.scan import scan

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
        assert counts.get(("ast", file), 0) <= 1, (file, counts)  # the pyflakes baseline
