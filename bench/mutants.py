"""The verifier's kill rate: mutants of the migrated code, run through ``codemod verify``, judged by crosscheck.

    .venv/bin/python bench/mutants.py --migrated REPO --python ENV_PY [--tests CLONE]
        [--kinds ids-unsliced,positions-none] [--sample 12] [--classes LlamaForCausalLM,...] [--only llama,gpt2]
        [--jobs 2] [--json out.json] [--work DIR] [--list]

``REPO`` is a migrated transformers 4.45.2: a git repository whose ``HEAD`` is the pristine release and
whose working tree holds ``codemod apply --verify``'s result (without ``--migrated``, one is made once
with ``codemod apply --verify --no-own-tests`` in the user cache). It is never written: the bench
works on a clone of it with the same changes applied.

Each **mutant** breaks one behaviour of the migrated code, textually, and fails loudly when its
pattern is not found exactly once:

- in the generic mixin hoisted into ``generation/utils.py`` (every class that falls back to it):
  ``ids-unsliced``, ``ids-last-token``, ``positions-none``, ``positions-pad-zero``,
  ``positions-off-by-one``, ``token-type-ids-dropped-assisted``, ``inputs-embeds-every-step``,
  ``cache-key-renamed``, ``closed-dict``, ``use-cache-dropped``, ``cache-position-dropped``;
- in the hooks ``apply --hooks`` adds to the mixin, tried on the classes that set the hook's attribute only:
  ``hook-dummy-token-attended`` (the masked LMs' whole-body hook), ``hook-dropped-inputs-passed``,
  ``hook-first-step-inputs-every-step``, ``hook-needed-inputs-first-step-only``, ``hook-needed-inputs-every-step``,
  ``hook-ignored-inputs-honoured``, ``hook-defaults-missing``
  (each hook's loop made to do nothing);
- in the reduced overrides: ``first-step-input-every-step`` (``if cache_position[0] == 0:``
  around ``pixel_values`` & co. made unconditional), ``caller-input-honoured`` (a key set to None
  when the caller gives it, GPT-2's positions, left as the caller gave it);
- in the overrides kept whole: ``last-token-cut-by-position`` (a cut to the last token made by generate()'s
  ``cache_position``, as reducing 4.45's Musicgen decoders did); ``CATCHERS`` names, for each scenario issue 41
  added, the kinds it catches;
- ``upstream-4.46``: upstream's own deletions, applied to a pristine 4.45.2 (every override that
  4.45.2 has and 4.46.3 no longer has is deleted), with 4.46.3's
  ``GenerationMixin.prepare_inputs_for_generation`` installed into 4.45.2's stub mixin. Its source
  is taken from the 4.46.3 release at run time; adapted to 4.45's APIs in three places only:
  ``StaticCache`` imported inside the method (4.45's ``generation/utils.py`` does not import it),
  ``get_max_cache_shape()`` -> ``get_max_length()``, and the static-cache mask helper, which 4.46
  finds on the base model and 4.45 defines in the model's module (looked up there when the base
  model has none, and called with 4.45's signature: ``min_dtype``, no ``config``/``past_key_values``).

For each mutant and each class it touches (its ``prepare_inputs_for_generation`` resolves to the
mutated code; composites through their decoder), the **oracle** (``bench/crosscheck.py``, tiny models
of its own) compares the pristine release with the mutant: *affected* when a case generates
differently or crashes only on the mutant, not counting the cases where the unmutated migration
already differs from the pristine release (those are the migration's own bugs, reported by
crosscheck on the baseline). The **verifier** (``codemod verify MUTANT --base HEAD --format json
--no-own-tests``, the CLI as users run it) *catches* an affected class when its verdict is not
``identical``; a composite counts as caught when its decoder's verdict is not ``identical``. A class
the oracle finds unaffected is *equivalent* and not counted; one the oracle cannot build or run is
*unknown*. Kill rate = caught / affected, per kind.

Results are cached in ``--work`` (default: the user cache), keyed by the trees' contents, the interpreter and
the build of the saved tiny models: a second run only runs what changed. ``--fresh`` ignores the cache and
rebuilds the models, which makes every result computed with the old weights stale (another kind's included:
before the models' build was in the key, a ``--fresh`` run of one kind left the next full run comparing new
pristine results with an old mutant side, and upstream-4.46 "missed" three classes that generate the same).
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import functools
import hashlib
import importlib.util
import json
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))


def _load_crosscheck():
    """``bench/crosscheck.py`` as the module ``crosscheck`` (bench/ is no package; its directory stays
    off ``sys.path``, where ``scan.py`` and ``verify.py`` would shadow other modules)."""
    if "crosscheck" in sys.modules:
        return sys.modules["crosscheck"]
    spec = importlib.util.spec_from_file_location("crosscheck", Path(__file__).with_name("crosscheck.py"))
    module = importlib.util.module_from_spec(spec)
    sys.modules["crosscheck"] = module
    spec.loader.exec_module(module)
    return module


crosscheck = _load_crosscheck()

MIXIN = "src/transformers/generation/utils.py"
METHOD = "prepare_inputs_for_generation"
UPSTREAM = "4.46.3"
#: what makes a class affected: the tokens, or a crash the pristine code does not have. Both sides
#: crashing with different messages (crosscheck's crashed-both-differently) is not counted: the
#: pristine code fails there too, so the oracle's input is one no user runs.
AFFECTING = ("differs", "crashed-new", "extended-inconsistent")


class MutantError(Exception):
    """A mutant's pattern is not where it should be: the code it mutates is not what it expects."""


# ============================================================================================ mutants


@dataclasses.dataclass(frozen=True)
class Mutant:
    name: str
    what: str
    #: textual (old, new) replacements in the generic mixin's method, each expected exactly once;
    #: (old, new, "all"): every occurrence, at least one (a key renamed wherever it is set)
    replacements: tuple[tuple[str, ...], ...] = ()
    #: or an edit of the tree (in place), returning the files it changed
    edit: Callable[[Path], list[str]] | None = None
    #: the hook the mixin must have for the pattern to be there (a migration made with ``--hooks`` adds it)
    hook: str = ""

    def mutate(self, source: str, where: str = "the mixin") -> str:
        """``source`` (a ``prepare_inputs_for_generation``) with this mutant's replacements."""
        for old, new, *every in self.replacements:
            if every:
                if old not in source:
                    raise MutantError(f"{where}: expected the pattern at least once: {old.strip()[:80]!r}")
                source = source.replace(old, new)
            else:
                source = replace_once(source, old, new, where)
        return source

    def apply(self, root: Path) -> list[str]:
        return self.edit(root) if self.edit is not None else edit_mixin(self)(root)


