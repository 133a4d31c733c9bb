"""The corpus's runs: materialise a model, run the tool on it as a user would, and generate on each side.

Everything here has side effects (git, subprocesses, release environments); ``bench/corpus.py`` holds the
pure parts (manifest, config shrinking, the table) and the command line.
"""

from __future__ import annotations

import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.corpus import REPO, Model, shrink_config

WORKER = REPO / "bench" / "corpus_worker.py"
TREE = "model"  # the materialised folder's name: the dynamic-module package the model is imported as
_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+\d+(?:,\d+)? @@")
# apply's line per file for the fixes outside prepare_inputs_for_generation (codemod.idiom_round)
_IDIOMS = re.compile(
    r"^(?:reverted )?(?P<file>\S+): its idiom fixes \((?P<codes>[^)]*)\)(?: with [^:]*?)? (?P<outcome>kept|reverted):"
)
_GIT_ID = ["-c", "user.name=corpus", "-c", "user.email=corpus@localhost", "-c", "commit.gpgsign=false"]


@dataclass(frozen=True)
class RunOptions:
    targets: tuple[str, ...]
    mirror: Path | None = None
    work: Path | None = None
    tool_timeout: int = 2400
    worker_timeout: int = 600


class SourceError(RuntimeError):
    """Neither the mirror nor a clone from GitHub has the model's repository."""


def say(message: str) -> None:
    print(f"[corpus {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# ------------------------------------------------------------------------------------------- sources


def git_dir(model: Model, mirror: Path | None, clones: Path) -> Path:
    """A git directory holding ``model.commit``: from the mirror, else a bare clone from GitHub."""
    flat = model.repo.replace("/", "+")
    candidates = [mirror / flat / "repo", mirror / flat, mirror / model.repo] if mirror else []
    for candidate in candidates:
        if _has_commit(candidate, model.commit):
            return candidate
    target = clones / flat
    if _has_commit(target, model.commit):
        return target
    url = f"https://github.com/{model.repo}.git"
    done = subprocess.run(["git", "clone", "--bare", "-q", url, str(target)], capture_output=True, text=True)
    if done.returncode == 0 and _has_commit(target, model.commit):
        return target
    tried = ", ".join(str(c) for c in candidates) or "no --mirror given"
    why = (done.stderr.strip().splitlines() or ["the clone lacks the commit"])[-1]
    raise SourceError(f"{model.repo}@{model.commit[:10]}: not in the mirror ({tried}) and `git clone {url}`: {why}")


def _has_commit(path: Path, commit: str) -> bool:
    if not path.is_dir():
        return False
    done = subprocess.run(
        ["git", "--git-dir", str(path), "cat-file", "-e", f"{commit}^{{commit}}"], capture_output=True
    )
    return done.returncode == 0


def materialise(model: Model, source: Path, dest: Path) -> None:
    """The model's files at its commit in ``dest`` (a new git repository), config.json shrunk."""
    dest.mkdir(parents=True)
    for name in model.files:
        path = f"{model.folder.strip('/')}/{name}" if model.folder.strip("/") else name
        text = subprocess.run(
            ["git", "--git-dir", str(source), "show", f"{model.commit}:{path}"], capture_output=True, check=True
        ).stdout
        (dest / name).write_bytes(text)
    config = json.loads((dest / "config.json").read_text())
    (dest / "config.json").write_text(json.dumps(shrink_config(config, model.config), indent=2) + "\n")
    for args in (["init", "-q"], ["add", "."], [*_GIT_ID, "commit", "-q", "-m", f"{model.repo}@{model.commit}"]):
        subprocess.run(["git", *args], cwd=dest, check=True, capture_output=True)


# ------------------------------------------------------------------------------------------- the tool


def codemod(args: list[str], cwd: Path, timeout: int) -> dict[str, Any]:
    """One ``codemod`` command as a user runs it: exit status, output tails and seconds."""
    start = time.monotonic()
    command = ["nice", "-n", "10", sys.executable, "-m", "codemod", *args]
    try:
        done = subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=timeout)
        rc, stdout, stderr = done.returncode, done.stdout, done.stderr
    except subprocess.TimeoutExpired as expired:
        rc, stdout, stderr = 124, _text(expired.stdout), _text(expired.stderr) + f"\ntimed out after {timeout}s"
    return {
        "command": "codemod " + " ".join(args),
        "rc": rc,
        "seconds": round(time.monotonic() - start, 1),
        "stdout": stdout,
        "stderr_tail": stderr.strip().splitlines()[-15:],
        "idioms": idiom_outcomes(stderr),
    }


def idiom_outcomes(stderr: str) -> list[dict[str, str]]:
    """Each file's idiom fixes and whether apply kept them, once per file."""
    seen: dict[str, dict[str, str]] = {}
    for line in stderr.splitlines():
        if match := _IDIOMS.match(line.strip()):
            seen[match["file"]] = {"file": match["file"], "codes": match["codes"], "outcome": match["outcome"]}
    return list(seen.values())


