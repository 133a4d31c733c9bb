"""The ``codemod scan`` command on whole trees: ``fixtures/mini_checkout`` and ``fixtures/remote_code``.

Every test scans a private copy of a fixture (see ``tests/conftest.py``) with a private, initially
empty ``CODEMOD_CACHE_DIR``; nothing is written into the repository. Most tests go through typer's
``CliRunner``; exit codes that ``codemod.cli.main`` decides (tool errors → 2) and ``python -m codemod``
are checked on the real console entry point in a subprocess.
"""

from __future__ import annotations

import ast
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from codemod import __version__
from codemod.cli import app

from .conftest import REPO

runner = CliRunner()

PKG = "src/transformers/models"
OTTER = f"{PKG}/otter/modeling_otter.py"
FINDING_FIELDS = {
    "file", "class", "line", "end_line", "category", "action", "reasons", "copied_from", "copy_group", "generated_from",
}  # fmt: skip

#: (file, class) -> (category, action) the fixture is designed to produce
EXPECTED = {
    (OTTER, "OtterForCausalLM"): ("generic", "delete"),
    (f"{PKG}/badger/modeling_badger.py", "BadgerForCausalLM"): ("generic", "delete"),
    (f"{PKG}/ferret/modeling_ferret.py", "FerretForCausalLM"): ("generic", "delete"),
    (f"{PKG}/weasel/modeling_weasel.py", "WeaselForCausalLM"): ("generic", "delete"),
    (f"{PKG}/stoat/modeling_stoat.py", "StoatForCausalLM"): ("generic", "delete"),
    (f"{PKG}/mink/modeling_mink.py", "MinkForCausalLM"): ("generic", "delete"),
    (f"{PKG}/lynx/modeling_lynx.py", "LynxForConditionalGeneration"): ("kwargs-forwarding", "reduce"),
    (f"{PKG}/heron/modeling_heron.py", "HeronForCausalLM"): ("bespoke", "keep"),
    (f"{PKG}/heron/generation_heron.py", "HeronGenerationMixin"): ("generic", "delete"),
    (f"{PKG}/puffin/modular_puffin.py", "PuffinForSpeechGeneration"): ("generic", "delete"),
    (f"{PKG}/puffin/modeling_puffin.py", "PuffinForCausalLM"): ("generic", "delete"),
    # its forward takes position_ids, which it never passes (the mixin builds them): not generic, deleted all the
    # same (verification decides); the modular source's forward is another file's, so nothing is known of it there
    (f"{PKG}/puffin/modeling_puffin.py", "PuffinForSpeechGeneration"): ("bespoke", "delete"),
    (f"{PKG}/deprecated/dodo/modeling_dodo.py", "DodoForCausalLM"): ("generic", "delete"),
}


def invoke(*args: str | Path):
    return runner.invoke(app, [str(a) for a in args])


def scan_json(*args: str | Path) -> dict:
    result = invoke("scan", *args, "--format", "json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def by_key(document: dict) -> dict[tuple[str, str], dict]:
    return {(f["file"], f["class"]): f for f in document["findings"]}


#: the environment of a subprocess run: no colours, the terminal width rich assumes without a terminal
_PLAIN_ENV = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "COLUMNS", "TTY_COMPATIBLE")} | {
    "NO_COLOR": "1"
}


def run_module(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "codemod", *args], capture_output=True, text=True, cwd=REPO,
        env={**_PLAIN_ENV, **(env or {})}, timeout=120,
    )  # fmt: skip


# --------------------------------------------------------------------------------------------- table


def test_table_output_lists_categories_and_counts(mini_checkout: Path) -> None:
    result = invoke("scan", mini_checkout)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert "transformers 4.45.0.fixture" in out
    assert "13 overrides" in out
    for category, count in (("generic", 10), ("kwargs-forwarding", 1), ("bespoke", 2)):
        assert re.search(rf"{re.escape(category)}\s*│\s*{count}\s*│", out), (category, out)
        assert f"{category} ({count})" in out
    assert re.search(r"total\s*│\s*13\s*│", out)
    # the problems are listed after the tables, and the timing goes to stderr
    assert "skipped 2 files (1 flax, 1 tensorflow)" in out
    assert "error src/transformers/models/kiwi/modeling_kiwi.py" in out
    assert "stale copy marker" in out and "broken copy marker" in out
    assert "scanned in" in result.stderr


