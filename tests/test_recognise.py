"""Tests for ``codemod.analyse.recognise``: the engine that walks an override's body.

The rules themselves are tested in ``test_rules.py``; here: how the engine descends into guarded
blocks, reports what no rule claims (with absolute lines), ignores inert statements, picks between
competing claims, reads the signature, and threads values from one statement to the next.
"""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from codemod import rules
from codemod.analyse.analysis import Param
from codemod.analyse.recognise import analyse_source, analyse_statements, parameters
from codemod.rules.base import Kind, Match, Rule


def analyse(source: str, **kwargs) -> object:
    return analyse_statements(textwrap.dedent(source), **kwargs)


def behaviours_at(analysis) -> list[tuple[str, int]]:
    return [(r.behaviour, r.line) for r in analysis.recognised]


def unrecognised_at(analysis) -> list[tuple[int, int]]:
    return [(u.line, u.end_line) for u in analysis.unrecognised]


# --------------------------------------------------------------------------------------------- guards


@pytest.mark.parametrize(
    "source",
    [
        pytest.param(
            """
            if past_key_values is not None:
                input_ids = input_ids[:, -1:]
            """,
            id="if-branch-with-a-cache",
        ),
        pytest.param(
            """
            if past_key_values is None:
                pass
            else:
                input_ids = input_ids[:, -1:]
            """,
            id="else-branch-of-no-cache",
        ),
        pytest.param(
            """
            if not past_key_values:
                pass
            elif attention_mask is not None:
                input_ids = input_ids[:, -1:]
            """,
            id="elif-inherits-the-else-guard",
        ),
        pytest.param(
            """
            if past_key_values:
                if attention_mask is not None:
                    if use_cache is None:
                        input_ids = input_ids[:, -1:]
            """,
            id="nested-guards-keep-the-outer-one",
        ),
    ],
)
def test_guards_descend_and_reach_the_rules(source: str) -> None:
    """Slicing to the last token only counts under a cache guard; each form puts it under one."""
    analysis = analyse(source)
    assert "slice-to-last-token" in analysis.behaviours
    assert analysis.unrecognised == ()


@pytest.mark.parametrize(
    "source",
    [
        pytest.param(
            """
            if past_key_values is None:
                input_ids = input_ids[:, -1:]
            """,
            id="if-branch-without-a-cache",
        ),
        pytest.param(
            """
            if past_key_values is not None:
                pass
            else:
                input_ids = input_ids[:, -1:]
            """,
            id="else-branch-of-a-cache",
        ),
        pytest.param(
            """
            if attention_mask is not None:
                input_ids = input_ids[:, -1:]
            """,
            id="unrelated-guard",
        ),
    ],
)
def test_guards_without_a_cache_do_not_count_as_one(source: str) -> None:
    analysis = analyse(source)
    assert "slice-to-last-token" not in analysis.behaviours
    assert [u.code for u in analysis.unrecognised] == ["input_ids = input_ids[:, -1:]"]


def test_all_branches_are_walked() -> None:
    analysis = analyse(
        """
        if past_key_values is None:
            model_inputs = {"input_ids": input_ids}
        elif attention_mask is not None:
            input_ids = input_ids[:, -1:]
        else:
            weird()
        """
    )
    assert behaviours_at(analysis) == [("output-dict", 2), ("slice-to-last-token", 4)]
    assert [(u.line, u.code) for u in analysis.unrecognised] == [(6, "weird()")]


def test_an_elif_with_an_unknown_test_is_reported_from_its_own_line() -> None:
    analysis = analyse(
        """
        if past_key_values is not None:
            input_ids = input_ids[:, -1:]
        elif use_cache:
            input_ids = input_ids[:, -1:]
        """
    )
    assert behaviours_at(analysis) == [("slice-to-last-token", 2)]
    assert unrecognised_at(analysis) == [(3, 4)]


def test_an_if_with_an_unknown_test_is_reported_whole() -> None:
    analysis = analyse(
        """
        if use_cache:
            input_ids = input_ids[:, -1:]
            model_inputs = {"input_ids": input_ids}
        """
    )
    assert analysis.recognised == ()
    assert unrecognised_at(analysis) == [(1, 3)]
    assert analysis.unrecognised[0].code.startswith("if use_cache:")


