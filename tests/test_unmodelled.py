"""What no rule models is kept as it is (``codemod.analyse.unmodelled``): ``async def``, and a decorator not known to
be a no-op. The index reads both from the method's syntax, however its ``def`` line is laid out: a comment after the
colon, or a signature over several lines, changes nothing."""

from __future__ import annotations

from pathlib import Path

import pytest

from codemod.analyse.classify import Action
from codemod.analyse.index import file_facts
from codemod.analyse.scan import scan
from codemod.checkout import resolve
from codemod.sources import FileKind

MODEL = """\
import torch
from transformers import GenerationMixin, PreTrainedModel


class ToyForCausalLM(PreTrainedModel, GenerationMixin):
    def forward(self, input_ids=None, attention_mask=None, past_key_values=None, **kwargs):
        return input_ids

{header}
        if past_key_values is not None:
            input_ids = input_ids[:, -1:]
        return {{"input_ids": input_ids, "past_key_values": past_key_values, "attention_mask": attention_mask}}
"""

ONE_LINE = "def prepare_inputs_for_generation(self, input_ids, past_key_values=None, attention_mask=None, **kwargs):"
ON_LINES = (
    "def prepare_inputs_for_generation(\n"
    "        self, input_ids, past_key_values=None, attention_mask=None, **kwargs\n"
    "    ):"
)


@pytest.mark.parametrize(
    ("header", "kept", "facts"),
    [
        pytest.param(f"    {ONE_LINE}", None, (False, ()), id="plain"),
        # a comment after the colon: the decorator is a no-op, the rules judge the body
        pytest.param(
            f"    @torch.no_grad()\n    {ONE_LINE}  # noqa: D102", None, (False, ("torch.no_grad()",)), id="no_grad"
        ),
        pytest.param(
            f"    @log_calls\n    {ONE_LINE}  # noqa: D102",
            "decorated with @log_calls, which a deletion would take away with it: kept as it is",
            (False, ("log_calls",)),
            id="custom-decorator",
        ),
        pytest.param(
            f"    async {ON_LINES}",
            "async def: it returns a coroutine where the mixin's method returns the inputs: kept as it is",
            (True, ()),
            id="async-on-lines",
        ),
    ],
)
def test_what_no_rule_models_is_kept(
    tmp_path: Path, codemod_cache: Path, header: str, kept: str | None, facts: tuple[bool, tuple[str, ...]]
) -> None:
    text = MODEL.format(header=header)
    (found,) = file_facts("modeling_toy.py", text, FileKind.MODELING).overrides
    assert (found.asynchronous, found.decorators) == facts
    root = tmp_path / "tree"
    root.mkdir()
    (root / "modeling_toy.py").write_text(text, encoding="utf-8")
    (finding,) = scan(resolve(root), use_cache=False).findings
    reasons = [r.text for r in finding.reasons if r.text.endswith("kept as it is")]
    if kept is None:
        assert (finding.action is not Action.KEEP, reasons) == (True, [])
    else:
        assert (finding.action, finding.extras, reasons) == (Action.KEEP, (), [kept])
