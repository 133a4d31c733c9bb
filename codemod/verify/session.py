"""Which classes a change touches, and one verification run over them (the parent-side entry point).

``verify_change`` takes the checkout, the base revision and the tree with the change, works out the
environment and the worktree, runs ``runner.verify_targets`` and returns a ``VerifyReport``.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from importlib.util import decode_source
from pathlib import Path

from codemod import git
from codemod.analyse.classify import Action, Finding
from codemod.analyse.index import Override
from codemod.analyse.inheritors import inheritors
from codemod.analyse.scan import ScanResult
from codemod.checkout import Checkout
from codemod.contracts import OverrideId, Verdict
from codemod.environment import ensure_environment
from codemod.sources import FileKind, file_kind, model_name
from codemod.transform.plan import MIXIN_KEYS, Plan, kept_inputs, own_inputs_read
from codemod.verify.compare import ClassVerdict
from codemod.verify.options import VerifyOptions
from codemod.verify.owntests import OwnTestsVerdict, failing_models, models_with_tests, verify_own_tests
from codemod.verify.runner import (
    Across,
    Progress,
    Side,
    Target,
    VerificationError,
    module_of,
    verify_targets,
)
from codemod.verify.sides import TreeModule, release_environment, tree_module, tree_side
from codemod.verify.users import user_targets

METHOD = "prepare_inputs_for_generation"


@dataclasses.dataclass(frozen=True)
class VerifyReport:
    verdicts: tuple[ClassVerdict, ...]
    targets: tuple[Target, ...]
    #: changed overrides that are not run themselves, and why (a modular source: its generated class is)
    not_run: tuple[tuple[str, str], ...]
    device: str
    python: str
    seconds: float
    base: str
    #: the checkout's own generate tests, before and after, per model that has them
    own_tests: tuple[OwnTestsVerdict, ...] = ()

    def verdict_of(self, override_id: str) -> ClassVerdict | None:
        return next((v for v in self.verdicts if v.override_id == override_id), None)

    @property
    def classes_per_minute(self) -> float:
        return 60 * len(self.verdicts) / self.seconds if self.seconds else 0.0


def targets_from_plan(result: ScanResult, plan: Plan) -> tuple[list[Target], list[tuple[str, str]]]:
    """The model classes a plan changes (deleted or reduced overrides), and those it cannot run."""
    by_id = result.index.by_id()
    findings: dict[str, Finding] = {f.override.id: f for f in result.findings}
    targets: list[Target] = []
    not_run: list[tuple[str, str]] = []
    for override_id, action in plan.actions:
        if action is Action.KEEP:
            continue
        o = by_id[override_id]
        finding = findings.get(override_id)
        needs = tuple(kept_inputs(o, finding.extras)) if finding is not None else ()
        module = importable_module(result.index.checkout, o.file)
        if o.kind is FileKind.MODULAR:
            not_run.append((override_id, "a modular source: the class generated from it is verified"))
        elif o.kind is FileKind.GENERATION:
            not_run.append((override_id, "a GenerationMixin subclass: the models using it are verified"))
        elif module is None:
            not_run.append((override_id, "not in a transformers package"))
        else:
            targets.append(Target(override_id, module, o.class_name, o.model or "", needs=needs))
    return with_dependents(result, targets, not_run)


def with_dependents(
    result: ScanResult, targets: list[Target], not_run: list[tuple[str, str]]
) -> tuple[list[Target], list[tuple[str, str]]]:
    """``targets`` and the classes that run their changed code too: those that inherit it (each needing what the
    override it inherits needs) and the composites that generate through one; ``not_run`` and those not run."""
    needs_of = {t.override_id: t.needs for t in targets}
    inheriting, not_run_inheriting = inheriting_targets(result, [t.override_id for t in targets], needs_of)
    return targets + inheriting + user_targets(result, targets + inheriting), not_run + not_run_inheriting


def inheriting_targets(
    result: ScanResult,
    changed: Sequence[str],
    needs_of: Mapping[str, tuple[frozenset[str], ...]] | None = None,
) -> tuple[list[Target], list[tuple[str, str]]]:
    """The classes that take a changed override from a base (see ``inheritors.inheritors``), run too; each needs what
    the override it inherits needs (``needs_of``: override id -> ``Target.needs``), since it runs that code. And
    those not run, with why: a class of a modular source inherits only there (4.57's Gemma3n from PaliGemma,
    PerceptionLM from LLaVA); the class the converter generates from it has bases of its own (and importing a
    source can fail: 4.57's Gemma3n's output classes have no docstring sections)."""
    checkout = result.index.checkout
    out: list[Target] = []
    not_run: list[tuple[str, str]] = []
    for found in inheritors(result.index, changed):
        override_id = OverrideId.of(found.file, found.class_name)
        if file_kind(Path(found.file)) is FileKind.MODULAR:
            not_run.append(
                (
                    override_id,
                    "a modular source, where it inherits the changed override: the class generated from it does not",
                )
            )
            continue
        module = importable_module(checkout, found.file)
        if module is not None:
            out.append(
                Target(
                    override_id,
                    module,
                    found.class_name,
                    model_name(checkout, checkout.root / found.file) or "",
                    found.inherits_from,
                    (needs_of or {}).get(found.inherits_from, ()),
                )
            )
    return out, not_run


def importable_module(checkout: Checkout, path: str) -> str | None:
    """The dotted module a verification worker imports ``path`` (relative to the checkout) as."""
    if checkout.is_tree:
        return tree_module(checkout.root, path).module
    return module_of(path)


#: a class's method: its AST dump ("" where the class has none), the dumps of its body's statements, and the node
Method = tuple[str, tuple[str, ...], ast.FunctionDef | None]


def methods_by_class(text: str) -> dict[str, Method]:
    """Each top-level class's ``prepare_inputs_for_generation`` as an AST dump ("" for a class without one), with
    the dumps of its body's statements: comparisons that formatting and comments do not change."""
    methods: dict[str, Method] = {}
    for node in ast.parse(text).body:
        if isinstance(node, ast.ClassDef):
            found = next(
                (item for item in node.body if isinstance(item, ast.FunctionDef) and item.name == METHOD), None
            )
            methods[node.name] = (
                ("", (), None) if found is None else (ast.dump(found), tuple(ast.dump(s) for s in found.body), found)
            )
    return methods


