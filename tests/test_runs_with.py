"""A tree without ``--target`` is judged against the transformers it runs with (``codemod.analyse.target.for_tree``).

The release its metadata pins, or the highest it allows (``codemod.analyse.declared``: pyproject.toml, requirements.txt,
setup.cfg, setup.py), else the one installed beside the tool, else the newest release known; ``--target built-in`` asks
for the generic implementation the tool ships; a transformers checkout is judged against itself. The releases PyPI lists
and the installed one are given to ``for_tree`` (``Sources``), so nothing here needs the network.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from codemod.analyse.declared import declared, highest_allowed
from codemod.analyse.target import (
    BUILT_IN_NAME,
    NEWEST_KNOWN,
    Sources,
    TargetOrigin,
    default_target,
    for_tree,
    from_release,
)
from codemod.checkout import resolve

MODEL = """
class ToyForCausalLM(ToyPreTrainedModel):
    def prepare_inputs_for_generation(self, input_ids, **kwargs):
        return {"input_ids": input_ids}
"""

RELEASES = ("4.44.2", "4.45.2", "4.46.3", "4.47.0rc1", "4.57.1", "5.0.0", "5.23.0")


def tree(root: Path, files: dict[str, str]) -> Path:
    """A tree of model code with these metadata files (name -> text), and a git root at ``root``."""
    (root / ".git").mkdir(parents=True)
    for name, text in {"pkg/modeling_toy.py": MODEL, **files}.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return root


def sources(releases: tuple[str, ...] = RELEASES, installed: str | None = None) -> Sources:
    return Sources(lambda: releases, lambda: installed)


@pytest.mark.parametrize(
    ("files", "specifier"),
    [
        pytest.param(
            {
                "pyproject.toml": """
                [project]
                name = "toy"
                dependencies = ["torch>=2", "transformers[torch]>=4.40,<4.47"]
                """
            },
            "<4.47,>=4.40",
            id="pyproject",
        ),
        pytest.param(
            {"requirements.txt": "# pinned\n-r base.txt\ntorch\ntransformers==4.46.3  # the tested one\n"},
            "==4.46.3",
            id="requirements",
        ),
        pytest.param(
            {"setup.cfg": "[options]\ninstall_requires =\n    torch\n    transformers>=4.38\n"},
            ">=4.38",
            id="setup-cfg",
        ),
        pytest.param(
            {
                "setup.py": 'from setuptools import setup\nsetup(name="toy", install_requires=["Transformers ~= 4.45.0"])\n'
            },
            "~=4.45.0",
            id="setup-py",
        ),
        pytest.param(
            {
                "setup.py": 'import setuptools\nREQUIRED = ["transformers"]\nsetuptools.setup(install_requires=REQUIRED)\n'
            },
            "",
            id="setup-py-a-name-any-release",
        ),
        # the first file that names transformers: pyproject.toml says nothing of it, requirements.txt does
        pytest.param(
            {"pyproject.toml": '[project]\ndependencies = ["torch"]\n', "requirements.txt": "transformers<5\n"},
            "<5",
            id="pyproject-silent-requirements-speaks",
        ),
    ],
)
def test_the_declared_requirement_is_read_from_the_metadata(
    tmp_path: Path, files: dict[str, str], specifier: str
) -> None:
    root = tree(tmp_path / "repo", files)
    found = declared(root / "pkg")
    assert found is not None
    assert found.specifier == specifier


@pytest.mark.parametrize(
    ("files", "why"),
    [
        pytest.param({}, "no metadata at all", id="none"),
        pytest.param(
            {"pyproject.toml": '[project]\ndependencies = ["torch"]\n'}, "transformers not named", id="silent"
        ),
        pytest.param(
            {"setup.py": "from setuptools import setup\nsetup(install_requires=read_requirements())\n"},
            "computed, not read",
            id="setup-py-computed",
        ),
        pytest.param({"requirements.txt": "git+https://example.org/transformers.git\n"}, "a URL", id="url"),
        pytest.param({"pyproject.toml": "[project\n"}, "does not parse", id="broken-toml"),
    ],
)
def test_no_requirement_is_declared(tmp_path: Path, files: dict[str, str], why: str) -> None:
    root = tree(tmp_path / "repo", files)
    assert declared(root / "pkg") is None, why


def test_metadata_above_the_git_root_is_not_read(tmp_path: Path) -> None:
    (tmp_path / "requirements.txt").write_text("transformers==4.46.3\n", encoding="utf-8")
    root = tree(tmp_path / "repo", {})
    assert declared(root / "pkg") is None


def test_the_nearest_metadata_wins(tmp_path: Path) -> None:
    root = tree(tmp_path / "repo", {"requirements.txt": "transformers==4.46.3\n", "pkg/requirements.txt": "torch\n"})
    assert declared(root / "pkg") is None  # pkg/ has metadata of its own, which names no transformers


def test_highest_allowed_skips_prereleases() -> None:
    assert highest_allowed(">=4.46,<4.48", RELEASES) == "4.46.3"
    assert highest_allowed("", RELEASES) == "5.23.0"
    assert highest_allowed(">=6", RELEASES) is None


@pytest.mark.parametrize(
    ("files", "installed", "releases", "version", "why"),
    [
        pytest.param({"requirements.txt": "transformers==4.45.2\n"}, "5.0.0", RELEASES, "4.45.2", "pins", id="pinned"),
        pytest.param(
            {"requirements.txt": "transformers>=4.40,<4.47\n"}, None, RELEASES, "4.46.3", "highest", id="range"
        ),
        # nothing declared: the installed one, else the newest known
        pytest.param({}, "4.57.1", RELEASES, "4.57.1", "installed", id="installed"),
        pytest.param({}, None, RELEASES, "5.23.0", "newest", id="newest"),
        # PyPI cannot be asked: the newest this tool knows
        pytest.param({}, None, (), NEWEST_KNOWN, "newest", id="offline"),
        # a range no known release satisfies (offline), but the installed one does
        pytest.param(
            {"requirements.txt": "transformers<4.50\n"}, "4.46.3", (), "4.46.3", "installed", id="offline-range"
        ),
        # the installed one outside the declared range is not what the tree runs with
        pytest.param(
            {"requirements.txt": "transformers<4.50\n"}, "5.0.0", (), NEWEST_KNOWN, "allows none", id="outside"
        ),
    ],
)
def test_the_release_a_tree_runs_with(
    tmp_path: Path, files: dict[str, str], installed: str | None, releases: tuple[str, ...], version: str, why: str
) -> None:
    root = tree(tmp_path / "repo", files)
    found, basis = for_tree(resolve(root / "pkg", with_git=False), sources(releases, installed))
    assert (found, why in basis) == (version, True), basis


def unasked() -> tuple[str, ...]:
    raise AssertionError("PyPI is asked nothing (a pip subprocess over the network)")


@pytest.mark.parametrize(
    ("files", "installed", "version"),
    [
        pytest.param({"requirements.txt": "transformers==4.45.2\n"}, None, "4.45.2", id="a pin decides"),
        pytest.param({}, "4.57.1", "4.57.1", id="nothing declared, the installed one decides"),
    ],
)
def test_pypi_is_asked_only_where_its_releases_decide(
    tmp_path: Path, files: dict[str, str], installed: str | None, version: str
) -> None:
    root = tree(tmp_path / "repo", files)
    found, _ = for_tree(resolve(root / "pkg", with_git=False), Sources(unasked, lambda: installed))
    assert found == version


def test_a_single_file_reads_the_metadata_of_its_project(tmp_path: Path) -> None:
    root = tree(tmp_path / "repo", {"pyproject.toml": '[project]\ndependencies = ["transformers==4.46.3"]\n'})
    version, basis = for_tree(resolve(root / "pkg" / "modeling_toy.py", with_git=False), sources())
    assert (version, basis) == ("4.46.3", "../pyproject.toml pins transformers==4.46.3")


def test_built_in_is_asked_for_by_name() -> None:
    target = from_release(BUILT_IN_NAME)
    assert (target.origin, target.package_dir, target.release) == (TargetOrigin.BUILT_IN, None, None)


def test_a_checkout_is_judged_against_itself(mini_checkout: Path) -> None:
    target = default_target(resolve(mini_checkout, with_git=False), sources=Sources(unasked, lambda: None))
    assert target.origin is TargetOrigin.CHECKOUT


def test_a_release_that_cannot_be_fetched_says_what_to_give(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from codemod import fetch
    from codemod.analyse.target import TargetError

    def offline(version: str, **_: object) -> Path:
        raise fetch.FetchError(f"network failure while downloading transformers {version}")

    monkeypatch.setattr(fetch, "fetch_package", offline)
    root = tree(tmp_path / "repo", {"requirements.txt": "transformers==4.46.3\n"})
    with pytest.raises(TargetError, match=r"requirements.txt pins transformers==4.46.3\); give --target VERSION"):
        default_target(resolve(root / "pkg", with_git=False), sources=sources())


def test_transformers_own_model_code_keeps_the_built_in_default(mini_checkout: Path) -> None:
    """A file or folder inside a transformers checkout runs with that checkout: nothing is fetched for it."""
    otter = mini_checkout / "src" / "transformers" / "models" / "otter"
    for path in (otter, otter / "modeling_otter.py"):
        target = default_target(resolve(path, with_git=False), sources=Sources(unasked, lambda: None))
        assert target.origin is TargetOrigin.BUILT_IN
