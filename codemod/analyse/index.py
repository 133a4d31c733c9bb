"""Index: what a checkout holds — every override, the copies and modular sources around it.

``build_index(checkout)`` reads every Python file of the model code, keeps those that mention
``prepare_inputs_for_generation`` (a text prefilter: most files are never parsed), and extracts
``FileFacts`` from each: classes, overrides with their ``BodyAnalysis``, ``# Copied from`` markers.
Facts depend only on a file's text, so they are cached by content hash in the user cache dir and
computed in a process pool when there are many. The graph around the overrides (copy groups, stale
markers, where a generated file's method really comes from) is then assembled from the facts.
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import os
import pickle
import textwrap
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from functools import lru_cache
from pathlib import Path

from codemod.analyse import copies, modular
from codemod.analyse.analysis import BodyAnalysis, Delegation
from codemod.analyse.fallback import Fallback, ModuleSymbols, Resolver, module_symbols
from codemod.analyse.target import Target, for_checkout
from codemod.cache import cache_dir
from codemod.checkout import Checkout, CheckoutKind, real_path
from codemod.contracts import CopyScope, OverrideId, ValueOrigin
from codemod.rules.base import Kind
from codemod.sources import (
    MARK,
    METHOD,
    NEEDLE,
    READ_ERRORS,
    FileKind,
    file_kind,
    model_name,
    python_files,
    read_source,
)


@dataclasses.dataclass(frozen=True)
class ClassFacts:
    name: str
    line: int  # the ``class`` line
    start_line: int  # first decorator, else the ``class`` line
    end_line: int
    bases: tuple[str, ...]
    methods: tuple[str, ...]
    #: parameters of the class's own ``forward`` (None when it defines none)
    forward_params: tuple[str, ...] | None
    #: simple class-level assignments, name -> code (``_supports_cache_class = True``)
    attributes: tuple[tuple[str, str], ...]
    marker: copies.CopyMarker | None
    #: sub-models ``__init__`` builds from a class by name, attribute -> class (``self.text_model = TextLM(...)``)
    submodels: tuple[tuple[str, str], ...] = ()


@dataclasses.dataclass(frozen=True)
class OverrideFacts:
    class_name: str
    line: int  # the ``def`` line
    start_line: int  # first decorator, else the ``def`` line
    end_line: int
    analysis: BodyAnalysis
    marker: copies.CopyMarker | None  # a method-level ``# Copied from``
    ignore_copy: tuple[int, ...]  # lines of ``# Ignore copy`` inside the method
    overwritten: str | None  # the reason of a ``# Overwritten -- reason`` comment
    #: a ``# Ignore copy`` right above the method: a class-level copy leaves this method out
    ignored_in_class_copy: bool = False
    #: ``async def``, and the decorators' code: what no rule models (``codemod.analyse.unmodelled``)
    asynchronous: bool = False
    decorators: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class FileFacts:
    path: str  # relative to the checkout root
    kind: FileKind
    sha256: str
    generated_from: str | None  # the modular file named in a generated file's header
    classes: tuple[ClassFacts, ...]
    overrides: tuple[OverrideFacts, ...]
    functions: tuple[str, ...]  # module-level function names
    error: str | None = None  # why the file could not be parsed
    #: top-level classes and imports, for resolving bases (``codemod.analyse.fallback``)
    symbols: ModuleSymbols | None = None


@dataclasses.dataclass(frozen=True)
class CopyLink:
    """A ``# Copied from`` marker that covers an override, and whether it still holds."""

    scope: CopyScope
    marker: copies.CopyMarker
    check: copies.CopyCheck
    #: the id of the override it copies, when that is an override of this index
    source_id: OverrideId | None
    #: the override check_copies compares it with where that is not what its marker names (``CopyCheck.loose``):
    #: no copy group (it is nobody's copy by name), but when that override changes, this marker must go
    follows: OverrideId | None = None


