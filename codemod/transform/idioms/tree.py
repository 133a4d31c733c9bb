"""The idiom fixes in a tree's changes: each file the scan found blocking its target, migrated in memory.

``compute_changes`` hands its settled changes here when unsafe fixes are allowed (``--unsafe-fixes``); a file the
plan already rewrote is migrated from its new text, any other from disk. A file whose migrated text would not
compile or would add a pyflakes message is left as the plan made it.
"""

from __future__ import annotations

import ast
import dataclasses
import re

import libcst as cst

from codemod.analyse import soundness
from codemod.analyse.scan import ScanResult
from codemod.transform.apply import Changes
from codemod.transform.idioms import IdiomResult, migrate, target_of
from codemod.transform.rewrite import FileRewrite

_CONFIG_READ = re.compile(r"\(config\.(\w+)\)$")


def idiom_results(result: ScanResult, changes: Changes) -> dict[str, tuple[FileRewrite, IdiomResult]]:
    """path -> (the file's rewrite with its idioms migrated, what was migrated and what not), for each file of the
    tree that blocks its target; a file where nothing changes has its result with the rewrite it had (or none)."""
    target = result.profile.target
    if target is None or not target.release or not result.blockers:
        return {}
    # the settings read from the tree's config that the target no longer sets go on its config classes
    reads = frozenset(
        m.group(1) for b in result.blockers if (m := _CONFIG_READ.search(b.summary)) and b.code == "TB007"
    )
    onto = dataclasses.replace(target_of(target.release, target.package_dir), config_reads=reads)
    root = result.index.checkout.root
    planned = {r.path: r for r in changes.rewrites}
    found: dict[str, tuple[FileRewrite, IdiomResult]] = {}
    configs = {p.relative_to(root).as_posix() for p in root.glob("configuration*.py")} if reads else set()
    for path in sorted({b.file for b in result.blockers} | configs):
        current = planned.get(path)
        if current is not None and current.error:
            continue
        if current is None:
            data = (root / path).read_bytes()
            try:
                encoding = cst.parse_module(data).encoding
            except (cst.ParserSyntaxError, RecursionError):
                continue
            current = FileRewrite(path, data, data, encoding, ())
        migrated = migrate(current.new_text(), onto)
        rewrite = current
        if migrated.changed and _sound(current.old_text(), migrated.source, path):
            rewrite = dataclasses.replace(current, new=migrated.source.encode(current.encoding))
        found[path] = (rewrite, migrated)
    return found


def _sound(old: str, new: str, path: str) -> bool:
    try:
        compile(new, path, "exec")
    except (SyntaxError, ValueError):
        return False
    return not soundness.new_problems(old, new, path)


def with_idioms(result: ScanResult, changes: Changes) -> Changes:
    """``changes`` with the idioms of every blocking file migrated onto the tree's target."""
    migrated = {path: rewrite for path, (rewrite, _) in idiom_results(result, changes).items() if rewrite.changed}
    if not migrated:
        return changes
    rewrites = {r.path: r for r in changes.rewrites} | migrated
    return dataclasses.replace(changes, rewrites=tuple(rewrites[path] for path in sorted(rewrites)))


def fixes_idioms(old: str, new: str) -> bool:
    """Whether ``new`` holds fewer of the idioms that have a fix than ``old`` (``verify`` then runs every class of
    the file with an override: the fix changed how each of them generates, not only a method)."""
    from codemod.analyse.blocker_rules import RULES
    from codemod.analyse.blockers import TreeFacts
    from codemod.transform.idioms import FIXES

    def count(text: str) -> int:
        try:
            tree = ast.parse(text)
        except (SyntaxError, ValueError, RecursionError):
            return 0
        return sum(len(list(r.find(tree, TreeFacts()))) for r in RULES if r.code in FIXES)

    return count(new) < count(old)
