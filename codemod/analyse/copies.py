"""``# Copied from`` markers: parse them, check each copy against its target, group the copies.

transformers keeps duplicated code in step with ``utils/check_copies.py``: a comment
``# Copied from transformers.<module>.<Object> with A->B`` above a class or function says the code below
is the named object after textual replacements, and ``make repo-consistency`` fails when they drift
apart. A migration that rewrites one member of such a group has to rewrite all of them (or the check
fails), so the scan must know which overrides are copies, of what, and whether they still match.

This module mirrors the parts of check_copies that decide that, without importing transformers or
running ruff. The one deliberate difference: check_copies compares text after ``ruff format``, we
compare ``ast.dump`` of both sides, so comments, blank lines and line wrapping never count as drift.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from codemod.checkout import Checkout
from codemod.contracts import CopyStatus
from codemod.groups import UnionFind

PACKAGE = "transformers"
IGNORE_COPY = "# Ignore copy"

# check_copies' ``_re_copy_warning``, except that any package name is accepted: a misspelled one
# ("transfomers") silently escapes check_copies, and that is exactly what we want to report.
_MARKER = re.compile(r"^(?P<indent>\s*)#\s*Copied from\s+(?P<package>\w+)\.(?P<target>\S+)\s*(?P<rest>.*)$")
# check_copies' ``_re_replace_pattern``: ``old->new`` optionally followed by an option (``all-casing``).
_REPLACEMENT = re.compile(r"^\s*(\S+)->(\S+)(\s+.*|$)")
_KEYWORD_LINE = re.compile(r"^\s*(async\s+def|def|class)\s")
# The block key of a definition's header (``def f(...):`` through its closing line).
_HEADER = "header"

_Definition = ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


@dataclass(frozen=True)
class Replacement:
    old: str
    new: str
    all_casing: bool = False


@dataclass(frozen=True)
class CopyMarker:
    #: 1-based line of the comment in its file
    line: int
    #: column of the ``#``
    indent: int
    #: the dotted name after the package prefix, e.g. ``models.llama.modeling_llama.LlamaForCausalLM``
    target: str
    #: the prefix as written; a misspelling is kept so that it can be reported broken
    package: str
    replacements: tuple[Replacement, ...]
    #: the comment text, stripped
    raw: str


@dataclass(frozen=True)
class CopyCheck:
    status: CopyStatus
    #: why, in a sentence
    detail: str
    #: relative to ``checkout.root``, posix
    target_file: str | None
    #: 1-based line of the target's ``def``/``class`` keyword (check_copies never compares decorators)
    target_line: int | None
    #: the class holding a method target, or the target class itself
    target_class: str | None
    #: the target is not where the marker names it but where check_copies finds it: the marker names a method its
    #: class does not define, and check_copies, searching the file line by line, takes the next class's
    #: (MarkupLM's ``BertModel.prepare_inputs_for_generation`` is ``BertLMHeadModel``'s)
    loose: bool = False


@dataclass(frozen=True)
class CopyGroup:
    #: the member that is not itself a copy
    source: str
    #: every member, source first, then sorted
    members: tuple[str, ...]


@dataclass(frozen=True)
class _Outcome:
    #: first differing line of the copy (1 = its first line), None when equal
    line: int | None
    #: how many blocks ``# Ignore copy`` left out
    ignored: int
    #: the ignored blocks were everything: header and body
    vacuous: bool


@dataclass(frozen=True)
class _Target:
    path: Path
    lines: list[str]
    node: _Definition
    owner: str | None
    loose: bool = False  # see CopyCheck.loose


# --- markers -------------------------------------------------------------------------------------


def parse_marker(line: str, lineno: int) -> CopyMarker | None:
    """The marker on ``line`` (a comment-only line), or None when it is not one."""
    found = _MARKER.match(line.rstrip("\r\n"))
    if found is None:
        return None
    return CopyMarker(
        line=lineno,
        indent=len(found["indent"]),
        target=found["target"],
        package=found["package"],
        replacements=_parse_replacements(found["rest"]),
        raw=line.strip(),
    )


def _parse_replacements(rest: str) -> tuple[Replacement, ...]:
    """Mirror check_copies' ``replace_code``: drop every ``with``, split on commas, skip what is not ``a->b``.

    Dropping every ``with`` (not just the first) is what lets ``with A->B, with C->D`` work there.
    """
    found = (_REPLACEMENT.search(part) for part in rest.replace("with", "").split(","))
    return tuple(Replacement(m[1], m[2], m[3].strip() == "all-casing") for m in found if m is not None)


def find_markers(lines: Sequence[str]) -> list[CopyMarker]:
    """Every marker of a file, in line order."""
    return [marker for number, line in enumerate(lines, 1) if (marker := parse_marker(line, number))]


def marker_above(lines: Sequence[str], def_line: int) -> CopyMarker | None:
    """The marker governing the definition whose first line (first decorator or keyword line) is ``def_line``.

    check_copies takes the line right after the marker as the ``def``/``class`` line, so transformers
    writes it between the decorators and the keyword; the line right above the first decorator is
    accepted too. Nothing, not even a blank line or another comment, may separate marker and definition.
    """
    keyword = _keyword_line(lines, def_line)
    for above in dict.fromkeys((keyword - 1, def_line - 1)):
        if above >= 1 and (marker := parse_marker(lines[above - 1], above)):
            return marker
    return None


def _keyword_line(lines: Sequence[str], def_line: int) -> int:
    """The ``def``/``class`` line of a definition starting at ``def_line`` (skipping its decorators)."""
    if not lines[def_line - 1].lstrip().startswith("@"):
        return def_line
    for number in range(def_line + 1, len(lines) + 1):
        if _KEYWORD_LINE.match(lines[number - 1]):
            return number
    return def_line


def ignore_copy_lines(lines: Sequence[str], start: int, end: int) -> tuple[int, ...]:
    """1-based lines in ``[start, end]`` holding ``# Ignore copy`` (check_copies tests the substring too)."""
    return tuple(number for number in range(start, end + 1) if IGNORE_COPY in lines[number - 1])


