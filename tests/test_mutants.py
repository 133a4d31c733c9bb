"""The verifier must catch what a broken migration does: mutants of the generic mixin, on fixture models.

The fast version of ``bench/mutants.py`` (which runs the mutants on a whole migrated 4.45.2 and
measures the kill rate against an independent oracle, ``bench/crosscheck.py``):

- ``fixtures/mutants/modeling_mutant_lm.py`` is dropped into a copy of the 4.45.2 release (with the
  ``fixtures/verify_models`` module it builds on); one class
  per mutant is appended whose ``prepare_inputs_for_generation`` is the generic mixin that ``apply``
  installs (``rules/generic_mixin.METHOD_SOURCE``), and that is committed as the base;
- in the working tree each class's method is that mutant of the mixin (the mutants are
  ``bench/mutants.py``'s own, applied to the same text), and one class gets a refactor that
  changes nothing;
- ``codemod verify --format json --no-own-tests`` runs once over all of them: every mutant must be
  caught (verdict not ``identical``), the refactor must be ``identical``.

The mutants that today's verifier misses are marked ``xfail(strict=True)`` with the reason: when
the verifier learns to catch them the mark fails and must go.

The other tests here need neither torch nor the release: the mutants apply where they should, and
the oracle's discovery and the upstream-4.46 helpers do what the bench relies on.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from codemod.analyse.mixin import MIXIN_CLASS, profile_from_source
from codemod.cli import app
from codemod.rules.generic_mixin import METHOD_SOURCE, MODULE_SOURCE
from codemod.transform.hooks import Atom, Idiom, ValueKind, hook_for
from codemod.transform.plan import Edit, EditKind
from codemod.transform.rewrite import rewrite_source

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "fixtures" / "mutants" / "modeling_mutant_lm.py"
#: the token-type model the mutant fixture builds on
VERIFY_FIXTURE = REPO / "fixtures" / "verify_models" / "modeling_fixture_lm.py"
PACKAGE = "src/transformers/models/mutant_lm"
FILE = f"{PACKAGE}/modeling_mutant_lm.py"


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


mutants = _load("bench_mutants", REPO / "bench" / "mutants.py")
crosscheck = sys.modules["crosscheck"]

#: (class name, base, mutant kind or None for the unchanged mixin, expected)
CASES = [
    ("MutantIdsUnslicedForCausalLM", "MutantLlamaBase", "ids-unsliced", "caught"),
    ("MutantIdsLastTokenForCausalLM", "MutantLlamaBase", "ids-last-token", "caught"),
    ("MutantPositionsNoneForCausalLM", "MutantLlamaBase", "positions-none", "caught"),
    ("MutantTokenTypesAssistedForCausalLM", "MutantLlamaBase", "token-type-ids-dropped-assisted", "caught"),
    ("MutantEmbedsEveryStepForCausalLM", "MutantLlamaBase", "inputs-embeds-every-step", "caught"),
    ("MutantUseCacheForCausalLM", "MutantLlamaBase", "use-cache-dropped", "caught"),
    ("MutantRefactorForCausalLM", "MutantLlamaBase", "contiguous-refactor", "identical"),
    ("MutantIdsUnslicedBertLMHeadModel", "BertLMHeadModel", "ids-unsliced", "caught"),
    ("MutantIdsLastTokenBertLMHeadModel", "BertLMHeadModel", "ids-last-token", "caught"),
    ("MutantUseCacheBertLMHeadModel", "BertLMHeadModel", "use-cache-dropped", "caught"),
]
#: mutant classes today's verifier misses, with why (a strict xfail each). Empty since the BERT-family
#: heads are built as they are used (is_decoder=True, so their cache is on): they were missed before.
XFAIL: dict[str, str] = {}


def module_text(mutated: bool) -> str:
    """The fixture module with the mutant classes appended: the mixin as is, or each class's mutant."""
    method = METHOD_SOURCE.replace("from ..cache_utils import", "from ...cache_utils import")  # one package deeper
    parts = [FIXTURE.read_text()]
    for name, base, kind, _ in CASES:
        source = mutants.KINDS[kind].mutate(method, name) if mutated else method
        parts.append(f"\n\nclass {name}({base}):\n{source}")
    return "".join(parts)


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)


# ----------------------------------------------------------------------------------- no torch needed


