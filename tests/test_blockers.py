"""What stops a tree of 4.3x remote code running on a later release (``codemod.analyse.blockers``): each rule finds its
example and not its near misses; the fixture tree ``fixtures/blockers`` is reported line by line on the releases each
idiom blocks, and not on the ones before; a checkout and the built-in mixin get no such report."""

from __future__ import annotations

import ast
import json
import shutil
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from codemod.analyse.blocker_rules import RULES, config_attributes, module_names
from codemod.analyse.blockers import BlockerRule, TreeFacts, blocks, explain, find_blockers, run_rules
from codemod.analyse.target import Target, TargetOrigin
from codemod.checkout import resolve
from codemod.cli import app
from tests.conftest import make_target_package

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "blockers"


def hits(rule: BlockerRule, source: str, facts: TreeFacts | None = None) -> int:
    tree = ast.parse(textwrap.dedent(source))
    facts = facts or TreeFacts(config_attributes([tree]))
    return len(list(rule.find(tree, facts)))


@pytest.mark.parametrize(
    ("rule", "source", "expected"),
    [pytest.param(r, e.source, e.hits, id=f"{r.code}-{e.id}") for r in RULES for e in r.examples],
)
def test_the_example_is_found(rule: BlockerRule, source: str, expected: int) -> None:
    assert hits(rule, source) == expected


@pytest.mark.parametrize(
    ("rule", "source", "why"),
    [pytest.param(r, m.source, m.why, id=f"{r.code}-{m.id}") for r in RULES for m in r.near_misses],
)
def test_a_near_miss_is_not(rule: BlockerRule, source: str, why: str) -> None:
    assert hits(rule, source) == 0, why
    # where the target's module names are known too (each imported name defined there): TB008's near misses were
    # not reported only because nothing was known of the target
    assert hits(rule, source, _defining(source)) == 0, why


def _defining(source: str) -> TreeFacts:
    """Facts of a target whose modules define every name ``source`` imports."""
    tree = ast.parse(textwrap.dedent(source))
    imported = frozenset(a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names)
    return TreeFacts(config_attributes([tree]), module_names=lambda module: imported, release="5.0.0")


def test_a_name_the_target_lacks_is_reported_where_its_names_are_known() -> None:
    """The other half of TB008: a name no list knows is reported only when the target's module lacks it."""
    (rule,) = [r for r in RULES if r.code == "TB008"]
    source = "from transformers.modeling_utils import PreTrainedModel, gone_helper\n"
    known = TreeFacts(module_names=lambda module: frozenset({"PreTrainedModel"}), release="5.0.0")
    assert hits(rule, source, known) == 1
    assert hits(rule, source) == 0  # nothing known of the target: nothing said


def test_codes_are_unique_and_every_rule_has_cases() -> None:
    codes = [r.code for r in RULES]
    assert codes == sorted(set(codes)) and all(c.startswith("TB") for c in codes)
    assert all(r.examples and r.near_misses and blocks(r.release, r.release) for r in RULES)


def test_blocks_compares_releases() -> None:
    assert blocks("4.54.0", "5.23.0") and blocks("4.54.0", "4.54.0")
    assert not blocks("5.0.0", "4.57.1") and not blocks("4.54.0", "4.53.3")
    assert not blocks("5.0.0", "not a version")


#: (file, line, code) the fixture holds, and the first release each blocks
LEGACY = "modeling_legacy.py"
EXPECTED = [
    (LEGACY, 9, "TB008", "4.35.0"),  # bloom's _expand_mask
    (LEGACY, 10, "TB008", "5.0.0"),  # is_torch_fx_available
    (LEGACY, 21, "TB002", "4.54.0"),
    (LEGACY, 22, "TB002", "4.54.0"),
    (LEGACY, 31, "TB001", "4.54.0"),
    (LEGACY, 32, "TB005", "5.0.0"),
    (LEGACY, 37, "TB001", "4.54.0"),
    (LEGACY, 39, "TB003", "4.54.0"),
    (LEGACY, 47, "TB007", "5.0.0"),  # config.max_length; config.pad_token_id (line 33) the tree's config takes
    (LEGACY, 50, "TB006", "4.44.0"),  # standardize_cache_format
    (LEGACY, 50, "TB006", "4.49.0"),  # _extract_past_from_model_output
    (LEGACY, 54, "TB004", "4.54.0"),
    ("modeling_modern.py", 20, "TB009", "5.0.0"),  # DynamicCache.from_legacy_cache, which 5.0.0 removed
]


