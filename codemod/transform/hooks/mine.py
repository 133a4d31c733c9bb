"""Mine the clusters: parts grouped by idiom, a hook proposed where three or more models share one."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping, Sequence

from codemod.analyse.classify import Finding
from codemod.analyse.mixin import MixinProfile
from codemod.analyse.scan import ScanResult
from codemod.contracts import (
    OverrideId,
)
from codemod.transform.hooks.members import MemberChange, blocked_change, member_change, signature_defaults
from codemod.transform.hooks.model import Cluster, Hook, HookReport, Idiom, Member, NearMiss, Part
from codemod.transform.hooks.parts import parts
from codemod.transform.hooks.propose import assignment, hook_for, slug
from codemod.transform.hooks.statements import statement_clusters
from codemod.transform.hooks.vocabulary import MIN_MODELS, Change, HookKind, ValueKind


@dataclasses.dataclass
class _Draft:
    """A cluster being mined: its idiom, hook, and the parts of each member override."""

    idiom: Idiom
    kind: HookKind
    hook: Hook | None
    name: str
    parts: dict[OverrideId, list[Part]]
    members: list[Part]

    def models(self, overrides: Iterable[str]) -> set[str]:
        return {self.parts[OverrideId(o)][0].model for o in overrides}


def mine(result: ScanResult) -> HookReport:
    """Cluster the overrides' model-specific parts; keep the idioms three or more models share."""
    profile = result.profile
    checkout = result.index.checkout
    mixin_file = (
        checkout.relative(checkout.mixin_file) if checkout.mixin_file is not None and profile.analysis else None
    )
    hoisted = profile.hoisted and mixin_file is not None
    findings: dict[str, Finding] = {f.override.id: f for f in result.findings}
    found = parts(result)
    in_mixin = attributes_read(profile)
    idioms_of: dict[str, dict[str, Idiom]] = {}
    for part in found:
        if part.idiom is not None:
            idioms_of.setdefault(part.override, {})[part.key] = part.idiom
    drafts = _drafts(found, findings, profile, in_mixin, idioms_of)
    applied, changes = _settled(drafts, findings, profile, idioms_of, in_mixin, offered=mixin_file is not None)
    clusters = []
    for d in drafts:
        cluster_members = _members(d, changes, findings)
        not_applied = ""
        applicable = {m.model for m in cluster_members if m.applicable}
        if d.hook is None:
            not_applied = d.name
        elif mixin_file is None:
            not_applied = f"no mixin file to add it to ({profile.source})"
        elif id(d) not in applied:
            not_applied = f"only {len(applicable)} of its models can take it (at least {_models_needed(d.hook, in_mixin)} needed)"
        name = d.hook.attribute if d.hook else "_generation_" + slug(d.idiom.describe())[:40]
        clusters.append(
            Cluster(
                name,
                d.kind,
                d.idiom,
                d.idiom.describe(),
                d.hook,
                tuple(cluster_members),
                tuple(_near_misses(d.idiom, d.members, found)),
                not_applied=not_applied,
            )
        )
    clusters += statement_clusters(result, mixin_file)
    clusters.sort(key=lambda c: (not c.applied, -len(c.models), c.name))
    return HookReport(
        tuple(clusters),
        profile.era,
        mixin_file,
        hoisted,
        frozenset(c.name for c in clusters if c.hook is not None and c.name in in_mixin),
    )


def _drafts(
    found: Sequence[Part],
    findings: Mapping[str, Finding],
    profile: MixinProfile,
    in_mixin: frozenset[str],
    idioms_of: dict[str, dict[str, Idiom]],
) -> list[_Draft]:
    """A draft for each idiom enough models share, with its hook (``idioms_of`` gains the idioms of the parts a
    default hook adds from the members' signatures)."""
    by_idiom: dict[Idiom, list[Part]] = {}
    for part in found:
        if part.idiom is not None and set(part.idiom.table) != {ValueKind.PREPARED}:
            by_idiom.setdefault(part.idiom, []).append(part)
    drafts = []
    for idiom, members in by_idiom.items():
        kind, hook, name = hook_for(idiom, profile)
        if len({p.model for p in members}) < _models_needed(hook, in_mixin):
            continue
        if hook is not None and kind in (HookKind.FROM_CONFIG, HookKind.DEFAULT, HookKind.CONSTANT):
            # a dict attribute maps each key to its argument: parts without one single argument cannot say it
            members = [p for p in members if p.argument]
        if hook is not None and kind is HookKind.DEFAULT:
            defaults = signature_defaults(idiom, members, findings, profile)
            members = [*members, *defaults]
            for part in defaults:
                idioms_of.setdefault(part.override, {})[part.key] = idiom
        if hook is not None and kind is HookKind.NONE_WHEN_GIVEN and profile.analysis is not None:
            # the hook reads what the caller gave from the mixin's **kwargs: not an input the mixin names
            named = {p.name for p in profile.analysis.params}
            members = [p for p in members if p.key not in named]
        by_override: dict[OverrideId, list[Part]] = {}
        for part in members:
            by_override.setdefault(part.override, []).append(part)
        drafts.append(_Draft(idiom, kind, hook, name, by_override, members))
    return drafts


