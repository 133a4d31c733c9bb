"""Tests for ``rules._pattern``: code templates with ``$metavariables``.

A template matches by structure only: layout (whitespace, comments, parentheses, trailing commas,
line continuations, string quoting) never matters; names, operators, argument order and keywords do.
"""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from codemod.rules._pattern import Captures, Template, any_template, node_code


def statements(source: str) -> list[cst.BaseStatement]:
    return list(cst.parse_module(textwrap.dedent(source)).body)


def matches(template: str, source: str, start: int = 0) -> bool:
    return Template.parse(template).match(statements(source), start) is not None


# --------------------------------------------------------------------------------------------- layout


@pytest.mark.parametrize(
    ("template", "source"),
    [
        pytest.param("x = y[:, -1:]", "x = y[ : , -1 : ]", id="spaces-in-subscript"),
        pytest.param("x = y[:, -1:]", "x = y[:,-1:]", id="no-spaces"),
        pytest.param("x = y[:, -1:]", "x = (y[:, -1:])", id="parenthesised-value"),
        pytest.param("x = y[:, -1:]", "x = \\\n    y[:, -1:]", id="backslash-continuation"),
        pytest.param("x = y[:, -1:]", "x = y[:, -1:]  # keep the last token", id="trailing-comment"),
        pytest.param("x = y.shape[0]", "x = (y).shape[(0)]", id="redundant-parentheses"),
        pytest.param("f(a, key=b)", "f(\n    a,\n    key = b,\n)", id="wrapped-call-trailing-comma"),
        pytest.param("f(a, key=b)", "f(a,  # first\n  key=b)  # second", id="comments-in-call"),
        pytest.param('x = {"a": 1, "b": 2}', "x = {'a': 1, 'b': 2,}", id="dict-quotes-trailing-comma"),
        pytest.param('x = "a"', "x = 'a'", id="single-quotes"),
        pytest.param('x = "a"', 'x = """a"""', id="triple-quotes"),
        pytest.param('x = "a"', 'x = r"a"', id="raw-string-same-value"),
        pytest.param(
            "if a:\n    b = 1", "if a:  # why\n    # note\n\n    b = 1  # done\n", id="comments-and-blank-lines"
        ),
        pytest.param("if a:\n    b = 1", "if (a):\n    b = (1)", id="parenthesised-test"),
        pytest.param("a = 1\nb = 2", "a = 1\n\n# between\nb = 2", id="blank-line-and-comment-between"),
    ],
)
def test_layout_does_not_matter(template: str, source: str) -> None:
    assert matches(template, source)


@pytest.mark.parametrize(
    ("template", "source"),
    [
        pytest.param("x = y[:, -1:]", "x = y[:, -2:]", id="different-number"),
        pytest.param("x = y[:, -1:]", "x = z[:, -1:]", id="different-name"),
        pytest.param("x = y.a", "x = y.b", id="different-attribute"),
        pytest.param("x = a + b", "x = a - b", id="different-operator"),
        pytest.param("x = (a + b) * c", "x = a + b * c", id="grouping-is-structure"),
        pytest.param("f(a, key=b)", "f(a, other=b)", id="different-keyword"),
        pytest.param("f(a, key=b)", "f(a, b)", id="keyword-vs-positional"),
        pytest.param("f(a, b)", "f(b, a)", id="argument-order"),
        pytest.param('x = {"a": 1, "b": 2}', 'x = {"b": 2, "a": 1}', id="dict-order"),
        pytest.param('x = "a"', 'x = "b"', id="different-string"),
        pytest.param('x = "a"', 'x = b"a"', id="bytes-are-not-str"),
        pytest.param("if a:\n    b = 1", "if a:\n    b = 1\n    c = 2", id="extra-statement-in-block"),
        pytest.param("if a:\n    b = 1", "if a:\n    b = 1\nelse:\n    c = 2", id="extra-else"),
        pytest.param("x = $y", "x = 1; z = 2", id="two-statements-on-one-line"),
        pytest.param("x = $y", "x: int = 1", id="annotated-assignment"),
    ],
)
def test_structure_matters(template: str, source: str) -> None:
    assert not matches(template, source)


# ---------------------------------------------------------------------------------------- metavariables


def test_metavariable_captures_any_expression() -> None:
    captures = Template.parse("$ids = $ids[:, -1:]").match(statements("input_ids = input_ids[:, -1:]"))
    assert isinstance(captures, Captures)
    assert "ids" in captures
    assert captures.code("ids") == "input_ids"
    assert isinstance(captures.nodes["ids"], cst.Name)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        pytest.param("x = x + 1", "x", id="same-name"),
        pytest.param("a.b[0] = a.b[ 0 ] + 1", "a.b[0]", id="same-code-different-layout"),
        pytest.param("(x) = x + 1", "x", id="parentheses-do-not-count"),
    ],
)
def test_repeated_metavariable_must_capture_the_same_code(source: str, expected: str) -> None:
    captures = Template.parse("$a = $a + 1").match(statements(source))
    assert captures is not None
    assert captures.code("a") == expected


@pytest.mark.parametrize(
    "source",
    [
        pytest.param("x = y + 1", id="different-names"),
        pytest.param("x = x.y + 1", id="attribute-of-the-same-name"),
    ],
)
def test_repeated_metavariable_rejects_different_code(source: str) -> None:
    assert Template.parse("$a = $a + 1").match(statements(source)) is None


def test_repeated_metavariable_across_statements() -> None:
    template = Template.parse("$x = 1\n$y = $x")
    assert template.match(statements("a = 1\nb = a")) is not None
    assert template.match(statements("a = 1\nb = c")) is None