@dataclasses.dataclass(frozen=True)
class Override:
    id: OverrideId
    file: str
    kind: FileKind
    model: str | None
    class_name: str
    line: int
    start_line: int
    end_line: int
    bases: tuple[str, ...]
    analysis: BodyAnalysis
    #: the class's ``forward`` parameters, looked up through bases defined in the same file
    forward_params: tuple[str, ...] | None
    #: class attributes, looked up through bases defined in the same file (own class first)
    attributes: tuple[tuple[str, str], ...]
    #: names of module-level functions of the file (e.g. a 4D-mask helper)
    module_functions: tuple[str, ...]
    #: the base model class's methods, when ``base_model_prefix`` names a class in this file
    copied_from: CopyLink | None
    copy_group: str | None
    generated_from: modular.MethodOrigin | None
    overwritten: str | None
    deprecated: bool
    ignore_copy: tuple[int, ...] = ()
    #: GenerationMixin among the class's bases, PreTrainedModel's own bases left out (None: unknown, a
    #: base cannot be resolved)
    inherits_generation_mixin: bool | None = None
    #: what a deletion of the override, or its super() call, reaches (``codemod.analyse.fallback``)
    fallback: Fallback | None = None
    #: the override is code of the transformers package being migrated (a checkout or an installed package)
    in_library: bool = False
    #: a modular source's override only: the override the converter would copy in if it were deleted (the
    #: modular trap, ``modular.inherited_origin``); None when no parent defines the method
    inherited_from: OverrideId | None = None
    #: where the override takes its inputs from a sub-model whose class (in this file) has an override of its
    #: own that does model-specific work: that class and the first such statement
    delegate_work: tuple[str, str] | None = None
    #: the class's own ``_update_model_kwargs_for_generation`` (the nearest in the file) never moves generate()'s
    #: ``cache_position`` on: positions the mixin slices the ids by would be the first step's
    stale_cache_position: bool = False
    #: ``async def``, and the decorators' code: what no rule models (``codemod.analyse.unmodelled``)
    asynchronous: bool = False
    decorators: tuple[str, ...] = ()

    @property
    def lines(self) -> int:
        return self.end_line - self.start_line + 1

    def attribute(self, name: str) -> str | None:
        return dict(self.attributes).get(name)


@dataclasses.dataclass(frozen=True)
class SkippedFile:
    path: str
    kind: FileKind
    reason: str
    classes: tuple[str, ...]  # classes in it that define the method


@dataclasses.dataclass(frozen=True)
class BoundMethod:
    """A class that binds the method by assignment (``prepare_inputs_for_generation = <value>``), not a ``def``:
    nothing this tool can read or change (a subclass's override that would fall back to it is kept, its fallback
    unknown: ``codemod.analyse.fallback``), listed so that it is not passed over silently. A tree this tool migrated
    has such lines of its own (``codemod.transform.alias``)."""

    path: str
    class_name: str
    line: int
    value: str


@dataclasses.dataclass(frozen=True)
class FileError:
    path: str
    error: str


@dataclasses.dataclass(frozen=True)
class Index:
    checkout: Checkout
    files_read: int
    candidate_files: int
    overrides: tuple[Override, ...]
    skipped: tuple[SkippedFile, ...]
    errors: tuple[FileError, ...]
    copy_groups: tuple[copies.CopyGroup, ...]
    modular_pairs: tuple[modular.ModularPair, ...]
    #: classes that bind the method by assignment instead of defining it
    bound: tuple[BoundMethod, ...] = ()

    def by_id(self) -> dict[str, Override]:
        return {o.id: o for o in self.overrides}


# --------------------------------------------------------------------------------------------- facts


def _end_line(node: ast.stmt) -> int:
    return node.end_lineno or node.lineno


def _start_line(node: ast.FunctionDef | ast.ClassDef | ast.AsyncFunctionDef) -> int:
    return min([d.lineno for d in node.decorator_list] + [node.lineno])


def _attributes(cls: ast.ClassDef) -> tuple[tuple[str, str], ...]:
    out = []
    for statement in cls.body:
        if (
            isinstance(statement, ast.Assign)
            and len(statement.targets) == 1
            and isinstance(statement.targets[0], ast.Name)
        ):
            out.append((statement.targets[0].id, ast.unparse(statement.value)))
        elif isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name) and statement.value:
            out.append((statement.target.id, ast.unparse(statement.value)))
    return tuple(out)


