"""Render a scan: a rich table on the terminal, JSON for machines, Markdown for pull requests.

``scan_document`` builds the JSON document (its schema is in docs/json.md); the table and the
Markdown are views of the same findings.
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from codemod import __version__
from codemod.analyse.blockers import report_lines, report_markdown
from codemod.analyse.classify import Action, Category, Finding, Reason
from codemod.analyse.fallback import Fallback, FallbackKind
from codemod.analyse.index import FileError, SkippedFile
from codemod.analyse.scan import ScanResult
from codemod.contracts import CopyStatus, OverrideId, ReasonKind, ScenarioStatus, Verdict
from codemod.layout import fills_width
from codemod.sources import METHOD

if TYPE_CHECKING:  # verification is imported where it runs
    from codemod.verify.compare import ClassVerdict
    from codemod.verify.session import VerifyReport

SCHEMA_VERSION = 1
_CATEGORY_ORDER = (Category.GENERIC, Category.KWARGS_FORWARDING, Category.BESPOKE)
_STYLE = {Category.GENERIC: "green", Category.KWARGS_FORWARDING: "yellow", Category.BESPOKE: "red"}


def count(n: int, noun: str, plural: str | None = None) -> str:
    """``1 file``, ``2 files``: a number and its noun, in the number it takes."""
    return f"{n} {noun if n == 1 else plural or noun + 's'}"


# --------------------------------------------------------------------------------------------- JSON


def finding_record(f: Finding) -> dict[str, Any]:
    o = f.override
    copied = None
    if o.copied_from is not None:
        link = o.copied_from
        copied = {
            "target": f"{link.marker.package}.{link.marker.target}",
            "replacements": [
                f"{r.old}->{r.new}" + (" all-casing" if r.all_casing else "") for r in link.marker.replacements
            ],
            "scope": link.scope,
            "line": link.marker.line,
            "status": link.check.status,
            "detail": link.check.detail,
            "target_file": link.check.target_file,
            "target_line": link.check.target_line,
        }
    generated = None
    if o.generated_from is not None:
        g = o.generated_from
        generated = {
            "kind": g.kind,
            "modular_file": g.modular_file,
            "modular_class": g.modular_class,
            "source_file": g.source_file,
            "source_class": g.source_class,
            "source_line": g.source_line,
            "detail": g.detail,
        }
    return {
        "file": o.file,
        "class": o.class_name,
        "line": o.line,
        "end_line": o.end_line,
        "lines": o.lines,
        "model": o.model,
        "file_kind": o.kind.value,
        "deprecated": o.deprecated,
        "category": f.category.value,
        "action": f.action.value,
        # the subject is what a mark quotes, already in the text
        "reasons": [
            {k: v for k, v in dataclasses.asdict(r).items() if v is not None and k != "subject"} for r in f.reasons
        ],
        "extras": [dataclasses.asdict(e) for e in f.extras],
        "behaviours": sorted(o.analysis.behaviours),
        "copied_from": copied,
        "copy_group": o.copy_group,
        "generated_from": generated,
        "overwritten": o.overwritten,
        "fallback": fallback_record(o.fallback),
    }


def fallback_record(fallback: Fallback | None) -> dict[str, Any] | None:
    """What a deletion or super() reaches (``codemod.analyse.fallback``), as docs/json.md's schema says."""
    if fallback is None:
        return None
    return {
        "kind": fallback.kind.value,
        "class": fallback.class_name,
        "file": fallback.file,
        "line": fallback.line,
        "release": fallback.release,
        "override": fallback.override_id,
        "adds_mixin_base": fallback.adds_mixin_base,
        "detail": fallback.detail,
    }


