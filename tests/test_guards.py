"""Tests for ``rules.guards``: which ``if`` tests the engine understands, and what each branch means.

Every atom is checked in both directions: ``guard_of`` returns ``(if_guard, else_guard)``, so the
``else`` of ``past_key_values is None`` is the branch with a cache. Tests that are not guards must
give ``None``, so that the engine reports the whole ``if`` rather than guess at it.
"""

from __future__ import annotations

import libcst as cst
import pytest

from codemod.rules.guards import _ATOMS, PAST_NAMES, guard_of


def guards(test: str) -> tuple[str, str] | None:
    return guard_of(cst.parse_expression(test))


@pytest.mark.parametrize(
    ("test", "if_guard", "else_guard"),
    [
        # a cache, or none
        pytest.param("past_key_values is not None", "past-not-none", "no-past", id="past-is-not-none"),
        pytest.param("past_key_values is None", "no-past", "past-not-none", id="past-is-none"),
        pytest.param("past_key_values", "past-truthy", "no-past", id="past-truthy"),
        pytest.param("not past_key_values", "no-past", "past-truthy", id="not-past"),
        # formatting does not matter
        pytest.param("(past_key_values is not None)", "past-not-none", "no-past", id="parenthesised"),
        pytest.param("(past_key_values)", "past-truthy", "no-past", id="parenthesised-name"),
        pytest.param("past_key_values  is  not  None", "past-not-none", "no-past", id="spacing"),
        pytest.param(
            "past_key_values is not None or use_cache", "past-or-use-cache", "no-past", id="past-or-use-cache"
        ),
        # the first step, or a later one
        pytest.param("cache_position[0] == 0", "first-step", "later-step", id="cache-position-zero"),
        pytest.param("cache_position[0] != 0", "later-step", "first-step", id="cache-position-nonzero"),
        pytest.param("cache_position[0] > 0", "later-step", "first-step", id="cache-position-positive"),
        pytest.param("cache_position[ 0 ]==0", "first-step", "later-step", id="cache-position-spacing"),
        pytest.param("is_first_iteration", "first-step", "later-step", id="is-first-iteration"),
        pytest.param("not is_first_iteration", "later-step", "first-step", id="not-is-first-iteration"),
        # without a cache every step is a "first" one
        pytest.param("is_first_iteration or not use_cache", "first-step", "later-step", id="first-or-no-cache"),
        pytest.param(
            'is_first_iteration or not kwargs.get("use_cache", True)',
            "first-step",
            "later-step",
            id="first-or-no-cache-from-kwargs",
        ),
        pytest.param(
            "is_first_iteration or not model_kwargs.get('use_cache', True)",
            "first-step",
            "later-step",
            id="first-or-no-cache-from-other-kwargs-name",
        ),
        pytest.param("not is_first_iteration and use_cache", "later-step", "first-step", id="later-with-cache"),
        pytest.param(
            "use_cache and not is_first_iteration", "later-step", "first-step", id="later-with-cache-swapped"
        ),
        # any other plain name
        pytest.param("pixel_values is not None", "present:pixel_values", "absent:pixel_values", id="present"),
        pytest.param("pixel_values is None", "absent:pixel_values", "present:pixel_values", id="absent"),
        pytest.param("cache_params is None", "absent:cache_params", "present:cache_params", id="not-a-past-name"),
        # a key of **kwargs, as a reduction tests the caller's value ("None when the caller gives it")
        pytest.param(
            'kwargs.get("position_ids") is not None', "present:position_ids", "absent:position_ids", id="kwargs-key"
        ),
        pytest.param(
            "model_kwargs.get('position_ids') is None",
            "absent:position_ids",
            "present:position_ids",
            id="kwargs-key-absent",
        ),
    ],
)
def test_guard_atoms(test: str, if_guard: str, else_guard: str) -> None:
    assert guards(test) == (if_guard, else_guard)


@pytest.mark.parametrize("name", PAST_NAMES)
@pytest.mark.parametrize(
    ("template", "expected"),
    [
        ("{} is not None", ("past-not-none", "no-past")),
        ("{} is None", ("no-past", "past-not-none")),
        ("{}", ("past-truthy", "no-past")),
        ("not {}", ("no-past", "past-truthy")),
    ],
    ids=["is-not-none", "is-none", "truthy", "not"],
)
def test_every_past_name_is_a_cache(name: str, template: str, expected: tuple[str, str]) -> None:
    """``past``, ``past_key_value`` and ``past_key_values`` are all the cache, never ``present:NAME``."""
    assert guards(template.format(name)) == expected


def test_past_names() -> None:
    assert set(PAST_NAMES) == {"past_key_values", "past", "past_key_value"}