def method_span(text: str, class_name: str, method: str = METHOD) -> tuple[int, int] | None:
    """Character offsets of ``class_name.method`` in ``text`` (decorators included), or None."""
    tree = ast.parse(text)
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == class_name:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == method:
                    first = min([item.lineno] + [d.lineno for d in item.decorator_list])
                    lines = text.splitlines(keepends=True)
                    start = sum(len(line) for line in lines[: first - 1])
                    end = sum(len(line) for line in lines[: item.end_lineno])
                    return start, end
    return None


def replace_once(text: str, old: str, new: str, where: str) -> str:
    count = text.count(old)
    if count != 1:
        raise MutantError(f"{where}: expected the pattern once, found it {count} times: {old.strip()[:80]!r}")
    return text.replace(old, new)


def edit_mixin(mutant: Mutant) -> Callable[[Path], list[str]]:
    """The mutant's replacements inside ``GenerationMixin.prepare_inputs_for_generation`` only."""

    def apply(root: Path) -> list[str]:
        path = root / MIXIN
        text = path.read_text(encoding="utf-8")
        span = method_span(text, "GenerationMixin")
        if span is None:
            raise MutantError(f"{MIXIN}: no GenerationMixin.{METHOD}")
        body = mutant.mutate(text[span[0] : span[1]], f"{MIXIN}::GenerationMixin")
        path.write_text(text[: span[0]] + body + text[span[1] :], encoding="utf-8")
        return [MIXIN]

    return apply


def _reduced_spans(text: str) -> list[tuple[int, int]]:
    """(first, last) lines of every ``prepare_inputs_for_generation`` in ``text`` that calls ``super()``'s."""
    spans = []
    for node in ast.parse(text).body:
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if (
                    isinstance(item, ast.FunctionDef)
                    and item.name == METHOD
                    and any(
                        isinstance(n, ast.Attribute)
                        and n.attr == METHOD
                        and isinstance(n.value, ast.Call)
                        and isinstance(n.value.func, ast.Name)
                        and n.value.func.id == "super"
                        for n in ast.walk(item)
                    )
                ):
                    spans.append((item.lineno, item.end_lineno or item.lineno))
    return spans


def _rewrite_reduced(
    root: Path, hit: Callable[[list[str], int], bool], replacement: Callable[[str], str], missing: str
) -> list[str]:
    """In every reduced override (one that calls ``super().prepare_inputs_for_generation``) of the tree's models,
    each line ``i`` for which ``hit(lines, i)`` holds becomes ``replacement(<the line, stripped>)`` at its indent; the
    files it changed. Fails loudly (``missing``) where no line matched."""
    changed = []
    for path in sorted((root / "src" / "transformers" / "models").rglob("modeling_*.py")):
        text = path.read_text(encoding="utf-8")
        if f"super().{METHOD}" not in text:
            continue
        lines = text.splitlines(keepends=True)
        hits = [i for first, last in _reduced_spans(text) for i in range(first - 1, last) if hit(lines, i)]
        for i in hits:
            indent = lines[i][: len(lines[i]) - len(lines[i].lstrip())]
            lines[i] = f"{indent}{replacement(lines[i].strip())}\n"
        if hits:
            path.write_text("".join(lines), encoding="utf-8")
            changed.append(path.relative_to(root).as_posix())
    if not changed:
        raise MutantError(missing)
    return changed


def _rewrite_guards(root: Path, guard: Callable[[list[str], int], bool], replacement: str, missing: str) -> list[str]:
    """Each ``if`` line ``i`` of the reduced overrides for which ``guard(lines, i)`` holds becomes
    ``if <replacement>:`` (a comment keeps the old test)."""
    return _rewrite_reduced(root, guard, lambda line: f"if {replacement}:  # mutant: was `{line[3:-1]}`", missing)


#: the tests a reduced override keeps around its first-step-only inputs
FIRST_STEP_TESTS = ("if cache_position[0] == 0:", "if legacy_processing or cache_position[0] == 0:")


def first_step_every_step(root: Path) -> list[str]:
    """In every reduced override, an input guarded by ``cache_position[0] == 0`` is passed on every step."""
    return _rewrite_guards(
        root,
        lambda lines, i: lines[i].strip() in FIRST_STEP_TESTS,
        "True",
        "no reduced override guards an input with `cache_position[0] == 0`",
    )


#: the llava family's test: the image again on every step while the prompt takes the legacy merge path
LEGACY_TEST = "if legacy_processing or cache_position[0] == 0:"


def legacy_image_first_step_only(root: Path) -> list[str]:
    """In every reduced override, an input the llava family passes on the first step *or* while the prompt takes the
    legacy merge path (one image token) is passed on the first step only."""
    return _rewrite_guards(
        root,
        lambda lines, i: lines[i].strip() == LEGACY_TEST,
        "cache_position[0] == 0",
        "no reduced override guards an input with `legacy_processing or cache_position[0] == 0`",
    )


def cache_reset_dropped(root: Path) -> list[str]:
    """In every reduced override, a statement that drops the cache in front of super() (``past_key_values = None``:
    Phi-3 recomputes it the step a sequence passes its original context) does nothing."""
    return _rewrite_reduced(
        root,
        lambda lines, i: lines[i].strip() == "past_key_values = None",
        lambda line: f"pass  # mutant: was `{line}`",
        "no reduced override drops the cache (`past_key_values = None`)",
    )


def _sets_none_when_given(lines: list[str], i: int) -> bool:
    """``if <caller's value> is not None:`` followed by ``model_inputs[<key>] = None``."""
    test, then = lines[i].strip(), lines[i + 1].strip() if i + 1 < len(lines) else ""
    return (
        test.startswith("if ")
        and test.endswith(" is not None:")
        and then.startswith("model_inputs[")
        and then.endswith("] = None")
    )


def caller_input_honoured(root: Path) -> list[str]:
    """In every reduced override, a key the old code set to None whenever the caller gave it (verification's
    "None when given" repair: GPT-2's positions) is left as the mixin prepares it: the caller's."""
    return _rewrite_guards(
        root, _sets_none_when_given, "False", "no reduced override sets a key to None when the caller gives it"
    )


#: a key a reduced override passes on as the caller gives it, read from ``**kwargs`` (verification's repair for a key
#: the old code named as None where the caller gave none: GPT-2's mask, asked by a wrapper without one)
_PASSED_ON_FROM_KWARGS = re.compile(r'model_inputs\[("[^"]+")\] = \w+\.get\(\1\)')