def summary(result: ScanResult) -> dict[str, Any]:
    findings = result.findings
    by_category = {
        c.value: {
            "count": sum(1 for f in findings if f.category is c),
            "lines": sum(f.override.lines for f in findings if f.category is c),
        }
        for c in _CATEGORY_ORDER
    }
    kinds = Counter(f.override.kind.value for f in findings)
    markers = Counter(f.override.copied_from.check.status for f in findings if f.override.copied_from)
    return {
        "overrides": len(findings),
        "lines": sum(f.override.lines for f in findings),
        "by_category": by_category,
        "by_action": {a.value: sum(1 for f in findings if f.action is a) for a in Action},
        "by_fallback": {
            k.value: sum(1 for f in findings if f.override.fallback and f.override.fallback.kind is k)
            for k in FallbackKind
        },
        "by_file_kind": dict(sorted(kinds.items())),
        "deprecated": sum(1 for f in findings if f.override.deprecated),
        "from_modular": sum(1 for f in findings if f.override.generated_from is not None),
        "with_differences": sum(1 for f in findings if f.differences),
        "copy_markers": dict(sorted(markers.items())),
        "copy_groups": len(result.index.copy_groups),
        "files_read": result.index.files_read,
        "candidate_files": result.index.candidate_files,
        "skipped_files": len(result.index.skipped),
        "errors": len(result.index.errors),
    }


def scan_document(result: ScanResult) -> dict[str, Any]:
    c = result.index.checkout
    p = result.profile
    return {
        "tool": "transformers-codemod",
        "tool_version": __version__,
        "schema": SCHEMA_VERSION,
        "checkout": {
            "root": str(c.root),
            "kind": c.kind.value,
            "version": c.version,
            "git": dataclasses.asdict(c.git) if c.git else None,
        },
        "mixin": {
            "source": p.source,
            "era": p.era.value,
            "hoisted": p.hoisted,
            "judged_against": p.target.origin.value if p.target else None,
            "release": p.target.release if p.target else None,
            "pretrained_model_generative": p.pretrained_model_generative,
            "behaviours": sorted(p.behaviours),
            "first_step_only_inputs": list(p.first_step_only_inputs),
            "unrecognised": [{"line": u.line, "code": u.code} for u in p.unrecognised],
        },
        "summary": summary(result),
        "findings": [finding_record(f) for f in result.findings],
        "skipped": [dataclasses.asdict(s) | {"kind": s.kind.value} for s in result.index.skipped],
        "bound_by_assignment": [dataclasses.asdict(b) for b in result.index.bound],
        "errors": [dataclasses.asdict(e) for e in result.index.errors],
        "copy_groups": [dataclasses.asdict(g) for g in result.index.copy_groups],
        # what blocks a tree on its target beyond the overrides (codemod.analyse.blockers), only where something does
        **({"blockers": [b.record() for b in result.blockers]} if result.blockers else {}),
    }


def to_json(result: ScanResult) -> str:
    return json.dumps(scan_document(result), indent=2, sort_keys=False) + "\n"


# --------------------------------------------------------------------------------------------- text


_REASON_ORDER = {
    "fallback": -1,
    "unrecognised": 0,
    "bespoke": 1,
    "extra": 2,
    "difference": 3,
    "evidence": 4,
    "note": 5,
    "behaviour": 6,
}


def _ordered_reasons(f: Finding) -> list[Reason]:
    return sorted(f.reasons, key=lambda r: _REASON_ORDER.get(r.kind, 9))


def short_reasons(f: Finding) -> str:
    """The most telling reason, and how many of each kind there are."""
    reasons = _ordered_reasons(f)
    if not reasons:
        return ""
    counts = Counter(r.kind for r in reasons if r.kind is not ReasonKind.BEHAVIOUR)
    tally = ", ".join(f"{n} {kind}" for kind, n in sorted(counts.items(), key=lambda kv: _REASON_ORDER.get(kv[0], 9)))
    first = reasons[0]
    return f"[{tally}] {first.text}" if tally else first.text


def _short_path(path: str) -> str:
    """``llama/modeling_llama.py`` for ``src/transformers/models/llama/modeling_llama.py``."""
    marker = "/models/"
    return path.split(marker, 1)[1] if marker in f"/{path}" and marker in path else path.removeprefix("models/")


def _origin(f: Finding) -> str:
    o = f.override
    notes = []
    if o.generated_from is not None:
        notes.append(f"from {o.generated_from.source_file or o.generated_from.modular_file or 'modular'}")
    if o.copied_from is not None:
        status = o.copied_from.check.status
        copied = o.copied_from.check.target_class or o.copied_from.marker.target.rsplit(".", 1)[-1]
        notes.append(f"copy of {copied}" + ("" if status is CopyStatus.CONSISTENT else f" ({status})"))
    return ", ".join(notes)


