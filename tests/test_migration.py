"""``codemod.migrate.to_migration``: what the engine hands to its publishers, on the fixture checkout.

The mini checkout's copy group (otter's method, copied by badger, and by ferret from badger) and its
modular family (puffin, generated from otter) are the units a pull request must never split.
"""

from __future__ import annotations

from pathlib import Path

from codemod.analyse.scan import scan
from codemod.checkout import resolve
from codemod.migrate import to_migration
from codemod.migration import MIXIN_MODEL
from codemod.publish.pr.plan import group_models, screen
from codemod.transform.apply import compute_changes
from codemod.verify.compare import ClassVerdict
from codemod.verify.session import VerifyReport

MODELS = "src/transformers/models"


def identical_report(result, changes) -> VerifyReport:
    changed = [oid for oid, action in changes.plan.actions if action.value != "keep"]
    verdicts = tuple(ClassVerdict(oid, "identical") for oid in changed)
    return VerifyReport(verdicts, (), (), "cpu", "python", 1.0, "HEAD")


def test_a_copy_group_lands_as_one_unit_named_after_its_source(mini_checkout: Path) -> None:
    result = scan(resolve(mini_checkout))
    changes = compute_changes(result, 1)
    migration = to_migration(result, changes, identical_report(result, changes), {})
    by_name = {m.model: m for m in migration.models}
    # the hoisted mixin is its own entry; every deletion relies on it
    assert by_name[MIXIN_MODEL].files == ("src/transformers/generation/utils.py",)
    # badger and ferret copy otter's method: each lists the whole group's files and follows otter
    for copy in ("badger", "ferret"):
        assert f"{MODELS}/otter/modeling_otter.py" in by_name[copy].files
        assert by_name[copy].lead == "otter"
    assert by_name["otter"].lead == ""
    kept, withheld = screen(migration.models)
    assert not withheld
    groups = {
        g.name: sorted(m.model for m in g.models)
        for g in group_models([m for m in kept if m.model != MIXIN_MODEL], "model")
    }
    (otter_group,) = [members for members in groups.values() if "otter" in members]
    assert {"badger", "ferret", "otter"} <= set(otter_group)
    assert groups["otter"] == otter_group


def test_a_kept_copy_that_loses_its_marker_travels_with_the_removal(mini_checkout: Path) -> None:
    result = scan(resolve(mini_checkout)).select(["otter"], [])
    changes = compute_changes(result, 1)
    migration = to_migration(result, changes, identical_report(result, changes), {})
    otter = migration.model("otter")
    assert otter is not None
    touched = [f for f in otter.files if f != f"{MODELS}/otter/modeling_otter.py"]
    # the copies outside the selection keep their method but lose a marker naming a removed one
    assert touched, otter.files
    assert all(migration.model(Path(f).parts[-2]) is None for f in touched)
