"""TB010's fix end to end: a remote-code model whose rotary buffers ``__init__`` computes, saved on 4.46.3 and
loaded with ``from_pretrained`` as users load it. On 5.23.0 the original's buffers come back empty and it
generates other tokens; migrated (``codemod apply --target 5.23.0 --unsafe-fixes``) it has the buffers and the
tokens the original had on 4.46.3. The release environments are made once per machine (``network``, ``slow``)."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from codemod.cli import app
from codemod.verify.sides import release_environment

pytestmark = [pytest.mark.network, pytest.mark.slow]

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "rotary_buffers"
REFERENCE, TARGET = "4.46.3", "5.23.0"

#: seeded weights made once (saved without the non-persistent buffers, as save_pretrained does); then the tree
#: loaded with from_pretrained, and what it generates and holds in its buffers
GENERATE = """
import json, os, shutil, sys
import torch, transformers
tree, weights = sys.argv[1], sys.argv[2]
if not os.path.exists(weights):
    config = transformers.AutoConfig.from_pretrained(tree, trust_remote_code=True)
    torch.manual_seed(0)
    built = transformers.AutoModelForCausalLM.from_config(config, trust_remote_code=True)
    torch.save(built.state_dict(), weights)
shutil.copy(weights, os.path.join(tree, "pytorch_model.bin"))
model = transformers.AutoModelForCausalLM.from_pretrained(tree, trust_remote_code=True).eval()
ids = torch.tensor([[5, 17, 42, 9, 33, 3], [7, 7, 60, 21, 10, 11]])
with torch.no_grad():
    out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=8, do_sample=False,
                         use_cache=False, pad_token_id=0)
rotary = model.attention.rotary
print(json.dumps({"tokens": out.tolist(), "buffers": [rotary.inv_freq.tolist(), rotary.cos_cached.tolist()]}))
"""


def _run(version: str, tree: Path, weights: Path, work: Path) -> dict[str, object]:
    environment, src = release_environment(version, "cpu")
    script = work / "generate.py"
    script.write_text(GENERATE)
    environ = {
        "PYTHONPATH": str(src),
        "PATH": "/usr/bin:/bin",
        "PYTHONDONTWRITEBYTECODE": "1",
        "HF_HOME": str(work / "hf"),
        "HF_MODULES_CACHE": str(work / f"modules-{tree.name}"),
        "HF_HUB_OFFLINE": "1",
    }
    run = subprocess.run(
        [str(environment.python), str(script), str(tree), str(weights)],
        env=environ,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    found: dict[str, object] = json.loads(run.stdout.strip().splitlines()[-1])
    return found


def _copy(work: Path, name: str) -> Path:
    root = work / name
    shutil.copytree(FIXTURE, root, ignore=shutil.ignore_patterns("__pycache__"))
    return root


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, object]]:
    work = tmp_path_factory.mktemp("reference")
    weights = work / "weights.pt"
    return weights, _run(REFERENCE, _copy(work, "original"), weights, work)


def test_the_original_loses_its_buffers_on_the_target(
    tmp_path: Path, reference: tuple[Path, dict[str, object]]
) -> None:
    weights, expected = reference
    found = _run(TARGET, _copy(tmp_path, "original"), weights, tmp_path)
    assert found["buffers"] != expected["buffers"]


def test_the_migrated_model_loads_its_buffers_and_generates_as_the_original_did(
    tmp_path: Path, reference: tuple[Path, dict[str, object]]
) -> None:
    root = _copy(tmp_path, "migrated")
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    result = CliRunner().invoke(app, ["apply", str(root), "--target", TARGET, "--unsafe-fixes"])
    assert result.exit_code == 0, result.output
    assert "_restore_buffers(module)" in (root / "modeling_rotary_buffers.py").read_text()
    weights, expected = reference
    assert _run(TARGET, root, weights, tmp_path) == expected
