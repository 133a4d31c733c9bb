"""``codemod.verify.runner.verify_targets`` with stand-in workers: ordering, failures, clean-up.

The real workers need torch and a checkout (tests/test_verify.py runs them); here ``Worker`` answers
from a table, so what is tested is the runner's own bookkeeping.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from codemod.verify import runner
from codemod.verify.runner import Target, verify_targets

SAME = {"name": "greedy", "status": "ok", "sequences": [[1, 2]], "scores": [], "calls": []}


class FakeWorker:
    """Answers "ok" with one identical scenario; a class named Broken* makes the request raise."""

    def __init__(self, python, source_root, device, log) -> None:
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
        return {"status": "ok", "scenarios": [SAME], "notes": []}


@pytest.fixture()
def fake_workers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "Worker", FakeWorker)


def _targets(*names: str) -> list[Target]:
    return [Target(f"m.py::{n}", "transformers.models.m.modeling_m", n, "m") for n in names]


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_harness_failure_is_that_class_unverified_and_the_others_still_run(fake_workers, tmp_path: Path,
                                                                             jobs: int) -> None:
    verdicts = verify_targets(_targets("AForCausalLM", "BrokenForCausalLM", "CForCausalLM"), old_root=tmp_path,
                              new_root=tmp_path, python=Path("python"), jobs=jobs, work_dir=tmp_path)
    assert [(v.override_id, v.verdict) for v in verdicts] == [
        ("m.py::AForCausalLM", "identical"), ("m.py::BrokenForCausalLM", "unverified"), ("m.py::CForCausalLM", "identical"),
    ]
    assert "the verification harness failed: OSError" in verdicts[1].detail


def test_the_scratch_directory_goes_unless_logs_are_kept(fake_workers, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    verify_targets(_targets("AForCausalLM"), old_root=tmp_path, new_root=tmp_path, python=Path("python"),
                   work_dir=tmp_path)
    assert not list(tmp_path.glob("codemod-verify-*"))
    monkeypatch.setenv("CODEMOD_KEEP_LOGS", "1")
    verify_targets(_targets("AForCausalLM"), old_root=tmp_path, new_root=tmp_path, python=Path("python"),
                   work_dir=tmp_path)
    (kept,) = tmp_path.glob("codemod-verify-*")
    assert sorted(p.name for p in kept.iterdir()) == ["new-0.log", "old-0.log"]  # the models are gone either way


def test_logs_a_verdict_points_at_are_kept(fake_workers, tmp_path: Path) -> None:
    (verdict,) = verify_targets(_targets("DiesForCausalLM"), old_root=tmp_path, new_root=tmp_path,
                                python=Path("python"), work_dir=tmp_path)
    assert verdict.verdict == "unverified" and "Segmentation fault" in verdict.detail
    log = Path(verdict.detail.rsplit("see ", 1)[1])
    assert log.read_text() == "started\n"
