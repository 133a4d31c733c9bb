"""The idiom round on real releases: ``fixtures/legacy_llama`` (4.46.3-era tuple caches) onto 5.23.0, verified on
three sides (the old code on 4.46.3, the old code on 5.23.0, the new code on 5.23.0), then generated on 5.23.0.

The fixes alone are put back: the fixture's own ``prepare_inputs_for_generation`` breaks ``inputs_embeds`` on
5.23.0. Tried again with the override reduction the plan makes, they are kept (5.23.0 cannot import the old code:
every scenario that runs is a repair), and the tree generates the greedy and beam tokens the original generates on
4.46.3. The release environments are made once per machine (``network``, ``slow``).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from codemod.analyse.scan import ScanResult, scan
from codemod.analyse.target import from_release
from codemod.checkout import resolve
from codemod.contracts import Verdict
from codemod.idiom_round import RoundOptions, with_idiom_rounds
from codemod.migrate import MigrationOptions, MigrationRun, run_migration_on
from codemod.verify.options import DEFAULT_SCENARIOS, VerifyOptions

from .test_idioms_end_to_end import GENERATE, MODELING, REFERENCE, TARGET, _copy, _generate, _tokens, reference

pytestmark = [pytest.mark.network, pytest.mark.slow]

__all__ = ["reference"]  # the module's fixture: the original's weights and tokens on 4.46.3

#: scenarios no code can pass from 4.46.3 onto 5.23.0, left out here: 5.x moved contrastive search to a Hub
#: repository (it raises without ``trust_remote_code``); ``prefilled-cache`` hands 5.23.0 the tuple cache the old
#: side made, which 5.x refuses; 4.46.3 never advances ``position_ids`` a caller gives, 5.23.0's mixin does
LEFT_OUT = ("contrastive", "prefilled-cache", "position-ids")


def test_apply_verify_keeps_the_fixes_with_the_reduction_and_the_tree_generates_on_the_target(
    tmp_path: Path, reference: tuple[Path, dict[str, list[list[int]]]]
) -> None:
    root = _copy(tmp_path, "tree")
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "b"]):
        subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)
    checkout = resolve(root)
    result = scan(checkout, target=from_release(TARGET))
    scenarios = tuple(s for s in DEFAULT_SCENARIOS if s not in LEFT_OUT)
    verifying = VerifyOptions(target=TARGET, from_release=REFERENCE, scenarios=scenarios)

    def migrate(scanned: ScanResult) -> MigrationRun:
        return run_migration_on(checkout, MigrationOptions(), verifying, scanned=scanned)

    rounds = with_idiom_rounds(checkout, result, RoundOptions(verifying), migrate)
    (fixed,) = rounds.files
    assert fixed.kept, fixed.reason
    assert fixed.overrides  # with the override's change: the fixes alone break inputs_embeds
    (verdict,) = rounds.migration.report.verdicts
    assert verdict.verdict in (Verdict.REPAIRS, Verdict.IDENTICAL), verdict.detail
    assert [r.path for r in rounds.migration.final.rewrites if r.changed] == [MODELING]
    script = tmp_path / "generate.py"
    script.write_text(GENERATE)
    weights, expected = reference
    assert _tokens(_generate(TARGET, root, weights, script)) == expected
