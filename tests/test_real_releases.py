"""Integration: scan real transformers releases and check the acceptance numbers.

Each release is fetched from PyPI once per machine by ``codemod.fetch.release_checkout`` into the
*default* cache dir (so every test run, and every xdist worker, shares one download; the fetch is
lock-safe), then scanned. Counts are computed from the ``ScanResult`` / its JSON document, and where
possible cross-checked against an independent walk of the source with ``ast``.
"""

from __future__ import annotations

import ast
import functools
import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest

from codemod.analyse.scan import ScanResult, scan
from codemod.checkout import resolve
from codemod.fetch import release_checkout
from codemod.publish.report import scan_document, to_json
from tests.goldens import golden_mismatch, golden_path, normalise_json

pytestmark = [pytest.mark.network, pytest.mark.slow]

METHOD = "prepare_inputs_for_generation"
#: a PyTorch modeling file directly in a model's folder (not below models/deprecated)
MODELING = re.compile(r"^src/transformers/models/[^/]+/modeling_(?!tf_|flax_)[^/]+\.py$")
GENERATION = re.compile(r"^src/transformers/models/[^/]+/generation_[^/]+\.py$")
DEPRECATED = re.compile(r"^src/transformers/models/deprecated/[^/]+/modeling_(?!tf_|flax_)[^/]+\.py$")
MIXIN = "src/transformers/generation/utils.py"


@dataclass(frozen=True)
class Release:
    version: str
    root: Path
    result: ScanResult
    document: dict

    @property
    def findings(self) -> list[dict]:
        return self.document["findings"]


_RELEASES: dict[str, Release] = {}


def _release(version: str) -> Release:
    if version not in _RELEASES:
        checkout = resolve(release_checkout(version))  # the default cache dir: downloaded once per machine
        result = scan(checkout)
        _RELEASES[version] = Release(version, checkout.root, result, scan_document(result))
    return _RELEASES[version]


@pytest.fixture(scope="session")
def v4452() -> Release:
    return _release("4.45.2")


@pytest.fixture(scope="session")
def v4463() -> Release:
    return _release("4.46.3")


@pytest.fixture(scope="session")
def v5230() -> Release:
    return _release("5.23.0")


@pytest.fixture(scope="session", params=["4.45.2", "4.46.3", "5.23.0"])
def release(request: pytest.FixtureRequest) -> Release:
    return _release(request.param)


@functools.cache
def class_overrides(root: Path) -> frozenset[tuple[str, str]]:
    """(file, class) of every top-level class below ``models/`` whose body defines the method (ast, no tool code)."""
    found = set()
    for path in sorted((root / "src" / "transformers" / "models").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        if METHOD not in text:
            continue
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and any(
                isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef)) and m.name == METHOD for m in node.body
            ):
                found.add((path.relative_to(root).as_posix(), node.name))
    return frozenset(found)


def method_markers(root: Path, files: set[str]) -> int:
    """How many ``# Copied from`` comments sit right above the method (or its decorators) in ``files``."""
    count = 0
    for rel in sorted(files):
        text = (root / rel).read_text(encoding="utf-8")
        lines = text.splitlines()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.FunctionDef) and node.name == METHOD:
                first = min([d.lineno for d in node.decorator_list] + [node.lineno])
                above = {first - 1, node.lineno - 1} - {0}
                count += any(re.match(r"\s*#\s*Copied from\s", lines[n - 1]) for n in above)
    return count


# --------------------------------------------------------------------------------------------- every release


def test_nothing_is_silently_ignored(release: Release) -> None:
    """Every class that defines the method is a finding, a skipped TF/Flax class, or in a file with an error."""
    findings = {(f["file"], f["class"]) for f in release.findings}
    skipped = {(s["path"], c) for s in release.document["skipped"] for c in s["classes"]}
    errors = {e["path"] for e in release.document["errors"]}
    defined = {(path, cls) for path, cls in class_overrides(release.root) if path not in errors}
    assert not findings & skipped
    assert findings | skipped == defined


def test_every_finding_is_explained(release: Release) -> None:
    # a category is what the override does, an action what the tool does (docs/scan.md):
    # a generic one is reduced when a guard stays in front of super(); a bespoke one is reduced when its own
    # handling stays in front of super(), and deleted when a difference in the standard flow is all it has
    actions = {
        "generic": {"delete", "keep", "reduce"},
        "kwargs-forwarding": {"reduce", "keep"},
        "bespoke": {"keep", "reduce", "delete"},
    }
    for finding in release.findings:
        where = f"{finding['file']}::{finding['class']}"
        assert finding["category"] in actions, where
        assert finding["action"] in actions[finding["category"]], where
        assert finding["reasons"], f"{where} has no reason"
        assert all(r["text"] for r in finding["reasons"]), where
        if finding["category"] == "bespoke":
            kinds = {r["kind"] for r in finding["reasons"]}
            said = any(r["kind"] == "note" and r["text"].startswith("bespoke") for r in finding["reasons"])
            assert kinds & {"bespoke", "unrecognised"} or said, (
                f"{where} is bespoke without a bespoke or unrecognised reason, or a note saying why"
            )
        if finding["action"] == "delete" and finding["category"] == "bespoke":
            assert {r["kind"] for r in finding["reasons"]} & {"difference"}, (
                f"{where}: deleted as bespoke without a difference"
            )


