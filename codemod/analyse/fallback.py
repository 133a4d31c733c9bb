"""What a deletion of an override, or its ``super()`` call, really reaches.

An override is only as safe to delete as what takes its place: the first class after it in its MRO
that defines ``prepare_inputs_for_generation``. That may be ``GenerationMixin`` (of the target
release, or the built-in implementation), a parent model's own override (often a closed dict), or
nothing at all (``object``, ``nn.Module``, a wrapper that holds the real model in an attribute).

``Resolver`` follows a class's bases the way Python does (C3 linearisation), with the stdlib
``ast``: classes of the same file, of other files of the scanned tree (relative and absolute
imports), and names imported from ``transformers``, looked up in the target release's package.
A base it cannot follow is opaque: when it comes before anything that decides, the fallback is
``unknown``. Everything is read through the caller's ``read``, so a scan knows what it depended on.
"""

from __future__ import annotations

import ast
import builtins
import dataclasses
import functools
import os
import re
from collections.abc import Callable
from pathlib import Path

from codemod.analyse.analysis import BodyAnalysis
from codemod.analyse.modular import (
    dotted_name,
    from_imports,
    function_params,
    methods_named,
    parse_file,
    top_level,
    top_level_classes,
)
from codemod.analyse.target import PRETRAINED_CLASS, Target
from codemod.checkout import Checkout, CheckoutKind
from codemod.contracts import OverrideId, Vocabulary
from codemod.sources import METHOD, MIXIN_CLASS, READ_ERRORS, read_source

Reader = Callable[[Path], str]

#: top-level modules whose classes never define the method (torch's modules, the stdlib's ABCs)
_LIBRARY_ROOTS = frozenset(
    {"torch", "abc", "typing", "typing_extensions", "enum", "collections", "dataclasses", "builtins", "numpy"}
)
_PACKAGE = "transformers"
_MAX_DEPTH = 40
_CLASS_LINE = re.compile(r"^class (\w+)\b", re.MULTILINE)


class FallbackKind(Vocabulary):
    #: ``GenerationMixin``'s method (the target release's, or the built-in implementation)
    MIXIN = "mixin"
    #: another class's own override, earlier in the MRO than the mixin
    PARENT = "parent-override"
    #: no base defines the method: a deletion leaves the class without it, ``super()`` raises
    NONE = "none"
    #: a base that cannot be resolved comes first: nothing can be said
    UNKNOWN = "unknown"


@dataclasses.dataclass(frozen=True)
class Fallback:
    kind: FallbackKind
    #: one sentence for people: what is reached and why
    detail: str
    #: MIXIN / PARENT: the class that defines it; UNKNOWN: the base that cannot be resolved
    class_name: str | None = None
    #: where it is defined: relative to the checkout root, or ``transformers/…`` in the target release
    file: str | None = None
    line: int | None = None
    #: the target release it belongs to (None: the built-in implementation, or the scanned tree)
    release: str | None = None
    #: PARENT: its id when it is one of the scanned overrides
    override_id: str | None = None
    #: MIXIN reached only through a ``PreTrainedModel`` that is not a ``GenerationMixin`` (≥ 4.52, or
    #: unknown for the built-in target): a deletion or ``super()`` needs GenerationMixin among the bases
    adds_mixin_base: bool = False
    #: PARENT: its method, as analysed (None when it is not a plain ``def``)
    analysis: BodyAnalysis | None = dataclasses.field(default=None, compare=False)
    #: the classes walked, the override's own first, up to the one that decided
    mro: tuple[str, ...] = ()

    @property
    def location(self) -> str | None:
        return f"{self.file}:{self.line}" if self.file and self.line else self.file


@dataclasses.dataclass(frozen=True)
class ClassView:
    """What the resolver found out about one class of the scanned code."""

    fallback: Fallback
    #: the parameters of the first ``forward`` in the MRO (None: not found, or behind an opaque base)
    forward_params: tuple[str, ...] | None
    #: GenerationMixin among the bases other than through PreTrainedModel (None: an opaque base in the way)
    inherits_mixin_directly: bool | None
    #: the first ``_update_model_kwargs_for_generation`` in the MRO never moves ``cache_position`` on
    #: (``advances_cache_position``; False where none is found before the mixin or an opaque base)
    stale_cache_position: bool = False


