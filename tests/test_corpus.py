"""The corpus benchmark's pure parts: the manifest, the tiny configs, the diff bookkeeping and the table."""

from __future__ import annotations

import ast
import copy
from typing import Any

import pytest

from bench.corpus import (
    MANIFEST,
    REPO,
    ManifestError,
    load_manifest,
    merge_results,
    parse_manifest,
    render_markdown,
    shrink_config,
)
from bench.corpus_runs import changed_old_lines, compare, idiom_outcomes, scan_facts, touched_classes

COMMIT = "0123456789abcdef0123456789abcdef01234567"
ENTRY: dict[str, Any] = {
    "name": "tiny",
    "family": "Tiny",
    "repo": "someone/tiny",
    "commit": COMMIT,
    "files": ["config.json", "modeling_tiny.py"],
    "written_for": "4.33.1",
}


def test_the_committed_manifest_parses_with_ten_families_pinned() -> None:
    models = load_manifest(MANIFEST)
    assert len({m.family for m in models}) >= 10
    assert all(len(m.commit) == 40 for m in models)


def test_a_manifest_entry_gets_its_defaults() -> None:
    (model,) = parse_manifest({"models": [ENTRY]})
    assert (model.folder, model.requirements, model.config, model.files) == (
        "",
        (),
        {},
        ("config.json", "modeling_tiny.py"),
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"commit": "main"}, "40 hex digits"),
        ({"written_for": "latest"}, "a release like"),
        ({"files": ["modeling_tiny.py"]}, "config.json"),
        ({"repo": "tiny"}, "owner/name"),
        ({"family": None}, "missing family"),
    ],
)
def test_a_bad_manifest_entry_is_refused(change: dict[str, Any], message: str) -> None:
    entry = {k: v for k, v in {**ENTRY, **change}.items() if v is not None}
    with pytest.raises(ManifestError, match=message):
        parse_manifest({"models": [entry]})


def test_model_names_are_unique() -> None:
    with pytest.raises(ManifestError, match="unique: tiny"):
        parse_manifest({"models": [ENTRY, ENTRY]})


# ------------------------------------------------------------------------------------------- tiny configs

LLAMA_LIKE = {
    "architectures": ["InternLMForCausalLM"],
    "auto_map": {"AutoModelForCausalLM": "modeling_internlm.InternLMForCausalLM"},
    "model_type": "internlm",
    "hidden_size": 5120,
    "intermediate_size": 13824,
    "num_attention_heads": 40,
    "num_key_value_heads": 40,
    "num_hidden_layers": 60,
    "max_position_embeddings": 4096,
    "vocab_size": 103168,
    "pad_token_id": 0,
    "torch_dtype": "bfloat16",
    "rope_scaling": None,
}


@pytest.mark.parametrize(
    ("before", "after"),
    [
        # sizes shrink, architecture keys stay, multi-head attention stays multi-head
        (
            LLAMA_LIKE,
            {
                **LLAMA_LIKE,
                "hidden_size": 96,
                "intermediate_size": 192,
                "num_attention_heads": 3,
                "num_key_value_heads": 3,
                "num_hidden_layers": 3,
                "max_position_embeddings": 256,
                "vocab_size": 160,
                "torch_dtype": "float32",
            },
        ),
        # grouped-query attention stays grouped; GPT-style names; special ids past the vocabulary come inside it
        (
            {
                "n_embd": 4096,
                "n_head": 32,
                "num_key_value_heads": 8,
                "n_layer": 34,
                "vocab_size": 107008,
                "bos_token_id": 106028,
                "eos_token_id": [106068, 2],
                "n_ctx": 128,
                "rotary_dim": 64,
            },
            {
                "n_embd": 96,
                "n_head": 3,
                "num_key_value_heads": 1,
                "n_layer": 3,
                "vocab_size": 160,
                "bos_token_id": 1,
                "eos_token_id": [2, 2],
                "n_ctx": 128,
                "rotary_dim": 8,
            },
        ),
        # a quantisation config is dropped; booleans and None are never taken for sizes
        (
            {"hidden_size": True, "n_inner": None, "quantization_config": {"quant_method": "fp8"}},
            {"hidden_size": True, "n_inner": None},
        ),
    ],
)
def test_shrink_config(before: dict[str, Any], after: dict[str, Any]) -> None:
    assert shrink_config(before) == after


