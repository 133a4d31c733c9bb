"""Tests for ``codemod.analyse.copies``: ``# Copied from`` markers, checking copies, grouping them.

The checks run against a tiny synthetic ``transformers`` package written to ``tmp_path``: an ``alpha``
model holding the originals and a ``beta`` model whose copies each test writes.
"""

from __future__ import annotations

import ast
import random
import textwrap
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from codemod.analyse.copies import (
    CopyCheck,
    CopyGroup,
    CopyMarker,
    Replacement,
    apply_replacements,
    check_copy,
    copy_groups,
    find_markers,
    ignore_copy_lines,
    marker_above,
    parse_marker,
    resolve_target,
)
from codemod.checkout import Checkout, resolve

ALPHA = '''\
"""The alpha model: the originals the beta model copies."""

ALPHA_SCALE = 2


class AlphaCache:
    pass


class AlphaModel:
    def __init__(self, config):
        self.config = config


class AlphaForCausalLM:
    """The Alpha language model."""

    def __init__(self, config):
        self.model = AlphaModel(config)
        self.alpha_scale = ALPHA_SCALE

    def forward(self, input_ids):
        return self.model(input_ids)

    def prepare_inputs_for_generation(self, input_ids, past_key_values=None, attention_mask=None, **kwargs):
        if isinstance(past_key_values, AlphaCache):
            input_ids = input_ids[:, -1:]
        return {"input_ids": input_ids, "past_key_values": past_key_values, "attention_mask": attention_mask}
'''

TARGET = "transformers.models.alpha.modeling_alpha.AlphaForCausalLM"
METHOD_MARKER = f"# Copied from {TARGET}.prepare_inputs_for_generation with Alpha->Beta"
METHOD = "BetaForCausalLM.prepare_inputs_for_generation"

SAME_METHOD = """\
def prepare_inputs_for_generation(self, input_ids, past_key_values=None, attention_mask=None, **kwargs):
    if isinstance(past_key_values, BetaCache):
        input_ids = input_ids[:, -1:]
    return {"input_ids": input_ids, "past_key_values": past_key_values, "attention_mask": attention_mask}
"""

REFORMATTED_METHOD = """\
def prepare_inputs_for_generation(
    self,
    input_ids,
    past_key_values=None,
    attention_mask=None,
    **kwargs,
):
    # once there is a cache, only the last token is new

    if isinstance(past_key_values, BetaCache):  # cached
        input_ids = input_ids[:, -1:]

    return {
        'input_ids': input_ids,
        "past_key_values": past_key_values,
        "attention_mask": attention_mask,
    }
"""

SAME_CLASS = '''\
class BetaForCausalLM:
    """The Beta language model."""

    def __init__(self, config):
        self.model = BetaModel(config)
        self.alpha_scale = ALPHA_SCALE

    def forward(self, input_ids):
        return self.model(input_ids)

    def prepare_inputs_for_generation(self, input_ids, past_key_values=None, attention_mask=None, **kwargs):
        if isinstance(past_key_values, BetaCache):
            input_ids = input_ids[:, -1:]
        return {"input_ids": input_ids, "past_key_values": past_key_values, "attention_mask": attention_mask}
'''


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


@pytest.fixture
def checkout(tmp_path: Path) -> Checkout:
    """A source checkout with the files ``codemod.checkout.resolve`` needs, and the alpha model."""
    package = tmp_path / "src" / "transformers"
    _write(package / "__init__.py", '__version__ = "0.0"\n')
    for init in ("models", "generation", "models/alpha", "models/beta"):
        _write(package / init / "__init__.py", "")
    _write(package / "generation" / "utils.py", "class GenerationMixin:\n    pass\n")
    _write(package / "models" / "alpha" / "modeling_alpha.py", ALPHA)
    return resolve(tmp_path, with_git=False)


