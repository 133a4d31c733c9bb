"""PI103 slice-to-last-token: with a cache, keep only the last token of the ids.

Equivalent to slicing by the cache while one token is generated per step, but not when several
tokens are new at once: assisted decoding feeds the candidate tokens together, and this keeps only
the last of them. Deleting such an override changes what the model sees there.

It is model-specific where the target's ``generate()`` makes the cache before the first step (the
mixin's ``cache-before-first-step``): from 4.54.0 for every model, an empty cache, so that
``is not None`` holds on the prompt step; from 4.56.0 one with a layer per hidden layer, true while
empty, so that ``if past_key_values:`` holds there too. The cut then keeps only the prompt's last
token, which the mixin keeps whole: the override stays as it is (not so a test of another name than
``past_key_values``, the ``cache`` facet: ``generate()`` fills none other). A decoder's ids (``decoder_input_ids``,
or an override that takes ``encoder_outputs``) are the exception: ``generate()`` starts them with the
start token alone, so the cut changes nothing there but a prompt the caller gives the decoder.

Example::

    if past_key_values is not None:
        input_ids = input_ids[:, -1:]
"""

import re
from collections.abc import Mapping, Sequence

from codemod.rules._pattern import Captures
from codemod.rules.base import (
    Case,
    Context,
    Coverage,
    EraNote,
    Kind,
    Match,
    MixinBehaviours,
    NoOp,
    TemplateRule,
    Value,
    ValueOrigin,
    claim,
)
from codemod.rules.guards import PAST_NAMES

_SLICERS = ("slice-by-cache-position", "slice-by-next-sequence-length")

#: the mixin's behaviour (read from its release by ``codemod.analyse.mixin``): ``generate()`` makes the cache before
#: the first step, for a model that declares nothing about caches; its ``empty`` facet says whether the still-empty
#: cache is true (``truthy``) or not (``falsy``)
CACHE_BEFORE_FIRST_STEP = "cache-before-first-step"


def _check(captures: Captures, ctx: Context, variant: str) -> Match | None:
    ids = captures.code("ids")
    if ids not in (ctx.ids_param, "input_ids", "decoder_input_ids") or not ctx.under_past:
        return None
    # the test it is cut under, innermost first: a reduction that cuts again after super() uses the same one
    # (an empty Cache is falsy, so ``if past_key_values:`` and ``is not None`` differ on the first step)
    index = max(i for i, g in enumerate(ctx.guards) if g.startswith("past"))
    guard = ctx.guards[index]
    facets = {"guard": guard}
    # generate() fills past_key_values alone: a test of another name (``past``, 4.2x's) never sees its cache
    test = ctx.tests[index] if len(ctx.tests) == len(ctx.guards) else ""
    tested = next((n for n in re.findall(r"\w+", test) if n in PAST_NAMES), "past_key_values")
    if tested != "past_key_values":
        facets["cache"] = tested
    if ids == "decoder_input_ids" or "encoder_outputs" in ctx.params:
        facets["decoder"] = "true"  # a decoder's prompt: one start token in the standard flow
    return claim(detail=variant, defines={ids: Value(ValueOrigin.IDS, "last token")}, facets=facets)


class SliceToLastToken(TemplateRule):
    def coverage(self, facets: Mapping[str, str], mixin: MixinBehaviours) -> Coverage:
        if not any(name in mixin for name in _SLICERS):
            return Coverage(False, missing="the mixin does not slice the ids by the cache")
        assisted = (
            "keeps only the last token where the mixin keeps every uncached token: assisted decoding "
            "(several candidate tokens per step) sees different inputs"
        )
        made = mixin.get(CACHE_BEFORE_FIRST_STEP, ()) if "cache" not in facets else ()
        on_prompt = _holds_on_the_prompt(facets.get("guard", ""), made)
        if on_prompt and facets.get("decoder"):
            # generate() starts a decoder with its start token alone: cutting that prompt changes nothing there
            prompt = f"{on_prompt}: this cuts a decoder prompt of several tokens (given by the caller) to its last"
            return Coverage(True, differences=(assisted, prompt))
        if on_prompt:
            return Coverage(
                False, missing=f"{on_prompt}: this cuts the prompt to its last token, the mixin keeps it whole"
            )
        return Coverage(True, differences=(assisted,))


