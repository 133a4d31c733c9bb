"""What the target removed, replaced: ``_reorder_cache`` on tuples (TB004), ``get_head_mask`` (TB005) and
``is_torch_fx_available`` (TB008).

- ``_reorder_cache`` that rebuilds a tuple of layer pasts is deleted where the file's caches are ``Cache`` objects
  (migrated, or never tuples): without it generate() calls ``past_key_values.reorder_cache(beam_idx)``.
- ``self.get_head_mask(head_mask, n)`` (5.0 removed ``ModuleUtilsMixin.get_head_mask``) calls a module-level copy
  of what 4.x did: ``[None] * n`` without a mask, else the mask made 5-D in the model's dtype.
- ``is_torch_fx_available`` (5.0 removed it from ``transformers.utils``) is defined in the module: 4.x answered
  whether torch has ``torch.fx`` (1.10 on), which every torch the 5.x releases support has.
- a generation setting the tree reads from its config (TB007: ``config.pad_token_id``, ``config.max_length``)
  that 5.0's ``PretrainedConfig`` no longer sets gets 4.x's default as a class attribute of the tree's config
  class: what ``config.json`` or the caller gives still sets the instance's own value, on every release.
"""

from __future__ import annotations

import re

import libcst as cst

from codemod.analyse.blockers import blocks
from codemod.transform.idioms.base import (
    IdiomEdit,
    IdiomTarget,
    NotMigrated,
    Plan,
    Source,
    classes,
    drop_names,
    functions,
    one_line,
    walk,
)

GET_HEAD_MASK = '''def _get_head_mask(head_mask, num_hidden_layers, mask_dtype):
    """ModuleUtilsMixin.get_head_mask of transformers 4.x, which 5.0 removed: a mask per layer, 5-D."""
    if head_mask is None:
        return [None] * num_hidden_layers
    if head_mask.dim() == 1:
        head_mask = head_mask.unsqueeze(0).unsqueeze(0).unsqueeze(-1).unsqueeze(-1)
        head_mask = head_mask.expand(num_hidden_layers, -1, -1, -1, -1)
    elif head_mask.dim() == 2:
        head_mask = head_mask.unsqueeze(1).unsqueeze(-1).unsqueeze(-1)
    return head_mask.to(dtype=mask_dtype)'''

FX_AVAILABLE = """def {name}():
    # transformers 5.0 removed it; it said whether torch has torch.fx, which every torch 5.x supports has
    return True"""

#: 4.46.3's ``PretrainedConfig`` defaults (``_get_global_generation_defaults`` and the token ids), as code
CONFIG_DEFAULTS = {
    "max_length": "20",
    "min_length": "0",
    "do_sample": "False",
    "early_stopping": "False",
    "num_beams": "1",
    "num_beam_groups": "1",
    "diversity_penalty": "0.0",
    "temperature": "1.0",
    "top_k": "50",
    "top_p": "1.0",
    "typical_p": "1.0",
    "repetition_penalty": "1.0",
    "length_penalty": "1.0",
    "no_repeat_ngram_size": "0",
    "encoder_no_repeat_ngram_size": "0",
    "bad_words_ids": "None",
    "num_return_sequences": "1",
    "output_scores": "False",
    "return_dict_in_generate": "False",
    "forced_bos_token_id": "None",
    "forced_eos_token_id": "None",
    "remove_invalid_values": "False",
    "exponential_decay_length_penalty": "None",
    "suppress_tokens": "None",
    "begin_suppress_tokens": "None",
    "pad_token_id": "None",
    "bos_token_id": "None",
    "eos_token_id": "None",
    "decoder_start_token_id": "None",
}

#: modules whose ``is_torch_fx_available`` 5.0 removed
FX_MODULES = ("transformers.utils", "transformers.utils.import_utils")


