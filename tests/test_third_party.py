"""Integration: ``codemod apply`` on real packages that ship their own model classes (not transformers).

Each wheel is downloaded from PyPI at test time (``pip download --no-deps``), unpacked once into the user
cache (never committed, never installed) and copied for every run. The migration must not break a model:
wrappers without a generative base are kept, nothing written has a pyflakes problem its original lacked,
every written file compiles, and the edits that remain are listed below with why each is right.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from typer.testing import CliRunner

from codemod.cache import cache_dir
from codemod.cli import app
from codemod.fetch import _locked

from .flakes import assert_no_new_flakes

pytestmark = [pytest.mark.network, pytest.mark.slow]

runner = CliRunner()

#: a release with PreTrainedModel no longer a GenerationMixin and a mixin that passes cache_position
TARGET = "4.57.1"


def unpacked(requirement: str, package: str) -> Path:
    """The package directory ``package`` of the wheel of ``requirement``, unpacked once into the user cache."""
    root = cache_dir("third-party") / requirement.replace("==", "-")
    if (root / package).is_dir():
        return root / package
    with _locked(root.with_name(root.name + ".lock")):
        if not (root / package).is_dir():
            scratch = root.with_name(root.name + ".partial")
            shutil.rmtree(scratch, ignore_errors=True)
            download = scratch / "download"
            done = subprocess.run(
                [
                    sys.executable,
                    "-m",
                    "pip",
                    "download",
                    "--quiet",
                    "--no-deps",
                    "--only-binary=:all:",
                    requirement,
                    "-d",
                    str(download),
                ],
                capture_output=True,
                text=True,
                check=False,
            )
            wheels = sorted(download.glob("*.whl"))
            if done.returncode != 0 or not wheels:
                pytest.fail(f"pip download {requirement} failed:\n{done.stderr}")
            with zipfile.ZipFile(wheels[0]) as archive:
                archive.extractall(scratch / "tree", [n for n in archive.namelist() if n.startswith(f"{package}/")])
            (scratch / "tree").rename(root)
            shutil.rmtree(scratch, ignore_errors=True)
    return root / package


def apply_copy(source: Path, dest: Path, *args: str) -> tuple[list[str], str]:
    """Apply on a copy of ``source`` at ``dest``; the files it changed, and its output."""
    shutil.copytree(source, dest)
    result = runner.invoke(app, ["apply", str(dest), "--no-cache", *args])
    assert result.exit_code == 0, result.output
    changed = sorted(
        p.relative_to(dest).as_posix()
        for p in dest.rglob("*.py")
        if p.read_bytes() != (source / p.relative_to(dest)).read_bytes()
    )
    for rel in changed:
        compile((dest / rel).read_text(encoding="utf-8"), rel, "exec", dont_inherit=True)
    assert_no_new_flakes(source, dest, changed)
    return changed, " ".join(result.output.split())


def added_lines(source: Path, dest: Path, rel: str) -> list[str]:
    old = (source / rel).read_text(encoding="utf-8").splitlines()
    return [line.strip() for line in (dest / rel).read_text(encoding="utf-8").splitlines() if line not in old]


@pytest.mark.parametrize("target", [None, TARGET], ids=["built-in", TARGET])
def test_peft_wrappers_are_kept_untouched(tmp_path: Path, target: str | None) -> None:
    """PeftModelForCausalLM / ForSeq2SeqLM wrap a base model (PushToHubMixin, torch.nn.Module) and take their
    inputs from the base model's method stored on the instance: no base defines the method (with a target;
    without one PushToHubMixin cannot be resolved), so a deletion or super() would raise. Nothing is written,
    not even a mark (nothing is overwritten)."""
    source = unpacked("peft==0.21.2", "peft")
    changed, output = apply_copy(source, tmp_path / "peft", "--target", target or "built-in")
    assert changed == [], output
    assert "0 overrides deleted, 0 reduced, 2 kept" in output


LAVIS_MARKED = {
    # written for a generate() that passed the cache as `past`: on any current release it never slices, and
    # setting past_key_values from it after super() would replace the cache the mixin prepared
    "models/blip2_models/Qformer.py": ["passes past_key_values from its parameter 'past'"],
    "models/blip2_models/modeling_opt.py": ["passes past_key_values from its parameter 'past'"],
    "models/blip2_models/modeling_t5.py": ["passes past_key_values from its parameter 'past'"],
    # BertForMaskedLM appends a dummy token and returns a closed dict; its forward takes neither use_cache
    # nor **kwargs (the mixin would make it raise TypeError); BertLMHeadModel is a `past` override again
    "models/med.py": ["BertForMaskedLM.forward takes neither", "passes past_key_values from its parameter 'past'"],
}


@pytest.mark.parametrize("target", [None, TARGET], ids=["built-in", TARGET])
def test_lavis_keeps_every_override_and_says_why(tmp_path: Path, target: str | None) -> None:
    """salesforce-lavis 1.0.2: five overrides in four files, all kept: nothing changes. With --mark the
    only edits are the `# Overwritten --` marks giving each reason (no code changes: 0 deleted, 0 reduced)."""
    source = unpacked("salesforce-lavis==1.0.2", "lavis")
    targeted = ["--target", target or "built-in"]
    changed, output = apply_copy(source, tmp_path / "plain", *targeted)
    assert "0 overrides deleted, 0 reduced, 5 kept" in output
    assert changed == [], output
    changed, output = apply_copy(source, tmp_path / "lavis", *targeted, "--mark")
    assert "0 overrides deleted, 0 reduced, 5 kept" in output
    assert changed == sorted(LAVIS_MARKED)
    for rel, reasons in LAVIS_MARKED.items():
        added = added_lines(source, tmp_path / "lavis", rel)
        assert all(line.startswith("# Overwritten -- ") for line in added), (rel, added)
        assert len(added) == len(reasons) and all(r in a for r, a in zip(reasons, added, strict=False)), (rel, added)
