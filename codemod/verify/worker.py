"""A verification worker: one side's code (old or new), one process, many model classes.

Started by the runner in the checkout's environment with PYTHONPATH = <side>/src + this directory;
imports only the stdlib, torch, transformers and the modules beside it. It reads one JSON request
per line on stdin and answers one JSON line on the real stdout once the result file is written
(model code may print, so sys.stdout is pointed at stderr while it runs).

Request: {"id", "module", "class", "model_dir", "mode": "build" | "load", "scenarios": [...],
          "seed", "device", "result": path}
The "build" side creates the tiny models and every scenario's inputs and saves them; both sides
then load the models from ``model_dir`` and the new side loads the inputs, so weights and inputs
are the same byte for byte whatever the new code does.
"""

from __future__ import annotations

import copy
import dataclasses
import gc
import importlib
import inspect
import json
import os
import resource
import sys
import time
import traceback
from typing import TYPE_CHECKING, Any

PROTOCOL = sys.stdout
sys.stdout = sys.stderr  # whatever the models print must not reach the protocol stream

import recording  # noqa: E402
import scenarios  # noqa: E402
import testers  # noqa: E402
import tiny  # noqa: E402
import torch  # noqa: E402
import usage  # noqa: E402

# torch and transformers exist only in the verification environment this module runs in, not in the
# tool's venv where it is type-checked: their objects (model classes, models, configs) are Any. The
# request and result documents are JSON objects (``codemod.verify.runner.WorkerRequest`` and
# ``codemod.verify.compare.ResultDocument`` describe them; this side cannot import those).
if TYPE_CHECKING:  # annotations only: the verification environment may run an older Python
    Document = dict[str, Any]
    #: a model as built: (model, notes, the settings it was built with)
    Built = tuple[Any, list[str], dict[str, Any]]


def _load(model_class: type[Any], path: str, device: str, variant: usage.Variant) -> Any:
    if variant.composite == "encoder-decoder":
        from transformers import EncoderDecoderModel

        model = EncoderDecoderModel.from_pretrained(path)
    else:
        model = model_class.from_pretrained(path, **variant.load)
    model.eval()
    tiny.with_generation_config(model)
    return model.to(device)


def _fresh(model: Any, path: str, which: str, model_class: type[Any], device: str, variant: usage.Variant) -> Any:
    """A copy of ``model`` as loaded, for one scenario: generate() leaves state on some models (Qwen2-VL's and Ernie
    4.5 VL's ``rope_deltas`` from the last batch, an assistant's candidate schedule), which the next scenario would
    start from; each starts from the saved weights instead. Loaded again where the model cannot be copied."""
    try:
        return copy.deepcopy(model)
    except Exception:  # noqa: BLE001 - a module holding something that cannot be copied
        return _load(model_class, os.path.join(path, which), device, variant)


def _from_tester(model_class: type[Any], seed: int, settings: dict[str, Any] | None = None) -> Built | None:
    """The model built from the checkout's own tester config (None when there is none or it fails)."""
    found = testers.tester_config(model_class, os.getcwd())
    if found is None:
        return None
    config, where = found
    tiny.portable(config)
    if settings is None:
        settings = usage.primary_settings(model_class, config)
    usage.apply_settings(config, settings)
    notes = [where, *(f"{key}: {value!r} (how {model_class.__name__} is used)" for key, value in settings.items())]
    try:
        tiny.seed_everything(seed)
        model = model_class(config)
        model.eval()
        tiny.generation_inputs(model, seed=seed)  # the tester's tokens must make valid inputs too
    except Exception as error:  # noqa: BLE001 - shrink generically instead
        print(
            f"testers: {where} does not build {model_class.__name__}: {type(error).__name__}: {error}"[:500],
            file=sys.stderr,
        )
        return None
    return model, notes, settings


def _built(model_class: type[Any], seed: int, settings: dict[str, Any] | None) -> Built:
    """(model, notes, settings): from the checkout's tester when it has one, else a generic shrink;
    with ``settings`` (None: the class's primary settings) set on the config before it is built."""
    found = _from_tester(model_class, seed, settings)
    if found is not None:
        return found
    chosen: dict[str, Any] = {}

    def primary(cls: type[Any], config: Any) -> dict[str, Any]:
        chosen.update(usage.primary_settings(cls, config))
        return chosen

    model, notes = tiny.tiny_model(
        model_class, seed=seed, settings=settings, primary=primary, base=repository_config(model_class)
    )
    return model, notes, settings if settings is not None else chosen


