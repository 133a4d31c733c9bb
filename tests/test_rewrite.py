"""``codemod.transform.rewrite.rewrite_source`` with hand-built edits (the style of pyupgrade's tests).

Each case is a ``(before, edits, after)`` triple with an id; noops list why nothing changes. Every
expected output is asserted to parse, and every result is checked to leave the bytes outside the
edited method alone (the text above and below the method, with its decorators and the comment
lines right above it, comes back byte for byte). The files in ``fixtures/rewrite/`` hold what a
Python string literal here cannot show plainly: CRLF line endings, latin-1 bytes, tabs.
"""

from __future__ import annotations

import ast
import dataclasses
import textwrap
import warnings

import hypothesmith
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from codemod.analyse.analysis import Nested
from codemod.rules.generic_mixin import METHOD_SOURCE
from codemod.sources import METHOD
from codemod.transform.plan import Edit, EditKind
from codemod.transform.rewrite import FileRewrite, rewrite_source

from .conftest import FIXTURES

REWRITE_FIXTURES = FIXTURES / "rewrite"
CLS = "FooForCausalLM"
PATH = "src/transformers/models/foo/modeling_foo.py"


def edit(kind: EditKind, text: str = "", cls: str = CLS, path: str = PATH) -> Edit:
    return Edit(path, cls, kind, None if kind is EditKind.HOIST else f"{path}::{cls}", "test", text)


def src(text: str) -> str:
    """A source snippet written indented in this file: dedented, without the leading newline."""
    return textwrap.dedent(text).lstrip("\n")


def rewrite(before: str | bytes, *edits: Edit) -> FileRewrite:
    source = before.encode("utf-8") if isinstance(before, str) else before
    return rewrite_source(PATH, source, list(edits))


# --------------------------------------------------------------------------------------------- helpers


def method_span(source: bytes, cls: str = CLS) -> tuple[int, int] | None:
    """1-based lines of the method in ``cls``: its decorators and the comment lines right above it, to its
    end (with the comment lines after it that are indented deeper than the ``def``)."""
    tree = ast.parse(source)
    lines = source.splitlines()
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == cls:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == METHOD:
                    start = min([d.lineno for d in item.decorator_list] + [item.lineno])
                    while start > 1 and lines[start - 2].strip().startswith(b"#"):
                        start -= 1
                    end = item.end_lineno or item.lineno
                    # comment lines indented deeper than the def, after its last statement, are the
                    # method's too (libcst's block footer)
                    indent = lines[item.lineno - 1][
                        : len(lines[item.lineno - 1]) - len(lines[item.lineno - 1].lstrip())
                    ]
                    last = end
                    while last < len(lines):
                        line = lines[last]
                        if not line.strip():
                            last += 1
                            continue
                        lead = line[: len(line) - len(line.lstrip())]
                        if line.lstrip().startswith(b"#") and lead.startswith(indent) and len(lead) > len(indent):
                            last += 1
                            end = last
                            continue
                        break
                    return start, end
    return None


def assert_outside_unchanged(before: bytes, after: bytes, cls: str = CLS, *, check_head: bool = True) -> None:
    """The bytes above and below ``cls``'s method are the same before and after (blank lines next to
    the method may go with it; ``check_head=False`` when imports above it were dropped)."""
    span = method_span(before, cls)
    assert span is not None
    lines = before.splitlines(keepends=True)
    head = lines[: span[0] - 1]
    while head and not head[-1].strip():
        head.pop()
    tail = lines[span[1] :]
    # blank and comment-only lines between the method and the next statement may belong to either
    # (libcst gives a block the comment lines indented deeper than what follows); from the next
    # statement on, every byte is the same
    while tail and (not tail[0].strip() or tail[0].lstrip().startswith(b"#")):
        tail.pop(0)
    if check_head:
        # (the last line above may lose its line break when the method ended the file without one)
        assert after.startswith(b"".join(head).rstrip(b"\r\n")), "the bytes above the edited method changed"
    assert after.endswith(b"".join(tail)), "the bytes below the edited method changed"


def assert_parses(text: str | bytes) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SyntaxWarning)
        ast.parse(text)
        compile(text, PATH, "exec", dont_inherit=True)


def method_of(text: str | bytes, cls: str = CLS) -> ast.FunctionDef | None:
    for node in ast.parse(text).body:
        if isinstance(node, ast.ClassDef) and node.name == cls:
            return next((m for m in node.body if isinstance(m, ast.FunctionDef) and m.name == METHOD), None)
    return None


REDUCED_BODY = """\
model_inputs = super().prepare_inputs_for_generation(
    input_ids,
    past_key_values=past_key_values,
    attention_mask=attention_mask,
    **kwargs,
)
if cache_position[0] == 0:
    model_inputs["pixel_values"] = pixel_values
return model_inputs
"""

REMOVE_BODY = 'raise AttributeError("FooForCausalLM uses GenerationMixin.prepare_inputs_for_generation")\n'

HOISTED = '''\
    def prepare_inputs_for_generation(self, input_ids, past_key_values=None, **kwargs):
        """The generic implementation."""
        model_inputs = {"input_ids": input_ids, "past_key_values": past_key_values}
        model_inputs.update(kwargs)
        return model_inputs
'''


# --------------------------------------------------------------------------------------------- cases

