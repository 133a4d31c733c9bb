"""``codemod diff`` and ``codemod apply`` on the fixture checkout, through typer's ``CliRunner``.

Every test works on a private copy of ``fixtures/mini_checkout`` made into a git repository (one
commit, fixed identity), with a private ``CODEMOD_CACHE_DIR``. Exit codes that ``codemod.cli.main``
decides (tool errors → 2) are checked on the real entry point, ``python -m codemod``, in a subprocess.
"""

from __future__ import annotations

import ast
import errno
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from codemod.analyse.scan import scan
from codemod.checkout import resolve
from codemod.cli import app
from codemod.transform import apply as apply_module
from codemod.transform.apply import WriteError, compute_changes, write
from tests.goldens import diff_golden_path, golden_mismatch, tree_diff

from .conftest import MINI_CHECKOUT, REPO, copy_fixture
from .flakes import assert_no_new_flakes

runner = CliRunner()

PKG = "src/transformers/models"
MIXIN_FILE = "src/transformers/generation/utils.py"
#: every file the fixture's migration changes
CHANGED = sorted([
    MIXIN_FILE,
    f"{PKG}/badger/modeling_badger.py",
    f"{PKG}/deprecated/dodo/modeling_dodo.py",
    f"{PKG}/ferret/modeling_ferret.py",
    f"{PKG}/heron/generation_heron.py",
    f"{PKG}/heron/modeling_heron.py",
    f"{PKG}/lynx/modeling_lynx.py",
    f"{PKG}/mink/modeling_mink.py",
    f"{PKG}/otter/modeling_otter.py",
    f"{PKG}/puffin/modeling_puffin.py",
    f"{PKG}/puffin/modular_puffin.py",
    f"{PKG}/stoat/modeling_stoat.py",
    f"{PKG}/weasel/modeling_weasel.py",
])  # fmt: skip
GIT_ENV = {
    "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
    "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_AUTHOR_DATE": "2024-01-01T00:00:00Z",
    "GIT_COMMITTER_DATE": "2024-01-01T00:00:00Z",
}  # fmt: skip
_PLAIN_ENV = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "COLUMNS", "TTY_COMPATIBLE")} | {
    "NO_COLOR": "1"
}


def git(root: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(root), *args], capture_output=True, text=True, env={**os.environ, **GIT_ENV}
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def make_repo(root: Path) -> Path:
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "fixture")
    return root


def invoke(*args: str | Path, mark: bool = True, unsafe: bool = True):
    """The CLI in process. ``diff`` and ``apply`` run with ``--mark`` unless ``mark=False``, and with
    ``--unsafe-fixes`` unless ``unsafe=False``: these tests follow every decision of the fixture, the marks of
    what stays and the edits only verification proves (Puffin's) included."""
    writes = bool(args) and args[0] in ("diff", "apply")
    extra = [flag for flag, on in (("--mark", mark), ("--unsafe-fixes", unsafe)) if on and writes]
    return runner.invoke(app, [*(str(a) for a in args), *extra])


def run_module(*args: str | Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "codemod", *map(str, args)],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=_PLAIN_ENV | {"CODEMOD_CACHE_DIR": os.environ["CODEMOD_CACHE_DIR"]},
        timeout=300,
    )


def snapshot(root: Path) -> dict[str, bytes]:
    """Every file below ``root`` (outside .git), by relative path."""
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*")) if p.is_file() and ".git" not in p.relative_to(root).parts
    }  # fmt: skip


def changed_files(root: Path) -> list[str]:
    return sorted(git(root, "diff", "--name-only").split())


def diffed_files(patch: str) -> list[str]:
    return sorted(line[len("+++ b/") :] for line in patch.splitlines() if line.startswith("+++ b/"))


@pytest.fixture
def repo(tmp_path: Path, codemod_cache: Path) -> Path:
    """A git repository holding a copy of the fixture checkout, committed and clean."""
    return make_repo(copy_fixture(MINI_CHECKOUT, tmp_path / "mini_checkout"))


# --------------------------------------------------------------------------------------------- diff


