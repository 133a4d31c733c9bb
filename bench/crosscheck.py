"""An independent generate() check: do two trees of transformers generate the same tokens?

    .venv/bin/python bench/crosscheck.py BASE NEW                  # two trees with src/transformers
    .venv/bin/python bench/crosscheck.py --repo PATH [--rev HEAD]  # a git repo's REV against its working tree
        [--tests CLONE]     # build tiny configs from CLONE/tests/models/<m>/test_modeling_*.py model testers
        [--only roberta,bert] [--classes RobertaForCausalLM,...] [--jobs 2] [--json out.json] [--python ENV_PY]

It is the oracle the verifier (``codemod verify``) is measured against, so it shares no code with
it: it does not import ``codemod.verify``; its tiny models, inputs and cases are its own.

1. **Which classes.** Every model class of ``src/transformers/models/**/modeling_*.py`` whose
   ``prepare_inputs_for_generation`` differs between the trees: its own, or what it inherits through
   bases in the tree (same file or a relative import) down to ``GenerationMixin``'s (so a change of
   the mixin reaches every class that falls back to it). Plus the composites that call a changed
   decoder's method: ``EncoderDecoderModel`` with each changed decoder head whose ``forward`` takes
   ``encoder_hidden_states`` (``Vision``/``SpeechEncoderDecoderModel`` run the same code).
2. **Tiny models as used.** From the checkout's model tester (``--tests``), else the config class's
   defaults shrunk (2 layers, hidden 32, 4 heads, intermediate 37, vocabulary >= 99 and large enough
   for the special ids, small MoE); then: a decoder head of an encoder family (``*ForCausalLM``,
   ``*LMHeadModel``, ``*Decoder``...; not an encoder-decoder) gets ``is_decoder=True``, and the config
   ``use_cache=True``. Built once on the base tree (seed 0; the assistant seed 1), saved, and loaded on
   both sides, so the weights are the same.
3. **Cases, as users run generate().** Greedy on a left-padded batch of 2 and on a batch of 1, with
   and without an explicit attention mask; ``generate(use_cache=False)``; a config with
   ``use_cache=False`` generating with the default and with ``use_cache=True``; sampling (seed 0);
   beam search (2 beams); assisted decoding (the same class with other weights as assistant); contrastive
   search (also with ``low_memory``), prompt lookup, group beam search, two sampled sequences a prompt,
   the extra outputs (scores, attentions, hidden states) and, for decoder-only models, DoLa;
   ``token_type_ids`` where ``forward`` takes them (greedy and assisted); ``inputs_embeds`` instead of
   ids for decoder-only models; a static cache where ``_supports_static_cache``; a decoder prompt for
   encoder-decoders; ``is_decoder=False`` where the class reads the flag; for decoder-only models, the
   caller's position ids for the padded batch (from the first real token) and a cache the caller
   filled with the prompt's first 3 tokens (the model's own forward's, as a conversation goes on).
   Always 10 new tokens (``min_new_tokens == max_new_tokens``).
4. **Compare.** Per case: ``same`` (same tokens), ``differs``, ``crashed-new`` (only the new side
   raised), ``crashed-both-alike``, ``crashed-both-differently``, ``extended`` (only the old side raised;
   for ``inputs_embeds`` the new tokens must then equal those generated from the ids, for prompt
   lookup greedy's, else ``extended-inconsistent``), ``skipped`` (does not apply, decided once on the base side). A class
   ``differs`` when one of its cases is ``differs``, ``crashed-new`` or ``extended-inconsistent`` (what a
   user sees); ``crashed-differently`` when its only difference is a case that fails on both sides
   with other errors. Exit status 1 when a class differs or crashed differently, 0 otherwise.

The models run in a separate interpreter with the tree's ``src`` on ``PYTHONPATH`` (``--python``:
the verification environment, default the one ``codemod.environment`` makes for the base tree); this
file is also that worker (``--worker``), which imports only the stdlib, torch and transformers.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import dataclasses
import inspect
import json
import os
import queue
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

METHOD = "prepare_inputs_for_generation"
MIXIN_FILE = "src/transformers/generation/utils.py"
NEW_TOKENS = 10
PROMPT = 7
#: decoder heads of encoder families: run as decoders (``is_decoder=True``), as their users do
DECODER_HEAD = re.compile(r"(ForCausalLM|LMHeadModel|GenerationDecoder|Decoder|ForCausalImageModeling)$")
#: composites that call ``self.decoder.prepare_inputs_for_generation``
COMPOSITES = ("EncoderDecoderModel", "VisionEncoderDecoderModel", "SpeechEncoderDecoderModel")
#: composite -> (its file, its target kind, whether it runs around every changed decoder head)
COMPOSITE_FILES = {
    "EncoderDecoderModel": (
        "src/transformers/models/encoder_decoder/modeling_encoder_decoder.py",
        "encoder-decoder",
        True,
    ),
    "VisionEncoderDecoderModel": (
        "src/transformers/models/vision_encoder_decoder/modeling_vision_encoder_decoder.py",
        "vision-encoder-decoder",
        False,
    ),
    "SpeechEncoderDecoderModel": (
        "src/transformers/models/speech_encoder_decoder/modeling_speech_encoder_decoder.py",
        "speech-encoder-decoder",
        False,
    ),
}
#: the decoders the vision and speech composites are run with when they changed (their usual ones)
COMMON_DECODERS = ("BertLMHeadModel", "GPT2LMHeadModel", "TrOCRForCausalLM", "RobertaForCausalLM")
#: a composite whose own method changed runs with these at least
DEFAULT_DECODERS = (
    ("transformers.models.bert.modeling_bert", "BertLMHeadModel"),
    ("transformers.models.gpt2.modeling_gpt2", "GPT2LMHeadModel"),
)
DIFFERENT = ("differs", "crashed-new", "crashed-both-differently", "extended-inconsistent")
#: what a user sees: other tokens, a crash the old code did not have, a new capability that is wrong
REAL = ("differs", "crashed-new", "extended-inconsistent")


# ============================================================================================ discovery
# (the parent process: ast only, no torch)


@dataclasses.dataclass
class ClassInfo:
    name: str
    bases: list[str]
    method: str | None  # ast.dump of its own prepare_inputs_for_generation
    calls_super: bool


@dataclasses.dataclass
class FileInfo:
    path: str  # relative to the tree root
    module: str  # dotted
    classes: dict[str, ClassInfo]
    imports: dict[str, tuple[str, str]]  # local name -> (dotted module, name)


@dataclasses.dataclass(frozen=True)
class Target:
    """One thing to generate with: a model class, or a composite around a decoder class."""

    id: str
    module: str
    cls: str
    model: str
    kind: str = "model"  # "model" | "encoder-decoder" | "vision-encoder-decoder" | "speech-encoder-decoder"
    decoder_module: str = ""
    decoder_cls: str = ""

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)


def _module_of(rel: str) -> str:
    return rel[len("src/") : -len(".py")].replace("/", ".")


def _base_name(node: ast.expr) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Subscript):
        return _base_name(node.value)
    return ast.unparse(node)


def _calls_super(function: ast.AST) -> bool:
    for node in ast.walk(function):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr == METHOD
            and isinstance(node.func.value, ast.Call)
            and isinstance(node.func.value.func, ast.Name)
            and node.func.value.func.id == "super"
        ):
            return True
    return False


def _dump(function: ast.AST) -> str:
    function = ast.parse(ast.unparse(function)).body[0]  # positions and docstring-only changes aside
    if (
        function.body
        and isinstance(function.body[0], ast.Expr)
        and isinstance(function.body[0].value, ast.Constant)
        and isinstance(function.body[0].value.value, str)
        and len(function.body) > 1
    ):
        function.body = function.body[1:]
    return ast.dump(function)


def parse_file(root: Path, rel: str) -> FileInfo | None:
    try:
        tree = ast.parse((root / rel).read_text(encoding="utf-8"))
    except (SyntaxError, UnicodeDecodeError, OSError):
        return None
    module = _module_of(rel)
    package = module.rsplit(".", 1)[0]
    info = FileInfo(rel, module, {}, {})
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            if node.level:
                parts = package.split(".")
                parts = parts[: len(parts) - (node.level - 1)] if node.level > 1 else parts
                source = ".".join(parts + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for alias in node.names:
                info.imports[alias.asname or alias.name] = (source, alias.name)
        elif isinstance(node, ast.ClassDef):
            method = next(
                (
                    item
                    for item in node.body
                    if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef)) and item.name == METHOD
                ),
                None,
            )
            info.classes[node.name] = ClassInfo(
                node.name,
                [_base_name(b) for b in node.bases],
                _dump(method) if method is not None else None,
                _calls_super(method) if method is not None else False,
            )
    return info


def model_files(root: Path) -> list[str]:
    base = root / "src" / "transformers" / "models"
    out = []
    for path in sorted(base.rglob("modeling_*.py")):
        if path.name.startswith(("modeling_tf_", "modeling_flax_")):
            continue
        out.append(path.relative_to(root).as_posix())
    return out


def mixin_method(root: Path) -> str:
    info = parse_file(root, MIXIN_FILE)
    mixin = info.classes.get("GenerationMixin") if info else None
    return (mixin.method or "") if mixin else ""


class Tree:
    """The classes of one tree, and what each one's ``prepare_inputs_for_generation`` resolves to."""

    def __init__(self, root: Path):
        self.root = root
        self.files: dict[str, FileInfo] = {}
        for rel in model_files(root):
            parsed = parse_file(root, rel)
            if parsed is not None:
                self.files[rel] = parsed
        self.by_module = {f.module: f for f in self.files.values()}
        self.mixin = mixin_method(root)

    def _resolve(self, file: FileInfo, name: str) -> tuple[FileInfo, str] | None:
        if name in file.classes:
            return file, name
        imported = file.imports.get(name)
        if imported is not None:
            other = self.by_module.get(imported[0])
            if other is not None and imported[1] in other.classes:
                return other, imported[1]
        return None

    def chain(self, rel: str, name: str) -> tuple[list[str], bool]:
        """(what the method resolves to, whether GenerationMixin is named among the ancestors).
        Each entry is ``file::class`` plus the method's dump; a chain that ends on a ``super()`` call
        or on no model method at all ends with the mixin's method."""
        out: list[str] = []
        named_mixin = False
        seen: set[tuple[str, str]] = set()

        def walk(file: FileInfo, cls: str) -> bool:
            nonlocal named_mixin
            if (file.path, cls) in seen:
                return False
            seen.add((file.path, cls))
            info = file.classes[cls]
            if "GenerationMixin" in info.bases:
                named_mixin = True
            if info.method is not None:
                out.append(f"{file.path}::{cls}::{info.method}")
                if not info.calls_super:
                    return True
            for base in info.bases:
                found = self._resolve(file, base)
                if found is not None and walk(*found):
                    return True
            return False

        if not walk(self.files[rel], name):
            out.append(f"GenerationMixin::{self.mixin}")
        return out, named_mixin

    def classes(self) -> Iterator[tuple[str, str]]:
        for rel, info in self.files.items():
            for name in info.classes:
                yield rel, name