def _read(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _definition(source: str, dotted: str) -> ast.stmt:
    scope: list[ast.stmt] = ast.parse(source).body
    for name in dotted.split("."):
        node = next(s for s in scope if isinstance(s, (ast.ClassDef, ast.FunctionDef)) and s.name == name)
        scope = node.body
    return node


def _check(checkout: Checkout, source: str, dotted: str) -> CopyCheck:
    """Write ``source`` as the beta model and check the copy ``dotted`` (e.g. ``Class.method``) in it."""
    _write(checkout.root / "src/transformers/models/beta/modeling_beta.py", source)
    lines = source.splitlines()
    node = _definition(source, dotted)
    start = min([node.lineno, *(d.lineno for d in getattr(node, "decorator_list", []))])
    marker = marker_above(lines, start)
    assert marker is not None
    return check_copy(checkout, marker, lines, start, node.end_lineno or node.lineno, _read)


def _method_module(method: str, marker: str = METHOD_MARKER) -> str:
    """A beta module whose ``BetaForCausalLM`` holds ``method`` under ``marker``."""
    body = textwrap.indent(f"{marker}\n{method}", "    ")
    return f"class BetaCache:\n    pass\n\n\nclass BetaForCausalLM:\n    x = 1\n\n{body}"


def _line_of(source: str, needle: str) -> int:
    return next(number for number, line in enumerate(source.splitlines(), 1) if needle in line)


# --- parse_marker ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("line", "indent", "package", "target", "replacements"),
    [
        pytest.param(
            "    # Copied from transformers.models.llama.modeling_llama.LlamaForCausalLM.prepare_inputs_for_generation",
            4,
            "transformers",
            "models.llama.modeling_llama.LlamaForCausalLM.prepare_inputs_for_generation",
            (),
            id="plain",
        ),
        pytest.param(
            "# Copied from transformers.models.a.modeling_a.AModel with A->B",
            0,
            "transformers",
            "models.a.modeling_a.AModel",
            (Replacement("A", "B"),),
            id="one-replacement",
        ),
        pytest.param(
            "# Copied from transformers.models.bart.modeling_bart.BartForCausalLM with Bart->Blenderbot, "
            "facebook/bart-base->facebook/blenderbot-400M-distill",
            0,
            "transformers",
            "models.bart.modeling_bart.BartForCausalLM",
            (Replacement("Bart", "Blenderbot"), Replacement("facebook/bart-base", "facebook/blenderbot-400M-distill")),
            id="replacements-with-spaces",
        ),
        pytest.param(
            "# Copied from transformers.models.llama.modeling_llama.LlamaForCausalLM with LLAMA->OLMO,Llama->Olmo",
            0,
            "transformers",
            "models.llama.modeling_llama.LlamaForCausalLM",
            (Replacement("LLAMA", "OLMO"), Replacement("Llama", "Olmo")),
            id="replacements-without-spaces",
        ),
        pytest.param(
            "# Copied from transformers.models.a.modeling_a.AModel with A->B, with AA->BB",
            0,
            "transformers",
            "models.a.modeling_a.AModel",
            (Replacement("A", "B"), Replacement("AA", "BB")),
            id="repeated-with",
        ),
        pytest.param(
            "    # Copied from transformers.models.bert.modeling_bert.BertModel with Bert->Roberta all-casing",
            4,
            "transformers",
            "models.bert.modeling_bert.BertModel",
            (Replacement("Bert", "Roberta", all_casing=True),),
            id="all-casing",
        ),
        pytest.param(
            "    # Copied from transfomers.models.switch_transformers.SwitchForCausalLM.prepare_inputs_for_generation",
            4,
            "transfomers",
            "models.switch_transformers.SwitchForCausalLM.prepare_inputs_for_generation",
            (),
            id="misspelled-package",
        ),
    ],
)
def test_parse_marker(
    line: str, indent: int, package: str, target: str, replacements: tuple[Replacement, ...]
) -> None:
    assert parse_marker(line, 7) == CopyMarker(
        line=7, indent=indent, target=target, package=package, replacements=replacements, raw=line.strip()
    )


@pytest.mark.parametrize(
    "line",
    [
        "# this is an ordinary comment",
        "# Copied from https://github.com/example/repo/blob/main/model.py",
        "x = 1  # Copied from transformers.models.a.modeling_a.AModel",
        "    # Copied from `modeling_a.py`",
    ],
)
def test_parse_marker_rejects(line: str) -> None:
    assert parse_marker(line, 1) is None


def test_find_markers() -> None:
    lines = ["# Copied from transformers.a.B", "x = 1", "    # Copied from transformers.a.B.c with B->D"]
    assert [(marker.line, marker.indent) for marker in find_markers(lines)] == [(1, 0), (3, 4)]


# --- marker_above ----------------------------------------------------------------------------------

MARKER = "# Copied from transformers.models.a.modeling_a.AModel"