def test_overrides_merge_nested_keys_and_leave_the_input_alone() -> None:
    config = {"d_model": 3072, "attn_config": {"attn_impl": "triton", "alibi": True, "kv_n_heads": 8}}
    kept = copy.deepcopy(config)
    shrunk = shrink_config(config, {"attn_config": {"attn_impl": "torch", "kv_n_heads": 2}, "use_flash_attn": False})
    assert shrunk == {
        "d_model": 96,
        "attn_config": {"attn_impl": "torch", "alibi": True, "kv_n_heads": 2},
        "use_flash_attn": False,
    }
    assert config == kept


# ------------------------------------------------------------------------------------------- diffs

PATCH = """\
--- a/modeling_tiny.py
+++ b/modeling_tiny.py
@@ -40,7 +40,2 @@ class TinyForCausalLM:
-    def prepare_inputs_for_generation(self, input_ids, **kwargs):
@@ -90 +85,0 @@
-        return x
"""
FINDINGS = [
    {"file": "modeling_tiny.py", "class": "TinyForCausalLM", "line": 41, "end_line": 50},
    {"file": "modeling_tiny.py", "class": "TinyModel", "line": 60, "end_line": 70},
    {"file": "other.py", "class": "OtherForCausalLM", "line": 40, "end_line": 50},
    {"file": "modeling_tiny.py", "class": "LastForCausalLM", "line": 88, "end_line": 95},
]


def test_a_patch_names_the_overrides_whose_lines_it_changes() -> None:
    assert changed_old_lines(PATCH) == {"modeling_tiny.py": set(range(40, 47)) | {90}}
    assert touched_classes(PATCH, FINDINGS) == ["TinyForCausalLM", "LastForCausalLM"]


def test_an_empty_patch_touches_nothing() -> None:
    assert touched_classes("", FINDINGS) == []


def test_scan_facts_count_proposals_and_blockers() -> None:
    finding = {"file": "m.py", "class": "A", "line": 1, "end_line": 2, "category": "generic", "action": "delete"}
    document = {
        "findings": [finding, {**finding, "class": "B", "action": "keep"}, {**finding, "action": "reduce"}],
        "blockers": [
            {"code": "TB001", "file": "m.py", "line": 5, "text": "past[0]"},
            {"code": "TB001", "file": "m.py", "line": 9, "text": "past[1]"},
            {"code": "TB004", "file": "m.py", "line": 20, "text": "def _reorder_cache"},
        ],
    }
    facts = scan_facts(document)
    assert (facts["overrides"], facts["proposed"], facts["blockers"]) == (3, 2, {"TB001": 2, "TB004": 1})
    assert facts["blocker_lines"][0] == "TB001 m.py:5: past[0]"


@pytest.mark.parametrize(
    ("side", "same"),
    [
        ({"tokens": {"cache": [[1, 2]], "no_cache": [[1, 2]]}}, True),
        ({"tokens": {"cache": [[1, 3]], "no_cache": [[1, 2]]}}, False),
        # only the modes both sides ran are compared
        ({"tokens": {"no_cache": [[1, 2]]}, "errors": {"cache": "TypeError"}}, True),
        # nothing ran: no claim either way
        ({"tokens": {}, "errors": {"load": "ImportError"}}, None),
    ],
)
def test_compare_with_the_reference(side: dict[str, Any], same: bool | None) -> None:
    reference = {"tokens": {"cache": [[1, 2]], "no_cache": [[1, 2]]}}
    assert compare(side, reference)["same_as_reference"] is same


def test_without_a_reference_there_is_no_claim() -> None:
    assert compare({"tokens": {"cache": [[1]]}}, None)["same_as_reference"] is None


# ------------------------------------------------------------------------------------------- the table


def _results() -> dict[str, Any]:
    ran = {"tokens": {"cache": [[1]], "no_cache": [[1]]}, "errors": {}}
    return {
        "tool_commit": "abc1234",
        "date": "2026-12-07 20:00 UTC",
        "models": {
            "tiny": {
                "family": "Tiny",
                "written_for": "4.33.1",
                "reference": ran,
                "targets": {
                    "5.23.0": {
                        "scan": {"overrides": 1, "proposed": 0, "blockers": {"TB001": 3, "TB004": 1}},
                        "apply": {"verdicts": {}, "written": 0},
                        "before": {
                            "errors": {"cache": "TypeError: x at m.py:3: a | b"},
                            "tokens": {"no_cache": [[1]]},
                            "same_as_reference": True,
                        },
                        "after": {
                            "tokens": {},
                            "errors": {"cache": "TypeError: x at m.py:3: a | b", "no_cache": "AttributeError: y"},
                        },
                    },
                    "4.46.3": {
                        "scan": {"overrides": 1, "proposed": 1, "blockers": {}},
                        "apply": {"verdicts": {"identical": 1}, "written": 1},
                        "before": {**ran, "same_as_reference": True},
                        "after": {**ran, "same_as_reference": False},
                    },
                },
            }
        },
    }


