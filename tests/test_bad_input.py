"""Bad input, handled: every case ends in the documented exit status with one clear line, and leaves the
bytes on disk as they were (or, for input that is valid but unusual, migrates it byte for byte).

Each test goes through typer's ``CliRunner`` (not a terminal, as in a CI log) and compares a snapshot of
the tree before and after. The property test at the end drives ``apply``'s write with random failures.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from codemod import writes as writes_module
from codemod.checkout import resolve
from codemod.cli import app
from codemod.errors import CodemodError, redact
from codemod.transform.apply import WriteError, write
from codemod.transform.rewrite import FileRewrite

from .conftest import MINI_CHECKOUT, REMOTE_CODE, copy_fixture
from .test_apply import git, make_repo, snapshot

runner = CliRunner()
PKG = "src/transformers/models"
OTTER = f"{PKG}/otter/modeling_otter.py"
LATIN1 = Path(__file__).resolve().parent.parent / "fixtures" / "rewrite" / "latin1_model.py"


def invoke(*args: str | Path):
    """The CLI in process; ``diff`` and ``apply`` with ``--mark``, so that an override that stays is
    written too (its mark) and every file of the fixture shows what happens to it, and with ``--unsafe-fixes``,
    so that Puffin's edit (one only verification proves) is made too."""
    extra = ["--mark", "--unsafe-fixes"] if args and args[0] in ("diff", "apply") else []
    return runner.invoke(app, [*(str(a) for a in args), *extra])


def one_error_line(result) -> str:
    """The message of a tool error: exactly one line on stderr, nothing on stdout, no traceback."""
    assert result.exit_code == 2, (result.exit_code, result.output, result.exception)
    assert result.stdout == ""
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1, result.stderr
    return result.stderr[len("error: ") : -1]


@pytest.fixture
def repo(tmp_path: Path, codemod_cache: Path) -> Path:
    return make_repo(copy_fixture(MINI_CHECKOUT, tmp_path / "mini_checkout"))


# --------------------------------------------------------------------------------------------- encodings


def _latin1_model() -> bytes:
    return LATIN1.read_bytes()


def _bom_model() -> bytes:
    """The same model as UTF-8 with a BOM, and no cookie."""
    text = LATIN1.read_bytes().decode("latin-1").replace("# -*- coding: latin-1 -*-\n", "").replace("Egret", "Bomb")
    return b"\xef\xbb\xbf" + text.encode("utf-8")


@pytest.mark.parametrize(
    ("model", "cls", "make", "encoding"),
    [
        pytest.param("egret", "EgretForCausalLM", _latin1_model, "latin-1", id="latin-1-cookie"),
        pytest.param("bomb", "BombForCausalLM", _bom_model, "utf-8", id="utf-8-bom"),
    ],
)
def test_an_encoding_cookie_or_a_bom_is_honoured_and_kept(
    tmp_path: Path, codemod_cache: Path, model: str, cls: str, make, encoding: str
) -> None:
    """Before: "cannot read" (latin-1) and "cannot parse" (a BOM), the override silently left out."""
    root = copy_fixture(MINI_CHECKOUT, tmp_path / "mini_checkout")
    rel = f"{PKG}/{model}/modeling_{model}.py"
    (root / rel).parent.mkdir()
    (root / rel).write_bytes(make())
    make_repo(root)
    original = (root / rel).read_bytes()

    scanned = invoke("scan", root, "--format", "json")
    assert scanned.exit_code == 0, scanned.output
    document = json.loads(scanned.stdout)
    assert [e for e in document["errors"] if model in e["path"]] == []
    assert [f["class"] for f in document["findings"] if f["file"] == rel] == [cls]

    diffed = invoke("diff", root, "--only", model)
    assert diffed.exit_code == 1, diffed.output
    # the patch carries the file's own bytes (latin-1 stays latin-1) and applies to them
    assert "-        # coupe les jetons déjà vus\n".encode(encoding) in diffed.stdout_bytes
    patched = tmp_path / "patched"
    shutil.copytree(root, patched)
    (tmp_path / "x.patch").write_bytes(diffed.stdout_bytes)
    subprocess.run(["git", "-C", str(patched), "apply", str(tmp_path / "x.patch")], check=True, capture_output=True)
    assert (root / rel).read_bytes() == original, "diff writes nothing"

    applied = invoke("apply", root, "--only", model)
    assert applied.exit_code == 0, applied.output
    after = (root / rel).read_bytes()
    assert after == (patched / rel).read_bytes(), "apply writes what diff shows, byte for byte"
    assert after != original and after[:40] == original[:40], "the cookie or the BOM is where it was"
    assert "héron cendré".encode(encoding) in after
    # the stub mixin gets the generic implementation the deletion hands the work to
    assert git(root, "diff", "--name-only").split() == ["src/transformers/generation/utils.py", rel]


