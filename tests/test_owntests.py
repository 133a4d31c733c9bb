"""The checkout's own tests before and after a change (``codemod/verify/owntests.py``).

Parsing pytest's JUnit XML and comparing two runs are pure and tested on hand-written reports; the
runner is tested for real on a tiny synthetic tree (``tests/models/fake/``) with this venv's own
pytest and pytest-xdist. Nothing here needs transformers, torch or the network.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from codemod.verify.owntests import (
    OwnTestsVerdict,
    TestRun,
    compare_runs,
    failing_models,
    modeling_test_files,
    models_with_tests,
    node_id,
    parse_junit,
    run_model_tests,
    verify_own_tests,
)

MODULE = "tests/models/llama/test_modeling_llama.py"

# ------------------------------------------------------------------------------------------ junit

REPORT = """<?xml version="1.0" encoding="utf-8"?>
<testsuites name="pytest tests"><testsuite name="pytest" errors="2" failures="2" skipped="2" tests="9">
<testcase classname="tests.models.llama.test_modeling_llama.LlamaModelTest" name="test_greedy_generate" time="0.3"/>
<testcase classname="tests.models.llama.test_modeling_llama.LlamaModelTest" name="test_sample_generate" time="0.2">
  <failure message="AssertionError: tensors differ">Traceback...</failure>
</testcase>
<testcase classname="tests.models.llama.test_modeling_llama.LlamaModelTest" name="test_beam_search_generate">
  <error message="failed on setup with &quot;RuntimeError&quot;">setup</error>
</testcase>
<testcase classname="tests.models.llama.test_modeling_llama.LlamaModelTest" name="test_generate_from_hub">
  <skipped type="pytest.skip" message="requires the Hub">skip</skipped>
</testcase>
<testcase classname="tests.models.llama.test_modeling_llama.LlamaModelTest" name="test_generate_xfail">
  <skipped type="pytest.xfail" message="known">xfail</skipped>
</testcase>
<testcase classname="tests.models.llama.test_modeling_llama" name="test_generate_param[a.b-1]"/>
<testcase classname="tests.models.llama.test_modeling_llama.Outer.Inner" name="test_generate_nested"/>
<testcase classname="tests.models.llama.test_modeling_llama.LlamaModelTest" name="test_generate_teardown">
  <failure message="assert False">call</failure>
</testcase>
<testcase classname="tests.models.llama.test_modeling_llama.LlamaModelTest" name="test_generate_teardown">
  <error message="failed on teardown">teardown</error>
</testcase>
<testcase classname="tests.models.llama.test_modeling_llama.LlamaModelTest" name="test_left_padding_generate"/>
<testcase classname="tests.models.llama.test_modeling_llama.LlamaModelTest" name="test_left_padding_generate">
  <error message="failed on teardown">teardown</error>