def repository_config(model_class: type[Any]) -> dict[str, Any] | None:
    """The ``config.json`` beside a remote-code model's file, when it is this class's config (a
    repository ships the sizes and options its model runs with; shrunk, they make the tiny model)."""
    if model_class.__module__.startswith("transformers."):
        return None
    try:
        folder = os.path.dirname(inspect.getfile(model_class))
    except (TypeError, OSError):
        return None
    path = os.path.join(folder, "config.json")
    if not os.path.isfile(path):
        return None
    with open(path, encoding="utf-8") as handle:
        data = json.load(handle)
    config_class = getattr(model_class, "config_class", None)
    wanted = getattr(config_class, "model_type", None)
    return data if isinstance(data, dict) and wanted and data.get("model_type") == wanted else None


def _as_loaded(model_class: type[Any]) -> type[Any]:
    """The class as transformers' auto classes load remote code: from 4.45 on they add
    ``GenerationMixin`` to a class that defines its own ``prepare_inputs_for_generation`` (or
    ``generate``) without inheriting it, and from 4.52 ``PreTrainedModel`` no longer brings it."""
    if model_class.__module__.startswith("transformers."):
        return model_class
    try:
        from transformers.models.auto.auto_factory import add_generation_mixin_to_remote_model
    except ImportError:  # before 4.45: PreTrainedModel is a GenerationMixin
        return model_class
    loaded: type[Any] = add_generation_mixin_to_remote_model(model_class)
    return loaded


def _variant_dir(model_dir: str, index: int) -> str:
    return os.path.join(model_dir, "variants", str(index))


def _build(model_class: type[Any], model_dir: str, seed: int) -> tuple[list[str], list[usage.Variant]]:
    """Build and save every variant's model and assistant; the variants, primary first."""
    notes: list[str] = []
    main, built_notes, primary = _built(model_class, seed, None)
    with open(os.path.join(model_dir, DRIVEN_PART), "w", encoding="utf-8") as handle:
        json.dump({"part": driven_part(main)}, handle)
    chosen = usage.variants(model_class, main.config, primary)
    for index, variant in enumerate(chosen):
        try:
            for name, offset in (("main", 0), ("assistant", 1)):
                if index == 0 and name == "main":
                    model = main
                else:
                    model, _, _ = _built(model_class, seed + offset, variant.settings)
                if variant.composite == "encoder-decoder":
                    model = usage.encoder_decoder(model, seed + offset)
                elif variant.composite and variant.composite.startswith(usage.OTHER_DECODER):
                    model = usage.with_decoder(model, variant.composite[len(usage.OTHER_DECODER) :], seed + offset)
                tiny.generation_inputs(model, seed=seed)  # settles pad/eos in the generation config before saving
                model.save_pretrained(os.path.join(_variant_dir(model_dir, index), name), safe_serialization=False)
        except Exception as error:  # noqa: BLE001 - the primary model must build; another variant may not
            if variant.primary:
                raise
            chosen[index] = dataclasses.replace(variant, error=f"{type(error).__name__}: {error}"[:300])
    notes.extend(built_notes)
    with open(os.path.join(model_dir, "variants.json"), "w", encoding="utf-8") as handle:
        json.dump([v.to_json() for v in chosen], handle)
    return notes, chosen


#: where the build side writes which part of the model a composite generates through (its attribute, "" for none)
DRIVEN_PART = "part.json"


def driven_part(model: Any) -> str:
    """The attribute of the part a composite generates through, where its own ``prepare_inputs_for_generation`` is
    the mixin's (it has none, and drives a part's ``generate()``: CLVP's speech decoder): the first child with a method
    of its own. That part's prepared inputs are the ones recorded and compared; "" for a class with its own method.
    Decided on the build side, from the old code, so that both sides record the same part."""
    method = getattr(type(model), "prepare_inputs_for_generation", None)
    if not str(getattr(method, "__qualname__", "")).startswith("GenerationMixin."):
        return ""
    for name, child in model.named_children():
        own = getattr(type(child), "prepare_inputs_for_generation", None)
        if own is not None and hasattr(child, "generate") and not own.__qualname__.startswith("GenerationMixin."):
            return str(name)
    return ""