def header_lines(result: ScanResult) -> list[str]:
    c, p = result.index.checkout, result.profile
    s = summary(result)
    where = f"{c.kind.value} {c.root}" + (f" (transformers {c.version})" if c.version else "")
    mixin = f"mixin: {p.source} — {p.era.value}" + (" (hoisted by apply)" if p.hoisted else "")
    lines = [where]
    if p.target is not None:
        lines.append(f"judged against {p.target.describe()}")
    lines.append(mixin)
    lines.append(
        f"{count(s['overrides'], 'override')} ({count(s['lines'], 'line')}) in {s['candidate_files']} of "
        f"{count(s['files_read'], 'file')}; {s['from_modular']} from modular sources, {s['deprecated']} deprecated; "
        f"{s['copy_groups']} copy groups"  # (as the goldens have it, also for one)
    )
    if s["copy_markers"]:
        lines.append("copy markers: " + ", ".join(f"{n} {k}" for k, n in s["copy_markers"].items()))
    return lines


def render_table(result: ScanResult, console: Console, verbose: bool = False) -> None:
    for line in header_lines(result):
        console.print(line, highlight=False)
    counts = Table(title="By category", show_edge=False)
    for column in ("category", "overrides", "lines", "actions"):
        counts.add_column(column, justify="right" if column in ("overrides", "lines") else "left")
    s = summary(result)
    for category in _CATEGORY_ORDER:
        row = s["by_category"][category.value]
        # a category is what an override does, an action what the tool does with it: each category's actions
        actions = Counter(f.action for f in result.findings if f.category is category)
        done = ", ".join(f"{actions[a]} {a.value}" for a in Action if actions[a])
        counts.add_row(Text(category.value, style=_STYLE[category]), str(row["count"]), str(row["lines"]), done)
    counts.add_row(
        "total", str(s["overrides"]), str(s["lines"]), ", ".join(f"{n} {a}" for a, n in s["by_action"].items() if n)
    )
    console.print(counts)
    for category in _CATEGORY_ORDER:
        group = [f for f in result.findings if f.category is category]
        if not group:
            continue
        table = Table(
            title=f"{category.value} ({len(group)})",
            title_style=_STYLE[category],
            expand=fills_width(console),
            show_lines=verbose,
        )
        table.add_column("class / where", no_wrap=True, overflow="ellipsis", max_width=44)
        table.add_column("lines", justify="right")
        table.add_column("action")
        table.add_column("why", overflow="fold", ratio=1)
        for f in group:
            o = f.override
            where = Text(o.class_name)
            where.append(f"\n{_short_path(o.file)}:{o.line}", style="dim")
            if verbose and _origin(f):
                where.append(f"\n{_origin(f)}", style="dim")
            why = "\n".join(map(str, _ordered_reasons(f))) if verbose else short_reasons(f)
            table.add_row(where, str(o.lines), f.action.value, Text(why))
        console.print(table)
    _render_problems(result, console, verbose)
    for line in report_lines(result.blockers):
        console.print(line, highlight=False, soft_wrap=True, markup=False)


#: why a class that binds the method by assignment is listed and left as it is
_BOUND_WHY = "binds the method by assignment, not a def: nothing to classify, left as it is"


def _render_problems(result: ScanResult, console: Console, verbose: bool) -> None:
    skipped = result.index.skipped
    if verbose:
        for s in skipped:
            console.print(f"skipped {s.path}: {s.reason} ({', '.join(s.classes)})", style="dim", highlight=False)
    elif skipped:
        kinds = Counter(s.kind.value for s in skipped)
        console.print(
            f"skipped {count(len(skipped), 'file')} ({', '.join(f'{n} {k}' for k, n in sorted(kinds.items()))}) with "
            f"{count(sum(len(s.classes) for s in skipped), 'override')}: this tool migrates PyTorch models "
            "(--verbose lists them)",
            style="dim",
            highlight=False,
        )
    for b in result.index.bound:
        console.print(
            f"bound {b.path}:{b.line} {b.class_name}: {_BOUND_WHY} ({METHOD} = {b.value})",
            style="dim",
            highlight=False,
        )
    for error in result.index.errors:
        console.print(f"error {error.path}: {error.error}", style="red", highlight=False)
    for f in result.findings:
        link = f.override.copied_from
        if link is not None and link.check.status in (CopyStatus.STALE, CopyStatus.BROKEN):
            console.print(
                f"{link.check.status} copy marker {f.override.file}:{link.marker.line}: {link.check.detail}",
                style="yellow",
                highlight=False,
            )