CASES = [
    pytest.param(
        src("""
            class FooForCausalLM(FooPreTrainedModel, GenerationMixin):
                def forward(self, input_ids):
                    return input_ids

                @torch.no_grad()
                @deprecate_kwarg("past", new_name="past_key_values", version="4.50")
                def prepare_inputs_for_generation(self, input_ids, past_key_values=None, **kwargs):
                    return {"input_ids": input_ids, "past_key_values": past_key_values}

                def get_decoder(self):
                    return self.model
        """),
        [edit(EditKind.DELETE)],
        src("""
            class FooForCausalLM(FooPreTrainedModel, GenerationMixin):
                def forward(self, input_ids):
                    return input_ids

                def get_decoder(self):
                    return self.model
        """),
        id="delete-with-decorators",
    ),
    pytest.param(
        src("""
            class FooForCausalLM(FooPreTrainedModel, GenerationMixin):
                def forward(self, input_ids):
                    return input_ids

                # Copied from transformers.models.llama.modeling_llama.LlamaForCausalLM.prepare_inputs_for_generation with Llama->Foo
                def prepare_inputs_for_generation(self, input_ids, **kwargs):
                    return {"input_ids": input_ids}

                def get_decoder(self):
                    return self.model
        """),
        [edit(EditKind.DELETE)],
        src("""
            class FooForCausalLM(FooPreTrainedModel, GenerationMixin):
                def forward(self, input_ids):
                    return input_ids

                def get_decoder(self):
                    return self.model
        """),
        id="delete-with-copied-from-comment",
    ),
    pytest.param(
        src('''
            class FooForCausalLM(FooPreTrainedModel, GenerationMixin):
                """The Foo language model."""

                # Copied from transformers.models.llama.modeling_llama.LlamaForCausalLM.prepare_inputs_for_generation
                @torch.no_grad()
                def prepare_inputs_for_generation(self, input_ids, **kwargs):
                    return {"input_ids": input_ids}

                def forward(self, input_ids):
                    return input_ids
        '''),
        [edit(EditKind.DELETE)],
        src('''
            class FooForCausalLM(FooPreTrainedModel, GenerationMixin):
                """The Foo language model."""

                def forward(self, input_ids):
                    return input_ids
        '''),
        id="delete-first-member-after-docstring",
    ),
    pytest.param(
        src("""
            class FooForCausalLM(FooPreTrainedModel, GenerationMixin):
                def prepare_inputs_for_generation(self, input_ids, **kwargs):
                    return {"input_ids": input_ids}

                def forward(self, input_ids):
                    return input_ids
        """),
        [edit(EditKind.DELETE)],
        # the next member keeps its own leading blank line
        src("""
            class FooForCausalLM(FooPreTrainedModel, GenerationMixin):

                def forward(self, input_ids):
                    return input_ids
        """),
        id="delete-first-member",
    ),
    pytest.param(
        src("""
            class FooForCausalLM(FooPreTrainedModel, GenerationMixin):
                def __init__(self, config):
                    super().__init__(config)

                def prepare_inputs_for_generation(self, input_ids, **kwargs):
                    return {"input_ids": input_ids}

                def forward(self, input_ids):
                    return input_ids
        """),
        [edit(EditKind.DELETE)],
        src("""
            class FooForCausalLM(FooPreTrainedModel, GenerationMixin):
                def __init__(self, config):
                    super().__init__(config)

                def forward(self, input_ids):
                    return input_ids
        """),
        id="delete-middle-member",
    ),
    pytest.param(
        src("""
            class FooForCausalLM(FooPreTrainedModel, GenerationMixin):
                def forward(self, input_ids):
                    return input_ids

                def prepare_inputs_for_generation(self, input_ids, **kwargs):
                    # a comment inside the body goes too
                    return {"input_ids": input_ids}


            class FooForSequenceClassification(FooPreTrainedModel):
                pass
        """),
        [edit(EditKind.DELETE)],
        src("""
            class FooForCausalLM(FooPreTrainedModel, GenerationMixin):
                def forward(self, input_ids):
                    return input_ids


            class FooForSequenceClassification(FooPreTrainedModel):
                pass
        """),
        id="delete-last-member",
    ),
    pytest.param(
        src("""
            class FooForCausalLM(FooPreTrainedModel, GenerationMixin):
                # Copied from transformers.models.llama.modeling_llama.LlamaForCausalLM.prepare_inputs_for_generation
                def prepare_inputs_for_generation(self, input_ids, **kwargs):
                    return {"input_ids": input_ids}


            def helper():
                return 1
        """),
        [edit(EditKind.DELETE)],
        src("""
            class FooForCausalLM(FooPreTrainedModel, GenerationMixin):
                pass


            def helper():
                return 1
        """),
        id="delete-only-member-becomes-pass",
    ),
    pytest.param(
        src('''
            class FooForCausalLM(FooPreTrainedModel, GenerationMixin):
                """Only a docstring stays."""

                def prepare_inputs_for_generation(self, input_ids, **kwargs):
                    return {"input_ids": input_ids}
        '''),
        [edit(EditKind.DELETE)],
        src('''
            class FooForCausalLM(FooPreTrainedModel, GenerationMixin):
                """Only a docstring stays."""
        '''),
        id="delete-only-method-docstring-stays",
    ),
    pytest.param(
        "class FooForCausalLM(Base):\n    def forward(self):\n        pass\n\n"
        "    def prepare_inputs_for_generation(self, input_ids, **kwargs):\n        return kwargs",
        [edit(EditKind.DELETE)],
        "class FooForCausalLM(Base):\n    def forward(self):\n        pass",
        id="delete-at-end-of-file-without-newline",
    ),
    pytest.param(
        src("""
            class FooForCausalLM(FooPreTrainedModel, GenerationMixin):
                def forward(self, input_ids, pixel_values=None):
                    return input_ids

                # the image goes in on the first step only
                @add_start_docstrings("prepare")
                def prepare_inputs_for_generation(
                    self,
                    input_ids,
                    past_key_values=None,
                    attention_mask=None,
                    pixel_values=None,
                    cache_position=None,
                    **kwargs,
                ):
                    model_inputs = self.language_model.prepare_inputs_for_generation(
                        input_ids, past_key_values=past_key_values, attention_mask=attention_mask, **kwargs
                    )
                    # later steps must not see the image again
                    if cache_position[0] == 0:
                        model_inputs["pixel_values"] = pixel_values
                    return model_inputs

                def get_decoder(self):
                    return self.model
        """),
        [edit(EditKind.REDUCE, REDUCED_BODY)],
        src("""
            class FooForCausalLM(FooPreTrainedModel, GenerationMixin):
                def forward(self, input_ids, pixel_values=None):
                    return input_ids

                # the image goes in on the first step only
                @add_start_docstrings("prepare")
                def prepare_inputs_for_generation(
                    self,
                    input_ids,
                    past_key_values=None,
                    attention_mask=None,
                    pixel_values=None,
                    cache_position=None,
                    **kwargs,
                ):
                    model_inputs = super().prepare_inputs_for_generation(
                        input_ids,
                        past_key_values=past_key_values,
                        attention_mask=attention_mask,
                        **kwargs,
                    )
                    if cache_position[0] == 0:
                        model_inputs["pixel_values"] = pixel_values
                    return model_inputs

                def get_decoder(self):
                    return self.model
        """),
        id="reduce-keeps-signature-decorators-and-comments-above",
    ),
    pytest.param(
        src("""
            class FooForCausalLM(FooPreTrainedModel, GenerationMixin):
                def prepare_inputs_for_generation(self, input_ids, past_key_values=None, attention_mask=None,
                                                  pixel_values=None, cache_position=None, **kwargs):
                    return {"input_ids": input_ids, "pixel_values": pixel_values}
        """),
        [edit(EditKind.REDUCE, REDUCED_BODY), edit(EditKind.MARK, "pixel_values only on the first step")],
        src("""
            class FooForCausalLM(FooPreTrainedModel, GenerationMixin):
                def prepare_inputs_for_generation(self, input_ids, past_key_values=None, attention_mask=None,
                                                  pixel_values=None, cache_position=None, **kwargs):
                    # Overwritten -- pixel_values only on the first step
                    model_inputs = super().prepare_inputs_for_generation(
                        input_ids,
                        past_key_values=past_key_values,
                        attention_mask=attention_mask,
                        **kwargs,
                    )
                    if cache_position[0] == 0:
                        model_inputs["pixel_values"] = pixel_values
                    return model_inputs
        """),
        id="reduce-then-mark",
    ),
    pytest.param(
        src("""
            class FooForCausalLM(LlamaForCausalLM):
                def prepare_inputs_for_generation(self, input_ids, **kwargs):
                    return {"input_ids": input_ids}
        """),
        [edit(EditKind.REMOVE, REMOVE_BODY)],
        src("""
            class FooForCausalLM(LlamaForCausalLM):
                def prepare_inputs_for_generation(self, input_ids, **kwargs):
                    raise AttributeError("FooForCausalLM uses GenerationMixin.prepare_inputs_for_generation")
        """),
        id="remove-stub-for-the-modular-converter",
    ),
    pytest.param(
        src("""
            class FooForCausalLM(FooPreTrainedModel, GenerationMixin):
                def prepare_inputs_for_generation(self, input_ids, past_key_values=None, **kwargs):
                    # Foo appends a dummy token the tokenizer never produces
                    input_ids = torch.cat([input_ids, self.dummy], dim=-1)
                    return {"input_ids": input_ids}
        """),
        [edit(EditKind.MARK, "Foo appends a dummy token")],
        src("""
            class FooForCausalLM(FooPreTrainedModel, GenerationMixin):
                def prepare_inputs_for_generation(self, input_ids, past_key_values=None, **kwargs):
                    # Overwritten -- Foo appends a dummy token
                    # Foo appends a dummy token the tokenizer never produces
                    input_ids = torch.cat([input_ids, self.dummy], dim=-1)
                    return {"input_ids": input_ids}
        """),
        id="mark-is-the-first-body-line",
    ),
    pytest.param(
        src('''
            class FooForCausalLM(FooPreTrainedModel, GenerationMixin):
                @torch.no_grad()
                def prepare_inputs_for_generation(self, input_ids, **kwargs):
                    """Docstring of the override."""
                    return {"input_ids": input_ids}
        '''),
        [edit(EditKind.MARK, "why")],
        # a comment above the docstring leaves it the docstring
        src('''
            class FooForCausalLM(FooPreTrainedModel, GenerationMixin):
                @torch.no_grad()
                def prepare_inputs_for_generation(self, input_ids, **kwargs):
                    # Overwritten -- why
                    """Docstring of the override."""
                    return {"input_ids": input_ids}
        '''),
        id="mark-decorated-method-with-docstring",
    ),
    pytest.param(
        src("""
            class FooForCausalLM(FooPreTrainedModel, GenerationMixin):
                def forward(self, input_ids):
                    return input_ids

                # Copied from transformers.models.llama.modeling_llama.LlamaForCausalLM.prepare_inputs_for_generation
                def prepare_inputs_for_generation(self, input_ids, **kwargs):
                    return {"input_ids": input_ids}
        """),
        [edit(EditKind.DROP_MARKER), edit(EditKind.MARK, "why")],
        src("""
            class FooForCausalLM(FooPreTrainedModel, GenerationMixin):
                def forward(self, input_ids):
                    return input_ids

                def prepare_inputs_for_generation(self, input_ids, **kwargs):
                    # Overwritten -- why
                    return {"input_ids": input_ids}
        """),
        id="drop-marker-above-def",
    ),
    pytest.param(
        src("""
            class FooForCausalLM(FooPreTrainedModel, GenerationMixin):
                # kept: a comment that is no marker
                @torch.no_grad()
                # Copied from transformers.models.llama.modeling_llama.LlamaForCausalLM.prepare_inputs_for_generation
                def prepare_inputs_for_generation(self, input_ids, **kwargs):
                    return {"input_ids": input_ids}
        """),
        [edit(EditKind.DROP_MARKER)],
        src("""
            class FooForCausalLM(FooPreTrainedModel, GenerationMixin):
                # kept: a comment that is no marker
                @torch.no_grad()
                def prepare_inputs_for_generation(self, input_ids, **kwargs):
                    return {"input_ids": input_ids}
        """),
        id="drop-marker-between-decorator-and-def",
    ),
    pytest.param(
        src("""
            class FooForCausalLM(FooPreTrainedModel, GenerationMixin):
                # Copied from the old code base, by hand (a note, no marker: check_copies ignores it)
                #Copied from transformers.models.llama.modeling_llama.LlamaForCausalLM.prepare_inputs_for_generation
                def prepare_inputs_for_generation(self, input_ids, **kwargs):
                    return {"input_ids": input_ids}
        """),
        [edit(EditKind.DROP_MARKER)],
        src("""
            class FooForCausalLM(FooPreTrainedModel, GenerationMixin):
                # Copied from the old code base, by hand (a note, no marker: check_copies ignores it)
                def prepare_inputs_for_generation(self, input_ids, **kwargs):
                    return {"input_ids": input_ids}
        """),
        # the marker as check_copies and the index read it (``#\s*Copied from <package>.<target>``): without a space
        # after the hash it is one, and a comment that only starts with the words is none
        id="drop-marker-as-check-copies-reads-it",
    ),
    pytest.param(
        src("""
            # Copied from transformers.models.llama.modeling_llama.LlamaForCausalLM with Llama->Foo
            class FooForCausalLM(FooPreTrainedModel, GenerationMixin):
                def forward(self, input_ids):
                    return input_ids

                def prepare_inputs_for_generation(self, input_ids, **kwargs):
                    return {"input_ids": input_ids}
        """),
        [edit(EditKind.IGNORE_COPY), edit(EditKind.MARK, "Foo keeps its own")],
        src("""
            # Copied from transformers.models.llama.modeling_llama.LlamaForCausalLM with Llama->Foo
            class FooForCausalLM(FooPreTrainedModel, GenerationMixin):
                def forward(self, input_ids):
                    return input_ids

                # Ignore copy
                def prepare_inputs_for_generation(self, input_ids, **kwargs):
                    # Overwritten -- Foo keeps its own
                    return {"input_ids": input_ids}
        """),
        id="ignore-copy-in-a-class-level-copy",
    ),
    pytest.param(
        src('''
            import inspect


            class GenerationMixin:
                """Generation."""

                def prepare_inputs_for_generation(self, *args, **kwargs):
                    raise NotImplementedError("A model class needs to define `prepare_inputs_for_generation`.")

                def generate(self, input_ids, **kwargs):
                    raise NotImplementedError
        '''),
        [edit(EditKind.HOIST, HOISTED, cls="GenerationMixin", path="src/transformers/generation/utils.py")],
        src('''
            import inspect


            class GenerationMixin:
                """Generation."""

                def prepare_inputs_for_generation(self, input_ids, past_key_values=None, **kwargs):
                    """The generic implementation."""
                    model_inputs = {"input_ids": input_ids, "past_key_values": past_key_values}
                    model_inputs.update(kwargs)
                    return model_inputs

                def generate(self, input_ids, **kwargs):
                    raise NotImplementedError
        '''),
        id="hoist-replaces-the-stub",
    ),
    pytest.param(
        src("""
            class FooForCausalLM(Base):
                def prepare_inputs_for_generation(self, input_ids, **kwargs):
                    return {"input_ids": input_ids}


            class FooForVision(Base):
                def forward(self):
                    pass

                def prepare_inputs_for_generation(self, input_ids, **kwargs):
                    return {"input_ids": input_ids}
        """),
        [edit(EditKind.DELETE), edit(EditKind.MARK, "vision", cls="FooForVision")],
        src("""
            class FooForCausalLM(Base):
                pass


            class FooForVision(Base):
                def forward(self):
                    pass

                def prepare_inputs_for_generation(self, input_ids, **kwargs):
                    # Overwritten -- vision
                    return {"input_ids": input_ids}
        """),
        id="two-classes-in-one-file",
    ),
    pytest.param(
        src("""
            class FooForCausalLM(Base):
                def prepare_inputs_for_generation(self, input_ids, cache_position=None, pixel_values=None, **kwargs):
                    # Overwritten -- drops token_type_ids; pixel_values only on the first step
                    model_inputs = super().prepare_inputs_for_generation(input_ids, cache_position=cache_position, **kwargs)
                    model_inputs.pop("token_type_ids", None)
                    if cache_position[0] == 0:
                        model_inputs["pixel_values"] = pixel_values
                    return model_inputs
        """),
        [dataclasses.replace(edit(EditKind.TRIM, "pixel_values only on the first step"), remove=(1,))],
        src("""
            class FooForCausalLM(Base):
                def prepare_inputs_for_generation(self, input_ids, cache_position=None, pixel_values=None, **kwargs):
                    # Overwritten -- pixel_values only on the first step
                    model_inputs = super().prepare_inputs_for_generation(input_ids, cache_position=cache_position, **kwargs)
                    if cache_position[0] == 0:
                        model_inputs["pixel_values"] = pixel_values
                    return model_inputs
        """),
        # a hook does what the drop did: the mark the tool wrote for it says what is left
        id="trim-rewords-the-tools-own-mark",
    ),
    pytest.param(
        src("""
            class FooForCausalLM(Base):
                def prepare_inputs_for_generation(
                    self,
                    input_ids,
                    past_key_values=None,
                    image_patches=None,
                    **kwargs,
                ):
                    model_inputs = super().prepare_inputs_for_generation(input_ids, past_key_values=past_key_values, **kwargs)
                    model_inputs["image_patches"] = image_patches if past_key_values is None else None
                    if past_key_values:
                        model_inputs["input_ids"] = model_inputs["input_ids"][:, -1:]
                    return model_inputs
        """),
        [
            dataclasses.replace(
                edit(EditKind.TRIM), remove=(1,), keep_params=("self", "input_ids", "past_key_values", "kwargs")
            )
        ],
        src("""
            class FooForCausalLM(Base):
                def prepare_inputs_for_generation(self, input_ids, past_key_values=None, **kwargs):
                    model_inputs = super().prepare_inputs_for_generation(input_ids, past_key_values=past_key_values, **kwargs)
                    if past_key_values:
                        model_inputs["input_ids"] = model_inputs["input_ids"][:, -1:]
                    return model_inputs
        """),
        # the parameter only the removed statement read leaves the signature: **kwargs takes it to the hook
        id="trim-drops-a-parameter-only-the-removed-statement-read",
    ),
    pytest.param(
        src("""
            class FooForCausalLM(Base):
                def prepare_inputs_for_generation(self, input_ids, past_key_values=None, **kwargs):
                    if past_key_values is not None:
                        input_ids = input_ids[:, -1:]
                    model_inputs = {"input_ids": input_ids, "past_key_values": past_key_values}
                    # images only while their tokens are in the ids
                    if (input_ids == self.config.image_token_index).any():
                        model_inputs["pixel_values"] = kwargs.get("pixel_values")
                    return model_inputs
        """),
        [
            dataclasses.replace(
                edit(
                    EditKind.REDUCE,
                    "model_inputs = super().prepare_inputs_for_generation(input_ids, "
                    "past_key_values=past_key_values)\nreturn model_inputs\n",
                ),
                keep_after=(0, 2),
            )
        ],
        src("""
            class FooForCausalLM(Base):
                def prepare_inputs_for_generation(self, input_ids, past_key_values=None, **kwargs):
                    model_inputs = super().prepare_inputs_for_generation(input_ids, past_key_values=past_key_values)
                    if past_key_values is not None:
                        input_ids = input_ids[:, -1:]
                    # images only while their tokens are in the ids
                    if (input_ids == self.config.image_token_index).any():
                        model_inputs["pixel_values"] = kwargs.get("pixel_values")
                    return model_inputs
        """),
        # the statements kept after super() stay as written, comments and all, in their order
        id="reduce-keeps-statements-after-the-super-call",
    ),
    pytest.param(
        src("""
            class FooForCausalLM(Base):
                def prepare_inputs_for_generation(self, input_ids, shape_ids=None, past_key_values=None, **kwargs):
                    # cut the ids if there is a cache
                    if past_key_values is not None:
                        past_length = past_key_values[0][0].shape[2]

                        input_ids = input_ids[:, past_length:]
                        if shape_ids is not None:
                            shape_ids = shape_ids[:, -1:]
                    return {"input_ids": input_ids, "shape_ids": shape_ids, "past_key_values": past_key_values}
        """),
        [
            dataclasses.replace(
                edit(
                    EditKind.REDUCE,
                    "model_inputs = super().prepare_inputs_for_generation(input_ids, "
                    "past_key_values=past_key_values)\n"
                    'model_inputs["shape_ids"] = shape_ids\nreturn model_inputs\n',
                ),
                keep_after=(0,),
                cuts=(Nested((0, "body", 0), 2, ("input_ids", "past_length")),),
            )
        ],
        src("""
            class FooForCausalLM(Base):
                def prepare_inputs_for_generation(self, input_ids, shape_ids=None, past_key_values=None, **kwargs):
                    model_inputs = super().prepare_inputs_for_generation(input_ids, past_key_values=past_key_values)
                    if past_key_values is not None:
                        if shape_ids is not None:
                            shape_ids = shape_ids[:, -1:]
                    model_inputs["shape_ids"] = shape_ids
                    return model_inputs
        """),
        # RoCBert: the ids' slicing inside the kept block is the mixin's; the comment above the block, which said what
        # it did first, goes with it, and no blank line is left to open the block
        id="reduce-cuts-the-ids-slicing-out-of-a-kept-block",
    ),
    pytest.param(
        src("""
            class FooForCausalLM(Base):
                def prepare_inputs_for_generation(self, input_ids, past_key_values=None, cache_position=None, **kwargs):
                    empty_past_kv = past_key_values is None

                    # slice the ids through cache_position
                    if not empty_past_kv:
                        input_ids = input_ids[:, cache_position]
                    else:
                        past_key_values = self.new_cache(input_ids.shape[0])
                    return {"input_ids": input_ids, "past_key_values": past_key_values}
        """),
        [
            dataclasses.replace(
                edit(
                    EditKind.REDUCE,
                    "model_inputs = super().prepare_inputs_for_generation(input_ids, "
                    "past_key_values=past_key_values, cache_position=cache_position)\n"
                    "return model_inputs\n",
                ),
                keep=(0, 1),
                cuts=(Nested((1, "body", 0), 1, ("input_ids",)),),
            )
        ],
        src("""
            class FooForCausalLM(Base):
                def prepare_inputs_for_generation(self, input_ids, past_key_values=None, cache_position=None, **kwargs):
                    empty_past_kv = past_key_values is None

                    if empty_past_kv:
                        past_key_values = self.new_cache(input_ids.shape[0])
                    model_inputs = super().prepare_inputs_for_generation(
                        input_ids, past_key_values=past_key_values, cache_position=cache_position
                    )
                    return model_inputs
        """),
        # Jamba: the branch that sliced goes, the other stays under the opposite test (the new call, 121 columns on
        # one line, laid out as ruff would)
        id="reduce-cuts-a-branch-in-front-of-super-and-keeps-the-other-under-the-opposite-test",
    ),
    pytest.param(
        src("""
            class FooForCausalLM(Base):
                def prepare_inputs_for_generation(self, input_ids, past_key_values=None, **kwargs):
                    if past_key_values is not None and self.config.slices:
                        input_ids = input_ids[:, -1:]
                    elif self.config.fresh:
                        past_key_values = self.new_cache()
                    return {"input_ids": input_ids, "past_key_values": past_key_values}
        """),
        [
            dataclasses.replace(
                edit(
                    EditKind.REDUCE,
                    "model_inputs = super().prepare_inputs_for_generation(input_ids, "
                    "past_key_values=past_key_values)\nreturn model_inputs\n",
                ),
                keep=(0,),
                cuts=(Nested((0, "body", 0), 1, ("input_ids",)),),
            )
        ],
        src("""
            class FooForCausalLM(Base):
                def prepare_inputs_for_generation(self, input_ids, past_key_values=None, **kwargs):
                    if not (past_key_values is not None and self.config.slices):
                        if self.config.fresh:
                            past_key_values = self.new_cache()
                    model_inputs = super().prepare_inputs_for_generation(input_ids, past_key_values=past_key_values)
                    return model_inputs
        """),
        # an elif under the first test's opposite; a compound test is negated whole, in parentheses
        id="reduce-cuts-a-branch-before-an-elif",
    ),
    pytest.param(
        src("""
            class FooForCausalLM(Base):
                def prepare_inputs_for_generation(self, input_ids, past_key_values=None, **kwargs):
                    if self.config.fresh:
                        past_key_values = self.new_cache()
                    elif past_key_values is not None:
                        input_ids = input_ids[:, -1:]
                    if past_key_values is not None:
                        input_ids = input_ids[:, -1:]
                    return {"input_ids": input_ids, "past_key_values": past_key_values}
        """),
        [
            dataclasses.replace(
                edit(
                    EditKind.REDUCE,
                    "model_inputs = super().prepare_inputs_for_generation(input_ids, "
                    "past_key_values=past_key_values)\nreturn model_inputs\n",
                ),
                keep=(0, 1),
                cuts=(
                    Nested((0, "orelse", 0, "body", 0), 1, ("input_ids",)),
                    Nested((1, "body", 0), 1, ("input_ids",)),
                ),
            )
        ],
        src("""
            class FooForCausalLM(Base):
                def prepare_inputs_for_generation(self, input_ids, past_key_values=None, **kwargs):
                    if self.config.fresh:
                        past_key_values = self.new_cache()
                    model_inputs = super().prepare_inputs_for_generation(input_ids, past_key_values=past_key_values)
                    return model_inputs
        """),
        # an elif left empty goes; an if left with nothing in it goes altogether
        id="reduce-cuts-an-elif-and-a-whole-if",
    ),
    pytest.param(
        src("""
            class FooForCausalLM(Base):
                def prepare_inputs_for_generation(self, input_ids, use_cache=True, past_key_values=None, **kwargs):
                    return {"input_ids": input_ids, "use_cache": use_cache, "past_key_values": past_key_values}
        """),
        [
            dataclasses.replace(
                edit(
                    EditKind.REDUCE,
                    "# Overwritten -- its default use_cache=True\n"
                    "model_inputs = super().prepare_inputs_for_generation(input_ids, "
                    "use_cache=use_cache, **kwargs)\nreturn model_inputs\n",
                ),
                direct_return=True,
                keep_params=("input_ids", "use_cache", "kwargs"),
            )
        ],
        src("""
            class FooForCausalLM(Base):
                def prepare_inputs_for_generation(self, input_ids, use_cache=True, **kwargs):
                    # Overwritten -- its default use_cache=True
                    return super().prepare_inputs_for_generation(input_ids, use_cache=use_cache, **kwargs)
        """),
        # nothing after the super() call: the call is returned, its mark kept above it
        id="reduce-returns-the-super-call",
    ),
    pytest.param(
        src("""
            class FooForCausalLM(Base):
                def prepare_inputs_for_generation(self, input_ids, inputs_embeds=None, cache_position=None, use_cache=True, **kwargs):
                    return {"input_ids": input_ids}
        """),
        [
            dataclasses.replace(
                edit(
                    EditKind.REDUCE,
                    "model_inputs = super().prepare_inputs_for_generation(\n"
                    "    input_ids, inputs_embeds=inputs_embeds, cache_position=cache_position, "
                    "use_cache=use_cache, **kwargs\n)\nreturn model_inputs\n",
                ),
                direct_return=True,
            )
        ],
        src("""
            class FooForCausalLM(Base):
                def prepare_inputs_for_generation(self, input_ids, inputs_embeds=None, cache_position=None, use_cache=True, **kwargs):
                    return super().prepare_inputs_for_generation(
                        input_ids, inputs_embeds=inputs_embeds, cache_position=cache_position, use_cache=use_cache, **kwargs
                    )
        """),
        # laid out again for its new start, as ruff would: the arguments still need a line of their own
        id="reduce-returns-a-long-super-call",
    ),
    pytest.param(
        src("""
            class FooForCausalLM(Base):
                def prepare_inputs_for_generation(self, input_ids, **kwargs):
                    model_inputs = super().prepare_inputs_for_generation(input_ids, **kwargs)
                    model_inputs["position_ids"] = None
                    return model_inputs
        """),
        [dataclasses.replace(edit(EditKind.TRIM), remove=(1,), direct_return=True)],
        src("""
            class FooForCausalLM(Base):
                def prepare_inputs_for_generation(self, input_ids, **kwargs):
                    return super().prepare_inputs_for_generation(input_ids, **kwargs)
        """),
        # a trim that leaves nothing after the call
        id="trim-returns-the-super-call",
    ),
]

