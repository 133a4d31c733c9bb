"""Verification on real code: the harness must catch what a migration can break, with evidence.

These tests run tiny models in the verification environment of transformers 4.45.2 (a venv made
from the release's pins, with the CPU build of torch), so they download the release and its
dependencies once per machine (``network``) and take minutes (``slow``).

- ``fixtures/verify_models/modeling_fixture_lm.py`` holds models whose overrides each hide one way a
  deletion changes generation; it is dropped into a copy of the release, committed as the base, the
  overrides are deleted (and the generic mixin installed), and ``verify`` must name the difference.
- A representative subset of the real migration (decoder-only, encoder-decoder, multimodal,
  state-space) goes through ``apply --verify``.
"""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
from pathlib import Path

import pytest
from typer.testing import CliRunner

from codemod.checkout import resolve
from codemod.cli import app
from codemod.contracts import ScenarioStatus
from codemod.fetch import fetch_release
from codemod.rules.generic_mixin import METHOD_SOURCE
from codemod.transform.plan import Edit, EditKind
from codemod.transform.rewrite import rewrite_source
from codemod.verify.options import VerifyOptions
from codemod.verify.runner import Target
from codemod.verify.session import verify_change

pytestmark = [pytest.mark.network, pytest.mark.slow]

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "verify_models" / "modeling_fixture_lm.py"
MODULE = "transformers.models.fixture_lm.modeling_fixture_lm"
FILE = "src/transformers/models/fixture_lm/modeling_fixture_lm.py"
MIXIN = "src/transformers/generation/utils.py"
LLAMA = "src/transformers/models/llama/modeling_llama.py"


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)


def defines_method(text: str, class_name: str) -> bool:
    for node in ast.parse(text).body:
        if isinstance(node, ast.ClassDef) and node.name == class_name:
            return any(isinstance(n, ast.FunctionDef) and n.name == "prepare_inputs_for_generation" for n in node.body)
    return False


def rewrite(root: Path, path: str, edits: list[Edit]) -> None:
    done = rewrite_source(path, (root / path).read_bytes(), edits)
    assert done.error is None, done.error
    (root / path).write_bytes(done.new)


@pytest.fixture(scope="module")
def fixture_verdicts(tmp_path_factory):
    root = fetch_release("4.45.2", tmp_path_factory.mktemp("verify") / "transformers")
    package = root / "src/transformers/models/fixture_lm"
    package.mkdir()
    (package / "__init__.py").write_text("")
    shutil.copy(FIXTURE, package / FIXTURE.name)
    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "the fixture models, with their overrides")

    classes = [
        "FixtureGenericForCausalLM",
        "FixtureUnslicedForCausalLM",
        "FixtureNoPositionsForCausalLM",
        "FixtureAssistedDropForCausalLM",
        "FixtureHeadMaskDropForCausalLM",
    ]
    rewrite(root, FILE, [Edit(FILE, c, EditKind.DELETE, None, "test") for c in classes])
    # the fixtures subclass Llama, whose override the migration deletes too: the new code is the mixin
    rewrite(root, LLAMA, [Edit(LLAMA, "LlamaForCausalLM", EditKind.DELETE, None, "test")])
    rewrite(root, MIXIN, [Edit(MIXIN, "GenerationMixin", EditKind.HOIST, None, "test", METHOD_SOURCE)])
    targets = [Target(f"{FILE}::{c}", MODULE, c, "fixture_lm") for c in classes]
    report = verify_change(resolve(root), targets, options=VerifyOptions(jobs=2), base="HEAD")
    return {v.override_id.split("::")[1]: v for v in report.verdicts}


def test_an_override_the_mixin_matches_is_identical(fixture_verdicts) -> None:
    verdict = fixture_verdicts["FixtureGenericForCausalLM"]
    assert verdict.verdict == "identical", verdict.detail
    assert len(verdict.compared) >= 8


def test_ids_passed_unsliced_are_caught_at_the_second_step(fixture_verdicts) -> None:
    verdict = fixture_verdicts["FixtureUnslicedForCausalLM"]
    assert verdict.verdict in ("differs", "inputs-differ", "crashed")
    first = verdict.first_difference
    assert first is not None and first.what == "prepared-inputs"
    # the old code recomputes the whole sequence: ids, positions and cache_position all span it
    assert first.step == 1 and first.key in ("cache_position", "input_ids", "past_key_values", "use_cache")


