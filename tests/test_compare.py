"""The verdict logic of verification (pure): which differences count, and what the evidence names."""

from __future__ import annotations

from pathlib import Path

import pytest

from codemod.contracts import Repair
from codemod.verify.compare import RELEASE_LACKS, compare, compare_scenario
from codemod.verify.repair import repair_for
from codemod.verify.values import same_summary


def tensor(values, dtype="torch.int64", shape=None):
    return {"tensor": shape or [1, len(values)], "dtype": dtype, "values": list(values)}


def ok(name="greedy", sequences=((5, 6, 7),), scores=(((0.1, 0.2),),), calls=None):
    return {
        "name": name,
        "status": "ok",
        "sequences": [list(s) for s in sequences],
        "scores": [[list(row) for row in step] for step in scores],
        "calls": calls if calls is not None else [{"input_ids": tensor([5, 6])}, {"input_ids": tensor([7])}],
    }


def crash(name: str, error: str, calls) -> dict:
    return {"name": name, "status": "error", "error": error, "calls": calls}


def side(*scenarios, status="ok", caches=False):
    """One side's result document; ``caches``: whether the class can cache at all (then an
    identical verdict needs a compared run that used a cache and one that did not)."""
    return {"status": status, "scenarios": list(scenarios), "seconds": 1.0, "caches": caches}


@pytest.mark.parametrize(
    ("old", "new", "status"),
    [
        pytest.param(ok(), ok(), "same", id="same-everything"),
        pytest.param(
            ok(scores=(((0.1, 0.2),),)), ok(scores=(((0.1000001, 0.2),),)), "same", id="scores-within-tolerance"
        ),
        pytest.param(ok(), ok(sequences=((5, 6, 8),)), "differs", id="other-tokens"),
        pytest.param(ok(), ok(scores=(((0.1, 0.3),),)), "differs", id="other-scores"),
        pytest.param(
            ok(),
            ok(calls=[{"input_ids": tensor([5, 6])}, {"input_ids": tensor([6, 7], shape=[1, 2])}]),
            "inputs-differ",
            id="same-outputs-other-prepared-inputs",
        ),
        pytest.param(
            ok(calls=[{"input_ids": tensor([5]), "inputs_embeds": None}]),
            ok(calls=[{"input_ids": tensor([5])}]),
            "same",
            id="none-is-the-same-as-absent",
        ),
        pytest.param(
            {"name": "greedy", "status": "error", "error": "ValueError: no", "calls": []},
            {"name": "greedy", "status": "error", "error": "ValueError: no", "calls": []},
            "same-error",
            id="both-fail-alike",
        ),
        pytest.param(
            ok(),
            {"name": "greedy", "status": "error", "error": "TypeError: x", "calls": []},
            "crashed",
            id="new-fails",
        ),
        pytest.param(
            {"name": "greedy", "status": "error", "error": "ValueError: a", "calls": []},
            {"name": "greedy", "status": "error", "error": "KeyError: b", "calls": []},
            "crashed",
            id="both-fail-differently",
        ),
        pytest.param(
            {"name": "inputs-embeds", "status": "error", "error": "ValueError: not supported", "calls": []},
            ok(name="inputs-embeds"),
            "extended",
            id="old-rejects-up-front",
        ),
        pytest.param(
            {"name": "assisted", "status": "error", "error": "IndexError: x", "calls": [{"input_ids": tensor([5])}]},
            ok(name="assisted"),
            "extended",
            id="old-fails-midway",
        ),
        pytest.param(
            crash("greedy", "AttributeError: a", [{"input_ids": tensor([5])}]),
            crash("greedy", "RuntimeError: b", [{"input_ids": tensor([5])}, {"input_ids": tensor([6])}]),
            "both-fail",
            id="both-fail-the-new-code-no-earlier-and-alike-until-then",
        ),
        pytest.param(
            crash("greedy", "AttributeError: a", [{"input_ids": tensor([5])}, {"input_ids": tensor([6])}]),
            crash("greedy", "RuntimeError: b", [{"input_ids": tensor([5])}]),
            "crashed",
            id="both-fail-the-new-code-earlier",
        ),
        pytest.param(
            crash("greedy", "AttributeError: a", [{"input_ids": tensor([5])}]),
            crash("greedy", "RuntimeError: b", [{"input_ids": tensor([4])}, {"input_ids": tensor([6])}]),
            "crashed",
            id="both-fail-the-new-code-prepared-otherwise-first",
        ),
        pytest.param(
            {
                **crash("greedy", "AttributeError: a", [{"input_ids": tensor([5])}]),
                "outer_calls": [{"decoder_input_ids": tensor([1])}],
            },
            {
                **crash("greedy", "RuntimeError: b", [{"input_ids": tensor([5])}, {"input_ids": tensor([6])}]),
                "outer_calls": [{"decoder_input_ids": tensor([2])}],
            },
            "crashed",
            id="both-fail-the-composite-prepared-otherwise-first",
        ),
        pytest.param(
            {"name": "x", "status": "skipped", "reason": "n/a"},
            {"name": "x", "status": "skipped"},
            "skipped",
            id="skipped",
        ),
        pytest.param(
            ok("contrastive", calls=[{"input_ids": tensor([1])}]),
            {
                "name": "contrastive",
                "status": "skipped",
                "reason": RELEASE_LACKS + "Contrastive Search requires `trust_remote_code=True`",
            },
            "skipped",
            id="the-new-sides-release-cannot-run-it-no-evidence",
        ),
        pytest.param(
            ok("contrastive", calls=[{"input_ids": tensor([1])}]),
            {"name": "contrastive", "status": "skipped", "reason": "forward takes no use_cache"},
            "crashed",
            id="the-new-code-skips-what-the-old-ran",
        ),
    ],
)
def test_scenario_status(old, new, status) -> None:
    assert compare_scenario(old, new).status == status