#: a body that ends in its super() call as the reduction writes it, and edits that say to return the call directly
_UNTIDY = ("model_inputs = super().prepare_inputs_for_generation(input_ids, **kwargs)\n", "return model_inputs\n")


@pytest.mark.parametrize(
    ("body", "why"),
    [
        (f"{_UNTIDY[0]}model_inputs['x'] = 1\n{_UNTIDY[1]}", "a statement between the call and the return"),
        (f"{_UNTIDY[0]}# the prepared inputs\n{_UNTIDY[1]}", "a comment above the return would be lost"),
        (f"{_UNTIDY[0]}{_UNTIDY[1].rstrip()}  # as prepared\n", "a comment on the return would be lost"),
        (
            "model_inputs = super().prepare_inputs_for_generation(\n    input_ids,  # the ids\n    **kwargs,\n)\n"
            f"{_UNTIDY[1]}",
            "a comment among the arguments would be lost",
        ),
        (
            "inputs = super().prepare_inputs_for_generation(input_ids, **kwargs)\nreturn model_inputs\n",
            "the return is not of what the call gave",
        ),
        (
            "model_inputs = self.model.prepare_inputs_for_generation(input_ids, **kwargs)\nreturn model_inputs\n",
            "not a super() call",
        ),
        (
            f"model_inputs = {{}}\n{_UNTIDY[0]}{_UNTIDY[1]}",
            "the name is also used in front: returning the call would leave it unused",
        ),
    ],
)
def test_a_body_is_left_ending_as_it_does(body: str, why: str) -> None:
    """Noops of ``Edit.direct_return``: the reduction's own ending stays."""
    before = "class FooForCausalLM(Base):\n    def prepare_inputs_for_generation(self, input_ids, **kwargs):\n        return 1\n"
    result = rewrite(before, dataclasses.replace(edit(EditKind.REDUCE, body), direct_return=True))
    assert result.error is None, result.error
    expected = (
        "class FooForCausalLM(Base):\n    def prepare_inputs_for_generation(self, input_ids, **kwargs):\n"
        + textwrap.indent(body, "        ")
    )
    assert_parses(expected)
    assert result.new_text() == expected, why