def _text(data: bytes | str | None) -> str:
    return data.decode(errors="replace") if isinstance(data, bytes) else (data or "")


def scan_facts(document: dict[str, Any]) -> dict[str, Any]:
    """What a scan found: overrides, actions, edits it proposes (delete + reduce) and TB blockers."""
    findings = document.get("findings", [])
    actions = Counter(f["action"] for f in findings)
    blockers = document.get("blockers", [])
    return {
        "overrides": len(findings),
        "actions": dict(actions),
        "proposed": actions.get("delete", 0) + actions.get("reduce", 0),
        "findings": [{k: f[k] for k in ("file", "class", "line", "end_line", "category", "action")} for f in findings],
        "blockers": dict(Counter(b["code"] for b in blockers)),
        "blocker_lines": [f"{b['code']} {b['file']}:{b['line']}: {b['text']}" for b in blockers],
    }


def changed_old_lines(patch: str) -> dict[str, set[int]]:
    """Per file, the lines of the old side a unified diff removes or inserts next to."""
    changed: dict[str, set[int]] = {}
    current: set[int] | None = None
    for line in patch.splitlines():
        if line.startswith("--- "):
            name = line[4:].split("\t")[0]
            current = changed.setdefault(name[2:] if name.startswith("a/") else name, set())
        elif (match := _HUNK.match(line)) and current is not None:
            start, length = int(match.group(1)), int(match.group(2) or "1")
            current.update(range(start, start + max(length, 1)))
    return changed


def touched_classes(patch: str, findings: list[dict[str, Any]]) -> list[str]:
    """The overrides (class names) whose lines a patch changes."""
    changed = changed_old_lines(patch)
    return [
        f["class"] for f in findings if any(f["line"] <= n <= f["end_line"] for n in changed.get(f["file"], set()))
    ]


def verdict_facts(report: dict[str, Any]) -> dict[str, Any]:
    return {
        "verdicts": {k: n for k, n in report.get("summary", {}).items() if n},
        "classes": [
            {k: v.get(k) for k in ("class", "verdict", "detail", "first_difference")}
            for v in report.get("verdicts", [])
        ],
        "not_run": report.get("not_run", []),
    }


def run_tool(model: Model, target: str, tree: Path, scratch: Path, timeout: int) -> dict[str, Any]:
    """scan, diff and apply --verify on ``tree`` for ``target``; the tree is left as apply wrote it."""
    scan_json = scratch / "scan.json"
    scan = codemod(["scan", "--target", target, "-f", "json", "-o", str(scan_json)], tree, timeout)
    facts = scan_facts(json.loads(scan_json.read_text())) if scan_json.exists() else {}
    diff = codemod(["diff", "--target", target], tree, timeout)
    (scratch / "diff.patch").write_text(diff.pop("stdout"))
    findings = facts.get("findings", [])
    report_json = scratch / "report.json"
    requirements = [arg for r in model.requirements for arg in ("-r", r)]
    apply_args = ["apply", "--verify", "--from", model.written_for, "--target", target, "--report", str(report_json)]
    apply = codemod([*apply_args, *requirements], tree, timeout)
    apply.pop("stdout")
    written = subprocess.run(["git", "diff", "HEAD"], cwd=tree, capture_output=True, text=True).stdout
    (scratch / "written.patch").write_text(written)
    report = json.loads(report_json.read_text()) if report_json.exists() else {}
    scan.pop("stdout")
    return {
        "scan": {**scan, **facts},
        "diff": {**diff, "classes": touched_classes((scratch / "diff.patch").read_text(), findings)},
        "apply": {
            **apply,
            **verdict_facts(report),
            "written": len(touched_classes(written, findings)),
            "written_classes": touched_classes(written, findings),
            "written_lines": sum(1 for line in written.splitlines() if line[:1] in "+-" and line[:3] not in "+++---"),
        },
    }


# ------------------------------------------------------------------------------------------- generation