def test_verbose_table_lists_every_skipped_file(mini_checkout: Path) -> None:
    result = invoke("scan", mini_checkout, "--verbose")
    assert result.exit_code == 0, result.output
    assert f"skipped {PKG}/otter/modeling_tf_otter.py" in result.stdout
    assert f"skipped {PKG}/otter/modeling_flax_otter.py" in result.stdout


@pytest.mark.parametrize(
    ("option", "listed"),
    [
        (("--only", "otter"), True),  # the model whose TF and Flax files were skipped
        (("--only", "ferret"), False),  # another model: its output does not list otter's files
        (("--skip", "otter"), False),
    ],
)
def test_selection_lists_the_skipped_files_of_the_models_it_selects(
    mini_checkout: Path, option: tuple[str, str], listed: bool
) -> None:
    result = invoke("scan", mini_checkout, "--verbose", *option)
    assert result.exit_code == 0, result.output
    assert (f"skipped {PKG}/otter/modeling_tf_otter.py" in result.stdout) is listed, result.stdout
    assert (f"skipped {PKG}/otter/modeling_flax_otter.py" in result.stdout) is listed, result.stdout


# --------------------------------------------------------------------------------------------- JSON


def test_json_has_the_documented_fields(mini_checkout: Path) -> None:
    document = scan_json(mini_checkout)
    assert document["tool"] == "transformers-codemod" and document["tool_version"] == __version__
    assert document["checkout"] == {
        "root": str(mini_checkout.resolve()), "kind": "checkout", "version": "4.45.0.fixture", "git": None,
    }  # fmt: skip
    assert document["mixin"]["hoisted"] is True
    assert document["mixin"]["source"].startswith("rules/generic_mixin.py")
    assert "src/transformers/generation/utils.py" in document["mixin"]["source"]  # named as the stub
    findings = document["findings"]
    assert len(findings) == document["summary"]["overrides"] == 13
    for finding in findings:
        assert FINDING_FIELDS <= finding.keys(), finding.keys()
        assert not Path(finding["file"]).is_absolute() and (mini_checkout / finding["file"]).is_file()
        assert 1 <= finding["line"] <= finding["end_line"]
        assert finding["reasons"], finding
        assert all({"kind", "text"} <= r.keys() for r in finding["reasons"])
    assert {key: (f["category"], f["action"]) for key, f in by_key(document).items()} == EXPECTED


def test_json_line_numbers_point_at_the_def(mini_checkout: Path) -> None:
    for finding in scan_json(mini_checkout)["findings"]:
        tree = ast.parse((mini_checkout / finding["file"]).read_text(encoding="utf-8"))
        [cls] = [n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == finding["class"]]
        [method] = [
            n for n in cls.body if isinstance(n, ast.FunctionDef) and n.name == "prepare_inputs_for_generation"
        ]
        assert (finding["line"], finding["end_line"]) == (method.lineno, method.end_lineno), finding["file"]
        assert finding["lines"] == method.end_lineno - method.lineno + 1


def test_json_summary(mini_checkout: Path) -> None:
    summary = scan_json(mini_checkout)["summary"]
    assert summary["by_category"]["generic"]["count"] == 10
    assert summary["by_category"]["kwargs-forwarding"]["count"] == 1
    assert summary["by_category"]["bespoke"]["count"] == 2
    assert summary["by_action"] == {"delete": 11, "reduce": 1, "keep": 1}
    assert summary["by_file_kind"] == {"generation": 1, "modeling": 11, "modular": 1}
    assert summary["deprecated"] == 1
    assert summary["from_modular"] == 2
    assert summary["copy_markers"] == {"broken": 1, "consistent": 3, "stale": 1}
    assert summary["copy_groups"] == 1
    assert (summary["skipped_files"], summary["errors"]) == (2, 1)


