"""Modular transformers: which generated ``modeling_*.py`` method really comes from where.

Since ~4.45 many ``models/<m>/modeling_<m>.py`` files are written by ``utils/modular_model_converter.py``
from ``models/<m>/modular_<m>.py``. An edit made to the generated file is overwritten (and CI rejects
it), so a rewrite has to land where a human edits: the modular class when it defines the method, or
the parent model's class the converter copies it from. This module answers that question from the
source alone, with the stdlib ``ast`` (fast, and positions are all we need):

* ``generated_from`` reads the "This file was automatically generated from …" header;
* ``method_origin`` follows a generated class back to the modular class, and up its bases the way
  the converter does (imports of other models' files; a parent that is itself generated is followed
  into *its* modular file), to the class that holds the method's text;
* ``modular_pairs`` lists which modeling file each modular file produces;
* ``modular_overrides`` lists the classes of a modular file that define a method.

Nothing here writes or runs anything; every file is read through the caller's ``read`` (which caches).
"""

from __future__ import annotations

import ast
import dataclasses
import functools
import re
from collections.abc import Callable, Iterable
from pathlib import Path

from codemod.checkout import Checkout
from codemod.contracts import OriginKind, OverrideId
from codemod.sources import READ_ERRORS

Reader = Callable[[Path], str]

#: the header line names the modular file; 4.45 wrote a literal placeholder instead of the path, and
#: generated ``__init__.py`` files say "from the modules in `…`" (another tool: never matched here)
_HEADER = re.compile(r"^#\s*This file was automatically generated from\s+(<[^>\s]+>|\S+?\.py)\.?\s*$")
_HEADER_LINES = 15
#: the converter drops an inherited method whose modular body is ``raise SomethingError(...)``
_REMOVAL_ERROR = re.compile(r"\w*Error$")
#: bases that are library machinery, not another model: the walk stops there
STOP_BASES = frozenset(
    {"PreTrainedModel", "GenerationMixin", "Module", "nn.Module", "torch.nn.Module", "object", "ModelOutput"}
)
#: class-name suffixes the converter sends to a file other than ``modeling_*`` (find_file_type)
_NON_MODELING_SUFFIXES = (
    "Config",
    "Tokenizer",
    "TokenizerFast",
    "Processor",
    "ProcessorFast",
    "ProcessorPil",
    "FeatureExtractor",
    "Kwargs",
)
MAX_DEPTH = 12


def generated_from(text: str) -> str | None:
    """The modular source a generated file's header names, as written (e.g.
    ``src/transformers/models/gemma3/modular_gemma3.py``), else None.

    Only the first lines are read: the header is always at the top, and a docstring further down
    quoting it must not count. 4.45 files carry the placeholder ``<path_to_modular_file.py>``; it is
    returned as written, because the file *is* generated (``modular_file_of`` then uses the sibling).
    """
    for line in text.splitlines()[:_HEADER_LINES]:
        found = _HEADER.match(line.strip())
        if found:
            return found.group(1)
    return None


@dataclasses.dataclass(frozen=True)
class MethodOrigin:
    kind: OriginKind
    modular_file: str | None
    modular_class: str | None
    #: the file and class holding the method's text (for "removed": the ``raise`` stub)
    source_file: str | None
    source_class: str | None
    source_line: int | None
    #: classes walked from the modular class to the one holding the method (all visited when not found)
    chain: tuple[str, ...]
    detail: str

    @property
    def modular_id(self) -> OverrideId | None:
        """The modular class, as an override id (its override when it defines the method)."""
        return (
            OverrideId.of(self.modular_file, self.modular_class) if self.modular_file and self.modular_class else None
        )

    @property
    def source_id(self) -> OverrideId | None:
        """The class whose method the converter writes into the generated file."""
        return OverrideId.of(self.source_file, self.source_class) if self.source_file and self.source_class else None


@dataclasses.dataclass(frozen=True)
class ModularPair:
    modular_file: str
    generated_file: str
    generated_exists: bool


# --------------------------------------------------------------------------------------------------
# parsing


@functools.lru_cache(maxsize=32)
def parse_text(text: str) -> ast.Module | None:
    """Parse once per distinct text: a chain visits the same parent files (llama, mistral) often."""
    try:
        return ast.parse(text)
    except (SyntaxError, ValueError):
        return None


def parse_file(path: Path, read: Reader) -> ast.Module | None:
    try:
        return parse_text(read(path))
    except READ_ERRORS:
        return None


