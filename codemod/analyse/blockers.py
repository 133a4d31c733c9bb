"""What stops model code outside transformers from running on a target release, beyond ``prepare_inputs_for_generation``.

Remote code written for the 4.3x releases meets the shared generation machinery of the later ones: ``generate()``
hands every model a ``Cache`` object before the first step (4.54 on), ``get_head_mask`` and the config's generation
settings are gone (5.0), private helpers changed signature or were removed, and some modules no longer define names
the code imports. Each of these is a ``BlockerRule`` (``codemod.analyse.blocker_rules``): a code (``TB001`` …), a
summary, an example, near misses with why, and the first release it blocks, as read from that release's wheel.

``find_blockers`` runs the rules over every Python file of a tree and keeps what blocks the target: a finding whose
first release is at or below the target's. The scan only reports: where the code stops running and what the target
offers instead. The common idioms (``torch.cat`` of a layer's past onto ``Cache.update``, the past length onto
``get_seq_length()``, the ``presents`` tuple, ``_reorder_cache``, ``get_head_mask``, ``is_torch_fx_available``) have
fixes in ``codemod.transform.idioms``, unsafe in ruff's sense: ``diff`` and ``apply`` make them with
``--unsafe-fixes`` (``explain`` says which rules have one); the rest is left to the author.
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import re
import warnings
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path

from packaging.version import InvalidVersion, Version

from codemod.analyse.target import Target, TargetOrigin
from codemod.checkout import Checkout


@dataclasses.dataclass(frozen=True)
class Hit:
    """Where a rule found its idiom in a file: the line, the code (one line) and, for a rule whose idioms stop at
    different releases, this idiom's first blocked release ("" for the rule's)."""

    line: int
    code: str
    release: str = ""
    detail: str = ""


@dataclasses.dataclass(frozen=True)
class Example:
    """A positive case: ``source`` (a small module) holds the idiom ``hits`` times."""

    id: str
    source: str
    hits: int = 1


@dataclasses.dataclass(frozen=True)
class NearMiss:
    """A near miss: ``source`` looks like the idiom and is not it, for the reason ``why``."""

    id: str
    source: str
    why: str


@dataclasses.dataclass(frozen=True)
class TreeFacts:
    """What a rule may know about the whole tree besides the file it reads."""

    #: attributes the tree's config classes set or take (``self.pad_token_id = …``, ``pad_token_id=None``); None
    #: when the tree defines no config class (its models use transformers' own configs)
    config_attributes: frozenset[str] | None = frozenset()
    #: the names a ``transformers`` module of the target defines (None: unknown, or no target package)
    module_names: Callable[[str], frozenset[str] | None] = lambda module: None
    #: the target release ("" for none)
    release: str = ""


@dataclasses.dataclass(frozen=True)
class BlockerRule:
    code: str
    name: str
    summary: str
    #: the first release this blocks, and what in its wheel shows it
    release: str
    evidence: str
    #: what the target offers instead (reported; not migrated by this tool)
    instead: str
    find: Callable[[ast.Module, TreeFacts], Iterable[Hit]]
    examples: tuple[Example, ...]
    near_misses: tuple[NearMiss, ...]

    @property
    def example(self) -> str:
        return self.examples[0].source


@dataclasses.dataclass(frozen=True)
class Blocker:
    """One place in the tree that stops it running on the target."""

    code: str
    name: str
    file: str
    line: int
    text: str
    #: the first release it blocks
    release: str
    summary: str
    instead: str

    def record(self) -> dict[str, object]:
        return dataclasses.asdict(self)


def _version(text: str) -> Version | None:
    try:
        return Version(text)
    except InvalidVersion:
        return None


def blocks(first: str, target: str) -> bool:
    """Whether an idiom that stops working in ``first`` stops the code on ``target``."""
    found, wanted = _version(first), _version(target)
    return found is not None and wanted is not None and wanted >= found


def run_rules(
    rules: Iterable[BlockerRule],
    files: Mapping[str, str],
    facts: TreeFacts,
    target: str,
    trees: Mapping[str, ast.Module | None] | None = None,
) -> tuple[Blocker, ...]:
    """The rules' findings in ``files`` (relative path -> text) that block ``target``, by file and line; ``trees``:
    the files parsed already (parsed here when not given)."""
    found: list[Blocker] = []
    trees = trees if trees is not None else {path: _parse(text) for path, text in files.items()}
    for path, tree in sorted(trees.items()):
        if tree is None:
            continue
        lines = files[path].splitlines()
        for rule in rules:
            for hit in rule.find(tree, facts):
                release = hit.release or rule.release
                if blocks(release, target):
                    summary = rule.summary + (f" ({hit.detail})" if hit.detail else "")
                    text = lines[hit.line - 1].strip() if 0 < hit.line <= len(lines) else hit.code
                    found.append(Blocker(rule.code, rule.name, path, hit.line, text, release, summary, rule.instead))
    return tuple(sorted(found, key=lambda b: (b.file, b.line, b.code, _version(b.release) or Version("0"))))


def _parse(text: str) -> ast.Module | None:
    # the tree's own warnings (an invalid escape in a string) are not the scan's to print
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):  # a file too deep to compile: no blockers read
            return None


def find_blockers(checkout: Checkout, texts: Mapping[Path, str], target: Target) -> tuple[Blocker, ...]:
    """What blocks a tree or file on its target release (none for a checkout, or without a release)."""
    from codemod.analyse.blocker_rules import RULES, config_attributes, module_names

    if not checkout.is_tree or target.origin is TargetOrigin.BUILT_IN or not target.release:
        return ()
    files = {}
    for path, text in texts.items():
        try:
            files[Path(path).resolve().relative_to(checkout.root.resolve()).as_posix()] = text
        except ValueError:  # read from outside the tree (a copy target): not the tree's own code
            continue
    package = target.package_dir
    trees = {path: _parse(text) for path, text in files.items()}  # parsed once, for the facts and the rules
    facts = TreeFacts(
        config_attributes(trees.values()),
        # read once a scan: every file of a tree imports from the same few modules (modeling_utils: 0.2 s each)
        functools.cache(functools.partial(module_names, package)) if package is not None else (lambda module: None),
        target.release,
    )
    return run_rules(RULES, files, facts, target.release, trees)


def by_code(code: str) -> BlockerRule | None:
    from codemod.analyse.blocker_rules import RULES

    wanted = code.strip().lower()
    return next((r for r in RULES if wanted in (r.code.lower(), r.name)), None)


def listing() -> str:
    """Every blocker rule, one row each, as ``codemod explain`` lists the recognisers."""
    from codemod.analyse.blocker_rules import RULES

    lines = ["| code | name | summary | blocks from |", "|---|---|---|---|"]
    lines += [f"| {r.code} | {r.name} | {r.summary} | {r.release} |" for r in RULES]
    return "\n".join(lines) + "\n"


def unknown(query: str) -> str | None:
    """One line for a blocker code no rule has (``TB``, a number), naming the closest codes; None for another query."""
    from codemod.analyse.blocker_rules import RULES

    number = re.fullmatch(r"TB(\d{1,3})", query.strip(), re.IGNORECASE)
    if number is None:
        return None
    wanted = int(number.group(1))
    near = sorted(RULES, key=lambda r: (abs(int(r.code[2:]) - wanted), r.code))[:3]
    return f"no rule {query!r}; the closest: " + ", ".join(f"{r.code} ({r.name})" for r in near)


def explain(code: str) -> str | None:
    """``codemod explain TB001``: the rule in Markdown, or None for a code that is not a blocker rule's."""
    rule = by_code(code)
    if rule is None:
        return None
    lines = [
        f"# {rule.code} {rule.name}",
        "",
        f"{rule.summary}.",
        "",
        f"Blocks from transformers {rule.release}: {rule.evidence}",
        "",
        f"Instead: {rule.instead}. {_fix(rule.code)}",
        "",
        "Example:",
        "",
        "```python",
        rule.example.strip("\n"),
        "```",
        "",
        "Near misses, and why they are not it:",
        "",
    ]
    for miss in rule.near_misses:
        lines += [f"- `{miss.id}`: {miss.why}", "", "  ```python"]
        lines += [f"  {line}" if line else "" for line in miss.source.strip("\n").splitlines()]
        lines += ["  ```", ""]
    return "\n".join(lines)


