"""Tests for the behaviour recognisers in ``rules``.

Every rule is checked three ways, in the style of pyupgrade's tests:

- its docstring: a ``CODE name: summary`` header and an ``Example::`` that the rule (and only it)
  recognises when analysed as the body of an override;
- positive cases: each variant of the idiom, also reformatted (comments, parentheses, quoting,
  trailing commas, wrapping), with the behaviour and the detail or facets it must report;
- NOOP cases: near misses that must *not* count as the behaviour, each with the reason; the
  statement must then be listed as unrecognised (nothing is skipped silently).

Then the values of the output keys, and the comparison with (fake) mixin behaviours.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import textwrap

import libcst as cst
import pytest

import rules
from codemod.analysis import BodyAnalysis
from codemod.recognise import analyse_statements
from rules.base import Coverage, Kind, RuleModuleError, discover, parse_docstring

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
    module = importlib.import_module(f"rules.{name}")
    if name in rules.HELPERS:
        assert not hasattr(module, "RULE")
        return
    code, rule_name, _, example = parse_docstring(module.__doc__)
    assert module.RULE in rules.ALL
    assert (module.RULE.code, module.RULE.name, module.RULE.example) == (code, rule_name, example)
    assert module.RULE.module == module.__name__
    assert module.RULE.cases == getattr(module, "CASES", ())


def test_discovery_finds_every_rule_module() -> None:
    assert sorted(r.module for r in rules.ALL) == [f"rules.{name}" for name in _modules() if name not in rules.HELPERS]


GOOD_RULE = '''"""PI901 fake-thing: do a fake thing.

Example::

    x = 1
"""

from rules.base import Kind, TemplateRule, claim

RULE = TemplateRule(__doc__, Kind.PLUMBING, {"x": "x = 1"}, lambda captures, ctx, variant: claim())
'''


@pytest.mark.parametrize(
    ("source", "message"),
    [
        pytest.param('"""PI902 fake: no rule.\n\nExample::\n\n    x = 1\n"""\n', "needs a RULE", id="no-rule"),
        pytest.param('"""PI902 fake: a string.\n\nExample::\n\n    x = 1\n"""\nRULE = "fake"\n', "needs a RULE", id="not-a-rule"),
        pytest.param(GOOD_RULE.replace("PI901 fake-thing", "Fake thing"), "must start with", id="no-header"),
        pytest.param(GOOD_RULE.replace("Example::", "For example:"), "Example::", id="no-example"),
        pytest.param(GOOD_RULE.replace("TemplateRule(__doc__,", "TemplateRule(__doc__.replace('PI901', 'PI903'),"),
                     "RULE is PI903 fake-thing, the docstring says PI901", id="docstring-and-rule-disagree"),
        pytest.param(GOOD_RULE.replace("fake-thing", "other-thing"), "repeats the code or the name", id="code-taken"),
        pytest.param(GOOD_RULE.replace("PI901", "PI904"), "repeats the code or the name", id="name-taken"),
        pytest.param(GOOD_RULE + "CASES = ({'source': 'x = 1'},)\n", "only Case and NoOp", id="cases-not-cases"),
        pytest.param(
            GOOD_RULE + "from rules.base import Case\nCASES = (Case('a', 'x = 1', detail=''),) * 2\n",
            "case ids repeat", id="case-ids-repeat",
        ),
        pytest.param(GOOD_RULE + "ERAS = ('4.46: does it',)\n", "only EraNote", id="eras-not-notes"),
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
    (tmp_path / package / "a_late.py").write_text(GOOD_RULE.replace("PI901", "PI909"))
    (tmp_path / package / "b_early.py").write_text(GOOD_RULE.replace("PI901 fake-thing", "PI900 early-thing"))
    (tmp_path / package / "_private.py").write_text("X = 1\n")
    (tmp_path / package / "helper.py").write_text("X = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    found = discover(package, [str(tmp_path / package)], helpers={"helper"})
    assert [(r.code, r.name, r.module) for r in found] == [
        ("PI900", "early-thing", f"{package}.b_early"), ("PI909", "fake-thing", f"{package}.a_late")
    ]
    assert found[0].description == "" and found[0].cases == () and found[0].eras == ()


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


# -------------------------------------------------------------------------------------------- positive


def case(source: str, behaviour: str, detail: str = "", facets: dict[str, str] | None = None, *, id: str):
    return pytest.param(textwrap.dedent(source), behaviour, detail, facets or {}, id=id)


CACHE_POSITION_SLICE = """
    if inputs_embeds is not None:  # Exception 1
        input_ids = input_ids[:, -cache_position.shape[0] :]
    elif input_ids.shape[1] != cache_position.shape[0]:  # Default case
        input_ids = input_ids[:, cache_position]
