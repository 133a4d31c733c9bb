"""What the worker records of a class's ``forward`` for comparison's repairs (``worker._forward_facts``), run in the
verification environment the worker runs in."""

from __future__ import annotations

import textwrap
from pathlib import Path

from tests.test_tiny import _run, verify_env  # noqa: F401 - the session fixture, shared

SCRIPT = textwrap.dedent(
    r'''
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
    '''
)


def test_forward_facts_name_what_forward_takes_in_its_kwargs(verify_env: tuple[Path, Path], tmp_path: Path) -> None:
    facts = _run(verify_env, SCRIPT, tmp_path)
    assert facts["Plain"] == {"caches": True, "forward_optional": ["attention_mask", "past_key_values"],
                              "forward_absorbs": None}
    # every name forward binds, keyword-only too: a key none of them names is one forward takes in **kwargs
    assert facts["Absorbing"] == {"caches": True, "forward_optional": ["decoder_input_ids", "input_features", "use_cache"],
                                  "forward_absorbs": ["decoder_input_ids", "input_features", "self", "use_cache"]}
    assert facts["Unreadable"] == {"caches": False, "forward_optional": [], "forward_absorbs": None}
