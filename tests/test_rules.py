"""Tests for the behaviour recognisers in ``rules``.

Every rule is checked three ways, in the style of Fixit's ``VALID``/``INVALID`` and pyupgrade's tests,
from what its module carries (the cases live with the rules, the tests are generated from them):

- its docstring: a ``CODE name: summary`` header and an ``Example::`` that the rule (and only it)
  recognises when analysed as the body of an override;
- its positive cases (``rules.base.Case``): each variant of the idiom, also reformatted (comments,
  parentheses, quoting, trailing commas, wrapping), with exactly the detail and facets it must report;
  a rule without one fails;
- its no-op cases (``rules.base.NoOp``): near misses that must *not* count as the behaviour, each with
  why; the statement must then be listed as unrecognised (nothing is skipped silently).

Then how the rules are discovered, the values of the output keys, and the comparison with (fake)
mixin behaviours.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import textwrap

import libcst as cst
import pytest

from codemod import rules
from codemod.analyse.analysis import BodyAnalysis
from codemod.analyse.recognise import analyse_statements
from codemod.rules.base import Case, Coverage, Kind, NoOp, RuleModuleError, discover, parse_docstring

#: the parameters of the override the loose statements are analysed in
PARAMS = (
    "input_ids",
    "past_key_values",
    "attention_mask",
    "inputs_embeds",
    "cache_position",
    "position_ids",
    "use_cache",
    "token_type_ids",
    "pixel_values",
    "image_sizes",
    "is_first_iteration",
    "next_sequence_length",
    "cache_params",
)


def analyse(source: str, params: tuple[str, ...] = PARAMS, var_kwargs: str = "kwargs") -> BodyAnalysis:
    return analyse_statements(textwrap.dedent(source), params=params, var_kwargs=var_kwargs)


# ------------------------------------------------------------------------------------------ docstrings


@pytest.mark.parametrize("rule", rules.ALL, ids=lambda r: r.code)
def test_docstring_header(rule) -> None:
    assert re.fullmatch(r"PI\d{3}", rule.code)
    assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", rule.name)
    assert rule.summary and not rule.summary.startswith(" ")
    assert rule.example
    assert isinstance(rule.kind, Kind)


def test_codes_and_names_are_unique() -> None:
    codes = [r.code for r in rules.ALL]
    names = [r.name for r in rules.ALL]
    assert len(set(codes)) == len(codes)
    assert len(set(names)) == len(names)


def test_all_is_in_code_order_and_indexed() -> None:
    assert [r.code for r in rules.ALL] == sorted(r.code for r in rules.ALL)
    assert rules.BY_CODE == {r.code: r for r in rules.ALL}
    assert rules.BY_NAME == {r.name: r for r in rules.ALL}


# ------------------------------------------------------------------------------------------- discovery


def _modules() -> list[str]:
    return sorted(info.name for info in pkgutil.iter_modules(rules.__path__) if not info.name.startswith("_"))


@pytest.mark.parametrize("name", _modules())
def test_every_module_is_a_rule_or_a_helper(name: str) -> None:
    """Rules are discovered: every module but the helpers is one, with its docstring's code, name and example."""
    module = importlib.import_module(f"codemod.rules.{name}")
    if name in rules.HELPERS:
        assert not hasattr(module, "RULE")
        return
    code, rule_name, _, example = parse_docstring(module.__doc__)
    assert module.RULE in rules.ALL
    assert (module.RULE.code, module.RULE.name, module.RULE.example) == (code, rule_name, example)
    assert module.RULE.module == module.__name__
    assert module.RULE.cases == getattr(module, "CASES", ())


def test_discovery_finds_every_rule_module() -> None:
    assert sorted(r.module for r in rules.ALL) == [
        f"codemod.rules.{name}" for name in _modules() if name not in rules.HELPERS
    ]
    assert rules.HELPERS <= set(_modules())


GOOD_RULE = '''"""PI901 fake-thing: do a fake thing.

Example::

    x = 1
"""

from codemod.rules.base import Kind, TemplateRule, claim

RULE = TemplateRule(__doc__, Kind.PLUMBING, {"x": "x = 1"}, lambda captures, ctx, variant: claim())
'''