def _own_inputs_handled(method: ast.FunctionDef | None, changed: set[str]) -> list[frozenset[str]]:
    """For the statements of ``method`` a change touched (their dumps in ``changed``: the old code's it removed or
    rewrote, the new code's it added), the model's own optional inputs (parameters defaulting to None that no
    mixin prepares) that each handles, a group for each that handles any: what ``own_inputs_read`` gives for the
    statements it kept. A parameter only passed on under its own name (``"head_mask": head_mask``,
    ``head_mask=head_mask``) is not handled: the mixin passes it on too, and a run that cannot give it (a model
    whose attention refuses head masks) must not stop a verdict."""
    if method is None:
        return []
    arguments = method.args
    named = [*arguments.posonlyargs, *arguments.args]
    defaults = dict(
        zip([a.arg for a in named][len(named) - len(arguments.defaults) :], arguments.defaults, strict=False)
    )
    defaults.update(
        {a.arg: d for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=False) if d is not None}
    )
    optional = {
        name
        for name, default in defaults.items()
        if isinstance(default, ast.Constant) and default.value is None and name not in MIXIN_KEYS
    }
    groups = []
    for statement in method.body:
        if ast.dump(statement) not in changed:
            continue
        passed_on = {id(value) for value in _passed_on(statement)}
        groups.append(
            frozenset(
                n.id
                for n in ast.walk(statement)
                if isinstance(n, ast.Name) and n.id in optional and id(n) not in passed_on
            )
        )
    return [g for g in groups if g]


