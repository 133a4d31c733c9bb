"""What transformers-codemod knows about ``prepare_inputs_for_generation``.

Each module here is one behaviour recogniser with a stable code (``PI1xx`` standard input
preparation, ``PI17x`` model-specific, ``PI19x`` plumbing) and a docstring example; ``ALL`` lists
them in code order. ``rules.guards`` holds the ``if`` tests the engine understands.
"""

from __future__ import annotations

from rules import (
    cache_key_always,
    cache_position_from_cache,
    default_attention_mask,
    remote_code_cache_position,
    modular_removal,
    move_to_device,
    key_variable,
    encoder_decoder_masks,
    flash_attention_seq_lens,
    delegate,
    drop_key,
    forward_kwargs,
    inputs_embeds_first_step,
    output_dict,
    position_ids_from_mask,
    read_kwarg,
    set_kwarg,
    slice_by_cache_position,
    slice_by_next_sequence_length,
    slice_by_past_length,
    slice_to_last_token,
    slice_with_ids,
    state_space_cache,
    static_cache_mask,
    static_cache_pad_mask,
    synthesise_cache_position,
)
from rules.base import Kind, Rule

ALL: tuple[Rule, ...] = tuple(
    sorted(
        (
            module.RULE
            for module in (
                cache_key_always,
                cache_position_from_cache,
                default_attention_mask,
                remote_code_cache_position,
                modular_removal,
                move_to_device,
                key_variable,
                encoder_decoder_masks,
                flash_attention_seq_lens,
                delegate,
                drop_key,
                forward_kwargs,
                inputs_embeds_first_step,
                output_dict,
                position_ids_from_mask,
                read_kwarg,
                set_kwarg,
                slice_by_cache_position,
                slice_by_next_sequence_length,
                slice_by_past_length,
                slice_to_last_token,
                slice_with_ids,
                state_space_cache,
                static_cache_mask,
                static_cache_pad_mask,
                synthesise_cache_position,
            )
        ),
        key=lambda rule: rule.code,
    )
)
BY_CODE = {rule.code: rule for rule in ALL}
BY_NAME = {rule.name: rule for rule in ALL}

__all__ = ["ALL", "BY_CODE", "BY_NAME", "Kind", "Rule"]