def _fix(code: str) -> str:
    """What the rule's fix does (``codemod.transform.idioms``), or that it is reported only."""
    from codemod.analyse.blocker_fixes import FIXES

    fix = FIXES.get(code)
    if fix is None:
        return "Reported only: the tool does not migrate it."
    return f"Fixed by `diff`/`apply --unsafe-fixes` where recognised exactly (unsafe: it changes how the model runs): {fix}."


def report_lines(blockers: tuple[Blocker, ...]) -> list[str]:
    """The table's section: each place that blocks the target, with its rule, and what the target offers instead."""
    if not blockers:
        return []
    out = [f"blocks the target ({len(blockers)}; reported, not migrated):"]
    for b in blockers:
        out.append(f"  {b.code} {b.file}:{b.line}: {b.summary} (from {b.release}): {b.text}")
    for code in sorted({b.code for b in blockers}):
        rule = by_code(code)
        if rule is not None:
            out.append(f"  {code} instead: {rule.instead} (codemod explain {code})")
    return out


def report_markdown(blockers: tuple[Blocker, ...]) -> list[str]:
    """The Markdown report's section (none when nothing blocks the target)."""
    if not blockers:
        return []
    out = ["", "## Blocks the target (reported, not migrated)", "", "| rule | where | from | what | code |"]
    out.append("|---|---|---|---|---|")
    for b in blockers:
        code = b.text.replace("|", "\\|")
        out.append(f"| {b.code} {b.name} | `{b.file}:{b.line}` | {b.release} | {b.summary} | `{code}` |")
    return out