@pytest.mark.parametrize(("before", "edits", "after"), CASES)
def test_rewrite(before: str, edits: list[Edit], after: str) -> None:
    assert_parses(after)
    result = rewrite(before, *edits)
    assert result.error is None, result.error
    assert result.new_text() == after
    assert result.changed
    assert result.applied == tuple(edits)
    assert result.removed_imports == ()
    classes = {e.class_name for e in edits}
    if len(classes) == 1:
        assert_outside_unchanged(result.old, result.new, classes.pop())


#: a mined hook's class attribute where the class sets it already
ATTRIBUTE_CASES = [
    pytest.param(
        src("""
            class FooForCausalLM(Base):
                _generation_dropped_inputs = ("head_mask", "position_ids")

                def forward(self):
                    pass
        """),
        [edit(EditKind.SET_ATTRIBUTE, '_generation_dropped_inputs = ("position_ids", "cache_position")')],
        src("""
            class FooForCausalLM(Base):
                _generation_dropped_inputs = ("head_mask", "position_ids", "cache_position")

                def forward(self):
                    pass
        """),
        # a second pass over the tree the first left: what the first pass's attribute names stays named
        id="set-attribute-adds-names-to-the-tuple-an-earlier-pass-wrote",
    ),
    pytest.param(
        src("""
            class FooForCausalLM(Base):
                _generation_input_defaults = {'output_router_logits': False}
        """),
        [edit(EditKind.SET_ATTRIBUTE, '_generation_input_defaults = {"use_cache": True}')],
        src("""
            class FooForCausalLM(Base):
                _generation_input_defaults = {"output_router_logits": False, "use_cache": True}
        """),
        id="set-attribute-adds-keys-to-the-dict-an-earlier-pass-wrote",
    ),
    pytest.param(
        src("""
            class FooForCausalLM(Base):
                _generation_dropped_inputs = DROPPED
        """),
        [edit(EditKind.SET_ATTRIBUTE, '_generation_dropped_inputs = ("head_mask",)')],
        src("""
            class FooForCausalLM(Base):
                _generation_dropped_inputs = ("head_mask",)
        """),
        # not a literal: nothing to merge with
        id="set-attribute-replaces-what-is-no-literal",
    ),
    pytest.param(
        src("""
            class FooForCausalLM(Base):
                _tied_weights_keys = ["lm_head.weight"]
        """),
        [
            edit(
                EditKind.SET_ATTRIBUTE,
                '_generation_dropped_inputs = ("encoder_attention_mask", "encoder_hidden_states", '
                '"head_mask", "position_ids", "token_type_ids", "use_cache")',
            )
        ],
        src("""
            class FooForCausalLM(Base):
                _tied_weights_keys = ["lm_head.weight"]
                _generation_dropped_inputs = (
                    "encoder_attention_mask",
                    "encoder_hidden_states",
                    "head_mask",
                    "position_ids",
                    "token_type_ids",
                    "use_cache",
                )
        """),
        # 150 columns on one line: laid out as `ruff format --line-length 119` lays a collection out (RoCBert's)
        id="set-attribute-too-long-for-a-line-one-item-per-line",
    ),
    pytest.param(
        src("""
            class FooForCausalLM(Base):
                _generation_input_defaults = {"output_router_logits": False, "use_cache": True}
        """),
        [
            edit(
                EditKind.SET_ATTRIBUTE,
                '_generation_input_defaults = {"aux_loss_coefficient_for_the_router": 0.001, '
                '"router_jitter_noise": 0.0}',
            )
        ],
        src("""
            class FooForCausalLM(Base):
                _generation_input_defaults = {
                    "output_router_logits": False,
                    "use_cache": True,
                    "aux_loss_coefficient_for_the_router": 0.001,
                    "router_jitter_noise": 0.0,
                }
        """),
        # merged with what an earlier pass wrote, then too long
        id="set-attribute-merged-then-too-long-one-item-per-line",
    ),
]


NOOPS = [
    pytest.param(
        "class FooForCausalLM(Base):\n    def prepare_inputs_for_generation(self, input_ids, **kwargs):\n        return kwargs\n",
        [],
        id="no-edits-leave-the-bytes-identical",
    ),
    pytest.param(
        src("""
            class FooForCausalLM(Base):
                def prepare_inputs_for_generation(self, input_ids, **kwargs):
                    # Overwritten -- the maintainers' own reason
                    return kwargs
        """),
        [edit(EditKind.MARK, "another reason")],
        id="mark-on-a-marked-method-keeps-the-existing-mark",
    ),
    pytest.param(
        src("""
            # Copied from transformers.models.llama.modeling_llama.LlamaForCausalLM with Llama->Foo
            class FooForCausalLM(Base):
                # Ignore copy
                def prepare_inputs_for_generation(self, input_ids, **kwargs):
                    return kwargs
        """),
        [edit(EditKind.IGNORE_COPY)],
        id="ignore-copy-already-there",
    ),
    pytest.param(
        src("""
            class FooForCausalLM(Base):
                # a comment, but no marker
                def prepare_inputs_for_generation(self, input_ids, **kwargs):
                    return kwargs
        """),
        [edit(EditKind.DROP_MARKER)],
        id="drop-marker-without-a-marker",
    ),
]


def test_a_file_libcst_cannot_reproduce_is_left_untouched() -> None:
    """A form feed in an indentation does not survive libcst's round trip (found by the property
    test below): deleting the method above it would silently change the line below."""
    before = src("""
        class FooForCausalLM(Base):
            def prepare_inputs_for_generation(self, input_ids, **kwargs):
                pass


        \x0c    pass
    """)
    result = rewrite(before, edit(EditKind.DELETE))
    assert result.error is not None and "byte for byte" in result.error
    assert result.new == result.old == before.encode()
    assert not result.changed


@pytest.mark.parametrize(("before", "edits"), NOOPS)
def test_noop(before: str, edits: list[Edit]) -> None:
    result = rewrite(before, *edits)
    assert result.error is None
    assert result.new == result.old == before.encode()
    assert not result.changed


@pytest.mark.parametrize(
    "edits",
    [
        pytest.param([edit(EditKind.MARK, "why")], id="mark"),
        pytest.param([edit(EditKind.REDUCE, REDUCED_BODY), edit(EditKind.MARK, "why")], id="reduce-and-mark"),
        pytest.param([edit(EditKind.IGNORE_COPY), edit(EditKind.MARK, "why")], id="ignore-copy-and-mark"),
        pytest.param([edit(EditKind.DROP_MARKER), edit(EditKind.MARK, "why")], id="drop-marker-and-mark"),
    ],
)
def test_edits_that_keep_the_method_are_idempotent(edits: list[Edit]) -> None:
    before = src("""
        class FooForCausalLM(Base):
            # Copied from transformers.models.llama.modeling_llama.LlamaForCausalLM.prepare_inputs_for_generation
            def prepare_inputs_for_generation(self, input_ids, past_key_values=None, attention_mask=None,
                                              pixel_values=None, cache_position=None, **kwargs):
                return kwargs
    """)
    once = rewrite(before, *edits)
    assert once.error is None and once.changed
    marking = [e for e in edits if e.kind is not EditKind.REDUCE]  # a second reduction would drop the mark
    twice = rewrite(once.new, *marking)
    assert twice.error is None
    assert twice.new == once.new