@pytest.mark.parametrize(
    ("source", "message"),
    [
        pytest.param('"""PI902 fake: no rule.\n\nExample::\n\n    x = 1\n"""\n', "needs a RULE", id="no-rule"),
        pytest.param(
            '"""PI902 fake: a string.\n\nExample::\n\n    x = 1\n"""\nRULE = "fake"\n', "needs a RULE", id="not-a-rule"
        ),
        pytest.param(GOOD_RULE.replace("PI901 fake-thing", "Fake thing"), "must start with", id="no-header"),
        pytest.param(GOOD_RULE.replace("Example::", "For example:"), "Example::", id="no-example"),
        pytest.param(
            GOOD_RULE.replace("TemplateRule(__doc__,", "TemplateRule(__doc__.replace('PI901', 'PI903'),"),
            "RULE is PI903 fake-thing, the docstring says PI901",
            id="docstring-and-rule-disagree",
        ),
        pytest.param(GOOD_RULE.replace("fake-thing", "other-thing"), "repeats the code or the name", id="code-taken"),
        pytest.param(GOOD_RULE.replace("PI901", "PI904"), "repeats the code or the name", id="name-taken"),
        pytest.param(GOOD_RULE + "CASES = ({'source': 'x = 1'},)\n", "only Case and NoOp", id="cases-not-cases"),
        pytest.param(
            GOOD_RULE + "from codemod.rules.base import Case\nCASES = (Case('a', 'x = 1', detail=''),) * 2\n",
            "case ids repeat",
            id="case-ids-repeat",
        ),
        pytest.param(GOOD_RULE + "ERAS = ('4.46: does it',)\n", "only EraNote", id="eras-not-notes"),
        pytest.param(GOOD_RULE + "BECOMES = ('kept',)\n", "BECOMES is a string", id="becomes-not-a-string"),
    ],
)
def test_a_malformed_rule_module_fails_discovery_loudly(tmp_path, monkeypatch, source: str, message: str) -> None:
    """A module of a rules package that is not a well-formed rule stops the import, naming itself."""
    package = f"fakerules_{tmp_path.name.replace('-', '_')}"
    (tmp_path / package).mkdir()
    (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / package / "a_good.py").write_text(GOOD_RULE)
    (tmp_path / package / "b_bad.py").write_text(source)
    (tmp_path / package / "helper.py").write_text("X = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(RuleModuleError, match=rf"^{package}\.b_bad: .*{re.escape(message)}"):
        discover(package, [str(tmp_path / package)], helpers={"helper"})


def test_discovery_skips_helpers_and_private_modules_and_sorts_by_code(tmp_path, monkeypatch) -> None:
    package = f"fakerules_{tmp_path.name.replace('-', '_')}"
    (tmp_path / package).mkdir()
    (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / package / "a_late.py").write_text(GOOD_RULE.replace("PI901", "PI909") + "BECOMES = 'kept'\n")
    (tmp_path / package / "b_early.py").write_text(GOOD_RULE.replace("PI901 fake-thing", "PI900 early-thing"))
    (tmp_path / package / "_private.py").write_text("X = 1\n")
    (tmp_path / package / "helper.py").write_text("X = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    found = discover(package, [str(tmp_path / package)], helpers={"helper"})
    assert [(r.code, r.name, r.module) for r in found] == [
        ("PI900", "early-thing", f"{package}.b_early"),
        ("PI909", "fake-thing", f"{package}.a_late"),
    ]
    assert (found[0].description, found[0].cases, found[0].eras, found[0].becomes) == ("", (), (), "")
    assert found[1].becomes == "kept"


@pytest.mark.parametrize("rule", rules.ALL, ids=lambda r: f"{r.code}-{r.name}")
def test_example_is_recognised_by_exactly_this_rule(rule) -> None:
    analysis = analyse(rule.example)
    assert analysis.unrecognised == ()
    assert {r.code for r in analysis.recognised} == {rule.code}
    assert rule.name in analysis.behaviours


class _Reformat(cst.CSTTransformer):
    """Layout only: redundant parentheses, comments, blank lines, single quotes."""

    @staticmethod
    def _paren(node: cst.BaseExpression) -> cst.BaseExpression:
        return node if node.lpar else node.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])

    def leave_Assign(self, original, updated):
        return updated.with_changes(value=self._paren(updated.value))

    def leave_Arg(self, original, updated):
        return updated if updated.star else updated.with_changes(value=self._paren(updated.value))

    def leave_DictElement(self, original, updated):
        return updated.with_changes(value=self._paren(updated.value))

    def leave_If(self, original, updated):
        comment = cst.EmptyLine(comment=cst.Comment("# why"))
        return updated.with_changes(test=self._paren(updated.test), leading_lines=[*updated.leading_lines, comment])

    def leave_SimpleStatementLine(self, original, updated):
        return updated.with_changes(
            leading_lines=[*updated.leading_lines, cst.EmptyLine(), cst.EmptyLine(comment=cst.Comment("# what"))],
            trailing_whitespace=cst.TrailingWhitespace(cst.SimpleWhitespace("  "), cst.Comment("# note")),
        )

    def leave_SimpleString(self, original, updated):
        value = updated.value
        if value.startswith('"') and not value.startswith('"""') and "'" not in value:
            return updated.with_changes(value="'" + value[1:-1] + "'")
        return updated


