"""The command line as a user and a CI job meet it: paths like ruff's (any number of files and directories,
none: the current directory, ``--release`` to fetch), annotations (``--format github`` / ``sarif``), help and
usage errors laid out for a log, and the summary of what ``diff`` and ``apply`` write.

Every test works on a private copy of a fixture with a private cache (``tests/conftest.py``).
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest
import typer.rich_utils
from typer.testing import CliRunner

from codemod import cli_help
from codemod.cli import app
from codemod.contracts import Held, HeldCause
from codemod.publish.report import count
from codemod.publish.summary import held_line

from .conftest import FOREIGN, REPO

runner = CliRunner()

#: a file of model code with one generic override (deleted) and one with a model-specific key (reduced)
GENERIC = "modeling_legacy.py"
REDUCED = "modeling_copied.py"
REMOVED = "-    def prepare_inputs_for_generation("


def invoke(*args: str | Path):
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture
def model_repo(tmp_path: Path, codemod_cache: Path) -> Path:
    """A model repository: one file with a generic override in ``a/``, one with a reducible one in ``b/``."""
    root = tmp_path / "repo"
    for folder, name in (("a", GENERIC), ("b", REDUCED)):
        (root / folder).mkdir(parents=True)
        shutil.copy(FOREIGN / name, root / folder / name)
    return root


def diffed_files(patch: str) -> list[str]:
    return re.findall(r"^\+\+\+ b/(.+)$", patch, re.M)


# --------------------------------------------------------------------------------------------- paths


def test_no_path_is_the_current_directory(model_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``cd my-model-repo && codemod diff`` diffs the user's files, not a transformers release."""
    monkeypatch.chdir(model_repo / "a")
    result = invoke("diff")
    assert result.exit_code == 1, result.output
    assert diffed_files(result.stdout) == [GENERIC] and REMOVED in result.stdout
    assert "to write it: codemod apply\n" in result.stderr


@pytest.mark.parametrize(
    ("args", "files"),
    [
        pytest.param([f"a/{GENERIC}", f"b/{REDUCED}"], [f"a/{GENERIC}", f"b/{REDUCED}"], id="two-files"),
        pytest.param(["a", "b"], [f"a/{GENERIC}", f"b/{REDUCED}"], id="two-directories"),
        pytest.param([f"a/{GENERIC}", "b"], [f"a/{GENERIC}", f"b/{REDUCED}"], id="a-file-and-a-directory"),
        pytest.param(["b", f"b/{REDUCED}"], [REDUCED], id="a-file-in-a-directory-given-too"),
        pytest.param([f"b/{REDUCED}"], [REDUCED], id="one-file"),
    ],
)
def test_paths_are_one_tree(
    model_repo: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], files: list[str]
) -> None:
    """Several paths are one tree rooted where they meet, each file once."""
    monkeypatch.chdir(model_repo)
    result = invoke("diff", *args)
    assert result.exit_code == 1, result.output
    assert diffed_files(result.stdout) == files
    assert f"to write it: codemod apply {' '.join(args)}" in result.stderr