# --------------------------------------------------------------------------------------------- symlinks


@pytest.fixture
def linked_tree(tmp_path: Path, codemod_cache: Path) -> Path:
    """A tree with a file, a link to it, and a link to a file outside the tree."""
    tree = copy_fixture(REMOTE_CODE, tmp_path / "tree")
    outside = tmp_path / "outside"
    outside.mkdir()
    text = (tree / "modeling_custom.py").read_text(encoding="utf-8")
    (outside / "modeling_other.py").write_text(text.replace("Custom", "Other"), encoding="utf-8")
    (tree / "modeling_alias.py").symlink_to("modeling_custom.py")
    (tree / "modeling_other.py").symlink_to(outside / "modeling_other.py")
    return tree


def test_a_symlinked_file_is_one_file(linked_tree: Path) -> None:
    """Before: the file and its link were two findings."""
    result = invoke("scan", linked_tree, "--format", "json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert [(f["file"], f["class"]) for f in document["findings"]] == [
        ("modeling_custom.py", "CustomForCausalLM"), ("modeling_other.py", "OtherForCausalLM"),
    ]  # fmt: skip
    assert document["summary"]["files_read"] == 2


def test_apply_writes_through_a_symlink_and_keeps_it(linked_tree: Path) -> None:
    """Before: ``apply`` replaced the link with a regular file."""
    outside = linked_tree.parent / "outside" / "modeling_other.py"
    before_outside, before_custom = outside.read_bytes(), (linked_tree / "modeling_custom.py").read_bytes()
    result = invoke("apply", linked_tree)
    assert result.exit_code == 0, result.output
    assert "wrote 2 files" in result.stderr
    assert os.readlink(linked_tree / "modeling_other.py") == str(outside)
    assert os.readlink(linked_tree / "modeling_alias.py") == "modeling_custom.py"
    assert outside.read_bytes() != before_outside and b"# Overwritten --" in outside.read_bytes()
    assert (linked_tree / "modeling_custom.py").read_bytes() != before_custom
    assert sorted(p.name for p in linked_tree.iterdir()) == [
        "modeling_alias.py",
        "modeling_custom.py",
        "modeling_other.py",
    ]


@pytest.mark.parametrize("command", ["scan", "diff", "apply"])
def test_a_path_that_is_a_symlink_loop_is_one_line(tmp_path: Path, codemod_cache: Path, command: str) -> None:
    """Before: a RuntimeError traceback, exit status 1."""
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    before = sorted(os.listdir(tmp_path))
    message = one_error_line(invoke(command, tmp_path / "a"))
    assert message == f"cannot read {tmp_path / 'a'}: too many levels of symbolic links"
    assert sorted(os.listdir(tmp_path)) == before


def test_a_symlink_loop_inside_a_tree_is_reported_and_the_scan_goes_on(tmp_path: Path, codemod_cache: Path) -> None:
    tree = copy_fixture(REMOTE_CODE, tmp_path / "tree")
    (tree / "loop_a.py").symlink_to("loop_b.py")
    (tree / "loop_b.py").symlink_to("loop_a.py")
    result = invoke("scan", tree, "--format", "json")
    assert result.exit_code == 0, result.output
    document = json.loads(result.stdout)
    assert [f["class"] for f in document["findings"]] == ["CustomForCausalLM"]
    assert [e["path"] for e in document["errors"]] == ["loop_a.py", "loop_b.py"]
    assert all("Too many levels of symbolic links" in e["error"] for e in document["errors"])


# --------------------------------------------------------------------------------------------- dirty tree