def test_without_mark_the_overrides_that_stay_are_not_touched(repo: Path) -> None:
    """A comment-only edit is churn: by default heron's bespoke override, which stays as it is, is not
    written; ``--mark`` marks it."""
    plain = diffed_files(invoke("diff", repo, mark=False).stdout)
    assert set(CHANGED) - set(plain) == {f"{PKG}/heron/modeling_heron.py"}


def test_diff_exits_1_and_prints_a_unified_diff(repo: Path) -> None:
    before = snapshot(repo)
    result = invoke("diff", repo)
    assert result.exit_code == 1, result.output
    patch = result.stdout
    assert patch.startswith(f"--- a/{MIXIN_FILE}\n+++ b/{MIXIN_FILE}\n@@ ")
    assert diffed_files(patch) == CHANGED
    assert sorted(line[len("--- a/") :] for line in patch.splitlines() if line.startswith("--- a/")) == CHANGED
    assert "11 overrides deleted, 1 reduced, 1 kept (0 held back); 13 files" in " ".join(result.stderr.split())
    assert snapshot(repo) == before, "diff wrote into the checkout"
    assert git(repo, "status", "--porcelain") == ""


def test_without_unsafe_fixes_an_edit_only_verification_proves_is_held_back(repo: Path) -> None:
    """Safe by default, as ruff's fixes: Puffin's override never passes the position ids its forward takes, so
    deleting it changes what generate() feeds the model; plain diff and apply hold it back (its modular
    source with it) and say why, and write nothing of it."""
    result = invoke("diff", repo, mark=False, unsafe=False)
    assert result.exit_code == 1, result.output
    assert f"{PKG}/puffin/modular_puffin.py" not in diffed_files(result.stdout)
    log = " ".join(result.stderr.split())
    assert "(2 held back)" in log
    assert "PuffinForSpeechGeneration: unproven without --verify: it would change what is prepared" in log
    assert invoke("apply", repo, mark=False, unsafe=False).exit_code == 0
    text = (repo / PKG / "puffin" / "modeling_puffin.py").read_text(encoding="utf-8")
    speech = text[text.index("class PuffinForSpeechGeneration") :]
    assert "def prepare_inputs_for_generation" in speech.split("\nclass ", 1)[0]


def test_diff_is_a_patch_git_applies_to_what_apply_writes(repo: Path, tmp_path: Path) -> None:
    patch = invoke("diff", repo).stdout
    other = make_repo(copy_fixture(MINI_CHECKOUT, tmp_path / "other"))
    (tmp_path / "fixture.patch").write_text(patch, encoding="utf-8")
    git(other, "apply", "--check", str(tmp_path / "fixture.patch"))
    git(other, "apply", str(tmp_path / "fixture.patch"))
    assert invoke("apply", repo).exit_code == 0
    assert snapshot(other) == snapshot(repo)


def test_diff_on_a_migrated_tree_exits_0(repo: Path) -> None:
    assert invoke("apply", repo).exit_code == 0
    git(repo, "commit", "-q", "-am", "migrated")
    result = invoke("diff", repo)
    assert result.exit_code == 0, result.output
    assert result.stdout == ""
    assert "0 overrides deleted, 0 reduced" in " ".join(result.stderr.split())


def test_diff_of_only_bespoke_code_exits_0(repo: Path) -> None:
    """Nothing to delete or reduce, and the override already marked: no changes, not even the hoist."""
    path = repo / PKG / "heron" / "modeling_heron.py"
    text = path.read_text(encoding="utf-8")
    marker = "        # Heron predicts the token after a dummy one, which the tokenizer never produces\n"
    path.write_text(
        text.replace(marker, "        # Overwritten -- Heron appends a dummy token\n" + marker), encoding="utf-8"
    )
    result = invoke("diff", repo, "--only", "heronforcausallm")
    assert result.exit_code == 0, result.output
    assert result.stdout == ""


def test_diff_matches_the_fixture_golden(repo: Path) -> None:
    patch = invoke("diff", repo, mark=False).stdout
    problem = golden_mismatch(patch, diff_golden_path("fixture"), "diff")
    if problem:
        pytest.fail(problem, pytrace=False)


