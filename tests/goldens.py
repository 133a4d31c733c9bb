"""Golden scan reports and diffs: ``python -m tests.goldens`` (``make goldens``) regenerates ``tests/golden/``.

The scan goldens are the JSON report of ``codemod scan`` on

* the fixture checkout ``fixtures/mini_checkout`` (plus its Markdown report), and
* the real releases in ``RELEASES``, fetched with ``codemod.fetch.release_checkout`` (PyPI, cached),

with the one machine-specific value normalised: the checkout's absolute root becomes ``"<root>"``.

The diff goldens (``diff-<name>.patch``) are the output of ``codemod diff`` on the fixture checkout (a
copy) and on the releases in ``DIFF_RELEASES``; its paths are relative to the checkout already. A
diff larger than ``GZIP_OVER`` bytes is stored gzip-compressed (``.patch.gz``, written without a
timestamp so that the bytes are reproducible) and compared decompressed.
Everything else must be the same on every machine, including the git head of a fetched release (the
fetch commits with a fixed identity and date). The fixture is scanned from a temporary copy without
git state (the copy has no repository; the repository's own copy would report this repo's head).

``tests/test_scan_fixture.py``, ``tests/test_real_releases.py``, ``tests/test_apply.py`` and
``tests/test_apply_real.py`` compare the current output with these files; on a mismatch they fail with a
short diff and the hint to run ``make goldens`` (after checking that the change is intended: review
``git diff tests/golden``).

Usage: ``python -m tests.goldens [fixture] [4.45.2] [5.23.0]`` (default: all of them; a name refreshes
its scan golden and, where there is one, its diff golden). ``scan-<name>`` or ``diff-<name>``
refreshes only that one.
"""

from __future__ import annotations

import difflib
import gzip
import json
import shutil
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
GOLDEN_DIR = Path(__file__).resolve().parent / "golden"
MINI_CHECKOUT = REPO / "fixtures" / "mini_checkout"
RELEASES = ("4.45.2", "5.23.0")
#: releases with a golden diff (``codemod diff`` of the pristine release)
DIFF_RELEASES = ("4.45.2",)
#: diffs larger than this many bytes are stored gzip-compressed
GZIP_OVER = 1_500_000
ROOT_PLACEHOLDER = "<root>"
HINT = "if the change is intended, run `make goldens` (python -m tests.goldens) and review `git diff tests/golden`"
MAX_DIFF_LINES = 60


def golden_path(name: str, suffix: str = ".json") -> Path:
    return GOLDEN_DIR / f"scan-{name}{suffix}"


def diff_golden_path(name: str) -> Path:
    """The diff golden of ``name`` (``fixture`` or a release): the ``.patch.gz`` when that is the one
    stored, else the ``.patch``."""
    compressed = GOLDEN_DIR / f"diff-{name}.patch.gz"
    return compressed if compressed.is_file() else GOLDEN_DIR / f"diff-{name}.patch"


def read_golden(path: Path) -> str:
    data = path.read_bytes()
    return (gzip.decompress(data) if path.name.endswith(".gz") else data).decode("utf-8")


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
    from codemod.analyse.scan import scan
    from codemod.checkout import resolve
    from codemod.publish.report import to_json, to_markdown

    checkout = resolve(root, with_git=False)
    result = scan(checkout, use_cache=use_cache, jobs=1)
    return normalise_json(to_json(result), checkout.root), normalise_text(to_markdown(result), checkout.root)


def fixture_reports(workdir: Path, *, use_cache: bool = False) -> tuple[str, str]:
    """(JSON, Markdown) of the fixture checkout, scanned from a copy below ``workdir``, normalised."""
    return scan_reports(copy_mini_checkout(workdir), use_cache=use_cache)


def diff_output(root: Path) -> tuple[int, str]:
    """(exit code, stdout) of ``codemod diff`` on ``root``, run in process like the tests run it."""
    from typer.testing import CliRunner

    from codemod.cli import app

    result = CliRunner().invoke(app, ["diff", str(root)])
    if result.exit_code not in (0, 1):
        raise RuntimeError(
            f"codemod diff {root} exited {result.exit_code}: {result.output[-2000:]}"
        ) from result.exception
    return result.exit_code, result.stdout


def fixture_diff(workdir: Path) -> str:
    """``codemod diff`` of a copy of the fixture checkout below ``workdir`` (its paths are relative)."""
    return diff_output(copy_mini_checkout(workdir))[1]


def release_diff(version: str) -> str:
    """``codemod diff`` of ``version``'s cached pristine release checkout (downloaded on first use; not modified)."""
    from codemod.fetch import release_checkout

    return diff_output(release_checkout(version))[1]


