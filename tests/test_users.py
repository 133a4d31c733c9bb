"""Which classes generate through a changed class (``verify.users``): a composite that holds the changed class and
drives its ``generate()`` or ``prepare_inputs_for_generation`` is verified too, as CLVP's composite must be when its
speech decoder's override changes."""

from __future__ import annotations

import textwrap

import pytest

from codemod.verify.users import User, users_in

CHANGED = {"SpeechDecoderForCausalLM": "m/modeling_m.py::SpeechDecoderForCausalLM"}


def _users(body: str) -> list[User]:
    return users_in(textwrap.dedent(body), "m/modeling_m.py", CHANGED)


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (
            # CLVP's shape: the composite builds the decoder and calls its generate()
            """
            class Composite(PreTrainedModel):
                def __init__(self, config):
                    self.speech_decoder_model = SpeechDecoderForCausalLM(config.decoder_config)

                def generate(self, input_ids, **kwargs):
                    return self.speech_decoder_model.generate(conditioning_embeds=input_ids, **kwargs)
            """,
            [User("m/modeling_m.py", "Composite", "SpeechDecoderForCausalLM", CHANGED["SpeechDecoderForCausalLM"])],
        ),
        (
            # a wrapper that asks the held decoder for its inputs
            """
            class Wrapper(PreTrainedModel):
                decoder_class = SpeechDecoderForCausalLM

                def prepare_inputs_for_generation(self, input_ids, **kwargs):
                    return self.decoder.prepare_inputs_for_generation(input_ids, **kwargs)
            """,
            [User("m/modeling_m.py", "Wrapper", "SpeechDecoderForCausalLM", CHANGED["SpeechDecoderForCausalLM"])],
        ),
    ],
)
def test_a_class_that_holds_and_drives_a_changed_class_uses_it(body: str, expected: list[User]) -> None:
    assert _users(body) == expected


@pytest.mark.parametrize(
    ("body", "why"),
    [
        (
            """
            class Composite(PreTrainedModel):
                def __init__(self, config):
                    self.decoder = SpeechDecoderForCausalLM(config.decoder_config)

                def forward(self, input_ids):
                    return self.decoder(input_ids)
            """,
            "it holds the class but runs its forward only: its own generate loop prepares its own inputs",
        ),
        (
            """
            class Other(PreTrainedModel):
                def generate(self, input_ids, **kwargs):
                    return self.decoder.generate(input_ids, **kwargs)
            """,
            "it drives a part, but never names the changed class",
        ),
        (
            """
            class Subclass(SpeechDecoderForCausalLM):
                def generate(self, *args, **kwargs):
                    return super().generate(*args, **kwargs)
            """,
            "super().generate() is its own method (an inheritor, found as one)",
        ),
        (
            """
            class SpeechDecoderForCausalLM(PreTrainedModel):
                def generate(self, input_ids, **kwargs):
                    return self.model.generate(input_ids, **kwargs)
            """,
            "the changed class itself is a target already",
        ),
    ],
)
def test_no_user(body: str, why: str) -> None:
    assert _users(body) == [], why


def test_a_file_that_does_not_parse_has_no_users() -> None:
    assert users_in("class (:\n", "m/modeling_m.py", CHANGED) == []