def _model_name(rel: str) -> str:
    parts = rel.split("/")
    return parts[-2]


def changed_targets(base: Tree, new: Tree, *, composites: bool = True) -> list[Target]:
    """The classes whose method (own or inherited) differs between the trees, and the composites
    around the changed decoder heads."""
    targets: list[Target] = []
    for rel, name in base.classes():
        if rel not in new.files or name not in new.files[rel].classes:
            continue
        old_chain, old_named = base.chain(rel, name)
        new_chain, new_named = new.chain(rel, name)
        if old_chain == new_chain:
            continue
        has_method = any(not c.startswith("GenerationMixin::") for c in old_chain + new_chain)
        if not has_method and not (old_named or new_named):
            continue  # falls back to the mixin on both sides and is no GenerationMixin: not a generative class
        if name in COMPOSITES:
            continue  # run around a decoder below
        targets.append(Target(f"{rel}::{name}", _module_of(rel), name, _model_name(rel)))
    if not composites:
        return targets
    decoders = [t for t in targets if DECODER_HEAD.search(t.cls)]
    for composite, (rel, kind, with_every_decoder) in COMPOSITE_FILES.items():
        if rel not in base.files or rel not in new.files:
            continue
        chosen = decoders if with_every_decoder else [t for t in decoders if t.cls in COMMON_DECODERS]
        if base.chain(rel, composite)[0] != new.chain(rel, composite)[0]:  # the composite's own method changed
            chosen = chosen + [
                Target(f"{m}::{c}", m, c, m.split(".")[2])
                for m, c in DEFAULT_DECODERS
                if not any(t.cls == c for t in chosen)
            ]
        for t in chosen:
            targets.append(
                Target(
                    f"{rel}::{composite}[{t.cls}]",
                    _module_of(rel),
                    composite,
                    rel.split("/")[-2],
                    kind,
                    t.module,
                    t.cls,
                )
            )
    return targets


def select(
    targets: list[Target], only: Iterable[str] = (), classes: Iterable[str] = (), skip: Iterable[str] = ()
) -> list[Target]:
    only, classes, skip = set(only), set(classes), set(skip)

    def keep(t: Target) -> bool:
        decoder_model = t.decoder_module.split(".")[2] if t.decoder_module else ""
        names = {t.cls, t.decoder_cls, f"{t.cls}[{t.decoder_cls}]"}
        models = {t.model, decoder_model}
        if skip & (names | models):
            return False
        if only and not only & models and not (t.kind != "model" and t.model in only):
            return False
        if classes and not classes & names:
            return False
        return True

    return [t for t in targets if keep(t)]


# ============================================================================================ worker
# (runs in the verification environment with one tree's src on PYTHONPATH: stdlib, torch, transformers)

LAYER_KEYS = (
    "num_hidden_layers",
    "num_layers",
    "n_layer",
    "n_layers",
    "encoder_layers",
    "decoder_layers",
    "num_decoder_layers",
    "num_encoder_layers",
    "decoder_num_layers",
)
HIDDEN_KEYS = ("hidden_size", "d_model", "n_embd", "dim", "word_embed_proj_dim", "embedding_size", "embed_dim")
HEAD_KEYS = (
    "num_attention_heads",
    "n_head",
    "num_heads",
    "n_heads",
    "encoder_attention_heads",
    "decoder_attention_heads",
    "decoder_num_attention_heads",
)
FFN_KEYS = (
    "intermediate_size",
    "ffn_dim",
    "encoder_ffn_dim",
    "decoder_ffn_dim",
    "d_ff",
    "n_inner",
    "moe_intermediate_size",
    "shared_expert_intermediate_size",
    "decoder_ffn_dim",
    "ffn_hidden_size",
)
SMALL = {
    "num_key_value_heads": 2,
    "num_experts": 4,
    "num_local_experts": 4,
    "num_experts_per_tok": 2,
    "moe_num_experts": 4,
    "head_dim": 8,
    "d_kv": 8,
    "kv_channels": 8,
    "rotary_dim": 4,
    "max_position_embeddings": 128,
    "n_positions": 128,
    "max_target_positions": 128,
    "max_source_positions": 128,
    "n_ctx": 128,
}
#: CUDA-only kernels off: the CPU path is what runs here
KERNEL_FLAGS = {"use_mamba_kernels": False}
SUBCONFIG_KEYS = (
    "text_config",
    "vision_config",
    "audio_config",
    "decoder_config",
    "encoder_config",
    "speech_config",
    "qformer_config",
    "t2u_config",
    "text_encoder",
    "audio_encoder",
    "decoder",
)
#: both SeamlessM4T versions' speech encoder, text-to-unit model and vocoder, shrunk
SEAMLESS_SPEECH = {
    "speech_encoder_layers": 2,
    "speech_encoder_attention_heads": 4,
    "speech_encoder_intermediate_size": 37,
    "t2u_encoder_layers": 2,
    "t2u_decoder_layers": 2,
    "t2u_encoder_attention_heads": 4,
    "t2u_decoder_attention_heads": 4,
    "t2u_encoder_ffn_dim": 37,
    "t2u_decoder_ffn_dim": 37,
    "unit_embed_dim": 32,
    "upsample_initial_channel": 32,
    "unit_hifi_gan_vocab_size": 99,
    "t2u_vocab_size": 99,
    "vocoder_num_spkrs": 2,
    "vocoder_num_langs": 2,
    "t2u_max_position_embeddings": 128,
}
#: the few model types whose config derives something from the sizes in __init__
FIXUPS = {
    "gpt_neo": lambda d: d.update(attention_types=[[["global", "local"], 1]]),
    "jamba": lambda d: d.update(
        attn_layer_period=2, attn_layer_offset=1, expert_layer_period=2, expert_layer_offset=1
    ),
    "dbrx": lambda d: d.update(
        ffn_config={"ffn_hidden_size": 37, "moe_num_experts": 4, "moe_top_k": 2}, attn_config={"kv_n_heads": 2}
    ),
    "mllama_text_model": lambda d: d.update(cross_attention_layers=[1], rope_scaling={"rope_type": "default"}),
    "xmod": lambda d: d.update(languages=["en_XX"], default_language="en_XX"),
    # 5.x validates its state-space configs: the heads times their size make the expanded width (hidden 32 x 2)
    "mamba2": lambda d: d.update(num_heads=4, head_dim=16, n_groups=1),
    "bamba": lambda d: d.update(
        mamba_n_heads=4,
        mamba_d_head=16,
        mamba_n_groups=1,
        mamba_d_state=16,
        mamba_chunk_size=16,
        attn_layer_indices=[1],
    ),
    # ... and one layer type per layer (legacy names, which 5.x remaps)
    "zamba": lambda d: d.update(num_hidden_layers=3, layers_block_type=["mamba", "hybrid", "hybrid"]),
    "zamba2": lambda d: d.update(layers_block_type=["mamba", "hybrid"]),
    # Musicgen's audio codec decodes the decoder's tokens: one codebook entry per token, as in its checkpoints
    "musicgen": lambda d: d["audio_encoder"].update(codebook_size=d["decoder"].get("vocab_size", 2048)),
    "musicgen_melody": lambda d: d["audio_encoder"].update(codebook_size=d["decoder"].get("vocab_size", 2048)),
    "nemotron_h": lambda d: d.update(
        mamba_num_heads=4,
        mamba_head_dim=16,
        n_groups=1,
        ssm_state_size=16,
        chunk_size=16,
        layers_block_type=["linear_attention", "full_attention"],
    ),
    # a multi-axis RoPE's sections cover the shrunk heads' rotary half (8 / 2)
    "glm_image_text": lambda d: d.update(
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [2, 1, 1]}
    ),
    # a hybrid text model keeps one attention layer (a cache of linear-attention layers alone has no length)
    "qwen3_5_text": lambda d: d.update(
        layer_types=["linear_attention", "full_attention"],
        linear_key_head_dim=16,
        linear_value_head_dim=16,
        linear_num_key_heads=2,
        linear_num_value_heads=4,
    ),
    # Gemma 4's per-layer input embeddings have a vocabulary of their own (262,144 x 256 per layer otherwise)
    "gemma4_text": lambda d: d.update(vocab_size_per_layer_input=99, hidden_size_per_layer_input=8),
    # the vision layers the adapter reads exist in the shrunk vision tower
    "molmo2": lambda d: d.update(adapter_config={"vision_feature_layer": [-1, -2]}),
    "bigbird_pegasus": lambda d: d.update(attention_type="original_full"),
    "big_bird": lambda d: d.update(attention_type="original_full"),
    "reformer": lambda d: d.update(
        attn_layers=["local", "lsh"], axial_pos_shape=[4, 32], axial_pos_embds_dim=[16, 16]
    ),
    "jetmoe": lambda d: d.update(kv_channels=8, num_local_experts=4, num_experts_per_tok=2),
    "chameleon": lambda d: d.update(
        vocabulary_map={"<image>": 5},
        vq_config={
            "embed_dim": 8,
            "num_embeddings": 8,
            "base_channels": 32,
            "channel_multiplier": [1, 1],
            "num_res_blocks": 1,
            "latent_channels": 8,
            "resolution": 32,
            "attn_resolutions": [],
        },
    ),
    "seamless_m4t": lambda d: d.update(SEAMLESS_SPEECH, speech_encoder_hidden_act="gelu", var_pred_dropout=0.0),
    "seamless_m4t_v2": lambda d: d.update(
        SEAMLESS_SPEECH, char_vocab_size=99, t2u_variance_predictor_embed_dim=32, t2u_variance_predictor_hidden_dim=32
    ),
}


