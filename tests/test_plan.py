"""``codemod.transform.plan``: from a scan's findings to the edits, on the fixture checkout and small synthetic models.

Every test scans a private copy of ``fixtures/mini_checkout`` (plus, where it needs them, model files
written here in the style of transformers' idioms) with ``codemod.analyse.scan.scan`` and plans it with
``make_plan`` (through ``codemod.transform.plan.initial_plan``, which supplies the mixin era and the modular
origins, when the test is not about those arguments).
"""

from __future__ import annotations

import ast
import dataclasses
import json
import textwrap
from pathlib import Path

import pytest

from codemod.analyse.analysis import Param
from codemod.analyse.classify import Action, Category, Extra
from codemod.analyse.copies import apply_replacements
from codemod.analyse.mixin import MIXIN_CLASS, Era
from codemod.analyse.scan import ScanResult, scan
from codemod.checkout import resolve
from codemod.contracts import ExtraHow, Held, HeldCause, ParamKind, Repair
from codemod.rules.generic_mixin import HOIST_SOURCE
from codemod.transform.formatting import BODY_INDENT, fitted_mark, laid_out
from codemod.transform.plan import Edit, EditKind, Plan, PlanOptions, initial_plan, make_plan, reduce_override
from codemod.transform.rewrite import rewrite_source

from .conftest import MINI_CHECKOUT, copy_fixture

PKG = "src/transformers/models"
MIXIN_FILE = "src/transformers/generation/utils.py"
OTTER = f"{PKG}/otter/modeling_otter.py::OtterForCausalLM"
BADGER = f"{PKG}/badger/modeling_badger.py::BadgerForCausalLM"
FERRET = f"{PKG}/ferret/modeling_ferret.py::FerretForCausalLM"
WEASEL = f"{PKG}/weasel/modeling_weasel.py::WeaselForCausalLM"
STOAT = f"{PKG}/stoat/modeling_stoat.py::StoatForCausalLM"
MINK = f"{PKG}/mink/modeling_mink.py::MinkForCausalLM"
LYNX = f"{PKG}/lynx/modeling_lynx.py::LynxForConditionalGeneration"
HERON = f"{PKG}/heron/modeling_heron.py::HeronForCausalLM"
HERON_MIXIN = f"{PKG}/heron/generation_heron.py::HeronGenerationMixin"
PUFFIN_CAUSAL = f"{PKG}/puffin/modeling_puffin.py::PuffinForCausalLM"
PUFFIN_SPEECH = f"{PKG}/puffin/modeling_puffin.py::PuffinForSpeechGeneration"
PUFFIN_SPEECH_MODULAR = f"{PKG}/puffin/modular_puffin.py::PuffinForSpeechGeneration"
DODO = f"{PKG}/deprecated/dodo/modeling_dodo.py::DodoForCausalLM"


# --------------------------------------------------------------------------------------------- helpers


def checkout_copy(dest: Path, models: dict[str, str] | None = None) -> Path:
    """A copy of the fixture checkout with extra files (paths below ``models/``, dedented text)."""
    root = copy_fixture(MINI_CHECKOUT, dest)
    for rel, text in (models or {}).items():
        path = root / PKG / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if not (path.parent / "__init__.py").exists():
            (path.parent / "__init__.py").write_text("", encoding="utf-8")
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return root


def scan_of(root: Path) -> ScanResult:
    return scan(resolve(root, with_git=False), use_cache=False, jobs=1)


def edits_by_override(plan: Plan) -> dict[str, list[EditKind]]:
    """Override id -> the kinds of the edits of its own change (not those another override's shard holds for it: a
    loose copy's marker dropped with the change check_copies compares it with)."""
    out: dict[str, list[EditKind]] = {}
    for e in plan.edits():
        if e.override_id is not None and e.shard is None:
            out.setdefault(e.override_id, []).append(e.kind)
    return out


def edit_of(plan: Plan, override_id: str, kind: EditKind) -> Edit:
    found = [e for e in plan.edits() if e.override_id == override_id and e.kind is kind]
    assert len(found) == 1, (override_id, kind, [(e.override_id, e.kind) for e in plan.edits()])
    return found[0]


def shard_of(plan: Plan, override_id: str):
    found = [s for s in plan.shards if override_id in s.members]
    assert len(found) == 1, override_id
    return found[0]


def held(plan: Plan) -> dict[str, str]:
    return {h.subject: h.detail for h in plan.held}


def causes(plan: Plan) -> dict[str, HeldCause]:
    return {h.subject: h.cause for h in plan.held}


def gone(*shards: str, why: str = "why", cause: HeldCause = HeldCause.WOULD_NOT_COMPILE) -> list[Held]:
    """What settling would drop: ``shards``, each with ``cause`` and ``why``."""
    return [Held(s, cause, why) for s in shards]


@pytest.fixture(scope="module")
def fixture_result(tmp_path_factory: pytest.TempPathFactory) -> ScanResult:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CODEMOD_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
        return scan_of(checkout_copy(tmp_path_factory.mktemp("plan") / "mini_checkout"))


@pytest.fixture(scope="module")
def fixture_plan(fixture_result: ScanResult) -> Plan:
    """The plan with the overrides that stay marked too (``--mark``), so that every decision shows."""
    return initial_plan(fixture_result, mark_kept=True)


@pytest.fixture(autouse=True)
def _private_cache(codemod_cache: Path) -> None:
    """Every test scans with a private cache dir (scans here never use the cache, but stay off the user's)."""


# --------------------------------------------------------------------------------------------- decisions

#: override -> the edits the fixture's plan makes to it
EXPECTED_EDITS = {
    OTTER: [EditKind.DELETE],
    BADGER: [EditKind.DELETE],
    FERRET: [EditKind.DELETE],
    WEASEL: [EditKind.DELETE],
    STOAT: [EditKind.DELETE],
    MINK: [EditKind.DELETE],
    DODO: [EditKind.DELETE],
    HERON_MIXIN: [EditKind.DELETE],
    PUFFIN_CAUSAL: [EditKind.DELETE],
    PUFFIN_SPEECH: [EditKind.DELETE],
    PUFFIN_SPEECH_MODULAR: [EditKind.DELETE],
    # llava-like: asks its language model; the reduction asks super() instead and keeps the rest
    LYNX: [EditKind.SWAP_DELEGATE, EditKind.MARK],
    HERON: [EditKind.MARK],
}


def test_fixture_edits_per_override(fixture_plan: Plan) -> None:
    assert edits_by_override(fixture_plan) == EXPECTED_EDITS
    assert fixture_plan.held == ()
    # no loose copy in the fixture: no edit is held for another override's change
    assert not [e for e in fixture_plan.edits() if e.shard]


@pytest.mark.parametrize(
    ("category", "action", "kinds"),
    [
        pytest.param(Category.GENERIC, Action.DELETE, [EditKind.DELETE], id="generic-deleted"),
        pytest.param(
            Category.KWARGS_FORWARDING,
            Action.REDUCE,
            [EditKind.SWAP_DELEGATE, EditKind.MARK],
            id="kwargs-forwarding-delegate-reduced-and-marked",
        ),
        pytest.param(Category.BESPOKE, Action.KEEP, [EditKind.MARK], id="bespoke-marked"),
        # Puffin's speech head never passes the position_ids its forward takes: not generic, but that difference is
        # all it has of its own, so the deletion stays planned and verification decides; nothing to mark
        pytest.param(Category.BESPOKE, Action.DELETE, [EditKind.DELETE], id="bespoke-deleted"),
    ],
)
def test_decision_per_category(
    fixture_result: ScanResult, fixture_plan: Plan, category: Category, action: Action, kinds: list[EditKind]
) -> None:
    """A category is what the override does, an action what the tool does: each pair the fixture has is planned
    the same way."""
    findings = [f for f in fixture_result.findings if f.category is category and f.action is action]
    assert findings
    edits = edits_by_override(fixture_plan)
    for f in findings:
        assert fixture_plan.action_of(f.override.id) is action
        assert edits[f.override.id] == kinds


def test_every_category_action_pair_of_the_fixture_is_tested(fixture_result: ScanResult) -> None:
    pairs = {(f.category, f.action) for f in fixture_result.findings}
    assert pairs == {
        (Category.GENERIC, Action.DELETE),
        (Category.KWARGS_FORWARDING, Action.REDUCE),
        (Category.BESPOKE, Action.KEEP),
        (Category.BESPOKE, Action.DELETE),
    }


def test_actions_cover_every_selected_finding(fixture_result: ScanResult, fixture_plan: Plan) -> None:
    assert {i for i, _ in fixture_plan.actions} == {f.override.id for f in fixture_result.findings}
    assert dict(fixture_plan.actions) == {f.override.id: f.action for f in fixture_result.findings}


