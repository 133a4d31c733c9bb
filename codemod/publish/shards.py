"""A verification spread over CI jobs: each shard's report says which run it belongs to, ``merge`` makes one report
of N, and the merged verdicts go back into a ``VerifyReport`` that ``apply --from-report`` keeps or reverts by.

Each ``codemod verify --shard I/N --format json`` report carries a ``"run"`` record: the shard, the base commit,
the settings that decide what was verified (the tool's version, the release or target, the models chosen) and the
SHA-256 of the file each verdict's class lives in, as the tree held it. Reports merge only when all of that agrees
(a file two shards read must have had one text), when the shards are 1..N of one N, each once, and no class was
verified twice. Pure: documents in, a document out.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from codemod.contracts import OverrideId, ScenarioStatus, Verdict
from codemod.errors import CodemodError
from codemod.verify.compare import ClassVerdict, ScenarioOutcome
from codemod.verify.session import VerifyReport

RUN = "run"
#: the run record's fields that every shard of one run has alike
SAME_IN_EVERY_SHARD = ("base_commit", "settings")


class MergeError(CodemodError):
    """Reports that are not the shards of one run, each once."""


@dataclasses.dataclass(frozen=True)
class ShardSpec:
    index: int
    count: int

    @classmethod
    def parse(cls, text: str | None) -> ShardSpec:
        """``I/N`` as ``verify --shard`` takes it; none: the one shard of one."""
        if not text:
            return cls(1, 1)
        index, _, count = text.partition("/")
        if not (index.isdigit() and count.isdigit() and 1 <= int(index) <= int(count)):
            raise MergeError(f"not a shard: {text!r} (want I/N with 1 <= I <= N)")
        return cls(int(index), int(count))

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def run_record(
    shard: ShardSpec, base_commit: str, settings: Mapping[str, Any], files: Mapping[str, str]
) -> dict[str, Any]:
    """The ``"run"`` record of one shard's report: ``files``: path -> SHA-256 of its text in the verified tree."""
    return {
        "shard": str(shard),
        "base_commit": base_commit,
        "settings": dict(settings),
        "files": dict(sorted(files.items())),
    }


def _run_of(document: Mapping[str, Any], name: str) -> dict[str, Any]:
    run = document.get(RUN)
    if not isinstance(run, dict) or not {"shard", "base_commit", "settings", "files"} <= set(run):
        raise MergeError(f"{name}: no run record: write shard reports with `codemod verify PATH --format json`")
    return run


def merge(documents: Sequence[tuple[str, Mapping[str, Any]]]) -> dict[str, Any]:
    """One report of the shards' (``(name, document)``: the name is what an error names): their verdicts and
    classes not run in shard order, the summary counted again, the seconds added; refused (``MergeError``) unless
    they are the shards of one run, each once."""
    if not documents:
        raise MergeError("no reports to merge")
    runs = [(name, _run_of(doc, name)) for name, doc in documents]
    first_name, first = runs[0]
    for (name, run), (_, doc) in zip(runs[1:], documents[1:], strict=True):
        for key in SAME_IN_EVERY_SHARD:
            if run[key] != first[key]:
                raise MergeError(f"{name} and {first_name} are not shards of one run: their {key} differ")
        for key in ("tool_version", "schema"):
            if doc.get(key) != documents[0][1].get(key):
                raise MergeError(f"{name} and {first_name} were written by other versions of the tool ({key})")
    specs = {name: ShardSpec.parse(run["shard"]) for name, run in runs}
    counts = {spec.count for spec in specs.values()}
    if len(counts) != 1:
        raise MergeError(f"the reports split the run in different numbers of shards: {sorted(counts)}")
    (count,) = counts
    seen: dict[int, str] = {}
    for name, spec in specs.items():
        if spec.index in seen:
            raise MergeError(f"shard {spec} twice: {seen[spec.index]} and {name}")
        seen[spec.index] = name
    missing = sorted(set(range(1, count + 1)) - set(seen))
    if missing:
        raise MergeError(f"missing shards of {count}: {', '.join(str(i) for i in missing)}")
    files: dict[str, str] = {}
    for name, run in runs:
        for path, digest in run["files"].items():
            if files.setdefault(path, digest) != digest:
                raise MergeError(f"{name} verified another text of {path} than an earlier shard")
    ordered = sorted(documents, key=lambda item: specs[item[0]].index)
    verdicts: list[dict[str, Any]] = []
    where: dict[str, str] = {}
    for name, doc in ordered:
        for verdict in doc.get("verdicts", []):
            if verdict["override"] in where:
                raise MergeError(f"{verdict['override']} is verified in {where[verdict['override']]} and in {name}")
            where[verdict["override"]] = name
            verdicts.append(verdict)
    summary = {str(k): 0 for k in Verdict}
    for verdict in verdicts:
        summary[verdict["verdict"]] = summary.get(verdict["verdict"], 0) + 1
    seconds = sum(float(doc.get("seconds", 0.0)) for _, doc in ordered)
    head = dict(ordered[0][1])
    return {
        **head,
        "seconds": round(seconds, 1),
        "classes_per_minute": round(60 * len(verdicts) / seconds, 2) if seconds else 0.0,
        "summary": summary,
        "verdicts": verdicts,
        "not_run": list({o["override"]: o for _, doc in ordered for o in doc.get("not_run", [])}.values()),
        "own_tests": [t for _, doc in ordered for t in doc.get("own_tests", [])],
        RUN: {**first, "shard": f"1-{count}/{count}", "files": dict(sorted(files.items()))},
    }


def report_of(document: Mapping[str, Any]) -> VerifyReport:
    """The verdicts of a (merged) report as a ``VerifyReport``: what keeps or reverts a change (the verdict, its
    detail, the override a class inherits, the scenarios by name and status); not the evidence's values."""
    verdicts = tuple(
        ClassVerdict(
            OverrideId.parse(v["override"]),
            Verdict(v["verdict"]),
            tuple(
                ScenarioOutcome(
                    s["name"], ScenarioStatus(s["status"]), s.get("detail", ""), variant=s.get("variant", "")
                )
                for s in v.get("scenarios", [])
            ),
            v.get("detail", ""),
            float(v.get("seconds", 0.0)),
            v.get("model", ""),
            inherits_from=v.get("inherits_from", ""),
        )
        for v in document.get("verdicts", [])
    )
    return VerifyReport(
        verdicts,
        (),
        tuple((o["override"], o["why"]) for o in document.get("not_run", [])),
        str(document.get("device", "")),
        str(document.get("python", "")),
        float(document.get("seconds", 0.0)),
        str(document.get("base", "")),
    )
