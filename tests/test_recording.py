"""What the verifier records of each call to ``prepare_inputs_for_generation`` (``recording.record_calls``):
the prepared dict, and what the caller passed for the keys it returns, positional arguments included.

``recording`` runs in the verification environment, next to torch; here torch and the tiny builder are
stand-ins, as nothing recorded below is a tensor.
"""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path
from typing import Any

import pytest

SCENARIOS = Path(__file__).resolve().parent.parent / "codemod" / "verify" / "recording.py"


@pytest.fixture
def scenarios(monkeypatch: pytest.MonkeyPatch) -> Any:
    fake_torch = types.ModuleType("torch")
    fake_torch.is_tensor = lambda value: False  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torch", fake_torch)
    monkeypatch.setitem(sys.modules, "tiny", types.ModuleType("tiny"))
    spec = importlib.util.spec_from_file_location("scenarios_under_test", SCENARIOS)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Model:
    def prepare_inputs_for_generation(self, decoder_input_ids, past_key_values=None, **kwargs):
        return {
            "decoder_input_ids": decoder_input_ids,
            "past_key_values": past_key_values,
            "use_cache": kwargs.get("use_cache"),
        }


def test_positional_ids_are_recorded_under_their_parameter_name(scenarios: Any) -> None:
    """generate() passes the ids positionally: an override that hands them on unchanged (FSMT) must
    show as such, or a pass-through repair can never be proposed for them."""
    model = Model()
    received: list[dict[str, Any]] = []
    calls = scenarios.record_calls(model, received)
    model.prepare_inputs_for_generation(7, use_cache=True)
    model.prepare_inputs_for_generation(8, past_key_values="cache")
    assert calls == [
        {"decoder_input_ids": 7, "past_key_values": None, "use_cache": True},
        {"decoder_input_ids": 8, "past_key_values": "cache", "use_cache": None},
    ]
    # what the caller gave, for the keys returned; None is not a value given
    assert received == [
        {"decoder_input_ids": 7, "use_cache": True},
        {"decoder_input_ids": 8, "past_key_values": "cache"},
    ]


def test_the_recorder_keeps_the_signature_generate_validates_against(scenarios: Any) -> None:
    import inspect

    model = Model()
    scenarios.record_calls(model)
    assert list(inspect.signature(model.prepare_inputs_for_generation).parameters) == [
        "decoder_input_ids",
        "past_key_values",
        "kwargs",
    ]
