"""Extensions: where the old code failed and the new code generates, is what it generates right?

An extension is evidence of nothing unless the new code generates there what it generates from the same
prompt by greedy decoding (``REFERENCE``); embeddings that ``generate()`` refused by the override's signature
are never an extension (that refusal is kept), and a class that keeps no cache cannot generate from
embeddings at all.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from codemod.contracts import Repair, ScenarioStatus, WorkerStatus
from codemod.verify.documents import Difference, ScenarioDocument, ScenarioOutcome, status_of

#: scenarios whose tokens must be greedy's (same prompt, greedy decoding): a path the new code opens
#: where the old one failed is only kept when it generates what the ids do
REFERENCE = {
    "inputs-embeds": "greedy",
    "inputs-embeds-padded": "left-padded-batch",
    "assisted": "greedy",
    "static-cache": "greedy",
    "greedy-no-cache": "greedy",
    "config-no-cache": "greedy",
    "multimodal-no-cache": "multimodal",
    "position-ids": "left-padded-batch",
    "prefilled-cache": "greedy",
}

#: scenarios whose extension can only be held to the first few of the reference's new tokens, and why
PARTIAL_REFERENCE = {
    # the caller's positions cover the prompt: generate() does not extend them (4.45 as 5.x), so from the second
    # new token on the mixin hands the model the last prompt position again, as upstream's does
    "position-ids": (1, "later ones reuse the last prompt position: generate() does not extend the caller's"),
}


def _variant_and_scenario(name: str) -> tuple[str, str]:
    variant, _, scenario = name.rpartition("/")
    return (variant + "/" if variant else ""), scenario


def _new_tokens(sequences: Sequence[Sequence[int]], count: int) -> list[list[int]]:
    return [list(row)[-count:] for row in sequences]


#: the scenarios that generate from embeddings instead of ids
EMBEDDING_SCENARIOS = ("inputs-embeds", "inputs-embeds-padded")
#: generate()'s words (4.45 to 5.x) when the signature of ``prepare_inputs_for_generation`` names no ``inputs_embeds``
SIGNATURE_REFUSAL = "doesn't have its forwarding implemented"


def consistent_extensions(
    outcomes: list[ScenarioOutcome],
    new_by_name: dict[str, ScenarioDocument],
    *,
    caches: bool = True,
    refused_by_signature: frozenset[str] = frozenset(),
) -> list[ScenarioOutcome]:
    """An extension (the old code failed, the new one generates) is evidence of nothing unless what it
    generates is right: the new code must generate the same tokens there as in its greedy run. If
    not, it differs; where the old code refused up front (generate() checked the override's
    signature), keeping that signature restores the refusal (the empty repair). Embeddings generate()
    refused by the signature (the scenarios in ``refused_by_signature``) are never an extension: that
    refusal stays in any case. A class that keeps no cache cannot generate from embeddings at all: after
    the first step generate() feeds it the ids it has, only those generated since (a tiny model that
    repeats one token would hide it)."""
    out = []
    for o in outcomes:
        _, scenario = _variant_and_scenario(o.name)
        if o.status is not ScenarioStatus.EXTENDED:
            out.append(o)
        elif o.name in refused_by_signature and scenario in EMBEDDING_SCENARIOS:
            out.append(_refused_embeddings(o))
        elif not caches and scenario in EMBEDDING_SCENARIOS:
            out.append(_uncached_embeddings(o))
        else:
            out.append(_against_reference(o, new_by_name))
    return out


def _refused_embeddings(o: ScenarioOutcome) -> ScenarioOutcome:
    # generate() refused the embeddings by the override's signature. That refusal stays (the empty repair
    # keeps the signature): code outside generate() decides by the same signature whether a model takes
    # embeddings (upstream's own test_generate_from_inputs_embeds_decoder_only, skipped for such a model,
    # runs once it names them, and holds the model to more than this scenario: CTRL scales the caller's
    # tensor in place, BertGeneration's encoder-configured test crashes), and the mixin's embeddings path
    # is right only with a cache (without one, after the first step it feeds the generated ids alone)
    return dataclasses.replace(
        o,
        status=ScenarioStatus.DIFFERS,
        repair=Repair(),
        difference=Difference(o.name, "extension", None, None, "refused", "generates"),
        detail=f"{o.detail}, where its signature refused embeddings: that refusal is kept, as code outside "
        "generate() reads the signature too",
    )


def _uncached_embeddings(o: ScenarioOutcome) -> ScenarioOutcome:
    return dataclasses.replace(
        o,
        status=ScenarioStatus.DIFFERS,
        repair=Repair() if _rejected_up_front(o) else None,
        difference=Difference(o.name, "extension", None, None, "refused", "generates without its prompt"),
        detail=f"{o.detail}, but the class keeps no cache: after the first step it would see only the ids "
        "generated since",
    )


def _against_reference(o: ScenarioOutcome, new_by_name: dict[str, ScenarioDocument]) -> ScenarioOutcome:
    """The extension kept where the new code generates there the new tokens of its reference scenario (or, for a
    ``PARTIAL_REFERENCE``, their first few), else a difference."""
    prefix, scenario = _variant_and_scenario(o.name)
    reference = new_by_name.get(prefix + REFERENCE.get(scenario, ""))
    mine = new_by_name.get(o.name)
    if reference is None or mine is None or status_of(reference) is not WorkerStatus.OK:
        return o
    # the new tokens only: generating from inputs_embeds returns no prompt ids
    count = min((len(row) for row in (*mine["sequences"], *reference["sequences"])), default=0)
    wanted, got = _new_tokens(reference["sequences"], count), _new_tokens(mine["sequences"], count)
    if len(wanted) == len(got) and wanted == got:
        return o
    checked, why = PARTIAL_REFERENCE.get(scenario, (0, ""))
    generated = (mine.get("inputs") or {}).get("max_new_tokens")  # the rows hold the prompt too
    if (
        why
        and isinstance(generated, int)
        and len(wanted) == len(got)
        and [row[-generated:][:checked] for row in wanted] == [row[-generated:][:checked] for row in got]
    ):
        return dataclasses.replace(o, detail=f"{o.detail}; its first new token is {REFERENCE[scenario]}'s, {why}")
    difference = Difference(o.name, "sequences", None, None, f"greedy: {wanted[:1]}", f"{got[:1]}")
    return dataclasses.replace(
        o,
        status=ScenarioStatus.DIFFERS,
        difference=difference,
        repair=Repair() if _rejected_up_front(o) else None,
        detail=f"{o.detail}, but not what greedy decoding generates: {difference}",
    )


def _rejected_up_front(o: ScenarioOutcome) -> bool:
    return "before preparing anything" in o.detail