def test_copy_chain_forms_one_group(mini_checkout: Path) -> None:
    document = scan_json(mini_checkout)
    findings = by_key(document)
    source = f"{OTTER}::OtterForCausalLM"
    assert document["copy_groups"] == [
        {
            "source": source,
            "members": [
                source,
                f"{PKG}/badger/modeling_badger.py::BadgerForCausalLM",
                f"{PKG}/ferret/modeling_ferret.py::FerretForCausalLM",
                f"{PKG}/mink/modeling_mink.py::MinkForCausalLM",
                f"{PKG}/weasel/modeling_weasel.py::WeaselForCausalLM",
            ],
        }
    ]
    ferret = findings[(f"{PKG}/ferret/modeling_ferret.py", "FerretForCausalLM")]["copied_from"]
    assert (
        ferret["target"]
        == "transformers.models.badger.modeling_badger.BadgerForCausalLM.prepare_inputs_for_generation"
    )
    assert ferret["replacements"] == ["Badger->Ferret"]
    assert (ferret["scope"], ferret["status"]) == ("method", "consistent")
    assert ferret["target_file"] == f"{PKG}/badger/modeling_badger.py"
    badger = findings[(f"{PKG}/badger/modeling_badger.py", "BadgerForCausalLM")]["copied_from"]
    assert (badger["status"], badger["target_file"], badger["target_line"]) == ("consistent", OTTER, 36)
    assert findings[(OTTER, "OtterForCausalLM")]["copied_from"] is None
    assert findings[(OTTER, "OtterForCausalLM")]["copy_group"] == source
    # not copies: no group
    assert findings[(f"{PKG}/lynx/modeling_lynx.py", "LynxForConditionalGeneration")]["copy_group"] is None
    # a broken marker names no target, so its override stays out of the group
    assert findings[(f"{PKG}/stoat/modeling_stoat.py", "StoatForCausalLM")]["copy_group"] is None


def test_stale_and_broken_markers_are_flagged(mini_checkout: Path) -> None:
    findings = by_key(scan_json(mini_checkout))
    stale = findings[(f"{PKG}/weasel/modeling_weasel.py", "WeaselForCausalLM")]["copied_from"]
    assert stale["status"] == "stale"
    assert stale["line"] == 24
    assert "use_cache=False" in stale["detail"]
    broken = findings[(f"{PKG}/stoat/modeling_stoat.py", "StoatForCausalLM")]["copied_from"]
    assert broken["status"] == "broken"
    assert "prepare_input_for_generation" in broken["detail"] and "does not exist" in broken["detail"]
    assert broken["target_file"] is None


def test_class_level_copy_marker(mini_checkout: Path) -> None:
    mink = by_key(scan_json(mini_checkout))[(f"{PKG}/mink/modeling_mink.py", "MinkForCausalLM")]["copied_from"]
    assert mink["scope"] == "class"
    assert mink["status"] == "consistent"
    assert mink["target"] == "transformers.models.otter.modeling_otter.OtterForCausalLM"
    assert mink["replacements"] == ["Otter->Mink"]
    assert mink["line"] == 25


def test_modular_origins(mini_checkout: Path) -> None:
    findings = by_key(scan_json(mini_checkout))
    modular = f"{PKG}/puffin/modular_puffin.py"
    inherited = findings[(f"{PKG}/puffin/modeling_puffin.py", "PuffinForCausalLM")]["generated_from"]
    assert inherited["kind"] == "inherited"
    assert (inherited["modular_file"], inherited["modular_class"]) == (modular, "PuffinForCausalLM")
    assert (inherited["source_file"], inherited["source_class"], inherited["source_line"]) == (
        OTTER,
        "OtterForCausalLM",
        36,
    )
    own = findings[(f"{PKG}/puffin/modeling_puffin.py", "PuffinForSpeechGeneration")]["generated_from"]
    assert own["kind"] == "modular-class"
    assert (own["modular_file"], own["source_file"], own["source_line"]) == (modular, modular, 19)
    # the modular source itself is listed, as a modular file, with no origin of its own
    source = findings[(modular, "PuffinForSpeechGeneration")]
    assert source["file_kind"] == "modular" and source["generated_from"] is None
    # hand-written files have no origin
    assert findings[(OTTER, "OtterForCausalLM")]["generated_from"] is None


