"""The idiom round of ``apply --verify`` (``codemod.idiom_round``) with verification stood in for: what each verdict
does to a fixed file, the file put back byte for byte, a round with nothing to fix, a stopped round.

The tree is ``fixtures/legacy_llama`` (tuple caches, ``_reorder_cache`` on tuples, ``is_torch_fx_available``) judged
against a stand-in 5.23.0 package (``conftest.make_target_package``). ``tests/test_idioms_end_to_end.py``
runs the real verification on the release environments.
"""

from __future__ import annotations

import dataclasses
import shutil
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from codemod.analyse.classify import Action
from codemod.analyse.scan import ScanResult, scan
from codemod.analyse.target import Target, TargetOrigin
from codemod.checkout import Checkout, resolve
from codemod.contracts import Held, HeldCause, Verdict
from codemod.idiom_round import IdiomRound, RoundOptions, Rounds, idiom_round, with_idiom_rounds
from codemod.migrate import MigrationRun
from codemod.transform.apply import Changes
from codemod.transform.edits import Plan
from codemod.verify.compare import ClassVerdict
from codemod.verify.options import VerifyOptions
from codemod.verify.runner import Progress
from codemod.verify.runner import Target as Class
from codemod.verify.session import VerifyReport
from codemod.writes import Interrupted

from .conftest import make_target_package

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "legacy_llama"
MODELING = "modeling_legacy_llama.py"
SECOND = "modeling_second.py"  # the same model again: a second blocking file
OPTIONS = RoundOptions(VerifyOptions(target="5.23.0", from_release="4.46.3"))


def _tree(tmp_path: Path, *, second: bool = False, modeling: bool = True) -> Checkout:
    """The fixture as a git tree: with its modeling file copied as a ``second`` one, or without it."""
    root = tmp_path / "tree"
    shutil.copytree(FIXTURE, root, ignore=shutil.ignore_patterns("__pycache__"))
    if second:
        shutil.copy(root / MODELING, root / SECOND)
    if not modeling:
        (root / MODELING).unlink()
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "b"]):
        subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True)
    return resolve(root)


def _scanned(checkout: Checkout, release: str = "5.23.0") -> ScanResult:
    """Judged against a stand-in package of ``release`` (the tool's generic mixin, none of the names 5.x removed),
    or ``built-in``: the generic mixin alone."""
    if release == "built-in":
        return scan(checkout, target=Target(TargetOrigin.BUILT_IN), use_cache=False)
    package = make_target_package(checkout.root.parent / "target", release, pretrained_generative=False)
    return scan(checkout, target=Target(TargetOrigin.RELEASE, package, release), use_cache=False)


class Verifier:
    """Stands in for ``verify_change``: each class gets the verdict its file is given (``verdicts``: path ->
    verdict, else identical; ``later``: the same for the calls after the first), and every call is recorded (the
    override ids asked for)."""

    def __init__(
        self,
        verdicts: dict[str, Verdict] | None = None,
        raises: BaseException | None = None,
        later: dict[str, Verdict] | None = None,
    ) -> None:
        self.verdicts, self.raises, self.later = verdicts or {}, raises, later
        self.calls: list[list[str]] = []

    def __call__(
        self,
        checkout: Checkout,
        targets: Sequence[Class],
        options: VerifyOptions,
        progress: Progress | None,
        say: Callable[[str], None] | None,
        not_run: Sequence[tuple[str, str]],
    ) -> VerifyReport:
        self.calls.append([t.override_id for t in targets])
        if self.raises is not None:
            raise self.raises
        given = self.verdicts if len(self.calls) == 1 or self.later is None else self.later
        verdicts = tuple(
            ClassVerdict(
                t.override_id,
                given.get(t.override_id.split("::")[0], Verdict.IDENTICAL),
                detail="stood in",
                inherits_from=t.inherits_from,
            )
            for t in targets
        )
        return VerifyReport(verdicts, tuple(targets), tuple(not_run), "cpu", "python", 1.0, "HEAD")


def _round(checkout: Checkout, verifier: Verifier, options: RoundOptions = OPTIONS) -> IdiomRound:
    return idiom_round(_scanned(checkout), options, verifier=verifier)


