"""Render the mined hooks (``codemod hooks``): a rich table, JSON for machines, Markdown for pull requests.

``hooks_document`` builds the JSON document; the table and the Markdown are views of it. Pure: a
function of the scan and the computed changes (``codemod.transform.hook_changes``).
"""

from __future__ import annotations

import json
from typing import Any

from rich.console import Console
from rich.syntax import Syntax
from rich.table import Table

from codemod import __version__
from codemod.analyse.scan import ScanResult
from codemod.layout import fills_width
from codemod.publish.report import count
from codemod.transform.hook_changes import ClusterChanges, HookChanges, MemberChanges, MemberStatus
from codemod.transform.hooks import MIN_MODELS

SCHEMA_VERSION = 1


def member_record(m: MemberChanges) -> dict[str, Any]:
    member = m.member
    return {
        "override": str(member.override),
        "file": member.file,
        "class": member.class_name,
        "model": member.model,
        "keys": list(member.keys),
        "assignment": member.assignment,
        "change": member.change.value,
        "why": member.why,
        "status": m.status.value,
        "status_why": m.why,
        "lines": member.lines,
        "lines_saved": m.lines_saved,
        "diff": m.diff,
    }


def cluster_record(c: ClusterChanges) -> dict[str, Any]:
    cluster = c.cluster
    hook = cluster.hook
    return {
        "name": cluster.name,
        "kind": cluster.kind.value,
        "applied": cluster.applied,
        "not_applied": cluster.not_applied,
        "description": cluster.description,
        "idiom": {"atoms": list(cluster.idiom.atoms), "table": [v.value for v in cluster.idiom.table]}
        if cluster.idiom is not None
        else None,
        "code": cluster.code or None,
        "models": list(cluster.models),
        "applicable_models": list(cluster.applicable_models),
        "hook": {
            "attribute": hook.attribute,
            "summary": hook.summary,
            "declaration": hook.declaration,
            "prologue": hook.prologue,
            "epilogue": hook.epilogue,
        }
        if hook is not None
        else None,
        "lines_saved": c.lines_saved,
        "member_lines_saved": c.member_lines_saved,
        "mixin_lines_added": c.mixin_added,
        "mixin_diff": c.mixin_diff,
        "members": [member_record(m) for m in c.members],
        "near_misses": [
            {"override": str(n.override), "model": n.model, "key": n.key, "why": n.why} for n in cluster.near_misses
        ],
    }


def hooks_document(result: ScanResult, changes: HookChanges) -> dict[str, Any]:
    checkout = result.index.checkout
    profile = result.profile
    applied = [c for c in changes.clusters if c.cluster.applied]
    changed = {m.member.override for c in applied for m in c.members if m.status is MemberStatus.APPLIED}
    return {
        "tool": "transformers-codemod",
        "tool_version": __version__,
        "schema": SCHEMA_VERSION,
        "checkout": {"root": str(checkout.root), "kind": checkout.kind.value, "version": checkout.version},
        "mixin": {
            "source": profile.source,
            "era": profile.era.value,
            "hoisted": changes.report.hoisted,
            "file": changes.report.mixin_file,
        },
        "summary": {
            "clusters": len(changes.clusters),
            "applied": len(applied),
            "models": len({model for c in changes.clusters for model in c.cluster.models}),
            "members": sum(len(c.members) for c in changes.clusters),
            "members_changed": len(changed),
            # a member that takes two hooks has one diff, listed under both: counted once
            "lines_saved": sum({m.member.override: m.lines_saved for c in applied for m in c.members}.values())
            - sum(c.mixin_added for c in applied),
        },
        "clusters": [cluster_record(c) for c in changes.clusters],
    }


def _status(c: ClusterChanges) -> str:
    return "applied" if c.cluster.applied else f"proposal: {c.cluster.not_applied}"


#: the width of a heading's rule in a log (a terminal's rule spans the terminal)
_HEADING_WIDTH = 100


def _heading(console: Console, title: str) -> None:
    """A cluster's heading: rich's rule across a terminal; in a log (``LOG_WIDTH`` wide, where a rule would be a
    line of 65536 dashes) the title between a few dashes, as long as a reader's screen at most."""
    if fills_width(console):
        console.rule(title)
    else:
        console.print(
            f"── {title} " + "─" * max(3, _HEADING_WIDTH - len(title) - 4),
            markup=False,
            highlight=False,
            soft_wrap=True,
        )


def _code(console: Console, text: str, lexer: str) -> None:
    """Code or a diff: highlighted on a terminal; in a log its lines as they are (no colours, no padding to the
    console's width)."""
    if fills_width(console):
        console.print(Syntax(text, lexer, theme="ansi_dark", background_color="default"))
    else:
        console.print(text.rstrip("\n"), markup=False, highlight=False, soft_wrap=True)


def _table(console: Console, table: Table) -> None:
    """A table: in a log, its lines without the spaces rich pads each cell (and the title) with."""
    if fills_width(console):
        console.print(table)
        return
    with console.capture() as captured:
        console.print(table)
    console.print(
        "\n".join(line.rstrip() for line in captured.get().splitlines()), markup=False, highlight=False, soft_wrap=True
    )


