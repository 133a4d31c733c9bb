"""Shared test fixtures. Several test modules use these; add new fixtures below, keep the existing ones."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from hypothesis import settings

# Property tests explore new inputs on every developer run (that is how they find bugs); in CI
# (``CI`` set, as .ci/run and most CI services do) they replay the same examples, so a landing
# never fails on a draw that an earlier run did not make. A failure found locally becomes a test.
settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI"):
    settings.load_profile("ci")

REPO = Path(__file__).resolve().parent.parent
#: the hand-written fixture trees (see fixtures/README.md)
FIXTURES = REPO / "fixtures"
MINI_CHECKOUT = FIXTURES / "mini_checkout"
REMOTE_CODE = FIXTURES / "remote_code"


def copy_fixture(source: Path, dest: Path) -> Path:
    """Copy a fixture tree to ``dest`` (tests never scan, or write into, the repository's own copy)."""
    shutil.copytree(source, dest, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    return dest


@pytest.fixture
def codemod_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh, empty ``CODEMOD_CACHE_DIR`` for this test (scan and facts caches start cold)."""
    path = tmp_path_factory.mktemp("codemod-cache")
    monkeypatch.setenv("CODEMOD_CACHE_DIR", str(path))
    return path


@pytest.fixture
def mini_checkout(tmp_path: Path, codemod_cache: Path) -> Path:
    """A private copy of ``fixtures/mini_checkout``, scanned with a private cache dir."""
    return copy_fixture(MINI_CHECKOUT, tmp_path / "mini_checkout")


@pytest.fixture
def remote_code(tmp_path: Path, codemod_cache: Path) -> Path:
    """A private copy of ``fixtures/remote_code``, scanned with a private cache dir."""
    return copy_fixture(REMOTE_CODE, tmp_path / "remote_code")


FOREIGN = FIXTURES / "foreign"


@pytest.fixture
def foreign(tmp_path: Path, codemod_cache: Path) -> Path:
    """A private copy of ``fixtures/foreign`` (a tree of third-party model code), as ``<tmp>/foreign``."""
    return copy_fixture(FOREIGN, tmp_path / "foreign")


def make_target_package(dest: Path, version: str, *, pretrained_generative: bool) -> Path:
    """A stand-in ``transformers`` package to judge trees against (``--mixin``): this tool's own generic
    implementation as its mixin, and a ``PreTrainedModel`` that is a GenerationMixin (as until 4.51) or not
    (as from 4.52). Returns the package directory."""
    from codemod.rules.generic_mixin import MODULE_SOURCE

    package = dest / "transformers"
    files = {
        "__init__.py": f'__version__ = "{version}"\n',
        "models/__init__.py": "",
        "generation/__init__.py": "from .utils import GenerationMixin\n",
        "generation/utils.py": "import inspect\n\nimport torch\n\n\n" + MODULE_SOURCE,
        "utils/__init__.py": "class PushToHubMixin:\n    def push_to_hub(self, repo_id):\n        raise NotImplementedError\n",
        "modeling_utils.py": (
            "from torch import nn\n\nfrom .generation import GenerationMixin\nfrom .utils import PushToHubMixin\n\n\n"
            f"class PreTrainedModel(nn.Module, {'GenerationMixin, ' if pretrained_generative else ''}PushToHubMixin):\n"
            "    base_model_prefix = ''\n"
        ),
    }
    for rel, text in files.items():
        path = package / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return package


@pytest.fixture(scope="session")
def verify_env() -> tuple[Path, Path]:
    """(python, src) of the verification environment for the 4.45.2 release (made once per machine)."""
    from codemod.checkout import resolve
    from codemod.environment import ensure_environment
    from codemod.fetch import release_checkout

    checkout = resolve(release_checkout("4.45.2"))
    environment = ensure_environment(checkout)
    assert checkout.package_dir is not None
    return environment.python, checkout.package_dir.parent
