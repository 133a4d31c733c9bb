"""PI131 static-cache-mask: build the 4D causal mask up front when the cache is static.

A compiled forward pass wants fixed shapes, so with a ``StaticCache`` (or Gemma 2's ``HybridCache``)
the 2D mask is expanded here to the cache's full length, with a helper that builds the 4D mask
from ``cache_position``.

Example::

    if isinstance(past_key_values, StaticCache) and attention_mask.ndim == 2:
        if model_inputs["inputs_embeds"] is not None:
            batch_size, sequence_length, _ = model_inputs["inputs_embeds"].shape
            device = model_inputs["inputs_embeds"].device
        else:
            batch_size, sequence_length = model_inputs["input_ids"].shape
            device = model_inputs["input_ids"].device

        dtype = self.lm_head.weight.dtype
        min_dtype = torch.finfo(dtype).min

        attention_mask = _prepare_4d_causal_attention_mask_with_cache_position(
            attention_mask,
            sequence_length=sequence_length,
            target_length=past_key_values.get_max_length(),
            dtype=dtype,
            device=device,
            min_dtype=min_dtype,
            cache_position=cache_position,
            batch_size=batch_size,
        )
"""

from collections.abc import Mapping

import libcst as cst
import libcst.matchers as m

from codemod.rules._pattern import Template, findall_of, node_code
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

_TESTS = {
    "": Template.expression("isinstance($p, $cache) and attention_mask.ndim == 2"),
    # 4.5x / 5.x: any compileable cache, through an overridable create_masks_for_generate
    "any compileable cache": Template.expression(
        "isinstance($p, Cache) and $p.is_compileable and (attention_mask is None or attention_mask.ndim == 2)"
    ),
    "any compileable cache, with a 2D mask": Template.expression(
        "isinstance($p, Cache) and $p.is_compileable and attention_mask is not None and attention_mask.ndim == 2"
    ),
    "not with flash attention": Template.expression(
        "isinstance($p, $cache) and attention_mask.ndim == 2 and not self.config._attn_implementation == 'flash_attention_2'"
    ),
    # our generic mixin for 4.45 (rules.generic_mixin): a StaticCache, and Gemma 2's HybridCache as Gemma 2 had it
    "and another cache, not with flash attention": Template.expression(
        "(isinstance($p, $cache) or isinstance($p, $also) and not self.config._attn_implementation == 'flash_attention_2')"
        " and attention_mask.ndim == 2"
    ),
}
# Everything else in the block only gathers the helper's arguments.
_HELPER_LOCALS = frozenset(
    {
        "batch_size",
        "sequence_length",
        "_",
        "device",
        "dtype",
        "min_dtype",
        "base_model",
        "decoder",
        "causal_mask_creation_function",
        "parameters",
        "required",
    }
)
# 4.53 – 5.2 also read inputs back for create_masks_for_generate (4.53 from ``model_input``, a slip).
_READ_BACK = (
    Template.expression("$d.get($_)"),
    Template.expression("$d.get($_, None)"),
    Template.expression("getattr($d, $_, None)"),
)
_READ_BACK_NAMES = frozenset({"token_type_ids", "position_ids"})
_HELPER = "_prepare_4d_causal_attention_mask_with_cache_position"
_HELPER_NAMES = {
    _HELPER: "the module's helper",
    "causal_mask_creation_function": "the base model's helper",
    "create_masks_for_generate": "create_masks_for_generate",
}


