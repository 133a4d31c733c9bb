"""An override left as nothing but a ``super()`` call kept for its signature names the mixin's variant instead.

``codemod.transform.alias``: the rewrite's ``(before, after)`` pairs and its noops (each says why the method stays),
the plan's choice of the overrides that may (``with_aliases``), and the variant the hoist installs: the generic
method under a signature without ``inputs_embeds``, which 4.45's ``generate()`` reads as a refusal.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import textwrap
from pathlib import Path

import pytest

from codemod.analyse.fallback import FallbackKind
from codemod.analyse.index import Override
from codemod.analyse.scan import ScanResult
from codemod.rules.generic_mixin import HOIST_SOURCE, METHOD_SOURCE, REFUSING_EMBEDS, REFUSING_EMBEDS_SOURCE
from codemod.sources import FileKind
from codemod.transform.alias import ASSIGNMENT, may_alias, with_aliases
from codemod.transform.plan import Edit, EditKind, Plan, Shard, initial_plan
from codemod.transform.rewrite import rewrite_source

PATH = "src/transformers/models/foo/modeling_foo.py"
CLS = "FooForCausalLM"
BARE = "model_inputs = super().prepare_inputs_for_generation(input_ids, **kwargs)\nreturn model_inputs\n"


def src(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def reduce(body: str = BARE, **changes: object) -> Edit:
    edit = Edit(PATH, CLS, EditKind.REDUCE, f"{PATH}::{CLS}", "test", body, direct_return=True, alias=True)
    return dataclasses.replace(edit, **changes)  # type: ignore[arg-type]


def assert_parses(text: str) -> None:
    ast.parse(text)


HEAD = "from ...generation import GenerationMixin\n\n\n"

CASES = [
    pytest.param(
        HEAD
        + src("""
            class FooForCausalLM(FooPreTrainedModel, GenerationMixin):
                _tied_weights_keys = ["lm_head.weight"]

                def prepare_inputs_for_generation(self, input_ids, past_key_values=None, **kwargs):
                    return {"input_ids": input_ids, "past_key_values": past_key_values}

                def forward(self, input_ids):
                    return input_ids
        """),
        [reduce(keep_params=("input_ids",))],
        HEAD
        + src("""
            class FooForCausalLM(FooPreTrainedModel, GenerationMixin):
                _tied_weights_keys = ["lm_head.weight"]
                prepare_inputs_for_generation = GenerationMixin._prepare_inputs_for_generation_refusing_embeds

                def forward(self, input_ids):
                    return input_ids
        """),
        id="a-reduction-slimmed-to-the-ids-the-line-joins-the-attributes",
    ),
    pytest.param(
        HEAD
        + src("""
            class FooForCausalLM(FooPreTrainedModel, GenerationMixin):
                # Copied from transformers.models.bar.modeling_bar.BarForCausalLM.prepare_inputs_for_generation
                def prepare_inputs_for_generation(self, input_ids, **model_kwargs):
                    # Overwritten -- keeps its signature for generate()
                    model_inputs = super().prepare_inputs_for_generation(input_ids, **model_kwargs)
                    model_inputs.pop("token_type_ids", None)
                    return model_inputs
        """),
        [Edit(PATH, CLS, EditKind.TRIM, f"{PATH}::{CLS}", "test", remove=(1,), direct_return=True, alias=True)],
        HEAD
        + src("""
            class FooForCausalLM(FooPreTrainedModel, GenerationMixin):
                prepare_inputs_for_generation = GenerationMixin._prepare_inputs_for_generation_refusing_embeds
        """),
        id="a-trim-left-bare-model-kwargs-the-copy-marker-goes",
    ),
    pytest.param(
        src("""
            import torch


            class FooForCausalLM(FooPreTrainedModel):
                # kept for generate()
                def prepare_inputs_for_generation(self, input_ids: torch.Tensor, **kwargs):
                    return super().prepare_inputs_for_generation(input_ids, **kwargs)

                def forward(self, input_ids: torch.Tensor):
                    return input_ids
        """),
        [reduce()],
        src("""
            import torch
            from ...generation import GenerationMixin


            class FooForCausalLM(FooPreTrainedModel):
                prepare_inputs_for_generation = GenerationMixin._prepare_inputs_for_generation_refusing_embeds

                def forward(self, input_ids: torch.Tensor):
                    return input_ids
        """),
        id="annotated-ids-its-comments-go-with-the-method-the-import-is-added",
    ),
]


@pytest.mark.parametrize(("before", "edits", "after"), CASES)
def test_alias(before: str, edits: list[Edit], after: str) -> None:
    assert_parses(after)
    result = rewrite_source(PATH, before.encode(), edits)
    assert result.error is None, result.error
    assert result.new_text() == after


_ONE = (
    "class FooForCausalLM(FooPreTrainedModel, GenerationMixin):\n    def prepare_inputs_for_generation({params}):\n"
    "        return {{}}\n"
)

NOOPS = [
    pytest.param(
        "self, input_ids, use_cache=True, **kwargs",
        "model_inputs = super().prepare_inputs_for_generation(input_ids, use_cache=use_cache, **kwargs)\n"
        "return model_inputs\n",
        id="a-default-of-its-own: generate() validates model kwargs against it",
    ),
    pytest.param(
        "self, input_ids, **extra",
        "model_inputs = super().prepare_inputs_for_generation(input_ids, **extra)\nreturn model_inputs\n",
        id="another-kwargs-name: 4.45 lets forward's names through for two names only",
    ),
    pytest.param(
        "self, decoder_input_ids, **kwargs",
        "return super().prepare_inputs_for_generation(decoder_input_ids, **kwargs)\n",
        id="other-ids-name: a caller may pass them by name",
    ),
    pytest.param(
        "self, input_ids, *args, **kwargs",
        "return super().prepare_inputs_for_generation(input_ids, *args, **kwargs)\n",
        id="star-args",
    ),
    pytest.param(
        "self, input_ids, **kwargs",
        "kwargs.pop('labels', None)\nreturn super().prepare_inputs_for_generation(input_ids, **kwargs)\n",
        id="a-statement-of-its-own",
    ),
    pytest.param(
        "self, input_ids, **kwargs",
        "return super().prepare_inputs_for_generation(input_ids, use_cache=True, **kwargs)\n",
        id="the-call-passes-more",
    ),
    pytest.param(
        "self, input_ids, **kwargs",
        "return self.model.prepare_inputs_for_generation(input_ids, **kwargs)\n",
        id="not-super",
    ),
]


@pytest.mark.parametrize(("params", "body"), NOOPS)
def test_a_method_that_is_more_than_the_bare_call_stays_a_method(params: str, body: str) -> None:
    before = _ONE.format(params=params)
    result = rewrite_source(PATH, before.encode(), [reduce(body)])
    assert result.error is None, result.error
    assert "def prepare_inputs_for_generation(" in result.new_text()
    assert ASSIGNMENT not in result.new_text()


def test_without_the_plan_s_leave_a_bare_call_stays_a_method() -> None:
    before = _ONE.format(params="self, input_ids, **kwargs")
    result = rewrite_source(PATH, before.encode(), [reduce(alias=False)])
    assert result.new_text().endswith("        return super().prepare_inputs_for_generation(input_ids, **kwargs)\n")


def test_a_decorated_method_stays_a_method() -> None:
    before = (
        "class FooForCausalLM(Base):\n    @staticmethod_like\n    def prepare_inputs_for_generation(self, input_ids, "
        "**kwargs):\n        return {}\n"
    )
    result = rewrite_source(PATH, before.encode(), [reduce()])
    assert ASSIGNMENT not in result.new_text()


# --------------------------------------------------------------------------------------------- the variant


def test_the_hoist_installs_the_variant_after_the_method() -> None:
    before = (
        "class GenerationMixin:\n    def prepare_inputs_for_generation(self, *args, **kwargs):\n        raise "
        "NotImplementedError('stub')\n"
    )
    hoist = Edit("src/transformers/generation/utils.py", "GenerationMixin", EditKind.HOIST, None, "test", HOIST_SOURCE)
    result = rewrite_source("src/transformers/generation/utils.py", before.encode(), [hoist])
    assert result.error is None, result.error
    assert result.new_text() == "class GenerationMixin:\n" + METHOD_SOURCE + "\n" + REFUSING_EMBEDS_SOURCE


def test_the_variant_is_the_method_under_a_signature_that_refuses_embeddings() -> None:
    """What 4.45's generate() and upstream's tests read (``inspect.signature``), and what the variant returns."""
    namespace: dict[str, object] = {}
    exec(
        "class GenerationMixin:\n    def prepare_inputs_for_generation(self, input_ids, inputs_embeds=None, **kwargs):"
        "\n        return {'input_ids': input_ids, 'inputs_embeds': inputs_embeds, **kwargs}\n"
        + REFUSING_EMBEDS_SOURCE
        + "\n\nclass Model(GenerationMixin):\n    "
        + ASSIGNMENT
        + "\n",
        namespace,
    )
    model = namespace["Model"]()  # type: ignore[operator]
    parameters = inspect.signature(model.prepare_inputs_for_generation).parameters
    assert list(parameters) == ["input_ids", "kwargs"] and "inputs_embeds" not in parameters
    assert model.prepare_inputs_for_generation(1, use_cache=True) == {
        "input_ids": 1,
        "inputs_embeds": None,
        "use_cache": True,
    }
    assert REFUSING_EMBEDS in str(type(model).prepare_inputs_for_generation)


# --------------------------------------------------------------------------------------------- the plan


def _plan(*edits: Edit, members: tuple[str, ...] | None = None) -> Plan:
    ids = tuple(dict.fromkeys(e.override_id for e in edits if e.override_id))
    shard = Shard(ids[0], "override" if len(ids) == 1 else "copy-group", members or ids, edits)
    return Plan((shard,), None, (), ())


@pytest.fixture(scope="module")
def mini_override(mini_scan: ScanResult) -> Override:
    """An override of the stub-era fixture checkout, as one that may name the variant."""
    o = next(
        o
        for o in mini_scan.index.overrides
        if o.kind is FileKind.MODELING
        and o.generated_from is None
        and o.fallback is not None
        and o.fallback.kind is FallbackKind.MIXIN
    )
    return dataclasses.replace(o, in_library=True, inherits_generation_mixin=True)


@pytest.fixture(scope="module")
def mini_scan(tmp_path_factory: pytest.TempPathFactory) -> ScanResult:
    from codemod.analyse.scan import scan
    from codemod.checkout import resolve

    from .conftest import MINI_CHECKOUT, copy_fixture

    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CODEMOD_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
        root = copy_fixture(MINI_CHECKOUT, tmp_path_factory.mktemp("alias") / "mini_checkout")
        return scan(resolve(Path(root), with_git=False), use_cache=False, jobs=1)


def _edit(o: Override, kind: EditKind = EditKind.REDUCE) -> Edit:
    return Edit(o.file, o.class_name, kind, o.id, "test", BARE)


def test_the_plan_lets_a_reduction_and_a_trim_name_the_variant(mini_override: Override) -> None:
    o = mini_override
    assert may_alias(o)
    for kind in (EditKind.REDUCE, EditKind.TRIM):
        plan = with_aliases(_plan(_edit(o, kind), _edit(o, EditKind.MARK)), {o.id: o}, True, True)
        assert [(e.kind, e.alias) for e in plan.edits()] == [(kind, True), (EditKind.MARK, False)]


@pytest.mark.parametrize(
    ("changes", "why"),
    [
        ({"in_library": False}, "outside the package no mixin of this tool's carries the variant"),
        ({"kind": FileKind.MODULAR}, "the converter reads a modular source's methods"),
        (
            {"inherits_generation_mixin": None},
            "bases not known: can_generate() may read the mixin's name in the variant's",
        ),
    ],
)
def test_the_plan_keeps_a_method_where_the_variant_is_not_the_same(
    mini_override: Override, changes: dict[str, object], why: str
) -> None:
    o = dataclasses.replace(mini_override, **changes)
    assert not may_alias(o), why
    plan = with_aliases(_plan(_edit(o)), {o.id: o}, True, True)
    assert not any(e.alias for e in plan.edits()), why


def test_a_parent_override_in_between_keeps_the_method(mini_override: Override) -> None:
    o = mini_override
    assert o.fallback is not None
    parent = dataclasses.replace(o, fallback=dataclasses.replace(o.fallback, kind=FallbackKind.PARENT))
    assert not may_alias(parent)


def test_no_alias_where_the_mixin_is_not_this_tool_s(mini_override: Override) -> None:
    o = mini_override
    plan = with_aliases(_plan(_edit(o)), {o.id: o}, False, True)
    assert not any(e.alias for e in plan.edits())


def test_a_copy_group_aliases_all_its_reductions_or_none(mini_override: Override) -> None:
    o = mini_override
    other = dataclasses.replace(o, file="src/transformers/models/bar/modular_bar.py", kind=FileKind.MODULAR)
    other_id = "src/transformers/models/bar/modular_bar.py::BarForCausalLM"
    other = dataclasses.replace(other, class_name="BarForCausalLM")
    overrides = {o.id: o, other_id: other}
    edits = (_edit(o), Edit(other.file, other.class_name, EditKind.REDUCE, other_id, "test", BARE))
    plan = with_aliases(_plan(*edits, members=(o.id, other_id)), overrides, True, True)
    assert not any(e.alias for e in plan.edits())


def test_the_stub_era_plan_is_unchanged_by_the_variant(mini_scan: ScanResult) -> None:
    """The hoist now carries the variant; every other edit of the fixture's plan is as before."""
    plan = initial_plan(mini_scan)
    assert plan.hoist is not None and plan.hoist.text == HOIST_SOURCE
    assert not any(e.alias for e in plan.edits())