@pytest.mark.parametrize("mutant", [m for m in mutants.MUTANTS if m.edit is None and not m.hook], ids=lambda m: m.name)
def test_each_mixin_mutant_applies_once_to_the_generic_mixin_and_compiles(mutant) -> None:
    mutated = mutant.mutate(METHOD_SOURCE)
    assert mutated != METHOD_SOURCE
    compile("class GenerationMixin:\n" + mutated, mutant.name, "exec")


#: the masked LMs' whole-body hook as ``apply --hooks`` puts it at the start of the generic mixin's method
MASKED_LM_HOOK = """\
        if self._generation_inputs_as_bert_for_masked_lm:
            attention_mask = torch.cat([attention_mask, attention_mask.new_zeros((attention_mask.shape[0], 1))], dim=-1)
            dummy_token = torch.full((input_ids.shape[0], 1), self.config.pad_token_id, device=input_ids.device)
            return {"input_ids": torch.cat([input_ids, dummy_token], dim=1), "attention_mask": attention_mask}
"""


#: the idiom whose hook each hook mutant breaks (the masked LMs' whole-body hook has none: its code is theirs)
HOOK_IDIOMS = {
    "_generation_dropped_inputs": Idiom((), (ValueKind.NONE,)),
    "_generation_inputs_dropped_after_first_step": Idiom((Atom.FIRST.value,), (ValueKind.NONE, ValueKind.PREPARED)),
    "_generation_inputs_ignored_when_given": Idiom((Atom.GIVEN.value,), (ValueKind.PREPARED, ValueKind.NONE)),
    "_generation_input_defaults": Idiom((), (ValueKind.CALLER_OR_DEFAULT,)),
    "_generation_inputs_dropped_after_first_step_unless_needed": Idiom(
        (Atom.FIRST.value, Atom.OWN.value),
        (ValueKind.NONE, ValueKind.PREPARED, ValueKind.PREPARED, ValueKind.PREPARED),
    ),
}


def hooked_mixin(hook: str) -> str:
    """The generic mixin's method with ``hook``'s code, as ``apply --hooks`` installs it (the rewrite's own
    code, from the hook the miner proposes for its idiom)."""
    if hook == "_generation_inputs_as_bert_for_masked_lm":
        docstring_end = METHOD_SOURCE.index('"""\n', METHOD_SOURCE.index('"""') + 3) + 4
        return METHOD_SOURCE[:docstring_end] + MASKED_LM_HOOK + METHOD_SOURCE[docstring_end:]
    profile = profile_from_source(MODULE_SOURCE, mutants.MIXIN)
    _, proposed, _ = hook_for(HOOK_IDIOMS[hook], profile)
    assert proposed is not None and proposed.attribute == hook
    edit = Edit(mutants.MIXIN, MIXIN_CLASS, EditKind.HOOK, None, hook, hook=proposed.code())
    result = rewrite_source(mutants.MIXIN, MODULE_SOURCE.encode(), [edit])
    assert result.error is None, result.error
    # the method alone, as METHOD_SOURCE is (the rewrite declares the attribute above it)
    text = result.new_text()
    return text[text.index("    def prepare_inputs_for_generation(") :]


def test_every_hook_mutant_has_its_hook_here() -> None:
    assert {m.hook for m in mutants.MUTANTS if m.hook} == {*HOOK_IDIOMS, "_generation_inputs_as_bert_for_masked_lm"}


@pytest.mark.parametrize("mutant", [m for m in mutants.MUTANTS if m.hook], ids=lambda m: m.name)
def test_each_hook_mutant_applies_once_to_the_mixin_with_its_hook(mutant) -> None:
    """Noop on the generic mixin alone (its pattern is the hook's); once on the mixin with the hook."""
    with pytest.raises(mutants.MutantError, match="found it 0 times"):
        mutant.mutate(METHOD_SOURCE)
    hooked = hooked_mixin(mutant.hook)
    assert f"self.{mutant.hook}" in hooked
    mutated = mutant.mutate(hooked)
    assert mutated != hooked
    compile("class GenerationMixin:\n" + mutated, mutant.name, "exec")