class StaticCacheMask(Rule):
    kind = Kind.STANDARD

    def __init__(self) -> None:
        self.code, self.name, self.summary, self.example = parse_docstring(__doc__)

    def match(self, statements: Statements, start: int, ctx: Context) -> Match | None:
        statement = statements[start]
        if not isinstance(statement, cst.If) or statement.orelse is not None:
            return None
        for label, template in _TESTS.items():  # noqa: B007 - read after the loop
            captures = template.match_expression(statement.test)
            if captures is not None:
                break
        else:
            return None
        helper = None
        for assign in findall_of(cst.Assign, statement.body, m.Assign()):
            for target in assign.targets:
                names = [n.value for n in findall_of(cst.Name, target.target, m.Name())]
                if names == ["attention_mask"]:
                    # First a helper's call; after it another helper (in another branch) or a
                    # touch-up of the result (``.contiguous()``), never anything that drops it.
                    if helper is None:
                        helper = _helper_name(assign.value)
                        if helper is None:
                            return None
                    elif not (_touches_up(assign.value) or _helper_name(assign.value) is not None):
                        return None
                elif not (set(names) <= _HELPER_LOCALS or _reads_back(names, assign.value, ctx)):
                    return None
        for node in findall_of(cst.SimpleStatementLine, statement.body, m.SimpleStatementLine()):
            for small in node.body:
                if isinstance(small, cst.Assign):
                    continue
                if isinstance(small, cst.Expr) and m.matches(
                    small.value, m.Call(func=m.Attribute(value=m.Name("logger")))
                ):
                    continue
                return None
        if helper is None:
            return None
        if helper == "the base model's helper" and m.findall(
            statement.body, m.Attribute(m.Name("inspect"), m.Name("getmodule"))
        ):
            helper = "the base model's or the module's helper"
        if m.findall(statement.body, m.Arg(value=m.Name("create_masks_for_generate"))):
            # 4.53 – 5.2 look for the base model's (or its decoder's) helper first
            looks_up = m.findall(statement.body, m.SimpleString(value=m.MatchIfTrue(lambda v: _HELPER in v)))
            helper = (
                "the base model's helper, else " if looks_up else ""
            ) + "create_masks_for_generate (a model may override it)"
        cache = node_code(captures.nodes["cache"]) if "cache" in captures else "any compileable Cache"
        details = [f"for {cache}", f"via {helper}"]
        if label == "not with flash attention":
            details.append(label)
        facets = {"cache": cache, "helper": helper}
        if label == "not with flash attention":
            facets["unless"] = "flash attention"
        if "also" in captures:
            also = node_code(captures.nodes["also"])
            details.insert(1, f"and {also} but not with flash attention")
            facets.update({"also": also, "also_unless": "flash attention"})
        return Match(
            1,
            self.name,
            "; ".join(details),
            defines={"attention_mask": Value(ValueOrigin.BEHAVIOUR, self.name)},
            facets=facets,
        )

    def coverage(self, facets: Mapping[str, str], mixin: MixinBehaviours) -> Coverage:
        found = mixin.get(self.name)
        if not found:
            return Coverage(False, missing="the mixin does not build a 4D mask for static caches")
        handled = {f.get("cache") for f in found} | {f["also"] for f in found if "also" in f}
        cache = facets.get("cache")
        if cache not in handled and "any compileable Cache" not in handled:
            return Coverage(
                False,
                missing=f"the mixin builds the 4D mask only for {', '.join(sorted(h for h in handled if h))}, not {cache}",
            )
        differences = []
        theirs = found[0].get("helper")
        if theirs and facets.get("helper", "") not in theirs:
            differences.append(f"builds the mask with {facets.get('helper')}; the mixin with {theirs}")
        # the mixin's exception for this cache, if it makes one (ours for Gemma 2's HybridCache)
        mixin_unless = next((f.get("also_unless") for f in found if f.get("also") == cache), None)
        if facets.get("unless") != mixin_unless:
            differences.append(
                "skips the 4D mask under flash attention; the mixin does not"
                if facets.get("unless")
                else "builds the 4D mask under flash attention too; the mixin does not"
            )
        return Coverage(True, differences=tuple(differences))


def _reads_back(names: list[str], value: cst.BaseExpression, ctx: Context) -> bool:
    """``token_type_ids = model_inputs.get("token_type_ids")``: an input read back for the helper."""
    if len(names) != 1 or names[0] not in _READ_BACK_NAMES:
        return False
    for template in _READ_BACK:
        captures = template.match_expression(value)
        if captures is not None and captures.code("d") in (*ctx.output_names, "model_input"):
            return True
    return False


def _touches_up(value: cst.BaseExpression) -> bool:
    """A later assignment that keeps the mask, only making it contiguous."""
    reads_mask = bool(m.findall(value, m.Name("attention_mask")))
    contiguous = bool(m.findall(value, m.Call(func=m.Attribute(attr=m.Name("contiguous")))))
    return reads_mask and contiguous


