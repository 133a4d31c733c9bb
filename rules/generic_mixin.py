"""The generic ``prepare_inputs_for_generation`` that ``apply`` installs into a stub mixin (≤ 4.45).

In transformers ≤ 4.45 ``GenerationMixin.prepare_inputs_for_generation`` only raises, so no
override can be deleted until the mixin does the work. This is our implementation for that era's
APIs, written to the shape of the recognisers (the scan profiles it like any mixin, so deletions are
planned only against what it really does):

- Cache classes and legacy tuple caches: ``cache_position`` is forwarded to models with Cache
  classes and derived from the legacy cache for the others when the caller gives none;
- the ids are sliced by ``cache_position`` (with the ``inputs_embeds`` exception);
- ``inputs_embeds`` are fed on the first step only, decoder-only models;
- encoder-decoder models get ``decoder_input_ids``;
- ``position_ids`` are built from the caller's attention mask when ``forward`` accepts them, and sliced
  with ``token_type_ids`` to the new tokens;
- a ``StaticCache`` gets the 4D causal mask from the helper the model's module defines in 4.45
  (``_prepare_4d_causal_attention_mask_with_cache_position``), or the base model's method of later
  releases, so no per-model edit is needed to reach it; 4.45's ``get_max_length()`` gives its size;
  so does Gemma 2's ``HybridCache`` except under flash attention, as Gemma 2's own method did;
- every other keyword argument is forwarded, ``labels`` excepted.

``METHOD_SOURCE`` is indented for the class body; ``MODULE_SOURCE`` wraps it in a class so that the
scan can profile it.
"""

from __future__ import annotations