def test_sub_model_delegate_is_swapped_for_super_and_the_mark_says_why(fixture_plan: Plan) -> None:
    assert edit_of(fixture_plan, LYNX, EditKind.SWAP_DELEGATE).text == ""
    assert (
        edit_of(fixture_plan, LYNX, EditKind.MARK).text
        == "asks super() instead of self.language_model; keeps its own input handling"
    )


def test_an_override_that_stays_is_marked_only_when_asked(fixture_result: ScanResult) -> None:
    """A comment-only edit is churn in a migration: without --mark the kept overrides get no edit,
    while a changed override still says why it is what it is."""
    plan = initial_plan(fixture_result)
    edits = edits_by_override(plan)
    assert HERON not in edits, "bespoke, kept: nothing written"
    assert EditKind.MARK in edits[LYNX], "reduced: the new body carries its reason"


def test_bespoke_mark_names_what_the_mixin_does_not_do(fixture_plan: Plan) -> None:
    mark = edit_of(fixture_plan, HERON, EditKind.MARK).text
    # the plan keeps the reason whole; the rewrite fits the comment to the file's line (formatting.fitted_mark)
    assert mark.startswith("model-specific input preparation (dummy_token = torch.full(") and "\n" not in mark
    assert mark.endswith("device=input_ids.device))")
    written = fitted_mark(f"# Overwritten -- {mark}", 8)
    assert 8 + len(written) <= 119 and written.endswith(" …")


def test_shards_partition_the_edits(fixture_plan: Plan) -> None:
    seen: set[str] = set()
    for shard in fixture_plan.shards:
        assert not seen & set(shard.members), "an override in two shards"
        seen |= set(shard.members)
        assert shard.edits, shard.id
        # each edit belongs to a member, or is held for one (a loose copy's marker, dropped with its change)
        assert {e.shard or e.override_id for e in shard.edits} <= set(shard.members)
        assert shard.id == shard.members[0] == min(shard.members)
    assert [s.id for s in fixture_plan.shards] == sorted(s.id for s in fixture_plan.shards)
    assert fixture_plan.edits()[0] is fixture_plan.hoist
    assert sum(len(s.edits) for s in fixture_plan.shards) + 1 == len(fixture_plan.edits())


def test_by_file_groups_every_edit(fixture_plan: Plan) -> None:
    files = fixture_plan.by_file()
    assert sum(len(v) for v in files.values()) == len(fixture_plan.edits())
    for path, edits in files.items():
        assert {e.file for e in edits} == {path}
    assert files[MIXIN_FILE] == [fixture_plan.hoist]


def test_copy_group_is_one_shard(fixture_plan: Plan) -> None:
    shard = shard_of(fixture_plan, OTTER)
    assert shard.kind == "copy-group"
    assert {OTTER, BADGER, FERRET, MINK, PUFFIN_CAUSAL} <= set(shard.members)
    assert STOAT not in shard.members  # its marker names a method that does not exist


def test_plan_is_deterministic(fixture_result: ScanResult, fixture_plan: Plan, tmp_path: Path) -> None:
    again = initial_plan(scan_of(checkout_copy(tmp_path / "again")), mark_kept=True)
    assert again.digest() == fixture_plan.digest()
    assert again == fixture_plan


# --------------------------------------------------------------------------------------------- hoist


def test_hoist_installs_the_generic_method_into_the_stub_mixin(fixture_plan: Plan) -> None:
    hoist = fixture_plan.hoist
    assert hoist is not None
    assert (hoist.file, hoist.class_name, hoist.kind, hoist.override_id) == (
        MIXIN_FILE,
        MIXIN_CLASS,
        EditKind.HOIST,
        None,
    )
    assert hoist.text == HOIST_SOURCE


@pytest.mark.parametrize(
    ("only", "era", "mixin_file", "hoisted"),
    [
        pytest.param(["heronforcausallm"], Era.STUB, MIXIN_FILE, False, id="stub-but-nothing-changes"),
        pytest.param(["lynx"], Era.STUB, MIXIN_FILE, True, id="stub-and-a-reduction"),
        pytest.param(["otter"], Era.CACHE_POSITION, MIXIN_FILE, False, id="a-real-mixin-needs-no-hoist"),
        pytest.param(["otter"], Era.NEXT_SEQUENCE_LENGTH, MIXIN_FILE, False, id="5x-mixin"),
        pytest.param(["otter"], Era.STUB, None, False, id="no-mixin-file"),
    ],
)
def test_hoist_only_when_the_mixin_is_a_stub_and_something_changes(
    fixture_result: ScanResult, only: list[str], era: Era, mixin_file: str | None, hoisted: bool
) -> None:
    selected = fixture_result.select(only)
    plan = make_plan(selected.index, selected.findings, PlanOptions(mixin_era=era, mixin_file=mixin_file))
    assert (plan.hoist is not None) is hoisted
    if hoisted:
        assert plan.edits()[0] is plan.hoist


# --------------------------------------------------------------------------------------------- without


def test_without_drops_a_shard_and_the_hoist_when_nothing_changes(fixture_result: ScanResult) -> None:
    plan = initial_plan(fixture_result.select(["lynx", "heronforcausallm"]), mark_kept=True)
    assert plan.hoist is not None
    smaller = plan.without(gone(LYNX, why="lynx would not compile"))
    assert [s.id for s in smaller.shards] == [HERON]
    assert smaller.action_of(LYNX) is Action.KEEP
    assert smaller.held == (Held(LYNX, HeldCause.WOULD_NOT_COMPILE, "lynx would not compile"),)
    assert smaller.hoist is None, "nothing changes any more: the stub mixin stays"


def test_without_keeps_the_hoist_while_changes_remain(fixture_plan: Plan) -> None:
    smaller = fixture_plan.without(gone(LYNX))
    assert smaller.hoist == fixture_plan.hoist
    assert LYNX not in {m for s in smaller.shards for m in s.members}
    assert smaller.action_of(OTTER) is Action.DELETE


def test_without_holds_every_member_of_a_dropped_copy_group(fixture_plan: Plan) -> None:
    group = shard_of(fixture_plan, OTTER)
    smaller = fixture_plan.without(
        gone(group.id, why="its own", cause=HeldCause.COPY_WOULD_BREAK), "a copy would break"
    )
    for member in group.members:
        assert smaller.action_of(member) is Action.KEEP
        assert held(smaller)[member] == "a copy would break"  # the detail given, the shard's cause
        assert causes(smaller)[member] is HeldCause.COPY_WOULD_BREAK


def test_without_does_not_hold_what_was_kept_anyway(fixture_plan: Plan) -> None:
    smaller = fixture_plan.without(gone(HERON))
    assert HERON not in held(smaller)
    assert smaller.action_of(HERON) is Action.KEEP
    assert smaller.hoist == fixture_plan.hoist


def test_without_unknown_shard_is_the_same_plan(fixture_plan: Plan) -> None:
    assert fixture_plan.without(gone("no-such-shard")) == fixture_plan


# --------------------------------------------------------------------------------------------- generated files


def test_generated_override_follows_its_modular_source(fixture_plan: Plan) -> None:
    shard = shard_of(fixture_plan, PUFFIN_SPEECH)
    assert shard.kind == "modular"
    assert set(shard.members) == {PUFFIN_SPEECH, PUFFIN_SPEECH_MODULAR}
    assert [e.kind for e in shard.edits] == [EditKind.DELETE, EditKind.DELETE]
    assert fixture_plan.action_of(PUFFIN_SPEECH) is fixture_plan.action_of(PUFFIN_SPEECH_MODULAR) is Action.DELETE


#: Puffin's speech head, written so that it reduces to a super() call with nothing after it (a default of its own)
_PUFFIN_SPEECH_METHOD = (
    """
    def prepare_inputs_for_generation(self, input_ids, past_key_values=None, attention_mask=None, **kwargs):
        # Puffin's speech head decodes one frame per step
        if past_key_values is not None:
            input_ids = input_ids[:, -1:]
        return {"input_ids": input_ids, "past_key_values": past_key_values, "attention_mask": attention_mask}
""",
    """
    def prepare_inputs_for_generation(
        self, input_ids, past_key_values=None, attention_mask=None, cache_position=None, num_logits_to_keep=1, **kwargs
    ):
        # Puffin's speech head scores its last frame only
        if past_key_values is not None:
            input_ids = input_ids[:, cache_position]
        return {"input_ids": input_ids, "past_key_values": past_key_values, "attention_mask": attention_mask,
                "cache_position": cache_position, "num_logits_to_keep": num_logits_to_keep}
""",
)