def test_the_worker_and_the_comparison_name_a_release_skip_alike() -> None:
    # the worker (run by path, without the codemod package) writes the reason the comparison reads
    worker = (Path(__file__).resolve().parents[1] / "codemod" / "verify" / "scenarios.py").read_text()
    assert f"RELEASE_LACKS = {RELEASE_LACKS!r}".replace("'", '"') in worker
    # and it knows the words 5.23.0's generate() raises with (generation/utils.py, _get_deprecated_gen_repo)
    assert "in your `generate` call, since it loads https://hf.co/" in worker
    # and those it refuses a cache of tuples with (the prefilled cache the old release built)
    assert "Passing a tuple of `past_key_values` is not supported anymore" in worker


@pytest.mark.network
@pytest.mark.slow
def test_the_release_limits_are_what_5_23_0_raises() -> None:
    from codemod.verify.sides import release_environment

    _, src = release_environment("5.23.0", "cpu")
    generation = (src / "transformers" / "generation" / "utils.py").read_text()
    assert "Passing a tuple of `past_key_values` is not supported anymore" in generation
    # one message written over two f-strings: "... in your `generate` call, " "since it loads https://hf.co/..."
    assert "in your `generate` call, " in generation and '"since it loads https://hf.co/' in generation


def test_the_first_differing_step_and_key_are_named() -> None:
    old = ok(calls=[{"input_ids": tensor([5, 6]), "position_ids": None}, {"input_ids": tensor([7])}])
    new = ok(
        sequences=((5, 6, 9),),
        calls=[{"input_ids": tensor([5, 6])}, {"input_ids": tensor([7]), "position_ids": tensor([2])}],
    )
    outcome = compare_scenario(old, new)
    assert outcome.status == "differs"
    assert (outcome.difference.step, outcome.difference.key) == (1, "position_ids")
    assert "step 1" in str(outcome.difference)


def test_a_difference_past_the_values_shown_says_where_it_is() -> None:
    """A masked LM's mask with its last value changed: the first six values agree, so the message names the
    first index that does not (before: both sides read ``[1, 1, 1, 1, 1, 1]…``)."""
    mask = [1, 1, 1, 1, 1, 1, 1, 0]
    old = ok(calls=[{"input_ids": tensor([5, 6]), "attention_mask": tensor(mask)}])
    new = ok(calls=[{"input_ids": tensor([5, 6]), "attention_mask": tensor(mask[:-1] + [1])}])
    outcome = compare_scenario(old, new)
    assert outcome.status == "inputs-differ" and outcome.difference.key == "attention_mask"
    assert "([7] = 0) -> " in str(outcome.difference) and str(outcome.difference).endswith("([7] = 1)")


def test_class_verdicts() -> None:
    assert compare("a::A", side(ok()), side(ok())).verdict == "identical"
    assert compare("a::A", side(ok()), side(ok(sequences=((1,),)))).verdict == "differs"
    assert compare("a::A", {"status": "unbuildable", "error": "no"}, {"status": "not-run"}).verdict == "unverified"
    assert compare("a::A", side(ok()), {"status": "import-error", "error": "boom"}).verdict == "crashed"
    skipped = {"name": "x", "status": "skipped", "reason": "n/a"}
    assert compare("a::A", side(skipped), side(skipped)).verdict == "unverified"


def test_an_extension_alone_stays_identical_and_is_reported() -> None:
    """An override that kept only the last token crashed in assisted decoding; the mixin generates greedy's tokens."""
    crashed = {
        "name": "assisted",
        "status": "error",
        "error": "IndexError: no",
        "calls": [{"input_ids": tensor([5, 6])}],
    }
    old_runs, new_runs = (cached(), uncached(name="greedy-no-cache")), (ok(), ok(name="greedy-no-cache"))
    verdict = compare("a::A", side(*old_runs, crashed, caches=True), side(*new_runs, ok(name="assisted"), caches=True))
    assert verdict.verdict == "identical"
    assert verdict.extended == ("assisted",)
    # a column of its own: neither the detail nor the first difference
    assert verdict.detail == "" and verdict.first_difference is None


@pytest.mark.parametrize("scenario", ["inputs-embeds", "inputs-embeds-padded", "eager/inputs-embeds"])
def test_embeddings_the_signature_refused_stay_refused(scenario: str) -> None:
    """generate() refused them by the override's signature, before preparing anything: even where the mixin generates
    greedy's tokens from them, the class differs and keeping the signature (the empty repair) keeps the refusal.
    Code outside generate() reads that signature too: upstream's own test of embeddings runs once a signature names
    them, and CTRL (which scales the caller's tensor in place) and BertGeneration then fail it."""
    prefix = scenario.rpartition("/")[0] + "/" if "/" in scenario else ""
    reference = {"inputs-embeds": "greedy", "inputs-embeds-padded": "left-padded-batch"}[scenario.rpartition("/")[2]]
    rejected = {
        "name": scenario,
        "status": "error",
        "calls": [],
        "error": "ValueError: You passed `inputs_embeds` to `.generate()`, but the model class A doesn't have its "
        "forwarding implemented.",
    }
    runs = (
        cached(name=prefix + reference, sequences=((1, 2, 3, 4, 5),)),
        uncached(name="greedy-no-cache", sequences=((1, 2, 3, 4, 5),)),
    )
    consistent = ok(name=scenario, sequences=((4, 5),))  # only the new tokens come back
    verdict = compare("a::A", side(*runs, rejected, caches=True), side(*runs, consistent, caches=True))
    assert verdict.verdict == "differs" and "refusal is kept" in verdict.detail, verdict.detail
    assert verdict.repair() == Repair()