# --------------------------------------------------------------------------------------------- Markdown


def _md_escape(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def to_markdown(result: ScanResult) -> str:
    s = summary(result)
    out = ["# prepare_inputs_for_generation overrides", ""]
    out += [f"- {_md_escape(line)}" for line in header_lines(result)]
    out += ["", "| category | overrides | lines |", "|---|---:|---:|"]
    for category in _CATEGORY_ORDER:
        row = s["by_category"][category.value]
        out.append(f"| {category.value} | {row['count']} | {row['lines']} |")
    out.append(f"| **total** | **{s['overrides']}** | **{s['lines']}** |")
    for category in _CATEGORY_ORDER:
        group = [f for f in result.findings if f.category is category]
        if not group:
            continue
        out += [
            "",
            f"## {category.value} ({len(group)})",
            "",
            "| model | class | where | lines | action | reasons |",
            "|---|---|---|---:|---|---|",
        ]
        for f in group:
            o = f.override
            where = f"`{o.file}:{o.line}`" + (f" ({_origin(f)})" if _origin(f) else "")
            reasons = "<br>".join(_md_escape(str(r)) for r in f.reasons if r.kind is not ReasonKind.BEHAVIOUR)
            behaviours = ", ".join(sorted(b for b in o.analysis.behaviours))
            out.append(
                f"| {o.model or ''} | `{o.class_name}` | {where} | {o.lines} | {f.action.value} | "
                f"{reasons or '—'}<br><sub>{_md_escape(behaviours)}</sub> |"
            )
    if result.index.bound:
        out += ["", "## Bound by assignment", ""]
        out += [
            f"- `{b.path}:{b.line}` `{b.class_name}`: `{METHOD} = {_md_escape(b.value)}`: {_BOUND_WHY}"
            for b in result.index.bound
        ]
    problems: list[SkippedFile | FileError] = [*result.index.skipped, *result.index.errors]
    if problems:
        out += ["", "## Not scanned", ""]
        out += [f"- `{p.path}`: {_md_escape(p.reason if isinstance(p, SkippedFile) else p.error)}" for p in problems]
    out += report_markdown(result.blockers)
    return "\n".join(out) + "\n"


def render(result: ScanResult, fmt: str, console: Console, verbose: bool = False) -> str | None:
    """Render for ``fmt``; returns text for json/markdown, prints the table itself."""
    if fmt == "json":
        return to_json(result)
    if fmt == "markdown":
        return to_markdown(result)
    render_table(result, console, verbose)
    return None


# --------------------------------------------------------------------------------------------- verification


def verdict_record(verdict: ClassVerdict) -> dict[str, Any]:
    first = verdict.first_difference
    return {
        "override": verdict.override_id,
        "file": OverrideId.parse(verdict.override_id).file,
        "class": OverrideId.parse(verdict.override_id).class_name,
        "verdict": verdict.verdict,
        "detail": verdict.detail,
        "model": verdict.model,
        **({"inherits_from": verdict.inherits_from} if verdict.inherits_from else {}),
        "variants": [dict(v) for v in verdict.variants],
        "scenarios": [
            {
                "name": s.name,
                "status": s.status,
                **({"detail": s.detail} if s.detail else {}),
                **({"variant": s.variant} if s.variant else {}),
                **({"inputs": s.inputs} if s.inputs else {}),
                **({"cache_used": s.cache_used} if s.cache_used is not None else {}),
                **(
                    {"repair": dataclasses.asdict(s.repair)}
                    if s.repair is not None and s.status is not ScenarioStatus.SAME
                    else {}
                ),
            }
            for s in verdict.scenarios
        ],
        "compared": list(verdict.compared),
        # the scenarios only the new code runs (the old code failed there): never a difference, whatever the verdict
        "extends": list(verdict.extended),
        # the method's arguments given a value in a scenario compared as the same: what the evidence reached
        "given": list(verdict.given),
        "first_difference": dataclasses.asdict(first) if first else None,
        "seconds": round(verdict.seconds, 2),
    }


def verify_document(report: VerifyReport, run: dict[str, Any] | None = None) -> dict[str, Any]:
    """The JSON report; ``run``: the run record a shard's report carries (``publish.shards.run_record``)."""
    counts = Counter(v.verdict for v in report.verdicts)
    return {
        "tool": "transformers-codemod",
        "tool_version": __version__,
        "schema": SCHEMA_VERSION,
        "base": report.base,
        "device": report.device,
        "python": report.python,
        "seconds": round(report.seconds, 1),
        "classes_per_minute": round(report.classes_per_minute, 2),
        "summary": {str(k): counts.get(k, 0) for k in Verdict},
        "verdicts": [verdict_record(v) for v in report.verdicts],
        "not_run": [{"override": o, "why": why} for o, why in report.not_run],
        "own_tests": [v.to_json() for v in report.own_tests],
        **({"run": run} if run is not None else {}),
    }


_VERDICT_STYLE = {
    Verdict.IDENTICAL: "green",
    Verdict.DIFFERS: "red",
    Verdict.CRASHED: "red",
    Verdict.UNVERIFIED: "yellow",
    Verdict.INPUTS_DIFFER: "red",
    Verdict.NO_WORSE: "green",
    Verdict.REPAIRS: "green",
}


def _why(verdict: ClassVerdict) -> str:
    """The "first difference / why" of a verdict: the difference that decided a failing one, else its detail."""
    first = verdict.first_difference
    return str(first) if first is not None else verdict.detail


def render_verify_table(report: VerifyReport, console: Console) -> None:
    doc = verify_document(report)
    s = doc["summary"]
    console.print(
        f"{count(len(report.verdicts), 'class', 'classes')} verified on {report.device} in {report.seconds:.0f}s "
        f"({report.classes_per_minute:.1f} classes/min) against {report.base}: "
        + ", ".join(f"{n} {k}" for k, n in s.items()),
        highlight=False,
    )
    table = Table(expand=fills_width(console))
    table.add_column("class / where", no_wrap=True, overflow="ellipsis", max_width=44)
    table.add_column("verdict")
    table.add_column("scenarios", justify="right")
    table.add_column("extends", overflow="fold", max_width=24)
    table.add_column("first difference / why", overflow="fold", ratio=1)
    for v in report.verdicts:
        where = Text(OverrideId.parse(v.override_id).class_name)
        where.append(f"\n{_short_path(OverrideId.parse(v.override_id).file)}", style="dim")
        ran = f"{len(v.compared)}/{len(v.scenarios)}"
        verdict = Text(v.verdict, style=_VERDICT_STYLE.get(v.verdict, ""))
        table.add_row(where, verdict, ran, ", ".join(v.extended), Text(_why(v)))
    console.print(table)
    for override, why in report.not_run:
        console.print(f"not run {override}: {why}", style="dim", highlight=False)
    for own in report.own_tests:
        console.print(f"own tests {own.describe()}", style="" if own.ok else "red", highlight=False)


def verify_markdown(report: VerifyReport) -> str:
    doc = verify_document(report)
    out = [
        "# Verification",
        "",
        f"- {count(len(report.verdicts), 'class', 'classes')} on {report.device}, base `{report.base}`, "
        f"{report.seconds:.0f}s ({report.classes_per_minute:.1f} classes/min)",
        "- " + ", ".join(f"{n} {k}" for k, n in doc["summary"].items()),
        "",
        "| class | file | verdict | variants | scenarios compared (with a cache) | extends | first difference / why |",
        "|---|---|---|---|---|---|---|",
    ]
    for v in report.verdicts:
        variants = ", ".join(str(variant.get("name")) for variant in v.variants) or "—"
        cached = sum(1 for s in v.scenarios if s.status is ScenarioStatus.SAME and s.cache_used)
        shown = OverrideId.parse(v.override_id)
        out.append(
            f"| `{shown.class_name}` | `{shown.file}` | {v.verdict} | "
            f"{variants} | {len(v.compared)} ({cached}) | {', '.join(v.extended)} | {_md_escape(_why(v))} |"
        )
    return "\n".join(out) + "\n"
