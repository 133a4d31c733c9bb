"""The idioms of 4.3x remote code that stop it running on a later release (``codemod.analyse.blockers``).

Each rule says the first release it blocks and what in that release's wheel shows it (read from the wheels'
``generation/utils.py``, ``cache_utils.py``, ``modeling_utils.py``, ``configuration_utils.py``, ``utils/__init__.py``
and ``models/bloom/modeling_bloom.py``), with an example and the near misses that are not the idiom. They read
syntax only (``ast``): a name is a cache by its name (``past_key_values``, ``layer_past`` …), so code that keeps a
cache under another name is not seen, and code that only looks like the idiom is listed with why it is not.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable, Iterator
from pathlib import Path

from codemod.analyse.blockers import BlockerRule, Example, Hit, NearMiss, TreeFacts
from codemod.analyse.buffers_rule import BUFFERS
from codemod.analyse.cache_api_rule import CACHE_API
from codemod.analyse.mask_rule import MASK, UNCACHED_DEFAULT
from codemod.analyse.rope_rule import ROPE

#: the names legacy code gives the cache, a layer's past, or the tuple a model loop builds
_PAST = re.compile(r"^(layer_)?past(_key_values?|_kv|_key_value_layer)?$")
_PRESENTS = re.compile(r"^(presents|present_key_values|next_decoder_cache|next_cache|new_past|next_past)$")

#: the token ids 4.57's ``PretrainedConfig`` set on every config; transformers' own model configs take them themselves
TOKEN_IDS = ("pad_token_id", "bos_token_id", "eos_token_id", "decoder_start_token_id")

#: generation settings 4.57's ``PretrainedConfig.__init__`` set on every config (``_get_global_generation_defaults``
#: and the token ids), which 5.0's no longer does
GENERATION_SETTINGS = frozenset(
    {
        "max_length",
        "min_length",
        "do_sample",
        "early_stopping",
        "num_beams",
        "num_beam_groups",
        "diversity_penalty",
        "temperature",
        "top_k",
        "top_p",
        "typical_p",
        "repetition_penalty",
        "length_penalty",
        "no_repeat_ngram_size",
        "encoder_no_repeat_ngram_size",
        "bad_words_ids",
        "num_return_sequences",
        "output_scores",
        "return_dict_in_generate",
        "forced_bos_token_id",
        "forced_eos_token_id",
        "remove_invalid_values",
        "exponential_decay_length_penalty",
        "suppress_tokens",
        "begin_suppress_tokens",
        *TOKEN_IDS,
    }
)

#: names a module no longer defines, read from the wheels: (module, name) -> the first release without it
REMOVED_NAMES = {
    ("transformers.utils", "is_torch_fx_available"): "5.0.0",
    ("transformers.utils.import_utils", "is_torch_fx_available"): "5.0.0",
    ("transformers.models.bloom.modeling_bloom", "_expand_mask"): "4.35.0",
    ("transformers.models.bloom.modeling_bloom", "_make_causal_mask"): "4.35.0",
}


def _line(node: ast.AST) -> int:
    return getattr(node, "lineno", 0)


def _code(node: ast.AST) -> str:
    return ast.unparse(node).split("\n", 1)[0]


def _base_name(node: ast.expr) -> str | None:
    """The name a chain of subscripts and attributes starts from (``past_key_values[0][0].shape`` -> past_key_values)."""
    while isinstance(node, (ast.Subscript, ast.Attribute)):
        node = node.value
    return node.id if isinstance(node, ast.Name) else None


def _is_cache_test(test: ast.expr) -> tuple[bool, bool] | None:
    """``isinstance(x, SomethingCache)`` -> (True: the if-branch has a Cache); ``not isinstance(...)`` -> False."""
    negated = isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)
    call = test.operand if isinstance(test, ast.UnaryOp) else test
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == "isinstance"):
        return None
    if len(call.args) != 2 or "Cache" not in ast.unparse(call.args[1]):
        return None
    return (not negated, negated)


def _walk_outside_legacy_branches(tree: ast.AST) -> Iterator[ast.AST]:
    """Every node, but those in the branch an ``isinstance(x, …Cache)`` test keeps for tuples (code that handles
    both forms already takes the Cache path on the target)."""
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, ast.If) and (branches := _is_cache_test(node.test)) is not None:
            has_cache_in_body, _ = branches
            stack.append(node.test)
            stack.extend(node.body if has_cache_in_body else node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))


def _cat_calls(tree: ast.AST) -> Iterator[ast.Call]:
    for node in _walk_outside_legacy_branches(tree):
        if isinstance(node, ast.Call) and _code(node.func) in ("torch.cat", "cat", "torch.concat"):
            yield node


def _cat_of_a_past(call: ast.Call) -> bool:
    first = call.args[0] if call.args else None
    return isinstance(first, (ast.List, ast.Tuple)) and any(
        isinstance(e, ast.Subscript) and _PAST.match(_base_name(e) or "") for e in first.elts
    )


# -------------------------------------------------------------------------------------------- the rules


def _legacy_index(tree: ast.Module, facts: TreeFacts) -> Iterator[Hit]:
    in_cat = {id(n) for call in _cat_calls(tree) if _cat_of_a_past(call) for n in ast.walk(call)}
    lines: set[int] = set()
    for node in _walk_outside_legacy_branches(tree):
        if not (isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name) and _PAST.match(node.value.id)):
            continue
        if isinstance(node.slice, ast.Slice) or id(node) in in_cat or _line(node) in lines:
            continue
        lines.add(_line(node))
        yield Hit(_line(node), _code(node))


def _legacy_concat(tree: ast.Module, facts: TreeFacts) -> Iterator[Hit]:
    for call in _cat_calls(tree):
        if _cat_of_a_past(call):
            yield Hit(_line(call), _code(call))


def _presents_tuple(tree: ast.Module, facts: TreeFacts) -> Iterator[Hit]:
    for node in ast.walk(tree):
        if isinstance(node, ast.AugAssign) and isinstance(node.op, ast.Add) and isinstance(node.target, ast.Name):
            name, value = node.target.id, node.value
        elif (
            isinstance(node, ast.Assign)
            and len(node.targets) == 1
            and isinstance(node.targets[0], ast.Name)
            and isinstance(node.value, ast.BinOp)
            and isinstance(node.value.op, ast.Add)
            and _code(node.value.left) == node.targets[0].id
        ):
            name, value = node.targets[0].id, node.value.right
        else:
            continue
        if _PRESENTS.match(name) and isinstance(value, ast.Tuple):
            yield Hit(_line(node), _code(node))


def _tuple_reorder(tree: ast.Module, facts: TreeFacts) -> Iterator[Hit]:
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef) and node.name == "_reorder_cache":
            body = ast.unparse(node)
            if "index_select" in body and ("tuple(" in body or "+= (" in body) and ".reorder_cache(" not in body:
                yield Hit(_line(node), f"def {node.name}({ast.unparse(node.args)}):")


def _get_head_mask(tree: ast.Module, facts: TreeFacts) -> Iterator[Hit]:
    if any(isinstance(n, ast.FunctionDef) and n.name == "get_head_mask" for n in ast.walk(tree)):
        return  # the file's own get_head_mask
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get_head_mask":
            yield Hit(_line(node), _code(node))


def _private_helpers(tree: ast.Module, facts: TreeFacts) -> Iterator[Hit]:
    own = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "_extract_past_from_model_output" and func.attr not in own:
            yield Hit(_line(node), _code(node), "4.49.0", "_extract_past_from_model_output is gone")
        if any(k.arg == "standardize_cache_format" for k in node.keywords):
            yield Hit(_line(node), _code(node), "4.44.0", "standardize_cache_format is no longer a parameter")


def _config_settings(tree: ast.Module, facts: TreeFacts) -> Iterator[Hit]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load)):
            continue
        owner = node.value
        is_config = (isinstance(owner, ast.Name) and owner.id == "config") or (
            isinstance(owner, ast.Attribute) and owner.attr == "config"
        )
        if not is_config or node.attr not in GENERATION_SETTINGS:
            continue
        # transformers' own model configs take the token ids: read on them (a tree without a config of its own)
        # the attribute is there on every release
        own = facts.config_attributes
        if (own is None and node.attr in TOKEN_IDS) or (own is not None and node.attr in own):
            continue
        if _line(node) not in lines:
            lines.add(_line(node))
            yield Hit(_line(node), _code(node), detail=f"config.{node.attr}")


def _removed_imports(tree: ast.Module, facts: TreeFacts) -> Iterator[Hit]:
    for node in ast.walk(tree):
        if not (isinstance(node, ast.ImportFrom) and node.level == 0 and node.module):
            continue
        if not node.module.startswith("transformers."):
            continue
        defined = facts.module_names(node.module)
        for alias in node.names:
            known = REMOVED_NAMES.get((node.module, alias.name))
            if known is not None:
                yield Hit(_line(node), f"from {node.module} import {alias.name}", known, alias.name)
            elif defined is not None and alias.name != "*" and alias.name not in defined:
                yield Hit(_line(node), f"from {node.module} import {alias.name}", facts.release, alias.name)


# ------------------------------------------------------------------------------------------- tree facts


def config_attributes(trees: Iterable[ast.Module | None]) -> frozenset[str] | None:
    """Attributes the tree's config classes set (``self.x = …``), take (``__init__`` parameters) or hand their base
    (``super().__init__(x=…)``): read on the target, they exist whatever its ``PretrainedConfig`` sets. None when
    the tree defines no config class."""
    found: set[str] = set()
    configs = 0
    for tree in trees:
        if tree is None:
            continue
        for cls in ast.walk(tree):
            if not (isinstance(cls, ast.ClassDef) and (cls.name.endswith("Config") or _config_base(cls))):
                continue
            configs += 1
            for node in ast.walk(cls):
                if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and _code(node.value) == "self":
                    found.add(node.attr)
                elif isinstance(node, ast.FunctionDef) and node.name == "__init__":
                    found.update(a.arg for a in (*node.args.args, *node.args.kwonlyargs))
                elif isinstance(node, ast.Call) and _code(node.func).endswith("__init__"):
                    found.update(k.arg for k in node.keywords if k.arg)
    return frozenset(found) if configs else None


def _config_base(cls: ast.ClassDef) -> bool:
    return any(_code(b).rsplit(".", 1)[-1] in ("PretrainedConfig", "PreTrainedConfig") for b in cls.bases)


def module_names(package_dir: Path, module: str) -> frozenset[str] | None:
    """The names ``module`` (``transformers.x.y``) defines at its top level in the target package, or None when they
    cannot be read without importing it (a lazy module, ``__getattr__``, ``import *``)."""
    parts = module.split(".")[1:]
    base = package_dir.joinpath(*parts)
    path = base.with_suffix(".py") if base.with_suffix(".py").is_file() else base / "__init__.py"
    if not path.is_file():
        return frozenset() if not base.is_dir() else None
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
        return None
    text = ast.unparse(tree)
    if "_LazyModule" in text or "def __getattr__" in text:
        return None
    names: set[str] = set()
    for node in _top_level(tree.body):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            if any(a.name == "*" for a in node.names):
                return None
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
    return frozenset(names)


def _top_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Statements at module level, and those inside its ``if`` / ``try`` blocks."""
    for node in body:
        yield node
        if isinstance(node, ast.If):
            yield from _top_level(node.body + node.orelse)
        elif isinstance(node, ast.Try):
            yield from _top_level(
                node.body + node.orelse + node.finalbody + [s for h in node.handlers for s in h.body]
            )