@pytest.mark.parametrize(
    ("enables", "expected"),
    [
        (True, [(EditKind.REDUCE, True), (EditKind.ADD_MIXIN_BASE, True)]),
        (False, [(EditKind.REDUCE, True)]),
    ],
)
def test_a_class_without_the_mixin_among_its_bases_gets_it_with_the_line(
    mini_override: Override, enables: bool, expected: list[tuple[EditKind, bool]]
) -> None:
    """4.45's masked LMs: their override was what made can_generate() true; the variant's name is the mixin's."""
    o = dataclasses.replace(mini_override, inherits_generation_mixin=False)
    assert may_alias(o)
    plan = with_aliases(_plan(_edit(o)), {o.id: o}, True, enables)
    assert [(e.kind, e.alias) for e in plan.edits()] == expected


_MASKED_LM = HEAD + src("""
    class FooForMaskedLM(FooPreTrainedModel):
        _generation_inputs_as_bert_for_masked_lm = True

        def prepare_inputs_for_generation(self, input_ids, attention_mask=None, **model_kwargs):
            return {"input_ids": input_ids}
""")


def _masked_lm_edits(body: str) -> list[Edit]:
    cls = "FooForMaskedLM"
    oid = f"{PATH}::{cls}"
    return [
        Edit(
            PATH, cls, EditKind.REDUCE, oid, "test", body, keep_params=("input_ids",), direct_return=True, alias=True
        ),
        Edit(PATH, cls, EditKind.ADD_MIXIN_BASE, oid, "test", "from ...generation import GenerationMixin", alias=True),
    ]