def _token_ids(config: Any) -> list[int]:
    out: list[int] = []
    for key, value in vars(config).items():
        if key.endswith(("token_id", "token_ids", "token_index")) and value is not None:
            values = value if isinstance(value, (list, tuple)) else [value]
            for v in values:
                if isinstance(v, int) and not isinstance(v, bool):
                    out.append(v)
                elif isinstance(v, (list, tuple)):
                    out.extend(x for x in v if isinstance(x, int))
    return out


def _shrunk_kwargs(config_class: type, default: Any) -> dict:
    import inspect

    accepted = set(inspect.signature(config_class.__init__).parameters)
    d: dict = {}

    def put(key: str, value: Any) -> None:
        try:
            current = getattr(default, key, None) if key in accepted else None
        except Exception:  # noqa: BLE001 - 5.x's per-layer configs refuse a global read of a per-layer size
            current = None
        if isinstance(current, int) and not isinstance(current, bool) and current > value:
            d[key] = value

    for key in LAYER_KEYS:
        put(key, 2)
    for key in HIDDEN_KEYS:
        put(key, 32)
    for key in HEAD_KEYS:
        put(key, 4)
    for key in FFN_KEYS:
        put(key, 37)
    for key, value in SMALL.items():
        put(key, value)
    if "num_key_value_heads" in accepted and getattr(default, "num_key_value_heads", 0) is None:
        d["num_key_value_heads"] = 2  # None means "as many as the heads" in some configs, is required in others
    for key, value in KERNEL_FLAGS.items():
        if key in accepted:
            d[key] = value
    if "vocab_size" in accepted and isinstance(getattr(default, "vocab_size", None), int):
        specials = [i for i in _token_ids(default) if i >= 0]
        d["vocab_size"] = min(default.vocab_size, max(99, max(specials, default=0) + 1))
    for key in SUBCONFIG_KEYS:
        sub = getattr(default, key, None)
        if key in accepted and sub is not None and hasattr(sub, "to_dict"):
            sub_kwargs = _shrunk_kwargs(type(sub), sub)
            sub_kwargs["model_type"] = getattr(sub, "model_type", None) or type(sub).model_type
            fix = FIXUPS.get(sub_kwargs["model_type"])
            if fix:
                fix(sub_kwargs)
            d[key] = sub_kwargs
    return d


def shrunk_config(config_class: type) -> Any:
    default = config_class()
    d = _shrunk_kwargs(config_class, default)
    fix = FIXUPS.get(getattr(config_class, "model_type", ""))
    if fix:
        fix(d)
    return config_class(**d)


def _tester_config(model_class: type, tests_root: str) -> tuple[Any, dict, Any, str] | None:
    """(config, inputs, tester, where) from the checkout's model tester, or None."""
    import importlib
    import unittest

    parts = model_class.__module__.split(".")
    model, stem = parts[-2], parts[-1]
    rel = os.path.join("tests", "models", model, f"test_{stem}.py")
    if not os.path.isfile(os.path.join(tests_root, rel)):
        return None
    if tests_root not in sys.path:
        sys.path.append(tests_root)
    name = f"tests.models.{model}.test_{stem}"
    module = importlib.import_module(name)
    candidates = []
    for value in vars(module).values():
        if isinstance(value, type) and issubclass(value, unittest.TestCase):
            generative = tuple(getattr(value, "all_generative_model_classes", ()) or ())
            classes = tuple(getattr(value, "all_model_classes", ()) or ())
            if model_class in generative:
                candidates.insert(0, value)
            elif model_class in classes:
                candidates.append(value)
    for case_class in candidates:
        case = case_class()
        case.setUp()
        tester = getattr(case, "model_tester", None)
        if tester is None:
            continue
        prepared = tester.prepare_config_and_inputs_for_common()
        config, inputs = prepared if isinstance(prepared, tuple) and len(prepared) == 2 else (prepared[0], {})
        return config, dict(inputs), tester, f"{name}.{type(tester).__name__}"
    return None


def text_config(config: Any) -> Any:
    for key in ("text_config", "decoder"):
        sub = getattr(config, key, None)
        if sub is not None and hasattr(sub, "vocab_size"):
            return sub
    return config


def _set_everywhere(config: Any, key: str, value: Any) -> None:
    setattr(config, key, value)
    for sub_key in SUBCONFIG_KEYS:
        sub = getattr(config, sub_key, None)
        if sub is not None and hasattr(sub, "to_dict") and hasattr(sub, key):
            setattr(sub, key, value)


FALLBACK_IDS = {
    "pad_token_id": 0,
    "bos_token_id": 1,
    "eos_token_id": 2,
    "decoder_start_token_id": 1,
    "sep_token_id": 2,
    "cls_token_id": 1,
}


def fit_special_ids(config: Any) -> list[str]:
    """Special ids that do not fit the vocabulary (a tester's config keeps RemBERT's bos 312 with 99
    tokens) are moved into it: an id outside the embedding is no model anybody runs."""
    notes = []
    for c in [config] + [getattr(config, k, None) for k in SUBCONFIG_KEYS + ("decoder", "encoder")]:
        vocab = getattr(c, "vocab_size", None) if c is not None else None
        if not isinstance(vocab, int) or vocab <= 0:
            continue
        for key, fallback in FALLBACK_IDS.items():
            value = getattr(c, key, None)
            if isinstance(value, int) and not isinstance(value, bool) and value >= vocab:
                setattr(c, key, fallback)
                notes.append(f"{key} {value} -> {fallback} (vocabulary {vocab})")
    return notes


POSITION_KEYS = ("max_position_embeddings", "n_positions", "max_target_positions")
MIN_POSITIONS = 64


def fit_positions(config: Any) -> list[str]:
    """Room for the prompt and the new tokens: a tester's 20 positions (BLIP-2's OPT) are too few for
    its image queries, a prompt and ten new tokens."""
    notes = []
    for c in [config] + [getattr(config, k, None) for k in SUBCONFIG_KEYS + ("decoder", "encoder")]:
        for key in POSITION_KEYS:
            value = getattr(c, key, None) if c is not None else None
            if isinstance(value, int) and not isinstance(value, bool) and 0 < value < MIN_POSITIONS:
                setattr(c, key, 128)
                notes.append(f"{key} {value} -> 128")
    return notes


def ensure_decoder_start(config: Any) -> list[str]:
    """An encoder-decoder needs a decoder start (T5's convention, the pad id, when the config has none)."""
    if not getattr(config, "is_encoder_decoder", False):
        return []
    for c in (config, text_config(config)):
        if getattr(c, "decoder_start_token_id", None) is None and getattr(c, "bos_token_id", None) is None:
            start = getattr(c, "pad_token_id", None)
            c.decoder_start_token_id = start if isinstance(start, int) else 0
            if hasattr(c, "bos_token_id") and c is not config:
                c.bos_token_id = c.decoder_start_token_id
            return [f"decoder_start_token_id {c.decoder_start_token_id} (the config has none)"]
    return []


def as_used(model_class: type, config: Any, *, decoder_of_composite: bool = False) -> dict:
    """The flags a class's users set; returns what was set."""
    flags: dict = {}
    if decoder_of_composite or (
        DECODER_HEAD.search(model_class.__name__) and not getattr(config, "is_encoder_decoder", False)
    ):
        config.is_decoder = True
        flags["is_decoder"] = True
    if decoder_of_composite:
        config.add_cross_attention = True
        flags["add_cross_attention"] = True
    _set_everywhere(config, "use_cache", True)
    flags["use_cache"] = True
    return flags


def _reads_is_decoder(model_class: type) -> bool:
    """The class's module reads ``config.is_decoder`` and the class does not force it."""
    import inspect

    try:
        source = inspect.getsource(sys.modules[model_class.__module__])
        init = inspect.getsource(model_class.__init__)
    except (OSError, TypeError):
        return False
    return "config.is_decoder" in source.replace("config.is_decoder = True", "") and "is_decoder = True" not in init


MODALITY_KEYS = {
    "pixel_values",
    "pixel_values_videos",
    "pixel_values_images",
    "image_sizes",
    "input_features",
    "input_values",
    "flattened_patches",
    "image_patches",
    "image_patches_indices",
    "bbox",
    "aspect_ratio_ids",
    "aspect_ratio_mask",
    "cross_attention_mask",
    "visual_bbox",
    "pixel_attention_mask",
    "image_grid_thw",
    "feature_attention_mask",
    "input_features_mask",
    "image_embeds",
    "context_input_ids",
    "context_attention_mask",
    "doc_scores",
    "input_ids_list",
}
DROP_KEYS = {
    "labels",
    "decoder_input_ids",
    "decoder_attention_mask",
    "head_mask",
    "decoder_head_mask",
    "cross_attn_head_mask",
    "use_cache",
    "output_attentions",
    "output_hidden_states",
    "return_dict",
    "past_key_values",
    "decoder_inputs_embeds",
    "inputs_embeds",
    "position_ids",
    "return_loss",
    "next_sentence_label",
    "token_type_ids",
    "mc_token_ids",
    "mc_labels",
    "encoder_outputs",
    "encoder_hidden_states",
    "encoder_attention_mask",
}