def test_a_single_file_in_a_dirty_tree_is_refused(repo: Path) -> None:
    """Before: ``apply FILE`` skipped the guard and mixed its edit with the user's uncommitted change."""
    lynx = repo / PKG / "lynx" / "modeling_lynx.py"
    lynx.write_text(lynx.read_text(encoding="utf-8") + "# a local change\n", encoding="utf-8")
    before = snapshot(repo)
    message = one_error_line(invoke("apply", repo / OTTER))
    assert message == (
        f"the git tree of {repo / OTTER} has uncommitted changes: commit or stash them, or pass --allow-dirty"
    )
    assert snapshot(repo) == before
    assert invoke("apply", repo / OTTER, "--allow-dirty").exit_code == 0
    assert sorted(git(repo, "diff", "--name-only").split()) == sorted([OTTER, f"{PKG}/lynx/modeling_lynx.py"])


def test_a_single_file_in_a_clean_tree_is_applied(repo: Path) -> None:
    result = invoke("apply", repo / OTTER)
    assert result.exit_code == 0, result.output
    assert git(repo, "diff", "--name-only").split() == [OTTER]


# --------------------------------------------------------------------------------------------- all or nothing


def _refuse_directory(directory: Path):
    """``tempfile.mkstemp`` as in a directory the user cannot write (the tests run as root, who can)."""
    real = tempfile.mkstemp

    def mkstemp(*args, **kwargs):
        if Path(kwargs["dir"]) == directory:
            raise PermissionError(errno.EACCES, "Permission denied", str(directory / "x.codemod"))
        return real(*args, **kwargs)

    return mock.patch.object(writes_module.tempfile, "mkstemp", mkstemp)


def test_apply_on_a_directory_it_cannot_write_changes_nothing(repo: Path) -> None:
    """Before: a PermissionError traceback, exit 1, the folders before it written and the others not."""
    before = snapshot(repo)
    with _refuse_directory(repo / PKG / "otter"):
        message = one_error_line(invoke("apply", repo))
    assert message == f"cannot write {OTTER} in {repo}: Permission denied; no file was changed"
    assert snapshot(repo) == before


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only directory")
def test_apply_on_a_read_only_directory_changes_nothing(repo: Path) -> None:
    before = snapshot(repo)
    otter = repo / PKG / "otter"
    otter.chmod(0o555)
    try:
        message = one_error_line(invoke("apply", repo))
    finally:
        otter.chmod(0o755)
    assert message.startswith(f"cannot write {OTTER} in {repo}: Permission denied")
    assert snapshot(repo) == before


class _Faults:
    """Fails the ``at``-th file operation of a write (making a temporary file, writing it, setting its mode,
    moving it), once: what comes after the failure (the rollback) runs as usual."""

    def __init__(self, at: int) -> None:
        self.at, self.count, self.failed = at, 0, False

    def _tick(self) -> None:
        self.count += 1
        if not self.failed and self.count == self.at:
            self.failed = True
            raise OSError(errno.ENOSPC, "No space left on device")

    def patches(self) -> list:
        real_mkstemp, real_fdopen, real_chmod, real_replace = tempfile.mkstemp, os.fdopen, os.chmod, os.replace
        faults = self

        class File:
            def __init__(self, handle) -> None:
                self.handle = handle

            def __enter__(self):
                return self

            def __exit__(self, *exc) -> None:
                self.handle.close()

            def write(self, data: bytes) -> int:
                faults._tick()
                return self.handle.write(data)

        def mkstemp(*args, **kwargs):
            self._tick()
            return real_mkstemp(*args, **kwargs)

        def chmod(*args, **kwargs):
            self._tick()
            return real_chmod(*args, **kwargs)

        def replace(*args, **kwargs):
            self._tick()
            return real_replace(*args, **kwargs)

        return [
            mock.patch.object(writes_module.tempfile, "mkstemp", mkstemp),
            mock.patch.object(writes_module.os, "fdopen", lambda fd, mode: File(real_fdopen(fd, mode))),
            mock.patch.object(writes_module.os, "chmod", chmod),
            mock.patch.object(writes_module.os, "replace", replace),
        ]


