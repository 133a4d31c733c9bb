"""Scan: checkout → index → classify, the first half of the pipeline, with a cache of its result.

A warm re-scan of an unchanged checkout must take well under a second, which rules out even
importing the parser: the whole ``ScanResult`` is cached, keyed by the hash of every model file the
scan read (so any change anywhere invalidates it) and checked against the files it read besides
(the mixin, copy targets outside the model tree).
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import os
import pickle
from collections.abc import Iterable
from pathlib import Path

from codemod.analyse.blockers import Blocker, find_blockers
from codemod.analyse.classify import Finding, classify, select
from codemod.analyse.index import Discovery, FactsCache, Index, Progress, build_index, discover, tool_fingerprint
from codemod.analyse.mixin import MixinProfile, read_profile
from codemod.analyse.target import Target, for_checkout
from codemod.analyse.unmodelled import keep_unmodelled
from codemod.cache import cache_dir
from codemod.checkout import Checkout
from codemod.errors import CodemodError
from codemod.sources import READ_ERRORS, model_name, model_names, read_source


@dataclasses.dataclass(frozen=True)
class ScanResult:
    index: Index
    profile: MixinProfile
    findings: tuple[Finding, ...]
    #: what stops a tree running on its target beyond the overrides (``codemod.analyse.blockers``)
    blockers: tuple[Blocker, ...] = ()

    def select(self, only: Iterable[str] = (), skip: Iterable[str] = ()) -> ScanResult:
        """The same result for some models only (``--only`` / ``--skip``). A name that is neither a model
        nor a class of the checkout is a ``SelectionError``: a typo must not select nothing, silently."""
        only, skip = list(only), list(skip)
        if only or skip:
            known = (
                model_names(self.index.checkout)
                | {o.class_name for o in self.index.overrides}
                | {b.class_name for b in self.index.bound}
            )
            check_names("--only", only, known)
            check_names("--skip", skip, known)
        chosen = {o.id for o in select(self.index.overrides, only, skip)}
        findings = tuple(f for f in self.findings if f.override.id in chosen)
        if not (only or skip):
            return dataclasses.replace(self, findings=findings)
        # the TF/Flax files skipped and the classes binding the method are reported for the models chosen only, as the
        # overrides are
        checkout = self.index.checkout
        wanted, unwanted = {n.lower() for n in only}, {n.lower() for n in skip}

        def wanted_here(path: str, classes: Iterable[str]) -> bool:
            names = {n.lower() for n in (model_name(checkout, checkout.root / path), *classes) if n}
            return (not wanted or bool(names & wanted)) and not names & unwanted

        index = dataclasses.replace(
            self.index,
            skipped=tuple(s for s in self.index.skipped if wanted_here(s.path, s.classes)),
            bound=tuple(b for b in self.index.bound if wanted_here(b.path, (b.class_name,))),
            errors=tuple(e for e in self.index.errors if wanted_here(e.path, ())),
        )
        return dataclasses.replace(self, index=index, findings=findings)


def unread_line(result: ScanResult) -> str | None:
    """The files the scan could not read or parse, in one line for ``diff`` and ``apply`` to end with: an
    override in them is not migrated, and that must not pass in silence (None: there are none)."""
    errors = result.index.errors
    if not errors:
        return None
    files = "file" if len(errors) == 1 else "files"
    listed = "; ".join(f"{e.path}: {e.error}" for e in errors)
    return f"skipped {len(errors)} {files} it cannot read or parse (an override in them is not migrated): {listed}"


class SelectionError(CodemodError):
    """An ``--only`` / ``--skip`` name that names no model and no class."""


def check_names(option: str, names: Iterable[str], known: Iterable[str]) -> None:
    """Raise ``SelectionError`` for the ``names`` not in ``known`` (case-insensitive, as ``select``
    matches), each with the three closest known names."""
    by_lower = {name.lower(): name for name in known}
    unknown = [name for name in names if name.lower() not in by_lower]
    if not unknown:
        return
    if not by_lower:
        raise SelectionError(f"{option} {', '.join(unknown)}: the checkout has no model files")
    described = []
    for name in unknown:
        closest = difflib.get_close_matches(name.lower(), by_lower, n=3, cutoff=0.0)
        described.append(f"no model or class named {name!r} (closest: {', '.join(by_lower[c] for c in closest)})")
    raise SelectionError(f"{option}: {'; '.join(described)}")


def _digest(texts: Iterable[tuple[str, str]]) -> str:
    digest = hashlib.sha256()
    for name, text in texts:
        digest.update(name.encode("utf-8", "surrogateescape"))  # a file name may be any bytes
        digest.update(b"\0")
        digest.update(text.encode("utf-8", "surrogatepass"))
        digest.update(b"\0")
    return digest.hexdigest()


def _key(found: Discovery, target: Target) -> str:
    checkout = found.checkout
    texts = ((str(p), t) for p, t in found.read.texts.items())
    return _digest(
        [
            ("tool", tool_fingerprint()),
            ("root", str(checkout.root)),
            ("kind", checkout.kind.value),
            ("target", target.key),
            *texts,
        ]
    )


def _read_or_none(path: Path) -> str | None:
    try:
        return read_source(path)
    except READ_ERRORS:
        return None


#: the digest recorded for a file the scan looked for and did not find
_ABSENT = "absent"


class ResultCache:
    """Pickled ``ScanResult``s in the user cache dir; ``directory=None`` disables it."""

    def __init__(self, directory: Path | None) -> None:
        self.directory = directory

    @classmethod
    def default(cls) -> ResultCache:
        return cls(cache_dir("scans"))

    def get(self, key: str) -> ScanResult | None:
        if self.directory is None:
            return None
        try:
            with (self.directory / f"{key}.pickle").open("rb") as handle:
                extras: dict[str, str]
                result: ScanResult
                extras, result = pickle.load(handle)  # written by put, under a key of this tool's version
        except (OSError, pickle.UnpicklingError, EOFError, AttributeError, ImportError, TypeError, ValueError):
            return None
        for path, digest in extras.items():
            text = _read_or_none(Path(path))
            if digest == _ABSENT:
                if text is not None:
                    return None
            elif text is None or _digest([("", text)]) != digest:
                return None
        return result

    def put(self, key: str, extras: dict[str, str], result: ScanResult) -> None:
        if self.directory is None:
            return
        path = self.directory / f"{key}.pickle"
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        with tmp.open("wb") as handle:
            pickle.dump((extras, result), handle, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)


def scan(
    checkout: Checkout,
    *,
    use_cache: bool = True,
    jobs: int | None = None,
    progress: Progress | None = None,
    target: Target | None = None,
) -> ScanResult:
    """Index and classify every override of ``checkout`` (all of them: ``ScanResult.select`` filters),
    judged against ``target`` (default: the checkout itself, or the built-in mixin for a tree)."""
    target = target if target is not None else for_checkout(checkout)
    found = discover(checkout)
    results = ResultCache.default() if use_cache else ResultCache(None)
    key = _key(found, target)
    cached = results.get(key)
    if cached is not None:
        # the files are the same, but the git state (dirty or not) is today's
        return dataclasses.replace(cached, index=dataclasses.replace(cached.index, checkout=checkout))
    discovered = set(found.read.texts)
    index = build_index(
        checkout,
        cache=FactsCache.default() if use_cache else FactsCache(None),
        jobs=jobs,
        progress=progress,
        discovery=found,
        target=target,
    )
    profile = read_profile(checkout, target)
    findings = keep_unmodelled(classify(index, profile))  # async, decorated: kept
    result = ScanResult(index, profile, tuple(findings), find_blockers(checkout, found.read.texts, target))
    # Files read after discovery (copy targets, modular parents outside the tree, the mixin) are
    # checked on the next load; files read in discovery are part of the key already.
    extras = {str(p): _digest([("", t)]) for p, t in found.read.texts.items() if p not in discovered}
    # a module a base class was looked for in and not found: the result holds while it stays absent
    extras.update({str(p): _ABSENT for p in found.read.absent})
    if target.mixin_file is not None:
        mixin = target.mixin_file.resolve()
        text = _read_or_none(mixin)
        if text is not None:
            extras[str(mixin)] = _digest([("", text)])
    results.put(key, extras, result)
    return result