def test_json_paths_are_relative(release: Release) -> None:
    text = to_json(release.result)
    assert text.count(str(release.root)) == 1  # checkout.root, and nowhere else
    for finding in release.findings:
        assert (release.root / finding["file"]).is_file()


def test_git_head_is_the_pristine_release(release: Release) -> None:
    git = release.document["checkout"]["git"]
    assert git is not None and git["branch"] == "main" and git["dirty"] is False
    assert re.fullmatch(r"[0-9a-f]{40}", git["head"])


# --------------------------------------------------------------------------------------------- 4.45.2


def test_4_45_2_override_counts(v4452: Release) -> None:
    modeling = [f for f in v4452.findings if MODELING.match(f["file"])]
    deprecated = [f for f in v4452.findings if DEPRECATED.match(f["file"])]
    assert len(modeling) == 149
    assert len(deprecated) == 10
    assert all(f["deprecated"] for f in deprecated) and not any(f["deprecated"] for f in modeling)
    assert all(f["file_kind"] == "modeling" for f in modeling + deprecated)
    assert v4452.document["summary"]["deprecated"] == 10
    # the same numbers from the source alone
    defined = class_overrides(v4452.root)
    assert sum(1 for path, _ in defined if MODELING.match(path)) == 149
    assert sum(1 for path, _ in defined if DEPRECATED.match(path)) == 10


def test_4_45_2_method_copy_markers(v4452: Release) -> None:
    method = [f for f in v4452.findings if f["copied_from"] and f["copied_from"]["scope"] == "method"]
    assert len(method) == 25
    assert method_markers(v4452.root, {f["file"] for f in v4452.findings if f["file_kind"] == "modeling"}) == 25
    flagged = {(f["model"], f["copied_from"]["status"]) for f in method if f["copied_from"]["status"] != "consistent"}
    assert flagged == {("nllb_moe", "broken")}
    nllb = next(f for f in method if f["model"] == "nllb_moe")["copied_from"]
    assert nllb["target"].startswith("transfomers.") and "'transfomers' is not 'transformers'" in nllb["detail"]
    # MarkupLM names BertModel.prepare_inputs_for_generation, which BertModel does not define: check_copies, reading
    # the file line by line, compares it with the next class's, BertLMHeadModel's, and so does the scan
    markuplm = next(f for f in method if f["model"] == "markuplm")["copied_from"]
    assert (
        markuplm["status"] == "consistent"
        and markuplm["target_file"] == "src/transformers/models/bert/modeling_bert.py"
    )
    assert "check_copies finds BertLMHeadModel's" in markuplm["detail"]
    # the report's own tally agrees
    statuses = Counter(f["copied_from"]["status"] for f in v4452.findings if f["copied_from"])
    assert dict(statuses) == v4452.document["summary"]["copy_markers"]


def test_4_45_2_the_one_class_that_never_moves_cache_position_on(v4452: Release) -> None:
    """Of the 149 overrides' classes, only Musicgen-Melody's composite replaces ``_update_model_kwargs_for_generation``
    without calling super() (Mamba's and Falcon-Mamba's move ``cache_position`` on themselves; Qwen2-VL, Idefics,
    Idefics2, Mllama call super()): its override counts the past length off the legacy tuple cache, as the mixin the
    stub era gets does when it is given no ``cache_position``, so the reduction withholds the stale one from super()
    (its delay pattern and guidance kept in front), and the reason says why."""
    stale = sorted(f.override.class_name for f in v4452.result.findings if f.override.stale_cache_position)
    assert stale == ["MusicgenMelodyForConditionalGeneration"]
    [melody] = [f for f in v4452.findings if f["class"] == "MusicgenMelodyForConditionalGeneration"]
    assert melody["category"] == "bespoke" and melody["action"] == "reduce"
    assert any(
        r["text"].startswith(
            "cache_position withheld from super(): its class's _update_model_kwargs_for_generation never moves it on"
        )
        for r in melody["reasons"]
    )
    assert {"key": "cache_position", "how": "withheld", "source": ""} in melody["extras"]


