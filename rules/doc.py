"""The rules as a reader sees them: ``codemod explain`` and the rules page, ``docs/rules.md``.

Everything here is rendered from the rule modules (their docstrings, ``ERAS`` and ``CASES``, see
``rules.base``) as Markdown, which reads as plain text in a terminal or a log too. The page is
generated, never edited: ``python -m codemod.rules.doc`` (``make rules-doc``) rewrites it, ``--check`` says
whether the committed page is current (and a test fails when it is not).
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import functools
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from codemod import rules
from codemod.generated import refresh
from codemod.rules.base import Case, Kind, NoOp, Rule

#: where the page lives in the repository
PAGE = Path(__file__).resolve().parent.parent / "docs" / "rules.md"
REFRESH = "python -m codemod.rules.doc"

KINDS = {
    Kind.STANDARD: "standard input preparation: a generic mixin may do the same",
    Kind.PLUMBING: "plumbing: no behaviour of its own, always covered",
    Kind.BESPOKE: "model-specific: the override stays",
}


def _markdown(text: str) -> str:
    """reStructuredText literals (````x````) as Markdown ones."""
    return text.replace("``", "`")


def _cell(text: str) -> str:
    """Text for a table cell: Markdown literals, no bar that would end the cell."""
    return _markdown(text).replace("|", "\\|")


def _code(source: str) -> list[str]:
    return ["```python", *source.rstrip("\n").splitlines(), "```"]


def _facets(case: Case) -> str:
    return ", ".join(f"{key}={value}" for key, value in case.facets.items())


def _item(head: str, source: str) -> list[str]:
    """A list item: its first line, then the source as a code block inside the item."""
    return [head, "", *(f"  {line}" if line else "" for line in _code(source)), ""]


def _positive(case: Case) -> list[str]:
    head = f"- `{case.id}`: " + (f"`{case.behaviour}`, " if case.behaviour else "")
    head += f"reported as “{case.detail}”" if case.detail else "reported without detail"
    if case.facets:
        head += f" ({_facets(case)})"
    if case.implies:
        head += "; also " + ", ".join(f"`{name}`" for name in case.implies)
    if case.unrecognised:
        head += "; leaves " + ", ".join(f"`{code}`" for code in case.unrecognised) + " unrecognised"
    return _item(head, case.source)


def _noop(case: NoOp) -> list[str]:
    return _item(f"- `{case.id}`: {case.why}", case.source)


@dataclasses.dataclass(frozen=True)
class Outcome:
    """What an override that only does a rule's behaviour becomes, and whether the edit is safe."""

    becomes: str
    edit: str


#: why an edit counts as safe: it is applied without --verify (which still checks it when asked)
SAFE = "safe: applied without `--verify`"
KEPT = "none: left as it is"


@functools.cache
def _built_in_behaviours() -> Mapping[str, Sequence[Mapping[str, str]]]:
    """The behaviours of the generic mixin this tool installs into a stub (and judges a tree against)."""
    from codemod.analyse.mixin import built_in_profile  # the analysis imports the rules: not at import time

    return built_in_profile().behaviour_facets()


def _outcome(rule: Rule, case: Case) -> Outcome:
    """One case judged as the scan judges it against the built-in mixin (``Rule.coverage``)."""
    # the module's own BECOMES, where the mixin does not simply do the same (plumbing that sets or drops keys, a
    # behaviour the mixin lacks or does differently)
    stated = rule.becomes
    if rule.kind is Kind.PLUMBING:
        return Outcome(stated or "deleted: it has no behaviour of its own", SAFE)
    coverage = rule.coverage(dict(case.facets), _built_in_behaviours())
    if not coverage.covered:
        if rule.kind is Kind.BESPOKE:
            return Outcome("kept: model-specific", KEPT)
        return Outcome(stated, SAFE) if stated else Outcome(f"kept: {_markdown(coverage.missing)}", KEPT)
    if coverage.flow_differences:
        flow = "; ".join(coverage.flow_differences)
        return Outcome(stated or "deleted", f"needs `--verify` (held back without it outside transformers): {flow}")
    if coverage.differences:
        return Outcome("deleted", f"{SAFE}; `--verify` judges the near miss: " + "; ".join(coverage.differences))
    return Outcome("deleted", SAFE)


def outcomes(rule: Rule) -> list[tuple[Outcome, list[str]]]:
    """Each distinct outcome of the rule's own positive cases, with the ids of the cases that give it."""
    grouped: dict[Outcome, list[str]] = {}
    for case in rule.positives:
        if case.behaviour in ("", rule.name):
            grouped.setdefault(_outcome(rule, case), []).append(case.id)
    return list(grouped.items())


def _in_short(rule: Rule) -> str:
    """Two table cells: what the rule's cases become (first words), and whether any edit needs --verify."""
    found = [outcome for outcome, _ in outcomes(rule)]
    words = [word for o in found for word in re.findall(r"\b(deleted|reduced|kept)\b", o.becomes)]
    becomes = " or ".join(dict.fromkeys(words))
    if all(o.edit == KEPT for o in found):
        edit = "none"
    elif any(o.edit.startswith("needs") for o in found):
        edit = "needs `--verify`" + ("" if all(o.edit.startswith("needs") for o in found) else " (some cases)")
    else:
        edit = "safe"
    return f"{becomes or 'n/a'} | {edit}"