@pytest.mark.parametrize("rule", rules.ALL, ids=lambda r: f"{r.code}-{r.name}")
def test_example_survives_reformatting(rule) -> None:
    """Layout never matters: the reformatted example is recognised the same way."""
    reformatted = cst.parse_module(rule.example).visit(_Reformat()).code
    assert reformatted != rule.example

    def summary(analysis: BodyAnalysis) -> list[tuple[str, str, str, tuple[tuple[str, str], ...]]]:
        return [(r.code, r.behaviour, r.detail, r.facets) for r in analysis.recognised]

    analysis = analyse(reformatted)
    assert analysis.unrecognised == ()
    assert summary(analysis) == summary(analyse(rule.example))


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        pytest.param(None, "need a docstring", id="no-docstring"),
        pytest.param("", "need a docstring", id="empty"),
        pytest.param("Slice the ids.\n\nExample::\n\n    x = 1\n", "must start with", id="no-header"),
        pytest.param("PI1 slice: summary\n\nExample::\n\n    x = 1\n", "must start with", id="short-code"),
        pytest.param("PI101 Slice_It: summary\n\nExample::\n\n    x = 1\n", "must start with", id="bad-name"),
        pytest.param("PI101 slice: summary\n\nNo example here.\n", "Example::", id="no-example"),
    ],
)
def test_parse_docstring_rejects(doc: str | None, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_docstring(doc)


def test_parse_docstring_reads_the_indented_example_only() -> None:
    doc = (
        "PI999 do-thing: do a thing.\n"
        "\n"
        "More words.\n"
        "\n"
        "Example::\n"
        "\n"
        "    if a:\n"
        "        b = 1\n"
        "\n"
        "    c = 2\n"
        "\n"
        "Trailing prose, not part of the example.\n"
    )
    assert parse_docstring(doc) == ("PI999", "do-thing", "do a thing.", "if a:\n    b = 1\n\nc = 2")


# ----------------------------------------------------------------------------------------------- cases
#
# Generated from the rule modules' CASES (rules.base.Case, rules.base.NoOp): each rule's positive
# examples and its near misses, each with why it is not the behaviour.


def _cases(kind: type) -> list:
    return [
        pytest.param(rule, case, id=f"{rule.code}-{case.id}")
        for rule in rules.ALL
        for case in rule.cases
        if isinstance(case, kind)
    ]


@pytest.mark.parametrize("rule", rules.ALL, ids=lambda r: f"{r.code}-{r.name}")
def test_every_rule_has_a_positive_case(rule) -> None:
    assert rule.positives, f"{rule.module} has no Case in its CASES"


@pytest.mark.parametrize("rule", [r for r in rules.ALL if r.eras], ids=lambda r: f"{r.code}-{r.name}")
def test_era_notes(rule) -> None:
    """What the mixins do about a rule, where it says: releases, then what they do, in a phrase each."""
    for note in rule.eras:
        assert note.releases.strip() and note.does.strip() and not note.does.endswith(".")
    assert len({note.releases for note in rule.eras}) == len(rule.eras)


@pytest.mark.parametrize(("rule", "case"), _cases(Case))
def test_positive_case(rule, case: Case) -> None:
    """The rule claims the behaviour once, with exactly the detail and facets the case expects."""
    analysis = analyse(case.source)
    behaviour = case.behaviour or rule.name
    found = [r for r in analysis.recognised if r.behaviour == behaviour]
    assert len(found) == 1, analysis.recognised
    (claim,) = found
    assert claim.code == rule.code
    assert (claim.detail, dict(claim.facets)) == (case.detail, dict(case.facets))
    assert {r.behaviour for r in analysis.recognised if r.code == rule.code} == {behaviour, *case.implies}
    assert {r.behaviour for r in analysis.recognised if r.code != rule.code} == set(case.others)
    assert [u.code for u in analysis.unrecognised] == list(case.unrecognised)
    if case.lines is not None:
        assert (claim.line, claim.end_line) == case.lines


@pytest.mark.parametrize(("rule", "case"), _cases(NoOp))
def test_noop_case(rule, case: NoOp) -> None:
    """The rule claims nothing, and the statement is listed as unrecognised (nothing is skipped silently)."""
    analysis = analyse(case.source)
    assert rule.name not in analysis.behaviours
    assert [r for r in analysis.recognised if r.code == rule.code] == []
    assert any(case.unrecognised in u.code for u in analysis.unrecognised), analysis.unrecognised
    assert case.why.strip() and not case.why.endswith(".")


@pytest.mark.parametrize(("rule", "case"), _cases((Case, NoOp)))
def test_case_parses(rule, case: Case | NoOp) -> None:
    """A case is code an override's body may hold; so is every statement a positive case leaves unrecognised."""
    for source in (case.source, *(case.unrecognised if isinstance(case, Case) else ())):
        cst.parse_module(source)
        compile(
            "def prepare_inputs_for_generation(self, input_ids, **kwargs):\n" + textwrap.indent(source, "    "),
            f"<{rule.code} {case.id}>",
            "exec",
        )


@pytest.mark.parametrize(("rule", "case"), _cases(Case))
def test_positive_case_survives_reformatting(rule, case: Case) -> None:
    """Layout never matters: each positive case, reformatted, is recognised the same way."""
    reformatted = cst.parse_module(case.source).visit(_Reformat()).code
    assert reformatted != case.source

    def summary(analysis: BodyAnalysis) -> list[tuple[str, str, str, tuple[tuple[str, str], ...]]]:
        return [(r.code, r.behaviour, r.detail, r.facets) for r in analysis.recognised]

    assert summary(analyse(reformatted)) == summary(analyse(case.source))


# ----------------------------------------------------------------------------------------- output keys


@pytest.mark.parametrize(
    ("source", "params", "expected"),
    [
        pytest.param(
            """
            token_type_ids = kwargs.get("token_type_ids", None)
            if past_key_values:
                input_ids = input_ids[:, -1:]
            attention_mask = kwargs.get("attention_mask", None)
            model_inputs = {"input_ids": input_ids}
            model_inputs.update(
                {
                    "past_key_values": past_key_values,
                    "use_cache": kwargs.get("use_cache"),
                    "attention_mask": attention_mask,
                    "token_type_ids": token_type_ids,
                }
            )
            return model_inputs
            """,
            ("input_ids", "past_key_values", "inputs_embeds"),
            {
                "input_ids": "ids:last token",
                "past_key_values": "param:past_key_values",
                "use_cache": "param:use_cache",
                "attention_mask": "param:attention_mask",
                "token_type_ids": "param:token_type_ids",
            },
            id="gpt2-like-closed-dict-with-kwargs-get",
        ),
        pytest.param(
            """
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
                model_inputs = {"input_ids": input_ids.clone(memory_format=torch.contiguous_format), "inputs_embeds": None}
            model_inputs.update(
                {
                    "position_ids": position_ids,
                    "cache_position": cache_position,
                    "past_key_values": past_key_values,
                    "use_cache": use_cache,
                    "attention_mask": attention_mask,
                }
            )
            return model_inputs
            """,
            PARAMS,
            {
                "input_ids": "ids:cache_position, contiguous",
                "inputs_embeds": "first-step:inputs_embeds",
                "position_ids": "behaviour:position-ids-from-mask",
                "cache_position": "param:cache_position",
                "past_key_values": "param:past_key_values",
                "use_cache": "param:use_cache",
                "attention_mask": "param:attention_mask",
            },
            id="llama-like-update",
        ),
        pytest.param(
            """
            model_inputs = {"input_ids": input_ids}
            if cache_position[0] == 0:
                model_inputs["pixel_values"] = pixel_values
            return model_inputs
            """,
            PARAMS,
            {"input_ids": "ids:unsliced", "pixel_values": "first-step:pixel_values"},
            id="first-step-only-extra",
        ),
        pytest.param(
            """
            model_inputs = {"pixel_values": None}
            if is_first_iteration:
                model_inputs["pixel_values"] = pixel_values
            """,
            PARAMS,
            {"pixel_values": "first-step:pixel_values"},
            id="none-then-first-step",
        ),
        pytest.param(
            """
            if is_first_iteration or not use_cache:
                model_inputs["token_type_ids"] = kwargs.get("token_type_ids")
            else:
                model_inputs["token_type_ids"] = None
            """,
            ("input_ids", "use_cache", "is_first_iteration"),
            {"token_type_ids": "first-step:token_type_ids"},
            id="first-step-then-none",
        ),
        pytest.param(
            """
            return {
                "input_ids": input_ids,
                "pixel_values": pixel_values if past_key_values is None else None,
                "image_sizes": None if past_key_values is None else image_sizes,
                "extra": pixel_values if cache_position[0] == 0 else None,
            }
            """,
            PARAMS,
            {
                "input_ids": "ids:unsliced",
                "pixel_values": "first-step:pixel_values",
                "image_sizes": "later-step:image_sizes",
                "extra": "first-step:pixel_values",
            },
            id="conditional-expressions",
        ),
        pytest.param(
            """
            return {"pixel_values": pixel_values if attention_mask is None else None}
            """,
            PARAMS,
            {"pixel_values": "expr:pixel_values if attention_mask is None else None"},
            id="conditional-on-something-else-is-an-expression",
        ),
        pytest.param(
            """
            model_inputs = {
                "input_ids": input_ids,
                "num_beams": self.config.num_beams,
                "k": 3,
                "flag": True,
                "nothing": None,
                "scaled": attention_mask * 2,
            }
            """,
            PARAMS,
            {
                "input_ids": "ids:unsliced",
                "num_beams": "const:self.config.num_beams",
                "k": "const:3",
                "flag": "const:True",
                "nothing": "none",
                "scaled": "expr:attention_mask * 2",
            },
            id="constants-and-expressions",
        ),
        pytest.param(
            """
            model_inputs = super().prepare_inputs_for_generation(
                input_ids, past_key_values=past_key_values, attention_mask=None, **kwargs
            )
            model_inputs["pixel_values"] = pixel_values
            return model_inputs
            """,
            ("input_ids", "past_key_values", "attention_mask", "pixel_values"),
            {"attention_mask": "none", "pixel_values": "param:pixel_values"},
            id="super-with-an-adjusted-argument",
        ),
        pytest.param(
            """
            audio_values = kwargs.pop("audio_values", None)
            model_inputs = super().prepare_inputs_for_generation(input_ids, **kwargs)
            if is_first_iteration:
                model_inputs["audio_values"] = audio_values
            return model_inputs
            """,
            ("input_ids", "is_first_iteration"),
            {"audio_values": "first-step:audio_values"},
            id="popped-then-added-back-on-the-first-step",
        ),
        pytest.param(
            """
            model_inputs = {"input_ids": input_ids, "labels": None}
            model_inputs.pop("labels", None)
            """,
            PARAMS,
            {"input_ids": "ids:unsliced"},
            id="dropped",
        ),
        pytest.param(
            """
            model_inputs = {"input_ids": input_ids}
            model_inputs.pop("labels", None)
            model_inputs["labels"] = None
            """,
            PARAMS,
            {"input_ids": "ids:unsliced", "labels": "none"},
            id="dropped-then-set-again",
        ),
    ],
)
def test_output_values(source: str, params: tuple[str, ...], expected: dict[str, str]) -> None:
    analysis = analyse(source, params=params)
    assert analysis.unrecognised == ()
    assert {k: str(v) for k, v in analysis.output_values().items()} == expected


def test_super_delegation_withholds_parameters() -> None:
    analysis = analyse(
        """
        model_inputs = super().prepare_inputs_for_generation(
            input_ids, past_key_values=past_key_values, attention_mask=None, **kwargs
        )
        model_inputs["pixel_values"] = pixel_values
        return model_inputs
        """,
        params=("input_ids", "past_key_values", "attention_mask", "pixel_values", "image_sizes"),
    )
    assert analysis.delegates_to == "super"
    assert analysis.forwards_kwargs
    # pixel_values is withheld from the call but added back; image_sizes is not
    assert analysis.withheld == ("pixel_values", "image_sizes")


@pytest.mark.parametrize(
    ("source", "forwards"),
    [
        pytest.param('model_inputs = {"input_ids": input_ids}', False, id="closed-dict"),
        pytest.param('model_inputs = {"input_ids": input_ids, **kwargs}', True, id="spread-kwargs"),
        pytest.param('return {**kwargs, "input_ids": input_ids}', True, id="spread-first"),
        pytest.param(
            "for key, value in kwargs.items():\n    if key not in model_inputs:\n        model_inputs[key] = value",
            True,
            id="forward-loop",
        ),
        pytest.param(
            "model_inputs = super().prepare_inputs_for_generation(input_ids)", False, id="super-without-kwargs"
        ),
    ],
)
def test_forwards_kwargs(source: str, forwards: bool) -> None:
    analysis = analyse(source)
    assert analysis.unrecognised == ()
    assert analysis.forwards_kwargs is forwards


# -------------------------------------------------------------------------------------------- coverage


def coverage(name: str, facets: dict[str, str], mixin: dict[str, list[dict[str, str]]]) -> Coverage:
    return rules.BY_NAME[name].coverage(facets, mixin)


CACHE_POSITION_MIXIN = {"slice-by-cache-position": [{}]}
NEXT_SEQUENCE_MIXIN = {"slice-by-next-sequence-length": [{}]}


@pytest.mark.parametrize("rule", [r for r in rules.ALL if r.kind is Kind.PLUMBING], ids=lambda r: r.name)
def test_plumbing_is_always_covered(rule) -> None:
    assert rule.coverage({}, {}) == Coverage(True)


@pytest.mark.parametrize(
    ("name", "mixin"),
    [
        pytest.param("slice-by-cache-position", CACHE_POSITION_MIXIN, id="PI101-same"),
        pytest.param("slice-by-cache-position", NEXT_SEQUENCE_MIXIN, id="PI101-by-the-5x-slice"),
        pytest.param("slice-by-past-length", CACHE_POSITION_MIXIN, id="PI102-same-tokens"),
        pytest.param("slice-by-past-length", NEXT_SEQUENCE_MIXIN, id="PI102-by-the-5x-slice"),
        pytest.param("state-space-cache", {"state-space-cache": [{}]}, id="PI171-a-mixin-that-knows-it"),
        pytest.param("slice-by-cache-length", CACHE_POSITION_MIXIN, id="PI105-same-tokens"),
    ],
)
def test_covered_without_differences(name: str, mixin) -> None:
    assert coverage(name, {}, mixin) == Coverage(True)


def test_a_cache_length_slice_that_crops_the_mask_is_covered_with_a_difference_outside_the_standard_flow() -> None:
    found = coverage("slice-by-cache-length", {"crop": "to the maximum cache length"}, CACHE_POSITION_MIXIN)
    assert found.covered and found.differences and not found.flow_differences
    assert not coverage("slice-by-cache-length", {}, {}).covered


HYBRID = {"cache": "HybridCache", "helper": "the module's helper", "unless": "flash attention"}


def test_a_hybrid_cache_mask_is_covered_alike_by_a_mixin_that_builds_it_as_gemma_2_did() -> None:
    """Our generic mixin for 4.45 builds the 4D mask for a StaticCache, and for a HybridCache except under flash
    attention, as Gemma 2 did: nothing differs. A mixin that builds it for StaticCache alone does not cover it."""
    ours = {
        "static-cache-mask": [
            {
                "cache": "StaticCache",
                "helper": "the base model's or the module's helper",
                "also": "HybridCache",
                "also_unless": "flash attention",
            }
        ]
    }
    assert coverage("static-cache-mask", HYBRID, ours) == Coverage(True)
    static_only = {"static-cache-mask": [{"cache": "StaticCache", "helper": "the module's helper"}]}
    assert not coverage("static-cache-mask", HYBRID, static_only).covered
    # a StaticCache override against our mixin: no flash-attention difference either way
    assert coverage("static-cache-mask", {"cache": "StaticCache", "helper": "the module's helper"}, ours) == Coverage(
        True
    )
    # a HybridCache mask built under flash attention too is a difference from ours
    built_always = {"cache": "HybridCache", "helper": "the module's helper"}
    assert coverage("static-cache-mask", built_always, ours).differences == (
        "builds the 4D mask under flash attention too; the mixin does not",
    )


@pytest.mark.parametrize(
    ("name", "facets", "missing"),
    [
        pytest.param("slice-by-cache-position", {}, "the mixin does not keep only the tokens", id="PI101"),
        pytest.param("slice-by-past-length", {}, "the mixin does not drop the tokens", id="PI102"),
        pytest.param("slice-to-last-token", {}, "does not slice the ids", id="PI103"),
        pytest.param("position-ids-from-mask", {"slice": "new tokens"}, "does not build position_ids", id="PI111"),
        pytest.param("inputs-embeds-first-step", {"first_step": "cache_position"}, "inputs_embeds", id="PI121"),
        pytest.param("static-cache-mask", {"cache": "StaticCache"}, "4D mask", id="PI131"),
        pytest.param("static-cache-pad-mask", {}, "pad the 2D attention mask", id="PI132"),
        pytest.param("slice-with-ids", {"names": "token_type_ids"}, "token_type_ids", id="PI141"),
        pytest.param("state-space-cache", {}, "state cache", id="PI171"),
    ],
)
def test_missing_from_an_empty_mixin(name: str, facets: dict[str, str], missing: str) -> None:
    found = coverage(name, facets, {})
    assert not found.covered
    assert missing in found.missing


def test_slice_to_last_token_is_covered_with_a_difference() -> None:
    for mixin in (CACHE_POSITION_MIXIN, NEXT_SEQUENCE_MIXIN):
        found = coverage("slice-to-last-token", {}, mixin)
        assert found.covered
        assert len(found.differences) == 1
        assert "assisted decoding" in found.differences[0]


@pytest.mark.parametrize(
    ("facets", "mixin", "differences", "flow"),
    [
        pytest.param(
            {"slice": "new tokens", "padding": "1", "when": "always"},
            [{"slice": "new tokens", "padding": "1"}],
            [],
            [],
            id="same",
        ),
        pytest.param({"slice": "last token"}, [{}], ["to the last token"], [], id="last-token"),
        pytest.param({"slice": "none"}, [{}], ["does not slice position_ids"], [], id="not-sliced"),
        # an ALiBi configuration gets no position_ids at all: that changes what the standard flow prepares
        pytest.param({"slice": "new tokens", "when": "alibi off"}, [{}], [], ["only without ALiBi"], id="alibi"),
        pytest.param(
            {"slice": "new tokens", "passed": "ignored without a mask"},
            [{}],
            ["drops position_ids passed without an attention mask"],
            [],
            id="passed-ignored",
        ),
        pytest.param(
            {"slice": "new tokens", "padding": "1"},
            [{"padding": "0"}],
            ["fills padded positions with 1, the mixin with 0"],
            [],
            id="padding",
        ),
        pytest.param(
            {"slice": "new tokens"},
            [{"where": "once, in generate()"}],
            ["the mixin builds them once, in generate()"],
            [],
            id="built-elsewhere",
        ),
        pytest.param(
            {"slice": "last token", "when": "alibi off"},
            [{}],
            ["to the last token"],
            ["only without ALiBi"],
            id="several",
        ),
    ],
)
def test_position_ids_coverage(facets, mixin, differences: list[str], flow: list[str]) -> None:
    found = coverage("position-ids-from-mask", facets, {"position-ids-from-mask": mixin})
    assert found.covered
    assert len(found.differences) == len(differences)
    for text, fragment in zip(found.differences, differences, strict=False):
        assert fragment in text
    assert len(found.flow_differences) == len(flow)
    for text, fragment in zip(found.flow_differences, flow, strict=False):
        assert fragment in text


@pytest.mark.parametrize(
    ("facets", "theirs", "difference"),
    [
        pytest.param({"first_step": "cache_position"}, {"first_step": "cache_position"}, None, id="same"),
        pytest.param({"first_step": "is_first_iteration"}, {"first_step": "is_first_iteration"}, None, id="5x"),
        pytest.param({"first_step": "no cache"}, {"first_step": "cache_position"}, "absent cache", id="absent-cache"),
        pytest.param({"first_step": "no cache"}, {"first_step": "no cache"}, None, id="absent-cache-both"),
    ],
)
def test_inputs_embeds_coverage(facets, theirs, difference: str | None) -> None:
    found = coverage("inputs-embeds-first-step", facets, {"inputs-embeds-first-step": [theirs]})
    assert found.covered
    if difference is None:
        assert found.differences == ()
    else:
        (text,) = found.differences
        assert difference in text


@pytest.mark.parametrize(
    ("facets", "mixin", "covered", "expected"),
    [
        pytest.param(
            {"cache": "StaticCache", "helper": "the module's helper"},
            [{"cache": "StaticCache", "helper": "the base model's or the module's helper"}],
            True,
            [],
            id="same-helper-family",
        ),
        pytest.param(
            {"cache": "StaticCache", "helper": "self.model._prepare_4d_causal_attention_mask_with_cache_position"},
            [{"cache": "StaticCache", "helper": "the module's helper"}],
            True,
            ["builds the mask with self.model."],
            id="other-helper",
        ),
        pytest.param(
            {"cache": "HybridCache", "helper": "the module's helper", "unless": "flash attention"},
            [{"cache": "StaticCache", "helper": "the module's helper"}],
            False,
            "only for StaticCache, not HybridCache",
            id="hybrid-cache-not-handled",
        ),
        pytest.param(
            {"cache": "HybridCache", "helper": "the module's helper", "unless": "flash attention"},
            [{"cache": "any compileable Cache", "helper": "the module's helper"}],
            True,
            ["skips the 4D mask under flash attention"],
            id="any-compileable-cache",
        ),
        pytest.param(
            {"cache": "HybridCache", "helper": "the module's helper"},
            [{"cache": "StaticCache"}, {"cache": "HybridCache"}],
            True,
            [],
            id="several-mixin-blocks",
        ),
    ],
)
def test_static_cache_mask_coverage(facets, mixin, covered: bool, expected) -> None:
    found = coverage("static-cache-mask", facets, {"static-cache-mask": mixin})
    assert found.covered is covered
    if covered:
        assert len(found.differences) == len(expected)
        for text, fragment in zip(found.differences, expected, strict=False):
            assert fragment in text
    else:
        assert expected in found.missing


@pytest.mark.parametrize(
    ("names", "mixin", "covered", "missing"),
    [
        pytest.param("token_type_ids", [{"names": "position_ids,token_type_ids"}], True, "", id="handled"),
        pytest.param("position_ids,token_type_ids", [{"names": "position_ids,token_type_ids"}], True, "", id="both"),
        pytest.param(
            "mm_token_type_ids",
            [{"names": "position_ids,token_type_ids"}],
            False,
            "mm_token_type_ids",
            id="not-handled",
        ),
        pytest.param(
            "mm_token_type_ids",
            [{"names": "position_ids"}, {"names": "mm_token_type_ids"}],
            True,
            "",
            id="handled-by-a-second-block",
        ),
    ],
)
def test_slice_with_ids_coverage(names: str, mixin, covered: bool, missing: str) -> None:
    found = coverage("slice-with-ids", {"names": names}, {"slice-with-ids": mixin})
    assert found.covered is covered
    assert missing in found.missing


def test_default_attention_mask_is_covered_with_a_difference() -> None:
    for mixin in ({}, CACHE_POSITION_MIXIN):
        found = coverage("default-attention-mask", {}, mixin)
        assert found.covered
        (text,) = found.differences
        assert "attends to every token" in text
