"""``apply --verify --hooks``: the hooks the migrated tree offers once verification's repairs are written.

Verification repairs write the same few lines into many reductions (4.45's BERT-family decoders drop the
encoder states their closed dicts never passed). The first pass cannot see those repeated bodies: the
pristine tree has none. The second pass scans the tree the first left, mines its hooks, changes only the
members, and verifies them against the original code; a member that does not verify goes back to what the
first pass made of it. Verification is faked here (``migrate.verify_change``): these tests are about what
the two passes write and report.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from codemod import migrate
from codemod.analyse.classify import Action
from codemod.checkout import resolve
from codemod.contracts import HeldCause, Repair, ScenarioStatus, Verdict
from codemod.migrate import MigrationOptions, run_migration_on
from codemod.transform.formatting import fitted_mark
from codemod.transform.plan import Edit, EditKind, Plan, Shard
from codemod.verify.compare import ClassVerdict, ScenarioOutcome
from codemod.verify.session import VerifyReport

from .conftest import MINI_CHECKOUT
from .test_plan import PKG, checkout_copy

#: three llama-like models, each its own (no copy markers): generic, deleted by the first pass
MODELS = ("carp", "dace", "eel")
OTTER_LIKE = (MINI_CHECKOUT / PKG / "otter" / "modeling_otter.py").read_text(encoding="utf-8")


def _ids() -> list[str]:
    return [f"{PKG}/{m}/modeling_{m}.py::{m.capitalize()}ForCausalLM" for m in MODELS]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    files = {f"{m}/modeling_{m}.py": OTTER_LIKE.replace("Otter", m.capitalize()) for m in MODELS}
    return checkout_copy(tmp_path / "co", files)


def _fake_verification(
    monkeypatch: pytest.MonkeyPatch, *, hook_fails: str | None = None, trim_fails: bool = False
) -> list[set[str]]:
    """Every deletion differs by a token_type_ids the mixin passes and the old dicts did not (repaired by a
    pop); in the hooks pass, ``hook_fails`` differs (and, with ``trim_fails``, again when it is trimmed)."""
    rounds: list[set[str]] = []

    def verify_change(checkout, targets, **kwargs):  # type: ignore[no-untyped-def]
        rounds.append({t.override_id for t in targets})

        def verdict(oid: str) -> ClassVerdict:
            if len(rounds) == 1 and oid in _ids():
                return ClassVerdict(
                    oid,
                    Verdict.DIFFERS,
                    (
                        ScenarioOutcome(
                            "greedy", ScenarioStatus.DIFFERS, "keys", repair=Repair(remove=("token_type_ids",))
                        ),
                    ),
                )
            if (len(rounds) == 3 or (len(rounds) == 4 and trim_fails)) and oid == hook_fails:
                return ClassVerdict(oid, Verdict.DIFFERS, detail="greedy: tokens differ")
            return ClassVerdict(oid, Verdict.IDENTICAL)

        return VerifyReport(
            tuple(verdict(t.override_id) for t in targets), tuple(targets), (), "cpu", "python", 1.0, "HEAD"
        )

    monkeypatch.setattr(migrate, "verify_change", verify_change)
    return rounds


def _class_source(root: Path, model: str) -> str:
    text = (root / PKG / model / f"modeling_{model}.py").read_text(encoding="utf-8")
    cls = next(n for n in ast.parse(text).body if isinstance(n, ast.ClassDef) and n.name.endswith("ForCausalLM"))
    return ast.get_source_segment(text, cls) or ""


def test_the_repairs_repeated_across_models_become_a_hook(tree: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    rounds = _fake_verification(monkeypatch)
    run = run_migration_on(resolve(tree, with_git=False), MigrationOptions(hooks=True))
    # the deletions, the repaired reductions, then the hook's members against the original code
    assert len(rounds) == 3 and set(_ids()) <= rounds[2]
    actions = dict(run.final.plan.actions)
    assert [actions[oid] for oid in _ids()] == [Action.DELETE] * 3
    for model in MODELS:
        source = _class_source(tree, model)
        assert "def prepare_inputs_for_generation" not in source
        assert '_generation_dropped_inputs = ("token_type_ids",)' in source
    mixin = (tree / "src/transformers/generation/utils.py").read_text(encoding="utf-8")
    assert "_generation_dropped_inputs = ()" in mixin and "for name in self._generation_dropped_inputs:" in mixin
    assert not run.reverted
    # one change of the pristine tree: each file from its original text to its last one
    by_path = {r.path: r for r in run.final.rewrites}
    carp = by_path[f"{PKG}/carp/modeling_carp.py"]
    assert b"prepare_inputs_for_generation" in carp.old and b"prepare_inputs_for_generation" not in carp.new
    assert run.final.summary(run.result)["deleted"] >= 3


def test_a_member_whose_deletion_does_not_verify_is_trimmed_instead(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its signature may be what generate() reads (inputs_embeds it refused, a default a composite relied on): the
    trim keeps it, loses only the hooked statements, and its mark says what is left."""
    rounds = _fake_verification(monkeypatch, hook_fails=_ids()[0])
    run = run_migration_on(resolve(tree, with_git=False), MigrationOptions(hooks=True))
    assert rounds[3] == {_ids()[0]}  # the trim, verified on its own
    actions = dict(run.final.plan.actions)
    assert [actions[oid] for oid in _ids()] == [Action.REDUCE, Action.DELETE, Action.DELETE]
    source = _class_source(tree, MODELS[0])
    assert '_generation_dropped_inputs = ("token_type_ids",)' in source
    assert "# Overwritten -- keeps its signature for generate()" in source
    assert "model_inputs.pop" not in source and "def prepare_inputs_for_generation(self, input_ids" in source
    assert not run.reverted