def test_outputs_record_their_guards() -> None:
    analysis = analyse(
        """
        model_inputs = {}
        if cache_position[0] == 0:
            if pixel_values is not None:
                model_inputs["pixel_values"] = pixel_values
        """,
        params=("input_ids", "cache_position", "pixel_values"),
    )
    (key,) = analysis.outputs
    assert (key.key, key.line, key.guards) == ("pixel_values", 4, ("first-step", "present:pixel_values"))


# ------------------------------------------------------------------------------------- nothing skipped


@pytest.mark.parametrize(
    ("source", "lines"),
    [
        pytest.param("while True:\n    break", [(1, 2)], id="while"),
        pytest.param("for x in y:\n    pass", [(1, 2)], id="for"),
        pytest.param("try:\n    pass\nexcept Exception:\n    pass", [(1, 4)], id="try"),
        pytest.param("with ctx():\n    pass", [(1, 2)], id="with"),
        pytest.param("def helper():\n    return 1", [(1, 2)], id="nested-function"),
        pytest.param("x = 1\ny = f(\n    x,\n)", [(1, 1), (2, 4)], id="assignments-with-their-extent"),
        pytest.param("return self.forward(input_ids)", [(1, 1)], id="odd-return"),
        pytest.param("global x", [(1, 1)], id="global"),
    ],
)
def test_statements_no_rule_claims_are_listed(source: str, lines: list[tuple[int, int]]) -> None:
    analysis = analyse(source)
    assert analysis.recognised == ()
    assert unrecognised_at(analysis) == lines


def test_unrecognised_code_is_normalised() -> None:
    analysis = analyse("x = (  1 +\n    2  )  # comment\n")
    assert [u.code for u in analysis.unrecognised] == ["x = 1 + 2"]


def test_every_statement_is_recognised_or_listed() -> None:
    """A mixed body: the union of what is recognised and what is listed covers every statement."""
    source = textwrap.dedent(
        """
        token_type_ids = kwargs.get("token_type_ids", None)
        if past_key_values:
            input_ids = input_ids[:, -1:]
            token_type_ids = token_type_ids + 1
        extra = compute(input_ids)
        if attention_mask is None:
            attention_mask = input_ids.new_ones(input_ids.shape)
        model_inputs = {"input_ids": input_ids, "token_type_ids": token_type_ids, "extra": extra}
        model_inputs.pop("labels", None)
        return model_inputs
        """
    )
    analysis = analyse_statements(source)
    covered = set()
    for item in (*analysis.recognised, *analysis.unrecognised):
        covered.update(range(item.line, item.end_line + 1))
    statement_lines = {1, 3, 4, 5, 6, 7, 8, 9, 10}  # line 2 is the guard, walked into
    assert statement_lines <= covered
    assert unrecognised_at(analysis) == [(4, 4), (5, 5)]


# ----------------------------------------------------------------------------------------------- lines


METHOD = '''\
class GPT9ForCausalLM(GPT9PreTrainedModel):
    @torch.no_grad()
    def prepare_inputs_for_generation(self, input_ids, past_key_values=None, **kwargs):
        """Docstring."""
        if past_key_values is not None:
            input_ids = input_ids[:, -1:]
        frobnicate(
            input_ids,
        )
        return {"input_ids": input_ids}
'''


def test_lines_are_those_of_the_source() -> None:
    analysis = analyse_source(METHOD)
    assert behaviours_at(analysis) == [("slice-to-last-token", 6), ("output-dict", 10)]
    assert unrecognised_at(analysis) == [(7, 9)]


@pytest.mark.parametrize("offset", [0, 1, 250])
def test_line_offset_makes_lines_absolute(offset: int) -> None:
    """The index analyses a method cut out of its file; ``line_offset`` puts it back in place."""
    analysis = analyse_source(METHOD, line_offset=offset)
    assert [r.line for r in analysis.recognised] == [6 + offset, 10 + offset]
    assert [r.end_line for r in analysis.recognised] == [6 + offset, 10 + offset]
    assert unrecognised_at(analysis) == [(7 + offset, 9 + offset)]
    assert [o.line for o in analysis.outputs] == [10 + offset]