def test_golden_diff_is_normalised() -> None:
    text = diff_golden_path("fixture").read_text(encoding="utf-8")
    assert "/tmp/" not in text and "pytest-of-" not in text and "mini_checkout" not in text
    assert all(
        line.startswith(("--- a/src/", "+++ b/src/")) for line in text.splitlines() if line.startswith(("---", "+++"))
    )


def test_diff_golden_mismatch_names_make_goldens() -> None:
    golden = diff_golden_path("fixture")
    text = golden.read_text(encoding="utf-8")
    lines = text.splitlines(keepends=True)
    first_added = next(i for i, line in enumerate(lines) if line.startswith("+") and not line.startswith("+++"))
    lines[first_added] = "+# changed\n"
    message = golden_mismatch("".join(lines), golden, "diff")
    assert message is not None and "make goldens" in message and "diff output differs" in message
    assert len(message.splitlines()) < 80
    assert golden_mismatch(text, golden, "diff") is None


def test_large_diff_goldens_are_stored_gzip_compressed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    import gzip

    from tests import goldens

    monkeypatch.setattr(goldens, "GOLDEN_DIR", tmp_path)
    monkeypatch.setattr(goldens, "GZIP_OVER", 100)
    small, large = "--- a/x\n+++ b/x\n", "".join(f"+line {i}\n" for i in range(50))
    assert goldens.write_diff_golden("demo", small) == tmp_path / "diff-demo.patch"
    assert goldens.diff_golden_path("demo") == tmp_path / "diff-demo.patch"
    path = goldens.write_diff_golden("demo", large)
    assert path == tmp_path / "diff-demo.patch.gz" and not (tmp_path / "diff-demo.patch").exists()
    assert goldens.diff_golden_path("demo") == path
    assert gzip.decompress(path.read_bytes()).decode() == large == goldens.read_golden(path)
    first = path.read_bytes()
    goldens.write_diff_golden("demo", large)
    assert path.read_bytes() == first, "the compressed golden is reproducible (no timestamp)"
    assert goldens.golden_mismatch(large, path, "diff") is None
    assert "make goldens" in (goldens.golden_mismatch(large + "+more\n", path, "diff") or "")
    # back under the limit: the plain file again, and only it
    assert goldens.write_diff_golden("demo", small) == tmp_path / "diff-demo.patch"
    assert not path.exists()
    assert [line.split()[0] for line in capsys.readouterr().out.splitlines()] == [
        "new",
        "updated",
        "unchanged",
        "updated",
    ]


# --------------------------------------------------------------------------------------------- apply


def test_apply_writes_and_every_touched_file_compiles(repo: Path) -> None:
    patch = invoke("diff", repo).stdout
    result = invoke("apply", repo)
    assert result.exit_code == 0, result.output
    assert f"wrote {len(CHANGED)} files" in " ".join(result.stderr.split())
    assert changed_files(repo) == CHANGED
    for rel in CHANGED:
        text = (repo / rel).read_text(encoding="utf-8")
        compile(text, rel, "exec", dont_inherit=True)
    # what apply wrote is what diff showed
    head = repo.parent / "head"
    git(repo, "worktree", "add", "-q", str(head), "HEAD")
    assert tree_diff(head, repo, CHANGED) == patch
    # and nothing it wrote has a pyflakes problem the original did not have
    assert_no_new_flakes(head, repo, CHANGED)


