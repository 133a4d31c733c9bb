"""A base class no generate() can run on (phi-1.5's ``MixFormerSequentialPreTrainedModel`` holds the override its
causal-LM class runs) is judged by the classes that inherit the change (``migrate.failing``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from codemod.contracts import Verdict
from codemod.migrate import NO_HEAD, failing
from codemod.verify.compare import ClassVerdict
from codemod.verify.session import VerifyReport

BASE = "modeling_mixformer.py::MixFormerPreTrainedModel"
HEIR = "modeling_mixformer.py::MixFormerForCausalLM"
HEADLESS = ClassVerdict(
    BASE, Verdict.UNVERIFIED, detail=f"the old code cannot run it: MixFormerPreTrainedModel {NO_HEAD}"
)


def _report(*verdicts: ClassVerdict) -> VerifyReport:
    return VerifyReport(tuple(verdicts), (), (), "cpu", "python", 1.0, "HEAD")


@pytest.mark.parametrize(
    ("heirs", "fails"),
    [
        pytest.param((Verdict.IDENTICAL,), False, id="heir-identical"),
        pytest.param((Verdict.REPAIRS, Verdict.NO_WORSE), False, id="heirs-kept"),
        pytest.param((), True, id="no-heir-proves-nothing"),
        pytest.param((Verdict.IDENTICAL, Verdict.DIFFERS), True, id="one-heir-differs"),
        pytest.param((Verdict.UNVERIFIED,), True, id="heir-unverified"),
    ],
)
def test_a_headless_base_stands_or_falls_with_its_heirs(heirs: tuple[Verdict, ...], fails: bool) -> None:
    verdicts = [ClassVerdict(f"{HEIR}{i}", v, detail="x", inherits_from=BASE) for i, v in enumerate(heirs)]
    assert (BASE in failing(_report(HEADLESS, *verdicts), keep_unverified=False)) is fails


def test_an_unverified_base_for_another_reason_still_fails() -> None:
    other = ClassVerdict(BASE, Verdict.UNVERIFIED, detail="no scenario that ran on both sides read from a cache")
    heir = ClassVerdict(HEIR, Verdict.IDENTICAL, detail="x", inherits_from=BASE)
    assert BASE in failing(_report(other, heir), keep_unverified=False)


def test_the_words_are_the_ones_the_worker_fails_a_headless_class_with() -> None:
    inputs = Path(__file__).resolve().parents[1] / "codemod" / "verify" / "tiny" / "inputs.py"
    assert NO_HEAD in inputs.read_text()