def _passed_on(statement: ast.stmt) -> list[ast.Name]:
    """The names ``statement`` only hands on under their own name: a dict entry, a keyword, a key set."""
    found: list[ast.Name] = []
    for node in ast.walk(statement):
        if isinstance(node, ast.Dict):
            found += [
                v
                for k, v in zip(node.keys, node.values, strict=False)
                if isinstance(k, ast.Constant) and isinstance(v, ast.Name) and v.id == k.value
            ]
        elif isinstance(node, ast.keyword):
            found += [node.value] if isinstance(node.value, ast.Name) and node.value.id == node.arg else []
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Name):
            found += (
                [node.value]
                if any(
                    isinstance(t, ast.Subscript)
                    and isinstance(t.slice, ast.Constant)
                    and t.slice.value == node.value.id
                    for t in node.targets
                )
                else []
            )
    return found


def targets_from_diff(result: ScanResult, base: str) -> tuple[list[Target], list[tuple[str, str]]]:
    """The classes whose ``prepare_inputs_for_generation`` differs between ``base`` and the working tree.

    ``result`` is the scan of the *base* revision's overrides (those are what a change can touch).
    Each file is read once per side, and parsed only when its bytes changed.
    """
    from codemod.transform.idioms.tree import fixes_idioms

    checkout = result.index.checkout
    targets: list[Target] = []
    not_run: list[tuple[str, str]] = []
    by_file: dict[str, list[Override]] = {}
    for finding in result.findings:
        by_file.setdefault(finding.override.file, []).append(finding.override)
    for file, overrides in by_file.items():
        old = git.show(checkout.root, base, file)
        new_path = checkout.root / file
        new = new_path.read_bytes() if new_path.is_file() else b""
        if old is None or old == new:
            continue
        old_methods, new_methods = (
            methods_by_class(decode_source(old)),
            methods_by_class(decode_source(new) if new else ""),
        )
        # an idiom fix (codemod.transform.idioms) changes how every class of the file generates, not one method
        whole_file = checkout.is_tree and fixes_idioms(decode_source(old), decode_source(new) if new else "")
        for o in overrides:
            (old_method, old_body, old_node), (new_method, new_body, new_node) = (
                methods.get(o.class_name, ("", (), None)) for methods in (old_methods, new_methods)
            )
            if old_method == new_method and not whole_file:
                continue
            module = importable_module(checkout, o.file)
            if o.kind not in (FileKind.MODELING, FileKind.OTHER) or module is None:
                not_run.append((o.id, f"{o.kind.value} file: verified through the generated model classes"))
                continue
            needs = change_needs(o, (old_method, old_body, old_node), (new_method, new_body, new_node))
            targets.append(Target(o.id, module, o.class_name, o.model or "", needs=needs))
    return with_dependents(result, targets, not_run)


def change_needs(override: Override, old: Method, new: Method) -> tuple[frozenset[str], ...]:
    """What a verdict on a change of ``override``'s method (``old`` -> ``new``, as ``methods_by_class`` reads them) needs a
    compared run to have given, one of each group: what the statements the change kept read of the model's own
    inputs, what those it removed or rewrote handled (the new code must do with the inputs what they did), and what
    those it added handle."""
    (_, old_body, old_node), (_, new_body, new_node) = old, new
    still, before = set(new_body), set(old_body)
    groups = own_inputs_read(override, [i for i, statement in enumerate(old_body) if statement in still])
    groups += _own_inputs_handled(old_node, before - still) + _own_inputs_handled(new_node, still - before)
    return tuple(dict.fromkeys(groups))