def _submodels(cls: ast.ClassDef) -> tuple[tuple[str, str], ...]:
    """``self.<attr> = <Class>(...)`` in ``__init__``: the sub-models built from a class by name."""
    init = next((n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
    if init is None:
        return ()
    out = []
    for node in ast.walk(init):
        if (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Attribute)
            and isinstance(node.targets[0].value, ast.Name)
            and node.targets[0].value.id == "self"
            and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Name)
        ):
            out.append((node.targets[0].attr, node.value.func.id))
    return tuple(out)


def _own_work(analysis: BodyAnalysis) -> str | None:
    """What of an override is the model's own: a statement no rule knows, a bespoke behaviour, or an input
    computed by code the engine cannot vouch for."""
    if analysis.unrecognised:
        return analysis.unrecognised[0].code.splitlines()[0]
    bespoke = next((r.behaviour for r in analysis.recognised if Kind(r.kind) is Kind.BESPOKE), None)
    if bespoke is not None:
        return bespoke
    return next(
        (f"{o.key} computed its own way" for o in analysis.outputs if o.value.origin is ValueOrigin.EXPR), None
    )


def _overwritten(lines: Sequence[str], start: int, end: int) -> str | None:
    for line in lines[start - 1 : end]:
        _, found, reason = line.partition(MARK)
        if found:
            return reason.strip() or "(no reason given)"
    return None


def _ignored_above(lines: Sequence[str], start: int) -> bool:
    """Whether the comment lines right above line ``start`` include ``# Ignore copy``."""
    line = start - 1
    while line >= 1 and lines[line - 1].strip().startswith("#"):
        if lines[line - 1].strip().startswith(copies.IGNORE_COPY):
            return True
        line -= 1
    return False


def _analyse_method(lines: Sequence[str], start: int, end: int) -> BodyAnalysis:
    """Analyse one method from its own lines: parsing the snippet is far cheaper than the module."""
    # libcst and the rules load only when a file has to be analysed (a warm scan never needs them).
    import libcst as cst
    from libcst.metadata import MetadataWrapper, PositionProvider

    from codemod.analyse.recognise import analyse_function

    source = textwrap.dedent("".join(lines[start - 1 : end]))
    wrapper = MetadataWrapper(cst.parse_module(source))
    positions = wrapper.resolve(PositionProvider)
    function = next(n for n in wrapper.module.body if isinstance(n, cst.FunctionDef))
    return analyse_function(function, positions, line_offset=start - 1)