def test_a_hook_mutant_is_tried_on_the_classes_that_set_its_attribute(tmp_path) -> None:
    """Only they run the hook's code: the class that sets it, its subclasses in the file, composites around them."""
    package = tmp_path / "src" / "transformers" / "models" / "toy"
    package.mkdir(parents=True)
    (package / "modeling_toy.py").write_text(
        "class ToyPreTrainedModel:\n    pass\n\n\n"
        "class ToyForCausalLM(ToyPreTrainedModel):\n    _generation_dropped_inputs = ('head_mask',)\n\n\n"
        "class ToyWithHeadForCausalLM(ToyForCausalLM):\n    pass\n\n\n"
        "class ToyModel(ToyPreTrainedModel):\n    _generation_dropped_inputs_other = ()\n"
    )
    setters = mutants.hook_setters(tmp_path, "_generation_dropped_inputs")
    assert setters == {"ToyForCausalLM", "ToyWithHeadForCausalLM"}
    Target = crosscheck.Target
    targets = [
        Target("a", "m", "ToyForCausalLM", "toy"),
        Target("b", "m", "ToyModel", "toy"),
        Target("c", "ed", "EncoderDecoderModel", "encoder_decoder", "encoder-decoder", "m", "ToyForCausalLM"),
        Target("d", "ed", "EncoderDecoderModel", "encoder_decoder", "encoder-decoder", "m2", "BertLMHeadModel"),
    ]
    assert [t.id for t in mutants.hooked(targets, setters)] == ["a", "c"]


def test_a_mutant_whose_pattern_is_missing_fails_loudly() -> None:
    with pytest.raises(mutants.MutantError, match="found it 0 times"):
        mutants.KINDS["ids-unsliced"].mutate("def prepare_inputs_for_generation(self):\n    return {}\n")


def test_the_mixin_mutants_edit_only_the_mixin_method(tmp_path) -> None:
    mixin = tmp_path / mutants.MIXIN
    mixin.parent.mkdir(parents=True)
    other = "\n    def other(self, cache_position):\n        input_ids = input_ids[:, cache_position]\n"
    mixin.write_text("class GenerationMixin:\n" + METHOD_SOURCE + other)
    assert mutants.KINDS["ids-last-token"].apply(tmp_path) == [mutants.MIXIN]
    text = mixin.read_text()
    assert text.endswith(other) and "input_ids[:, -1:]  # mutant" in text


def lynx(root: Path, source: str) -> Path:
    """A model file of ``source`` in a tree under ``root``, where the reduced-override mutants look."""
    model = root / "src/transformers/models/lynx/modeling_lynx.py"
    model.parent.mkdir(parents=True)
    model.write_text(source)
    return model


