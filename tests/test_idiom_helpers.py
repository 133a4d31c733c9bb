"""TB006's fix (``codemod.transform.idioms.helpers``): the private generation helpers 4.44 changed, onto what they
did. (before, after) pairs, no-ops with why, and what is reported."""

from __future__ import annotations

import ast

import pytest

from codemod.analyse.blocker_rules import RULES
from codemod.analyse.blockers import TreeFacts
from codemod.transform.idioms import IdiomTarget, migrate

ON_4_46 = IdiomTarget("4.46.3", from_legacy_cache=True)
ON_4_43 = IdiomTarget("4.43.4", from_legacy_cache=True)

#: ChatGLM2/3's own update of the model kwargs, as its remote code has it
UPDATE = """
class ChatGLMForConditionalGeneration(ChatGLMPreTrainedModel):
    def _update_model_kwargs_for_generation(
            self,
            outputs: ModelOutput,
            model_kwargs: Dict[str, Any],
            is_encoder_decoder: bool = False,
            standardize_cache_format: bool = False,
    ) -> Dict[str, Any]:
        # update past_key_values
        model_kwargs["past_key_values"] = self._extract_past_from_model_output(
            outputs, standardize_cache_format=standardize_cache_format
        )
        model_kwargs["is_first_forward"] = False
        return model_kwargs
"""
UPDATE_FIXED = UPDATE.replace(
    """self._extract_past_from_model_output(
            outputs, standardize_cache_format=standardize_cache_format
        )""",
    "outputs.past_key_values",
)
SUPER = """
class M(PreTrainedModel):
    def _update_model_kwargs_for_generation(self, outputs, model_kwargs, is_encoder_decoder=False,
                                            standardize_cache_format=False):
        model_kwargs = super()._update_model_kwargs_for_generation(
            outputs, model_kwargs, is_encoder_decoder, standardize_cache_format=standardize_cache_format
        )
        return model_kwargs
"""
SUPER_FIXED = SUPER.replace(
    "is_encoder_decoder, standardize_cache_format=standardize_cache_format\n", "is_encoder_decoder\n"
)
TB006 = next(r for r in RULES if r.code == "TB006")


def _hits(code: str) -> list[str]:
    return [h.code for h in TB006.find(ast.parse(code), TreeFacts())]


@pytest.mark.parametrize(
    ("before", "after"),
    [
        pytest.param(UPDATE, UPDATE_FIXED, id="extract-past"),
        pytest.param(
            UPDATE.replace(", standardize_cache_format=standardize_cache_format", ""),
            UPDATE_FIXED,
            id="extract-past-without-the-keyword",
        ),
        pytest.param(SUPER, SUPER_FIXED, id="keyword-dropped"),
    ],
)
def test_private_helpers_are_moved_onto_what_they_did(before: str, after: str) -> None:
    result = migrate(before, ON_4_46)
    assert result.source == after
    assert {e.code for e in result.edits} == {"TB006"}
    assert _hits(before) and not _hits(result.source)


@pytest.mark.parametrize(
    ("source", "target", "why"),
    [
        pytest.param(UPDATE, ON_4_43, "4.43 still takes the parameter and has the method", id="4.43-target"),
        pytest.param(
            UPDATE + "\n    def _extract_past_from_model_output(self, outputs, standardize_cache_format=False):\n"
            "        return outputs.past_key_values\n",
            ON_4_46,
            "the class's own method",
            id="own-method",
        ),
    ],
)
def test_nothing_to_move(source: str, target: IdiomTarget, why: str) -> None:
    result = migrate(source, target)
    assert not [e for e in result.edits if e.code == "TB006"], why


@pytest.mark.parametrize(
    ("source", "reason"),
    [
        pytest.param(UPDATE + "\n# reads outputs.mems too\n", "names another cache", id="mems"),
        pytest.param(
            UPDATE.replace("outputs, standardize_cache_format", "outputs, extra, standardize_cache_format"),
            "not _extract_past_from_model_output(outputs)",
            id="other-arguments",
        ),
    ],
)
def test_a_helper_call_not_recognised_is_reported(source: str, reason: str) -> None:
    result = migrate(source, ON_4_46)
    assert result.source == source
    assert any(n.code == "TB006" and reason in n.reason for n in result.not_migrated)
