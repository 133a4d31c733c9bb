"""``codemod/verify/testers.py``: tiny configs from the checkout's own model testers.

The module runs in the verification environment but needs only the standard library, so it is
tested here with a hand-written ``tests/models/foo/`` in a temporary checkout and stand-in classes.
"""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import pytest

from codemod.verify import testers

TEST_MODULE = """
import unittest

from ...test_modeling_common import Base


class FooConfig:
    def __init__(self, vocab_size=99, hidden_size=32):
        self.vocab_size, self.hidden_size = vocab_size, hidden_size

    def to_dict(self):
        return {"vocab_size": self.vocab_size, "hidden_size": self.hidden_size}


class FooModelTester:
    def __init__(self, parent, hidden_size=24):
        self.parent, self.hidden_size = parent, hidden_size

    def prepare_config_and_inputs_for_common(self):
        return FooConfig(hidden_size=self.hidden_size), {"input_ids": [[1, 2]]}


class FooModelTest(Base, unittest.TestCase):
    all_model_classes = (FooForCausalLM,)

    def setUp(self):
        self.model_tester = FooModelTester(self)


class BrokenModelTest(unittest.TestCase):
    all_model_classes = (BrokenForCausalLM,)

    def setUp(self):
        raise RuntimeError("needs a GPU")
"""


def _model_class(name: str, model: str = "foo") -> type:
    return type(name, (), {"__module__": f"transformers.models.{model}.modeling_{model}"})


@pytest.fixture()
def checkout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A checkout root with tests/models/foo/test_modeling_foo.py; the classes it lists are injected
    as builtins (the real module imports them from transformers)."""
    models = tmp_path / "tests" / "models" / "foo"
    models.mkdir(parents=True)
    for package in (tmp_path / "tests", tmp_path / "tests" / "models", models):
        (package / "__init__.py").write_text("")
    (tmp_path / "tests" / "test_modeling_common.py").write_text("class Base:\n    pass\n")
    (models / "test_modeling_foo.py").write_text(textwrap.dedent(TEST_MODULE))
    classes = {
        "FooForCausalLM": _model_class("FooForCausalLM"),
        "BrokenForCausalLM": _model_class("BrokenForCausalLM"),
    }
    import builtins

    for name, cls in classes.items():
        monkeypatch.setattr(builtins, name, cls, raising=False)
    monkeypatch.setattr(sys, "path", list(sys.path))
    for name in [m for m in sys.modules if m == "tests" or m.startswith("tests.")]:
        monkeypatch.delitem(sys.modules, name)
    yield tmp_path, classes
    for name in [m for m in sys.modules if m == "tests" or m.startswith("tests.")]:
        sys.modules.pop(name, None)


def test_the_test_module_of_a_model_class(tmp_path: Path) -> None:
    (tmp_path / "tests/models/llama").mkdir(parents=True)
    (tmp_path / "tests/models/llama/test_modeling_llama.py").write_text("")
    assert (
        testers.test_module_name(_model_class("LlamaForCausalLM", "llama"), str(tmp_path))
        == "tests.models.llama.test_modeling_llama"
    )
    deprecated = type("X", (), {"__module__": "transformers.models.deprecated.llama.modeling_llama"})
    assert testers.test_module_name(deprecated, str(tmp_path)) == "tests.models.llama.test_modeling_llama"


@pytest.mark.parametrize(
    ("module", "why"),
    [
        ("transformers.models.gpt2.modeling_gpt2", "no tests/models/gpt2 (an sdist has none)"),
        ("my_remote_code.modeling_foo", "not a transformers model module"),
        ("transformers.generation.utils", "not a modeling file"),
    ],
)
def test_no_test_module(tmp_path: Path, module: str, why: str) -> None:
    cls = type("X", (), {"__module__": module})
    assert testers.test_module_name(cls, str(tmp_path)) is None, why


def test_config_comes_from_the_tester_of_the_test_case_listing_the_class(checkout) -> None:
    root, classes = checkout
    found = testers.tester_config(classes["FooForCausalLM"], str(root))
    assert found is not None
    config, where = found
    assert config.to_dict() == {"vocab_size": 99, "hidden_size": 24}  # the tester's, not the config's default
    assert where == "config from tests.models.foo.test_modeling_foo.FooModelTester"


def test_a_tester_that_fails_falls_back_to_generic_shrinking(checkout, capsys: pytest.CaptureFixture) -> None:
    root, classes = checkout
    assert testers.tester_config(classes["BrokenForCausalLM"], str(root)) is None
    assert "needs a GPU" in capsys.readouterr().err


def test_a_class_no_test_case_lists_has_no_tester_config(checkout) -> None:
    root, _ = checkout
    assert testers.tester_config(_model_class("FooModel"), str(root)) is None
