"""The checkout's own tests: a model's generation tests run before and after the change.

A git clone of transformers has ``tests/models/<model>/test_modeling_<model>.py``; its generation
tests (``pytest -k`` ``KEYWORD``: ``GenerationTesterMixin``'s greedy, sampling, beam, contrastive, assisted,
prompt-lookup, DoLa, left-padding and cache tests, plus the model's own) run on the base worktree and on the
changed tree, in the checkout's
environment with its test dependencies, the code under test on ``PYTHONPATH``. A test that passed
before and does not pass after is a regression; one that failed before may fail after (a release's
tests are not all green offline, on CPU), it is only counted.

Outcomes come from pytest's JUnit XML report (``--junitxml``), which pytest writes itself, with or
without pytest-xdist. Parsing and comparing are pure functions; only ``run_model_tests`` runs pytest.
"""

from __future__ import annotations

import dataclasses
import os
import signal
import subprocess
import tempfile
import time
import xml.etree.ElementTree as ElementTree
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypedDict

OUTCOMES = ("passed", "failed", "error", "skipped")
#: the tests that run ``prepare_inputs_for_generation``: ``-k generate`` alone leaves out assisted decoding
#: (``test_assisted_decoding_matches_greedy_search``), left padding and the cache-format tests; not the pipeline
#: tests (they need the Hub)
KEYWORD = (
    "(generat or prepare or assisted or prompt_lookup or dola or left_padding or past_key_values "
    "or cache_format or beam_search or contrastive) and not pipeline"
)
#: when one node id is reported twice (a call failure, then a teardown error), the worst wins
_RANK = {"passed": 0, "skipped": 1, "error": 2, "failed": 3}
#: pytest's exit codes that mean the run itself did not happen as asked (2 interrupted, e.g. by a
#: collection error, 3 internal error, 4 usage error); 0, 1 (some test failed) and 5 (nothing
#: selected) are ordinary ends
_RUN_FAILED = {2: "interrupted (collection error?)", 3: "internal error", 4: "usage error"}
#: how much of pytest's own output a run error quotes
_TAIL_LINES = 15


@dataclasses.dataclass(frozen=True)
class TestRun:
    """One side's run of one model's tests."""

    __test__ = False  # not a pytest test class, despite its name

    model: str
    #: test node id -> "passed" | "failed" | "error" | "skipped"
    outcomes: Mapping[str, str]
    seconds: float
    #: the run itself failed (collection error, timeout, pytest usage error): what happened
    error: str | None = None

    def count(self, outcome: str) -> int:
        return sum(1 for o in self.outcomes.values() if o == outcome)

    @property
    def counts(self) -> dict[str, int]:
        return {outcome: self.count(outcome) for outcome in OUTCOMES}

    def describe(self) -> str:
        counts = ", ".join(f"{n} {outcome}" for outcome, n in self.counts.items() if n) or "no tests"
        return f"{counts} in {self.seconds:.0f}s" + (f" ({self.error})" if self.error else "")


class OwnTestsCounts(TypedDict):
    """``OwnTestsVerdict.counts``: each run's outcomes counted, and how many tests changed between them."""

    before: dict[str, int]
    after: dict[str, int]
    regressions: int
    fixed: int
    flaky: int