def caller_value_not_passed_on(root: Path) -> list[str]:
    """In every reduced override, a key passed on from ``**kwargs`` as the caller gives it is left as the mixin
    prepares it (GPT-2 asked by a wrapper without a mask then gets the installed mixin's mask of ones)."""
    return _rewrite_reduced(
        root,
        lambda lines, i: bool(_PASSED_ON_FROM_KWARGS.fullmatch(lines[i].strip())),
        lambda line: f"pass  # mutant: was `{line}`",
        "no reduced override passes a key on from **kwargs as the caller gives it",
    )


#: a reduced override's pop of the stale ``cache_position`` it withholds from super() (``ExtraHow.WITHHELD``)
_WITHHELD = re.compile(r'\w+\.pop\("cache_position", None\)')


def withheld_position_passed_on(root: Path) -> list[str]:
    """In every reduced override that withholds a stale ``cache_position`` from super(), the pop goes: the mixin then
    slices the ids by generate()'s first positions on every step (Musicgen-Melody's composite)."""
    return _rewrite_reduced(
        root,
        lambda lines, i: bool(_WITHHELD.fullmatch(lines[i].strip())),
        lambda line: f"pass  # mutant: was `{line}`",
        "no reduced override withholds cache_position from super()",
    )


def _kept_spans(text: str) -> list[tuple[int, int, str]]:
    """(first, last, the name of its ``**kwargs``) of every ``prepare_inputs_for_generation`` in ``text`` that is kept
    whole (calls no ``super()``'s) and takes ``**kwargs`` (where generate()'s ``cache_position`` lands)."""
    reduced = set(_reduced_spans(text))
    spans = []
    for node in ast.parse(text).body:
        if isinstance(node, ast.ClassDef):
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == METHOD and item.args.kwarg is not None:
                    span = (item.lineno, item.end_lineno or item.lineno)
                    if span not in reduced:
                        spans.append((*span, item.args.kwarg.arg))
    return spans


#: a kept override's cut of the ids to the last token once there is a cache (4.45's Musicgen decoders)
LAST_TOKEN_CUT = "input_ids = input_ids[:, -1:]"


def last_token_cut_by_position(root: Path) -> list[str]:
    """In every kept override that cuts the ids to the last token once there is a cache, the cut is made by
    generate()'s ``cache_position`` instead, as the mixin cuts them (what reducing 4.45's Musicgen decoders did). Every
    step of one generate() call is the same; continuing from a returned cache that holds more than the ids (the delay
    pattern's trimmed sequences) leaves no ids at all."""
    changed = []
    for path in sorted((root / "src" / "transformers" / "models").rglob("modeling_*.py")):
        if path.name.startswith(("modeling_tf_", "modeling_flax_")):
            continue  # generate() passes no cache_position there
        text = path.read_text(encoding="utf-8")
        if LAST_TOKEN_CUT not in text:
            continue
        lines = text.splitlines(keepends=True)
        hits = [
            (i, kwargs)
            for first, last, kwargs in _kept_spans(text)
            for i in range(first - 1, last)
            if lines[i].strip() == LAST_TOKEN_CUT
        ]
        for i, kwargs in hits:
            indent = lines[i][: len(lines[i]) - len(lines[i].lstrip())]
            lines[i] = (
                f'{indent}input_ids = input_ids[:, {kwargs}["cache_position"]]  # mutant: was `{LAST_TOKEN_CUT}`\n'
            )
        if hits:
            path.write_text("".join(lines), encoding="utf-8")
            changed.append(path.relative_to(root).as_posix())
    if not changed:
        raise MutantError(f"no kept override with **kwargs cuts the ids to the last token (`{LAST_TOKEN_CUT}`)")
    return changed