def top_level(tree: ast.Module) -> Iterable[ast.stmt]:
    """Module statements, including those under top-level ``if``/``try`` (``if TYPE_CHECKING:``, guarded imports)."""
    pending = list(tree.body)
    while pending:
        node = pending.pop(0)
        yield node
        if isinstance(node, ast.If):
            pending.extend(node.body + node.orelse)
        elif isinstance(node, ast.Try):
            pending.extend(node.body + node.orelse + node.finalbody)
            for handler in node.handlers:
                pending.extend(handler.body)


def top_level_classes(tree: ast.Module) -> dict[str, ast.ClassDef]:
    return {node.name: node for node in top_level(tree) if isinstance(node, ast.ClassDef)}


def methods_named(node: ast.ClassDef, method: str) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    return [
        item for item in node.body if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == method
    ]


def function_params(function: ast.FunctionDef | ast.AsyncFunctionDef) -> tuple[str, ...]:
    """A function's parameter names, ``*args`` and ``**kwargs`` with their stars, ``self`` left out."""
    a = function.args
    names = [p.arg for p in (*a.posonlyargs, *a.args, *a.kwonlyargs)]
    if a.vararg:
        names.append("*" + a.vararg.arg)
    if a.kwarg:
        names.append("**" + a.kwarg.arg)
    return tuple(n for n in names if n != "self")