# --------------------------------------------------------------------------------------------- slim signatures

SLIM_BODY = """\
model_inputs = super().prepare_inputs_for_generation(input_ids, inputs_embeds=inputs_embeds, **kwargs)
if cache_position[0] == 0:
    model_inputs["pixel_values"] = pixel_values
return model_inputs
"""


def slim(keep: tuple[str, ...], body: str = SLIM_BODY) -> Edit:
    return Edit(PATH, CLS, EditKind.REDUCE, f"{PATH}::{CLS}", "test", body, (), keep)


@pytest.mark.parametrize(
    ("before", "keep", "after"),
    [
        pytest.param(
            src("""
                class FooForCausalLM(Base):
                    def prepare_inputs_for_generation(
                        self,
                        input_ids,
                        past_key_values=None,
                        attention_mask=None,
                        inputs_embeds=None,
                        pixel_values=None,
                        cache_position=None,
                        **kwargs,
                    ):
                        return {"input_ids": input_ids}
            """),
            ("input_ids", "inputs_embeds", "pixel_values", "kwargs"),
            src("""
                class FooForCausalLM(Base):
                    def prepare_inputs_for_generation(self, input_ids, inputs_embeds=None, pixel_values=None, **kwargs):
                        model_inputs = super().prepare_inputs_for_generation(input_ids, inputs_embeds=inputs_embeds, **kwargs)
                        if cache_position[0] == 0:
                            model_inputs["pixel_values"] = pixel_values
                        return model_inputs
            """),
            id="fits-one-line",
        ),
        pytest.param(
            src("""
                class FooForCausalLM(Base):
                    @staticmethod_like
                    def prepare_inputs_for_generation(self, input_ids: torch.LongTensor, past_key_values: Optional[Cache] = None,
                                                      inputs_embeds: Optional[torch.FloatTensor] = None,
                                                      pixel_values: Optional[torch.FloatTensor] = None,
                                                      cache_position: Optional[torch.LongTensor] = None, **kwargs):
                        return {"input_ids": input_ids}
            """),
            ("input_ids", "inputs_embeds", "pixel_values", "cache_position", "kwargs"),
            src("""
                class FooForCausalLM(Base):
                    @staticmethod_like
                    def prepare_inputs_for_generation(
                        self,
                        input_ids: torch.LongTensor,
                        inputs_embeds: Optional[torch.FloatTensor] = None,
                        pixel_values: Optional[torch.FloatTensor] = None,
                        cache_position: Optional[torch.LongTensor] = None,
                        **kwargs,
                    ):
                        model_inputs = super().prepare_inputs_for_generation(input_ids, inputs_embeds=inputs_embeds, **kwargs)
                        if cache_position[0] == 0:
                            model_inputs["pixel_values"] = pixel_values
                        return model_inputs
            """),
            id="too-long-one-parameter-per-line-with-annotations",
        ),
        pytest.param(
            src("""
                class FooForCausalLM(Base):
                    def prepare_inputs_for_generation(
                        self,
                        input_ids,
                        past_key_values=None,
                        inputs_embeds=None,
                        pixel_values_of_the_tower=None,
                        cache_position_new=None,
                        **kwargs,
                    ):
                        return {"input_ids": input_ids}
            """),
            ("input_ids", "inputs_embeds", "pixel_values_of_the_tower", "cache_position_new", "kwargs"),
            src("""
                class FooForCausalLM(Base):
                    def prepare_inputs_for_generation(
                        self, input_ids, inputs_embeds=None, pixel_values_of_the_tower=None, cache_position_new=None, **kwargs
                    ):
                        model_inputs = super().prepare_inputs_for_generation(input_ids, inputs_embeds=inputs_embeds, **kwargs)
                        if cache_position[0] == 0:
                            model_inputs["pixel_values"] = pixel_values
                        return model_inputs
            """),
            id="too-long-for-one-line-the-parameters-on-a-line-of-their-own",
        ),
        pytest.param(
            src("""
                class FooForCausalLM(Base):
                    def prepare_inputs_for_generation(self, input_ids, *, inputs_embeds=None, use_cache=True,
                                                      cache_position=None, pixel_values=None, **kwargs):
                        return {"input_ids": input_ids}
            """),
            ("input_ids", "use_cache", "pixel_values", "kwargs"),
            src("""
                class FooForCausalLM(Base):
                    def prepare_inputs_for_generation(self, input_ids, *, use_cache=True, pixel_values=None, **kwargs):
                        model_inputs = super().prepare_inputs_for_generation(input_ids, inputs_embeds=inputs_embeds, **kwargs)
                        if cache_position[0] == 0:
                            model_inputs["pixel_values"] = pixel_values
                        return model_inputs
            """),
            id="keyword-only-keep-their-star",
        ),
    ],
)
def test_reduce_slims_the_signature(before: str, keep: tuple[str, ...], after: str) -> None:
    result = rewrite(before, slim(keep))
    assert result.error is None
    assert_parses(after)
    assert result.new_text() == after
    assert_outside_unchanged(before.encode(), result.new)


def test_slim_signature_drops_a_star_with_no_keyword_only_left() -> None:
    before = src("""
        class FooForCausalLM(Base):
            def prepare_inputs_for_generation(self, input_ids, *, attention_mask=None, **kwargs):
                return {"input_ids": input_ids}
    """)
    body = "return super().prepare_inputs_for_generation(input_ids, **kwargs)\n"
    result = rewrite(before, slim(("input_ids", "kwargs"), body))
    assert "def prepare_inputs_for_generation(self, input_ids, **kwargs):\n" in result.new_text()
    assert_parses(result.new)


def test_reduce_without_keep_params_leaves_the_signature_byte_for_byte() -> None:
    before = src("""
        class FooForCausalLM(Base):
            def prepare_inputs_for_generation(self, input_ids,   past_key_values=None, **kwargs):  # odd spacing
                return {"input_ids": input_ids}
    """)
    body = "return super().prepare_inputs_for_generation(input_ids, past_key_values=past_key_values, **kwargs)\n"
    result = rewrite(before, slim((), body))
    assert (
        "def prepare_inputs_for_generation(self, input_ids,   past_key_values=None, **kwargs):  # odd spacing\n"
        in result.new_text()
    )


# --------------------------------------------------------------------------------------------- imports

IMPORT_CASES = [
    pytest.param(
        src("""
            import torch
            from torch import nn

            from ...cache_utils import DynamicCache


            class FooForCausalLM(Base):
                def forward(self, x):
                    return nn.functional.relu(x)

                def prepare_inputs_for_generation(self, input_ids, past_key_values=None, **kwargs):
                    if past_key_values is None:
                        past_key_values = DynamicCache()
                    return {"input_ids": input_ids, "ones": torch.ones(1)}
        """),
        src("""
            from torch import nn


            class FooForCausalLM(Base):
                def forward(self, x):
                    return nn.functional.relu(x)
        """),
        ("DynamicCache", "torch"),
        id="imports-only-the-method-used-are-removed",
    ),
    pytest.param(
        src("""
            from __future__ import annotations

            import os

            from ...cache_utils import Cache, DynamicCache, StaticCache


            class FooForCausalLM(Base):
                def forward(self, past_key_values: Cache):
                    return os.getcwd()

                def prepare_inputs_for_generation(self, input_ids, past_key_values=None, **kwargs):
                    if isinstance(past_key_values, StaticCache):
                        past_key_values = DynamicCache()
                    return {"input_ids": input_ids, "cwd": os.getcwd()}
        """),
        src("""
            from __future__ import annotations

            import os

            from ...cache_utils import Cache


            class FooForCausalLM(Base):
                def forward(self, past_key_values: Cache):
                    return os.getcwd()
        """),
        ("DynamicCache", "StaticCache"),
        id="names-still-used-stay-future-untouched",
    ),
    pytest.param(
        src("""
            from ...cache_utils import (
                Cache,
                DynamicCache,
                StaticCache,
            )
            from ...utils import logging


            class FooForCausalLM(Base):
                def forward(self, past_key_values: Cache, other: StaticCache):
                    return past_key_values

                def prepare_inputs_for_generation(self, input_ids, past_key_values=None, **kwargs):
                    return {"input_ids": input_ids, "past_key_values": DynamicCache()}
        """),
        src("""
            from ...cache_utils import (
                Cache,
                StaticCache,
            )
            from ...utils import logging


            class FooForCausalLM(Base):
                def forward(self, past_key_values: Cache, other: StaticCache):
                    return past_key_values
        """),
        ("DynamicCache",),
        id="parenthesised-import-middle-name",
    ),
    pytest.param(
        src('''
            from .helpers import fold_inputs, unfold_inputs

            __all__ = ["FooForCausalLM", "fold_inputs"]


            class FooForCausalLM(Base):
                def forward(self, x):
                    """Calls `unfold_inputs` first."""
                    return x

                def prepare_inputs_for_generation(self, input_ids, **kwargs):
                    return fold_inputs(unfold_inputs(input_ids))
        '''),
        src('''
            from .helpers import fold_inputs, unfold_inputs

            __all__ = ["FooForCausalLM", "fold_inputs"]


            class FooForCausalLM(Base):
                def forward(self, x):
                    """Calls `unfold_inputs` first."""
                    return x
        '''),
        (),
        id="names-in-all-or-in-a-string-stay",
    ),
    pytest.param(
        src("""
            import numpy as np
            from torch import Tensor as T, nn as neural


            class FooForCausalLM(Base):
                def forward(self, x: T):
                    return x

                def prepare_inputs_for_generation(self, input_ids, **kwargs):
                    return {"input_ids": neural.Identity()(input_ids), "np": np.zeros(1)}
        """),
        src("""
            from torch import Tensor as T


            class FooForCausalLM(Base):
                def forward(self, x: T):
                    return x
        """),
        ("neural", "np"),
        id="aliased-imports",
    ),
    pytest.param(
        src("""
            import torch
            import torch.nn.functional as F


            class FooForCausalLM(Base):
                def forward(self, x):
                    return torch.relu(x)

                def prepare_inputs_for_generation(self, input_ids, **kwargs):
                    return {"input_ids": F.pad(torch.as_tensor(input_ids), (1, 0))}
        """),
        src("""
            import torch


            class FooForCausalLM(Base):
                def forward(self, x):
                    return torch.relu(x)
        """),
        ("F",),
        id="dotted-import-with-alias",
    ),
    pytest.param(
        src("""
            from ...cache_utils import Cache, DynamicCache  # noqa: F401


            class FooForCausalLM(Base):
                def prepare_inputs_for_generation(self, input_ids, past_key_values: Cache = None, **kwargs):
                    return {"input_ids": input_ids, "past_key_values": past_key_values}
        """),
        src("""
            from ...cache_utils import DynamicCache  # noqa: F401


            class FooForCausalLM(Base):
                pass
        """),
        ("Cache",),
        id="first-of-two-names-keeps-the-comment",
    ),
]