def test_only_edits_outside_a_modular_family_return_the_super_call_directly(
    fixture_plan: Plan, tmp_path: Path
) -> None:
    """The converter inlines a modular source's top-level ``return super()...`` (and regenerates the files made from
    it): a family's reductions keep ``model_inputs = super()...`` and ``return model_inputs``; others return the
    call (the rewrite does it where nothing stands between the two)."""
    ending = {EditKind.REDUCE, EditKind.TRIM, EditKind.SWAP_DELEGATE}
    edits = [e for s in fixture_plan.shards if s.kind != "modular" for e in s.edits]
    assert any(e.kind in ending for e in edits)
    assert all(e.direct_return is (e.kind in ending) for e in edits)
    root = checkout_copy(tmp_path / "checkout")
    old, new = (textwrap.indent(textwrap.dedent(t).lstrip("\n"), "    ") for t in _PUFFIN_SPEECH_METHOD)
    for name in ("modular_puffin.py", "modeling_puffin.py"):
        path = root / PKG / "puffin" / name
        assert old in path.read_text(encoding="utf-8")
        path.write_text(path.read_text(encoding="utf-8").replace(old, new), encoding="utf-8")
    family = shard_of(initial_plan(scan_of(root)), PUFFIN_SPEECH)
    assert family.kind == "modular"
    assert [e.kind for e in family.edits if e.kind is not EditKind.MARK] == [EditKind.REDUCE, EditKind.REDUCE]
    assert not any(e.direct_return for e in family.edits)


def test_generated_override_inherited_from_another_model_follows_that_model(fixture_plan: Plan) -> None:
    """PuffinForCausalLM's method is the converter's copy of otter's: it goes when otter's goes."""
    assert shard_of(fixture_plan, PUFFIN_CAUSAL) is shard_of(fixture_plan, OTTER)
    assert edits_by_override(fixture_plan)[PUFFIN_CAUSAL] == [EditKind.DELETE]


def test_generated_override_is_held_when_its_source_is_not_in_the_run(fixture_result: ScanResult) -> None:
    plan = initial_plan(fixture_result.select(skip=["otter"]))
    assert plan.action_of(PUFFIN_CAUSAL) is Action.KEEP
    assert "which this run does not change" in held(plan)[PUFFIN_CAUSAL]
    assert causes(plan)[PUFFIN_CAUSAL] is HeldCause.SOURCE_NOT_CHANGED
    assert EditKind.DELETE not in edits_by_override(plan).get(PUFFIN_CAUSAL, [])


def test_held_generated_override_gets_no_edit_its_source_does_not_get(fixture_result: ScanResult) -> None:
    plan = initial_plan(fixture_result.select(skip=["otter"]))
    assert edits_by_override(plan).get(PUFFIN_CAUSAL, []) == []


def test_generated_and_modular_classified_differently_are_both_held(tmp_path: Path) -> None:
    root = checkout_copy(tmp_path / "co")
    generated = root / PKG / "puffin" / "modeling_puffin.py"
    text = generated.read_text(encoding="utf-8")
    old = "        # Puffin's speech head decodes one frame per step\n"
    assert old in text
    # the generated copy drifted: it now does something the mixin does not (as if edited by hand)
    generated.write_text(text.replace(old, old + "        input_ids = input_ids.flip(-1)\n"), encoding="utf-8")
    plan = initial_plan(scan_of(root))
    for oid in (PUFFIN_SPEECH, PUFFIN_SPEECH_MODULAR):
        assert plan.action_of(oid) is Action.KEEP
        assert EditKind.DELETE not in edits_by_override(plan).get(oid, [])
    assert "classifies differently" in held(plan)[PUFFIN_SPEECH_MODULAR]
    assert causes(plan)[PUFFIN_SPEECH_MODULAR] is HeldCause.SOURCE_DISAGREES


# --------------------------------------------------------------------------------------------- copies


def test_method_copy_kept_while_its_source_is_deleted_loses_its_marker(fixture_result: ScanResult) -> None:
    plan = initial_plan(fixture_result.select(skip=["badger"]))
    assert plan.action_of(OTTER) is Action.DELETE
    assert edits_by_override(plan)[BADGER] == [EditKind.DROP_MARKER]
    assert OTTER in edit_of(plan, BADGER, EditKind.DROP_MARKER).reason
    # ferret copies badger, and is deleted with its own marker: nothing to drop there
    assert edits_by_override(plan)[FERRET] == [EditKind.DELETE]


def test_class_level_copy_of_a_kept_source_is_held_and_ignored(fixture_result: ScanResult) -> None:
    """A class-level copy cannot lose a method its source keeps: the deletion is held, the method
    marked, and ``# Ignore copy`` keeps the marker's check passing."""
    plan = initial_plan(fixture_result.select(skip=["otter"]), mark_kept=True)
    assert plan.action_of(MINK) is Action.KEEP
    assert "class-level copy" in held(plan)[MINK]
    assert causes(plan)[MINK] is HeldCause.COPY_SOURCE_KEEPS
    assert sorted(edits_by_override(plan)[MINK]) == sorted([EditKind.MARK, EditKind.IGNORE_COPY])


def test_class_level_copy_kept_while_its_source_is_deleted_gets_ignore_copy(fixture_result: ScanResult) -> None:
    plan = initial_plan(fixture_result.select(skip=["mink"]))
    assert plan.action_of(OTTER) is Action.DELETE
    assert edits_by_override(plan)[MINK] == [EditKind.IGNORE_COPY]
    assert shard_of(plan, MINK) is shard_of(plan, OTTER)


NEWT = '''
"""Newt (synthetic): a bespoke override that names its model."""

import torch

from ...generation import GenerationMixin
from ...modeling_utils import PreTrainedModel


class NewtForCausalLM(PreTrainedModel, GenerationMixin):
    def forward(self, input_ids=None, past_key_values=None, attention_mask=None, **kwargs):
        return input_ids

    def prepare_inputs_for_generation(self, input_ids, past_key_values=None, attention_mask=None, **kwargs):
        input_ids = NewtShifter.shift(input_ids)
        return {"input_ids": input_ids, "past_key_values": past_key_values, "attention_mask": attention_mask}
'''

TOAD = '''
"""Toad (synthetic): a method-level copy of newt's override."""

import torch

from ...generation import GenerationMixin
from ...modeling_utils import PreTrainedModel


class ToadForCausalLM(PreTrainedModel, GenerationMixin):
    def forward(self, input_ids=None, past_key_values=None, attention_mask=None, **kwargs):
        return input_ids

    # Copied from transformers.models.newt.modeling_newt.NewtForCausalLM.prepare_inputs_for_generation with Newt->Toad
    def prepare_inputs_for_generation(self, input_ids, past_key_values=None, attention_mask=None, **kwargs):
        input_ids = ToadShifter.shift(input_ids)
        return {"input_ids": input_ids, "past_key_values": past_key_values, "attention_mask": attention_mask}
'''


def test_marks_on_copies_equal_the_source_mark_after_replacements(tmp_path: Path) -> None:
    root = checkout_copy(tmp_path / "co", {"newt/modeling_newt.py": NEWT, "toad/modeling_toad.py": TOAD})
    result = scan_of(root)
    newt, toad = f"{PKG}/newt/modeling_newt.py::NewtForCausalLM", f"{PKG}/toad/modeling_toad.py::ToadForCausalLM"
    link = result.index.by_id()[toad].copied_from
    assert link is not None and link.source_id == newt and link.check.status == "consistent"
    plan = initial_plan(result)
    source_mark = edit_of(plan, newt, EditKind.MARK).text
    assert "NewtShifter" in source_mark
    copy_mark = edit_of(plan, toad, EditKind.MARK).text
    assert copy_mark == apply_replacements(source_mark, link.marker.replacements)
    assert "ToadShifter" in copy_mark
    assert shard_of(plan, toad) is shard_of(plan, newt)


# --------------------------------------------------------------------------------------------- reduced_body