def test_analyse_statements_numbers_from_the_first_statement() -> None:
    analysis = analyse("x = 1\n\ny = 2\n")
    assert unrecognised_at(analysis) == [(1, 1), (3, 3)]


def test_first_function_of_a_module_or_class() -> None:
    source = "def prepare_inputs_for_generation(self, input_ids, **kwargs):\n    weird()\n\ndef other():\n    odd()\n"
    assert [u.code for u in analyse_source(source).unrecognised] == ["weird()"]
    assert [u.code for u in analyse_source("X = 1\n" + METHOD).unrecognised] == ["frobnicate(input_ids)"]


def test_no_function_is_an_error() -> None:
    with pytest.raises(ValueError, match="no function"):
        analyse_source("x = 1\n")


# ------------------------------------------------------------------------------------------------ inert


@pytest.mark.parametrize(
    "source",
    [
        pytest.param('"""Prepare the inputs."""', id="docstring"),
        pytest.param("'''Prepare the inputs.'''", id="docstring-single-quotes"),
        pytest.param('"Prepare " "the inputs."', id="concatenated-docstring"),
        pytest.param("pass", id="pass"),
        pytest.param("...", id="ellipsis"),
        pytest.param("import torch", id="import"),
        pytest.param("from ..cache_utils import StaticCache", id="relative-import"),
        pytest.param("import inspect; pass", id="several-inert-on-one-line"),
        pytest.param('"""Doc."""\nimport torch\npass\n...', id="all-together"),
        pytest.param("if past_key_values is not None:\n    pass", id="pass-under-a-guard"),
    ],
)
def test_inert_statements(source: str) -> None:
    analysis = analyse(source)
    assert analysis.recognised == ()
    assert analysis.unrecognised == ()


@pytest.mark.parametrize(
    "source",
    [
        pytest.param('x = 1\n"""Not a docstring."""', id="string-after-the-first-statement"),
        pytest.param('if past_key_values is not None:\n    """Not a docstring."""', id="string-under-a-guard"),
        pytest.param("import torch; x = 1", id="import-with-something-else"),
    ],
)
def test_only_a_leading_string_is_a_docstring(source: str) -> None:
    assert analyse(source).unrecognised != ()


# ------------------------------------------------------------------------------------ competing claims


class _Fake(Rule):
    """Claims ``consumed`` statements wherever the statement at ``start`` is ``marker()``."""

    kind = Kind.STANDARD
    summary = "do a fake thing"
    example = ""

    def __init__(self, code: str, consumed: int) -> None:
        self.code, self.name, self.consumed = code, f"fake-{code.lower()}", consumed

    def match(self, statements, start, ctx):
        statement = statements[start]
        if isinstance(statement, cst.SimpleStatementLine) and "marker" in cst.Module(body=[statement]).code:
            if start + self.consumed <= len(statements):
                return Match(self.consumed, self.name)
        return None


def test_the_longest_claim_wins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rules, "ALL", (_Fake("PI901", 1), _Fake("PI902", 2), *rules.ALL))
    analysis = analyse("marker()\nsecond()\nthird()\n")
    assert [(r.code, r.line, r.end_line) for r in analysis.recognised] == [("PI902", 1, 2)]
    assert [u.code for u in analysis.unrecognised] == ["third()"]


