"""What keeps a change unsafe without verification, beyond ``Finding.flow``: facts the index has that make the
mixin prepare other inputs than the old override where generation does not start from a fresh prompt (a returned
or prefilled cache), or where another class of the file drives this one.

Pure: functions of an override's analysis and its file's text. ``unproven`` says why a plain ``diff``/``apply``
(no verification follows) holds a change back; ``driven_keywords`` what a composite hands this class when it
generates through it, which a reduction forwarding every kwarg would pass on where the old closed dict dropped it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable

from codemod.analyse.index import Override
from codemod.contracts import ParamKind

#: what ``generate()`` consumes itself (its parameters, and the generation config's fields a composite passes):
#: such a keyword never reaches ``prepare_inputs_for_generation``
GENERATE_CONSUMES = frozenset(
    {
        "generation_config",
        "logits_processor",
        "stopping_criteria",
        "prefix_allowed_tokens_fn",
        "synced_gpus",
        "assistant_model",
        "streamer",
        "negative_prompt_ids",
        "negative_prompt_attention_mask",
        "output_attentions",
        "output_hidden_states",
        "output_scores",
        "output_logits",
        "return_dict_in_generate",
        "max_length",
        "max_new_tokens",
        "min_length",
        "min_new_tokens",
        "do_sample",
        "num_beams",
        "num_return_sequences",
        "temperature",
        "top_k",
        "top_p",
        "pad_token_id",
        "eos_token_id",
        "bos_token_id",
        "decoder_start_token_id",
    }
)
#: the methods a composite drives a part through (as ``codemod.verify.users`` finds them)
_DRIVING_CALLS = ("generate", "prepare_inputs_for_generation")


def _behaviour(o: Override, name: str) -> list[tuple[str, dict[str, str]]]:
    return [(r.detail, dict(r.facets)) for r in o.analysis.recognised if r.behaviour == name]


def _ids_parameter(o: Override) -> str | None:
    params = [p.name for p in o.analysis.params if p.name != "self"]
    return params[0] if params else None


def unproven(o: Override, ids_given: bool = False, driven: Iterable[str] = ()) -> str | None:
    """Why deleting or reducing ``o`` changes what the mixin prepares once generation continues from a cache that
    is not one token short of the ids (a returned or prefilled cache), or None: the old override cuts the ids its
    own way and the mixin cuts them by ``cache_position``. ``ids_given``: a ``generate()`` makes its decoder ids
    (``gives_decoder_ids``); ``driven``: what a composite passes when it generates through it."""
    values = o.analysis.output_values()
    if "decoder_input_ids" in values and "encoder_outputs" not in values:
        return (
            "it prepares decoder_input_ids but no encoder_outputs: generate() does not run it as an encoder-decoder "
            "(it would make encoder_outputs), and the mixin hands the ids over as input_ids"
        )
    if ids_given and any(f.get("decoder") for _, f in _behaviour(o, "slice-to-last-token")):
        if not withholds_positions(o) or "inputs_embeds" in driven:
            return (
                "it cuts decoder ids a generate() makes to the last token (shorter than a returned cache), and the "
                "mixin cannot be left to count them from the cache (it is given inputs_embeds, or cache_position)"
            )
    last_token = _behaviour(o, "slice-to-last-token")
    cuts = [r.line for r in o.analysis.recognised if r.behaviour == "slice-to-last-token"]
    ids = _ids_parameter(o)
    if last_token and ids is not None:
        # a statement other than the one that cuts (Kosmos-2 cuts inside the `if` that builds its positions)
        rewrite = next(
            (
                t
                for t in o.analysis.top_level
                if not t.recognised
                and ids in t.writes
                and not any(t.line <= line <= max(t.end_line, t.line) for line in cuts)
            ),
            None,
        )
        if rewrite is not None:
            return (
                f"it rewrites {ids} (line {rewrite.line}) before it cuts them to the last token; the mixin cuts "
                f"what it is handed by cache_position, counted over generate()'s ids: they differ when generation "
                f"continues from a returned or prefilled cache"
            )
        sliced_positions = any(
            d.startswith("sliced to the last token") for d, _ in _behaviour(o, "position-ids-from-mask")
        )
        if sliced_positions and not any(f.get("decoder") for _, f in last_token):
            return (
                "it cuts the ids and the positions it builds to the last token together, so it runs where more than "
                "one token is uncached (a prefilled cache) and feeds one; the mixin feeds every uncached token"
            )
    media = next((f["media"] for _, f in _behaviour(o, "slice-by-cache-length") if f.get("media")), None)
    if media is not None:
        return (
            f"its forward expands the ids that hold {media} (the cache is longer than the ids): the old override "
            "cuts by the cache's length, the mixin by cache_position; they differ when generation continues from a "
            "returned cache"
        )
    return None


def _drives(node: ast.ClassDef) -> list[ast.Call]:
    """The calls ``<self.part>.generate(...)`` / ``.prepare_inputs_for_generation(...)`` in a class."""
    return [
        call
        for call in ast.walk(node)
        if isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and call.func.attr in _DRIVING_CALLS
        and isinstance(call.func.value, ast.Attribute)
    ]


def parsed(text: str) -> ast.Module | None:
    """A file's text parsed once for the facts below (None where it does not parse)."""
    try:
        return ast.parse(text)
    except SyntaxError:
        return None