@dataclasses.dataclass(frozen=True)
class OwnTestsVerdict:
    model: str
    before: TestRun
    after: TestRun
    #: regressions that passed when run again on the changed tree (see ``verify_own_tests``)
    flaky: frozenset[str] = frozenset()

    @property
    def regressions(self) -> tuple[str, ...]:
        """Tests that passed before and did not pass after (failed, errored, skipped or went missing), and tests
        that were skipped before and fail after: a test may decide by the changed code whether it applies
        (upstream's ``test_inputs_embeds_matches_input_ids_with_generate`` skips a model whose
        ``prepare_inputs_for_generation`` names no ``inputs_embeds``), and then it runs and fails."""
        return tuple(
            node
            for node, outcome in self.before.outcomes.items()
            if node not in self.flaky
            and (
                (outcome == "passed" and self.after.outcomes.get(node) != "passed")
                or (outcome == "skipped" and self.after.outcomes.get(node) in ("failed", "error"))
            )
        )

    @property
    def fixed(self) -> tuple[str, ...]:
        """Tests that did not pass before and pass after."""
        return tuple(
            node
            for node, outcome in self.after.outcomes.items()
            if outcome == "passed" and self.before.outcomes.get(node, "missing") != "passed"
        )

    @property
    def counts(self) -> OwnTestsCounts:
        """``{"before": {outcome: n}, "after": {outcome: n}, "regressions": n, "fixed": n, "flaky": n}``."""
        return {
            "before": self.before.counts,
            "after": self.after.counts,
            "regressions": len(self.regressions),
            "fixed": len(self.fixed),
            "flaky": len(self.flaky),
        }

    @property
    def run_failed(self) -> bool:
        """The after-run failed as a run where the before-run did not."""
        return self.after.error is not None and self.before.error is None

    @property
    def ok(self) -> bool:
        return not self.regressions and not self.run_failed

    @property
    def conclusive(self) -> bool:
        """False when the before-run failed as a run: there was nothing (or little) to compare with."""
        return self.before.error is None

    def describe(self) -> str:
        text = f"{self.model}: before {self.before.describe()}; after {self.after.describe()}"
        if self.regressions:
            shown = ", ".join(self.regressions[:5]) + (", ..." if len(self.regressions) > 5 else "")
            text += f"; {len(self.regressions)} regressed: {shown}"
        if self.flaky:
            text += f"; {len(self.flaky)} flaky (passed when run again)"
        return text

    def to_json(self) -> dict[str, Any]:
        return {
            "model": self.model,
            "ok": self.ok,
            "conclusive": self.conclusive,
            "counts": self.counts,
            "regressions": list(self.regressions),
            "flaky": sorted(self.flaky),
            "seconds": {"before": round(self.before.seconds, 1), "after": round(self.after.seconds, 1)},
            "errors": {"before": self.before.error, "after": self.after.error},
        }


# --------------------------------------------------------------------------------------------- pure


def modeling_test_files(tests_dir: Path, model: str) -> list[str]:
    """The model's PyTorch test modules, relative to the tree: ``tests/models/<m>/test_modeling_*.py``
    without the TensorFlow and Flax ones (``test_modeling_tf_*``, ``test_modeling_flax_*``)."""
    folder = Path(tests_dir) / "models" / model
    return [
        f"{Path(tests_dir).name}/models/{model}/{path.name}"
        for path in sorted(folder.glob("test_modeling_*.py"))
        if not path.name.startswith(("test_modeling_tf_", "test_modeling_flax_"))
    ]


def models_with_tests(tests_dir: Path, models: Iterable[str]) -> list[str]:
    """The models (in the order given, once each) that have ``tests/models/<m>/test_modeling_<m>.py``."""
    out: list[str] = []
    for model in dict.fromkeys(m for m in models if m):
        if (Path(tests_dir) / "models" / model / f"test_modeling_{model}.py").is_file():
            out.append(model)
    return out


def node_id(classname: str, name: str, is_file: Callable[[str], bool] | None = None) -> str:
    """The pytest node id of a JUnit ``<testcase>``.

    pytest writes ``classname`` as the node id's path with ``/`` turned into ``.`` and ``.py``
    dropped, then its classes, dot-joined (``tests.models.llama.test_modeling_llama.LlamaModelTest``).
    Where the module ends is found with ``is_file`` (is ``<dotted prefix as a path>.py`` a file?),
    else at the first capitalised part (transformers' modules are lowercase, its classes are not).
    A collection error has an empty classname and the module as its name.
    """
    if not classname:
        parts, name = name.split("."), ""
    else:
        parts = classname.split(".")
    split = None
    if is_file is not None:
        split = next((k for k in range(len(parts), 0, -1) if is_file("/".join(parts[:k]) + ".py")), None)
    if split is None:
        split = next((k for k, part in enumerate(parts) if k and part[:1].isupper()), len(parts))
    path = "/".join(parts[:split]) + ".py"
    return "::".join([path, *parts[split:], *([name] if name else [])])


def _outcome(case: ElementTree.Element) -> str:
    tags = {child.tag for child in case}
    if "failure" in tags:
        return "failed"
    if "error" in tags:
        return "error"
    if "skipped" in tags:  # also an xfail (type="pytest.xfail")
        return "skipped"
    return "passed"