MODELS = {
    "newt/modeling_newt.py": '''
        """Newt (synthetic): kwargs-forwarding overrides of several kinds."""

        from ...generation import GenerationMixin
        from ...modeling_utils import PreTrainedModel


        class NewtPreTrainedModel(PreTrainedModel):
            base_model_prefix = "model"
            _supports_cache_class = True


        class NewtForCausalLM(NewtPreTrainedModel, GenerationMixin):
            def forward(self, input_ids=None, attention_mask=None, position_ids=None, past_key_values=None,
                        inputs_embeds=None, use_cache=None, cache_position=None, num_logits_to_keep=0):
                return input_ids

            def prepare_inputs_for_generation(
                self,
                input_ids,
                past_key_values=None,
                attention_mask=None,
                inputs_embeds=None,
                cache_position=None,
                position_ids=None,
                use_cache=True,
                num_logits_to_keep=None,
                **kwargs,
            ):
                if past_key_values is not None:
                    if inputs_embeds is not None:
                        input_ids = input_ids[:, -cache_position.shape[0] :]
                    elif input_ids.shape[1] != cache_position.shape[0]:
                        input_ids = input_ids[:, cache_position]

                if attention_mask is not None and position_ids is None:
                    position_ids = attention_mask.long().cumsum(-1) - 1
                    position_ids.masked_fill_(attention_mask == 0, 1)
                    if past_key_values:
                        position_ids = position_ids[:, -input_ids.shape[1] :]

                if inputs_embeds is not None and cache_position[0] == 0:
                    model_inputs = {"inputs_embeds": inputs_embeds, "input_ids": None}
                else:
                    model_inputs = {"input_ids": input_ids, "inputs_embeds": None}

                if num_logits_to_keep is not None:
                    model_inputs["num_logits_to_keep"] = num_logits_to_keep

                model_inputs.update(
                    {
                        "position_ids": position_ids,
                        "cache_position": cache_position,
                        "past_key_values": past_key_values,
                        "use_cache": use_cache,
                        "attention_mask": attention_mask,
                        "output_router_logits": True,
                    }
                )
                return model_inputs


        class NewtForVision(NewtPreTrainedModel, GenerationMixin):
            def forward(self, input_ids=None, pixel_values=None, image_sizes=None, attention_mask=None, position_ids=None,
                        past_key_values=None, inputs_embeds=None, use_cache=None, cache_position=None):
                return input_ids

            def prepare_inputs_for_generation(
                self,
                input_ids,
                past_key_values=None,
                attention_mask=None,
                inputs_embeds=None,
                cache_position=None,
                position_ids=None,
                use_cache=True,
                pixel_values=None,
                image_sizes=None,
                **kwargs,
            ):
                if past_key_values is not None:
                    if inputs_embeds is not None:
                        input_ids = input_ids[:, -cache_position.shape[0] :]
                    elif input_ids.shape[1] != cache_position.shape[0]:
                        input_ids = input_ids[:, cache_position]

                if attention_mask is not None and position_ids is None:
                    position_ids = attention_mask.long().cumsum(-1) - 1
                    position_ids.masked_fill_(attention_mask == 0, 1)
                    if past_key_values:
                        position_ids = position_ids[:, -input_ids.shape[1] :]

                if inputs_embeds is not None and cache_position[0] == 0:
                    model_inputs = {"inputs_embeds": inputs_embeds, "input_ids": None}
                else:
                    model_inputs = {"input_ids": input_ids, "inputs_embeds": None}

                model_inputs.update(
                    {
                        "position_ids": position_ids,
                        "cache_position": cache_position,
                        "past_key_values": past_key_values,
                        "use_cache": use_cache,
                        "attention_mask": attention_mask,
                    }
                )
                if cache_position[0] == 0:
                    model_inputs["pixel_values"] = pixel_values
                    model_inputs["image_sizes"] = image_sizes
                model_inputs.pop("token_type_ids", None)
                return model_inputs


        class NewtForAudio(NewtPreTrainedModel, GenerationMixin):
            def forward(self, input_ids=None, input_features=None, attention_mask=None, position_ids=None,
                        past_key_values=None, inputs_embeds=None, use_cache=None, cache_position=None):
                return input_ids

            def prepare_inputs_for_generation(
                self,
                input_ids,
                past_key_values=None,
                attention_mask=None,
                inputs_embeds=None,
                cache_position=None,
                position_ids=None,
                use_cache=True,
                input_features=None,
                **kwargs,
            ):
                if past_key_values is not None:
                    if inputs_embeds is not None:
                        input_ids = input_ids[:, -cache_position.shape[0] :]
                    elif input_ids.shape[1] != cache_position.shape[0]:
                        input_ids = input_ids[:, cache_position]

                if attention_mask is not None and position_ids is None:
                    position_ids = attention_mask.long().cumsum(-1) - 1
                    position_ids.masked_fill_(attention_mask == 0, 1)
                    if past_key_values:
                        position_ids = position_ids[:, -input_ids.shape[1] :]

                if inputs_embeds is not None and cache_position[0] == 0:
                    model_inputs = {"inputs_embeds": inputs_embeds, "input_ids": None}
                else:
                    model_inputs = {"input_ids": input_ids, "inputs_embeds": None}

                model_inputs.update(
                    {
                        "position_ids": position_ids,
                        "cache_position": cache_position,
                        "past_key_values": past_key_values,
                        "use_cache": use_cache,
                        "attention_mask": attention_mask,
                    }
                )
                if past_key_values is None:
                    model_inputs["input_features"] = input_features
                else:
                    model_inputs["input_features"] = None
                return model_inputs


        class NewtForText(NewtPreTrainedModel, GenerationMixin):
            def forward(self, input_ids=None, attention_mask=None, past_key_values=None, cache_position=None, mode=None):
                return input_ids

            def prepare_inputs_for_generation(self, input_ids, past_key_values=None, attention_mask=None, **kwargs):
                model_inputs = {"input_ids": input_ids, "attention_mask": attention_mask, "past_key_values": past_key_values}
                mode = self.config.mode
                model_inputs["mode"] = mode
                return model_inputs
    ''',
}

SUPER_CALL = "model_inputs = super().prepare_inputs_for_generation(\n"
#: the parameters of the llama-like signature, passed on to super() as they are
STANDARD_ARGUMENTS = (
    "    input_ids,\n    past_key_values=past_key_values,\n    attention_mask=attention_mask,\n"
    "    inputs_embeds=inputs_embeds,\n    cache_position=cache_position,\n    position_ids=position_ids,\n"
    "    use_cache=use_cache,\n    **kwargs,\n)\n"
)


@pytest.fixture(scope="module")
def newt(tmp_path_factory: pytest.TempPathFactory) -> ScanResult:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CODEMOD_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
        return scan_of(checkout_copy(tmp_path_factory.mktemp("newt") / "co", MODELS))


def reduced_body(override, extras, slim: bool = True) -> str | None:
    """The reduced body as the rewrite writes it into a transformers file: the plan's code laid out at a method
    body's indent, 119 columns (the plan says what; the rewrite, knowing the file's line length, lays it out)."""
    reduction = reduce_override(override, extras, slim)
    return laid_out(reduction.body, BODY_INDENT) if reduction is not None else None


def _finding(result: ScanResult, cls: str):
    return next(f for f in result.findings if f.override.class_name == cls)


@pytest.mark.parametrize(
    ("cls", "extras", "body"),
    [
        pytest.param(
            "NewtForCausalLM",
            [Extra("output_router_logits", "constant", "True")],
            # use_cache keeps its default of True (super() would not know it); the None-defaults
            # reach super() through **kwargs
            SUPER_CALL + "    input_ids, inputs_embeds=inputs_embeds, use_cache=use_cache, **kwargs\n)\n"
            'model_inputs["output_router_logits"] = True\nreturn model_inputs\n',
            id="constant",
        ),
        pytest.param(
            "NewtForVision",
            [
                Extra("pixel_values", "first-step", "pixel_values"),
                Extra("image_sizes", "first-step", "image_sizes"),
                Extra("token_type_ids", "drop"),
            ],
            # the first-step inputs are not given to super() (which would forward them on every step)
            SUPER_CALL
            + "    input_ids, inputs_embeds=inputs_embeds, cache_position=cache_position, use_cache=use_cache, **kwargs\n)\n"
            # one test for both: the first block only sets keys, so it holds for the second
            'if cache_position[0] == 0:\n    model_inputs["pixel_values"] = pixel_values\n'
            '    model_inputs["image_sizes"] = image_sizes\n'
            'model_inputs.pop("token_type_ids", None)\nreturn model_inputs\n',
            id="first-step-extras-and-a-dropped-key",
        ),
        pytest.param(
            "NewtForAudio",
            [Extra("input_features", "first-step", "input_features")],
            SUPER_CALL
            + "    input_ids, past_key_values=past_key_values, inputs_embeds=inputs_embeds, use_cache=use_cache, **kwargs\n"
            ")\n"
            'if past_key_values is None:\n    model_inputs["input_features"] = input_features\n'
            'if not (past_key_values is None):\n    model_inputs["input_features"] = None\n'
            "return model_inputs\n",
            id="first-step-with-an-else",
        ),
    ],
)
def test_reduced_body_of_classified_overrides(newt: ScanResult, cls: str, extras: list[Extra], body: str) -> None:
    finding = _finding(newt, cls)
    assert finding.category is Category.KWARGS_FORWARDING and finding.action is Action.REDUCE
    assert list(finding.extras) == extras
    reduced = reduced_body(finding.override, finding.extras)
    assert reduced == body
    compile(
        "def prepare_inputs_for_generation(self, *a, **k):\n" + textwrap.indent(reduced, "    "), "<reduced>", "exec"
    )