@pytest.mark.parametrize(
    ("source", "found"),
    [
        pytest.param(f"x = 1\n{MARKER}\ndef f():\n    pass\n", True, id="directly-above"),
        pytest.param(f"{MARKER}\n@decorator\ndef f():\n    pass\n", True, id="above-decorator"),
        pytest.param(f"@decorator(\n    1,\n)\n{MARKER}\nclass A:\n    pass\n", True, id="below-decorators"),
        pytest.param(f"{MARKER}\n\ndef f():\n    pass\n", False, id="blank-line-between"),
        pytest.param(f"{MARKER}\n# another comment\ndef f():\n    pass\n", False, id="comment-between"),
        pytest.param("# a comment\ndef f():\n    pass\n", False, id="no-marker"),
    ],
)
def test_marker_above(source: str, found: bool) -> None:
    lines = source.splitlines()
    node = ast.parse(source).body[-1]
    assert isinstance(node, (ast.FunctionDef, ast.ClassDef))
    start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
    marker = marker_above(lines, start)
    assert (marker is not None) == found
    if found:
        assert marker is not None and marker.line == _line_of(source, "Copied from")


def test_ignore_copy_lines() -> None:
    lines = ["# Ignore copy", "def f():", "    # Ignore copy", "    x = 1  # Ignore copy", "# Ignore copy"]
    assert ignore_copy_lines(lines, 2, 4) == (3, 4)


def test_apply_replacements_all_casing() -> None:
    code = "AlphaModel(alpha_scale=ALPHA_SCALE)"
    assert apply_replacements(code, [Replacement("Alpha", "Beta")]) == "BetaModel(alpha_scale=ALPHA_SCALE)"
    assert apply_replacements(code, [Replacement("Alpha", "Beta", True)]) == "BetaModel(beta_scale=BETA_SCALE)"


# --- check_copy: method-level markers --------------------------------------------------------------


@pytest.mark.parametrize(
    "method",
    [
        pytest.param(SAME_METHOD, id="identical"),
        pytest.param(REFORMATTED_METHOD, id="comments-blank-lines-wrapping"),
        pytest.param(
            SAME_METHOD.replace("**kwargs):\n", "**kwargs):\n    # Ignore copy\n    return {}\n"),
            id="ignore-copy-drops-the-body",
        ),
        pytest.param(
            SAME_METHOD.replace("(self, input_ids,", "(self, input_ids, extra=None,  # Ignore copy\n"),
            id="ignore-copy-drops-the-signature",
        ),
    ],
)
def test_method_copy_consistent(checkout: Checkout, method: str) -> None:
    result = _check(checkout, _method_module(method), METHOD)
    assert result.status == "consistent", result.detail
    assert result.target_file == "src/transformers/models/alpha/modeling_alpha.py"
    assert result.target_line == _line_of(ALPHA, "def prepare_inputs_for_generation")
    assert result.target_class == "AlphaForCausalLM"


@pytest.mark.parametrize(
    ("method", "needle"),
    [
        pytest.param(SAME_METHOD.replace("[:, -1:]", "[:, -2:]"), "[:, -2:]", id="changed-statement"),
        pytest.param(SAME_METHOD.replace("BetaCache", "AlphaCache"), "AlphaCache", id="replacement-not-applied"),
        pytest.param(
            SAME_METHOD.replace("    return", "    input_ids = input_ids.long()\n    return"),
            ".long()",
            id="extra-statement",
        ),
        pytest.param(
            SAME_METHOD.replace("attention_mask=None, **kwargs", "attention_mask=None, cache=None, **kwargs"),
            "def prepare_inputs_for_generation",
            id="changed-signature",
        ),
        pytest.param(
            SAME_METHOD.replace('"attention_mask": attention_mask', '"mask": attention_mask'),
            '"mask"',
            id="changed-key",
        ),
        pytest.param(
            SAME_METHOD.replace("if isinstance", "# Ignore copy\n\n    if isinstance").replace("[:, -1:]", "[:, -2:]")
            + "\n    def nested():\n        return 1\n",
            "def nested",
            id="ignore-copy-block-not-in-target",
        ),
    ],
)
def test_method_copy_stale(checkout: Checkout, method: str, needle: str) -> None:
    source = _method_module(method)
    result = _check(checkout, source, METHOD)
    assert result.status == "stale", result.detail
    assert f"at line {_line_of(source, needle)}:" in result.detail
    assert needle in result.detail
    assert result.target_class == "AlphaForCausalLM"


@pytest.mark.parametrize(
    ("marker", "reason"),
    [
        pytest.param(
            "# Copied from transformers.models.gamma.modeling_gamma.GammaForCausalLM.prepare_inputs_for_generation",
            "transformers.models.gamma.modeling_gamma.GammaForCausalLM.prepare_inputs_for_generation does not exist",
            id="missing-module",
        ),
        pytest.param(
            f"# Copied from {TARGET}.prepare_inputs",
            "defines no 'prepare_inputs' in AlphaForCausalLM",
            id="missing-method",
        ),
        pytest.param(
            "# Copied from transformers.nowhere.Thing.prepare_inputs_for_generation",
            "target module of transformers.nowhere.Thing.prepare_inputs_for_generation does not exist",
            id="no-module-at-all",
        ),
        pytest.param(
            f"# Copied from transfomers.{TARGET.partition('.')[2]}.prepare_inputs_for_generation with Alpha->Beta",
            "package 'transfomers' is not 'transformers'",
            id="misspelled-package",
        ),
    ],
)
def test_method_copy_broken(checkout: Checkout, marker: str, reason: str) -> None:
    result = _check(checkout, _method_module(SAME_METHOD, marker), METHOD)
    assert result.status == "broken"
    assert reason in result.detail