def fixture_blockers(tmp_path: Path, release: str, origin: TargetOrigin = TargetOrigin.RELEASE) -> list[tuple]:
    tree = tmp_path / "tree"
    shutil.copytree(FIXTURE, tree)
    checkout = resolve(tree, with_git=False)
    texts = {p: p.read_text(encoding="utf-8") for p in tree.glob("*.py")}
    found = find_blockers(checkout, texts, Target(origin, None, release))
    return [(b.file, b.line, b.code, b.release) for b in found]


@pytest.mark.parametrize("release", ["5.0.0", "5.23.0"])
def test_the_fixture_on_5x(tmp_path: Path, release: str) -> None:
    assert fixture_blockers(tmp_path, release) == EXPECTED


@pytest.mark.parametrize(
    ("release", "codes"),
    [
        ("4.46.3", {"TB006-4.44.0", "TB008-4.35.0"}),
        ("4.53.3", {"TB006-4.44.0", "TB006-4.49.0", "TB008-4.35.0"}),
        ("4.57.1", {"TB001", "TB002", "TB003", "TB004", "TB006-4.44.0", "TB006-4.49.0", "TB008-4.35.0"}),
    ],
)
def test_only_what_blocks_the_release_is_reported(tmp_path: Path, release: str, codes: set[str]) -> None:
    found = fixture_blockers(tmp_path, release)
    # a rule whose idioms stop at different releases is told apart by the release
    assert {f"{c}-{r}" if c in ("TB006", "TB008") else c for _, _, c, r in found} == codes
    assert all(blocks(r, release) for _, _, _, r in found)


def test_nothing_on_the_built_in_mixin_or_a_checkout(tmp_path: Path, mini_checkout: Path) -> None:
    assert fixture_blockers(tmp_path, "", TargetOrigin.BUILT_IN) == []
    checkout = resolve(mini_checkout, with_git=False)
    texts = {p: p.read_text(encoding="utf-8") for p in mini_checkout.rglob("*.py")}
    assert find_blockers(checkout, texts, Target(TargetOrigin.CHECKOUT, None, "5.23.0")) == ()


def test_names_the_target_no_longer_defines(tmp_path: Path) -> None:
    package = tmp_path / "transformers"
    (package / "utils").mkdir(parents=True)
    (package / "utils" / "__init__.py").write_text(
        "from .logging import get_logger\ntry:\n    import torch\nexcept ImportError:\n    torch = None\n"
        "def is_torch_available():\n    return True\n",
        encoding="utf-8",
    )
    (package / "lazy.py").write_text("def __getattr__(name):\n    return name\n", encoding="utf-8")
    assert module_names(package, "transformers.utils") == {"get_logger", "torch", "is_torch_available"}
    assert module_names(package, "transformers.lazy") is None  # cannot be read without importing it
    assert module_names(package, "transformers.gone") == frozenset()
    source = "from transformers.utils import is_torch_available, is_flash_attn_available\n"
    facts = TreeFacts(module_names=lambda module: module_names(package, module), release="5.23.0")
    [rule] = [r for r in RULES if r.code == "TB008"]
    found = run_rules([rule], {"m.py": source}, facts, "5.23.0")
    assert [(b.line, b.release, b.summary) for b in found] == [
        (1, "5.23.0", "imports a name the target's transformers no longer defines (is_flash_attn_available)")
    ]