#: (a reduced override with the guarded statement, a bespoke one with the same test, the mutant's edit, its new
#: test, the test it keeps in the bespoke override, what it says once nothing is left to mutate): each
#: reduced-override mutant leaves bespoke code alone
GUARD_MUTANTS = [
    pytest.param(
        "class LynxForConditionalGeneration(LynxPreTrainedModel):\n"
        "    def prepare_inputs_for_generation(self, input_ids, pixel_values=None, cache_position=None, **kwargs):\n"
        "        model_inputs = super().prepare_inputs_for_generation(input_ids, cache_position=cache_position, **kwargs)\n"
        "        if cache_position[0] == 0:\n"
        '            model_inputs["pixel_values"] = pixel_values\n'
        "        return model_inputs\n",
        "class LynxBespoke(LynxPreTrainedModel):\n"
        "    def prepare_inputs_for_generation(self, input_ids, cache_position=None, **kwargs):\n"
        "        if cache_position[0] == 0:\n"
        "            return {}\n"
        "        return {'input_ids': input_ids}\n",
        mutants.first_step_every_step,
        "if True:  # mutant",
        "if cache_position[0] == 0:",
        "guards an input",
        id="first-step-input",
    ),
    pytest.param(
        "class LynxForConditionalGeneration(LynxPreTrainedModel):\n"
        "    def prepare_inputs_for_generation(self, input_ids, pixel_values=None, cache_position=None, **kwargs):\n"
        "        legacy_processing = (input_ids == self.config.image_token_index).sum(1).max() < 4\n"
        "        model_inputs = super().prepare_inputs_for_generation(input_ids, cache_position=cache_position, **kwargs)\n"
        "        if legacy_processing or cache_position[0] == 0:\n"
        '            model_inputs["pixel_values"] = pixel_values\n'
        "        return model_inputs\n",
        "class LynxBespoke(LynxPreTrainedModel):\n"
        "    def prepare_inputs_for_generation(self, input_ids, cache_position=None, **kwargs):\n"
        "        legacy_processing = True\n"
        "        if legacy_processing or cache_position[0] == 0:\n"
        "            return {}\n"
        "        return {'input_ids': input_ids}\n",
        mutants.legacy_image_first_step_only,
        "if cache_position[0] == 0:  # mutant",
        "if legacy_processing or cache_position[0] == 0:",
        "legacy_processing or",
        id="legacy-image",
    ),
    pytest.param(
        "class LynxForCausalLM(LynxPreTrainedModel):\n"
        "    def prepare_inputs_for_generation(self, input_ids, past_key_values=None, cache_position=None, **kwargs):\n"
        "        if past_key_values and input_ids.shape[1] > self.config.original_max_position_embeddings:\n"
        "            past_key_values = None\n"
        "        return super().prepare_inputs_for_generation(input_ids, past_key_values=past_key_values, **kwargs)\n",
        "class LynxBespoke(LynxPreTrainedModel):\n"
        "    def prepare_inputs_for_generation(self, input_ids, past_key_values=None, **kwargs):\n"
        "        past_key_values = None\n"
        "        return {'input_ids': input_ids, 'past_key_values': past_key_values}\n",
        mutants.cache_reset_dropped,
        "pass  # mutant: was `past_key_values = None`",
        "\n        past_key_values = None\n",
        "drops the cache",
        id="cache-reset",
    ),
    pytest.param(
        "class LynxForCausalLM(LynxPreTrainedModel):\n"
        "    def prepare_inputs_for_generation(self, input_ids, **kwargs):\n"
        "        model_inputs = super().prepare_inputs_for_generation(input_ids, **kwargs)\n"
        '        if kwargs.get("position_ids") is not None:\n'
        '            model_inputs["position_ids"] = None\n'
        "        return model_inputs\n",
        "class LynxBespoke(LynxPreTrainedModel):\n"
        "    def prepare_inputs_for_generation(self, input_ids, position_ids=None, **kwargs):\n"
        "        model_inputs = {'input_ids': input_ids}\n"
        "        if position_ids is not None:\n"
        '            model_inputs["position_ids"] = None\n'
        "        return model_inputs\n",
        mutants.caller_input_honoured,
        "if False:  # mutant",
        "if position_ids is not None:",
        "sets a key to None",
        id="none-when-given",
    ),
    pytest.param(
        "class LynxForCausalLM(LynxPreTrainedModel):\n"
        "    def prepare_inputs_for_generation(self, input_ids, **kwargs):\n"
        "        model_inputs = super().prepare_inputs_for_generation(input_ids, **kwargs)\n"
        '        model_inputs["attention_mask"] = kwargs.get("attention_mask")\n'
        "        return model_inputs\n",
        "class LynxBespoke(LynxPreTrainedModel):\n"
        "    def prepare_inputs_for_generation(self, input_ids, **kwargs):\n"
        "        model_inputs = {'input_ids': input_ids}\n"
        '        model_inputs["attention_mask"] = kwargs.get("attention_mask")\n'
        "        return model_inputs\n",
        mutants.caller_value_not_passed_on,
        """pass  # mutant: was `model_inputs["attention_mask"] = kwargs.get("attention_mask")`""",
        """\n        model_inputs["attention_mask"] = kwargs.get("attention_mask")\n""",
        "passes a key on from",
        id="passed-on-from-kwargs",
    ),
    pytest.param(
        "class LynxForCausalLM(LynxPreTrainedModel):\n"
        "    def prepare_inputs_for_generation(self, input_ids, **kwargs):\n"
        '        kwargs.pop("cache_position", None)\n'
        "        model_inputs = super().prepare_inputs_for_generation(input_ids, **kwargs)\n"
        "        return model_inputs\n",
        "class LynxBespoke(LynxPreTrainedModel):\n"
        "    def prepare_inputs_for_generation(self, input_ids, **kwargs):\n"
        '        kwargs.pop("cache_position", None)\n'
        "        return {'input_ids': input_ids}\n",
        mutants.withheld_position_passed_on,
        """pass  # mutant: was `kwargs.pop("cache_position", None)`""",
        """\n        kwargs.pop("cache_position", None)\n        return {""",
        "withholds cache_position",
        id="withheld-cache-position",
    ),
]


@pytest.mark.parametrize(("reduced", "bespoke", "mutate", "mutated", "kept", "exhausted"), GUARD_MUTANTS)
def test_a_reduced_override_mutant_edits_reduced_overrides_only(
    tmp_path, reduced, bespoke, mutate, mutated, kept, exhausted
) -> None:
    model = lynx(tmp_path, reduced + "\n\n" + bespoke)
    assert mutate(tmp_path) == ["src/transformers/models/lynx/modeling_lynx.py"]
    text = model.read_text()
    assert text.count(mutated) == 1 and text.count(kept) == 1
    compile(text, "modeling_lynx.py", "exec")
    with pytest.raises(mutants.MutantError, match=exhausted):  # nothing left to mutate: it says so
        mutate(tmp_path)


