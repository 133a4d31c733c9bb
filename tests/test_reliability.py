"""Nothing lost, all or nothing, never a traceback: the probes of issue 43 on fixtures.

Each test names the protection it checks and fails without it: the content check before each rename (an edit
made by another process since the read survives), the rollback at every step of a write (interrupts injected by
``codemod.writes.step_hook``, not by timing; a real SIGINT in the middle of a rename), the journal a killed write
leaves for the next run, the lock per checkout, the note of unverified changes, the pruning of a killed run's
worktrees, one line for odd input, the classifier keeping what its rules do not model, and the PR bot's retries.
"""

from __future__ import annotations

import fcntl
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from codemod import git, writes
from codemod.analyse.scan import scan
from codemod.checkout import resolve
from codemod.github import GitHubClient, GitHubError, Retry
from codemod.publish.pr.plan import Action, PrError
from codemod.transform.apply import Changes, WriteError, compute_changes, write

from . import test_pr
from .conftest import MINI_CHECKOUT, REPO, copy_fixture
from .fake_github import FakeGitHub
from .test_apply import make_repo, snapshot
from .test_pr import TOKEN, FakeMigrate, World


@pytest.fixture
def repo(tmp_path: Path, codemod_cache: Path) -> Path:
    return make_repo(copy_fixture(MINI_CHECKOUT, tmp_path / "mini_checkout"))


@pytest.fixture
def hook() -> Iterator[None]:
    yield
    writes.step_hook = None


def planned(repo: Path) -> tuple[Changes, list[str]]:
    changes = compute_changes(scan(resolve(repo), use_cache=False), jobs=1)
    paths = [r.path for r in changes.rewrites if r.changed]
    assert len(paths) >= 3, "the fixture changes several files"
    return changes, paths


def staged_left(root: Path) -> list[Path]:
    return [p for p in root.rglob(f"*{writes.STAGED_SUFFIX}")]


# --------------------------------------------------------------------------------------------- lost edits


def test_an_edit_made_after_the_read_is_never_overwritten(repo: Path) -> None:
    """Another process appends to the second file between the read and the write: the write stops before that
    file, names it, and puts back the first; the edit survives. Without the content check it is overwritten."""
    changes, paths = planned(repo)
    edited = repo / paths[1]
    edited.write_bytes(edited.read_bytes() + b"# a line another process added\n")
    before = snapshot(repo)
    with pytest.raises(WriteError) as caught:
        write(resolve(repo), changes)
    assert snapshot(repo) == before
    assert str(caught.value).startswith(f"{paths[1]} changed on disk since it was read")
    assert f"put back 1 already replaced: {paths[0]}" in str(caught.value)
    assert "\n" not in str(caught.value)
    assert staged_left(repo) == []


# --------------------------------------------------------------------------------------------- interrupts


STEPS = [("stage", 0), ("stage", 2), ("check", 0), ("check", 2), ("replace", 0), ("replace", 1), ("replace", -1)]


@pytest.mark.parametrize(("step", "at"), STEPS, ids=[f"{s}-{a}" for s, a in STEPS])
def test_ctrl_c_at_any_step_of_a_write_leaves_the_tree_as_it_was(repo: Path, hook: None, step: str, at: int) -> None:
    """Ctrl-C (a ``KeyboardInterrupt`` raised by the test hook) right before the chosen step of the chosen file:
    every file already replaced is put back, nothing staged is left, and the error is one line (exit 130)."""
    changes, paths = planned(repo)
    target = paths[at]

    def interrupt(name: str, label: str) -> None:
        if (name, label) == (step, target):
            raise KeyboardInterrupt

    writes.step_hook = interrupt
    before = snapshot(repo)
    with pytest.raises(writes.Interrupted) as caught:
        write(resolve(repo), changes)
    assert snapshot(repo) == before
    assert staged_left(repo) == []
    assert caught.value.exit_code == 130
    assert str(caught.value).startswith("interrupted: no file was changed")
    replaced = paths.index(target) if step == "replace" else paths.index(target) if step == "check" else 0
    assert ("put back" in str(caught.value)) == (replaced > 0)