def test_4_45_2_mixin_is_hoisted(v4452: Release) -> None:
    mixin = v4452.document["mixin"]
    assert mixin["hoisted"] is True
    assert mixin["source"].startswith("rules/generic_mixin.py")
    assert f"{MIXIN}:" in mixin["source"] and "stub" in mixin["source"]
    assert mixin["era"] == "cache-position"
    assert v4452.result.profile.hoisted is True
    assert {"slice-by-cache-position", "position-ids-from-mask", "inputs-embeds-first-step"} <= set(
        mixin["behaviours"]
    )
    assert mixin["unrecognised"] == []


def test_4_45_2_tf_and_flax_are_skipped(v4452: Release) -> None:
    skipped = v4452.document["skipped"]
    kinds = Counter(s["kind"] for s in skipped)
    assert set(kinds) == {"tensorflow", "flax"} and kinds["tensorflow"] > 0 and kinds["flax"] > 0
    for entry in skipped:
        name = Path(entry["path"]).name
        assert name.startswith("modeling_tf_" if entry["kind"] == "tensorflow" else "modeling_flax_"), entry
        assert entry["classes"] and entry["reason"]
    defined_tf_flax = {
        (path, cls) for path, cls in class_overrides(v4452.root) if re.search(r"/modeling_(tf|flax)_", path)
    }
    assert {(s["path"], c) for s in skipped for c in s["classes"]} == defined_tf_flax
    assert not any(f["file_kind"] in ("tensorflow", "flax") for f in v4452.findings)
    assert v4452.document["summary"]["skipped_files"] == len(skipped)


# --------------------------------------------------------------------------------------------- 4.46.3


def test_4_46_3_uses_its_own_mixin(v4463: Release) -> None:
    mixin = v4463.document["mixin"]
    assert v4463.result.profile.hoisted is False and mixin["hoisted"] is False
    assert mixin["era"] == "cache-position"
    assert re.fullmatch(rf"{re.escape(MIXIN)}:\d+", mixin["source"])
    assert {"slice-by-cache-position", "position-ids-from-mask", "inputs-embeds-first-step"} <= set(
        mixin["behaviours"]
    )


# --------------------------------------------------------------------------------------------- 5.23.0


def test_5_23_0_override_counts(v5230: Release) -> None:
    modeling = [f for f in v5230.findings if MODELING.match(f["file"])]
    generation = [f for f in v5230.findings if GENERATION.match(f["file"])]
    assert len(modeling) == 57
    assert len(generation) == 4
    assert all(f["file_kind"] == "generation" for f in generation)
    assert sum(1 for f in modeling if f["generated_from"] is not None) == 31
    assert not any(f["deprecated"] for f in v5230.findings)


def test_5_23_0_modular_sources(v5230: Release) -> None:
    modular = [f for f in v5230.findings if Path(f["file"]).name.startswith("modular_")]
    assert modular, "5.23.0 has overrides in modular files"
    assert all(f["file_kind"] == "modular" for f in modular)
    assert all(f["generated_from"] is None for f in modular)
    pairs = {(p.modular_file, p.generated_file) for p in v5230.result.index.modular_pairs}
    assert {f["file"] for f in modular} <= {m for m, _ in pairs}
    for finding in v5230.findings:
        origin = finding["generated_from"]
        if origin is None:
            continue
        where = f"{finding['file']}::{finding['class']}"
        assert origin["kind"] in ("modular-class", "inherited"), (where, origin)
        assert Path(origin["modular_file"]).name.startswith("modular_"), where
        assert (v5230.root / origin["modular_file"]).is_file(), where
        assert origin["source_file"] and (v5230.root / origin["source_file"]).is_file(), where
        if origin["kind"] == "modular-class":
            # the modular class defines the method: it is a finding of its own, paired with this file
            assert (origin["modular_file"], finding["file"]) in pairs, where
            assert origin["source_file"] == origin["modular_file"], where


def test_5_23_0_mixin_is_its_own(v5230: Release) -> None:
    mixin = v5230.document["mixin"]
    assert mixin["hoisted"] is False and v5230.result.profile.hoisted is False
    assert re.fullmatch(rf"{re.escape(MIXIN)}:\d+", mixin["source"])
    assert "pixel_values" in mixin["first_step_only_inputs"]


def test_5_23_0_mixin_era(v5230: Release) -> None:
    mixin = v5230.document["mixin"]
    assert mixin["era"] == "next-sequence-length"
    assert "slice-by-next-sequence-length" in mixin["behaviours"]


# --------------------------------------------------------------------------------------------- goldens


@pytest.mark.parametrize("version", ["4.45.2", "5.23.0"])
def test_release_matches_golden(version: str) -> None:
    release = _release(version)
    actual = normalise_json(to_json(release.result), release.root)
    problem = golden_mismatch(actual, golden_path(version))
    if problem:
        pytest.fail(problem, pytrace=False)
