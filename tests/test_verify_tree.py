"""Verification of model code outside transformers: a remote-code repository that really runs.

``fixtures/remote_verify`` is a Hub-style repository (``config.json``, ``configuration_tinylm.py``,
``modeling_tinylm.py``, imported relatively) whose model carries the legacy override remote code
ships. It is copied into a git repository, changed as a migration changes it, and verified on
releases fetched from PyPI: the same release on both sides, and the old code on the release it was
written for against the new code on the target (``--from``). The release environments are made
once per machine (``network``, ``slow``).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from codemod.cli import app

pytestmark = [pytest.mark.network, pytest.mark.slow]

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "remote_verify"
MODELING = "modeling_tinylm.py"
OVERRIDE = re.compile(r"\n    def prepare_inputs_for_generation\(.*?\n        return model_inputs\n", re.DOTALL)


def _repository(tmp_path: Path, edits: tuple[tuple[str, str], ...] = ()) -> Path:
    """The fixture as a git repository that pins 4.46.3 (what it runs with when no --target names a release), with
    ``edits`` (old, new) made to its modeling file before the base commit."""
    root = tmp_path / "tinylm"
    shutil.copytree(FIXTURE, root, ignore=shutil.ignore_patterns("__pycache__"))
    (root / "requirements.txt").write_text("transformers==4.46.3\n")
    text = (root / MODELING).read_text()
    for old, new in edits:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    (root / MODELING).write_text(text)
    for args in (
        ["init", "-q"],
        ["add", "-A"],
        ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base"],
    ):
        subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)
    return root


def _change(root: Path, body: str | None, *, mixin_base: bool = True) -> None:
    """Replace the override with ``body`` (None: delete it); give the class GenerationMixin, which
    4.45 - 4.51 only grant a class without it while it defines the method itself."""
    path = root / MODELING
    text = path.read_text()
    text = OVERRIDE.sub("\n" + body if body else "", text, count=1)
    if mixin_base:
        text = text.replace(
            "from transformers import PreTrainedModel", "from transformers import GenerationMixin, PreTrainedModel"
        )
        text = text.replace(
            "class TinyLMForCausalLM(TinyLMPreTrainedModel):",
            "class TinyLMForCausalLM(TinyLMPreTrainedModel, GenerationMixin):",
        )
    path.write_text(text)


def _verify(root: Path, tmp_path: Path, *args: str) -> dict:
    report = tmp_path / "verify.json"
    done = CliRunner().invoke(app, ["verify", str(root), "--format", "json", "-o", str(report), *args])
    assert done.exit_code in (0, 1), done.output
    document = json.loads(report.read_text())
    (verdict,) = document["verdicts"]
    return verdict


#: an override that forgets to slice the ids by the cache: the second step feeds every token again
UNSLICED = """    def prepare_inputs_for_generation(self, input_ids, past_key_values=None, attention_mask=None, **kwargs):
        position_ids = attention_mask.long().cumsum(-1) - 1
        position_ids.masked_fill_(attention_mask == 0, 1)
        if past_key_values:
            position_ids = position_ids[:, -input_ids.shape[1] :]
        return {"input_ids": input_ids, "position_ids": position_ids, "past_key_values": past_key_values,
                "use_cache": kwargs.get("use_cache"), "attention_mask": attention_mask}
