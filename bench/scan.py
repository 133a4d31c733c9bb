#!/usr/bin/env python
"""Benchmark ``codemod scan`` against a naive baseline, cold and warm.

    python bench/scan.py                    # transformers 5.23.0, fetched from PyPI and cached
    python bench/scan.py --release 4.45.2   # another release
    python bench/scan.py --path DIR         # any checkout, package directory or tree

It prints times and ratios; it asserts nothing about them (machines differ, this is not a test).
What each number means is in ``bench/README.md``. In short:

naive
    What a straightforward implementation would do: libcst-parse every file the scan might need
    (every PyTorch ``modeling_*.py``, every ``modular_*.py`` and ``generation_*.py``; no text
    prefilter), resolve ``PositionProvider`` on the whole module, analyse each top-level class's
    ``prepare_inputs_for_generation`` node in place (module-relative positions, no line offset),
    all in one process and with no cache. The ``FileFacts`` are built from the full-module CST by
    ``naive_file_facts`` below (not by calling ``index.file_facts``), then assembled, classified
    and rendered by the tool's own ``index._assemble``, ``classify`` and ``report.scan_document``,
    so the findings can be compared one for one.
cold
    ``python -m codemod scan PATH -f json -o FILE`` in a fresh process with ``CODEMOD_CACHE_DIR``
    pointing at a new, empty directory: interpreter start-up, imports, the process pool, writing
    the caches, all counted. Also ``codemod.analyse.scan.scan`` in this process, for reference.
warm
    The same command again with the same, now filled, cache directory.

The exit status is 0 unless something crashed (a scan failing is a crash).
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from codemod.analyse import copies, index, modular  # noqa: E402
from codemod.analyse.classify import classify  # noqa: E402
from codemod.analyse.index import ClassFacts, FileFacts, OverrideFacts, Reader  # noqa: E402
from codemod.analyse.mixin import read_profile  # noqa: E402
from codemod.analyse.scan import ScanResult, scan  # noqa: E402
from codemod.cache import ENV_VAR  # noqa: E402
from codemod.checkout import Checkout, resolve  # noqa: E402
from codemod.publish.report import scan_document  # noqa: E402
from codemod.sources import FileKind, file_kind, python_files  # noqa: E402

DEFAULT_RELEASE = "5.23.0"
METHOD = index.METHOD
ROOT_PLACEHOLDER = "<root>"


# --------------------------------------------------------------------------------------- the naive way


def naive_files(checkout: Checkout) -> list[tuple[Path, FileKind]]:
    """Every file the scan might need, by name alone: no look at the text.

    In a transformers checkout or package: every PyTorch ``modeling_*.py`` (not ``modeling_tf_*`` /
    ``modeling_flax_*``), every ``modular_*.py`` and every ``generation_*.py`` below ``models/``.
    In any other tree (remote code names its files as it likes): every Python file.
    """
    wanted = {FileKind.MODELING, FileKind.MODULAR, FileKind.GENERATION}
    if checkout.package_dir is None:
        wanted.add(FileKind.OTHER)
    out = []
    for path in python_files(checkout):
        kind = file_kind(path)
        if kind in wanted:
            out.append((path, kind))
    return out


def _canonical(code: str) -> str:
    """The tool reports bases and class attributes as ``ast.unparse`` writes them; so must we.

    Only the few short expressions that end up in the facts go through here (a class's bases, its
    simple attribute values): negligible next to the full-module libcst parse it follows.
    """
    try:
        return ast.unparse(ast.parse(f"(\n{code}\n)", mode="eval").body)
    except SyntaxError:
        return code.strip()


def _small_statements(block: Any) -> list[Any]:
    """The simple statements directly in a class body (``a = 1; b = 2`` counts as two)."""
    import libcst as cst

    if isinstance(block, cst.SimpleStatementSuite):
        return list(block.body)
    out = []
    for statement in block.body:
        if isinstance(statement, cst.SimpleStatementLine):
            out.extend(statement.body)
    return out


def _compound(block: Any) -> list[Any]:
    import libcst as cst

    return [] if isinstance(block, cst.SimpleStatementSuite) else list(block.body)


def _cst_params(function: Any) -> tuple[str, ...]:
    """``index._params`` on a libcst node: positional-only, regular, keyword-only, ``*a``, ``**k``; no self."""
    import libcst as cst

    p = function.params
    names = [q.name.value for q in (*p.posonly_params, *p.params, *p.kwonly_params)]
    if isinstance(p.star_arg, cst.Param):
        names.append("*" + p.star_arg.name.value)
    if p.star_kwarg is not None:
        names.append("**" + p.star_kwarg.name.value)
    return tuple(n for n in names if n != "self")


def naive_file_facts(path: str, text: str, kind: FileKind) -> FileFacts:
    """``index.file_facts`` done the naive way: one libcst parse of the whole module, positions on all of it.

    Everything syntactic (classes, bases, methods, ``forward`` parameters, attributes, line ranges,
    the override's ``BodyAnalysis``) comes from the full-module CST; the comment-based facts (copy
    markers, ``# Ignore copy``, ``# Overwritten --``, the generated-file header) are read from the
    lines with the tool's own helpers, as any implementation would.
    """
    import libcst as cst
    from libcst.metadata import MetadataWrapper, PositionProvider

    from codemod.analyse.recognise import analyse_function

    sha = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
    generated = modular.generated_from(text)
    try:
        wrapper = MetadataWrapper(cst.parse_module(text))
        positions = wrapper.resolve(PositionProvider)
    except Exception as error:  # noqa: BLE001 - a file libcst rejects is reported, like the tool does
        return FileFacts(path, kind, sha, generated, (), (), (), error=f"cannot parse: {error}")
    module = wrapper.module
    lines = text.splitlines(keepends=True)
    plain = [line.rstrip("\r\n") for line in lines]

    def start(node: Any) -> int:
        return min([positions[d].start.line for d in node.decorators] + [positions[node].start.line])

    functions = tuple(n.name.value for n in module.body if isinstance(n, cst.FunctionDef))
    classes: list[ClassFacts] = []
    overrides: list[OverrideFacts] = []
    for node in module.body:
        if not isinstance(node, cst.ClassDef):
            continue
        body = _compound(node.body)
        methods = {n.name.value: n for n in body if isinstance(n, cst.FunctionDef)}
        forward = methods.get("forward")
        attributes = []
        for small in _small_statements(node.body):
            if (
                isinstance(small, cst.Assign)
                and len(small.targets) == 1
                and isinstance(small.targets[0].target, cst.Name)
            ):
                attributes.append((small.targets[0].target.value, _canonical(module.code_for_node(small.value))))
            elif isinstance(small, cst.AnnAssign) and isinstance(small.target, cst.Name) and small.value is not None:
                attributes.append((small.target.value, _canonical(module.code_for_node(small.value))))
        class_start = start(node)
        classes.append(
            ClassFacts(
                name=node.name.value,
                line=positions[node].start.line,
                start_line=class_start,
                end_line=positions[node].end.line,
                bases=tuple(_canonical(module.code_for_node(arg.value)) for arg in node.bases),
                methods=tuple(methods),
                forward_params=_cst_params(forward) if forward is not None else None,
                attributes=tuple(attributes),
                marker=copies.marker_above(plain, class_start),
            )
        )
        method = methods.get(METHOD)
        if method is None:
            continue
        first, last = start(method), positions[method].end.line
        try:
            analysis = analyse_function(method, positions)  # module-relative positions: no offset
        except Exception as error:  # noqa: BLE001 - as the tool does: report it, go on
            return FileFacts(
                path, kind, sha, generated, (), (), functions, error=f"cannot parse {node.name.value}: {error}"
            )
        overrides.append(
            OverrideFacts(
                class_name=node.name.value,
                line=positions[method].start.line,
                start_line=first,
                end_line=last,
                analysis=analysis,
                marker=copies.marker_above(plain, first),
                ignore_copy=copies.ignore_copy_lines(plain, first, last),
                overwritten=index._overwritten(plain, first, last),
                ignored_in_class_copy=index._ignored_above(plain, first),
            )
        )
    return FileFacts(path, kind, sha, generated, tuple(classes), tuple(overrides), functions)


def naive_scan(checkout: Checkout, say: Callable[[str], None]) -> tuple[ScanResult, int]:
    """The whole scan the naive way, in this process; returns the result and how many files it parsed."""
    read = Reader()
    files = naive_files(checkout)
    facts: list[FileFacts] = []
    errors: list[index.FileError] = []
    for number, (path, kind) in enumerate(files, start=1):
        rel = checkout.relative(path)
        try:
            text = read(path)
        except (OSError, UnicodeDecodeError) as error:
            errors.append(index.FileError(rel, f"cannot read: {error}"))
            continue
        found = naive_file_facts(rel, text, kind)
        # Only files that define the method (or failed to parse) matter to the findings; the
        # others were parsed to find that out, which is the cost this baseline measures.
        if found.overrides or found.error is not None:
            facts.append(found)
        if number % 100 == 0 or number == len(files):
            say(f"  naive: parsed {number}/{len(files)} files")
    built = index._assemble(checkout, facts, errors, len(files), read)
    profile = read_profile(checkout)
    return ScanResult(built, profile, tuple(classify(built, profile))), len(files)


# --------------------------------------------------------------------------------------- documents


def normalised(document: dict[str, Any], root: Path) -> dict[str, Any]:
    """The JSON document with the checkout root replaced by a placeholder, tuples as lists."""
    text = json.dumps(document)
    for form in {str(root), root.as_posix()}:
        text = text.replace(json.dumps(form)[1:-1], ROOT_PLACEHOLDER)
    return json.loads(text)


def first_difference(a: Any, b: Any, where: str = "") -> str | None:
    """Where two JSON values first differ, and how; None when they are equal."""
    if type(a) is not type(b):
        return f"{where or '<top>'}: {_short(a)} != {_short(b)}"
    if isinstance(a, dict):
        for key in list(a) + [k for k in b if k not in a]:
            if key not in a or key not in b:
                return f"{where}.{key}: only in {'first' if key in a else 'second'}"
            found = first_difference(a[key], b[key], f"{where}.{key}")
            if found:
                return found
        return None
    if isinstance(a, list):
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            label = f"{where}[{i}]"
            if isinstance(x, dict) and "file" in x and "class" in x:
                label = f"{where}[{i} {x['file']}::{x['class']}]"
            found = first_difference(x, y, label)
            if found:
                return found
        if len(a) != len(b):
            return f"{where}: lengths {len(a)} != {len(b)}"
        return None
    return None if a == b else f"{where}: {_short(a)} != {_short(b)}"


def _short(value: Any, limit: int = 160) -> str:
    text = json.dumps(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# --------------------------------------------------------------------------------------- runs


def cli_scan(root: Path, cache: Path, out: Path, jobs: int | None) -> float:
    """Wall time of ``python -m codemod scan ROOT -f json -o OUT`` with ``cache`` as the cache dir."""
    command = [sys.executable, "-m", "codemod", "scan", str(root), "-f", "json", "-o", str(out)]
    if jobs is not None:
        command += ["--jobs", str(jobs)]
    env = dict(os.environ, **{ENV_VAR: str(cache)})
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited {done.returncode}:\n{done.stderr}{done.stdout}")
    return elapsed


def in_process_cold(checkout: Checkout, cache: Path, jobs: int | None) -> tuple[float, ScanResult]:
    previous = os.environ.get(ENV_VAR)
    os.environ[ENV_VAR] = str(cache)
    try:
        started = time.perf_counter()
        result = scan(checkout, use_cache=True, jobs=jobs)
        return time.perf_counter() - started, result
    finally:
        if previous is None:
            del os.environ[ENV_VAR]
        else:
            os.environ[ENV_VAR] = previous


def checkout_for(args: argparse.Namespace, say: Callable[[str], None]) -> Checkout:
    if args.path is not None:
        return resolve(Path(args.path))
    from codemod.fetch import fetch_release

    return resolve(fetch_release(args.release, progress=say))


def _fmt(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds:.2f} s"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    where = parser.add_mutually_exclusive_group()
    where.add_argument(
        "--release", default=DEFAULT_RELEASE, help=f"transformers release to fetch (default {DEFAULT_RELEASE})"
    )
    where.add_argument("--path", help="scan this checkout / package / tree instead of a release")
    parser.add_argument(
        "--repeat", type=int, default=3, help="runs of cold and warm; the best is reported (default 3)"
    )
    parser.add_argument(
        "--naive-repeat", type=int, default=1, help="runs of the naive baseline (default 1: it is slow)"
    )
    parser.add_argument(
        "--jobs", "-j", type=int, default=None, help="--jobs for the cold scan (default: the tool's, CPU count)"
    )
    parser.add_argument("--no-naive", action="store_true", help="skip the naive baseline (cold and warm only)")
    parser.add_argument("--json", dest="json_out", help="also write the numbers to this JSON file")
    args = parser.parse_args(argv)

    def say(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    load_before = os.getloadavg()[0]
    checkout = checkout_for(args, say)
    root = checkout.root
    say(f"checkout: {root} ({checkout.kind.value}, transformers {checkout.version or '?'})")
    # Warm the OS page cache so that whichever runs first does not pay the disk for the others.
    for path in python_files(checkout):
        path.read_bytes()

    scratch = Path(tempfile.mkdtemp(prefix="codemod-bench-"))
    try:
        # Cold CLI: a new empty cache dir each run. Warm CLI: the last cold run's dir, again.
        cold_runs: list[float] = []
        cache = scratch / "none"
        for run in range(max(1, args.repeat)):
            cache = scratch / f"cache-{run}"
            cache.mkdir()
            cold_runs.append(cli_scan(root, cache, scratch / "cold.json", args.jobs))
            say(f"  cold CLI run {run + 1}: {cold_runs[-1]:.2f} s")
        warm_runs = []
        for run in range(max(1, args.repeat)):
            warm_runs.append(cli_scan(root, cache, scratch / "warm.json", args.jobs))
            say(f"  warm CLI run {run + 1}: {warm_runs[-1]:.2f} s")
        # After an edit: the result cache misses (its key hashes every file) but the facts of the
        # unchanged files are still cached. Simulated without touching the checkout by dropping the
        # cached results (``scans/`` in the cache dir) and keeping the per-file facts.
        edit_runs = []
        for run in range(max(1, args.repeat)):
            for pickled in (cache / "scans").glob("*.pickle"):
                pickled.unlink()
            edit_runs.append(cli_scan(root, cache, scratch / "edit.json", args.jobs))
            say(f"  edit re-scan CLI run {run + 1}: {edit_runs[-1]:.2f} s")
        cold_doc = normalised(json.loads((scratch / "cold.json").read_text(encoding="utf-8")), root)
        warm_doc = normalised(json.loads((scratch / "warm.json").read_text(encoding="utf-8")), root)
        edit_doc = normalised(json.loads((scratch / "edit.json").read_text(encoding="utf-8")), root)

        inproc_runs = []
        inproc_result = None
        for run in range(max(1, args.repeat)):
            cache = scratch / f"inproc-{run}"
            cache.mkdir()
            elapsed, inproc_result = in_process_cold(checkout, cache, args.jobs)
            inproc_runs.append(elapsed)
            say(f"  cold in-process run {run + 1}: {elapsed:.2f} s")
        assert inproc_result is not None
        inproc_doc = normalised(scan_document(inproc_result), root)

        naive_runs: list[float] = []
        naive_doc = None
        naive_parsed = None
        if not args.no_naive:
            for run in range(max(1, args.naive_repeat)):
                started = time.perf_counter()
                naive_result, naive_parsed = naive_scan(checkout, say)
                naive_runs.append(time.perf_counter() - started)
                say(f"  naive run {run + 1}: {naive_runs[-1]:.2f} s")
                naive_doc = normalised(scan_document(naive_result), root)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)

    naive = min(naive_runs) if naive_runs else None
    cold, warm, inproc, edit = min(cold_runs), min(warm_runs), min(inproc_runs), min(edit_runs)
    summary = cold_doc["summary"]

    comparisons = [
        ("cold CLI vs warm CLI", cold_doc, warm_doc),
        ("cold CLI vs edit re-scan CLI", cold_doc, edit_doc),
        ("cold CLI vs cold in-process", cold_doc, inproc_doc),
    ]
    if naive_doc is not None:
        comparisons.insert(0, ("naive vs cold CLI", naive_doc, cold_doc))
    verdicts = {}
    for label, a, b in comparisons:
        verdicts[label] = first_difference(a["findings"], b["findings"], "findings")
    # Besides the findings, what else the documents say. Not compared: ``summary`` (its
    # candidate_files differs by design: the baseline hands the assembler only the files that define
    # the method) and ``skipped`` (the baseline never parses TF/Flax files). Errors by path only: the
    # two parsers word their messages differently.
    other = {}
    if naive_doc is not None:
        for section in ("errors", "copy_groups", "mixin"):
            a, b = naive_doc[section], cold_doc[section]
            if section == "errors":
                a, b = [e["path"] for e in a], [e["path"] for e in b]
            other[section] = first_difference(a, b, section)

    identical = all(v is None for v in verdicts.values())
    rows = [
        (
            "naive baseline (1 process, no cache, full libcst parse)",
            _fmt(naive),
            f"best of {len(naive_runs)}" if naive_runs else "skipped",
        ),
        ("cold scan, CLI process, empty cache", _fmt(cold), f"best of {len(cold_runs)}"),
        ("cold scan, in-process (reference)", _fmt(inproc), f"best of {len(inproc_runs)}"),
        ("warm re-scan, CLI process", _fmt(warm), f"best of {len(warm_runs)}; target < 1 s"),
        ("re-scan after an edit, CLI (facts cached, result not)", _fmt(edit), f"best of {len(edit_runs)}"),
        ("cold speed-up (naive / cold CLI)", f"{naive / cold:.1f}x" if naive else "-", "target >= 20x"),
        ("cold speed-up (naive / cold in-process)", f"{naive / inproc:.1f}x" if naive else "-", ""),
        ("findings identical", "yes" if identical else "NO", f"{summary['overrides']} overrides"),
        (
            "files parsed: naive / scan candidates",
            f"{naive_parsed if naive_parsed is not None else '-'} / {summary['candidate_files']}",
            f"of {summary['files_read']} files read",
        ),
    ]
    width = max(len(r[0]) for r in rows)
    print()
    print(f"transformers {checkout.version or '?'} at {root}; {os.cpu_count()} CPUs; python {sys.version.split()[0]}")
    for name, value, note in rows:
        print(f"  {name:<{width}}  {value:>10}  {note}")
    print()
    for label, difference in verdicts.items():
        print(f"  {label}: {'identical findings' if difference is None else 'first difference: ' + difference}")
    for section, difference in other.items():
        if difference is not None:
            print(f"  naive vs cold, {section}: first difference: {difference}")
    speed_up = (
        f"{'met' if naive / cold >= 20 else 'NOT met'} ({naive / cold:.1f}x)" if naive else "not measured (--no-naive)"
    )
    print()
    print(
        f"  targets: cold >= 20x naive: {speed_up}; warm < 1 s: {'met' if warm < 1 else 'NOT met'} ({warm:.2f} s); "
        f"identical findings: {'met' if identical else 'NOT met'}"
    )
    print(
        f"  load average (1 min) before / after: {load_before:.2f} / {os.getloadavg()[0]:.2f} "
        "(timings are only comparable on an otherwise idle machine)"
    )

    if args.json_out:
        Path(args.json_out).write_text(
            json.dumps(
                {
                    "version": checkout.version,
                    "cpus": os.cpu_count(),
                    "naive_s": naive_runs,
                    "cold_cli_s": cold_runs,
                    "cold_in_process_s": inproc_runs,
                    "warm_cli_s": warm_runs,
                    "edit_cli_s": edit_runs,
                    "findings_identical": identical,
                    "differences": verdicts,
                    "other_differences": other,
                    "naive_files_parsed": naive_parsed,
                    "candidate_files": summary["candidate_files"],
                    "files_read": summary["files_read"],
                    "overrides": summary["overrides"],
                },
                indent=2,
            )
            + "\n",
            encoding="utf-8",
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