def test_a_real_sigint_in_the_middle_of_a_rename_rolls_back(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """SIGINT delivered while the second file is being renamed (after the rename itself): Ctrl-C is held off to
    the next step, so the file is known as replaced and put back with the first."""
    changes, paths = planned(repo)
    real_replace = os.replace
    calls: list[str] = []

    def replace_then_signal(src: str | Path, dst: str | Path) -> None:
        real_replace(src, dst)
        calls.append(str(dst))
        if len(calls) == 2:
            signal.raise_signal(signal.SIGINT)

    monkeypatch.setattr(writes.os, "replace", replace_then_signal)
    before = snapshot(repo)
    with pytest.raises(writes.Interrupted, match=r"^interrupted: no file was changed \(put back 2 already replaced"):
        write(resolve(repo), changes)
    monkeypatch.undo()
    assert snapshot(repo) == before
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler, "the caller's handler is back"


def test_an_interrupt_the_instant_a_rename_is_done_puts_that_file_back(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A ``KeyboardInterrupt`` raised right as the second rename returns (no step in between): the file is already
    recorded as replaced, so it is put back with the first. Recorded after its rename, it would stay changed."""
    changes, paths = planned(repo)
    real_replace = os.replace
    calls: list[str] = []

    def replace_then_interrupt(src: str | Path, dst: str | Path) -> None:
        real_replace(src, dst)
        calls.append(str(dst))
        if len(calls) == 2:
            raise KeyboardInterrupt

    monkeypatch.setattr(writes.os, "replace", replace_then_interrupt)
    before = snapshot(repo)
    with pytest.raises(writes.Interrupted, match=rf"put back 2 already replaced: {paths[0]}, {paths[1]}\)$"):
        write(resolve(repo), changes)
    monkeypatch.undo()
    assert snapshot(repo) == before


def test_ctrl_c_during_the_rollback_does_not_stop_it(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The third file was edited by another process: the write stops and puts back the two it replaced. A SIGINT
    that arrives while the first is being put back waits: both are put back, and the line says why it stopped."""
    changes, paths = planned(repo)
    edited = repo / paths[2]
    edited.write_bytes(edited.read_bytes() + b"# another process's line\n")
    real_replace = os.replace
    calls: list[str] = []

    def replace_with_a_signal(src: str | Path, dst: str | Path) -> None:
        real_replace(src, dst)
        calls.append(str(dst))
        if len(calls) == 3:  # the first put-back
            signal.raise_signal(signal.SIGINT)

    monkeypatch.setattr(writes.os, "replace", replace_with_a_signal)
    before = snapshot(repo)
    with pytest.raises(WriteError, match=rf"^{paths[2]} changed on disk since it was read"):
        write(resolve(repo), changes)
    monkeypatch.undo()
    assert snapshot(repo) == before


KILLER = """
import os, sys
from codemod import writes
from codemod.analyse.scan import scan
from codemod.checkout import resolve
from codemod.github import GitHubClient, GitHubError, Retry
from codemod.publish.pr.plan import Action, PrError
from codemod.transform.apply import compute_changes, write

from pathlib import Path
root, step, at = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
changes = compute_changes(scan(resolve(root), use_cache=False), jobs=1)
target = [r.path for r in changes.rewrites if r.changed][at]
def kill(name, label):
    if (name, label) == (step, target):
        os._exit(9)  # as SIGKILL: no rollback, no cleanup
writes.step_hook = kill
write(resolve(root), changes)
"""


@pytest.mark.parametrize(("step", "at"), [("stage", 2), ("replace", 2), ("done", -1)])
def test_a_killed_write_is_undone_by_the_next_run(repo: Path, step: str, at: int) -> None:
    """A write killed outright (the hook ends the process) leaves staged files and some files replaced; the next
    run that works on the checkout removes the first and puts back the second, from the journal, and says so."""
    before = snapshot(repo)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    args = [sys.executable, "-c", KILLER, str(repo), step, str(at)] if step != "done" else []
    if step == "done":  # the kill comes after the last rename: at its "done" step
        args = [sys.executable, "-c", KILLER.replace("(name, label) == (step, target)", "name == step"), str(repo)]
        args += [step, "0"]
    done = subprocess.run(args, env=env, capture_output=True, text=True, check=False)
    assert done.returncode == 9, done.stderr
    assert snapshot(repo) != before or staged_left(repo), "the killed run left something to undo"
    lines = writes.attend(repo, recover=False)
    assert lines and "was stopped while writing" in lines[0], "a read-only run names what it left"
    lines = writes.attend(repo, recover=True)
    assert len(lines) == 1 and lines[0].startswith(f"an earlier run on {repo} was stopped while writing: removed ")
    assert snapshot(repo) == before
    assert staged_left(repo) == []
    assert writes.attend(repo, recover=True) == [], "said once"


@pytest.mark.parametrize("written", [b"", b"\x80\x05\x95", b"\x80\x05K\x01."], ids=["empty", "cut", "not-a-journal"])
@pytest.mark.parametrize("state", ["journal", "unverified"])
def test_a_state_file_cut_short_is_dropped(repo: Path, state: str, written: bytes) -> None:
    """A run killed while writing its journal (or its note of unverified changes) had staged and replaced nothing
    yet: the file it left is removed, with nothing to say, and the tree is left as it is."""
    before = snapshot(repo)
    path = writes._state(repo, state)
    path.write_bytes(written)
    assert writes.attend(repo, recover=True) == []
    assert not path.exists()
    assert snapshot(repo) == before


def cli(*args: str | Path) -> Any:
    from typer.testing import CliRunner

    from codemod.cli import app

    return CliRunner().invoke(app, [str(a) for a in args])


def test_ctrl_c_in_apply_is_one_line_and_exit_130(repo: Path, hook: None) -> None:
    """Through the CLI: Ctrl-C at the third rename puts back the two files replaced and says so in one line."""
    _, paths = planned(repo)

    def interrupt(name: str, label: str) -> None:
        if (name, label) == ("replace", paths[2]):
            raise KeyboardInterrupt

    writes.step_hook = interrupt
    before = snapshot(repo)
    done = cli("apply", repo)
    assert done.exit_code == 130, (done.output, done.exception)
    assert done.stderr == (
        f"error: interrupted: no file was changed (put back 2 already replaced: {paths[0]}, {paths[1]})\n"
    )
    assert snapshot(repo) == before


def test_the_next_apply_undoes_a_killed_write_then_migrates(repo: Path) -> None:
    """After a write killed at its third rename, ``codemod apply`` says what it put back, then migrates the tree
    as if nothing had happened."""
    _, paths = planned(repo)
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", KILLER, str(repo), "replace", "2"], env=env, check=False)
    assert done.returncode == 9
    applied = cli("apply", repo, "--unsafe-fixes")  # the edits ``planned`` made, Puffin's unproven one included
    assert applied.exit_code == 0, (applied.output, applied.exception)
    assert f"an earlier run on {repo} was stopped while writing: removed " in applied.stderr
    assert f"put back 2 files it had replaced ({paths[0]}, {paths[1]})" in applied.stderr
    assert staged_left(repo) == []
    assert sorted(git.run(repo, "diff", "--name-only").stdout.split()) == sorted(paths)


def test_scan_and_verify_report_unverified_changes(repo: Path) -> None:
    """A stopped ``apply --verify`` left its note: ``scan`` and ``verify`` say which files, and the way out."""
    changes, paths = planned(repo)
    writes.mark_unverified(repo, {r.path: r.old for r in changes.rewrites if r.changed})
    write(resolve(repo), changes)
    for command in ("scan", "verify"):
        done = cli(command, repo, *(["--only", "nomodel"] if command == "verify" else []))
        assert f"{repo} holds unverified changes: an `apply --verify` started " in done.stderr, command
        assert f"git -C {repo} checkout -- " in done.stderr


# --------------------------------------------------------------------------------------------- one run at a time


def test_a_second_run_on_the_same_checkout_stops_with_one_line(repo: Path) -> None:
    """Another process holds the checkout's lock (flock on the lock file, as a live run does): a write refuses,
    naming it, and changes nothing."""
    changes, _ = planned(repo)
    lock = writes._state(repo, "lock")
    other = os.open(lock, os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(other, fcntl.LOCK_EX)
        os.write(other, b"4242\n")
        before = snapshot(repo)
        with pytest.raises(writes.Busy, match=rf"^another codemod run \(pid 4242\) is working on {repo}: wait"):
            write(resolve(repo), changes)
        assert snapshot(repo) == before
        assert writes.attend(repo, recover=False) == [], "a run under way has left nothing to report yet"
    finally:
        os.close(other)
    assert write(resolve(repo), changes), "free again once the other run ends"


# --------------------------------------------------------------------------------------------- verification killed


def test_unverified_changes_are_reported_until_they_are_back(repo: Path) -> None:
    """The note ``apply --verify`` leaves before its first write: a later run reports the files still changed, with
    the way out; once they are back as they were, the note goes away by itself."""
    changes, paths = planned(repo)
    originals = {r.path: r.old for r in changes.rewrites if r.changed}
    writes.mark_unverified(repo, originals)
    write(resolve(repo), changes)  # then the run is killed in verification
    (line,) = writes.attend(repo, recover=False)
    assert line.startswith(f"{repo} holds unverified changes: an `apply --verify` started ")
    assert f"leaving {len(paths)} files changed" in line
    assert f"`git -C {repo} checkout -- {' '.join(sorted(paths))}`" in line
    git.run(repo, "checkout", "--", *paths)
    assert writes.attend(repo, recover=False) == []
    assert not writes._state(repo, "unverified").exists()


def test_migration_leaves_the_note_while_it_verifies(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``run_migration_on`` notes the unverified changes before its first write: a kill during verification (here:
    the note is looked at from verification) leaves it for the next run."""
    from codemod import migrate

    seen: list[list[str]] = []

    class Stop(Exception):
        pass

    def verify_change(*args: object, **kwargs: object) -> None:
        note = writes._state(repo, "unverified")
        seen.append([str(note.exists())])
        raise Stop

    monkeypatch.setattr(migrate, "verify_change", verify_change)
    before = snapshot(repo)
    with pytest.raises(Stop):
        migrate.run_migration_on(resolve(repo))
    assert seen == [["True"]]
    assert snapshot(repo) == before, "an error in verification puts the tree back"
    assert writes.attend(repo, recover=False) == []


def test_ctrl_c_in_verification_puts_the_tree_back_and_says_so(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C while ``apply --verify`` verifies: the migration written for it is put back, the run ends with one
    line that says so (exit 130), and no note of unverified changes is left to report."""
    from codemod import migrate

    _, paths = planned(repo)

    def verify_change(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(migrate, "verify_change", verify_change)
    before = snapshot(repo)
    with pytest.raises(writes.Interrupted) as caught:
        migrate.run_migration_on(resolve(repo))
    assert str(caught.value).startswith(f"interrupted: put back the {len(paths)} files it had changed (")
    assert str(caught.value).endswith("; the tree is as it was") and caught.value.exit_code == 130
    assert snapshot(repo) == before
    assert writes.attend(repo, recover=False) == []


def test_the_next_worktree_prunes_those_a_killed_run_left(tmp_path: Path) -> None:
    """A worktree whose process is gone (its directory names the pid) is removed and pruned by the next one."""
    repo = tmp_path / "r"
    repo.mkdir()
    git.run(repo, "init", "-q", "-b", "main", isolated=True)
    (repo / "a.py").write_text("x = 1\n")
    git.run(repo, "add", "-A", isolated=True)
    git.run(repo, "commit", "-q", "-m", "one", isolated=True)
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    stale = tmp_path / f"{git.WORKTREE_PREFIX}{int(gone.stdout)}-abc" / "tree"
    live = tmp_path / f"{git.WORKTREE_PREFIX}{os.getpid()}-abc" / "tree"
    for path in (stale, live):
        git.run(repo, "worktree", "add", "--detach", "--quiet", str(path), "HEAD")
    with git.worktree(repo, "HEAD", parent=tmp_path) as tree:
        listed = git.output(repo, "worktree", "list", "--porcelain") or ""
        assert f"worktree {tree}" in listed
    listed = git.output(repo, "worktree", "list", "--porcelain") or ""
    assert f"worktree {stale}" not in listed and not stale.parent.exists()
    assert f"worktree {live}" in listed, "a live process's worktree is its own"


# --------------------------------------------------------------------------------------------- odd input

MODEL = """\
import torch
from transformers import GenerationMixin, PreTrainedModel


class {name}ForCausalLM(PreTrainedModel, GenerationMixin):
    def forward(self, input_ids=None, attention_mask=None, position_ids=None, past_key_values=None, **kwargs):
        return input_ids

{header}    def prepare_inputs_for_generation(
        self, input_ids, past_key_values=None, attention_mask=None, inputs_embeds=None, cache_position=None,
        position_ids=None, use_cache=True, **kwargs,
    ):
        if past_key_values is not None:
            if inputs_embeds is not None:
                input_ids = input_ids[:, -cache_position.shape[0] :]
            elif input_ids.shape[1] != cache_position.shape[0]:
                input_ids = input_ids[:, cache_position]
        if attention_mask is not None and position_ids is None:
            position_ids = attention_mask.long().cumsum(-1) - 1
            position_ids.masked_fill_(attention_mask == 0, 1)
            if past_key_values:
                position_ids = position_ids[:, -input_ids.shape[1] :]
        if inputs_embeds is not None and cache_position[0] == 0:
            model_inputs = {{"inputs_embeds": inputs_embeds, "input_ids": None}}
        else:
            model_inputs = {{"input_ids": input_ids.contiguous(), "inputs_embeds": None}}
        model_inputs.update(
            {{
                "position_ids": position_ids,
                "cache_position": cache_position,
                "past_key_values": past_key_values,
                "use_cache": use_cache,
                "attention_mask": attention_mask,
            }}
        )
        return model_inputs
"""


def model(name: str, header: str = "", tail: str = "") -> bytes:
    return (MODEL.format(name=name, header=header) + tail).encode()


@pytest.fixture
def odd_tree(tmp_path: Path, codemod_cache: Path) -> Path:
    """A tree of model code with a file named in bytes that are not UTF-8, one too deep for CPython's compiler (a
    20,000-term sum), one with a null byte and one of Python 2: the first migrates, the others are named."""
    root = tmp_path / "odd"
    root.mkdir()
    (root / "modeling_plain.py").write_bytes(model("Plain"))
    os.makedirs(os.fsencode(root), exist_ok=True)
    with open(os.fsencode(root) + b"/modeling_\xffodd.py", "wb") as handle:
        handle.write(model("Odd"))
    (root / "modeling_deep.py").write_bytes(model("Deep", tail="x = " + " + ".join(["1"] * 20000) + "\n"))
    (root / "modeling_nul.py").write_bytes(model("Nul", tail="\x00\n"))
    (root / "modeling_py2.py").write_bytes(model("Old", tail='print "hello"\n'))
    return root


UNREAD = ("modeling_deep.py", "modeling_nul.py", "modeling_py2.py")


def test_odd_files_are_named_never_a_traceback(odd_tree: Path) -> None:
    """scan, diff and apply end as documented (0, 1, 0) with no traceback; diff and apply name the three files they
    cannot parse, with the count, in their summary; the file named in odd bytes is migrated like any other (as the
    same code in a plainly named file)."""
    from typer.testing import CliRunner

    from codemod.cli import app

    runner = CliRunner()
    scanned = runner.invoke(app, ["scan", str(odd_tree)])
    assert scanned.exit_code == 0, (scanned.output, scanned.exception)
    for command, status in (("diff", 1), ("apply", 0)):
        done = runner.invoke(app, [command, str(odd_tree)])
        assert done.exit_code == status, (command, done.output, done.exception)
        assert "Traceback" not in done.output
        (line,) = [line for line in done.stderr.splitlines() if line.startswith("skipped ")]
        assert line.startswith("skipped 3 files it cannot read or parse (an override in them is not migrated): ")
        assert all(name in line for name in UNREAD)
        assert "modeling_deep.py: cannot parse: nested too deeply to compile" in line
    with open(os.fsencode(odd_tree) + b"/modeling_\xffodd.py", "rb") as handle:
        odd = handle.read()
    plain = (odd_tree / "modeling_plain.py").read_bytes()
    assert odd != model("Odd") and odd == plain.replace(b"Plain", b"Odd"), "migrated as the same code named plainly"


def test_a_file_too_deep_to_compile_is_a_file_error() -> None:
    from codemod.analyse.index import file_facts
    from codemod.sources import FileKind

    facts = file_facts("modeling_deep.py", "x = " + " + ".join(["1"] * 20000) + "\n", FileKind.MODELING)
    assert facts.error == "cannot parse: nested too deeply to compile"
    assert facts.overrides == ()


# ----------------------------------------------------------------------------------------- what the rules do not model


@pytest.mark.parametrize(
    ("header", "why"),
    [
        pytest.param("    async def f(self):\n", "async def: it returns a coroutine", id="async"),
        pytest.param("    @log_calls\n    def f(self):\n", "decorated with @log_calls, which a deletion", id="custom"),
        pytest.param("    @cached(size=3)\n    def f(self):\n", "decorated with @cached(size=3)", id="custom-call"),
        pytest.param("    @torch.no_grad()\n    @trace\n    def f(self):\n", "decorated with @trace", id="one-of-two"),
    ],
)
def test_what_the_rules_do_not_model_is_named(header: str, why: str) -> None:
    (reason,) = _unmodelled(header)
    assert reason.startswith(why)


@pytest.mark.parametrize(
    "header",
    [
        pytest.param("    def f(self):\n", id="plain: nothing outside the body"),
        pytest.param("    @torch.no_grad()\n    def f(self):\n", id="no_grad: no gradients, same inputs"),
        pytest.param("    @torch.inference_mode\n    def f(self):\n", id="inference_mode: the same"),
        pytest.param(
            "    @torch.jit.unused\n    def f(\n        self,\n    ):\n", id="jit.unused, signature on lines"
        ),
    ],
)
def test_known_no_ops_leave_the_method_to_the_rules(header: str) -> None:
    assert _unmodelled(header) == []


def _unmodelled(header: str) -> list[str]:
    """What ``unmodelled.reasons`` says of a method with these decorators and ``def`` line, read as the index reads
    them (its node's ``async`` and its decorators' code)."""
    import ast
    import textwrap

    from codemod.analyse.unmodelled import reasons

    node = ast.parse(textwrap.dedent(header) + "    pass\n").body[0]
    assert isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    return reasons(isinstance(node, ast.AsyncFunctionDef), [ast.unparse(d) for d in node.decorator_list])


def test_async_and_custom_decorated_overrides_are_kept(tmp_path: Path, codemod_cache: Path) -> None:
    """The same generic body (llama's in 4.45) three ways: under ``@torch.no_grad()`` it changes as usual; async,
    or under a decorator of its own, it is kept, with the reason, and nothing edits it."""
    from codemod.analyse.classify import Action

    root = tmp_path / "tree"
    root.mkdir()
    (root / "modeling_ngd.py").write_bytes(model("Ngd", "    @torch.no_grad()\n"))
    (root / "modeling_asy.py").write_bytes(model("Asy").replace(b"    def prepare", b"    async def prepare"))
    (root / "modeling_dec.py").write_bytes(model("Dec", "    @log_calls\n"))
    result = scan(resolve(root), use_cache=False)
    actions = {f.override.class_name: f.action for f in result.findings}
    assert actions["NgdForCausalLM"] is not Action.KEEP, "the rules change the generic body"
    assert (actions["AsyForCausalLM"], actions["DecForCausalLM"]) == (Action.KEEP, Action.KEEP)
    kept = [f for f in result.findings if f.action is Action.KEEP]
    assert all(f.extras == () and any("kept as it is" in r.text for r in f.reasons) for f in kept)
    changes = compute_changes(result, jobs=1)
    assert [r.path for r in changes.rewrites if r.changed] == ["modeling_ngd.py"]


# --------------------------------------------------------------------------------------------- the PR bot

#: the PR bot's world (a bare remote, a clone, the fake GitHub): test_pr's fixture
world = test_pr.world

LABELS = ["transformers-codemod"]
SECONDARY = {"message": "You have exceeded a secondary rate limit."}

#: each call the bot makes, by the first request that makes it (method, path), and each way it fails once
CALLS = [
    ("GET", r"/pulls$", "the open pull requests, then each branch's"),
    ("POST", r"/pulls$", "opening a pull request"),
    ("POST", r"/labels$", "labelling it"),
]
FAILURES = [(500, None), (502, None), (503, None), (403, SECONDARY)]


@pytest.mark.parametrize(("method", "path", "call"), CALLS, ids=[c[2] for c in CALLS])
@pytest.mark.parametrize(("status", "body"), FAILURES, ids=["500", "502", "503", "secondary-rate-limit"])
def test_one_transient_failure_of_any_call_is_retried(
    world: World, method: str, path: str, call: str, status: int, body: object
) -> None:
    """Each call the bot makes fails once (a 5xx, a secondary rate limit): the run waits, retries (one logged line)
    and ends as it would have, every pull request opened once and labelled."""
    world.github.fail(method, path, status, body=body)
    report = world.run(only=["llama", "gpt2"])
    assert [o.action for o in report.outcomes] == [Action.CREATE, Action.CREATE]
    assert sorted(world.github.pulls) == [1, 2]
    assert all(world.github.labels(n) == LABELS for n in (1, 2))
    retries = [line for line in world.output if "retry 1 of 3 in " in line]
    assert len(retries) == 1 and f"{status}" in retries[0] and TOKEN not in retries[0]


def test_an_update_is_retried(world: World) -> None:
    world.run(only=["llama"])
    world.github.fail("PATCH", r"/pulls/\d+$", 502)
    report = world.run(FakeMigrate(version=2), only=["llama"])
    assert [o.action for o in report.outcomes] == [Action.UPDATE]
    assert any("retry 1 of 3" in line for line in world.output)


def test_retries_are_bounded(world: World) -> None:
    """A server that keeps failing: four tries in all, three logged retries, then one line that says what failed."""
    world.github.fail("GET", r"/pulls$", 503, times=10)
    with pytest.raises(PrError, match=r"^GitHub answered GET /repos/acme/transformers/pulls with 503$"):
        world.run(only=["llama"])
    assert len([r for r in world.github.requests if r.method == "GET"]) == 4
    assert len([line for line in world.output if " retry " in line]) == 3


class _CreatesThenDrops(FakeGitHub):
    """GitHub that makes the pull request and then never answers (the connection drops: a timed-out create)."""

    drops = 1

    def handle(
        self, method: str, raw_path: str, headers: dict[str, str], raw_body: bytes
    ) -> tuple[int, object, dict[str, str]]:
        answer = super().handle(method, raw_path, headers, raw_body)
        if method == "POST" and raw_path.endswith("/pulls") and self.drops > 0:
            self.drops -= 1
            raise ConnectionAbortedError("no answer")
        return answer


def test_a_create_without_an_answer_is_looked_up_not_repeated(world: World) -> None:
    """The create reached GitHub but its answer did not come back: the bot looks the branch's pull request up,
    finds it, says so, and labels it; no second pull request, no error."""
    world.github.stop()
    github = _CreatesThenDrops(test_pr.REPO, TOKEN, world.github.bare).start()
    try:
        world.github = github
        report = world.run(only=["llama"])
        assert [(o.action, o.pr_number) for o in report.outcomes] == [(Action.CREATE, 1)]
        assert list(github.pulls) == [1] and github.labels(1) == LABELS
        assert any("GitHub made the pull request all the same: #1" in line for line in world.output)
        assert len([r for r in github.requests if r.method == "POST" and r.path.endswith("/pulls")]) == 1
    finally:
        github.stop()


def test_a_timeout_is_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    """A read that times out (urllib raises ``TimeoutError``) is tried again."""
    client = GitHubClient(test_pr.REPO, TOKEN, "https://api.test", retry=Retry(sleep=lambda s: None))
    answers: list[object] = [TimeoutError("timed out"), _Answer(b"[]")]

    def open_(request: object, timeout: float) -> object:
        answer = answers.pop(0)
        if isinstance(answer, BaseException):
            raise answer
        return answer

    monkeypatch.setattr(client._opener, "open", open_)
    assert client.open_pulls() == [] and answers == []
    answers[:] = [TimeoutError("timed out")] * 4
    with pytest.raises(GitHubError, match="could not reach https://api.test"):
        client.open_pulls()


class _Answer:
    status = 200
    headers: dict[str, str] = {}

    def __init__(self, raw: bytes) -> None:
        self.raw = raw

    def __enter__(self) -> _Answer:
        return self

    def __exit__(self, *exc: object) -> None:
        pass

    def read(self) -> bytes:
        return self.raw


def test_a_rerun_adds_the_labels_a_failed_run_left_out(world: World) -> None:
    """The labels cannot be added (the call keeps failing past the retries): the run says the next one adds them;
    the next run finds the pull request up to date and adds them."""
    world.github.fail("POST", r"/labels$", 502, times=4)
    with pytest.raises(PrError, match=r"#1 \(codemod/prepare-inputs/llama\) is open but has no labels yet; the next"):
        world.run(only=["llama"])
    assert world.github.labels(1) == []
    report = world.run(only=["llama"])
    assert [o.action for o in report.outcomes] == [Action.UNCHANGED]
    assert world.github.labels(1) == LABELS
    assert "added the labels an earlier run left out: transformers-codemod" in report.outcomes[0].reason