"""


def test_deleting_the_override_of_a_remote_code_model_is_identical_on_the_target(tmp_path: Path) -> None:
    root = _repository(tmp_path)
    _change(root, None)
    verdict = _verify(root, tmp_path, "--target", "4.46.3")
    assert verdict["verdict"] == "identical", verdict["detail"]
    assert verdict["model"] == "config from the repository's config.json, shrunk"
    assert len(verdict["compared"]) >= 8
    ran = {s["name"]: s for s in verdict["scenarios"]}
    assert ran["greedy"]["cache_used"] is True and ran["greedy-no-cache"]["inputs"]["use_cache"] is False


def test_the_old_code_on_its_release_against_the_new_code_on_the_target(tmp_path: Path) -> None:
    """What a remote-code owner needs: the same tokens on the target release as on the old one."""
    root = _repository(tmp_path)
    _change(root, None)
    verdict = _verify(root, tmp_path, "--from", "4.45.2", "--target", "4.46.3")
    assert verdict["verdict"] == "identical", verdict["detail"]
    assert len(verdict["compared"]) >= 8


def test_an_override_that_does_not_slice_is_caught_on_a_tree(tmp_path: Path) -> None:
    root = _repository(tmp_path)
    _change(root, UNSLICED, mixin_base=False)
    verdict = _verify(root, tmp_path, "--target", "4.46.3")
    assert verdict["verdict"] in ("differs", "inputs-differ", "crashed")
    assert verdict["first_difference"]["step"] == 1


def test_a_deletion_that_loses_generate_is_caught(tmp_path: Path) -> None:
    """In 4.46 a class that does not inherit GenerationMixin can generate only while it defines the
    method: deleting it alone takes generate() away, and verification says so."""
    root = _repository(tmp_path)
    _change(root, None, mixin_base=False)
    verdict = _verify(root, tmp_path, "--target", "4.46.3")
    assert verdict["verdict"] == "crashed"
    assert verdict["detail"]


def test_apply_verify_migrates_a_remote_code_repository_onto_the_target(tmp_path: Path) -> None:
    """The whole job on a tree: judged against the release it will run on (4.46.3, its pin), the
    override deleted with GenerationMixin added (4.46 grants generate() to a class that does not
    inherit it only while it defines the method), verified there and kept."""
    root = _repository(tmp_path)
    report = tmp_path / "apply.json"
    done = CliRunner().invoke(app, ["apply", str(root), "--verify", "--from", "4.45.2", "--report", str(report)])
    assert done.exit_code == 0, done.output
    (verdict,) = json.loads(report.read_text())["verdicts"]
    assert verdict["verdict"] == "identical", verdict["detail"]
    text = (root / MODELING).read_text()
    assert "def prepare_inputs_for_generation" not in text
    assert "class TinyLMForCausalLM(TinyLMPreTrainedModel, GenerationMixin):" in text
    compile(text, MODELING, "exec")


def test_diff_verify_prints_what_apply_verify_writes_and_writes_nothing(tmp_path: Path) -> None:
    """The dry run is what lands: ``diff --verify`` verifies in a throwaway worktree and prints that diff; the
    checkout stays as it was, and ``apply --verify`` then writes exactly the printed change."""
    root = _repository(tmp_path)
    before = (root / MODELING).read_bytes()
    shown = CliRunner().invoke(app, ["diff", str(root), "--verify", "--from", "4.45.2"])
    assert shown.exit_code == 1, shown.output
    assert (root / MODELING).read_bytes() == before
    git = ["git", "-C", str(root)]
    assert subprocess.run([*git, "status", "--porcelain"], capture_output=True, text=True).stdout == ""
    worktrees = subprocess.run([*git, "worktree", "list"], capture_output=True, text=True).stdout
    assert len(worktrees.splitlines()) == 1, worktrees  # the throwaway worktree is gone
    done = CliRunner().invoke(app, ["apply", str(root), "--verify", "--from", "4.45.2"])
    assert done.exit_code == 0, done.output
    written = subprocess.run(["git", "-C", str(root), "diff"], capture_output=True, text=True, check=True).stdout
    printed = shown.stdout[shown.stdout.index("--- ") :]
    assert written and _hunks(written) == _hunks(printed)


def _hunks(patch: str) -> list[str]:
    """A patch's changed lines, whatever its file headers say (git's a/ b/ prefixes and index line)."""
    return [line for line in patch.splitlines() if line[:1] in "+-" and not line.startswith(("+++", "---"))]


#: what 4.46.3 breaks for the old code, deliberately: the old override refuses embeddings without padding there, and
#: the model's forward refuses a padded batch of embeddings (which the edit does not touch)
RELEASE_BREAKS = (
    (
        "    ):\n        if past_key_values is not None:\n            past_length",
        "    ):\n        if _ON_4463 and inputs_embeds is not None and attention_mask is not None and attention_mask.all():\n"
        '            raise NotImplementedError("the old override refuses embeddings on 4.46.3")\n'
        "        if past_key_values is not None:\n            past_length",
    ),
    (
        "        hidden = self.tokens(input_ids) if inputs_embeds is None else inputs_embeds\n",
        "        hidden = self.tokens(input_ids) if inputs_embeds is None else inputs_embeds\n"
        "        if _ON_4463 and inputs_embeds is not None and attention_mask is not None and not attention_mask.all():\n"
        '            raise NotImplementedError("padded embeddings break on 4.46.3")\n',
    ),
    (
        "from transformers import PreTrainedModel\n",
        'from transformers import PreTrainedModel, __version__\n\n_ON_4463 = __version__ == "4.46.3"\n',
    ),
)


def test_across_releases_the_old_code_on_the_target_tells_the_release_from_the_edit(tmp_path: Path) -> None:
    """Three sides: where 4.46.3 breaks the old code and the deletion alike (padded embeddings) the deletion is no
    worse than the release; where only the old code breaks (its override on embeddings) it repairs. Kept either way
    (``verify`` exits 0), the release's own break named."""
    root = _repository(tmp_path, RELEASE_BREAKS)
    _change(root, None)
    verdict = _verify(root, tmp_path, "--from", "4.45.2", "--target", "4.46.3")
    ran = {s["name"]: s for s in verdict["scenarios"]}
    assert verdict["verdict"] == "no-worse", verdict["detail"]
    assert ran["inputs-embeds-padded"]["status"] == "no-worse", ran["inputs-embeds-padded"]
    assert ran["inputs-embeds"]["status"] == "repairs", ran["inputs-embeds"]
    assert verdict["detail"] == (
        "identical where 4.46.3 runs the old code; 4.46.3 breaks inputs-embeds-padded for the old code too: "
        "NotImplementedError: padded embeddings break on 4.46.3; repairs inputs-embeds, which 4.46.3 breaks for the "
        "old code: NotImplementedError: the old override refuses embeddings on 4.46.3"
    )


def test_embeddings_generated_on_a_4_33_release_compare_without_its_placeholder(tmp_path: Path) -> None:
    """4.33's generate() returns the start token in front of what it generates from ``inputs_embeds``, 4.46's does
    not: compared as they come, both embeddings scenarios differed by a shift of one (issue 42's InternLM)."""
    root = _repository(tmp_path)
    _change(root, None)
    verdict = _verify(root, tmp_path, "--from", "4.33.3", "--target", "4.46.3")
    assert verdict["verdict"] == "identical", verdict["detail"]
    ran = {s["name"]: s["status"] for s in verdict["scenarios"]}
    assert ran["inputs-embeds"] == ran["inputs-embeds-padded"] == "same", ran
