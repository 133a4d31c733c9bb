"""A verification spread over CI jobs: ``codemod merge`` of the shards' reports (pure), ``apply --from-report``
with the merged verdicts on the fixture checkout (a fake report: nothing is verified), and the example workflow
naming only commands and options the CLI has."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from codemod import api, migrate
from codemod.cli import app
from codemod.contracts import OverrideId, Verdict
from codemod.publish.report import verify_document
from codemod.publish.shards import MergeError, ShardSpec, merge, report_of, run_record
from codemod.verify.compare import ClassVerdict
from codemod.verify.session import VerifyReport, targets_from_plan

from .conftest import MINI_CHECKOUT, REPO, copy_fixture
from .test_apply import git, make_repo

runner = CliRunner()
SETTINGS = {"base": "HEAD", "only": [], "skip": []}
WORKFLOW = REPO / "examples" / "github-actions" / "codemod-sharded-verify.yml"


def _shard(index: int, count: int, verdicts: dict[str, Verdict], **run: Any) -> tuple[str, dict[str, Any]]:
    report = VerifyReport(
        tuple(ClassVerdict(OverrideId(oid), v, detail="" if v is Verdict.IDENTICAL else "greedy: tokens differ")
              for oid, v in verdicts.items()),
        (), (), "cpu", "python", 2.0, "HEAD",
    )  # fmt: skip
    files = {OverrideId(oid).file: "digest-of-" + OverrideId(oid).file for oid in verdicts}
    record = run_record(ShardSpec(index, count), run.pop("base_commit", "abc"), run.pop("settings", SETTINGS), files)
    return f"shard-{index}.json", verify_document(report, {**record, **run})


A, B, C = "m/a.py::A", "m/b.py::B", "m/c.py::C"


def test_shards_merge_into_one_report_in_shard_order() -> None:
    merged = merge([
        _shard(2, 2, {B: Verdict.DIFFERS}),
        _shard(1, 2, {A: Verdict.IDENTICAL, C: Verdict.IDENTICAL}),
    ])  # fmt: skip
    assert [v["override"] for v in merged["verdicts"]] == [A, C, B]
    assert merged["summary"]["identical"] == 2 and merged["summary"]["differs"] == 1
    assert merged["seconds"] == 4.0 and merged["run"]["shard"] == "1-2/2"
    assert set(merged["run"]["files"]) == {"m/a.py", "m/b.py", "m/c.py"}
    report = report_of(merged)
    assert [(v.override_id, v.verdict) for v in report.verdicts] == [
        (A, Verdict.IDENTICAL), (C, Verdict.IDENTICAL), (B, Verdict.DIFFERS)
    ]  # fmt: skip


@pytest.mark.parametrize(
    ("shards", "refused"),
    [
        pytest.param([_shard(1, 2, {A: Verdict.IDENTICAL})], "missing shards of 2: 2", id="missing"),
        pytest.param(
            [_shard(1, 2, {A: Verdict.IDENTICAL}), ("again.json", _shard(1, 2, {B: Verdict.IDENTICAL})[1])],
            "shard 1/2 twice",
            id="duplicated",
        ),
        pytest.param(
            [_shard(1, 2, {A: Verdict.IDENTICAL}), _shard(2, 3, {B: Verdict.IDENTICAL})],
            "different numbers of shards",
            id="other-counts",
        ),
        pytest.param(
            [_shard(1, 2, {A: Verdict.IDENTICAL}), _shard(2, 2, {B: Verdict.IDENTICAL}, base_commit="def")],
            "base_commit differ",
            id="other-base",
        ),
        pytest.param(
            [
                _shard(1, 2, {A: Verdict.IDENTICAL}),
                _shard(2, 2, {B: Verdict.IDENTICAL}, settings={**SETTINGS, "target": "4.46.3"}),
            ],
            "settings differ",
            id="other-target",
        ),
        pytest.param(
            [_shard(1, 2, {A: Verdict.IDENTICAL}), _shard(2, 2, {A: Verdict.IDENTICAL})],
            "m/a.py::A is verified in shard-1.json and in shard-2.json",
            id="a-class-twice",
        ),
        pytest.param(
            [_shard(1, 2, {A: Verdict.IDENTICAL}), _shard(2, 2, {B: Verdict.IDENTICAL}, files={"m/a.py": "other"})],
            "another text of m/a.py",
            id="another-tree",
        ),
        pytest.param(
            [_shard(1, 2, {A: Verdict.IDENTICAL}), ("old.json", {**_shard(2, 2, {})[1], "tool_version": "0.0.1"})],
            "other versions of the tool",
            id="another-tool-version",
        ),
        pytest.param([("plain.json", {"verdicts": []})], "no run record", id="not-a-shard-report"),
        pytest.param([], "no reports", id="none"),
    ],
)
def test_reports_that_are_not_the_shards_of_one_run_are_refused(
    shards: list[tuple[str, dict[str, Any]]], refused: str
) -> None:
    with pytest.raises(MergeError, match=re.escape(refused)):
        merge(shards)


# --------------------------------------------------------------------------------------------- apply --from-report

OTTER = "src/transformers/models/otter/modeling_otter.py::OtterForCausalLM"


def _merged_report(root: Path, tmp_path: Path, differs: str) -> Path:
    """What two shard jobs would have reported on the tree ``apply --unsafe-fixes`` writes, ``differs`` differing
    and every other changed class identical, merged by ``codemod merge``."""
    result, changes = api.diff(api.Source([root]), edits=api.Edits(unsafe=True))
    targets, _ = targets_from_plan(result, changes.plan)
    texts = {r.path: r.new for r in changes.rewrites if r.changed}
    head = git(root, "rev-parse", "HEAD").strip()
    paths = []
    for index in (1, 2):
        mine = targets[index - 1 :: 2]
        verdicts = tuple(
            ClassVerdict(
                t.override_id,
                Verdict.DIFFERS if t.override_id == differs else Verdict.IDENTICAL,
                detail="greedy: tokens differ" if t.override_id == differs else "",
                inherits_from=t.inherits_from,
            )
            for t in mine
        )
        files = {OverrideId(t.override_id).file for t in mine}
        digests = {f: hashlib.sha256(texts.get(f, (root / f).read_bytes())).hexdigest() for f in files}
        record = run_record(ShardSpec(index, 2), head, SETTINGS, digests)
        report = VerifyReport(verdicts, tuple(mine), (), "cpu", "python", 1.0, "HEAD")
        path = tmp_path / f"shard-{index}.json"
        path.write_text(json.dumps(verify_document(report, record)), encoding="utf-8")
        paths.append(path)
    merged = tmp_path / "merged.json"
    done = runner.invoke(app, ["merge", *map(str, paths), "--output", str(merged)])
    assert done.exit_code == 1, done.output  # one class differs
    return merged


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(copy_fixture(MINI_CHECKOUT, tmp_path / "mini_checkout"))


def test_apply_from_report_keeps_the_identical_changes_and_reverts_the_rest(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    merged = _merged_report(repo, tmp_path, OTTER)

    def verify_change(*args: object, **kwargs: object) -> None:
        raise AssertionError("apply --from-report verifies nothing again")

    monkeypatch.setattr(migrate, "verify_change", verify_change)
    done = runner.invoke(app, ["apply", str(repo), "--from-report", str(merged)])
    assert done.exit_code == 0, done.output
    otter = (repo / OverrideId(OTTER).file).read_text(encoding="utf-8")
    assert "def prepare_inputs_for_generation" in otter  # reverted: it differed
    assert "reverted" in done.output and "OtterForCausalLM" in done.output
    changed = git(repo, "diff", "--name-only").split()
    assert "src/transformers/models/lynx/modeling_lynx.py" in changed  # identical: kept
    assert OverrideId(OTTER).file not in changed


@pytest.mark.parametrize(
    ("spoil", "refused"),
    [
        pytest.param(lambda run: run.update(base_commit="0" * 40), "not of HEAD", id="another-base"),
        pytest.param(
            lambda run: run["files"].update({next(iter(run["files"])): "0"}), "another text", id="another-text"
        ),
        pytest.param(lambda run: run.update(shard="1/2"), "merge every shard first", id="one-shard-of-two"),
        pytest.param(lambda run: run.clear(), "no run record", id="no-run-record"),
    ],
)
def test_apply_from_report_refuses_a_report_of_another_tree(repo: Path, tmp_path: Path, spoil, refused: str) -> None:
    merged = _merged_report(repo, tmp_path, OTTER)
    document = json.loads(merged.read_text(encoding="utf-8"))
    spoil(document["run"])
    if not document["run"]:
        del document["run"]
    merged.write_text(json.dumps(document), encoding="utf-8")
    done = runner.invoke(app, ["apply", str(repo), "--from-report", str(merged)])
    assert done.exit_code == 2 and refused in done.output, done.output
    assert not git(repo, "diff", "--name-only").strip()  # nothing written


# --------------------------------------------------------------------------------------------- the workflow


def _codemod_lines(workflow: dict[str, Any]) -> list[str]:
    """Every ``codemod ...`` command line of the workflow's run steps (continuation lines joined)."""
    lines = []
    for job in workflow["jobs"].values():
        for step in job["steps"]:
            script = str(step.get("run", "")).replace("\\\n", " ")
            lines += [line.strip() for line in script.splitlines() if line.strip().startswith("codemod ")]
    return lines