def test_models_deprecated_and_generation_files(mini_checkout: Path) -> None:
    findings = by_key(scan_json(mini_checkout))
    dodo = findings[(f"{PKG}/deprecated/dodo/modeling_dodo.py", "DodoForCausalLM")]
    assert dodo["deprecated"] is True and dodo["model"] == "dodo"
    assert sum(f["deprecated"] for f in findings.values()) == 1
    heron = findings[(f"{PKG}/heron/generation_heron.py", "HeronGenerationMixin")]
    assert (heron["file_kind"], heron["model"]) == ("generation", "heron")


def test_bespoke_and_kwargs_forwarding_reasons(mini_checkout: Path) -> None:
    findings = by_key(scan_json(mini_checkout))
    heron = findings[(f"{PKG}/heron/modeling_heron.py", "HeronForCausalLM")]
    unrecognised = [r for r in heron["reasons"] if r["kind"] == "unrecognised"]
    assert any("torch.cat([input_ids, dummy_token]" in r["text"] for r in unrecognised), heron["reasons"]
    lynx = findings[(f"{PKG}/lynx/modeling_lynx.py", "LynxForConditionalGeneration")]
    assert lynx["extras"] == [
        {"key": "", "how": "swap-delegate", "source": "self.language_model"},
        {"key": "pixel_values", "how": "first-step", "source": "pixel_values"},
    ]


def test_unparsable_file_is_an_error_and_the_run_goes_on(mini_checkout: Path) -> None:
    document = scan_json(mini_checkout)
    assert [e["path"] for e in document["errors"]] == [f"{PKG}/kiwi/modeling_kiwi.py"]
    assert document["errors"][0]["error"].startswith("cannot parse")
    assert not any(f["model"] == "kiwi" for f in document["findings"])
    assert len(document["findings"]) == 13


def test_tf_and_flax_files_are_skipped_not_ignored(mini_checkout: Path) -> None:
    document = scan_json(mini_checkout)
    skipped = {(s["path"], s["kind"], tuple(s["classes"])) for s in document["skipped"]}
    assert skipped == {
        (f"{PKG}/otter/modeling_tf_otter.py", "tensorflow", ("TFOtterForCausalLM",)),
        (f"{PKG}/otter/modeling_flax_otter.py", "flax", ("FlaxOtterForCausalLM",)),
    }
    assert all(s["reason"] for s in document["skipped"])
    assert not any("modeling_tf_" in f["file"] or "modeling_flax_" in f["file"] for f in document["findings"])


def test_only_and_skip_by_model_name(mini_checkout: Path) -> None:
    only = scan_json(mini_checkout, "--only", "otter,lynx")
    assert sorted(f["class"] for f in only["findings"]) == ["LynxForConditionalGeneration", "OtterForCausalLM"]
    assert only["summary"]["overrides"] == 2
    repeated = scan_json(mini_checkout, "--only", "otter", "--only", "lynx")
    assert repeated["findings"] == only["findings"]
    skip = scan_json(mini_checkout, "--skip", "puffin", "--skip", "heron,dodo")
    models = {f["model"] for f in skip["findings"]}
    assert models == {"otter", "badger", "ferret", "weasel", "stoat", "mink", "lynx"}
    assert len(skip["findings"]) == 13 - 3 - 2 - 1
    # a class name selects too
    assert [f["class"] for f in scan_json(mini_checkout, "--only", "HeronGenerationMixin")["findings"]] == [
        "HeronGenerationMixin"
    ]