def file_facts(path: str, text: str, kind: FileKind) -> FileFacts:
    """Everything the index needs from one file; a pure function of its text."""
    sha = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    generated = modular.generated_from(text)
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError) as error:
        return FileFacts(path, kind, sha, generated, (), (), (), error=f"cannot parse: {error}")
    except (RecursionError, MemoryError):  # a 20,000-term sum: deeper than CPython's compiler goes
        return FileFacts(path, kind, sha, generated, (), (), (), error="cannot parse: nested too deeply to compile")
    lines = text.splitlines(keepends=True)
    plain = [line.rstrip("\r\n") for line in lines]
    classes: list[ClassFacts] = []
    overrides: list[OverrideFacts] = []
    functions = tuple(n.name for n in tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)))
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        methods = {n.name: n for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
        forward = methods.get("forward")
        classes.append(
            ClassFacts(
                name=node.name,
                line=node.lineno,
                start_line=_start_line(node),
                end_line=_end_line(node),
                bases=tuple(ast.unparse(b) for b in node.bases),
                methods=tuple(methods),
                forward_params=modular.function_params(forward) if forward else None,
                attributes=_attributes(node),
                marker=copies.marker_above(plain, _start_line(node)),
                submodels=_submodels(node),
            )
        )
        method = methods.get(METHOD)
        if method is None:
            continue
        start, end = _start_line(method), _end_line(method)
        try:
            analysis = _analyse_method(lines, start, end)
        except Exception as error:  # noqa: BLE001 - libcst rejects some code ast accepts; report it, go on
            return FileFacts(path, kind, sha, generated, (), (), functions, error=f"cannot parse {node.name}: {error}")
        overrides.append(
            OverrideFacts(
                class_name=node.name,
                line=method.lineno,
                start_line=start,
                end_line=end,
                analysis=analysis,
                marker=copies.marker_above(plain, start),
                ignore_copy=copies.ignore_copy_lines(plain, start, end),
                overwritten=_overwritten(plain, start, end),
                ignored_in_class_copy=_ignored_above(plain, start),
                asynchronous=isinstance(method, ast.AsyncFunctionDef),
                decorators=tuple(ast.unparse(d) for d in method.decorator_list),
            )
        )
    return FileFacts(
        path, kind, sha, generated, tuple(classes), tuple(overrides), functions, symbols=module_symbols(tree)
    )


# --------------------------------------------------------------------------------------------- cache


#: the modules whose code decides what a scan finds; a change to any of them invalidates the caches
#: besides this stage's modules, the ones whose code decides facts and findings too
_RESULT_MODULES = ("sources.py", "contracts.py")


@lru_cache(maxsize=1)
def tool_fingerprint() -> str:
    """A hash of the code that computes facts and findings: a change to a rule invalidates the cache."""
    digest = hashlib.sha256()
    stage = Path(__file__).resolve().parent
    package = stage.parent
    paths = [
        *sorted(stage.glob("*.py")),
        *(package / name for name in _RESULT_MODULES),
        *sorted((package / "rules").glob("*.py")),
    ]
    for path in paths:
        digest.update(path.name.encode())
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


class FactsCache:
    """``FileFacts`` on disk, one pickle per (tool version, file content)."""

    def __init__(self, directory: Path | None) -> None:
        self.directory = directory

    @classmethod
    def default(cls) -> FactsCache:
        return cls(cache_dir("facts", tool_fingerprint()))

    def _path(self, key: str) -> Path | None:
        return None if self.directory is None else self.directory / f"{key}.pickle"

    def get(self, key: str) -> FileFacts | None:
        path = self._path(key)
        if path is None:
            return None
        try:
            with path.open("rb") as handle:
                facts: FileFacts = pickle.load(handle)  # written by put, under a key of this tool's version
                return facts
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError):
            return None

    def put(self, key: str, facts: FileFacts) -> None:
        path = self._path(key)
        if path is None:
            return
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        with tmp.open("wb") as handle:
            pickle.dump(facts, handle, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)


def _cache_key(rel: str, text: str) -> str:
    # The relative path is part of the key: ids and reported paths are inside the facts.
    return hashlib.sha256(
        rel.encode("utf-8", "surrogateescape") + b"\0" + text.encode("utf-8", "surrogatepass")
    ).hexdigest()


def _facts_job(job: tuple[str, str, FileKind]) -> FileFacts:
    rel, text, kind = job
    return file_facts(rel, text, kind)


# --------------------------------------------------------------------------------------------- build


@dataclasses.dataclass
class Reader:
    """Reads each file once per scan; the copy and modular graphs read their targets through it.

    ``texts`` keeps every file read, in order, so a scan can tell afterwards what it depended on.
    """

    texts: dict[Path, str] = dataclasses.field(default_factory=dict)
    #: files looked for and not found (a base class's module): a scan depends on their absence too
    absent: set[Path] = dataclasses.field(default_factory=set)

    def exists(self, path: Path) -> bool:
        if path.is_file():
            return True
        self.absent.add(Path(os.path.abspath(path)))  # not resolved: a loop has nowhere to resolve to
        return False

    def __call__(self, path: Path) -> str:
        # Discovery hands over absolute paths below the (resolved) root: resolving each of the
        # thousands of files again is most of a warm scan's time, so only unknown paths are.
        text = self.texts.get(path)
        if text is None:
            path = real_path(path)
            if path not in self.texts:
                self.texts[path] = read_source(path)
            text = self.texts[path]
        return text


@dataclasses.dataclass(frozen=True)
class Candidate:
    path: Path
    rel: str
    text: str
    kind: FileKind


@dataclasses.dataclass
class Discovery:
    """Every model file read, and the candidates among them (those that mention the method)."""

    checkout: Checkout
    read: Reader
    candidates: list[Candidate]
    errors: list[FileError]
    files_read: int


def discover(checkout: Checkout) -> Discovery:
    read = Reader()
    candidates: list[Candidate] = []
    errors: list[FileError] = []
    files_read = 0
    for path in python_files(checkout):
        files_read += 1
        rel = Path(os.path.relpath(path, checkout.root)).as_posix()
        try:
            text = read(path)
        except READ_ERRORS as error:
            errors.append(FileError(rel, f"cannot read: {error}"))
            continue
        if NEEDLE in text:
            candidates.append(Candidate(path, rel, text, file_kind(path, text)))
    return Discovery(checkout, read, candidates, errors, files_read)


