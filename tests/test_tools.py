"""``codemod.tools``: the checkout's own converter and check_copies, run after a rewrite.

The real tools need a git clone (an sdist has no ``utils/``); here a copy of the fixture checkout
gets stand-in scripts that behave like them where it matters: they are run from the checkout's root
with ``src`` importable, take the same options, and say what is wrong through their exit status.
"""

from __future__ import annotations

import shutil
import sys
import textwrap
from pathlib import Path

import pytest

from codemod.checkout import resolve
from codemod.tools import after_rewrite, available

from .conftest import MINI_CHECKOUT

#: check_copies stand-in: a file holding "INCONSISTENT" fails, as a stale copy would
CHECK_COPIES = """
import argparse, pathlib, sys
parser = argparse.ArgumentParser()
parser.add_argument("--file", default=None)
parser.add_argument("--fix_and_overwrite", action="store_true")
args = parser.parse_args()
import transformers  # from src/, as the real one imports it
text = pathlib.Path(args.file).read_text()
if "INCONSISTENT" in text:
    print(f"{args.file}: the copy is not consistent with its source")
    sys.exit(1)
"""

#: converter stand-in: writes the modeling file next to the modular one (old option name)
CONVERTER_OLD = """
import argparse, pathlib
parser = argparse.ArgumentParser()
parser.add_argument("--files_to_parse", nargs="+")
args = parser.parse_args()
for name in args.files_to_parse:
    path = pathlib.Path(name)
    path.with_name(path.name.replace("modular_", "modeling_")).write_text("# generated\\n" + path.read_text())
"""

#: newer converters call the option --files; the old name is an argparse error (status 2)
CONVERTER_NEW = CONVERTER_OLD.replace("--files_to_parse", "--files").replace("args.files_to_parse", "args.files")


def clone_with_utils(tmp_path: Path, converter: str | None = CONVERTER_OLD) -> Path:
    root = tmp_path / "clone"
    shutil.copytree(MINI_CHECKOUT, root)
    (root / "utils").mkdir()
    (root / "utils" / "check_copies.py").write_text(textwrap.dedent(CHECK_COPIES))
    if converter is not None:
        (root / "utils" / "modular_model_converter.py").write_text(textwrap.dedent(converter))
    return root


def modular_file(root: Path) -> str:
    path = root / "src/transformers/models/newt/modular_newt.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("class NewtForCausalLM:\n    pass\n")
    return path.relative_to(root).as_posix()


def a_model_file(root: Path) -> str:
    return (
        next(p for p in sorted((root / "src/transformers/models").rglob("modeling_*.py"))).relative_to(root).as_posix()
    )


def test_an_sdist_without_utils_runs_nothing() -> None:
    checkout = resolve(MINI_CHECKOUT)
    assert not available(checkout)
    assert after_rewrite(checkout, [a_model_file(MINI_CHECKOUT)], python=Path(sys.executable)) == []


def test_check_copies_runs_per_written_python_file(tmp_path: Path) -> None:
    root = clone_with_utils(tmp_path)
    good = a_model_file(root)
    bad = "src/transformers/models/bad_copy.py"
    (root / bad).write_text("# INCONSISTENT\n")
    runs = after_rewrite(resolve(root), [good, bad, "docs/notes.md"], python=Path(sys.executable))
    assert [(r.tool, r.target, r.ok) for r in runs] == [("check_copies", good, True), ("check_copies", bad, False)]
    assert "not consistent" in runs[1].output
    assert runs[1].describe().startswith(f"check_copies {bad}: FAILED: ")


@pytest.mark.parametrize("converter", [CONVERTER_OLD, CONVERTER_NEW], ids=["--files_to_parse", "--files"])
def test_edited_modular_sources_are_regenerated_before_the_copies_are_checked(tmp_path: Path, converter: str) -> None:
    root = clone_with_utils(tmp_path, converter)
    modular = modular_file(root)
    runs = after_rewrite(resolve(root), [modular], python=Path(sys.executable))
    assert [(r.tool, r.ok) for r in runs] == [("modular_model_converter", True), ("check_copies", True)]
    generated = root / modular.replace("modular_", "modeling_")
    assert generated.read_text() == "# generated\nclass NewtForCausalLM:\n    pass\n"