def _trim(value: Any, rows: int, batch: int) -> Any:
    import torch

    if isinstance(value, torch.Tensor) and value.dim() > 0 and batch and value.shape[0] % batch == 0:
        factor = value.shape[0] // batch
        return value[: rows * factor].clone()
    if isinstance(value, list) and batch and len(value) == batch:
        return value[:rows]
    return value


class Built:
    """What the base side makes once: configs, weights, inputs, and the cases to run."""


def _safe_tokens(config: Any, vocab: int) -> list[int]:
    specials = set(_token_ids(config)) | set(_token_ids(text_config(config)))
    low = 4 if vocab > 20 else 0
    tokens = [t for t in range(low, min(vocab, 512)) if t not in specials]
    return tokens or list(range(vocab))


def _ids(tokens: list[int], shape: tuple[int, int], seed: int):
    import torch

    generator = torch.Generator().manual_seed(seed)
    picks = torch.randint(0, len(tokens), shape, generator=generator)
    return torch.tensor(tokens)[picks]


def _pad_id(config: Any) -> int:
    tc = text_config(config)
    for key in ("pad_token_id", "eos_token_id", "bos_token_id"):
        for c in (config, tc):
            value = getattr(c, key, None)
            if isinstance(value, list):
                value = value[0] if value else None
            if isinstance(value, int):
                return value
    return 0


def _forward_takes(model: Any, name: str) -> bool:
    import inspect

    try:
        return name in inspect.signature(model.forward).parameters
    except (TypeError, ValueError):
        return False


def _case(
    name: str,
    inputs: str,
    *,
    mask: bool = True,
    gen: dict | None = None,
    config: dict | None = None,
    assistant: bool = False,
    embeds: bool = False,
    reference: str | None = None,
    extra: str | None = None,
) -> dict:
    return {
        "name": name,
        "inputs": inputs,
        "mask": mask,
        "gen": gen or {},
        "config": config or {},
        "assistant": assistant,
        "embeds": embeds,
        "reference": reference,
        "extra": extra,
    }


#: the prompt's tokens a caller's cache holds in the ``prefilled-cache`` case (``run_case`` computes the cache, as it
#: does the caller's positions of ``caller-positions``, on the side that runs them)
PREFIX = 3


def legacy_prompt(inputs: dict, config: Any) -> dict | None:
    """``inputs`` with one image token per row where the config wants ``image_seq_length`` of them: the prompt 4.45's
    processors without ``patch_size`` made, on which the llava family merges the image itself (its legacy path) and
    needs it again on every step. None where the config names no such length, or a row has no run to shorten."""
    import torch

    seq_length = getattr(config, "image_seq_length", None)
    token = getattr(config, "image_token_index", None)
    ids, mask = inputs.get("input_ids"), inputs.get("attention_mask")
    if not isinstance(seq_length, int) or seq_length <= 1 or not isinstance(token, int):
        return None
    if not isinstance(ids, torch.Tensor) or ids.dim() != 2 or not isinstance(mask, torch.Tensor):
        return None
    rows, masks = [], []
    for row, row_mask in zip(ids, mask, strict=False):
        at = (row == token).nonzero().flatten()
        if len(at) <= 1:
            return None
        keep = torch.ones_like(row, dtype=torch.bool)
        keep[at[1:]] = False
        rows.append(row[keep])
        masks.append(row_mask[keep])
    if len({len(row) for row in rows}) != 1:
        return None
    return {**inputs, "input_ids": torch.stack(rows), "attention_mask": torch.stack(masks)}


def long_rope_config(model: Any) -> dict | None:
    """Config overrides that put a long-context RoPE's switch to its long factors inside a case's sequence (an
    original context of ``PROMPT + 1`` tokens), for a class whose own code reads ``original_max_position_embeddings``
    (Phi-3 drops its cache the step a sequence passes it); None for any other class."""
    config = model.config
    if not isinstance(getattr(config, "original_max_position_embeddings", None), int) or not hasattr(
        config, "rope_scaling"
    ):
        return None
    try:
        own = inspect.getsource(type(model))
        module = inspect.getsource(sys.modules[type(model).__module__])
    except (OSError, TypeError, KeyError):
        return None
    if "original_max_position_embeddings" not in own or "longrope" not in module:
        return None
    rotary = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    pairs = rotary // 2
    return {
        "rope_scaling": {
            "type": "longrope",
            "short_factor": [1.0] * pairs,
            "long_factor": [16.0 - 8 * i / pairs for i in range(pairs)],
        },
        "original_max_position_embeddings": PROMPT + 1,
    }


def plan_cases(
    model: Any,
    *,
    encoder_decoder: bool,
    text: bool,
    embeddable: bool,
    has_tt: bool,
    reads_is_decoder: bool,
    decoder_start: int | None,
    legacy: bool = False,
) -> list[dict]:
    no_cache_cfg = {"use_cache": False}
    cases = [
        _case("greedy-padded", "b2"),
        _case("greedy-b1", "b1"),
        _case("greedy-padded-no-mask", "b2", mask=False),
        _case("greedy-b1-no-mask", "b1", mask=False),
        _case("no-cache-padded", "b2", gen={"use_cache": False}),
        _case("no-cache-b1", "b1", gen={"use_cache": False}),
        _case("config-no-cache", "b2", config=no_cache_cfg),
        _case("config-no-cache+generate-cache", "b2", config=no_cache_cfg, gen={"use_cache": True}),
        _case("sampling", "b2", gen={"do_sample": True}),
        _case("beam-2", "b2", gen={"num_beams": 2}),
        _case("beam-2-no-cache", "b2", gen={"num_beams": 2, "use_cache": False}),
        _case("assisted", "b1", assistant=True),
        _case("assisted-no-cache", "b1", assistant=True, gen={"use_cache": False}),
        # the other decoding strategies call prepare_inputs_for_generation their own way: contrastive search with a
        # cache it expands and crops (and one candidate at a time with low_memory), prompt lookup with several
        # candidate tokens at once, group beam search per group; sampling several sequences a prompt expands the
        # inputs; the extra outputs ask the forward for attentions and hidden states
        _case("contrastive", "b2", gen={"penalty_alpha": 0.6, "top_k": 4}),
        _case("contrastive-low-memory", "b1", gen={"penalty_alpha": 0.6, "top_k": 4, "low_memory": True}),
        _case("prompt-lookup", "b1", gen={"prompt_lookup_num_tokens": 2}, reference="greedy-b1"),
        _case("group-beam", "b2", gen={"num_beams": 2, "num_beam_groups": 2, "diversity_penalty": 1.0}),
        _case("sampling-2-sequences", "b2", gen={"do_sample": True, "num_return_sequences": 2}),
        _case(
            "extra-outputs",
            "b2",
            gen={
                "return_dict_in_generate": True,
                "output_scores": True,
                "output_attentions": True,
                "output_hidden_states": True,
            },
        ),
    ]
    if not encoder_decoder and text:  # DoLa contrasts the final layer with early ones; decoder-only models
        cases.append(_case("dola", "b1", gen={"dola_layers": "low", "repetition_penalty": 1.2}))
    if has_tt:
        cases += [
            _case("token-type-ids-padded", "b2", extra="token_type_ids"),
            _case("token-type-ids-assisted", "b1", assistant=True, extra="token_type_ids"),
        ]
    if not encoder_decoder and text and embeddable:
        cases += [
            _case("inputs-embeds-b1", "b1", embeds=True, reference="greedy-b1"),
            _case("inputs-embeds-padded", "b2", embeds=True, reference="greedy-padded"),
        ]
    if not encoder_decoder and text and _forward_takes(model, "position_ids"):
        cases.append(_case("caller-positions", "b2", extra="caller_positions"))
    if not encoder_decoder and text and _forward_takes(model, "past_key_values"):
        cases.append(_case("prefilled-cache", "b1", extra="prefilled_cache"))
        # a chat that goes on: generate() again from the returned cache and the longer ids (issue 41)
        cases.append(_case("continue-returned-cache", "b2", extra="continue_cache", reference="greedy-padded"))
    cases.append(_case("beam-2-returned", "b2", gen={"num_beams": 2, "num_return_sequences": 2}))
    if getattr(model, "_supports_static_cache", False):
        cases.append(_case("static-cache", "b2", gen={"cache_implementation": "static"}))
    if encoder_decoder and text and embeddable:
        cases.append(_case("encoder-inputs-embeds", "b2", embeds=True))
    if encoder_decoder and text and decoder_start is not None:
        cases.append(_case("decoder-prompt", "b2", extra="decoder_prompt"))
        cases.append(_case("decoder-prompt-no-cache", "b2", extra="decoder_prompt", gen={"use_cache": False}))
    if legacy:  # the llava family's legacy prompt: the image on every step
        cases.append(_case("legacy-image-padded", "legacy"))
    long_rope = long_rope_config(model) if text and not encoder_decoder else None
    if long_rope is not None:  # the switch to the long factors a few tokens in
        cases += [_case("long-rope-padded", "b2", config=long_rope), _case("long-rope-b1", "b1", config=long_rope)]
    if reads_is_decoder and not encoder_decoder:
        off = {"is_decoder": False}
        cases += [
            _case("is_decoder=False greedy-padded", "b2", config=off),
            _case("is_decoder=False no-cache", "b2", config=off, gen={"use_cache": False}),
            _case("is_decoder=False beam-2", "b2", config=off, gen={"num_beams": 2}),
        ]
    return cases


