"""Golden scan reports: ``python -m tests.goldens`` (``make goldens``) regenerates ``tests/golden/``.

The goldens are the JSON report of ``codemod scan`` on

* the fixture checkout ``fixtures/mini_checkout`` (plus its Markdown report), and
* the real releases in ``RELEASES``, fetched with ``codemod.fetch.release_checkout`` (PyPI, cached),

with the one machine-specific value normalised: the checkout's absolute root becomes ``"<root>"``.
Everything else must be the same on every machine, including the git head of a fetched release (the
fetch commits with a fixed identity and date). The fixture is scanned from a temporary copy without
git state (the copy has no repository; the repository's own copy would report this repo's head).

``tests/test_scan_fixture.py`` and ``tests/test_real_releases.py`` compare the current output with
these files; on a mismatch they fail with a short diff and the hint to run ``make goldens`` (after
checking that the change is intended: review ``git diff tests/golden``).

Usage: ``python -m tests.goldens [fixture] [4.45.2] [5.23.0]`` (default: all of them).
"""

from __future__ import annotations

import difflib
import json
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
GOLDEN_DIR = Path(__file__).resolve().parent / "golden"
MINI_CHECKOUT = REPO / "fixtures" / "mini_checkout"
RELEASES = ("4.45.2", "5.23.0")
ROOT_PLACEHOLDER = "<root>"
HINT = "if the change is intended, run `make goldens` (python -m tests.goldens) and review `git diff tests/golden`"
MAX_DIFF_LINES = 60


def golden_path(name: str, suffix: str = ".json") -> Path:
    return GOLDEN_DIR / f"scan-{name}{suffix}"


# --------------------------------------------------------------------------------------------- render


def normalise_json(text: str, root: Path | str) -> str:
    """The JSON report with ``checkout.root`` replaced; any other occurrence of the root is an error
    (a path the report should have made relative), so it is left in for the diff to show."""
    document = json.loads(text)
    assert document["checkout"]["root"] == str(root), (document["checkout"]["root"], str(root))
    document["checkout"]["root"] = ROOT_PLACEHOLDER
    return json.dumps(document, indent=2) + "\n"


def normalise_text(text: str, root: Path | str) -> str:
    return text.replace(str(root), ROOT_PLACEHOLDER)


def copy_mini_checkout(workdir: Path) -> Path:
    """A copy of the fixture checkout below ``workdir`` (scans never touch the repository's copy)."""
    root = workdir / "mini_checkout"
    shutil.copytree(MINI_CHECKOUT, root, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return root


def scan_reports(root: Path, *, use_cache: bool = False) -> tuple[str, str]:
    """(JSON, Markdown) of the checkout at ``root``, scanned without git state, normalised."""
    from codemod.checkout import resolve
    from codemod.report import to_json, to_markdown
    from codemod.scan import scan

    checkout = resolve(root, with_git=False)
    result = scan(checkout, use_cache=use_cache, jobs=1)
    return normalise_json(to_json(result), checkout.root), normalise_text(to_markdown(result), checkout.root)


def fixture_reports(workdir: Path, *, use_cache: bool = False) -> tuple[str, str]:
    """(JSON, Markdown) of the fixture checkout, scanned from a copy below ``workdir``, normalised."""
    return scan_reports(copy_mini_checkout(workdir), use_cache=use_cache)


def release_report(version: str, *, use_cache: bool = True) -> str:
    """The normalised JSON of ``version``'s cached release checkout (downloaded on first use)."""
    from codemod.checkout import resolve
    from codemod.fetch import release_checkout
    from codemod.report import to_json
    from codemod.scan import scan

    checkout = resolve(release_checkout(version))
    return normalise_json(to_json(scan(checkout, use_cache=use_cache)), checkout.root)


# --------------------------------------------------------------------------------------------- compare


def _shown(path: Path) -> str:
    try:
        return path.resolve().relative_to(REPO).as_posix()
    except ValueError:
        return str(path)


def golden_mismatch(actual: str, path: Path) -> str | None:
    """None when ``actual`` equals the golden at ``path``, else a short message with a unified diff."""
    if not path.is_file():
        return f"golden {_shown(path)} does not exist; {HINT}"
    expected = path.read_text(encoding="utf-8")
    if actual == expected:
        return None
    diff = list(
        difflib.unified_diff(
            expected.splitlines(), actual.splitlines(),
            fromfile=f"{_shown(path)} (golden)", tofile="current scan", lineterm="", n=2,
        )
    )  # fmt: skip
    shown = diff[:MAX_DIFF_LINES]
    if len(diff) > MAX_DIFF_LINES:
        shown.append(f"... {len(diff) - MAX_DIFF_LINES} more diff lines")
    return "\n".join([f"scan output differs from {_shown(path)}; {HINT}", *shown])


# --------------------------------------------------------------------------------------------- refresh


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    old = path.read_text(encoding="utf-8") if path.is_file() else None
    path.write_text(text, encoding="utf-8")
    state = "new" if old is None else ("unchanged" if old == text else "updated")
    print(f"{state:>9}  {_shown(path)}")


def main(argv: list[str]) -> int:
    wanted = argv or ["fixture", *RELEASES]
    unknown = [name for name in wanted if name != "fixture" and name not in RELEASES]
    if unknown:
        print(f"unknown golden(s) {', '.join(unknown)}: choose from fixture, {', '.join(RELEASES)}", file=sys.stderr)
        return 2
    if "fixture" in wanted:
        with tempfile.TemporaryDirectory(prefix="codemod-goldens-") as tmp:
            as_json, as_markdown = fixture_reports(Path(tmp))
        _write(golden_path("fixture"), as_json)
        _write(golden_path("fixture", ".md"), as_markdown)
    for version in RELEASES:
        if version in wanted:
            _write(golden_path(version), release_report(version))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