def test_reduced_body_without_slimming_passes_every_parameter(newt: ScanResult) -> None:
    """``slim=False`` is the body for a signature kept as it is: every parameter goes to super()."""
    finding = _finding(newt, "NewtForVision")
    assert reduced_body(finding.override, finding.extras, slim=False) == (
        SUPER_CALL
        + STANDARD_ARGUMENTS
        + 'if cache_position[0] == 0:\n    model_inputs["pixel_values"] = pixel_values\n'
        '    model_inputs["image_sizes"] = image_sizes\n'
        'model_inputs.pop("token_type_ids", None)\nreturn model_inputs\n'
    )


@pytest.mark.parametrize(
    ("cls", "kept"),
    [
        ("NewtForCausalLM", ("input_ids", "inputs_embeds", "use_cache", "kwargs")),
        (
            "NewtForVision",
            ("input_ids", "inputs_embeds", "cache_position", "use_cache", "pixel_values", "image_sizes", "kwargs"),
        ),
    ],
)
def test_reduce_edit_names_the_parameters_the_slim_signature_keeps(newt: ScanResult, cls: str, kept: tuple) -> None:
    oid = _finding(newt, cls).override.id
    assert edit_of(initial_plan(newt), oid, EditKind.REDUCE).keep_params == kept


def test_the_plan_leaves_the_layout_to_the_rewrite(fixture_result: ScanResult) -> None:
    """The plan writes the super() call on one line: laid out here at transformers' 119, a file formatted at a longer
    length would keep the split (the trailing comma black leaves is one ruff keeps too)."""
    otter = _finding(fixture_result, "OtterForCausalLM").override
    keys = ("encoder_attention_mask", "encoder_hidden_states", "inputs_embeds", "position_ids", "token_type_ids")
    reduction = reduce_override(otter, [Extra(k, ExtraHow.DROP) for k in keys], slim=False)
    assert reduction is not None
    call, loop, pop = reduction.body.splitlines()[:3]
    assert call.startswith("model_inputs = super().prepare_inputs_for_generation(") and call.endswith(")")
    assert (
        loop == f"for key in ({', '.join(json.dumps(k) for k in keys)}):" and pop == "    model_inputs.pop(key, None)"
    )


def test_reduce_edit_carries_the_reduced_body_and_the_mark_says_why(newt: ScanResult) -> None:
    plan = initial_plan(newt)
    for cls, mark in [
        ("NewtForCausalLM", "output_router_logits = True"),
        (
            "NewtForVision",
            "pixel_values only on the first step; image_sizes only on the first step; drops token_type_ids",
        ),
        ("NewtForAudio", "input_features only on the first step"),
    ]:
        finding = _finding(newt, cls)
        oid = finding.override.id
        assert edits_by_override(plan)[oid] == [EditKind.REDUCE, EditKind.MARK]
        reduction = reduce_override(finding.override, finding.extras)
        assert reduction is not None and edit_of(plan, oid, EditKind.REDUCE).text == reduction.body
        assert edit_of(plan, oid, EditKind.MARK).text == mark


def test_statements_the_recognisers_do_not_know_keep_the_override(newt: ScanResult) -> None:
    """A key computed by an unrecognised statement cannot be re-created after super(): bespoke, kept."""
    finding = _finding(newt, "NewtForText")
    assert finding.category is Category.BESPOKE and finding.action is Action.KEEP
    assert not any(
        e.kind is EditKind.REDUCE for e in initial_plan(newt).edits() if e.override_id == finding.override.id
    )


@pytest.mark.parametrize(
    ("extras", "tail"),
    [
        pytest.param([Extra("token_type_ids", "drop")], 'model_inputs.pop("token_type_ids", None)\n', id="drop"),
        pytest.param([Extra("position_ids", "set-none")], 'model_inputs["position_ids"] = None\n', id="set-none"),
        pytest.param(
            [Extra("position_ids", "set-none"), Extra("token_type_ids", "drop")],
            'model_inputs["position_ids"] = None\nmodel_inputs.pop("token_type_ids", None)\n',
            id="in-order",
        ),
        pytest.param([Extra('say "hi"', "drop")], 'model_inputs.pop("say \\"hi\\"", None)\n', id="key-quoted-as-json"),
    ],
)
def test_reduced_body_with_hand_made_extras(fixture_result: ScanResult, extras: list[Extra], tail: str) -> None:
    override = _finding(fixture_result, "LynxForConditionalGeneration").override
    body = reduced_body(override, extras)
    assert body is not None
    assert body.endswith(")\n" + tail + "return model_inputs\n")
    # the None-defaults the forward takes reach super() through **kwargs; the rest by name
    assert body.startswith(
        "model_inputs = super().prepare_inputs_for_generation(input_ids, inputs_embeds=inputs_embeds, **kwargs)\n"
    )
    # kept as it is, every named parameter goes to super() (none of these extras consumes one)
    assert "    pixel_values=pixel_values,\n" in reduced_body(override, extras, slim=False)


def test_reduced_body_is_none_for_a_sliced_extra(fixture_result: ScanResult) -> None:
    override = _finding(fixture_result, "LynxForConditionalGeneration").override
    assert reduced_body(override, [Extra("token_type_ids", "sliced", "token_type_ids")]) is None


def test_reduced_body_is_none_when_an_extra_has_no_expression(fixture_result: ScanResult) -> None:
    override = _finding(fixture_result, "LynxForConditionalGeneration").override
    assert reduced_body(override, [Extra("not_an_output", "first-step", "pixel_values")]) is None


def test_reduced_body_passes_star_args_and_renamed_ids(fixture_result: ScanResult) -> None:
    override = _finding(fixture_result, "LynxForConditionalGeneration").override
    params = (
        Param("self", "positional"),
        Param("decoder_input_ids", "positional"),
        Param("args", "*args"),
        Param("attention_mask", "positional", "None"),
        Param("use_cache", "keyword-only", "None"),
        Param("model_kwargs", "**kwargs"),
    )
    changed = dataclasses.replace(override, analysis=dataclasses.replace(override.analysis, params=params))
    # laid out as ruff would: the arguments fit on one line of their own
    assert reduced_body(changed, []) == (
        "model_inputs = super().prepare_inputs_for_generation(\n"
        "    decoder_input_ids, *args, attention_mask=attention_mask, use_cache=use_cache, **model_kwargs\n"
        ")\nreturn model_inputs\n"
    )


def test_repairs_turn_a_deletion_into_a_reduction(fixture_result: ScanResult) -> None:
    """Verification found the mixin adds keys the override did not pass: reduce to super() minus those."""
    plan = make_plan(
        fixture_result.index,
        fixture_result.findings,
        PlanOptions(
            mixin_era=Era.STUB,
            mixin_file=MIXIN_FILE,
            repairs={OTTER: Repair(remove=("token_type_ids",), set_none=("position_ids",))},
        ),
    )
    assert plan.action_of(OTTER) is Action.REDUCE
    body = edit_of(plan, OTTER, EditKind.REDUCE).text
    assert body.startswith("model_inputs = super().prepare_inputs_for_generation(")
    # position_ids: None where the old code passed None and the mixin leaves it out; a caller's value still goes through
    assert body.endswith(
        'model_inputs.pop("token_type_ids", None)\nmodel_inputs.setdefault("position_ids", None)\n'
        "return model_inputs\n"
    )
    assert edit_of(plan, OTTER, EditKind.MARK).text == "drops token_type_ids; position_ids = None by default"
    # its copies still go: a copy of a reduced method is a different method now, deleted with its marker
    assert plan.action_of(BADGER) is plan.action_of(FERRET) is Action.DELETE
    assert EditKind.DELETE in edits_by_override(plan)[BADGER]