def test_a_method_its_class_lacks_is_the_next_class_s_as_check_copies_finds_it(checkout: Checkout) -> None:
    """check_copies looks ``AlphaModel.prepare_inputs_for_generation`` up line by line from ``class AlphaModel`` on,
    and finds AlphaForCausalLM's (4.45's MarkupLM names ``BertModel.prepare_inputs_for_generation`` and is compared
    with BertLMHeadModel's): that is the copy's target, marked loose (no copy group: planning drops the marker where
    that method changes)."""
    marker = "# Copied from transformers.models.alpha.modeling_alpha.AlphaModel.prepare_inputs_for_generation with Alpha->Beta"
    result = _check(checkout, _method_module(SAME_METHOD, marker), METHOD)
    assert (result.status, result.loose, result.target_class) == ("consistent", True, "AlphaForCausalLM"), (
        result.detail
    )
    assert result.target_line == _line_of(ALPHA, "def prepare_inputs_for_generation")
    assert "check_copies finds AlphaForCausalLM's" in result.detail
    # a name no later class defines either is still broken
    missing = "# Copied from transformers.models.alpha.modeling_alpha.AlphaModel.prepare_nothing"
    assert _check(checkout, _method_module(SAME_METHOD, missing), METHOD).status == "broken"


def test_misspelled_package_names_where_it_would_point(checkout: Checkout) -> None:
    marker = f"# Copied from transfomers.{TARGET.partition('.')[2]}.prepare_inputs_for_generation"
    result = _check(checkout, _method_module(SAME_METHOD, marker), METHOD)
    assert result.status == "broken"
    assert result.target_class == "AlphaForCausalLM"
    assert result.target_line == _line_of(ALPHA, "def prepare_inputs_for_generation")


def test_remote_code_tree_is_unresolved(tmp_path: Path) -> None:
    source = _method_module(SAME_METHOD)
    _write(tmp_path / "remote" / "modeling_beta.py", source)
    tree = resolve(tmp_path / "remote", with_git=False)
    lines = source.splitlines()
    node = _definition(source, METHOD)
    marker = marker_above(lines, node.lineno)
    assert marker is not None
    result = check_copy(tree, marker, lines, node.lineno, node.end_lineno or node.lineno, _read)
    assert (result.status, result.target_file, result.target_line) == ("unresolved", None, None)
    assert resolve_target(tree, marker, _read) is None


def test_resolve_target(checkout: Checkout) -> None:
    marker = parse_marker(METHOD_MARKER, 1)
    assert marker is not None
    assert checkout.package_dir is not None
    assert resolve_target(checkout, marker, _read) == (
        checkout.package_dir / "models" / "alpha" / "modeling_alpha.py",
        _line_of(ALPHA, "def prepare_inputs_for_generation"),
        len(ALPHA.splitlines()),
        "AlphaForCausalLM",
    )


# --- check_copy: class-level markers ---------------------------------------------------------------

CLASS_MARKER = f"# Copied from {TARGET} with Alpha->Beta"


def _class_module(klass: str, marker: str = CLASS_MARKER) -> str:
    return f"ALPHA_SCALE = BETA_SCALE = 2\n\n\nclass BetaCache:\n    pass\n\n\n{marker}\n{klass}"


@pytest.mark.parametrize(
    ("klass", "marker"),
    [
        pytest.param(SAME_CLASS, CLASS_MARKER, id="identical"),
        pytest.param(
            "@register\n" + SAME_CLASS.replace("class BetaForCausalLM:", f"{CLASS_MARKER}\nclass BetaForCausalLM:"),
            "",
            id="marker-below-decorator",
        ),
        pytest.param(
            SAME_CLASS.replace("    def forward", "    # Ignore copy\n    def forward").replace(
                "return self.model(input_ids)", "return self.model(input_ids * 2)"
            ),
            CLASS_MARKER,
            id="ignore-copy-method",
        ),
        pytest.param(
            SAME_CLASS + "\n    # Ignore copy\n    def extra(self):\n        return 1\n",
            CLASS_MARKER,
            id="ignore-copy-extra-method",
        ),
        pytest.param(
            SAME_CLASS.replace("alpha_scale = ALPHA_SCALE", "beta_scale = BETA_SCALE"),
            CLASS_MARKER + " all-casing",
            id="all-casing",
        ),
    ],
)
def test_class_copy_consistent(checkout: Checkout, klass: str, marker: str) -> None:
    result = _check(checkout, _class_module(klass, marker), "BetaForCausalLM")
    assert result.status == "consistent", result.detail
    assert result.target_line == _line_of(ALPHA, "class AlphaForCausalLM")
    assert result.target_class == "AlphaForCausalLM"


