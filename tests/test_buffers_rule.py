"""TB010 (``codemod.analyse.buffers_rule``) on the shapes 4.3x remote code gives its rotary embedding: which
non-persistent buffers 5.x's ``from_pretrained`` leaves empty, and which the code sets again itself."""

from __future__ import annotations

import ast
import textwrap

import pytest

from codemod.analyse.blockers import TreeFacts
from codemod.analyse.buffers_rule import BUFFERS

#: InternLM's rotary embedding (4.33-era remote code): cos/sin grown in forward only past the cached length
INTERNLM = """\
class InternLMRotaryEmbedding(torch.nn.Module):
    def __init__(self, dim, max_position_embeddings=2048, base=10000, device=None):
        super().__init__()
        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2).float().to(device) / dim))
        self.register_buffer("inv_freq", inv_freq, persistent=False)
        self.max_seq_len_cached = max_position_embeddings
        t = torch.arange(self.max_seq_len_cached, device=self.inv_freq.device, dtype=self.inv_freq.dtype)
        emb = torch.cat((t, t), dim=-1)
        self.register_buffer("cos_cached", emb.cos()[None, None, :, :], persistent=False)
        self.register_buffer("sin_cached", emb.sin()[None, None, :, :], persistent=False)

    def forward(self, x, seq_len=None):
        if seq_len > self.max_seq_len_cached:
            self.max_seq_len_cached = seq_len
            emb = torch.arange(seq_len, device=x.device, dtype=self.inv_freq.dtype)
            self.register_buffer("cos_cached", emb.cos()[None, None, :, :], persistent=False)
            self.register_buffer("sin_cached", emb.sin()[None, None, :, :], persistent=False)
        return self.cos_cached[:, :, :seq_len, ...], self.sin_cached[:, :, :seq_len, ...]
"""

#: the model class InternLM pairs with it: an _init_weights that knows only Linear and Embedding
INTERNLM_MODEL = """\
class InternLMPreTrainedModel(PreTrainedModel):
    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            module.weight.data.normal_(mean=0.0, std=0.02)
"""

#: the repair measured on 5.23.0 (InternLM-20b's saved tiny model: the three buffers equal a fresh build's, the
#: logits finite; without it cos_cached and sin_cached hold NaN)
RESTORED = """\
class InternLMPreTrainedModel(PreTrainedModel):
    def _init_weights(self, module):
        if isinstance(module, InternLMRotaryEmbedding):
            inv_freq, cos, sin = rotary_tables(module)
            module.inv_freq.copy_(inv_freq)
            module.cos_cached.copy_(cos)
            module.sin_cached.copy_(sin)
"""

#: an _init_weights that re-runs the cos/sin setup: inv_freq is still left empty
SETUP_AGAIN = """\
class Rotary(nn.Module):
    def __init__(self, dim):
        self.register_buffer("inv_freq", make_inv_freq(dim), persistent=False)
        self._set_cos_sin_cache(2048)

    def _set_cos_sin_cache(self, seq_len):
        t = torch.arange(seq_len).type_as(self.inv_freq)
        self.register_buffer("cos_cached", t.cos(), persistent=False)


class P(PreTrainedModel):
    def _init_weights(self, module):
        if isinstance(module, Rotary):
            module._set_cos_sin_cache(2048)
"""

#: forward calls the setup first every time: nothing read before it is set
SETUP_IN_FORWARD = """\
class Rotary(nn.Module):
    def __init__(self, dim):
        self._setup(2048)

    def _setup(self, seq_len):
        self.register_buffer("cos_cached", torch.arange(seq_len).cos(), persistent=False)

    def forward(self, x, seq_len):
        self._setup(seq_len)
        return self.cos_cached
"""


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        pytest.param(INTERNLM, ["inv_freq", "cos_cached", "sin_cached"], id="internlm-grown-only"),
        pytest.param(INTERNLM + "\n\n" + INTERNLM_MODEL, ["inv_freq", "cos_cached", "sin_cached"], id="linear-only"),
        pytest.param(INTERNLM + "\n\n" + RESTORED, [], id="init-weights-restores-all-three"),
        pytest.param(SETUP_AGAIN, ["inv_freq"], id="init-weights-resets-cos-only"),
        pytest.param(SETUP_IN_FORWARD, [], id="forward-sets-first"),
    ],
)
def test_the_buffers_left_empty(source: str, expected: list[str]) -> None:
    hits = BUFFERS.find(ast.parse(textwrap.dedent(source)), TreeFacts())
    assert [h.detail.split(".", 1)[1] for h in hits] == expected
