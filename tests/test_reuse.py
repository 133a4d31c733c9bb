"""Verdict reuse (``codemod.verify.reuse``): a round re-runs only the classes whose code, or what it runs through,
changed since an earlier round; the rest keep their verdict. Verification is faked (the function that would run the
workers counts what it is asked), so these tests are about which classes a round sends to the workers."""

from __future__ import annotations

from pathlib import Path

import pytest

from codemod import migrate
from codemod.checkout import resolve
from codemod.contracts import Verdict
from codemod.migrate import run_migration_on
from codemod.verify.compare import ClassVerdict
from codemod.verify.options import VerifyOptions
from codemod.verify.reuse import VerdictCache, imported_files
from codemod.verify.runner import Target
from codemod.verify.session import VerifyReport

from .conftest import MINI_CHECKOUT, copy_fixture

MODELS = "src/transformers/models"
MIXIN = "src/transformers/generation/utils.py"
#: model -> its modeling file's text: ``beta`` imports ``alpha``'s file, ``gamma`` builds a sub-model by name
TREE = {
    "alpha": "class AlphaForCausalLM:\n    pass\n",
    "beta": "from ..alpha.modeling_alpha import AlphaForCausalLM\n\n\nclass BetaForCausalLM(AlphaForCausalLM):\n"
    "    pass\n",
    "gamma": "from ..auto import AutoModelForCausalLM\n\n\nclass GammaForConditionalGeneration:\n    pass\n",
    "delta": "class DeltaForCausalLM:\n    pass\n",
}


def _file(model: str) -> str:
    return f"{MODELS}/{model}/modeling_{model}.py"


def _target(model: str) -> Target:
    name = next(line.split()[1].split("(")[0].rstrip(":") for line in TREE[model].splitlines() if "class" in line)
    return Target(f"{_file(model)}::{name}", f"transformers.models.{model}.modeling_{model}", name, model)


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "tree"
    for model, text in TREE.items():
        (root / MODELS / model).mkdir(parents=True)
        (root / _file(model)).write_text(text, encoding="utf-8")
    (root / MIXIN).parent.mkdir(parents=True)
    (root / MIXIN).write_text("class GenerationMixin:\n    pass\n", encoding="utf-8")
    return root


class Counting:
    """The function that would run the workers: records the classes each call is given, calls them identical."""

    def __init__(self) -> None:
        self.calls: list[set[str]] = []

    def __call__(self, targets: list[Target]) -> VerifyReport:
        self.calls.append({t.model for t in targets})
        verdicts = tuple(ClassVerdict(t.override_id, Verdict.IDENTICAL) for t in targets)
        return VerifyReport(verdicts, tuple(targets), (), "cpu", "python", 1.0, "HEAD")


def _round(cache: VerdictCache, root: Path, run: Counting) -> VerifyReport:
    targets = [_target(m) for m in TREE]
    return cache.verified(root, targets, VerifyOptions(), (), run)


def _edit(root: Path, path: str) -> None:
    file = root / path
    file.write_text(file.read_text(encoding="utf-8") + "# changed\n", encoding="utf-8")


@pytest.fixture
def first(tree: Path) -> tuple[VerdictCache, Counting]:
    """Every file written, then a first round: it runs every class."""
    cache, run = VerdictCache(), Counting()
    cache.remember_base({p: (tree / p).read_bytes() for p in [*map(_file, TREE), MIXIN]})
    for model in TREE:
        _edit(tree, _file(model))
    report = _round(cache, tree, run)
    assert run.calls == [set(TREE)] and [v.verdict for v in report.verdicts] == [Verdict.IDENTICAL] * len(TREE)
    return cache, run


def test_a_round_that_changes_nothing_runs_nothing(tree: Path, first: tuple[VerdictCache, Counting]) -> None:
    cache, run = first
    report = _round(cache, tree, run)
    assert len(run.calls) == 1  # not called again
    assert [v.override_id for v in report.verdicts] == [_target(m).override_id for m in TREE]
    assert cache.rounds[-1] == (len(TREE), len(TREE)) and report.seconds == 0.0