def test_position_ids_the_mixin_builds_are_caught(fixture_verdicts) -> None:
    verdict = fixture_verdicts["FixtureNoPositionsForCausalLM"]
    assert verdict.verdict in ("differs", "inputs-differ", "crashed")
    first = verdict.first_difference
    assert first is not None and (first.step, first.key) == (0, "position_ids")
    padded = next(s for s in verdict.scenarios if s.name == "left-padded-batch")
    assert padded.status in ("differs", "inputs-differ")


def test_a_kwarg_dropped_only_in_assisted_decoding_is_caught(fixture_verdicts) -> None:
    verdict = fixture_verdicts["FixtureAssistedDropForCausalLM"]
    assert verdict.verdict in ("differs", "crashed")
    assisted = next(s for s in verdict.scenarios if s.name == "assisted")
    assert assisted.status == "differs"
    assert assisted.difference.key == "token_type_ids" and assisted.difference.step >= 1
    greedy = next(s for s in verdict.scenarios if s.name == "greedy")
    assert greedy.status == "same"  # token_type_ids only travel in the assisted scenario


def test_a_head_mask_the_old_dict_dropped_is_caught(fixture_verdicts) -> None:
    """generate() accepted the caller's head mask (forward names it) and the closed dict dropped it: the mixin
    forwards it, so the deletion changes what that call generates, and only the head-masks scenario gives one."""
    verdict = fixture_verdicts["FixtureHeadMaskDropForCausalLM"]
    assert verdict.verdict == "differs", verdict.detail
    masked = next(s for s in verdict.scenarios if s.name == "head-masks")
    assert masked.status == "differs"
    assert masked.difference.key == "head_mask" and masked.difference.step == 0
    assert masked.repair is not None and masked.repair.remove == ("head_mask",)
    others = [s for s in verdict.scenarios if s.name != "head-masks" and s.status == "differs"]
    assert others == [], others


# --------------------------------------------------------------------------------------------- real subset

#: seamless_m4t: speech output (waveforms compared like scores; the dict flags go to the text stage)
SUBSET = "llama,gpt2,opt,bloom,t5,bart,mamba,chameleon,fuyu,mistral,gpt_neox,llava,seamless_m4t"


def test_apply_verify_on_a_representative_subset(tmp_path) -> None:
    """Decoder-only, encoder-decoder, multimodal and state-space models through `apply --verify`."""
    root = fetch_release("4.45.2", tmp_path / "transformers")
    report = tmp_path / "verify.json"
    done = CliRunner().invoke(
        app, ["apply", str(root), "--verify", "--only", SUBSET, "--jobs", "2", "--report", str(report)]
    )
    assert done.exit_code == 0, done.output
    doc = json.loads(report.read_text())
    verdicts = {v["class"]: v for v in doc["verdicts"]}
    assert {
        "LlamaForCausalLM",
        "GPT2LMHeadModel",
        "T5ForConditionalGeneration",
        "BartForConditionalGeneration",
    } <= set(verdicts)
    for name in ("LlamaForCausalLM", "OPTForCausalLM", "T5ForConditionalGeneration", "BartForConditionalGeneration"):
        assert verdicts[name]["verdict"] == "identical", verdicts[name]
        assert len(verdicts[name]["compared"]) >= 8
    # 4.45.2's GPT-2 drops the encoder states a caller gives generate() with cross-attention on (its cross-attention
    # variant: GPT-2 needs no is_decoder, yet attends to an encoder), which the mixin passes on, and asked by a wrapper
    # without a mask it passes none, where the installed mixin makes one of ones: the repairs drop the first and pass
    # the caller's mask on (None there), read from **kwargs, and the reduction is identical in both variants
    gpt2 = verdicts["GPT2LMHeadModel"]
    assert gpt2["verdict"] == "identical", gpt2
    same = {s["name"] for s in gpt2["scenarios"] if s["status"] == "same"}
    assert {"cross-attention/encoder-hidden-states", "encoder-decoder/greedy"} <= same, same
    gpt2_code = (root / gpt2["file"]).read_text()
    assert 'model_inputs["attention_mask"] = kwargs.get("attention_mask")\n' in gpt2_code
    assert '"encoder_hidden_states"' in gpt2_code
    # Chameleon's repair: the static cache's 2D mask as the caller gives it, where the mixin builds the 4D one
    chameleon = verdicts["ChameleonForConditionalGeneration"]
    assert chameleon["verdict"] == "identical", chameleon
    repair = '        model_inputs["attention_mask"] = attention_mask\n'
    chameleon_path = root / chameleon["file"]
    assert repair in chameleon_path.read_text()
    # text, then units and a waveform: the text stage's prepared inputs and the waveform are compared
    assert verdicts["SeamlessM4TForTextToSpeech"]["verdict"] == "identical", verdicts["SeamlessM4TForTextToSpeech"]
    # whatever did not verify was reverted: the file holds its original override again
    status = subprocess.run(["git", "-C", str(root), "diff", "--name-only"], capture_output=True, text=True).stdout
    for v in doc["verdicts"]:
        if v["verdict"] != "identical":
            assert defines_method((root / v["file"]).read_text(), v["class"]), v
    # and every changed file still compiles
    for path in status.split():
        compile((root / path).read_text(), path, "exec")
    # the repair is no decoration: without it, verification sees the mixin's 4D mask with a static cache
    chameleon_path.write_text(chameleon_path.read_text().replace(repair, ""))
    mutated = tmp_path / "mutated.json"
    again = CliRunner().invoke(
        app, ["verify", str(root), "--only", "chameleon", "--format", "json", "--output", str(mutated)]
    )
    assert again.exit_code == 1, again.output
    unrepaired = {v["class"]: v for v in json.loads(mutated.read_text())["verdicts"]}[
        "ChameleonForConditionalGeneration"
    ]
    assert unrepaired["verdict"] == "inputs-differ", unrepaired  # the same tokens from a 4D mask
    assert next(s for s in unrepaired["scenarios"] if s["name"] == "static-cache")["status"] == "inputs-differ"