def _saved_variants(model_dir: str) -> list[usage.Variant]:
    with open(os.path.join(model_dir, "variants.json"), encoding="utf-8") as handle:
        return [usage.Variant.from_json(v) for v in json.load(handle)]


def handle(request: Document) -> Document:
    """Build (or load) one class's tiny models and run the requested scenarios on each of its variants: the
    result document, with the class's status where it cannot be imported or built."""
    started = time.perf_counter()
    result: Document = {"class": request["class"], "module": request["module"], "mode": request["mode"]}
    try:
        module = importlib.import_module(request["module"])
        model_class = _as_loaded(getattr(module, request["class"]))
    except Exception as error:  # noqa: BLE001 - reported as the side's failure
        result.update(status="import-error", error=f"{type(error).__name__}: {error}")
        return result
    device = request.get("device", "cpu")
    seed = int(request.get("seed", 0))
    model_dir = request["model_dir"]
    build = request["mode"] == "build"
    try:
        if build:
            result["notes"], chosen = _build(model_class, model_dir, seed)
        else:
            chosen = _saved_variants(model_dir)
        part = _part(model_dir)
    except tiny.TinyModelError as error:
        result.update(status="unbuildable", error=str(error))
        return result
    except Exception as error:  # noqa: BLE001
        result.update(status="unbuildable", error=f"{type(error).__name__}: {error}"[:2000])
        return result
    result["status"] = "ok"
    result["variants"] = [v.to_json() for v in chosen]
    result.update(_forward_facts(model_class))
    if build:  # the old code's method decides what evidence a verdict needs (compare reads the old side's)
        result["required"] = usage.required_scenarios(model_class)
    inputs_dir = os.path.join(model_dir, "inputs")
    os.makedirs(inputs_dir, exist_ok=True)
    result["scenarios"] = []
    run = _ClassRun(model_class, model_dir, inputs_dir, device, seed, build, part)
    for index, variant in enumerate(chosen):
        if variant.error:
            continue  # reported with the variants; nothing of it runs on either side
        if not _run_variant(run, index, variant, request["scenarios"], result):
            return result
    result["seconds"] = round(time.perf_counter() - started, 3)
    return result


@dataclasses.dataclass(frozen=True)
class _ClassRun:
    """What every scenario of one class's request runs with (read from the request once)."""

    model_class: type[Any]
    model_dir: str
    #: where the build side saves each scenario's inputs, and the load side reads them
    inputs_dir: str
    device: str
    seed: int
    build: bool
    #: :func:`driven_part` of the primary model
    part: str


def _run_variant(run: _ClassRun, index: int, variant: usage.Variant, names: list[str], result: Document) -> bool:
    """Run the scenarios ``names`` that ``variant`` takes into ``result["scenarios"]``, an error for each where its
    models do not load; False where the primary variant's do not (``result`` then says the class is unbuildable)."""
    path = _variant_dir(run.model_dir, index)
    try:
        model = _load(run.model_class, os.path.join(path, "main"), run.device, variant)
        assistant = _load(run.model_class, os.path.join(path, "assistant"), run.device, variant)
    except Exception as error:  # noqa: BLE001
        if variant.primary:
            result.update(status="unbuildable", error=f"{type(error).__name__}: {error}"[:2000])
            return False
        message = f"{type(error).__name__}: {error}"[:2000]
        result["scenarios"] += [
            {"name": variant.scenario_name(n), "status": "error", "error": message, "calls": []}
            for n in names
            if variant.scenarios is None or n in variant.scenarios
        ]
        return True
    for name in names:
        if variant.scenarios is not None and name not in variant.scenarios:
            continue
        result["scenarios"].append(_run_one(run, index, variant, name, model, assistant))
    return True


