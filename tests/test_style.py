"""The line length the code this tool writes is laid out at: the file's project's (``codemod.style``), found as ruff
finds its configuration, and what ``apply`` writes at it (a remote-code repository formatted at 88 gets 88-column code,
transformers 119)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import black
import pytest

from codemod.checkout import CheckoutKind, resolve
from codemod.style import DEFAULT_LINE_LENGTH, checkout_line_length, line_length
from codemod.transform.apply import _rewrite_all
from codemod.transform.plan import Edit, EditKind
from codemod.transform.rewrite import rewrite_source

MODEL = "models/lynx/modeling_lynx.py"

#: (id, {file under the tree: text}, the line length of MODEL)
CASES = [
    pytest.param({}, DEFAULT_LINE_LENGTH, id="no-configuration-transformers-119"),
    pytest.param({"pyproject.toml": "[tool.ruff]\nline-length = 100\n"}, 100, id="pyproject-ruff"),
    pytest.param({"pyproject.toml": "[tool.ruff]\ntarget-version = 'py39'\n"}, 88, id="pyproject-ruff-its-default"),
    pytest.param({"pyproject.toml": "[tool.black]\nline-length = 79\n"}, 79, id="pyproject-black"),
    pytest.param(
        {"pyproject.toml": "[tool.ruff]\nline-length = 100\n[tool.black]\nline-length = 79\n"},
        100,
        id="ruff-before-black",
    ),
    pytest.param(
        {"pyproject.toml": "[project]\nname = 'lynx'\n"},
        DEFAULT_LINE_LENGTH,
        id="pyproject-without-either-looks-further-up",
    ),
    pytest.param(
        {"ruff.toml": "line-length = 90\n", "pyproject.toml": "[tool.ruff]\nline-length = 100\n"},
        90,
        id="ruff-toml-before-pyproject",
    ),
    pytest.param({".ruff.toml": "line-length = 92\n"}, 92, id="dot-ruff-toml"),
    pytest.param(
        {
            "pyproject.toml": "[tool.ruff]\nline-length = 100\n",
            "models/pyproject.toml": "[tool.black]\nline-length = 80\n",
        },
        80,
        id="the-nearest-wins",
    ),
    pytest.param(
        {"pyproject.toml": "[tool.ruff]\nline-length = 100\n", "models/pyproject.toml": "not [toml"},
        100,
        id="unreadable-toml-looks-further-up",
    ),
    pytest.param({"pyproject.toml": "[tool.ruff]\nline-length = true\n"}, 88, id="not-a-length-tool-default"),
]


def test_an_installed_package_is_transformers_code_whatever_project_its_environment_is_in(tmp_path: Path) -> None:
    """site-packages/transformers inside a project's .venv: the project's 88 is not transformers' style; the same
    files as a tree of the project's own code are the project's."""
    (tmp_path / "pyproject.toml").write_text("[tool.ruff]\nline-length = 88\n")
    package = tmp_path / ".venv/lib/python3.11/site-packages/transformers"
    (package / "models/lynx").mkdir(parents=True)
    (package / "generation").mkdir()
    (package / "__init__.py").write_text('__version__ = "4.45.2"\n')
    (package / "generation/utils.py").write_text("")
    (package / "models/lynx/modeling_lynx.py").write_text("")
    checkout = resolve(package)
    assert checkout.kind is CheckoutKind.PACKAGE
    assert checkout_line_length(checkout, "models/lynx/modeling_lynx.py") == DEFAULT_LINE_LENGTH
    assert line_length(package, "models/lynx/modeling_lynx.py", above_root=False) == DEFAULT_LINE_LENGTH
    assert line_length(package, "models/lynx/modeling_lynx.py") == 88
    lynx = resolve(package / "models/lynx")
    assert lynx.kind is CheckoutKind.TREE and checkout_line_length(lynx, "modeling_lynx.py") == 88


@pytest.mark.parametrize(("files", "expected"), CASES)
def test_the_line_length_is_the_nearest_configuration_s(tmp_path: Path, files: dict[str, str], expected: int) -> None:
    root = tmp_path / "repo"
    (root / MODEL).parent.mkdir(parents=True)
    (root / MODEL).write_text("")
    for name, text in files.items():
        (root / name).write_text(text)
    assert line_length(root, MODEL) == expected


REDUCED = (
    "class LynxForCausalLM(LynxPreTrainedModel):\n"
    "    def prepare_inputs_for_generation(self, input_ids, past_key_values=None, attention_mask=None, "
    "pixel_values=None, **kwargs):\n"
    "        return {'input_ids': input_ids, 'pixel_values': pixel_values}\n"
)
BODY = (
    "model_inputs = super().prepare_inputs_for_generation(input_ids, past_key_values=past_key_values, "
    "attention_mask=attention_mask, **kwargs)\n"
    "model_inputs['pixel_values'] = pixel_values\n"
    "return model_inputs\n"
)


def _reduce() -> Edit:
    return Edit(MODEL, "LynxForCausalLM", EditKind.REDUCE, f"{MODEL}::LynxForCausalLM", "test", BODY)


@pytest.mark.parametrize("length", [160, 119, 88])
def test_a_reduction_is_laid_out_at_the_line_length_it_is_given(length: int) -> None:
    result = rewrite_source(MODEL, REDUCED.encode(), [_reduce()], length)
    assert result.error is None, result.error
    body = _body(result.new_text())
    assert max(len(line) for line in body.splitlines()) <= length
    # what ruff format at that length leaves as it is (the signature stays as the file had it)
    code = textwrap.dedent(body)
    assert black.format_str(code, mode=black.Mode(line_length=length - 8, string_normalization=False)) == code
    # 160: the call on one line; 119: the arguments fit on a line of their own; 88: one per line
    call = (
        "super().prepare_inputs_for_generation(input_ids, past_key_values=past_key_values, "
        "attention_mask=attention_mask, **kwargs)"
    )
    assert (call in body) == (length == 160)
    one_line = "super().prepare_inputs_for_generation(\n            input_ids, past_key_values=past_key_values"
    assert (one_line in body) == (length == 119)
    assert ("\n            input_ids,\n" in body) == (length == 88)


def _body(text: str) -> str:
    """The method's body: the lines after its (one-line, untouched) signature."""
    return "".join(text.splitlines(keepends=True)[2:])


def test_apply_lays_out_a_remote_code_repository_at_its_own_line_length(tmp_path: Path) -> None:
    """A repository formatted at 88 columns (its pyproject.toml) gets 88-column code; the same file in a tree without
    a configuration gets transformers' 119."""
    texts = {}
    for name, config in (("repo88", "[tool.ruff]\nline-length = 88\n"), ("plain", None)):
        root = tmp_path / name
        (root / MODEL).parent.mkdir(parents=True)
        (root / MODEL).write_text(REDUCED)
        if config is not None:
            (root / "pyproject.toml").write_text(config)
        (rewrite,) = _rewrite_all(resolve(root), {MODEL: [_reduce()]}, jobs=1)
        assert rewrite.error is None, rewrite.error
        texts[name] = rewrite.new_text()
    assert max(len(line) for line in _body(texts["repo88"]).splitlines()) <= 88
    assert max(len(line) for line in _body(texts["plain"]).splitlines()) > 88
