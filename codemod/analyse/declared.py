"""Which ``transformers`` a tree of model code says it runs with: the requirement its metadata declares.

A library built on transformers names it among its dependencies; a tree outside transformers is judged
against the release that requirement allows (``codemod.analyse.target.for_tree``). Read, in this order,
from the tree's directory or the nearest one above it that has any of them (not above its git root):

- ``pyproject.toml``: ``[project] dependencies``;
- ``requirements.txt``: one requirement a line (options, ``-r`` includes and URLs skipped);
- ``setup.cfg``: ``[options] install_requires``;
- ``setup.py``: ``install_requires=`` given to ``setup()`` as a list of string literals, or a module-level
  name bound to one (anything computed is not read).

Nothing is imported or run. A requirement with an environment marker counts as if the marker held.
"""

from __future__ import annotations

import ast
import configparser
import dataclasses
import os
import re
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

PACKAGE = "transformers"

#: the metadata files read, in the order they are asked
METADATA = ("pyproject.toml", "requirements.txt", "setup.cfg", "setup.py")


@dataclasses.dataclass(frozen=True)
class Declared:
    """A requirement on ``transformers`` found in a metadata file."""

    #: the file it is declared in
    file: Path
    #: the specifier as written (``>=4.40,<4.47``; empty: any release)
    specifier: str

    def allows(self, version: str) -> bool:
        try:
            return Version(version) in SpecifierSet(self.specifier)
        except InvalidVersion:
            return False

    def pinned(self) -> str | None:
        """The release an exact pin (``==4.46.3``, ``===4.46.3``) names, else None."""
        match = re.fullmatch(r"===?\s*([0-9][0-9A-Za-z.+-]*)", self.specifier.strip())
        return match[1] if match and "*" not in match[1] else None

    def highest(self, releases: Iterable[str]) -> str | None:
        """The highest of ``releases`` (final releases only) that the specifier allows."""
        return highest_allowed(self.specifier, releases)

    def describe(self, root: Path) -> str:
        """What the file says, named relative to the tree's root (``../pyproject.toml`` for a project above it)."""
        where = Path(os.path.relpath(self.file, root)).as_posix()
        verb = "pins" if self.pinned() is not None else "requires"
        return f"{where} {verb} {PACKAGE}{self.specifier or ' (any release)'}"


def highest_allowed(specifier: str, releases: Iterable[str]) -> str | None:
    """The highest of ``releases`` (final releases only) that ``specifier`` allows ("": any)."""
    allowed = [v for v in _finals(releases) if Version(v) in SpecifierSet(specifier)]
    return max(allowed, key=Version, default=None)


def _finals(releases: Iterable[str]) -> list[str]:
    out = []
    for text in releases:
        try:
            version = Version(text)
        except InvalidVersion:
            continue
        if not (version.is_prerelease or version.is_devrelease):
            out.append(text)
    return out


def declared(start: Path) -> Declared | None:
    """The requirement on ``transformers`` declared for the tree at ``start`` (a directory or a file), or None."""
    directory = start if start.is_dir() else start.parent
    for folder in _upwards(directory.resolve()):
        files = [folder / name for name in METADATA if (folder / name).is_file()]
        for file in files:
            found = _from_file(file)
            if found is not None:
                return found
        if files or (folder / ".git").exists():
            return None  # the project's own metadata says nothing about transformers
    return None


def _upwards(folder: Path) -> Iterable[Path]:
    yield folder
    yield from folder.parents


def _from_file(file: Path) -> Declared | None:
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    readers = {
        "pyproject.toml": _pyproject,
        "requirements.txt": _requirements_txt,
        "setup.cfg": _setup_cfg,
        "setup.py": _setup_py,
    }
    specifier = _transformers(readers[file.name](text))
    return Declared(file, specifier) if specifier is not None else None


def _transformers(lines: Sequence[str]) -> str | None:
    """The specifier of the first requirement on ``transformers`` among ``lines`` (None: none there)."""
    for line in lines:
        try:
            requirement = Requirement(line.strip())
        except InvalidRequirement:
            continue
        if canonicalize_name(requirement.name) == PACKAGE and requirement.url is None:
            return str(requirement.specifier)
    return None


def _pyproject(text: str) -> list[str]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10 (black depends on tomli there)
        import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError:
        return []
    dependencies = document.get("project", {}).get("dependencies", [])
    return [d for d in dependencies if isinstance(d, str)] if isinstance(dependencies, list) else []


def _requirements_txt(text: str) -> list[str]:
    lines = (line.split(" #", 1)[0].strip() for line in text.splitlines())
    return [line for line in lines if line and not line.startswith(("#", "-"))]


def _setup_cfg(text: str) -> list[str]:
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(text)
    except configparser.Error:
        return []
    value = parser.get("options", "install_requires", fallback="")
    return [line for line in (part.strip() for part in re.split(r"[\n;]", value)) if line]


def _setup_py(text: str) -> list[str]:
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return []
    names: dict[str, ast.expr] = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
            names[node.targets[0].id] = node.value
    for call in ast.walk(tree):
        if isinstance(call, ast.Call) and _called(call) == "setup":
            for keyword in call.keywords:
                if keyword.arg == "install_requires":
                    value = keyword.value
                    return _string_list(names.get(value.id, value) if isinstance(value, ast.Name) else value)
    return []


def _called(call: ast.Call) -> str:
    function = call.func
    return (
        function.attr if isinstance(function, ast.Attribute) else function.id if isinstance(function, ast.Name) else ""
    )


def _string_list(node: ast.expr) -> list[str]:
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, RecursionError):
        return []
    return [v for v in value if isinstance(v, str)] if isinstance(value, (list, tuple)) else []
