"""PI102 slice-by-past-length: drop the tokens the cache has seen, counting them from the cache itself.

The pre-``cache_position`` idiom: the past length is read from a legacy tuple cache
(``past_key_values[0][0].shape[2]``) or a ``Cache`` (``get_seq_length()``); when the ids are not
longer than that (some generation methods pass only the new token), the last token is kept. Under
``generate`` this keeps the same tokens as slicing by ``cache_position``.

Example::

    if past_key_values is not None:
        past_length = past_key_values[0][0].shape[2]

        # Some generation methods already pass only the last input ID
        if input_ids.shape[1] > past_length:
            remove_prefix_length = past_length
        else:
            # Default to old behavior: keep only final ID
            remove_prefix_length = input_ids.shape[1] - 1

        input_ids = input_ids[:, remove_prefix_length:]
"""

import libcst as cst

from codemod.rules._pattern import Captures, Template
from codemod.rules.base import Case, Context, EraNote, Kind, Match, NoOp, TemplateRule, Value, ValueOrigin, claim
from codemod.rules.guards import PAST_NAMES

#: what a legacy tuple cache's length is called in the detail (``past length from the legacy tuple cache``): the
#: generic mixin a stub era gets counts it so too, given no cache_position (``classify._withholds_positions``)
LEGACY_TUPLE = "legacy tuple cache"
LEGACY_TUPLE_DETAIL = f"past length from the {LEGACY_TUPLE}"

_KNOWN_LENGTHS = {
    LEGACY_TUPLE: Template.expression("$p[0][0].shape[2]"),
    "Cache.get_seq_length()": Template.expression("$p.get_seq_length()"),
}


def _length_source(node: cst.BaseExpression) -> str | None:
    for label, template in _KNOWN_LENGTHS.items():
        captures = template.match_expression(node)
        if captures is not None and captures.code("p") in PAST_NAMES:
            return label
    return None


def _check(captures: Captures, ctx: Context, variant: str) -> Match | None:
    ids = captures.code("ids")
    if ids not in (ctx.ids_param, "input_ids", "decoder_input_ids"):
        return None
    if variant == _MULTI_QUERY:
        if captures.code("p") not in PAST_NAMES:
            return None
        detail = variant + ("" if ctx.under_past else "; not under a cache guard")
        return claim(detail=detail, defines={ids: Value(ValueOrigin.IDS, "past length")})
    if variant == _WITH_CACHE_POSITION:
        if captures.code("p") not in PAST_NAMES:
            return None
        # the guard is part of the template; cache_position is what generate() gives, else counted from the cache
        return claim(
            detail=variant,
            defines={
                ids: Value(ValueOrigin.IDS, "past length"),
                "cache_position": Value(ValueOrigin.BEHAVIOUR, "cache position"),
            },
        )
    source = _length_source(captures.nodes["length"])
    if source is None:
        return None
    detail = f"past length from the {source}" + ("" if ctx.under_past else "; not under a cache guard")
    return claim(detail=detail, defines={ids: Value(ValueOrigin.IDS, "past length")})


#: GPTBigCode's legacy cache: one tensor per layer, its sequence axis 1 when keys and values share one head
_MULTI_QUERY = "past length from the legacy tensor cache, its axis by config.multi_query"
#: Whisper's decoder: the past length is cache_position's first entry (or the cache's own count), and a
#: cache_position the caller did not give is made from it; under generate() it is the caller's, cut to the kept ids
_WITH_CACHE_POSITION = "past length from cache_position or the cache; cache_position made when not given"


RULE = TemplateRule(
    __doc__,
    Kind.STANDARD,
    {
        "keeps the last token when the ids are short": """
            past_length = $length
            if $ids.shape[1] > past_length:
                remove_prefix_length = past_length
            else:
                remove_prefix_length = $ids.shape[1] - 1
            $ids = $ids[:, remove_prefix_length:]
        """,
        _MULTI_QUERY: """
            if self.config.multi_query:
                past_length = $p[0].shape[1]
            else:
                past_length = $p[0].shape[2]
            if $ids.shape[1] > past_length:
                remove_prefix_length = past_length
            else:
                remove_prefix_length = $ids.shape[1] - 1
            $ids = $ids[:, remove_prefix_length:]
        """,
        _WITH_CACHE_POSITION: """
            past_length = 0
            if $p is not None:
                if isinstance($p, $_):
                    past_length = cache_position[0] if cache_position is not None else $p.get_seq_length()
                else:
                    past_length = $p[0][0].shape[2]
                if $ids.shape[1] > past_length:
                    remove_prefix_length = past_length
                else:
                    remove_prefix_length = $ids.shape[1] - 1
                $ids = $ids[:, remove_prefix_length:]
            if cache_position is None:
                cache_position = torch.arange(past_length, past_length + $ids.shape[1], device=$ids.device)
            elif use_cache:
                cache_position = cache_position[-$ids.shape[1] :]
        """,
    },
    _check,
    # Under generate, cache_position is arange(past length, sequence length): the same tokens.
    covered_by=("slice-by-cache-position", "slice-by-next-sequence-length"),
)

ERAS = (
    EraNote(
        "4.46 +",
        "no mixin reads the past length, but under `generate` slicing by `cache_position` (or "
        "`next_sequence_length`) keeps the same tokens",
    ),
)

