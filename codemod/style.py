"""The line length a file's project formats its code to, read from its ruff or black configuration.

An edge (it reads files). The code this tool writes (a reduced body, a hook's attribute, a slimmed signature) is laid
out at this length (``codemod.transform.formatting``), so that a migrated file passes its own project's
``ruff format --check``: transformers' is 119 columns, a remote-code repository or a library built on transformers
may format at 88 or 100.

The configuration is found as ruff finds its own: the nearest directory above the file with a ``ruff.toml`` or
``.ruff.toml`` (its ``line-length``), or a ``pyproject.toml`` with a ``[tool.ruff]`` section (its ``line-length``,
else ruff's default, 88), or else with a ``[tool.black]`` section (black's ``line-length``, else black's default,
88). Where no directory has one, transformers' 119: model code outside transformers is mostly copied from it.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from codemod.checkout import Checkout, CheckoutKind

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10 (black depends on tomli there)
    import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]

#: transformers' ``[tool.ruff] line-length``, for files under no configuration
DEFAULT_LINE_LENGTH = 119
#: ruff's and black's own default, for a configuration that names no length
TOOL_DEFAULT = 88


def _read(path: Path) -> Mapping[str, Any] | None:
    try:
        document: dict[str, Any] = tomllib.loads(path.read_text(encoding="utf-8"))
        return document
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None  # unreadable or not TOML: as ruff, look further up


def _length(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


@functools.lru_cache(maxsize=512)
def configured_line_length(directory: Path) -> int | None:
    """The line length ``directory``'s own configuration sets, None where it has none (look further up). Read once
    per directory: a migration asks for every file it writes, and most share their directories' configuration."""
    for name in ("ruff.toml", ".ruff.toml"):
        candidate = directory / name
        if candidate.is_file():
            document = _read(candidate)
            if document is not None:
                return _length(document.get("line-length")) or TOOL_DEFAULT
    pyproject = directory / "pyproject.toml"
    if pyproject.is_file():
        tools = (_read(pyproject) or {}).get("tool")
        if isinstance(tools, dict):
            for tool in ("ruff", "black"):
                section = tools.get(tool)
                if isinstance(section, dict):
                    return _length(section.get("line-length")) or TOOL_DEFAULT
    return None


def line_length(root: Path, path: str, *, above_root: bool = True) -> int:
    """The line length of ``path`` (relative to ``root``): the nearest configuration above it, or 119.
    ``above_root`` False stops the search at ``root``: an installed transformers package is transformers' code,
    whatever project its environment sits in."""
    root = root.resolve()
    directory = (root / path).resolve().parent
    for candidate in (directory, *directory.parents):
        found = configured_line_length(candidate)
        if found is not None:
            return found
        if candidate == root and not above_root:
            break
    return DEFAULT_LINE_LENGTH


def checkout_line_length(checkout: Checkout, path: str) -> int:
    """The line length of ``path`` in ``checkout``: an installed transformers package's files are transformers' code
    (the search stops at the package); a checkout's, a tree's or a file's, its nearest configuration's."""
    return line_length(checkout.root, path, above_root=checkout.kind is not CheckoutKind.PACKAGE)