def test_a_clone_without_the_converter_only_checks_copies(tmp_path: Path) -> None:
    root = clone_with_utils(tmp_path, converter=None)
    runs = after_rewrite(resolve(root), [modular_file(root)], python=Path(sys.executable))
    assert [r.tool for r in runs] == ["check_copies"]


def test_a_failing_converter_is_reported_not_raised(tmp_path: Path) -> None:
    root = clone_with_utils(tmp_path, converter="import sys\nprint('cannot convert')\nsys.exit(3)\n")
    runs = after_rewrite(resolve(root), [modular_file(root)], python=Path(sys.executable))
    assert runs[0].tool == "modular_model_converter" and not runs[0].ok and runs[0].output == "cannot convert"


def test_apply_runs_the_checkouts_tools_on_what_it_wrote(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from codemod.cli import app

    root = clone_with_utils(tmp_path)
    result = CliRunner().invoke(app, ["apply", str(root), "--python", sys.executable])
    assert result.exit_code == 0, result.output
    checked = [line for line in result.output.splitlines() if line.startswith("check_copies ")]
    assert checked and all(line.endswith(": ok") for line in checked)
    assert len(checked) == len({line.split()[1] for line in checked})  # once per written file


def test_modular_sources_that_import_an_edited_model_are_regenerated_when_their_generated_file_was_written(
    tmp_path: Path,
) -> None:
    """4.57.1 clone: ``apply`` edited Qwen2.5-Omni's thinker (a hook attribute) and the copy the converter had made
    of it in Qwen3-Omni's generated file, where the converter lays it out elsewhere: ``check_modular_conversion``
    failed on a model whose modular source was never edited. A modular source that imports from an edited model
    and whose generated file was written is regenerated after the edited sources, and after the other such sources
    it imports from, whatever their paths' order (the converter reads the parent's generated file); one whose
    generated file was not written, or that imports nothing edited, is left alone."""
    root = clone_with_utils(tmp_path)
    models = root / "src/transformers/models"
    parent = modular_file(root)  # newt, edited
    sources = {
        "child": "from ..newt.modeling_newt import NewtForCausalLM\n\n\nclass ChildForCausalLM(NewtForCausalLM):\n    pass\n",
        # sorted before the source it imports from
        "a_grandchild": "from ..child.modular_child import ChildForCausalLM\n\n\nclass GrandchildLM(ChildForCausalLM):\n    pass\n",
        "untouched": "from ..newt.modeling_newt import NewtForCausalLM\n\n\nclass UntouchedLM(NewtForCausalLM):\n    pass\n",
        "unrelated": "class UnrelatedLM:\n    pass\n",
    }
    for name, text in sources.items():
        (models / name).mkdir()
        (models / name / f"modular_{name}.py").write_text(text)
        (models / name / f"modeling_{name}.py").write_text("# the tool's own edit\n")
    written = [parent] + [
        f"src/transformers/models/{name}/modeling_{name}.py" for name in ("child", "a_grandchild", "unrelated")
    ]
    runs = after_rewrite(resolve(root), written, python=Path(sys.executable))
    regenerated = [r.target for r in runs if r.tool == "modular_model_converter"]
    assert regenerated == [
        parent,
        "src/transformers/models/child/modular_child.py",
        "src/transformers/models/a_grandchild/modular_a_grandchild.py",
    ]
    assert all(r.ok for r in runs)
    assert (models / "child" / "modeling_child.py").read_text().startswith("# generated\nfrom ..newt")
    assert (models / "untouched" / "modeling_untouched.py").read_text() == "# the tool's own edit\n"
    assert (models / "unrelated" / "modeling_unrelated.py").read_text() == "# the tool's own edit\n"