def test_upstream_deletions_and_the_composites_generation_mixin_base() -> None:
    text = (
        "from ...modeling_utils import PreTrainedModel\n\n\n"
        "class EncoderDecoderModel(PreTrainedModel):\n"
        "    x = 1\n\n"
        "    # Copied from somewhere\n"
        "    def prepare_inputs_for_generation(self, input_ids, **kwargs):\n"
        "        return {}\n\n"
        "    def other(self):\n"
        "        return 2\n"
    )
    deleted = mutants._delete_method(text, "EncoderDecoderModel")
    assert "prepare_inputs_for_generation" not in deleted and "Copied from" not in deleted and "def other" in deleted
    based = mutants.add_generation_mixin(deleted, "EncoderDecoderModel")
    assert "class EncoderDecoderModel(PreTrainedModel, GenerationMixin):" in based
    assert "from ...generation import GenerationMixin\nfrom ...modeling_utils import PreTrainedModel" in based
    compile(based, "x", "exec")


def test_the_oracle_finds_classes_whose_inherited_method_changed(tmp_path) -> None:
    """crosscheck's discovery: own method, a same-file base's, an imported base's, and the mixin's."""

    def tree(root: Path, llama_method: str, mixin_body: str) -> Path:
        (root / "src/transformers/generation").mkdir(parents=True)
        (root / "src/transformers/generation/utils.py").write_text(
            f"class GenerationMixin:\n    def prepare_inputs_for_generation(self, input_ids, **kwargs):\n        {mixin_body}\n"
        )
        (root / "src/transformers/models/llama").mkdir(parents=True)
        (root / "src/transformers/models/llama/modeling_llama.py").write_text(
            "class LlamaPreTrainedModel(PreTrainedModel):\n    pass\n\n\n"
            f"class LlamaForCausalLM(LlamaPreTrainedModel, GenerationMixin):\n{llama_method}\n\n"
            "class LlamaChild(LlamaForCausalLM):\n    pass\n\n\n"
            "class LlamaModel(LlamaPreTrainedModel):\n    pass\n"
        )
        (root / "src/transformers/models/fixture").mkdir(parents=True)
        (root / "src/transformers/models/fixture/modeling_fixture.py").write_text(
            "from ..llama.modeling_llama import LlamaForCausalLM\n\n\nclass FixtureLM(LlamaForCausalLM):\n    pass\n"
        )
        return root

    own = (
        "    def prepare_inputs_for_generation(self, input_ids, **kwargs):\n        return {'input_ids': input_ids}\n"
    )
    base = tree(tmp_path / "base", own, "raise NotImplementedError('stub')")
    new = tree(tmp_path / "new", "    pass\n", "return {'input_ids': input_ids}")
    found = {t.cls for t in crosscheck.changed_targets(crosscheck.Tree(base), crosscheck.Tree(new))}
    # LlamaModel falls back to the mixin on both sides and never generated: not a target
    assert found == {"LlamaForCausalLM", "LlamaChild", "FixtureLM"}
    # a change of the mixin alone reaches every generative class that falls back to it
    newer = tree(tmp_path / "newer", "    pass\n", "return {'input_ids': input_ids[:, -1:]}")
    found = {t.cls for t in crosscheck.changed_targets(crosscheck.Tree(new), crosscheck.Tree(newer))}
    assert found == {"LlamaForCausalLM", "LlamaChild", "FixtureLM"}