MUTANTS = [
    Mutant(
        "ids-unsliced",
        "the ids are never cut to the tokens the cache has not seen",
        (
            (
                "                input_ids = input_ids[:, -cache_position.shape[0] :]\n",
                "                pass  # mutant\n",
            ),
            ("                input_ids = input_ids[:, cache_position]\n", "                pass  # mutant\n"),
        ),
    ),
    Mutant(
        "ids-last-token",
        "with a cache, only the last token is kept (several new tokens: assisted decoding)",
        (
            (
                "                input_ids = input_ids[:, cache_position]\n",
                "                input_ids = input_ids[:, -1:]  # mutant\n",
            ),
        ),
    ),
    Mutant(
        "positions-none",
        "position_ids are not built from the attention mask",
        (('            kwargs["position_ids"] = position_ids\n', "            pass  # mutant\n"),),
    ),
    Mutant(
        "positions-pad-zero",
        "padding positions filled with 0 instead of 1 (masked anyway: equivalent?)",
        (
            (
                "            position_ids.masked_fill_(attention_mask == 0, 1)\n",
                "            position_ids.masked_fill_(attention_mask == 0, 0)  # mutant\n",
            ),
        ),
    ),
    Mutant(
        "positions-off-by-one",
        "positions start at 1",
        (
            (
                "            position_ids = attention_mask.long().cumsum(-1) - 1\n",
                "            position_ids = attention_mask.long().cumsum(-1)  # mutant\n",
            ),
        ),
    ),
    Mutant(
        "token-type-ids-dropped-assisted",
        "token_type_ids dropped when several tokens are new with a cache",
        (
            (
                "            model_input = kwargs.get(model_input_name)\n",
                "            model_input = kwargs.get(model_input_name)\n"
                '            if model_input_name == "token_type_ids" and past_key_values and input_ids.shape[1] > 1:\n'
                "                kwargs.pop(model_input_name, None)  # mutant\n"
                "                continue\n",
            ),
        ),
    ),
    Mutant(
        "inputs-embeds-every-step",
        "inputs_embeds (a first-step input) sent on every step",
        (
            (
                "            if inputs_embeds is not None and cache_position[0] == 0:\n",
                "            if inputs_embeds is not None:  # mutant\n",
            ),
        ),
    ),
    Mutant(
        "first-step-input-every-step",
        "a reduced override's first-step-only input sent on every step",
        edit=first_step_every_step,
    ),
    Mutant(
        "legacy-image-first-step-only",
        "a reduced llava-family override's image, which a legacy prompt needs on "
        "every step, sent on the first step only",
        edit=legacy_image_first_step_only,
    ),
    Mutant(
        "cache-reset-dropped",
        "a reduced override's cache reset (Phi-3's, past its original context) does nothing",
        edit=cache_reset_dropped,
    ),
    Mutant(
        "caller-input-honoured",
        "a reduced override's key that the old code ignored when the caller gave it is passed as the caller gave it",
        edit=caller_input_honoured,
    ),
    Mutant(
        "caller-value-not-passed-on",
        "a reduced override's key passed on from **kwargs as the caller gives it "
        "(GPT-2's mask) is left as the mixin prepares it",
        edit=caller_value_not_passed_on,
    ),
    Mutant(
        "withheld-position-passed-on",
        "a reduced override's stale cache_position, withheld from super(), is handed on (the mixin slices by it)",
        edit=withheld_position_passed_on,
    ),
    Mutant(
        "last-token-cut-by-position",
        "a kept override's cut to the last token made by generate()'s cache_position (as the mixin cuts): the same on "
        "every step of one call, no ids left when a returned cache holds more than them",
        edit=last_token_cut_by_position,
    ),
    Mutant(
        "cache-key-renamed",
        "the cache is passed as past_key_value",
        (
            (
                'model_inputs["past_key_values"] = past_key_values\n',
                'model_inputs["past_key_value"] = past_key_values  # mutant\n',
                "all",
            ),
        ),
    ),
    Mutant(
        "closed-dict",
        "a closed dict: only use_cache of the other kwargs is forwarded",
        (
            (
                "            if key not in model_inputs:\n                model_inputs[key] = value\n",
                '            if key not in model_inputs and key == "use_cache":  # mutant\n                model_inputs[key] = value\n',
            ),
        ),
    ),
    Mutant(
        "use-cache-dropped",
        "use_cache is not forwarded",
        (
            (
                "            if key not in model_inputs:\n                model_inputs[key] = value\n",
                '            if key not in model_inputs and key != "use_cache":  # mutant\n                model_inputs[key] = value\n',
            ),
        ),
    ),
    Mutant(
        "contiguous-refactor",
        "a refactor that changes nothing: .contiguous() for .clone(contiguous_format) (equivalent)",
        (
            (
                "                    model_input = model_input.clone(memory_format=torch.contiguous_format)\n",
                "                    model_input = model_input.contiguous()  # mutant (equivalent)\n",
            ),
        ),
    ),
    Mutant(
        "hook-dummy-token-attended",
        "the masked LMs' whole-body hook (run by the mixin) lets its dummy token be attended to",
        (
            (
                "attention_mask.new_zeros((attention_mask.shape[0], 1))",
                "attention_mask.new_ones((attention_mask.shape[0], 1))",
            ),
        ),
        hook="_generation_inputs_as_bert_for_masked_lm",
    ),
    Mutant(
        "cache-position-dropped",
        "cache_position not forwarded (models then derive it from the cache)",
        (('            model_inputs["cache_position"] = cache_position\n', "            pass  # mutant\n"),),
    ),
    # the mined hooks' own code in the mixin (``apply --hooks``): each breaks what its members now rely on, and is
    # tried on those members only (the classes that set the attribute; every other class runs the loop over nothing)
    Mutant(
        "hook-dropped-inputs-passed",
        "the dropped-inputs hook passes its inputs on (its pop loop does nothing)",
        (
            (
                "        for name in self._generation_dropped_inputs:\n            model_inputs.pop(name, None)\n",
                "        for name in self._generation_dropped_inputs:\n            pass  # mutant\n",
            ),
        ),
        hook="_generation_dropped_inputs",
    ),
    Mutant(
        "hook-first-step-inputs-every-step",
        "the first-step hook passes its inputs on every step",
        (
            (
                "            for name in self._generation_inputs_dropped_after_first_step:\n"
                "                model_inputs.pop(name, None)\n",
                "            for name in self._generation_inputs_dropped_after_first_step:\n"
                "                pass  # mutant\n",
            ),
        ),
        hook="_generation_inputs_dropped_after_first_step",
    ),
    Mutant(
        "hook-needed-inputs-first-step-only",
        "the first-step hook that asks the model's own condition no longer "
        "asks it: a legacy llava prompt's image is sent on the first step only",
        (
            (
                "        if cache_position[0] != 0 and not first_step_inputs_needed:\n",
                "        if cache_position[0] != 0:  # mutant\n",
            ),
        ),
        hook="_generation_inputs_dropped_after_first_step_unless_needed",
    ),
    Mutant(
        "hook-needed-inputs-every-step",
        "the first-step hook that asks the model's own condition passes its inputs on every step",
        (
            (
                "            for name in self._generation_inputs_dropped_after_first_step_unless_needed:\n"
                "                model_inputs.pop(name, None)\n",
                "            for name in self._generation_inputs_dropped_after_first_step_unless_needed:\n"
                "                pass  # mutant\n",
            ),
        ),
        hook="_generation_inputs_dropped_after_first_step_unless_needed",
    ),
    Mutant(
        "hook-ignored-inputs-honoured",
        "the ignored-when-given hook passes the caller's value (GPT-2's positions)",
        (
            (
                "        for name in inputs_given:\n            model_inputs[name] = None\n",
                "        for name in inputs_given:\n            pass  # mutant\n",
            ),
        ),
        hook="_generation_inputs_ignored_when_given",
    ),
    Mutant(
        "hook-defaults-missing",
        "the defaults hook sets no default (Mixtral's output_router_logits)",
        (("            model_inputs.setdefault(name, default)\n", "            pass  # mutant\n"),),
        hook="_generation_input_defaults",
    ),
]
KINDS = {m.name: m for m in MUTANTS}

#: the scenarios issue 41 added to verification (``codemod.verify.scenarios``), each with the mutant kinds it catches
#: alone (what no other scenario of its class's run need give): every new scenario is a catcher of at least one kind
CATCHERS: dict[str, tuple[str, ...]] = {
    # the second call starts from a cache that holds all but the last token, or (Musicgen, Qwen2-Audio) more
    "continue-from-cache": ("last-token-cut-by-position",),
    "multimodal-continue": ("last-token-cut-by-position",),
    # candidate tokens from the prompt without an assistant model (a class whose assistant cannot be built); a tiny
    # random model rarely accepts one, so what it catches is what every cached step shows
    "prompt-lookup": ("ids-unsliced",),
    # beams of a left-padded batch, both returned: the rows' own positions
    "beam-search-returned": ("positions-none", "positions-off-by-one"),
}


