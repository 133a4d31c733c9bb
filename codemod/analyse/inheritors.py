"""The classes that inherit a changed override: verification runs them too.

A class that does not define ``prepare_inputs_for_generation`` (or defines it by calling ``super()``)
generates differently when its base's method changes. They are found by the names in every model
file's class headers, a text search: a class in a file that never mentions the method inherits it too.
"""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Iterable
from pathlib import Path

from codemod.analyse.analysis import Delegation
from codemod.analyse.index import Index
from codemod.contracts import OverrideId
from codemod.sources import READ_ERRORS, python_files, read_source

_CLASS_HEADER = re.compile(r"^class\s+(\w+)\s*\(([^)]*)\)\s*:", re.MULTILINE)


@dataclasses.dataclass(frozen=True)
class Inheritor:
    """A class that takes a changed ``prepare_inputs_for_generation`` from a base: it does not define
    the method, or defines it by calling ``super()``. It generates differently when that base's
    method changes, so verification runs it too."""

    file: str  # relative to the checkout root
    class_name: str
    #: the id of the changed override it inherits
    inherits_from: str


def inheritors(index: Index, changed: Iterable[str]) -> list[Inheritor]:
    """The classes of the checkout that inherit one of the ``changed`` overrides (ids), found by the
    names of their bases in every model file (a class in a file that never mentions the method
    inherits it as well). By name, so two classes of one name in two models both count: running
    one class too many costs a little time, missing one hides a change."""
    by_class: dict[str, str] = {}
    for override_id in changed:
        by_class.setdefault(OverrideId.parse(override_id).class_name, override_id)
    own = {o.class_name: o for o in index.overrides}
    headers: list[tuple[str, str, tuple[str, ...]]] = []
    for path in python_files(index.checkout):
        try:
            text = read_source(path)
        except READ_ERRORS:
            continue
        rel = Path(os.path.relpath(path, index.checkout.root)).as_posix()
        for match in _CLASS_HEADER.finditer(text):
            bases = tuple(b.strip().split("[")[0].rsplit(".", 1)[-1] for b in match.group(2).split(",") if b.strip())
            headers.append((rel, match.group(1), bases))
    found: list[Inheritor] = []
    reached = dict(by_class)  # class name -> the changed override it inherits
    grew = True
    while grew:  # through chains of subclasses
        grew = False
        for rel, name, bases in headers:
            if name in reached:
                continue
            parent = next((reached[b] for b in bases if b in reached), None)
            mine = own.get(name)
            if parent is None or (mine is not None and mine.analysis.delegation is not Delegation.SUPER):
                continue  # unrelated, or its own method shadows the changed one
            reached[name] = parent
            found.append(Inheritor(rel, name, parent))
            grew = True
    return found