def test_embeddings_the_old_code_failed_on_otherwise_may_extend() -> None:
    """Noop for the refusal rule: the old override raised before its first dict for another reason (not generate()'s
    signature check); where the mixin generates greedy's tokens from the embeddings, that is an extension."""
    failed = {"name": "inputs-embeds", "status": "error", "error": "TypeError: 'NoneType' object", "calls": []}
    runs = (cached(sequences=((1, 2, 3, 4, 5),)), uncached(name="greedy-no-cache", sequences=((1, 2, 3, 4, 5),)))
    verdict = compare(
        "a::A",
        side(*runs, failed, caches=True),
        side(*runs, ok(name="inputs-embeds", sequences=((4, 5),)), caches=True),
    )
    assert verdict.verdict == "identical" and verdict.extended == ("inputs-embeds",)


def test_repairs_for_keys_the_mixin_adds_or_omits() -> None:
    old = [{"input_ids": tensor([5])}, {"input_ids": tensor([6])}]
    new = [
        {"input_ids": tensor([5]), "position_ids": tensor([0])},
        {"input_ids": tensor([6]), "position_ids": tensor([1])},
    ]
    assert repair_for(old, new, crashed=False) == Repair(remove=("position_ids",))
    # a forward that requires an argument the old code passed as None crashes on the new side
    old_none = [{"input_ids": None, "decoder_input_ids": tensor([1])}]
    assert repair_for(old_none, [{"decoder_input_ids": tensor([1])}], crashed=True) == Repair(set_none=("input_ids",))
    # a key the old code passed that the new one leaves out: a reduction passes its parameters on
    old_flag = [{"input_ids": tensor([5]), "output_router_logits": False}]
    assert repair_for(old_flag, [{"input_ids": tensor([5])}], crashed=False) == Repair(keep=("output_router_logits",))
    # another value is not repairable by adding or removing keys
    assert repair_for(old, [{"input_ids": tensor([9])}, {"input_ids": tensor([6])}], crashed=False) is None


def test_a_key_named_as_none_where_the_caller_gave_none_is_ungiven_not_removed() -> None:
    """GPT-2 asked by a wrapper without a mask: the old code named it as None, the mixin made one of ones. Passing the
    caller's value on explains it (and generate()'s mask, which both pass on); a removal would drop that too."""
    ones = tensor([1, 1])
    old = [{"input_ids": tensor([5, 6]), "attention_mask": None}]
    new = [{"input_ids": tensor([5, 6]), "attention_mask": ones}]
    assert repair_for(old, new, crashed=False, received=[{"input_ids": tensor([5, 6])}]) == Repair(
        ungiven=("attention_mask",)
    )
    # the caller gave one and the old code ignored it: removed (or None when given), not passed on
    given = [{"input_ids": tensor([5, 6]), "attention_mask": ones}]
    assert repair_for(old, new, crashed=False, received=given).ungiven == ()
    # a key the old code never named, or no record of what the caller gave: removed, as before
    assert repair_for([{"input_ids": tensor([5, 6])}], new, crashed=False, received=[{}]) == Repair(
        remove=("attention_mask",)
    )
    assert repair_for(old, new, crashed=False) == Repair(remove=("attention_mask",))


def test_a_value_the_old_code_passed_on_as_given_is_passed_through() -> None:
    mask_2d = tensor([1, 1, 1])
    mask_4d = tensor([0.0, -3.4e38, -3.4e38], dtype="torch.float32", shape=[1, 1, 3, 8])
    old = [{"input_ids": tensor([5, 6, 7]), "attention_mask": mask_2d}]
    new = [{"input_ids": tensor([5, 6, 7]), "attention_mask": mask_4d}]
    received = [{"attention_mask": mask_2d}]
    # the old override handed the caller's 2D mask on; the mixin built a static cache's 4D one
    assert repair_for(old, new, crashed=False, received=received) == Repair(passthrough=("attention_mask",))
    # without knowing what the caller gave, another value explains nothing
    assert repair_for(old, new, crashed=False) is None
    # nor when the old code built its own value from it
    built = [{"attention_mask": tensor([1, 1, 0])}]
    assert repair_for(old, new, crashed=False, received=built) is None
    # and the keys it passes on where the new code agrees stay out of the repair
    assert repair_for(old, old, crashed=False, received=received) is None


def test_class_repair_needs_every_differing_scenario_repairable() -> None:
    base = [{"input_ids": tensor([5])}]
    added = [{"input_ids": tensor([5]), "cache_position": tensor([0])}]
    verdict = compare("a::A", side(ok(calls=base)), side(ok(calls=added)))
    assert verdict.repair() == Repair(remove=("cache_position",))
    other = compare(
        "a::A",
        side(ok(calls=base), ok(name="b", calls=base)),
        side(ok(calls=added), ok(name="b", calls=[{"input_ids": tensor([6])}])),
    )
    assert other.repair() is None


@pytest.mark.parametrize(
    ("a", "b", "same"),
    [
        (tensor([1.0, 2.0], "torch.float32"), tensor([1.0, 2.0000001], "torch.float32"), True),
        (tensor([1, 2]), tensor([1, 3]), False),
        (tensor([1, 2]), tensor([1, 2], shape=[2, 1]), False),
        ({"cache": "DynamicCache", "length": 3}, {"cache": "DynamicCache", "length": 3}, True),
        ({"cache": "DynamicCache", "length": 3}, {"cache": "StaticCache", "length": 3}, False),
        ({"seq": [tensor([1])]}, {"seq": [tensor([1])]}, True),
    ],
)
def test_summaries(a, b, same) -> None:
    assert same_summary(a, b) is same


def test_a_scenario_rejected_up_front_that_now_crashes_is_repaired_by_keeping_the_signature() -> None:
    rejected = {"name": "inputs-embeds", "status": "error", "error": "ValueError: not supported", "calls": []}
    crash = {"name": "inputs-embeds", "status": "error", "error": "RuntimeError: shapes", "calls": [{"x": 1}]}
    outcome = compare_scenario(rejected, crash)
    assert outcome.status == "crashed" and outcome.repair == Repair()


