"""How much override code a migration leaves: per override, lines before and after.

    .venv/bin/python bench/migrated.py BASE MIGRATED [--all] [--top 20]

BASE is a pristine checkout (a release's sdist from ``codemod fetch``), MIGRATED the same after
``codemod apply`` (with or without ``--verify``). Counts the *current* overrides (modeling files,
not ``models/deprecated``), as ``docs/measurements.md`` does: how many are deleted, reduced
(the method's code changed) or kept, and the lines of override code before and after (in all and by
the scan's category of the override in BASE), then the
overrides that keep the most lines. Code a hook moved out of an override into a method of its class
(``_generation_needs_first_step_inputs``) is counted as left, and so is a class-level line naming another method
in the override's place (``prepare_inputs_for_generation = GenerationMixin.<variant>``). Prints numbers and asserts nothing.
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from codemod.analyse.scan import scan  # noqa: E402
from codemod.checkout import resolve  # noqa: E402
from codemod.sources import METHOD, FileKind  # noqa: E402
from codemod.transform.hooks import NEEDS_METHOD  # noqa: E402


def method(root: Path, file: str, class_name: str, name: str = METHOD) -> tuple[str, int] | None:
    """(the method's code without comments, its lines) in ``root``; ("", 0) when the class has none."""
    path = root / file
    if not path.is_file():
        return None
    for node in ast.parse(path.read_bytes()).body:
        if isinstance(node, ast.ClassDef) and node.name == class_name:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == name:
                    start = min([d.lineno for d in item.decorator_list] + [item.lineno])
                    return ast.unparse(item), (item.end_lineno or start) - start + 1
                if isinstance(item, ast.Assign) and any(
                    isinstance(t, ast.Name) and t.id == name for t in item.targets
                ):
                    # the class names another method (``codemod.transform.alias``): an override all the same
                    return ast.unparse(item), (item.end_lineno or item.lineno) - item.lineno + 1
            return "", 0
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("base", type=Path)
    parser.add_argument("migrated", type=Path)
    parser.add_argument("--all", action="store_true", help="also count deprecated and modular overrides")
    parser.add_argument("--top", type=int, default=20)
    args = parser.parse_args()
    result = scan(resolve(args.base, with_git=False))
    counts = {"deleted": 0, "reduced": 0, "kept": 0}
    before = after = moved = 0
    rows = []
    #: category -> [overrides, lines before, lines after, deleted, reduced]
    by_category: dict[str, list[int]] = {}
    for finding in result.findings:
        o = finding.override
        if not args.all and (o.deprecated or o.kind is not FileKind.MODELING):
            continue
        old, new = method(args.base, o.file, o.class_name), method(args.migrated, o.file, o.class_name)
        assert old is not None
        before += old[1]
        row = by_category.setdefault(finding.category.value, [0, 0, 0, 0, 0])
        row[0] += 1
        row[1] += old[1]
        # override code a hook moved into a method of the class (the llava family's own condition): still the
        # model's code, counted as left (a class that had none before has it from the migration)
        if method(args.base, o.file, o.class_name, NEEDS_METHOD) == ("", 0):
            _, moved_lines = method(args.migrated, o.file, o.class_name, NEEDS_METHOD) or ("", 0)
            moved += moved_lines
            after += moved_lines
            row[2] += moved_lines
        if new is None or new == ("", 0):
            counts["deleted"] += 1
            row[3] += 1
            continue
        counts["reduced" if new[0] != old[0] else "kept"] += 1
        row[4] += new[0] != old[0]
        row[2] += new[1]
        after += new[1]
        rows.append((new[1], old[1], o.id, "reduced" if new[0] != old[0] else "kept"))
    total = sum(counts.values())
    print(
        f"{total} overrides: {counts['deleted']} deleted, {counts['reduced']} reduced, {counts['kept']} kept "
        f"({counts['deleted'] + counts['reduced']} changed); override code {before} -> {after} lines "
        f"({after / before:.0%} left)"
    )
    if moved:
        print(f"  of which {moved} lines in {NEEDS_METHOD} methods, where hooks moved override code")
    for category, (n, old_lines, new_lines, deleted, reduced) in sorted(by_category.items()):
        print(
            f"  {category:<18} {n:4} overrides ({deleted} deleted, {reduced} reduced): {old_lines} -> {new_lines} lines"
        )
    for lines, old_lines, override_id, what in sorted(rows, reverse=True)[: args.top]:
        print(f"{lines:5} (from {old_lines:4}) {what:8} {override_id}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
