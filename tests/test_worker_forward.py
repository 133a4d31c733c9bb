"""What the worker records of a class's ``forward`` for comparison's repairs (``worker._forward_facts``), run in the
verification environment the worker runs in."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

from tests.test_tiny import _run

SCRIPT = textwrap.dedent(
    r"""
    import json, os
    import worker

    class Plain:
        def forward(self, input_ids, attention_mask=None, past_key_values=None, labels=1):
            pass

    class Absorbing:
        # SeamlessM4T's speech models: no input_ids parameter; whatever else comes lands in **kwargs
        def forward(self, input_features=None, decoder_input_ids=None, *, use_cache=None, **kwargs):
            pass

    class Unreadable:
        forward = max  # a builtin without a signature: inspect.signature raises ValueError

    # the worker keeps stdout for its protocol: print() goes to stderr once it is imported
    facts = {c.__name__: worker._forward_facts(c) for c in (Plain, Absorbing, Unreadable)}
    os.write(1, ("RESULT " + json.dumps(facts) + "\n").encode())
    """
)


def test_forward_facts_name_what_forward_takes_in_its_kwargs(verify_env: tuple[Path, Path], tmp_path: Path) -> None:
    facts = _run(verify_env, SCRIPT, tmp_path)
    assert facts["Plain"] == {
        "caches": True,
        "forward_optional": ["attention_mask", "past_key_values"],
        "forward_absorbs": None,
    }
    # every name forward binds, keyword-only too: a key none of them names is one forward takes in **kwargs
    assert facts["Absorbing"] == {
        "caches": True,
        "forward_optional": ["decoder_input_ids", "input_features", "use_cache"],
        "forward_absorbs": ["decoder_input_ids", "input_features", "self", "use_cache"],
    }
    assert facts["Unreadable"] == {"caches": False, "forward_optional": [], "forward_absorbs": None}


FRESH = textwrap.dedent(
    r'''
    import json, os, threading
    import torch
    import worker

    class Stateful(torch.nn.Module):
        """As Qwen2-VL: generate() leaves ``rope_deltas`` of the last batch on the model."""

        def __init__(self):
            super().__init__()
            self.proj = torch.nn.Linear(2, 2)
            self.rope_deltas = None

    class Locked(Stateful):
        def __init__(self):
            super().__init__()
            self.lock = threading.Lock()  # deepcopy cannot copy a lock

    loaded = []
    worker._load = lambda model_class, path, device, variant: loaded.append(path) or Stateful()

    model = Stateful()
    copy = worker._fresh(model, "/saved/0", "main", Stateful, "cpu", None)
    copy.rope_deltas = torch.tensor([3])
    copy.proj.weight.data.add_(1.0)
    again = worker._fresh(model, "/saved/0", "main", Stateful, "cpu", None)
    fallback = worker._fresh(Locked(), "/saved/0", "assistant", Locked, "cpu", None)
    os.write(1, ("RESULT " + json.dumps({
        "untouched": model.rope_deltas is None and bool(torch.equal(again.proj.weight, model.proj.weight)),
        "fresh": again.rope_deltas is None and again is not model,
        "loaded": loaded, "fallback_fresh": fallback.rope_deltas is None,
    }) + "\n").encode())
    '''
)


def test_each_scenario_starts_from_the_model_as_loaded(verify_env: tuple[Path, Path], tmp_path: Path) -> None:
    """State one scenario's generate() leaves on the model (or its weights, changed in place) never reaches the next
    scenario: each gets a copy, or the model loaded again where it cannot be copied."""
    facts = _run(verify_env, FRESH, tmp_path)
    assert facts == {
        "untouched": True,
        "fresh": True,
        "loaded": [os.path.join("/saved/0", "assistant")],
        "fallback_fresh": True,
    }