def test_apply_results(repo: Path) -> None:
    assert invoke("apply", repo).exit_code == 0
    tree = {rel: ast.parse((repo / rel).read_text(encoding="utf-8")) for rel in CHANGED}

    def method(rel: str, cls: str) -> ast.FunctionDef | None:
        node = next(n for n in tree[rel].body if isinstance(n, ast.ClassDef) and n.name == cls)
        return next(
            (m for m in node.body if isinstance(m, ast.FunctionDef) and m.name == "prepare_inputs_for_generation"),
            None,
        )

    for rel, cls in [
        (f"{PKG}/otter/modeling_otter.py", "OtterForCausalLM"),
        (f"{PKG}/badger/modeling_badger.py", "BadgerForCausalLM"),
        (f"{PKG}/mink/modeling_mink.py", "MinkForCausalLM"),
        (f"{PKG}/puffin/modular_puffin.py", "PuffinForSpeechGeneration"),
        (f"{PKG}/puffin/modeling_puffin.py", "PuffinForSpeechGeneration"),
        (f"{PKG}/heron/generation_heron.py", "HeronGenerationMixin"),
    ]:
        assert method(rel, cls) is None, (rel, cls)
    lynx = (repo / PKG / "lynx" / "modeling_lynx.py").read_text(encoding="utf-8")
    assert (
        "        # Overwritten -- asks super() instead of self.language_model; keeps its own input handling\n"
        "        model_inputs = super().prepare_inputs_for_generation(\n"
    ) in lynx
    assert "self.language_model.prepare_inputs_for_generation" not in lynx
    # the rest of the body stays as it was, comments included
    assert (
        "        # the image is merged into the prompt: later steps must not see it again\n"
        '        if cache_position[0] == 0:\n            model_inputs["pixel_values"] = pixel_values\n'
    ) in lynx
    heron = (repo / PKG / "heron" / "modeling_heron.py").read_text(encoding="utf-8")
    assert (
        "    def prepare_inputs_for_generation(self, input_ids, past_key_values=None, attention_mask=None, **kwargs):\n        # Overwritten -- "
        in heron
    )
    mixin = (repo / MIXIN_FILE).read_text(encoding="utf-8")
    assert 'raise NotImplementedError("A model class needs to define' not in mixin
    assert 'model_inputs.pop("labels", None)' in mixin
    # the class left with nothing gets `pass`
    assert "class HeronGenerationMixin(GenerationMixin):\n    pass\n" in (
        repo / PKG / "heron" / "generation_heron.py"
    ).read_text(encoding="utf-8")
    # the unparsable file and the TF/Flax files are never touched
    for rel in (
        f"{PKG}/kiwi/modeling_kiwi.py",
        f"{PKG}/otter/modeling_tf_otter.py",
        f"{PKG}/otter/modeling_flax_otter.py",
    ):
        assert rel not in changed_files(repo)


def test_second_apply_is_a_noop(repo: Path) -> None:
    assert invoke("apply", repo).exit_code == 0
    once = snapshot(repo)
    result = invoke("apply", repo, "--allow-dirty")
    assert result.exit_code == 0, result.output
    assert "wrote 0 files" in " ".join(result.stderr.split())
    assert snapshot(repo) == once


def test_second_apply_on_a_committed_migration_is_a_noop(repo: Path) -> None:
    assert invoke("apply", repo).exit_code == 0
    git(repo, "commit", "-q", "-am", "migrated")
    assert invoke("apply", repo).exit_code == 0
    assert git(repo, "status", "--porcelain") == ""


def test_dirty_tree_is_refused(repo: Path) -> None:
    otter = repo / PKG / "otter" / "modeling_otter.py"
    otter.write_text(otter.read_text(encoding="utf-8") + "\n# a local change\n", encoding="utf-8")
    before = snapshot(repo)
    done = run_module("apply", repo)
    assert done.returncode == 2, done.stderr
    assert "uncommitted changes" in done.stderr and "--allow-dirty" in done.stderr
    assert len(done.stderr.strip().splitlines()) <= 3
    assert snapshot(repo) == before
    # in process: the same refusal, the same line
    result = invoke("apply", repo)
    assert result.exit_code == 2 and result.stderr == done.stderr
    assert snapshot(repo) == before


def test_dirty_tree_is_rewritten_with_allow_dirty(repo: Path) -> None:
    otter = repo / PKG / "otter" / "modeling_otter.py"
    otter.write_text(otter.read_text(encoding="utf-8") + "\n# a local change\n", encoding="utf-8")
    result = invoke("apply", repo, "--allow-dirty")
    assert result.exit_code == 0, result.output
    text = otter.read_text(encoding="utf-8")
    assert "def prepare_inputs_for_generation" not in text and text.endswith("\n# a local change\n")


def test_untracked_files_do_not_make_the_tree_dirty(repo: Path) -> None:
    (repo / "notes.txt").write_text("scratch\n", encoding="utf-8")
    assert invoke("apply", repo).exit_code == 0
    assert changed_files(repo) == CHANGED


