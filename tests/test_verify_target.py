"""Which release ``verify`` and ``apply --verify`` run a tree's code on without ``--target``, and that nothing is
built when nothing is left to verify.

The runs stop where verification would start (``migrate.run_migration_on`` and ``session.verify_change`` are
replaced, ``release_environment`` fails the test if called): no model runs. The tree pins a release; its wheel
is fetched once per machine (``network``) and handed to the scan from there.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from codemod import api, fetch
from codemod.analyse.target import TargetError

from .conftest import FOREIGN

pytestmark = pytest.mark.network

PINNED = "4.46.3"
GENERIC = "modeling_legacy.py"  # one generic override: deleted
KEPT = "modeling_past.py"  # one that stays as it is


class Stop(Exception):
    """Raised where verification would start: what it was handed is what the test asks about."""


@pytest.fixture
def package(monkeypatch: pytest.MonkeyPatch) -> Path:
    """The pinned release's package from this machine's cache (fetched there once), whatever cache dir the test
    has; any other release cannot be fetched."""
    found = fetch.fetch_package(PINNED)

    def fetch_package(version: str, **_: object) -> Path:
        if version != PINNED:
            raise fetch.FetchError(f"no transformers {version} on PyPI")
        return found

    monkeypatch.setattr(fetch, "fetch_package", fetch_package)
    return found


@pytest.fixture
def nothing_built(monkeypatch: pytest.MonkeyPatch) -> None:
    def release_environment(version: str, *args: object, **kwargs: object) -> Any:
        raise AssertionError(f"an environment for transformers {version} was built")

    monkeypatch.setattr("codemod.verify.session.release_environment", release_environment)


def _repository(root: Path, files: tuple[str, ...], pin: str = PINNED) -> Path:
    root.mkdir()
    for name in files:
        shutil.copy(FOREIGN / name, root / name)
    (root / "requirements.txt").write_text(f"torch\ntransformers=={pin}\n", encoding="utf-8")
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "b"]):
        subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)
    return root


def test_diff_apply_verify_and_verify_run_a_pinned_tree_on_its_pin(
    tmp_path: Path, codemod_cache: Path, package: Path, nothing_built: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One set of facts: the release diff judges the tree against is the one apply --verify and verify run it on
    (apply --verify forced 4.46.3 on every tree, whatever it pinned)."""
    root = _repository(tmp_path / "tree", (GENERIC,))
    diffed, changes = api.diff(api.Source(root))
    assert diffed.profile.target is not None and diffed.profile.target.release == PINNED
    assert changes.changed
    handed: dict[str, Any] = {}

    def run_migration_on(checkout: object, options: object, verifying: Any, **kwargs: Any) -> Any:
        handed["apply"] = (verifying.target, kwargs["scanned"].profile.target.release)
        raise Stop

    def verify_change(checkout: object, targets: object, *, options: Any, **kwargs: Any) -> Any:
        handed["verify"] = options.target
        raise Stop

    monkeypatch.setattr("codemod.migrate.run_migration_on", run_migration_on)
    monkeypatch.setattr("codemod.verify.session.verify_change", verify_change)
    with pytest.raises(Stop):
        api.apply(api.Source(root), run=api.Run())
    with pytest.raises(Stop):
        api.verify(api.Source(root))
    assert handed == {"apply": (PINNED, PINNED), "verify": PINNED}


@pytest.mark.parametrize("command", ["apply", "verify"])
def test_a_pin_to_a_release_that_does_not_exist_fails_before_anything_is_built(
    tmp_path: Path, codemod_cache: Path, package: Path, nothing_built: None, command: str
) -> None:
    root = _repository(tmp_path / "tree", (GENERIC,), pin="4.99.0")
    with pytest.raises(TargetError, match=r"4\.99\.0 is what the tree runs with: requirements.txt pins"):
        if command == "apply":
            api.apply(api.Source(root), run=api.Run())
        else:
            api.verify(api.Source(root))


@pytest.mark.parametrize(
    ("options", "run"),
    [
        pytest.param({"target": "built-in"}, api.Run(), id="target"),
        pytest.param({}, api.Run(from_release="built-in"), id="from"),
    ],
)
def test_built_in_is_no_release_to_verify_on(
    tmp_path: Path, codemod_cache: Path, package: Path, nothing_built: None, options: dict[str, str], run: api.Run
) -> None:
    root = _repository(tmp_path / "tree", (GENERIC,))
    with pytest.raises(api.ToolError, match="built-in is none"):
        api.verify(api.Source(root, **options), run)  # type: ignore[arg-type]


@pytest.mark.parametrize("release", [None, "4.45.2"], ids=["on the target", "from another release"])
def test_nothing_is_built_when_nothing_is_left_to_verify(
    tmp_path: Path, codemod_cache: Path, package: Path, nothing_built: None, release: str | None
) -> None:
    """An override that stays, or a working tree like its base: no class to run, no environment to build (the
    issue measured 209-277 s of building for such trees)."""
    root = _repository(tmp_path / "tree", (KEPT,))
    applied = api.apply(api.Source(root), run=api.Run(from_release=release))
    assert applied.report is not None and applied.report.verdicts == () and not applied.written
    report = api.verify(api.Source(root), api.Run(from_release=release))
    assert report.verdicts == () and report.targets == ()
