#!/usr/bin/env python
"""The idiom fixes on code nobody here wrote: every ``.py`` file of third-party packages built on transformers,
migrated onto each target in memory.

    python -m bench.idioms_third_party                       # the packages below, onto 4.46.3 and 5.23.0
    python -m bench.idioms_third_party --package peft==0.21.2 --target 5.23.0

The wheels are fetched once with ``pip download --no-deps`` into the user cache (never installed, never committed).
For each file and target it counts the fixes ``codemod.transform.idioms.migrate`` makes, and what must stay at
zero: a fix unit raising, a migrated file that does not compile, a migrated file with a pyflakes message the file
did not have (``soundness.new_problems``; ``diff``/``apply`` leave such a file unfixed, so each is a fix lost). It
prints the counts and exits 1 when one of the three is not zero.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import traceback
import zipfile
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from codemod.analyse import soundness
from codemod.cache import cache_dir
from codemod.transform.idioms import IdiomTarget, migrate, target_of

#: the third-party packages the remote-code issue was measured on (73 overrides among them)
PACKAGES = (
    "peft==0.21.2",
    "salesforce-lavis==1.0.2",
    "llava-torch==1.2.2.post1",
    "ipex-llm==2.2.0",
    "optimum-habana==1.21.2",
    "auto-gptq==0.7.1",
    "flash-linear-attention==0.6.0",
    "xtuner==0.2.0",
)
TARGETS = ("4.46.3", "5.23.0")


@dataclass
class Tally:
    files: int = 0
    edits: Counter[tuple[str, str]] = field(default_factory=Counter)
    crashes: list[str] = field(default_factory=list)
    uncompilable: list[str] = field(default_factory=list)
    new_problems: list[str] = field(default_factory=list)

    @property
    def failures(self) -> int:
        return len(self.crashes) + len(self.uncompilable) + len(self.new_problems)


def sources(requirement: str) -> Path:
    """The package's ``.py`` files, unpacked from its wheel in the user cache."""
    root = cache_dir("third-party-wheels") / requirement.replace("==", "-")
    if not (root / ".unpacked").exists():
        root.mkdir(parents=True, exist_ok=True)
        pip = [sys.executable, "-m", "pip", "download", "-q", "--no-deps", requirement, "-d", str(root)]
        subprocess.run(pip, check=True)
        for wheel in root.glob("*.whl"):
            with zipfile.ZipFile(wheel) as archive:
                archive.extractall(root / "src", [n for n in archive.namelist() if n.endswith(".py")])
        (root / ".unpacked").touch()
    return root / "src"


def check(path: Path, targets: list[IdiomTarget], tally: Tally) -> None:
    text = path.read_text(encoding="utf-8", errors="replace")
    tally.files += 1
    for target in targets:
        where = f"{path} ({target.release})"
        try:
            result = migrate(text, target)
        except Exception as error:  # noqa: BLE001 - what this benchmark counts
            tally.crashes.append(f"{where}: {traceback.format_exception_only(error)[-1].strip()[:160]}")
            continue
        if not result.changed:
            continue
        tally.edits.update((target.release, e.code) for e in result.edits)
        try:
            compile(result.source, str(path), "exec")
        except SyntaxError as error:
            tally.uncompilable.append(f"{where}: {error}")
            continue
        problems = soundness.new_problems(text, result.source, str(path))
        if problems:
            tally.new_problems.append(f"{where}: {problems[0]}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--package", action="append", help="a requirement (NAME==VERSION); default: the eight")
    parser.add_argument("--target", action="append", help="a release; default: 4.46.3 and 5.23.0")
    args = parser.parse_args(argv)
    targets = [target_of(release, None) for release in args.target or TARGETS]
    tally = Tally()
    for requirement in args.package or PACKAGES:
        for path in sorted(sources(requirement).rglob("*.py")):
            check(path, targets, tally)
    print(f"{tally.files} files, onto {', '.join(t.release for t in targets)}")
    for release in sorted({r for r, _ in tally.edits}):
        made = ", ".join(f"{code} x{n}" for (r, code), n in sorted(tally.edits.items()) if r == release)
        print(f"  fixes onto {release}: {made}")
    for name, found in (
        ("fix units raising", tally.crashes),
        ("migrated files that do not compile", tally.uncompilable),
        ("migrated files with a new pyflakes message", tally.new_problems),
    ):
        print(f"{name}: {len(found)}")
        for line in found[:20]:
            print(f"  {line}")
    return 1 if tally.failures else 0


if __name__ == "__main__":
    sys.exit(main())