def _settled(
    drafts: Sequence[_Draft],
    findings: Mapping[str, Finding],
    profile: MixinProfile,
    idioms_of: Mapping[str, Mapping[str, Idiom]],
    in_mixin: frozenset[str],
    *,
    offered: bool,
) -> tuple[set[int], dict[tuple[int, str], MemberChange]]:
    """The drafts applied (by ``id``) and each member's change (``offered``: there is a mixin to add hooks to).

    A member's change depends on every hook it takes: with all of them, nothing may be left (a deletion);
    with some, a trim. Which hooks are applied depends on how many models each can change: settle both."""
    applied = {id(d) for d in drafts if d.hook is not None and offered}
    changes: dict[tuple[int, str], MemberChange] = {}
    for _ in range(len(drafts) + 1):
        joint: dict[str, list[str]] = {}
        for d in drafts:
            if id(d) in applied:
                for override_id, own in d.parts.items():
                    joint.setdefault(override_id, []).extend(p.key for p in own)
        for d in drafts:
            for override_id, own in d.parts.items():
                if d.hook is None:
                    changes[id(d), override_id] = blocked_change("no hook template")
                    continue
                keys = joint[override_id] if id(d) in applied else [p.key for p in own]
                changes[id(d), override_id] = member_change(
                    findings[override_id], keys, profile, idioms_of.get(override_id, {})
                )
        settled = {
            id(d)
            for d in drafts
            if id(d) in applied
            and len(d.models(o for o in d.parts if changes[id(d), o].change is not Change.BLOCKED))
            >= _models_needed(d.hook, in_mixin)
        }
        if settled == applied:
            break
        applied = settled
    return applied, changes


def _members(
    d: _Draft, changes: Mapping[tuple[int, str], MemberChange], findings: Mapping[str, Finding]
) -> list[Member]:
    """The draft's members with their changes, in the order of model, file, class."""
    cluster_members = []
    for override_id, own in d.parts.items():
        o = findings[override_id].override
        outcome = changes[id(d), override_id]
        cluster_members.append(
            Member(
                OverrideId(override_id),
                own[0].model,
                o.class_name,
                o.file,
                tuple(p.key for p in own),
                assignment(d.kind, d.hook.attribute, own) if d.hook else "",
                outcome.change,
                outcome.why,
                outcome.removed,
                o.lines,
                outcome.unnamed,
                outcome.moved,
                outcome.method,
            )
        )
    cluster_members.sort(key=lambda m: (m.model, m.file, m.class_name))
    return cluster_members


def attributes_read(profile: MixinProfile) -> frozenset[str]:
    """The ``self.<attribute>`` names the mixin's method reads in code no rule understands: the hooks an earlier
    ``apply --hooks`` added (the second pass over the tree the first left, or a run over a migrated checkout)."""
    return frozenset(m for u in profile.unrecognised for m in re.findall(r"self\.(\w+)", u.source or u.code))


def _models_needed(hook: Hook | None, in_mixin: frozenset[str]) -> int:
    """How many models a hook needs to be applied: ``MIN_MODELS`` to be worth the mixin's code, one where the
    mixin has that code already (a member then costs the mixin nothing)."""
    return 1 if hook is not None and hook.attribute in in_mixin else MIN_MODELS


def _near_misses(idiom: Idiom, members: Sequence[Part], found: Sequence[Part]) -> list[NearMiss]:
    """Parts that look like the cluster's and do not join it, with why: the same key done differently
    (or through code no rule understands), or the same kinds of value under other conditions."""
    inside = {p.override for p in members}
    keys = {p.key for p in members}
    kinds = set(idiom.table)
    out: dict[tuple[str, str], NearMiss] = {}
    for part in found:
        if part.override in inside or (part.model, part.key) in out:
            continue
        if part.idiom is None:
            if part.key in keys:
                out[part.model, part.key] = NearMiss(part.override, part.model, part.key, part.opaque)
            continue
        if part.idiom == idiom:
            continue
        if part.key in keys or (set(part.idiom.table) == kinds and len(kinds) > 1):
            out[part.model, part.key] = NearMiss(
                part.override, part.model, part.key, f"{part.idiom.describe()}; the cluster's are {idiom.describe()}"
            )
    return sorted(out.values(), key=lambda n: (n.model, n.key))
