"""Classes that take a changed override from a base are verified too (``codemod.analyse.inheritors``)."""

from __future__ import annotations

from pathlib import Path

from codemod.analyse.scan import scan
from codemod.checkout import resolve
from codemod.verify.session import inheriting_targets

BASE = """from transformers import PreTrainedModel


class BaseLM(PreTrainedModel):
    def prepare_inputs_for_generation(self, input_ids, **kwargs):
        return {"input_ids": input_ids, **kwargs}
"""

#: a file that never mentions the method: its classes inherit it all the same
CHILDREN = """from .modeling_base import BaseLM


class ChildLM(BaseLM):
    pass


class GrandChildLM(
    ChildLM,
):
    pass


class Unrelated:
    pass
"""

OWN = """from .modeling_base import BaseLM


class ShadowLM(BaseLM):
    def prepare_inputs_for_generation(self, input_ids, **kwargs):
        return {"input_ids": input_ids}


class ExtendsLM(BaseLM):
    def prepare_inputs_for_generation(self, input_ids, **kwargs):
        model_inputs = super().prepare_inputs_for_generation(input_ids, **kwargs)
        model_inputs["pixel_values"] = kwargs.get("pixel_values")
        return model_inputs
"""


def test_subclasses_of_a_changed_override_are_targets_with_its_id(tmp_path: Path, codemod_cache: Path) -> None:
    for name, text in {"modeling_base.py": BASE, "modeling_children.py": CHILDREN, "modeling_own.py": OWN}.items():
        (tmp_path / name).write_text(text)
    result = scan(resolve(tmp_path))
    targets, not_run = inheriting_targets(result, ["modeling_base.py::BaseLM"])
    found = {t.class_name: t for t in targets}
    assert not_run == []
    # through a file that never mentions the method, through a chain, and through super()
    assert set(found) == {"ChildLM", "GrandChildLM", "ExtendsLM"}
    assert all(t.inherits_from == "modeling_base.py::BaseLM" for t in found.values())
    assert found["GrandChildLM"].override_id == "modeling_children.py::GrandChildLM"
    assert found["ChildLM"].module.endswith("modeling_children")
    # ShadowLM's own method never reaches the base's: unaffected
    assert inheriting_targets(result, []) == ([], [])
    # a class that runs the changed code needs what it needs: the inputs its kept statements read
    needs = (frozenset({"pixel_values"}),)
    needing, _ = inheriting_targets(result, ["modeling_base.py::BaseLM"], {"modeling_base.py::BaseLM": needs})
    assert {t.class_name for t in needing} == set(found) and all(t.needs == needs for t in needing)
    assert all(t.needs == () for t in found.values())


def test_a_failing_inheritor_fails_the_override_it_inherits() -> None:
    """The inheritor's class is not an override of the plan: its failure reverts the one it takes."""
    from codemod.migrate import failing
    from codemod.verify.compare import ClassVerdict
    from codemod.verify.session import VerifyReport

    verdicts = (
        ClassVerdict("modeling_base.py::BaseLM", "identical"),
        ClassVerdict(
            "modeling_children.py::ChildLM",
            "crashed",
            detail="greedy: TypeError",
            inherits_from="modeling_base.py::BaseLM",
        ),
    )
    report = VerifyReport(verdicts, (), (), "cpu", "python", 1.0, "HEAD")
    assert failing(report, keep_unverified=False) == {
        "modeling_base.py::BaseLM": "ChildLM, which inherits it: crashed: greedy: TypeError"
    }


#: a modular source whose class inherits the changed override there only: the converter generates a class with
#: bases of its own (4.57's ``modular_gemma3n.py``: ``Gemma3nForConditionalGeneration(PaliGemmaForConditionalGeneration)``)
MODULAR = """from ..base.modeling_base import BaseLM


class ModularChildLM(BaseLM):
    def prepare_inputs_for_generation(self, input_ids, **kwargs):
        return super().prepare_inputs_for_generation(input_ids, **kwargs)
"""


def test_a_modular_source_that_inherits_a_changed_override_is_not_run_and_says_why(
    tmp_path: Path, codemod_cache: Path
) -> None:
    """4.57.1's written tree: ``codemod verify`` ran Gemma3n's and PerceptionLM's modular sources as classes that
    inherit PaliGemma's and LLaVA's changed overrides, and called them unverified (importing a modular source
    fails). What runs is the generated class, whose bases are its own: the source is listed as not run, with why."""
    (tmp_path / "base").mkdir()
    (tmp_path / "base" / "modeling_base.py").write_text(BASE)
    (tmp_path / "child").mkdir()
    (tmp_path / "child" / "modular_child.py").write_text(MODULAR)
    (tmp_path / "child" / "modeling_child.py").write_text(CHILDREN.replace(".modeling_base", "..base.modeling_base"))
    result = scan(resolve(tmp_path))
    targets, not_run = inheriting_targets(result, ["base/modeling_base.py::BaseLM"])
    assert {t.override_id for t in targets} == {
        "child/modeling_child.py::ChildLM",
        "child/modeling_child.py::GrandChildLM",
    }
    assert [override_id for override_id, _ in not_run] == ["child/modular_child.py::ModularChildLM"]
    assert "the class generated from it does not" in not_run[0][1]