GET_SEQ = "`past_key_values.get_seq_length()` for the past length, `past_key_values.update(key, value, layer_idx)`"
EMPTY_CACHE = (
    "generation/utils.py makes a DynamicCache before the first step for every model (_supports_default_dynamic_cache "
    "no longer asks _supports_cache_class, as 4.53.3's did), and an empty one has no layers to index "
    "(cache_utils.py: 'Cache only has 0 layers'); 5.0.0's Cache has no __getitem__ ('DynamicCache' object is not "
    "subscriptable)"
)

RULES: tuple[BlockerRule, ...] = (
    BlockerRule(
        "TB001",
        "legacy-cache-index",
        "indexes the cache as a tuple of layer pasts",
        "4.54.0",
        EMPTY_CACHE,
        GET_SEQ,
        _legacy_index,
        (
            Example("past-length", "past_length = past_key_values[0][0].shape[2]\n"),
            Example(
                "loop",
                "for i, block in enumerate(self.h):\n    hidden = block(hidden, layer_past=past_key_values[i])\n",
            ),
        ),
        (
            NearMiss("cache-api", "past_length = past_key_values.get_seq_length()\n", "the Cache API, not an index"),
            NearMiss(
                "cache-branch",
                "if isinstance(past_key_values, Cache):\n    n = past_key_values.get_seq_length()\n"
                "else:\n    n = past_key_values[0][0].shape[2]\n",
                "the tuple branch of an isinstance(…, Cache) test: the target takes the other",
            ),
            NearMiss("outputs", "present = outputs[1]\n", "not a cache by its name"),
        ),
    ),
    BlockerRule(
        "TB002",
        "legacy-cache-concat",
        "concatenates a layer's past keys or values itself",
        "4.54.0",
        EMPTY_CACHE,
        "`key_states, value_states = past_key_value.update(key_states, value_states, self.layer_idx)`",
        _legacy_concat,
        (
            Example(
                "attention",
                "if layer_past is not None:\n    key = torch.cat([layer_past[0], key], dim=-2)\n"
                "    value = torch.cat((layer_past[1], value), dim=-2)\n",
                hits=2,
            ),
        ),
        (
            NearMiss(
                "ids", "input_ids = torch.cat([input_ids, next_tokens[:, None]], dim=-1)\n", "no layer past: the ids"
            ),
            NearMiss(
                "update",
                "key, value = past_key_value.update(key, value, self.layer_idx)\n",
                "the Cache API the target offers",
            ),
        ),
    ),
    BlockerRule(
        "TB003",
        "presents-tuple",
        "builds the layers' pasts into a tuple of its own in the model loop",
        "4.54.0",
        "generation/utils.py hands every model the DynamicCache it made before the first step (4.53.3 made it only "
        "for models that set _supports_cache_class), to be filled in place: a loop that builds a new tuple reads "
        "each layer's past from that Cache as a tuple",
        "let each layer call `past_key_values.update(...)` and return `past_key_values`",
        _presents_tuple,
        (
            Example("aug", "presents = () if use_cache else None\nfor block in self.h:\n    presents += (present,)\n"),
            Example("plus", "next_decoder_cache = next_decoder_cache + (layer_outputs[1],)\n"),
        ),
        (
            NearMiss("hidden-states", "all_hidden_states += (hidden_states,)\n", "the outputs kept, not the cache"),
            NearMiss(
                "cache-object",
                "next_decoder_cache = layer_outputs[1]\n",
                "the Cache object passed along, as 4.4x code does",
            ),
        ),
    ),
    BlockerRule(
        "TB004",
        "tuple-reorder-cache",
        "defines _reorder_cache on a tuple of layer pasts",
        "4.54.0",
        "beam search calls a class's own _reorder_cache with the cache generate() made (generation/utils.py: "
        '`if hasattr(self, "_reorder_cache")`), a DynamicCache from 4.54.0: the tuple it rebuilds replaces the '
        "Cache; 5.0.0's DynamicCache yields three items a layer, the third None",
        "delete it: without `_reorder_cache` the mixin calls `past_key_values.reorder_cache(beam_idx)` itself",
        _tuple_reorder,
        (
            Example(
                "static",
                "class M(PreTrainedModel):\n    @staticmethod\n    def _reorder_cache(past, beam_idx):\n"
                "        return tuple(\n"
                "            tuple(p.index_select(0, beam_idx.to(p.device)) for p in layer_past) for layer_past in past\n"
                "        )\n",
            ),
        ),
        (
            NearMiss(
                "cache-api",
                "class M(PreTrainedModel):\n    def _reorder_cache(self, past_key_values, beam_idx):\n"
                "        past_key_values.reorder_cache(beam_idx)\n        return past_key_values\n",
                "reorders the Cache through its own method",
            ),
        ),
    ),
    BlockerRule(
        "TB005",
        "get-head-mask",
        "calls get_head_mask, which the model no longer has",
        "5.0.0",
        "modeling_utils.py no longer defines ModuleUtilsMixin.get_head_mask (4.57.1's does): "
        "'XModel' object has no attribute 'get_head_mask'",
        "drop the head mask, or define `get_head_mask` in the model itself",
        _get_head_mask,
        (Example("call", "head_mask = self.get_head_mask(head_mask, self.config.n_layer)\n"),),
        (
            NearMiss(
                "own",
                "class M(PreTrainedModel):\n    def get_head_mask(self, head_mask, n):\n        return [None] * n\n"
                "    def forward(self, head_mask=None):\n        head_mask = self.get_head_mask(head_mask, 2)\n",
                "the file defines get_head_mask itself",
            ),
            NearMiss("parameter", "outputs = block(hidden, head_mask=head_mask[i])\n", "a head mask passed on"),
        ),
    ),
    BlockerRule(
        "TB006",
        "private-generation-helper",
        "calls a private generation helper whose signature changed",
        "4.44.0",
        "generation/utils.py: _extract_past_from_model_output and _update_model_kwargs_for_generation lost "
        "standardize_cache_format in 4.44.0 (4.43.4 has it); _extract_past_from_model_output is gone in 4.49.0 "
        "(4.48.3 has it)",
        "read `outputs.past_key_values` and call `super()._update_model_kwargs_for_generation(outputs, model_kwargs, "
        "is_encoder_decoder=…, num_new_tokens=…)`",
        _private_helpers,
        (
            Example(
                "update",
                "def _update_model_kwargs_for_generation(self, outputs, model_kwargs, is_encoder_decoder=False,\n"
                "                                        standardize_cache_format=False):\n"
                "    model_kwargs['past_key_values'] = self._extract_past_from_model_output(\n"
                "        outputs, standardize_cache_format=standardize_cache_format\n    )\n",
                hits=2,
            ),
        ),
        (
            NearMiss(
                "parameter-only",
                "def _update_model_kwargs_for_generation(self, outputs, model_kwargs, standardize_cache_format=False):\n"
                "    model_kwargs['past_key_values'] = outputs.past_key_values\n",
                "a parameter of its own, handed to no helper",
            ),
        ),
    ),
    BlockerRule(
        "TB007",
        "config-generation-setting",
        "reads a generation setting from the model config, which no longer carries it",
        "5.0.0",
        "configuration_utils.py: 4.57.1's PretrainedConfig.__init__ sets the generation defaults "
        "(_get_global_generation_defaults: max_length=20, …) and the token ids on every config; 5.0.0's sets none",
        "read it from `self.generation_config`, or set it in the model's own config class",
        _config_settings,
        (
            Example("max-length", "max_length = self.config.max_length\n"),
            Example(
                "pad-own-config",
                "class ToyConfig(PretrainedConfig):\n    def __init__(self, hidden_size=8, **kwargs):\n"
                "        super().__init__(**kwargs)\n"
                "pad = config.pad_token_id\n",
            ),
        ),
        (
            NearMiss("generation-config", "max_length = self.generation_config.max_length\n", "the generation config"),
            NearMiss(
                "own-config",
                "class ToyConfig(PretrainedConfig):\n    def __init__(self, pad_token_id=0, **kwargs):\n"
                "        super().__init__(pad_token_id=pad_token_id, **kwargs)\n"
                "padding_idx = config.pad_token_id\n",
                "the tree's own config takes it: 5.0.0 keeps the keyword as an attribute",
            ),
            NearMiss("model-setting", "n = self.config.hidden_size\n", "not a generation setting"),
            NearMiss(
                "library",
                "pad = self.config.pad_token_id\n",
                "no config class of its own: transformers' model configs take the token ids",
            ),
        ),
    ),
    BlockerRule(
        "TB008",
        "removed-import",
        "imports a name the target's transformers no longer defines",
        "4.35.0",
        "the target's module does not define the name (read from its wheel); known: models/bloom/modeling_bloom.py "
        "lost _expand_mask and _make_causal_mask in 4.35.0 (4.34.1 has them), utils/__init__.py lost "
        "is_torch_fx_available in 5.0.0 (4.57.1 has it)",
        "the target's own helpers (`transformers.modeling_attn_mask_utils` for masks), or a copy in the tree",
        _removed_imports,
        (
            Example(
                "bloom", "from transformers.models.bloom.modeling_bloom import _expand_mask, _make_causal_mask\n", 2
            ),
            Example("fx", "from transformers.utils import is_torch_fx_available, logging\n"),
        ),
        (
            NearMiss("kept", "from transformers.utils import logging\n", "a name every release defines"),
            NearMiss("relative", "from .configuration_toy import ToyConfig\n", "the tree's own module"),
        ),
    ),
    CACHE_API,
    BUFFERS,
    ROPE,
    MASK,
    UNCACHED_DEFAULT,
)
