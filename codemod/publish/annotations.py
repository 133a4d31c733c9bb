"""What a scan or a diff finds, as code-review annotations: GitHub Actions workflow commands (``--format
github``: one ``::warning`` per override that would change, shown on the pull request's files) or a SARIF
2.1.0 log (``--format sarif``: for code-scanning uploads and editors).

Paths are relative to the current directory (the repository's root, where a CI job runs the tool), not to
the checkout: a job that scans ``models/`` still annotates ``models/llama/modeling_llama.py``.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from codemod import __version__
from codemod.analyse.classify import Action, Finding
from codemod.analyse.scan import ScanResult
from codemod.publish.report import short_reasons
from codemod.sources import METHOD
from codemod.transform.apply import Changes

TOOL = "transformers-codemod"
#: what each action does to the override: the annotation's title and the SARIF rule's description
_DOES = {
    Action.DELETE: "can be deleted: GenerationMixin prepares the same inputs",
    Action.REDUCE: "can be reduced to super() and its model-specific keys",
}


@dataclasses.dataclass(frozen=True)
class Annotation:
    """One override that would change: where it is (relative to the current directory), and why."""

    path: str
    line: int
    end_line: int
    class_name: str
    action: Action
    why: str

    @property
    def title(self) -> str:
        return f"{self.class_name}.{METHOD} {_DOES[self.action]}"

    @property
    def message(self) -> str:
        """Why, and the commands that show and make the edit (the title says what)."""
        fix = f"`codemod diff {self.path}` shows the edit, `codemod apply {self.path}` makes it"
        return f"{self.why}; {fix}" if self.why else fix


def _where(result: ScanResult, file: str) -> str:
    """``file`` (relative to the checkout root) relative to the current directory, with forward slashes."""
    return Path(os.path.relpath(result.index.checkout.root / file)).as_posix()


def from_scan(result: ScanResult) -> list[Annotation]:
    """An annotation per override the scan would delete or reduce, in file and line order."""
    found = [
        Annotation(
            _where(result, f.override.file),
            f.override.line,
            f.override.end_line,
            f.override.class_name,
            f.action,
            short_reasons(f),
        )
        for f in result.findings
        if f.action in _DOES
    ]
    return sorted(found, key=lambda a: (a.path, a.line))


def from_changes(result: ScanResult, changes: Changes) -> list[Annotation]:
    """An annotation per override that ``apply`` would delete or reduce (what the diff shows)."""
    by_id = result.index.by_id()
    findings: dict[str, Finding] = {f.override.id: f for f in result.findings}
    written = {r.path for r in changes.rewrites if r.changed}
    found = []
    for override_id, action in changes.plan.actions:
        override = by_id[override_id]
        if action in _DOES and override.file in written:
            finding = findings.get(override_id)
            why = short_reasons(finding) if finding is not None else ""
            found.append(
                Annotation(
                    _where(result, override.file), override.line, override.end_line, override.class_name, action, why
                )
            )
    return sorted(found, key=lambda a: (a.path, a.line))


def _escape_data(text: str) -> str:
    """A workflow command's message: ``%``, CR and LF escaped, as the runner reads them."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    """A workflow command's property value: also ``:`` and ``,``, which end a property."""
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def github(annotations: Iterable[Annotation]) -> str:
    """One ``::warning file=…,line=…,endLine=…,title=…::message`` line per annotation."""
    lines = []
    for a in annotations:
        properties = f"file={_escape_property(a.path)},line={a.line},endLine={a.end_line}"
        lines.append(f"::warning {properties},title={_escape_property(a.title)}::{_escape_data(a.message)}\n")
    return "".join(lines)


def sarif(annotations: Iterable[Annotation]) -> str:
    """A SARIF 2.1.0 log: one run of this tool, a rule per action, a result per annotation."""
    results: list[dict[str, Any]] = [
        {
            "ruleId": a.action.value,
            "level": "warning",
            "message": {"text": f"{a.title}: {a.message}"},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": {"uri": a.path},
                        "region": {"startLine": a.line, "endLine": a.end_line},
                    }
                }
            ],
        }
        for a in annotations
    ]
    rules = [
        {"id": action.value, "shortDescription": {"text": f"{METHOD} override {does}"}}
        for action, does in _DOES.items()
    ]
    log = {
        "version": "2.1.0",
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "runs": [{"tool": {"driver": {"name": TOOL, "version": __version__, "rules": rules}}, "results": results}],
    }
    return json.dumps(log, indent=2) + "\n"