def apply_replacements(code: str, replacements: Iterable[Replacement]) -> str:
    """Rewrite target code the way check_copies does: ``re.sub`` per replacement, in order.

    ``old`` is a regular expression there; one that does not compile is replaced literally instead.
    ``all-casing`` also replaces the lower- and upper-case variants.
    """
    for replacement in replacements:
        old, new = replacement.old, replacement.new
        pairs = [(old, new)]
        if replacement.all_casing:
            pairs += [(old.lower(), new.lower()), (old.upper(), new.upper())]
        for before, after in pairs:
            try:
                code = re.sub(before, after, code)
            except re.error:
                code = code.replace(before, after)
    return code


# --- resolving the target ------------------------------------------------------------------------


def resolve_target(
    checkout: Checkout, marker: CopyMarker, read: Callable[[Path], str]
) -> tuple[Path, int, int, str | None] | None:
    """(file, keyword line, last line, owning class) of the marker's target, or None when it has none."""
    if marker.package != PACKAGE or checkout.package_dir is None:
        return None
    target = _resolve(checkout, marker.target, read)
    if isinstance(target, str):
        return None
    return target.path, target.node.lineno, _end(target.node), target.owner


def _resolve(checkout: Checkout, dotted: str, read: Callable[[Path], str]) -> _Target | str:
    """The target object of ``transformers.<dotted>``, or why there is none.

    The module is the longest prefix that is a module of the checkout, the rest an object path in it
    (``Class``, ``Class.method``, ``function``), looked up among top-level definitions and class bodies.
    """
    parts = dotted.split(".")
    for cut in range(len(parts) - 1, 0, -1):
        module = ".".join([PACKAGE, *parts[:cut]])
        path = checkout.module_path(module)
        if path is not None:
            return _find_object(checkout, path, module, parts[cut:], read)
    return f"target module of {PACKAGE}.{dotted} does not exist"