def test_a_crash_removes_a_none_the_old_code_never_passed() -> None:
    """generate() puts musicgen's guidance_scale=None into the model kwargs; the override consumed it,
    the mixin forwards it, and a forward that does not take it crashes even on a None."""
    old = [{"input_ids": tensor([5])}]
    new = [{"input_ids": tensor([5]), "guidance_scale": None}]
    assert repair_for(old, new, crashed=True) == Repair(remove=("guidance_scale",))
    # without a crash a None is the same as no key: nothing to repair
    assert repair_for(old, new, crashed=False) is None


def test_set_none_is_only_for_keys_no_scenario_passed_a_value_for() -> None:
    """Without a cache the old code passed past_key_values=None on every step; with one, a cache.
    One reduction serves both: it must not set the cache to None."""
    crash = {
        "status": "error",
        "error": "TypeError: forward() missing 'past_key_values'",
        "calls": [{"input_ids": tensor([5])}],
    }
    old_no_cache = ok(
        name="greedy-no-cache", calls=[{"input_ids": tensor([5]), "past_key_values": None, "head_mask": None}]
    )
    old_cached = ok(
        name="greedy",
        calls=[
            {"input_ids": tensor([5]), "past_key_values": None, "head_mask": None},
            {"input_ids": tensor([6]), "past_key_values": {"cache": "DynamicCache", "length": 1}, "head_mask": None},
        ],
    )
    verdict = compare(
        "a::A", side(old_no_cache, old_cached), side({**crash, "name": "greedy-no-cache"}, {**crash, "name": "greedy"})
    )
    assert verdict.verdict == "crashed"
    assert verdict.repair() == Repair(set_none=("head_mask",))


def cached(**fields):
    return {**ok(**fields), "cache_used": True}


def uncached(**fields):
    return {**ok(**fields), "cache_used": False}


def test_a_class_that_caches_needs_a_cached_and_an_uncached_run_to_be_identical() -> None:
    """A decoder head built with is_decoder=False never caches: all its scenarios agree whatever the
    override does with a cache. Agreement without the cached path (or without the uncached one) is
    no proof, and the verdict says which path is untested."""
    both = compare(
        "a::A",
        side(cached(), uncached(name="greedy-no-cache"), caches=True),
        side(ok(), ok(name="greedy-no-cache"), caches=True),
    )
    assert both.verdict == "identical", both.detail
    never = compare(
        "a::A",
        side(uncached(), uncached(name="greedy-no-cache"), caches=True),
        side(ok(), ok(name="greedy-no-cache"), caches=True),
    )
    assert never.verdict == "unverified" and "read from a cache" in never.detail
    always = compare("a::A", side(cached(), caches=True), side(ok(), caches=True))
    assert always.verdict == "unverified" and "without a cache" in always.detail
    # a class whose forward takes no cache at all needs neither
    assert compare("a::A", side(uncached()), side(ok())).verdict == "identical"


def test_only_runs_compared_as_the_same_count_as_evidence_of_a_path() -> None:
    broken = {"name": "greedy", "status": "error", "error": "ValueError: x", "calls": [], "cache_used": True}
    verdict = compare(
        "a::A",
        side(broken, uncached(name="greedy-no-cache"), caches=True),
        side(broken, ok(name="greedy-no-cache"), caches=True),
    )
    assert verdict.verdict == "unverified"


def test_an_extension_must_generate_what_greedy_decoding_generates() -> None:
    """The old code failed before preparing anything (a static cache it could not use); the mixin generates. Kept
    only if it gives the ids' tokens; else it differs (the empty repair: the old signature back)."""
    rejected = {"name": "static-cache", "status": "error", "error": "TypeError: no", "calls": []}
    greedy = cached(sequences=((1, 2, 3, 4, 5),))
    uncached_run = uncached(name="greedy-no-cache", sequences=((1, 2, 3, 4, 5),))
    consistent = ok(name="static-cache", sequences=((1, 2, 3, 4, 5),))
    verdict = compare(
        "a::A", side(greedy, uncached_run, rejected, caches=True), side(greedy, uncached_run, consistent, caches=True)
    )
    assert verdict.verdict == "identical" and verdict.extended == ("static-cache",)
    inconsistent = ok(name="static-cache", sequences=((1, 2, 3, 4, 9),))
    verdict = compare(
        "a::A",
        side(greedy, uncached_run, rejected, caches=True),
        side(greedy, uncached_run, inconsistent, caches=True),
    )
    assert verdict.verdict == "differs" and "greedy" in verdict.detail
    assert verdict.repair() == Repair()


def test_an_uncached_run_the_old_code_failed_is_evidence_only_as_greedy_tokens() -> None:
    """4.45's Idefics2 cannot generate without a cache (it calls a Cache method on a tuple): the uncached path
    is the new code's extension, and it counts as evidence of that path only where it generates what the
    cached greedy run does; other tokens make the class differ."""
    failed = {
        "name": "greedy-no-cache",
        "status": "error",
        "error": "AttributeError: 'tuple' object",
        "calls": [{"input_ids": tensor([5, 6])}],
        "inputs": {"use_cache": False},
    }
    greedy = cached(sequences=((5, 6, 7, 8),))
    same_tokens = ok(name="greedy-no-cache", sequences=((5, 6, 7, 8),))
    verdict = compare(
        "a::A", side(greedy, failed, caches=True), side(ok(sequences=((5, 6, 7, 8),)), same_tokens, caches=True)
    )
    assert verdict.verdict == "identical" and verdict.extended == ("greedy-no-cache",), verdict.detail
    other_tokens = ok(name="greedy-no-cache", sequences=((5, 6, 7, 9),))
    verdict = compare(
        "a::A", side(greedy, failed, caches=True), side(ok(sequences=((5, 6, 7, 8),)), other_tokens, caches=True)
    )
    assert verdict.verdict == "differs" and "greedy" in verdict.detail