</testcase>
</testsuite></testsuites>
"""

#: what pytest-xdist's controller writes for a module that fails to import (pytest exits 1, not 2)
COLLECTION_ERROR = """<?xml version="1.0" encoding="utf-8"?><testsuites name="pytest tests">
<testsuite name="pytest" errors="1" failures="0" skipped="0" tests="1">
<testcase classname="" name="tests.models.llama.test_modeling_llama" time="0.000">
<error message="collection failure">ModuleNotFoundError: No module named 'datasets'</error></testcase>
</testsuite></testsuites>"""


def test_parse_junit_outcomes() -> None:
    outcomes, collection_errors = parse_junit(REPORT)
    assert collection_errors == []
    assert outcomes == {
        f"{MODULE}::LlamaModelTest::test_greedy_generate": "passed",
        f"{MODULE}::LlamaModelTest::test_sample_generate": "failed",
        f"{MODULE}::LlamaModelTest::test_beam_search_generate": "error",
        f"{MODULE}::LlamaModelTest::test_generate_from_hub": "skipped",
        f"{MODULE}::LlamaModelTest::test_generate_xfail": "skipped",
        f"{MODULE}::test_generate_param[a.b-1]": "passed",
        f"{MODULE}::Outer::Inner::test_generate_nested": "passed",
        # a call failure then a teardown error: reported twice, the worse outcome stays
        f"{MODULE}::LlamaModelTest::test_generate_teardown": "failed",
        f"{MODULE}::LlamaModelTest::test_left_padding_generate": "error",
    }


def test_parse_junit_collection_error() -> None:
    outcomes, collection_errors = parse_junit(COLLECTION_ERROR)
    assert collection_errors == [MODULE]
    assert outcomes == {MODULE: "error"}


def test_parse_junit_empty_report() -> None:
    text = '<?xml version="1.0"?><testsuites><testsuite name="pytest" tests="0"/></testsuites>'
    assert parse_junit(text) == ({}, [])


def test_node_id_uses_the_tree_where_the_module_ends() -> None:
    # a lowercase class, or a capitalised module: only the tree can tell
    files = {"tests/models/x/Test_Upper.py", "tests/models/x/test_lower.py"}
    assert (
        node_id("tests.models.x.Test_Upper.Cls", "test_a", files.__contains__)
        == "tests/models/x/Test_Upper.py::Cls::test_a"
    )
    assert (
        node_id("tests.models.x.test_lower.lowercls", "test_a", files.__contains__)
        == "tests/models/x/test_lower.py::lowercls::test_a"
    )
    # without the tree: the module ends before the first capitalised part
    assert node_id("tests.models.x.test_lower.lowercls", "test_a") == "tests/models/x/test_lower/lowercls.py::test_a"
    assert node_id("tests.models.x.test_lower.Cls", "test_a") == "tests/models/x/test_lower.py::Cls::test_a"
    assert node_id("test_top", "test_a") == "test_top.py::test_a"
    assert node_id("", "tests.models.x.test_lower", files.__contains__) == "tests/models/x/test_lower.py"


# ------------------------------------------------------------------------------------------ compare


def run(outcomes: dict[str, str], error: str | None = None, model: str = "llama") -> TestRun:
    return TestRun(model, outcomes, 1.0, error)


def test_compare_runs_regressions_and_counts() -> None:
    before = run(
        {"a": "passed", "b": "passed", "c": "failed", "d": "skipped", "e": "passed", "f": "passed", "g": "error"}
    )
    after = run(
        {"a": "passed", "b": "failed", "c": "passed", "d": "skipped", "e": "error", "g": "passed", "h": "passed"}
    )
    verdict = compare_runs(before, after)
    # b failed, e errored, f went missing; c and g were not passing before (fixed), h is new
    assert verdict.regressions == ("b", "e", "f")
    assert verdict.fixed == ("c", "g", "h")
    assert not verdict.ok and verdict.conclusive
    assert verdict.counts == {
        "before": {"passed": 4, "failed": 1, "error": 1, "skipped": 1},
        "after": {"passed": 4, "failed": 1, "error": 1, "skipped": 1},
        "regressions": 3,
        "fixed": 3,
        "flaky": 0,
    }
    assert "3 regressed: b, e, f" in verdict.describe()
    assert verdict.to_json()["regressions"] == ["b", "e", "f"]


def test_compare_runs_failures_that_stay_are_not_regressions() -> None:
    before = run({"a": "passed", "b": "failed", "c": "skipped"})
    after = run({"a": "passed", "b": "failed", "c": "skipped"})
    verdict = compare_runs(before, after)
    assert verdict.ok and verdict.regressions == () and verdict.fixed == ()


def test_compare_runs_passed_to_skipped_is_a_regression() -> None:
    assert compare_runs(run({"a": "passed"}), run({"a": "skipped"})).regressions == ("a",)


@pytest.mark.parametrize(
    ("after", "regressed"),
    [
        # upstream's test_inputs_embeds_matches_input_ids_with_generate skips a model whose signature names no
        # inputs_embeds: a change that names them makes it run, and CTRL's and BertGeneration's failed it
        ("failed", True),
        ("error", True),
        ("passed", False),  # it runs and passes: fixed, not a regression
        ("skipped", False),
    ],
)
def test_compare_runs_skipped_to_failing_is_a_regression(after: str, regressed: bool) -> None:
    verdict = compare_runs(run({"a": "skipped"}), run({"a": after}))
    assert verdict.regressions == (("a",) if regressed else ())


def test_compare_runs_flaky_are_not_regressions() -> None:
    verdict = compare_runs(run({"a": "passed", "b": "passed"}), run({"a": "failed", "b": "failed"}), flaky=["a"])
    assert verdict.regressions == ("b",)
    assert verdict.counts["flaky"] == 1


def test_compare_runs_run_error_after_only_fails() -> None:
    verdict = compare_runs(run({}), run({}, error="timed out after 900s"))
    assert verdict.regressions == () and verdict.run_failed and not verdict.ok
    # an after-run that died takes the before-run's passes with it
    verdict = compare_runs(run({"a": "passed"}), run({}, error="collection error in x"))
    assert verdict.regressions == ("a",) and not verdict.ok


def test_compare_runs_run_error_before() -> None:
    # the base itself could not run its tests: nothing to compare, not the change's fault
    verdict = compare_runs(run({}, error="collection error"), run({}, error="collection error"))
    assert verdict.ok and not verdict.conclusive and not verdict.run_failed
    verdict = compare_runs(run({}, error="timed out"), run({"a": "passed"}))
    assert verdict.ok and not verdict.conclusive


def test_compare_runs_wants_one_model() -> None:
    with pytest.raises(ValueError):
        compare_runs(run({}, model="llama"), run({}, model="bert"))


def test_verdict_is_frozen() -> None:
    verdict = OwnTestsVerdict("llama", run({}), run({}))
    with pytest.raises(AttributeError):
        verdict.model = "bert"  # type: ignore[misc]


# ------------------------------------------------------------------------------------------ files


def test_models_with_tests(tmp_path: Path) -> None:
    tests = tmp_path / "tests"
    for model, names in {
        "llama": ["test_modeling_llama.py", "test_modeling_flax_llama.py", "test_tokenization_llama.py"],
        "bert": ["test_modeling_tf_bert.py"],  # no PyTorch modeling tests
        "blip": ["test_modeling_blip.py", "test_modeling_blip_text.py", "test_modeling_tf_blip.py"],
        "gpt2": [],
    }.items():
        (tests / "models" / model).mkdir(parents=True)
        for name in names:
            (tests / "models" / model / name).write_text("")
    assert models_with_tests(tests, ["blip", "llama", "bert", "gpt2", "missing", "", "llama"]) == ["blip", "llama"]
    assert models_with_tests(tmp_path / "nowhere", ["llama"]) == []
    assert modeling_test_files(tests, "llama") == ["tests/models/llama/test_modeling_llama.py"]
    assert modeling_test_files(tests, "blip") == [
        "tests/models/blip/test_modeling_blip.py",
        "tests/models/blip/test_modeling_blip_text.py",
    ]
    assert modeling_test_files(tests, "missing") == []


# ------------------------------------------------------------------------------------------ running

FAKE_TESTS = """
import os, time, unittest
import pytest