def test_the_oracle_compares_cases_as_documented() -> None:
    ok = lambda ids: {"ok": True, "out": {"ids": ids}}  # noqa: E731
    err = lambda text: {"ok": False, "error": text}  # noqa: E731
    case = {"name": "greedy-b1", "embeds": False, "reference": None}
    assert crosscheck.compare_case(case, ok([[1, 2]]), ok([[1, 2]]), {}, 1) == "same"
    assert crosscheck.compare_case(case, ok([[1, 2]]), ok([[1, 3]]), {}, 1) == "differs"
    assert crosscheck.compare_case(case, ok([[1, 2]]), err("RuntimeError: x"), {}, 1) == "crashed-new"
    assert crosscheck.compare_case(case, err("E: a"), err("E: a"), {}, 1) == "crashed-both-alike"
    assert crosscheck.compare_case(case, err("E: a"), err("E: b"), {}, 1) == "crashed-both-differently"
    embeds = {"name": "inputs-embeds-b1", "embeds": True, "reference": "greedy-b1"}
    reference = {"greedy-b1": ok([[7, 7, 5, 6]])}
    assert crosscheck.compare_case(embeds, err("E: refused"), ok([[5, 6]]), reference, 2) == "extended"
    assert crosscheck.compare_case(embeds, err("E: refused"), ok([[5, 9]]), reference, 2) == "extended-inconsistent"
    # a lossless strategy the old code crashed on: the new tokens are greedy's, whole sequences compared
    lookup = {"name": "prompt-lookup", "embeds": False, "reference": "greedy-b1"}
    assert crosscheck.compare_case(lookup, err("IndexError: x"), ok([[7, 7, 5, 6]]), reference, 2) == "extended"
    assert (
        crosscheck.compare_case(lookup, err("IndexError: x"), ok([[7, 7, 5, 9]]), reference, 2)
        == "extended-inconsistent"
    )
    # where both sides run, the old tokens are the reference, whatever greedy makes
    assert crosscheck.compare_case(lookup, ok([[7, 7, 5, 9]]), ok([[7, 7, 5, 9]]), reference, 2) == "same"


class _OracleModel:
    """What ``plan_cases`` reads of a model: its config and its forward's parameters."""

    config = type("Config", (), {})()

    def forward(self, input_ids=None, attention_mask=None):  # noqa: ANN001, ANN201 - a stand-in
        return None


#: the decoding strategies that call prepare_inputs_for_generation their own way, with the batch each runs on
#: (4.45's low-memory contrastive search and prompt lookup take one prompt at a time)
STRATEGY_CASES = {
    "contrastive": "b2",
    "contrastive-low-memory": "b1",
    "prompt-lookup": "b1",
    "group-beam": "b2",
    "sampling-2-sequences": "b2",
    "extra-outputs": "b2",
    "beam-2-returned": "b2",
}


@pytest.mark.parametrize("encoder_decoder", [False, True])
def test_the_oracle_runs_every_decoding_strategy(encoder_decoder: bool) -> None:
    cases = {
        case["name"]: case
        for case in crosscheck.plan_cases(
            _OracleModel(),
            encoder_decoder=encoder_decoder,
            text=True,
            embeddable=False,
            has_tt=False,
            reads_is_decoder=False,
            decoder_start=None,
        )
    }
    assert {name: cases[name]["inputs"] for name in STRATEGY_CASES if name in cases} == STRATEGY_CASES
    # DoLa contrasts a decoder-only model's layers; generate() refuses it for encoder-decoders
    assert ("dola" in cases) is not encoder_decoder


# ----------------------------------------------------------------------------------- on the release


@pytest.fixture(scope="module")
def mutant_verdicts(tmp_path_factory) -> dict[str, dict]:
    from codemod.fetch import fetch_release

    root = fetch_release("4.45.2", tmp_path_factory.mktemp("mutants") / "transformers")
    for package in (root / PACKAGE, root / "src/transformers/models/fixture_lm"):
        package.mkdir()
        (package / "__init__.py").write_text("")
    shutil.copy(VERIFY_FIXTURE, root / "src/transformers/models/fixture_lm" / VERIFY_FIXTURE.name)
    (root / FILE).write_text(module_text(mutated=False))
    git(root, "add", "-A")
    git(
        root,
        "-c",
        "user.name=t",
        "-c",
        "user.email=t@t",
        "commit",
        "-qm",
        "the mutant fixture, with the generic mixin",
    )
    (root / FILE).write_text(module_text(mutated=True))
    report = root.parent / "verify.json"
    done = CliRunner().invoke(
        app,
        [
            "verify",
            str(root),
            "--base",
            "HEAD",
            "--format",
            "json",
            "-o",
            str(report),
            "--no-own-tests",
            "--jobs",
            "2",
            "--only",
            "mutant_lm",
        ],
    )
    assert report.is_file(), done.output
    doc = json.loads(report.read_text())
    shutil.rmtree(root, ignore_errors=True)
    return {v["class"]: v for v in doc["verdicts"]}


def _case_params():
    for name, _, kind, expected in CASES:
        marks = [pytest.mark.xfail(strict=True, reason=XFAIL[name])] if name in XFAIL else []
        yield pytest.param(name, kind, expected, marks=marks, id=f"{kind}-{re.sub('^Mutant', '', name)}")


