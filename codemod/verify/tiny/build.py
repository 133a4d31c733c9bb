"""Tiny configs and models: a config class's defaults (or a repository's ``config.json``) shrunk and
fixed up, then rebuilt through the class from only the values that changed, so that ``__init__``
recomputes what it derives and runs its own validation; the model built from it under a seed."""

from __future__ import annotations

import copy
import inspect
import random
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import torch
import transformers

from .common import TinyModelError, one_line, quiet
from .fixups import COMPOSITE_DEFAULTS, FIXUPS
from .shrink import GROUP_OF, SIZES, fit_image_seq_length, shrink
from .tokens import MIN_VOCAB, is_subconfig, special_token_ids

if TYPE_CHECKING:
    from .common import ConfigDict, Size

#: attributes that every PretrainedConfig has and that don't describe the model
_BOOKKEEPING = {
    "transformers_version",
    "_name_or_path",
    "architectures",
    "_commit_hash",
    "_attn_implementation_autoset",
    "_attn_implementation_internal",
    "torch_dtype",
    "dtype",
}
_MISSING = object()
#: config flags that select CUDA-only kernels (Jamba's fast Mamba path raises on CPU); off, both
#: sides take the reference implementation on any device
KERNEL_FLAGS = {"use_mamba_kernels": False}


def _class_defaults(model_type: Any) -> ConfigDict | None:
    """The defaults of the config class registered for ``model_type`` (None when unknown)."""
    mapping = getattr(transformers, "CONFIG_MAPPING", None)
    if not isinstance(model_type, str) or mapping is None:
        return None
    try:
        with quiet():
            defaults: ConfigDict = mapping[model_type]().to_dict()
            return defaults
    except Exception:  # noqa: BLE001 - not registered, or needs arguments
        return None


def _changes(old: ConfigDict, new: ConfigDict) -> ConfigDict:
    """Only what differs (sub-config dicts keep their ``model_type`` so the right class is built).

    A sub-config is rebuilt from a dict, on top of its *class's* defaults, which need not be the
    composite's (PaliGemma's text config has one kv head, GemmaConfig's default is 16): so it is
    diffed against those class defaults where the class is known.
    """
    changed: ConfigDict = {}
    for key, value in new.items():
        if key in _BOOKKEEPING:
            continue
        before = old.get(key, _MISSING)
        if isinstance(value, dict) and isinstance(before, dict) and is_subconfig(key, value):
            base = _class_defaults(value.get("model_type"))
            inner = _changes(base if base is not None else before, value)
            if inner:
                if "model_type" in value:
                    inner["model_type"] = value["model_type"]
                changed[key] = inner
        elif value != before:
            changed[key.lstrip("_") if key.startswith("_") and not key.startswith("__") else key] = value
    return changed


def _default_config(config_class: Any) -> Any:  # a PretrainedConfig subclass
    parts = COMPOSITE_DEFAULTS.get(str(getattr(config_class, "model_type", "")))
    try:
        with quiet():
            return config_class(**parts()) if parts else config_class()
    except Exception as error:
        raise TinyModelError(f"{config_class.__name__}() needs arguments: {one_line(error)}") from None


def portable(config: Any) -> Any:
    """``config`` with CUDA-only kernel flags turned off (see :data:`KERNEL_FLAGS`)."""
    for key, value in KERNEL_FLAGS.items():
        if hasattr(config, key):
            setattr(config, key, value)
    return config


def _build_config(config_class: Any, size: Size, notes: list[str], base: ConfigDict | None = None) -> Any:
    """A tiny config: ``base`` (a repository's ``config.json``) or the class's defaults, shrunk."""
    if base is not None:
        with quiet():
            default = config_class.from_dict(dict(base))
        notes.append("config from the repository's config.json, shrunk")
    else:
        default = _default_config(config_class)
    before = default.to_dict()
    vocab = max([MIN_VOCAB, *(i + 1 for i in special_token_ids(before))])
    after = shrink(before, size, vocab, notes, "", FIXUPS)
    fit_image_seq_length(after, notes)
    changes = _changes(before, after)
    parts = COMPOSITE_DEFAULTS.get(str(getattr(config_class, "model_type", "")))
    if parts:
        # the halves that didn't change must still be passed
        names = set(parts())
        changes = {**{k: v for k, v in before.items() if k in names}, **changes}
    with quiet():
        # a repository's config.json keeps every key the shrinking left alone (InternLM's ``bias: false``); built
        # from the changes alone, those went back to the class's defaults (and an unshrunk size to the full model)
        config = config_class.from_dict({**dict(base), **changes}) if base is not None else config_class(**changes)
    # attributes that __init__ doesn't take and recomputes from others must still be tiny
    for key, value in changes.items():
        if isinstance(value, dict):
            continue
        current = getattr(config, key, _MISSING)
        if (
            current is not _MISSING
            and current != value
            and GROUP_OF.get(key) in {"layers", "hidden", "heads", "intermediate"}
        ):
            try:
                setattr(config, key, value)
                notes.append(f"{key}: forced to {value} after __init__ made it {current}")
            except Exception:  # noqa: BLE001 - a read-only property: the model gets what __init__ made
                pass
    return portable(config)


