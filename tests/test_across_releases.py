"""Repair candidates across releases (``codemod.analyse.across_releases``): an override kept only because the
target's ``generate()`` makes the cache before the first step gets its generic plan when ``apply --verify --from F``
migrates it from a release F where the cut ran after the first step; plain mode and same-release verification keep
it, and the scan of a tree says why it is kept and what a migration across releases tries.

The target is a stand-in package whose mixin is the 4.50 – 4.56 one with the 4.56 cache helpers
(``tests.test_cache_before_first_step``): an empty cache, true while empty, before the first step.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from codemod.analyse.across_releases import CANDIDATE, across_releases, cache_facts, candidates, repair_candidate
from codemod.analyse.classify import ERA_CUT_NOTE, Action, classify_override
from codemod.analyse.scan import ScanResult, scan
from codemod.analyse.target import Target, TargetOrigin
from codemod.checkout import resolve
from codemod.contracts import ReasonKind, Verdict
from codemod.migrate import failing
from codemod.rules.slice_to_last_token import CACHE_BEFORE_FIRST_STEP
from codemod.transform.plan import initial_plan
from codemod.verify.compare import ClassVerdict
from codemod.verify.session import VerifyReport
from tests.test_cache_before_first_step import FROM_4_56, cut_under, override, profile
from tests.test_mixin_eras import ERAS

from .conftest import make_target_package

ID = "modeling_toy.py::ToyForCausalLM"


@pytest.mark.parametrize(
    ("release", "empty"),
    [
        pytest.param("4.33.0", None, id="4.33-no-cache"),
        pytest.param("4.53.3", None, id="4.53-no-cache"),
        pytest.param("4.54.0", "falsy", id="4.54-empty-false"),
        pytest.param("4.55.4", "falsy", id="4.55-empty-false"),
        pytest.param("4.56.0", "truthy", id="4.56-true-while-empty"),
        pytest.param("5.23.0", "truthy", id="5.23-true-while-empty"),
    ],
)
def test_the_cache_fact_of_a_release(release: str, empty: str | None) -> None:
    """The same facts ``codemod.analyse.mixin`` reads from the releases' own generate() (their network test)."""
    facts = cache_facts(release)
    assert facts is not None
    assert (dict(facts[0][1])["empty"] if facts else None) == empty
    assert all(name == CACHE_BEFORE_FIRST_STEP for name, _ in facts)


def test_a_release_that_is_not_a_version_has_no_fact() -> None:
    assert cache_facts("main") is None


@pytest.mark.parametrize(
    ("test", "from_release", "action"),
    [
        pytest.param("past_key_values", "4.46.3", Action.DELETE, id="truthy-from-4.46"),
        pytest.param("past_key_values is not None", "4.33.0", Action.DELETE, id="not-none-from-4.33"),
        # 4.54's empty cache is false: there the truthy cut ran after the first step
        pytest.param("past_key_values", "4.54.0", Action.DELETE, id="truthy-from-4.54"),
        # 4.54 makes a cache that is not None: the old code cut the prompt on its own release too
        pytest.param("past_key_values is not None", "4.54.0", None, id="not-none-from-4.54-same-break"),
        # use_cache holds on the prompt step on every release: not the target's doing
        pytest.param("past_key_values is not None or use_cache", "4.46.3", None, id="or-use-cache-kept-anyway"),
        # the same release: nothing to repair across releases
        pytest.param("past_key_values", "5.23.0", None, id="same-era"),
    ],
)
def test_a_cut_kept_for_the_targets_cache_is_a_candidate_from_an_older_release(
    test: str, from_release: str, action: Action | None
) -> None:
    against = profile(FROM_4_56)
    finding = classify_override(override(cut_under(test)), against)
    assert finding.action is Action.KEEP  # what scan, diff and plain apply do
    candidate = repair_candidate(finding, against, from_release)
    if action is None:
        assert candidate is None
        return
    assert candidate is not None
    assert candidate.action is action
    assert any(r.kind is ReasonKind.NOTE and r.text.startswith(CANDIDATE) for r in candidate.reasons)
    # only verification proves it: the cut on the target's prompt is a difference in the standard flow
    assert any("cuts the prompt to its last token" in f for f in candidate.flow)
    assert candidates([finding, candidate]) == {candidate.override.id}