@pytest.mark.network
@pytest.mark.slow
@pytest.mark.parametrize(("name", "kind", "expected"), list(_case_params()))
def test_the_verifier_catches_the_mutant(mutant_verdicts, name, kind, expected) -> None:
    verdict = mutant_verdicts.get(name)
    assert verdict is not None, f"{name} was not verified: {sorted(mutant_verdicts)}"
    if expected == "identical":
        assert verdict["verdict"] == "identical", verdict
    else:
        assert verdict["verdict"] != "identical", f"{kind} missed on {name}: {verdict['detail']}"


# ----------------------------------------------------------------------------------- issue 41's scenarios

KEPT_MUSICGEN = (
    "class LynxForCausalLM(LynxPreTrainedModel):\n"
    "    def prepare_inputs_for_generation(self, input_ids, past_key_values=None, **model_kwargs):\n"
    "        if past_key_values is not None:\n"
    "            input_ids = input_ids[:, -1:]\n"
    "        return {'input_ids': input_ids, 'past_key_values': past_key_values}\n"
)
REDUCED_WITH_THE_SAME_CUT = (
    "class LynxReduced(LynxPreTrainedModel):\n"
    "    def prepare_inputs_for_generation(self, input_ids, past_key_values=None, **kwargs):\n"
    "        model_inputs = super().prepare_inputs_for_generation(input_ids, past_key_values, **kwargs)\n"
    "        input_ids = input_ids[:, -1:]\n"
    "        return model_inputs\n"
)
CLOSED_WITHOUT_KWARGS = (
    "class LynxClosed(LynxPreTrainedModel):\n"
    "    def prepare_inputs_for_generation(self, input_ids, past_key_values=None):\n"
    "        input_ids = input_ids[:, -1:]\n"
    "        return {'input_ids': input_ids}\n"
)


def test_the_last_token_mutant_cuts_kept_overrides_by_generates_positions(tmp_path) -> None:
    """What reducing 4.45's Musicgen decoders did, as a mutant of the overrides a migration keeps whole: the cut to
    the last token made by the ``cache_position`` generate() passes in ``**kwargs`` (under whatever name). A reduced
    override, and one without ``**kwargs`` (no position reaches it), are left alone."""
    model = lynx(tmp_path, "\n\n".join([KEPT_MUSICGEN, REDUCED_WITH_THE_SAME_CUT, CLOSED_WITHOUT_KWARGS]))
    assert mutants.last_token_cut_by_position(tmp_path) == ["src/transformers/models/lynx/modeling_lynx.py"]
    text = model.read_text()
    assert 'input_ids = input_ids[:, model_kwargs["cache_position"]]  # mutant' in text
    assert text.count("input_ids = input_ids[:, -1:]\n") == 2  # the reduced one and the closed one
    compile(text, "modeling_lynx.py", "exec")
    with pytest.raises(mutants.MutantError, match="cuts the ids to the last token"):
        mutants.last_token_cut_by_position(tmp_path)


def test_every_scenario_issue_41_added_catches_a_mutant_kind() -> None:
    """Each scenario added for the wide check's cases is the catcher of at least one mutant kind of the kill-rate
    suite (a scenario no mutant needs proves nothing), and names only kinds that exist."""
    added = {"continue-from-cache", "multimodal-continue", "prompt-lookup", "beam-search-returned"}
    source = (REPO / "codemod" / "verify" / "scenarios.py").read_text()
    assert all(f'"{name}":' in source for name in added)
    assert set(mutants.CATCHERS) == added
    assert all(kinds and set(kinds) <= set(mutants.KINDS) for kinds in mutants.CATCHERS.values())


CATCHER_SCRIPT = r"""
import json, os, sys, tempfile, warnings
warnings.filterwarnings("ignore")
import importlib, inspect
import scenarios, tiny

sources = json.loads(open(sys.argv[1]).read())
folder = tempfile.mkdtemp()


def with_method(name, module, base, source):
    namespace = dict(vars(importlib.import_module(module)), inspect=inspect, __package__="transformers.generation")
    exec(f"class {name}({base}):\n{source}", namespace)
    return namespace[name]


out = {}
for key, (scenario, module, base, source) in sources.items():
    model, _ = tiny.tiny_model(with_method("Checked", module, base, source), seed=0)
    result = scenarios.run_scenario(
        scenario, model, model, seed=0, device="cpu", inputs_path=os.path.join(folder, key), build=True
    )
    out[key] = {k: result.get(k) for k in ("status", "error", "sequences", "scores", "calls")}
print("RESULT " + json.dumps(out))
"""