LLAVA = "src/transformers/models/llava/modeling_llava.py"


def test_a_reduction_that_drops_the_llava_legacy_condition_is_caught_by_the_legacy_prompt_only(tmp_path) -> None:
    """LLaVA's override asking super() (the installed mixin) instead of its language model, its image sent on the
    first step only: the test that also sends it while the prompt takes 4.45's legacy merge path (one image token) is
    gone. Every other scenario prompts as the processor does (as many image tokens as the tower makes features), where
    the image is needed on the first step only: only the legacy prompt tells this change from the original."""
    root = fetch_release("4.45.2", tmp_path / "transformers")
    text = (root / LLAVA).read_text()
    for old, new in (
        ("self.language_model.prepare_inputs_for_generation(", "super().prepare_inputs_for_generation("),
        ("if legacy_processing or cache_position[0] == 0:", "if cache_position[0] == 0:"),
    ):
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    (root / LLAVA).write_text(text)
    rewrite(root, MIXIN, [Edit(MIXIN, "GenerationMixin", EditKind.HOIST, None, "test", METHOD_SOURCE)])
    target = Target(
        f"{LLAVA}::LlavaForConditionalGeneration",
        "transformers.models.llava.modeling_llava",
        "LlavaForConditionalGeneration",
        "llava",
    )
    (verdict,) = verify_change(resolve(root), [target], options=VerifyOptions(own_tests=False), base="HEAD").verdicts
    assert verdict.verdict in ("differs", "crashed"), verdict.detail
    failing = sorted(
        {
            s.name.rpartition("/")[2]
            for s in verdict.scenarios
            if s.status in (ScenarioStatus.DIFFERS, ScenarioStatus.CRASHED)
        }
    )
    assert failing == ["multimodal-legacy"], [(s.name, s.status) for s in verdict.scenarios]


def test_the_llava_legacy_path_is_required_evidence(tmp_path) -> None:
    """LLaVA's override (asking super(), its legacy condition kept) agrees on every scenario, but only the legacy
    prompt takes the path its ``legacy_processing`` test guards: verified without that scenario, the change is not
    identical but unverified, and the verdict says which path went untested (``usage.required_scenarios``)."""
    root = fetch_release("4.45.2", tmp_path / "transformers")
    text = (root / LLAVA).read_text()
    old = "self.language_model.prepare_inputs_for_generation("
    assert text.count(old) == 1
    (root / LLAVA).write_text(text.replace(old, "super().prepare_inputs_for_generation("))
    rewrite(root, MIXIN, [Edit(MIXIN, "GenerationMixin", EditKind.HOIST, None, "test", METHOD_SOURCE)])
    target = Target(
        f"{LLAVA}::LlavaForConditionalGeneration",
        "transformers.models.llava.modeling_llava",
        "LlavaForConditionalGeneration",
        "llava",
    )
    chosen = ("greedy", "greedy-no-cache", "multimodal", "multimodal-padded")
    (without,) = verify_change(
        resolve(root), [target], options=VerifyOptions(own_tests=False, scenarios=chosen), base="HEAD"
    ).verdicts
    assert without.verdict == "unverified", without.detail
    assert "reads image_seq_length" in without.detail and "no multimodal-legacy scenario" in without.detail
    assert {s.name for s in without.scenarios if s.status is ScenarioStatus.SAME} >= set(chosen)
    (with_legacy,) = verify_change(
        resolve(root),
        [target],
        options=VerifyOptions(own_tests=False, scenarios=(*chosen, "multimodal-legacy")),
        base="HEAD",
    ).verdicts
    assert with_legacy.verdict == "identical", with_legacy.detail


