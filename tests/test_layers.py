"""The pipeline reads left to right: no module imports a later stage.

Every module of ``codemod/`` has a layer; an import (at the top or inside a function) may reach its
own layer or an earlier one, never a later one. A new module must be given its layer here: where it
sits in the pipeline is a decision, not an accident of what it happened to import.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "codemod"

#: bottom to top: the contracts and edges, the analysis, the transformation, verification, what
#: reports and publishes the result (and the orchestration of apply --verify and the bot), the
#: commands as functions (api), and the CLI that parses their arguments and renders their results
LAYERS: dict[str, tuple[str, ...]] = {
    "contracts": ("codemod", "contracts", "errors", "groups", "cache", "layout", "git", "generated"),
    "edges": ("fetch", "checkout", "sources", "environment", "tools", "github", "style", "writes"),
    "analyse": (
        "analyse",
        "analyse.analysis",
        "analyse.recognise",
        "analyse.modular",
        "analyse.copies",
        "analyse.declared",
        "analyse.target",
        "analyse.fallback",
        "analyse.mixin",
        "analyse.index",
        "analyse.inheritors",
        "analyse.reduction",
        "analyse.findings",
        "analyse.classify",
        "analyse.unmodelled",
        "analyse.soundness",
        "analyse.plain_safety",
        "analyse.plain_safety",
        "analyse.blockers",
        "analyse.blocker_rules",
        "analyse.blocker_fixes",
        "analyse.cache_api_rule",
        "analyse.buffers_rule",
        "analyse.rope_rule",
        "analyse.mask_rule",
        "analyse.scan",
        "analyse.across_releases",
    ),
    "transform": (
        "transform",
        "transform.edits",
        "transform.predict",
        "transform.reduce",
        "transform.planner",
        "transform.plan",
        "transform.alias",
        "transform.cst_code",
        "transform.method_edits",
        "transform.class_edits",
        "transform.rewrite",
        "transform.apply",
        "transform.idioms.base",
        "transform.idioms.layer_index",
        "transform.idioms.cache",
        "transform.idioms.cache_api",
        "transform.idioms.removed",
        "transform.idioms.buffers",
        "transform.idioms.helpers",
        "transform.idioms.mask",
        "transform.idioms.mask_helpers",
        "transform.idioms.rope",
        "transform.idioms",
        "transform.idioms.tree",
        "transform.hooks.vocabulary",
        "transform.hooks.model",
        "transform.hooks.normalise",
        "transform.hooks.own_condition",
        "transform.hooks.parts",
        "transform.hooks.propose",
        "transform.hooks.members",
        "transform.hooks.statements",
        "transform.hooks.mine",
        "transform.hooks.planned",
        "transform.hooks",
        "transform.hook_changes",
        "transform.formatting",
    ),
    "verify": (
        "verify",
        "verify.options",
        "verify.documents",
        "verify.values",
        "verify.repair",
        "verify.extensions",
        "verify.compare",
        "verify.owntests",
        "verify.runner",
        "verify.recording",
        "verify.decoding_scenarios",
        "verify.input_scenarios",
        "verify.scenarios",
        "verify.session",
        "verify.releases",
        "verify.reuse",
        "verify.sides",
        "verify.testers",
        "verify.tiny",
        "verify.tiny.common",
        "verify.tiny.tokens",
        "verify.tiny.shrink",
        "verify.tiny.fixups",
        "verify.tiny.build",
        "verify.tiny.multimodal",
        "verify.tiny.inputs",
        "verify.usage",
        "verify.users",
        "verify.worker",
    ),
    "publish": (
        "migration",
        "migrate",
        "idiom_round",
        "publish",
        "publish.report",
        "publish.summary",
        "publish.annotations",
        "publish.hooks_report",
        "publish.shards",
        "publish.pr",
        "publish.pr.plan",
        "publish.pr.branches",
        "publish.pr.publish",
    ),
    "api": ("api",),
    "cli": ("cli", "cli_options", "cli_help", "cli_screen", "cli_merge", "__main__"),
}
RANK = {module: rank for rank, modules in enumerate(LAYERS.values()) for module in modules}
NAMES = list(LAYERS)


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE).with_suffix("").parts
    name = ".".join(p for p in parts if p != "__init__")
    return name or "codemod"


def imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "codemod":
                found.update(a.name for a in node.names if a.name != "__version__")
            elif node.module.startswith("codemod."):
                package = node.module.removeprefix("codemod.")
                found.add(package)
                # ``from codemod.analyse import copies``: the module, where the name is one
                found.update(f"{package}.{a.name}" for a in node.names if f"{package}.{a.name}" in RANK)
        elif isinstance(node, ast.Import):
            found.update(a.name.removeprefix("codemod.") for a in node.names if a.name.startswith("codemod."))
    return found


MODULES = sorted(PACKAGE.rglob("*.py"))


def test_every_module_has_a_layer() -> None:
    assert sorted(module_name(p) for p in MODULES if module_name(p) not in RANK) == []


@pytest.mark.parametrize("path", MODULES, ids=module_name)
def test_no_module_imports_a_later_stage(path: Path) -> None:
    importer = module_name(path)
    later = sorted(
        f"{target} ({NAMES[RANK[target]]})" for target in imports(path) if RANK.get(target, -1) > RANK[importer]
    )
    assert later == [], f"{importer} ({NAMES[RANK[importer]]}) imports a later stage"