def test_each_new_scenario_alone_catches_its_mixin_mutant_kinds(verify_env, tmp_path) -> None:
    """A tiny Llama whose method is the generic mixin, and one whose method is each mixin mutant a new scenario is
    named the catcher of: that scenario alone tells them apart (tokens, scores, prepared inputs or a crash)."""
    pairs = [
        (scenario, kind)
        for scenario, kinds in mutants.CATCHERS.items()
        for kind in kinds
        if mutants.KINDS[kind].edit is None and not mutants.KINDS[kind].hook
    ]
    assert pairs, "the catchers name mixin mutants"
    sources = {f"{scenario}|-": (scenario, *LLAMA, METHOD_SOURCE) for scenario, _ in pairs}
    sources.update({f"{s}|{k}": (s, *LLAMA, mutants.KINDS[k].mutate(METHOD_SOURCE, "Checked")) for s, k in pairs})
    results = _catchers(verify_env, tmp_path, sources)
    for scenario, kind in pairs:
        plain, mutated = results[f"{scenario}|-"], results[f"{scenario}|{kind}"]
        assert plain["status"] == "ok", plain["error"]
        assert mutated["status"] != "skipped", mutated  # a mutant the scenario did not run on is not caught
        assert mutated != plain, f"{scenario} does not tell {kind} from the mixin"


#: (module, class) the mixin mutants' tiny model subclasses
LLAMA = ("transformers.models.llama.modeling_llama", "LlamaForCausalLM")


def _catchers(verify_env, tmp_path: Path, sources: dict[str, tuple[str, str, str, str]]) -> dict:
    """Each scenario run on a tiny model of a class with its method: key -> (scenario, module, base, method)."""
    from tests.test_tiny import _run

    (tmp_path / "sources.json").write_text(json.dumps(sources))
    script = CATCHER_SCRIPT.replace("sys.argv[1]", repr(str(tmp_path / "sources.json")))
    return _run(verify_env, script, tmp_path)


@pytest.mark.parametrize(
    ("module", "class_name", "one_call", "continued"),
    [
        pytest.param("musicgen", "MusicgenForCausalLM", "greedy", "continue-from-cache", id="musicgen"),
        pytest.param(
            "musicgen_melody", "MusicgenMelodyForCausalLM", "multimodal", "multimodal-continue", id="musicgen-melody"
        ),
    ],
)
def test_continuing_from_a_cache_alone_catches_the_last_token_cut_by_position(
    verify_env, tmp_path, module: str, class_name: str, one_call: str, continued: str
) -> None:
    """4.45's Musicgen decoders, kept, cut their ids to the last token once there is a cache; the mutant cuts them by
    generate()'s ``cache_position`` (what reducing them did). One generate() call cannot tell the two apart: it runs
    alike. Continuing from the returned cache, which holds the delay pattern's positions beyond the ids (and, given
    a melody, its conditioning), does: each continued scenario ``CATCHERS`` names for the kind catches it, and
    runs on the mutant."""
    _, src = verify_env
    text = (src / f"transformers/models/{module}/modeling_{module}.py").read_text(encoding="utf-8")
    span = mutants.method_span(text, class_name)
    assert span is not None
    tree = tmp_path / "tree"
    model = lynx(tree, f"class Checked({class_name}):\n" + text[span[0] : span[1]])
    plain = model.read_text().split("\n", 1)[1]
    assert mutants.last_token_cut_by_position(tree) == ["src/transformers/models/lynx/modeling_lynx.py"]
    mutated = model.read_text().split("\n", 1)[1]
    assert "last-token-cut-by-position" in mutants.CATCHERS[continued]
    where = (f"transformers.models.{module}.modeling_{module}", class_name)
    sources = {
        f"{scenario}|{label}": (scenario, *where, method)
        for scenario in (one_call, continued)
        for label, method in (("-", plain), ("mutant", mutated))
    }
    results = _catchers(verify_env, tmp_path, sources)
    assert results[f"{one_call}|-"]["status"] == "ok", results[f"{one_call}|-"]["error"]
    assert results[f"{one_call}|mutant"] == results[f"{one_call}|-"]  # one call: the mutant hides
    plain_run, mutant_run = results[f"{continued}|-"], results[f"{continued}|mutant"]
    assert plain_run["status"] == "ok", plain_run["error"]
    assert plain_run["calls"] and mutant_run["status"] != "skipped"
    assert mutant_run != plain_run