Progress = Callable[[str, int, int], None]


def build_index(
    checkout: Checkout,
    *,
    cache: FactsCache | None = None,
    jobs: int | None = None,
    progress: Progress | None = None,
    discovery: Discovery | None = None,
    target: Target | None = None,
) -> Index:
    """Index ``checkout``. ``jobs`` caps the process pool (1: no pool); ``progress(stage, done, total)``;
    ``target``: the release the names of the classes' bases resolve in (default: ``for_checkout``)."""
    cache = cache if cache is not None else FactsCache.default()
    found = discovery if discovery is not None else discover(checkout)
    read, errors = found.read, list(found.errors)
    candidates = [(c.path, c.rel, c.text, c.kind) for c in found.candidates]
    files_read = found.files_read

    facts: dict[str, FileFacts] = {}
    missing: list[tuple[str, str, FileKind]] = []
    for _, rel, text, kind in candidates:
        cached = cache.get(_cache_key(rel, text))
        if cached is not None:
            facts[rel] = cached
        else:
            missing.append((rel, text, kind))
    for done, computed in enumerate(_compute(missing, jobs), start=1):
        facts[computed.path] = computed
        cache.put(_cache_key(computed.path, read(checkout.root / computed.path)), computed)
        if progress:
            progress("parse", done, len(missing))

    target = target if target is not None else for_checkout(checkout)
    return _assemble(checkout, [facts[rel] for _, rel, _, _ in candidates], errors, files_read, read, target, cache)


def _compute(jobs_in: list[tuple[str, str, FileKind]], jobs: int | None) -> Iterable[FileFacts]:
    workers = min(jobs or os.cpu_count() or 1, len(jobs_in))
    # A pool costs ~0.2 s to start: only worth it for more than a handful of files.
    if workers <= 1 or len(jobs_in) < 8:
        yield from map(_facts_job, jobs_in)
        return
    with ProcessPoolExecutor(max_workers=workers) as pool:
        # Big files first, so that one large file does not finish last on its own.
        ordered = sorted(jobs_in, key=lambda job: -len(job[1]))
        yield from pool.map(_facts_job, ordered, chunksize=1)


def _resolved_in_file(classes: dict[str, ClassFacts], name: str) -> list[ClassFacts]:
    """``name`` and its bases defined in the same file, nearest first (a breadth-first MRO)."""
    seen: list[ClassFacts] = []
    queue = [name]
    while queue:
        current = classes.get(queue.pop(0))
        if current is None or current in seen:
            continue
        seen.append(current)
        queue.extend(b.split("[")[0] for b in current.bases)
    return seen


def _inherits_generation_mixin(chain: list[ClassFacts], classes: dict[str, ClassFacts]) -> bool | None:
    """Whether a class inherits GenerationMixin (or a model's own subclass of it) through its bases."""
    bases = [b.split("[")[0].rsplit(".", 1)[-1] for c in chain for b in c.bases]
    if any(b.endswith("GenerationMixin") for b in bases):
        return True
    # every base outside the file is PreTrainedModel (or nn.Module): it does not
    outside = {b for b in bases if b not in classes}
    return False if outside <= {"PreTrainedModel", "Module", "nn.Module", "object"} else None


def _method_analyser(
    checkout: Checkout, all_facts: list[FileFacts], read: Reader, cache: FactsCache
) -> Callable[[Path, str], BodyAnalysis | None]:
    """(file, class) -> the class's own method, analysed: from the index's facts, else (a parent in the
    target release, or in a file of the tree that is not a candidate) from the file's facts, cached."""
    by_path = {checkout.root / f.path: f for f in all_facts}

    def analyse(path: Path, class_name: str) -> BodyAnalysis | None:
        facts = by_path.get(path)
        if facts is None:
            try:
                text = read(path)
            except READ_ERRORS:
                return None
            key = _cache_key(path.as_posix(), text)
            facts = cache.get(key)
            if facts is None:
                facts = file_facts(path.as_posix(), text, file_kind(path, text))
                cache.put(key, facts)
            by_path[path] = facts
        return next((o.analysis for o in facts.overrides if o.class_name == class_name), None)

    return analyse


