"""Verdict reuse across the rounds of one migration: a class keeps the verdict of an earlier round when nothing it
runs has changed since.

``apply --verify`` verifies, repairs, verifies again and, with ``--hooks``, verifies the hook members once more;
each round rewrites the tree from its original text. A class's verdict is a function of what its workers import
(the base tree, fixed for the run, and the tree as written) and of the options: its key is a hash of the target,
the options and the written text of every changed file (a file that differs from the base) it can reach. A round
runs only the targets whose key no earlier round verified; the others take the earlier verdict as it was.

What a class can reach, conservatively: the files its module imports from the tree, transitively (its parents,
its fallbacks, the mixin and the rest of the package), those of the override it inherits, and every changed file
where its own files or a changed file name an ``Auto`` class (a composite builds its sub-models from a config,
with no import: a LLaVA-like wrapper runs a language model's code, ``EncoderDecoderModel`` its decoder's).
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

from codemod.contracts import OverrideId, Verdict
from codemod.verify.compare import ClassVerdict
from codemod.verify.options import VerifyOptions
from codemod.verify.runner import Target
from codemod.verify.session import VerifyReport

#: a class built from a config by name: code the importing file does not import
_AUTO = re.compile(rb"\bAuto(?:Model\w*|Backbone)\b")


def _module_file(root: Path, parts: Sequence[str]) -> str | None:
    """``a/b/c.py`` or ``a/b/c/__init__.py`` under ``root`` (checkout-relative), if there is one."""
    if not parts:
        return None
    stem = Path(*parts)
    for candidate in (stem.with_suffix(".py"), stem / "__init__.py"):
        if (root / candidate).is_file():
            return candidate.as_posix()
    return None


def _type_checking(node: ast.stmt) -> bool:
    test = node.test if isinstance(node, ast.If) else None
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _executed(body: Iterable[ast.stmt]) -> Iterable[ast.AST]:
    """Every node of ``body`` but what sits under ``if TYPE_CHECKING:`` (a lazy package's ``__init__`` names every
    module there, importing none)."""
    for statement in body:
        if _type_checking(statement):
            assert isinstance(statement, ast.If)
            yield from _executed(statement.orelse)
            continue
        yield statement
        for child in ast.iter_child_nodes(statement):
            if isinstance(child, ast.stmt):
                yield from _executed([child])
            else:
                yield from ast.walk(child)


def imported_files(root: Path, path: str, text: bytes) -> set[str]:
    """The files of the tree under ``root`` that the file at ``path`` (checkout-relative) imports: relative imports
    (and their names, which may be modules), and absolute ones of a package the file is inside (``transformers.x``
    from ``src/transformers/models/y``). Pure but for looking at which files exist."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return set()
    package = Path(path).parent.parts
    out: set[str] = set()

    def add(parts: Sequence[str]) -> None:
        found = _module_file(root, parts)
        if found is not None:
            out.add(found)

    def absolute(module: str) -> list[str] | None:
        head = module.split(".")[0]
        if head in package:  # the innermost enclosing directory of that name is the package
            top = len(package) - 1 - package[::-1].index(head)
            return [*package[:top], *module.split(".")]
        return None

    for node in _executed(tree.body):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = list(package[: len(package) - (node.level - 1)]) if node.level - 1 <= len(package) else None
                if base is None:
                    continue
                module = [*base, *(node.module.split(".") if node.module else [])]
            else:
                found = absolute(node.module or "")
                if found is None:
                    continue
                module = found
            add(module)
            for alias in node.names:
                add([*module, alias.name])
        elif isinstance(node, ast.Import):
            for alias in node.names:
                found = absolute(alias.name)
                if found is not None:
                    add(found)
    return out


def _digest(text: bytes) -> str:
    return hashlib.sha256(text).hexdigest()


def _shared(parts: Sequence[str]) -> bool:
    """A file of a ``transformers`` package outside its ``models``: the mixin, the cache classes, the utilities."""
    if "transformers" not in parts:
        return False
    inside = parts[len(parts) - 1 - parts[::-1].index("transformers") + 1 :]
    return not (inside and inside[0] == "models")