"""

POSITIVE = [
    # PI101 slice-by-cache-position ------------------------------------------------------------------
    case(
        "if past_key_values is not None:\n" + textwrap.indent(textwrap.dedent(CACHE_POSITION_SLICE), "    "),
        "slice-by-cache-position", "with the inputs_embeds exception", id="PI101-with-exception",
    ),
    case(
        """
        if past_key_values is not None:
            if inputs_embeds is not None or cache_position[-1] >= input_ids.shape[1]:  # Exception 1 and 3
                input_ids = input_ids[:, -cache_position.shape[0] :]
            elif input_ids.shape[1] != cache_position.shape[0]:
                input_ids = input_ids[:, cache_position]
        """,
        "slice-by-cache-position", "with the inputs_embeds and synced-GPUs exceptions", id="PI101-synced-gpus",
    ),
    case(
        """
        if past_key_values is not None:
            if inputs_embeds is not None or (is_torchdynamo_compiling() or cache_position[-1] >= input_ids.shape[1]):
                input_ids = input_ids[:, -cache_position.shape[0] :]
            elif input_ids.shape[1] != cache_position.shape[0]:
                input_ids = input_ids[:, cache_position]
        """,
        "slice-by-cache-position", "synced-GPUs exceptions, unless compiling", id="PI101-synced-gpus-unless-compiling",
    ),
    case(
        """
        if past_key_values is not None:
            # only embeddings, no ids at all
            if inputs_embeds is not None and input_ids.shape[1] == 0:
                inputs_embeds = inputs_embeds[:, -cache_position.shape[0] :]
            elif inputs_embeds is not None or cache_position[-1] >= input_ids.shape[1]:
                input_ids = input_ids[:, -cache_position.shape[0] :]
            elif input_ids.shape[1] != cache_position.shape[0]:
                input_ids = input_ids[:, cache_position]
        """,
        "slice-by-cache-position", "embeddings sliced when there are no ids", id="PI101-embeddings-only",
    ),
    case(
        """
        if past_key_values is not None:
            inputs_embeds, input_ids = self._cache_dependant_input_preparation(input_ids, inputs_embeds, cache_position)
        """,
        "slice-by-cache-position", "via _cache_dependant_input_preparation", id="PI101-helper-method",
    ),
    case(
        """
        if past_key_values is not None:
            if input_ids.shape[1] != cache_position.shape[0]:
                input_ids = input_ids[:, cache_position]
        """,
        "slice-by-cache-position", "without the inputs_embeds exception", id="PI101-without-exception",
    ),
    case(
        """
        if past_key_values:
            if input_ids.shape[1] != cache_position.shape[0]:
                input_ids = input_ids[:, cache_position]
        """,
        "slice-by-cache-position", "without the inputs_embeds exception", id="PI101-truthy-cache-guard",
    ),
    case(
        """
        if input_ids.shape[1] != cache_position.shape[0]:
            input_ids = input_ids[:, cache_position]
        """,
        "slice-by-cache-position", "not under a cache guard", id="PI101-unguarded-says-so",
    ),
    case(
        """
        if past_key_values is not None:
            # with embeddings the ids may be short
            if (inputs_embeds is not None):
                input_ids = input_ids[ : , - cache_position.shape[0] : ]
            elif (
                input_ids.shape[1]
                != cache_position.shape[0]
            ):
                input_ids = input_ids[:, cache_position,]
        """,
        "slice-by-cache-position", "with the inputs_embeds exception", id="PI101-reformatted",
    ),
    case(
        """
        if past_key_values is not None:
            if inputs_embeds is not None:
                decoder_input_ids = decoder_input_ids[:, -cache_position.shape[0] :]
            elif decoder_input_ids.shape[1] != cache_position.shape[0]:
                decoder_input_ids = decoder_input_ids[:, cache_position]
        """,
        "slice-by-cache-position", "with the inputs_embeds exception", id="PI101-decoder-input-ids",
    ),
    # PI102 slice-by-past-length ---------------------------------------------------------------------
    case(
        """
        if past_key_values:
            past_length = past_key_values[0][0].shape[2]

            # Some generation methods pass only the new token
            if input_ids.shape[1] > past_length:
                remove_prefix_length = past_length
            else:
                # keep only the final id
                remove_prefix_length = input_ids.shape[1] - 1

            input_ids = input_ids[:, remove_prefix_length:]
        """,
        "slice-by-past-length", "past length from the legacy tuple cache", id="PI102-legacy-tuple",
    ),
    case(
        """
        if past_key_values is not None:
            past_length = past_key_values.get_seq_length()
            if input_ids.shape[1] > past_length:
                remove_prefix_length = past_length
            else:
                remove_prefix_length = input_ids.shape[1] - 1
            input_ids = input_ids[:, remove_prefix_length:]
        """,
        "slice-by-past-length", "Cache.get_seq_length()", id="PI102-get-seq-length",
    ),
    case(
        """
        if past is not None:
            past_length = past[0][0].shape[2]
            if input_ids.shape[1] > past_length:
                remove_prefix_length = past_length
            else:
                remove_prefix_length = input_ids.shape[1] - 1
            input_ids = input_ids[:, remove_prefix_length:]
        """,
        "slice-by-past-length", "legacy tuple cache", id="PI102-old-past-name",
    ),
    case(
        """
        if past_key_values is not None:
            past_length = past_key_values[0][0].shape[2]
            if decoder_input_ids.shape[1] > past_length:
                remove_prefix_length = past_length
            else:
                remove_prefix_length = decoder_input_ids.shape[1] - 1
            decoder_input_ids = decoder_input_ids[:, remove_prefix_length:]
        """,
        "slice-by-past-length", "legacy tuple cache", id="PI102-decoder-input-ids",
    ),
    case(
        """
        past_length = past_key_values[0][0].shape[2]
        if input_ids.shape[1] > past_length:
            remove_prefix_length = past_length
        else:
            remove_prefix_length = input_ids.shape[1] - 1
        input_ids = input_ids[:, remove_prefix_length:]
        """,
        "slice-by-past-length", "not under a cache guard", id="PI102-unguarded-says-so",
    ),
    # PI103 slice-to-last-token ----------------------------------------------------------------------
    case(
        "if past_key_values:\n    input_ids = input_ids[:, -1:]\n",
        "slice-to-last-token", "[:, -1:]", id="PI103-slice",
    ),
    case(
        "if past_key_values is not None:\n    input_ids = input_ids[:, -1].unsqueeze(-1)\n",
        "slice-to-last-token", "[:, -1].unsqueeze(-1)", id="PI103-unsqueeze",
    ),
    case(
        "if past is not None:\n    input_ids = input_ids[ :, -1 : ]  # only the last token\n",
        "slice-to-last-token", "[:, -1:]", id="PI103-old-past-name-reformatted",
    ),
    case(
        "if past_key_values is None:\n    pass\nelse:\n    input_ids = (input_ids[:, -1:])\n",
        "slice-to-last-token", "[:, -1:]", id="PI103-in-else-of-no-cache",
    ),
    case(
        "if past_key_values:\n    decoder_input_ids = decoder_input_ids[:, -1:]\n",
        "slice-to-last-token", "[:, -1:]", id="PI103-decoder-input-ids",
    ),
    # PI104 slice-by-next-sequence-length ------------------------------------------------------------
    case(
        "input_ids = input_ids[:, -next_sequence_length:] if next_sequence_length is not None else input_ids\n",
        "slice-by-next-sequence-length", "conditional expression", id="PI104",
    ),
    case(
        """
        input_ids = (
            input_ids[:, -next_sequence_length :]
            if next_sequence_length is not None
            else input_ids
        )
        """,
        "slice-by-next-sequence-length", "conditional expression", id="PI104-wrapped",
    ),
    # PI111 position-ids-from-mask -------------------------------------------------------------------
    case(
        """
        if attention_mask is not None and position_ids is None:
            # positions for batched generation
            position_ids = attention_mask.long().cumsum(-1) - 1
            position_ids.masked_fill_(attention_mask == 0, 1)
            if past_key_values:
                position_ids = position_ids[:, -input_ids.shape[1] :]
        """,
        "position-ids-from-mask", "sliced to the new tokens",
        {"slice": "new tokens", "padding": "1", "when": "always"}, id="PI111-new-tokens",
    ),
    case(
        """
        if attention_mask is not None and position_ids is None:
            position_ids = attention_mask.long().cumsum(-1) - 1
            position_ids.masked_fill_(attention_mask == 0, 1)
            if past_key_values:
                position_ids = position_ids[:, -1].unsqueeze(-1)
        """,
        "position-ids-from-mask", "sliced to the last token", {"slice": "last token"}, id="PI111-last-token",
    ),
    case(
        """
        if attention_mask is not None and position_ids is None:
            position_ids = attention_mask.long().cumsum(-1) - 1
            position_ids.masked_fill_(attention_mask == 0, 1)
            if past_key_values is not None:
                position_ids = position_ids[:, -input_ids.shape[1] :]

                # a stable stride for compiled graphs
                position_ids = position_ids.clone(memory_format=torch.contiguous_format)
        """,
        "position-ids-from-mask", "sliced to the new tokens, contiguous", {"slice": "new tokens"}, id="PI111-clone",
    ),
    case(
        """
        if attention_mask is not None and position_ids is None:
            position_ids = attention_mask.long().cumsum(-1) - 1
            position_ids.masked_fill_(attention_mask == 0, 1)
            if past_key_values:
                position_ids = position_ids[:, -input_ids.shape[1] :]
        else:
            position_ids = None
        """,
        "position-ids-from-mask", "ignores position_ids passed without a mask",
        {"passed": "ignored without a mask"}, id="PI111-else-none",
    ),
    case(
        """
        if not self.transformer.use_alibi and attention_mask is not None and position_ids is None:
            position_ids = attention_mask.long().cumsum(-1) - 1
            position_ids.masked_fill_(attention_mask == 0, 1)
            if past_key_values:
                position_ids = position_ids[:, -input_ids.shape[1] :]
        """,
        "position-ids-from-mask", "unless the model uses ALiBi", {"when": "alibi off"}, id="PI111-alibi",
    ),
    case(
        """
        if attention_mask is not None and position_ids is None:
            position_ids = attention_mask.long().cumsum(-1) - 1
            position_ids.masked_fill_(attention_mask == 0, 1)
        """,
        "position-ids-from-mask", "not sliced", {"slice": "none"}, id="PI111-not-sliced",
    ),
    case(
        """
        if (
            attention_mask is not None
            and kwargs.get("position_ids") is None
            and "position_ids" in set(inspect.signature(self.forward).parameters.keys())
        ):
            position_ids = attention_mask.long().cumsum(-1) - 1
            position_ids.masked_fill_(attention_mask == 0, 1)
            kwargs["position_ids"] = position_ids
        """,
        "position-ids-from-mask", "only when forward accepts position_ids",
        {"when": "forward accepts position_ids", "slice": "new tokens"}, id="PI111-mixin-form",
    ),
    case(
        """
        position_ids_key = "decoder_position_ids" if self.config.is_encoder_decoder else "position_ids"
        if (
            attention_mask is not None
            and kwargs.get(position_ids_key) is None
            and position_ids_key in set(inspect.signature(self.forward).parameters.keys())
        ):
            position_ids = attention_mask.long().cumsum(-1) - 1
            position_ids.masked_fill_(attention_mask == 0, 0)
            kwargs[position_ids_key] = position_ids
        """,
        "position-ids-from-mask", "keyed by position_ids_key",
        {"when": "forward accepts position_ids", "padding": "0"}, id="PI111-mixin-form-key-variable-padding-0",
    ),
    case(
        """
        if (attention_mask is not None) and (position_ids is None):
            position_ids = (attention_mask.long().cumsum(-1) - 1)
            position_ids.masked_fill_(attention_mask == 0, 1)  # padding
            if past_key_values:
                position_ids = position_ids[ :, -input_ids.shape[1]: ]
        """,
        "position-ids-from-mask", "sliced to the new tokens", id="PI111-reformatted",
    ),
    # PI121 inputs-embeds-first-step -----------------------------------------------------------------
    case(
        """
        if inputs_embeds is not None and cache_position[0] == 0:
            model_inputs = {"inputs_embeds": inputs_embeds, "input_ids": None}
        else:
            model_inputs = {"input_ids": input_ids.clone(memory_format=torch.contiguous_format), "inputs_embeds": None}
        """,
        "inputs-embeds-first-step", "first step by cache_position; ids made contiguous",
        {"first_step": "cache_position"}, id="PI121-cache-position",
    ),
    case(
        """
        if inputs_embeds is not None and past_key_values is None:
            model_inputs = {"inputs_embeds": inputs_embeds}
        else:
            model_inputs = {"input_ids": input_ids}
        """,
        "inputs-embeds-first-step", "first step by an absent cache", {"first_step": "no cache"},
        id="PI121-absent-cache",
    ),
    case(
        """
        if inputs_embeds is not None and past is None:
            model_inputs = {"inputs_embeds": inputs_embeds}
        else:
            model_inputs = {"input_ids": input_ids.contiguous()}
        """,
        "inputs-embeds-first-step", "first step by an absent cache; ids made contiguous", {"first_step": "no cache"},
        id="PI121-absent-old-past",
    ),
    case(
        """
        if inputs_embeds is not None and cache_params is None:
            model_inputs = {"inputs_embeds": inputs_embeds}
        else:
            model_inputs = {"input_ids": input_ids.contiguous()}
        """,
        "inputs-embeds-first-step", "first step by an absent cache", {"first_step": "no cache"},
        id="PI121-absent-state-space-cache",
    ),
    case(
        """
        if inputs_embeds is not None and is_first_iteration:
            model_inputs = {"inputs_embeds": inputs_embeds, "input_ids": None}
        else:
            model_inputs = {"input_ids": input_ids, "inputs_embeds": None}
        """,
        "inputs-embeds-first-step", "first step by is_first_iteration", {"first_step": "is_first_iteration"},
        id="PI121-is-first-iteration",
    ),
    case(
        """
        if inputs_embeds is not None and len(cache_position) == inputs_embeds.shape[1]:
            model_inputs = {"inputs_embeds": inputs_embeds, "input_ids": None}
        else:
            model_inputs = {"input_ids": input_ids, "inputs_embeds": None}
        """,
        "inputs-embeds-first-step", "first step by len(cache_position)", {"first_step": "len(cache_position)"},
        id="PI121-len-cache-position",
    ),
    case(
        """
        # embeddings only on the first step
        if (inputs_embeds is not None) and cache_position[0] == 0:
            model_inputs = {'inputs_embeds': inputs_embeds, 'input_ids': None,}
        else:
            # the clone keeps strides stable
            model_inputs = {
                'input_ids': input_ids.clone(memory_format=torch.contiguous_format),
                'inputs_embeds': None,
            }
        """,
        "inputs-embeds-first-step", "first step by cache_position", id="PI121-reformatted",
    ),
    case(
        """
        input_ids_key = "decoder_input_ids" if self.config.is_encoder_decoder else "input_ids"
        if not self.config.is_encoder_decoder:
            if inputs_embeds is not None and cache_position[0] == 0:
                model_inputs[input_ids_key] = None
                model_inputs["inputs_embeds"] = inputs_embeds
            else:
                model_inputs[input_ids_key] = input_ids.clone(memory_format=torch.contiguous_format)
                model_inputs["inputs_embeds"] = None
        else:
            model_inputs[input_ids_key] = input_ids.clone(memory_format=torch.contiguous_format)
        """,
        "inputs-embeds-first-step", "decoder_input_ids for encoder-decoder models", {"first_step": "cache_position"},
        id="PI121-mixin-form",
    ),
    # PI131 static-cache-mask ------------------------------------------------------------------------
    case(
        """
        if isinstance(past_key_values, StaticCache) and attention_mask.ndim == 2:
            if model_inputs["inputs_embeds"] is not None:
                batch_size, sequence_length, _ = model_inputs["inputs_embeds"].shape
                device = model_inputs["inputs_embeds"].device
            else:
                batch_size, sequence_length = model_inputs["input_ids"].shape
                device = model_inputs["input_ids"].device

            dtype = self.lm_head.weight.dtype
            min_dtype = torch.finfo(dtype).min

            attention_mask = _prepare_4d_causal_attention_mask_with_cache_position(
                attention_mask,
                sequence_length=sequence_length,
                target_length=past_key_values.get_max_length(),
                dtype=dtype,
                device=device,
                min_dtype=min_dtype,
                cache_position=cache_position,
                batch_size=batch_size,
            )
        """,
        "static-cache-mask", "for StaticCache; via the module's helper",
        {"cache": "StaticCache", "helper": "the module's helper"}, id="PI131-static-cache",
    ),
    case(
        """
        if (
            isinstance(past_key_values, HybridCache)
            and attention_mask.ndim == 2
            and not self.config._attn_implementation == "flash_attention_2"
        ):
            batch_size, sequence_length = input_ids.shape
            device = input_ids.device
            dtype = self.lm_head.weight.dtype
            min_dtype = torch.finfo(dtype).min
            attention_mask = _prepare_4d_causal_attention_mask_with_cache_position(
                attention_mask, sequence_length=sequence_length, target_length=past_key_values.get_max_length(),
                dtype=dtype, device=device, min_dtype=min_dtype, cache_position=cache_position, batch_size=batch_size,
            )
        """,
        "static-cache-mask", "for HybridCache", {"cache": "HybridCache", "unless": "flash attention"},
        id="PI131-hybrid-cache-not-flash",
    ),
    case(
        """
        if isinstance(past_key_values, StaticCache) and attention_mask.ndim == 2:
            batch_size, sequence_length = input_ids.shape
            device = input_ids.device
            dtype = self.lm_head.weight.dtype
            attention_mask = self.model._prepare_4d_causal_attention_mask_with_cache_position(
                attention_mask,
                sequence_length=sequence_length,
                target_length=past_key_values.get_max_cache_shape(),
                dtype=dtype,
                device=device,
                cache_position=cache_position,
                batch_size=batch_size,
            )
        """,
        "static-cache-mask", "via self.model._prepare_4d_causal_attention_mask_with_cache_position",
        {"helper": "self.model._prepare_4d_causal_attention_mask_with_cache_position"}, id="PI131-base-model-method",
    ),
    case(
        """
        if isinstance(past_key_values, StaticCache) and attention_mask.ndim == 2:
            batch_size, sequence_length = input_ids.shape
            logger.warning_once("building a 4D mask for the static cache")
            attention_mask = _prepare_4d_causal_attention_mask_with_cache_position(
                attention_mask, sequence_length=sequence_length, batch_size=batch_size
            )
        """,
        "static-cache-mask", "for StaticCache", id="PI131-logging-allowed",
    ),
    case(
        """
        if isinstance(past_key_values, StaticCache) and attention_mask.ndim == 2:
            base_model = getattr(self, self.base_model_prefix, None)
            causal_mask_creation_function = getattr(
                base_model, "_prepare_4d_causal_attention_mask_with_cache_position", None
            )
            attention_mask = causal_mask_creation_function(attention_mask, cache_position=cache_position)
        """,
        "static-cache-mask", "via the base model's helper", {"helper": "the base model's helper"},
        id="PI131-base-model-lookup",
    ),
    case(
        """
        if (
            isinstance(past_key_values, Cache)
            and past_key_values.is_compileable
            and (attention_mask is None or attention_mask.ndim == 2)
        ):
            causal_mask_creation_function = getattr(self, "create_masks_for_generate", create_masks_for_generate)
            attention_mask = causal_mask_creation_function(
                config=self.config, attention_mask=attention_mask, past_key_values=past_key_values
            )
            attention_mask = attention_mask.contiguous() if attention_mask is not None else None
        """,
        "static-cache-mask", "via create_masks_for_generate",
        {"cache": "any compileable Cache"}, id="PI131-any-compileable-cache",
    ),
    # PI132 static-cache-pad-mask --------------------------------------------------------------------
    case(
        """
        if isinstance(past_key_values, StaticCache) and attention_mask is not None:
            target_length = past_key_values.get_max_cache_shape()
            batch_size, seq_length = attention_mask.shape
            diff = target_length - seq_length

            new_attn_mask = torch.zeros(batch_size, diff, device=attention_mask.device, dtype=attention_mask.dtype)
            attention_mask = torch.cat(
                [attention_mask, new_attn_mask],
                dim=-1,
            )
        """,
        "static-cache-pad-mask", "zeros up to the cache length", id="PI132",
    ),
    # PI141 slice-with-ids ---------------------------------------------------------------------------
    case(
        """
        if past_key_values:
            if token_type_ids is not None:
                token_type_ids = token_type_ids[:, -input_ids.shape[1] :]
        """,
        "slice-with-ids", "token_type_ids", {"names": "token_type_ids"}, id="PI141-token-type-ids",
    ),
    case(
        """
        if past_key_values is not None:
            if token_type_ids is not None:
                token_type_ids = token_type_ids[:, -input_ids.shape[1] :]
                token_type_ids = token_type_ids.clone(memory_format=torch.contiguous_format)
        """,
        "slice-with-ids", "token_type_ids", {"names": "token_type_ids"}, id="PI141-contiguous",
    ),
    case(
        """
        if past_key_values:
            if mm_token_type_ids is not None:
                mm_token_type_ids = mm_token_type_ids[:, -input_ids.shape[1]:]
        """,
        "slice-with-ids", "mm_token_type_ids", {"names": "mm_token_type_ids"}, id="PI141-any-name",
    ),
    case(
        """
        for model_input_name in ["position_ids", "token_type_ids"]:
            model_input = kwargs.get(model_input_name)
            if model_input is not None:
                if past_key_values:
                    model_input = model_input[:, -input_ids.shape[1] :]
                    model_input = model_input.clone(memory_format=torch.contiguous_format)
                model_inputs[model_input_name] = model_input
        """,
        "slice-with-ids", "position_ids, token_type_ids, when passed", {"names": "position_ids,token_type_ids"},
        id="PI141-mixin-loop",
    ),
    # PI151 default-attention-mask -------------------------------------------------------------------
    case(
        "if attention_mask is None:\n    attention_mask = input_ids.new_ones(input_ids.shape)\n",
        "default-attention-mask", "ones like the ids", id="PI151",
    ),
    case(
        """
        input_shape = input_ids.shape
        # a decoder of an encoder-decoder model gets its mask made here
        if attention_mask is None:
            attention_mask = input_ids.new_ones(input_shape)
        """,
        "default-attention-mask", "via input_shape", id="PI151-input-shape",
    ),
    # PI161 synthesise-cache-position ----------------------------------------------------------------
    case(
        """
        if self._supports_cache_class:
            model_inputs["cache_position"] = cache_position
        elif cache_position is None:
            past_length = past_key_values[0][0].shape[2] if past_key_values is not None else 0
            cache_position = torch.arange(
                past_length, input_ids.shape[1], dtype=torch.long, device=input_ids.device
            )
        """,
        "synthesise-cache-position", "forwarded only for models with Cache classes", id="PI161",
    ),
    # PI171 state-space-cache ------------------------------------------------------------------------
    case(
        """
        if use_cache:
            # generate sets cache_position
            if cache_position is None:
                raise ValueError("`cache_position` is needed with `use_cache=True`")
            if cache_position[0] > 0:
                input_ids = input_ids[:, -1].unsqueeze(-1)

                if attention_mask is not None:
                    attention_mask = None
            else:
                # the whole convolution window on the first step
                cache_position = torch.arange(0, self.config.conv_kernel, device=input_ids.device)
        """,
        "state-space-cache", "cache_position over the conv kernel", id="PI171",
    ),
    # PI181 delegate ---------------------------------------------------------------------------------
    case(
        "model_inputs = super().prepare_inputs_for_generation(input_ids, **kwargs)\n",
        "delegate", "from super", id="PI181-super",
    ),
    case(
        "return super().prepare_inputs_for_generation(*args, **kwargs)\n",
        "delegate", "from super", id="PI181-return-super",
    ),
    case(
        """
        model_inputs = self.language_model.prepare_inputs_for_generation(
            input_ids,
            past_key_values=past_key_values,
            **kwargs,
        )
        """,
        "delegate", "from self.language_model", id="PI181-sub-model",
    ),
    case(
        "model_inputs = GenerationMixin.prepare_inputs_for_generation(self, input_ids, **kwargs)\n",
        "delegate", "from super", id="PI181-mixin-directly",
    ),
    case(
        "model_inputs = super().prepare_inputs_for_generation(input_ids, attention_mask=None, **kwargs)\n",
        "delegate", "adjusts attention_mask=none", id="PI181-adjusted",
    ),
    # PI190 output-dict ------------------------------------------------------------------------------
    case('model_inputs = {"input_ids": input_ids}\n', "output-dict", "builds the dict", id="PI190-build"),
    case(
        'model_inputs.update({"use_cache": use_cache, "attention_mask": attention_mask,})\n',
        "output-dict", "updates the dict", id="PI190-update-dict",
    ),
    case("model_inputs.update(use_cache=use_cache)\n", "output-dict", "updates the dict", id="PI190-update-keywords"),
    case("model_inputs['use_cache'] = use_cache\n", "output-dict", "sets a key", id="PI190-set-key"),
    case('return {"input_ids": input_ids, **kwargs}\n', "output-dict", "returns a dict literal", id="PI190-return-literal"),
    case("return model_inputs\n", "output-dict", "returns the dict", id="PI190-return-name"),
    # PI191 read-kwarg -------------------------------------------------------------------------------
    case('token_type_ids = kwargs.get("token_type_ids", None)\n', "read-kwarg", "token_type_ids (read)", id="PI191-get"),
    case("token_type_ids = kwargs['token_type_ids']\n", "read-kwarg", "token_type_ids (read)", id="PI191-subscript"),
    case('image_sizes = kwargs.pop("image_sizes", None)\n', "read-kwarg", "image_sizes (popped)", id="PI191-pop"),
    case(
        """
        output_attentions = kwargs.get("output_attentions")
        if output_attentions is None:  # the forward's own default
            output_attentions = getattr(self.config, "output_attentions", False)
        """,
        "read-kwarg", "output_attentions (read; the config's setting when not given)", id="PI191-config-fallback",
    ),
    # PI192 set-kwarg --------------------------------------------------------------------------------
    case(
        'kwargs["logits_to_keep"] = self.config.num_logits_to_keep\n', "set-kwarg", "logits_to_keep", id="PI192",
    ),
    # PI193 forward-kwargs ---------------------------------------------------------------------------
    case(
        """
        # everything else goes to the model
        for key, value in kwargs.items():
            if key not in model_inputs:
                model_inputs[key] = value  # as given
        """,
        "forward-kwargs", "keys not yet set", id="PI193",
    ),
    case(
        """
        kwargs_to_avoid_forwarding = ("labels", "next_sequence_length")
        for key, value in kwargs.items():
            if key not in model_inputs and key not in kwargs_to_avoid_forwarding:
                model_inputs[key] = value
        """,
        "forward-kwargs", "except labels, next_sequence_length", {"never": "labels,next_sequence_length"},
        id="PI193-except-some-keys",
    ),
    # PI194 drop-key ---------------------------------------------------------------------------------
    case('model_inputs.pop("labels", None)\n', "drop-key", "labels", id="PI194-pop"),
    case("_ = model_inputs.pop('labels')\n", "drop-key", "labels", id="PI194-pop-assigned"),
    case('del model_inputs["token_type_ids"]\n', "drop-key", "token_type_ids", id="PI194-del"),
    # PI195 key-variable -----------------------------------------------------------------------------
    case(
        'position_ids_key = "decoder_position_ids" if self.config.is_encoder_decoder else "position_ids"\n',
        "key-variable", "position_ids_key: position_ids or decoder_position_ids", id="PI195",
    ),
    # PI197 raises -----------------------------------------------------------------------------------
    case('raise NotImplementedError("use the text model")\n', "raises", "NotImplementedError", id="PI197"),
    # PI198 cache-key-always -------------------------------------------------------------------------
    case(
        """
        if "past_key_values" in inspect.signature(self.forward).parameters:
            model_inputs["past_key_values"] = past_key_values
        """,
        "cache-key-always", "when the forward takes it", id="PI198",
    ),
    # PI163 cache-position-from-cache ----------------------------------------------------------------
    case(
        """
        if (
            isinstance(past_key_values, tuple)
            and inputs_embeds is None
            and (cache_position is None or kwargs.get("use_cache") is False)
        ):
            past_length = min(past_key_values[0][0].shape[2], input_ids.shape[1] - 1)
            cache_position = torch.arange(past_length, input_ids.shape[1], dtype=torch.long, device=input_ids.device)
        """,
        "cache-position-from-cache", "the last token kept", id="PI163-formatted-over-lines",
    ),
]


@pytest.mark.parametrize(("source", "behaviour", "detail", "facets"), POSITIVE)
def test_recognised(source: str, behaviour: str, detail: str, facets: dict[str, str]) -> None:
    analysis = analyse(source)
    assert analysis.unrecognised == ()
    found = [r for r in analysis.recognised if r.behaviour == behaviour]
    assert len(found) == 1, analysis.recognised
    assert detail in found[0].detail
    assert facets.items() <= dict(found[0].facets).items()


def test_every_rule_has_a_positive_case() -> None:
    covered = {p.values[1] for p in POSITIVE}
    missing = {r.name for r in rules.ALL} - covered - {
        # rules whose only idiom is the 5.x mixin's own, covered by their docstring example
        "encoder-decoder-masks", "move-to-device", "remote-code-cache-position", "flash-attention-seq-lens",
    }
    assert missing == set()


def test_mixin_inputs_embeds_block_implies_the_encoder_decoder_key() -> None:
    source = next(p.values[0] for p in POSITIVE if p.id == "PI121-mixin-form")
    found = {r.behaviour: r for r in analyse(source).recognised}
    assert set(found) == {"inputs-embeds-first-step", "encoder-decoder-ids-key"}
    assert found["encoder-decoder-ids-key"].code == "PI121"


# ------------------------------------------------------------------------------------------------ NOOP


def noop(source: str, behaviour: str, needle: str, *, id: str):
    return pytest.param(textwrap.dedent(source), behaviour, needle, id=id)


NOOP = [
    # PI101: slicing something that is not the ids, by cache_position, is not slicing the ids
    noop(
        """
        if past_key_values is not None:
            if inputs_embeds is not None:
                attention_mask = attention_mask[:, -cache_position.shape[0] :]
            elif attention_mask.shape[1] != cache_position.shape[0]:
                attention_mask = attention_mask[:, cache_position]
        """,
        "slice-by-cache-position", "attention_mask = attention_mask[:, -cache_position.shape[0]:]",
        id="PI101-another-variable",
    ),
    # PI101: the slice has to index with cache_position, not merely compare against it
    noop(
        """
        if past_key_values is not None:
            if input_ids.shape[1] != cache_position.shape[0]:
                input_ids = input_ids[:, -1:]
        """,
        "slice-by-cache-position", "if input_ids.shape[1] != cache_position.shape[0]", id="PI101-other-slice",
    ),
    # PI102: a cache the rule cannot read the length of
    noop(
        """
        if past_key_values is not None:
            past_length = my_cache.get_seq_length()
            if input_ids.shape[1] > past_length:
                remove_prefix_length = past_length
            else:
                remove_prefix_length = input_ids.shape[1] - 1
            input_ids = input_ids[:, remove_prefix_length:]
        """,
        "slice-by-past-length", "past_length = my_cache.get_seq_length()", id="PI102-unknown-cache",
    ),
    # PI102: keeping two tokens when the ids are short is another behaviour
    noop(
        """
        if past_key_values is not None:
            past_length = past_key_values[0][0].shape[2]
            if input_ids.shape[1] > past_length:
                remove_prefix_length = past_length
            else:
                remove_prefix_length = input_ids.shape[1] - 2
            input_ids = input_ids[:, remove_prefix_length:]
        """,
        "slice-by-past-length", "input_ids.shape[1] - 2", id="PI102-keeps-two",
    ),
    # PI103: two tokens are not the last token
    noop(
        "if past_key_values:\n    input_ids = input_ids[:, -2:]\n",
        "slice-to-last-token", "input_ids[:, -2:]", id="PI103-two-tokens",
    ),
    # PI103: without a cache guard the model would see one token on the first step too
    noop("input_ids = input_ids[:, -1:]\n", "slice-to-last-token", "input_ids[:, -1:]", id="PI103-unguarded"),
    # PI103: the guard says there is no cache
    noop(
        "if past_key_values is None:\n    input_ids = input_ids[:, -1:]\n",
        "slice-to-last-token", "input_ids[:, -1:]", id="PI103-no-cache-guard",
    ),
    # PI103: an unknown test is not a cache guard
    noop(
        "if use_cache:\n    input_ids = input_ids[:, -1:]\n",
        "slice-to-last-token", "if use_cache:", id="PI103-unknown-guard",
    ),
    # PI103: the mask is not the ids
    noop(
        "if past_key_values:\n    attention_mask = attention_mask[:, -1:]\n",
        "slice-to-last-token", "attention_mask[:, -1:]", id="PI103-another-variable",
    ),
    # PI103: the first token is not the last
    noop(
        "if past_key_values:\n    input_ids = input_ids[:, :1]\n",
        "slice-to-last-token", "input_ids[:, :1]", id="PI103-first-token",
    ),
    # PI104: slicing by something else than next_sequence_length
    noop(
        "input_ids = input_ids[:, -new_tokens:] if new_tokens is not None else input_ids\n",
        "slice-by-next-sequence-length", "new_tokens", id="PI104-other-length",
    ),
    # PI111: without masked_fill_ the padded positions are negative
    noop(
        """
        if attention_mask is not None and position_ids is None:
            position_ids = attention_mask.long().cumsum(-1) - 1
            if past_key_values:
                position_ids = position_ids[:, -input_ids.shape[1] :]
        """,
        "position-ids-from-mask", "if attention_mask is not None and position_ids is None:", id="PI111-no-masked-fill",
    ),
    # PI111: a different padding value
    noop(
        """
        if attention_mask is not None and position_ids is None:
            position_ids = attention_mask.long().cumsum(-1) - 1
            position_ids.masked_fill_(attention_mask == 0, 0)
        """,
        "position-ids-from-mask", "masked_fill_(attention_mask == 0, 0)", id="PI111-other-padding",
    ),
    # PI111: something else happens in the block
    noop(
        """
        if attention_mask is not None and position_ids is None:
            position_ids = attention_mask.long().cumsum(-1) - 1
            position_ids.masked_fill_(attention_mask == 0, 1)
            position_ids = position_ids + self.config.position_offset
        """,
        "position-ids-from-mask", "position_offset", id="PI111-extra-statement",
    ),
    # PI111: sliced under a test that is not a cache guard
    noop(
        """
        if attention_mask is not None and position_ids is None:
            position_ids = attention_mask.long().cumsum(-1) - 1
            position_ids.masked_fill_(attention_mask == 0, 1)
            if use_cache:
                position_ids = position_ids[:, -input_ids.shape[1] :]
        """,
        "position-ids-from-mask", "if use_cache:", id="PI111-slice-not-under-cache",
    ),
    # PI111: the else branch does something else than dropping passed position_ids
    noop(
        """
        if attention_mask is not None and position_ids is None:
            position_ids = attention_mask.long().cumsum(-1) - 1
            position_ids.masked_fill_(attention_mask == 0, 1)
        else:
            position_ids = position_ids + 1
        """,
        "position-ids-from-mask", "position_ids + 1", id="PI111-other-else",
    ),
    # PI111: the test is not the usual one
    noop(
        """
        if position_ids is None:
            position_ids = attention_mask.long().cumsum(-1) - 1
            position_ids.masked_fill_(attention_mask == 0, 1)
        """,
        "position-ids-from-mask", "attention_mask.long().cumsum(-1) - 1", id="PI111-other-test",
    ),
    # PI121: an extra key on the first step is model-specific
    noop(
        """
        if inputs_embeds is not None and cache_position[0] == 0:
            model_inputs = {"inputs_embeds": inputs_embeds, "input_ids": None, "pixel_values": pixel_values}
        else:
            model_inputs = {"input_ids": input_ids, "inputs_embeds": None}
        """,
        "inputs-embeds-first-step", "if inputs_embeds is not None and cache_position[0] == 0:", id="PI121-extra-key",
    ),
    # PI121: no else branch: what is fed later is unknown
    noop(
        """
        if inputs_embeds is not None and cache_position[0] == 0:
            model_inputs = {"inputs_embeds": inputs_embeds}
        """,
        "inputs-embeds-first-step", "if inputs_embeds is not None", id="PI121-no-else",
    ),
    # PI121: the embeddings are changed
    noop(
        """
        if inputs_embeds is not None and cache_position[0] == 0:
            model_inputs = {"inputs_embeds": inputs_embeds * self.scale, "input_ids": None}
        else:
            model_inputs = {"input_ids": input_ids, "inputs_embeds": None}
        """,
        "inputs-embeds-first-step", "inputs_embeds * self.scale", id="PI121-scaled-embeddings",
    ),
    # PI121: later steps still get the embeddings
    noop(
        """
        if inputs_embeds is not None and cache_position[0] == 0:
            model_inputs = {"inputs_embeds": inputs_embeds, "input_ids": None}
        else:
            model_inputs = {"input_ids": input_ids, "inputs_embeds": inputs_embeds}
        """,
        "inputs-embeds-first-step", "if inputs_embeds is not None", id="PI121-embeddings-later-too",
    ),
    # PI121: later steps feed something that is not the ids
    noop(
        """
        if inputs_embeds is not None and cache_position[0] == 0:
            model_inputs = {"inputs_embeds": inputs_embeds, "input_ids": None}
        else:
            model_inputs = {"input_ids": attention_mask, "inputs_embeds": None}
        """,
        "inputs-embeds-first-step", "if inputs_embeds is not None", id="PI121-not-the-ids",
    ),
    # PI121: a dict the function does not return
    noop(
        """
        if inputs_embeds is not None and cache_position[0] == 0:
            inputs = {"inputs_embeds": inputs_embeds}
        else:
            inputs = {"input_ids": input_ids}
        """,
        "inputs-embeds-first-step", "if inputs_embeds is not None", id="PI121-not-the-output",
    ),
    # PI131: an unrelated statement in the static-cache block
    noop(
        """
        if isinstance(past_key_values, StaticCache) and attention_mask.ndim == 2:
            batch_size, sequence_length = input_ids.shape
            print("static cache")
            attention_mask = _prepare_4d_causal_attention_mask_with_cache_position(attention_mask)
        """,
        "static-cache-mask", "print('static cache')", id="PI131-print",
    ),
    noop(
        """
        if isinstance(past_key_values, StaticCache) and attention_mask.ndim == 2:
            model_inputs["static"] = True
            attention_mask = _prepare_4d_causal_attention_mask_with_cache_position(attention_mask)
        """,
        "static-cache-mask", "model_inputs['static'] = True", id="PI131-sets-an-output",
    ),
    noop(
        """
        if isinstance(past_key_values, StaticCache) and attention_mask.ndim == 2:
            batch_size, sequence_length = input_ids.shape
            cache_position = cache_position + 1
            attention_mask = _prepare_4d_causal_attention_mask_with_cache_position(attention_mask)
        """,
        "static-cache-mask", "cache_position = cache_position + 1", id="PI131-changes-cache-position",
    ),
    # PI131: no helper builds the mask
    noop(
        """
        if isinstance(past_key_values, StaticCache) and attention_mask.ndim == 2:
            batch_size, sequence_length = input_ids.shape
            attention_mask = build_my_own_mask(attention_mask, sequence_length)
        """,
        "static-cache-mask", "build_my_own_mask", id="PI131-unknown-helper",
    ),
    noop(
        """
        if isinstance(past_key_values, StaticCache) and attention_mask.ndim == 2:
            batch_size, sequence_length = input_ids.shape
        """,
        "static-cache-mask", "isinstance(past_key_values, StaticCache)", id="PI131-no-mask-at-all",
    ),
    # PI131: an else branch is not part of the idiom
    noop(
        """
        if isinstance(past_key_values, StaticCache) and attention_mask.ndim == 2:
            attention_mask = _prepare_4d_causal_attention_mask_with_cache_position(attention_mask)
        else:
            attention_mask = None
        """,
        "static-cache-mask", "attention_mask = None", id="PI131-else",
    ),
    # PI132: padding with ones is not Bloom's zero padding
    noop(
        """
        if isinstance(past_key_values, StaticCache) and attention_mask is not None:
            target_length = past_key_values.get_max_length()
            batch_size, seq_length = attention_mask.shape
            diff = target_length - seq_length
            new_attn_mask = torch.ones(batch_size, diff, device=attention_mask.device, dtype=attention_mask.dtype)
            attention_mask = torch.cat([attention_mask, new_attn_mask], dim=-1)
        """,
        "static-cache-pad-mask", "torch.ones", id="PI132-ones",
    ),
    # PI141: without a cache guard the input is cut on the first step too
    noop(
        """
        if token_type_ids is not None:
            token_type_ids = token_type_ids[:, -input_ids.shape[1] :]
        """,
        "slice-with-ids", "token_type_ids[:, -input_ids.shape[1]:]", id="PI141-unguarded",
    ),
    # PI141: cut to the length of something that is not the ids
    noop(
        """
        if past_key_values:
            if token_type_ids is not None:
                token_type_ids = token_type_ids[:, -attention_mask.shape[1] :]
        """,
        "slice-with-ids", "attention_mask.shape[1]", id="PI141-other-length",
    ),
    # PI141: a different input is assigned
    noop(
        """
        if past_key_values:
            if token_type_ids is not None:
                token_type_ids = position_ids[:, -input_ids.shape[1] :]
        """,
        "slice-with-ids", "token_type_ids = position_ids", id="PI141-other-source",
    ),
    # PI151: zeros attend to nothing
    noop(
        "if attention_mask is None:\n    attention_mask = input_ids.new_zeros(input_ids.shape)\n",
        "default-attention-mask", "new_zeros", id="PI151-zeros",
    ),
    # PI151: shaped like the embeddings (three dimensions), not the ids
    noop(
        "if attention_mask is None:\n    attention_mask = inputs_embeds.new_ones(inputs_embeds.shape)\n",
        "default-attention-mask", "inputs_embeds.new_ones", id="PI151-like-embeddings",
    ),
    # PI161: only half of the mixin's block
    noop(
        """
        if self._supports_cache_class:
            model_inputs["cache_position"] = cache_position
        """,
        "synthesise-cache-position", "if self._supports_cache_class:", id="PI161-half",
    ),
    # PI171: without the check that generate passed cache_position
    noop(
        """
        if use_cache:
            if cache_position[0] > 0:
                input_ids = input_ids[:, -1].unsqueeze(-1)
                if attention_mask is not None:
                    attention_mask = None
            else:
                cache_position = torch.arange(0, self.config.conv_kernel, device=input_ids.device)
        """,
        "state-space-cache", "if use_cache:", id="PI171-no-check",
    ),
    # PI181: another object's method is not a delegation to this model's mixin or sub-model
    noop(
        "model_inputs = helper.prepare_inputs_for_generation(input_ids, **kwargs)\n",
        "delegate", "helper.prepare_inputs_for_generation", id="PI181-foreign-object",
    ),
    noop(
        "other = super().prepare_inputs_for_generation(input_ids, **kwargs)\n",
        "delegate", "other = super()", id="PI181-not-the-output",
    ),
    # PI190: keys the rule cannot read
    noop('model_inputs = {name: input_ids}\n', "output-dict", "{name: input_ids}", id="PI190-variable-key"),
    noop(
        'model_inputs = {"input_ids": input_ids, **extra}\n', "output-dict", "**extra", id="PI190-spread-other-dict",
    ),
    noop("model_inputs[name] = input_ids\n", "output-dict", "model_inputs[name]", id="PI190-variable-subscript"),
    # PI191: a key the rule cannot read
    noop("token_type_ids = kwargs.get(name)\n", "read-kwarg", "kwargs.get(name)", id="PI191-variable-key"),
    noop('token_type_ids = other.get("token_type_ids")\n', "read-kwarg", "other.get", id="PI191-other-dict"),
    # PI192: a key the rule cannot read
    noop("kwargs[name] = 1\n", "set-kwarg", "kwargs[name] = 1", id="PI192-variable-key"),
    # PI193: forwarding from a dict that is not **kwargs
    noop(
        """
        for key, value in extra.items():
            if key not in model_inputs:
                model_inputs[key] = value
        """,
        "forward-kwargs", "for key, value in extra.items():", id="PI193-other-dict",
    ),
    # PI193: into a dict that is not returned
    noop(
        """
        for key, value in kwargs.items():
            if key not in inputs:
                inputs[key] = value
        """,
        "forward-kwargs", "for key, value in kwargs.items():", id="PI193-not-the-output",
    ),
    # PI194: a key the rule cannot read, or a dict it does not know
    noop("model_inputs.pop(name, None)\n", "drop-key", "model_inputs.pop(name, None)", id="PI194-variable-key"),
    noop('extra.pop("labels", None)\n', "drop-key", "extra.pop", id="PI194-other-dict"),
    # PI195: the two keys are not a decoder and a plain version of one name
    noop(
        'mask_key = "decoder_mask" if self.config.is_encoder_decoder else "attention_mask"\n',
        "key-variable", "decoder_mask", id="PI195-mismatched",
    ),
    # PI197: other exceptions are not the converter's removal marker
    noop('raise ValueError("not supported")\n', "raises", "raise ValueError", id="PI197-value-error"),
]


@pytest.mark.parametrize(("source", "behaviour", "needle"), NOOP)
def test_not_recognised(source: str, behaviour: str, needle: str) -> None:
    analysis = analyse(source)
    assert behaviour not in analysis.behaviours
    assert any(needle in u.code for u in analysis.unrecognised), analysis.unrecognised


def test_read_kwarg_fallback_to_another_setting_is_not_part_of_the_read() -> None:
    """Falling back to a different config setting is not the forward's own default: the read stays one line."""
    analysis = analyse(
        """
        output_attentions = kwargs.get("output_attentions")
        if output_attentions is None:
            output_attentions = getattr(self.config, "output_hidden_states", False)
        """
    )
    assert [(r.behaviour, r.line, r.end_line, r.detail) for r in analysis.recognised] == [
        ("read-kwarg", 1, 1, "output_attentions (read)")
    ]
    assert [u.code for u in analysis.unrecognised] == [
        "output_attentions = getattr(self.config, 'output_hidden_states', False)"
    ]


