"""PI133 flash-attention-seq-lens: pass flash attention the cumulative sequence lengths, from `position_ids`.

Only the 4.54 mixin does this: with a flash-attention backend it derives ``cu_seq_lens_q/k`` and
``max_length_q/k`` from the last position of each row, so that the varlen kernels need no padding.

Example::

    if "flash" in self.config._attn_implementation and self._supports_attention_backend:
        tensor_kws = {"dtype": torch.int32, "device": self.device}
        pos = model_inputs["position_ids"][:, -1]
        cu_seq_lens_k = torch.cat([torch.zeros(1, **tensor_kws), pos.cumsum(0).add(1)], 0)
        max_length_k = int(pos.max()) + 1
        bs, seq_len = input_ids.size()
        q_len = torch.ones(bs, **tensor_kws) if seq_len == 1 else pos.to(torch.int32).add(1)
        cu_seq_lens_q = torch.cat([torch.zeros(1, **tensor_kws), q_len.cumsum(0)], 0)
        max_length_q = int(q_len.max())
        model_inputs.update(
            cu_seq_lens_q=cu_seq_lens_q.to(self.device),
            cu_seq_lens_k=cu_seq_lens_k.to(self.device),
            max_length_q=max_length_q,
            max_length_k=max_length_k,
        )
"""

from codemod.rules.base import Case, EraNote, Kind, NoOp, TemplateRule, Value, ValueOrigin, claim

_KEYS = ("cu_seq_lens_q", "cu_seq_lens_k", "max_length_q", "max_length_k")

RULE = TemplateRule(
    __doc__,
    Kind.STANDARD,
    {
        # The arithmetic is left open; the shape of the block (and the keys it sets) is what counts.
        "from the last position of each row": """
            if "flash" in self.config._attn_implementation and self._supports_attention_backend:
                tensor_kws = $_
                pos = model_inputs["position_ids"][:, -1]
                cu_seq_lens_k = $_
                max_length_k = $_
                bs, seq_len = $_
                q_len = $_
                cu_seq_lens_q = $_
                max_length_q = $_
                model_inputs.update(cu_seq_lens_q=$_, cu_seq_lens_k=$_, max_length_q=max_length_q, max_length_k=max_length_k)
        """,
    },
    lambda captures, ctx, variant: claim(
        detail=variant, outputs={key: Value(ValueOrigin.BEHAVIOUR, "flash-attention-seq-lens") for key in _KEYS}
    ),
)

ERAS = (EraNote("4.54", "the only mixin that derives them, with a flash-attention backend"),)

CASES = (
    Case(
        "other-arithmetic",
        """
        if "flash" in self.config._attn_implementation and self._supports_attention_backend:
            tensor_kws = dict(dtype=torch.int32, device=self.device)
            pos = model_inputs["position_ids"][:, -1]
            cu_seq_lens_k = torch.cat([torch.zeros(1, **tensor_kws), pos.cumsum(0).add(1)], 0)
            max_length_k = int(pos.max()) + 1
            bs, seq_len = input_ids.size()
            q_len = torch.ones(bs, **tensor_kws) if seq_len == 1 else pos.to(torch.int32).add(1)
            cu_seq_lens_q = torch.cat([torch.zeros(1, **tensor_kws), q_len.cumsum(0)], 0)
            max_length_q = int(q_len.max())
            model_inputs.update(
                cu_seq_lens_q=cu_seq_lens_q, cu_seq_lens_k=cu_seq_lens_k, max_length_q=max_length_q, max_length_k=max_length_k
            )
        """,
        detail="from the last position of each row",
    ),
    NoOp(
        "not-only-for-flash-attention",
        """
        if self._supports_attention_backend:
            tensor_kws = {"dtype": torch.int32, "device": self.device}
            pos = model_inputs["position_ids"][:, -1]
            cu_seq_lens_k = torch.cat([torch.zeros(1, **tensor_kws), pos.cumsum(0).add(1)], 0)
            max_length_k = int(pos.max()) + 1
            bs, seq_len = input_ids.size()
            q_len = torch.ones(bs, **tensor_kws) if seq_len == 1 else pos.to(torch.int32).add(1)
            cu_seq_lens_q = torch.cat([torch.zeros(1, **tensor_kws), q_len.cumsum(0)], 0)
            max_length_q = int(q_len.max())
            model_inputs.update(
                cu_seq_lens_q=cu_seq_lens_q, cu_seq_lens_k=cu_seq_lens_k, max_length_q=max_length_q, max_length_k=max_length_k
            )
        """,
        why="not only under flash attention: every attention backend would get the varlen keys",
        unrecognised="if self._supports_attention_backend:",
    ),
)
