"""What is held back is a typed record (``contracts.Held``): a subject, a cause and the text shown for it.

The plan's held overrides, the shards settling drops, the changes verification reverts and the models ``pr``
withholds all say why with a ``HeldCause``. These tests check that every cause has a place that makes it,
that each place gives its own (on the fixtures, as the pipeline runs), and that no record is an
``(id, text)`` pair any more.
"""

from __future__ import annotations

import ast
import dataclasses
import typing
from pathlib import Path

import pytest

from codemod.analyse.classify import Action
from codemod.analyse.copies import CopyCheck
from codemod.analyse.scan import ScanResult, scan
from codemod.checkout import resolve
from codemod.contracts import CopyStatus, ExtraHow, Held, HeldCause, OriginKind, Verdict
from codemod.migrate import MigrationOptions, MigrationRun, run_migration_on
from codemod.migration import Migration
from codemod.publish.pr.plan import PrPlan, PrReport
from codemod.transform import apply
from codemod.transform.apply import Changes, compute_changes, settle
from codemod.transform.plan import EditKind, Plan, initial_plan

from .conftest import FIXTURES, MINI_CHECKOUT, copy_fixture

CODEMOD = Path(__file__).resolve().parent.parent / "codemod"
PKG = "src/transformers/models"
OTTER = f"{PKG}/otter/modeling_otter.py::OtterForCausalLM"
PUFFIN_CAUSAL = f"{PKG}/puffin/modeling_puffin.py::PuffinForCausalLM"


def scan_tree(root: Path) -> ScanResult:
    return scan(resolve(root, with_git=False), use_cache=False, jobs=1)


@pytest.fixture(scope="module")
def mini(tmp_path_factory: pytest.TempPathFactory) -> ScanResult:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CODEMOD_CACHE_DIR", str(tmp_path_factory.mktemp("cache")))
        return scan_tree(copy_fixture(MINI_CHECKOUT, tmp_path_factory.mktemp("held") / "mini_checkout"))


@pytest.fixture(autouse=True)
def _private_cache(codemod_cache: Path) -> None:
    """Every test scans with a private cache dir."""


def causes(held: tuple[Held, ...]) -> dict[str, HeldCause]:
    return {h.subject: h.cause for h in held}


# --------------------------------------------------------------------------------------------- the records


def _cause_argument(call: ast.Call) -> ast.expr | None:
    """The cause a ``Held(...)`` or ``….hold(...)`` call passes (its second argument, or ``cause=``)."""
    named = {k.arg: k.value for k in call.keywords}
    if "cause" in named:
        return named["cause"]
    return call.args[1] if len(call.args) > 1 else None


def _construction_sites() -> list[tuple[str, int, ast.expr | None]]:
    sites = []
    for path in sorted(CODEMOD.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.Call):
                continue
            func = node.func
            if (isinstance(func, ast.Name) and func.id == "Held") or (
                isinstance(func, ast.Attribute) and func.attr == "hold"
            ):
                sites.append((path.relative_to(CODEMOD).as_posix(), node.lineno, _cause_argument(node)))
    return sites


def test_every_construction_site_names_its_cause_and_every_cause_has_one() -> None:
    """A record is made with ``HeldCause.X`` (or the cause it was handed, or that of the record it re-states),
    never a string; and each cause is made somewhere, so none is dead vocabulary."""
    named: set[str] = set()
    offences = []
    for where, line, cause in _construction_sites():
        if isinstance(cause, ast.Attribute) and isinstance(cause.value, ast.Name) and cause.value.id == "HeldCause":
            named.add(cause.attr)
        elif not (
            (isinstance(cause, ast.Attribute) and cause.attr == "cause")
            or (isinstance(cause, ast.Name) and cause.id == "cause")
        ):  # ``hold``'s own parameter
            offences.append(f"{where}:{line}")
    assert offences == []
    assert named == {c.name for c in HeldCause}


