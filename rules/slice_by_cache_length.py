"""PI105 slice-by-cache-length: keep the tokens the cache has not seen, the 4.36 – 4.44 way (mask first, then the past length).

The idiom of the Llama code of 4.36 – 4.44, copied into many remote-code models (Phi-3, InternLM2,
MiniCPM...) and a few 4.45 ones (Idefics2): the past length is read from the cache (a ``Cache``'s
``get_seq_length()`` or ``seen_tokens``, ``cache_position[0]``, or a legacy tuple's shape); a mask
longer than the ids means some inputs live only in the cache (generation from ``inputs_embeds``), so
the ids are cut to the mask's uncached part, otherwise to the tokens past the past length; ids no
longer than that are kept as they are (4.44's llava idiom, which 4.45's Qwen2-Audio keeps, cuts them to the last
one where they still hold the config's media token: under ``generate`` the mask is never shorter than the ids, and
``cache_position`` selects that token too). A branch in between that never runs (its test asks ``**kwargs`` for a
keyword a parameter takes) changes nothing. A cache of bounded size (a ``SinkCache``, a static cache)
also gets its mask cropped to what it holds. Under ``generate`` the ids are the tokens slicing by
``cache_position`` keeps; the crop has no counterpart in the mixins (their caches of bounded size
take the whole mask).

Example::

    if past_key_values is not None:
        if isinstance(past_key_values, Cache):
            cache_length = past_key_values.get_seq_length()
            past_length = past_key_values.seen_tokens
            max_cache_length = past_key_values.get_max_length()
        else:
            cache_length = past_length = past_key_values[0][0].shape[2]
            max_cache_length = None

        if attention_mask is not None and attention_mask.shape[1] > input_ids.shape[1]:
            input_ids = input_ids[:, -(attention_mask.shape[1] - past_length) :]
        elif past_length < input_ids.shape[1]:
            input_ids = input_ids[:, past_length:]

        if max_cache_length is not None and attention_mask is not None and cache_length + input_ids.shape[1] > max_cache_length:
            attention_mask = attention_mask[:, -max_cache_length:]
"""

from __future__ import annotations

from collections.abc import Mapping

import libcst as cst

from codemod.rules._pattern import Template
from codemod.rules.base import (
    Case,
    Context,
    Coverage,
    EraNote,
    Kind,
    Match,
    MixinBehaviours,
    NoOp,
    Rule,
    Statements,
    Value,
    ValueOrigin,
    parse_docstring,
)
from codemod.rules.guards import PAST_NAMES, guard_of, never_runs

#: the locals the idiom counts with
_LENGTHS = frozenset({"past_length", "cache_length", "max_cache_length"})
#: what they may be given: read from the cache (the names of ``PAST_NAMES``), or from each other
_LENGTH_VALUES = tuple(
    Template.expression(code)
    for code in (
        "$p.get_seq_length()",
        "$p.seen_tokens",
        "$p[0][0].shape[2]",
        "$p.get_max_length()",
        "None",
        "0",
        "cache_position[0] if cache_position is not None else $p.get_seq_length()",
        "torch.tensor($p.get_max_length(), device=$_) if $p.get_max_length() is not None else None",
        "past_length if max_cache_length is None else torch.min(max_cache_length, past_length)",
    )
)
_IS_CACHE = Template.expression("isinstance($p, Cache)")
_KEEP_UNCACHED = Template.parse(
    """
    if attention_mask is not None and attention_mask.shape[1] > $ids.shape[1]:
        $ids = $ids[:, -(attention_mask.shape[1] - past_length) :]
    elif past_length < $ids.shape[1]:
        $ids = $ids[:, past_length:]
    """
)
#: 4.44's llava idiom, kept by 4.45's Qwen2-Audio: ids no longer than the past length that still hold the media token
#: (the prompt, on a later step of a cache that holds the merged media) are cut to the last one
_KEEP_UNCACHED_MEDIA = Template.parse(
    """
    if attention_mask is not None and attention_mask.shape[1] > $ids.shape[1]:
        $ids = $ids[:, -(attention_mask.shape[1] - past_length) :]
    elif past_length < $ids.shape[1]:
        $ids = $ids[:, past_length:]
    elif $token in $ids:
        $ids = $ids[:, $ids.shape[1] - 1 :]
    """
)
_CROPS = {
    "to the maximum cache length": Template.parse(
        """
        if max_cache_length is not None and attention_mask is not None and $length + $ids.shape[1] > max_cache_length:
            attention_mask = attention_mask[:, -max_cache_length:]
        """
    ),
    "to what the cache holds": Template.parse(
        """
        if cache_length < past_length and attention_mask is not None:
            attention_mask = attention_mask[:, -(cache_length + $ids.shape[1]) :]
        """
    ),
}
_START = Template.parse("past_length = 0")