def test_a_pass_through_repair_restores_the_parameter_after_super(fixture_result: ScanResult) -> None:
    """The old code passed the caller's mask on where the mixin builds a static cache's 4D mask."""
    plan = make_plan(
        fixture_result.index,
        fixture_result.findings,
        PlanOptions(
            mixin_era=Era.STUB, mixin_file=MIXIN_FILE, repairs={OTTER: Repair(passthrough=("attention_mask",))}
        ),
    )
    assert plan.action_of(OTTER) is Action.REDUCE
    body = edit_of(plan, OTTER, EditKind.REDUCE).text
    assert "attention_mask=attention_mask" in body.split("\n)")[0]
    assert body.endswith('model_inputs["attention_mask"] = attention_mask\nreturn model_inputs\n')
    assert edit_of(plan, OTTER, EditKind.MARK).text == "attention_mask as the caller gives it"
    # a key that is no parameter of the override is read where the caller's value arrives, its **kwargs
    other = make_plan(
        fixture_result.index,
        fixture_result.findings,
        PlanOptions(mixin_era=Era.STUB, mixin_file=MIXIN_FILE, repairs={OTTER: Repair(passthrough=("pixel_values",))}),
    )
    assert edit_of(other, OTTER, EditKind.REDUCE).text.endswith(
        'model_inputs["pixel_values"] = kwargs.get("pixel_values")\nreturn model_inputs\n'
    )


def test_a_pass_through_repair_needs_a_name_to_read_the_callers_value_from(fixture_result: ScanResult) -> None:
    """No parameter of that name and no **kwargs: nothing can be restored, the deletion stands and verification
    decides."""
    otter = _finding(fixture_result, "OtterForCausalLM")
    closed = dataclasses.replace(
        otter,
        override=dataclasses.replace(
            otter.override,
            analysis=dataclasses.replace(
                otter.override.analysis,
                params=tuple(p for p in otter.override.analysis.params if p.kind is not ParamKind.VAR_KEYWORDS),
            ),
        ),
    )
    findings = [closed if f.override.id == OTTER else f for f in fixture_result.findings]
    plan = make_plan(
        fixture_result.index,
        findings,
        PlanOptions(mixin_era=Era.STUB, mixin_file=MIXIN_FILE, repairs={OTTER: Repair(passthrough=("pixel_values",))}),
    )
    assert plan.action_of(OTTER) is Action.DELETE


def test_a_pass_through_repair_of_the_ids_reads_the_ids_parameter(fixture_result: ScanResult) -> None:
    """FSMT hands its unsliced ``decoder_input_ids`` on, named as its first parameter: the reduction passes that
    parameter, not a ``kwargs.get`` of a key the caller's ids never arrive under (the first version did, and
    verification found every later step different)."""
    otter = _finding(fixture_result, "OtterForCausalLM")
    params = (Param("self", "positional"), Param("decoder_input_ids", "positional"), Param("kwargs", "**kwargs"))
    renamed = dataclasses.replace(
        otter,
        override=dataclasses.replace(
            otter.override, analysis=dataclasses.replace(otter.override.analysis, params=params)
        ),
    )
    findings = [renamed if f.override.id == OTTER else f for f in fixture_result.findings]
    plan = make_plan(
        fixture_result.index,
        findings,
        PlanOptions(
            mixin_era=Era.STUB, mixin_file=MIXIN_FILE, repairs={OTTER: Repair(passthrough=("decoder_input_ids",))}
        ),
    )
    body = edit_of(plan, OTTER, EditKind.REDUCE).text
    assert body.endswith('model_inputs["decoder_input_ids"] = decoder_input_ids\nreturn model_inputs\n')


def test_a_key_named_as_none_where_the_caller_gave_none_is_passed_on_as_given(fixture_result: ScanResult) -> None:
    """GPT-2 asked by a wrapper without a mask passed None where the mixin makes a mask of ones: the reduction passes
    the caller's value on (None there, the caller's mask in generate()), read from **kwargs when no parameter names
    it; a scenario that removes the key wins."""
    plan = make_plan(
        fixture_result.index,
        fixture_result.findings,
        PlanOptions(
            mixin_era=Era.STUB,
            mixin_file=MIXIN_FILE,
            repairs={OTTER: Repair(ungiven=("attention_mask", "token_type_ids"))},
        ),
    )
    body = edit_of(plan, OTTER, EditKind.REDUCE).text
    ast.parse(body)
    assert 'model_inputs["attention_mask"] = attention_mask\n' in body
    assert 'model_inputs["token_type_ids"] = kwargs.get("token_type_ids")\n' in body
    removed = make_plan(
        fixture_result.index,
        fixture_result.findings,
        PlanOptions(
            mixin_era=Era.STUB,
            mixin_file=MIXIN_FILE,
            repairs={OTTER: Repair(ungiven=("token_type_ids",)) | Repair(remove=("token_type_ids",))},
        ),
    )
    body = edit_of(removed, OTTER, EditKind.REDUCE).text
    assert 'model_inputs.pop("token_type_ids", None)' in body and "kwargs.get" not in body


def test_a_key_passed_through_and_also_missing_is_passed_through_only_when_given(fixture_result: ScanResult) -> None:
    """Jamba passes the caller's positions unsliced, and builds its own from the mask when given none: the
    first round finds the pass-through, the next that the unconditional one left the key None where the caller
    gave nothing (``keep``). The union passes the caller's value through only when there is one."""
    plan = make_plan(
        fixture_result.index,
        fixture_result.findings,
        PlanOptions(
            mixin_era=Era.STUB,
            mixin_file=MIXIN_FILE,
            repairs={OTTER: Repair(passthrough=("position_ids",)) | Repair(keep=("position_ids",))},
        ),
    )
    body = edit_of(plan, OTTER, EditKind.REDUCE).text
    assert body.endswith(
        'if position_ids is not None:\n    model_inputs["position_ids"] = position_ids\nreturn model_inputs\n'
    )
    ast.parse(body)
    assert edit_of(plan, OTTER, EditKind.MARK).text == "position_ids as the caller gives it, if it does"


def test_a_last_token_repair_cuts_the_ids_again_under_the_old_test(fixture_result: ScanResult) -> None:
    """Heron keeps ``input_ids[:, -1:]`` under ``past_key_values is not None``: a last-token repair cuts what
    super() prepared the same way, under the same test (``if past_key_values:`` would differ on the first step
    with an empty Cache, which is falsy)."""
    heron = _finding(fixture_result, "HeronForCausalLM").override
    body = reduced_body(heron, [Extra("input_ids", ExtraHow.LAST_TOKEN)])
    assert body is not None
    assert body.endswith(
        'if past_key_values is not None:\n    model_inputs["input_ids"] = model_inputs["input_ids"][:, -1:]\n'
        "return model_inputs\n"
    )
    ast.parse(body)
    # an override that never cut its ids to the last token has no test to cut them under: no reduction
    otter = _finding(fixture_result, "OtterForCausalLM").override
    assert reduced_body(otter, [Extra("input_ids", ExtraHow.LAST_TOKEN)]) is None


def test_a_key_ignored_when_given_is_none_again_under_the_callers_value(fixture_result: ScanResult) -> None:
    """GPT-2 passed None for ``position_ids`` whenever the caller gave them: the reduction tests the caller's
    value where it arrives (a parameter by its name, otherwise ``**kwargs``), and the scan reads the result."""
    from codemod.analyse.recognise import analyse_source

    otter = _finding(fixture_result, "OtterForCausalLM").override
    body = reduced_body(otter, [Extra("token_type_ids", ExtraHow.NONE_WHEN_GIVEN)])
    assert body is not None
    assert body.endswith(
        'if kwargs.get("token_type_ids") is not None:\n    model_inputs["token_type_ids"] = None\nreturn model_inputs\n'
    )
    analysis = analyse_source(
        "def prepare_inputs_for_generation(self, input_ids, **kwargs):\n" + textwrap.indent(body, "    ")
    )
    assert not analysis.unrecognised, analysis.unrecognised
    named = reduced_body(otter, [Extra("position_ids", ExtraHow.NONE_WHEN_GIVEN)])
    assert named is not None and 'if position_ids is not None:\n    model_inputs["position_ids"] = None\n' in named
    # no **kwargs and no parameter of that name: nothing to test the caller's value by, no reduction
    closed = dataclasses.replace(
        otter,
        analysis=dataclasses.replace(
            otter.analysis, params=tuple(p for p in otter.analysis.params if p.kind is not ParamKind.VAR_KEYWORDS)
        ),
    )
    assert reduced_body(closed, [Extra("token_type_ids", ExtraHow.NONE_WHEN_GIVEN)]) is None
    assert (
        edit_of(
            make_plan(
                fixture_result.index,
                fixture_result.findings,
                PlanOptions(
                    mixin_era=Era.STUB,
                    mixin_file=MIXIN_FILE,
                    repairs={OTTER: Repair(none_when_given=("position_ids",))},
                ),
            ),
            OTTER,
            EditKind.MARK,
        ).text
        == "no position_ids from the caller"
    )