@pytest.mark.parametrize(
    ("verdict", "keep_unverified", "kept"),
    [
        (Verdict.IDENTICAL, False, True),
        (Verdict.NO_WORSE, False, True),  # the release breaks it as it breaks the old code
        (Verdict.REPAIRS, False, True),
        (Verdict.DIFFERS, False, False),
        (Verdict.CRASHED, False, False),
        (Verdict.INPUTS_DIFFER, False, False),
        (Verdict.UNVERIFIED, False, False),
        (Verdict.UNVERIFIED, True, True),  # --keep-unverified keeps what could not be verified
    ],
)
def test_a_fixed_file_stays_when_its_classes_are_kept(
    tmp_path: Path, verdict: Verdict, keep_unverified: bool, kept: bool
) -> None:
    checkout = _tree(tmp_path)
    before = (checkout.root / MODELING).read_bytes()
    verifier = Verifier({MODELING: verdict})
    done = _round(checkout, verifier, dataclasses.replace(OPTIONS, keep_unverified=keep_unverified))
    assert verifier.calls == [[f"{MODELING}::LegacyLlamaForCausalLM"]]
    (fixed,) = done.files
    assert (fixed.path, fixed.kept) == (MODELING, kept)
    assert {e.code for e in fixed.edits} == {"TB001", "TB002", "TB003", "TB004", "TB008"}
    after = (checkout.root / MODELING).read_bytes()
    if kept:
        assert b"past_key_value.update(key_states, value_states, self.layer_idx)" in after
        assert [r.path for r in done.rewrites] == [MODELING] and done.rewrites[0].new == after
        assert str(verdict) in fixed.detail
    else:
        assert after == before  # put back byte for byte
        assert done.rewrites == ()
        assert f"{verdict}: stood in" in fixed.detail
    assert done.report is not None and [v.verdict for v in done.report.verdicts] == [verdict]


def test_a_failing_file_goes_back_and_the_others_are_verified_again_without_it(tmp_path: Path) -> None:
    checkout = _tree(tmp_path, second=True)
    before = (checkout.root / SECOND).read_bytes()
    verifier = Verifier({SECOND: Verdict.CRASHED})
    done = _round(checkout, verifier)
    first, second = f"{MODELING}::LegacyLlamaForCausalLM", f"{SECOND}::LegacyLlamaForCausalLM"
    assert sorted(verifier.calls[0]) == [first, second]
    assert verifier.calls[1:] == [[first]]  # what stays, proven without the file that went back
    assert [(f.path, f.kept) for f in done.files] == [(MODELING, True), (SECOND, False)]
    assert (checkout.root / SECOND).read_bytes() == before
    assert [r.path for r in done.rewrites] == [MODELING]


CLASS = f"{MODELING}::LegacyLlamaForCausalLM"


def _rounds(
    checkout: Checkout, verifier: Verifier, monkeypatch: pytest.MonkeyPatch
) -> tuple[Rounds, list[ScanResult]]:
    """``with_idiom_rounds`` with verification stood in for, and a migration that reverted the override's change
    (verification failed: the tree cannot run on the target without its idioms fixed)."""

    def verify_change(checkout: Checkout, targets: Sequence[Class], **given: Any) -> VerifyReport:
        return verifier(checkout, targets, given["options"], given["progress"], given["say"], given["not_run"])

    monkeypatch.setattr("codemod.idiom_round.verify_change", verify_change)
    migrated: list[ScanResult] = []
    reverted = Held(CLASS, HeldCause.NOT_VERIFIED, "reverted: verification failed")

    def migrate(scanned: ScanResult) -> MigrationRun:
        migrated.append(scanned)
        nothing = Changes(Plan((), None, (reverted,), ((CLASS, Action.KEEP),)), (), (), ())
        return MigrationRun(scanned, nothing, nothing, VerifyReport((), (), (), "cpu", "", 0.0, "HEAD"), (reverted,))

    return with_idiom_rounds(checkout, _scanned(checkout), OPTIONS, migrate), migrated


