"""Which files of a checkout are model code, and of what kind (by name, as transformers names them)."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator
from importlib.util import decode_source
from pathlib import Path

from codemod.checkout import Checkout, CheckoutKind
from codemod.contracts import Vocabulary

#: the method this tool is about
METHOD = "prepare_inputs_for_generation"
#: the class that holds the generic implementation
MIXIN_CLASS = "GenerationMixin"
#: the text every candidate file contains; files without it are never parsed
NEEDLE = METHOD
#: transformers' mark on a method that overrides the mixin's: ``# Overwritten -- why``
MARK = "# Overwritten --"

_SKIP_DIRS = frozenset(
    {".git", ".hg", ".venv", "venv", "node_modules", "__pycache__", ".tox", ".mypy_cache", "build", "dist"}
)
_TF_IMPORT = re.compile(
    r"^\s*(import tensorflow|from tensorflow|import flax|from flax|import jax|from jax)\b", re.MULTILINE
)
_TORCH_IMPORT = re.compile(r"^\s*(import torch|from torch)\b", re.MULTILINE)


class FileKind(Vocabulary):
    MODELING = "modeling"  # PyTorch modeling_*.py (generated from a modular file or hand-written)
    MODULAR = "modular"  # modular_*.py, the source the converter generates modeling files from
    GENERATION = "generation"  # generation_*.py: a model's own GenerationMixin subclass
    OTHER = "other"  # any other Python file (remote code names files as it likes)
    TENSORFLOW = "tensorflow"
    FLAX = "flax"

    @property
    def skipped(self) -> bool:
        """TF and Flax code has its own generation mixins; this tool migrates PyTorch only."""
        return self in (FileKind.TENSORFLOW, FileKind.FLAX)


def file_kind(path: Path, text: str | None = None) -> FileKind:
    name = path.name
    if name.startswith("modeling_tf_"):
        return FileKind.TENSORFLOW
    if name.startswith("modeling_flax_"):
        return FileKind.FLAX
    if name.startswith("modular_"):
        return FileKind.MODULAR
    if name.startswith("generation_"):
        return FileKind.GENERATION
    if name.startswith("modeling_"):
        return FileKind.MODELING
    tf_import = _TF_IMPORT.search(text) if text is not None else None
    if text is not None and tf_import and not _TORCH_IMPORT.search(text):
        tf = "tensorflow" in tf_import.group(1)
        return FileKind.TENSORFLOW if tf else FileKind.FLAX
    return FileKind.OTHER


#: what reading a source file fails with: the file (OSError), an encoding cookie naming no codec
#: (SyntaxError, as Python reports it), bytes that are not in the file's encoding (UnicodeDecodeError)
READ_ERRORS = (OSError, SyntaxError, UnicodeDecodeError)


def read_source(path: Path) -> str:
    """A Python file's text as Python reads it: in the encoding its BOM or ``# -*- coding: … -*-`` cookie
    names (UTF-8 without either), without the BOM, with universal newlines (as ``Path.read_text``).
    Only reading honours them: ``rewrite`` edits the bytes and writes both back as they were."""
    return decode_source(path.read_bytes())


def model_name(checkout: Checkout, path: Path) -> str | None:
    """``llama`` for ``…/models/llama/modeling_llama.py`` (also below ``models/deprecated``)."""
    # where the file is in the tree, not where a symlink leads: a link to a file outside stays in its model
    parts = Path(os.path.relpath(os.path.abspath(path), checkout.root)).parts
    if "models" in parts:
        after = parts[parts.index("models") + 1 :]
        if after and after[0] == "deprecated":
            after = after[1:]
        if len(after) >= 2:
            return after[0]
    if checkout.kind in (CheckoutKind.TREE, CheckoutKind.FILE):
        stem = path.stem
        for prefix in ("modeling_", "modular_", "generation_"):
            if stem.startswith(prefix):
                return stem[len(prefix) :]
        return stem
    return None


def model_names(checkout: Checkout) -> set[str]:
    """The name of every model of the checkout (``--only`` and ``--skip`` take them)."""
    return {name for path in python_files(checkout) if (name := model_name(checkout, path)) is not None}


def python_files(checkout: Checkout) -> Iterator[Path]:
    """Every Python file that may hold model code, once each, in a stable order."""
    if checkout.files:  # one file, or the paths a tree was made of
        yield from checkout.files
        return
    top = checkout.package_dir / "models" if checkout.package_dir is not None else checkout.root
    found: list[Path] = []
    for directory, subdirs, files in os.walk(top):
        subdirs[:] = sorted(d for d in subdirs if d not in _SKIP_DIRS and not d.startswith("."))
        found.extend(Path(directory, name) for name in sorted(files) if name.endswith(".py"))
    yield from once_each(found)


def _file_id(path: Path) -> tuple[int, int] | None:
    """(device, inode) of the file ``path`` leads to; None when it leads nowhere."""
    try:
        found = os.stat(path)
    except OSError:
        return None
    return found.st_dev, found.st_ino


def once_each(paths: Iterable[Path]) -> Iterator[Path]:
    """``paths`` with every file once: a symlink to a file also reached directly, or through an earlier
    link, is left out (the file keeps its own path; a link to a file outside the tree keeps the link's).
    A link that leads nowhere (a loop) stays, so that reading it reports it."""
    paths = list(paths)
    links = {p for p in paths if p.is_symlink()}
    seen = {_file_id(p) for p in paths if p not in links}
    for path in paths:
        if path in links:
            target = _file_id(path)
            if target is not None and target in seen:
                continue
            seen.add(target)
        yield path