def test_the_table_has_a_row_per_model_and_target_in_release_order() -> None:
    table = render_markdown(_results())
    rows = [line for line in table.splitlines() if line.startswith("| Tiny")]
    assert rows == [
        "| Tiny | `tiny` | 4.33.1 | 4.46.3 | 1 | none | 1 / 1 | 1 identical | ✓ | ✓ same | ✓ differs |",
        "| Tiny | `tiny` | 4.33.1 | 5.23.0 | 1 | TB001×3, TB004 | 0 / 0 | — | ✓ | ✗ cache; no cache same "
        "| ✗ cache + no cache |",
    ]
    assert "`abc1234`" in table


def test_the_table_lists_what_still_fails_after_apply_with_pipes_escaped() -> None:
    table = render_markdown(_results())
    assert "- `tiny` on 5.23.0, after, cache: TypeError: x at m.py:3: a \\| b" in table
    assert "- `tiny` on 5.23.0, after, no cache: AttributeError: y" in table


def test_merging_results_replaces_a_model_and_keeps_the_others() -> None:
    old = {"tool_commit": "old", "models": {"a": {"targets": {"4.46.3": 1, "5.23.0": 2}}, "b": {"targets": {}}}}
    new = {"tool_commit": "new", "models": {"a": {"targets": {"5.23.0": 3}}}}
    merged = merge_results(old, new)
    assert merged["tool_commit"] == "new"
    assert merged["models"]["a"]["targets"] == {"4.46.3": 1, "5.23.0": 3}
    assert merged["models"]["b"] == {"targets": {}}


def test_tiny_sizes_differ_from_the_verifiers_own() -> None:
    """The verifier passes its config class only the keys its shrinking changes: a config.json already at
    its sizes would be rebuilt from the class defaults, which no real repository's config.json triggers."""
    # read, not imported: the verifier's tiny package imports torch, which the tool's own venv lacks
    source = (REPO / "codemod" / "verify" / "tiny" / "shrink.py").read_text()
    sizes = next(
        ast.literal_eval(node.value)
        for node in ast.parse(source).body
        if isinstance(node, ast.AnnAssign)
        and isinstance(node.target, ast.Name)
        and node.target.id == "SIZES"
        and node.value is not None
    )
    shrunk = shrink_config(LLAMA_LIKE)
    first = sizes[0]
    assert shrunk["hidden_size"] != first["hidden"]
    assert shrunk["num_hidden_layers"] != first["layers"]
    assert shrunk["num_attention_heads"] != first["heads"]


def test_the_summary_counts_written_edits_and_models_that_generate_as_their_reference() -> None:
    table = render_markdown(_results())
    assert "- **4.46.3**: 1 of 1 proposed edits written; 0 of 1 models generate as their reference" in table
    assert "(with and without the cache), 1 before." in table
    assert "- **5.23.0**: 0 of 0 proposed edits written; 0 of 1 models" in table


def test_idiom_outcomes_are_read_from_applys_lines_once_per_file() -> None:
    stderr = """\
[1/1] BaichuanForCausalLM: crashed (0 scenarios) elapsed 25s, ETA 0s
modeling_baichuan.py: its idiom fixes (TB001 x4, TB004) reverted: m.py::B: crashed: left-padded-batch
configuration_x.py: its idiom fixes (TB007) with XForCausalLM deleted kept: identical
reverted modeling_baichuan.py: its idiom fixes (TB001 x4, TB004) reverted: m.py::B: crashed: left-padded-batch
"""
    assert idiom_outcomes(stderr) == [
        {"file": "modeling_baichuan.py", "codes": "TB001 x4, TB004", "outcome": "reverted"},
        {"file": "configuration_x.py", "codes": "TB007", "outcome": "kept"},
    ]
