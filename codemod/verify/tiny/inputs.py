"""Inputs for ``generate()``: random ids that avoid special tokens (or a float main input), left-padded on
request; pad/eos/decoder-start settled in the generation config; and what a few models can't run without
(:data:`EXTRA_INPUTS`: layout boxes, a target language, retrieved documents, audio..., an image)."""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch

from .common import TinyModelError, is_int, takes, text_config
from .multimodal import NEEDS_IMAGE, extra_audio, float_input, multimodal_inputs
from .tokens import random_ids, token_ids, vocab_size

if TYPE_CHECKING:
    from .common import Inputs

#: classes whose main input is ids but whose encoder refuses them: the input is embeddings
#: (seamless' text-to-unit model is fed the text decoder's hidden states)
EMBEDS_ONLY = {"SeamlessM4TTextToUnitForConditionalGeneration", "SeamlessM4Tv2TextToUnitForConditionalGeneration"}
#: forward arguments that only an upstream model can fill (the Omni talkers speak what a thinker
#: model wrote, from its hidden states)
UPSTREAM_INPUTS = ("thinker_reply_part", "trailing_text_hidden")


def _first_id(value: Any) -> int | None:
    ids = list(token_ids(value))
    return ids[0] if ids else None


def _setup_generation_config(model: Any) -> None:
    gen = getattr(model, "generation_config", None)
    if gen is None:
        return
    config, text = model.config, text_config(model.config)

    def pick(name: str) -> int | None:
        for source in (gen, text, config):
            value = _first_id(getattr(source, name, None))
            if value is not None:
                return value
        return None

    eos = pick("eos_token_id")
    pad = pick("pad_token_id")
    if pad is None:
        pad = eos if eos is not None else 0
    gen.pad_token_id = pad
    if gen.eos_token_id is None and eos is not None:
        gen.eos_token_id = eos
    if getattr(gen, "num_return_sequences", 1) is None:
        gen.num_return_sequences = 1  # musicgen's own generate() reads it raw (5.x leaves it None)
    # the generation config is now this model's own, not one derived from its config: saved and
    # loaded as it is (a derived one drops extra attributes, such as seamless' language maps, on load)
    gen._from_model_config = False
    # encoder-decoders start from it; so do codebook decoders (musicgen's delay pattern pads with it)
    # (a composite such as musicgen-melody, not an encoder-decoder, holds them in its decoder config)
    codebooks = (getattr(source, "num_codebooks", None) for source in (config, getattr(config, "decoder", None)))
    starts = getattr(config, "is_encoder_decoder", False) or any(is_int(n) for n in codebooks)
    if starts and gen.decoder_start_token_id is None:
        start = pick("decoder_start_token_id")
        if start is None:
            start = pick("bos_token_id")
        gen.decoder_start_token_id = start if start is not None else pad


def _required_generate_input(model: Any) -> str | None:
    """The first required argument of a model's own ``generate()``, where it has one (pop2piano)."""
    try:
        parameters = list(inspect.signature(model.generate).parameters.values())
    except (TypeError, ValueError):
        return None
    for parameter in parameters:
        if parameter.kind is parameter.POSITIONAL_OR_KEYWORD and parameter.default is parameter.empty:
            return parameter.name
    return None


def _check_generative(model: Any) -> None:
    """A model without an LM head can't generate, whatever its class claims; nor can one that is
    driven by another model's hidden states."""
    for name in UPSTREAM_INPUTS:
        if takes(model.forward, name):
            raise TinyModelError(
                f"{type(model).__name__} is driven by an upstream model's hidden states ({name}): not runnable alone"
            )
    if getattr(model.config, "is_encoder_decoder", False) or takes(model.forward, "labels"):
        return
    if type(model).__name__.endswith("Model") and model.get_output_embeddings() is None:
        raise TinyModelError(f"{type(model).__name__} has no language-model head: generate() can't run on it")


# Extra inputs some models need besides the main one: (model, inputs, context) -> None, editing inputs.


def _extra_bbox(model: Any, inputs: Inputs, ctx: dict[str, Any]) -> None:
    # layout models take one box (x0, y0, x1, y1) per token: LayoutLM-style integers in [0, 1000],
    # or UDOP's floats in [0, 1]
    if "input_ids" not in inputs or not takes(model.forward, "bbox"):
        return
    batch, length = inputs["input_ids"].shape
    corners = torch.randint(0, 500, (batch, length, 2), generator=ctx["generator"])
    sizes = torch.randint(1, 500, (batch, length, 2), generator=ctx["generator"])
    boxes = torch.cat([corners, corners + sizes], dim=-1)
    inputs["bbox"] = boxes / 1000.0 if getattr(model.config, "model_type", "") == "udop" else boxes


def _extra_tgt_lang(model: Any, inputs: Inputs, ctx: dict[str, Any]) -> None:
    # seamless models need a target language (text, units, vocoder) for speech output; there is no
    # tokenizer, so the generation config gets one made-up language mapped to valid ids
    if not takes(model.generate, "tgt_lang"):
        return
    gen, config = model.generation_config, model.config
    text_vocab = vocab_size(model)
    t2u_vocab = getattr(config, "t2u_vocab_size", None) or text_vocab
    gen.text_decoder_lang_to_code_id = {"eng": text_vocab - 1}
    gen.t2u_lang_code_to_id = {"eng": t2u_vocab - 1}
    gen.vocoder_lang_code_to_id = {"eng": 0}
    inputs["tgt_lang"] = "eng"
    char_vocab = getattr(config, "char_vocab_size", None)
    if is_int(char_vocab):
        # v2's unit decoder upsamples by characters: every text id is a one-character subword
        gen.id_to_text = {str(i): chr(ord("a") + i % 26) for i in range(text_vocab)}
        gen.char_to_id = {chr(ord("a") + i): 2 + i % max(char_vocab - 2, 1) for i in range(26)}


