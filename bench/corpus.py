"""The remote-code corpus: real Hub model code, the tool run on it as a user would, and what generates after.

    .venv/bin/python -m bench.corpus [--mirror DIR] [--only NAME ...] [--target 4.46.3 --target 5.23.0]
        [--json results.json] [--markdown docs/corpus.md] [--work DIR]
    .venv/bin/python -m bench.corpus --render results.json --markdown docs/corpus.md   # only the table

For each model of ``bench/corpus.json`` (pinned repository commits; the files are never committed here):
materialise its files into a scratch git repository (from ``--mirror``, a directory of bare git repositories
as the ``fetch`` tool leaves them, else ``git clone`` from GitHub), shrink ``config.json`` to a tiny random
model, and for each target run ``codemod scan``, ``codemod diff`` and ``codemod apply --verify --from
<written for> --target T`` as subprocesses. Then an independent generation check (``bench/corpus_worker.py``,
no ``codemod.verify`` code): seeded weights made with the original code on the release it was written for
(the reference), greedy 8 tokens with and without the cache for the original code on T (before) and for the
code ``apply`` left on T (after), each compared with the reference's tokens.

``--json`` results are merged by model name, so models can be run one at a time into one file; the markdown
table is rendered from the whole file. Prints numbers and asserts nothing.
"""

from __future__ import annotations

import argparse
import copy
import json
import re
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
MANIFEST = REPO / "bench" / "corpus.json"
DEFAULT_TARGETS = ("4.46.3", "5.23.0")
_VERSION = re.compile(r"^\d+\.\d+\.\d+$")
_COMMIT = re.compile(r"^[0-9a-f]{40}$")


@dataclass(frozen=True)
class Model:
    """One manifest entry: where the remote code lives and the release it was written for."""

    name: str
    family: str
    repo: str
    commit: str
    folder: str
    files: tuple[str, ...]
    written_for: str
    requirements: tuple[str, ...] = ()
    # modules the code imports only inside a method that generation never calls: empty stand-ins satisfy
    # transformers' import check without installing them (and what they pull in) into an old release's env
    stubs: tuple[str, ...] = ()
    # keyword arguments for the model's __init__ (ChatGLM's empty_init=False: random weights, not torch.empty)
    init: dict[str, Any] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)
    note: str = ""


class ManifestError(ValueError):
    pass


def parse_manifest(document: dict[str, Any]) -> list[Model]:
    """The models of a manifest document, checked: every field there, commits pinned, names unique."""
    models = []
    for i, entry in enumerate(document.get("models", [])):
        where = f"models[{i}] ({entry.get('name', '?')})"
        missing = [k for k in ("name", "family", "repo", "commit", "files", "written_for") if k not in entry]
        if missing:
            raise ManifestError(f"{where}: missing {', '.join(missing)}")
        if not _COMMIT.match(entry["commit"]):
            raise ManifestError(f"{where}: commit must be 40 hex digits, not {entry['commit']!r}")
        if not _VERSION.match(entry["written_for"]):
            raise ManifestError(f"{where}: written_for must be a release like 4.33.1, not {entry['written_for']!r}")
        if "config.json" not in entry["files"] or not any(f.startswith("modeling_") for f in entry["files"]):
            raise ManifestError(f"{where}: files need config.json and a modeling_*.py")
        if entry["repo"].count("/") != 1:
            raise ManifestError(f"{where}: repo must be owner/name, not {entry['repo']!r}")
        models.append(
            Model(
                name=entry["name"],
                family=entry["family"],
                repo=entry["repo"],
                commit=entry["commit"],
                folder=entry.get("folder", ""),
                files=tuple(entry["files"]),
                written_for=entry["written_for"],
                requirements=tuple(entry.get("requirements", ())),
                stubs=tuple(entry.get("stubs", ())),
                init=dict(entry.get("init", {})),
                config=dict(entry.get("config", {})),
                note=entry.get("note", ""),
            )
        )
    names = Counter(m.name for m in models)
    if dupes := sorted(n for n, c in names.items() if c > 1):
        raise ManifestError(f"model names must be unique: {', '.join(dupes)}")
    return models


def load_manifest(path: Path = MANIFEST) -> list[Model]:
    return parse_manifest(json.loads(path.read_text()))