def _seed(seed: int) -> None:
    import random

    import torch

    random.seed(seed)
    torch.manual_seed(seed)
    try:
        import numpy

        numpy.random.seed(seed)
    except ImportError:
        pass


def _class(module: str, name: str) -> type:
    import importlib

    return getattr(importlib.import_module(module), name)


def _tiny_config(model_class: type, tests_root: str | None) -> tuple[Any, dict, Any, str]:
    errors = []
    if tests_root:
        try:
            found = _tester_config(model_class, tests_root)
            if found is not None:
                return found
        except Exception as error:  # noqa: BLE001 - fall back to the defaults, say why
            errors.append(f"tester: {type(error).__name__}: {error}"[:300])
    special = SPECIAL.get(getattr(model_class.config_class, "model_type", ""))
    if special is not None:
        config, inputs, tester = special()
        return (
            config,
            inputs,
            tester,
            "config class defaults, shrunk (sub-configs given)" + (f" ({errors[0]})" if errors else ""),
        )
    config = shrunk_config(model_class.config_class)
    return config, {}, None, "config class defaults, shrunk" + (f" ({errors[0]})" if errors else "")


def _rag() -> tuple[Any, dict, Any]:
    """RAG needs its two sub-configs, and retrieved documents instead of a retriever."""
    import types

    import torch
    from transformers import BartConfig, DPRConfig, RagConfig

    question = shrunk_config(DPRConfig)
    generator = shrunk_config(BartConfig)
    config = RagConfig.from_question_encoder_generator_configs(question, generator, n_docs=2)
    g = torch.Generator().manual_seed(7)
    batch, docs = 2, 2
    inputs = {
        "input_ids": torch.randint(4, 90, (batch, PROMPT), generator=g),
        "context_input_ids": torch.randint(4, 90, (batch * docs, 9), generator=g),
        "context_attention_mask": torch.ones(batch * docs, 9, dtype=torch.long),
        "doc_scores": torch.rand(batch, docs, generator=g),
    }
    return config, inputs, types.SimpleNamespace(batch_size=batch)


SPECIAL = {"rag": _rag}


COMPOSITE_CLASSES = {
    "encoder-decoder": "EncoderDecoderModel",
    "vision-encoder-decoder": "VisionEncoderDecoderModel",
    "speech-encoder-decoder": "SpeechEncoderDecoderModel",
}


def _encoder(kind: str):
    """A tiny encoder for a composite: BERT for text, ViT for images, Wav2Vec2 for speech."""
    import transformers

    size = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=37)
    if kind == "encoder-decoder":
        return transformers.BertModel, transformers.BertConfig(
            vocab_size=99, max_position_embeddings=128, pad_token_id=0, **size
        )
    if kind == "vision-encoder-decoder":
        return transformers.ViTModel, transformers.ViTConfig(image_size=32, patch_size=8, **size)
    return transformers.Wav2Vec2Model, transformers.Wav2Vec2Config(
        conv_dim=(32, 32),
        conv_stride=(5, 4),
        conv_kernel=(10, 8),
        num_conv_pos_embeddings=16,
        num_conv_pos_embedding_groups=2,
        vocab_size=99,
        **size,
    )


def _composite(kind: str, decoder_class: type, tests_root: str | None, seed: int):
    import transformers

    decoder_config, _, _, how = _tiny_config(decoder_class, tests_root)
    fit_special_ids(decoder_config)
    fit_positions(decoder_config)
    as_used(decoder_class, decoder_config, decoder_of_composite=True)
    encoder_class, encoder_config = _encoder(kind)
    _seed(seed)
    encoder = encoder_class(encoder_config)
    decoder = decoder_class(decoder_config)
    model = getattr(transformers, COMPOSITE_CLASSES[kind])(encoder=encoder, decoder=decoder)
    start = getattr(decoder_config, "decoder_start_token_id", None)
    for key in ("bos_token_id", "cls_token_id", "pad_token_id"):
        if start is None:
            start = getattr(decoder_config, key, None)
    model.config.decoder_start_token_id = start if isinstance(start, int) else 0
    model.config.pad_token_id = _pad_id(decoder_config)
    model.config.eos_token_id = getattr(decoder_config, "eos_token_id", None)
    model.config.vocab_size = decoder_config.vocab_size
    return model, f"{encoder_class.__name__} encoder + {decoder_class.__name__} decoder ({how})"


def _load_composite(path: str, kind: str, decoder_class: type):
    import torch
    import transformers

    meta = json.load(open(os.path.join(path, "composite.json")))
    encoder_class, encoder_config = _encoder(kind)
    encoder = encoder_class(type(encoder_config).from_dict(meta["encoder"]))
    decoder = decoder_class(decoder_class.config_class.from_dict(meta["decoder"]))
    model = getattr(transformers, COMPOSITE_CLASSES[kind])(encoder=encoder, decoder=decoder)
    for key, value in meta["top"].items():
        setattr(model.config, key, value)
    model.load_state_dict(torch.load(os.path.join(path, "weights.pt")), strict=True)
    model.generation_config.decoder_start_token_id = model.config.decoder_start_token_id
    model.generation_config.pad_token_id = model.config.pad_token_id
    return model


def _save_composite(model: Any, path: str) -> None:
    import torch

    os.makedirs(path, exist_ok=True)
    meta = {
        "encoder": model.encoder.config.to_dict(),
        "decoder": model.decoder.config.to_dict(),
        "top": {
            k: getattr(model.config, k)
            for k in ("decoder_start_token_id", "pad_token_id", "eos_token_id", "vocab_size")
        },
    }
    json.dump(meta, open(os.path.join(path, "composite.json"), "w"))
    torch.save(model.state_dict(), os.path.join(path, "weights.pt"))


def _composite_inputs(kind: str) -> dict:
    import torch

    g = torch.Generator().manual_seed(11)
    if kind == "vision-encoder-decoder":
        return {"pixel_values": torch.rand(2, 3, 32, 32, generator=g)}
    return {"input_values": torch.randn(2, 1600, generator=g)}


def worker_build(target: dict, work: str, tests_root: str | None) -> dict:
    """Make the models, the inputs and the case list (base side); returns the manifest."""
    import torch

    composite = target["kind"] != "model"
    model_class = _class(target["module"], target["cls"])
    decoder_class = _class(target["decoder_module"], target["decoder_cls"]) if composite else None
    manifest: dict = {"flags": {}, "notes": []}
    tester_inputs: dict = {}
    tester = None
    if composite:
        if not _forward_takes(decoder_class, "encoder_hidden_states"):
            return {"not_applicable": f"{decoder_class.__name__}.forward takes no encoder_hidden_states"}
        models = []
        for offset in (0, 1):
            try:
                model, how = _composite(target["kind"], decoder_class, tests_root, offset)
            except ValueError as error:
                if "Unrecognized model identifier" in str(error):  # the composite's config cannot name it either
                    return {"not_applicable": f"{target['cls']} cannot hold it: {_error(error)[:160]}"}
                raise
            models.append(model)
        if target["kind"] != "encoder-decoder":
            import types

            tester_inputs, tester = _composite_inputs(target["kind"]), types.SimpleNamespace(batch_size=2)
        manifest["config"] = how
        manifest["flags"] = {"decoder.is_decoder": True, "decoder.add_cross_attention": True, "use_cache": True}
        for model, name in zip(models, ("main", "assistant"), strict=False):
            _save_composite(model.eval(), os.path.join(work, name))
        model = models[0]
    else:
        config, tester_inputs, tester, how = _tiny_config(model_class, tests_root)
        manifest["config"] = how
        manifest["notes"].extend(fit_special_ids(config))
        manifest["notes"].extend(ensure_decoder_start(config))
        manifest["notes"].extend(fit_positions(config))
        manifest["flags"] = as_used(model_class, config)
        for offset, name in ((0, "main"), (1, "assistant")):
            _seed(offset)
            model = model_class(config).eval()
            model.save_pretrained(os.path.join(work, name), safe_serialization=False)
        model = model_class.from_pretrained(os.path.join(work, "main")).eval()
    config = model.config
    encoder_decoder = bool(getattr(config, "is_encoder_decoder", False)) or composite
    main_input = _required_generate_input(model) or getattr(model, "main_input_name", "input_ids")
    extra_keys = [k for k in tester_inputs if k not in DROP_KEYS and k not in ("input_ids", "attention_mask")]
    multimodal = bool(set(extra_keys) & MODALITY_KEYS) or main_input != "input_ids"
    text = not multimodal
    tc = config.encoder if target["kind"] == "encoder-decoder" else text_config(config)
    vocab = _input_vocab(model, tc)
    pad = 0 if target["kind"] == "encoder-decoder" else _pad_id(config)
    if pad >= vocab:
        pad = 0
    tokens = [t for t in _safe_tokens(tc, vocab) if t != pad] or list(range(vocab))
    inputs: dict = {}
    codebooks = int(getattr(config, "num_codebooks", 0) or 0) if not encoder_decoder else 0
    if text:
        rows = codebooks or 1  # musicgen's decoder: a row per codebook, prompts are audio codes (never padded)
        b2 = _ids(tokens, (2 * rows, PROMPT), 0)
        m2 = torch.ones(2, PROMPT, dtype=torch.long)
        if not codebooks:
            b2[0, :2] = pad
            m2[0, :2] = 0
        else:
            manifest["notes"].append(f"{codebooks} codebook rows per prompt; the batch of 2 is not padded")
        inputs["b2"] = {"input_ids": b2, "attention_mask": m2}
        inputs["b1"] = {
            "input_ids": _ids(tokens, (rows, PROMPT), 1),
            "attention_mask": torch.ones(1, PROMPT, dtype=torch.long),
        }
    else:
        batch = int(getattr(tester, "batch_size", 0) or 0)
        for name, rows in (("b2", 2), ("b1", 1)):
            chosen = {k: _trim(v, rows, batch) for k, v in tester_inputs.items() if k not in DROP_KEYS}
            ids = chosen.get("input_ids")
            if isinstance(ids, torch.Tensor) and ids.dim() == 2:
                mask = torch.ones_like(ids)
                if name == "b2" and not encoder_decoder and ids.shape[0] == 2:
                    # left-padded: two pads before row 0, two ordinary tokens before row 1
                    ids = torch.cat([torch.tensor([[pad, pad], tokens[:2]]), ids], dim=1)
                    mask = torch.cat([torch.tensor([[0, 0], [1, 1]]), mask], dim=1)
                chosen["input_ids"] = ids
                chosen["attention_mask"] = mask
            if main_input in ("input_features", "input_values") and main_input not in chosen:
                chosen = {main_input: _speech_input(config, main_input, rows)}
            inputs[name] = chosen
        manifest["notes"].append("inputs from the tester: " + ", ".join(sorted(inputs["b2"])))
        legacy = legacy_prompt(inputs["b2"], config)
        if legacy is not None:
            inputs["legacy"] = legacy
            manifest["notes"].append("a legacy prompt: one image token per row")
    if text and _forward_takes(model, "bbox"):  # layout models: a box per token (sorted corners, 0..1000)
        g = torch.Generator().manual_seed(9)
        for name in ("b1", "b2"):
            ids = inputs[name]["input_ids"]
            corners = torch.randint(0, 500, (*ids.shape, 2), generator=g)
            inputs[name]["bbox"] = torch.cat(
                [corners, corners + torch.randint(1, 500, (*ids.shape, 2), generator=g)], -1
            )
    type_vocab = int(getattr(tc, "type_vocab_size", 0) or 0)
    has_tt = text and not codebooks and _forward_takes(model, "token_type_ids") and type_vocab >= 2
    if has_tt:
        generator = torch.Generator().manual_seed(3)
        for name in ("b1", "b2"):
            ids = inputs[name]["input_ids"]
            inputs[name]["token_type_ids@"] = torch.randint(0, 2, ids.shape, generator=generator)
    decoder_start = None
    if encoder_decoder and text:
        gc = model.generation_config
        decoder_start = (
            gc.decoder_start_token_id if gc.decoder_start_token_id is not None else config.decoder_start_token_id
        )
        if isinstance(decoder_start, list):
            decoder_start = decoder_start[0] if decoder_start else None
        decoder_embeddings = getattr(model, "get_output_embeddings", lambda: None)()
        dec_vocab = int(getattr(decoder_embeddings, "out_features", 0) or vocab)
        if isinstance(decoder_start, int) and decoder_start < dec_vocab:
            dec_tokens = _safe_tokens(getattr(config, "decoder", config), dec_vocab)
            prompt = _ids(dec_tokens, (2, 2), 5)
            inputs["b2"]["decoder_input_ids@"] = torch.cat([torch.full((2, 1), decoder_start), prompt], dim=1)
        else:
            decoder_start = None
    embeddable = isinstance(_input_embeddings(model), torch.nn.Embedding)
    torch.save(inputs, os.path.join(work, "inputs.pt"))
    reads = _reads_is_decoder(model_class) and manifest["flags"].get("is_decoder") is True
    manifest["cases"] = plan_cases(
        model,
        encoder_decoder=encoder_decoder,
        text=text,
        embeddable=embeddable and not codebooks,
        has_tt=has_tt,
        reads_is_decoder=reads,
        decoder_start=decoder_start,
        legacy="legacy" in inputs,
    )
    manifest["pad"] = pad
    manifest["shapes"] = {
        name: {k: list(v.shape) for k, v in d.items() if isinstance(v, torch.Tensor)} for name, d in inputs.items()
    }
    return manifest