@pytest.mark.parametrize(
    ("owner", "field"),
    [
        (Plan, "held"),
        (Changes, "dropped"),
        (MigrationRun, "reverted"),
        (Migration, "reverted"),
        (PrPlan, "withheld"),
        (PrPlan, "reverted"),
        (PrReport, "withheld"),
        (PrReport, "reverted"),
    ],
)
def test_what_is_held_back_is_a_tuple_of_records(owner: type, field: str) -> None:
    assert typing.get_type_hints(owner)[field] == tuple[Held, ...]


# --------------------------------------------------------------------------------------------- the plan


def test_a_generated_override_whose_method_comes_from_nowhere_it_can_follow_is_untraced(mini: ScanResult) -> None:
    """A generated file's method that no class of the run holds (a removal stub, an unknown origin) stays."""

    def untraced(f):
        if f.override.id != PUFFIN_CAUSAL:
            return f
        assert f.override.generated_from is not None
        origin = dataclasses.replace(f.override.generated_from, kind=OriginKind.UNKNOWN, detail="not found")
        return dataclasses.replace(f, override=dataclasses.replace(f.override, generated_from=origin))

    plan = initial_plan(dataclasses.replace(mini, findings=tuple(map(untraced, mini.findings))))
    assert (
        Held(PUFFIN_CAUSAL, HeldCause.UNTRACED, "generated file; where its method comes from is unknown: not found")
        in plan.held
    )


def test_a_reduction_that_cannot_be_written_is_not_recreatable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from codemod.transform import planner as plan_module

    result = scan_tree(copy_fixture(FIXTURES / "foreign", tmp_path / "foreign"))
    reduced = {
        f.override.id
        for f in result.findings
        if f.action is Action.REDUCE and not any(e.how is ExtraHow.SWAP_DELEGATE for e in f.extras)
    }
    assert reduced
    monkeypatch.setattr(plan_module, "reduce_override", lambda *args, **kwargs: None)
    held = causes(initial_plan(result).held)
    assert {held[oid] for oid in reduced} == {HeldCause.NOT_RECREATABLE}


def test_outside_transformers_a_refused_edit_and_an_unproven_one_say_so(tmp_path: Path) -> None:
    result = scan_tree(copy_fixture(FIXTURES / "foreign", tmp_path / "foreign"))
    by_class = {h.subject.rpartition("::")[2]: h for h in compute_changes(result, hold_unproven=True).plan.held}
    assert by_class["MaskedForMaskedLM"].cause is HeldCause.REFUSED
    assert by_class["MaskedForMaskedLM"].detail.startswith("refused: ")
    assert by_class["FewerForCausalLM"].cause is HeldCause.UNPROVEN
    assert by_class["FewerForCausalLM"].detail.startswith("unproven without --verify")


# --------------------------------------------------------------------------------------------- settling


def test_a_file_that_would_not_compile_drops_its_shards(mini: ScanResult, monkeypatch: pytest.MonkeyPatch) -> None:
    victim = f"{PKG}/otter/modeling_otter.py"
    real = apply._rewrite_job

    def broken(job):
        done = real(job)
        return dataclasses.replace(done, error="SyntaxError: invalid syntax") if done.path == victim else done

    monkeypatch.setattr(apply, "_rewrite_job", broken)
    changes = settle(mini, initial_plan(mini), jobs=1)
    assert {h.cause for h in changes.dropped} == {HeldCause.WOULD_NOT_COMPILE}
    assert [h.detail for h in changes.dropped] == [f"{victim}: SyntaxError: invalid syntax"]
    assert causes(changes.plan.held)[OTTER] is HeldCause.WOULD_NOT_COMPILE
    assert changes.plan.action_of(OTTER) is Action.KEEP


def test_a_mixin_that_would_not_take_the_implementation_drops_every_shard(
    mini: ScanResult, monkeypatch: pytest.MonkeyPatch
) -> None:
    plan = initial_plan(mini)
    assert plan.hoist is not None
    mixin, real = plan.hoist.file, apply._new_flakes

    def flaky_mixin(rewrites, jobs):
        found = real(rewrites, jobs)
        if any(r.path == mixin for r in rewrites):
            found[mixin] = Held(mixin, HeldCause.WOULD_ADD_FLAKES, "the rewrite would add undefined name 'x'")
        return found

    monkeypatch.setattr(apply, "_new_flakes", flaky_mixin)
    changes = settle(mini, plan, jobs=1)
    assert changes.plan.shards == () and changes.plan.hoist is None
    assert {h.subject for h in changes.dropped} == {s.id for s in plan.shards}
    assert {h.cause for h in (*changes.dropped, *changes.plan.held)} == {HeldCause.HOIST_FAILS}