def test_an_override_kept_for_another_reason_is_no_candidate() -> None:
    """Its own position_ids computed another way keeps it on every release: the cut alone is not why."""
    source = """
    def prepare_inputs_for_generation(self, input_ids, past_key_values=None, **kwargs):
        if past_key_values:
            input_ids = input_ids[:, -1:]
        position_ids = kwargs.get("position_ids") * 2 + self.offset
        return {"input_ids": input_ids, "past_key_values": past_key_values, "position_ids": position_ids}
    """
    against = profile(FROM_4_56)
    finding = classify_override(override(source), against)
    assert finding.action is Action.KEEP
    assert repair_candidate(finding, against, "4.46.3") is None


MODELING = """
from torch import nn
from transformers import PreTrainedModel
from transformers.generation import GenerationMixin


class ToyForCausalLM(PreTrainedModel, GenerationMixin):
    def forward(self, input_ids=None, past_key_values=None, attention_mask=None, use_cache=None, **kwargs):
        return None
"""


def _scanned(tmp_path: Path) -> ScanResult:
    """A tree with the toy class (its override cuts under ``if past_key_values:``), judged against a stand-in
    5.23.0 whose mixin makes the cache before the first step, true while empty."""
    root = tmp_path / "tree"
    root.mkdir()
    method = textwrap.indent(textwrap.dedent(cut_under("past_key_values")), "    ")
    (root / "modeling_toy.py").write_text(MODELING.lstrip() + method, encoding="utf-8")
    package = make_target_package(tmp_path / "target", "5.23.0", pretrained_generative=False)
    mixin = "import inspect\n\nimport torch\n\n\n" + ERAS["4.50-4.56"].source
    (package / "generation" / "utils.py").write_text(mixin + textwrap.indent(textwrap.dedent(FROM_4_56), "    "))
    return scan(resolve(root), target=Target(TargetOrigin.RELEASE, package, "5.23.0"), use_cache=False)


def test_plain_mode_keeps_it_and_the_plan_across_releases_deletes_it(tmp_path: Path) -> None:
    result = _scanned(tmp_path)
    (finding,) = result.findings
    assert finding.action is Action.KEEP
    # the scan of a tree says why it is kept and what a migration across releases tries
    assert any(r.kind is ReasonKind.NOTE and r.text == ERA_CUT_NOTE for r in finding.reasons)
    assert dict(initial_plan(result, hold_unproven=True).actions) == {ID: Action.KEEP}
    # same-release verification (no --from) plans from the scan as it is
    assert across_releases(result, None) is result
    across = across_releases(result, "4.46.3")
    assert dict(initial_plan(across).actions) == {ID: Action.DELETE}
    assert candidates(across.findings) == {ID}


def _report(verdict: Verdict) -> VerifyReport:
    return VerifyReport((ClassVerdict(ID, verdict, detail="no environment"),), (), (), "cpu", "python", 1.0, "HEAD")


@pytest.mark.parametrize(
    ("proven_only", "failed"),
    [
        pytest.param(frozenset(), False, id="an-ordinary-change-kept-unverified"),
        pytest.param(frozenset({ID}), True, id="a-repair-candidate-never-kept-unverified"),
    ],
)
def test_a_repair_candidate_is_never_kept_unverified(proven_only: frozenset[str], failed: bool) -> None:
    assert (ID in failing(_report(Verdict.UNVERIFIED), True, proven_only)) is failed


def test_a_verified_repair_candidate_stays() -> None:
    assert failing(_report(Verdict.REPAIRS), False, frozenset({ID})) == {}