def with_written_needs(result: ScanResult, targets: Sequence[Target], originals: Mapping[str, bytes]) -> list[Target]:
    """``targets`` (from a plan) each needing also what ``codemod verify`` on the written tree would ask of it
    (``change_needs`` between ``originals``, path -> the bytes before the change, and the file as written): a plan
    asks only for what the statements a reduction keeps read, so a hook member trimmed in place (5.23's
    Kosmos-2.5, its image handling after ``super()`` untouched) passed ``apply --verify`` on runs without its
    images where ``codemod verify`` on the same tree found them missing. A class that inherits a changed override
    needs what that override's change needs."""
    by_id = result.index.by_id()
    parsed: dict[str, tuple[dict[str, Method], dict[str, Method]]] = {}

    def written(o: Override) -> tuple[frozenset[str], ...]:
        old = originals.get(o.file)
        if old is None:
            return ()
        if o.file not in parsed:
            path = result.index.checkout.root / o.file
            new = path.read_bytes() if path.is_file() else b""
            parsed[o.file] = (
                methods_by_class(decode_source(old)),
                methods_by_class(decode_source(new) if new else ""),
            )
        old_methods, new_methods = parsed[o.file]
        empty: Method = ("", (), None)
        before, after = old_methods.get(o.class_name, empty), new_methods.get(o.class_name, empty)
        return () if before[0] == after[0] else change_needs(o, before, after)

    out = []
    for target in targets:
        source = by_id.get(OverrideId(target.inherits_from or target.override_id))
        extra = written(source) if source is not None else ()
        out.append(dataclasses.replace(target, needs=tuple(dict.fromkeys([*target.needs, *extra]))))
    return out


def shard(targets: Sequence[Target], spec: str | None) -> list[Target]:
    """``I/N``: every N-th target starting at the I-th (1-based), for spreading a run over CI jobs."""
    if not spec:
        return list(targets)
    index, _, count = spec.partition("/")
    if not (index.isdigit() and count.isdigit() and 1 <= int(index) <= int(count)):
        raise VerificationError(f"--shard {spec}: want I/N with 1 <= I <= N")
    i, n = int(index), int(count)
    return [t for position, t in enumerate(targets) if position % n == i - 1]


def verify_change(
    checkout: Checkout,
    targets: Sequence[Target],
    *,
    options: VerifyOptions,
    base: str = "HEAD",
    new_root: Path | None = None,
    old_root: Path | None = None,
    not_run: Sequence[tuple[str, str]] = (),
    progress: Progress | None = None,
    say: Callable[[str], None] | None = None,
) -> VerifyReport:
    """Verify ``targets``: ``base`` (a revision of the checkout's git repo) against ``new_root``
    (default: the working tree); ``old_root``: the base already checked out by the caller (a
    worktree it holds, so that one run makes one), else a worktree of ``base`` is made. When the checkout has
    ``tests/models/<m>/``, that model's own generate tests run before and after too; a regression fails every
    changed class of the model (a test failure cannot be traced to one class).

    Model code outside transformers (a tree or a file) runs on releases (``options.target`` and
    ``options.from_release``). Across two releases the generated tokens and scores must match; the prepared
    inputs are reported, not required to match (``generate()`` itself prepares other keys in another release)."""
    if checkout.git is None:
        raise VerificationError(
            f"{checkout.root} is not a git work tree: verification compares against a base revision"
        )
    trees = _Trees(base, new_root or checkout.root, old_root)
    if checkout.is_tree:
        return _verify_tree(checkout, targets, options, trees, not_run=not_run, progress=progress, say=say)
    started = time.perf_counter()
    tested = (
        models_with_tests(checkout.tests_dir, [t.model for t in targets])
        if options.own_tests and checkout.tests_dir is not None
        else []
    )
    # the test dependencies also let the workers import the checkout's model testers (tiny configs)
    environment = ensure_environment(
        checkout, options.device, python=options.python, tests=checkout.tests_dir is not None, progress=say
    )
    with _base_tree(checkout, base, old_root) as old_tree:
        verdicts = verify_targets(
            targets,
            old=Side.checkout(environment.python, old_tree),
            new=Side.checkout(environment.python, trees.new),
            options=options,
            progress=progress,
        )
        own = (
            verify_own_tests(
                environment.python,
                old_tree,
                trees.new,
                tested,
                jobs=options.jobs,
                timeout=options.own_tests_timeout,
                progress=say,
            )
            if tested
            else []
        )
    return VerifyReport(
        tuple(_failing_own_tests(targets, verdicts, own)),
        tuple(targets),
        tuple(not_run),
        options.device,
        str(environment.python),
        time.perf_counter() - started,
        base,
        tuple(own),
    )


