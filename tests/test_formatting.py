"""The code the tool writes is laid out as transformers lays out its own (``ruff format``, line length 119), so that
a migration passes the checkout's ``make quality``: the generic mixin, each hook's code as the rewrite installs it,
and the class attributes it sets. ``black`` stands in for ruff here (ruff's formatter follows its style): a text is
laid out when black leaves it as it is."""

from __future__ import annotations

import ast
import difflib
import textwrap

import black
import pytest

from codemod.analyse.mixin import MIXIN_CLASS, profile_from_source
from codemod.rules.generic_mixin import MODULE_SOURCE
from codemod.transform.formatting import fitted_mark, laid_out
from codemod.transform.hooks import Atom, Idiom, ValueKind, hook_for
from codemod.transform.hooks.statements import _whole_body_hook
from codemod.transform.plan import Edit, EditKind
from codemod.transform.rewrite import rewrite_source

MIXIN = "src/transformers/generation/utils.py"
MODE = black.Mode(line_length=119)


def as_ruff_lays_it_out(text: str) -> bool:
    return black.format_str(text, mode=MODE) == text


def test_the_generic_mixin_is_laid_out() -> None:
    assert as_ruff_lays_it_out(MODULE_SOURCE)


#: (id, code at column 0, the indent it will have, as laid out there)
CASES = [
    ("fits-stays", 'x = ("head_mask",)\n', 4, 'x = ("head_mask",)\n'),
    (
        "a-long-tuple-one-item-per-line",
        '_generation_dropped_inputs = ("encoder_attention_mask", "encoder_hidden_states", "head_mask", "position_ids", '
        '"token_type_ids", "use_cache")\n',
        4,
        '_generation_dropped_inputs = (\n    "encoder_attention_mask",\n    "encoder_hidden_states",\n    "head_mask",\n'
        '    "position_ids",\n    "token_type_ids",\n    "use_cache",\n)\n',
    ),
    # 4.45's masked LMs' line is 119 columns in their method; one level deeper in the mixin's hook it is not
    (
        "a-statement-moved-one-level-deeper",
        "if self._hooked:\n"
        "    attention_mask = torch.cat([attention_mask, attention_mask.new_zeros((attention_mask.shape[0], 1))], dim=-1)\n",
        8,
        "if self._hooked:\n    attention_mask = torch.cat(\n"
        "        [attention_mask, attention_mask.new_zeros((attention_mask.shape[0], 1))], dim=-1\n    )\n",
    ),
    # too long for one line of arguments: one per line, and a trailing comma after ``**kwargs`` too (ruff, told
    # transformers' Python, writes one; black left to guess from a snippet did not)
    (
        "a-call-one-argument-per-line",
        "model_inputs = super().prepare_inputs_for_generation(input_ids, past_key_values=past_key_values, "
        "attention_mask=attention_mask, inputs_embeds=inputs_embeds, **kwargs)\n",
        8,
        "model_inputs = super().prepare_inputs_for_generation(\n    input_ids,\n    past_key_values=past_key_values,\n"
        "    attention_mask=attention_mask,\n    inputs_embeds=inputs_embeds,\n    **kwargs,\n)\n",
    ),
    (
        "comments-and-blank-lines-stay",
        "# why\nfor name in self._x:\n\n    model_inputs.pop(name, None)\n",
        8,
        "# why\nfor name in self._x:\n\n    model_inputs.pop(name, None)\n",
    ),
]


