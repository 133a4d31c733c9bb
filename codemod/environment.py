"""Python environments that fit a checkout: its own dependency pins, torch, and the checkout's tools.

Verification runs the checkout's code, so it needs that release's dependencies (transformers 4.45
wants ``tokenizers<0.21``, 5.x much newer ones): each dependency set gets its own virtual
environment in the user cache, created once and reused. The checkout itself is never installed;
the code under test is put on ``PYTHONPATH`` (a base worktree and the migrated tree side by side).

``--python`` bypasses all this: any interpreter that can import torch and the checkout's deps.
"""

from __future__ import annotations

import ast
import dataclasses
import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from codemod.cache import cache_dir
from codemod.checkout import Checkout
from codemod.errors import CodemodError
from codemod.sources import read_source

#: torch for each device: the CPU build is on this machine's disk; CUDA builds come from the index
TORCH = {"cpu": "torch==2.13.0", "cuda": "torch"}
#: what the checkout's own tools need besides the core (looked up in the checkout's pins)
TOOLS = ("ruff", "libcst")
#: every test_modeling_*.py imports the pipeline tests, which import datasets
TESTS = ("pytest", "pytest-xdist", "pytest-timeout", "parameterized", "timeout-decorator", "datasets")
#: what test modules import that a release may not pin at all: 5.x's setup.py has no ``requests`` (the core
#: moved to httpx), yet Kosmos-2.5's and RAG's tests import it, and without it they do not even collect
TESTS_UNPINNED = ("requests",)


class EnvironmentSetupError(CodemodError):
    """Creating or using an environment failed (pip error, no setup.py and no version...)."""


@dataclasses.dataclass(frozen=True)
class Environment:
    python: Path
    requirements: tuple[str, ...]
    created: bool = False  # made by this call (else reused)

    def run(self, args: list[str], **kwargs: Any) -> subprocess.CompletedProcess[Any]:
        """``subprocess.run`` with this environment's python; ``kwargs`` are ``subprocess.run``'s."""
        return subprocess.run([str(self.python), *args], **kwargs)


def _setup_lists(setup_py: Path) -> tuple[dict[str, str], list[str]]:
    """``_deps`` (name -> requirement) and the names in ``install_requires`` of transformers' setup.py."""
    tree = ast.parse(read_source(setup_py))
    deps: dict[str, str] = {}
    core: list[str] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Assign) or len(node.targets) != 1 or not isinstance(node.targets[0], ast.Name):
            continue
        name = node.targets[0].id
        if name == "_deps" and isinstance(node.value, ast.List):
            for element in node.value.elts:
                if isinstance(element, ast.Constant) and isinstance(element.value, str):
                    requirement = element.value
                    key = requirement.split(";")[0]
                    for separator in ("==", ">=", "<=", "!=", "<", ">", "~=", "["):
                        key = key.split(separator)[0]
                    deps[key.strip()] = requirement
        elif name == "install_requires" and isinstance(node.value, ast.List):
            for element in node.value.elts:
                if isinstance(element, ast.Subscript) and isinstance(element.slice, ast.Constant):
                    core.append(str(element.slice.value))
    return deps, core


def requirements_for(
    checkout: Checkout, device: str = "cpu", *, tools: bool = False, tests: bool = False
) -> list[str]:
    """The checkout's own dependency pins (not transformers itself), torch, and optionally tools/test deps."""
    setup_py = checkout.root / "setup.py"
    torch = TORCH[device]
    if setup_py.is_file():
        deps, core = _setup_lists(setup_py)
        wanted = list(core)
        if tools:
            wanted += [t for t in TOOLS if t in deps]
        if tests:
            wanted += [t for t in TESTS if t in deps] + list(TESTS_UNPINNED)
        return [torch, *(deps.get(name, name) for name in dict.fromkeys(wanted))]
    if checkout.version:
        # an installed package: its release's requirements, through pip's resolver
        return [torch, f"transformers=={checkout.version}"]
    raise EnvironmentSetupError(
        f"{checkout.root}: no setup.py and no version: pass --python with an environment that fits"
    )


def _key(requirements: list[str]) -> str:
    payload = json.dumps([sys.version_info[:2], sorted(requirements)])
    return hashlib.sha256(payload.encode()).hexdigest()[:16]


def ensure_environment(
    checkout: Checkout,
    device: str = "cpu",
    *,
    python: Path | None = None,
    tools: bool = False,
    tests: bool = False,
    extra: tuple[str, ...] = (),
    progress: Callable[[str], None] | None = None,
) -> Environment:
    """An environment for ``checkout``: ``python`` as given, or a cached venv made from its pins
    (and ``extra`` requirements: what a tree's model code imports besides transformers)."""
    if python is not None:
        return Environment(Path(python), ())
    requirements = requirements_for(checkout, device, tools=tools, tests=tests) + list(extra)
    root = cache_dir("envs") / _key(requirements)
    marker = root / ".complete"
    interpreter = root / "bin" / "python"
    lock = root.with_suffix(".lock")
    with lock.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        if marker.is_file() and interpreter.exists():
            return Environment(interpreter, tuple(requirements))
        if root.exists():
            shutil.rmtree(root)  # an interrupted creation
        say = progress or (lambda _message: None)
        say(f"creating a Python environment for transformers {checkout.version or '?'} ({device}) in {root}")
        subprocess.run([sys.executable, "-m", "venv", str(root)], check=True, capture_output=True)
        _pip(interpreter, ["install", "--upgrade", "pip"], say)
        # torch first, alone: a later requirement must not pull a different (CUDA) build
        _pip(interpreter, ["install", requirements[0]], say)
        _pip(interpreter, ["install", requirements[0], *requirements[1:]], say)
        if any(r.startswith("transformers==") for r in requirements):
            # only its dependencies were wanted: the code under test comes from PYTHONPATH
            _pip(interpreter, ["uninstall", "-y", "transformers"], say)
        marker.write_text(json.dumps(requirements, indent=1) + "\n")
        return Environment(interpreter, tuple(requirements), created=True)


def _pip(python: Path, args: list[str], say: Callable[[str], None]) -> None:
    say("pip " + " ".join(args))
    env = {**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    done = subprocess.run([str(python), "-m", "pip", "-q", *args], capture_output=True, text=True, env=env)
    if done.returncode != 0:
        tail = (done.stderr or done.stdout).strip().splitlines()[-5:]
        raise EnvironmentSetupError(f"pip {' '.join(args)} failed: " + " | ".join(tail))