def test_the_sharded_workflow_parses_and_runs_shards_then_a_merge() -> None:
    workflow = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    shard, final = workflow["jobs"]["shard"], workflow["jobs"]["merge"]
    assert final["needs"] == "shard"
    assert len(shard["strategy"]["matrix"]["shard"]) == int(workflow["env"]["SHARDS"])
    commands = [line.split()[1] for line in _codemod_lines(workflow)]
    assert commands == ["apply", "verify", "merge", "apply"]


def test_the_sharded_workflow_names_only_commands_and_options_the_cli_has() -> None:
    workflow = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    for line in _codemod_lines(workflow):
        name = line.split()[1]
        shown = runner.invoke(app, [name, "--help"], env={"COLUMNS": "300"})
        assert shown.exit_code == 0, (name, shown.output)
        for option in re.findall(r"(?<![\w-])--[a-z][a-z-]+", line):
            assert option in shown.output, (name, option)


def test_a_json_verify_report_says_which_run_it_is_a_shard_of(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Verification is faked (``api.verify``): what is tested is the record the command adds to its report."""
    otter = repo / OverrideId(OTTER).file
    otter.write_text(otter.read_text(encoding="utf-8") + "# changed\n", encoding="utf-8")

    def verify(source: api.Source, run: api.Run, feedback: object, *, base: str, shard: str | None) -> VerifyReport:
        return VerifyReport((ClassVerdict(OTTER, Verdict.IDENTICAL),), (), (), "cpu", "python", 1.0, base)

    monkeypatch.setattr(api, "verify", verify)
    output = tmp_path / "shard-2.json"
    done = runner.invoke(
        app, ["verify", str(repo), "--shard", "2/3", "--only", "otter", "--format", "json", "--output", str(output)]
    )
    assert done.exit_code == 0, done.output
    run = json.loads(output.read_text(encoding="utf-8"))["run"]
    assert run["shard"] == "2/3" and run["base_commit"] == git(repo, "rev-parse", "HEAD").strip()
    assert run["settings"]["only"] == ["otter"]
    assert run["files"] == {OverrideId(OTTER).file: hashlib.sha256(otter.read_bytes()).hexdigest()}


def test_apply_from_report_never_writes_the_cached_release(tmp_path: Path) -> None:
    report = tmp_path / "merged.json"
    report.write_text("{}", encoding="utf-8")
    done = runner.invoke(app, ["apply", "--release", "4.45.2", "--from-report", str(report)])
    assert done.exit_code == 2 and "not --release" in done.output, done.output
