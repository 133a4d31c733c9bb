"""The release a scan is judged against: which ``transformers`` the names of a class's bases mean.

A transformers checkout (or installed package) is judged against itself. Any other tree or file of
model code is judged against a release chosen with ``--target VERSION`` (its wheel fetched from
PyPI and cached) or ``--mixin PATH`` (a checkout or an installed package); without either, against
the transformers it runs with (``for_tree``): the highest release its metadata allows, else the one
installed beside this tool, else the newest release known. ``--target built-in`` asks for the generic
implementation this tool ships (``rules/generic_mixin.py``), and then a base imported from
``transformers`` other than ``GenerationMixin`` and ``PreTrainedModel`` cannot be resolved.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from codemod.checkout import Checkout, CheckoutError, CheckoutKind, resolve
from codemod.contracts import Vocabulary
from codemod.errors import CodemodError
from codemod.sources import MIXIN_CLASS, READ_ERRORS, read_source

if TYPE_CHECKING:  # fetching is imported where a release is fetched
    from codemod.fetch import Progress

PRETRAINED_CLASS = "PreTrainedModel"

#: ``--target built-in``: the generic implementation this tool ships, asked for by name
BUILT_IN_NAME = "built-in"

#: the newest release this tool knows (its goldens' release): a tree's target when nothing else says one
NEWEST_KNOWN = "5.23.0"


class TargetOrigin(Vocabulary):
    #: the scanned checkout or package itself
    CHECKOUT = "checkout"
    #: ``--target VERSION``: a release fetched from PyPI
    RELEASE = "release"
    #: ``--mixin PATH``: a checkout or an installed package given by path
    PATH = "path"
    #: no release: the generic implementation this tool ships
    BUILT_IN = "built-in"


@dataclasses.dataclass(frozen=True)
class Target:
    origin: TargetOrigin
    #: the ``transformers`` package directory the names resolve in (None: built-in)
    package_dir: Path | None = None
    #: its ``__version__`` (None: built-in, or a package that does not say)
    release: str | None = None
    #: why a tree is judged against this release when no option named it (``for_tree``); "" otherwise
    basis: str = ""

    @property
    def key(self) -> str:
        """What identifies the target in a cache key."""
        return f"{self.origin.value}:{self.release}:{self.package_dir}"

    @property
    def mixin_file(self) -> Path | None:
        if self.package_dir is None:
            return None
        path = self.package_dir / "generation" / "utils.py"
        return path if path.is_file() else None

    def describe(self) -> str:
        if self.origin is TargetOrigin.BUILT_IN:
            return "the built-in generic implementation (rules/generic_mixin.py, 4.46 – 5.2 style)"
        name = f"transformers {self.release}" if self.release else f"transformers at {self.package_dir}"
        return {
            TargetOrigin.CHECKOUT: f"this checkout ({name})",
            TargetOrigin.RELEASE: f"{name} ({self.basis or '--target'})",
            TargetOrigin.PATH: f"{name} (--mixin {self.package_dir})",
        }[self.origin]


class TargetError(CodemodError):
    """A target that cannot be used; the message says why."""


def for_checkout(checkout: Checkout) -> Target:
    """The default: a checkout or package is its own target; anything else the built-in mixin."""
    if checkout.kind in (CheckoutKind.CHECKOUT, CheckoutKind.PACKAGE) and checkout.package_dir is not None:
        return Target(TargetOrigin.CHECKOUT, checkout.package_dir, checkout.version)
    return Target(TargetOrigin.BUILT_IN)


def from_release(version: str, progress: Progress | None = None, basis: str = "") -> Target:
    """``--target VERSION``: the release's package, fetched once (a wheel) and cached; ``--target built-in``: the
    generic implementation this tool ships."""
    from codemod.fetch import FetchError, fetch_package

    if version == BUILT_IN_NAME:
        return Target(TargetOrigin.BUILT_IN)
    try:
        package = fetch_package(version, progress=progress)
    except FetchError as error:
        raise TargetError(str(error)) from error
    return Target(TargetOrigin.RELEASE, package, version, basis)


@dataclasses.dataclass(frozen=True)
class Sources:
    """Where ``for_tree`` learns releases: the ones PyPI lists (none when it cannot be asked), and the one
    installed beside this tool (None: none)."""

    releases: Callable[[], Iterable[str]]
    installed: Callable[[], str | None]


@functools.cache
def _released() -> tuple[str, ...]:
    """The releases PyPI lists, asked once a process (``pip index versions``, a subprocess over the network)."""
    from codemod.fetch import _released_versions

    return tuple(_released_versions() or ())


def _installed() -> str | None:
    from importlib import metadata

    try:
        return metadata.version("transformers")
    except metadata.PackageNotFoundError:
        return None


SOURCES = Sources(_released, _installed)

#: why a tree runs with the transformers installed beside this tool
INSTALLED = "the transformers installed beside this tool"


def for_tree(checkout: Checkout, sources: Sources = SOURCES) -> tuple[str, str]:
    """The release a tree or file runs with, and why: the one its metadata pins, or the highest it allows
    (``codemod.analyse.declared``); else the one installed beside this tool; else the newest release known
    (PyPI's, or ``NEWEST_KNOWN`` when PyPI cannot be asked)."""
    from codemod.analyse.declared import declared

    found = declared(checkout.target_file or checkout.root)
    why = found.describe(checkout.root) if found is not None else ""
    if found is not None and (pinned := found.pinned()) is not None:
        return pinned, why
    installed = sources.installed()
    if found is None and installed is not None:
        return installed, INSTALLED
    # PyPI is asked only here, where neither a pin nor (with nothing declared) the installed release decides
    releases = (*sources.releases(), NEWEST_KNOWN)
    if found is not None:
        highest = found.highest(releases)
        if highest is not None:
            return highest, f"{why}: the highest release it allows"
        if installed is not None and found.allows(installed):
            return installed, INSTALLED
    return _highest(releases), "the newest release known" + (f" ({why} allows none)" if found is not None else "")


def _highest(releases: Iterable[str]) -> str:
    from codemod.analyse.declared import highest_allowed

    return highest_allowed("", releases) or NEWEST_KNOWN


def _inside_transformers(root: Path) -> bool:
    """Whether ``root`` lies in a transformers checkout (``src/transformers``) or package (``transformers/``)."""
    for folder in (root.resolve(), *root.resolve().parents):
        if folder.name == "transformers" and (folder / "generation" / "utils.py").is_file():
            return True
        if (folder / "src" / "transformers" / "generation" / "utils.py").is_file():
            return True
    return False


def default_target(checkout: Checkout, progress: Progress | None = None, sources: Sources = SOURCES) -> Target:
    """What a scan without ``--target`` or ``--mixin`` is judged against: a checkout or package itself; a tree or
    file the release it runs with (``for_tree``), fetched once and cached."""
    if not checkout.is_tree:
        return for_checkout(checkout)
    if _inside_transformers(checkout.root):
        # transformers' own model code given as a file or a folder: it runs with the checkout around it, not a
        # release to fetch; judged as before, against the built-in implementation
        return Target(TargetOrigin.BUILT_IN)
    version, why = for_tree(checkout, sources)
    try:
        return from_release(version, progress, basis=f"runs with it: {why}")
    except TargetError as error:
        raise TargetError(
            f"{error} (transformers {version} is what the tree runs with: {why}); "
            "give --target VERSION, or --target built-in for the generic implementation this tool ships"
        ) from error


def from_path(path: Path) -> Target:
    """``--mixin PATH``: a transformers checkout or an installed ``transformers`` package directory."""
    try:
        found = resolve(path, with_git=False)
    except CheckoutError as error:
        raise TargetError(f"--mixin: no such directory: {path}") from error
    if found.package_dir is None:
        raise TargetError(f"--mixin: {path} is neither a transformers checkout nor a transformers package directory")
    return Target(TargetOrigin.PATH, found.package_dir, found.version)


def pretrained_model_generative(target: Target) -> bool | None:
    """Whether the target's ``PreTrainedModel`` is a ``GenerationMixin`` (until 4.51; not from 4.52 on),
    read from its ``modeling_utils.py``; None when there is no package to read (built-in) or no class."""
    if target.package_dir is None:
        return None
    try:
        tree = ast.parse(read_source(target.package_dir / "modeling_utils.py"))
    except (*READ_ERRORS, ValueError):
        return None
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == PRETRAINED_CLASS:
            names = {ast.unparse(b).rsplit(".", 1)[-1] for b in node.bases}
            return MIXIN_CLASS in names
    return None
