"""Configs from the checkout's own model testers, when it has ``tests/models/<m>/``.

A git clone of transformers carries, for each model, a ``*ModelTester`` that its test suite builds
tiny models from: sizes, token ids and options its maintainers chose to exercise the model. When
it is there, verification builds from it; :mod:`tiny`'s generic shrinking is the fallback (an sdist
has no ``tests/models``, and a tester that cannot be imported or used is not an error).

Runs in the verification environment, like :mod:`tiny` (stdlib, torch, transformers; the test
modules need the checkout's test dependencies, which the environment gets when ``tests/`` exists).
The worker's working directory is the side's checkout root, so ``tests`` imports as a package.
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
import unittest
from typing import Any

# transformers exists only in the verification environment this module runs in, not in the tool's venv
# where it is type-checked: its objects (configs, testers, test cases) are Any.


def test_module_name(model_class: type, root: str) -> str | None:
    """``tests.models.<m>.test_modeling_<m>`` for ``transformers.models.[deprecated.]<m>.modeling_<m>``,
    when that file exists under ``root``."""
    parts = model_class.__module__.split(".")
    if len(parts) < 4 or parts[:2] != ["transformers", "models"] or not parts[-1].startswith("modeling_"):
        return None
    model = parts[-2]
    name = f"test_modeling_{model}"
    if not os.path.isfile(os.path.join(root, "tests", "models", model, f"{name}.py")):
        return None
    return f"tests.models.{model}.{name}"


def _test_case_for(module: Any, model_class: type) -> type | None:
    """The test case whose ``all_model_classes`` lists ``model_class`` (and that has a model tester)."""
    for value in vars(module).values():
        if not (isinstance(value, type) and issubclass(value, unittest.TestCase)):
            continue
        classes = tuple(getattr(value, "all_model_classes", ()) or ()) + tuple(
            getattr(value, "all_generative_model_classes", ()) or ()
        )
        if model_class in classes:
            return value
    return None


def tester_config(model_class: type, root: str) -> tuple[Any, str] | None:
    """(config, where it came from) from the checkout's tester for ``model_class``; None when there
    is none or it cannot be used (the reason then goes to stderr, which the worker logs)."""
    name = test_module_name(model_class, root)
    if name is None:
        return None
    if root not in sys.path:
        sys.path.insert(0, root)
    try:
        module = importlib.import_module(name)
        case_class = _test_case_for(module, model_class)
        if case_class is None:
            return None
        case = case_class()  # "runTest": a TestCase made outside a runner
        case.setUp()
        tester = getattr(case, "model_tester", None)
        if tester is None:
            return None
        prepared = tester.prepare_config_and_inputs_for_common()
        config = prepared[0] if isinstance(prepared, tuple) else None
    except Exception as error:  # noqa: BLE001 - any failure means: shrink generically instead
        print(
            f"testers: {name} unusable for {model_class.__name__}: {type(error).__name__}: {error}"[:500],
            file=sys.stderr,
        )
        return None
    if config is None or not inspect.isclass(type(config)) or not hasattr(config, "to_dict"):
        return None
    return config, f"config from {name}.{type(tester).__name__}"