def test_three_drops_in_a_row_are_one_loop_laid_out_as_ruff_would(fixture_result: ScanResult) -> None:
    otter = _finding(fixture_result, "OtterForCausalLM").override
    two = reduced_body(otter, [Extra(k, ExtraHow.DROP) for k in ("token_type_ids", "position_ids")])
    assert two is not None and two.count("model_inputs.pop(") == 2 and "for key" not in two
    three = reduced_body(otter, [Extra(k, ExtraHow.DROP) for k in ("token_type_ids", "position_ids", "use_cache")])
    assert three is not None
    assert (
        ')\nfor key in ("token_type_ids", "position_ids", "use_cache"):\n    model_inputs.pop(key, None)\nreturn'
        in three
    )
    keys = ("encoder_attention_mask", "encoder_hidden_states", "inputs_embeds", "position_ids", "token_type_ids")
    long = reduced_body(otter, [Extra(k, ExtraHow.DROP) for k in keys])
    assert long is not None
    # ruff lays a tuple too long for its line out one item per line (a call's arguments, on one line of their own)
    assert (
        "\nfor key in (\n" + "".join(f'    "{k}",\n' for k in keys) + "):\n    model_inputs.pop(key, None)\n" in long
    )
    for body in (three, long):
        ast.parse(body)
        assert all(len(line) + 8 <= 119 for line in body.splitlines())
    # what the scan makes of the loop: the same keys dropped
    from codemod.analyse.recognise import analyse_source

    analysis = analyse_source(
        "def prepare_inputs_for_generation(self, input_ids, **kwargs):\n" + textwrap.indent(long, "    ")
    )
    assert not analysis.unrecognised and "drop-key" in analysis.behaviours


def test_a_deleted_copy_gets_no_mark(fixture_result: ScanResult) -> None:
    plan = make_plan(
        fixture_result.index,
        fixture_result.findings,
        PlanOptions(
            mixin_era=Era.STUB,
            mixin_file=MIXIN_FILE,
            repairs={OTTER: Repair(remove=("token_type_ids",), set_none=("position_ids",))},
        ),
    )
    for oid in (BADGER, FERRET):
        assert edits_by_override(plan)[oid] == [EditKind.DELETE]


# --------------------------------------------------------------------------------------------- the modular trap

GEN_HEADER = (
    "#                🚨🚨🚨🚨🚨🚨🚨🚨🚨🚨🚨🚨🚨🚨🚨🚨🚨🚨🚨🚨🚨🚨🚨🚨\n"
    "#           This file was automatically generated from src/transformers/models/finch/modular_finch.py.\n"
    "#               Do NOT edit this file manually as any edits will be overwritten by the generation of\n"
    "#             the file from the modular. If any change should be done, please apply the change to the\n"
    "#                          modular_finch.py file directly. One of our CI enforces this.\n"
    "#                🚨🚨🚨🚨🚨🚨🚨🚨🚨🚨🚨🚨🚨🚨🚨🚨🚨🚨🚨🚨🚨🚨🚨🚨\n"
)

PARROT_BESPOKE = '''
    """Parrot (synthetic): the parent model, with a bespoke override."""

    import torch

    from ...generation import GenerationMixin
    from ...modeling_utils import PreTrainedModel


    class ParrotForCausalLM(PreTrainedModel, GenerationMixin):
        def forward(self, input_ids=None, past_key_values=None, attention_mask=None, **kwargs):
            return input_ids

        def prepare_inputs_for_generation(self, input_ids, past_key_values=None, attention_mask=None, **kwargs):
            input_ids = torch.flip(input_ids, dims=[-1])
            return {"input_ids": input_ids, "past_key_values": past_key_values, "attention_mask": attention_mask}
'''

PARROT_GENERIC = '''
    """Parrot (synthetic): the parent model, with a generic override."""

    from ...generation import GenerationMixin
    from ...modeling_utils import PreTrainedModel


    class ParrotForCausalLM(PreTrainedModel, GenerationMixin):
        def forward(self, input_ids=None, past_key_values=None, attention_mask=None, **kwargs):
            return input_ids

        def prepare_inputs_for_generation(self, input_ids, past_key_values=None, attention_mask=None, **kwargs):
            if past_key_values is not None:
                input_ids = input_ids[:, -1:]
            return {"input_ids": input_ids, "past_key_values": past_key_values, "attention_mask": attention_mask}
'''

FINCH_METHOD = """
        def prepare_inputs_for_generation(self, input_ids, past_key_values=None, attention_mask=None, **kwargs):
            if past_key_values is not None:
                input_ids = input_ids[:, -1:]
            return {"input_ids": input_ids, "past_key_values": past_key_values, "attention_mask": attention_mask}
"""

FINCH_MODULAR = (
    '''
    """Finch (synthetic), the modular way: generic override on top of a parent that has its own."""

    from ..parrot.modeling_parrot import ParrotForCausalLM


    class FinchForCausalLM(ParrotForCausalLM):
'''
    + FINCH_METHOD
)

FINCH_GENERATED = (
    GEN_HEADER
    + textwrap.dedent("""
    from ...generation import GenerationMixin
    from ...modeling_utils import PreTrainedModel


    class FinchForCausalLM(PreTrainedModel, GenerationMixin):
        def forward(self, input_ids=None, past_key_values=None, attention_mask=None, **kwargs):
            return input_ids
""")
    + textwrap.indent(textwrap.dedent(FINCH_METHOD), "    ")
)

FINCH = f"{PKG}/finch/modeling_finch.py::FinchForCausalLM"
FINCH_MODULAR_ID = f"{PKG}/finch/modular_finch.py::FinchForCausalLM"
PARROT = f"{PKG}/parrot/modeling_parrot.py::ParrotForCausalLM"
REMOVAL_STUB = 'raise AttributeError("FinchForCausalLM uses GenerationMixin.prepare_inputs_for_generation")\n'


def modular_family(root: Path, parrot: str) -> Path:
    return checkout_copy(
        root,
        {
            "parrot/modeling_parrot.py": parrot,
            "finch/modular_finch.py": FINCH_MODULAR,
        },
    )


def write_generated(root: Path) -> None:
    (root / PKG / "finch" / "modeling_finch.py").write_text(FINCH_GENERATED, encoding="utf-8")


def test_modular_trap_gets_the_removal_stub(tmp_path: Path) -> None:
    root = modular_family(tmp_path / "co", PARROT_BESPOKE)
    write_generated(root)
    result = scan_of(root)
    by_id = result.index.by_id()
    assert by_id[FINCH].generated_from is not None and by_id[FINCH].generated_from.kind == "modular-class"
    plan = initial_plan(result)
    assert plan.action_of(PARROT) is not Action.DELETE  # the parent keeps an override (reduced or not)
    stub = edit_of(plan, FINCH_MODULAR_ID, EditKind.REMOVE)
    assert stub.text == REMOVAL_STUB
    assert "modular trap" in stub.reason and PARROT in stub.reason
    assert plan.action_of(FINCH_MODULAR_ID) is Action.DELETE
    # the generated class loses the method (what the converter makes of the stub)
    assert edits_by_override(plan)[FINCH] == [EditKind.DELETE]
    assert shard_of(plan, FINCH) is shard_of(plan, FINCH_MODULAR_ID)


def test_no_trap_when_the_parent_override_goes_too(tmp_path: Path) -> None:
    root = modular_family(tmp_path / "co", PARROT_GENERIC)
    write_generated(root)
    plan = initial_plan(scan_of(root))
    assert plan.action_of(PARROT) is Action.DELETE
    assert edits_by_override(plan)[FINCH_MODULAR_ID] == [EditKind.DELETE]


def test_trap_when_the_parent_is_not_in_the_run(tmp_path: Path) -> None:
    root = modular_family(tmp_path / "co", PARROT_GENERIC)
    write_generated(root)
    plan = initial_plan(scan_of(root).select(skip=["parrot"]))
    assert edits_by_override(plan)[FINCH_MODULAR_ID] == [EditKind.REMOVE]


def test_the_removal_stub_is_stable(tmp_path: Path) -> None:
    """Once written, the stub is recognised as the converter's removal and never planned again."""
    root = modular_family(tmp_path / "co", PARROT_BESPOKE)
    write_generated(root)
    plan = initial_plan(scan_of(root))
    for path, edits in plan.by_file().items():
        target = root / path
        result = rewrite_source(path, target.read_bytes(), edits)
        assert result.error is None, result.error
        target.write_bytes(result.new)
    modular_text = (root / PKG / "finch" / "modular_finch.py").read_text(encoding="utf-8")
    assert (
        '        raise AttributeError("FinchForCausalLM uses GenerationMixin.prepare_inputs_for_generation")\n'
        in modular_text
    )
    again = scan_of(root)
    stub = next(f for f in again.findings if f.override.id == FINCH_MODULAR_ID)
    assert stub.action is Action.KEEP and any("removes the inherited override" in r.text for r in stub.reasons)
    replan = initial_plan(again)
    assert replan.action_of(FINCH_MODULAR_ID) is Action.KEEP
    assert not any(e.kind in (EditKind.DELETE, EditKind.REMOVE, EditKind.REDUCE) for e in replan.edits())
    assert FINCH not in {f.override.id for f in again.findings}