@pytest.mark.parametrize(
    ("klass", "marker", "needle"),
    [
        pytest.param(
            SAME_CLASS.replace("The Beta language", "A Beta language"), CLASS_MARKER, "A Beta language", id="docstring"
        ),
        pytest.param(
            SAME_CLASS.replace("return self.model(input_ids)", "return self.model(input_ids * 2)"),
            CLASS_MARKER,
            "input_ids * 2",
            id="method-body",
        ),
        pytest.param(
            SAME_CLASS + "\n    def extra(self):\n        return 1\n", CLASS_MARKER, "def extra", id="extra-method"
        ),
        pytest.param(
            SAME_CLASS.replace("alpha_scale = ALPHA_SCALE", "beta_scale = BETA_SCALE"),
            CLASS_MARKER,
            "beta_scale",
            id="needs-all-casing",
        ),
        pytest.param(
            SAME_CLASS.replace("class BetaForCausalLM:", "class BetaForCausalLM(Base):"),
            CLASS_MARKER,
            "class BetaForCausalLM(Base)",
            id="bases",
        ),
    ],
)
def test_class_copy_stale(checkout: Checkout, klass: str, marker: str, needle: str) -> None:
    source = _class_module(klass, marker)
    result = _check(checkout, source, "BetaForCausalLM")
    assert result.status == "stale", result.detail
    assert f"at line {_line_of(source, needle)}:" in result.detail


def test_method_marker_on_a_class_is_stale(checkout: Checkout) -> None:
    marker = f"# Copied from {TARGET}.prepare_inputs_for_generation with Alpha->Beta"
    result = _check(checkout, _class_module(SAME_CLASS, marker), "BetaForCausalLM")
    assert result.status == "stale"


def test_copy_at_another_indentation(checkout: Checkout) -> None:
    """A method copied into a module-level function is compared after re-indenting the target."""
    source = f"class BetaCache:\n    pass\n\n\n{METHOD_MARKER}\n{SAME_METHOD}"
    result = _check(checkout, source, "prepare_inputs_for_generation")
    assert result.status == "consistent", result.detail


# --- copy_groups -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("edges", "groups"),
    [
        pytest.param([("c", "b"), ("b", "a"), ("a", None)], [CopyGroup("a", ("a", "b", "c"))], id="chain"),
        pytest.param([("c", "b"), ("b", "a")], [CopyGroup("a", ("a", "b", "c"))], id="chain-root-not-listed"),
        pytest.param(
            [("z", None), ("y", "m"), ("b", "a"), ("x", "m"), ("a", None)],
            [CopyGroup("a", ("a", "b")), CopyGroup("m", ("m", "x", "y"))],
            id="two-groups-and-a-singleton",
        ),
        pytest.param([("a", None), ("b", None)], [], id="singletons-only"),
        pytest.param([("b", "a"), ("a", "b")], [CopyGroup("a", ("a", "b"))], id="cycle"),
        pytest.param([("c", "a"), ("c", "b")], [CopyGroup("a", ("a", "b", "c"))], id="several-roots-smallest-wins"),
    ],
)
def test_copy_groups(edges: list[tuple[str, str | None]], groups: list[CopyGroup]) -> None:
    assert copy_groups(edges) == groups
    assert copy_groups(reversed(edges)) == groups


_IDS = st.sampled_from("abcdefgh")


@given(st.lists(st.tuples(_IDS, st.none() | _IDS)), st.randoms(use_true_random=False))
def test_copy_groups_partition_members_in_any_order(edges: list[tuple[str, str | None]], rnd: random.Random) -> None:
    groups = copy_groups(edges)
    shuffled = list(edges)
    rnd.shuffle(shuffled)
    assert copy_groups(shuffled) == groups
    members = [member for group in groups for member in group.members]
    assert len(members) == len(set(members))
    assert [group.source for group in groups] == sorted(group.source for group in groups)
    for group in groups:
        assert len(group.members) > 1 and group.members[0] == group.source
        assert list(group.members[1:]) == sorted(group.members[1:])