def driven_keywords(tree: ast.Module | None, class_name: str) -> frozenset[str]:
    """The keywords the other classes of a file (``tree``, from :func:`parsed`) pass when they drive ``class_name``
    (a class that names it and calls ``generate`` or ``prepare_inputs_for_generation`` on a part it holds), less
    what ``generate()`` consumes itself: CLVP's composite passes its speech decoder ``return_dict``."""
    if tree is None:
        return frozenset()
    found: set[str] = set()
    for node in tree.body:
        if not isinstance(node, ast.ClassDef) or node.name == class_name:
            continue
        if class_name not in {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}:
            continue
        for call in _drives(node):
            found.update(k.arg for k in call.keywords if k.arg is not None)
    return frozenset(found - GENERATE_CONSUMES)


def forwarded_driven(o: Override, driven: Iterable[str], keywords: Iterable[str], spreads_kwargs: bool) -> set[str]:
    """Of the ``driven`` keywords, those a change passes on to ``forward`` that the old closed dict dropped: a
    deletion forwards every kwarg; a reduction those its ``**kwargs`` carry (``spreads_kwargs``) and its
    ``keywords``."""
    old = o.analysis
    if old.forwards_kwargs:
        return set()
    named = {p.name for p in old.params}
    keywords = set(keywords)
    reaching = {k for k in driven if k in keywords or (spreads_kwargs and k not in named)}
    return reaching - set(old.output_values())


def only_through_kwargs(o: Override, keys: Iterable[str]) -> tuple[str, ...]:
    """The ``keys`` a reduction newly hands ``super()`` (its own parameters) that ``forward`` takes only through its
    ``**kwargs``, where the old override's closed dict never passed them: where such a key goes is not known
    (Musicgen's composite hands every ``decoder_*`` kwarg to its decoder's forward, which takes no
    ``delay_pattern_mask``)."""
    forward = o.forward_params
    if o.analysis.forwards_kwargs or forward is None or not any(p.startswith("**") for p in forward):
        return ()
    return tuple(sorted(set(keys) - {p.lstrip("*") for p in forward}))


def _sets_decoder_ids(node: ast.AST) -> bool:
    """Whether a ``generate`` method under ``node`` gives the decoder ids itself: a ``decoder_input_ids=`` keyword
    or a ``…["decoder_input_ids"] = …`` store (SeamlessM4T's start token for the target language)."""
    for method in ast.walk(node):
        if not isinstance(method, ast.FunctionDef) or method.name != "generate":
            continue
        for sub in ast.walk(method):
            if isinstance(sub, ast.keyword) and sub.arg == "decoder_input_ids":
                return True
            if (
                isinstance(sub, ast.Subscript)
                and isinstance(sub.ctx, ast.Store)
                and isinstance(sub.slice, ast.Constant)
                and sub.slice.value == "decoder_input_ids"
            ):
                return True
    return False


def gives_decoder_ids(tree: ast.Module | None, class_name: str) -> bool:
    """Whether the decoder ids ``class_name`` generates from are made by a ``generate()`` (its own, or that of a
    class of the file, ``tree`` from :func:`parsed`, that drives it) rather than given by the caller: continuing
    from a returned cache, they are then shorter than the cache."""
    if tree is None:
        return False
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        if node.name == class_name or (
            _drives(node) and class_name in {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
        ):
            if _sets_decoder_ids(node):
                return True
    return False


def withholds_positions(o: Override) -> bool:
    """Whether a reduction of ``o`` can leave ``cache_position`` out of ``super()`` and have the generic mixin count
    the new decoder ids from the legacy cache as the old last-token cut did (the last id when the ids are no longer
    than the cache): a cut of the decoder ids to the last token, a legacy tuple cache, a ``**kwargs`` that carries
    ``cache_position`` and a body that never reads it."""
    a = o.analysis
    return (
        any(f.get("decoder") for _, f in _behaviour(o, "slice-to-last-token"))
        and o.attribute("_supports_cache_class") != "True"
        and any(p.kind is ParamKind.VAR_KEYWORDS for p in a.params)
        and all(p.name != "cache_position" for p in a.params)
        and not any("cache_position" in t.reads for t in a.top_level)
    )