def reorder_cache(source: Source, caches_are_objects: bool) -> Plan:
    """Delete each ``_reorder_cache`` that rebuilds tuples, where the caches are ``Cache`` objects."""
    plan = Plan()
    for cls in classes(source.module):
        for statement in cls.body.body:
            function = _function(statement)
            if function is None or function.name.value != "_reorder_cache":
                continue
            code = source.code(function)
            if (
                "index_select" not in code
                or ("tuple(" not in code and "+= (" not in code)
                or ".reorder_cache(" in code
            ):
                continue
            line = source.line(function)
            if not caches_are_objects:
                plan.not_migrated.append(NotMigrated("TB004", line, "the file's caches are still tuples"))
            elif len(cls.body.body) == 1:
                plan.not_migrated.append(NotMigrated("TB004", line, "the class would be left without a body"))
            else:
                plan.replace[statement] = cst.RemoveFromParent()
                plan.edits.append(IdiomEdit("TB004", line, "deleted: the Cache reorders itself"))
    return plan


def _function(statement: cst.CSTNode) -> cst.FunctionDef | None:
    return statement if isinstance(statement, cst.FunctionDef) else None


def head_mask(source: Source, target: IdiomTarget) -> Plan:
    """``self.get_head_mask(mask, n)`` -> ``_get_head_mask(mask, n, self.dtype)`` on a target without it."""
    plan = Plan()
    if not blocks("5.0.0", target.release):
        return plan
    if any(f.name.value in ("get_head_mask", "_get_head_mask") for f in functions(source.module)):
        return plan  # the file's own (TB005 does not report it either)
    for node in walk(source.module):
        if not (isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute)):
            continue
        if node.func.attr.value != "get_head_mask" or not isinstance(node.func.value, cst.Name):
            continue
        line = source.line(node)
        if node.func.value.value != "self" or len(node.args) != 2 or any(a.keyword or a.star for a in node.args):
            plan.not_migrated.append(NotMigrated("TB005", line, "not self.get_head_mask(head_mask, n)"))
            continue
        mask, layers = (source.code(a.value) for a in node.args)
        new = f"_get_head_mask({mask}, {layers}, self.dtype)"
        plan.replace[node] = cst.parse_expression(new)
        plan.edits.append(IdiomEdit("TB005", line, one_line(new)))
        if GET_HEAD_MASK not in plan.definitions:
            plan.definitions.append(GET_HEAD_MASK)
    return plan


def fx_available(source: Source, target: IdiomTarget) -> Plan:
    """``from transformers.utils import is_torch_fx_available`` -> a definition in the module."""
    plan = Plan()
    if not blocks("5.0.0", target.release):
        return plan
    for statement, node, module in source.from_imports():
        fx = [a for a in node.names if a.evaluated_name == "is_torch_fx_available"]  # type: ignore[union-attr]
        if module not in FX_MODULES or not fx:
            continue
        drop_names(plan, statement, node, fx)
        name = fx[0].evaluated_alias or fx[0].evaluated_name
        plan.definitions.append(FX_AVAILABLE.format(name=name))
        plan.edits.append(IdiomEdit("TB008", source.line(statement), f"def {name}(): return True, in the module"))
    return plan


def config_defaults(source: Source, target: IdiomTarget) -> Plan:
    """Each config class of the module gets 4.x's default for the settings the tree reads and it does not set."""
    plan = Plan()
    wanted = sorted(n for n in target.config_reads if n in CONFIG_DEFAULTS)
    if not wanted or not blocks("5.0.0", target.release):
        return plan
    for cls in classes(source.module):
        bases = [source.code(b.value).rsplit(".", 1)[-1] for b in cls.bases]
        if not any(b in ("PretrainedConfig", "PreTrainedConfig") for b in bases):
            continue
        code = source.code(cls)
        missing = [n for n in wanted if not re.search(rf"(self\.{n}\s*=|^\s+{n}\s*=)", code, re.MULTILINE)]
        body = list(cls.body.body) if isinstance(cls.body, cst.IndentedBlock) else []
        if not missing or not body:
            continue
        # after the docstring and the class attributes (model_type, ...), before the first method
        at = next((i for i, s in enumerate(body) if not isinstance(s, cst.SimpleStatementLine)), len(body))
        lines = [f"{n} = {CONFIG_DEFAULTS[n]}  # 5.0's PretrainedConfig no longer sets it" for n in missing]
        statements = [source.statement(line) for line in lines]
        if at < len(body):
            plan.before[body[at]] = statements
        else:
            plan.after[body[-1]] = statements
        plan.edits.append(
            IdiomEdit("TB007", source.line(cls), f"{', '.join(missing)}: 4.x's defaults on {cls.name.value}")
        )
    return plan