def parse_junit(text: str, is_file: Callable[[str], bool] | None = None) -> tuple[dict[str, str], list[str]]:
    """Node id -> outcome from a JUnit XML report, and the collection errors (node ids of modules)."""
    root = ElementTree.fromstring(text)
    outcomes: dict[str, str] = {}
    collection_errors: list[str] = []
    for case in root.iter("testcase"):
        classname, name = case.get("classname", ""), case.get("name", "")
        node = node_id(classname, name, is_file)
        outcome = _outcome(case)
        if not classname:
            error = case.find("error")
            if error is not None and "collection" in (error.get("message") or "").lower():
                collection_errors.append(node)
        previous = outcomes.get(node)
        if previous is None or _RANK[outcome] > _RANK[previous]:
            outcomes[node] = outcome
    return outcomes, collection_errors


def compare_runs(before: TestRun, after: TestRun, flaky: Iterable[str] = ()) -> OwnTestsVerdict:
    """The verdict on one model: ``before`` and ``after`` are the same tests on the two trees."""
    if before.model != after.model:
        raise ValueError(f"comparing runs of different models: {before.model} and {after.model}")
    return OwnTestsVerdict(before.model, before, after, frozenset(flaky))


# --------------------------------------------------------------------------------------------- running


def _environment(tree: Path, jobs: int) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("PYTEST_")}
    env.update(
        {
            "PYTHONPATH": str(tree / "src"),
            "HF_HUB_OFFLINE": "1",
            "TRANSFORMERS_OFFLINE": "1",
            "TOKENIZERS_PARALLELISM": "false",
        }
    )
    if "OMP_NUM_THREADS" not in env:
        # each xdist worker is a torch process: share the cores instead of each taking them all
        env["OMP_NUM_THREADS"] = str(max(1, (os.cpu_count() or 1) // max(1, jobs)))
    return env


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        process.kill()
    process.wait()


def _tail(path: Path) -> str:
    try:
        lines = path.read_text(encoding="utf-8", errors="replace").strip().splitlines()
    except OSError:
        return ""
    return "\n".join(lines[-_TAIL_LINES:])


def run_pytest(
    python: Path,
    tree: Path,
    model: str,
    selection: Sequence[str],
    *,
    jobs: int = 1,
    timeout: float = 900,
    keyword: str | None = KEYWORD,
    extra_args: Sequence[str] = (),
) -> TestRun:
    """Run pytest on ``selection`` (paths or node ids, relative to ``tree``) in ``tree``; see ``run_model_tests``."""
    tree = Path(tree).resolve()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="codemod-owntests-") as scratch:
        report, log = Path(scratch) / "junit.xml", Path(scratch) / "pytest.log"
        args = [
            str(python),
            "-m",
            "pytest",
            *selection,
            "-p",
            "no:cacheprovider",
            "-q",
            "--tb=short",
            "--continue-on-collection-errors",
            f"--rootdir={tree}",
            f"--junitxml={report}",
        ]
        if keyword:
            args += ["-k", keyword]
        if jobs > 1:
            args += ["-n", str(jobs)]
        args += list(extra_args)
        with log.open("w", encoding="utf-8") as output:
            process = subprocess.Popen(
                args,
                cwd=tree,
                env=_environment(tree, jobs),
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            try:
                code = process.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                _kill_group(process)  # pytest and its xdist workers
                return TestRun(model, {}, time.perf_counter() - started, f"timed out after {timeout:.0f}s")
            except BaseException:
                _kill_group(process)
                raise
        seconds = time.perf_counter() - started
        error = None
        if code in _RUN_FAILED:
            error = f"pytest exited with {code} ({_RUN_FAILED[code]})"
        elif code not in (0, 1, 5):
            error = f"pytest exited with {code}"
        outcomes: dict[str, str] = {}
        if report.is_file():
            try:
                outcomes, collection_errors = parse_junit(
                    report.read_text(encoding="utf-8"), lambda path: (tree / path).is_file()
                )
            except ElementTree.ParseError as problem:
                error = error or f"unreadable JUnit report: {problem}"
            else:
                if collection_errors:
                    error = "collection error in " + ", ".join(collection_errors)
        elif error is None:
            error = f"pytest exited with {code} and wrote no report"
        if error is not None:
            tail = _tail(log)
            error += (":\n" + tail) if tail else ""
    return TestRun(model, outcomes, seconds, error)


def run_model_tests(
    python: Path,
    tree: Path,
    model: str,
    *,
    jobs: int = 1,
    timeout: float = 900,
    keyword: str = KEYWORD,
    extra_args: Sequence[str] = (),
) -> TestRun:
    """``python -m pytest tests/models/<model>/test_modeling_*.py -k <keyword>`` in ``tree`` (``-n jobs``
    with pytest-xdist).

    Only the PyTorch modeling test modules are named: ``-k`` deselects tests after collection, so
    the folder's tokenizer, processor, TF and Flax modules would still be imported, and their own
    dependencies (``datasets``, ``sentencepiece``, TensorFlow...) turn into collection errors
    (which, without xdist, stop pytest before it runs anything).

    ``transformers`` comes from ``<tree>/src`` (``PYTHONPATH``), the tests' ``tests.…`` imports from
    ``tree`` (the working directory); the Hub is off (``HF_HUB_OFFLINE``), so tests that need it
    skip or fail alike on both sides. A run past ``timeout`` seconds is killed, with its workers, and
    is a run error; so is a collection error or a pytest usage error (e.g. ``-n`` without xdist).
    """
    files = modeling_test_files(Path(tree) / "tests", model)
    if not files:
        return TestRun(model, {}, 0.0, f"no tests/models/{model}/test_modeling_*.py in {tree}")
    return run_pytest(python, tree, model, files, jobs=jobs, timeout=timeout, keyword=keyword, extra_args=extra_args)


def verify_own_tests(
    python: Path,
    old_tree: Path,
    new_tree: Path,
    models: Sequence[str],
    *,
    jobs: int = 1,
    timeout: float = 900,
    keyword: str = KEYWORD,
    rerun: bool = True,
    progress: Callable[[str], None] | None = None,
) -> list[OwnTestsVerdict]:
    """Each model's tests on ``old_tree`` then ``new_tree``, one verdict per model (in order).

    With ``rerun``, tests that regressed are run once more on the new tree (just those node ids):
    those that pass then are flaky, not regressions. Models without tests in ``old_tree`` are left out.
    """
    say = progress or (lambda _message: None)
    verdicts: list[OwnTestsVerdict] = []
    for model in models_with_tests(Path(old_tree) / "tests", models):
        say(f"{model}: running its tests (-k {keyword}) on the base tree")
        before = run_model_tests(python, old_tree, model, jobs=jobs, timeout=timeout, keyword=keyword)
        say(f"{model}: before {before.describe()}; running them on the changed tree")
        after = run_model_tests(python, new_tree, model, jobs=jobs, timeout=timeout, keyword=keyword)
        verdict = compare_runs(before, after)
        if rerun and verdict.regressions and after.error is None:
            say(f"{model}: running the {len(verdict.regressions)} regressed tests again")
            again = run_pytest(
                python, new_tree, model, list(verdict.regressions), jobs=jobs, timeout=timeout, keyword=None
            )
            flaky = [node for node in verdict.regressions if again.outcomes.get(node) == "passed"]
            verdict = compare_runs(before, after, flaky)
        say(verdict.describe())
        verdicts.append(verdict)
    return verdicts


def failing_models(verdicts: Iterable[OwnTestsVerdict]) -> dict[str, str]:
    """Model -> why its change fails verification, for each verdict that is not ``ok``: tests that
    passed on the base and not after the change, or an after-run that failed where the base's did not."""
    out: dict[str, str] = {}
    for verdict in verdicts:
        if verdict.ok:
            continue
        reasons = []
        if verdict.regressions:
            shown = ", ".join(node.rpartition("::")[2] for node in verdict.regressions[:3])
            more = f" and {len(verdict.regressions) - 3} more" if len(verdict.regressions) > 3 else ""
            reasons.append(f"{len(verdict.regressions)} of its own tests passed before and not after ({shown}{more})")
        if verdict.run_failed:
            first = (verdict.after.error or "").splitlines()[0]
            reasons.append(f"its own tests could not run after the change: {first}")
        out[verdict.model] = "; ".join(reasons)
    return out