MELODY = "src/transformers/models/musicgen_melody/modeling_musicgen_melody.py"
#: the end of 4.45's Musicgen-Melody decoder override, and the reduction `apply --verify` writes for it: the delay
#: pattern and the guidance kept in front of super(), the conditioning dropped after the first step behind it, and the
#: ids cut to the last token again (the repair for a prefilled cache). The written one also takes ``head_mask`` out of
#: the signature, to travel in ``**kwargs``; here it stays named and is handed on, which super() receives the same
MELODY_TAIL = """        if past_key_values is not None:
            input_ids = input_ids[:, -1:]

            # we only want to use conditional signal in the 1st generation step but keeping the attention mask
            encoder_hidden_states = None

        return {
            "input_ids": input_ids,
            "attention_mask": attention_mask,
            "encoder_hidden_states": encoder_hidden_states,
            "encoder_attention_mask": encoder_attention_mask,
            "head_mask": head_mask,
            "past_key_values": past_key_values,
            "use_cache": use_cache,
        }
"""
MELODY_REDUCED = """        model_inputs = super().prepare_inputs_for_generation(
            input_ids,
            attention_mask=attention_mask,
            encoder_hidden_states=encoder_hidden_states,
            encoder_attention_mask=encoder_attention_mask,
            head_mask=head_mask,
            past_key_values=past_key_values,
            use_cache=use_cache,
            **kwargs,
        )
        if past_key_values is not None:
            model_inputs["encoder_hidden_states"] = None
            model_inputs["input_ids"] = model_inputs["input_ids"][:, -1:]
        return model_inputs
"""


@pytest.mark.parametrize("conditioning_every_step", [False, True], ids=["reduced", "conditioning-every-step"])
def test_the_melody_decoders_conditioning_is_evidence(tmp_path, conditioning_every_step: bool) -> None:
    """Musicgen-Melody's decoder puts its conditioning (``encoder_hidden_states``, one row per batch item) in front of
    the sequence on the first step, and its cache holds it after. Until the multimodal scenarios gave it one, the
    reduction was unverified ("handle encoder_hidden_states, which no scenario gave it") on every release. Given it,
    the reduction is identical with the conditioning among what agreeing scenarios gave, and a reduction that sends it
    on every step is caught there: the cached conditioning is prepended again."""
    root = fetch_release("4.45.2", tmp_path / "transformers")
    text = (root / MELODY).read_text()
    assert text.count(MELODY_TAIL) == 1
    reduced = MELODY_REDUCED
    if conditioning_every_step:
        reduced = reduced.replace('            model_inputs["encoder_hidden_states"] = None\n', "")
    (root / MELODY).write_text(text.replace(MELODY_TAIL, reduced))
    rewrite(root, MIXIN, [Edit(MIXIN, "GenerationMixin", EditKind.HOIST, None, "test", METHOD_SOURCE)])
    target = Target(
        f"{MELODY}::MusicgenMelodyForCausalLM",
        "transformers.models.musicgen_melody.modeling_musicgen_melody",
        "MusicgenMelodyForCausalLM",
        "musicgen_melody",
    )
    chosen = ("greedy", "greedy-no-cache", "multimodal", "multimodal-no-cache", "prefilled-cache")
    (verdict,) = verify_change(
        resolve(root), [target], options=VerifyOptions(own_tests=False, scenarios=chosen), base="HEAD"
    ).verdicts
    if not conditioning_every_step:
        assert verdict.verdict == "identical", verdict.detail
        assert {"encoder_hidden_states", "guidance_scale"} <= set(verdict.given)
        return
    assert verdict.verdict in ("differs", "crashed"), verdict.detail
    failing = {
        s.name.rpartition("/")[2]
        for s in verdict.scenarios
        if s.status in (ScenarioStatus.DIFFERS, ScenarioStatus.CRASHED)
    }
    assert failing == {"multimodal"}, [(s.name, s.status) for s in verdict.scenarios]