def _length_value(value: cst.BaseExpression) -> bool:
    for template in _LENGTH_VALUES:
        captures = template.match_expression(value)
        if captures is not None and ("p" not in captures or captures.code("p") in PAST_NAMES):
            return True
    return False


def _assigned(statement: cst.BaseStatement) -> set[str] | None:
    """The length locals a statement sets (``a = b = value`` too), None if it does anything else."""
    if not isinstance(statement, cst.SimpleStatementLine) or len(statement.body) != 1:
        return None
    small = statement.body[0]
    if not isinstance(small, cst.Assign) or not _length_value(small.value):
        return None
    names = {t.target.value for t in small.targets if isinstance(t.target, cst.Name)}
    if len(names) != len(small.targets) or not names <= _LENGTHS:
        return None
    return names


def _lengths(statement: cst.BaseStatement) -> set[str] | None:
    """The length locals set by an assignment, or by both branches of ``if isinstance(cache, Cache)``."""
    if not isinstance(statement, cst.If):
        return _assigned(statement)
    captures = _IS_CACHE.match_expression(statement.test)
    if captures is None or captures.code("p") not in PAST_NAMES or not isinstance(statement.orelse, cst.Else):
        return None
    branches = []
    for block in (statement.body, statement.orelse.body):
        if not isinstance(block, cst.IndentedBlock):
            return None
        names: set[str] = set()
        for inner in block.body:
            found = _assigned(inner)
            if found is None:
                return None
            names |= found
        branches.append(names)
    return branches[0] & branches[1] if "past_length" in branches[0] & branches[1] else None


class SliceByCacheLength(Rule):
    kind = Kind.STANDARD
    covered_by = ("slice-by-cache-position", "slice-by-next-sequence-length")

    def __init__(self) -> None:
        self.code, self.name, self.summary, self.example = parse_docstring(__doc__)

    def match(self, statements: Statements, start: int, ctx: Context) -> Match | None:
        consumed = 0
        if _START.match(statements, start) is not None:
            consumed = 1
        if start + consumed >= len(statements):
            return None
        block = statements[start + consumed]
        if not isinstance(block, cst.If) or block.orelse is not None or not isinstance(block.body, cst.IndentedBlock):
            return None
        guards = guard_of(block.test)
        if guards is None or not guards[0].startswith("past"):
            return None
        body = list(block.body.body)
        index = 0
        lengths: set[str] = set()
        while index < len(body) and (found := _lengths(body[index])) is not None:
            lengths |= found
            index += 1
        if "past_length" not in lengths:
            return None
        # a branch that never runs (it asks **kwargs for a parameter's keyword) changes nothing
        while index < len(body) and never_runs(body[index], ctx):
            index += 1
        # llava's third branch tests the config's media token (a local would be the model's own)
        media = _KEEP_UNCACHED_MEDIA.match(body, index)
        if media is not None and not media.code("token").startswith("self.config."):
            media = None
        keep = _KEEP_UNCACHED_MEDIA if media is not None else _KEEP_UNCACHED
        captures = media or keep.match(body, index)
        if captures is None:
            return None
        ids = captures.code("ids")
        if ids not in (ctx.ids_param, "input_ids", "decoder_input_ids"):
            return None
        index += len(keep)
        crop = None
        for label, template in _CROPS.items():
            found_crop = template.match(body, index)
            if (
                found_crop is not None
                and found_crop.code("ids") == ids
                and ("length" not in found_crop or found_crop.code("length") in ("cache_length", "past_length"))
            ):
                crop = label
                index += len(template)
                break
        if index != len(body) or (crop is not None and not ({"cache_length", "max_cache_length"} & lengths)):
            return None
        defines: dict[str, Value] = {
            ids: Value(ValueOrigin.IDS, "past length"),
            "past_length": Value(ValueOrigin.BEHAVIOUR, self.name),
        }
        detail = "the mask's uncached part, else past the past length"
        facets = {}
        if media is not None:
            detail += f"; the last id of ids no longer than the past length that hold {media.code('token')}"
            facets["media"] = media.code("token")
        if crop is not None:
            defines["attention_mask"] = Value(ValueOrigin.BEHAVIOUR, self.name)
            detail += f"; crops the mask {crop} for a cache of bounded size"
            facets["crop"] = crop
        return Match(consumed + 1, self.name, detail, defines=defines, facets=facets)

    def coverage(self, facets: Mapping[str, str], mixin: MixinBehaviours) -> Coverage:
        if not any(name in mixin for name in self.covered_by):
            return Coverage(False, missing="the mixin does not slice the ids by the cache")
        differences = []
        if facets.get("media"):
            # under generate the mask is never shorter than the ids: the first branch or the second cuts them
            differences.append(
                f"cuts ids no longer than the past length that hold {facets['media']} to the last "
                "one (a caller's ids with no mask); the mixin keeps those cache_position selects"
            )
        if facets.get("crop"):
            # a DynamicCache has no size limit: in the standard flow nothing is cropped
            differences.append(
                "crops the attention mask for a cache of bounded size (a SinkCache, a static cache); "
                "the mixin passes the whole mask"
            )
        return Coverage(True, differences=tuple(differences))