def _is_removal(func: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """The converter's "do not inherit" stub: the body starts with ``raise SomeError(...)``.

    The converter matches any ``…Error(`` (gemma3n uses ``NotImplementedError``), not only AttributeError.
    """
    first = func.body[0]
    if not isinstance(first, ast.Raise) or not isinstance(first.exc, ast.Call):
        return False
    callee = first.exc.func
    name = callee.id if isinstance(callee, ast.Name) else callee.attr if isinstance(callee, ast.Attribute) else ""
    return bool(_REMOVAL_ERROR.fullmatch(name))


def dotted_name(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = dotted_name(node.value)
        return f"{inner}.{node.attr}" if inner else None
    if isinstance(node, ast.Subscript):  # Generic[...] and friends
        return dotted_name(node.value)
    return None


def _is_super_call(node: ast.AST, method: str) -> bool:
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == method
        and isinstance(node.func.value, ast.Call)
        and isinstance(node.func.value.func, ast.Name)
        and node.func.value.func.id == "super"
    )


def _super_calls(func: ast.FunctionDef | ast.AsyncFunctionDef, method: str) -> tuple[bool, bool]:
    """(calls ``super().method`` at all, has a call the converter inlines).

    The converter only unrolls a top-level ``return super().m(...)`` or ``super().m(...)``
    statement; any other use (``model_inputs = super().m(...)``) stays a real ``super()`` call,
    which in the flattened class reaches its own bases (GenerationMixin), not the modular parent.
    """
    calls = any(_is_super_call(node, method) for node in ast.walk(func))
    inlined = any(
        isinstance(stmt, (ast.Return, ast.Expr)) and stmt.value is not None and _is_super_call(stmt.value, method)
        for stmt in func.body
    )
    return calls, inlined


# --------------------------------------------------------------------------------------------------
# files


def _existing(path: Path) -> Path | None:
    return path if path.is_file() else None


def _model_suffix(path: Path, prefix: str) -> str | None:
    stem = path.stem
    return stem[len(prefix) :] if stem.startswith(prefix) and path.suffix == ".py" else None


def _header_target(checkout: Checkout, generated_file: Path, named: str) -> Path | None:
    """Where the header's path is in this checkout: below the root (a clone), below the package
    directory (site-packages, where ``src/transformers/`` is not there), or next to the file."""
    if named.startswith("<"):
        return None
    candidates = [checkout.root / named]
    if checkout.package_dir is not None and "transformers/" in named:
        candidates.append(checkout.package_dir / named.partition("transformers/")[2])
    candidates.append(generated_file.parent / Path(named).name)
    for candidate in candidates:
        if _existing(candidate):
            return candidate
    return None


def modular_file_of(checkout: Checkout, generated_file: Path, read: Reader) -> tuple[Path | None, str]:
    """The modular file a generated file comes from, and how it was found (for the detail sentence).

    The header is authoritative; the sibling ``modular_<m>.py`` covers 4.45's placeholder header
    and a header naming a path this checkout lays out differently.
    """
    try:
        named = generated_from(read(generated_file))
    except READ_ERRORS:
        return None, f"cannot read {generated_file.name}"
    if named is not None:
        target = _header_target(checkout, generated_file, named)
        if target is not None:
            return target, "header"
    suffix = _model_suffix(generated_file, "modeling_")
    if suffix is not None:
        sibling = _existing(generated_file.parent / f"modular_{suffix}.py")
        if sibling is not None:
            return sibling, "sibling" if named is None else "sibling (header path not found)"
    if named is None:
        return None, f"{generated_file.name} has no generated-file header and no sibling modular file"
    return None, f"the modular file its header names ({named}) is not in this checkout"


def _relative(checkout: Checkout, path: Path) -> str:
    try:
        return checkout.relative(path)
    except ValueError:
        return path.resolve().as_posix()


# --------------------------------------------------------------------------------------------------
# resolving a base class


@dataclasses.dataclass(frozen=True)
class _Frame:
    """One class to look at: where it is, and the module it sits in (for resolving its bases)."""

    path: Path
    tree: ast.Module
    node: ast.ClassDef


def from_imports(tree: ast.Module) -> dict[str, tuple[int, str, str]]:
    """Local name -> (relative level, module, imported name) for every ``from … import …``."""
    found: dict[str, tuple[int, str, str]] = {}
    for node in top_level(tree):
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                found[alias.asname or alias.name] = (node.level, node.module or "", alias.name)
    return found


def _module_file(checkout: Checkout, importer: Path, level: int, module: str) -> Path | None:
    """The file a ``from <level dots><module> import`` names: relative imports are resolved on disk
    from the importing file (works for any checkout kind), absolute ones through the package."""
    if level == 0:
        return checkout.module_path(module) if module.startswith("transformers.") else None
    base = importer.parent
    for _ in range(level - 1):
        base = base.parent
    target = base.joinpath(*module.split(".")) if module else base
    return _existing(target.with_suffix(".py")) or _existing(target / "__init__.py")


def _class_in(path: Path, name: str, read: Reader) -> _Frame | None:
    tree = parse_file(path, read)
    if tree is None:
        return None
    node = top_level_classes(tree).get(name)
    return _Frame(path, tree, node) if node is not None else None


def _resolve_base(checkout: Checkout, frame: _Frame, base: str, read: Reader) -> list[_Frame]:
    """The frames to look at for one base: the class's definition, with (first) the modular class
    it is generated from when its file is generated. Empty when the base cannot be found."""
    head, _, rest = base.partition(".")
    if not rest:
        local = top_level_classes(frame.tree).get(base)
        if local is not None and local is not frame.node:
            return [_Frame(frame.path, frame.tree, local)]
    imported = from_imports(frame.tree).get(head)
    if imported is None or rest:
        return []
    level, module, name = imported
    path = _module_file(checkout, frame.path, level, module)
    parent = _class_in(path, name, read) if path is not None else None
    if parent is None or path is None:
        return []
    modular, _ = modular_file_of(checkout, path, read) if path.name.startswith("modeling_") else (None, "")
    upstream = _class_in(modular, name, read) if modular is not None and modular != path else None
    # the generated class stays as a fallback: the flattened text holds the method even when the
    # modular class's own chain cannot be followed (a dependency copied in under a renamed name)
    return [upstream, parent] if upstream is not None else [parent]


# --------------------------------------------------------------------------------------------------
# the walk


@dataclasses.dataclass(frozen=True)
class _Found:
    frame: _Frame
    func: ast.FunctionDef | ast.AsyncFunctionDef
    path: tuple[str, ...]  # class names from the start to frame


@dataclasses.dataclass
class _Walk:
    """What a walk saw when it did not find the method, for the "unknown" sentence."""

    visited: list[str] = dataclasses.field(default_factory=list)
    unresolved: list[str] = dataclasses.field(default_factory=list)
    stopped: list[str] = dataclasses.field(default_factory=list)
    too_deep: bool = False


def _find(
    checkout: Checkout, frame: _Frame, method: str, read: Reader, walk: _Walk, path: tuple[str, ...], depth: int
) -> _Found | None:
    """Depth-first through the bases in order (the MRO for the single-inheritance chains modular uses)."""
    path = (*path, frame.node.name)
    walk.visited.append(frame.node.name)
    defs = methods_named(frame.node, method)
    if defs:
        return _Found(frame, defs[-1], path)  # the last ``def`` wins, as in Python
    if depth >= MAX_DEPTH:
        walk.too_deep = True
        return None
    for base_node in frame.node.bases:
        base = dotted_name(base_node)
        if base is None:
            continue
        if base in STOP_BASES or base.rpartition(".")[2] in STOP_BASES:
            walk.stopped.append(base)
            continue
        candidates = _resolve_base(checkout, frame, base, read)
        if not candidates:
            walk.unresolved.append(base)
        for candidate in candidates:
            found = _find(checkout, candidate, method, read, walk, path, depth + 1)
            if found is not None:
                return found
    return None


def _unknown(modular: str | None, cls: str | None, detail: str, chain: tuple[str, ...] = ()) -> MethodOrigin:
    return MethodOrigin(OriginKind.UNKNOWN, modular, cls, None, None, None, chain, detail)


def _not_found_detail(method: str, class_name: str, walk: _Walk) -> str:
    if walk.too_deep:
        return f"{method} is not found within {MAX_DEPTH} levels of {class_name}'s bases"
    if walk.unresolved:
        return f"{method} is not defined in {class_name}'s chain and base(s) {', '.join(walk.unresolved)} cannot be resolved"
    stops = ", ".join(dict.fromkeys(walk.stopped)) or "no further base"
    return f"{method} is not defined in {class_name}'s chain of model classes (it stops at {stops})"


def _parent_definition(checkout: Checkout, found: _Found, method: str, read: Reader) -> _Found | None:
    """The definition ``super().method`` names in the modular view: the first base's chain holding a
    real (not a removal stub) definition."""
    for base_node in found.frame.node.bases:
        base = dotted_name(base_node)
        if base is None or base in STOP_BASES or base.rpartition(".")[2] in STOP_BASES:
            continue
        for candidate in _resolve_base(checkout, found.frame, base, read):
            parent = _find(checkout, candidate, method, read, _Walk(), (), 1)
            if parent is not None:
                return None if _is_removal(parent.func) else parent
    return None


def _super_note(checkout: Checkout, found: _Found, method: str, read: Reader) -> str:
    """What the method's ``super().method(...)`` becomes in the generated file, when it has one."""
    calls, inlined = _super_calls(found.func, method)
    if not calls:
        return ""
    parent = _parent_definition(checkout, found, method, read)
    where = (
        f"{parent.frame.node.name} ({_relative(checkout, parent.frame.path)}:{parent.func.lineno})" if parent else ""
    )
    if inlined and parent is not None:
        return f"; the converter replaces its `return super().{method}(...)` with the body of {where}"
    if parent is not None:
        return (
            f"; its super().{method}(...) stays a real super() call in the generated class, so it reaches "
            f"the generated class's bases (GenerationMixin), not {where}"
        )
    return (
        f"; its super().{method}(...) reaches the library (GenerationMixin), no model class in the chain provides it"
    )


def method_origin(
    checkout: Checkout, generated_file: Path, class_name: str, method: str, read: Reader
) -> MethodOrigin:
    """Where ``method`` of ``class_name`` in a generated modeling file is really written.

    "modular-class": the modular class defines it (edit there); "inherited": the converter copies
    it from a parent (edit the parent, at ``source_*``, which is that parent's own modular file when
    it is generated too); "removed": a ``raise …Error`` stub drops it; "unknown": with the reason.
    """
    modular_path, how = modular_file_of(checkout, generated_file, read)
    if modular_path is None:
        return _unknown(None, None, f"no modular file: {how}")
    modular = _relative(checkout, modular_path)
    tree = parse_file(modular_path, read)
    if tree is None:
        return _unknown(modular, None, f"{modular} cannot be read or parsed")
    node = top_level_classes(tree).get(class_name)
    if node is None:
        return _unknown(
            modular,
            None,
            f"{modular} does not define {class_name} (a class the converter copies in as a dependency, or another name)",
        )
    walk = _Walk()
    found = _find(checkout, _Frame(modular_path, tree, node), method, read, walk, (), 0)
    if found is None:
        chain = tuple(dict.fromkeys(walk.visited))
        return _unknown(modular, class_name, _not_found_detail(method, class_name, walk), chain)
    return _origin_of(checkout, modular, class_name, method, found, read)


def _origin_of(
    checkout: Checkout, modular: str, class_name: str, method: str, found: _Found, read: Reader
) -> MethodOrigin:
    source = _relative(checkout, found.frame.path)
    holder = found.frame.node.name
    line = found.func.lineno
    at_root = found.frame.node.name == class_name and source == modular
    if _is_removal(found.func):
        detail = (
            f"{class_name} removes {method} with a raise stub at {modular}:{line}; the generated class does not have it"
            if at_root
            else f"{holder} ({source}:{line}) removes {method}, so {class_name} does not inherit it"
        )
        kind = OriginKind.REMOVED
    elif at_root:
        kind = OriginKind.MODULAR_CLASS
        detail = f"{class_name} defines {method} in {modular}:{line}" + _super_note(checkout, found, method, read)
    else:
        kind = OriginKind.INHERITED
        via = " -> ".join(found.path)
        detail = f"the converter copies {method} from {holder} ({source}:{line}) via {via}"
        if generated_from(_safe_read(found.frame.path, read) or "") is not None:
            detail += "; that file is generated, but its modular source does not hold the method"
    return MethodOrigin(kind, modular, class_name, source, holder, line, found.path, detail)


def _safe_read(path: Path, read: Reader) -> str | None:
    try:
        return read(path)
    except READ_ERRORS:
        return None


# --------------------------------------------------------------------------------------------------
# pairs and overrides


def _defines_modeling_class(tree: ast.Module) -> bool:
    """Whether the converter would write a ``modeling_*`` file: it sends every class whose name has
    no config/tokenizer/processor suffix there."""
    return any(not name.endswith(_NON_MODELING_SUFFIXES) for name in top_level_classes(tree))


def _names_modular(checkout: Checkout, generated: Path, modular: Path, read: Reader) -> bool:
    """Whether ``generated``'s header says it comes from ``modular`` (the 4.45 placeholder counts
    for the same-named sibling)."""
    text = _safe_read(generated, read)
    named = generated_from(text) if text is not None else None
    if named is None:
        return False
    if named.startswith("<"):
        return _model_suffix(generated, "modeling_") == _model_suffix(modular, "modular_")
    target = _header_target(checkout, generated, named)
    return target is not None and target.resolve() == modular.resolve()


def modular_pairs(checkout: Checkout, files: Iterable[Path], read: Reader) -> list[ModularPair]:
    """For each ``modular_*.py`` among ``files``, the ``modeling_*.py`` file(s) it generates.

    Candidates are the ``modeling_*.py`` files of its directory, confirmed by their header. When
    none is found but the modular file defines model classes, the expected ``modeling_<m>.py`` is
    listed with ``generated_exists=False`` (not generated yet, or deleted).
    """
    pairs: list[ModularPair] = []
    for modular in sorted({Path(f).resolve() for f in files}):
        suffix = _model_suffix(modular, "modular_")
        if suffix is None:
            continue
        generated = [
            candidate
            for candidate in sorted(modular.parent.glob("modeling_*.py"))
            if _names_modular(checkout, candidate, modular, read)
        ]
        for path in generated:
            pairs.append(ModularPair(_relative(checkout, modular), _relative(checkout, path), True))
        expected = modular.parent / f"modeling_{suffix}.py"
        if not generated and not expected.exists():
            tree = parse_file(modular, read)
            if tree is not None and _defines_modeling_class(tree):
                pairs.append(ModularPair(_relative(checkout, modular), _relative(checkout, expected), False))
    return pairs


def modular_overrides(modular_text: str, method: str) -> list[tuple[str, int, int]]:
    """(class, ``def`` line, end line) of every class in a modular file that defines ``method``,
    raise stubs included (``method_origin`` tells them apart)."""
    tree = parse_text(modular_text)
    if tree is None:
        return []
    found: list[tuple[str, int, int]] = []
    for node in top_level(tree):
        if isinstance(node, ast.ClassDef):
            defs = methods_named(node, method)
            if defs:
                func = defs[-1]
                found.append((node.name, func.lineno, func.end_lineno or func.lineno))
    return found


def inherited_origin(
    checkout: Checkout, modular_file: Path, class_name: str, method: str, read: Reader
) -> MethodOrigin | None:
    """What the converter would copy into the generated class if the modular class did not define ``method``.

    The modular trap: deleting a child's override from its modular source makes the converter copy
    the *parent model's* override in, instead of letting the class fall back to the mixin. ``None``
    when no parent in the chain defines the method (deleting it is then safe).
    """
    tree = parse_file(modular_file, read)
    node = top_level_classes(tree).get(class_name) if tree is not None else None
    if tree is None or node is None:
        return None
    frame = _Frame(modular_file, tree, node)
    for base_node in node.bases:
        base = dotted_name(base_node)
        if base is None or base in STOP_BASES or base.rpartition(".")[2] in STOP_BASES:
            continue
        for candidate in _resolve_base(checkout, frame, base, read):
            found = _find(checkout, candidate, method, read, _Walk(), (class_name,), 1)
            if found is not None:
                modular = _relative(checkout, modular_file)
                return _origin_of(checkout, modular, class_name, method, found, read)
    return None
