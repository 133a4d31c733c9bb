"""The checkout's own consistency tools, run after a rewrite: the modular converter and check_copies.

A git clone of transformers carries ``utils/modular_model_converter.py`` (generates ``modeling_*.py``
from ``modular_*.py``) and ``utils/check_copies.py`` (keeps ``# Copied from`` copies in step). After
``apply`` edits a modular source, the converter regenerates its modeling file, which is what the
repository's CI will compare against; check_copies then checks every changed file. Both run in the
checkout's environment (its pinned ruff and libcst), from the checkout's root, with ``src`` on
PYTHONPATH. A checkout without ``utils/`` (an sdist) gets neither: ``apply`` makes the same edit in
the generated file and says so.
"""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path

from codemod.checkout import Checkout
from codemod.environment import ensure_environment

CONVERTER = "modular_model_converter.py"
CHECK_COPIES = "check_copies.py"


@dataclasses.dataclass(frozen=True)
class ToolRun:
    tool: str  # "modular_model_converter" or "check_copies"
    target: str  # the file it ran for
    ok: bool
    output: str  # the tail of what it printed

    def describe(self) -> str:
        return f"{self.tool} {self.target}: {'ok' if self.ok else 'FAILED'}" + ("" if self.ok else f": {self.output}")


def available(checkout: Checkout) -> bool:
    utils = checkout.utils_dir
    return utils is not None and (utils / CHECK_COPIES).is_file()


def has_converter(checkout: Checkout) -> bool:
    utils = checkout.utils_dir
    return utils is not None and (utils / CONVERTER).is_file()


def _run(python: Path, checkout: Checkout, args: Sequence[str], timeout: float) -> tuple[int, str]:
    env = {**os.environ, "PYTHONPATH": str(checkout.root / "src"), "HF_HUB_OFFLINE": "1"}
    # the tools call `ruff` by name: the environment's own, pinned by the checkout
    env["PATH"] = f"{python.parent}{os.pathsep}{env.get('PATH', '')}"
    try:
        done = subprocess.run(
            [str(python), *args], cwd=checkout.root, env=env, capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        return 124, f"timed out after {timeout:.0f}s"
    tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-6:])
    return done.returncode, tail


def regenerate(python: Path, checkout: Checkout, modular_files: Sequence[str], timeout: float = 600) -> list[ToolRun]:
    """Run the converter for each edited modular source (the generated file is rewritten in place)."""
    runs = []
    converter = f"utils/{CONVERTER}"
    for path in modular_files:
        code, output = _run(python, checkout, [converter, "--files_to_parse", path], timeout)
        if code == 2 and "unrecognized arguments" in output:  # newer converters name the option --files
            code, output = _run(python, checkout, [converter, "--files", path], timeout)
        runs.append(ToolRun("modular_model_converter", path, code == 0, output))
    return runs


#: a modular source's import from another model's code: ``from ..qwen2_5_omni.modeling_qwen2_5_omni import ...``
_MODEL_IMPORT = re.compile(r"^from \.\.(\w+)\.(?:modeling|modular)_\w+ import", re.MULTILINE)


def modular_dependents(checkout: Checkout, written: Sequence[str], regenerated: Sequence[str]) -> list[str]:
    """The modular sources, besides ``regenerated``, that import from a written model (a modeling or modular file)
    and whose generated ``modeling_*.py`` is among ``written``: the converter makes that file from the parents'
    code, so it runs again for them once the parents are edited (and regenerated). In an order where a source
    comes after every other one of them it imports from, since the converter reads the parent's generated file.
    Paths relative to the checkout's root, like ``written``."""
    models_dir = checkout.root / "src" / "transformers" / "models"
    if not models_dir.is_dir():
        return []
    written_set, done = set(written), set(regenerated)
    edited = {Path(p).parent.name for p in written if Path(p).name.startswith(("modeling_", "modular_"))}
    # source -> the models it imports from, read once, for the sources whose generated file was written
    parents: dict[str, set[str]] = {}
    for source in sorted(models_dir.glob("*/modular_*.py")):
        rel = source.relative_to(checkout.root).as_posix()
        if rel not in done and rel.replace("/modular_", "/modeling_") in written_set:
            imported = {match.group(1) for match in _MODEL_IMPORT.finditer(source.read_text(encoding="utf-8"))}
            if imported & edited:
                parents[rel] = imported
    model = {rel: Path(rel).parent.name for rel in parents}
    ordered: list[str] = []
    while parents:
        pending = {model[rel] for rel in parents}
        ready = [rel for rel, imported in parents.items() if not imported & (pending - {model[rel]})]
        ready = ready or list(parents)[:1]  # an import cycle (none upstream): one at a time, in path order
        for rel in ready:
            ordered.append(rel)
            del parents[rel]
    return ordered


def check_copies(python: Path, checkout: Checkout, files: Sequence[str], timeout: float = 600) -> list[ToolRun]:
    """check_copies in check mode, file by file (so that what was inconsistent before is not ours)."""
    runs = []
    for path in files:
        code, output = _run(python, checkout, [f"utils/{CHECK_COPIES}", "--file", path], timeout)
        runs.append(ToolRun("check_copies", path, code == 0, output))
    return runs


def after_rewrite(
    checkout: Checkout,
    written: Sequence[str],
    *,
    python: Path | None = None,
    say: Callable[[str], None] | None = None,
) -> list[ToolRun]:
    """Regenerate from the edited modular sources, then check the copies of every written file."""
    if not available(checkout) or not written:
        return []
    environment = ensure_environment(checkout, python=python, tools=True, progress=say)
    runs: list[ToolRun] = []
    modular = [p for p in written if Path(p).name.startswith("modular_")]
    if has_converter(checkout):
        runs += regenerate(environment.python, checkout, modular)
        # then the modular sources that import from what was edited and whose generated file was written too (the
        # edit of a copy the converter makes from a parent): the converter lays the parent's code out in its own
        # order (4.57's Qwen3-Omni thinker takes the hook attribute of Qwen2.5-Omni's, above `_can_record_outputs`)
        runs += regenerate(environment.python, checkout, modular_dependents(checkout, written, modular))
    python_files = [p for p in written if p.endswith(".py")]
    runs += check_copies(environment.python, checkout, python_files)
    return runs