@pytest.mark.parametrize(
    ("changed", "rerun"),
    [
        (_file("delta"), {"delta"}),  # its own file only
        (_file("alpha"), {"alpha", "beta"}),  # beta imports alpha's file (its parent, its fallback)
        (MIXIN, set(TREE)),  # every class runs through the mixin
    ],
)
def test_a_round_that_changes_one_file_reruns_only_what_reaches_it(
    tree: Path, first: tuple[VerdictCache, Counting], changed: str, rerun: set[str]
) -> None:
    cache, run = first
    _edit(tree, changed)
    _round(cache, tree, run)
    # gamma builds its sub-models by name (an Auto class): any change may be one of them
    assert run.calls[1] == rerun | {"gamma"}


def test_a_file_put_back_as_an_earlier_round_had_it_reuses_that_round(
    tree: Path, first: tuple[VerdictCache, Counting]
) -> None:
    cache, run = first
    before = (tree / _file("delta")).read_bytes()
    _edit(tree, _file("delta"))
    _round(cache, tree, run)
    (tree / _file("delta")).write_bytes(before)
    _round(cache, tree, run)
    assert run.calls[1:] == [{"delta", "gamma"}]


def test_other_options_are_another_key(tree: Path, first: tuple[VerdictCache, Counting]) -> None:
    cache, run = first
    cache.verified(tree, [_target("delta")], VerifyOptions(scenarios=("greedy",)), (), run)
    cache.verified(tree, [_target("delta")], VerifyOptions(jobs=4), (), run)  # parallelism changes no verdict
    assert run.calls[1:] == [{"delta"}]


@pytest.mark.parametrize(
    ("path", "text", "found"),
    [
        ("pkg/models/b/m.py", "from ..a.m import X\n", {"pkg/models/a/m.py"}),
        ("pkg/models/b/m.py", "from ...utils import helper\n", {"pkg/utils.py"}),
        ("pkg/models/b/m.py", "from pkg.models.a import m\n", {"pkg/models/a/__init__.py", "pkg/models/a/m.py"}),
        # a lazy package names its modules for type checkers only: importing it imports none of them
        ("pkg/models/b/m.py", "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ..a.m import X\n", set()),
        ("pkg/models/b/m.py", "import os\nfrom torch import nn\n", set()),  # nothing of the tree
    ],
)
def test_imported_files(tmp_path: Path, path: str, text: str, found: set[str]) -> None:
    for existing in ("pkg/models/a/m.py", "pkg/models/a/__init__.py", "pkg/utils.py", path):
        (tmp_path / existing).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / existing).write_text("", encoding="utf-8")
    assert imported_files(tmp_path, path, text.encode()) == found


def test_a_migration_of_a_tree_already_verified_runs_no_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two copies of one checkout: the second migration's every class has the key the first verified."""
    calls: list[int] = []

    def verify_change(checkout, targets, **kwargs):  # type: ignore[no-untyped-def]
        calls.append(len(targets))
        verdicts = tuple(ClassVerdict(t.override_id, Verdict.IDENTICAL) for t in targets)
        return VerifyReport(verdicts, tuple(targets), (), "cpu", "python", 1.0, "HEAD")

    monkeypatch.setattr(migrate, "verify_change", verify_change)
    cache = VerdictCache()
    once = run_migration_on(resolve(copy_fixture(MINI_CHECKOUT, tmp_path / "a"), with_git=False), reuse=cache)
    assert calls and calls[0] > 0
    runs = len(calls)
    again = run_migration_on(resolve(copy_fixture(MINI_CHECKOUT, tmp_path / "b"), with_git=False), reuse=cache)
    assert len(calls) == runs
    assert again.final.plan.actions == once.final.plan.actions and again.report.verdicts == once.report.verdicts
