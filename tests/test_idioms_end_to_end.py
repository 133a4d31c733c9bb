"""The idiom fixes end to end: a 4.3x remote-code Llama that runs on 4.46.3 and not on 5.23.0 runs on 5.23.0 once
migrated, and generates what the original generated on 4.46.3.

``fixtures/legacy_llama`` (tuple caches, ``_reorder_cache`` on tuples, ``is_torch_fx_available``) gets seeded tiny
random weights made once by the original on 4.46.3; the same weights are loaded into the migrated model on 5.23.0.
The release environments are made once per machine (``network``, ``slow``), as ``tests/test_verify_tree.py``'s.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from codemod.cli import app
from codemod.transform.idioms import migrate, target_of
from codemod.verify.sides import release_environment

pytestmark = [pytest.mark.network, pytest.mark.slow]

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "legacy_llama"
MODELING = "modeling_legacy_llama.py"
REFERENCE, TARGET = "4.46.3", "5.23.0"

#: loads the tree as trust_remote_code does (a package of loose files), makes or loads the weights, generates
GENERATE = """
import json, os, sys, tempfile, importlib
tree, weights = sys.argv[1], sys.argv[2]
scratch = tempfile.mkdtemp()
os.symlink(tree, os.path.join(scratch, "legacy_llama_tree"))
sys.path.insert(0, scratch)
import torch
modeling = importlib.import_module("legacy_llama_tree.modeling_legacy_llama")
configuration = importlib.import_module("legacy_llama_tree.configuration_legacy_llama")
with open(os.path.join(tree, "config.json")) as f:
    settings = {k: v for k, v in json.load(f).items() if k not in ("architectures", "auto_map", "model_type")}
torch.manual_seed(0)
model = modeling.LegacyLlamaForCausalLM(configuration.LegacyLlamaConfig(**settings)).eval()
if os.path.exists(weights):
    model.load_state_dict(torch.load(weights))
else:
    torch.save(model.state_dict(), weights)
ids = torch.tensor([[5, 17, 42, 9, 88, 3], [7, 7, 64, 21, 100, 11]])
mask = torch.ones_like(ids)
with torch.no_grad():
    greedy = model.generate(ids, attention_mask=mask, max_new_tokens=12, do_sample=False, pad_token_id=0)
    beam = model.generate(ids, attention_mask=mask, max_new_tokens=8, num_beams=3, do_sample=False, pad_token_id=0)
print(json.dumps({"greedy": greedy.tolist(), "beam": beam.tolist()}))
"""

#: 4.46.3's ModuleUtilsMixin.get_head_mask against the copy TB005's fix writes
HEAD_MASK = """
import json, sys
import torch
from transformers import PretrainedConfig, PreTrainedModel
exec(sys.argv[1])

class M(PreTrainedModel):
    config_class = PretrainedConfig
    def __init__(self, config):
        super().__init__(config)
        self.w = torch.nn.Linear(2, 2)

model = M(PretrainedConfig())
same = [model.get_head_mask(None, 3) == _get_head_mask(None, 3, model.dtype)]
for mask in (torch.tensor([1.0, 0.0, 1.0]), torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])):
    theirs, ours = model.get_head_mask(mask, 3), _get_head_mask(mask, 3, model.dtype)
    same.append(theirs.shape == ours.shape and theirs.dtype == ours.dtype and bool(torch.equal(theirs, ours)))
print(json.dumps(same))
"""


def _env(src: Path) -> dict[str, str]:
    # no bytecode in the cached release: a checkout with untracked files is no longer a pristine release
    return {"PYTHONPATH": str(src), "PATH": "/usr/bin:/bin", "PYTHONDONTWRITEBYTECODE": "1"}


def _python_and_src(version: str) -> tuple[Path, Path]:
    environment, src = release_environment(version, "cpu")
    return environment.python, src


def _generate(version: str, tree: Path, weights: Path, script: Path) -> subprocess.CompletedProcess[str]:
    python, src = _python_and_src(version)
    return subprocess.run(
        [str(python), str(script), str(tree), str(weights)],
        env=_env(src),
        capture_output=True,
        text=True,
        timeout=600,
    )


def _tokens(run: subprocess.CompletedProcess[str]) -> dict[str, list[list[int]]]:
    assert run.returncode == 0, run.stderr[-3000:]
    tokens: dict[str, list[list[int]]] = json.loads(run.stdout.strip().splitlines()[-1])
    return tokens


def _copy(tmp_path: Path, name: str) -> Path:
    root = tmp_path / name
    shutil.copytree(FIXTURE, root, ignore=shutil.ignore_patterns("__pycache__"))
    return root


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, list[list[int]]]]:
    """The original on the release it was written for: the weights, and what it generates."""
    work = tmp_path_factory.mktemp("reference")
    script = work / "generate.py"
    script.write_text(GENERATE)
    weights = work / "weights.pt"
    return weights, _tokens(_generate(REFERENCE, _copy(work, "original"), weights, script))


def test_the_original_does_not_run_on_the_target(tmp_path: Path, reference: tuple[Path, object]) -> None:
    script = tmp_path / "generate.py"
    script.write_text(GENERATE)
    run = _generate(TARGET, _copy(tmp_path, "original"), reference[0], script)
    assert run.returncode != 0
    assert "is_torch_fx_available" in run.stderr


def test_the_migrated_idioms_generate_on_the_target_as_the_original_on_its_release(
    tmp_path: Path, reference: tuple[Path, dict[str, list[list[int]]]]
) -> None:
    root = _copy(tmp_path, "migrated")
    _, src = _python_and_src(TARGET)
    result = migrate((root / MODELING).read_text(), target_of(TARGET, src / "transformers"))
    assert {e.code for e in result.edits} == {"TB001", "TB002", "TB003", "TB004", "TB008"}
    assert result.not_migrated == ()
    (root / MODELING).write_text(result.source)
    script = tmp_path / "generate.py"
    script.write_text(GENERATE)
    weights, expected = reference
    assert _tokens(_generate(TARGET, root, weights, script)) == expected


def test_apply_with_unsafe_fixes_makes_the_tree_run_on_the_target(
    tmp_path: Path, reference: tuple[Path, dict[str, list[list[int]]]]
) -> None:
    root = _copy(tmp_path, "tree")
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "b"]):
        subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)
    safe = CliRunner().invoke(app, ["diff", str(root), "--target", TARGET])
    assert "DynamicCache" not in safe.stdout  # unsafe fixes only when asked
    out = CliRunner().invoke(app, ["apply", str(root), "--target", TARGET, "--unsafe-fixes"])
    assert out.exit_code == 0, out.output
    text = (root / MODELING).read_text()
    assert "past_key_value.update(key_states, value_states, self.layer_idx)" in text
    assert "def _reorder_cache" not in text
    script = tmp_path / "generate.py"
    script.write_text(GENERATE)
    weights, expected = reference
    assert _tokens(_generate(TARGET, root, weights, script)) == expected


def test_the_head_mask_copy_is_what_4_46_3_did_and_5_23_0_has_none() -> None:
    from codemod.transform.idioms.removed import GET_HEAD_MASK

    python, src = _python_and_src(REFERENCE)
    run = subprocess.run(
        [str(python), "-c", HEAD_MASK, GET_HEAD_MASK],
        env=_env(src),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert json.loads(run.stdout.strip().splitlines()[-1]) == [True, True, True]
    _, target_src = _python_and_src(TARGET)
    assert "def get_head_mask" not in (target_src / "transformers" / "modeling_utils.py").read_text()