def _run_one(run: _ClassRun, index: int, variant: usage.Variant, name: str, model: Any, assistant: Any) -> Document:
    """One scenario on fresh copies of the variant's loaded model and assistant: its outcome, named and timed."""
    began = time.perf_counter()
    path = _variant_dir(run.model_dir, index)
    fresh, fresh_assistant = (
        _fresh(model, path, "main", run.model_class, run.device, variant),
        _fresh(assistant, path, "assistant", run.model_class, run.device, variant),
    )
    recorded = (
        fresh.decoder
        if variant.composite == "encoder-decoder"
        else getattr(fresh, run.part)
        if run.part and not variant.composite
        else None
    )
    outcome: Document = scenarios.run_scenario(
        name,
        fresh,
        fresh_assistant,
        seed=run.seed,
        device=run.device,
        build=run.build,
        recorded=recorded,
        inputs_path=os.path.join(run.inputs_dir, f"{index}-{name}.pt"),
    )
    del fresh, fresh_assistant
    outcome["seconds"] = round(time.perf_counter() - began, 3)
    outcome["name"] = variant.scenario_name(name)
    outcome["variant"] = variant.name
    return outcome


def _part(model_dir: str) -> str:
    """:func:`driven_part` of the primary model, as the build side saved it ("" where it saved none)."""
    path = os.path.join(model_dir, DRIVEN_PART)
    if not os.path.isfile(path):
        return ""
    with open(path, encoding="utf-8") as handle:
        return str(json.load(handle).get("part", ""))


def _forward_facts(model_class: type[Any]) -> dict[str, Any]:
    """What comparison needs to know of the class's ``forward``, from its signature read once (nothing where it
    cannot be read):

    - ``caches``: whether the class can cache at all (its forward takes a cache, or the flag that turns one on);
    - ``forward_optional``: the parameters that default to None. Passing None there is leaving them out, so a None
      the new code passes, or one it no longer passes, cannot be what crashed it (comparison's repairs);
    - ``forward_absorbs``: where it takes ``**kwargs``, the parameters it names (a key it does not name lands in
      ``**kwargs``); None where it takes none. A None the old code put under such a key and the new code leaves out
      is a None missing from ``**kwargs``: what the prepared-inputs comparison already calls the same, and nothing
      a forward can require."""
    try:
        parameters = list(inspect.signature(model_class.forward).parameters.values())
    except (TypeError, ValueError):
        return {"caches": False, "forward_optional": [], "forward_absorbs": None}
    names = {p.name for p in parameters}
    named = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    var_keyword = any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters)
    return {
        "caches": any(name in names for name in (*recording.CACHE_KEYS, "use_cache")),
        "forward_optional": sorted(p.name for p in parameters if p.kind in named and p.default is None),
        "forward_absorbs": sorted(p.name for p in parameters if p.kind is not inspect.Parameter.VAR_KEYWORD)
        if var_keyword
        else None,
    }


def _resident_mb() -> int:
    """This process's resident memory now (not its peak), in MiB."""
    with open("/proc/self/statm", encoding="ascii") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") // 2**20


def _cap_memory() -> None:
    """A ceiling on this process's heap (``CODEMOD_WORKER_MEMORY_MB``, set by the runner): a model
    that needs more fails with a MemoryError the report shows, instead of waking the kernel's OOM
    killer, which may pick any process on the machine."""
    limit = int(os.environ.get("CODEMOD_WORKER_MEMORY_MB", "0") or 0)
    hard = resource.getrlimit(resource.RLIMIT_DATA)[1]
    if limit > 0:
        soft = limit * 2**20 if hard == resource.RLIM_INFINITY else min(limit * 2**20, hard)
        resource.setrlimit(resource.RLIMIT_DATA, (soft, hard))


def main() -> None:
    torch.set_num_threads(int(os.environ.get("CODEMOD_TORCH_THREADS", "1")))
    _cap_memory()
    for line in sys.stdin:
        if not line.strip():
            continue
        request = json.loads(line)
        try:
            result = handle(request)
        except Exception:  # noqa: BLE001 - a bug here must not kill the other classes' runs
            result = {"class": request.get("class"), "status": "worker-error", "error": traceback.format_exc()[-2000:]}
        with open(request["result"], "w", encoding="utf-8") as handle_out:
            json.dump(result, handle_out)
        status = result.get("status")
        del result
        gc.collect()  # the class's models and tensors, before the next one is built
        PROTOCOL.write(json.dumps({"id": request["id"], "status": status, "resident_mb": _resident_mb()}) + "\n")
        PROTOCOL.flush()


if __name__ == "__main__":
    main()