def test_a_class_that_keeps_no_cache_cannot_be_extended_to_embeddings() -> None:
    """OpenAI GPT keeps no cache: from embeddings, generate() would feed it only the ids generated since the prompt
    after the first step. A tiny model that repeats one token generates 'the same' anyway: the class differs (its
    old code failed after preparing a step, so no signature of its would restore anything: no repair)."""
    # failed after its first step (not refused by its signature: that refusal is kept in any case)
    failed = {
        "name": "inputs-embeds",
        "status": "error",
        "error": "IndexError: no",
        "calls": [{"input_ids": tensor([5])}],
    }
    greedy = cached(sequences=((1, 2, 3, 3, 3),))
    uncached_run = uncached(name="greedy-no-cache", sequences=((1, 2, 3, 3, 3),))
    repeated = ok(name="inputs-embeds", sequences=((3, 3),))
    assert (
        compare(
            "a::A", side(greedy, uncached_run, failed, caches=True), side(greedy, uncached_run, repeated, caches=True)
        ).verdict
        == "identical"
    )  # a class that caches
    verdict = compare("a::A", side(greedy, failed, caches=False), side(greedy, repeated, caches=False))
    assert verdict.verdict == "differs" and "keeps no cache" in verdict.detail
    assert verdict.repair() is None


def test_an_extension_midway_that_generates_other_tokens_cannot_be_repaired() -> None:
    midway = {"name": "assisted", "status": "error", "error": "IndexError: x", "calls": [{"input_ids": tensor([5])}]}
    greedy = ok(sequences=((1, 2, 3, 4),))
    verdict = compare("a::A", side(greedy, midway), side(greedy, ok(name="assisted", sequences=((1, 2, 3, 7),))))
    assert verdict.verdict == "differs"
    assert verdict.repair() is None


def test_variants_are_named_and_reported() -> None:
    variant = {**ok(name="is_decoder=False/greedy"), "variant": "is_decoder=False"}
    old = {
        **side(ok(), variant),
        "variants": [
            {"name": "as-used", "settings": {"is_decoder": True}, "why": "w"},
            {"name": "is_decoder=False", "settings": {"is_decoder": False}, "why": "v"},
        ],
    }
    verdict = compare("a::A", old, side(ok(), ok(name="is_decoder=False/greedy")))
    assert [v["name"] for v in verdict.variants] == ["as-used", "is_decoder=False"]
    assert verdict.scenarios[1].variant == "is_decoder=False"
    # an extension in a variant is held against that variant's greedy run
    rejected = {"name": "eager/inputs-embeds", "status": "error", "error": "ValueError: no", "calls": []}
    verdict = compare(
        "a::A",
        side(ok(), ok(name="eager/greedy", sequences=((1, 2),)), rejected),
        side(ok(), ok(name="eager/greedy", sequences=((1, 2),)), ok(name="eager/inputs-embeds", sequences=((2, 3),))),
    )
    assert verdict.verdict == "differs" and verdict.first_difference.scenario == "eager/inputs-embeds"


def test_a_composite_difference_is_named_after_the_decoder_calls() -> None:
    same_decoder = [{"input_ids": tensor([5])}]
    old = {**ok(calls=same_decoder), "outer_calls": [{"decoder_input_ids": tensor([5])}]}
    new = {**ok(calls=same_decoder), "outer_calls": [{"decoder_input_ids": tensor([6])}]}
    outcome = compare_scenario(old, new)
    assert outcome.status == "inputs-differ" and outcome.difference.scenario == "greedy (composite)"


def test_a_mask_of_ones_is_not_the_same_as_no_mask() -> None:
    """Electra's forward builds its default mask without counting the cache: inside an
    EncoderDecoderModel with assisted decoding, ones from the override and none from the mixin are
    the difference between generating and a shape error."""
    ones, padded = tensor([1, 1, 1]), tensor([0, 1, 1])
    assert (
        compare_scenario(ok(calls=[{"attention_mask": ones}]), ok(calls=[{"attention_mask": None}])).status
        == "inputs-differ"
    )
    assert compare_scenario(ok(calls=[{"attention_mask": padded}]), ok(calls=[{}])).status == "inputs-differ"


def test_across_two_releases_the_outputs_decide_and_the_inputs_are_noted() -> None:
    """generate() of another release prepares other keys itself (cache_position, say): the old code
    under its release and the new code under the target agree when they generate the same."""
    old = ok(calls=[{"input_ids": tensor([5])}])
    new = ok(calls=[{"input_ids": tensor([5]), "cache_position": tensor([0])}])
    assert compare_scenario(old, new).status == "inputs-differ"
    across = compare_scenario(old, new, same_inputs=False)
    assert across.status == "same" and "cache_position" in across.detail and across.repair is None
    assert compare_scenario(old, ok(sequences=((5, 6, 9),)), same_inputs=False).status == "differs"


def test_a_run_told_not_to_cache_is_the_uncached_path_even_with_a_cache_object() -> None:
    """Jamba's override creates its hybrid cache even under use_cache=False: the run still took the
    uncached path, which the flag it was given says."""
    told = {**cached(name="greedy-no-cache"), "inputs": {"use_cache": False}}
    verdict = compare("a::A", side(cached(), told, caches=True), side(ok(), ok(name="greedy-no-cache"), caches=True))
    assert verdict.verdict == "identical", verdict.detail
    by_config = {**cached(name="config-no-cache"), "inputs": {"config": {"use_cache": False}}}
    assert (
        compare(
            "a::A", side(cached(), by_config, caches=True), side(ok(), ok(name="config-no-cache"), caches=True)
        ).verdict
        == "identical"
    )
    overridden = {**cached(name="x"), "inputs": {"use_cache": True, "config": {"use_cache": False}}}
    assert (
        compare("a::A", side(cached(), overridden, caches=True), side(ok(), ok(name="x"), caches=True)).verdict
        == "unverified"
    )


