"""Fixes for the generation-machinery idioms that stop 4.3x remote code running on a later release.

``codemod.analyse.blockers`` reports them (TB001 - TB013); the common ones, in the shape Llama-derived remote code
(InternLM, Baichuan, Qwen-1, DeepSeek, MiniCPM ...) took from transformers 4.3x, are migrated here onto what the
target offers: tuple caches onto ``Cache`` (``cache``), a layer index for ``Cache.update`` (``layer_index``),
``_reorder_cache`` deleted, ``get_head_mask`` and ``is_torch_fx_available`` defined in the module (``removed``),
the mask helpers 4.35 removed bound to the target's or written in the module (``mask_helpers``),
the private helpers 4.44 changed onto what they did (``helpers``), the buffers 5.x's ``from_pretrained`` leaves
empty rebuilt by ``_init_weights`` (``buffers``), ``rope_scaling`` read as 4.x gave it (``rope``), an assert
that a mask was given deleted where a None check follows and a default mask given the cached tokens (``mask``).
``migrate`` takes a module's source and the target and gives the new source, the edits made (rule code, line,
what it became) and what was recognised and left as it is (line, why). Only what is recognised exactly is changed;
the rest of the file is kept byte for byte. Every fix is unsafe in ruff's sense (it changes how the model runs):
the tree commands make them only with ``--unsafe-fixes`` or ``--verify`` (``codemod.transform.idioms.tree``).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import TypeVar

import libcst as cst

from codemod.analyse.blocker_fixes import FIXES
from codemod.transform.idioms.base import (
    IdiomEdit,
    IdiomTarget,
    NotMigrated,
    Plan,
    Source,
    apply,
    forget_children,
    walk,
)
from codemod.transform.idioms.buffers import restore_buffers
from codemod.transform.idioms.cache import migrate_caches
from codemod.transform.idioms.cache_api import cache_methods
from codemod.transform.idioms.helpers import private_helpers
from codemod.transform.idioms.mask import mask_asserts, uncached_defaults
from codemod.transform.idioms.mask_helpers import mask_helpers
from codemod.transform.idioms.removed import config_defaults, fx_available, head_mask, reorder_cache
from codemod.transform.idioms.rope import rope_scaling

__all__ = ["FIXES", "IdiomEdit", "IdiomResult", "IdiomTarget", "NotMigrated", "migrate", "target_of"]


@dataclasses.dataclass(frozen=True)
class IdiomResult:
    source: str
    edits: tuple[IdiomEdit, ...]
    not_migrated: tuple[NotMigrated, ...]

    @property
    def changed(self) -> bool:
        return bool(self.edits)


def migrate(text: str, target: IdiomTarget) -> IdiomResult:
    """``text`` with its idioms migrated onto ``target`` (unchanged when none is, or it does not parse)."""
    try:
        source = Source(text)
    except (cst.ParserSyntaxError, RecursionError):
        return IdiomResult(text, (), ())
    try:
        return _migrated(source, text, target)
    finally:
        forget_children()


def _migrated(source: Source, text: str, target: IdiomTarget) -> IdiomResult:
    plan = Plan()
    caches = migrate_caches(source, target)
    plan.merge(caches)
    plan.merge(reorder_cache(source, caches_are_objects=not caches.not_migrated))
    plan.merge(head_mask(source, target))
    plan.merge(fx_available(source, target))
    plan.merge(mask_helpers(source, target))
    plan.merge(config_defaults(source, target))
    plan.merge(rope_scaling(source, target))
    plan.merge(private_helpers(source, target))
    plan.merge(mask_asserts(source, target))
    plan.merge(uncached_defaults(source, target))
    for later in (cache_methods(source, target), restore_buffers(source, target)):
        if _disjoint(plan, later):
            plan.merge(later)
        else:  # an edit inside another's would be lost when the outer one is written
            plan.not_migrated += [NotMigrated(e.code, e.line, "inside another idiom's edit") for e in later.edits]
    if not plan.edits:
        return IdiomResult(text, (), _ordered(plan.not_migrated))
    return IdiomResult(apply(source, plan), _ordered(plan.edits), _ordered(plan.not_migrated))


_Item = TypeVar("_Item", IdiomEdit, NotMigrated)


def _disjoint(plan: Plan, other: Plan) -> bool:
    inside = {id(n) for node in plan.replace for n in walk(node)}
    anchors = [*other.replace, *other.before, *other.after]
    return not inside & {id(n) for node in anchors for n in walk(node)}


def _ordered(items: list[_Item]) -> tuple[_Item, ...]:
    return tuple(sorted(items, key=lambda i: (i.line, i.code)))


def target_of(release: str, package_dir: Path | None) -> IdiomTarget:
    """What the idioms need of a release, read from its wheel (``cache_utils.py``); without the package, the
    4.x releases have ``DynamicCache.from_legacy_cache`` and 5.x not."""
    from codemod.analyse.blockers import blocks

    cache_utils = package_dir / "cache_utils.py" if package_dir is not None else None
    if cache_utils is not None and cache_utils.is_file():
        from_legacy = "def from_legacy_cache" in cache_utils.read_text(encoding="utf-8")
    else:
        from_legacy = not blocks("5.0.0", release)
    return IdiomTarget(release, from_legacy)