@pytest.mark.parametrize(("before", "after", "removed"), IMPORT_CASES)
def test_imports(before: str, after: str, removed: tuple[str, ...]) -> None:
    assert_parses(after)
    result = rewrite(before, edit(EditKind.DELETE))
    assert result.error is None, result.error
    assert result.new_text() == after
    assert result.removed_imports == removed
    assert_outside_unchanged(result.old, result.new, check_head=not removed)


def test_reduce_keeps_imports_the_new_body_still_uses() -> None:
    before = src("""
        from ...utils import is_torchdynamo_compiling


        class FooForCausalLM(Base):
            def prepare_inputs_for_generation(self, input_ids, **kwargs):
                if is_torchdynamo_compiling():
                    return {"input_ids": input_ids}
                return {"input_ids": input_ids, **kwargs}
    """)
    body = (
        "model_inputs = super().prepare_inputs_for_generation(input_ids, **kwargs)\n"
        'model_inputs["compiling"] = is_torchdynamo_compiling()\nreturn model_inputs\n'
    )
    result = rewrite(before, edit(EditKind.REDUCE, body))
    assert result.error is None and result.removed_imports == ()
    assert result.new_text().startswith("from ...utils import is_torchdynamo_compiling\n")
    assert_parses(result.new)


def test_mark_and_drop_marker_never_drop_imports() -> None:
    before = src("""
        import torch


        class FooForCausalLM(Base):
            # Copied from transformers.models.llama.modeling_llama.LlamaForCausalLM.prepare_inputs_for_generation
            def prepare_inputs_for_generation(self, input_ids, **kwargs):
                return {"input_ids": torch.as_tensor(input_ids)}
    """)
    result = rewrite(before, edit(EditKind.DROP_MARKER), edit(EditKind.MARK, "why"))
    assert result.error is None and result.removed_imports == ()
    assert result.new_text().startswith("import torch\n")


def test_local_imports_of_the_same_name_are_not_touched() -> None:
    before = src("""
        import torch


        def register():
            import torch  # noqa: F401  (registers the custom ops)


        class FooForCausalLM(Base):
            def prepare_inputs_for_generation(self, input_ids, **kwargs):
                return {"input_ids": torch.as_tensor(input_ids)}
    """)
    result = rewrite(before, edit(EditKind.DELETE))
    assert result.error is None
    assert "    import torch  # noqa: F401  (registers the custom ops)\n" in result.new_text()


def test_parenthesised_import_last_name_keeps_the_closing_parenthesis_in_place() -> None:
    before = src("""
        from ...cache_utils import (
            Cache,
            DynamicCache,
        )


        class FooForCausalLM(Base):
            def forward(self, past_key_values: Cache):
                return past_key_values

            def prepare_inputs_for_generation(self, input_ids, **kwargs):
                return {"past_key_values": DynamicCache()}
    """)
    result = rewrite(before, edit(EditKind.DELETE))
    assert result.error is None
    assert_parses(result.new)  # valid either way
    assert result.new_text().startswith("from ...cache_utils import (\n    Cache,\n)\n")


def test_parenthesised_import_last_name_is_valid_syntax() -> None:
    before = src("""
        from ...cache_utils import (
            Cache,
            DynamicCache,
        )


        class FooForCausalLM(Base):
            def forward(self, past_key_values: Cache):
                return past_key_values

            def prepare_inputs_for_generation(self, input_ids, **kwargs):
                return {"past_key_values": DynamicCache()}
    """)
    result = rewrite(before, edit(EditKind.DELETE))
    assert result.error is None and result.removed_imports == ("DynamicCache",)
    assert_parses(result.new)
    tree = ast.parse(result.new)
    imported = [a.name for node in tree.body if isinstance(node, ast.ImportFrom) for a in node.names]
    assert imported == ["Cache"]


# --------------------------------------------------------------------------------------------- encodings


def test_crlf_file_stays_crlf_byte_for_byte() -> None:
    before = (REWRITE_FIXTURES / "crlf_model.py").read_bytes()
    assert b"\r\n" in before and b"\n" not in before.replace(b"\r\n", b""), "the fixture must have CRLF line endings"
    result = rewrite_source(
        PATH,
        before,
        [
            edit(EditKind.REDUCE, REDUCED_BODY, cls="CraneForCausalLM"),
            edit(EditKind.MARK, "why", cls="CraneForCausalLM"),
            edit(EditKind.DROP_MARKER, cls="CraneForCausalLM"),
        ],
    )
    assert result.error is None, result.error
    assert b"\n" not in result.new.replace(b"\r\n", b""), "a bare LF crept in"
    assert (
        b"        # Overwritten -- why\r\n        model_inputs = super().prepare_inputs_for_generation(\r\n"
        in result.new
    )
    assert b"# Copied from" not in result.new
    assert_parses(result.new)
    assert_outside_unchanged(before, result.new, "CraneForCausalLM")


def test_crlf_delete_removes_an_import_and_keeps_crlf() -> None:
    before = (REWRITE_FIXTURES / "crlf_model.py").read_bytes()
    result = rewrite_source(PATH, before, [edit(EditKind.DELETE, cls="CraneForCausalLM")])
    assert result.error is None
    assert result.removed_imports == ()  # torch is still used by resize()
    assert b"\n" not in result.new.replace(b"\r\n", b"")
    assert METHOD.encode() not in result.new
    assert_outside_unchanged(before, result.new, "CraneForCausalLM")


@pytest.mark.parametrize(
    "edits",
    [
        pytest.param([edit(EditKind.MARK, "keeps the last token", cls="EgretForCausalLM")], id="mark"),
        pytest.param([edit(EditKind.DELETE, cls="EgretForCausalLM")], id="delete"),
        pytest.param([edit(EditKind.REDUCE, REDUCED_BODY, cls="EgretForCausalLM")], id="reduce"),
    ],
)
def test_latin1_file_round_trips(edits: list[Edit]) -> None:
    before = (REWRITE_FIXTURES / "latin1_model.py").read_bytes()
    assert before.startswith(b"# -*- coding: latin-1 -*-\n") and "é".encode("latin-1") in before
    result = rewrite_source(PATH, before, edits)
    assert result.error is None, result.error
    assert result.encoding.replace("-", "").replace("_", "").lower() in ("latin1", "iso88591")
    assert_parses(result.new)
    assert_outside_unchanged(before, result.new, "EgretForCausalLM")
    # the non-ASCII text outside the method is the same latin-1 bytes
    for text in ("« naïve »", "héron cendré", "Modèle de démonstration", '"égret: "'):
        assert text.encode("latin-1") in result.new
    assert "é".encode() not in result.new


def test_latin1_file_cannot_take_a_mark_it_cannot_encode() -> None:
    """A reason with a character latin-1 lacks is an error, and the file is left as it was."""
    before = (REWRITE_FIXTURES / "latin1_model.py").read_bytes()
    result = rewrite_source(PATH, before, [edit(EditKind.MARK, "keeps ≤ 1 token", cls="EgretForCausalLM")])
    assert result.error is not None
    assert result.new == before and not result.changed


def test_utf8_bom_is_kept() -> None:
    before = (
        b"\xef\xbb\xbf"
        + src("""
        class FooForCausalLM(Base):
            def forward(self):
                return "caf\u00e9"

            def prepare_inputs_for_generation(self, input_ids, **kwargs):
                return kwargs
    """).encode()
    )
    result = rewrite(before, edit(EditKind.DELETE))
    assert result.error is None
    assert result.new.startswith(b"\xef\xbb\xbfclass FooForCausalLM(Base):\n")
    assert "café".encode() in result.new


@pytest.mark.parametrize(
    "edits",
    [
        pytest.param(
            [
                edit(EditKind.REDUCE, REDUCED_BODY, cls="TernForCausalLM"),
                edit(EditKind.MARK, "why", cls="TernForCausalLM"),
            ],
            id="reduce-and-mark",
        ),
        pytest.param([edit(EditKind.DELETE, cls="TernForCausalLM")], id="delete"),
        pytest.param([edit(EditKind.IGNORE_COPY, cls="TernForCausalLM")], id="ignore-copy"),
    ],
)
def test_tab_indented_module(edits: list[Edit]) -> None:
    before = (REWRITE_FIXTURES / "tabs_model.py").read_bytes()
    assert b"\n\tdef forward" in before
    result = rewrite_source(PATH, before, edits)
    assert result.error is None, result.error
    assert_parses(result.new)
    assert_outside_unchanged(before, result.new, "TernForCausalLM")
    for line in result.new_text().splitlines():
        indent = line[: len(line) - len(line.lstrip())]
        assert not indent.startswith(" "), f"space indentation in a tab-indented module: {line!r}"
    if edits[0].kind is EditKind.REDUCE:
        assert (
            "\t\t# Overwritten -- why\n\t\tmodel_inputs = super().prepare_inputs_for_generation(\n\t\t\tinput_ids,\n"
            in result.new_text()
        )


# --------------------------------------------------------------------------------------------- errors


def test_file_that_does_not_parse_is_an_error_with_unchanged_bytes() -> None:
    before = b"class FooForCausalLM(Base:\n    def prepare_inputs_for_generation(self):\n        pass\n"
    result = rewrite(before, edit(EditKind.DELETE))
    assert result.error is not None and "parse" in result.error
    assert result.new == before and not result.changed and result.applied == ()


@pytest.mark.parametrize(
    ("before", "message"),
    [
        pytest.param(
            "class BarForCausalLM(Base):\n    pass\n", "no top-level class FooForCausalLM", id="missing-class"
        ),
        pytest.param(
            "class FooForCausalLM(Base):\n    def forward(self):\n        pass\n",
            "has no prepare_inputs_for_generation",
            id="class-without-the-method",
        ),
        pytest.param(
            "if True:\n    class FooForCausalLM(Base):\n        def prepare_inputs_for_generation(self, **kwargs):\n            pass\n",
            "no top-level class",
            id="nested-class-is-not-top-level",
        ),
    ],
)
def test_edit_naming_what_is_not_there_is_an_error(before: str, message: str) -> None:
    result = rewrite(before, edit(EditKind.DELETE))
    assert result.error is not None and message in result.error
    assert result.new == before.encode() and not result.changed


