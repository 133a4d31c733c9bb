"""``codemod explain`` and the generated rules page ``docs/rules.md`` (``rules.doc``).

The command goes through typer's ``CliRunner``; the page is compared with what the rule modules
generate now, like the golden reports in ``tests/golden/``, so that it cannot drift from them.
"""

from __future__ import annotations

import difflib
import re
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from codemod import rules
from codemod.analyse.blocker_rules import RULES as BLOCKER_RULES
from codemod.cli import app
from codemod.rules import doc

from .conftest import REPO

runner = CliRunner()


def explain(*args: str):
    return runner.invoke(app, ["explain", *args])


# ------------------------------------------------------------------------------------------- the page


def test_committed_page_is_the_generated_one() -> None:
    expected = doc.page()
    committed = doc.PAGE.read_text(encoding="utf-8")
    if committed != expected:
        diff = difflib.unified_diff(
            committed.splitlines(), expected.splitlines(), "docs/rules.md", "generated", lineterm="", n=1
        )
        pytest.fail(
            "docs/rules.md is not current: run `make rules-doc` (python -m rules.doc)\n" + "\n".join(list(diff)[:40])
        )


def test_page_is_where_the_repository_keeps_it() -> None:
    assert doc.PAGE == REPO / "docs" / "rules.md"


def test_page_lists_and_explains_every_rule() -> None:
    page = doc.page()
    for rule in rules.ALL:
        assert f"| [{rule.code}](#{rule.code.lower()}-{rule.name}) | {rule.name} | {rule.kind.value} |" in page
        assert f"\n## {rule.code} {rule.name}\n" in page
        assert doc.explain(rule) in page
    headings = re.findall(r"^## (PI\d{3}) ", page, re.M)
    assert headings == [rule.code for rule in rules.ALL]


def test_refresh_writes_the_page_and_check_tells_when_it_is_stale(tmp_path: Path, capsys) -> None:
    page = tmp_path / "docs" / "rules.md"
    assert doc.main(["--check", "-o", str(page)]) == 1
    assert "not current" in capsys.readouterr().err and not page.exists()
    assert doc.main(["-o", str(page)]) == 0
    assert page.read_text(encoding="utf-8") == doc.page()
    assert doc.main(["--check", "-o", str(page)]) == 0
    page.write_text(doc.page() + "an edit by hand\n", encoding="utf-8")
    assert doc.main(["--check", "-o", str(page)]) == 1
    assert doc.main(["-o", str(page)]) == 0
    assert page.read_text(encoding="utf-8") == doc.page()


def test_module_entry_point_checks_the_committed_page() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "codemod.rules.doc", "--check"], cwd=REPO, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == done.stderr == ""


# -------------------------------------------------------------------------------------------- explain


@pytest.mark.parametrize("rule", rules.ALL, ids=lambda r: r.code)
def test_explain_prints_everything_the_rule_carries(rule) -> None:
    result = explain(rule.code)
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert out == doc.explain(rule)
    assert out.startswith(f"## {rule.code} {rule.name}\n")
    assert rule.summary[1:].replace("``", "`") in out
    for paragraph in rule.description.replace("``", "`").split("\n\n"):
        assert paragraph in out
    assert ("What the mixins do:" in out) is bool(rule.eras)
    for note in rule.eras:
        assert f"| {note.releases} | {note.does} |" in out
    assert rule.example in out
    for case in rule.positives:
        assert f"- `{case.id}`: " in out and case.detail in out
        assert case.source in "\n".join(line[2:] for line in out.splitlines())
    for case in rule.noops:
        assert f"- `{case.id}`: {case.why}\n" in out
        assert case.source in "\n".join(line[2:] for line in out.splitlines())
    assert (f"Recognised ({len(rule.positives)}):" in out) and (
        (f"Not recognised ({len(rule.noops)}), and why:" in out) is bool(rule.noops)
    )


def test_explain_pi111() -> None:
    out = explain("PI111").stdout
    assert out.splitlines()[:3] == [
        "## PI111 position-ids-from-mask",
        "",
        "Build `position_ids` from the attention mask (cumsum - 1, padding set to 1).",
    ]
    assert "| 5.3 + | built once, in `generate()` (`_prepare_position_ids_for_generation`, padding 0) |" in out
    assert "- `no-masked-fill`: without masked_fill_ the padded positions are negative\n" in out
    assert "- `last-token`: reported as “sliced to the last token” (padding=1, slice=last token, when=always)\n" in out


@pytest.mark.parametrize("query", ["PI111", "pi111", " PI111 ", "position-ids-from-mask", "Position-Ids-From-Mask"])
def test_explain_takes_a_code_or_a_name(query: str) -> None:
    result = explain(query)
    assert result.exit_code == 0
    assert result.stdout == doc.explain(rules.BY_CODE["PI111"])


def test_explain_alone_lists_every_rule() -> None:
    result = explain()
    assert result.exit_code == 0, result.output
    recognisers, blockers = result.stdout.split("\n\n")
    rows = recognisers.splitlines()
    assert rows[:2] == ["| code | name | summary |", "|---|---|---|"]
    assert rows[2:] == [f"| {r.code} | {r.name} | {r.summary.replace('``', '`')} |" for r in rules.ALL]
    # then what blocks a tree on its target, TB001 on
    assert [row.split(" | ")[0] for row in blockers.splitlines()[2:]] == [f"| {r.code}" for r in BLOCKER_RULES]


@pytest.mark.parametrize(
    ("query", "closest"),
    [
        pytest.param("PI112", ["PI111", "PI105", "PI104"], id="a-code-between-codes"),
        pytest.param("PI999", ["PI198", "PI197", "PI196"], id="beyond-the-last"),
        pytest.param("112", ["PI111", "PI105", "PI104"], id="a-bare-number"),
        pytest.param("positoin-ids-from-mask", ["PI111"], id="a-misspelt-name"),
    ],
)
def test_an_unknown_rule_is_one_line_naming_the_closest_codes(query: str, closest: list[str]) -> None:
    result = explain(query)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1 and result.stderr.startswith(f"error: no rule {query!r}; the closest: ")
    named = re.findall(r"PI\d{3}", result.stderr.split("; the closest: ", 1)[1])
    assert named[: len(closest)] == closest
    for code in named:
        assert f"{code} ({rules.BY_CODE[code].name})" in result.stderr


def test_an_unknown_blocker_code_names_the_closest_blocker_codes() -> None:
    result = explain("TB015")
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr.startswith("error: no rule 'TB015'; the closest: TB013 (")
    assert re.findall(r"TB\d{3}", result.stderr.split("; the closest: ", 1)[1]) == ["TB013", "TB012", "TB011"]


def test_an_unknown_rule_with_nothing_close_points_to_the_list() -> None:
    result = explain("zzzz")
    assert result.exit_code == 2
    assert result.stderr == "error: no rule 'zzzz'; `codemod explain` lists them all\n"


def test_explain_on_a_terminal_renders_the_markdown(monkeypatch) -> None:
    import io

    from rich.console import Console

    from codemod import cli

    screen = io.StringIO()
    monkeypatch.setattr(cli, "stdout", Console(file=screen, force_terminal=True, width=100, color_system=None))
    result = explain("PI111")
    assert result.exit_code == 0
    shown = screen.getvalue()
    assert "PI111 position-ids-from-mask" in shown and "no-masked-fill" in shown
    assert "```" not in shown and "|---|" not in shown


def test_explain_is_in_the_help() -> None:
    result = runner.invoke(app, ["--help"])
    assert "explain" in result.stdout