def hook_setters(root: Path, hook: str) -> set[str]:
    """The model classes of ``root`` that set the mixin attribute ``hook`` in their body, or inherit it from a class
    of the same file that does: the only classes a mutant of the hook's code can affect."""
    setters: set[str] = set()
    for path in sorted((root / "src" / "transformers" / "models").rglob("modeling_*.py")):
        text = path.read_text(encoding="utf-8")
        if hook not in text:
            continue
        classes = [n for n in ast.parse(text).body if isinstance(n, ast.ClassDef)]
        found = {
            c.name
            for c in classes
            if any(
                isinstance(s, (ast.Assign, ast.AnnAssign))
                and hook
                in {t.id for t in (s.targets if isinstance(s, ast.Assign) else [s.target]) if isinstance(t, ast.Name)}
                for s in c.body
            )
        }
        while True:  # subclasses in the same file inherit it
            more = {
                c.name
                for c in classes
                if c.name not in found and any(isinstance(b, ast.Name) and b.id in found for b in c.bases)
            }
            if not more:
                break
            found |= more
        setters |= found
    return setters


def hooked(targets: list[crosscheck.Target], setters: set[str]) -> list[crosscheck.Target]:
    """The targets that run a hooked class: the class itself, or a composite's decoder."""
    return [t for t in targets if t.cls in setters or t.decoder_cls in setters]


# ------------------------------------------------------------------------------------- upstream 4.46


def _delete_method(text: str, class_name: str) -> str:
    """``text`` without ``class_name``'s own prepare_inputs_for_generation (decorators and the comment
    lines right above it too); ``pass`` when the class body would be empty."""
    tree = ast.parse(text)
    lines = text.splitlines(keepends=True)
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == class_name:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == METHOD:
                    first = min([item.lineno] + [d.lineno for d in item.decorator_list]) - 1
                    while first > 0 and lines[first - 1].strip().startswith("#"):
                        first -= 1
                    last = item.end_lineno
                    keep_pass = len(node.body) == 1
                    indent = lines[item.lineno - 1][
                        : len(lines[item.lineno - 1]) - len(lines[item.lineno - 1].lstrip())
                    ]
                    new = lines[:first] + ([f"{indent}pass\n"] if keep_pass else []) + lines[last:]
                    return "".join(new)
    raise MutantError(f"{class_name} has no {METHOD}")


def text_bases(text: str, class_name: str) -> list[str]:
    for node in ast.parse(text).body:
        if isinstance(node, ast.ClassDef) and node.name == class_name:
            return [ast.unparse(b) for b in node.bases]
    return []


def add_generation_mixin(text: str, class_name: str) -> str:
    """4.46 also made the composites GenerationMixin subclasses (without it, 4.45's ``can_generate()``
    refuses a class that no longer overrides the method): the same base, and its import."""
    lines = text.splitlines(keepends=True)
    node = next(n for n in ast.parse(text).body if isinstance(n, ast.ClassDef) and n.name == class_name)
    line = lines[node.lineno - 1]
    if not line.rstrip().endswith("):"):
        raise MutantError(f"{class_name}: a class line this bench does not edit: {line.strip()}")
    lines[node.lineno - 1] = line.rstrip()[:-2] + ", GenerationMixin):\n"
    text = "".join(lines)
    if "import GenerationMixin" not in text:
        anchor = "from ...modeling_utils import PreTrainedModel\n"
        text = replace_once(text, anchor, "from ...generation import GenerationMixin\n" + anchor, class_name)
    return text


def upstream_deletions(old_root: Path, new_root: Path) -> list[tuple[str, str]]:
    """(file, class) of every override the old release has and the new one does not (same file, same class)."""
    out = []
    for rel in crosscheck.model_files(old_root):
        old = crosscheck.parse_file(old_root, rel)
        if old is None or not (new_root / rel).is_file():
            continue
        new = crosscheck.parse_file(new_root, rel)
        for name, info in old.classes.items():
            if (
                info.method is not None
                and new is not None
                and name in new.classes
                and new.classes[name].method is None
            ):
                out.append((rel, name))
    return out


def upstream_mixin_source(new_root: Path) -> str:
    """4.46's GenerationMixin.prepare_inputs_for_generation, adapted to 4.45's APIs (see the module docstring)."""
    text = (new_root / MIXIN).read_text(encoding="utf-8")
    span = method_span(text, "GenerationMixin")
    if span is None:
        raise MutantError(f"{UPSTREAM}: no GenerationMixin.{METHOD}")
    source = text[span[0] : span[1]]
    source = replace_once(
        source,
        "        # 6. Create 4D attention mask",
        "        from ..cache_utils import StaticCache  # adapted: 4.45's module does not import it\n\n"
        "        # 6. Create 4D attention mask",
        "upstream mixin",
    )
    source = replace_once(
        source,
        "target_length=past_key_values.get_max_cache_shape(),",
        "target_length=past_key_values.get_max_length(),  # adapted: 4.45's Cache API",
        "upstream mixin",
    )
    source = replace_once(
        source,
        "            if causal_mask_creation_function is None:\n                logger.warning_once(",
        "            # adapted: in 4.45 the helper is a function of the model's module, with 4.45's signature\n"
        "            legacy_mask_function = None\n"
        "            if causal_mask_creation_function is None:\n"
        "                legacy_mask_function = getattr(\n"
        '                    inspect.getmodule(type(self)), "_prepare_4d_causal_attention_mask_with_cache_position", None\n'
        "                )\n"
        "            if causal_mask_creation_function is None and legacy_mask_function is not None:\n"
        "                attention_mask = legacy_mask_function(\n"
        "                    attention_mask,\n"
        "                    sequence_length=sequence_length,\n"
        "                    target_length=past_key_values.get_max_length(),\n"
        "                    dtype=self.dtype,\n"
        "                    device=device,\n"
        "                    min_dtype=torch.finfo(self.dtype).min,\n"
        "                    cache_position=cache_position,\n"
        "                    batch_size=batch_size,\n"
        "                )\n"
        "            elif causal_mask_creation_function is None:\n"
        "                logger.warning_once(",
        "upstream mixin",
    )
    return source


