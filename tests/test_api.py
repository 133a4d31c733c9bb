"""``codemod.api`` as a library user calls it: typed options with defaults, quiet unless given a feedback,
one round trip per function (what it returns, and what it leaves on disk).

Model code comes from private copies of the fixtures (``tests/conftest.py``); nothing here runs a model
or reaches PyPI (``fetch`` and ``verify`` are checked up to what they hand their stages).
"""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
from pathlib import Path

import pytest

import codemod
from codemod import api
from codemod.analyse.classify import Action

from .conftest import FIXTURES, FOREIGN, copy_fixture

GENERIC = "modeling_legacy.py"  # one generic override: deleted
REDUCED = "modeling_copied.py"  # one with a model-specific key: reduced
KEPT = "modeling_past.py"  # one that stays as it is
#: plain mode judges model code outside transformers against a release: the tool's own, offline
BUILT_IN = "built-in"


@pytest.fixture
def tree(tmp_path: Path, codemod_cache: Path) -> Path:
    root = tmp_path / "tree"
    root.mkdir()
    for name in (GENERIC, REDUCED):
        shutil.copy(FOREIGN / name, root / name)
    return root


def source(*paths: Path | str, **options: object) -> api.Source:
    return api.Source(paths, target=BUILT_IN, **options)  # type: ignore[arg-type]


def test_the_api_is_exported() -> None:
    """Everything ``__all__`` names exists, and ``import codemod`` stays light (the api on first use)."""
    assert all(hasattr(api, name) for name in api.__all__)
    assert {"scan", "diff", "apply", "verify", "hooks", "fetch", "Source", "Run", "Edits"} <= set(api.__all__)
    assert codemod.__version__


@pytest.mark.parametrize(
    ("given", "paths"),
    [
        pytest.param("a.py", (Path("a.py"),), id="one-str"),
        pytest.param(Path("a.py"), (Path("a.py"),), id="one-path"),
        pytest.param(["a.py", Path("b")], (Path("a.py"), Path("b")), id="several"),
        pytest.param((), (), id="none: the current directory"),
    ],
)
def test_source_paths(given: object, paths: tuple[Path, ...]) -> None:
    assert api.Source(given).path_list == paths  # type: ignore[arg-type]


def test_scan_is_quiet_by_default(tree: Path, capfd: pytest.CaptureFixture[str]) -> None:
    result = api.scan(source(tree / GENERIC))
    assert [(f.override.class_name, f.action) for f in result.findings] == [("LegacyForCausalLM", Action.DELETE)]
    assert capfd.readouterr() == ("", "")


def test_scan_the_current_directory(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tree)
    result = api.scan(source())
    assert sorted(f.override.file for f in result.findings) == [REDUCED, GENERIC]


def test_diff_then_apply_then_nothing_left(tree: Path) -> None:
    """diff says what apply writes; apply writes it; a second diff finds nothing."""
    _, changes = api.diff(source(tree))
    planned = {r.path: r.new for r in changes.rewrites if r.changed}
    assert sorted(planned) == [REDUCED, GENERIC]
    applied = api.apply(source(tree), allow_dirty=True)
    assert sorted(applied.written) == sorted(planned) and applied.report is None
    assert {path: (tree / path).read_bytes() for path in planned} == planned
    assert not api.diff(source(tree))[1].changed


def test_diff_with_edits(tree: Path) -> None:
    """``Edits(mark=True)`` marks what stays; without it nothing but the migration is written."""
    plain = api.diff(source(tree / REDUCED))[1]
    marked = api.diff(source(tree / REDUCED), edits=api.Edits(mark=True))[1]
    assert [r.path for r in plain.rewrites if r.changed] == [r.path for r in marked.rewrites if r.changed]


def test_mark_marks_what_stays(tree: Path) -> None:
    """The override that stays is written only with ``mark``, and then with its reason."""
    shutil.copy(FOREIGN / KEPT, tree / KEPT)
    plain = {r.path: r.new for r in api.diff(source(tree))[1].rewrites if r.changed}
    marked = {r.path: r.new for r in api.diff(source(tree), edits=api.Edits(mark=True))[1].rewrites if r.changed}
    assert KEPT not in plain and sorted(marked) == sorted([*plain, KEPT])
    assert b"# Overwritten -- " in marked[KEPT]


def test_apply_refuses_a_dirty_tree(tree: Path) -> None:
    subprocess.run(["git", "init", "-q"], cwd=tree, check=True)
    subprocess.run(["git", "add", "."], cwd=tree, check=True)
    env = ["-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(["git", *env, "commit", "-qm", "base"], cwd=tree, check=True)
    (tree / GENERIC).write_text((tree / GENERIC).read_text() + "# a local change\n")
    with pytest.raises(api.ToolError, match="uncommitted changes"):
        api.apply(source(tree))


def test_hooks(mini_checkout: Path) -> None:
    result, changes = api.hooks(api.Source(mini_checkout))
    assert result.index.checkout.root == mini_checkout.resolve()
    assert changes is not None


def test_hooks_mines_what_overrides_share(tmp_path: Path, codemod_cache: Path) -> None:
    """A checkout whose overrides repeat the same code: clusters, each with its members' changes, and the change
    of every applied hook together (what ``apply --hooks`` writes)."""
    root = copy_fixture(FIXTURES / "hooks_checkout", tmp_path / "hooks_checkout")
    result, changes = api.hooks(api.Source(root))
    assert result.index.checkout.root == root.resolve()
    assert changes.clusters and all(c.members for c in changes.clusters)
    assert changes.changes is not None and changes.changes.changed


def test_verify_needs_a_git_tree(tree: Path) -> None:
    """Up to what verification needs: a revision to compare with (a tree without git has none)."""
    with pytest.raises(api.ToolError, match="not a git work tree"):
        api.verify(source(tree))


def test_fetch_hands_the_release_to_the_fetcher(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    calls = []

    def fetch_release(version: str, dest: Path | None = None, *, progress: object = None) -> Path:
        calls.append((version, dest))
        return tmp_path

    monkeypatch.setattr("codemod.fetch.fetch_release", fetch_release)
    assert api.fetch("4.45.2") == tmp_path and calls == [("4.45.2", None)]


def test_run_tools_without_a_checkouts_tools(tree: Path) -> None:
    """A tree of model code has no utils/ to run: nothing is run."""
    applied = api.apply(source(tree / GENERIC), allow_dirty=True)
    assert api.run_tools(applied) == []


def test_release_or_paths(tree: Path) -> None:
    with pytest.raises(api.ToolError, match="not both"):
        api.scan(dataclasses.replace(source(tree), release="4.45.2"))