def _becomes(rule: Rule) -> list[str]:
    found = outcomes(rule)
    if not found:
        return []
    lines = [
        "What an override that only does this becomes, against the generic mixin `apply` installs into a "
        "≤ 4.45 stub (and `--target built-in` judges a tree against):",
        "",
    ]
    if len(found) == 1:
        outcome = found[0][0]
        return [*lines, f"- becomes: {outcome.becomes}", f"- edit: {_markdown(outcome.edit)}", ""]
    lines += ["| cases | becomes | edit |", "|---|---|---|"]
    for outcome, ids in found:
        cases = ", ".join(f"`{case}`" for case in ids)
        lines.append(f"| {cases} | {_cell(outcome.becomes)} | {_cell(outcome.edit)} |")
    return [*lines, ""]


def explain(rule: Rule) -> str:
    """A rule's section: code, name, summary, kind, description, what the mixins do, example, cases."""
    lines = [f"## {rule.code} {rule.name}", "", _markdown(rule.summary[0].upper() + rule.summary[1:]), ""]
    lines += [f"*{KINDS[rule.kind]}* · `{rule.module.removeprefix('codemod.').replace('.', '/')}.py`", ""]
    if rule.description:
        lines += [_markdown(rule.description), ""]
    if rule.eras:
        lines += ["What the mixins do:", "", "| releases | |", "|---|---|"]
        lines += [f"| {_cell(note.releases)} | {_cell(note.does)} |" for note in rule.eras]
        lines.append("")
    lines += _becomes(rule)
    lines += ["Example:", "", *_code(rule.example), ""]
    positives, noops = rule.positives, rule.noops
    if positives:
        lines += [f"Recognised ({len(positives)}):", ""]
        for case in positives:
            lines += _positive(case)
    if noops:
        lines += [f"Not recognised ({len(noops)}), and why:", ""]
        for noop in noops:
            lines += _noop(noop)
    return "\n".join(lines).rstrip("\n") + "\n"


def listing() -> str:
    """Every rule, one row each: code, name, summary."""
    lines = ["| code | name | summary |", "|---|---|---|"]
    lines += [f"| {r.code} | {r.name} | {_cell(r.summary)} |" for r in rules.ALL]
    return "\n".join(lines) + "\n"


def page() -> str:
    """``docs/rules.md``: the listing, then every rule's section."""
    head = [
        "# The rules",
        "",
        f"<!-- Generated from the modules in rules/ by `{REFRESH}` (make rules-doc): do not edit. -->",
        "",
        "Each behaviour recogniser (`rules/`, one module each) claims statements of a `prepare_inputs_for_generation`",
        "body and says which behaviour they implement; the scan compares those behaviours with what the mixin does.",
        "Every rule below shows the cases its module carries (the tests are generated from them): what it",
        "recognises, with the detail and facets it reports, and near misses it does not, with why.",
        "`codemod explain CODE` prints one rule's section.",
        "",
        "Each section also says what an override that does nothing but this behaviour becomes (deleted, reduced to",
        "`super()` plus what the mixin does not do, or kept) and whether that edit is safe, that is applied without",
        "`--verify`, or needs `--verify`: outside transformers, `apply` holds such an edit back unless it verifies it.",
        "The columns below sum this up.",
        "",
        "| code | name | kind | only this: becomes | edit | summary |",
        "|---|---|---|---|---|---|",
    ]
    head += [
        f"| [{r.code}](#{_anchor(r)}) | {r.name} | {r.kind.value} | {_in_short(r)} | {_cell(r.summary)} |"
        for r in rules.ALL
    ]
    return "\n".join([*head, "", *(explain(r) for r in rules.ALL)]).rstrip("\n") + "\n"


def _anchor(rule: Rule) -> str:
    """The anchor GitHub gives the heading ``## CODE name``."""
    return re.sub(r"[^a-z0-9 -]", "", f"{rule.code} {rule.name}".lower()).replace(" ", "-")


def find(query: str) -> Rule | None:
    """The rule with this code or name (any case), else None."""
    key = query.strip()
    return rules.BY_CODE.get(key.upper()) or rules.BY_NAME.get(key.lower())


def closest(query: str, n: int = 3) -> list[Rule]:
    """The rules nearest to an unknown code or name: by number for a code, by spelling otherwise."""
    key = query.strip()
    number = re.fullmatch(r"(?:PI)?(\d{1,3})", key, re.IGNORECASE)
    if number:
        wanted = int(number.group(1))
        return sorted(rules.ALL, key=lambda r: (abs(int(r.code[2:]) - wanted), r.code))[:n]
    names = difflib.get_close_matches(key.lower(), list(rules.BY_NAME), n=n, cutoff=0.3)
    return [rules.BY_NAME[name] for name in names]


def unknown(query: str) -> str:
    """One line for a code or name no rule has, naming the closest codes."""
    near = closest(query)
    if not near:
        return f"no rule {query!r}; `codemod explain` lists them all"
    return f"no rule {query!r}; the closest: " + ", ".join(f"{r.code} ({r.name})" for r in near)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m codemod.rules.doc", description="Write docs/rules.md from the rule modules."
    )
    parser.add_argument(
        "-o", "--output", type=Path, default=PAGE, help="where to write the page (default: %(default)s)"
    )
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when the page is not current")
    args = parser.parse_args(argv)
    return refresh(args.output, page(), check=args.check, command=f"{REFRESH} (make rules-doc)")


if __name__ == "__main__":
    raise SystemExit(main())