def _find_object(
    checkout: Checkout, path: Path, module: str, names: list[str], read: Callable[[Path], str]
) -> _Target | str:
    """Look ``names`` up in the module at ``path``; like check_copies, only top level and class bodies."""
    text = read(path)
    top: list[ast.stmt] = ast.parse(text).body
    scope = top
    chain: list[_Definition] = []
    for name in names:
        node = next((s for s in scope if isinstance(s, _DEFINITIONS) and s.name == name), None)
        if node is None and len(chain) == 1 and len(names) == 2 and isinstance(chain[0], ast.ClassDef):
            # check_copies looks a method up line by line from its class on: where the class does not define it,
            # it finds the next class's. That is what it compares the copy with, so that is the target.
            later = [c for c in top if isinstance(c, ast.ClassDef) and c.lineno > chain[0].lineno]
            for cls in later:
                method = next((s for s in cls.body if isinstance(s, _DEFINITIONS) and s.name == name), None)
                if method is not None:
                    return _Target(path, text.splitlines(), method, cls.name, loose=True)
        if node is None:
            inside = f" in {'.'.join(names[: len(chain)])}" if chain else ""
            return f"{module}.{'.'.join(names)} does not exist ({checkout.relative(path)} defines no {name!r}{inside})"
        chain.append(node)
        scope = node.body
    # The owner: the target class itself, or the class the target function is defined in.
    owner = next((n.name for n in chain[-1:-3:-1] if isinstance(n, ast.ClassDef)), None)
    return _Target(path, text.splitlines(), chain[-1], owner)


# --- checking a copy -----------------------------------------------------------------------------


def check_copy(
    checkout: Checkout,
    marker: CopyMarker,
    copy_lines: Sequence[str],
    copy_start: int,
    copy_end: int,
    read: Callable[[Path], str],
) -> CopyCheck:
    """Whether the definition at ``copy_start..copy_end`` of ``copy_lines`` still matches its marker's target.

    ``read`` returns a file's text (the caller caches it); the target file is parsed once per call.
    """
    if marker.package != PACKAGE:
        return _misspelled(checkout, marker, read)
    if checkout.package_dir is None:
        detail = f"{checkout.root} holds no {PACKAGE} package to look {PACKAGE}.{marker.target} up in"
        return CopyCheck(CopyStatus.UNRESOLVED, detail, None, None, None)
    target = _resolve(checkout, marker.target, read)
    if isinstance(target, str):
        return CopyCheck(CopyStatus.BROKEN, target, None, None, None)
    where = (checkout.relative(target.path), target.node.lineno, target.owner, target.loose)
    copy = [line.rstrip("\r\n") for line in copy_lines[copy_start - 1 : copy_end]]
    theirs = target.lines[target.node.lineno - 1 : _end(target.node)]
    outcome = _compare(copy, theirs, marker.replacements, ignore_copy_lines(copy, 1, len(copy)))
    name = f"{PACKAGE}.{marker.target}" + (f" (check_copies finds {target.owner}'s)" if target.loose else "")
    if isinstance(outcome, str):
        return CopyCheck(CopyStatus.STALE, f"cannot compare with {name}: {outcome}", *where)
    if outcome.vacuous:
        return CopyCheck(CopyStatus.CONSISTENT, f"'{IGNORE_COPY}' leaves nothing to compare with {name}", *where)
    if outcome.line is None:
        skipped = f", leaving out {outcome.ignored} '{IGNORE_COPY}' block(s)" if outcome.ignored else ""
        return CopyCheck(CopyStatus.CONSISTENT, f"matches {name} after replacements{skipped}", *where)
    at = copy_start + outcome.line - 1
    detail = f"differs from {name} after replacements at line {at}: {copy_lines[at - 1].strip()}"
    return CopyCheck(CopyStatus.STALE, detail, *where)


def _misspelled(checkout: Checkout, marker: CopyMarker, read: Callable[[Path], str]) -> CopyCheck:
    """A marker check_copies never sees (its regex wants ``transformers.``); say where it would point."""
    detail = f"package {marker.package!r} is not {PACKAGE!r}, so check_copies never checks this marker"
    if checkout.package_dir is None:
        return CopyCheck(CopyStatus.BROKEN, detail, None, None, None)
    target = _resolve(checkout, marker.target, read)
    if isinstance(target, str):
        return CopyCheck(CopyStatus.BROKEN, f"{detail}; and {target}", None, None, None)
    where = (checkout.relative(target.path), target.node.lineno, target.owner)
    return CopyCheck(CopyStatus.BROKEN, f"{detail}; spelled {PACKAGE!r} it names {where[0]}:{where[1]}", *where)