def test_diff_says_the_apply_with_its_options(model_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The command ``diff`` offers writes what it showed: the same models, target and edits."""
    monkeypatch.chdir(model_repo)
    options = ["--only", "legacy", "--target", "built-in", "--mark", "--unsafe-fixes"]
    result = invoke("diff", "a", *options)
    assert result.exit_code == 1, result.output
    assert result.stderr.splitlines()[-1] == f"to write it: codemod apply a {' '.join(options)}"


def test_no_change_exits_0(model_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (model_repo / "c").mkdir()
    (model_repo / "c" / "modeling_plain.py").write_text("x = 1\n")
    monkeypatch.chdir(model_repo / "c")
    result = invoke("diff")
    assert result.exit_code == 0, result.output
    assert result.stdout == "" and "to write it" not in result.stderr


def test_apply_takes_paths(model_repo: Path) -> None:
    result = invoke("apply", model_repo / "a", model_repo / "b" / REDUCED)
    assert result.exit_code == 0, result.output
    assert "wrote 2 files in" in result.stderr
    assert invoke("diff", model_repo / "a", model_repo / "b").exit_code == 0  # nothing left to do


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(["--release", "4.45.2", "a"], "give PATHS or --release, not both", id="paths-and-release"),
        pytest.param(["a", "missing.py"], "no such file or directory", id="a-missing-path"),
    ],
)
def test_path_errors(model_repo: Path, monkeypatch: pytest.MonkeyPatch, args: list[str], message: str) -> None:
    monkeypatch.chdir(model_repo)
    result = invoke("scan", *args)
    assert result.exit_code == 2
    assert result.stderr.startswith("error: ") and message in result.stderr and result.stderr.count("\n") == 1


def test_a_transformers_checkout_is_given_alone(mini_checkout: Path, model_repo: Path) -> None:
    """A checkout is judged against its own mixin: a tree of it and other code would not be."""
    result = invoke("scan", mini_checkout, model_repo / "a")
    assert result.exit_code == 2
    assert "is a transformers checkout: give it as the only path" in result.stderr


def test_the_pre_commit_hook_fails_on_a_safe_edit_and_passes_once_applied(
    model_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``.pre-commit-hooks.yaml``'s entry, given the changed files as pre-commit passes them: it fails while an
    edit that needs no verification is available, printing it, and passes once ``apply`` has written it."""
    hooks = (REPO / ".pre-commit-hooks.yaml").read_text(encoding="utf-8")
    (entry,) = re.findall(r"^  entry: (.+)$", hooks, re.M)
    program, *args = entry.split()
    assert program == "codemod"
    monkeypatch.chdir(model_repo)
    files = [f"a/{GENERIC}", f"b/{REDUCED}"]
    result = invoke(*args, *files)
    assert result.exit_code == 1 and diffed_files(result.stdout) == files
    assert f"to write it: codemod apply {' '.join(files)}" in result.stderr
    assert invoke("apply", *files).exit_code == 0
    assert invoke(*args, *files).exit_code == 0


# --------------------------------------------------------------------------------------------- annotations


def changing(root: Path) -> list[dict]:
    """The scan's findings that would change, from its JSON report."""
    document = json.loads(invoke("scan", root, "-f", "json").stdout)
    return [f for f in document["findings"] if f["action"] != "keep"]


@pytest.mark.parametrize("command", ["scan", "diff"])
def test_github_annotations(model_repo: Path, monkeypatch: pytest.MonkeyPatch, command: str) -> None:
    """One ``::warning`` per override that would change, at its lines, its path relative to the current directory."""
    monkeypatch.chdir(model_repo)
    expected = changing(model_repo)
    result = invoke(command, "--format", "github")
    lines = result.stdout.splitlines()
    assert len(lines) == len(expected) == 2
    for line, finding in zip(lines, sorted(expected, key=lambda f: f["file"]), strict=True):
        assert line.startswith(
            f"::warning file={finding['file']},line={finding['line']},endLine={finding['end_line']},"
        )
        title = line.split("title=", 1)[1].split("::", 1)[0]
        assert finding["class"] in title and "," not in title and ":" not in title  # escaped as GitHub reads them
    assert result.exit_code == (1 if command == "diff" else 0)


def test_sarif(model_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(model_repo)
    expected = changing(model_repo)
    log = json.loads(invoke("scan", "--format", "sarif").stdout)
    results = log["runs"][0]["results"]
    assert log["version"] == "2.1.0" and [r["ruleId"] for r in results] == [f["action"] for f in expected]
    assert sorted(r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results) == [
        f"a/{GENERIC}",
        f"b/{REDUCED}",
    ]


def test_unknown_format_is_a_usage_error(model_repo: Path) -> None:
    result = invoke("diff", model_repo, "--format", "table")
    assert result.exit_code == 2 and "unknown format 'table': use patch, github or sarif" in result.stderr


# --------------------------------------------------------------------------------------------- help


COMMANDS = ["scan", "hooks", "diff", "verify", "apply", "merge", "fetch", "pr", "explain"]


@pytest.mark.parametrize("command", COMMANDS)
def test_help_off_a_terminal_is_plain_lines(command: str) -> None:
    """No box, no folding: every option on one line with its whole help, and real metavars."""
    result = invoke(command, "--help")
    assert result.exit_code == 0
    text = result.stdout
    assert not set("╭╰│─") & set(text)
    assert not re.search(r"<(bool|str|int|path|list)[^>]*>|\[x>=", text), text
    options = [line for line in text.splitlines() if line.lstrip().startswith("-")]
    assert options and all(line.rstrip().endswith((".", "]")) for line in options), text


def rich_help(command: str, monkeypatch: pytest.MonkeyPatch, width: int) -> str:
    monkeypatch.setattr(cli_help, "on_terminal", lambda: True)
    monkeypatch.setattr(typer.rich_utils, "MAX_WIDTH", width)
    monkeypatch.setattr(typer.rich_utils, "COLOR_SYSTEM", None)
    return invoke(command, "--help").stdout


@pytest.mark.parametrize("command", ["scan", "diff", "apply", "verify"])
def test_plain_help_is_no_longer_than_on_a_wide_terminal(command: str, monkeypatch: pytest.MonkeyPatch) -> None:
    plain = invoke(command, "--help").stdout
    drawn = rich_help(command, monkeypatch, 160)
    assert len(plain.splitlines()) <= len(drawn.strip("\n").splitlines())
    assert "Selection" in drawn and "<bool>" not in drawn and "list[" not in drawn


def test_options_are_grouped() -> None:
    text = invoke("apply", "--help").stdout
    headings = [line for line in text.splitlines() if line.endswith(":") and not line.startswith(" ")]
    assert headings == [
        "Arguments:",
        "Selection:",
        "What apply writes:",
        "Verification:",
        "Code outside transformers:",
        "Options:",
    ]


def test_command_summaries_are_one_sentence() -> None:
    """The command list shows each summary whole: no docstring line break cuts it."""
    text = invoke("--help").stdout
    rows = text.split("Commands:\n", 1)[1].splitlines()
    summaries = {row.split()[0]: row.split(None, 1)[1] for row in rows if row.strip()}
    assert sorted(summaries) == sorted(COMMANDS)
    assert all(s.endswith(".") for s in summaries.values()), summaries


def option_help(command: str, option: str) -> str:
    lines = invoke(command, "--help").stdout.splitlines()
    line = next(line for line in lines if re.match(rf"  (-\w, )?{option} ", line))
    return line.split("  ", 2)[-1].strip()


@pytest.mark.parametrize(
    ("command", "says"),
    [
        ("scan", "parse model files (default: the CPU count)"),
        ("diff", "parse model files (default: the CPU count)"),
        ("apply", "with --verify, classes verified at a time (default: 1)"),
        ("verify", "Classes verified at a time (default: 1)"),
    ],
)
def test_jobs_help_says_what_each_command_does(command: str, says: str) -> None:
    assert says in option_help(command, "--jobs")


def test_target_means_one_thing() -> None:
    """Every command's --target is the release model code outside transformers runs on, by default the one it runs
    with: verification runs on what scan and diff judge against (only built-in is no release to run on)."""
    from codemod.cli_options import TARGET

    helps = {command: option_help(command, "--target") for command in ("scan", "diff", "apply", "verify")}
    assert all(h.startswith(TARGET) for h in helps.values()), helps
    assert all("metadata allows, else the installed one, else the newest" in h for h in helps.values()), helps
    assert "built-in" in helps["apply"] and "built-in" not in helps["verify"]


@pytest.mark.parametrize(
    "args", [["apply", "--foo"], ["scan", "--jobs", "0"], ["diff", "--format"], ["nosuchcommand"]], ids=str
)
def test_a_usage_error_is_one_plain_line(args: list[str]) -> None:
    result = invoke(*args)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, result.stderr
    assert "--help'" in result.stderr and not set("╭╰│") & set(result.stderr)


# --------------------------------------------------------------------------------------------- summary


@pytest.mark.parametrize(
    ("n", "noun", "said"), [(0, "file", "0 files"), (1, "file", "1 file"), (2, "override", "2 overrides")]
)
def test_count(n: int, noun: str, said: str) -> None:
    assert count(n, noun) == said


@pytest.mark.parametrize(
    "detail", ["a.py::A: reduced, it would be 9 lines where it is 8", "reduced, it would be 9 lines where it is 8"]
)
def test_held_line_names_the_class_once(detail: str) -> None:
    held = Held("a.py::A", HeldCause.LONGER, detail)
    assert held_line(held) == "held back a.py::A: reduced, it would be 9 lines where it is 8"


def test_one_override_is_singular(model_repo: Path) -> None:
    result = invoke("diff", model_repo / "a")
    assert "1 override deleted, 0 reduced, 0 kept (0 held back); 1 file, 9 lines removed" in result.stderr


def test_summary_says_why_each_file_is_written(mini_checkout: Path) -> None:
    """Otter selected: its copies change with it and the stub mixin gets the generic implementation; each
    group of files is named with its reason."""
    result = invoke("diff", mini_checkout, "--only", "otter")
    lines = result.stderr.splitlines()
    assert lines[1] == "would write 4 files:"
    assert lines[2] == "  1 file for the selected models: otter"
    assert lines[3].startswith("  2 files to keep copies consistent") and lines[3].endswith(": badger, mink")
    assert lines[4].startswith("  1 file to install code in GenerationMixin")


def test_apply_says_why_each_file_was_written(mini_checkout: Path) -> None:
    result = invoke("apply", mini_checkout, "--only", "otter")
    assert result.exit_code == 0, result.output
    lines = result.stderr.splitlines()
    assert lines[1] == f"wrote 4 files in {mini_checkout.resolve()}:"
    assert lines[2] == "  1 file for the selected models: otter"


@pytest.mark.parametrize("command", ["diff", "apply"])
@pytest.mark.parametrize("option", [["--from", "4.45.2"], ["--requirement", "peft"]], ids=str)
def test_releases_to_run_on_need_verify(model_repo: Path, option: list[str], command: str) -> None:
    result = invoke(command, model_repo, *option)
    assert result.exit_code == 2
    assert "they need --verify" in result.stderr and result.stderr.count("\n") == 1


# --------------------------------------------------------------------------------------------- diff --verify


def test_diff_verify_says_the_apply_that_writes_it(model_repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What ``diff --verify`` prints is what ``apply --verify`` writes: the command it offers verifies too, on the
    same releases (a plain ``apply`` would write only the safe edits). The verification itself is stood in for."""
    from codemod import api

    def verified_diff(source: api.Source, feedback: api.Feedback, edits: api.Edits, run: api.Run) -> api.Applied:
        result, changes = api.diff(source, feedback, edits)
        return api.Applied(result, changes, ())

    monkeypatch.setattr(api, "verified_diff", verified_diff)
    monkeypatch.chdir(model_repo)
    result = invoke("diff", "a", "--verify", "--from", "4.45.2", "-r", "peft", "--keep-unverified", "--no-own-tests")
    assert result.exit_code == 1, result.output
    assert result.stderr.splitlines()[-1] == (
        "to write it: codemod apply a --from 4.45.2 --requirement peft --verify --keep-unverified --no-own-tests"
    )


@pytest.fixture
def unverified(monkeypatch: pytest.MonkeyPatch) -> None:
    """``apply`` as ``diff --verify`` runs it in its worktree, with the verification stood in for: the plain diff
    of the copy, nothing written (what is tested is the seam between the copy and the user's tree)."""
    from codemod import api
    from codemod.verify.session import VerifyReport

    def apply(source: api.Source, feedback: api.Feedback, edits: api.Edits, run: api.Run | None) -> api.Applied:
        result, changes = api.diff(source, feedback, edits)
        return api.Applied(result, changes, (), VerifyReport((), (), (), "cpu", "python", 1.0, "HEAD"))

    monkeypatch.setattr(api, "apply", apply)


def test_diff_verify_annotates_the_users_files(
    model_repo: Path, monkeypatch: pytest.MonkeyPatch, unverified: None
) -> None:
    """Its annotations name the files of the tree the CI job checked out, not those of the worktree, which is gone
    by then."""
    from .test_apply import make_repo

    make_repo(model_repo)
    monkeypatch.chdir(model_repo)
    result = invoke("diff", "a", "b", "--verify", "--format", "github")
    assert result.exit_code == 1, result.output
    assert all(line.startswith("::warning ") for line in result.stdout.splitlines()), result.stdout
    files = [line.split("file=", 1)[1].split(",", 1)[0] for line in result.stdout.splitlines()]
    assert files == [f"a/{GENERIC}", f"b/{REDUCED}"]
    assert "verified on cpu" in result.stderr  # the verification's table, beside the annotations


def test_diff_verify_sarif_is_one_document(
    model_repo: Path, monkeypatch: pytest.MonkeyPatch, unverified: None
) -> None:
    """stdout is the SARIF log alone, for an upload to read: the verification's table goes to stderr."""
    from .test_apply import make_repo

    make_repo(model_repo)
    monkeypatch.chdir(model_repo)
    result = invoke("diff", "a", "--verify", "--format", "sarif")
    assert result.exit_code == 1, result.output
    assert json.loads(result.stdout)["version"] == "2.1.0"


def test_diff_verify_names_a_path_head_does_not_have(model_repo: Path, unverified: None) -> None:
    """A file not committed yet is not in the worktree of HEAD that is verified: said as such, with the path given."""
    from .test_apply import make_repo

    make_repo(model_repo)
    new = model_repo / "c" / GENERIC
    new.parent.mkdir()
    shutil.copy(model_repo / "a" / GENERIC, new)
    result = invoke("diff", model_repo / "a", new, "--verify")
    assert result.exit_code == 2
    assert result.stderr == (f"error: {new} is not in HEAD: diff --verify verifies HEAD in a worktree; commit it\n")


def test_diff_verify_needs_a_git_work_tree(model_repo: Path) -> None:
    """It verifies HEAD in a worktree: a tree outside git has none (refused before anything is fetched or run)."""
    result = invoke("diff", model_repo, "--verify")
    assert result.exit_code == 2
    assert result.stderr == f"error: {model_repo.resolve()} is not a git work tree: --verify compares with HEAD\n"


def test_diff_verify_refuses_uncommitted_changes(model_repo: Path) -> None:
    """What it verifies and prints is HEAD's migration: on a dirty tree that diff would not be the one
    ``apply --verify`` writes over the user's changes, so it says so instead, and writes nothing."""
    from .test_apply import git, make_repo, snapshot

    make_repo(model_repo)
    (model_repo / "a" / GENERIC).write_text("x = 1\n")
    before = snapshot(model_repo)
    result = invoke("diff", model_repo, "--verify")
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: {model_repo.resolve()} has uncommitted changes: diff --verify verifies HEAD in a worktree; "
        "commit or stash them\n"
    )
    assert snapshot(model_repo) == before
    assert len(git(model_repo, "worktree", "list").splitlines()) == 1