def generate_side(
    tree: Path, version: str, model: Model, weights: Path, make_weights: bool, timeout: int
) -> dict[str, Any]:
    """Our own generation check of ``tree`` on transformers ``version`` (in the tool's release environment)."""
    from codemod.verify.sides import release_environment

    for attempt in range(3):
        try:
            environment, src = release_environment(version, "cpu", requirements=model.requirements, progress=say)
            break
        except Exception as error:  # noqa: BLE001 - an environment that cannot be made is a result
            if "not a pristine" not in str(error) or attempt == 2:
                return {"errors": {"load": f"no environment for transformers {version}: {error}"}}
            time.sleep(30)  # another process is using the shared release checkout right now
    with tempfile.TemporaryDirectory(prefix="corpus-side-") as scratch:
        copy = Path(scratch) / TREE
        shutil.copytree(tree, copy, ignore=shutil.ignore_patterns(".git", "__pycache__"))
        out = Path(scratch) / "out.json"
        # as loading from the Hub leaves it: every file in the module cache, also those imported only by
        # another relative import (4.46 copies a local folder's direct imports only, then hashes them all)
        modules = Path(scratch) / "modules" / "transformers_modules" / TREE
        modules.mkdir(parents=True)
        for path in copy.glob("*.py"):
            shutil.copy2(path, modules / path.name)
        stubs = Path(scratch) / "stubs"
        for name in model.stubs:
            (stubs / name).mkdir(parents=True)
            (stubs / name / "__init__.py").write_text("")
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(src), str(stubs)]),
            "HF_MODULES_CACHE": str(Path(scratch) / "modules"),
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "TOKENIZERS_PARALLELISM": "false",
            "PYTHONDONTWRITEBYTECODE": "1",  # the release checkouts are shared: leave them pristine
            "OMP_NUM_THREADS": "1",
        }
        command = ["nice", "-n", "10", str(environment.python), str(WORKER), str(copy), str(weights), str(out)]
        command += ["--init", json.dumps(model.init)]
        start = time.monotonic()
        try:
            done = subprocess.run(
                command + (["--make-weights"] if make_weights else []),
                env=env,
                cwd=scratch,
                capture_output=True,
                text=True,
                timeout=timeout,
            )
        except subprocess.TimeoutExpired:
            return {"errors": {"load": f"timed out after {timeout}s"}, "transformers": version}
        if not out.exists():
            tail = " | ".join((done.stderr or done.stdout).strip().splitlines()[-3:])
            return {"errors": {"load": f"worker exited {done.returncode}: {tail}"}, "transformers": version}
        result: dict[str, Any] = json.loads(out.read_text())
        result["seconds"] = round(time.monotonic() - start, 1)
        return result


def compare(side: dict[str, Any], reference: dict[str, Any] | None) -> dict[str, Any]:
    """``side`` with ``same_as_reference``: its tokens equal the reference's in every mode both ran."""
    ref_tokens = (reference or {}).get("tokens", {})
    tokens = side.get("tokens", {})
    shared = [k for k in ("cache", "no_cache") if k in ref_tokens and k in tokens]
    same = all(tokens[k] == ref_tokens[k] for k in shared) if shared else None
    return {**side, "same_as_reference": same}


# ------------------------------------------------------------------------------------------- one model


def run_model(model: Model, options: RunOptions, work: Path) -> dict[str, Any]:
    """Every measurement of one model: the reference side once, then the tool and both sides per target."""
    root = work / model.name
    shutil.rmtree(root, ignore_errors=True)
    root.mkdir(parents=True)
    record: dict[str, Any] = {"family": model.family, "written_for": model.written_for, "repo": model.repo}
    record["commit"] = model.commit
    record["note"] = model.note
    try:
        source = git_dir(model, options.mirror, work / "clones")
    except SourceError as error:
        say(str(error))
        return {**record, "error": str(error), "targets": {}}
    original = root / "original" / TREE
    materialise(model, source, original)
    weights = root / "weights.pt"
    say(f"{model.name}: reference, the original code on {model.written_for}")
    reference = generate_side(original, model.written_for, model, weights, True, options.worker_timeout)
    record["reference"] = reference
    record["weights_from"] = model.written_for if weights.exists() else None
    record["targets"] = {}
    for target in options.targets:
        tree = root / target / TREE
        shutil.copytree(original, tree)
        say(f"{model.name}: codemod scan / diff / apply --verify --from {model.written_for} --target {target}")
        run = run_tool(model, target, tree, root / target, options.tool_timeout)
        made = not weights.exists()  # the reference could not make the weights: the first side that loads does
        if made:
            record["weights_from"] = f"{target} (before)"
        say(f"{model.name}: before and after on {target}")
        before = generate_side(original, target, model, weights, made, options.worker_timeout)
        after = generate_side(tree, target, model, weights, False, options.worker_timeout)
        usable = reference if not reference.get("errors", {}).get("load") else None
        run["before"] = compare(before, usable)
        run["after"] = compare(after, usable)
        record["targets"][target] = run
    return record


def tool_commit() -> str:
    """HEAD, and how many of the tool's files differ from it (others' work in progress in a shared tree)."""
    done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True)
    status = subprocess.run(
        ["git", "status", "--porcelain", "--", "codemod", "rules"], cwd=REPO, capture_output=True, text=True
    )
    changed = len(status.stdout.splitlines())
    return (done.stdout.strip() or "?") + (f" + {changed} uncommitted files" if changed else "")


def run_corpus(models: list[Model], options: RunOptions) -> dict[str, Any]:
    work = options.work or Path(tempfile.mkdtemp(prefix="codemod-corpus-"))
    work.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {
        "tool_commit": tool_commit(),
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "targets": list(options.targets),
        "models": {},
    }
    for model in models:
        start = time.monotonic()
        results["models"][model.name] = run_model(model, options, work)
        results["models"][model.name]["seconds"] = round(time.monotonic() - start, 1)
        results["models"][model.name]["tool_commit"] = results["tool_commit"]
        say(f"{model.name}: done in {time.monotonic() - start:.0f}s")
    return results
