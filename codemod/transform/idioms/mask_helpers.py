"""TB008's fix for the attention-mask helpers 4.35 removed from the model modules.

- The float pair 4.34's Llama, OPT and BART defined, ``_make_causal_mask(shape, dtype, device,
  past_key_values_length=0)`` and ``_expand_mask(mask, dtype, tgt_len=None)``, lives on in
  ``transformers.modeling_attn_mask_utils.AttentionMaskConverter`` as static methods with the same arguments and
  values (4.46.3 and 5.23.0 both): the names the tree imported are bound to those.
- Bloom's boolean pair (True where a position may not be attended) has no counterpart: the module gets its own.

MPT's remote ``hf_prefixlm_converter.py`` imports all four; it then loads on 4.46.3 and on. Any other removed name
stays reported (TB008).
"""

from __future__ import annotations

import libcst as cst

from codemod.analyse.blockers import blocks
from codemod.transform.idioms.base import IdiomEdit, IdiomTarget, NotMigrated, Plan, Source, drop_names

#: the modules whose float mask helpers had ``AttentionMaskConverter``'s arguments (read in 4.33.3)
FLOAT_HELPERS = frozenset({"opt", "llama", "bart"})
HELPERS = ("_expand_mask", "_make_causal_mask")

BLOOM_EXPAND = '''def {name}(mask, tgt_length):
    """Bloom's _expand_mask, which transformers 4.35 removed: [batch, src] -> [batch, 1, tgt, src], True where a
    position may not be attended."""
    batch_size, src_length = mask.shape
    tgt_length = tgt_length if tgt_length is not None else src_length
    return (~mask[:, None, None, :].to(torch.bool)).expand(batch_size, 1, tgt_length, src_length)'''

BLOOM_CAUSAL = '''def {name}(input_ids_shape, device, past_key_values_length):
    """Bloom's _make_causal_mask, which transformers 4.35 removed: [batch, 1, tgt, past + tgt], True where a token
    would attend a later one."""
    batch_size, target_length = input_ids_shape
    positions = torch.arange(target_length, device=device)
    later = positions[:, None] < positions[None, :]
    past = torch.zeros((target_length, past_key_values_length), dtype=torch.bool, device=device)
    mask = torch.cat([past, later], dim=-1)
    return mask[None, None, :, :].expand(batch_size, 1, target_length, target_length + past_key_values_length)'''


def _model(module: str) -> str | None:
    """``opt`` for ``transformers.models.opt.modeling_opt``, else None."""
    parts = module.split(".")
    if len(parts) == 4 and parts[:2] == ["transformers", "models"] and parts[3] == f"modeling_{parts[2]}":
        return parts[2]
    return None


def mask_helpers(source: Source, target: IdiomTarget) -> Plan:
    """The plan that binds each removed mask helper a module imports to what the target offers, from 4.36 on."""
    plan = Plan()
    if not blocks("4.36.0", target.release):
        return plan
    imports_torch = any(
        isinstance(s, cst.SimpleStatementLine) and source.statement_code(s) in ("import torch", "import torch.nn")
        for s in source.module.body
    )
    for statement, node, module in source.from_imports():
        model = _model(module)
        helpers = [a for a in node.names if a.evaluated_name in HELPERS]  # type: ignore[union-attr]
        if model is None or not helpers:
            continue
        line = source.line(statement)
        if model not in FLOAT_HELPERS and (model != "bloom" or not imports_torch):
            why = "the module does not import torch" if model == "bloom" else f"{model}'s helpers are not known"
            plan.not_migrated.append(NotMigrated("TB008", line, why))
            continue
        drop_names(plan, statement, node, helpers)
        for alias in helpers:
            _bind(alias, model, line, plan)
    return plan


def _bind(alias: cst.ImportAlias, model: str, line: int, plan: Plan) -> None:
    name, bound = alias.evaluated_name, alias.evaluated_alias or alias.evaluated_name
    if model == "bloom":
        plan.definitions.append((BLOOM_EXPAND if name == "_expand_mask" else BLOOM_CAUSAL).format(name=bound))
        plan.edits.append(IdiomEdit("TB008", line, f"def {bound}(...): bloom's {name}, in the module"))
        return
    if ("transformers.modeling_attn_mask_utils", "AttentionMaskConverter") not in plan.imports:
        plan.imports.append(("transformers.modeling_attn_mask_utils", "AttentionMaskConverter"))
    plan.definitions.append(f"{bound} = AttentionMaskConverter.{name}  # {model}'s {name}, which 4.35 moved there")
    plan.edits.append(IdiomEdit("TB008", line, f"{bound} = AttentionMaskConverter.{name}"))
