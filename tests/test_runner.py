"""``codemod.verify.runner.verify_targets`` with stand-in workers: ordering, failures, clean-up.

The real workers need torch and a checkout (tests/test_verify.py runs them); here ``Worker`` answers
from a table, so what is tested is the runner's own bookkeeping.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

from codemod.verify import runner
from codemod.verify.options import DEFAULT_SCENARIOS, VerifyOptions
from codemod.verify.runner import Side, Target, verify_targets

#: verification as the command runs it by default
OPTIONS = VerifyOptions()
SAME = {"name": "greedy", "status": "ok", "sequences": [[1, 2]], "scores": [], "calls": [{"input_ids": [1]}]}


class FakeWorker:
    """Answers "ok" with one identical scenario; a class named Broken* makes the request raise."""

    def __init__(self, side, device, log, memory_mb=0) -> None:
        self.log = log

    def start(self) -> None:
        self.log.write_text("started\n")

    def stop(self) -> None:
        pass

    def request(self, payload: dict, timeout: float) -> dict:
        if payload["class"].startswith("Broken"):
            raise OSError("the worker's pipe closed")
        if payload["class"].startswith("Dies"):
            return {"status": "worker-error", "error": f"the worker exited (-11): Segmentation fault; see {self.log}"}
        return {"status": "ok", "scenarios": [SAME], "notes": [], "caches": False}


@pytest.fixture()
def fake_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "Worker", FakeWorker)


def side(root: Path) -> Side:
    return Side.checkout(Path("python"), root)


def _targets(*names: str) -> list[Target]:
    return [Target(f"m.py::{n}", "transformers.models.m.modeling_m", n, "m") for n in names]


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_harness_failure_is_that_class_unverified_and_the_others_still_run(
    fake_workers, tmp_path: Path, jobs: int
) -> None:
    verdicts = verify_targets(
        _targets("AForCausalLM", "BrokenForCausalLM", "CForCausalLM"),
        old=side(tmp_path),
        new=side(tmp_path),
        options=VerifyOptions(jobs=jobs),
        work_dir=tmp_path,
    )
    assert [(v.override_id, v.verdict) for v in verdicts] == [
        ("m.py::AForCausalLM", "identical"),
        ("m.py::BrokenForCausalLM", "unverified"),
        ("m.py::CForCausalLM", "identical"),
    ]
    assert "the verification harness failed: OSError" in verdicts[1].detail


def test_the_scratch_directory_goes_unless_logs_are_kept(
    fake_workers, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    verify_targets(
        _targets("AForCausalLM"), old=side(tmp_path), new=side(tmp_path), options=OPTIONS, work_dir=tmp_path
    )
    assert not list(tmp_path.glob("codemod-verify-*"))
    monkeypatch.setenv("CODEMOD_KEEP_LOGS", "1")
    verify_targets(
        _targets("AForCausalLM"), old=side(tmp_path), new=side(tmp_path), options=OPTIONS, work_dir=tmp_path
    )
    (kept,) = tmp_path.glob("codemod-verify-*")
    assert sorted(p.name for p in kept.iterdir()) == ["new-0.log", "old-0.log"]  # the models are gone either way


def test_logs_a_verdict_points_at_are_kept(fake_workers, tmp_path: Path) -> None:
    (verdict,) = verify_targets(
        _targets("DiesForCausalLM"), old=side(tmp_path), new=side(tmp_path), options=OPTIONS, work_dir=tmp_path
    )
    assert verdict.verdict == "unverified" and "Segmentation fault" in verdict.detail
    log = Path(verdict.detail.rsplit("see ", 1)[1])
    assert log.read_text() == "started\n"


# --------------------------------------------------------------------------------------------- the real Worker

STAND_IN = """#!{python}
# speaks the worker protocol (see codemod/verify/worker.py) and says it holds {resident} MiB
import json, os, sys
for line in sys.stdin:
    request = json.loads(line)
    with open(request["result"], "w") as out:
        json.dump({{"status": "ok", "pid": os.getpid(), "cap": os.environ["CODEMOD_WORKER_MEMORY_MB"]}}, out)
    print(json.dumps({{"id": request["id"], "status": "ok", "resident_mb": {resident}}}), flush=True)
"""


@pytest.mark.parametrize(("resident", "recycled"), [(100, False), (800, True)])
def test_a_worker_holding_more_than_half_its_ceiling_is_replaced(
    tmp_path: Path, resident: int, recycled: bool
) -> None:
    interpreter = tmp_path / "python"
    interpreter.write_text(STAND_IN.format(python=sys.executable, resident=resident))
    interpreter.chmod(0o755)
    worker = runner.Worker(Side.checkout(interpreter, tmp_path), "cpu", tmp_path / "w.log", memory_mb=1000)
    worker.start()
    try:
        first = worker.request({"result": str(tmp_path / "1.json")}, timeout=30)
        second = worker.request({"result": str(tmp_path / "2.json")}, timeout=30)
    finally:
        worker.stop()
    assert first["cap"] == second["cap"] == "1000"
    assert (first["pid"] != second["pid"]) is recycled
    assert worker.recycled == (2 if recycled else 0)


def test_the_memory_ceiling_shares_the_machine_between_the_workers() -> None:
    one, four = runner.worker_memory_mb("cpu", 1), runner.worker_memory_mb("cpu", 4)
    assert one >= four >= 1024
    assert runner.worker_memory_mb("cuda", 2) == 0  # device memory is not the heap


def test_the_default_scenarios_are_the_worker_s_own_in_its_order() -> None:
    """The tool asks for ``DEFAULT_SCENARIOS``; the worker runs the builders ``scenarios.SCENARIOS`` names (a module
    this side cannot import: it needs torch). A scenario added to one and not the other never runs, or fails on both
    sides alike: the names and their report order are the same."""
    tree = ast.parse((runner.VERIFY_DIR / "scenarios.py").read_text(encoding="utf-8"))
    registry = next(
        node.value
        for node in tree.body
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == "SCENARIOS"
    )
    assert isinstance(registry, ast.Dict)
    assert tuple(ast.literal_eval(key) for key in registry.keys if key is not None) == DEFAULT_SCENARIOS