def test_dirty_tree_is_refused_after_a_warm_scan(repo: Path) -> None:
    (repo / "NOTES.md").write_text("notes\n", encoding="utf-8")
    git(repo, "add", "NOTES.md")
    git(repo, "commit", "-q", "-m", "notes")
    assert run_module("diff", repo).returncode == 1  # warms the scan cache with the clean state (same process kind)
    (repo / "NOTES.md").write_text("notes, edited\n", encoding="utf-8")
    done = run_module("apply", repo)
    assert done.returncode == 2, done.stderr
    assert changed_files(repo) == ["NOTES.md"]


def test_apply_outside_git_needs_no_allow_dirty(tmp_path: Path, codemod_cache: Path) -> None:
    root = copy_fixture(MINI_CHECKOUT, tmp_path / "plain")
    assert invoke("apply", root).exit_code == 0
    assert "def prepare_inputs_for_generation" not in (root / PKG / "otter" / "modeling_otter.py").read_text(
        encoding="utf-8"
    )


# --------------------------------------------------------------------------------------------- --only / --skip


@pytest.mark.parametrize(
    ("args", "changed"),
    [
        pytest.param(["--only", "lynx"], [MIXIN_FILE, f"{PKG}/lynx/modeling_lynx.py"], id="only-lynx"),
        pytest.param(
            ["--only", "lynx,heron"],
            [
                MIXIN_FILE,
                f"{PKG}/heron/generation_heron.py",
                f"{PKG}/heron/modeling_heron.py",
                f"{PKG}/lynx/modeling_lynx.py",
            ],
            id="only-comma-separated",
        ),
        pytest.param(
            ["--only", "lynx", "--only", "dodo"],
            [MIXIN_FILE, f"{PKG}/deprecated/dodo/modeling_dodo.py", f"{PKG}/lynx/modeling_lynx.py"],
            id="only-repeated",
        ),
        # only the bespoke class, which gets a mark: the mixin needs no hoist for it
        pytest.param(["--only", "heronforcausallm"], [f"{PKG}/heron/modeling_heron.py"], id="only-a-class-name"),
        pytest.param(
            ["--skip", "otter,badger,ferret,weasel,stoat,mink,puffin,lynx,heron,dodo"], [], id="skip-everything"
        ),
    ],
)
def test_only_and_skip(repo: Path, args: list[str], changed: list[str]) -> None:
    diff = invoke("diff", repo, *args)
    assert diff.exit_code == (1 if changed else 0), diff.output
    assert diffed_files(diff.stdout) == sorted(changed)
    result = invoke("apply", repo, *args)
    assert result.exit_code == 0, result.output
    assert changed_files(repo) == sorted(changed)


def test_skip_keeps_copy_groups_consistent(repo: Path) -> None:
    """Skipping the source of a copy group keeps it; copies of it that still go lose nothing they need,
    and the class-level copy is held (marked, ``# Ignore copy``)."""
    result = invoke("apply", repo, "--skip", "otter")
    assert result.exit_code == 0, result.output
    changed = changed_files(repo)
    assert f"{PKG}/otter/modeling_otter.py" not in changed
    mink = (repo / PKG / "mink" / "modeling_mink.py").read_text(encoding="utf-8")
    assert "    # Ignore copy\n    def prepare_inputs_for_generation(" in mink
    assert "        # Overwritten -- class-level copy of" in mink
    modular = (repo / PKG / "puffin" / "modular_puffin.py").read_text(encoding="utf-8")
    assert (
        'raise AttributeError("PuffinForSpeechGeneration uses GenerationMixin.prepare_inputs_for_generation")'
        in modular
    )
    for rel in changed:
        compile((repo / rel).read_text(encoding="utf-8"), rel, "exec", dont_inherit=True)


def test_skip_a_copy_drops_its_marker(repo: Path) -> None:
    assert invoke("apply", repo, "--skip", "badger").exit_code == 0
    badger = (repo / PKG / "badger" / "modeling_badger.py").read_text(encoding="utf-8")
    assert "def prepare_inputs_for_generation" in badger and "# Copied from" not in badger
    ferret = (repo / PKG / "ferret" / "modeling_ferret.py").read_text(encoding="utf-8")
    assert "def prepare_inputs_for_generation" not in ferret