def test_generate_passes():
    pass

def test_generate_fails():
    assert os.environ["FAKE_SIDE"] != "broken"

def test_generate_skips():
    pytest.skip("needs the Hub")

@pytest.mark.parametrize("n", [1, 2])
def test_generate_param(n):
    assert n

def test_generate_offline():
    assert os.environ["HF_HUB_OFFLINE"] == "1" and os.environ["TRANSFORMERS_OFFLINE"] == "1"

def test_generate_imports_the_tree():
    import fakepkg
    from tests.models.fake import helper
    assert helper.SIDE == fakepkg.SIDE

def test_generate_sleeps():
    time.sleep(float(os.environ.get("FAKE_SLEEP", "0")))

def test_unrelated_forward():
    raise AssertionError("never selected by -k generate")

def test_assisted_decoding_matches_greedy_search():
    pass

def test_pipeline_text_generation():
    raise AssertionError("never selected: the pipeline tests need the Hub")

class FakeModelTest(unittest.TestCase):  # a unittest class, as transformers' are
    def test_greedy_generate(self):
        assert os.environ["FAKE_SIDE"] != "broken"
"""


def make_tree(root: Path, side: str) -> Path:
    """A checkout-like tree: ``src/fakepkg`` (on PYTHONPATH) and ``tests/models/fake`` (imported from the cwd)."""
    (root / "src" / "fakepkg").mkdir(parents=True)
    (root / "src" / "fakepkg" / "__init__.py").write_text(f"SIDE = {side!r}\n")
    fake = root / "tests" / "models" / "fake"
    fake.mkdir(parents=True)
    for package in (root / "tests", root / "tests" / "models", fake):
        (package / "__init__.py").write_text("")
    (fake / "helper.py").write_text(f"SIDE = {side!r}\n")
    (fake / "test_modeling_fake.py").write_text(textwrap.dedent(FAKE_TESTS))
    # a module -k deselects anyway but that would fail to import: it is not collected
    (fake / "test_tokenization_fake.py").write_text("import a_module_that_is_not_installed\n")
    (root / "conftest.py").write_text("")
    return root


FAKE = "tests/models/fake/test_modeling_fake.py"
SELECTED = {
    f"{FAKE}::test_generate_passes": "passed",
    f"{FAKE}::test_generate_fails": "passed",
    f"{FAKE}::test_generate_skips": "skipped",
    f"{FAKE}::test_generate_param[1]": "passed",
    f"{FAKE}::test_generate_param[2]": "passed",
    f"{FAKE}::test_generate_offline": "passed",
    f"{FAKE}::test_generate_imports_the_tree": "passed",
    f"{FAKE}::test_generate_sleeps": "passed",
    f"{FAKE}::FakeModelTest::test_greedy_generate": "passed",
    f"{FAKE}::test_assisted_decoding_matches_greedy_search": "passed",
}


#: a guard against a hung run, not a measure: a loaded 2-core machine (the suite's own workers and another job) ran
#: one of these small pytest runs past 120 s
RUN_TIMEOUT = 600


@pytest.fixture
def trees(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    monkeypatch.setenv("FAKE_SIDE", "fine")
    monkeypatch.setenv("PYTEST_ADDOPTS", "-x")  # the caller's pytest settings do not leak into the run
    return make_tree(tmp_path / "old", "old"), make_tree(tmp_path / "new", "new")


@pytest.mark.slow
def test_run_model_tests(trees: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    old, _ = trees
    result = run_model_tests(Path(sys.executable), old, "fake", timeout=RUN_TIMEOUT)
    assert result.error is None, result.error
    assert dict(result.outcomes) == SELECTED
    assert result.model == "fake" and result.seconds > 0
    # another keyword, in parallel: the same ids through pytest-xdist
    monkeypatch.setenv("FAKE_SIDE", "broken")
    result = run_model_tests(Path(sys.executable), old, "fake", jobs=2, timeout=RUN_TIMEOUT, keyword="fails or greedy")
    assert result.error is None, result.error
    assert dict(result.outcomes) == {
        f"{FAKE}::test_generate_fails": "failed",
        f"{FAKE}::FakeModelTest::test_greedy_generate": "failed",
        f"{FAKE}::test_assisted_decoding_matches_greedy_search": "passed",
    }


@pytest.mark.slow
def test_run_model_tests_timeout(trees: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    old, _ = trees
    monkeypatch.setenv("FAKE_SLEEP", "60")
    result = run_model_tests(Path(sys.executable), old, "fake", jobs=2, timeout=8)
    assert result.error is not None and "timed out after 8s" in result.error
    assert result.outcomes == {}
    assert result.seconds < 30


@pytest.mark.slow
def test_run_model_tests_collection_error(trees: tuple[Path, Path]) -> None:
    old, _ = trees
    (old / FAKE).write_text("import a_module_that_is_not_installed\n")
    for jobs in (1, 2):  # pytest exits 2 alone, 1 under xdist: the report says it either way
        result = run_model_tests(Path(sys.executable), old, "fake", jobs=jobs, timeout=RUN_TIMEOUT)
        assert result.error is not None and result.error.startswith(f"collection error in {FAKE}"), result.error
        assert "a_module_that_is_not_installed" in result.error


@pytest.mark.slow
def test_run_model_tests_without_tests(tmp_path: Path) -> None:
    result = run_model_tests(Path(sys.executable), tmp_path, "fake")
    assert result.error is not None and result.outcomes == {}


@pytest.mark.slow
def test_verify_own_tests(trees: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    old, new = trees
    messages: list[str] = []
    # unchanged: no regressions
    [verdict] = verify_own_tests(
        Path(sys.executable),
        old,
        new,
        ["fake", "absent", "fake"],
        jobs=2,
        timeout=RUN_TIMEOUT,
        progress=messages.append,
    )
    assert verdict.ok and verdict.model == "fake"
    assert dict(verdict.before.outcomes) == dict(verdict.after.outcomes) == SELECTED
    assert any("fake" in m for m in messages)
    # the new side breaks two tests: they regress (and fail again when rerun: not flaky)
    text = (new / FAKE).read_text().replace('os.environ["FAKE_SIDE"] != "broken"', "False")
    (new / FAKE).write_text(text)
    [verdict] = verify_own_tests(Path(sys.executable), old, new, ["fake"], timeout=RUN_TIMEOUT)
    assert not verdict.ok
    assert set(verdict.regressions) == {f"{FAKE}::test_generate_fails", f"{FAKE}::FakeModelTest::test_greedy_generate"}
    assert verdict.counts["after"] == {"passed": 7, "failed": 2, "error": 0, "skipped": 1}
    assert verdict.flaky == frozenset()


@pytest.mark.slow
def test_verify_own_tests_flaky(trees: tuple[Path, Path], tmp_path: Path) -> None:
    old, new = trees
    # fails the first time it runs on the new tree, passes when run again
    marker = tmp_path / "ran-once"
    (new / FAKE).write_text(
        (new / FAKE).read_text()
        + textwrap.dedent(f"""
        def test_generate_flaky():
            import pathlib
            marker = pathlib.Path({str(marker)!r})
            first = not marker.exists()
            marker.touch()
            assert not first
        """)
    )
    (old / FAKE).write_text((old / FAKE).read_text() + "\ndef test_generate_flaky():\n    pass\n")
    [verdict] = verify_own_tests(Path(sys.executable), old, new, ["fake"], timeout=RUN_TIMEOUT)
    assert verdict.after.outcomes[f"{FAKE}::test_generate_flaky"] == "failed"
    assert verdict.flaky == {f"{FAKE}::test_generate_flaky"}
    assert verdict.regressions == () and verdict.ok


def test_failing_models() -> None:
    regressed = compare_runs(
        run({f"{MODULE}::T::test_a": "passed", f"{MODULE}::T::test_b": "passed"}),
        run({f"{MODULE}::T::test_a": "failed", f"{MODULE}::T::test_b": "error"}),
    )
    broken = compare_runs(run({}, model="bert"), run({}, error="collection error in x:\nImportError", model="bert"))
    fine = compare_runs(run({"a": "passed"}, model="gpt2"), run({"a": "passed"}, model="gpt2"))
    inconclusive = compare_runs(run({}, error="timed out", model="opt"), run({}, error="timed out", model="opt"))
    assert failing_models([regressed, broken, fine, inconclusive]) == {
        "llama": "2 of its own tests passed before and not after (test_a, test_b)",
        "bert": "its own tests could not run after the change: collection error in x:",
    }


def test_the_bench_names_the_models_a_migrated_tree_changed(tmp_path: Path) -> None:
    """``bench/owntests.py`` takes the models from ``git diff HEAD`` with the scan's own names: a deprecated model
    by its name, the mixin (no model) left out, files outside ``src/`` not copied."""
    import importlib.util
    import subprocess

    spec = importlib.util.spec_from_file_location(
        "bench_owntests", Path(__file__).resolve().parents[1] / "bench" / "owntests.py"
    )
    assert spec is not None and spec.loader is not None
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    files = [
        "src/transformers/generation/utils.py",
        "src/transformers/models/ctrl/modeling_ctrl.py",
        "src/transformers/models/deprecated/nezha/modeling_nezha.py",
        "README.md",
    ]
    for name in files:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x = 1\n")
    (tmp_path / "src/transformers/__init__.py").write_text("")
    for args in (
        ["init", "-q"],
        ["add", "-A"],
        ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base"],
    ):
        subprocess.run(["git", "-C", str(tmp_path), *args], check=True, capture_output=True)
    for name in files:
        (tmp_path / name).write_text("x = 2\n")
    changed, models = bench.changed_models(tmp_path)
    assert changed == sorted(f for f in files if f.startswith("src/"))
    assert models == ["ctrl", "nezha"]


SETUP_PY = """
_deps = ["datasets!=2.5.0", "numpy>=1.17", "pytest>=7.2.0,<9.0.0", "requests>=2.30", "tokenizers>=0.22.0"]
install_requires = [deps["numpy"], deps["tokenizers"]]
"""


@pytest.mark.parametrize(
    ("deps", "requests"),
    [
        (SETUP_PY, "requests>=2.30"),  # 4.x pins requests (a core dependency there): the pin is used
        (SETUP_PY.replace('"requests>=2.30", ', ""), "requests"),  # 5.x pins none, yet tests import it: unpinned
    ],
)
def test_the_own_tests_environment_has_what_test_modules_import(tmp_path: Path, deps: str, requests: str) -> None:
    """A test module that cannot be collected is no evidence on either tree (Kosmos-2.5's and RAG's tests import
    ``requests``, which 5.x's setup.py no longer lists): the own-tests environment installs it whatever the pins."""
    from codemod.checkout import resolve
    from codemod.environment import requirements_for

    (tmp_path / "setup.py").write_text(deps)
    (tmp_path / "src" / "transformers").mkdir(parents=True)
    (tmp_path / "src" / "transformers" / "__init__.py").write_text('__version__ = "5.15.0"\n')
    checkout = resolve(tmp_path, with_git=False)
    wanted = requirements_for(checkout, tests=True)
    assert wanted.count(requests) == 1
    assert "datasets!=2.5.0" in wanted and "pytest>=7.2.0,<9.0.0" in wanted
    assert requests not in requirements_for(checkout)  # only where the tests run