def apply_upstream(root: Path, upstream_root: Path) -> list[str]:
    """Upstream's 4.46 deletions and mixin on the pristine 4.45.2 at ``root``."""
    changed = set()
    by_file: dict[str, list[str]] = {}
    for rel, name in upstream_deletions(root, upstream_root):
        by_file.setdefault(rel, []).append(name)
    for rel, names in by_file.items():
        path = root / rel
        text = path.read_text(encoding="utf-8")
        upstream = crosscheck.parse_file(upstream_root, rel)
        for name in names:
            text = _delete_method(text, name)
            if "GenerationMixin" in upstream.classes[name].bases and "GenerationMixin" not in text_bases(text, name):
                text = add_generation_mixin(text, name)
        compile(text, rel, "exec")
        path.write_text(text, encoding="utf-8")
        changed.add(rel)
    path = root / MIXIN
    text = path.read_text(encoding="utf-8")
    span = method_span(text, "GenerationMixin")
    if span is None:
        raise MutantError(f"4.45.2: no GenerationMixin.{METHOD}")
    text = text[: span[0]] + upstream_mixin_source(upstream_root) + text[span[1] :]
    compile(text, MIXIN, "exec")
    path.write_text(text, encoding="utf-8")
    changed.add(MIXIN)
    return sorted(changed)


# ============================================================================================ running


def git(root: Path, *args: str, check: bool = True) -> str:
    done = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=check)
    return done.stdout


def tree_digest(root: Path, files: list[str]) -> str:
    digest = hashlib.sha256()
    for rel in sorted(files):
        digest.update(rel.encode())
        path = root / rel
        digest.update(path.read_bytes() if path.is_file() else b"<absent>")
    return digest.hexdigest()[:16]


def verifier_digest() -> str:
    """The tool's own code (codemod/ and rules/, as the interpreter running this imports it): a cached
    verdict of another version of the verifier is not this one's."""
    import codemod

    tool = Path(codemod.__file__).resolve().parents[1]
    return tree_digest(
        tool, sorted(str(p.relative_to(tool)) for d in ("codemod", "rules") for p in (tool / d).rglob("*.py"))
    )


def changed_files(root: Path) -> list[str]:
    """Files of ``root``'s working tree that differ from HEAD."""
    return [line for line in git(root, "diff", "--name-only", "HEAD").splitlines() if line]


class Cache:
    """JSON results in ``work``, by name."""

    def __init__(self, work: Path, fresh: bool):
        self.work, self.fresh = work, fresh
        work.mkdir(parents=True, exist_ok=True)

    def get(self, name: str):
        path = self.work / f"{name}.json"
        if self.fresh or not path.is_file():
            return None
        return json.loads(path.read_text())

    def put(self, name: str, value) -> None:
        (self.work / f"{name}.json").write_text(json.dumps(value))


def oracle_side(
    label: str,
    root: Path,
    targets: list[crosscheck.Target],
    models: Path,
    cache: Cache,
    *,
    python: str,
    jobs: int,
    tests: str | None,
    build: bool,
    key: str,
    say,
) -> dict[str, dict]:
    """crosscheck's results for ``targets`` on ``root`` (cached by ``key``, per target)."""
    stored = cache.get(f"oracle-{label}-{key}") or {}
    missing = [t for t in targets if t.id not in stored]
    if missing:
        say(f"oracle: {label}: {len(missing)} classes")
        fresh = crosscheck.run_side(
            label, root, missing, models, python=python, jobs=jobs, build=build, tests=tests, say=None
        )
        stored.update(fresh)
        cache.put(f"oracle-{label}-{key}", stored)
        if build:
            # new weights: every result cached with the old ones (another kind's mutant side) is stale
            (models / "STAMP").write_text(uuid.uuid4().hex)
    return {t.id: stored[t.id] for t in targets}


def models_stamp(models: Path) -> str:
    """Which build of the saved tiny models the results were computed with (the key of the sides that load them)."""
    stamp = models / "STAMP"
    return stamp.read_text() if stamp.is_file() else "none"


def run_verifier(root: Path, models: list[str], *, python: str, jobs: int, cache: Cache, key: str, say) -> dict:
    cached = cache.get(f"verify-{key}")
    if cached is not None:
        return cached
    out = Path(tempfile.mkdtemp(prefix="mutants-verify-")) / "verify.json"
    # the CLI as users run it, from the interpreter running this benchmark (which has the tool installed)
    command = [
        sys.executable,
        "-m",
        "codemod",
        "verify",
        str(root),
        "--base",
        "HEAD",
        "--format",
        "json",
        "-o",
        str(out),
        "--no-own-tests",
        "--jobs",
        str(jobs),
        "--python",
        python,
    ]
    if models:
        command += ["--only", ",".join(sorted(set(models)))]
    say("verifier: " + " ".join(command[3:5]) + f" --only {len(set(models))} models")
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True)
    if not out.is_file():
        raise RuntimeError(f"codemod verify wrote no report (exit {done.returncode}): {done.stderr[-2000:]}")
    doc = json.loads(out.read_text())
    shutil.rmtree(out.parent, ignore_errors=True)
    doc["bench_seconds"] = round(time.perf_counter() - started, 1)
    cache.put(f"verify-{key}", doc)
    return doc


def _status_by_case(classes: list[dict]) -> dict[str, dict[str, dict]]:
    return {c["id"]: {case["name"]: case for case in c["cases"]} for c in classes}


def judge(
    targets: list[crosscheck.Target],
    pristine: dict,
    migrated: dict | None,
    mutant: dict,
    verdicts: dict[tuple[str, str], dict],
) -> list[dict]:
    """Per touched class: the oracle's finding (affected / equivalent / unknown) and the verifier's verdict."""
    against_pristine = _status_by_case(crosscheck.compare(targets, pristine, mutant))
    baseline = _status_by_case(crosscheck.compare(targets, pristine, migrated)) if migrated is not None else {}
    summary = {c["id"]: c for c in crosscheck.compare(targets, pristine, mutant)}
    rows = []
    for t in targets:
        entry = summary[t.id]
        cases = against_pristine.get(t.id, {})
        already = {name for name, case in baseline.get(t.id, {}).items() if case["status"] in crosscheck.DIFFERENT}
        differing = [case for name, case in cases.items() if case["status"] in AFFECTING and name not in already]
        exercised = [case for case in cases.values() if case["status"] not in ("crashed-both-alike", "missing")]
        if entry["status"] in ("unbuildable", "error", "not-applicable"):
            oracle = "unknown" if entry["status"] != "not-applicable" else "not-applicable"
        elif differing:
            oracle = "affected"
        elif not exercised:
            oracle = "unknown"
        else:
            oracle = "equivalent"
        file = t.id.split("::")[0]
        if t.kind == "model":
            found = [verdicts.get((file, t.cls))]
        else:  # a composite: its own verdict when the verifier ran it, and its decoder's
            decoder_file = "src/" + t.decoder_module.replace(".", "/") + ".py"
            found = [verdicts.get((file, t.cls)), verdicts.get((decoder_file, t.decoder_cls))]
        found = [v for v in found if v is not None]
        verdict = next((v for v in found if v["verdict"] != "identical"), found[0] if found else None)
        rows.append(
            {
                "id": t.id,
                "class": entry["class"],
                "oracle": oracle,
                "reason": entry.get("reason"),
                "baseline_differs": sorted(already),
                "evidence": [
                    {
                        "case": c["name"],
                        "status": c["status"],
                        "old": crosscheck._short_out(c.get("base")),
                        "new": crosscheck._short_out(c.get("new")),
                    }
                    for c in differing[:4]
                ],
                "verdict": verdict["verdict"] if verdict else None,
                "verdict_detail": (verdict or {}).get("detail", "")[:300],
                "verdict_via": None
                if t.kind == "model"
                else (t.cls if verdict and verdict["class"] == t.cls else t.decoder_cls),
                "caught": bool(verdict) and verdict["verdict"] != "identical",
            }
        )
    return rows


