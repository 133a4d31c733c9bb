"""Run verification: old code and new code side by side, each in its own worker processes.

The old side runs from a git worktree of the base revision, the new side from the working tree
(or a worktree of another revision); both in the checkout's environment, with the code under test
on PYTHONPATH. Each class goes to a pair of workers: the old one builds the tiny models and saves
them, the new one loads the same files, both run the same scenarios, and ``compare`` judges. Pairs
work in parallel (``jobs``); a worker that hangs past the timeout is killed and replaced.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import queue
import select
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypedDict

from codemod.contracts import Verdict, WorkerStatus
from codemod.errors import CodemodError
from codemod.verify.compare import ClassVerdict, ResultDocument, compare
from codemod.verify.options import VerifyOptions
from codemod.verify.releases import Sides, judge_class

VERIFY_DIR = Path(__file__).resolve().parent


#: One request to a worker (one JSON line on its stdin; see ``worker.py``): build or load one class's
#: tiny models, run the scenarios, write the result document to ``result``.
WorkerRequest = TypedDict(
    "WorkerRequest",
    {
        "id": int,
        "module": str,
        "class": str,
        "model_dir": str,
        "mode": str,  # "build" or "load"
        "scenarios": list[str],
        "seed": int,
        "device": str,
        "result": str,
    },
    total=False,
)


@dataclasses.dataclass(frozen=True)
class Target:
    """A model class to verify."""

    override_id: str  # an OverrideId: of the override the change touches (or of a class that inherits it)
    module: str  # dotted module to import it from
    class_name: str
    model: str
    #: for a class that inherits a changed override (``inheritors.Inheritor``): that override's id
    inherits_from: str = ""
    #: one group per statement the change keeps that reads the model's own optional inputs
    #: (``plan.kept_inputs``): an identical verdict needs a compared scenario to have given one of each
    needs: tuple[frozenset[str], ...] = ()


@dataclasses.dataclass(frozen=True)
class Across:
    """Two releases: the old side runs the old code on one (``--from``), the new side the new code on
    ``release``; ``baseline`` runs the old code on ``release`` too (None: not run)."""

    release: str
    baseline: Side | None = None


class VerificationError(CodemodError):
    pass


@dataclasses.dataclass(frozen=True)
class Side:
    """Where one side's code runs: the interpreter, what goes on ``PYTHONPATH`` (the code under test
    and the transformers it runs on), and the working directory (a checkout's root, where its
    ``tests`` package and model testers are found)."""

    python: Path
    paths: tuple[Path, ...]
    cwd: Path

    @classmethod
    def checkout(cls, python: Path, root: Path) -> Side:
        """A transformers checkout: its own ``src`` is the code under test and the transformers."""
        return cls(python, (root / "src",), root)


# --------------------------------------------------------------------------------------------- workers


def worker_memory_mb(device: str, jobs: int, sides: int = 2) -> int:
    """The heap ceiling of one worker: 80% of this machine's memory shared by the ``sides`` x ``jobs``
    workers on CPU (3 sides across releases; on a GPU the models live in device memory: no ceiling). 0: none."""
    if device != "cpu":
        return 0
    total_mb = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2**20
    return max(1024, int(0.8 * total_mb / (sides * max(1, jobs))))


class Worker:
    """One worker process for one side; requests are answered in order.

    Model code leaves memory behind (modules, caches, a fragmented heap) and one long-lived worker
    per side sees every class: after a request that leaves it holding more than half its ceiling,
    it is replaced by a fresh process, so a long run stays inside ``memory_mb``.
    """

    def __init__(self, side: Side, device: str, log: Path, memory_mb: int = 0) -> None:
        self.side, self.device, self.log_path = side, device, log
        self.memory_mb = memory_mb
        self.process: subprocess.Popen[str] | None = None
        self.counter = 0
        self.recycled = 0

    def start(self) -> None:
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([*(str(p) for p in self.side.paths), str(VERIFY_DIR)]),
            "CODEMOD_TORCH_THREADS": "1",
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "TOKENIZERS_PARALLELISM": "false",
            "PYTHONHASHSEED": "0",
            "CODEMOD_WORKER_MEMORY_MB": str(self.memory_mb),
        }
        self.log = self.log_path.open("a", encoding="utf-8")
        self.process = subprocess.Popen(
            [str(self.side.python), str(VERIFY_DIR / "worker.py")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
            env=env,
            cwd=str(self.side.cwd),
        )

    def stop(self) -> None:
        if self.process is not None:
            with contextlib.suppress(OSError):
                if self.process.stdin is not None:  # a pipe: always there
                    self.process.stdin.close()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            self.process = None
            self.log.close()

    def restart(self) -> None:
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None
            self.log.close()
        self.start()

    def request(self, payload: WorkerRequest, timeout: float) -> ResultDocument:
        """Send one request and wait for its result; a timeout or a dead worker is an error result."""
        if self.process is None or self.process.poll() is not None:
            self.restart()
        assert self.process is not None and self.process.stdin and self.process.stdout
        self.counter += 1
        payload = {**payload, "id": self.counter, "device": self.device}
        try:
            self.process.stdin.write(json.dumps(payload) + "\n")
            self.process.stdin.flush()
        except OSError as error:
            self.restart()
            return {"status": WorkerStatus.WORKER_ERROR, "error": f"the worker died: {error}"}
        deadline = time.monotonic() + timeout
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                self.restart()
                return {"status": WorkerStatus.TIMEOUT, "error": f"no answer within {timeout:.0f}s"}
            ready, _, _ = select.select([self.process.stdout], [], [], remaining)
            if not ready:
                continue
            line = self.process.stdout.readline()
            if not line:
                try:  # stdout closed: the process is going or gone (a negative code is the signal)
                    code = self.process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    code = None
                self.log.flush()
                last = self.log_path.read_text(encoding="utf-8", errors="replace").strip().splitlines()[-1:]
                self.restart()
                return {
                    "status": WorkerStatus.WORKER_ERROR,
                    "error": f"the worker exited ({code}): {' '.join(last)[:300]}; see {self.log_path}",
                }
            answer: dict[str, Any] = json.loads(line)
            if answer.get("id") == self.counter:
                break
        with open(payload["result"], encoding="utf-8") as handle:
            result: ResultDocument = json.load(handle)  # written by the worker
        if self.memory_mb and int(answer.get("resident_mb", 0)) > self.memory_mb // 2:
            self.stop()  # the next request starts a fresh one
            self.recycled += 1
        return result


# --------------------------------------------------------------------------------------------- run


Progress = Callable[[str, ClassVerdict | None, int, int], None]


def verify_targets(
    targets: Sequence[Target],
    *,
    old: Side,
    new: Side,
    options: VerifyOptions,
    seed: int = 0,
    progress: Progress | None = None,
    work_dir: Path | None = None,
    across: Across | None = None,
) -> list[ClassVerdict]:
    """Verify every target; verdicts come back in the targets' order. ``across``: the two sides run on two
    releases (``verify.releases`` judges them, with the old code on the new side's release when it runs too);
    else the prepared inputs must match as well."""
    if not targets:
        return []
    scratch = Path(tempfile.mkdtemp(prefix="codemod-verify-", dir=work_dir))
    todo: queue.Queue[tuple[int, Target]] = queue.Queue()
    for item in enumerate(targets):
        todo.put(item)
    verdicts: dict[int, ClassVerdict] = {}
    lock = threading.Lock()
    done_count = 0

    def pair(number: int) -> None:
        nonlocal done_count
        baseline = across.baseline if across is not None else None
        memory_mb = worker_memory_mb(options.device, options.jobs, 3 if baseline else 2)
        old_worker = Worker(old, options.device, scratch / f"old-{number}.log", memory_mb)
        new_worker = Worker(new, options.device, scratch / f"new-{number}.log", memory_mb)
        workers = (old_worker, new_worker) + (
            (Worker(baseline, options.device, scratch / f"baseline-{number}.log", memory_mb),) if baseline else ()
        )
        for worker in workers:
            worker.start()
        try:
            while True:
                try:
                    position, target = todo.get_nowait()
                except queue.Empty:
                    return
                if progress:
                    progress(target.class_name, None, done_count, len(targets))
                model_dir = scratch / "models" / f"{position:04d}-{target.class_name}"
                verdict = _verify_one(target, model_dir, workers, options, seed, across)
                with lock:
                    verdicts[position] = verdict
                    done_count += 1
                    if progress:
                        progress(target.class_name, verdict, done_count, len(targets))
        finally:
            for worker in workers:
                worker.stop()

    pairs = max(1, min(options.jobs, len(targets)))
    threads = [threading.Thread(target=pair, args=(n,), daemon=True) for n in range(pairs)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    # the workers' logs (what the models printed, tracebacks) stay when asked for, or when a
    # verdict points at them (a worker that died)
    keep_logs = os.environ.get("CODEMOD_KEEP_LOGS") or any(str(scratch) in v.detail for v in verdicts.values())
    shutil.rmtree(scratch / "models" if keep_logs else scratch, ignore_errors=True)
    return [verdicts[i] for i in range(len(targets))]


def _verify_one(
    target: Target,
    model_dir: Path,
    workers: tuple[Worker, ...],
    options: VerifyOptions,
    seed: int,
    across: Across | None,
) -> ClassVerdict:
    """One class on a pair of workers: the old side builds the tiny models in ``model_dir``, the new side (and
    across releases the baseline, a third worker) loads them, ``compare`` (or ``releases.judge_class``) judges; a
    failure of the harness itself is that class's verdict, not the run's."""
    old_worker, new_worker, *baseline_worker = workers
    try:
        model_dir.mkdir(parents=True)
        request: WorkerRequest = {
            "module": target.module,
            "class": target.class_name,
            "model_dir": str(model_dir),
            "scenarios": list(options.scenarios),
            "seed": seed,
        }
        old_result = old_worker.request(
            {**request, "mode": "build", "result": str(model_dir / "old.json")}, options.timeout
        )
        if old_result.get("status") == WorkerStatus.OK:
            new_result = new_worker.request(
                {**request, "mode": "load", "result": str(model_dir / "new.json")}, options.timeout
            )
        else:
            new_result = {"status": WorkerStatus.NOT_RUN}
        if across is None:
            verdict = compare(target.override_id, old_result, new_result, needs=target.needs)
        else:
            baseline = (
                baseline_worker[0].request(
                    {**request, "mode": "load", "result": str(model_dir / "baseline.json")}, options.timeout
                )
                if baseline_worker and old_result.get("status") == WorkerStatus.OK
                else None
            )
            sides = Sides(old_result, baseline, new_result)
            verdict = judge_class(target.override_id, sides, across.release, target.needs)
        verdict = dataclasses.replace(verdict, inherits_from=target.inherits_from)
    except Exception as error:  # noqa: BLE001 - one class's harness failure must not lose the others
        verdict = ClassVerdict(
            target.override_id,
            Verdict.UNVERIFIED,
            detail=f"the verification harness failed: {type(error).__name__}: {error}",
        )
    for heavy in ("variants", "inputs"):  # weights and tensors are large; results stay
        shutil.rmtree(model_dir / heavy, ignore_errors=True)
    return verdict


def module_of(path: str) -> str | None:
    """``transformers.models.llama.modeling_llama`` for ``src/transformers/models/llama/modeling_llama.py``."""
    parts = Path(path).with_suffix("").parts
    if "transformers" not in parts:
        return None
    return ".".join(parts[parts.index("transformers") :])
