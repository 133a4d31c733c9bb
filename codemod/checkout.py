"""Where the code to migrate lives: a checkout, an installed package, a directory, one file or several.

``resolve(path)`` looks at a path and says what it is; ``resolve_paths(paths)`` makes one checkout of
several (files and directories of model code: a tree, as ruff takes paths). Every path the tool reports
is relative to ``Checkout.root`` (the directory given, a single file's directory, or the directory that
several paths share), with forward slashes.
"""

from __future__ import annotations

import dataclasses
import errno
import os
import re
from collections.abc import Sequence
from pathlib import Path

from codemod import git
from codemod.contracts import Vocabulary
from codemod.errors import CodemodError

_VERSION = re.compile(r'^__version__\s*=\s*["\']([^"\']+)["\']', re.MULTILINE)


class CheckoutKind(Vocabulary):
    #: a source checkout (git clone or sdist): ``src/transformers`` below the root
    CHECKOUT = "checkout"
    #: a ``transformers`` package directory, e.g. in site-packages
    PACKAGE = "package"
    #: any other directory of model code (e.g. a model repo with remote code), or several paths of it
    TREE = "tree"
    #: a single file
    FILE = "file"


@dataclasses.dataclass(frozen=True)
class GitState:
    head: str | None  # None for a repository without commits
    branch: str | None
    dirty: bool


@dataclasses.dataclass(frozen=True)
class Checkout:
    root: Path
    kind: CheckoutKind
    #: the ``transformers`` package directory, when there is one
    package_dir: Path | None
    #: ``transformers.__version__`` read from the package's ``__init__.py``
    version: str | None
    #: for ``FILE``: the file itself
    target_file: Path | None = None
    git: GitState | None = None
    #: for ``FILE`` and a tree of several paths: the files to work on (empty: every Python file below the root)
    files: tuple[Path, ...] = ()

    @property
    def is_tree(self) -> bool:
        """Model code outside transformers (a directory of it, or one file): judged against and run on a
        release, not on itself."""
        return self.kind in (CheckoutKind.TREE, CheckoutKind.FILE)

    @property
    def mixin_file(self) -> Path | None:
        if self.package_dir is None:
            return None
        path = self.package_dir / "generation" / "utils.py"
        return path if path.is_file() else None

    @property
    def utils_dir(self) -> Path | None:
        """The checkout's ``utils/`` (check_copies.py, modular_model_converter.py), if it has one."""
        path = self.root / "utils"
        return path if self.kind is CheckoutKind.CHECKOUT and path.is_dir() else None

    @property
    def tests_dir(self) -> Path | None:
        path = self.root / "tests"
        return path if self.kind is CheckoutKind.CHECKOUT and path.is_dir() else None

    def relative(self, path: Path) -> str:
        return path.resolve().relative_to(self.root).as_posix()

    def module_path(self, module: str) -> Path | None:
        """The file of a dotted ``transformers.…`` module in this checkout's package, if it exists."""
        if self.package_dir is None or not module.startswith("transformers."):
            return None
        rel = Path(*module.split(".")[1:])
        for candidate in (self.package_dir / rel.with_suffix(".py"), self.package_dir / rel / "__init__.py"):
            if candidate.is_file():
                return candidate
        return None


def _is_package_dir(path: Path) -> bool:
    return (path / "__init__.py").is_file() and (path / "models").is_dir() and (path / "generation").is_dir()


def _version(package_dir: Path) -> str | None:
    try:
        found = _VERSION.search((package_dir / "__init__.py").read_text(encoding="utf-8"))
    except (OSError, ValueError):  # unreadable, or not UTF-8: no version to tell
        return None
    return found.group(1) if found else None


def git_state(root: Path) -> GitState | None:
    """The git state of ``root``, or None when it is not a git work tree (or git is missing)."""
    if git.output(root, "rev-parse", "--is-inside-work-tree") != "true":
        return None
    status = git.output(root, "status", "--porcelain", "--untracked-files=no")
    return GitState(
        head=git.output(root, "rev-parse", "--verify", "-q", "HEAD"),
        branch=git.output(root, "symbolic-ref", "--short", "-q", "HEAD"),
        dirty=bool(status),
    )


class CheckoutError(CodemodError):
    """PATH is nothing to work on: it does not exist, or it cannot be reached (a symlink loop, no permission)."""


def real_path(path: Path) -> Path:
    """``path`` with every symlink resolved. A loop is an ``OSError`` (ELOOP), as the system reports it:
    ``Path.resolve`` raises ``RuntimeError`` for one before Python 3.13."""
    try:
        return path.resolve()
    except RuntimeError:
        raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), str(path)) from None


def resolve(path: Path, with_git: bool = True) -> Checkout:
    """Say what ``path`` is. Raises ``CheckoutError`` when it does not exist or cannot be reached."""
    given = path.expanduser()
    try:
        os.stat(given)  # follows links: the errno tells a missing path from a loop or a closed directory
        path = real_path(given)
    except FileNotFoundError:
        raise CheckoutError(f"no such file or directory: {os.path.abspath(given)}") from None
    except OSError as error:
        raise CheckoutError(f"cannot read {given}: {(error.strerror or str(error)).lower()}") from None
    if path.is_file():
        return Checkout(path.parent, CheckoutKind.FILE, None, None, target_file=path, files=(path,))
    state = git_state(path) if with_git else None
    if _is_package_dir(path / "src" / "transformers"):
        package = path / "src" / "transformers"
        return Checkout(path, CheckoutKind.CHECKOUT, package, _version(package), git=state)
    if _is_package_dir(path):
        return Checkout(path, CheckoutKind.PACKAGE, path, _version(path), git=state)
    return Checkout(path, CheckoutKind.TREE, None, None, git=state)


def resolve_paths(paths: Sequence[Path], with_git: bool = True) -> Checkout:
    """One checkout of ``paths``: one path is what ``resolve`` says it is; several (files and directories of
    model code) are a tree rooted where they meet, holding their Python files only. A transformers checkout
    or package is given alone: it is judged against its own mixin, which a tree of parts of it would not be."""
    if len(paths) == 1:
        return resolve(paths[0], with_git)
    parts = [resolve(path, with_git=False) for path in paths]
    for part in parts:
        if part.kind in (CheckoutKind.CHECKOUT, CheckoutKind.PACKAGE):
            raise CheckoutError(f"{part.root} is a transformers {part.kind.value}: give it as the only path")
    from codemod.sources import python_files  # sources reads checkouts: imported when needed, not at the top

    files = sorted(dict.fromkeys(file for part in parts for file in python_files(part)))
    root = Path(os.path.commonpath([part.root for part in parts]))
    return Checkout(root, CheckoutKind.TREE, None, None, git=git_state(root) if with_git else None, files=tuple(files))