def _holds_on_the_prompt(guard: str, made: Sequence[Mapping[str, str]]) -> str:
    """Why the cut's test holds on the prompt step, or "" where it does not: ``made`` is the facets of the mixin's
    ``cache-before-first-step`` (none where ``generate()`` makes no cache before the first step)."""
    if guard == "past-or-use-cache":
        return "its test holds on the prompt step whenever a cache is used (use_cache)"
    if not made:
        return ""
    if guard == "past-not-none":
        return "the target's generate() makes the cache before the first step (not None there)"
    if guard == "past-truthy" and any(f.get("empty") == "truthy" for f in made):
        return (
            "the target's generate() makes the cache before the first step, true while empty (a layer per hidden "
            "layer)"
        )
    return ""


RULE = SliceToLastToken(
    __doc__,
    Kind.STANDARD,
    {
        "[:, -1:]": "$ids = $ids[:, -1:]",
        "[:, -1].unsqueeze(-1)": "$ids = $ids[:, -1].unsqueeze(-1)",
    },
    _check,
)

ERAS = (
    EraNote(
        "4.46 +",
        "the mixins keep every new token: the same while one token is generated per step, not under assisted "
        "decoding, which feeds several",
    ),
    EraNote(
        "4.54 +",
        "generate() makes an empty cache before the first step for every model: a cut under `is not None` cuts "
        "the prompt (kept)",
    ),
    EraNote(
        "4.56 +",
        "that cache has a layer per hidden layer, true while empty: a cut under `if past_key_values:` cuts the "
        "prompt too (kept)",
    ),
)

CASES = (
    Case(
        "slice",
        """
        if past_key_values:
            input_ids = input_ids[:, -1:]
        """,
        detail="[:, -1:]",
        facets={"guard": "past-truthy"},
    ),
    Case(
        "unsqueeze",
        """
        if past_key_values is not None:
            input_ids = input_ids[:, -1].unsqueeze(-1)
        """,
        detail="[:, -1].unsqueeze(-1)",
        facets={"guard": "past-not-none"},
    ),
    Case(
        "old-past-name-reformatted",
        """
        if past is not None:
            input_ids = input_ids[ :, -1 : ]  # only the last token
        """,
        detail="[:, -1:]",
        facets={"guard": "past-not-none", "cache": "past"},
    ),
    Case(
        "in-else-of-no-cache",
        """
        if past_key_values is None:
            pass
        else:
            input_ids = (input_ids[:, -1:])
        """,
        detail="[:, -1:]",
        facets={"guard": "past-not-none"},
    ),
    Case(
        "decoder-input-ids",
        """
        if past_key_values:
            decoder_input_ids = decoder_input_ids[:, -1:]
        """,
        detail="[:, -1:]",
        facets={"guard": "past-truthy", "decoder": "true"},
    ),
    Case(
        "or-use-cache",
        """
        if past_key_values is not None or use_cache:
            input_ids = input_ids[:, -1:]
        """,
        detail="[:, -1:]",
        facets={"guard": "past-or-use-cache"},
    ),
    NoOp(
        "step-position",
        """
        if cache_position[0] != 0:
            input_ids = input_ids[:, -1:]
        """,
        why="a test of the step's position, not of the cache: false on the prompt step whatever cache generate() "
        "made before it",
        unrecognised="input_ids[:, -1:]",
    ),
    NoOp(
        "two-tokens",
        """
        if past_key_values:
            input_ids = input_ids[:, -2:]
        """,
        why="two tokens are not the last token",
        unrecognised="input_ids[:, -2:]",
    ),
    NoOp(
        "unguarded",
        """
        input_ids = input_ids[:, -1:]
        """,
        why="without a cache guard the model would see one token on the first step too",
        unrecognised="input_ids[:, -1:]",
    ),
    NoOp(
        "no-cache-guard",
        """
        if past_key_values is None:
            input_ids = input_ids[:, -1:]
        """,
        why="the guard says there is no cache: this slices on the first step",
        unrecognised="input_ids[:, -1:]",
    ),
    NoOp(
        "unknown-guard",
        """
        if use_cache:
            input_ids = input_ids[:, -1:]
        """,
        why="an unknown test (use_cache) is not a cache guard",
        unrecognised="if use_cache:",
    ),
    NoOp(
        "another-variable",
        """
        if past_key_values:
            attention_mask = attention_mask[:, -1:]
        """,
        why="the mask is not the ids",
        unrecognised="attention_mask[:, -1:]",
    ),
    NoOp(
        "first-token",
        """
        if past_key_values:
            input_ids = input_ids[:, :1]
        """,
        why="the first token is not the last",
        unrecognised="input_ids[:, :1]",
    ),
)
