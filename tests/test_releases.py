"""The three-sided verdict across releases (pure): the old code on its release (reference), the old code on the
target (baseline), the new code on the target (candidate), on hand-written result documents."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from codemod.contracts import ScenarioStatus, Verdict
from codemod.migrate import failing
from codemod.verify import runner
from codemod.verify.compare import compare_scenario
from codemod.verify.documents import ClassVerdict
from codemod.verify.options import VerifyOptions
from codemod.verify.releases import Runs, Sides, judge, judge_class, normalised, without_placeholder
from codemod.verify.runner import Across, Side, Target
from codemod.verify.session import VerifyReport

TARGET = "4.46.3"
CALLS = [{"input_ids": {"tensor": [1, 2], "dtype": "torch.int64", "values": [5, 6]}}]
EMBEDDED = {"inputs_embeds": {"tensor": [1, 2, 8]}, "max_new_tokens": 2}


def ok(name: str = "greedy", tokens: tuple[int, ...] = (5, 6, 7), **more: Any) -> dict[str, Any]:
    return {"name": name, "status": "ok", "sequences": [list(tokens)], "scores": [], "calls": CALLS, **more}


def error(name: str = "greedy", message: str = "TypeError: forward() got an unexpected keyword") -> dict[str, Any]:
    return {"name": name, "status": "error", "error": f"{message}\n  more lines", "calls": []}


def side(*scenarios: dict[str, Any]) -> dict[str, Any]:
    return {"status": "ok", "scenarios": list(scenarios), "seconds": 1.0, "caches": False}


def unimportable(message: str = "ImportError: cannot import name 'is_torch_fx_available'") -> dict[str, Any]:
    return {"status": "import-error", "error": message}


@pytest.mark.parametrize(
    ("reference", "baseline", "candidate", "status"),
    [
        pytest.param(ok(), ok(), ok(), "same", id="no-op: the target runs the old code as its release did"),
        pytest.param(ok(), ok(), error(), "crashed", id="the target runs the old code: the crash is the edit's"),
        pytest.param(ok(), error(), error(), "no-worse", id="the old code crashes alike on the target"),
        pytest.param(
            ok(),
            error(message="KeyError: 'past'"),
            error(),
            "crashed",
            id="the edit crashes otherwise than the target",
        ),
        pytest.param(ok(), ok(tokens=(5, 6, 9)), ok(tokens=(5, 6, 9)), "no-worse", id="the target changes both alike"),
        pytest.param(ok(), ok(tokens=(5, 6, 8)), ok(tokens=(5, 6, 9)), "differs", id="the edit differs otherwise"),
        pytest.param(ok(), ok(tokens=(5, 6, 9)), error(), "crashed", id="the target differs, the edit crashes"),
        pytest.param(ok(), error(), ok(), "repairs", id="the target crashes the old code, the new code generates"),
        pytest.param(
            error(message="TypeError: 'NoneType' object is not subscriptable"),
            error(message="RuntimeError: The expanded size of the tensor (10)"),
            error(message="RuntimeError: The size of tensor a (2)"),
            "both-fail",
            id="no one ran it: the old code fails it on its own release too (Baichuan's assisted on 4.29)",
        ),
        pytest.param(
            error(message="TypeError: 'NoneType' object is not subscriptable"),
            error(),
            ok(),
            "extended",
            id="no-op: the new code runs what failed everywhere",
        ),
        pytest.param(ok(), ok(tokens=(5, 6, 9)), ok(), "repairs", id="the target changes the old code's tokens only"),
        pytest.param(
            {"name": "greedy", "status": "skipped", "reason": "no cache"},
            error(),
            error(),
            "skipped",
            id="no-op: a scenario that does not apply stays skipped",
        ),
    ],
)
def test_each_scenario_is_judged_with_the_old_code_on_the_target(
    reference: dict[str, Any], baseline: dict[str, Any], candidate: dict[str, Any], status: str
) -> None:
    outcome = compare_scenario(reference, candidate, same_inputs=False)  # type: ignore[arg-type]
    judged = judge(outcome, Runs(reference, baseline, candidate), TARGET)  # type: ignore[arg-type]
    assert judged.status == status
    if status == "no-worse":
        assert judged.detail.startswith(f"{TARGET} breaks it for the old code too: ")
        assert judged.difference is None and judged.repair is None  # no difference of the edit's to show or repair
    if status in ("crashed", "differs"):  # the verdict says whose failure it is, and what the old code did there
        assert judged.detail.endswith(outcome.detail) and judged.detail.startswith(f"the new code's own ({TARGET} ")
        assert judged.difference == outcome.difference and judged.repair == outcome.repair


def test_a_scenario_the_target_breaks_names_the_release_and_its_error() -> None:
    outcome = compare_scenario(ok(), error(), same_inputs=False)
    judged = judge(outcome, Runs(ok(), error(), error()), TARGET)  # type: ignore[arg-type]
    assert judged.detail == f"{TARGET} breaks it for the old code too: TypeError: forward() got an unexpected keyword"
    repaired = judge(compare_scenario(ok(), ok(), same_inputs=False), Runs(ok(), error(), ok()), TARGET)  # type: ignore[arg-type]
    assert repaired.detail == (
        f"the new code generates as on the old release; {TARGET} breaks it for the old code: "
        "TypeError: forward() got an unexpected keyword"
    )


@pytest.mark.parametrize(
    ("baseline", "candidate", "verdict", "detail"),
    [
        pytest.param(
            side(ok(), ok("assisted")),
            side(ok(), ok("assisted")),
            Verdict.IDENTICAL,
            "",
            id="no-op: identical where the target runs the old code everywhere",
        ),
        pytest.param(
            side(ok(), error("assisted")),
            side(ok(), error("assisted")),
            Verdict.NO_WORSE,
            f"identical where {TARGET} runs the old code; {TARGET} breaks assisted for the old code too: TypeError",
            id="no-worse",
        ),
        pytest.param(
            side(ok(), error("assisted")),
            side(ok(), ok("assisted")),
            Verdict.REPAIRS,
            f"identical; repairs assisted, which {TARGET} breaks for the old code: TypeError: forward() got an",
            id="repairs",
        ),
        pytest.param(
            side(ok(), error("assisted")),
            side(error(message="ValueError: mask"), error("assisted")),
            Verdict.CRASHED,
            "greedy: the new code's own (4.46.3 runs the old code as its release did): ValueError: mask",
            id="an edit's own crash decides, the release's break is noted",
        ),
        pytest.param(
            unimportable(),
            side(ok(), ok("assisted")),
            Verdict.REPAIRS,
            "identical; repairs greedy, assisted",
            id="the old code cannot even import on the target",
        ),
        pytest.param(
            unimportable(),
            unimportable(),
            Verdict.UNVERIFIED,
            f"{TARGET} cannot run the old code either, so nothing ran: ImportError",
            id="neither code imports on the target: no evidence either way",
        ),
        pytest.param(
            side(ok(), ok("assisted")),
            unimportable(),
            Verdict.CRASHED,
            "the new code cannot run it",
            id="only the new code fails to import: the edit's crash",
        ),
    ],
)
def test_a_class_is_judged_on_three_sides(
    baseline: dict[str, Any], candidate: dict[str, Any], verdict: Verdict, detail: str
) -> None:
    reference = side(ok(), ok("assisted"))
    judged = judge_class("m.py::M", Sides(reference, baseline, candidate), TARGET)  # type: ignore[arg-type]
    assert judged.verdict is verdict, judged.detail
    assert detail in judged.detail


def test_the_release_break_is_noted_beside_an_edits_own_crash() -> None:
    sides = Sides(
        side(ok(), ok("assisted")),  # type: ignore[arg-type]
        side(ok(), error("assisted")),  # type: ignore[arg-type]
        side(error(message="ValueError: mask"), error("assisted")),  # type: ignore[arg-type]
    )
    judged = judge_class("m.py::M", sides, TARGET)
    statuses = {s.name: s.status for s in judged.scenarios}
    assert statuses == {"greedy": ScenarioStatus.CRASHED, "assisted": ScenarioStatus.NO_WORSE}
    assert f"{TARGET} breaks assisted for the old code too" in judged.detail


def test_without_a_baseline_the_verdict_is_the_two_sided_one() -> None:
    """``--from`` is the target: the reference is the baseline, nothing more runs, nothing is judged again."""
    sides = Sides(side(ok(), ok("assisted")), None, side(ok(), error("assisted")))  # type: ignore[arg-type]
    judged = judge_class("m.py::M", sides, TARGET)
    assert judged.verdict is Verdict.CRASHED
    assert [s.status for s in judged.scenarios] == [ScenarioStatus.SAME, ScenarioStatus.CRASHED]


def test_no_worse_alone_is_no_evidence() -> None:
    """A class whose every scenario the target breaks for the old code too compared nothing: unverified."""
    sides = Sides(side(ok()), side(error()), side(error()))  # type: ignore[arg-type]
    judged = judge_class("m.py::M", sides, TARGET)
    assert judged.verdict is Verdict.UNVERIFIED
    assert f"{TARGET} breaks greedy for the old code too" in judged.detail


def test_a_kept_verdict_is_not_reverted() -> None:
    """apply --verify keeps a change that is no worse than the release, or repairs it; reverts the rest."""
    verdicts = tuple(
        ClassVerdict(f"m.py::{verdict.name}", verdict, detail="d")
        for verdict in (Verdict.IDENTICAL, Verdict.NO_WORSE, Verdict.REPAIRS, Verdict.CRASHED)
    )
    report = VerifyReport(verdicts, (), (), "cpu", "python", 1.0, "HEAD")
    assert set(failing(report, keep_unverified=False)) == {"m.py::CRASHED"}


PLACEHOLDER = 1  # the start token 4.3x's generate() puts in front of what it generates from embeddings


@pytest.mark.parametrize(
    ("reference", "candidate", "stripped"),
    [
        pytest.param(
            ok("inputs-embeds", (PLACEHOLDER, 7, 8), inputs=EMBEDDED),
            ok("inputs-embeds", (7, 8), inputs=EMBEDDED),
            [[7, 8]],
            id="the old release's placeholder",
        ),
        pytest.param(
            ok("inputs-embeds", (7, 8), inputs=EMBEDDED),
            ok("inputs-embeds", (7, 8), inputs=EMBEDDED),
            [[7, 8]],
            id="no-op: the same lengths",
        ),
        pytest.param(
            ok("greedy", (5, 7, 8), inputs={"input_ids": {"tensor": [1, 1]}}),
            ok("greedy", (7, 8), inputs={"input_ids": {"tensor": [1, 1]}}),
            [[5, 7, 8]],
            id="no-op: a prompt of ids is returned by every release",
        ),
        pytest.param(
            ok("inputs-embeds", (PLACEHOLDER, 0, 7, 8), inputs=EMBEDDED),
            ok("inputs-embeds", (7, 8), inputs=EMBEDDED),
            [[PLACEHOLDER, 0, 7, 8]],
            id="no-op: two tokens more is no placeholder",
        ),
    ],
)
def test_the_inputs_embeds_placeholder_is_taken_off(
    reference: dict[str, Any], candidate: dict[str, Any], stripped: list[list[int]]
) -> None:
    ours, theirs = without_placeholder(reference, candidate)  # type: ignore[arg-type]
    assert ours["sequences"] == stripped and theirs["sequences"] == candidate["sequences"]


def test_rows_behind_other_first_tokens_keep_them() -> None:
    """A batch whose rows begin with other tokens has no placeholder in front: a real difference stays one."""
    reference = {**ok("inputs-embeds", inputs=EMBEDDED), "sequences": [[PLACEHOLDER, 7, 8], [2, 7, 9]]}
    candidate = {**ok("inputs-embeds", inputs=EMBEDDED), "sequences": [[7, 8], [7, 9]]}
    assert without_placeholder(reference, candidate) == (reference, candidate)  # type: ignore[arg-type]


def test_a_class_generating_from_embeddings_on_an_old_release_is_identical_on_the_new_one() -> None:
    """InternLM on 4.33 against 4.46: the sequences were compared shifted by one."""
    embedded = ok("inputs-embeds", (7, 8), inputs=EMBEDDED)
    reference = side(ok(), ok("inputs-embeds", (PLACEHOLDER, 7, 8), inputs=EMBEDDED))
    candidate = side(ok(), embedded)
    judged = judge_class("m.py::M", Sides(reference, side(ok(), embedded), candidate), TARGET)  # type: ignore[arg-type]
    assert judged.verdict is Verdict.IDENTICAL, judged.detail
    shifted = judge_class(
        "m.py::M", Sides(reference, None, side(ok(), ok("inputs-embeds", (9, 8), inputs=EMBEDDED))), TARGET
    )  # type: ignore[arg-type]
    assert shifted.verdict is Verdict.DIFFERS  # after the placeholder, a real difference is still one
    assert normalised(reference, candidate)[0]["scenarios"][1]["sequences"] == [[7, 8]]  # type: ignore[arg-type]


class SideWorker:
    """A stand-in worker answering as the side its log names: the baseline (the old code on the target) crashes
    in assisted decoding, the reference and the candidate generate alike."""

    requests: list[str] = []
    ceilings: set[int] = set()

    def __init__(self, side: object, device: str, log: Path, memory_mb: int = 0) -> None:
        self.name = log.name.split("-")[0]
        SideWorker.ceilings.add(memory_mb)

    def start(self) -> None:
        pass

    def stop(self) -> None:
        pass

    def request(self, payload: dict[str, Any], timeout: float) -> dict[str, Any]:
        SideWorker.requests.append(f"{self.name}:{payload['mode']}")
        assisted = error("assisted") if self.name == "baseline" else ok("assisted")
        return side(ok(), assisted)


@pytest.mark.parametrize(("baseline", "verdict"), [(True, "repairs"), (False, "identical")])
def test_the_runner_runs_the_baseline_on_a_third_worker(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, baseline: bool, verdict: str
) -> None:
    """Across releases the old code also loads the tiny models on the target; without a baseline (``--from`` is
    the target) nothing more runs."""
    monkeypatch.setattr(runner, "Worker", SideWorker)
    SideWorker.requests, SideWorker.ceilings = [], set()
    where = Side(Path("python"), (), tmp_path)
    across = Across(TARGET, where if baseline else None)
    (judged,) = runner.verify_targets(
        [Target("m.py::M", "m", "M", "m")],
        old=where,
        new=where,
        options=VerifyOptions(),
        work_dir=tmp_path,
        across=across,
    )
    assert judged.verdict == verdict, judged.detail
    assert SideWorker.requests == ["old:build", "new:load", *(["baseline:load"] if baseline else [])]
    # three workers share the machine's memory where a baseline runs
    assert SideWorker.ceilings == {runner.worker_memory_mb("cpu", 1, 3 if baseline else 2)}