def _speech_input(config: Any, name: str, rows: int):
    """Speech inputs of the shape the config says (no tester gave any): raw samples, or feature frames."""
    import torch

    g = torch.Generator().manual_seed(rows)
    if name == "input_values":
        return torch.randn(rows, 1600, generator=g)
    per_channel = getattr(config, "input_feat_per_channel", None)
    if per_channel:  # speech_to_text
        return torch.randn(rows, 32, per_channel * int(getattr(config, "input_channels", 1) or 1), generator=g)
    for key in ("feature_projection_input_dim", "num_mel_bins", "d_model", "hidden_size"):
        width = getattr(config, key, None)
        if isinstance(width, int) and width > 0:
            return torch.randn(rows, 32, width, generator=g)
    return torch.randn(rows, 32, 32, generator=g)


def _required_generate_input(model: Any) -> str | None:
    """The first parameter ``generate`` requires (Pop2Piano's ``input_features``), if any."""
    import inspect

    try:
        parameters = list(inspect.signature(model.generate).parameters.values())
    except (TypeError, ValueError):
        return None
    for p in parameters:
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is inspect.Parameter.empty:
            return p.name
    return None


def _input_embeddings(model: Any) -> Any:
    try:
        return model.get_input_embeddings()
    except (NotImplementedError, AttributeError):  # composites and some multimodal models have none
        return None


def _input_vocab(model: Any, config: Any) -> int:
    """How many ids the model's input embedding takes (the config's vocabulary when it says less)."""
    vocab = int(getattr(config, "vocab_size", 0) or 0)
    embedding = _input_embeddings(model)
    rows = getattr(embedding, "num_embeddings", None)
    if isinstance(rows, int) and rows > 0:
        vocab = min(vocab, rows) if vocab else rows
    return vocab or 99


def _generate_takes(model: Any, name: str) -> bool:
    import inspect

    try:
        return name in inspect.signature(model.generate).parameters
    except (TypeError, ValueError):
        return False


def _load(target: dict, path: str, overrides: dict, pad: int):
    composite = target["kind"] != "model"
    _seed(0)
    if composite:
        model = _load_composite(path, target["kind"], _class(target["decoder_module"], target["decoder_cls"]))
        for key, value in overrides.items():
            setattr(model.config, key, value)
            setattr(model.decoder.config, key, value)
    else:
        model = _class(target["module"], target["cls"]).from_pretrained(path, **overrides)
        for key, value in overrides.items():
            _set_everywhere(model.config, key, value)
    model.eval()
    gc = model.generation_config
    if _generate_takes(model, "tgt_lang"):  # seamless: language codes a tiny model has none of (as its tests do)
        for key in ("text_decoder_lang_to_code_id", "t2u_lang_code_to_id", "vocoder_lang_code_to_id"):
            if not getattr(gc, key, None):
                setattr(gc, key, {"eng": 4})
        if not getattr(gc, "id_to_text", None):
            vocab = int(getattr(text_config(model.config), "vocab_size", 99) or 99)
            gc.id_to_text = {str(i): "a" for i in range(vocab)} | {"0": "ab", "1": "_b", "3": ",", "4": "_cd"}
            gc.char_to_id = {char: i for i, char in enumerate("abcd")}
    if _generate_takes(model, "composer") and not getattr(gc, "composer_to_feature_token", None):
        # pop2piano: one composer token per composer the config counts, inside the tiny vocabulary
        count = int(getattr(model.config, "composer_vocab_size", 1) or 1)
        vocab = int(getattr(model.config, "vocab_size", 99) or 99)
        gc.composer_to_feature_token = {f"composer{i + 1}": (vocab - count + i) for i in range(count)}
    if "use_cache" in overrides:
        gc.use_cache = overrides["use_cache"]
    if gc.pad_token_id is None:
        gc.pad_token_id = pad
    if any("generate" in vars(c) for c in type(model).__mro__[:-1] if c.__module__.startswith("transformers.models.")):
        # a generate() of the model's own (Musicgen's) reads fields 5.x leaves None for the mixin's to resolve; its
        # checkpoints set them
        if getattr(gc, "num_return_sequences", 1) is None:
            gc.num_return_sequences = 1
        if getattr(gc, "decoder_start_token_id", 0) is None:
            start = getattr(text_config(model.config), "bos_token_id", None)
            gc.decoder_start_token_id = start if isinstance(start, int) else pad
    return model


def serialise(value: Any, depth: int = 0) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        if value.dtype in (torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool):
            return {"ids": value.tolist()}
        flat = value.detach().float().flatten()
        return {
            "floats": [round(x, 4) for x in flat[:512].tolist()],
            "shape": list(value.shape),
            "sum": round(float(flat.sum()), 3),
        }
    if depth > 3:
        return repr(type(value))
    if isinstance(value, dict) or hasattr(value, "to_tuple"):
        items = value.items() if isinstance(value, dict) else ((k, value[k]) for k in value.keys())
        return {
            k: serialise(v, depth + 1)
            for k, v in items
            if k in ("sequences", "waveform", "audio_values", "sequences_scores", "unit_sequences")
            or isinstance(v, torch.Tensor)
            and k not in ("scores", "logits", "attentions", "hidden_states")
        }
    if isinstance(value, (list, tuple)):
        return [serialise(v, depth + 1) for v in value[:8]]
    return repr(value)[:200]


def _error(error: BaseException) -> str:
    text = f"{type(error).__name__}: {error}".strip().splitlines()
    return (text[0] if text else type(error).__name__)[:400]