def test_markdown_output(mini_checkout: Path) -> None:
    result = invoke("scan", mini_checkout, "--format", "markdown")
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert text.startswith("# prepare_inputs_for_generation overrides\n")
    assert "| **total** | **13** |" in text
    for heading in ("## generic (10)", "## kwargs-forwarding (1)", "## bespoke (2)", "## Not scanned"):
        assert heading in text
    assert f"`{PKG}/kiwi/modeling_kiwi.py`: cannot parse" in text
    assert f"`{PKG}/otter/modeling_tf_otter.py`" in text
    assert "(copy of OtterForCausalLM (stale))" in text


def test_markdown_names_the_class_a_class_level_copy_copies(mini_checkout: Path) -> None:
    text = invoke("scan", mini_checkout, "--format", "markdown").stdout
    mink = next(line for line in text.splitlines() if "`MinkForCausalLM`" in line)
    assert "copy of OtterForCausalLM" in mink, mink


@pytest.mark.parametrize("fmt", ["json", "markdown", "table"])
def test_output_file(mini_checkout: Path, tmp_path: Path, fmt: str) -> None:
    target = tmp_path / f"report.{fmt}"
    result = invoke("scan", mini_checkout, "--format", fmt, "-o", target)
    assert result.exit_code == 0, result.output
    text = target.read_text(encoding="utf-8")
    if fmt == "json":
        assert result.stdout == ""
        assert json.loads(text)["summary"]["overrides"] == 13
        assert text == invoke("scan", mini_checkout, "--format", "json").stdout
    elif fmt == "markdown":
        assert result.stdout == ""
        assert text.startswith("# prepare_inputs_for_generation overrides")
    else:
        assert "By category" in text and "OtterForCausalLM" in text
        assert "OtterForCausalLM" not in result.stdout


def test_bad_format_is_a_usage_error(mini_checkout: Path) -> None:
    result = invoke("scan", mini_checkout, "--format", "yaml")
    assert result.exit_code == 2
    assert "unknown format 'yaml'" in result.output


def test_missing_path_is_one_line_and_exit_2_in_process(tmp_path: Path, codemod_cache: Path) -> None:
    """The commands catch every CodemodError themselves: CliRunner sees what a user sees."""
    missing = tmp_path / "nowhere"
    result = invoke("scan", missing)
    assert result.exit_code == 2
    assert result.stderr == f"error: no such file or directory: {missing}\n"
    assert result.stdout == ""


def test_missing_path_exits_2(tmp_path: Path, codemod_cache: Path) -> None:
    missing = tmp_path / "nowhere"
    done = run_module("scan", str(missing), env={"CODEMOD_CACHE_DIR": str(codemod_cache)})
    assert done.returncode == 2, done
    assert done.stdout == ""
    assert done.stderr.startswith("error: no such file or directory")
    assert done.stderr.replace("\n", "").endswith(f"{missing}")
    assert "Traceback" not in done.stderr


def test_missing_path_error_is_one_line(tmp_path: Path, codemod_cache: Path) -> None:
    missing = tmp_path / ("a-rather-long-directory-name-" * 3) / "nowhere"
    done = run_module("scan", str(missing), env={"CODEMOD_CACHE_DIR": str(codemod_cache)})
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr == f"error: no such file or directory: {missing}\n"


def test_bad_format_exits_2_via_the_module(mini_checkout: Path, codemod_cache: Path) -> None:
    done = run_module("scan", str(mini_checkout), "-f", "xml", env={"CODEMOD_CACHE_DIR": str(codemod_cache)})
    assert done.returncode == 2
    assert "unknown format" in done.stderr


# --------------------------------------------------------------------------------------------- other roots


def test_single_remote_code_file(remote_code: Path) -> None:
    document = scan_json(remote_code / "modeling_custom.py", "--target", "built-in")
    assert document["checkout"]["kind"] == "file"
    assert document["checkout"]["root"] == str(remote_code.resolve())
    assert document["checkout"]["version"] is None
    # nothing is installed into a file's tree: it is judged against the generic implementation the tool ships
    assert document["mixin"]["hoisted"] is False
    assert (document["mixin"]["judged_against"], document["mixin"]["release"]) == ("built-in", None)
    assert document["mixin"]["source"].startswith("rules/generic_mixin.py")
    [finding] = document["findings"]
    assert (finding["file"], finding["class"], finding["model"]) == (
        "modeling_custom.py",
        "CustomForCausalLM",
        "custom",
    )
    assert finding["file_kind"] == "modeling"
    assert finding["category"] in ("generic", "kwargs-forwarding", "bespoke") and finding["reasons"]
    assert (document["skipped"], document["errors"], document["copy_groups"]) == ([], [], [])