# --------------------------------------------------------------------------------------------- atomic writes


def test_writes_leave_no_temporary_files_and_keep_the_mode(repo: Path) -> None:
    lynx = repo / PKG / "lynx" / "modeling_lynx.py"
    lynx.chmod(0o640)
    git(repo, "config", "core.fileMode", "false")
    assert invoke("apply", repo).exit_code == 0
    leftovers = [p for p in repo.rglob("*") if p.name.endswith(".codemod") or p.name.startswith(".modeling_")]
    assert leftovers == []
    assert stat.S_IMODE(lynx.stat().st_mode) == 0o640
    assert "super().prepare_inputs_for_generation(" in lynx.read_text(encoding="utf-8")


def test_a_failed_write_leaves_no_temporary_file_and_no_file_written(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The third move fails: the two files already replaced are put back, nothing staged is left."""
    checkout = resolve(repo)
    changes = compute_changes(scan(checkout), jobs=1)
    calls = []
    real_replace = os.replace

    def flaky_replace(src, dst):
        calls.append(dst)
        if len(calls) == 3:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_replace(src, dst)

    monkeypatch.setattr(apply_module.os, "replace", flaky_replace)
    before = snapshot(repo)
    with pytest.raises(WriteError, match="No space left on device; no file was changed"):
        write(checkout, changes)
    assert snapshot(repo) == before
    assert len(calls) > 3, "the files replaced before the failure were put back"


# --------------------------------------------------------------------------------------------- idempotence of marks

MARKED_REDUCIBLE = '''
    """Robin (synthetic): a llama-like override with an extra constant key, which its maintainers marked."""

    from ...generation import GenerationMixin
    from ...modeling_utils import PreTrainedModel


    class RobinForCausalLM(PreTrainedModel, GenerationMixin):
        _supports_cache_class = True

        def forward(self, input_ids=None, attention_mask=None, position_ids=None, past_key_values=None,
                    inputs_embeds=None, use_cache=None, cache_position=None, output_router_logits=None):
            return input_ids

        def prepare_inputs_for_generation(
            self,
            input_ids,
            past_key_values=None,
            attention_mask=None,
            inputs_embeds=None,
            cache_position=None,
            position_ids=None,
            use_cache=True,
            **kwargs,
        ):
            # Overwritten -- `output_router_logits` is explicitly set in the output

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
                model_inputs = {"inputs_embeds": inputs_embeds, "input_ids": None}
            else:
                model_inputs = {"input_ids": input_ids, "inputs_embeds": None}

            model_inputs.update(
                {
                    "position_ids": position_ids,
                    "cache_position": cache_position,
                    "past_key_values": past_key_values,
                    "use_cache": use_cache,
                    "attention_mask": attention_mask,
                    "output_router_logits": True,
                }
            )
            return model_inputs
'''


@pytest.fixture
def robin(repo: Path) -> Path:
    path = repo / PKG / "robin" / "modeling_robin.py"
    path.parent.mkdir()
    (path.parent / "__init__.py").write_text("", encoding="utf-8")
    path.write_text(textwrap.dedent(MARKED_REDUCIBLE).lstrip("\n"), encoding="utf-8")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "robin")
    return path


def test_a_marked_reducible_override_is_reduced(repo: Path, robin: Path) -> None:
    assert invoke("apply", repo, "--only", "robin").exit_code == 0
    text = robin.read_text(encoding="utf-8")
    assert "model_inputs = super().prepare_inputs_for_generation(" in text
    compile(text, str(robin), "exec", dont_inherit=True)


def test_a_marked_override_stays_marked_when_reduced_and_apply_is_idempotent(repo: Path, robin: Path) -> None:
    assert invoke("apply", repo, "--only", "robin").exit_code == 0
    once = robin.read_bytes()
    assert b"# Overwritten --" in once
    assert invoke("apply", repo, "--only", "robin", "--allow-dirty").exit_code == 0
    assert robin.read_bytes() == once
