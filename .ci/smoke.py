"""make dist-check's last step: what a user gets from ``pip install <wheel>`` in a fresh venv.

Usage: python .ci/smoke.py VENV  (the venv the wheel was installed into)

Checks that the wheel installs one top-level import package, ``codemod`` (the rules inside it, nothing
called ``rules``), that ``codemod --version`` says the installed version, and that in a directory holding
one model file with a generic override ``codemod diff`` prints that file's diff and exits 1, also given
two files, and with ``--format github`` one annotation per change.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
MODEL_FILE = REPO / "fixtures" / "foreign" / "modeling_legacy.py"
SECOND_FILE = REPO / "fixtures" / "foreign" / "modeling_copied.py"
REMOVED = "-    def prepare_inputs_for_generation("


def run(
    args: list[str], cwd: Path | None = None, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


def check(condition: bool, what: str, done: subprocess.CompletedProcess[str] | None = None) -> None:
    if not condition:
        detail = f"\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}" if done is not None else ""
        sys.exit(f"dist-check: {what}{detail}")
    print(f"ok: {what}")


def top_level_packages(python: Path) -> set[str]:
    """The import names the installed distribution put in site-packages, from its RECORD."""
    code = (
        "import importlib.metadata as m; "
        "print('\\n'.join(str(f) for f in m.distribution('transformers-codemod').files))"
    )
    files = run([str(python), "-I", "-c", code]).stdout.split()
    return {f.split("/")[0] for f in files if "/" in f and not f.split("/")[0].endswith((".dist-info", ".data"))} - {
        ".."
    }


def main() -> None:
    venv = Path(sys.argv[1]).resolve()
    python, codemod = venv / "bin" / "python", venv / "bin" / "codemod"
    check(top_level_packages(python) == {"codemod"}, "the wheel installs one top-level package, codemod")
    version = run(
        [str(python), "-I", "-c", "import importlib.metadata as m; print(m.version('transformers-codemod'))"]
    )
    done = run([str(codemod), "--version"])
    check(done.stdout.strip() == f"transformers-codemod {version.stdout.strip()}", "codemod --version", done)
    check(run([str(python), "-I", "-c", "import codemod.rules, codemod.api"]).returncode == 0, "codemod.rules imports")
    with tempfile.TemporaryDirectory() as scratch:
        root = Path(scratch) / "model"
        root.mkdir()
        shutil.copy(MODEL_FILE, root)
        shutil.copy(SECOND_FILE, root)
        env = {"PATH": f"{venv / 'bin'}:/usr/bin:/bin", "CODEMOD_CACHE_DIR": str(Path(scratch) / "cache")}
        done = run([str(codemod), "diff", MODEL_FILE.name], cwd=root, env=env)
        check(done.returncode == 1 and REMOVED in done.stdout, "codemod diff FILE prints its diff, exits 1", done)
        done = run([str(codemod), "diff", MODEL_FILE.name, SECOND_FILE.name], cwd=root, env=env)
        check(done.returncode == 1 and done.stdout.count("+++ b/") == 2, "codemod diff a.py b.py", done)
        done = run([str(codemod), "diff", "--format", "github"], cwd=root, env=env)
        annotations = [line for line in done.stdout.splitlines() if line.startswith("::warning file=")]
        check(done.returncode == 1 and len(annotations) == 2, "codemod diff --format github: one per change", done)
        (root / SECOND_FILE.name).unlink()
        done = run([str(codemod), "diff"], cwd=root, env=env)
        check(done.returncode == 1 and REMOVED in done.stdout, "codemod diff in the current directory", done)


if __name__ == "__main__":
    main()
