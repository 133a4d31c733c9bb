"""A verification spread over CI jobs, at the command line: the ``"run"`` record each ``verify`` report carries,
``codemod merge`` (N shard reports into one) and ``apply --from-report`` (the merged verdicts kept or reverted,
nothing verified again). The documents' rules are :mod:`codemod.publish.shards`'.

``merge`` is a command of its own rather than ``verify --merge``: it reads reports and needs no checkout, no
environment and none of ``verify``'s options, and a final CI job runs it where nothing else of ``verify`` could.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from codemod import api

if TYPE_CHECKING:
    from codemod.checkout import Checkout
    from codemod.verify.session import VerifyReport


def _digest(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def base_commit(root: Path, base: str) -> str:
    """The commit ``base`` names in ``root``'s repository."""
    from codemod import git

    found = git.output(root, "rev-parse", "--verify", f"{base}^{{commit}}")
    if not found:
        raise api.ToolError(f"{base} names no commit in {root}")
    return found


def shard_run(
    source: api.Source, report: VerifyReport, *, base: str, shard: str | None, settings: Mapping[str, Any]
) -> dict[str, Any]:
    """The ``"run"`` record of a ``verify`` report: its shard, the base commit, ``settings`` and the text of each
    verdict's file as verified (the checkout's working tree)."""
    from codemod.checkout import resolve_paths
    from codemod.contracts import OverrideId
    from codemod.publish.shards import ShardSpec, run_record

    if source.release is not None:
        raise api.ToolError("a shard's report needs a checkout: verify a PATH, not --release")
    checkout = resolve_paths(source.path_list or (Path.cwd(),))
    files = {OverrideId(v.override_id).file for v in report.verdicts}
    texts = {f: _digest((checkout.root / f).read_bytes()) for f in files if (checkout.root / f).is_file()}
    return run_record(ShardSpec.parse(shard), base_commit(checkout.root, base), settings, texts)


def _read(path: Path) -> tuple[str, dict[str, Any]]:
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise api.ToolError(f"{path}: not a verification report ({error})") from error
    if not isinstance(document, dict):
        raise api.ToolError(f"{path}: not a verification report")
    return str(path), document


def merge(
    reports: Annotated[
        list[Path],
        typer.Argument(metavar="REPORT", help="The shard reports (`codemod verify --shard I/N --format json`)."),
    ],
    output: Annotated[
        Path | None,
        typer.Option("--output", "-o", metavar="FILE", help="Write the merged report (JSON) here; default stdout."),
    ] = None,
) -> None:
    """Merge the JSON reports of `verify --shard I/N` jobs into one, as one `verify` would have written it.

    Refuses reports of other base commits, settings or file texts, and a missing or duplicated shard. Exit 0 when
    every class is identical (across releases: or no worse, or repairs), 1 otherwise (as `verify`)."""
    from codemod.publish.shards import merge as merge_documents
    from codemod.verify.releases import KEPT  # identical, or across releases no worse than the target

    merged = merge_documents([_read(path) for path in reports])
    text = json.dumps(merged, indent=2) + "\n"
    if output is not None:
        output.write_text(text, encoding="utf-8")
    else:
        typer.echo(text, nl=False)
    raise typer.Exit(0 if all(v["verdict"] in KEPT for v in merged["verdicts"]) else 1)


def _whole(run: Mapping[str, Any], name: str) -> None:
    """A report of the whole run: merged, or a run in one shard."""
    shard = str(run.get("shard", ""))
    if shard != "1/1" and not shard.startswith("1-"):
        raise api.ToolError(f"{name} is shard {shard} of a run: merge every shard first (`codemod merge`)")


def _check_tree(checkout: Checkout, texts: Mapping[str, bytes], run: Mapping[str, Any], name: str) -> None:
    """The report verified the tree this apply writes: its base is HEAD, and each verdict's file has the text it
    verified (``texts``: the planned new text of every changed file; the rest as on disk)."""
    head = base_commit(checkout.root, "HEAD")
    if run["base_commit"] != head:
        raise api.ToolError(f"{name} verified changes of {run['base_commit'][:12]}, not of HEAD ({head[:12]})")
    for path, digest in sorted(run["files"].items()):
        file = checkout.root / path
        text = texts.get(path, file.read_bytes() if file.is_file() else b"")
        if _digest(text) != digest:
            raise api.ToolError(
                f"{name} verified another text of {path} than this apply writes: "
                "apply with the options the shard jobs applied with (and --unsafe-fixes)"
            )


def apply_from_report(
    source: api.Source, edits: api.Edits, report_file: Path, *, keep_unverified: bool, allow_dirty: bool
) -> api.Applied:
    """What ``apply --verify`` would keep, from the verdicts of a merged report: the changes ``apply
    --unsafe-fixes`` makes (what the shards verified), less every shard holding a class the report does not call
    identical; nothing is verified again. Refused where the report is one shard of several, or verified another
    base or other texts than these changes write."""
    from codemod.migrate import verdicts_applied
    from codemod.publish.shards import RUN, report_of

    if source.release is not None:  # the cached release is shared: never written in place
        raise api.ToolError("--from-report writes the checkout the shards verified: give its PATH, not --release")
    name, document = _read(report_file)
    run = document.get(RUN)
    if not isinstance(run, dict):
        raise api.ToolError(f"{name} has no run record: write it with `codemod verify PATH --format json`")
    _whole(run, name)
    result, changes = api.diff(source, edits=api.Edits(edits.mark, edits.hooks, unsafe=True))
    checkout = result.index.checkout
    git = checkout.git
    if git is not None and git.dirty and not allow_dirty:
        raise api.ToolError(f"{checkout.root} has uncommitted changes: commit or stash them, or pass --allow-dirty")
    _check_tree(checkout, {r.path: r.new for r in changes.rewrites if r.changed}, run, name)
    migrated = verdicts_applied(result, changes, report_of(document), keep_unverified)
    written = [r.path for r in migrated.final.rewrites if r.changed]
    return api.Applied(result, migrated.final, written, migrated.report, migrated.reverted)


def settings_of(source: api.Source, run: api.Run, base: str, requirements: Sequence[str]) -> dict[str, Any]:
    """What decides what a shard verified, besides the tree: alike in every shard of one run."""
    return {
        "base": base,
        "release": source.release,
        "target": source.target,
        "from": run.from_release,
        "only": sorted(source.only),
        "skip": sorted(source.skip),
        "requirements": sorted(requirements),
        "own_tests": run.own_tests,
    }