@pytest.mark.parametrize(
    "test",
    [
        pytest.param("use_cache", id="a-bare-name-that-is-not-a-cache"),
        pytest.param("self.cache is not None", id="attribute-is-not-none"),
        pytest.param("past_key_values[0] is not None", id="subscript-is-not-none"),
        pytest.param("x == 1", id="comparison"),
        pytest.param("cache_position[0] == 1", id="cache-position-other-index-value"),
        pytest.param("cache_position[-1] == 0", id="cache-position-last"),
        pytest.param("past_key_values is not None and use_cache", id="compound-and"),
        pytest.param("attention_mask is not None and position_ids is None", id="two-presences"),
        pytest.param("not use_cache or is_first_iteration", id="first-or-no-cache-swapped"),
        pytest.param("isinstance(past_key_values, StaticCache)", id="isinstance"),
        pytest.param("self.config.is_encoder_decoder", id="config-flag"),
        pytest.param("len(past_key_values) > 0", id="call"),
        pytest.param("kwargs.get(name) is not None", id="kwargs-variable-key"),
        pytest.param('self.extra.get("position_ids") is not None', id="get-on-an-attribute"),
        pytest.param('config.get("position_ids") is not None', id="get-on-a-dict-that-is-not-kwargs"),
    ],
)
def test_unknown_tests_are_not_guards(test: str) -> None:
    assert guards(test) is None


def _instantiate(template: str) -> tuple[str, str]:
    """An atom's template with its metavariables filled in, and the suffix its guards then carry."""
    suffix = ":pixel_values" if "$x" in template or "$k" in template.replace("$kw", "") else ""
    code = (
        template.replace("$p", "past_key_values")
        .replace("$x", "pixel_values")
        .replace("$kw", "kwargs")
        .replace("$k", '"pixel_values"')
    )
    assert "$" not in code, f"a metavariable this test does not know: {template}"
    return code, suffix


@pytest.mark.parametrize("atom", _ATOMS, ids=lambda atom: atom[0])
def test_every_atom_is_reachable(atom: tuple[str, str, str]) -> None:
    """No atom is shadowed by an earlier one: its own test gives its own pair of guards."""
    template, if_guard, else_guard = atom
    code, suffix = _instantiate(template)
    assert guards(code) == (if_guard + suffix, else_guard + suffix)


@pytest.mark.parametrize("atom", _ATOMS, ids=lambda atom: atom[0])
def test_negation_swaps_the_branches_where_the_negation_is_an_atom(atom: tuple[str, str, str]) -> None:
    template, if_guard, else_guard = atom
    code, suffix = _instantiate(template)
    negated = guards(f"not ({code})")
    if negated is not None:
        assert negated == (else_guard + suffix, if_guard + suffix)


# ------------------------------------------------------------------------------------------ never_true

from codemod.rules.base import Context  # noqa: E402
from codemod.rules.guards import never_runs, never_true  # noqa: E402

_CTX = Context(params=("input_ids", "attention_mask", "kwargs"), ids_param="input_ids", var_kwargs="kwargs")


@pytest.mark.parametrize(
    "test",
    [
        pytest.param('kwargs.get("attention_mask") is not None', id="get-is-not-none"),
        pytest.param('kwargs.get("attention_mask", None) is not None', id="get-default-is-not-none"),
        pytest.param('"attention_mask" in kwargs', id="in"),
        pytest.param('kwargs.get("attention_mask")', id="get-truthy"),
        pytest.param('input_features is not None and kwargs.get("attention_mask") is not None', id="qwen2-audio-4-45"),
        pytest.param('a and (b and kwargs.get("attention_mask") is not None)', id="nested-and"),
    ],
)
def test_a_test_asking_kwargs_for_a_parameter_never_holds(test: str) -> None:
    """Python binds a keyword a parameter takes to that parameter: ``**kwargs`` never holds it."""
    assert never_true(cst.parse_expression(test), _CTX)


@pytest.mark.parametrize(
    ("test", "ctx"),
    [
        pytest.param('kwargs.get("feature_mask") is not None', _CTX, id="no-parameter-of-that-name"),
        pytest.param('a or kwargs.get("attention_mask") is not None', _CTX, id="or: the other side may hold"),
        pytest.param('kwargs.get("attention_mask") is None', _CTX, id="is-none: always holds"),
        pytest.param('config.get("attention_mask") is not None', _CTX, id="not **kwargs"),
        pytest.param('model_kwargs.get("attention_mask") is not None', _CTX, id="another-dict"),
        pytest.param(
            'kwargs.get("attention_mask") is not None',
            Context(
                params=("input_ids", "attention_mask", "kwargs"),
                ids_param="input_ids",
                var_kwargs="kwargs",
                positional_only=("input_ids", "attention_mask"),
            ),
            id="positional-only: its name may reach **kwargs",
        ),
        pytest.param(
            'kwargs.get("attention_mask") is not None',
            Context(params=("input_ids", "attention_mask"), ids_param="input_ids", var_kwargs=None),
            id="no-**kwargs",
        ),
    ],
)
def test_tests_that_may_hold(test: str, ctx: Context) -> None:
    assert not never_true(cst.parse_expression(test), ctx)


@pytest.mark.parametrize(
    ("statement", "runs"),
    [
        pytest.param('if x is not None and kwargs.get("attention_mask") is not None:\n    y = 1\n', False, id="never"),
        pytest.param(
            'if f(x) and kwargs.get("attention_mask") is not None:\n    y = 1\n',
            True,
            id="a call before the test fails may do something",
        ),
        pytest.param(
            'if kwargs.get("attention_mask") is not None:\n    y = 1\nelse:\n    y = 2\n', True, id="an else runs"
        ),
        pytest.param('y = kwargs.get("attention_mask")\n', True, id="not an if"),
    ],
)
def test_a_branch_that_never_runs_changes_nothing(statement: str, runs: bool) -> None:
    assert never_runs(cst.parse_statement(statement), _CTX) is not runs