def test_a_member_whose_trim_does_not_verify_either_keeps_the_first_pass_and_the_hook_goes_with_too_few(
    tree: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_verification(monkeypatch, hook_fails=_ids()[0], trim_fails=True)
    run = run_migration_on(resolve(tree, with_git=False), MigrationOptions(hooks=True))
    actions = dict(run.final.plan.actions)
    # the failing member, and the two a hook of fewer than three models is not worth adding for
    assert [actions[oid] for oid in _ids()] == [Action.REDUCE] * 3
    held = {h.subject: h for h in run.reverted}
    assert held[_ids()[0]].cause is HeldCause.NOT_VERIFIED
    assert {held[oid].cause for oid in _ids()[1:]} == {HeldCause.HOOK_TOO_SMALL}
    assert all("what the first pass made of it stays" in held[oid].detail for oid in _ids())
    for model in MODELS:
        source = _class_source(tree, model)
        assert 'model_inputs.pop("token_type_ids", None)' in source and "_generation_dropped_inputs" not in source
    assert "_generation_dropped_inputs" not in (tree / "src/transformers/generation/utils.py").read_text(
        encoding="utf-8"
    )


@pytest.mark.parametrize(
    ("mark", "hooked", "reworded"),
    [
        # Fuyu: its first-step inputs are the hook's now, its own cut of the ids stays
        (
            "image_patches only on the first step; input_ids cut to the last token",
            {"image_patches"},
            "input_ids cut to the last token",
        ),
        # a key named inside a phrase about another key is not that phrase's key
        (
            "position_ids from attention_mask; drops head_mask",
            {"attention_mask"},
            "position_ids from attention_mask; drops head_mask",
        ),
        ("image_patches only on the first step", {"image_patches"}, ""),
        (
            "drops head_mask; no pixel_values after the first step; input_ids cut to the last token",
            {"head_mask", "pixel_values"},
            "input_ids cut to the last token",
        ),
        # a mark read back from a tree, cut to fit its line: the cut is no phrase of its own
        ("no image_patches after the first step; …", {"image_patches"}, ""),
    ],
)
def test_a_trim_keeps_the_phrases_of_the_first_pass_mark_no_hook_does(
    mark: str, hooked: set[str], reworded: str
) -> None:
    assert migrate.reworded_mark(mark, hooked) == reworded


def test_a_later_pass_rewords_the_mark_the_first_composed_not_the_cut_one() -> None:
    """Fuyu on 4.45.2: its first-pass mark is too long for its line (the tree has it cut after its hooked phrases);
    the trim re-words the whole one, keeping its own cut of the ids."""
    whole = (
        "no image_patches after the first step; no image_patches_indices after the first step; "
        "input_ids cut to the last token; position_ids cut to the last token"
    )
    # as the planner writes a reduction: its new body, then a MARK edit with the reason it composed
    body = "return super().prepare_inputs_for_generation(input_ids, **kwargs)\n"
    reduce = Edit("m.py", "FuyuForCausalLM", EditKind.REDUCE, "m.py::FuyuForCausalLM", "reduced", text=body)
    fuyu_mark = Edit("m.py", "FuyuForCausalLM", EditKind.MARK, "m.py::FuyuForCausalLM", "stays: marked", text=whole)
    mark = Edit("m.py", "Kept", EditKind.MARK, "m.py::Kept", "kept", text="its own cache")
    plan = Plan(
        shards=(Shard("s", "override", ("m.py::FuyuForCausalLM", "m.py::Kept"), (reduce, fuyu_mark, mark)),),
        hoist=None,
        held=(),
        actions=(),
    )
    marks = migrate.composed_marks(plan)
    assert marks == {"m.py::FuyuForCausalLM": whole, "m.py::Kept": "its own cache"}
    assert fitted_mark(f"# Overwritten -- {whole}", 8).endswith("after the first step; …")
    assert (
        migrate.reworded_mark(marks["m.py::FuyuForCausalLM"], {"image_patches", "image_patches_indices"})
        == "input_ids cut to the last token; position_ids cut to the last token"
    )