# ------------------------------------------------------------------------------------------- tiny configs

# Not the sizes codemod's verifier shrinks to (2 layers, width 64, 4 heads): like a real config.json, ours must differ
# from them, or the verifier rebuilds the keys its shrinking leaves as they are from the config class's defaults.
TINY_LAYERS = 3
TINY_HIDDEN = 96
TINY_HEADS = 3
TINY_KV_HEADS = 1
TINY_VOCAB = 160
MAX_POSITIONS = 256
# each key's tiny value, by what the key sizes; a key is shrunk only where the config has it as an int
_SIZES: dict[str, int] = {
    **dict.fromkeys(("num_hidden_layers", "n_layer", "n_layers", "num_layers"), TINY_LAYERS),
    **dict.fromkeys(("hidden_size", "n_embd", "d_model"), TINY_HIDDEN),
    **dict.fromkeys(("num_attention_heads", "n_head", "n_heads", "num_heads"), TINY_HEADS),
    **dict.fromkeys(("kv_channels", "head_dim", "v_head_dim"), TINY_HIDDEN // TINY_HEADS),
    **dict.fromkeys(("rotary_dim", "qk_nope_head_dim", "qk_rope_head_dim"), 8),
    **dict.fromkeys(("intermediate_size", "ffn_hidden_size", "n_inner"), 2 * TINY_HIDDEN),
    **dict.fromkeys(("vocab_size", "padded_vocab_size"), TINY_VOCAB),
    # mixture of experts and low-rank attention (DeepSeek-style)
    "moe_intermediate_size": 32,
    "n_routed_experts": 4,
    "num_experts": 4,
    "num_experts_per_tok": 2,
    "n_group": 2,
    "topk_group": 1,
    "first_k_dense_replace": 1,
    "q_lora_rank": 32,
    "kv_lora_rank": 16,
}
_KV_HEADS = ("num_key_value_heads", "multi_query_group_num", "n_head_kv", "num_kv_heads")
_POSITIONS = ("max_position_embeddings", "n_positions", "n_ctx", "max_seq_len", "seq_length", "model_max_length")
# special ids past the tiny vocabulary become these (an embedding's padding_idx must be inside it)
_SPECIAL_IDS = {"pad_token_id": 0, "bos_token_id": 1, "eos_token_id": 2}
# what would make a tiny random model need a GPU or a quantisation library
_DROPPED = ("quantization_config",)


def _merge(base: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in overrides.items():
        out[key] = _merge(out[key], value) if isinstance(value, dict) and isinstance(out.get(key), dict) else value
    return out


def _tiny_id(key: str, value: Any, vocab: int) -> Any:
    if isinstance(value, list):
        return [_tiny_id(key, v, vocab) for v in value]
    if isinstance(value, int) and not isinstance(value, bool) and value >= vocab:
        return _SPECIAL_IDS.get(key, 0)
    return value


def _is_size(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def shrink_config(config: dict[str, Any], overrides: dict[str, Any] | None = None) -> dict[str, Any]:
    """A tiny random-model config: few layers, small widths and vocabulary; architecture keys kept.

    Key/value heads stay equal to the heads where they were (plain multi-head attention), else 2.
    ``overrides`` (the manifest's per-model keys) are merged in last, nested dicts key by key."""
    out = {k: copy.deepcopy(v) for k, v in config.items() if k not in _DROPPED}
    heads = next((config[k] for k in ("num_attention_heads", "n_head", "n_heads") if _is_size(config.get(k))), None)
    for key, value in config.items():
        if key in _SIZES and _is_size(value):
            out[key] = _SIZES[key]
        elif key in _KV_HEADS and _is_size(value):
            out[key] = TINY_HEADS if value == heads else TINY_KV_HEADS
        elif key in _POSITIONS and _is_size(value):
            out[key] = min(value, MAX_POSITIONS)
    vocab = min((out[k] for k in ("vocab_size", "padded_vocab_size") if _is_size(out.get(k))), default=TINY_VOCAB)
    for key, value in config.items():
        if key.endswith("_token_id"):
            out[key] = _tiny_id(key, value, vocab)
    if "torch_dtype" in out:
        out["torch_dtype"] = "float32"
    return _merge(out, overrides or {})


# ------------------------------------------------------------------------------------------- the table


def _blockers(codes: dict[str, int]) -> str:
    return ", ".join(f"{code}×{n}" if n > 1 else code for code, n in sorted(codes.items())) or "none"


def _side(side: dict[str, Any] | None) -> str:
    """One generation side: ran (both cache modes) or the first failure, and whether it matched the reference."""
    if not side:
        return "—"
    errors = side.get("errors", {})
    if "load" in errors:
        return "✗ load"
    failed = [k.replace("_", " ") for k in ("cache", "no_cache") if k in errors]
    same = side.get("same_as_reference")
    verdict = "" if same is None else ("same" if same else "differs")
    if not failed:
        return f"✓ {verdict}".strip()
    ran = [k.replace("_", " ") for k in ("cache", "no_cache") if k in side.get("tokens", {})]
    shown = "✗ " + " + ".join(failed)
    return f"{shown}; {' + '.join(ran)} {verdict}".strip() if ran and verdict else shown


def _verdicts(summary: dict[str, int]) -> str:
    return ", ".join(f"{n} {k}" for k, n in summary.items() if n) or "—"


def _idioms(outcomes: list[dict[str, str]]) -> str:
    """The fixes outside prepare_inputs_for_generation apply tried: kept and reverted files."""
    counts = Counter(o["outcome"] for o in outcomes)
    return ", ".join(f"{counts[k]} file{'s' if counts[k] > 1 else ''} {k}" for k in ("kept", "reverted") if counts[k])


def render_markdown(results: dict[str, Any]) -> str:
    """The measured table, one row per model and target, and each still-blocking line below it."""
    out = [
        "# Remote-code corpus: measured",
        "",
        "Generated by `python -m bench.corpus`, last run with the tool at "
        f"`{results.get('tool_commit', '?')}` ({results.get('date', '?')}; each model's run is under Sources); "
        "do not edit by hand. The models "
        "are in `bench/corpus.json` (pinned GitHub commits, never committed here); each runs as a tiny random "
        f"model ({TINY_LAYERS} layers, width {TINY_HIDDEN}, {TINY_HEADS} heads, vocabulary {TINY_VOCAB}).",
        "",
        "Columns: **overrides** `prepare_inputs_for_generation` overrides found by `codemod scan --target T`; "
        "**blockers** its TB codes; **proposed / written** the overrides `scan` would delete or reduce and "
        "those `apply --verify --from <written for>` changed; **verdicts** from `apply`'s `--report`, and the "
        "files whose idiom fixes (the TB migrations) `apply` kept or reverted. The last three "
        "columns are our own generation check (greedy, 8 tokens, with and without the cache): the original "
        "code on the release it was written for (**reference**), the original code on T (**before**), the "
        "code `apply` left on T (**after**); ✓ ran, ✗ what failed, same/differs: the tokens against the "
        "reference's.",
        "",
        *summary_lines(results),
        "",
        "| family | model | written for | target | overrides | blockers | proposed / written | verdicts "
        "| reference | before | after |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    failures = []
    for name in sorted(results.get("models", {}), key=lambda n: (results["models"][n]["family"], n)):
        model = results["models"][name]
        reference = _side(model.get("reference"))
        for target, run in sorted(model.get("targets", {}).items(), key=lambda kv: _version_key(kv[0])):
            scan = run.get("scan", {})
            apply = run.get("apply", {})
            written = apply.get("written")
            idioms = _idioms(apply.get("idioms", []))
            verdicts = _verdicts(apply.get("verdicts", {})) + (f"; idiom fixes: {idioms}" if idioms else "")
            out.append(
                f"| {model['family']} | `{name}` | {model['written_for']} | {target} "
                f"| {scan.get('overrides', '?')} | {_blockers(scan.get('blockers', {}))} "
                f"| {scan.get('proposed', '?')} / {'?' if written is None else written} "
                f"| {verdicts} | {reference} "
                f"| {_side(run.get('before'))} | {_side(run.get('after'))} |"
            )
            after = run.get("after") or {}
            for key, error in sorted(after.get("errors", {}).items()):
                failures.append(f"- `{name}` on {target}, after, {key.replace('_', ' ')}: {_md(error)}")
    if failures:
        out += ["", "## What still fails after `apply` (our generation check)", "", *failures]
    out += [
        "",
        "## Sources",
        "",
        "| model | repository | commit | apply --verify seconds (per target) | tool | note |",
    ]
    out.append("|---|---|---|---|---|---|")
    for name in sorted(results.get("models", {})):
        model = results["models"][name]
        seconds = ", ".join(
            f"{t}: {run.get('apply', {}).get('seconds', '?')}"
            for t, run in sorted(model.get("targets", {}).items(), key=lambda kv: _version_key(kv[0]))
        )
        out.append(
            f"| `{name}` | {model.get('repo', '?')} | `{model.get('commit', '?')[:12]}` | {seconds} "
            f"| {model.get('tool_commit', '?')} | {_md(model.get('note', ''))} |"
        )
    out += [
        "",
        "Reproduce: `.venv/bin/python -m bench.corpus --mirror DIR --json results.json --markdown docs/corpus.md`.",
    ]
    return "\n".join(out) + "\n"


def _generates_as_reference(side: dict[str, Any] | None) -> bool:
    side = side or {}
    return not side.get("errors") and side.get("same_as_reference") is True


def summary_lines(results: dict[str, Any]) -> list[str]:
    """Per target: edits proposed and written, and how many models generate as their reference, before and after."""
    lines = []
    targets = sorted({t for m in results.get("models", {}).values() for t in m.get("targets", {})}, key=_version_key)
    for target in targets:
        runs = [m["targets"][target] for m in results["models"].values() if target in m.get("targets", {})]
        proposed = sum(r.get("scan", {}).get("proposed", 0) for r in runs)
        written = sum(r.get("apply", {}).get("written") or 0 for r in runs)
        before = sum(_generates_as_reference(r.get("before")) for r in runs)
        after = sum(_generates_as_reference(r.get("after")) for r in runs)
        lines.append(
            f"- **{target}**: {written} of {proposed} proposed edits written; {after} of {len(runs)} models "
            f"generate as their reference after `apply` (with and without the cache), {before} before."
        )
    return lines


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in re.findall(r"\d+", version))


def merge_results(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """``new``'s models replace ``old``'s of the same name; targets of a model are merged the same way."""
    models = dict(old.get("models", {}))
    for name, model in new.get("models", {}).items():
        kept = models.get(name, {})
        targets = {**kept.get("targets", {}), **model.get("targets", {})}
        models[name] = {**kept, **model, "targets": targets}
    return {**old, **{k: v for k, v in new.items() if k != "models"}, "models": models}


# ------------------------------------------------------------------------------------------- CLI


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.corpus", description=__doc__.split("\n\n")[0])
    parser.add_argument("--manifest", type=Path, default=MANIFEST)
    parser.add_argument("--mirror", type=Path, help="a directory of bare git repositories (owner+name/repo)")
    parser.add_argument("--only", action="append", default=[], help="only this model (repeatable)")
    parser.add_argument("--target", action="append", default=[], help=f"default: {' and '.join(DEFAULT_TARGETS)}")
    parser.add_argument("--work", type=Path, help="where the scratch trees go (default: a temporary directory)")
    parser.add_argument("--json", type=Path, help="merge the results into this file")
    parser.add_argument("--markdown", type=Path, help="write the table of every model in --json (or this run)")
    parser.add_argument("--render", type=Path, help="only render the table from this results file")
    args = parser.parse_args(argv)
    if args.render:
        results = json.loads(args.render.read_text())
    else:
        from bench.corpus_runs import RunOptions, run_corpus

        models = [m for m in load_manifest(args.manifest) if not args.only or m.name in args.only]
        if unknown := set(args.only) - {m.name for m in models}:
            parser.error(f"not in the manifest: {', '.join(sorted(unknown))}")
        options = RunOptions(targets=tuple(args.target) or DEFAULT_TARGETS, mirror=args.mirror, work=args.work)
        results = run_corpus(models, options)
        if args.json:
            old = json.loads(args.json.read_text()) if args.json.exists() else {}
            results = merge_results(old, results)
            args.json.write_text(json.dumps(results, indent=1) + "\n")
    table = render_markdown(results)
    if args.markdown:
        args.markdown.write_text(table)
    print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
