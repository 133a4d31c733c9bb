"""The recorder on releases before 4.30, whose ``PreTrainedModel.can_generate()`` reads
``self.prepare_inputs_for_generation.__func__``: with the recorder on the instance, that must still name the
class's method (else every run of the old code on 4.29.2 fails before preparing anything)."""

from __future__ import annotations

from typing import Any

from .test_recording import Model, scenarios

__all__ = ["scenarios"]  # the fixture: recording.py with torch stood in for


class Mixin:
    def prepare_inputs_for_generation(self, input_ids: Any, **kwargs: Any) -> dict[str, Any]:
        return {"input_ids": input_ids}


class Inheriting(Mixin):
    def can_generate(self) -> bool:
        """4.29.2's ``PreTrainedModel.can_generate``, as it reads the method."""
        return "Mixin" not in str(self.prepare_inputs_for_generation.__func__)  # type: ignore[attr-defined]


class Overriding(Inheriting):
    def prepare_inputs_for_generation(self, input_ids: Any, **kwargs: Any) -> dict[str, Any]:
        return {"input_ids": input_ids, "own": True}


def test_the_recorded_method_keeps_the_function_it_wraps(scenarios: Any) -> None:
    model = Model()
    method = type(model).prepare_inputs_for_generation
    scenarios.record_calls(model)
    assert model.prepare_inputs_for_generation.__func__ is method  # type: ignore[attr-defined]


def test_can_generate_reads_the_class_method_through_the_recorder(scenarios: Any) -> None:
    overriding, inheriting = Overriding(), Inheriting()
    for model in (overriding, inheriting):
        scenarios.record_calls(model)
    assert overriding.can_generate() is True
    assert inheriting.can_generate() is False  # the mixin's own method, as without the recorder