# --------------------------------------------------------------------------------------------- symbols


@dataclasses.dataclass(frozen=True)
class ClassSymbols:
    """What the resolver needs of one class definition."""

    name: str
    line: int
    #: each base as a dotted name (None: an expression that is not one)
    bases: tuple[str | None, ...]
    #: the line of its own ``def prepare_inputs_for_generation`` (the last one), if any
    method_line: int | None
    #: it binds the method by assignment (``prepare_inputs_for_generation = other``)
    assigns_method: bool
    #: its own ``forward``'s parameters, if it defines one
    forward_params: tuple[str, ...] | None
    #: whether its own ``_update_model_kwargs_for_generation`` moves ``cache_position`` on (``advances_cache_position``)
    advances_cache_position: bool | None = None

    @property
    def defines_method(self) -> bool:
        return self.method_line is not None or self.assigns_method


@dataclasses.dataclass(frozen=True)
class ModuleSymbols:
    """The top-level classes and imports of one module (``if``/``try`` blocks included)."""

    classes: tuple[ClassSymbols, ...]
    #: local name -> (relative level, module, imported name) for ``from … import …``
    from_imports: tuple[tuple[str, tuple[int, str, str]], ...]
    #: local name -> module for ``import a.b`` (binds ``a``) and ``import a.b as c``
    module_imports: tuple[tuple[str, str], ...]

    def class_named(self, name: str) -> ClassSymbols | None:
        return next((c for c in reversed(self.classes) if c.name == name), None)


#: the method generate() calls after each step to carry the model kwargs (the cache, the mask, ``cache_position``) on
UPDATE_METHOD = "_update_model_kwargs_for_generation"


def advances_cache_position(update: ast.FunctionDef | ast.AsyncFunctionDef | None) -> bool | None:
    """Whether a class's own ``_update_model_kwargs_for_generation`` moves ``cache_position`` on: None where the class
    defines none, False where it neither calls ``super()`` (the mixin's, which does) nor names ``cache_position``
    (4.45's Musicgen-Melody composite, and remote code written before ``cache_position``, keep generate()'s first
    positions on every step)."""
    if update is None:
        return None
    names = {n.id for n in ast.walk(update) if isinstance(n, ast.Name)}
    strings = {n.value for n in ast.walk(update) if isinstance(n, ast.Constant) and isinstance(n.value, str)}
    return "super" in names or "cache_position" in names | strings


def module_symbols(tree: ast.Module) -> ModuleSymbols:
    classes = []
    for node in top_level_classes(tree).values():
        method = methods_named(node, METHOD)
        forward = methods_named(node, "forward")
        update = methods_named(node, UPDATE_METHOD)
        assigns = any(
            isinstance(t, ast.Name) and t.id == METHOD
            for s in node.body
            if isinstance(s, (ast.Assign, ast.AnnAssign))
            for t in (s.targets if isinstance(s, ast.Assign) else [s.target])
        )
        classes.append(
            ClassSymbols(
                name=node.name,
                line=node.lineno,
                bases=tuple(dotted_name(b) for b in node.bases),
                method_line=method[-1].lineno if method else None,
                assigns_method=assigns,
                forward_params=function_params(forward[-1]) if forward else None,
                advances_cache_position=advances_cache_position(update[-1] if update else None),
            )
        )
    return ModuleSymbols(tuple(classes), tuple(from_imports(tree).items()), tuple(_module_imports(tree).items()))


# --------------------------------------------------------------------------------------------- nodes


@dataclasses.dataclass(frozen=True)
class _Class:
    path: Path
    module: ModuleSymbols = dataclasses.field(compare=False, repr=False)
    symbols: ClassSymbols = dataclasses.field(compare=False)

    @property
    def name(self) -> str:
        return self.symbols.name

    @property
    def key(self) -> tuple[str, str]:
        return (str(self.path), self.symbols.name)


@dataclasses.dataclass(frozen=True)
class _Opaque:
    """A base the resolver cannot follow."""

    name: str
    why: str

    @property
    def key(self) -> tuple[str, str]:
        return ("?", self.name)


@dataclasses.dataclass(frozen=True)
class _Root:
    """A library class known not to define the method (``object``, ``nn.Module``)."""

    name: str

    @property
    def key(self) -> tuple[str, str]:
        return ("root", self.name)