RULE = SliceByCacheLength()

ERAS = (
    EraNote(
        "4.46 +",
        "the mixins slice by `cache_position`: under `generate` the same tokens; no mixin crops the mask for a "
        "cache of bounded size",
    ),
)

CASES = (
    Case(
        "phi3-remote",
        RULE.example,
        detail="the mask's uncached part, else past the past length; crops the mask to the maximum cache length for "
        "a cache of bounded size",
        facets={"crop": "to the maximum cache length"},
    ),
    Case(
        "llama-4-40",
        """
        past_length = 0
        if past_key_values is not None:
            if isinstance(past_key_values, Cache):
                past_length = cache_position[0] if cache_position is not None else past_key_values.get_seq_length()
                max_cache_length = (
                    torch.tensor(past_key_values.get_max_length(), device=input_ids.device)
                    if past_key_values.get_max_length() is not None
                    else None
                )
                cache_length = past_length if max_cache_length is None else torch.min(max_cache_length, past_length)
            else:
                cache_length = past_length = past_key_values[0][0].shape[2]
                max_cache_length = None

            # Keep only the unprocessed tokens:
            if attention_mask is not None and attention_mask.shape[1] > input_ids.shape[1]:
                input_ids = input_ids[:, -(attention_mask.shape[1] - past_length) :]
            elif past_length < input_ids.shape[1]:
                input_ids = input_ids[:, past_length:]

            if (
                max_cache_length is not None
                and attention_mask is not None
                and cache_length + input_ids.shape[1] > max_cache_length
            ):
                attention_mask = attention_mask[:, -max_cache_length:]
        """,
        detail="the mask's uncached part, else past the past length; crops the mask to the maximum cache length for "
        "a cache of bounded size",
        facets={"crop": "to the maximum cache length"},
    ),
    Case(
        "cache-only",
        """
        past_length = 0
        if past_key_values is not None:
            past_length = past_key_values.get_seq_length()
            max_cache_length = past_key_values.get_max_length()
            if attention_mask is not None and attention_mask.shape[1] > input_ids.shape[1]:
                input_ids = input_ids[:, -(attention_mask.shape[1] - past_length) :]
            elif past_length < input_ids.shape[1]:
                input_ids = input_ids[:, past_length:]
            if (
                max_cache_length is not None
                and attention_mask is not None
                and past_length + input_ids.shape[1] > max_cache_length
            ):
                attention_mask = attention_mask[:, -max_cache_length:]
        """,
        detail="the mask's uncached part, else past the past length; crops the mask to the maximum cache length for "
        "a cache of bounded size",
        facets={"crop": "to the maximum cache length"},
    ),
    Case(
        "sink-cache-crop",
        """
        if past_key_values is not None:
            if isinstance(past_key_values, Cache):
                cache_length = past_key_values.get_seq_length()
                past_length = past_key_values.seen_tokens
            else:
                cache_length = past_length = past_key_values[0][0].shape[2]
            if attention_mask is not None and attention_mask.shape[1] > input_ids.shape[1]:
                input_ids = input_ids[:, -(attention_mask.shape[1] - past_length) :]
            elif past_length < input_ids.shape[1]:
                input_ids = input_ids[:, past_length:]
            if cache_length < past_length and attention_mask is not None:
                attention_mask = attention_mask[:, -(cache_length + input_ids.shape[1]) :]
        """,
        detail="the mask's uncached part, else past the past length; crops the mask to what the cache holds for a "
        "cache of bounded size",
        facets={"crop": "to what the cache holds"},
    ),
    Case(
        "no-crop",
        """
        if past_key_values is not None:
            past_length = past_key_values[0][0].shape[2]
            if attention_mask is not None and attention_mask.shape[1] > input_ids.shape[1]:
                input_ids = input_ids[:, -(attention_mask.shape[1] - past_length) :]
            elif past_length < input_ids.shape[1]:
                input_ids = input_ids[:, past_length:]
        """,
        detail="the mask's uncached part, else past the past length",
    ),
    Case(
        "qwen2-audio-4-45",
        """
        if past_key_values is not None:
            if isinstance(past_key_values, Cache):
                cache_length = past_key_values.get_seq_length()
                past_length = past_key_values.seen_tokens
            else:
                cache_length = past_length = past_key_values[0][0].shape[2]

            # Ignore copy
            if input_features is not None and kwargs.get("attention_mask") is not None:
                attention_mask = kwargs["attention_mask"]
                attention_mask = torch.cat([attention_mask, attention_mask.new_ones((attention_mask.shape[0], 1))], dim=-1)

            if attention_mask is not None and attention_mask.shape[1] > input_ids.shape[1]:
                input_ids = input_ids[:, -(attention_mask.shape[1] - past_length) :]
            elif past_length < input_ids.shape[1]:
                input_ids = input_ids[:, past_length:]
            elif self.config.audio_token_index in input_ids:
                input_ids = input_ids[:, input_ids.shape[1] - 1 :]
            if cache_length < past_length and attention_mask is not None:
                attention_mask = attention_mask[:, -(cache_length + input_ids.shape[1]) :]
        """,
        detail="the mask's uncached part, else past the past length; the last id of ids no longer than the past "
        "length that hold self.config.audio_token_index; crops the mask to what the cache holds for a cache of "
        "bounded size",
        facets={"media": "self.config.audio_token_index", "crop": "to what the cache holds"},
    ),
    NoOp(
        "a-third-branch-of-another-token",
        """
        if past_key_values is not None:
            past_length = past_key_values.get_seq_length()
            if attention_mask is not None and attention_mask.shape[1] > input_ids.shape[1]:
                input_ids = input_ids[:, -(attention_mask.shape[1] - past_length) :]
            elif past_length < input_ids.shape[1]:
                input_ids = input_ids[:, past_length:]
            elif audio_token in input_ids:
                input_ids = input_ids[:, input_ids.shape[1] - 1 :]
        """,
        why="a third branch testing a token other than the config's media token (a local) is not llava's idiom",
        unrecognised="elif audio_token in input_ids:",
    ),
    NoOp(
        "a-branch-that-can-run",
        """
        if past_key_values is not None:
            past_length = past_key_values.get_seq_length()
            if input_features is not None and kwargs.get("feature_attention_mask") is not None:
                attention_mask = kwargs["feature_attention_mask"]
            if attention_mask is not None and attention_mask.shape[1] > input_ids.shape[1]:
                input_ids = input_ids[:, -(attention_mask.shape[1] - past_length) :]
            elif past_length < input_ids.shape[1]:
                input_ids = input_ids[:, past_length:]
        """,
        why="a branch asking **kwargs for a keyword no parameter takes (it can reach **kwargs) may change the mask",
        unrecognised="past_length = past_key_values.get_seq_length()",
    ),
    NoOp(
        "something-else-in-the-block",
        """
        if past_key_values is not None:
            past_length = past_key_values.get_seq_length()
            attention_mask = torch.cat([attention_mask, attention_mask.new_ones((attention_mask.shape[0], 1))], dim=-1)
            if attention_mask is not None and attention_mask.shape[1] > input_ids.shape[1]:
                input_ids = input_ids[:, -(attention_mask.shape[1] - past_length) :]
            elif past_length < input_ids.shape[1]:
                input_ids = input_ids[:, past_length:]
        """,
        why="a statement that changes the mask between the lengths and the cut is the model's own",
        unrecognised="past_length = past_key_values.get_seq_length()",
    ),
    NoOp(
        "an-unknown-length",
        """
        if past_key_values is not None:
            past_length = self.past_length_of(past_key_values)
            if attention_mask is not None and attention_mask.shape[1] > input_ids.shape[1]:
                input_ids = input_ids[:, -(attention_mask.shape[1] - past_length) :]
            elif past_length < input_ids.shape[1]:
                input_ids = input_ids[:, past_length:]
        """,
        why="a past length the rule cannot read is not known to be what the cache holds",
        unrecognised="past_length = self.past_length_of(past_key_values)",
    ),
)