def test_a_tie_goes_to_the_first_rule(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(rules, "ALL", (_Fake("PI901", 1), _Fake("PI902", 1)))
    analysis = analyse("marker()\n")
    assert [r.code for r in analysis.recognised] == ["PI901"]


def test_a_claim_beats_descending_into_a_guard() -> None:
    """The state-space rule claims a whole ``if use_cache:``; a known guard would not even be walked."""
    analysis = analyse(
        """
        if use_cache:
            if cache_position is None:
                raise ValueError("cache_position is required")
            if cache_position[0] > 0:
                input_ids = input_ids[:, -1].unsqueeze(-1)
                if attention_mask is not None:
                    attention_mask = None
            else:
                cache_position = torch.arange(0, self.config.conv_kernel, device=input_ids.device)
        """
    )
    assert [r.behaviour for r in analysis.recognised] == ["state-space-cache"]
    assert analysis.unrecognised == ()


def test_a_multi_statement_template_beats_its_first_statement() -> None:
    """``input_shape = ...`` alone means nothing; with the mask it builds, the pair is one behaviour."""
    analysis = analyse(
        """
        input_shape = input_ids.shape
        if attention_mask is None:
            attention_mask = input_ids.new_ones(input_shape)
        """
    )
    assert [(r.behaviour, r.line, r.end_line) for r in analysis.recognised] == [("default-attention-mask", 1, 3)]


# ------------------------------------------------------------------------------------------- signature


@pytest.mark.parametrize(
    ("signature", "expected"),
    [
        pytest.param(
            "self, input_ids, past_key_values=None, **kwargs",
            [
                ("self", "positional", None),
                ("input_ids", "positional", None),
                ("past_key_values", "positional", "None"),
                ("kwargs", "**kwargs", None),
            ],
            id="usual",
        ),
        pytest.param(
            "self, *args, is_first_iteration=False, **kwargs",
            [
                ("self", "positional", None),
                ("args", "*args", None),
                ("is_first_iteration", "keyword-only", "False"),
                ("kwargs", "**kwargs", None),
            ],
            id="star-args-then-keyword-only",
        ),
        pytest.param(
            "self, input_ids, *, use_cache, past=None",
            [
                ("self", "positional", None),
                ("input_ids", "positional", None),
                ("use_cache", "keyword-only", None),
                ("past", "keyword-only", "None"),
            ],
            id="bare-star",
        ),
        pytest.param(
            "self, input_ids, /, attention_mask=torch.ones(1, 2)",
            [
                ("self", "positional", None),
                ("input_ids", "positional", None),
                ("attention_mask", "positional", "torch.ones(1, 2)"),
            ],
            id="positional-only-and-code-default",
        ),
        pytest.param(
            "self, input_ids: torch.LongTensor, past_key_values: Optional[Cache] = None, **model_kwargs",
            [
                ("self", "positional", None),
                ("input_ids", "positional", None),
                ("past_key_values", "positional", "None"),
                ("model_kwargs", "**kwargs", None),
            ],
            id="annotated",
        ),
    ],
)
def test_parameters(signature: str, expected: list[tuple[str, str, str | None]]) -> None:
    function = cst.parse_statement(f"def prepare_inputs_for_generation({signature}):\n    pass\n")
    assert isinstance(function, cst.FunctionDef)
    assert parameters(function) == tuple(Param(*p) for p in expected)
    assert analyse_source(cst.Module(body=[function]).code).params == tuple(Param(*p) for p in expected)


def test_the_ids_parameter_may_be_decoder_input_ids() -> None:
    """Encoder-decoder models (Bart) name their first parameter ``decoder_input_ids``."""
    analysis = analyse_source(
        "def prepare_inputs_for_generation(self, decoder_input_ids, past_key_values=None, **kwargs):\n"
        "    if past_key_values is not None:\n"
        "        decoder_input_ids = decoder_input_ids[:, -1:]\n"
        '    return {"input_ids": None, "decoder_input_ids": decoder_input_ids}\n'
    )
    assert analysis.unrecognised == ()
    assert {k: str(v) for k, v in analysis.output_values().items()} == {
        "input_ids": "none",
        "decoder_input_ids": "ids:last token",
    }


def test_the_kwargs_parameter_may_have_another_name() -> None:
    analysis = analyse(
        """
        model_inputs = {"encoder_hidden_states": model_kwargs.get("encoder_hidden_states", None)}
        for key, value in model_kwargs.items():
            if key not in model_inputs:
                model_inputs[key] = value
        """,
        var_kwargs="model_kwargs",
    )
    assert analysis.unrecognised == ()
    assert analysis.forwards_kwargs
    assert {k: str(v) for k, v in analysis.output_values().items()} == {
        "encoder_hidden_states": "param:encoder_hidden_states"
    }


def test_a_returned_name_is_an_output_dict() -> None:
    analysis = analyse_source(
        "def prepare_inputs_for_generation(self, input_ids, **kwargs):\n"
        '    inputs = {"input_ids": input_ids}\n'
        '    inputs["flag"] = True\n'
        "    return inputs\n"
    )
    assert analysis.unrecognised == ()
    assert {k: str(v) for k, v in analysis.output_values().items()} == {
        "input_ids": "ids:unsliced",
        "flag": "const:True",
    }


# ------------------------------------------------------------------------------------- values threaded


def test_sliced_ids_reach_the_output() -> None:
    analysis = analyse(
        """
        if past_key_values is not None:
            if inputs_embeds is not None:
                input_ids = input_ids[:, -cache_position.shape[0] :]
            elif input_ids.shape[1] != cache_position.shape[0]:
                input_ids = input_ids[:, cache_position]
        model_inputs = {"input_ids": input_ids.contiguous()}
        """
    )
    assert {k: str(v) for k, v in analysis.output_values().items()} == {"input_ids": "ids:cache_position, contiguous"}


def test_a_kwarg_read_into_a_local_is_a_parameter() -> None:
    analysis = analyse(
        """
        image_sizes = kwargs.get("image_sizes")
        model_inputs = {"image_sizes": image_sizes}
        """,
        params=("input_ids",),
    )
    assert {k: str(v) for k, v in analysis.output_values().items()} == {"image_sizes": "param:image_sizes"}


def test_a_new_dict_at_the_top_level_starts_afresh() -> None:
    analysis = analyse(
        """
        model_inputs = {"a": attention_mask}
        model_inputs = {"input_ids": input_ids}
        """
    )
    assert {k: str(v) for k, v in analysis.output_values().items()} == {"input_ids": "ids:unsliced"}


def test_a_new_dict_under_a_guard_does_not_erase_other_branches() -> None:
    """Both branches count; a parameter set only without a cache holds on the first step only."""
    analysis = analyse(
        """
        if past_key_values is None:
            model_inputs = {"input_ids": input_ids, "attention_mask": attention_mask}
        else:
            model_inputs = {"input_ids": input_ids}
        """
    )
    assert {k: str(v) for k, v in analysis.output_values().items()} == {
        "input_ids": "ids:unsliced",
        "attention_mask": "first-step:attention_mask",
    }


# -------------------------------------------------------------------------------------------- delegate


def test_super_call_withholds_parameters_it_is_not_given() -> None:
    analysis = analyse_source(
        "def prepare_inputs_for_generation(self, input_ids, past_key_values=None, attention_mask=None,\n"
        "                                  pixel_values=None, **kwargs):\n"
        "    model_inputs = super().prepare_inputs_for_generation(\n"
        "        input_ids, past_key_values=past_key_values, **kwargs\n"
        "    )\n"
        "    return model_inputs\n"
    )
    assert analysis.delegates_to == "super"
    assert analysis.forwards_kwargs
    assert analysis.withheld == ("attention_mask", "pixel_values")
    assert analysis.unrecognised == ()


def test_super_call_with_star_args_withholds_only_keyword_only_parameters() -> None:
    analysis = analyse_source(
        "def prepare_inputs_for_generation(self, *args, is_first_iteration=False, **kwargs):\n"
        "    return super().prepare_inputs_for_generation(*args, **kwargs)\n"
    )
    assert analysis.delegates_to == "super"
    assert analysis.withheld == ("is_first_iteration",)


def test_super_call_given_everything_withholds_nothing() -> None:
    analysis = analyse_source(
        "def prepare_inputs_for_generation(self, input_ids, past_key_values=None, use_cache=None, **kwargs):\n"
        "    return super().prepare_inputs_for_generation(\n"
        "        input_ids, past_key_values=past_key_values, use_cache=use_cache, **kwargs\n"
        "    )\n"
    )
    assert analysis.withheld == ()
    assert analysis.delegates_to == "super"


def test_sub_model_delegation() -> None:
    analysis = analyse(
        """
        model_inputs = self.language_model.prepare_inputs_for_generation(input_ids, **kwargs)
        """,
        params=("input_ids",),
    )
    assert analysis.delegates_to == "self.language_model"
    assert analysis.forwards_kwargs


# ------------------------------------------------------------------------------------------ known bugs


@pytest.mark.parametrize(
    "source",
    [
        pytest.param('x = kwargs["a", "b"]', id="read"),
        pytest.param('kwargs["a", "b"] = 1', id="set"),
    ],
)
def test_a_tuple_subscript_of_kwargs_is_unrecognised_not_a_crash(source: str) -> None:
    analysis = analyse(source)
    assert len(analysis.unrecognised) == 1


def test_a_tuple_subscript_of_kwargs_in_the_dict_is_an_unknown_value_not_a_crash() -> None:
    # the dict itself is understood; its value is not, so classification calls the override bespoke
    analysis = analyse('model_inputs = {"x": kwargs["a", "b"]}')
    assert {k: str(v) for k, v in analysis.output_values().items()} == {"x": "expr:kwargs['a', 'b']"}


def test_return_none_is_not_returning_the_dict() -> None:
    analysis = analyse_source("def prepare_inputs_for_generation(self, input_ids, **kwargs):\n    return None\n")
    assert "output-dict" not in analysis.behaviours
    assert [u.code for u in analysis.unrecognised] == ["return None"]


@pytest.mark.parametrize(
    "source",
    [
        pytest.param(
            'model_inputs = {"input_ids": input_ids, **kwargs}\nmodel_inputs = {"input_ids": input_ids}\nreturn model_inputs',
            id="open-dict-replaced-by-a-closed-one",
        ),
        pytest.param(
            'model_inputs = super().prepare_inputs_for_generation(input_ids, **kwargs)\nreturn {"input_ids": input_ids}',
            id="super-result-discarded",
        ),
    ],
)
def test_a_closed_dict_built_last_is_what_is_returned(source: str) -> None:
    analysis = analyse(source)
    assert {k: str(v) for k, v in analysis.output_values().items()} == {"input_ids": "ids:unsliced"}
    assert not analysis.forwards_kwargs
    assert analysis.delegates_to is None


_ALIASED = """
def prepare_inputs_for_generation(self, input_ids, past_key_values=None, attention_mask=None, inputs_embeds=None,
                                  cache_position=None, **kwargs):
    empty_past_kv = past_key_values is None
{rebinding}
    if not empty_past_kv:
        if inputs_embeds is not None:
            input_ids = input_ids[:, -cache_position.shape[0] :]
        elif input_ids.shape[1] != cache_position.shape[0]:
            input_ids = input_ids[:, cache_position]
    return {{"input_ids": input_ids, "past_key_values": past_key_values, "attention_mask": attention_mask}}
"""


def test_a_guard_alias_assigned_once_is_read_as_its_test() -> None:
    """Jamba's ``empty_past_kv = past_key_values is None``: the block under ``if not empty_past_kv`` is the
    slicing the rules know; the alias itself is listed (a reduction may keep it), as written."""
    analysis = analyse_source(_ALIASED.format(rebinding=""))
    assert "slice-by-cache-position" in analysis.behaviours
    assert [u.code for u in analysis.unrecognised] == ["empty_past_kv = past_key_values is None"]
    guarded = next(t for t in analysis.top_level if t.index == 1)
    assert "empty_past_kv" in guarded.reads  # the names as written, not the inlined test's


@pytest.mark.parametrize(
    "rebinding",
    [
        pytest.param("    empty_past_kv = False", id="assigned again"),
        pytest.param("    for empty_past_kv in (True, False):\n        pass", id="a loop target"),
        pytest.param("    if (empty_past_kv := False):\n        pass", id="a walrus"),
    ],
)
def test_a_name_bound_twice_is_no_alias(rebinding: str) -> None:
    analysis = analyse_source(_ALIASED.format(rebinding=rebinding))
    assert "slice-by-cache-position" not in analysis.behaviours
    assert any(u.code.startswith("if not empty_past_kv") for u in analysis.unrecognised)


def test_an_optional_import_does_nothing_to_the_inputs() -> None:
    """The generic mixin for ≤ 4.45 imports Gemma 2's HybridCache where the release has it (4.42 +) and stands
    StaticCache in for it before: neither is a statement about the inputs. A handler that does anything else is."""
    optional = """
    try:
        from ..cache_utils import HybridCache
    except ImportError:
        HybridCache = StaticCache
    """
    assert analyse_statements(textwrap.dedent(optional)).unrecognised == ()
    guarded = """
    try:
        from ..cache_utils import HybridCache
    except ImportError:
        input_ids = input_ids[:, -1:]
    """
    assert [u.code.splitlines()[0] for u in analyse_statements(textwrap.dedent(guarded)).unrecognised] == ["try:"]