def test_remote_code_directory_is_a_tree(remote_code: Path) -> None:
    document = scan_json(remote_code)
    assert document["checkout"]["kind"] == "tree"
    assert [f["file"] for f in document["findings"]] == ["modeling_custom.py"]
    assert document["findings"] == scan_json(remote_code / "modeling_custom.py")["findings"]


def test_package_dir_gives_the_same_findings_as_the_root(mini_checkout: Path) -> None:
    root = scan_json(mini_checkout)
    package = scan_json(mini_checkout / "src" / "transformers")
    assert package["checkout"]["kind"] == "package"
    assert package["checkout"]["version"] == "4.45.0.fixture"
    for key in ("findings", "skipped", "errors", "copy_groups", "summary", "mixin"):
        unprefixed = json.loads(json.dumps(root[key]).replace("src/transformers/", ""))
        assert unprefixed == package[key], key
    assert package["findings"][0]["file"].startswith("models/")


# --------------------------------------------------------------------------------------------- cache


def test_warm_cache_and_no_cache_give_identical_json(mini_checkout: Path, codemod_cache: Path) -> None:
    first = invoke("scan", mini_checkout, "-f", "json").stdout
    assert any((codemod_cache / "scans").iterdir()), "the first run fills the cache"
    second = invoke("scan", mini_checkout, "-f", "json").stdout
    assert second == first
    assert invoke("scan", mini_checkout, "-f", "json", "--no-cache").stdout == first


def test_cache_notices_an_edited_file(mini_checkout: Path) -> None:
    before = by_key(scan_json(mini_checkout))
    assert before[(f"{PKG}/badger/modeling_badger.py", "BadgerForCausalLM")]["copied_from"]["status"] == "consistent"
    # editing the copy target makes its copies stale, although the copies did not change
    otter = mini_checkout / OTTER
    otter.write_text(otter.read_text(encoding="utf-8").replace("use_cache=True,", "use_cache=None,"), encoding="utf-8")
    after = by_key(scan_json(mini_checkout))
    assert after[(f"{PKG}/badger/modeling_badger.py", "BadgerForCausalLM")]["copied_from"]["status"] == "stale"
    assert after[(f"{PKG}/weasel/modeling_weasel.py", "WeaselForCausalLM")]["copied_from"]["status"] == "stale"


def test_scan_writes_nothing_into_the_checkout(mini_checkout: Path) -> None:
    def listing() -> dict[str, bytes]:
        return {p.relative_to(mini_checkout).as_posix(): p.read_bytes() for p in sorted(mini_checkout.rglob("*"))
                if p.is_file()}  # fmt: skip

    before = listing()
    for fmt in ("table", "json", "markdown"):
        assert invoke("scan", mini_checkout, "-f", fmt).exit_code == 0
    assert listing() == before


# --------------------------------------------------------------------------------------------- entry points


def test_version() -> None:
    result = invoke("--version")
    assert result.exit_code == 0
    assert result.stdout.strip() == f"transformers-codemod {__version__}"


def test_no_arguments_shows_help() -> None:
    result = invoke()
    assert "scan" in result.output and "Usage" in result.output


def test_python_m_codemod_help() -> None:
    done = run_module("--help")
    assert done.returncode == 0, done.stderr
    assert "Usage" in done.stdout and "scan" in done.stdout


def test_python_m_codemod_scan_json(mini_checkout: Path, codemod_cache: Path) -> None:
    done = run_module("scan", str(mini_checkout), "-f", "json", env={"CODEMOD_CACHE_DIR": str(codemod_cache)})
    assert done.returncode == 0, done.stderr
    assert done.stdout == invoke("scan", mini_checkout, "-f", "json").stdout