def tiny_config(model_class: type, *, seed: int = 0, size: Size | None = None) -> Any:
    """A small config for ``model_class``, derived from its config class's defaults (see the module doc).

    ``size`` overrides the first entry of :data:`SIZES`. ``seed`` is accepted for symmetry with
    :func:`tiny_model`; the config itself is deterministic.
    """
    config_class = getattr(model_class, "config_class", None)
    if config_class is None:
        raise TinyModelError(f"{model_class.__name__} has no config_class")
    return _build_config(config_class, dict(size or SIZES[0]), [])


def tiny_model(
    model_class: type,
    *,
    seed: int = 0,
    settings: dict[str, Any] | None = None,
    primary: Callable[[type, Any], dict[str, Any]] | None = None,
    base: ConfigDict | None = None,
) -> tuple[Any, list[str]]:
    """``model_class`` built from a tiny config under ``torch.manual_seed(seed)``, in eval mode, and notes.

    ``settings`` are config attributes set before the model is built (how the class is used, e.g.
    ``is_decoder=True``); when None, ``primary(model_class, config)`` says which, if given. ``base``
    replaces the config class's defaults (a remote-code repository's ``config.json``).
    Tries each of :data:`SIZES` in turn; raises :class:`TinyModelError` with a one-line reason when
    none builds.
    """
    config_class = getattr(model_class, "config_class", None)
    if config_class is None or not isinstance(config_class, type):
        raise TinyModelError(f"{model_class.__name__} has no config_class")
    errors: list[str] = []
    for index, size in enumerate(SIZES):
        notes: list[str] = []
        try:
            config = _build_config(config_class, dict(size), notes, base)
        except TinyModelError:
            raise
        except Exception as error:
            errors.append(f"config: {one_line(error)}")
            continue
        chosen = settings if settings is not None else (primary(model_class, config) if primary else {})
        for key, value in chosen.items():
            setattr(config, key, value)
            notes.append(f"{key}: {value!r} (how {model_class.__name__} is used)")
        try:
            seed_everything(seed)
            with quiet():
                model = model_class(config)
            model.eval()
        except ImportError as error:  # a package this environment lacks: no size will do
            raise TinyModelError(f"{model_class.__name__} needs a missing package: {one_line(error)}") from None
        except Exception as error:
            model = _from_sub_config(model_class, config, seed, settings, primary, notes)
            if model is None:
                errors.append(f"build: {one_line(error)}")
                continue
        _open_gates(model, notes)
        random_codebooks(model, seed, notes)
        if with_generation_config(model):
            notes.append("generation_config: the config (a release before 4.26)")
        if index:
            notes.insert(0, f"size {index} of {len(SIZES)} ({size}) after: {errors[-1]}")
        return model, notes
    raise TinyModelError(f"{model_class.__name__}: no tiny size builds ({errors[0]})")


#: the words that name a learned gate that multiplies a path's output (Mllama's ``cross_attn_attn_gate``, its tile
#: embeddings' ``gate``; IDEFICS's ``alpha_cross_attn``)
_GATE_WORDS = ("gate", "alpha")


def _open_gates(model: Any, notes: list[str]) -> None:
    """Gates a model initialises to zero, opened (set to 1). A fresh checkpoint starts them closed so that training
    can add a path slowly; closed, a tiny model's output ignores that path, and a change that drops its input
    (Mllama's images, cross-attended behind ``tanh(gate)``) would generate the same tokens unnoticed."""
    opened = []
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            leaf = name.rsplit(".", 1)[-1]
            if (
                any(word in leaf for word in _GATE_WORDS)
                and not leaf.endswith("bias")
                and parameter.numel() <= 64
                and bool((parameter == 0).all())
            ):
                parameter.fill_(1.0)
                opened.append(name)
    if opened:
        notes.append(
            f"{len(opened)} zero-initialised gates opened (set to 1), e.g. {opened[0]}: closed, "
            "the paths behind them would not reach the output"
        )


#: the buffers a vector quantizer's codebook keeps its code vectors in (EnCodec's ``embed`` and the running average
#: it is trained by, ``embed_avg``; Mimi's ``embed_sum``, its vectors times their usage, which starts at ones)
_CODEBOOK_BUFFERS = ("embed", "embed_avg", "embed_sum")