def test_one_error_leaves_the_whole_file_unchanged() -> None:
    before = "class FooForCausalLM(Base):\n    def prepare_inputs_for_generation(self, **kwargs):\n        pass\n"
    result = rewrite(before, edit(EditKind.DELETE), edit(EditKind.DELETE, cls="Missing"))
    assert result.error is not None and result.new == before.encode()


@pytest.mark.parametrize("kind", [EditKind.MARK, EditKind.REDUCE])
def test_one_line_method_body_is_rewritten_as_a_block(kind: EditKind) -> None:
    before = "class FooForCausalLM(Base):\n    def prepare_inputs_for_generation(self, input_ids, **kwargs): return kwargs\n"
    result = rewrite(before, edit(kind, REDUCED_BODY if kind is EditKind.REDUCE else "why"))
    assert result.error is not None or (result.changed and method_of(result.new) is not None)
    if result.error is not None:
        assert result.new == before.encode()


def test_one_line_method_body_can_be_deleted() -> None:
    before = "class FooForCausalLM(Base):\n    def prepare_inputs_for_generation(self, input_ids, **kwargs): return kwargs\n"
    result = rewrite(before, edit(EditKind.DELETE))
    assert result.error is None
    assert result.new_text() == "class FooForCausalLM(Base):\n    pass\n"


# --------------------------------------------------------------------------------------------- properties

_BODIES = [
    "return kwargs\n",
    REDUCED_BODY,
    REMOVE_BODY,
    "model_inputs = {}\nfor k, v in kwargs.items():\n    model_inputs[k] = v\nreturn model_inputs\n",
]
_EDITS = st.one_of(
    st.just([edit(EditKind.DELETE)]),
    st.builds(
        lambda text: [edit(EditKind.MARK, text)],
        st.text(st.characters(min_codepoint=32, max_codepoint=126), min_size=1, max_size=40).filter(str.strip),
    ),
    st.sampled_from(_BODIES).map(lambda body: [edit(EditKind.REDUCE, body)]),
    st.sampled_from(_BODIES).map(lambda body: [edit(EditKind.REDUCE, body), edit(EditKind.MARK, "reduced")]),
    st.just([edit(EditKind.DROP_MARKER), edit(EditKind.IGNORE_COPY)]),
)


def _indent(code: str, prefix: str) -> str:
    return "".join(prefix + line if line.strip() else line for line in code.splitlines(keepends=True))