def tally(rows: list[dict]) -> dict:
    affected = [r for r in rows if r["oracle"] == "affected"]
    caught = [r for r in affected if r["caught"]]
    return {
        "touched": len(rows),
        "affected": len(affected),
        "caught": len(caught),
        "missed": len(affected) - len(caught),
        "equivalent": sum(r["oracle"] == "equivalent" for r in rows),
        "flagged_equivalent": sum(r["oracle"] == "equivalent" and r["caught"] for r in rows),
        "unknown": sum(r["oracle"] == "unknown" for r in rows),
        "not_applicable": sum(r["oracle"] == "not-applicable" for r in rows),
        "kill_rate": round(len(caught) / len(affected), 3) if affected else None,
    }


def _sample(targets: list[crosscheck.Target], n: int, seed: int) -> list[crosscheck.Target]:
    if not n or n >= len(targets):
        return targets
    models = [t for t in targets if t.kind == "model"]
    chosen = sorted(random.Random(seed).sample(models, min(n, len(models))), key=lambda t: t.id)
    names = {t.cls for t in chosen}
    return chosen + [t for t in targets if t.kind != "model" and t.decoder_cls in names]


def default_migrated(python: str | None, say) -> Path:
    """A migrated 4.45.2 in the user cache: ``codemod apply --verify --no-own-tests`` on a fresh copy, once."""
    from codemod.cache import cache_dir
    from codemod.fetch import fetch_release

    root = cache_dir("bench") / "mutants" / "migrated-4.45.2"
    if (root / ".done").is_file():
        return root
    shutil.rmtree(root, ignore_errors=True)
    fetch_release("4.45.2", root)
    say(f"making the migrated baseline in {root} (codemod apply --verify, minutes)")
    command = [
        str(REPO / ".venv" / "bin" / "codemod"),
        "apply",
        str(root),
        "--verify",
        "--no-own-tests",
        "--jobs",
        "2",
        "--report",
        str(root.parent / "migrated-4.45.2.report.json"),
    ]
    if python:
        command += ["--python", python]
    subprocess.run(command, check=False)
    (root / ".done").write_text("")
    return root