def run_case(case: dict, models: dict, target: dict, work: str, inputs: dict, pad: int) -> dict:
    import torch

    key = json.dumps(case["config"], sort_keys=True)
    if key not in models:
        models[key] = {"main": _load(target, os.path.join(work, "main"), case["config"], pad), "assistant": None}
    entry = models[key]
    model = entry["main"]
    given = {k: v for k, v in inputs[case["inputs"]].items() if not k.endswith("@")}
    kwargs = dict(given)
    if case["extra"] == "caller_positions":
        kwargs["position_ids"] = (kwargs["attention_mask"].long().cumsum(-1) - 1).clamp(min=0)
    elif case["extra"] == "prefilled_cache":
        try:
            with torch.no_grad():
                cache = model(
                    input_ids=kwargs["input_ids"][:, :PREFIX],
                    attention_mask=kwargs["attention_mask"][:, :PREFIX],
                    use_cache=True,
                ).past_key_values
            kwargs["past_key_values"] = cache.to_legacy_cache() if type(cache).__name__ == "DynamicCache" else cache
        except Exception as error:  # noqa: BLE001 - no cache to continue from: the case fails alike on both sides
            return {"ok": False, "error": "no prefilled cache: " + _error(error), "seconds": 0.0}
    elif case["extra"] == "continue_cache":
        pass  # two calls, made below
    elif case["extra"]:
        kwargs[case["extra"].replace("decoder_prompt", "decoder_input_ids")] = inputs[case["inputs"]][
            case["extra"].replace("decoder_prompt", "decoder_input_ids") + "@"
        ]
    if not case["mask"]:
        kwargs.pop("attention_mask", None)
    if case["assistant"]:
        if entry["assistant"] is None:
            entry["assistant"] = _load(target, os.path.join(work, "assistant"), case["config"], pad)
        kwargs["assistant_model"] = entry["assistant"]
    if case["embeds"]:
        ids = kwargs.pop("input_ids")
        with torch.no_grad():
            kwargs["inputs_embeds"] = model.get_input_embeddings()(ids)
    kwargs.update(case["gen"])
    if _generate_takes(model, "tgt_lang"):
        kwargs["tgt_lang"] = "eng"
    kwargs.update(max_new_tokens=NEW_TOKENS, min_new_tokens=NEW_TOKENS)
    _seed(0)
    started = time.perf_counter()
    try:
        with torch.no_grad():
            out = (
                continue_returned_cache(model, kwargs)
                if case["extra"] == "continue_cache"
                else model.generate(**kwargs)
            )
        result = {"ok": True, "out": serialise(out)}
    except Exception as error:  # noqa: BLE001 - the side's failure is the result
        result = {"ok": False, "error": _error(error)}
    result["seconds"] = round(time.perf_counter() - started, 3)
    return result


def continue_returned_cache(model: Any, kwargs: dict) -> Any:
    """``generate(**kwargs)`` made in two calls: half the new tokens with the cache returned, then the rest from the
    returned sequences (the mask grown over them) and that cache, as a caller continues a conversation."""
    import torch

    total = kwargs.pop("max_new_tokens")
    kwargs.pop("min_new_tokens", None)
    first_tokens = total // 2
    first = model.generate(
        **kwargs, max_new_tokens=first_tokens, min_new_tokens=first_tokens, return_dict_in_generate=True
    )
    sequences = first.sequences.reshape(-1, first.sequences.shape[-1])
    second = {k: v for k, v in kwargs.items() if not torch.is_tensor(v)}
    mask = kwargs.get("attention_mask")
    if mask is not None:
        grown = sequences.shape[1] - mask.shape[1]
        second["attention_mask"] = torch.cat([mask, mask.new_ones((mask.shape[0], grown))], 1) if grown >= 0 else mask
    rest = total - first_tokens
    return model.generate(
        input_ids=sequences,
        past_key_values=first.past_key_values,
        max_new_tokens=rest,
        min_new_tokens=rest,
        **second,
    )


def worker_run(target: dict, work: str, cases: list[dict] | None = None) -> dict:
    import torch

    manifest = json.load(open(os.path.join(work, "manifest.json")))
    inputs = torch.load(os.path.join(work, "inputs.pt"))
    models: dict = {}
    results = {}
    for case in manifest["cases"]:
        if cases and case["name"] not in cases:
            continue
        try:
            results[case["name"]] = run_case(case, models, target, work, inputs, manifest["pad"])
        except Exception as error:  # noqa: BLE001 - a model that does not even load with these flags
            results[case["name"]] = {"ok": False, "error": "load: " + _error(error)}
    return results


def worker_main() -> None:
    protocol = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    os.environ.setdefault("TRANSFORMERS_VERBOSITY", "error")
    import warnings

    warnings.filterwarnings("ignore")
    import torch

    torch.set_num_threads(1)
    tests_root = os.environ.get("CROSSCHECK_TESTS") or None
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        target, work = request["target"], request["work"]
        started = time.perf_counter()
        reply: dict = {"id": target["id"]}
        try:
            if request["op"] == "build":
                os.makedirs(work, exist_ok=True)
                try:
                    manifest = worker_build(target, work, tests_root)
                except Exception as error:  # noqa: BLE001 - a class we cannot build is reported with the reason
                    import traceback

                    traceback.print_exc()
                    manifest = {"unbuildable": _error(error)}
                json.dump(manifest, open(os.path.join(work, "manifest.json"), "w"))
                reply["manifest"] = manifest
                if "cases" not in manifest:
                    reply["results"] = {}
                    raise StopIteration
            reply["results"] = worker_run(target, work, request.get("cases"))
        except StopIteration:
            pass
        except Exception as error:  # noqa: BLE001
            import traceback

            traceback.print_exc()
            reply["worker_error"] = _error(error)
        reply["seconds"] = round(time.perf_counter() - started, 2)
        out = os.path.join(work, f"result-{request['side']}.json")
        json.dump(reply, open(out, "w"))
        protocol.write(json.dumps({"id": target["id"], "file": out}) + "\n")
        protocol.flush()
        import gc

        gc.collect()


# ============================================================================================ the parent


