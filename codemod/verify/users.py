"""The classes that generate through a changed class: composites that hold it and call its ``generate()`` (CLVP's
``ClvpModelForConditionalGeneration`` drives its ``ClvpForCausalLM`` speech decoder so), or its
``prepare_inputs_for_generation`` (a wrapper that asks its decoder for the decoder's inputs).

Such a composite passes its decoder inputs of its own (CLVP's passes ``return_dict`` and conditioning embeddings),
which a verdict on the decoder alone never gives it: a reduction that forwards every model kwarg through ``super()``
where the old closed dict dropped them can be identical alone and break the composite. Each such composite is
verified too, as a class that inherits the change (its verdict decides the changed override's), with the inputs its
own ``generate()`` takes.

Found statically, in the changed class's own file (where transformers keeps a model's composites): a class whose
body names the changed class and calls ``generate`` or ``prepare_inputs_for_generation`` on something it holds.
"""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Iterable, Mapping
from pathlib import Path

from codemod.analyse.scan import ScanResult
from codemod.contracts import OverrideId
from codemod.sources import READ_ERRORS, model_name, read_source
from codemod.verify.runner import Target

#: the methods a composite drives its part through
DRIVING_CALLS = ("generate", "prepare_inputs_for_generation")


@dataclasses.dataclass(frozen=True)
class User:
    """A class of ``file`` that holds ``part`` and generates through it; ``part``'s change is ``changed``'s."""

    file: str
    class_name: str
    part: str
    changed: str


def _names(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _drives_a_part(node: ast.ClassDef) -> bool:
    """Whether the class calls ``<held>.generate(...)`` or ``<held>.prepare_inputs_for_generation(...)`` on an
    attribute of ``self`` (not on ``super()``: that is the class's own method)."""
    for call in ast.walk(node):
        if not isinstance(call, ast.Call) or not isinstance(call.func, ast.Attribute):
            continue
        owner = call.func.value
        if call.func.attr in DRIVING_CALLS and isinstance(owner, ast.Attribute):
            return True
    return False


def users_in(text: str, file: str, changed: Mapping[str, str]) -> list[User]:
    """The classes of one file's ``text`` that hold and drive a class of ``changed`` (class name -> the changed
    override's id), each once (the first changed class it names)."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        return []
    found = []
    for node in tree.body:
        if not isinstance(node, ast.ClassDef) or node.name in changed or not _drives_a_part(node):
            continue
        named = _names(node) - {node.name}
        part = next((name for name in changed if name in named), None)
        if part is not None:
            found.append(User(file, node.name, part, changed[part]))
    return found


def user_targets(result: ScanResult, targets: Iterable[Target]) -> list[Target]:
    """A target for each class that generates through one of ``targets`` (in that target's file) and is not a
    target itself: it runs with the changed override's id as the one it inherits, so that its verdict keeps or
    reverts that change."""
    checkout = result.index.checkout
    chosen = list(targets)
    by_file: dict[str, dict[str, str]] = {}
    files = {OverrideId(t.override_id).file: t for t in chosen}
    for target in chosen:
        file = OverrideId(target.override_id).file
        by_file.setdefault(file, {})[target.class_name] = target.inherits_from or target.override_id
    known = {t.override_id for t in chosen}
    out = []
    for file, changed in sorted(by_file.items()):
        path = checkout.root / file
        try:
            text = read_source(path)
        except READ_ERRORS:
            continue
        for user in users_in(text, file, changed):
            override_id = OverrideId.of(file, user.class_name)
            if override_id in known:
                continue
            known.add(override_id)
            out.append(
                Target(
                    override_id,
                    files[file].module,
                    user.class_name,
                    model_name(checkout, Path(checkout.root / file)) or "",
                    user.changed,
                )
            )
    return out