def test_the_removal_stub_is_not_marked(tmp_path: Path) -> None:
    root = modular_family(tmp_path / "co", PARROT_BESPOKE)
    stubbed = FINCH_MODULAR.replace(
        "if past_key_values is not None:\n                input_ids = input_ids[:, -1:]\n"
        '            return {"input_ids": input_ids, "past_key_values": past_key_values, "attention_mask": attention_mask}',
        'raise AttributeError("FinchForCausalLM uses GenerationMixin.prepare_inputs_for_generation")',
    )
    assert stubbed != FINCH_MODULAR
    (root / PKG / "finch" / "modular_finch.py").write_text(textwrap.dedent(stubbed).lstrip("\n"), encoding="utf-8")
    plan = initial_plan(scan_of(root))
    assert plan.action_of(FINCH_MODULAR_ID) is Action.KEEP
    assert FINCH_MODULAR_ID not in edits_by_override(plan)


# --------------------------------------------------------------------------------------------- known bugs

ONE_LINER = '''
    """Quail (synthetic): an override written on one line."""

    from ...generation import GenerationMixin
    from ...modeling_utils import PreTrainedModel


    class QuailForCausalLM(PreTrainedModel, GenerationMixin):
        def forward(self, input_ids=None, past_key_values=None):
            return input_ids

        def prepare_inputs_for_generation(self, input_ids, **kwargs): return {"input_ids": input_ids[:, ::2], **kwargs}
'''


def test_one_line_override_is_not_deleted(tmp_path: Path) -> None:
    root = checkout_copy(tmp_path / "co", {"quail/modeling_quail.py": ONE_LINER})
    plan = initial_plan(scan_of(root).select(["quail"]))
    oid = f"{PKG}/quail/modeling_quail.py::QuailForCausalLM"
    assert plan.action_of(oid) is Action.KEEP


def test_same_override_on_two_lines_is_kept(tmp_path: Path) -> None:
    two_lines = ONE_LINER.replace("**kwargs): return {", "**kwargs):\n            return {")
    root = checkout_copy(tmp_path / "co", {"quail/modeling_quail.py": two_lines})
    plan = initial_plan(scan_of(root).select(["quail"]), mark_kept=True)
    oid = f"{PKG}/quail/modeling_quail.py::QuailForCausalLM"
    assert plan.action_of(oid) is Action.KEEP
    assert edits_by_override(plan)[oid] == [EditKind.MARK]


def test_a_dropped_key_a_mixin_may_set_itself_is_still_handed_on_and_dropped(newt: ScanResult) -> None:
    """A parameter dropped after super() is not handed to it at all (Musicgen's ``delay_pattern_mask``,
    in the 4.45.2 golden diff), unless a mixin may set that key itself: ``num_logits_to_keep`` reaches
    super() and is popped after, or the mixin's own value would reach forward."""
    finding = _finding(newt, "NewtForCausalLM")
    body = reduced_body(finding.override, (Extra("num_logits_to_keep", "drop"),), slim=False)
    assert body is not None
    assert "num_logits_to_keep=num_logits_to_keep" in body
    assert 'model_inputs.pop("num_logits_to_keep", None)' in body


# ------------------------------------------------------------------------------------------- keys a hook leaves out

_CROW = """
from ...generation import GenerationMixin
from ...modeling_utils import PreTrainedModel


class CrowPreTrainedModel(PreTrainedModel):
    _supports_cache_class = True


class CrowForCausalLM(CrowPreTrainedModel, GenerationMixin):
{attribute}    def forward(self, input_ids=None, past_key_values=None, attention_mask=None, inputs_embeds=None, use_cache=None):
        pass

    def prepare_inputs_for_generation(self, input_ids, past_key_values=None, attention_mask=None, **kwargs):
        return {{"input_ids": input_ids, "past_key_values": past_key_values, "attention_mask": attention_mask}}
"""
CROW = f"{PKG}/crow/modeling_crow.py::CrowForCausalLM"


@pytest.mark.parametrize(
    ("attribute", "left_out", "kind"),
    [
        # the mixin passes cache_position (the class supports Cache classes), which forward does not take: dropped
        ("", {}, EditKind.REDUCE),
        # this plan's hook leaves it out for the class: nothing to drop after super()
        ("", {CROW: frozenset({"cache_position"})}, EditKind.DELETE),
        # a hook a first pass wrote leaves it out (a second pass over that tree)
        ('    _generation_dropped_inputs = ("head_mask", "cache_position")\n\n', {}, EditKind.DELETE),
    ],
)
def test_a_key_a_hook_leaves_out_is_not_dropped_again(
    tmp_path: Path, attribute: str, left_out: dict[str, frozenset[str]], kind: EditKind
) -> None:
    root = checkout_copy(tmp_path / "mini", {"crow/modeling_crow.py": _CROW.format(attribute=attribute)})
    plan = initial_plan(scan_of(root), left_out=left_out)
    assert edits_by_override(plan)[CROW][0] is kind
    if kind is EditKind.REDUCE:
        assert 'model_inputs.pop("cache_position", None)' in edit_of(plan, CROW, EditKind.REDUCE).text


def test_a_copy_check_copies_compares_with_another_class_loses_its_marker_with_that_class_s_change(tmp_path) -> None:
    """4.45's MarkupLM names ``BertModel.prepare_inputs_for_generation``, which BertModel does not define; check_copies
    finds the next class's, BertLMHeadModel's, and compares it with that. When that method changes, the copy's marker
    must go, whatever becomes of the copy itself: the drop is an edit of the changing override's shard, so a revert of
    the copy's own change (MarkupLM's: no LM head, unverifiable) keeps it, and check_copies passes."""
    otter = (MINI_CHECKOUT / PKG / "otter" / "modeling_otter.py").read_text(encoding="utf-8")
    method = otter[otter.index("    def prepare_inputs_for_generation(") :]
    alpha = otter.replace("Otter", "Alpha")
    beta = (
        otter[: otter.index("class OtterForCausalLM")].replace("Otter", "Beta").rstrip("\n") + "\n"
        "\n    # Copied from transformers.models.alpha.modeling_alpha.AlphaModel.prepare_inputs_for_generation with Alpha->Beta\n"
        + method.replace("Otter", "Beta")
    )
    root = checkout_copy(tmp_path / "co", {"alpha/modeling_alpha.py": alpha, "beta/modeling_beta.py": beta})
    result = scan_of(root)
    alpha_id, beta_id = f"{PKG}/alpha/modeling_alpha.py::AlphaForCausalLM", f"{PKG}/beta/modeling_beta.py::BetaModel"
    link = result.index.by_id()[beta_id].copied_from
    assert link is not None and (link.check.status, link.check.loose, link.source_id, link.follows) == (
        "consistent",
        True,
        None,
        alpha_id,
    )
    plan = make_plan(result.index, result.findings, PlanOptions(mixin_era=Era.STUB, mixin_file=MIXIN_FILE))
    assert plan.action_of(alpha_id) is Action.DELETE
    alpha_shard = next(s for s in plan.shards if alpha_id in s.members)
    assert beta_id not in alpha_shard.members  # no copy group: it is nobody's copy by name
    assert [
        (e.kind, e.class_name, e.override_id) for e in alpha_shard.edits if e.file.endswith("modeling_beta.py")
    ] == [(EditKind.DROP_MARKER, "BetaModel", beta_id)]
    # the copy's own change reverted (its shard dropped), the followed class's kept: the method stays, unmarked
    beta_shard = next(s for s in plan.shards if beta_id in s.members)
    kept = plan.without([Held(beta_shard.id, HeldCause.NOT_VERIFIED, "unverifiable")])
    edits = [e for e in kept.edits() if e.file.endswith("modeling_beta.py")]
    written = rewrite_source(f"{PKG}/beta/modeling_beta.py", beta.encode(), edits)
    assert written.error is None, written.error
    assert "def prepare_inputs_for_generation" in written.new_text() and "# Copied from" not in written.new_text()
    # both changes kept: the copy is deleted, the drop of its marker goes with it
    both = rewrite_source(
        f"{PKG}/beta/modeling_beta.py", beta.encode(), [e for e in plan.edits() if e.file.endswith("modeling_beta.py")]
    )
    assert both.error is None, both.error
    assert "prepare_inputs_for_generation" not in both.new_text()