class Worker:
    def __init__(self, python: str, tree: Path, tests: str | None, log: Path):
        env = dict(os.environ)
        env["PYTHONPATH"] = str(tree / "src")
        env["CROSSCHECK_TESTS"] = tests or ""
        env.setdefault("TRANSFORMERS_VERBOSITY", "error")
        env["OMP_NUM_THREADS"] = "1"
        env["TOKENIZERS_PARALLELISM"] = "false"
        env["HF_HUB_OFFLINE"] = "1"
        env["PYTHONDONTWRITEBYTECODE"] = "1"  # the trees are read, never written
        self.log = open(log, "a")
        self.process = subprocess.Popen(
            [python, os.path.abspath(__file__), "--worker"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            # the testers' modules read fixtures by paths relative to the clone (``./tests/fixtures/...``)
            stderr=self.log,
            text=True,
            env=env,
            cwd=tests or tempfile.gettempdir(),
        )
        self.lines: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        for line in self.process.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def ask(self, request: dict, timeout: float) -> dict:
        self.process.stdin.write(json.dumps(request) + "\n")
        self.process.stdin.flush()
        deadline = time.monotonic() + timeout
        while True:
            try:
                line = self.lines.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                self.close(kill=True)
                return {"worker_error": f"timeout after {timeout:.0f}s"}
            if line is None:
                code = self.process.wait()
                return {"worker_error": f"the worker died (exit status {code})"}
            try:
                message = json.loads(line)
            except json.JSONDecodeError:
                continue
            return json.loads(Path(message["file"]).read_text())

    def alive(self) -> bool:
        return self.process.poll() is None

    def close(self, kill: bool = False) -> None:
        if self.process.poll() is None:
            if kill:
                self.process.kill()
            else:
                self.process.stdin.close()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.process.wait(timeout=30)
        self.log.close()


def run_side(
    side: str,
    tree: Path,
    targets: list[Target],
    work: Path,
    *,
    python: str,
    jobs: int = 1,
    build: bool = False,
    tests: str | None = None,
    timeout: float = 600.0,
    cases: list[str] | None = None,
    say=None,
) -> dict[str, dict]:
    """Run every target's cases on ``tree`` (building the models first when ``build``: the base side);
    ``work`` holds one directory per target. Returns ``{target id: reply}``."""
    work.mkdir(parents=True, exist_ok=True)
    todo: queue.Queue = queue.Queue()
    for t in targets:
        todo.put(t)
    replies: dict[str, dict] = {}
    lock = threading.Lock()
    done = [0]

    def slot(index: int) -> None:
        worker = None
        try:
            while True:
                try:
                    t = todo.get_nowait()
                except queue.Empty:
                    return
                if worker is None or not worker.alive():
                    worker = Worker(python, tree, tests, work / f"worker-{side}-{index}.log")
                directory = work / _slug(t.id)
                request = {
                    "op": "build" if build else "run",
                    "target": t.as_dict(),
                    "work": str(directory),
                    "side": side,
                    "cases": cases,
                }
                manifest_file = directory / "manifest.json"
                if not build and not manifest_file.is_file():
                    reply = {"id": t.id, "worker_error": "not built"}
                elif not build and "cases" not in json.loads(manifest_file.read_text()):
                    reply = {"id": t.id, "results": {}, "seconds": 0.0}  # unbuildable or not applicable: said once
                else:
                    reply = worker.ask(request, timeout)
                with lock:
                    replies[t.id] = reply
                    done[0] += 1
                    if say:
                        status = (
                            ("error: " + reply["worker_error"])
                            if "worker_error" in reply
                            else f"{len(reply.get('results', {}))} cases"
                        )
                        say(
                            f"[{side} {done[0]}/{len(targets)}] {t.id.split('/')[-1]}: {status} "
                            f"({reply.get('seconds', 0):.1f}s)"
                        )
        finally:
            if worker is not None:
                worker.close()

    threads = [threading.Thread(target=slot, args=(i,)) for i in range(max(1, jobs))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return replies


def _slug(target_id: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", target_id.replace("src/transformers/models/", ""))[-150:]


def _new_tokens(out: Any, prompt: int) -> Any:
    if isinstance(out, dict) and "ids" in out:
        return [row[prompt:] for row in out["ids"]]
    return None


def _close(a: Any, b: Any) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        if a.keys() != b.keys():
            return False
        if "floats" in a:
            if a["shape"] != b["shape"] or len(a["floats"]) != len(b["floats"]):
                return False
            return all(abs(x - y) <= 1e-3 + 1e-3 * abs(y) for x, y in zip(a["floats"], b["floats"], strict=False))
        return all(_close(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y) for x, y in zip(a, b, strict=False))
    return a == b


def compare_case(case: dict, old: dict | None, new: dict | None, new_results: dict, prompt: int) -> str:
    if old is None or new is None:
        return "missing"
    if old["ok"] and new["ok"]:
        return "same" if _close(old["out"], new["out"]) else "differs"
    if old["ok"]:
        return "crashed-new"
    if new["ok"]:
        reference = new_results.get(case.get("reference") or "")
        if case.get("embeds") and reference and reference.get("ok"):
            expected = _new_tokens(reference["out"], prompt)
            got = new["out"].get("ids") if isinstance(new["out"], dict) else None
            if expected is not None and got is not None and expected != got:
                return "extended-inconsistent"
        elif reference and reference.get("ok") and not _close(reference["out"], new["out"]):
            return "extended-inconsistent"  # a lossless strategy (prompt lookup) generates what greedy does
        return "extended"
    return "crashed-both-alike" if old["error"] == new["error"] else "crashed-both-differently"


def compare(targets: list[Target], old: dict[str, dict], new: dict[str, dict]) -> list[dict]:
    classes = []
    for t in targets:
        o, n = old.get(t.id, {}), new.get(t.id, {})
        manifest = o.get("manifest") or {}
        entry: dict = {
            "id": t.id,
            "class": t.cls if t.kind == "model" else f"{t.cls}[{t.decoder_cls}]",
            "module": t.module,
            "model": t.model,
            "kind": t.kind,
            "config": manifest.get("config"),
            "flags": manifest.get("flags"),
            "notes": manifest.get("notes"),
            "shapes": manifest.get("shapes"),
            "seconds": {"base": o.get("seconds"), "new": n.get("seconds")},
            "cases": [],
        }
        if "not_applicable" in manifest:
            entry.update(status="not-applicable", reason=manifest["not_applicable"])
        elif "unbuildable" in manifest:
            entry.update(status="unbuildable", reason=manifest["unbuildable"])
        elif "worker_error" in o or "worker_error" in n or "cases" not in manifest:
            entry.update(status="error", reason=o.get("worker_error") or n.get("worker_error") or "no manifest")
        else:
            old_results, new_results = o.get("results", {}), n.get("results", {})
            for case in manifest["cases"]:
                if case["name"] not in old_results and case["name"] not in new_results:
                    continue
                a, b = old_results.get(case["name"]), new_results.get(case["name"])
                status = compare_case(case, a, b, new_results, PROMPT)
                row = {
                    "name": case["name"],
                    "status": status,
                    "params": {
                        k: case[k]
                        for k in ("inputs", "mask", "gen", "config", "assistant", "embeds", "extra")
                        if case[k]
                    },
                }
                for side, r in (("base", a), ("new", b)):
                    if r is not None:
                        row[side] = {"ok": r["ok"], **({"out": r["out"]} if r["ok"] else {"error": r["error"]})}
                entry["cases"].append(row)
            statuses = {c["status"] for c in entry["cases"]}
            if statuses & set(REAL) or "missing" in statuses:
                entry["status"] = "differs"
            elif "crashed-both-differently" in statuses:  # never works on the old side either: no user sees it
                entry["status"] = "crashed-differently"
            elif "extended" in statuses:
                entry["status"] = "extended"
            elif statuses <= {"crashed-both-alike"}:
                entry["status"] = "crashed-both-alike"
            else:
                entry["status"] = "same"
        classes.append(entry)
    return classes


def _short_out(side: dict | None) -> str:
    if side is None:
        return "-"
    if not side["ok"]:
        return side["error"][:160]
    out = side["out"]
    if isinstance(out, dict) and "ids" in out:  # the generated end of each row (prompts can be long)
        rows = [row[-NEW_TOKENS:] if isinstance(row, list) else row for row in out["ids"]]
        return "tokens …" + json.dumps(rows)[:200]
    return json.dumps(out)[:160]


def summarise(classes: list[dict], *, seconds: float, file=None) -> None:
    from collections import Counter

    counts = Counter(c["status"] for c in classes)
    lines = [
        f"crosscheck: {len(classes)} targets in {seconds:.0f}s: "
        + ", ".join(f"{n} {k}" for k, n in sorted(counts.items()))
    ]
    for c in classes:
        if c["status"] in ("differs", "crashed-differently", "unbuildable", "error"):
            lines.append(f"  {c['status']:<12} {c['class']}  ({c.get('config') or ''})".rstrip())
            if c.get("reason"):
                lines.append(f"      {c['reason']}")
            for case in c["cases"]:
                if case["status"] in DIFFERENT or case["status"] == "missing":
                    lines.append(f"      {case['status']:<24} {case['name']}")
                    lines.append(f"          old: {_short_out(case.get('base'))}")
                    lines.append(f"          new: {_short_out(case.get('new'))}")
    print("\n".join(lines), file=file or sys.stdout)


def default_python(base: Path, tests: str | None) -> str:
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from codemod.checkout import resolve  # noqa: PLC0415 - not codemod.verify: the environment only
    from codemod.environment import ensure_environment  # noqa: PLC0415

    return str(ensure_environment(resolve(base, with_git=False), "cpu", tests=bool(tests)).python)


@contextlib.contextmanager
def git_worktree(repo: Path, rev: str) -> Iterator[Path]:
    scratch = Path(tempfile.mkdtemp(prefix="crosscheck-base-"))
    path = scratch / "tree"
    subprocess.run(
        ["git", "-C", str(repo), "worktree", "add", "--detach", str(path), rev], check=True, capture_output=True
    )
    try:
        yield path
    finally:
        subprocess.run(["git", "-C", str(repo), "worktree", "remove", "--force", str(path)], capture_output=True)
        shutil.rmtree(scratch, ignore_errors=True)


def crosscheck(
    base: Path,
    new: Path,
    *,
    python: str,
    jobs: int = 1,
    tests: str | None = None,
    only: Iterable[str] = (),
    classes: Iterable[str] = (),
    skip: Iterable[str] = (),
    work: Path | None = None,
    timeout: float = 600.0,
    cases: list[str] | None = None,
    targets: list[Target] | None = None,
    say=None,
) -> dict:
    started = time.perf_counter()
    if targets is None:
        targets = select(changed_targets(Tree(base), Tree(new)), only, classes, skip)
    own_work = work is None
    work = Path(tempfile.mkdtemp(prefix="crosscheck-")) if own_work else work
    try:
        old = run_side(
            "base",
            base,
            targets,
            work,
            python=python,
            jobs=jobs,
            build=True,
            tests=tests,
            timeout=timeout,
            cases=cases,
            say=say,
        )
        new_replies = run_side(
            "new", new, targets, work, python=python, jobs=jobs, tests=tests, timeout=timeout, cases=cases, say=say
        )
    finally:
        if own_work and not os.environ.get("CROSSCHECK_KEEP"):
            shutil.rmtree(work, ignore_errors=True)
    result = compare(targets, old, new_replies)
    seconds = time.perf_counter() - started
    from collections import Counter

    return {
        "tool": "crosscheck",
        "base": str(base),
        "new": str(new),
        "tests": tests,
        "python": python,
        "jobs": jobs,
        "seconds": round(seconds, 1),
        "summary": dict(Counter(c["status"] for c in result)),
        "classes": result,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("base", nargs="?", type=Path, help="the tree before the change")
    parser.add_argument("new", nargs="?", type=Path, help="the tree after the change")
    parser.add_argument("--repo", type=Path, help="a git repo: compare --rev with its working tree")
    parser.add_argument("--rev", default="HEAD")
    parser.add_argument("--tests", help="a checkout with tests/models/<m>/ whose model testers give the configs")
    parser.add_argument("--python", help="the interpreter with torch and the release's dependencies")
    parser.add_argument("--jobs", "-j", type=int, default=1)
    parser.add_argument("--only", default="", help="model names (directories), comma-separated")
    parser.add_argument("--skip", default="")
    parser.add_argument("--classes", default="", help="class names, comma-separated")
    parser.add_argument("--cases", default="", help="only these cases, comma-separated")
    parser.add_argument("--json", type=Path, help="write the JSON report here")
    parser.add_argument("--work", type=Path, help="keep the models and per-side results here")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per class and side")
    parser.add_argument("--list", action="store_true", help="only print the targets")
    parser.add_argument("--quiet", "-q", action="store_true")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.worker:
        worker_main()
        return 0
    split = lambda s: [x for x in s.split(",") if x]  # noqa: E731
    say = None if args.quiet else (lambda m: print(m, file=sys.stderr, flush=True))
    with contextlib.ExitStack() as stack:
        if args.repo:
            base, new = stack.enter_context(git_worktree(args.repo, args.rev)), args.repo
        elif args.base and args.new:
            base, new = args.base, args.new
        else:
            parser.error("give BASE and NEW, or --repo")
        targets = select(
            changed_targets(Tree(base), Tree(new)), split(args.only), split(args.classes), split(args.skip)
        )
        if args.list:
            for t in targets:
                print(t.id)
            return 0
        python = args.python or default_python(base, args.tests)
        doc = crosscheck(
            base,
            new,
            python=python,
            jobs=args.jobs,
            tests=args.tests,
            work=args.work,
            timeout=args.timeout,
            cases=split(args.cases) or None,
            targets=targets,
            say=say,
        )
    if args.json:
        args.json.write_text(json.dumps(doc, indent=1))
    summarise(doc["classes"], seconds=doc["seconds"])
    return 1 if any(c["status"] in ("differs", "crashed-differently") for c in doc["classes"]) else 0


if __name__ == "__main__":
    raise SystemExit(main())