@pytest.mark.parametrize(("code", "indent", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_laid_out(code: str, indent: int, expected: str) -> None:
    ast.parse(expected)
    assert laid_out(code, indent) == expected
    # where it will stand: a class body (4) or a method's (8)
    header = {4: "class _:\n", 8: "class _:\n    def _(self):\n"}[indent]
    assert as_ruff_lays_it_out(header + textwrap.indent(expected, " " * indent))


def test_code_black_cannot_parse_is_left_as_it_is() -> None:
    assert laid_out("model_inputs[ = 1\n", 8) == "model_inputs[ = 1\n"


#: (id, a mark the tool composed, the indent it stands at, as written): ruff wraps no comment, so a mark too long for
#: its line keeps the phrases that fit
MARKS = [
    ("fits-stays", "# Overwritten -- drops head_mask", 8, "# Overwritten -- drops head_mask"),
    (
        "whole-phrases-then-a-cut",
        "# Overwritten -- no image_embeds after the first step; no image_embeds_position_mask after the first step; then "
        "its own input handling (position_ids = None); its own position_ids, input_ids from them",
        8,
        "# Overwritten -- no image_embeds after the first step; no image_embeds_position_mask after the first step; …",
    ),
    (
        "a-narrower-project-keeps-fewer",
        "# Overwritten -- no image_embeds after the first step; no image_embeds_position_mask after the first step",
        28,
        "# Overwritten -- no image_embeds after the first step; …",
    ),
    (
        "one-phrase-cut-between-words",
        "# Overwritten -- " + "keeps its own input handling " * 6,
        8,
        "# Overwritten -- keeps its own input handling keeps its own input handling keeps its own input handling keeps …",
    ),
    ("another-comment-is-not-ours", "# " + "x " * 70, 8, "# " + "x " * 70),
]


@pytest.mark.parametrize(("mark", "indent", "expected"), [c[1:] for c in MARKS], ids=[c[0] for c in MARKS])
def test_a_mark_fits_its_line(mark: str, indent: int, expected: str) -> None:
    line_length = 119 if indent == 8 else 99
    assert fitted_mark(mark, indent, line_length) == expected
    assert indent + len(expected) <= line_length or not expected.startswith("# Overwritten --")


def test_a_mark_in_code_laid_out_fits_its_line() -> None:
    mark = "# Overwritten -- " + "; ".join(f"drops input_number_{n}" for n in range(12))
    code = laid_out(f"{mark}\nreturn super().prepare_inputs_for_generation(input_ids, **kwargs)\n", 8)
    first = code.splitlines()[0]
    assert first.startswith("# Overwritten -- drops input_number_0; ") and first.endswith("; …")
    assert 8 + len(first) <= 119
    ast.parse(code)


#: the idiom of each hook template
IDIOMS = [
    Idiom((), (ValueKind.NONE,)),
    Idiom((Atom.FIRST.value,), (ValueKind.NONE, ValueKind.PREPARED)),
    Idiom((Atom.GIVEN.value,), (ValueKind.PREPARED, ValueKind.NONE)),
    Idiom((), (ValueKind.CALLER_OR_DEFAULT,)),
    Idiom((), (ValueKind.CONFIG,)),
    Idiom((), (ValueKind.LITERAL,)),
    Idiom((Atom.FIRST.value,), (ValueKind.NONE, ValueKind.CALLER)),
]

#: 4.45's BertForMaskedLM body, as the whole-body hook moves it into the mixin
MASKED_LM_BODY = textwrap.dedent("""\
    input_shape = input_ids.shape
    effective_batch_size = input_shape[0]

    #  add a dummy token
    if self.config.pad_token_id is None:
        raise ValueError("The PAD token should be defined for generation")

    attention_mask = torch.cat([attention_mask, attention_mask.new_zeros((attention_mask.shape[0], 1))], dim=-1)
    dummy_token = torch.full(
        (effective_batch_size, 1), self.config.pad_token_id, dtype=torch.long, device=input_ids.device
    )
    input_ids = torch.cat([input_ids, dummy_token], dim=1)

    return {"input_ids": input_ids, "attention_mask": attention_mask}
""")


def test_every_hook_the_rewrite_installs_is_laid_out() -> None:
    """The generic mixin with every template's hook and the masked LMs' whole body: the module as written."""
    profile = profile_from_source(MODULE_SOURCE, MIXIN)
    hooks = [hook_for(idiom, profile)[1] for idiom in IDIOMS]
    hooks.append(
        _whole_body_hook("_generation_inputs_as_bert_for_masked_lm", "BertForMaskedLM", MASKED_LM_BODY, profile)
    )
    edits = [
        Edit(MIXIN, MIXIN_CLASS, EditKind.HOOK, None, hook.attribute, hook=hook.code())
        for hook in hooks
        if hook is not None
    ]
    assert len(edits) == len(IDIOMS) + 1
    result = rewrite_source(MIXIN, MODULE_SOURCE.encode(), edits)
    assert result.error is None, result.error
    text = result.new_text()
    assert all(f"self.{e.hook.attribute}" in text for e in edits if e.hook is not None)
    assert as_ruff_lays_it_out(text), "".join(
        difflib.unified_diff(
            text.splitlines(keepends=True), black.format_str(text, mode=MODE).splitlines(keepends=True)
        )
    )


def test_a_modular_removal_stub_too_long_for_its_line_is_laid_out() -> None:
    """5.23.0's Gemma4Unified: the converter's removal stub names the class, 121 columns on one line."""
    path = "src/transformers/models/gemma4_unified/modular_gemma4_unified.py"
    cls = "Gemma4UnifiedForConditionalGeneration"
    before = (
        f"class {cls}(Gemma4ForConditionalGeneration):\n"
        "    def prepare_inputs_for_generation(self, input_ids, **kwargs):\n"
        "        return super().prepare_inputs_for_generation(input_ids, **kwargs)\n"
    )
    stub = f'raise AttributeError("{cls} uses GenerationMixin.prepare_inputs_for_generation")\n'
    result = rewrite_source(path, before.encode(), [Edit(path, cls, EditKind.REMOVE, f"{path}::{cls}", "test", stub)])
    assert result.error is None, result.error
    assert result.new_text() == (
        f"class {cls}(Gemma4ForConditionalGeneration):\n"
        "    def prepare_inputs_for_generation(self, input_ids, **kwargs):\n"
        "        raise AttributeError(\n"
        f'            "{cls} uses GenerationMixin.prepare_inputs_for_generation"\n'
        "        )\n"
    )
    assert as_ruff_lays_it_out(result.new_text())


@pytest.mark.parametrize("line_length", [119, 88])
def test_a_kept_override_s_mark_fits_the_file_s_line(line_length: int) -> None:
    """``--mark`` on a kept override whose reason quotes a long statement: the rewrite fits the mark to the file's
    project's line length (a remote-code repository at 88 columns gets an 88-column mark), cut between words."""
    path = "src/transformers/models/toy/modeling_toy.py"
    before = (
        "class ToyForCausalLM(ToyPreTrainedModel):\n"
        "    def prepare_inputs_for_generation(self, input_ids, **kwargs):\n"
        "        return {'input_ids': input_ids}\n"
    )
    reason = "model-specific input preparation (" + "toy_state = toy + " * 12 + "1)"
    edit = Edit(path, "ToyForCausalLM", EditKind.MARK, f"{path}::ToyForCausalLM", "test", reason)
    result = rewrite_source(path, before.encode(), [edit], line_length)
    assert result.error is None, result.error
    mark = result.new_text().splitlines()[2]
    assert mark.startswith("        # Overwritten -- model-specific input preparation (toy_state") and mark.endswith(
        " …"
    )
    assert line_length - 10 <= len(mark) <= line_length  # the next word would not have fitted
    ast.parse(result.new_text())
