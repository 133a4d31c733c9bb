"""Generate with one remote-code model tree on one transformers release: the corpus's own generation check.

    PYTHONPATH=<release src> HF_MODULES_CACHE=<tmp> python bench/corpus_worker.py TREE WEIGHTS OUT [--make-weights]

Run by ``bench/corpus.py`` in a release's environment; it imports only the stdlib, torch and transformers and
shares no code with ``codemod.verify``. The model is loaded as users load remote code: ``AutoConfig`` and an
``Auto*`` class with ``trust_remote_code=True`` on the tree's ``config.json``. With ``--make-weights`` the
seeded random weights are saved to WEIGHTS; otherwise they are loaded from it with ``from_pretrained``, so every
side runs the same weights, loaded the way each release loads them. Greedy decoding of 8 new tokens for a batch
of two prompts, with and without the cache; OUT gets the tokens, or for each failure the exception and the line of the model code it came from.
"""

from __future__ import annotations

import argparse
import json
import sys
import traceback
from pathlib import Path
from typing import Any

NEW_TOKENS = 8
# the head each model is built with: the first its auto_map names
AUTO_CLASSES = ("AutoModelForCausalLM", "AutoModel", "AutoModelForSeq2SeqLM")
PROMPTS = [[3, 15, 27, 40, 52, 64], [7, 19, 31, 44, 58, 70]]


def describe(error: BaseException) -> str:
    """The exception and where it was raised: the last frame in the model's own code, else the last frame."""
    frames = traceback.extract_tb(error.__traceback__)
    mine = [f for f in frames if "transformers_modules" in f.filename]
    chosen = mine or list(frames)
    where = ""
    if chosen:
        frame = chosen[-1]
        where = f" at {Path(frame.filename).name}:{frame.lineno}: {(frame.line or '').strip()}"
    message = str(error).strip().splitlines()[0] if str(error).strip() else ""
    return f"{type(error).__name__}: {message[:300]}{where}"


def build(tree: Path, weights: Path, make: bool, init: dict[str, Any]) -> Any:
    import torch
    import transformers

    config = transformers.AutoConfig.from_pretrained(str(tree), trust_remote_code=True)
    auto_map = getattr(config, "auto_map", {}) or {}
    name = next(a for a in AUTO_CLASSES if a in auto_map)
    if not make:
        # nothing built first: from_config registers the bare remote class with the auto class, and a later
        # from_pretrained in the same process would then skip 5.x's add_generation_mixin_to_remote_model
        return loaded(tree, weights, name, init)
    torch.manual_seed(0)
    model = getattr(transformers, name).from_config(config, trust_remote_code=True, **init)
    model = model.float().eval()
    reinitialised = fill_uninitialised(model)
    torch.save(model.state_dict(), weights)
    return model, name, reinitialised, []


def loaded(tree: Path, weights: Path, name: str, init: dict[str, Any]) -> Any:
    """The model as users load it: ``from_pretrained`` on a copy of the tree holding the weights. 5.x builds it on
    the meta device and fills only what the checkpoint and ``_init_weights`` give (non-persistent buffers
    included), which ``from_config`` plus ``load_state_dict`` would hide."""
    import shutil
    import tempfile

    import torch
    import transformers

    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(scratch) / "model"
        shutil.copytree(tree, folder, ignore=shutil.ignore_patterns(".git"))
        torch.save(torch.load(weights), folder / "pytorch_model.bin")
        model, info = getattr(transformers, name).from_pretrained(
            str(folder), trust_remote_code=True, output_loading_info=True, **init
        )
    model = model.float().eval()
    return model, name, list(info.get("missing_keys", [])), list(info.get("unexpected_keys", []))


def fill_uninitialised(model: Any) -> list[str]:
    """Parameters some remote code leaves as ``torch.empty`` (its ``_init_weights`` does nothing, e.g.
    ChatGLM's RMSNorm): garbage there makes every token the same. Norm-like vectors become ones, the rest
    small normal noise; the names are returned."""
    import torch

    names = []
    with torch.no_grad():
        for name, parameter in model.named_parameters():
            if torch.isfinite(parameter).all() and parameter.abs().max() < 1e4:
                continue
            if parameter.dim() == 1:
                parameter.fill_(1.0)
            else:
                parameter.normal_(0.0, 0.02)
            names.append(name)
    return names


def no_eos(model: Any) -> None:
    """Random weights may pick the end-of-sequence id: without one every side generates all 8 tokens."""
    for holder in (model.config, getattr(model, "generation_config", None)):
        if holder is not None:
            try:
                holder.eos_token_id = None
            except Exception:  # noqa: BLE001 - a read-only attribute: leave it
                pass


def generate(model: Any, use_cache: bool) -> list[list[int]]:
    import torch

    ids = torch.tensor(PROMPTS)
    with torch.no_grad():
        out = model.generate(
            input_ids=ids,
            attention_mask=torch.ones_like(ids),
            max_new_tokens=NEW_TOKENS,
            do_sample=False,
            num_beams=1,
            use_cache=use_cache,
            pad_token_id=0,
        )
    sequences = out if isinstance(out, torch.Tensor) else out.sequences
    return [row[-NEW_TOKENS:] for row in sequences.tolist()]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("tree", type=Path)
    parser.add_argument("weights", type=Path)
    parser.add_argument("out", type=Path)
    parser.add_argument("--make-weights", action="store_true")
    parser.add_argument("--init", default="{}", help="JSON: keyword arguments for the model's __init__")
    args = parser.parse_args(argv)
    result: dict[str, Any] = {"tokens": {}, "errors": {}}
    try:
        import transformers

        result["transformers"] = transformers.__version__
        # with --make-weights, "missing" lists the parameters filled because the model left them uninitialised
        model, result["auto_class"], result["missing"], result["unexpected"] = build(
            args.tree, args.weights, args.make_weights, json.loads(args.init)
        )
        no_eos(model)
    except Exception as error:  # noqa: BLE001 - the failure is the result
        result["errors"]["load"] = describe(error)
        args.out.write_text(json.dumps(result, indent=1))
        return 0
    for use_cache in (True, False):
        key = "cache" if use_cache else "no_cache"
        try:
            result["tokens"][key] = generate(model, use_cache)
        except Exception as error:  # noqa: BLE001 - the failure is the result
            result["errors"][key] = describe(error)
    args.out.write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