METHOD_SOURCE = '''\
    def prepare_inputs_for_generation(
        self,
        input_ids: torch.LongTensor,
        past_key_values: Optional[Union[Cache, Tuple]] = None,
        attention_mask: Optional[torch.LongTensor] = None,
        inputs_embeds: Optional[torch.FloatTensor] = None,
        cache_position: Optional[torch.LongTensor] = None,
        **kwargs,
    ):
        """
        Prepare the model inputs for generation: slice the inputs to the tokens the cache has not seen, build
        `position_ids` from the attention mask, feed `inputs_embeds` on the first step, build a 4D attention mask for
        a `StaticCache`, and forward every other keyword argument. Installed by transformers-codemod; models with
        different needs override it.
        """
        # 1. `position_ids` from the attention mask the caller gives, for models whose forward takes them (before the
        #    default mask below: no legacy decoder built positions from a mask it made itself).
        if (
            attention_mask is not None
            and kwargs.get("position_ids") is None
            and "position_ids" in set(inspect.signature(self.forward).parameters.keys())
        ):
            position_ids = attention_mask.long().cumsum(-1) - 1
            position_ids.masked_fill_(attention_mask == 0, 1)
            kwargs["position_ids"] = position_ids

        # Then a decoder asked without a mask (4.45's composites ask theirs so) gets one of ones over its ids, as the
        # legacy decoders made it: some forwards (Electra's) build their own default without counting the cache.
        if attention_mask is None and inputs_embeds is None and not self.config.is_encoder_decoder:
            attention_mask = input_ids.new_ones(input_ids.shape)

        # 2. Models with Cache classes take `cache_position`; for the others, derive it from the legacy cache when
        #    the caller gives none (generate always does). Where no `cache_position` can be trusted, the cache says
        #    what is new, as the legacy overrides counted it (the last token when the ids are no longer than the
        #    cache): a composite asking its decoder without one, or generate() told not to cache (its positions then
        #    span every token) for a model whose forward caches anyway, reading `config.use_cache`. Both are models
        #    with legacy tuple caches: the models with Cache classes heed `use_cache`.
        if (
            isinstance(past_key_values, tuple)
            and inputs_embeds is None
            and (cache_position is None or kwargs.get("use_cache") is False)
        ):
            past_length = min(past_key_values[0][0].shape[2], input_ids.shape[1] - 1)
            cache_position = torch.arange(past_length, input_ids.shape[1], dtype=torch.long, device=input_ids.device)
        model_inputs = {}
        if self._supports_cache_class:
            model_inputs["cache_position"] = cache_position
        elif cache_position is None:
            past_length = past_key_values[0][0].shape[2] if past_key_values is not None else 0
            cache_position = torch.arange(past_length, input_ids.shape[1], dtype=torch.long, device=input_ids.device)

        # 3. With a cache, keep only the tokens it has not seen.
        #    Exception 1: with `inputs_embeds`, `input_ids` may be missing entries.
        #    Exception 2: some generation methods slice `input_ids` themselves (the "else" is a no-op).
        #    A forward that takes a cache gets the key even without one: 4.45's composite models read
        #    `decoder_inputs["past_key_values"]` from their decoder's prepared inputs.
        if "past_key_values" in inspect.signature(self.forward).parameters:
            model_inputs["past_key_values"] = past_key_values
        if past_key_values is not None:
            model_inputs["past_key_values"] = past_key_values
            if inputs_embeds is not None:  # Exception 1
                input_ids = input_ids[:, -cache_position.shape[0] :]
            elif input_ids.shape[1] != cache_position.shape[0]:  # Default case
                input_ids = input_ids[:, cache_position]

        # 4. The ids (or, on the first step of a decoder-only model, the embeddings). `clone` keeps strides stable.
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

        # 5. Inputs that run along the sequence are cut like the ids.
        for model_input_name in ["position_ids", "token_type_ids"]:
            model_input = kwargs.get(model_input_name)
            if model_input is not None:
                if past_key_values:
                    model_input = model_input[:, -input_ids.shape[1] :]
                    model_input = model_input.clone(memory_format=torch.contiguous_format)
                model_inputs[model_input_name] = model_input

        # 6. A static cache wants a 4D mask of fixed shape (fewer recompilations). In 4.45 the helper is a function
        #    of the model's module; later releases make it a method of the base model. Look in both. Gemma 2's
        #    HybridCache (sliding-window and global layers) has a fixed size too; its models give flash attention
        #    the 2D mask.
        from ..cache_utils import StaticCache

        try:  # from 4.42
            from ..cache_utils import HybridCache
        except ImportError:
            HybridCache = StaticCache

        if (
            isinstance(past_key_values, StaticCache)
            or isinstance(past_key_values, HybridCache)
            and not self.config._attn_implementation == "flash_attention_2"
        ) and attention_mask.ndim == 2:
            if model_inputs["inputs_embeds"] is not None:
                batch_size, sequence_length, _ = model_inputs["inputs_embeds"].shape
                device = model_inputs["inputs_embeds"].device
            else:
                batch_size, sequence_length = model_inputs[input_ids_key].shape
                device = model_inputs[input_ids_key].device

            base_model = getattr(self, self.base_model_prefix, None)
            causal_mask_creation_function = getattr(
                base_model if base_model is not None else self,
                "_prepare_4d_causal_attention_mask_with_cache_position",
                None,
            ) or getattr(inspect.getmodule(type(self)), "_prepare_4d_causal_attention_mask_with_cache_position", None)
            if causal_mask_creation_function is not None:
                # a model's own variant may want more than these arguments (PaliGemma's): not ours to fill
                parameters = inspect.signature(causal_mask_creation_function).parameters.values()
                required = {p.name for p in parameters if p.default is inspect.Parameter.empty}
                if not required <= {
                    "attention_mask",
                    "sequence_length",
                    "target_length",
                    "dtype",
                    "device",
                    "min_dtype",
                    "cache_position",
                    "batch_size",
                }:
                    causal_mask_creation_function = None
            if causal_mask_creation_function is None:
                logger.warning_once(
                    f"{self.__class__.__name__} has no `_prepare_4d_causal_attention_mask_with_cache_position` "
                    "helper: the static cache gets the 2D attention mask."
                )
            else:
                dtype = (
                    self.get_output_embeddings().weight.dtype
                    if self.get_output_embeddings() is not None
                    else self.dtype
                )
                min_dtype = torch.finfo(dtype).min
                attention_mask = causal_mask_creation_function(
                    attention_mask,
                    sequence_length=sequence_length,
                    target_length=past_key_values.get_max_length(),
                    dtype=dtype,
                    device=device,
                    min_dtype=min_dtype,
                    cache_position=cache_position,
                    batch_size=batch_size,
                )
        if attention_mask is not None:
            model_inputs["attention_mask"] = attention_mask

        # 7. Forward every other keyword argument (e.g. `use_cache`, `encoder_outputs`, `pixel_values`).
        for key, value in kwargs.items():
            if key not in model_inputs:
                model_inputs[key] = value

        # 8. `labels` reach generate() through some trainers and examples; the model must not get them.
        model_inputs.pop("labels", None)
        return model_inputs
'''

#: the mixin's method for a model whose ``generate()`` refuses ``inputs_embeds``; a model class names it in place of an
#: override that only called ``super()`` to keep its signature (``codemod.transform.alias``)
REFUSING_EMBEDS = "_prepare_inputs_for_generation_refusing_embeds"

#: installed after the method: 4.45's generate() (and upstream's own tests) decide by ``inspect.signature`` whether
#: a model takes ``inputs_embeds``, so an override kept only for a signature without them stays, unless its class
#: names this method instead (one line in place of three); it is the generic method under that signature
REFUSING_EMBEDS_SOURCE = f'''\
    def {REFUSING_EMBEDS}(self, input_ids, **kwargs):
        """
        `prepare_inputs_for_generation` for a model whose `generate()` refuses `inputs_embeds`: `generate()` looks for
        them in the signature of this method, which does not name them. Installed by transformers-codemod: a model
        class sets `prepare_inputs_for_generation = GenerationMixin.{REFUSING_EMBEDS}`.
        """
        return GenerationMixin.prepare_inputs_for_generation(self, input_ids, **kwargs)
'''

#: what ``apply`` installs in place of the stub: the method, then the variant that refuses ``inputs_embeds``
HOIST_SOURCE = METHOD_SOURCE + "\n" + REFUSING_EMBEDS_SOURCE

MODULE_SOURCE = "class GenerationMixin:\n" + METHOD_SOURCE