def test_the_base_a_line_needs_comes_with_the_line() -> None:
    result = rewrite_source(PATH, _MASKED_LM.encode(), _masked_lm_edits(BARE.replace("**kwargs", "**model_kwargs")))
    assert result.error is None, result.error
    assert result.new_text() == HEAD + src("""
        class FooForMaskedLM(FooPreTrainedModel, GenerationMixin):
            _generation_inputs_as_bert_for_masked_lm = True
            prepare_inputs_for_generation = GenerationMixin._prepare_inputs_for_generation_refusing_embeds
    """)


def test_without_the_line_the_class_keeps_its_bases() -> None:
    """A method that stays a method (here: it keeps a statement) keeps the override can_generate() reads."""
    body = "model_kwargs.pop('labels', None)\n" + BARE.replace("**kwargs", "**model_kwargs")
    result = rewrite_source(PATH, _MASKED_LM.encode(), _masked_lm_edits(body))
    assert result.error is None, result.error
    assert "class FooForMaskedLM(FooPreTrainedModel):" in result.new_text()
    assert "def prepare_inputs_for_generation(self, input_ids, **model_kwargs):" in result.new_text()


# --------------------------------------------------------------------------------------------- scanning such a line


def test_a_class_binding_the_method_by_assignment_is_listed_and_a_subclass_override_kept(
    tmp_path: Path, codemod_cache: Path
) -> None:
    """Foreign code (and a tree this tool migrated) may bind the method by assignment: the scan lists the class, and
    a subclass's override, which would fall back to what the class binds, stays (its fallback unknown)."""
    from codemod.analyse.classify import Action
    from codemod.analyse.scan import scan
    from codemod.checkout import resolve
    from codemod.publish.report import scan_document, to_markdown

    (tmp_path / "modeling_bound.py").write_text(
        src("""
        from transformers import GenerationMixin, PreTrainedModel


        def shared_prepare(self, input_ids, **kwargs):
            return {"input_ids": input_ids}


        class BoundModel(PreTrainedModel, GenerationMixin):
            prepare_inputs_for_generation = shared_prepare


        class ChildModel(BoundModel):
            def prepare_inputs_for_generation(self, input_ids, **kwargs):
                return {"input_ids": input_ids}
    """),
        encoding="utf-8",
    )
    result = scan(resolve(tmp_path, with_git=False), use_cache=False, jobs=1)
    assert [(b.class_name, b.value, b.line) for b in result.index.bound] == [("BoundModel", "shared_prepare", 8)]
    child = next(f for f in result.findings if f.override.class_name == "ChildModel")
    assert child.override.fallback is not None and child.override.fallback.kind is FallbackKind.UNKNOWN
    assert child.action is Action.KEEP
    assert scan_document(result)["bound_by_assignment"] == [
        {"path": "modeling_bound.py", "class_name": "BoundModel", "line": 8, "value": "shared_prepare"}
    ]
    assert "## Bound by assignment" in to_markdown(result)
    assert result.select(skip=["BoundModel"]).index.bound == ()


def test_an_edit_of_an_override_the_scan_does_not_know_keeps_its_shard_a_method(mini_override: Override) -> None:
    """A reduction in the shard whose override is not in the index (nothing said about its bases): no line anywhere."""
    o = mini_override
    stranger = Edit(
        "src/transformers/models/bar/modeling_bar.py",
        "BarForCausalLM",
        EditKind.REDUCE,
        "src/transformers/models/bar/modeling_bar.py::BarForCausalLM",
        "test",
        BARE,
    )
    plan = with_aliases(_plan(_edit(o), stranger, members=(o.id,)), {o.id: o}, True, True)
    assert not any(e.alias for e in plan.edits())