def _compare(
    copy: list[str], theirs: list[str], replacements: Sequence[Replacement], ignore_lines: Sequence[int]
) -> _Outcome | str:
    """Compare a copy with its target's lines, or say why they cannot be compared.

    The target is re-indented to the copy's indentation and rewritten by the replacements; blocks of the
    copy holding ``# Ignore copy`` are dropped, and so are the target's blocks of the same name.
    """
    rewritten = apply_replacements("\n".join(_reindent(theirs, _leading(copy[0]))), replacements).split("\n")
    try:
        ours_node = _parse_definition(copy)
    except SyntaxError as error:
        return f"the copy does not parse ({error.msg})"
    try:
        theirs_node = _parse_definition(rewritten)
    except SyntaxError as error:
        return f"the target does not parse after replacements ({error.msg})"
    ours_regions, theirs_regions = _regions(copy, ours_node), _regions(rewritten, theirs_node)
    ignored = {key for line in ignore_lines if (key := _key_at(ours_regions, line)) is not None}
    for node, regions in ((ours_node, ours_regions), (theirs_node, theirs_regions)):
        node.body = [s for s in node.body if _key_at(regions, _first_line(s)) not in ignored]
        # check_codes_match ignores the defined name; check_copies never compares decorators.
        node.name, node.decorator_list = "_", []
    if _HEADER in ignored and type(ours_node) is type(theirs_node):
        for field in set(ours_node._fields) - {"body"}:  # the signature (or bases) of the copy wins
            setattr(theirs_node, field, getattr(ours_node, field))
    vacuous = _HEADER in ignored and not ours_node.body and not theirs_node.body
    return _Outcome(_first_difference(ours_node, theirs_node, 1), len(ignored), vacuous)


def _reindent(lines: list[str], indent: str) -> list[str]:
    """Move ``lines`` to ``indent``; lines left of the first one's indentation (string contents) stay."""
    old = _leading(lines[0])
    return [indent + line[len(old) :] if line.startswith(old) else line for line in lines]


def _parse_definition(lines: list[str]) -> _Definition:
    """The definition in ``lines`` with line numbers counted from its first line.

    Wrapping an indented snippet in ``if 1:`` instead of dedenting keeps multi-line strings intact and
    cannot trip on string lines that are less indented than the code.
    """
    text = "\n".join(lines)
    if not _leading(lines[0]):
        node = ast.parse(text).body[0]
    else:
        wrapper = ast.parse("if 1:\n" + text).body[0]
        assert isinstance(wrapper, ast.If)
        node = wrapper.body[0]
        ast.increment_lineno(node, -1)
    if not isinstance(node, _DEFINITIONS):
        raise SyntaxError("not a class or function definition")
    return node


# --- check_copies' blocks ------------------------------------------------------------------------
#
# check_copies splits a copy into blocks: its header, then in its body every nested ``def``/``class``
# (with the lines right above it and deeper-indented lines after it) is a block named after it, every
# other stretch of non-blank lines between them an unnamed block numbered in order. A ``# Ignore copy``
# anywhere in a block drops it, and the target's block of the same name (or number). So in a method
# without nested functions one ``# Ignore copy`` drops the whole body, and one in the signature drops
# the signature, as they do there.


def _regions(lines: list[str], node: _Definition) -> list[tuple[int, int, str]]:
    """(first line, last line, block key) of the header and every block of ``node``'s body, in order."""
    body_indent = node.body[0].col_offset
    header_last = _header_last(lines, node)
    start = header_last + 1
    named: list[tuple[int, int, str]] = []
    for stmt in node.body:
        if isinstance(stmt, _DEFINITIONS):
            first = _backtrace(lines, _first_line(stmt), start - 1 if not named else named[-1][1], body_indent)
            last = _continuation(lines, _end(stmt), body_indent)
            kind = "class" if isinstance(stmt, ast.ClassDef) else "def"
            named.append((first, last, f"{kind} {stmt.name}"))
    regions = [(node.lineno, header_last, _HEADER)]
    unnamed = 0
    for first, last, key in [*named, (len(lines) + 1, len(lines), "")]:  # a sentinel closes the last gap
        if any(line.strip() for line in lines[start - 1 : first - 1]):
            regions.append((start, first - 1, f"unnamed {unnamed}"))
            unnamed += 1
        if key:
            regions.append((first, last, key))
        start = last + 1
    return regions