def _extra_rag(model: Any, inputs: Inputs, ctx: dict[str, Any]) -> None:
    # no retriever: the retrieved documents come as context ids and scores, n_docs per question
    if getattr(model.config, "model_type", "") != "rag" or "input_ids" not in inputs:
        return
    batch = inputs["input_ids"].shape[0]
    n_docs = model.config.n_docs
    generator_config = model.config.generator
    context = random_ids(
        model, (batch * n_docs, ctx["seq_len"] + 3), ctx["generator"], vocab=generator_config.vocab_size
    )
    inputs["context_input_ids"] = context
    inputs["context_attention_mask"] = torch.ones_like(context)
    inputs["doc_scores"] = torch.randn((batch, n_docs), generator=ctx["generator"])


def _extra_pop2piano(model: Any, inputs: Inputs, ctx: dict[str, Any]) -> None:
    # generate() prepends a composer embedding picked through generation_config.composer_to_feature_token
    if getattr(model.config, "model_type", "") != "pop2piano":
        return
    count = model.config.composer_vocab_size
    model.generation_config.composer_to_feature_token = {f"composer{i + 1}": i for i in range(count)}


def _extra_backbone_state(model: Any, inputs: Inputs, ctx: dict[str, Any]) -> None:
    # CSM's depth decoder is driven by the backbone's last hidden state (one vector per sequence)
    if "input_ids" not in inputs or not takes(model.forward, "backbone_last_hidden_state"):
        return
    hidden = getattr(model.config, "backbone_hidden_size", None) or model.config.hidden_size
    batch = inputs["input_ids"].shape[0]
    inputs["backbone_last_hidden_state"] = torch.randn((batch, hidden), generator=ctx["generator"])


def _extra_codebooks(model: Any, inputs: Inputs, ctx: dict[str, Any]) -> None:
    # a codebook decoder used alone (musicgen's) reads one row per codebook: (batch x codebooks, length)
    if "input_ids" in inputs and str(getattr(model.config, "model_type", "")).endswith("_decoder"):
        books = getattr(model.config, "num_codebooks", None)
        if is_int(books) and books > 1:
            inputs["input_ids"] = inputs["input_ids"].repeat_interleave(books, dim=0)


EXTRA_INPUTS: tuple[Callable[[Any, Inputs, dict[str, Any]], None], ...] = (
    _extra_codebooks,
    _extra_bbox,
    _extra_tgt_lang,
    _extra_rag,
    _extra_pop2piano,
    _extra_backbone_state,
    extra_audio,
)


def generation_inputs(
    model: Any, *, batch_size: int = 1, seq_len: int = 7, seed: int = 0, left_pad: int = 0
) -> Inputs:
    """The main input for ``generate()`` (``input_ids`` + ``attention_mask`` for text models).

    Ids are random and avoid every special token. ``left_pad`` pad tokens (masked out) start the
    first row; the other rows are full. The model's ``generation_config`` gets a pad id (the
    config's pad, else eos, else 0), an eos when it has none, and a decoder start id for
    encoder-decoders, so that ``generate(**inputs, max_new_tokens=6, min_new_tokens=6)`` runs.
    A float main input (speech features, raw audio, pixels) is shaped from the config; models that
    need more (bounding boxes, a target language, retrieved documents) get it too.
    """
    if left_pad >= seq_len:
        raise ValueError(f"left_pad={left_pad} leaves no tokens in a sequence of {seq_len}")
    _check_generative(model)
    _setup_generation_config(model)
    generator = torch.Generator().manual_seed(seed)
    name = getattr(model, "main_input_name", "input_ids") or "input_ids"
    if type(model).__name__ in EMBEDS_ONLY:
        name = "inputs_embeds"
    required = _required_generate_input(model)
    if required in ("input_features", "input_values", "pixel_values"):
        name = required  # the model's own generate() wants it, whatever main_input_name says
    attention_mask = torch.ones(batch_size, seq_len, dtype=torch.long)
    if left_pad:
        attention_mask[0, :left_pad] = 0
    if name in ("input_ids", "decoder_input_ids"):
        input_ids = random_ids(model, (batch_size, seq_len), generator)
        if left_pad:
            input_ids[0, :left_pad] = model.generation_config.pad_token_id
        inputs = {"input_ids": input_ids, "attention_mask": attention_mask}
    else:
        values = float_input(model, name, batch_size, seq_len, generator)
        key = "inputs_embeds" if name in ("input_embeds", "inputs_embeds") else name
        inputs = {key: values}
        if values.dim() == 3 and values.shape[1] == seq_len:  # one vector per position: maskable
            if left_pad:
                values[0, :left_pad] = 0.0
            inputs["attention_mask"] = attention_mask
    context = {"generator": generator, "seq_len": seq_len, "left_pad": left_pad}
    for extra in EXTRA_INPUTS:
        extra(model, inputs, context)
    if str(getattr(model.config, "model_type", "")) in NEEDS_IMAGE:
        with_image = multimodal_inputs(model, inputs, seed=seed)
        if with_image is None:
            raise TinyModelError(f"{type(model).__name__} needs an image input, and none could be made")
        inputs = with_image
    return inputs