def test_a_reverted_file_is_reported_as_verification_reports_a_reverted_change(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checkout = _tree(tmp_path)
    before = (checkout.root / MODELING).read_bytes()
    verifier = Verifier({MODELING: Verdict.DIFFERS}, later={MODELING: Verdict.CRASHED})
    rounds, migrated = _rounds(checkout, verifier, monkeypatch)
    assert len(migrated) == 1 and len(verifier.calls) == 2  # alone, then with the override's planned reduction
    held = {h.subject: h for h in rounds.migration.reverted}
    assert sorted(held) == [MODELING, CLASS]
    assert held[MODELING].cause is HeldCause.NOT_VERIFIED
    assert held[MODELING].detail.startswith("its idiom fixes (TB001 x")
    assert " with LegacyLlamaForCausalLM reduced reverted: " in held[MODELING].detail
    assert held[MODELING].detail.endswith(f"reverted: {CLASS}: crashed: stood in")
    assert rounds.migration.final.rewrites == ()
    assert (checkout.root / MODELING).read_bytes() == before


def test_fixes_that_need_the_override_migrated_too_are_kept_with_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checkout = _tree(tmp_path)
    before = (checkout.root / MODELING).read_bytes()
    verifier = Verifier({MODELING: Verdict.CRASHED}, later={MODELING: Verdict.REPAIRS})
    rounds, _ = _rounds(checkout, verifier, monkeypatch)
    assert verifier.calls == [[CLASS], [CLASS]]
    (fixed,) = rounds.files
    assert fixed.kept and fixed.overrides == ((CLASS, Action.REDUCE),)
    final = rounds.migration.final
    # the change made with the fixes stands, not the migration's revert of it alone
    assert final.plan.actions == ((CLASS, Action.REDUCE),) and final.plan.held == ()
    assert rounds.migration.reverted == ()
    (rewrite,) = final.rewrites
    after = (checkout.root / MODELING).read_bytes()
    assert (rewrite.old, rewrite.new) == (before, after)
    assert b"past_key_value.update(key_states, value_states, self.layer_idx)" in after
    assert rounds.migration.report.verdicts[0].verdict is Verdict.REPAIRS


@pytest.mark.parametrize(
    ("release", "modeling"),
    [
        ("5.23.0", False),  # its configuration alone: nothing in it blocks 5.23.0
        ("built-in", True),  # judged against the generic mixin alone: no release, so nothing blocks it
    ],
)
def test_nothing_to_fix_verifies_nothing_and_builds_no_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, release: str, modeling: bool
) -> None:
    def no_environment(*_: object, **__: object) -> None:
        raise AssertionError("an environment was built")

    monkeypatch.setattr("codemod.verify.session.release_environment", no_environment)
    checkout = _tree(tmp_path, modeling=modeling)
    before = {p.name: p.read_bytes() for p in checkout.root.glob("*.py")}
    options = RoundOptions(VerifyOptions(target="5.23.0", from_release="4.46.3"))
    assert idiom_round(_scanned(checkout, release), options) == IdiomRound()  # the real verifier: never called
    assert {p.name: p.read_bytes() for p in checkout.root.glob("*.py")} == before


def test_a_stopped_round_leaves_the_tree_as_it_was(tmp_path: Path) -> None:
    checkout = _tree(tmp_path)
    before = (checkout.root / MODELING).read_bytes()
    with pytest.raises(Interrupted, match="put back the 1 files"):
        _round(checkout, Verifier(raises=KeyboardInterrupt()))
    assert (checkout.root / MODELING).read_bytes() == before
    status = subprocess.run(["git", "-C", str(checkout.root), "status", "--porcelain"], capture_output=True, text=True)
    assert status.stdout == ""


def test_a_repair_candidate_unverified_puts_its_file_back_even_with_keep_unverified(tmp_path: Path) -> None:
    # the retry plans what the target itself breaks (analyse.across_releases): kept only where verified
    checkout = _tree(tmp_path)
    before = (checkout.root / MODELING).read_bytes()
    candidate = f"{MODELING}::LegacyLlamaForCausalLM"
    options = dataclasses.replace(OPTIONS, keep_unverified=True, proven_only=frozenset({candidate}))
    done = _round(checkout, Verifier({MODELING: Verdict.UNVERIFIED}), options)
    (fixed,) = done.files
    assert not fixed.kept
    assert (checkout.root / MODELING).read_bytes() == before


def test_a_config_file_that_went_back_with_a_model_file_is_tried_again_with_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """StableLM-epoch's shape: its model reads ``config.pad_token_id``, which its config class does not take, so
    the config file gets TB007's fix beside the model file's; both go back in the first round (the override still
    cuts the ids), and the retry with the override's plan must carry the config file's fix too."""
    checkout = _tree(tmp_path)
    config = checkout.root / "configuration_legacy_llama.py"
    text = (
        config.read_text()
        .replace("        pad_token_id=0,\n", "")
        .replace("            pad_token_id=pad_token_id,\n", "")
    )
    config.write_text(text)
    subprocess.run(["git", "-C", str(checkout.root), "commit", "-qam", "no pad"], check=True, capture_output=True)
    verifier = Verifier({MODELING: Verdict.CRASHED}, later={MODELING: Verdict.REPAIRS})
    rounds, _ = _rounds(checkout, verifier, monkeypatch)
    outcome = {f.path: f.kept for f in rounds.files}
    assert outcome == {"configuration_legacy_llama.py": True, MODELING: True}
    assert "pad_token_id = None" in config.read_text()