def _assemble(
    checkout: Checkout,
    all_facts: list[FileFacts],
    errors: list[FileError],
    files_read: int,
    read: Reader,
    target: Target | None = None,
    cache: FactsCache | None = None,
) -> Index:
    """The index from every candidate file's facts: each override with what its class, its bases and the
    target release say about it, its copy link, the copy groups and the modular pairs."""
    target = target if target is not None else for_checkout(checkout)
    known = {checkout.root / f.path: f.symbols for f in all_facts if f.symbols is not None}
    resolver = Resolver(
        checkout,
        target,
        read,
        _method_analyser(checkout, all_facts, read, cache or FactsCache(None)),
        known,
        exists=read.exists,
    )
    overrides: list[Override] = []
    skipped: list[SkippedFile] = []
    bound: list[BoundMethod] = []
    pending_links: list[_PendingLink] = []
    for facts in all_facts:
        if facts.error is not None:
            errors.append(FileError(facts.path, facts.error))
            continue
        if facts.kind.skipped:
            if facts.overrides:
                skipped.append(_skipped(facts))
            continue
        classes = {c.name: c for c in facts.classes}
        bound.extend(
            BoundMethod(facts.path, c.name, c.line, value)
            for c in facts.classes
            if METHOD not in c.methods and (value := dict(c.attributes).get(METHOD)) is not None
        )
        for found in facts.overrides:
            overrides.append(_override(checkout, resolver, read, facts, classes, found))
            link = _pending_link(len(overrides) - 1, found, classes[found.class_name])
            if link is not None:
                pending_links.append(link)

    overrides = _with_copy_links(checkout, read, overrides, pending_links)
    groups = copies.copy_groups((o.id, o.copied_from.source_id if o.copied_from else None) for o in overrides)
    group_of = {member: group.source for group in groups for member in group.members}
    overrides = [dataclasses.replace(o, copy_group=group_of.get(o.id)) for o in overrides]

    pairs: list[modular.ModularPair] = []
    if checkout.kind in (CheckoutKind.CHECKOUT, CheckoutKind.PACKAGE):
        modular_files = [checkout.root / f.path for f in all_facts if f.kind is FileKind.MODULAR]
        pairs = modular.modular_pairs(checkout, modular_files, read)

    return Index(
        checkout=checkout,
        files_read=files_read,
        candidate_files=len(all_facts),
        overrides=tuple(overrides),
        skipped=tuple(skipped),
        errors=tuple(errors),
        copy_groups=tuple(groups),
        modular_pairs=tuple(pairs),
        bound=tuple(bound),
    )


#: an override's ``# Copied from`` marker waiting to be checked: (its position among the overrides, the
#: marker's scope, the marker, the first and last line of what it marks)
_PendingLink = tuple[int, CopyScope, copies.CopyMarker, int, int]


def _skipped(facts: FileFacts) -> SkippedFile:
    return SkippedFile(
        facts.path,
        facts.kind,
        f"{facts.kind.value} code: this tool migrates PyTorch models",
        tuple(o.class_name for o in facts.overrides),
    )


def _pending_link(position: int, found: OverrideFacts, owner: ClassFacts) -> _PendingLink | None:
    """The ``# Copied from`` marker an override is checked against: its own, else its class's (unless the
    class's copy ignores the method)."""
    if found.marker is not None:
        return (position, CopyScope.METHOD, found.marker, found.start_line, found.end_line)
    if owner.marker is not None and not found.ignored_in_class_copy:
        return (position, CopyScope.CLASS, owner.marker, owner.start_line, owner.end_line)
    return None