@dataclasses.dataclass(frozen=True)
class _BuiltIn:
    """``GenerationMixin`` or ``PreTrainedModel`` when there is no target release to read them from."""

    name: str

    @property
    def key(self) -> tuple[str, str]:
        return ("built-in", self.name)


_Node = _Class | _Opaque | _Root | _BuiltIn


def _c3(heads: list[list[_Node]]) -> list[_Node] | None:
    """C3 merge of linearisations (None when Python would refuse the order)."""
    out: list[_Node] = []
    pending = [list(h) for h in heads if h]
    while pending:
        for head in (seq[0] for seq in pending):
            if not any(head.key in {n.key for n in seq[1:]} for seq in pending):
                break
        else:
            return None
        out.append(head)
        pending = [[n for n in seq if n.key != head.key] for seq in pending]
        pending = [seq for seq in pending if seq]
    return out


# --------------------------------------------------------------------------------------------- resolver


class Resolver:
    """Resolves classes of one scan; memoises every file and linearisation it computes."""

    def __init__(
        self,
        checkout: Checkout,
        target: Target,
        read: Reader,
        analyse: Callable[[Path, str], BodyAnalysis | None],
        known: dict[Path, ModuleSymbols] | None = None,
        exists: Callable[[Path], bool] = Path.is_file,
    ) -> None:
        self.checkout = checkout
        #: whether a file is there (the index's reader records the ones that are not)
        self.exists = exists
        self.target = target
        self.read = read
        #: (file, class name) -> the class's own method, analysed (None: no plain ``def``)
        self.analyse = analyse
        #: the symbols of files already parsed (the index's candidates); others are parsed on demand
        self._modules: dict[Path, ModuleSymbols | None] = dict(known or {})
        self.package = target.package_dir.resolve() if target.package_dir is not None else None
        self.root = checkout.root
        self._mro: dict[tuple[str, str], list[_Node] | None] = {}
        self._bases: dict[tuple[str, str], list[_Node]] = {}

    # -- public

    def view(self, path: Path, class_name: str, flattened: bool = False) -> ClassView | None:
        """``flattened``: a modular source, which the converter flattens. Its ``super()`` call stays a real
        call in the generated class, whose bases are the mixin's; a parent's override is only what a plain
        deletion would make the converter copy in (the plan writes the converter's removal stub instead)."""
        start = self._class_in(path, class_name)
        if start is None:
            return None
        mro = self._linearise(start, 0)
        if mro is None:
            chain = [start, *self._bases_of(start)]
            fallback = Fallback(
                FallbackKind.UNKNOWN,
                f"{class_name}'s bases have no consistent method resolution order",
                mro=tuple(n.name for n in chain),
            )
            return ClassView(fallback, None, None)
        return ClassView(
            self._fallback(start, mro, flattened),
            self._forward(mro),
            self._direct_mixin(start, set()),
            self._stale_positions(mro),
        )

    # -- deciding

    def _fallback(self, start: _Class, mro: list[_Node], flattened: bool = False) -> Fallback:
        pretrained: _Node | None = None
        walked = [start.name]
        copied_in: Fallback | None = None
        for node in mro[1:]:
            walked.append(node.name)
            chain = tuple(walked)
            if isinstance(node, _Opaque):
                return Fallback(
                    FallbackKind.UNKNOWN,
                    f"base {node.name} cannot be resolved: {node.why}",
                    class_name=node.name,
                    mro=chain,
                )
            if isinstance(node, _BuiltIn):
                if node.name == MIXIN_CLASS:
                    return self._builtin_mixin(chain, adds_base=False)
                pretrained = node
                continue
            if isinstance(node, _Root):
                continue
            if self._is_pretrained(node):
                pretrained = node
            if not self._defines(node):
                continue
            if self._is_mixin(node):
                found = self._mixin(node, chain)
                if copied_in is not None:
                    found = dataclasses.replace(
                        found,
                        detail=f"{found.detail}: the generated class does not inherit "
                        f"{copied_in.class_name}, whose override "
                        f"({copied_in.location}) a plain deletion would copy in",
                    )
                return found
            parent = self._parent(node, chain)
            if flattened and parent.kind is FallbackKind.PARENT:
                copied_in = copied_in or parent
                continue
            return parent
        roots = [n.name for n in mro[1:] if isinstance(n, _Root)] or ["object"]
        if pretrained is not None and not self._in_library:
            # Since 4.52 PreTrainedModel is not a GenerationMixin; transformers adds the mixin to remote
            # code only where the class defines the method: without it, GenerationMixin must be a base.
            if isinstance(pretrained, _BuiltIn):
                return self._builtin_mixin(tuple(walked), adds_base=True)
            mixin = self._mixin_class()
            if mixin is not None:
                found = self._mixin(mixin, tuple(walked))
                return dataclasses.replace(
                    found,
                    adds_mixin_base=True,
                    detail=f"{found.detail}, once GenerationMixin is among the bases: PreTrainedModel is not a "
                    f"GenerationMixin in {self._release_name}",
                )
        why = "no base defines it" + (f" ({', '.join(dict.fromkeys(roots))})" if roots else "")
        if pretrained is not None:
            why += f"; PreTrainedModel is not a GenerationMixin in {self._release_name}"
        return Fallback(FallbackKind.NONE, why, mro=tuple(walked))

    @property
    def _in_library(self) -> bool:
        """Code inside the transformers package: no remote-code loading adds the mixin for it."""
        return self.checkout.kind in (CheckoutKind.CHECKOUT, CheckoutKind.PACKAGE)

    @property
    def _release_name(self) -> str:
        return f"transformers {self.target.release}" if self.target.release else "the target release"

    def _builtin_mixin(self, chain: tuple[str, ...], adds_base: bool) -> Fallback:
        detail = "GenerationMixin: the built-in generic implementation (rules/generic_mixin.py)"
        if adds_base:
            detail += (
                ", once GenerationMixin is among the bases: with no target release, PreTrainedModel may not be a "
                "GenerationMixin (it is not since 4.52)"
            )
        return Fallback(
            FallbackKind.MIXIN,
            detail,
            class_name=MIXIN_CLASS,
            file="rules/generic_mixin.py",
            adds_mixin_base=adds_base,
            mro=chain,
        )

    def _mixin(self, node: _Class, chain: tuple[str, ...]) -> Fallback:
        line = node.symbols.method_line or node.symbols.line
        where = self._display(node.path)
        detail = f"GenerationMixin of {self._release_name} ({where}:{line})"
        return Fallback(
            FallbackKind.MIXIN,
            detail,
            class_name=MIXIN_CLASS,
            file=where,
            line=line,
            release=self.target.release,
            mro=chain,
        )

    def _parent(self, node: _Class, chain: tuple[str, ...]) -> Fallback:
        where = self._display(node.path)
        in_tree = self._inside(node.path, self.root)
        release = None if in_tree else self.target.release
        line = node.symbols.method_line
        if line is None:
            return Fallback(
                FallbackKind.UNKNOWN,
                f"{node.name} ({where}) assigns {METHOD} from an expression",
                class_name=node.name,
                file=where,
                mro=chain,
            )
        analysis = self.analyse(node.path, node.name)
        if analysis is None:
            return Fallback(
                FallbackKind.UNKNOWN,
                f"{node.name}'s {METHOD} ({where}:{line}) cannot be analysed",
                class_name=node.name,
                file=where,
                line=line,
                mro=chain,
            )
        override_id = OverrideId.of(where, node.name) if in_tree else None
        owner = "" if in_tree else f" in {self._release_name}"
        return Fallback(
            FallbackKind.PARENT,
            f"the override of {node.name}{owner} ({where}:{line})",
            class_name=node.name,
            file=where,
            line=line,
            release=release,
            override_id=override_id,
            analysis=analysis,
            mro=chain,
        )

    def _forward(self, mro: list[_Node]) -> tuple[str, ...] | None:
        for node in mro:
            if isinstance(node, (_Opaque, _BuiltIn)):
                return None
            if isinstance(node, _Class) and node.symbols.forward_params is not None:
                return node.symbols.forward_params
        return None

    def _stale_positions(self, mro: list[_Node]) -> bool:
        """Whether the first ``_update_model_kwargs_for_generation`` in the MRO never moves ``cache_position`` on; False
        where an opaque or built-in base (the mixin's own moves it) comes first."""
        for node in mro:
            if isinstance(node, (_Opaque, _BuiltIn)):
                return False
            if isinstance(node, _Class) and node.symbols.advances_cache_position is not None:
                return node.symbols.advances_cache_position is False
        return False

    def _direct_mixin(self, node: _Node, seen: set[tuple[str, str]]) -> bool | None:
        """GenerationMixin among the bases, PreTrainedModel's own bases left out (4.45 – 4.51's can_generate())."""
        if node.key in seen:
            return False
        seen.add(node.key)
        if isinstance(node, _BuiltIn):
            return node.name == MIXIN_CLASS
        if isinstance(node, _Opaque):
            return None
        if isinstance(node, _Root) or self._is_pretrained(node):
            return False
        if self._is_mixin(node) or node.name.endswith(MIXIN_CLASS):
            return True
        answers = [self._direct_mixin(b, seen) for b in self._bases_of(node)]
        if any(answers):
            return True
        return None if None in answers else False

    # -- classes

    @staticmethod
    def _defines(node: _Class) -> bool:
        return node.symbols.defines_method

    def _is_mixin(self, node: _Class) -> bool:
        return node.name == MIXIN_CLASS and self._in_package(node.path)

    def _is_pretrained(self, node: _Node) -> bool:
        return isinstance(node, _Class) and node.name == PRETRAINED_CLASS and self._in_package(node.path)

    def _mixin_class(self) -> _Class | None:
        if self.package is None:
            return None
        return self._class_in(self.package / "generation" / "utils.py", MIXIN_CLASS)

    def _linearise(self, node: _Node, depth: int) -> list[_Node] | None:
        if not isinstance(node, _Class):
            return [node]
        if node.key in self._mro:
            return self._mro[node.key]
        self._mro[node.key] = [node]  # a cycle (a name that resolves to itself) ends here
        bases = self._bases_of(node) if depth < _MAX_DEPTH else [_Opaque("…", f"more than {_MAX_DEPTH} levels")]
        linearised = [self._linearise(b, depth + 1) for b in bases]
        known = [seq for seq in linearised if seq is not None]
        result: list[_Node] | None
        if len(known) < len(linearised):
            result = None
        else:
            merged = _c3([*known, list(bases)])
            result = None if merged is None else [node, *merged]
        self._mro[node.key] = result
        return result

    def _bases_of(self, node: _Class) -> list[_Node]:
        if node.key not in self._bases:
            found: list[_Node] = []
            for name in node.symbols.bases:
                if name is None:
                    found.append(_Opaque("(an expression)", "a base that is not a name"))
                    continue
                found.append(self._lookup(node.path, node.module, name, 0, exclude=node.symbols))
            self._bases[node.key] = found
        return self._bases[node.key]

    def _class_in(self, path: Path, name: str) -> _Class | None:
        module = self._symbols(path)
        symbols = module.class_named(name) if module is not None else None
        return _Class(path, module, symbols) if module is not None and symbols is not None else None

    def _symbols(self, path: Path) -> ModuleSymbols | None:
        if path not in self._modules:
            try:
                tree = parse_file(path, self.read)
            except UnicodeDecodeError:
                tree = None
            self._modules[path] = module_symbols(tree) if tree is not None else None
        return self._modules[path]

    # -- names

    def _lookup(
        self, path: Path, module: ModuleSymbols, dotted: str, depth: int, exclude: ClassSymbols | None = None
    ) -> _Node:
        """What the name ``dotted`` means in ``module`` (the file at ``path``)."""
        if depth > _MAX_DEPTH:
            return _Opaque(dotted, f"more than {_MAX_DEPTH} re-exports")
        head, _, rest = dotted.partition(".")
        if not rest:
            local = module.class_named(head)
            if local is not None and local is not exclude:
                return _Class(path, module, local)
        imported = dict(module.from_imports).get(head)
        if imported is not None:
            level, source, name = imported
            if rest:  # ``from torch import nn`` … ``nn.Module``
                inner, _, attr = f"{name}.{rest}".rpartition(".")
                return self._in_module(path, level, f"{source}.{inner}" if source else inner, attr, dotted, depth)
            return self._in_module(path, level, source, name, dotted, depth)
        bound = dict(module.module_imports).get(head)
        if bound is not None and rest:
            inner, _, attr = rest.rpartition(".")
            return self._in_module(path, 0, f"{bound}.{inner}" if inner else bound, attr, dotted, depth)
        if not rest and hasattr(builtins, head):
            return _Root(head)
        return _Opaque(dotted, f"neither defined nor imported in {self._display(path)}")

    def _in_module(self, importer: Path, level: int, module: str, name: str, shown: str, depth: int) -> _Node:
        top = module.split(".")[0]
        if level == 0 and top in _LIBRARY_ROOTS:
            return _Root(shown)
        if level == 0 and top == _PACKAGE and self.package is None:
            if name in (MIXIN_CLASS, PRETRAINED_CLASS):
                return _BuiltIn(name)
            return _Opaque(shown, f"imported from {module}, and no target release to look it up in (use --target)")
        path = self._module_file(importer, level, module)
        if path is None:
            where = "outside the scanned tree" if level == 0 else "not found"
            return _Opaque(shown, f"imported from {'.' * level}{module}, {where}")
        symbols = self._symbols(path)
        if symbols is None:
            return _Opaque(shown, f"{self._display(path)} cannot be parsed")
        found = self._lookup(path, symbols, name, depth + 1)
        if isinstance(found, _Opaque) and self._in_package(path):
            # transformers' lazy __init__ files name their classes in strings: look the class up by name
            located = self._package_classes().get(name)
            if located is not None:
                cls = self._class_in(located, name)
                if cls is not None:
                    return cls
        return found

    def _module_file(self, importer: Path, level: int, module: str) -> Path | None:
        parts = [p for p in module.split(".") if p]
        if level:
            base = importer.parent
            for _ in range(level - 1):
                base = base.parent
            return self._module_path(base, parts)
        if parts[0] == _PACKAGE:
            return self._module_path(self.package, parts[1:]) if self.package is not None else None
        candidates = [self._module_path(self.root, parts)]
        if parts[0] == self.root.name:  # the scanned directory is the package itself
            candidates.append(self._module_path(self.root, parts[1:]))
        return next((c for c in candidates if c is not None and self._inside(c, self.root)), None)

    def _module_path(self, base: Path, parts: list[str]) -> Path | None:
        target = base.joinpath(*parts) if parts else base
        for candidate in (target.with_suffix(".py") if parts else None, target / "__init__.py"):
            if candidate is not None and self.exists(candidate):
                return candidate
        return None

    def _package_classes(self) -> dict[str, Path]:
        return _class_index(str(self.package)) if self.package is not None else {}

    # -- paths

    @staticmethod
    def _inside(path: Path, directory: Path) -> bool:
        try:
            path.resolve().relative_to(directory.resolve())
        except ValueError:
            return False
        return True

    def _in_package(self, path: Path) -> bool:
        return self.package is not None and self._inside(path, self.package)

    def _display(self, path: Path) -> str:
        if self._inside(path, self.root):
            return self.checkout.relative(path)
        if self.package is not None and self._inside(path, self.package):
            return f"{_PACKAGE}/{path.resolve().relative_to(self.package).as_posix()}"
        return path.as_posix()


def _module_imports(tree: ast.Module) -> dict[str, str]:
    """Local name -> module for ``import a.b`` (binds ``a`` to ``a``) and ``import a.b as c``."""
    found: dict[str, str] = {}
    for node in top_level(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    found[alias.asname] = alias.name
                else:
                    head = alias.name.split(".")[0]
                    found[head] = head
    return found


@functools.lru_cache(maxsize=8)
def _class_index(package: str) -> dict[str, Path]:
    """Class name -> the file defining it, for a transformers package (modeling files first)."""
    found: dict[str, Path] = {}
    later: dict[str, Path] = {}
    for directory, subdirs, files in os.walk(package):
        subdirs[:] = sorted(d for d in subdirs if not d.startswith((".", "__")))
        for name in sorted(files):
            if not name.endswith(".py") or name.startswith(("modular_", "modeling_tf_", "modeling_flax_")):
                continue
            path = Path(directory, name)
            try:
                text = read_source(path)
            except READ_ERRORS:
                continue
            into = later if "deprecated" in path.parts else found
            for match in _CLASS_LINE.finditer(text):
                into.setdefault(match.group(1), path)
    return {**later, **found}