def clone_with_changes(source: Path, dest: Path) -> None:
    """``dest``: a clone of ``source``'s HEAD with ``source``'s uncommitted changes applied (source untouched)."""
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(source), str(dest)], check=True)
    patch = subprocess.run(
        ["git", "-C", str(source), "diff", "--binary", "HEAD"], capture_output=True, check=True
    ).stdout
    if patch:
        subprocess.run(["git", "-C", str(dest), "apply", "--whitespace=nowarn", "-"], input=patch, check=True)
    for rel in git(source, "ls-files", "--others", "--exclude-standard").splitlines():
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source / rel, dest / rel)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--migrated", type=Path, help="a migrated 4.45.2 repo (HEAD pristine, working tree migrated)")
    parser.add_argument("--python", help="the verification environment's interpreter (default: made for the release)")
    parser.add_argument("--tests", help="a v4.45.2 checkout with tests/: the oracle builds from its model testers")
    parser.add_argument("--kinds", default="", help="mutant kinds, comma-separated (default: all, and upstream-4.46)")
    parser.add_argument("--sample", type=int, default=0, help="this many model classes per kind (random, --seed)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--classes", default="", help="only these classes")
    parser.add_argument("--only", default="", help="only these models (directory names)")
    parser.add_argument("--jobs", "-j", type=int, default=2)
    parser.add_argument("--json", type=Path, help="write every row here")
    parser.add_argument("--work", type=Path, help="cache of models and results (default: the user cache)")
    parser.add_argument("--fresh", action="store_true", help="ignore cached results")
    parser.add_argument("--list", action="store_true", help="list the kinds and exit")
    args = parser.parse_args(argv)
    split = lambda s: [x for x in s.split(",") if x]  # noqa: E731

    def say(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    if args.list:
        for m in MUTANTS:
            print(f"{m.name:<34} {m.what}")
        print(f"{'upstream-4.46':<34} 4.46.3's deletions and mixin applied to 4.45.2")
        return 0
    kinds = split(args.kinds) or [m.name for m in MUTANTS] + ["upstream-4.46"]
    unknown = [k for k in kinds if k not in KINDS and k != "upstream-4.46"]
    if unknown:
        parser.error(f"unknown kinds: {', '.join(unknown)} (see --list)")

    from codemod.cache import cache_dir
    from codemod.fetch import fetch_release

    migrated_source = args.migrated or default_migrated(args.python, say)
    python = args.python or crosscheck.default_python(migrated_source, args.tests)
    work = args.work or cache_dir("bench") / "mutants" / "work"
    cache = Cache(work / "results", args.fresh)
    models_dir = work / "models"
    started_all = time.perf_counter()
    report: dict = {
        "migrated": str(migrated_source),
        "python": python,
        "tests": args.tests,
        "sample": args.sample,
        "seed": args.seed,
        "kinds": {},
    }
    scratch = Path(tempfile.mkdtemp(prefix="mutants-"))
    try:
        tree = scratch / "migrated"
        clone_with_changes(migrated_source, tree)
        pristine = scratch / "pristine"
        git(tree, "worktree", "add", "--detach", str(pristine), "HEAD")
        baseline_files = changed_files(tree)
        baseline_key = tree_digest(tree, baseline_files)
        pristine_tree = crosscheck.Tree(pristine)
        migrated_tree = crosscheck.Tree(tree)
        originals = {rel: (tree / rel).read_bytes() for rel in crosscheck.model_files(tree) + [crosscheck.MIXIN_FILE]}
        # the environment decides what the same weights generate (its packages): one cache per interpreter
        # ... and the oracle's own code (its cases): results of an oracle with other cases are not this one's
        oracle_key = hashlib.sha256(Path(crosscheck.__file__).read_bytes()).hexdigest()[:8]
        pristine_key = (
            "pristine-"
            + (args.tests and "tests" or "defaults")
            + "-"
            + hashlib.sha256(python.encode()).hexdigest()[:8]
            + "-"
            + oracle_key
        )
        tool_key = verifier_digest()
        mixin_text = (tree / MIXIN).read_text(encoding="utf-8")
        for kind in [k for k in kinds if k in KINDS and KINDS[k].hook and f"self.{KINDS[k].hook}" not in mixin_text]:
            say(f"== {kind}: skipped: the migrated mixin has no {KINDS[kind].hook} hook (a migration without --hooks)")
            kinds.remove(kind)
        for kind in kinds:
            started = time.perf_counter()
            if kind == "upstream-4.46":
                target_root = scratch / "upstream"
                fetch_release("4.45.2", target_root)
                changed = apply_upstream(target_root, fetch_release(UPSTREAM))
                base_tree = pristine_tree
            else:
                target_root = tree
                try:
                    changed = KINDS[kind].apply(tree)
                except MutantError as absent:
                    if KINDS[kind].edit is None:
                        raise  # the mixin's own code: a pattern missing there is this bench's defect
                    # what a reduced-override kind mutates is not in this tree (the llava family's legacy test
                    # moved into _generation_needs_first_step_inputs, where the hook mutants reach it)
                    say(f"== {kind}: skipped: {absent}")
                    continue
                base_tree = migrated_tree
            try:
                mutant_tree = crosscheck.Tree(target_root)
                touched = crosscheck.changed_targets(base_tree, mutant_tree)
                touched = crosscheck.select(touched, split(args.only), split(args.classes))
                if kind in KINDS and KINDS[kind].hook:
                    touched = hooked(touched, hook_setters(tree, KINDS[kind].hook))
                touched = _sample(touched, args.sample, args.seed)
                key = tree_digest(target_root, changed_files(target_root))
                say(f"== {kind}: {len(changed)} files changed, {len(touched)} targets touched")
                side = functools.partial(
                    oracle_side,
                    targets=touched,
                    models=models_dir,
                    cache=cache,
                    python=python,
                    jobs=args.jobs,
                    tests=args.tests,
                    say=say,
                )
                # the pristine side builds the tiny models; the others load them (the stamp says which build)
                prist = side("pristine", pristine, build=True, key=pristine_key)
                migr = None
                stamp = models_stamp(models_dir)
                if kind != "upstream-4.46":
                    migr = side(
                        "migrated", migrated_source, build=False, key=f"migrated-{baseline_key}-{pristine_key}-{stamp}"
                    )
                mut = side(f"mutant-{kind}", target_root, build=False, key=f"{key}-{pristine_key}-{stamp}")
                model_names = sorted(
                    {t.model for t in touched}
                    | {t.decoder_module.split(".")[-2] for t in touched if t.kind != "model"}
                )
                verify_doc = run_verifier(
                    target_root,
                    model_names,
                    python=python,
                    jobs=args.jobs,
                    cache=cache,
                    key=f"{kind}-{key}-{hashlib.sha256(','.join(model_names).encode()).hexdigest()[:8]}-{tool_key}",
                    say=say,
                )
                verdicts = {(v["file"], v["class"]): v for v in verify_doc["verdicts"]}
                rows = judge(touched, prist, migr, mut, verdicts)
            finally:
                if kind != "upstream-4.46":
                    for rel in changed:
                        (tree / rel).write_bytes(originals[rel])
                else:
                    shutil.rmtree(target_root, ignore_errors=True)
            numbers = tally(rows)
            numbers["seconds"] = round(time.perf_counter() - started, 1)
            numbers["verify_seconds"] = verify_doc.get("seconds")
            numbers["files"] = changed
            report["kinds"][kind] = {
                "numbers": numbers,
                "rows": rows,
                "what": KINDS[kind].what if kind in KINDS else "4.46.3's deletions and mixin",
            }
            print_kind(kind, numbers, rows)
    finally:
        with_worktrees = scratch / "migrated"
        if with_worktrees.is_dir():
            git(with_worktrees, "worktree", "prune", check=False)
        shutil.rmtree(scratch, ignore_errors=True)
    report["seconds"] = round(time.perf_counter() - started_all, 1)
    print_table(report)
    if args.json:
        args.json.write_text(json.dumps(report, indent=1))
    return 0


def print_kind(kind: str, numbers: dict, rows: list[dict]) -> None:
    rate = f"{numbers['kill_rate']:.0%}" if numbers["kill_rate"] is not None else "-"
    print(
        f"\n{kind}: touched {numbers['touched']}, affected {numbers['affected']}, caught {numbers['caught']}, "
        f"missed {numbers['missed']}, equivalent {numbers['equivalent']} "
        f"(flagged anyway {numbers['flagged_equivalent']}), unknown {numbers['unknown']}; kill rate {rate}; "
        f"{numbers['seconds']:.0f}s"
    )
    for r in rows:
        if r["oracle"] == "affected" and not r["caught"]:
            via = f" (verdict of its decoder {r['verdict_via']})" if r["verdict_via"] else ""
            print(f"  MISSED {r['class']}: verifier {r['verdict']}{via}")
            for e in r["evidence"][:3]:
                print(f"     {e['status']:<22} {e['case']}\n        old: {e['old']}\n        new: {e['new']}")
    unknown = [r for r in rows if r["oracle"] == "unknown"]
    if unknown:
        print("  unknown (oracle could not exercise): " + ", ".join(r["class"] for r in unknown))


def print_table(report: dict) -> None:
    print("\nkind                               touched affected caught missed equiv unknown  kill   time")
    for kind, entry in report["kinds"].items():
        n = entry["numbers"]
        rate = f"{n['kill_rate']:.0%}" if n["kill_rate"] is not None else "-"
        print(
            f"{kind:<34} {n['touched']:>7} {n['affected']:>8} {n['caught']:>6} {n['missed']:>6} {n['equivalent']:>5} "
            f"{n['unknown']:>7} {rate:>5} {n['seconds']:>5.0f}s"
        )
    print(f"total {report['seconds']:.0f}s")


if __name__ == "__main__":
    raise SystemExit(main())