def test_ids_the_old_code_cut_to_the_last_token_are_cut_again() -> None:
    """ProphetNet keeps ``[:, -1:]``: assisted decoding's two candidates reach it as one token; the
    mixin passes both. The repair names the key; the reduction cuts it again after super()."""
    old = [{"input_ids": tensor([5, 6, 7], shape=[1, 3])}, {"input_ids": tensor([86], shape=[1, 1])}]
    new = [{"input_ids": tensor([5, 6, 7], shape=[1, 3])}, {"input_ids": tensor([70, 86], shape=[1, 2])}]
    assert repair_for(old, new, crashed=True) == Repair(last_token=("input_ids",))
    # per row: the last column of a batch of two
    batch_old = [{"input_ids": tensor([3, 4], shape=[2, 1])}]
    assert repair_for(batch_old, [{"input_ids": tensor([1, 3, 2, 4], shape=[2, 2])}], crashed=False) == Repair(
        last_token=("input_ids",)
    )
    # another last token is another value, not a cut
    assert repair_for(batch_old, [{"input_ids": tensor([1, 3, 2, 5], shape=[2, 2])}], crashed=False) is None


def test_a_value_is_passed_through_only_where_both_sides_were_given_the_same() -> None:
    """FSMT hands the caller's ids on unsliced. Given other ids (other tokens generated before), the
    new code's other ids are a consequence, not something to pass through; nor is a cache, which
    the mixin hands on as it gets it."""
    given = tensor([2, 42], shape=[1, 2])
    old = [{"decoder_input_ids": given}]
    new = [{"decoder_input_ids": tensor([42], shape=[1, 1])}]
    assert repair_for(
        old, new, crashed=False, received=[{"decoder_input_ids": given}], received_new=[{"decoder_input_ids": given}]
    ) == Repair(passthrough=("decoder_input_ids",))
    other = tensor([2, 43], shape=[1, 2])
    assert (
        repair_for(
            old,
            new,
            crashed=False,
            received=[{"decoder_input_ids": given}],
            received_new=[{"decoder_input_ids": other}],
        )
        is None
    )
    cache_old, cache_new = {"cache": "DynamicCache", "length": 3}, {"cache": "DynamicCache", "length": 5}
    assert (
        repair_for(
            [{"past_key_values": cache_old}],
            [{"past_key_values": cache_new}],
            crashed=False,
            received=[{"past_key_values": cache_old}],
            received_new=[{"past_key_values": cache_old}],
        )
        is None
    )


def test_a_crash_that_names_its_arguments_narrows_the_repair() -> None:
    """A forward's TypeError says which keys it lacked or refused: only those are the crash's cause."""
    old = ok(calls=[{"input_ids": None, "head_mask": None, "decoder_input_ids": tensor([1])}])
    lacked = crash(
        "greedy",
        "TypeError: forward() missing 1 required positional argument: 'input_ids'",
        [{"decoder_input_ids": tensor([1])}],
    )
    assert compare_scenario(old, lacked).repair == Repair(set_none=("input_ids",))
    # an error that names nothing keeps every None the old code passed as a suspect
    vague = crash("greedy", "RuntimeError: shapes", [{"decoder_input_ids": tensor([1])}])
    assert compare_scenario(old, vague).repair == Repair(set_none=("head_mask", "input_ids"))
    passes = ok(calls=[{"input_ids": tensor([5])}])
    refused = crash(
        "greedy",
        "TypeError: forward() got an unexpected keyword argument 'guidance_scale'",
        [{"input_ids": tensor([5]), "guidance_scale": None, "position_ids": None}],
    )
    assert compare_scenario(passes, refused).repair == Repair(remove=("guidance_scale",))


def test_where_the_old_code_failed_too_no_none_is_suspected() -> None:
    """Both sides fail in assisted decoding (ProphetNet's last-token cut, an index error before and an
    assertion after): a None the old code passed did not keep it running, so none is a cause."""
    old = crash(
        "assisted",
        "IndexError: index 1 is out of bounds",
        [{"input_ids": tensor([86], shape=[1, 1]), "head_mask": None}],
    )
    new = crash(
        "assisted",
        "AssertionError: use_cache needs one token",
        [{"input_ids": tensor([70, 86], shape=[1, 2]), "inputs_embeds": None}],
    )
    assert compare_scenario(old, new).repair == Repair(last_token=("input_ids",))


def test_across_two_releases_only_a_key_the_new_forward_refused_is_repaired() -> None:
    """Remote code moved to a newer release: the prepared inputs are not compared (the mixins differ), but a
    forward that refuses a key the new mixin passes (remote Phi-3 and ``cache_position``) names it."""
    refused = crash(
        "greedy",
        "TypeError: Phi3ForCausalLM.forward() got an unexpected keyword argument 'cache_position'",
        [{"input_ids": tensor([5]), "cache_position": tensor([0])}],
    )
    outcome = compare_scenario(ok(), refused, same_inputs=False)
    assert outcome.status == "crashed" and outcome.repair == Repair(remove=("cache_position",))
    assert compare_scenario(ok(), crash("greedy", "RuntimeError: shapes", []), same_inputs=False).repair is None