@settings(max_examples=60, deadline=None)
@given(
    files=st.lists(st.tuples(st.sampled_from(["a", "b", "a/c"]), st.booleans()), min_size=1, max_size=5),
    at=st.integers(min_value=0, max_value=25),
)
def test_write_is_all_or_nothing(files: list[tuple[str, bool]], at: int) -> None:
    """Whatever operation fails, the tree is fully written or unchanged, links stay links, and no
    temporary file is left: ``files`` are (folder, reached through a symlink to a file outside)."""
    with tempfile.TemporaryDirectory() as scratch, mock.patch.dict(os.environ, {"CODEMOD_CACHE_DIR": scratch}):
        root, outside = Path(scratch, "tree"), Path(scratch, "outside")
        outside.mkdir()
        rewrites = []
        for n, (folder, linked) in enumerate(files):
            rel = f"{folder}/m{n}.py"
            (root / folder).mkdir(parents=True, exist_ok=True)
            if linked:
                (outside / f"m{n}.py").write_bytes(b"old %d\n" % n)
                (root / rel).symlink_to(outside / f"m{n}.py")
            else:
                (root / rel).write_bytes(b"old %d\n" % n)
            rewrites.append(FileRewrite(rel, b"old %d\n" % n, b"new %d\n" % n, "utf-8", ()))
        checkout = resolve(root, with_git=False)
        faults = _Faults(at)
        patches = faults.patches()
        for patch in patches:
            patch.start()
        try:
            written = write(checkout, mock.Mock(rewrites=tuple(rewrites)))
            raised = None
        except WriteError as error:
            raised = error
        finally:
            for patch in patches:
                patch.stop()
        contents = [(root / r.path).read_bytes() for r in rewrites]
        assert (raised is not None) == faults.failed
        if raised is None:
            assert written == [r.path for r in rewrites]
            assert contents == [r.new for r in rewrites]
        else:
            assert contents == [r.old for r in rewrites], "a failed write leaves every file as it was"
            assert "No space left on device; no file was changed" in str(raised)
        assert all((root / r.path).is_symlink() == linked for r, (_, linked) in zip(rewrites, files, strict=False))
        left = [p for p in Path(scratch).rglob("*") if p.name.endswith(".codemod")]
        assert left == [], "no temporary file is left"


# --------------------------------------------------------------------------------------------- verify


def test_verify_without_setup_py_is_one_line(tmp_path: Path, codemod_cache: Path) -> None:
    """Before: an EnvironmentSetupError traceback with exit status 1, which the README says means "differs"."""
    root = copy_fixture(MINI_CHECKOUT, tmp_path / "mini_checkout")
    init = root / "src" / "transformers" / "__init__.py"
    init.write_text(re.sub(r"(?m)^__version__.*\n", "", init.read_text(encoding="utf-8")), encoding="utf-8")
    make_repo(root)
    assert invoke("apply", root).exit_code == 0
    before = snapshot(root)
    message = one_error_line(invoke("verify", root))
    assert message == f"{root}: no setup.py and no version: pass --python with an environment that fits"
    assert snapshot(root) == before


# --------------------------------------------------------------------------------------------- --only / --skip


@pytest.mark.parametrize("command", ["scan", "diff", "apply"])
def test_an_unknown_only_name_is_an_error_with_the_closest_names(repo: Path, command: str) -> None:
    """Before: ``--only doesnotexist`` succeeded with 0 overrides."""
    before = snapshot(repo)
    message = one_error_line(invoke(command, repo, "--only", "otter,oter"))
    assert message == "--only: no model or class named 'oter' (closest: otter, heron, OtterForCausalLM)"
    assert snapshot(repo) == before


def test_an_unknown_skip_name_is_an_error(repo: Path) -> None:
    message = one_error_line(invoke("scan", repo, "--skip", "HeronForCausalLMM"))
    assert message.startswith("--skip: no model or class named 'HeronForCausalLMM' (closest: HeronForCausalLM, ")