def test_anonymous_metavariable_is_not_captured_and_need_not_agree() -> None:
    captures = Template.parse("$_ = $_ + 1").match(statements("x = y + 1"))
    assert captures is not None
    assert "_" not in captures
    assert dict(captures.nodes) == {}


def test_anonymous_metavariable_matches_a_whole_call_argument() -> None:
    template = Template.parse("raise ValueError($_)")
    assert template.match(statements('raise ValueError("a" "b" f"{c}")')) is not None
    assert template.match(statements("raise ValueError()")) is None  # one argument, not any


def test_metavariable_in_attribute_position() -> None:
    captures = Template.expression("not self.$part.use_alibi").match_expression(
        cst.parse_expression("not self.transformer.use_alibi")
    )
    assert captures is not None
    assert captures.code("part") == "transformer"


def test_metavariable_does_not_match_a_statement_sequence() -> None:
    # ``$x`` stands for one expression: a block with two statements does not fit a one-statement body
    assert not matches("if a:\n    $x", "if a:\n    f()\n    g()")
    assert matches("if a:\n    $x", "if a:\n    f()")


# ------------------------------------------------------------------------------------------ expressions


@pytest.mark.parametrize(
    ("template", "expression", "captured"),
    [
        pytest.param("$p is not None", "past_key_values is not None", {"p": "past_key_values"}, id="comparison"),
        pytest.param("$p is not None", "(foo) is not None", {"p": "foo"}, id="parenthesised-operand"),
        pytest.param("$p.get_seq_length()", "cache.get_seq_length()", {"p": "cache"}, id="method-call"),
        pytest.param("$p[0][0].shape[2]", "past[0][0].shape[2]", {"p": "past"}, id="subscripts"),
        pytest.param("x == 'flash_attention_2'", 'x == "flash_attention_2"', {}, id="string-quoting-in-expression"),
        pytest.param(
            "a is not None and b is None", "(a is not None) and (b is None)", {}, id="parenthesised-operands"
        ),
    ],
)
def test_expression_templates(template: str, expression: str, captured: dict[str, str]) -> None:
    captures = Template.expression(template).match_expression(cst.parse_expression(expression))
    assert captures is not None
    assert {name: captures.code(name) for name in captures.nodes} == captured


@pytest.mark.parametrize(
    ("template", "expression"),
    [
        pytest.param("$p is not None", "past_key_values is None", id="negation-differs"),
        pytest.param("a and b", "b and a", id="operand-order"),
        pytest.param("a and b and c", "a and b", id="fewer-operands"),
        pytest.param("$p.get_seq_length()", "cache.get_seq_length(0)", id="extra-argument"),
    ],
)
def test_expression_templates_reject(template: str, expression: str) -> None:
    assert Template.expression(template).match_expression(cst.parse_expression(expression)) is None


# ----------------------------------------------------------------------------------------- sequences


def test_template_length_is_its_statement_count() -> None:
    assert len(Template.parse("a = 1")) == 1
    assert len(Template.parse("a = 1\nb = 2\nif c:\n    d = 3")) == 3


def test_sequence_matches_consecutive_statements_from_start() -> None:
    body = statements("z = 0\na = 1\n# comment\nb = 2\n")
    template = Template.parse("a = 1\nb = 2")
    assert template.match(body, 0) is None
    assert template.match(body, 1) is not None


def test_sequence_past_the_end_does_not_match() -> None:
    assert Template.parse("a = 1\nb = 2").match(statements("a = 1"), 0) is None
    assert Template.parse("a = 1").match(statements("a = 1"), 1) is None


def test_sequence_must_not_skip_statements() -> None:
    assert not matches("a = 1\nb = 2", "a = 1\nc = 3\nb = 2")


def test_template_source_is_dedented() -> None:
    template = Template.parse(
        """
            a = 1
            if b:
                c = 2
        """
    )
    assert template.source == "a = 1\nif b:\n    c = 2"
    assert template.match(statements("a = 1\nif b:\n    c = 2")) is not None


def test_any_template_prefers_the_longest() -> None:
    short, long = Template.parse("a = 1"), Template.parse("a = 1\nb = 2")
    found = any_template([short, long], statements("a = 1\nb = 2"), 0)
    assert found is not None and found[0] is long
    found = any_template([long, short], statements("a = 1\nb = 3"), 0)
    assert found is not None and found[0] is short
    assert any_template([long], statements("a = 1"), 0) is None


# ------------------------------------------------------------------------------------------- node_code


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        pytest.param("x[ :, -1 : ]", "x[:, -1:]", id="subscript"),
        pytest.param("(a +\n  b)", "a + b", id="wrapped"),
        pytest.param("f(a,  # c\n  key = 'v',)", "f(a, key='v')", id="call"),
        pytest.param("{'a': 1,}", "{'a': 1}", id="dict"),
    ],
)
def test_node_code_normalises_expressions(source: str, expected: str) -> None:
    assert node_code(cst.parse_expression(source)) == expected


def test_node_code_of_statements() -> None:
    (compound,) = statements("if a:  # c\n    b = (1)\n")
    assert node_code(compound) == "if a:\n    b = 1"
    (line,) = statements("x = 1; y = 2\n")
    assert isinstance(line, cst.SimpleStatementLine)
    assert node_code(line) == "x = 1\ny = 2"
    assert node_code(line.body[0]) == "x = 1"  # a small statement


def test_node_code_of_other_nodes() -> None:
    function = cst.parse_statement("def f(a, b=1): pass")
    assert isinstance(function, cst.FunctionDef)
    assert node_code(function.params.params[1]) == "b=1"


def test_captures_code_is_normalised() -> None:
    captures = Template.parse("x = $v").match(statements("x = (\n    # comment\n    a +\n    b\n)"))
    assert captures is not None
    assert captures.code("v") == "a + b"