def test_a_none_for_a_parameter_that_defaults_to_none_is_never_a_cause() -> None:
    """Passing None to a forward parameter whose default is None is leaving it out: neither the None the
    mixin adds (``inputs_embeds`` for a decoder-only model) nor one it no longer passes (``head_mask``)
    can be why the new side crashed, so no repair pops or re-adds them."""
    old = ok(calls=[{"input_ids": tensor([5]), "head_mask": None}])
    new = crash(
        "greedy", "RuntimeError: shapes", [{"input_ids": tensor([5]), "inputs_embeds": None, "guidance_scale": None}]
    )
    assert compare_scenario(old, new).repair == Repair(
        remove=("guidance_scale", "inputs_embeds"), set_none=("head_mask",)
    )
    assert compare_scenario(old, new, optional=frozenset({"inputs_embeds", "head_mask"})).repair == Repair(
        remove=("guidance_scale",)
    )
    # the class's forward, as the worker records it, reaches every scenario
    verdict = compare("a::A", {**side(old), "forward_optional": ["inputs_embeds", "head_mask"]}, side(new))
    assert verdict.repair() == Repair(remove=("guidance_scale",))


@pytest.mark.parametrize(
    ("absorbs", "set_none"),
    [
        pytest.param(["decoder_input_ids", "decoder_attention_mask"], (), id="taken-in-kwargs-never-a-cause"),
        pytest.param(["decoder_input_ids", "input_ids"], ("input_ids",), id="named-and-required-may-be"),
        pytest.param(None, ("input_ids",), id="no-kwargs-may-be"),
    ],
)
def test_a_none_the_forward_takes_only_in_its_kwargs_is_never_set_again(absorbs, set_none) -> None:
    """SeamlessM4T's old code passed ``"input_ids": None``, which its forward takes in ``**kwargs`` and ignores; the
    new code crashed for another key. Leaving that None out leaves it out of ``**kwargs``: no repair sets it again
    (a ``setdefault`` line the reduction would carry for nothing). A forward that names the key, or takes no
    ``**kwargs``, may require it: then the None stays a suspect, as before."""
    old = ok(calls=[{"decoder_input_ids": tensor([5]), "input_ids": None}])
    new = crash(
        "greedy", "RuntimeError: shapes", [{"decoder_input_ids": tensor([5]), "decoder_attention_mask": tensor([1])}]
    )
    verdict = compare("a::A", {**side(old), "forward_absorbs": absorbs}, side(new))
    assert verdict.repair() == Repair(remove=("decoder_attention_mask",), set_none=set_none)


def test_what_the_evidence_reached_is_what_the_scenarios_compared_as_the_same_gave() -> None:
    """A scenario that differs, or fails alike, exercised nothing that counts."""
    same = {**ok(), "given": ["input_ids", "pixel_values"]}
    failed = {"name": "x", "status": "error", "error": "ValueError: v", "calls": [], "given": ["aspect_ratio_ids"]}
    verdict = compare("a::A", side(same, failed), side(ok(), {**failed}))
    assert verdict.given == ("input_ids", "pixel_values")


def test_an_identical_verdict_needs_each_kept_statement_given_one_of_its_inputs() -> None:
    """Two kept statements about two inputs (Musicgen's delay pattern and its guidance scale): scenarios that gave
    only the first say nothing about the second, and the verdict names what was missing."""
    needs = (
        frozenset({"delay_pattern_mask"}),
        frozenset({"guidance_scale"}),
        frozenset({"encoder_hidden_states", "guidance_scale"}),
    )
    partial = {**ok(), "given": ["input_ids", "delay_pattern_mask"]}
    verdict = compare("a::A", side(partial), side(ok()), needs=needs)
    assert verdict.verdict == "unverified"
    assert "guidance_scale" in verdict.detail and "encoder_hidden_states" in verdict.detail
    assert "delay_pattern_mask" not in verdict.detail
    both = {**ok(), "given": ["delay_pattern_mask", "guidance_scale"]}
    assert compare("a::A", side(both), side(ok()), needs=needs).verdict == "identical"
    assert compare("a::A", side(partial), side(ok())).verdict == "identical"  # nothing kept: nothing needed
    # given only by a scenario that differs is not given
    differs = {**ok(sequences=((5, 6, 8),)), "name": "guided", "given": ["guidance_scale"]}
    verdict = compare("a::A", side(partial, {**differs, "sequences": [[5, 6, 7]]}), side(ok(), differs), needs=needs)
    assert verdict.verdict == "differs"
    # a verdict that is not identical stays what it is
    crashed = {"name": "greedy", "status": "error", "error": "RuntimeError: r", "calls": []}
    assert compare("a::A", side(partial), side(crashed), needs=needs).verdict == "crashed"


def test_a_key_the_old_code_ignored_when_given_is_none_again_when_given() -> None:
    """GPT-2 names ``position_ids`` in its dict but passes None whenever the caller gives them (its own
    are built from the mask only when the caller gives none); the mixin slices the caller's. Removing
    the key would lose GPT-2's own positions on the padded runs: the repair sets it to None only when given."""
    caller = tensor([0, 1, 2], shape=[1, 3])
    old = [{"input_ids": tensor([5, 6, 7], shape=[1, 3]), "position_ids": None}]
    new = [{"input_ids": tensor([5, 6, 7], shape=[1, 3]), "position_ids": caller}]
    assert repair_for(old, new, crashed=False, received=[{"position_ids": caller}]) == Repair(
        none_when_given=("position_ids",)
    )
    # not given: a key the new code adds is removed, as before
    assert repair_for(old, new, crashed=False) == Repair(remove=("position_ids",))
    # given, and passed on by the old code on a later step: not "ignored when given"
    later = [*old, {"input_ids": tensor([8], shape=[1, 1]), "position_ids": tensor([3], shape=[1, 1])}]
    assert repair_for(later, new, crashed=False, received=[{"position_ids": caller}] * 2) == Repair(
        remove=("position_ids",)
    )