def random_codebooks(model: Any, seed: int, notes: list[str]) -> None:
    """Codebooks a model initialises to zeros (an audio codec's quantizer: EnCodec's, Musicgen's audio decoder), filled
    with random vectors under ``seed``. All zeros, every code decodes to the same vector, so a composite that decodes
    its generated codes to a waveform returns the same audio whatever codes it generated: a change that makes other
    codes would hide behind it."""
    filled = []
    generator = torch.Generator().manual_seed(seed + 7)
    with torch.no_grad():
        for module_name, module in model.named_modules():
            if "Codebook" not in type(module).__name__:
                continue
            for name, buffer in module.named_buffers(recurse=False):
                if name in _CODEBOOK_BUFFERS and buffer.is_floating_point() and not bool(buffer.any()):
                    buffer.copy_(torch.randn(buffer.shape, generator=generator, dtype=buffer.dtype))
                    filled.append(f"{module_name}.{name}")
    if filled:
        notes.append(
            f"{len(filled)} all-zero codebook buffers filled with random codes, e.g. {filled[0]}: all zero, every "
            "code decodes to the same audio"
        )


def _sub_configs(model_class: type, config: Any) -> list[tuple[str, Any]]:
    """The sub-configs of a composite ``config`` (attributes that are config objects), as (name, config);
    only those of the class ``model_class.__init__`` annotates its ``config`` with, where it names one."""
    base = getattr(transformers, "PretrainedConfig", None) or getattr(transformers, "PreTrainedConfig", None)
    if base is None:
        return []
    found = [(name, value) for name, value in vars(config).items() if isinstance(value, base)]
    try:
        wanted = inspect.signature(model_class).parameters["config"].annotation  # its __init__'s
    except (KeyError, TypeError, ValueError):
        wanted = inspect.Parameter.empty
    if isinstance(wanted, str):  # postponed annotations: the name, in the class's module
        wanted = getattr(sys.modules.get(model_class.__module__), wanted.strip("'\""), None)
    if isinstance(wanted, type) and issubclass(wanted, base) and not isinstance(config, wanted):
        found = [(name, value) for name, value in found if isinstance(value, wanted)]
    return found


def _from_sub_config(
    model_class: type,
    config: Any,
    seed: int,
    settings: dict[str, Any] | None,
    primary: Callable[[type, Any], dict[str, Any]] | None,
    notes: list[str],
) -> Any:
    """``model_class`` built from the one sub-config of its (composite) ``config_class`` that builds it,
    or None. A class can inherit the composite's ``config_class`` from its family's base class and yet
    take one part's config (ClvpForCausalLM takes the ClvpDecoderConfig of a ClvpConfig): each sub-config
    is tried bare, and only when exactly one builds is it used (with the settings, under the seed);
    when several do, which part the class is cannot be told, and none is."""
    builds: list[tuple[str, Any]] = []
    for name, sub in _sub_configs(model_class, config):
        try:
            with quiet():
                model_class(copy.deepcopy(sub))
        except Exception:  # noqa: BLE001 - not this part's config
            continue
        builds.append((name, sub))
    if len(builds) != 1:
        if builds:
            notes.append(
                f"{model_class.__name__} builds from several sub-configs of {type(config).__name__} "
                f"({', '.join(name for name, _ in builds)}): none is taken"
            )
        return None
    name, sub = builds[0]
    chosen = settings if settings is not None else (primary(model_class, sub) if primary else {})
    # the notes say what the settings were set on: they were set on the composite, not this part
    notes[:] = [note for note in notes if not note.endswith(f"(how {model_class.__name__} is used)")]
    notes.append(
        f"config: {type(config).__name__}.{name} ({type(sub).__name__}): {model_class.__name__} "
        f"does not build from its config_class {type(config).__name__}, only from this sub-config"
    )
    for key, value in chosen.items():
        setattr(sub, key, value)
        notes.append(f"{key}: {value!r} (how {model_class.__name__} is used)")
    try:
        seed_everything(seed)
        with quiet():
            model = model_class(sub)
        model.eval()
    except Exception:  # noqa: BLE001 - the settings break it: the caller reports the composite's error
        return None
    return model


def with_generation_config(model: Any) -> bool:
    """Give a model of a release before 4.26 (no ``generation_config`` at all) its config as one: generate() read
    its settings from the config then, so what is set on either is what it reads. Whether it had to."""
    if hasattr(model, "generation_config"):
        return False  # a later release's, None included (a class that cannot generate)
    model.generation_config = model.config
    return True


def seed_everything(seed: int) -> None:
    random.seed(seed)
    torch.manual_seed(seed)
    try:
        import numpy

        numpy.random.seed(seed)
    except Exception:  # numpy is optional
        pass