def _header_last(lines: list[str], node: _Definition) -> int:
    """The last line of the ``def``/``class`` header: the line before the body, less comments and blanks."""
    line = _first_line(node.body[0]) - 1
    while line > node.lineno and (not lines[line - 1].strip() or lines[line - 1].lstrip().startswith("#")):
        line -= 1
    return line


def _backtrace(lines: list[str], first: int, limit: int, body_indent: int) -> int:
    """Extend a nested definition upward over the non-blank body-level lines (comments) right above it."""
    while first - 1 > limit and lines[first - 2].strip() and len(_leading(lines[first - 2])) >= body_indent:
        first -= 1
    return first


def _continuation(lines: list[str], last: int, body_indent: int) -> int:
    """Extend a nested definition downward over deeper-indented lines (trailing comments), not blanks."""
    following = last
    while following < len(lines) and (not lines[following].strip() or len(_leading(lines[following])) > body_indent):
        following += 1
        if lines[following - 1].strip():
            last = following
    return last


def _key_at(regions: list[tuple[int, int, str]], line: int) -> str | None:
    return next((key for first, last, key in regions if first <= line <= last), None)


# --- the comparison ------------------------------------------------------------------------------


def _first_difference(ours: ast.AST, theirs: ast.AST, line: int) -> int | None:
    """The line of the innermost node of ``ours`` that differs from ``theirs``; None when they are equal."""
    if ast.dump(ours) == ast.dump(theirs):
        return None
    line = getattr(ours, "lineno", line)
    if type(ours) is not type(theirs):
        return line
    for field in ours._fields:
        found = _first_value_difference(getattr(ours, field, None), getattr(theirs, field, None), line)
        if found is not None:
            return found
    return line


def _first_value_difference(ours: object, theirs: object, line: int) -> int | None:
    if isinstance(ours, ast.AST) and isinstance(theirs, ast.AST):
        return _first_difference(ours, theirs, line)
    if not (isinstance(ours, list) and isinstance(theirs, list)):
        return None if ours == theirs else line
    for mine, other in zip(ours, theirs, strict=False):
        found = _first_value_difference(mine, other, line)
        if found is not None:
            return found
    if len(ours) > len(theirs):  # an extra element in the copy
        return getattr(ours[len(theirs)], "lineno", line)
    if len(ours) < len(theirs):  # the copy lacks elements: point after its last one
        return getattr(ours[-1], "end_lineno", line) if ours else line
    return None


# --- groups --------------------------------------------------------------------------------------


def copy_groups(edges: Iterable[tuple[str, str | None]]) -> list[CopyGroup]:
    """Group members linked by "copy of" edges (``(member, source or None)``); chains are one group.

    The source of a group is its member that copies nothing; with several such (or none, in a cycle)
    the smallest id, so the result never depends on the order of ``edges``. Singletons are dropped.
    """
    components = UnionFind()
    copies: set[str] = set()
    for member, source in edges:
        components.add(member)
        if source is not None:
            copies.add(member)
            components.union(member, source)
    groups = []
    for members in map(set, components.groups()):
        if len(members) > 1:
            source = min(members - copies or members)
            groups.append(CopyGroup(source, (source, *sorted(members - {source}))))
    return sorted(groups, key=lambda group: group.source)


# --- small helpers -------------------------------------------------------------------------------


def _leading(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def _first_line(node: ast.stmt) -> int:
    decorators: list[ast.expr] = getattr(node, "decorator_list", [])  # classes and functions have them
    return min([node.lineno, *(d.lineno for d in decorators)])


def _end(node: ast.stmt) -> int:
    return node.end_lineno or node.lineno