def test_inputs_embeds_first_step_needs_a_cache_to_be_absent() -> None:
    analysis = analyse(
        """
        if inputs_embeds is not None and attention_mask is None:
            model_inputs = {"inputs_embeds": inputs_embeds}
        else:
            model_inputs = {"input_ids": input_ids}
        """
    )
    assert "inputs-embeds-first-step" not in analysis.behaviours


def test_static_cache_mask_discarded_after_the_helper() -> None:
    analysis = analyse(
        """
        if isinstance(past_key_values, StaticCache) and attention_mask.ndim == 2:
            batch_size, sequence_length = input_ids.shape
            attention_mask = _prepare_4d_causal_attention_mask_with_cache_position(attention_mask)
            attention_mask = None
        """
    )
    assert "static-cache-mask" not in analysis.behaviours


def test_static_cache_mask_changed_before_the_helper() -> None:
    analysis = analyse(
        """
        if isinstance(past_key_values, StaticCache) and attention_mask.ndim == 2:
            attention_mask = 1 - attention_mask
            attention_mask = _prepare_4d_causal_attention_mask_with_cache_position(attention_mask)
        """
    )
    assert "static-cache-mask" not in analysis.behaviours


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
    assert analysis.output_values() == expected


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
            True, id="forward-loop",
        ),
        pytest.param("model_inputs = super().prepare_inputs_for_generation(input_ids)", False, id="super-without-kwargs"),
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
    ],
)
def test_covered_without_differences(name: str, mixin) -> None:
    assert coverage(name, {}, mixin) == Coverage(True)


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
    ("facets", "mixin", "differences"),
    [
        pytest.param(
            {"slice": "new tokens", "padding": "1", "when": "always"},
            [{"slice": "new tokens", "padding": "1"}], [], id="same",
        ),
        pytest.param({"slice": "last token"}, [{}], ["to the last token"], id="last-token"),
        pytest.param({"slice": "none"}, [{}], ["does not slice position_ids"], id="not-sliced"),
        pytest.param({"slice": "new tokens", "when": "alibi off"}, [{}], ["only without ALiBi"], id="alibi"),
        pytest.param(
            {"slice": "new tokens", "passed": "ignored without a mask"}, [{}],
            ["drops position_ids passed without an attention mask"], id="passed-ignored",
        ),
        pytest.param(
            {"slice": "new tokens", "padding": "1"}, [{"padding": "0"}], ["fills padded positions with 1, the mixin with 0"],
            id="padding",
        ),
        pytest.param(
            {"slice": "new tokens"}, [{"where": "once, in generate()"}], ["the mixin builds them once, in generate()"],
            id="built-elsewhere",
        ),
        pytest.param(
            {"slice": "last token", "when": "alibi off"}, [{}], ["to the last token", "only without ALiBi"],
            id="several",
        ),
    ],
)
def test_position_ids_coverage(facets, mixin, differences: list[str]) -> None:
    found = coverage("position-ids-from-mask", facets, {"position-ids-from-mask": mixin})
    assert found.covered
    assert len(found.differences) == len(differences)
    for text, fragment in zip(found.differences, differences):
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
            True, [], id="same-helper-family",
        ),
        pytest.param(
            {"cache": "StaticCache", "helper": "self.model._prepare_4d_causal_attention_mask_with_cache_position"},
            [{"cache": "StaticCache", "helper": "the module's helper"}],
            True, ["builds the mask with self.model."], id="other-helper",
        ),
        pytest.param(
            {"cache": "HybridCache", "helper": "the module's helper", "unless": "flash attention"},
            [{"cache": "StaticCache", "helper": "the module's helper"}],
            False, "only for StaticCache, not HybridCache", id="hybrid-cache-not-handled",
        ),
        pytest.param(
            {"cache": "HybridCache", "helper": "the module's helper", "unless": "flash attention"},
            [{"cache": "any compileable Cache", "helper": "the module's helper"}],
            True, ["skips the 4D mask under flash attention"], id="any-compileable-cache",
        ),
        pytest.param(
            {"cache": "HybridCache", "helper": "the module's helper"},
            [{"cache": "StaticCache"}, {"cache": "HybridCache"}],
            True, [], id="several-mixin-blocks",
        ),
    ],
)
def test_static_cache_mask_coverage(facets, mixin, covered: bool, expected) -> None:
    found = coverage("static-cache-mask", facets, {"static-cache-mask": mixin})
    assert found.covered is covered
    if covered:
        assert len(found.differences) == len(expected)
        for text, fragment in zip(found.differences, expected):
            assert fragment in text
    else:
        assert expected in found.missing


@pytest.mark.parametrize(
    ("names", "mixin", "covered", "missing"),
    [
        pytest.param("token_type_ids", [{"names": "position_ids,token_type_ids"}], True, "", id="handled"),
        pytest.param("position_ids,token_type_ids", [{"names": "position_ids,token_type_ids"}], True, "", id="both"),
        pytest.param("mm_token_type_ids", [{"names": "position_ids,token_type_ids"}], False, "mm_token_type_ids",
                     id="not-handled"),
        pytest.param("mm_token_type_ids", [{"names": "position_ids"}, {"names": "mm_token_type_ids"}], True, "",
                     id="handled-by-a-second-block"),
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