def test_each_file_is_parsed_and_each_target_module_read_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A tree's files import from the same few modules of the target (its modeling_utils.py takes 0.2 s to read):
    each is read once a scan, and each file of the tree parsed once, for the tree's facts and the rules alike."""
    from codemod.analyse import blocker_rules, blockers

    tree = tmp_path / "tree"
    tree.mkdir()
    source = "from transformers.utils import is_torch_available, logging\n"
    texts = {tree / f"modeling_{n}.py": source for n in ("a", "b", "c")}
    for path, text in texts.items():
        path.write_text(text, encoding="utf-8")
    read: list[str] = []
    parsed: list[str] = []
    real_names, real_parse = blocker_rules.module_names, blockers._parse

    def names(package: Path, module: str) -> frozenset[str] | None:
        read.append(module)
        return real_names(package, module)

    def parse(text: str) -> ast.Module | None:
        parsed.append(text)
        return real_parse(text)

    monkeypatch.setattr(blocker_rules, "module_names", names)
    monkeypatch.setattr(blockers, "_parse", parse)
    package = tmp_path / "transformers"
    (package / "utils").mkdir(parents=True)
    (package / "utils" / "__init__.py").write_text("def is_torch_available():\n    return True\n", encoding="utf-8")
    found = find_blockers(resolve(tree, with_git=False), texts, Target(TargetOrigin.RELEASE, package, "5.0.0"))
    assert [(b.file, b.text) for b in found] == [(f"modeling_{n}.py", source.strip()) for n in ("a", "b", "c")]
    assert (read, len(parsed)) == (["transformers.utils"], 3)


def test_the_scan_reports_them(tmp_path: Path) -> None:
    """Through the CLI, judged against a stand-in 5.0.0 package (--mixin): JSON and table."""
    package = make_target_package(tmp_path / "target", "5.0.0", pretrained_generative=False)
    (package / "utils" / "__init__.py").write_text("logging = None\nis_torch_fx_available = None\n", encoding="utf-8")
    (package / "cache_utils.py").write_text("class Cache:\n    pass\n\n\nclass DynamicCache(Cache):\n    pass\n")
    tree = tmp_path / "tree"
    shutil.copytree(FIXTURE, tree)
    runner = CliRunner()
    done = runner.invoke(app, ["scan", str(tree), "--no-cache", "--mixin", str(package), "--format", "json"])
    assert done.exit_code == 0, done.output
    document = json.loads(done.stdout)
    found = [(b["file"], b["line"], b["code"], b["release"]) for b in document["blockers"]]
    # the stand-in package still defines is_torch_fx_available: what the wheels say about 5.0.0 still counts
    assert found == EXPECTED
    table = runner.invoke(app, ["scan", str(tree), "--no-cache", "--mixin", str(package)])
    assert "TB005 modeling_legacy.py:32: calls get_head_mask" in table.stdout
    assert "layer_past=past_key_values[i] if past_key_values else None" in table.stdout  # code, not markup
    assert "TB005 instead: drop the head mask" in table.stdout


def test_explain_a_blocker_rule() -> None:
    text = explain("TB001")
    assert text is not None and text.startswith("# TB001 legacy-cache-index")
    assert "Blocks from transformers 4.54.0" in text and "cache-branch" in text
    assert explain("legacy-cache-concat") is not None and explain("PI101") is None
    done = CliRunner().invoke(app, ["explain", "TB002"])
    assert done.exit_code == 0 and "past_key_value.update" in done.stdout


def test_the_tree_s_own_warnings_are_not_printed(recwarn: pytest.WarningsRecorder) -> None:
    [rule] = [r for r in RULES if r.code == "TB005"]
    found = run_rules(
        [rule], {"m.py": 'PATTERN = "\\d+"\nhead_mask = self.get_head_mask(h, 2)\n'}, TreeFacts(), "5.0.0"
    )
    assert [b.line for b in found] == [2]
    assert not [w for w in recwarn if issubclass(w.category, (DeprecationWarning, SyntaxWarning))]