def _override(
    checkout: Checkout,
    resolver: Resolver,
    read: Reader,
    facts: FileFacts,
    classes: dict[str, ClassFacts],
    found: OverrideFacts,
) -> Override:
    """One override with what its class and the same-file bases say of it (forward's parameters, the class
    attributes, GenerationMixin, the update of the model kwargs), what the resolver finds beyond the file,
    where a generated or modular method comes from, and what a sub-model it delegates to does."""
    in_library = checkout.kind in (CheckoutKind.CHECKOUT, CheckoutKind.PACKAGE)
    path = checkout.root / facts.path
    chain = _resolved_in_file(classes, found.class_name)
    forward = next((c.forward_params for c in chain if c.forward_params is not None), None)
    attributes: dict[str, str] = {}
    for cls in reversed(chain):
        attributes.update(cls.attributes)
    inherits = _inherits_generation_mixin(chain, classes)
    # whether the nearest own ``_update_model_kwargs_for_generation`` of the same-file chain moves
    # cache_position on: read once per class, with the file's symbols (``ClassSymbols``)
    own = (facts.symbols.class_named(c.name) if facts.symbols is not None else None for c in chain)
    update = next(
        (s.advances_cache_position for s in own if s is not None and s.advances_cache_position is not None),
        None,
    )
    view = resolver.view(path, found.class_name, flattened=facts.kind is FileKind.MODULAR)
    if view is not None:
        if not in_library:
            # outside the library, forward is often in another file of the tree or in the target
            # release; a checkout keeps the same-file lookup its findings (and goldens) were made with
            forward = forward if forward is not None else view.forward_params
            # and a class's own update of the model kwargs is often in a base of another file
            if update is None and view.stale_cache_position:
                update = False
        inherits = view.inherits_mixin_directly
    origin = None
    if facts.generated_from is not None:
        origin = modular.method_origin(checkout, path, found.class_name, METHOD, read)
    inherited = None
    if facts.kind is FileKind.MODULAR:
        trap = modular.inherited_origin(checkout, path, found.class_name, METHOD, read)
        inherited = trap.source_id if trap is not None else None
    return Override(
        id=OverrideId.of(facts.path, found.class_name),
        file=facts.path,
        kind=facts.kind,
        model=model_name(checkout, path),
        class_name=found.class_name,
        line=found.line,
        start_line=found.start_line,
        end_line=found.end_line,
        bases=chain[0].bases,
        analysis=found.analysis,
        forward_params=forward,
        attributes=tuple(sorted(attributes.items())),
        module_functions=facts.functions,
        copied_from=None,
        copy_group=None,
        generated_from=origin,
        overwritten=found.overwritten,
        deprecated="/models/deprecated/" in f"/{facts.path}",
        ignore_copy=found.ignore_copy,
        stale_cache_position=update is False,
        inherits_generation_mixin=inherits,
        fallback=view.fallback if view is not None else None,
        in_library=in_library,
        inherited_from=inherited,
        delegate_work=_delegate_work(facts, chain, found),
        asynchronous=found.asynchronous,
        decorators=found.decorators,
    )


def _delegate_work(facts: FileFacts, chain: list[ClassFacts], found: OverrideFacts) -> tuple[str, str] | None:
    """For an override that takes its inputs from a sub-model ``__init__`` builds from a class of the same
    file: that class's name and the model-specific work its own override does (None: none)."""
    delegate = found.analysis.delegates_to or ""
    if not (delegate.startswith("self.") and found.analysis.delegation is Delegation.SUBMODEL):
        return None
    built = {a: c for cls in reversed(chain) for a, c in cls.submodels}.get(delegate.removeprefix("self."))
    theirs = next((o for o in facts.overrides if o.class_name == built), None)
    work = _own_work(theirs.analysis) if theirs is not None else None
    return (theirs.class_name, work) if theirs is not None and work is not None else None


def _with_copy_links(
    checkout: Checkout, read: Reader, overrides: list[Override], pending: list[_PendingLink]
) -> list[Override]:
    """The overrides with each ``# Copied from`` marker checked (``copies.check_copy``) and linked to the
    override it copies when that is one of the index's."""
    overrides = list(overrides)
    ids = {o.id for o in overrides}
    for position, scope, marker, start, end in pending:
        override = overrides[position]
        lines = [line.rstrip("\r\n") for line in read(checkout.root / override.file).splitlines()]
        check = copies.check_copy(checkout, marker, lines, start, end, read)
        source_id = None
        if check.target_file is not None and check.target_class is not None:
            candidate = OverrideId.of(check.target_file, check.target_class)
            source_id = candidate if candidate in ids else None
        follows = source_id if check.loose else None
        overrides[position] = dataclasses.replace(
            override, copied_from=CopyLink(scope, marker, check, None if check.loose else source_id, follows)
        )
    return overrides
