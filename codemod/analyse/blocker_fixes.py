"""What the fixes of ``codemod.transform.idioms`` do, by blocker rule: data the analysis layer shows
(``codemod explain``) without importing the transformation."""

from __future__ import annotations

#: what each migrated blocker rule's fix does (``codemod explain TBxxx``); the rules not here are reported only
FIXES = {
    "TB001": "`past_key_values[0][0].shape[2]` reads `past_key_values.get_seq_length()` after a `DynamicCache` is "
    "made from what was given (`from_legacy_cache` where the target has it); a layer gets the cache itself, and "
    "`past_key_value[0].shape[-2]` reads `past_key_value.get_seq_length(self.layer_idx)`",
    "TB002": "`torch.cat([past_key_value[0], key], dim=2)` and its value twin become `key, value = "
    "past_key_value.update(key, value, self.layer_idx)`, a `layer_idx` threaded through the decoder layer and its "
    "`nn.ModuleList` comprehension where the attention has none",
    "TB003": "`next_decoder_cache += (layer_outputs[1],)` keeps the cache the layer updated: "
    "`next_decoder_cache = layer_outputs[1]`",
    "TB004": "deleted where the file's caches are `Cache` objects (migrated, or never tuples)",
    "TB005": "`self.get_head_mask(head_mask, n)` calls `_get_head_mask(head_mask, n, self.dtype)`, a copy of 4.x's "
    "written in the module",
    "TB006": "`self._extract_past_from_model_output(outputs, standardize_cache_format=...)` reads "
    "`outputs.past_key_values` (what 4.43's returned without `_convert_to_standard_cache`); `standardize_cache_format=` "
    "handed to another call is dropped",
    "TB007": "the tree's config class gets 4.x's default as a class attribute for each generation setting the tree "
    "reads from its config and does not set (`pad_token_id = None`, `max_length = 20`); `config.json` still sets "
    "the instance's own value",
    "TB008": "`is_torch_fx_available` is defined in the module (it returned True on every torch 5.x supports); "
    "Llama's, OPT's and BART's `_expand_mask`/`_make_causal_mask` are bound to `AttentionMaskConverter`'s, and "
    "Bloom's are written in the module; other removed names are reported only",
    "TB010": 'the module keeps the arguments it was built with (`self.__dict__.setdefault("_init_kwargs", '
    "{...})` first in its `__init__`), and the model's `_init_weights` copies in the buffers a fresh module built "
    "from them computes; a module that builds parameters is reported only",
    "TB011": "each read of a config's `rope_scaling` outside the tree's config classes goes through "
    '`_rope_scaling(config)`, written in the module: None without scaling, else the dict with its `"type"`, '
    "as 4.x gave it",
    "TB012": "`assert attention_mask is not None` is deleted where the next statement is `if attention_mask is not "
    "None:` (a None mask is what generate() passes for no padding); elsewhere it is reported",
    "TB013": "the default mask's length gets the cached tokens added (`n + _cached_length(past_key_values)`, a "
    "function written in the module): the all-ones mask 5.17's generate() passed",
    "TB009": "`cache.get_usable_length(n, layer_idx)` and `cache.seen_tokens` read `cache.get_seq_length(...)`; on "
    "5.x `DynamicCache.from_legacy_cache(x)` is `DynamicCache(x)` and `c.to_legacy_cache() if use_legacy_cache else "
    "c` returns `c`",
}