def test_caller_positions_are_held_to_the_first_new_token_and_a_prefilled_cache_to_all() -> None:
    """The caller's positions cover the prompt; generate() does not extend them, so past the first new token the
    mixin (upstream's too) reuses the last prompt position: an extension there must give the padded batch's first
    new token, and says why the later ones may differ. A caller's prefilled cache changes nothing the tokens
    depend on: an extension there must give greedy's tokens, all of them."""
    padded = ok(name="left-padded-batch", sequences=((0, 1, 2, 3, 4), (5, 6, 7, 8, 9)))
    greedy_run = cached(sequences=((1, 2, 3, 4, 5),))
    uncached_run = uncached(name="greedy-no-cache", sequences=((1, 2, 3, 4, 5),))
    failed = {"name": "position-ids", "status": "error", "error": "RuntimeError: size", "calls": []}
    base = (greedy_run, uncached_run, padded)

    def positions(*rows: tuple[int, ...]) -> dict:
        return {**ok(name="position-ids", sequences=rows), "inputs": {"max_new_tokens": 2}}  # 3 prompt tokens, 2 new

    def verdict_with(run: dict):
        return compare("a::A", side(*base, failed, caches=True), side(*base, run, caches=True))

    assert verdict_with(positions((0, 1, 2, 3, 4), (5, 6, 7, 8, 9))).verdict == "identical"
    later = verdict_with(positions((0, 1, 2, 3, 7), (5, 6, 7, 8, 7)))  # the second new token differs
    assert later.verdict == "identical" and later.extended == ("position-ids",), later.detail
    note = next(s for s in later.scenarios if s.name == "position-ids").detail
    assert "first new token is left-padded-batch's" in note and "last prompt position" in note
    assert verdict_with(positions((0, 1, 2, 7, 4), (5, 6, 7, 8, 9))).verdict == "differs"  # the first one differs
    prefilled_failed = {"name": "prefilled-cache", "status": "error", "error": "IndexError: x", "calls": []}
    for tokens, expected in ((((4, 5),), "identical"), (((4, 9),), "differs")):
        verdict = compare(
            "a::A",
            side(greedy_run, uncached_run, prefilled_failed, caches=True),
            side(greedy_run, uncached_run, ok(name="prefilled-cache", sequences=tokens), caches=True),
        )
        assert verdict.verdict == expected, verdict.detail


def test_a_scenario_failing_on_both_sides_alike_until_then_is_no_evidence_against_the_class() -> None:
    """Idefics2 in 4.45 told not to cache with an image: an exception before and after; the class is judged
    by the scenarios that ran (a cached and an uncached one here)."""
    both = (
        crash("multimodal-no-cache", "AttributeError: a", [{"input_ids": tensor([5])}]),
        crash("multimodal-no-cache", "RuntimeError: b", [{"input_ids": tensor([5])}, {"input_ids": tensor([6])}]),
    )
    old = side(ok(), both[0])
    new = side(ok(), both[1])
    verdict = compare("m.py::M", old, new)
    assert [o.status.value for o in verdict.scenarios] == ["same", "both-fail"]
    assert verdict.verdict.value == "identical"


LEGACY_WHY = (
    "its prepare_inputs_for_generation reads image_seq_length: a prompt with fewer image tokens takes the legacy path"
)


def skipped(name: str, reason: str) -> dict:
    return {"name": name, "status": "skipped", "reason": reason}


@pytest.mark.parametrize(
    ("legacy_old", "legacy_new", "verdict", "said"),
    [
        pytest.param(ok(name="multimodal-legacy"), ok(name="multimodal-legacy"), "identical", "", id="ran-the-same"),
        pytest.param(
            skipped("multimodal-legacy", "no legacy image prompt"),
            skipped("multimodal-legacy", "no legacy image prompt"),
            "unverified",
            "no multimodal-legacy scenario ran the same on both sides (skipped: no legacy image prompt)",
            id="prompt-not-built",
        ),
        pytest.param(
            crash("multimodal-legacy", "ValueError: x", []),
            crash("multimodal-legacy", "ValueError: x", []),
            "unverified",
            "(same-error",
            id="failed-alike",
        ),
        pytest.param(None, None, "unverified", "(not run)", id="not-asked-for"),
    ],
)
def test_a_scenario_the_class_s_own_code_requires_must_run_the_same(legacy_old, legacy_new, verdict, said) -> None:
    """4.45's llava family passes the image on every step for a legacy prompt (fewer image tokens than the config's
    image_seq_length). A change that loses that path agrees on every other scenario: where the legacy prompt could
    not be built, or did not run, identical would be a verdict about other paths (``usage.required_scenarios``)."""
    old = side(ok(), *([legacy_old] if legacy_old else []))
    new = side(ok(), *([legacy_new] if legacy_new else []))
    old["required"] = {"multimodal-legacy": LEGACY_WHY}
    found = compare("a::A", old, new)
    assert found.verdict == verdict, found.detail
    assert said in found.detail
    if verdict == "unverified":
        assert found.detail.startswith(LEGACY_WHY)
    # the new side's document does not decide what is required: the old code's method does
    assert (
        compare(
            "a::A", side(ok(), *([legacy_old] if legacy_old else [])), {**new, "required": old["required"]}
        ).verdict
        == "identical"
    )


def test_scenarios_that_never_called_the_method_verify_nothing() -> None:
    """A class whose forward takes no cache (a composite such as CLVP's, whose decoder's method is the one recorded):
    scenarios that agree without ever calling the method under test never ran the change. Same tokens, same (no)
    prepared inputs: no evidence, whatever the outputs."""
    never_called = compare("a::A", side(ok(calls=[])), side(ok(calls=[])))
    assert never_called.verdict == "unverified"
    assert "called its prepare_inputs_for_generation" in never_called.detail
    # one scenario that called it is evidence; the others may not have reached it
    called = compare("a::A", side(ok(calls=[]), ok(name="sampling")), side(ok(calls=[]), ok(name="sampling")))
    assert called.verdict == "identical", called.detail
    # a call made only in a scenario that failed alike is no evidence either
    failed = crash("sampling", "ValueError: v", [{"input_ids": tensor([5])}])
    assert compare("a::A", side(ok(calls=[]), failed), side(ok(calls=[]), failed)).verdict == "unverified"