def tree_diff(old_root: Path, new_root: Path, paths: list[str]) -> str:
    """The unified diff of ``paths`` between two trees, rendered as ``codemod diff`` renders changes
    (so that what ``apply`` wrote can be compared with the diff golden)."""
    from types import SimpleNamespace

    from codemod.transform.apply import unified_diff
    from codemod.transform.rewrite import FileRewrite

    rewrites = tuple(
        FileRewrite(
            path=path,
            old=(old_root / path).read_bytes(),
            new=(new_root / path).read_bytes(),
            encoding=_encoding(old_root / path),
            applied=(),
        )
        for path in sorted(paths)
    )
    return unified_diff(SimpleNamespace(rewrites=rewrites))  # type: ignore[arg-type]  (it reads .rewrites only)


def _encoding(path: Path) -> str:
    import tokenize

    with path.open("rb") as handle:
        return tokenize.detect_encoding(handle.readline)[0]


def release_report(version: str, *, use_cache: bool = True) -> str:
    """The normalised JSON of ``version``'s cached release checkout (downloaded on first use)."""
    from codemod.analyse.scan import scan
    from codemod.checkout import resolve
    from codemod.fetch import release_checkout
    from codemod.publish.report import to_json

    checkout = resolve(release_checkout(version))
    return normalise_json(to_json(scan(checkout, use_cache=use_cache)), checkout.root)


# --------------------------------------------------------------------------------------------- compare


def _shown(path: Path) -> str:
    try:
        return path.resolve().relative_to(REPO).as_posix()
    except ValueError:
        return str(path)


def golden_mismatch(actual: str, path: Path, what: str = "scan") -> str | None:
    """None when ``actual`` equals the golden at ``path`` (a ``.gz`` is decompressed), else a short
    message with a unified diff; ``what`` names the output (``scan``, ``diff``)."""
    if not path.is_file():
        return f"golden {_shown(path)} does not exist; {HINT}"
    expected = read_golden(path)
    if actual == expected:
        return None
    diff = list(
        difflib.unified_diff(
            expected.splitlines(), actual.splitlines(),
            fromfile=f"{_shown(path)} (golden)", tofile=f"current {what}", lineterm="", n=2,
        )
    )  # fmt: skip
    shown = diff[:MAX_DIFF_LINES]
    if len(diff) > MAX_DIFF_LINES:
        shown.append(f"... {len(diff) - MAX_DIFF_LINES} more diff lines")
    return "\n".join([f"{what} output differs from {_shown(path)}; {HINT}", *shown])


# --------------------------------------------------------------------------------------------- refresh


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    old = path.read_text(encoding="utf-8") if path.is_file() else None
    path.write_text(text, encoding="utf-8")
    state = "new" if old is None else ("unchanged" if old == text else "updated")
    print(f"{state:>9}  {_shown(path)}")


def write_diff_golden(name: str, text: str) -> Path:
    """Write the diff golden of ``name``: plain, or gzip-compressed above ``GZIP_OVER`` bytes (the
    other form is removed, so exactly one is stored)."""
    plain, compressed = GOLDEN_DIR / f"diff-{name}.patch", GOLDEN_DIR / f"diff-{name}.patch.gz"
    previous = diff_golden_path(name)
    old = read_golden(previous) if previous.is_file() else None
    data = text.encode("utf-8")
    target, other = (compressed, plain) if len(data) > GZIP_OVER else (plain, compressed)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(gzip.compress(data, compresslevel=9, mtime=0) if target is compressed else data)
    other.unlink(missing_ok=True)
    state = "new" if old is None else ("unchanged" if old == text else "updated")
    print(f"{state:>9}  {_shown(target)}")
    return target


#: every golden: name -> (kind, subject)
GOLDENS = {
    "scan-fixture": ("scan", "fixture"),
    "diff-fixture": ("diff", "fixture"),
    **{f"scan-{v}": ("scan", v) for v in RELEASES},
    **{f"diff-{v}": ("diff", v) for v in DIFF_RELEASES},
}


def main(argv: list[str]) -> int:
    wanted: list[str] = []
    for name in argv or ["fixture", *RELEASES]:
        if name in GOLDENS:
            wanted.append(name)
        elif name == "fixture" or name in RELEASES:
            wanted += [g for g, (_, subject) in GOLDENS.items() if subject == name]
        else:
            choices = ", ".join(["fixture", *RELEASES, *GOLDENS])
            print(f"unknown golden {name!r}: choose from {choices}", file=sys.stderr)
            return 2
    for name in dict.fromkeys(wanted):
        kind, subject = GOLDENS[name]
        if subject == "fixture":
            with tempfile.TemporaryDirectory(prefix="codemod-goldens-") as tmp:
                if kind == "scan":
                    as_json, as_markdown = fixture_reports(Path(tmp))
                    _write(golden_path("fixture"), as_json)
                    _write(golden_path("fixture", ".md"), as_markdown)
                else:
                    write_diff_golden("fixture", fixture_diff(Path(tmp)))
        elif kind == "scan":
            _write(golden_path(subject), release_report(subject))
        else:
            write_diff_golden(subject, release_diff(subject))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
