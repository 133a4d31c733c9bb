"""The vocabulary is typed: no stage compares a vocabulary value with a string literal.

The closed sets live in ``codemod/contracts.py`` (and the older enums beside their stage); the
behaviour names are the rules' own (``rules.BY_NAME``). These tests read the source of every stage
and fail on a literal that would silently stop matching when a name changes.
"""

from __future__ import annotations

import ast
from pathlib import Path

from codemod import contracts, rules

CODEMOD = Path(__file__).resolve().parent.parent / "codemod"
#: modules that define a vocabulary (and may spell its values), and the worker side, which runs in
#: another environment and writes the protocol's strings itself
EXEMPT = {
    "contracts.py",
    "verify/tiny",
    "verify/scenarios.py",
    "verify/worker.py",
    "verify/usage.py",
    "verify/testers.py",
}


def _vocabulary() -> set[str]:
    values: set[str] = set()
    for value in vars(contracts).values():
        if isinstance(value, type) and issubclass(value, contracts.Vocabulary) and value is not contracts.Vocabulary:
            values |= {member.value for member in value}
    return values


#: the fields (and result-document keys) that hold vocabulary values
FIELDS = {"status", "verdict", "kind", "how", "origin", "scope", "action", "category", "era", "delegation", "cause"}


def _is_field(node: ast.expr) -> bool:
    """``x.status``, ``x["status"]``, ``x.get("status")``: an expression that reads a vocabulary field."""
    if isinstance(node, ast.Attribute):
        return node.attr in FIELDS
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant):
        return node.slice.value in FIELDS
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" and node.args:
        return isinstance(node.args[0], ast.Constant) and node.args[0].value in FIELDS
    return False


def _compared_literals(tree: ast.AST) -> list[tuple[int, str]]:
    """String literals that an ``==``/``!=``/``in``/``not in`` compares a vocabulary field with."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        operands = (node.left, *node.comparators)
        if not any(_is_field(o) for o in operands):
            continue
        for operand in operands:
            candidates = operand.elts if isinstance(operand, (ast.Tuple, ast.List, ast.Set)) else [operand]
            for c in candidates:
                if isinstance(c, ast.Constant) and isinstance(c.value, str):
                    found.append((node.lineno, c.value))
    return found


def _stages() -> list[Path]:
    return [
        p
        for p in sorted(CODEMOD.rglob("*.py"))
        if not {p.relative_to(CODEMOD).as_posix(), p.parent.relative_to(CODEMOD).as_posix()} & EXEMPT
    ]


def test_no_stage_compares_a_vocabulary_value_with_a_literal() -> None:
    offences = [
        f"{path.relative_to(CODEMOD)}:{line}: {value!r}"
        for path in _stages()
        for line, value in _compared_literals(ast.parse(path.read_text(encoding="utf-8")))
    ]
    assert offences == []


def test_the_check_finds_a_literal_compared_with_a_field() -> None:
    tree = ast.parse(
        'if r.kind == "bespoke" or v["status"] in ("ok", "error") or d.get("status") != "x": pass\n'
        'if name == "later-step": pass\n'
    )
    assert _compared_literals(tree) == [(1, "bespoke"), (1, "ok"), (1, "error"), (1, "x")]


def test_every_behaviour_name_the_engine_spells_is_a_rule() -> None:
    """Behaviour names are the rules' names: a misspelt one would match nothing, silently."""
    names = set(rules.BY_NAME)
    shaped = {
        n
        for path in _stages()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
        for n in [node.value]
        if n.startswith(
            (
                "slice-",
                "position-ids",
                "inputs-embeds",
                "static-cache",
                "synthesise-",
                "forward-kwargs",
                "state-space",
                "default-attention",
                "encoder-decoder-",
                "remote-code-",
                "flash-attention",
            )
        )
    }
    # phrases and keys that share a prefix with a behaviour name but are not one (scenario names)
    from codemod.verify.options import DEFAULT_SCENARIOS

    known_other = {"slice-with-ids:", *DEFAULT_SCENARIOS}
    unknown = sorted(n for n in shaped - names - known_other if " " not in n and ":" not in n)
    assert unknown == []