@dataclasses.dataclass(frozen=True)
class _Trees:
    """The two trees a run compares: the ``base`` revision (``old``: already checked out by the caller, else
    a worktree is made) and the tree with the change (``new``)."""

    base: str
    new: Path
    old: Path | None


def _failing_own_tests(
    targets: Sequence[Target], verdicts: Sequence[ClassVerdict], own: Sequence[OwnTestsVerdict]
) -> list[ClassVerdict]:
    """The verdicts with a regression of the model's own tests failing each identical class of that model."""
    failed = failing_models(own)
    return [
        dataclasses.replace(
            v,
            verdict=Verdict.CRASHED if "could not run" in failed[t.model] else Verdict.DIFFERS,
            detail=f"{v.detail}; {failed[t.model]}".strip("; "),
        )
        if t.model in failed and v.verdict is Verdict.IDENTICAL
        else v
        for t, v in zip(targets, verdicts, strict=False)
    ]


#: the release model code outside transformers is verified on when no release is named or found (``api`` passes
#: the one a tree runs with, as scan and diff judge it): the first with a generic ``prepare_inputs_for_generation``
DEFAULT_TREE_TARGET = "4.46.3"


def _base_tree(checkout: Checkout, base: str, held: Path | None) -> contextlib.AbstractContextManager[Path]:
    """The base revision's tree: the one the caller holds, or a worktree made (and removed) here."""
    if held is not None:
        return contextlib.nullcontext(held)
    return git.worktree(checkout.root, base, error=VerificationError)


def _verify_tree(
    checkout: Checkout,
    targets: Sequence[Target],
    options: VerifyOptions,
    trees: _Trees,
    *,
    not_run: Sequence[tuple[str, str]],
    progress: Progress | None,
    say: Callable[[str], None] | None,
) -> VerifyReport:
    """A tree on releases: the old code on ``--from`` (the reference), the new code on the target (the
    candidate) and, across two releases, the old code on the target too (the baseline, ``verify.releases``).
    Nothing is built when nothing is left to verify."""
    started = time.perf_counter()
    target = options.target or DEFAULT_TREE_TARGET
    old_release = options.from_release or target
    where = f"{old_release} -> {target}" if old_release != target else target
    if not targets:
        return VerifyReport((), (), tuple(not_run), options.device, f"(transformers {where})", 0.0, trees.base)
    device, python, requirements = options.device, options.python, options.requirements
    new_env, new_src = release_environment(target, device, python=python, requirements=requirements, progress=say)
    old_env, old_src = (
        (new_env, new_src)
        if old_release == target
        else release_environment(old_release, device, python=python, requirements=requirements, progress=say)
    )
    modules = [tree_module(checkout.root, OverrideId.parse(t.override_id).file) for t in targets]
    prefix = git.prefix(checkout.root)
    with (
        _base_tree(checkout, trees.base, trees.old) as old_repo,
        tree_side(old_env.python, old_src, old_repo / prefix, modules) as old_side,
        tree_side(new_env.python, new_src, trees.new, modules) as new_side,
        _baseline(old_release != target, new_env.python, new_src, old_repo / prefix, modules) as baseline,
    ):
        verdicts = verify_targets(
            targets,
            old=old_side,
            new=new_side,
            options=options,
            progress=progress,
            across=Across(target, baseline) if old_release != target else None,
        )
    return VerifyReport(
        tuple(verdicts),
        tuple(targets),
        tuple(not_run),
        device,
        f"{new_env.python} (transformers {where})",
        time.perf_counter() - started,
        trees.base,
    )


def _baseline(
    wanted: bool, python: Path, library_src: Path, old_tree: Path, modules: Sequence[TreeModule]
) -> contextlib.AbstractContextManager[Side | None]:
    """The old code on the target's release (``tree_side``), when the old side runs on another release."""
    return tree_side(python, library_src, old_tree, modules) if wanted else contextlib.nullcontext()
