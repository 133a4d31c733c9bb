"""Hooks mined from repeated bodies: model-specific parts that three or more models share, moved into the mixin.

Pure: a function of the scan. Each override's model-specific parts are the keys its finding lists as
extras (``classify.Extra``). A part is normalised to what it *does* to its key, whatever the names,
the layout or the model prefix: the value the key ends with (the caller's, what the mixin prepared,
None, a config attribute, a default, a literal, or other code) under every combination of the
conditions it depends on (the first step, ``use_cache``, whether the caller gave the input, or a test
no rule understands, normalised with ``ast``), a truth table with the conditions it does not depend on
left out. Two parts with the same table are the same idiom: ``model_inputs["position_ids"] = None``
and ``model_inputs.pop("token_type_ids", None)`` both leave their key out (the model's forward sees
None either way), ``if use_cache and not is_first_iteration: model_inputs["attention_mask"] = None``
and ``if is_first_iteration or not use_cache: model_inputs["target_sizes"] = target_sizes`` (a
parameter not handed to ``super()``) both pass the key on the first step or without a cache only.

Parts are clustered by idiom; where three or more *models* share one (a modular source and the file
generated from it are one model), the cluster proposes a hook: a class attribute naming the inputs
(or mapping them to a config attribute, a default, a literal) and the few lines of the mixin's
``prepare_inputs_for_generation`` that read it. Each member's change follows: the override deleted
when nothing model-specific is left, reduced to ``super()`` with what is left (overrides that build
their own dict, ≤ 4.45), or trimmed of the statements the hook takes over (overrides that already call
``super()``); with the attribute set on the class. A member whose change cannot be made safely is
listed with why (a sub-model delegation, a statement no rule understands, a parameter ``generate()``
accepts only because the override names it, ...), and so are the near misses: parts of the same
kind whose table differs, with how.

Statements no rule understands are clustered too (normalised code, model prefixes abstracted). Where they
are three or more models' whole bodies, the same code that the mixin's method can run in their place (the
masked LMs' dummy token of 4.45), the hook is that code under ``if self.<attribute>:`` at the start of the
mixin's method, and each member is reduced to a ``super()`` call that keeps its signature (generate() reads it):
verification proves each, as it proves any change. Other such clusters are proposals for a maintainer (an
overridable mixin method), never applied.

``plan_with_hooks`` turns the clusters into a plan (``codemod.transform.plan``): the members' findings as the
hooked mixin would classify them go through ``make_plan`` like any other (modular families, copies,
the soundness checks), and the hook edits are added to each member's shard, so that a member whose
verification fails is reverted with its part of the hook, as other shards are.

The package follows those stages: ``vocabulary`` and ``model`` (the words and the records), ``normalise`` and
``own_condition`` (conditions), ``parts`` (normalise parts), ``propose`` (a hook for an idiom), ``members`` (each
member's change), ``statements`` (clusters of code no rule understands), ``mine`` (cluster and propose), and
``planned`` (the plan with the hooks).
"""

from __future__ import annotations

from codemod.transform.hooks.members import member_change, signature_kept, signature_trims
from codemod.transform.hooks.mine import mine
from codemod.transform.hooks.model import Cluster, Hook, HookReport, Idiom, Member, NearMiss, Part
from codemod.transform.hooks.normalise import model_prefix, normalised_code
from codemod.transform.hooks.parts import part_of, parts
from codemod.transform.hooks.planned import (
    extend,
    failing_clusters,
    hooked_findings,
    hooked_result,
    plan_with_hooks,
    shards_of_members,
    trims,
)
from codemod.transform.hooks.propose import hook_for
from codemod.transform.hooks.vocabulary import (
    MIN_MODELS,
    NEEDS_METHOD,
    Atom,
    Change,
    HookKind,
    ValueKind,
    condition_code,
)

__all__ = [
    "MIN_MODELS",
    "NEEDS_METHOD",
    "Atom",
    "Change",
    "Cluster",
    "Hook",
    "HookKind",
    "HookReport",
    "Idiom",
    "Member",
    "NearMiss",
    "Part",
    "ValueKind",
    "condition_code",
    "extend",
    "failing_clusters",
    "hook_for",
    "hooked_findings",
    "hooked_result",
    "member_change",
    "mine",
    "model_prefix",
    "normalised_code",
    "part_of",
    "parts",
    "plan_with_hooks",
    "shards_of_members",
    "signature_kept",
    "signature_trims",
    "trims",
]