def _helper_name(value: cst.BaseExpression) -> str | None:
    if not isinstance(value, cst.Call):
        return None
    func = value.func
    if isinstance(func, cst.Name) and func.value in _HELPER_NAMES:
        return _HELPER_NAMES[func.value]
    if isinstance(func, cst.Attribute) and func.attr.value == _HELPER:
        return f"{node_code(func.value)}.{_HELPER}"
    return None


RULE = StaticCacheMask()

ERAS = (
    EraNote(
        "≤ 4.45",
        "the hoisted implementation builds the 4D mask for a `StaticCache` with the helper the model's module "
        "defines (or the base model's method)",
    ),
    EraNote("4.46 – 4.51", "a 4D mask for a `StaticCache`, from the base model's helper"),
    EraNote(
        "4.52 – 5.2",
        "for any compileable `Cache`: the base model's (or its decoder's) helper, else `create_masks_for_generate`",
    ),
    EraNote("5.3 +", "for compileable caches, with `create_masks_for_generate` (a model may override it)"),
)

CASES = (
    Case(
        "static-cache",
        RULE.example,
        detail="for StaticCache; via the module's helper",
        facets={"cache": "StaticCache", "helper": "the module's helper"},
    ),
    Case(
        "hybrid-cache-not-flash",
        """
        if (
            isinstance(past_key_values, HybridCache)
            and attention_mask.ndim == 2
            and not self.config._attn_implementation == "flash_attention_2"
        ):
            batch_size, sequence_length = input_ids.shape
            device = input_ids.device
            dtype = self.lm_head.weight.dtype
            min_dtype = torch.finfo(dtype).min
            attention_mask = _prepare_4d_causal_attention_mask_with_cache_position(
                attention_mask, sequence_length=sequence_length, target_length=past_key_values.get_max_length(),
                dtype=dtype, device=device, min_dtype=min_dtype, cache_position=cache_position, batch_size=batch_size,
            )
        """,
        detail="for HybridCache; via the module's helper; not with flash attention",
        facets={"cache": "HybridCache", "helper": "the module's helper", "unless": "flash attention"},
    ),
    Case(
        "and-another-cache-not-flash",
        """
        if (
            isinstance(past_key_values, StaticCache)
            or isinstance(past_key_values, HybridCache) and not self.config._attn_implementation == "flash_attention_2"
        ) and attention_mask.ndim == 2:
            batch_size, sequence_length = input_ids.shape
            device = input_ids.device
            attention_mask = _prepare_4d_causal_attention_mask_with_cache_position(
                attention_mask, sequence_length=sequence_length, device=device, cache_position=cache_position,
                batch_size=batch_size,
            )
        """,
        detail="for StaticCache; and HybridCache but not with flash attention; via the module's helper",
        facets={
            "cache": "StaticCache",
            "helper": "the module's helper",
            "also": "HybridCache",
            "also_unless": "flash attention",
        },
    ),
    Case(
        "base-model-method",
        """
        if isinstance(past_key_values, StaticCache) and attention_mask.ndim == 2:
            batch_size, sequence_length = input_ids.shape
            device = input_ids.device
            dtype = self.lm_head.weight.dtype
            attention_mask = self.model._prepare_4d_causal_attention_mask_with_cache_position(
                attention_mask,
                sequence_length=sequence_length,
                target_length=past_key_values.get_max_cache_shape(),
                dtype=dtype,
                device=device,
                cache_position=cache_position,
                batch_size=batch_size,
            )
        """,
        detail="for StaticCache; via self.model._prepare_4d_causal_attention_mask_with_cache_position",
        facets={"cache": "StaticCache", "helper": "self.model._prepare_4d_causal_attention_mask_with_cache_position"},
    ),
    Case(
        "logging-allowed",
        """
        if isinstance(past_key_values, StaticCache) and attention_mask.ndim == 2:
            batch_size, sequence_length = input_ids.shape
            logger.warning_once("building a 4D mask for the static cache")
            attention_mask = _prepare_4d_causal_attention_mask_with_cache_position(
                attention_mask, sequence_length=sequence_length, batch_size=batch_size
            )
        """,
        detail="for StaticCache; via the module's helper",
        facets={"cache": "StaticCache", "helper": "the module's helper"},
    ),
    Case(
        "base-model-lookup",
        """
        if isinstance(past_key_values, StaticCache) and attention_mask.ndim == 2:
            base_model = getattr(self, self.base_model_prefix, None)
            causal_mask_creation_function = getattr(
                base_model, "_prepare_4d_causal_attention_mask_with_cache_position", None
            )
            attention_mask = causal_mask_creation_function(attention_mask, cache_position=cache_position)
        """,
        detail="for StaticCache; via the base model's helper",
        facets={"cache": "StaticCache", "helper": "the base model's helper"},
    ),
    Case(
        "any-compileable-cache",
        """
        if (
            isinstance(past_key_values, Cache)
            and past_key_values.is_compileable
            and (attention_mask is None or attention_mask.ndim == 2)
        ):
            causal_mask_creation_function = getattr(self, "create_masks_for_generate", create_masks_for_generate)
            attention_mask = causal_mask_creation_function(
                config=self.config, attention_mask=attention_mask, past_key_values=past_key_values
            )
            attention_mask = attention_mask.contiguous() if attention_mask is not None else None
        """,
        detail="for any compileable Cache; via create_masks_for_generate (a model may override it)",
        facets={"cache": "any compileable Cache", "helper": "create_masks_for_generate (a model may override it)"},
    ),
    NoOp(
        "print",
        """
        if isinstance(past_key_values, StaticCache) and attention_mask.ndim == 2:
            batch_size, sequence_length = input_ids.shape
            print("static cache")
            attention_mask = _prepare_4d_causal_attention_mask_with_cache_position(attention_mask)
        """,
        why="an unrelated statement in the static-cache block (a print)",
        unrecognised="print('static cache')",
    ),
    NoOp(
        "sets-an-output",
        """
        if isinstance(past_key_values, StaticCache) and attention_mask.ndim == 2:
            model_inputs["static"] = True
            attention_mask = _prepare_4d_causal_attention_mask_with_cache_position(attention_mask)
        """,
        why="an unrelated statement in the static-cache block: it sets an output key",
        unrecognised="model_inputs['static'] = True",
    ),
    NoOp(
        "changes-cache-position",
        """
        if isinstance(past_key_values, StaticCache) and attention_mask.ndim == 2:
            batch_size, sequence_length = input_ids.shape
            cache_position = cache_position + 1
            attention_mask = _prepare_4d_causal_attention_mask_with_cache_position(attention_mask)
        """,
        why="an unrelated statement in the static-cache block: it changes cache_position",
        unrecognised="cache_position = cache_position + 1",
    ),
    NoOp(
        "unknown-helper",
        """
        if isinstance(past_key_values, StaticCache) and attention_mask.ndim == 2:
            batch_size, sequence_length = input_ids.shape
            attention_mask = build_my_own_mask(attention_mask, sequence_length)
        """,
        why="no known helper builds the mask",
        unrecognised="build_my_own_mask",
    ),
    NoOp(
        "no-mask-at-all",
        """
        if isinstance(past_key_values, StaticCache) and attention_mask.ndim == 2:
            batch_size, sequence_length = input_ids.shape
        """,
        why="no mask is built at all",
        unrecognised="isinstance(past_key_values, StaticCache)",
    ),
    NoOp(
        "else",
        """
        if isinstance(past_key_values, StaticCache) and attention_mask.ndim == 2:
            attention_mask = _prepare_4d_causal_attention_mask_with_cache_position(attention_mask)
        else:
            attention_mask = None
        """,
        why="an else branch is not part of the idiom",
        unrecognised="attention_mask = None",
    ),
    NoOp(
        "discarded-after-the-helper",
        """
        if isinstance(past_key_values, StaticCache) and attention_mask.ndim == 2:
            batch_size, sequence_length = input_ids.shape
            attention_mask = _prepare_4d_causal_attention_mask_with_cache_position(attention_mask)
            attention_mask = None
        """,
        why="the mask the helper built is thrown away",
        unrecognised="attention_mask = None",
    ),
    NoOp(
        "changed-before-the-helper",
        """
        if isinstance(past_key_values, StaticCache) and attention_mask.ndim == 2:
            attention_mask = 1 - attention_mask
            attention_mask = _prepare_4d_causal_attention_mask_with_cache_position(attention_mask)
        """,
        why="the 2D mask is changed before the helper sees it",
        unrecognised="attention_mask = 1 - attention_mask",
    ),
)
