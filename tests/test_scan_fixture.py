"""The fixture checkout's scan report against its goldens (``tests/golden/scan-fixture.{json,md}``).

A mismatch fails with a short unified diff; when the change is intended, ``make goldens`` refreshes them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.goldens import (
    ROOT_PLACEHOLDER,
    copy_mini_checkout,
    fixture_reports,
    golden_mismatch,
    golden_path,
    normalise_json,
    scan_reports,
)


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, str]:
    """(JSON, Markdown) of a cold scan (no cache) of a copy of the fixture, normalised."""
    return fixture_reports(tmp_path_factory.mktemp("golden-fixture"), use_cache=False)


def test_fixture_json_matches_golden(reports: tuple[str, str]) -> None:
    problem = golden_mismatch(reports[0], golden_path("fixture"))
    if problem:
        pytest.fail(problem, pytrace=False)


def test_fixture_markdown_matches_golden(reports: tuple[str, str]) -> None:
    problem = golden_mismatch(reports[1], golden_path("fixture", ".md"))
    if problem:
        pytest.fail(problem, pytrace=False)


def test_golden_is_normalised() -> None:
    """The goldens hold no path of the machine that wrote them."""
    for path in (golden_path("fixture"), golden_path("fixture", ".md")):
        text = path.read_text(encoding="utf-8")
        assert "/tmp/" not in text and "/home/" not in text and "pytest-of-" not in text, path
    document = json.loads(golden_path("fixture").read_text(encoding="utf-8"))
    assert document["checkout"]["root"] == ROOT_PLACEHOLDER
    assert document["checkout"]["git"] is None


def test_warm_scan_matches_the_cold_one(tmp_path: Path, codemod_cache: Path, reports: tuple[str, str]) -> None:
    """The cached result renders byte for byte like a fresh one (the golden is of the cold scan)."""
    root = copy_mini_checkout(tmp_path)
    cold = scan_reports(root, use_cache=True)
    assert any((codemod_cache / "scans").iterdir())
    warm = scan_reports(root, use_cache=True)
    assert cold == warm == reports


def test_golden_mismatch_shows_a_diff_and_the_hint(tmp_path: Path) -> None:
    golden = golden_path("fixture")
    text = golden.read_text(encoding="utf-8")
    changed = text.replace('"category": "bespoke"', '"category": "generic"', 1)
    message = golden_mismatch(changed, golden)
    assert message is not None
    assert "make goldens" in message
    assert '-      "category": "bespoke",' in message and '+      "category": "generic",' in message
    assert len(message.splitlines()) < 80
    assert golden_mismatch(text, golden) is None
    assert "does not exist" in golden_mismatch(text, tmp_path / "missing.json")  # type: ignore[operator]


def test_normalise_json_replaces_only_the_root() -> None:
    document = {"checkout": {"root": "/some/where", "git": None}, "findings": [{"file": "a.py"}]}
    out = json.loads(normalise_json(json.dumps(document), "/some/where"))
    assert out == {"checkout": {"root": ROOT_PLACEHOLDER, "git": None}, "findings": [{"file": "a.py"}]}