def _compiles(source: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            compile(source, "<generated>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    return True


_CODE = hypothesmith.from_grammar(start="file_input")  # built once: constructing the grammar's parser is slow


@st.composite
def modules(draw: st.DrawFn) -> str:
    """Generated code around a class with the method: module statements above, a generated method body,
    generated class-level statements after it."""
    above, body, member = draw(_CODE), draw(_CODE), draw(_CODE)
    body = body if body.strip() else "pass\n"
    source = (
        (above if above.endswith("\n") or not above else above + "\n")
        + "\n\nclass FooForCausalLM(Base):\n"
        + "    # Copied from transformers.models.llama.modeling_llama.LlamaForCausalLM.prepare_inputs_for_generation\n"
        + "    def prepare_inputs_for_generation(self, input_ids, past_key_values=None, **kwargs):\n"
        + _indent(body if body.endswith("\n") else body + "\n", "        ")
        + "\n"
        + (_indent(member if member.endswith("\n") else member + "\n", "    ") if member.strip() else "")
    )
    assume(_compiles(source))
    return source


@pytest.mark.filterwarnings("ignore::SyntaxWarning")
@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(source=modules(), edits=_EDITS)
def test_rewrites_of_generated_modules_are_valid_or_errors(source: str, edits: list[Edit]) -> None:
    before = source.encode("utf-8")
    result = rewrite_source(PATH, before, edits)
    if result.error is not None:
        assert result.new == before
        return
    assert _compiles(result.new_text()), result.new_text()
    method = method_of(result.new)
    kinds = {e.kind for e in edits}
    if EditKind.DELETE in kinds:
        assert method is None
    else:
        assert method is not None
    if EditKind.MARK in kinds and method is not None:
        assert "# Overwritten --" in result.new_text()
    if EditKind.REDUCE in kinds and method is not None:
        body = next(e.text for e in edits if e.kind is EditKind.REDUCE)
        assert ast.dump(ast.Module(method.body, [])) == ast.dump(ast.parse(body))
    if not result.removed_imports:
        assert_outside_unchanged(before, result.new)


def test_hoisting_the_generic_method_source() -> None:
    """The real generic implementation goes in as written (re-indented for the module)."""
    before = src("""
        class GenerationMixin:
            def prepare_inputs_for_generation(self, *args, **kwargs):
                raise NotImplementedError("stub")
    """)
    result = rewrite(before, edit(EditKind.HOIST, METHOD_SOURCE, cls="GenerationMixin"))
    assert result.error is None
    assert result.new_text() == "class GenerationMixin:\n" + METHOD_SOURCE
    assert_parses(result.new)


def test_whitespace_only_lines_at_the_end_of_the_file_survive() -> None:
    before = (
        src("""
        class FooForCausalLM(Base):
            def prepare_inputs_for_generation(self, input_ids, **kwargs):
                return kwargs
    """)
        + "  \n  \n"
    )
    result = rewrite(before, edit(EditKind.MARK, "why"))
    assert result.error is None
    assert result.new_text().endswith("        return kwargs\n  \n  \n")


# --------------------------------------------------------------------------------------------- swap-delegate, mixin base


def test_swap_delegate_asks_super_and_keeps_the_rest() -> None:
    before = src("""
        class FooForConditionalGeneration(FooPreTrainedModel, GenerationMixin):
            def prepare_inputs_for_generation(self, input_ids, pixel_values=None, cache_position=None, **kwargs):
                model_inputs = self.language_model.prepare_inputs_for_generation(
                    input_ids, cache_position=cache_position, **kwargs
                )
                # later steps must not see the image again
                if cache_position[0] == 0:
                    model_inputs["pixel_values"] = pixel_values
                return model_inputs
    """)
    cls = "FooForConditionalGeneration"
    result = rewrite(before, edit(EditKind.SWAP_DELEGATE, cls=cls), edit(EditKind.MARK, "asks super()", cls=cls))
    assert result.error is None, result.error
    assert result.new_text() == before.replace(
        "        model_inputs = self.language_model.prepare_inputs_for_generation(\n",
        "        # Overwritten -- asks super()\n        model_inputs = super().prepare_inputs_for_generation(\n",
    )
    assert_outside_unchanged(result.old, result.new, cls)


def test_swap_delegate_with_a_repair_adds_it_before_the_final_return() -> None:
    """Verification found what the sub-model's own override did that super() does not (a key it dropped):
    the swapped body gets it right before ``return model_inputs``; a body ending otherwise is refused."""
    before = src("""
        class FooForConditionalGeneration(FooPreTrainedModel, GenerationMixin):
            def prepare_inputs_for_generation(self, input_ids, pixel_values=None, cache_position=None, **kwargs):
                model_inputs = self.language_model.prepare_inputs_for_generation(
                    input_ids, cache_position=cache_position, **kwargs
                )
                if cache_position[0] == 0:
                    model_inputs["pixel_values"] = pixel_values
                return model_inputs
    """)
    cls = "FooForConditionalGeneration"
    result = rewrite(before, edit(EditKind.SWAP_DELEGATE, 'model_inputs.pop("position_ids", None)\n', cls=cls))
    assert result.error is None, result.error
    after = before.replace(
        "self.language_model.prepare_inputs_for_generation(", "super().prepare_inputs_for_generation("
    )
    after = after.replace(
        "        return model_inputs\n",
        '        model_inputs.pop("position_ids", None)\n        return model_inputs\n',
    )
    assert_parses(after)
    assert result.new_text() == after
    assert_outside_unchanged(result.old, result.new, cls)
    returned = src("""
        class FooForConditionalGeneration(FooPreTrainedModel, GenerationMixin):
            def prepare_inputs_for_generation(self, input_ids, **kwargs):
                return self.language_model.prepare_inputs_for_generation(input_ids, **kwargs)
    """)
    refused = rewrite(returned, edit(EditKind.SWAP_DELEGATE, 'model_inputs.pop("position_ids", None)\n', cls=cls))
    assert refused.error is not None and "return model_inputs" in refused.error


def test_swap_delegate_with_kept_parameters_drops_the_others_from_the_signature_and_the_call() -> None:
    """Parameters only handed on as ``name=name`` reach super() through **kwargs: the signature and the
    call lose them, and the call is laid out again (one line when it fits)."""
    before = src("""
        class FooForConditionalGeneration(FooPreTrainedModel, GenerationMixin):
            def prepare_inputs_for_generation(
                self,
                input_ids,
                past_key_values=None,
                pixel_values=None,
                attention_mask=None,
                cache_position=None,
                **kwargs,
            ):
                # the delegated call
                model_inputs = self.language_model.prepare_inputs_for_generation(
                    input_ids,
                    past_key_values=past_key_values,
                    attention_mask=attention_mask,
                    cache_position=cache_position,
                    **kwargs,
                )
                if cache_position[0] == 0:
                    model_inputs["pixel_values"] = pixel_values
                return model_inputs
    """)
    after = src("""
        class FooForConditionalGeneration(FooPreTrainedModel, GenerationMixin):
            def prepare_inputs_for_generation(self, input_ids, pixel_values=None, cache_position=None, **kwargs):
                # the delegated call
                model_inputs = super().prepare_inputs_for_generation(input_ids, cache_position=cache_position, **kwargs)
                if cache_position[0] == 0:
                    model_inputs["pixel_values"] = pixel_values
                return model_inputs
    """)
    cls = "FooForConditionalGeneration"
    swap = dataclasses.replace(
        edit(EditKind.SWAP_DELEGATE, cls=cls), keep_params=("input_ids", "pixel_values", "cache_position", "kwargs")
    )
    result = rewrite(before, swap)
    assert result.error is None, result.error
    assert result.new_text() == after
    ast.parse(after)


def test_swap_delegate_refuses_to_drop_a_parameter_the_body_still_reads() -> None:
    before = src("""
        class FooForConditionalGeneration(FooPreTrainedModel, GenerationMixin):
            def prepare_inputs_for_generation(self, input_ids, attention_mask=None, **kwargs):
                model_inputs = self.language_model.prepare_inputs_for_generation(
                    input_ids, attention_mask=attention_mask * 2, **kwargs
                )
                return model_inputs
    """)
    cls = "FooForConditionalGeneration"
    swap = dataclasses.replace(edit(EditKind.SWAP_DELEGATE, cls=cls), keep_params=("input_ids", "kwargs"))
    result = rewrite(before, swap)
    assert result.error is not None and "attention_mask" in result.error and result.new == before.encode()


def test_swap_delegate_refuses_to_slim_a_call_nested_in_a_block() -> None:
    before = src("""
        class FooForConditionalGeneration(FooPreTrainedModel, GenerationMixin):
            def prepare_inputs_for_generation(self, input_ids, attention_mask=None, **kwargs):
                if input_ids is not None:
                    model_inputs = self.language_model.prepare_inputs_for_generation(
                        input_ids, attention_mask=attention_mask, **kwargs
                    )
                return model_inputs
    """)
    cls = "FooForConditionalGeneration"
    swap = dataclasses.replace(edit(EditKind.SWAP_DELEGATE, cls=cls), keep_params=("input_ids", "kwargs"))
    result = rewrite(before, swap)
    assert result.error is not None and "statement of the body" in result.error and result.new == before.encode()


def test_swap_delegate_with_two_delegate_calls_is_an_error() -> None:
    before = src("""
        class FooForCausalLM(Base):
            def prepare_inputs_for_generation(self, input_ids, **kwargs):
                if kwargs.get("speech"):
                    return self.speech_model.prepare_inputs_for_generation(input_ids, **kwargs)
                return self.text_model.prepare_inputs_for_generation(input_ids, **kwargs)
    """)
    result = rewrite(before, edit(EditKind.SWAP_DELEGATE))
    assert result.error is not None and result.new == before.encode()


@pytest.mark.parametrize(
    ("bases", "after"),
    [
        pytest.param("(FooPreTrainedModel)", "(FooPreTrainedModel, GenerationMixin)", id="one-base"),
        pytest.param(
            "(FooPreTrainedModel, FooMixin)", "(FooPreTrainedModel, FooMixin, GenerationMixin)", id="two-bases"
        ),
        pytest.param("", "(GenerationMixin)", id="no-bases"),
        pytest.param(
            "(FooPreTrainedModel, metaclass=FooMeta)",
            "(FooPreTrainedModel, GenerationMixin, metaclass=FooMeta)",
            id="keyword-stays-last",
        ),
    ],
)
def test_add_mixin_base_with_the_deletion(bases: str, after: str) -> None:
    before = src(f'''
        """Foo."""

        from ...modeling_utils import PreTrainedModel
        from .configuration_foo import FooConfig


        class FooForCausalLM{bases}:
            def forward(self, input_ids):
                return input_ids

            def prepare_inputs_for_generation(self, input_ids, **kwargs):
                return {{"input_ids": input_ids}}
    ''')
    result = rewrite(before, edit(EditKind.DELETE), edit(EditKind.ADD_MIXIN_BASE))
    assert result.error is None, result.error
    text = result.new_text()
    assert f"\nclass FooForCausalLM{after}:\n" in text
    assert METHOD not in text
    tree = ast.parse(text)
    imports = [(n.module, n.level, [a.name for a in n.names]) for n in tree.body if isinstance(n, ast.ImportFrom)]
    assert ("generation", 3, ["GenerationMixin"]) in imports
    assert ast.get_docstring(tree) == "Foo."


def test_add_mixin_base_keeps_an_existing_import() -> None:
    before = src("""
        from ...generation import GenerationMixin
        from ...modeling_utils import PreTrainedModel


        class FooForCausalLM(PreTrainedModel):
            def prepare_inputs_for_generation(self, input_ids, **kwargs):
                return {"input_ids": input_ids}
    """)
    result = rewrite(before, edit(EditKind.DELETE), edit(EditKind.ADD_MIXIN_BASE))
    assert result.error is None
    assert result.new_text().count("import GenerationMixin") == 1
    assert "class FooForCausalLM(PreTrainedModel, GenerationMixin):\n    pass\n" in result.new_text()


def test_add_mixin_base_in_a_module_without_relative_imports() -> None:
    before = src('''
        """Foo."""

        from __future__ import annotations

        from transformers import PreTrainedModel


        class FooForCausalLM(PreTrainedModel):
            def prepare_inputs_for_generation(self, input_ids, **kwargs):
                return {"input_ids": input_ids}
    ''')
    result = rewrite(before, edit(EditKind.DELETE), edit(EditKind.ADD_MIXIN_BASE))
    assert result.error is None, result.error
    assert ast.get_docstring(ast.parse(result.new)) == "Foo."


@pytest.mark.parametrize(
    ("test", "opposite"),
    [
        ("not empty_past_kv", "empty_past_kv"),
        ("past_key_values is None", "past_key_values is not None"),
        ("past_key_values is not None", "past_key_values is None"),
        ("cache_position[0] == 0", "cache_position[0] != 0"),
        ("past_key_values", "not past_key_values"),
        ("a is None and b", "not (a is None and b)"),
        ("(a or b)", "not (a or b)"),
        ("0 < n < 3", "not 0 < n < 3"),  # a chained comparison: negated whole (``not`` binds looser)
    ],
)
def test_the_opposite_test_is_written_as_a_person_would(test: str, opposite: str) -> None:
    import libcst as cst

    from codemod.transform.cst_code import negated

    result = cst.Module(body=[]).code_for_node(negated(cst.parse_expression(test)))
    assert result == opposite
    env = {"empty_past_kv": True, "past_key_values": None, "cache_position": [0], "a": None, "b": 0, "n": 1}
    assert eval(result, {}, env) is (not eval(test, {}, env))  # noqa: S307 - the expressions above, no input


def test_a_cut_inside_anything_but_an_if_is_an_error_with_unchanged_bytes() -> None:
    before = src("""
        class FooForCausalLM(Base):
            def prepare_inputs_for_generation(self, input_ids, **kwargs):
                for key in kwargs:
                    input_ids = input_ids[:, -1:]
                return {"input_ids": input_ids}
    """)
    cut = dataclasses.replace(
        edit(EditKind.REDUCE, "return super().prepare_inputs_for_generation(input_ids)\n"),
        keep=(0,),
        cuts=(Nested((0, "body", 0), 1, ("input_ids",)),),
    )
    result = rewrite(before, cut)
    assert result.error is not None and "only inside an if" in result.error
    assert result.new == before.encode() and not result.changed


def moved(text: str, keep: tuple[int, ...]) -> Edit:
    return dataclasses.replace(edit(EditKind.ADD_METHOD, text), keep=keep)


NEEDS = "def _generation_needs_first_step_inputs(self, input_ids, **kwargs):\n    return legacy\n"

#: a mined hook that asks the model's own condition: the override deleted, its condition's statements moved into
#: the method that takes its place
ADD_METHOD_CASES = [
    pytest.param(
        src("""
            class FooForCausalLM(Base):
                def prepare_inputs_for_generation(self, input_ids, pixel_values=None, cache_position=None, **kwargs):
                    # Overwritten -- keeps its own input handling
                    # a legacy prompt: one image token the model expands itself
                    legacy = (
                        input_ids is not None and (input_ids == self.config.image_token_index).sum(1).max() < 4
                    )
                    model_inputs = super().prepare_inputs_for_generation(input_ids, cache_position=cache_position, **kwargs)
                    if legacy or cache_position[0] == 0:
                        model_inputs["pixel_values"] = pixel_values
                    return model_inputs

                def forward(self):
                    pass
        """),
        [edit(EditKind.DELETE), moved(NEEDS, (0,))],
        src("""
            class FooForCausalLM(Base):
                def _generation_needs_first_step_inputs(self, input_ids, **kwargs):
                    # a legacy prompt: one image token the model expands itself
                    return (
                        input_ids is not None and (input_ids == self.config.image_token_index).sum(1).max() < 4
                    )

                def forward(self):
                    pass
        """),
        # one assignment to the name returned is the return itself; the mark spoke of the deleted override
        id="one-assignment-becomes-the-return",
    ),
    pytest.param(
        src("""
            class FooForCausalLM(Base):
                def forward(self):
                    pass

                def prepare_inputs_for_generation(self, input_ids, pixel_values=None, **kwargs):
                    if input_ids is not None:
                        short = input_ids.shape[1] < 4
                        legacy = short and pixel_values is not None
                    model_inputs = super().prepare_inputs_for_generation(input_ids, **kwargs)
                    if legacy or kwargs["cache_position"][0] == 0:
                        model_inputs["pixel_values"] = pixel_values
                    return model_inputs
        """),
        [
            edit(EditKind.DELETE),
            moved(
                "def _generation_needs_first_step_inputs(self, input_ids, pixel_values=None, **kwargs):\n"
                "    return legacy\n",
                (0,),
            ),
        ],
        src("""
            class FooForCausalLM(Base):
                def forward(self):
                    pass

                def _generation_needs_first_step_inputs(self, input_ids, pixel_values=None, **kwargs):
                    if input_ids is not None:
                        short = input_ids.shape[1] < 4
                        legacy = short and pixel_values is not None
                    return legacy
        """),
        id="a-guarded-block-moves-whole",
    ),
]


@pytest.mark.parametrize(("before", "edits", "after"), [*ATTRIBUTE_CASES, *ADD_METHOD_CASES])
def test_class_level_edits(before: str, edits: list[Edit], after: str) -> None:
    """A hook member's class: its attribute set (merged with one an earlier pass wrote), a method added."""
    assert_parses(after)
    result = rewrite(before, *edits)
    assert result.error is None, result.error
    assert result.new_text() == after


def test_add_method_of_statements_that_are_not_there_is_an_error() -> None:
    before = "class FooForCausalLM(Base):\n    def prepare_inputs_for_generation(self, input_ids, **kwargs):\n        return kwargs\n"
    result = rewrite(before, edit(EditKind.DELETE), moved(NEEDS, (3,)))
    assert result.error is not None and "cannot move statements [3]" in result.error


def test_a_statement_kept_in_front_opens_the_body_without_the_blank_line_that_parted_it() -> None:
    """RoFormer's masked LM keeps its ``assert`` (its third statement, after a blank line) in front of ``super()``:
    it opens the body now, so the blank line goes; its own comment stays."""
    before = src("""
        class FooForCausalLM(Base):
            def prepare_inputs_for_generation(self, input_ids, **kwargs):
                input_shape = input_ids.shape

                # check it
                assert self.config.pad_token_id is not None, "no pad"
                return {"input_ids": input_ids}
    """)
    reduced = dataclasses.replace(
        edit(EditKind.REDUCE, "return super().prepare_inputs_for_generation(input_ids, **kwargs)\n"), keep=(1,)
    )
    result = rewrite(before, reduced)
    assert result.error is None, result.error
    after = result.new.decode()
    ast.parse(after)
    assert after == src("""
        class FooForCausalLM(Base):
            def prepare_inputs_for_generation(self, input_ids, **kwargs):
                # check it
                assert self.config.pad_token_id is not None, "no pad"
                return super().prepare_inputs_for_generation(input_ids, **kwargs)
    """), after