#: 4.45's GPTBigCodeForCausalLM, as written
_GPT_BIGCODE = """
        if past_key_values:
            if self.config.multi_query:
                past_length = past_key_values[0].shape[1]
            else:
                past_length = past_key_values[0].shape[2]

            # Some generation methods already pass only the last input ID
            if input_ids.shape[1] > past_length:
                remove_prefix_length = past_length
            else:
                # Default to old behavior: keep only final ID
                remove_prefix_length = input_ids.shape[1] - 1

            input_ids = input_ids[:, remove_prefix_length:]
        """

#: 4.45's WhisperForCausalLM, as written
_WHISPER = """
        past_length = 0
        if past_key_values is not None:
            if isinstance(past_key_values, (Cache, EncoderDecoderCache)):
                past_length = cache_position[0] if cache_position is not None else past_key_values.get_seq_length()
            else:
                past_length = past_key_values[0][0].shape[2]

            # Some generation methods already pass only the last input ID
            if input_ids.shape[1] > past_length:
                remove_prefix_length = past_length
            else:
                remove_prefix_length = input_ids.shape[1] - 1

            input_ids = input_ids[:, remove_prefix_length:]

        if cache_position is None:
            cache_position = torch.arange(past_length, past_length + input_ids.shape[1], device=input_ids.device)
        elif use_cache:
            cache_position = cache_position[-input_ids.shape[1] :]
        """

CASES = (
    Case(
        "legacy-tuple",
        """
        if past_key_values:
            past_length = past_key_values[0][0].shape[2]

            # Some generation methods pass only the new token
            if input_ids.shape[1] > past_length:
                remove_prefix_length = past_length
            else:
                # keep only the final id
                remove_prefix_length = input_ids.shape[1] - 1

            input_ids = input_ids[:, remove_prefix_length:]
        """,
        detail="past length from the legacy tuple cache",
    ),
    Case(
        "get-seq-length",
        """
        if past_key_values is not None:
            past_length = past_key_values.get_seq_length()
            if input_ids.shape[1] > past_length:
                remove_prefix_length = past_length
            else:
                remove_prefix_length = input_ids.shape[1] - 1
            input_ids = input_ids[:, remove_prefix_length:]
        """,
        detail="past length from the Cache.get_seq_length()",
    ),
    Case(
        "old-past-name",
        """
        if past is not None:
            past_length = past[0][0].shape[2]
            if input_ids.shape[1] > past_length:
                remove_prefix_length = past_length
            else:
                remove_prefix_length = input_ids.shape[1] - 1
            input_ids = input_ids[:, remove_prefix_length:]
        """,
        detail="past length from the legacy tuple cache",
    ),
    Case(
        "decoder-input-ids",
        """
        if past_key_values is not None:
            past_length = past_key_values[0][0].shape[2]
            if decoder_input_ids.shape[1] > past_length:
                remove_prefix_length = past_length
            else:
                remove_prefix_length = decoder_input_ids.shape[1] - 1
            decoder_input_ids = decoder_input_ids[:, remove_prefix_length:]
        """,
        detail="past length from the legacy tuple cache",
    ),
    Case(
        "unguarded-says-so",
        """
        past_length = past_key_values[0][0].shape[2]
        if input_ids.shape[1] > past_length:
            remove_prefix_length = past_length
        else:
            remove_prefix_length = input_ids.shape[1] - 1
        input_ids = input_ids[:, remove_prefix_length:]
        """,
        detail="past length from the legacy tuple cache; not under a cache guard",
    ),
    Case("cache-position-made", _WHISPER, detail=_WITH_CACHE_POSITION),
    Case("multi-query", _GPT_BIGCODE, detail=_MULTI_QUERY),
    NoOp(
        "multi-query-axes-swapped",
        # GPTBigCode's block with the two layouts' sequence axes the other way round
        _GPT_BIGCODE.replace("[0].shape[1]", "[0].shape[@]")
        .replace("[0].shape[2]", "[0].shape[1]")
        .replace("[0].shape[@]", "[0].shape[2]"),
        why="another cache layout: which axis counts the tokens is the model's to say",
        unrecognised="if self.config.multi_query:",
    ),
    NoOp(
        "cache-position-from-elsewhere",
        # Whisper's block with one token more in the cache_position it makes
        _WHISPER.replace("past_length + input_ids.shape[1],", "past_length + input_ids.shape[1] + 1,"),
        why="a cache_position one longer than the kept ids is not what generate() gives",
        unrecognised="past_length = 0",
    ),
    NoOp(
        "unknown-cache",
        """
        if past_key_values is not None:
            past_length = my_cache.get_seq_length()
            if input_ids.shape[1] > past_length:
                remove_prefix_length = past_length
            else:
                remove_prefix_length = input_ids.shape[1] - 1
            input_ids = input_ids[:, remove_prefix_length:]
        """,
        why="the past length comes from a cache the rule cannot read the length of",
        unrecognised="past_length = my_cache.get_seq_length()",
    ),
    NoOp(
        "keeps-two",
        """
        if past_key_values is not None:
            past_length = past_key_values[0][0].shape[2]
            if input_ids.shape[1] > past_length:
                remove_prefix_length = past_length
            else:
                remove_prefix_length = input_ids.shape[1] - 2
            input_ids = input_ids[:, remove_prefix_length:]
        """,
        why="keeping two tokens when the ids are short is another behaviour",
        unrecognised="input_ids.shape[1] - 2",
    ),
)