def render_hooks_table(result: ScanResult, changes: HookChanges, console: Console, diffs: bool = True) -> None:
    document = hooks_document(result, changes)
    summary = document["summary"]
    wide = fills_width(console)
    console.print(
        f"{result.index.checkout.root} (transformers {result.index.checkout.version or '?'}), mixin "
        f"{result.profile.source}",
        highlight=False,
        soft_wrap=True,
    )
    table = Table(
        title=f"{count(summary['clusters'], 'cluster')} of {MIN_MODELS}+ models, {summary['applied']} with a hook to apply",
        expand=wide,
    )
    for column in ("hook", "what the members do to the inputs", "models", "changed", "lines saved", "status"):
        table.add_column(column, overflow="fold")
    for c in changes.clusters:
        changed = sum(1 for m in c.members if m.status is MemberStatus.APPLIED)
        table.add_row(
            c.cluster.name,
            c.cluster.description,
            f"{len(c.cluster.models)}: {', '.join(c.cluster.models)}",
            f"{changed}/{len(c.members)}",
            str(c.lines_saved) if c.cluster.applied else "-",
            _status(c),
        )
    _table(console, table)
    for c in changes.clusters:
        _heading(console, f"{c.cluster.name} ({c.cluster.kind.value})")
        members = Table(show_header=True, box=None, expand=wide)
        for column in ("model", "class", "file", "keys", "change", "saved", "status"):
            members.add_column(column, overflow="fold")
        for m in c.members:
            members.add_row(
                m.member.model,
                m.member.class_name,
                m.member.file,
                ", ".join(m.member.keys),
                m.member.change.value,
                str(m.lines_saved),
                m.describe(),
            )
        _table(console, members)
        for near in c.cluster.near_misses:
            console.print(
                f"  near miss {near.model} ({near.key}): {near.why}", markup=False, highlight=False, soft_wrap=True
            )
        if c.cluster.code:
            _code(console, c.cluster.code, "python")
        if not diffs:
            continue
        for text in [c.mixin_diff, *(m.diff for m in c.members)]:
            if text:
                _code(console, text, "diff")
    console.print(
        f"{count(summary['members_changed'], 'override')} changed by {count(summary['applied'], 'hook')}, "
        f"{count(summary['lines_saved'], 'line')} saved (the members' lines less the mixin's)",
        highlight=False,
        soft_wrap=True,
    )


def _md(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def hooks_markdown(result: ScanResult, changes: HookChanges) -> str:
    document = hooks_document(result, changes)
    summary = document["summary"]
    out = [
        f"## Hooks mined from repeated overrides ({result.index.checkout.version or result.index.checkout.root})",
        "",
        f"{count(summary['clusters'], 'cluster')} of three or more models; {count(summary['applied'], 'hook')} to "
        f"apply, changing {count(summary['members_changed'], 'override')} and saving "
        f"{count(summary['lines_saved'], 'line')}.",
        "",
        "| hook | what the members do | models | changed | lines saved | status |",
        "|---|---|---|---|---|---|",
    ]
    for c in changes.clusters:
        changed = sum(1 for m in c.members if m.status is MemberStatus.APPLIED)
        out.append(
            f"| `{c.cluster.name}` | {_md(c.cluster.description)} | {', '.join(c.cluster.models)} | "
            f"{changed}/{len(c.members)} | {c.lines_saved if c.cluster.applied else '-'} | {_md(_status(c))} |"
        )
    for c in changes.clusters:
        out += ["", f"### `{c.cluster.name}`", "", c.cluster.description, ""]
        out += ["| model | class | file | change | saved | status |", "|---|---|---|---|---|---|"]
        for m in c.members:
            out.append(
                f"| {m.member.model} | `{m.member.class_name}` | `{m.member.file}` | {m.member.change.value} | "
                f"{m.lines_saved} | {_md(m.describe())} |"
            )
        if c.cluster.near_misses:
            out += ["", "Near misses:", ""]
            out += [f"- {n.model} (`{n.key}`): {n.why}" for n in c.cluster.near_misses]
        if c.cluster.code:
            out += ["", "```python", c.cluster.code, "```"]
        diffs = [text for text in [c.mixin_diff, *(m.diff for m in c.members)] if text]
        if diffs:
            out += [
                "",
                "<details><summary>diffs</summary>",
                "",
                "```diff",
                *(d.rstrip("\n") for d in diffs),
                "```",
                "",
                "</details>",
            ]
    return "\n".join(out) + "\n"


def render_hooks(
    result: ScanResult, changes: HookChanges, fmt: str, console: Console, diffs: bool = True
) -> str | None:
    """The report in ``fmt``: printed to ``console`` (table, returns None) or returned as text."""
    if fmt == "json":
        return json.dumps(hooks_document(result, changes), indent=2) + "\n"
    if fmt == "markdown":
        return hooks_markdown(result, changes)
    render_hooks_table(result, changes, console, diffs)
    return None
