"""pyflakes before and after: a file a test rewrote has no problem its original did not have.

Independent of the tool's own check (``codemod.analyse.soundness``): pyflakes' reporter output, with line
numbers taken out, compared as multisets. Problems counted: undefined names, unused variables and
imports, redefinitions.
"""

from __future__ import annotations

import io
import re
from collections import Counter
from pathlib import Path

from pyflakes.api import check
from pyflakes.reporter import Reporter

_COUNTED = re.compile(r"undefined name|is assigned to but never used|imported but unused|redefinition of unused")
_POSITION = re.compile(r"^[^:]*:\d+:(\d+:)? ?")


def flakes(text: str, name: str = "file.py") -> Counter[str]:
    out, err = io.StringIO(), io.StringIO()
    check(text, name, Reporter(out, err))
    assert not err.getvalue(), err.getvalue()  # a syntax error: the file must parse
    lines = [_POSITION.sub("", line) for line in out.getvalue().splitlines()]
    return Counter(line for line in lines if _COUNTED.search(line))


def new_flakes(before: str, after: str, name: str = "file.py") -> list[str]:
    return sorted((flakes(after, name) - flakes(before, name)).elements())


def assert_no_new_flakes(before_root: Path, after_root: Path, rels: list[str]) -> None:
    """Every file in ``rels`` (relative paths) has no pyflakes problem its original lacked."""
    found = {}
    for rel in rels:
        before = (before_root / rel).read_text(encoding="utf-8")
        after = (after_root / rel).read_text(encoding="utf-8")
        problems = new_flakes(before, after, rel)
        if problems:
            found[rel] = problems
    assert not found, found