def test_names_are_matched_as_select_matches_them(repo: Path) -> None:
    """Any case; a model of the checkout that has no override is a name, not a typo."""
    assert invoke("scan", repo, "--only", "OTTER,heronforcausallm").exit_code == 0
    (repo / PKG / "quail").mkdir()
    (repo / PKG / "quail" / "modeling_quail.py").write_text("class QuailModel:\n    pass\n", encoding="utf-8")
    result = invoke("scan", repo, "--only", "quail", "--format", "json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["findings"] == []


# --------------------------------------------------------------------------------------------- output in a log


def _no_folded_line(text: str, *pieces: str) -> None:
    """Each of ``pieces`` (longer than 80 columns with what surrounds it) on one line of ``text``."""
    for piece in pieces:
        assert any(piece in line for line in text.splitlines()), (piece, text)


def test_scan_table_in_a_log_is_not_squeezed(repo: Path) -> None:
    """Before: 80 columns, the "why" column folded a few words per line."""
    result = invoke("scan", repo)
    assert result.exit_code == 0, result.output
    rows = [line.split("│")[1:-1] for line in result.stdout.splitlines() if line.startswith("│")]
    assert max(len(cells[-1].strip()) for cells in rows) > 80
    # a row is the class and its file:line; a folded "why" would go on in the lines below, with no count
    continued = [cells for cells in rows if not cells[1].strip() and cells[-1].strip()]
    assert continued == [], continued
    _no_folded_line(
        result.stdout,
        f"broken copy marker {PKG}/stoat/modeling_stoat.py:24: transformers.models.otter."
        f"modeling_otter.OtterForCausalLM.prepare_input_for_generation does not exist "
        f"({PKG}/otter/modeling_otter.py defines no 'prepare_input_for_generation' in "
        "OtterForCausalLM)",
    )


def test_diff_and_apply_summaries_in_a_log_are_one_line_each(repo: Path) -> None:
    """Before: the summary line wrapped mid-phrase at 80 columns."""
    for command, exit_code in (("diff", 1), ("apply", 0)):
        result = invoke(command, repo)
        assert result.exit_code == exit_code, result.output
        _no_folded_line(
            result.stderr,
            "11 overrides deleted, 1 reduced, 1 kept (0 held back); 13 files, ",
            f"{PKG}/puffin/modeling_puffin.py: same edit as its modular source {PKG}/puffin/modular_puffin.py "
            "(this checkout has no utils/modular_model_converter.py to regenerate it)",
        )


def test_verify_table_in_a_log_is_not_squeezed(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Before: the "first difference / why" column came out four letters per line."""
    from codemod.verify import session
    from codemod.verify.compare import ClassVerdict

    why = "the tiny model could not be built: LynxConfig needs a vision_config with an image_size of at least 32"

    def verify_change(checkout, targets, **kwargs):
        verdicts = tuple(ClassVerdict(t.override_id, "unverified", detail=why) for t in targets)
        return session.VerifyReport(verdicts, tuple(targets), (), "cpu", "python", 12.0, "HEAD")

    monkeypatch.setattr(session, "verify_change", verify_change)
    assert invoke("apply", repo).exit_code == 0
    result = invoke("verify", repo, "--no-own-tests")
    assert result.exit_code == 1, result.output
    _no_folded_line(result.stdout, why, "classes verified on cpu in 12s")
    assert "OtterForCausalLM" in result.stdout


# --------------------------------------------------------------------------------------------- one error root


def test_every_tool_error_is_a_codemod_error_with_exit_status_2() -> None:
    from codemod.analyse.scan import SelectionError
    from codemod.analyse.target import TargetError
    from codemod.api import ToolError
    from codemod.checkout import CheckoutError
    from codemod.environment import EnvironmentSetupError
    from codemod.fetch import FetchError
    from codemod.github import GitHubError
    from codemod.publish.pr.plan import PrError
    from codemod.transform.apply import WriteError
    from codemod.transform.rewrite import RewriteError
    from codemod.verify.runner import VerificationError

    for error in (
        ToolError,
        CheckoutError,
        TargetError,
        EnvironmentSetupError,
        RewriteError,
        VerificationError,
        FetchError,
        PrError,
        GitHubError,
        WriteError,
        SelectionError,
    ):
        assert issubclass(error, CodemodError) and error("x").exit_code == 2, error


@pytest.mark.parametrize(
    ("text", "redacted"),
    [
        pytest.param(
            "git push https://ghp_abc123@github.com/o/r failed",
            "git push https://***@github.com/o/r failed",
            id="token",
        ),
        pytest.param(
            "pip: https://bot:s3cret@pypi.example/simple", "pip: https://***@pypi.example/simple", id="user-password"
        ),
    ],
)
def test_one_redaction_blanks_both_url_forms(text: str, redacted: str) -> None:
    assert redact(text) == redacted
    assert (
        redact(f"token {text.split('//')[1].split('@')[0]} in {text}", ["ghp_abc123", "bot:s3cret"])
        == f"token *** in {redacted}"
    )


def test_an_error_message_is_redacted_and_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    from codemod import fetch
    from codemod.fetch import FetchError

    def failing(*args, **kwargs):
        raise FetchError("pip could not download transformers 9.9.9:\n  from https://ghp_abc123@github.com/x")

    monkeypatch.setattr(fetch, "fetch_release", failing)
    message = one_error_line(invoke("fetch", "9.9.9"))
    assert message == "pip could not download transformers 9.9.9: | from https://***@github.com/x"