def test_a_copy_marker_that_would_break_drops_its_shard(mini: ScanResult, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    real = apply.copies.check_copy

    def stale_once(*args, **kwargs):
        calls.append(1)
        if len(calls) == 1:
            return CopyCheck(CopyStatus.STALE, "the copy drifted", None, None, None)
        return real(*args, **kwargs)

    monkeypatch.setattr(apply.copies, "check_copy", stale_once)
    changes = settle(mini, initial_plan(mini), jobs=1)
    assert changes.dropped and {h.cause for h in changes.dropped} == {HeldCause.COPY_WOULD_BREAK}
    assert all("would become stale: the copy drifted" in h.detail for h in changes.dropped)
    assert {h.cause for h in changes.plan.held} == {HeldCause.COPY_WOULD_BREAK}


def test_a_reduction_longer_than_the_method_drops_its_shard(tmp_path: Path) -> None:
    """What repairs add to a reduction can make it longer than the override it replaces: no reduction then."""
    root = copy_fixture(MINI_CHECKOUT, tmp_path / "mini_checkout")
    otter = (root / PKG / "otter" / "modeling_otter.py").read_text(encoding="utf-8")
    (root / PKG / "carp").mkdir()
    (root / PKG / "carp" / "__init__.py").write_text("", encoding="utf-8")
    (root / PKG / "carp" / "modeling_carp.py").write_text(
        otter.replace("Otter", "Carp").replace(
            "        return model_inputs",
            '        model_inputs["output_router_logits"] = True\n        return model_inputs',
        ),
        encoding="utf-8",
    )
    mini = scan_tree(root)
    plan = initial_plan(mini)
    reduce = next(e for e in plan.edits() if e.kind is EditKind.REDUCE and e.class_name == "CarpForCausalLM")
    drops = "\n".join(f'model_inputs.pop("k{i}", None)' for i in range(40))
    padded = reduce.text.replace("return model_inputs", f"{drops}\nreturn model_inputs")
    shards = tuple(
        dataclasses.replace(s, edits=tuple(dataclasses.replace(e, text=padded) if e is reduce else e for e in s.edits))
        for s in plan.shards
    )
    changes = settle(mini, dataclasses.replace(plan, shards=shards), jobs=1)
    assert {h.cause for h in changes.dropped} == {HeldCause.LONGER}
    assert all("it would be" in h.detail for h in changes.dropped)
    assert reduce.override_id not in {m for s in changes.plan.shards for m in s.members}


def test_the_hook_diffs_leave_out_what_is_no_hook_member(mini: ScanResult) -> None:
    from codemod.transform.hook_changes import member_plan
    from codemod.transform.hooks import mine

    report = mine(mini)
    assert not report.applied()  # no hook: every change is left out
    plan = member_plan(mini, report)
    assert plan.shards == () and plan.held
    assert {h.cause for h in plan.held} == {HeldCause.NOT_A_HOOK_MEMBER}


def test_a_hook_too_few_models_would_keep_is_reverted(tmp_path: Path) -> None:
    from codemod.transform.hooks import MIN_MODELS, failing_clusters, mine, plan_with_hooks

    result = scan_tree(copy_fixture(FIXTURES / "hooks_checkout", tmp_path / "hooks_checkout"))
    report = mine(result)
    plan = plan_with_hooks(result, report)
    cluster = min(report.applied(), key=lambda c: len(c.applicable_models))
    # members of one model each, enough of them failing that fewer than MIN_MODELS are left
    failing = len(cluster.applicable_models) - MIN_MODELS + 1
    by_model = {m.model: m.override for m in cluster.members if m.applicable}
    assert len(by_model) == len(cluster.applicable_models)
    failed = list(by_model.values())[:failing]
    reverted = failing_clusters(plan, report, failed)
    assert reverted and {h.cause for h in reverted.values()} == {HeldCause.HOOK_TOO_SMALL}
    assert all(h.subject == shard for shard, h in reverted.items())


# --------------------------------------------------------------------------------------------- verification


def test_a_class_that_does_not_verify_is_reverted_and_its_shard_with_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from codemod import migrate
    from codemod.verify.compare import ClassVerdict
    from codemod.verify.session import VerifyReport

    def verify_change(checkout, targets, **kwargs):
        verdicts = tuple(
            ClassVerdict(
                t.override_id,
                Verdict.DIFFERS if t.override_id == OTTER else Verdict.IDENTICAL,
                detail="greedy: tokens differ",
            )
            for t in targets
        )
        return VerifyReport(verdicts, tuple(targets), (), "cpu", "python", 1.0, "HEAD")

    monkeypatch.setattr(migrate, "verify_change", verify_change)
    run = run_migration_on(resolve(copy_fixture(MINI_CHECKOUT, tmp_path / "mini_checkout"), with_git=False))
    reverted = causes(run.reverted)
    assert reverted[OTTER] is HeldCause.NOT_VERIFIED
    assert next(h.detail for h in run.reverted if h.subject == OTTER) == "differs: greedy: tokens differ"
    assert {c for oid, c in reverted.items() if oid != OTTER} == {HeldCause.WITH_ITS_SHARD}
    assert [h.subject for h in run.reverted] == sorted(reverted)
    assert run.migration().reverted == run.reverted
    assert {h.detail for h in run.final.plan.held} == {"reverted: verification failed"}


def test_a_class_others_are_verified_inside_is_changed_only_in_a_run_of_its_own(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A context class (as EncoderDecoderModel is: every decoder head is also verified as its decoder) is held
    back while the run changes other classes too, so that no decoder is judged inside a changed wrapper; once the
    rest is settled, a run of its own changes and verifies it, around the decoders as they stay. Without that
    run (``contexts_after=False``, as the run of its own is itself) it stays held back, the reason naming the
    command that would verify it."""
    from codemod import migrate
    from codemod.verify.compare import ClassVerdict
    from codemod.verify.session import VerifyReport

    verified: list[set[str]] = []

    def verify_change(checkout, targets, **kwargs):
        verified.append({t.override_id for t in targets})
        return VerifyReport(
            tuple(ClassVerdict(t.override_id, Verdict.IDENTICAL) for t in targets),
            tuple(targets),
            (),
            "cpu",
            "python",
            1.0,
            "HEAD",
        )

    monkeypatch.setattr(migrate, "verify_change", verify_change)
    monkeypatch.setattr(migrate, "CONTEXT_CLASSES", ("OtterForCausalLM",))
    held_run = run_migration_on(
        resolve(copy_fixture(MINI_CHECKOUT, tmp_path / "held"), with_git=False), MigrationOptions(contexts_after=False)
    )
    assert OTTER not in verified[0] and len(verified[0]) > 1 and len(verified) == 1
    held = {h.subject: h for h in held_run.final.plan.held}
    assert held[OTTER].cause is HeldCause.VERIFIED_ALONE and "--only otter" in held[OTTER].detail
    # Otter is a copy source here: its copies are held back with it, its shard
    alone = {s for s, h in held.items() if h.cause is HeldCause.VERIFIED_ALONE}

    verified.clear()
    run = run_migration_on(resolve(copy_fixture(MINI_CHECKOUT, tmp_path / "all"), with_git=False))
    assert OTTER not in verified[0] and len(verified[0]) > 1 and len(verified) == 2
    # (with the classes that reach the held overrides: the modular Puffin's)
    assert alone <= verified[-1] and not alone & verified[0]
    assert not alone & {h.subject for h in run.final.plan.held} and not run.reverted
    assert all(run.final.plan.action_of(oid) is not Action.KEEP for oid in alone)
    assert {v.override_id for v in run.report.verdicts} == verified[0] | verified[-1]
    # what the first run changed stays changed, and the held shard's change joins it
    assert {i for i, a in run.final.plan.actions if a is not Action.KEEP} == {
        i for i, a in held_run.final.plan.actions if a is not Action.KEEP
    } | alone


def test_a_context_class_that_fails_in_its_own_run_is_reverted_and_the_rest_stays(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The run of its own reverts the context class alone, with the reason verification gave; the first run's
    changes stay, and the file it shares with nothing else is back to its original text."""
    from codemod import migrate
    from codemod.verify.compare import ClassVerdict
    from codemod.verify.session import VerifyReport

    def verify_change(checkout, targets, **kwargs):
        verdicts = tuple(
            ClassVerdict(
                t.override_id,
                Verdict.DIFFERS if t.override_id == OTTER else Verdict.IDENTICAL,
                detail="greedy: prepared-inputs at step 0 key 'decoder_attention_mask'",
            )
            for t in targets
        )
        return VerifyReport(verdicts, tuple(targets), (), "cpu", "python", 1.0, "HEAD")

    monkeypatch.setattr(migrate, "verify_change", verify_change)
    monkeypatch.setattr(migrate, "CONTEXT_CLASSES", ("OtterForCausalLM",))
    root = copy_fixture(MINI_CHECKOUT, tmp_path / "all")
    otter_file = next(root.rglob("modeling_otter.py"))
    before = otter_file.read_bytes()
    run = run_migration_on(resolve(root, with_git=False))
    reverted = {h.subject: h for h in run.reverted}
    assert reverted[OTTER].cause is HeldCause.NOT_VERIFIED and "decoder_attention_mask" in reverted[OTTER].detail
    # its shard (the copies of it) goes back with it, and nothing else
    assert {h.cause for s, h in reverted.items() if s != OTTER} <= {HeldCause.WITH_ITS_SHARD}
    assert all(run.final.plan.action_of(oid) is Action.KEEP for oid in reverted)
    assert {h.cause for h in run.final.plan.held if h.subject == OTTER} == {HeldCause.NOT_VERIFIED}
    assert not any(h.cause is HeldCause.VERIFIED_ALONE for h in run.final.plan.held)
    assert otter_file.read_bytes() == before
    assert any(a is not Action.KEEP for _, a in run.final.plan.actions)


def test_a_repair_that_uncovers_the_next_difference_is_grown_and_verified_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """FSMT's deletion crashed on the first step (its forward requires input_ids, passed as None); once that was
    repaired it reached the second step, where the ids differ. Each round re-verifies the classes whose repair
    grew, with the union of what the rounds found, until one is identical or nothing new is found."""
    from codemod import migrate
    from codemod.contracts import Repair, ScenarioStatus
    from codemod.verify.compare import ClassVerdict, ScenarioOutcome
    from codemod.verify.session import VerifyReport

    found = [Repair(remove=("token_type_ids",)), Repair(set_none=("position_ids",))]
    verified: list[set[str]] = []

    def verify_change(checkout, targets, **kwargs):
        verified.append({t.override_id for t in targets})
        step = len(verified) - 1

        def verdict(oid: str) -> ClassVerdict:
            if oid != OTTER or step >= len(found):
                return ClassVerdict(oid, Verdict.IDENTICAL)
            return ClassVerdict(
                oid, Verdict.DIFFERS, (ScenarioOutcome("greedy", ScenarioStatus.DIFFERS, "keys", repair=found[step]),)
            )

        return VerifyReport(
            tuple(verdict(t.override_id) for t in targets), tuple(targets), (), "cpu", "python", 1.0, "HEAD"
        )

    monkeypatch.setattr(migrate, "verify_change", verify_change)
    run = run_migration_on(resolve(copy_fixture(MINI_CHECKOUT, tmp_path / "mini_checkout"), with_git=False))
    assert len(verified) == 3 and verified[1] == verified[2] == {OTTER}
    assert OTTER not in {h.subject for h in run.reverted}
    body = next(e.text for e in run.final.plan.edits() if e.override_id == OTTER and e.kind is EditKind.REDUCE)
    assert (
        'model_inputs.pop("token_type_ids", None)' in body and 'model_inputs.setdefault("position_ids", None)' in body
    )


def test_a_repair_is_verified_again_on_the_classes_that_inherit_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """5.23's Ernie 4.5 VL MoE: its alias subclass inherits the override, so it is verified too and differs with the
    class. The repair round re-verified the class alone (identical), while the alias kept its verdict on the code
    before the repair and reverted the class it inherits. A repair changes what every inheritor runs: they are
    verified again with it, and their new verdicts count."""
    from codemod import migrate
    from codemod.contracts import Repair, ScenarioStatus
    from codemod.verify.compare import ClassVerdict, ScenarioOutcome
    from codemod.verify.session import VerifyReport

    root = copy_fixture(MINI_CHECKOUT, tmp_path / "mini_checkout")
    otter = root / OTTER.split("::")[0]
    otter.write_text(otter.read_text() + "\n\nclass OtterAliasForCausalLM(OtterForCausalLM):\n    pass\n")
    alias = f"{PKG}/otter/modeling_otter.py::OtterAliasForCausalLM"
    verified: list[dict[str, str]] = []

    def verify_change(checkout, targets, **kwargs):
        verified.append({t.override_id: t.inherits_from for t in targets})
        if len(verified) > 1:
            return VerifyReport(
                tuple(ClassVerdict(t.override_id, Verdict.IDENTICAL, inherits_from=t.inherits_from) for t in targets),
                tuple(targets),
                (),
                "cpu",
                "python",
                1.0,
                "HEAD",
            )
        differs = (
            ScenarioOutcome("greedy", ScenarioStatus.DIFFERS, "keys", repair=Repair(remove=("token_type_ids",))),
        )
        return VerifyReport(
            tuple(
                ClassVerdict(t.override_id, Verdict.DIFFERS, differs, inherits_from=t.inherits_from)
                if OTTER in (t.override_id, t.inherits_from)
                else ClassVerdict(t.override_id, Verdict.IDENTICAL)
                for t in targets
            ),
            tuple(targets),
            (),
            "cpu",
            "python",
            1.0,
            "HEAD",
        )

    monkeypatch.setattr(migrate, "verify_change", verify_change)
    run = run_migration_on(resolve(root, with_git=False))
    assert verified[0][alias] == OTTER  # verified as a class that inherits the changed override
    assert verified[1] == {OTTER: "", alias: OTTER}
    assert OTTER not in {h.subject for h in run.reverted}
    assert {v.override_id: v.verdict for v in run.report.verdicts}[alias] is Verdict.IDENTICAL


def test_every_verification_round_asks_what_the_written_change_needs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The targets each round verifies carry what ``codemod verify`` on the written tree would ask of them
    (``session.with_written_needs``, measured by ``tests/test_targets_from_diff.py``), from the bytes every written
    file had before the change: a plan's needs alone miss statements a hook trim leaves in place."""
    from codemod import migrate
    from codemod.verify.compare import ClassVerdict
    from codemod.verify.session import VerifyReport

    root = copy_fixture(MINI_CHECKOUT, tmp_path / "mini_checkout")
    before = {path.relative_to(root).as_posix(): path.read_bytes() for path in root.rglob("*.py")}
    calls: list[tuple[dict[str, bytes], list]] = []
    real = migrate.with_written_needs

    def recording(result, targets, originals):
        out = real(result, targets, originals)
        calls.append((dict(originals), out))
        return out

    verified: list[list] = []

    def verify_change(checkout, targets, **kwargs):
        verified.append(list(targets))
        return VerifyReport(
            tuple(ClassVerdict(t.override_id, Verdict.IDENTICAL) for t in targets),
            tuple(targets),
            (),
            "cpu",
            "python",
            1.0,
            "HEAD",
        )

    monkeypatch.setattr(migrate, "with_written_needs", recording)
    monkeypatch.setattr(migrate, "verify_change", verify_change)
    run_migration_on(resolve(root, with_git=False))
    assert calls and [out for _, out in calls] == verified  # what each round verifies is what it asked, needs too
    originals, _ = calls[0]
    written = {
        path.relative_to(root).as_posix()
        for path in root.rglob("*.py")
        if before.get(path.relative_to(root).as_posix()) != path.read_bytes()
    }
    assert written and written <= set(originals)
    assert all(originals[path] == before[path] for path in written)  # the bytes before the change