@dataclasses.dataclass
class VerdictCache:
    """Verdicts by key, for one migration run (in memory), and what each round reused."""

    verdicts: dict[str, ClassVerdict] = dataclasses.field(default_factory=dict)
    #: path -> the base's bytes, for every file a round wrote (the first text seen is the base's)
    base: dict[str, bytes] = dataclasses.field(default_factory=dict)
    #: per round that asked: how many targets it was given and how many of them it reused
    rounds: list[tuple[int, int]] = dataclasses.field(default_factory=list)
    #: the last report verification made: its device, interpreter and base head the reports of fully reused rounds
    last: VerifyReport | None = None
    _imports: dict[tuple[str, bytes], set[str]] = dataclasses.field(default_factory=dict)

    def remember_base(self, texts: Mapping[str, bytes]) -> None:
        for path, old in texts.items():
            self.base.setdefault(path, old)

    def verified(
        self,
        root: Path,
        targets: Sequence[Target],
        options: VerifyOptions,
        not_run: Sequence[tuple[str, str]],
        run: Callable[[list[Target]], VerifyReport],
    ) -> VerifyReport:
        """A report on every target: ``run`` verifies those whose key no earlier round verified (it is not called
        when every target has one), the rest take the earlier verdict; in the targets' order."""
        keys = self.keys(root, targets, options)
        todo = [t for t, k in zip(targets, keys, strict=True) if k not in self.verdicts]
        self.rounds.append((len(targets), len(targets) - len(todo)))
        if todo or not targets:
            fresh = run(todo)
            self.last = fresh
            by_target = dict(zip(fresh.targets, fresh.verdicts, strict=False))
            for target, key in zip(targets, keys, strict=True):
                if target in by_target:
                    self.verdicts[key] = by_target[target]
        else:
            assert self.last is not None  # a key is only known from a report
            fresh = dataclasses.replace(self.last, verdicts=(), targets=(), seconds=0.0, own_tests=())
        return dataclasses.replace(
            fresh,
            verdicts=tuple(
                self.verdicts.get(k) or ClassVerdict(t.override_id, Verdict.UNVERIFIED, detail="no verdict came back")
                for t, k in zip(targets, keys, strict=True)
            ),
            targets=tuple(targets),
            not_run=tuple(not_run),
        )

    def keys(self, root: Path, targets: Sequence[Target], options: VerifyOptions) -> list[str]:
        """Each target's key, the tree as it is on disk now."""
        current = {p: (root / p).read_bytes() if (root / p).is_file() else b"" for p in sorted(self.base)}
        changed = {p: text for p, text in current.items() if text != self.base[p]}
        # the mixin and the rest of the package outside the models (reached through lazy modules, which hide it)
        shared = [
            p
            for p, text in changed.items()
            if _AUTO.search(text) or _AUTO.search(self.base[p]) or _shared(Path(p).parts)
        ]
        settings = json.dumps({k: str(v) for k, v in dataclasses.asdict(options).items() if k != "jobs"})
        reach: dict[str, set[str]] = {}
        out = []
        for target in targets:
            own = [OverrideId(i).file for i in (target.override_id, target.inherits_from) if i]
            files = set[str]().union(*(self._reach(root, f, reach) for f in own))
            if any(_AUTO.search(self._text(root, f)) for f in own):
                files |= set(changed)
            files = (files & set(changed)) | set(shared)
            record = {
                "target": [target.override_id, target.module, target.class_name, target.model, target.inherits_from],
                "needs": sorted(sorted(group) for group in target.needs),
                "options": settings,
                "files": {p: [_digest(self.base[p]), _digest(changed[p])] for p in sorted(files)},
            }
            out.append(hashlib.sha256(json.dumps(record, sort_keys=True).encode()).hexdigest())
        return out

    def _text(self, root: Path, path: str) -> bytes:
        file = root / path
        return file.read_bytes() if file.is_file() else b""

    def _reach(self, root: Path, start: str, reach: dict[str, set[str]]) -> set[str]:
        """The files ``start`` imports from the tree, transitively, itself included (per round: ``reach``)."""
        if start in reach:
            return reach[start]
        seen, stack = {start}, [start]
        while stack:
            path = stack.pop()
            text = self._text(root, path)
            key = (path, hashlib.sha256(text).digest())
            if key not in self._imports:
                self._imports[key] = imported_files(root, path, text)
            for found in self._imports[key] - seen:
                seen.add(found)
                stack.append(found)
        reach[start] = seen
        return seen


def reused_count(cache: VerdictCache) -> int:
    """How many verdicts the rounds took from earlier ones."""
    return sum(reused for _, reused in cache.rounds)
