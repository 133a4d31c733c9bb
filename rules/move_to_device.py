"""PI196 move-to-device: move the prepared inputs onto the model's device, right before the forward.

Plumbing (5.x): lets callers keep the growing inputs on another device.

Example::

    input_tensor = model_inputs.get("inputs_embeds", model_inputs[input_ids_key])
    if self.device.type != "meta" and input_tensor is not None and input_tensor.device != self.device:
        model_inputs = move_to_device(model_inputs, self.device)
"""

from codemod.rules.base import Case, EraNote, Kind, NoOp, TemplateRule, claim

RULE = TemplateRule(
    __doc__,
    Kind.PLUMBING,
    {
        "when the inputs are elsewhere": """
            input_tensor = model_inputs.get("inputs_embeds", model_inputs[$key])
            if self.device.type != "meta" and input_tensor is not None and input_tensor.device != self.device:
                model_inputs = move_to_device(model_inputs, self.device)
        """,
        # 5.15: the loop the move_to_device helper later replaced
        "when the inputs are elsewhere, tensor by tensor": """
            input_tensor = model_inputs.get("inputs_embeds", model_inputs[$key])
            if self.device.type != "meta" and input_tensor is not None and input_tensor.device != self.device:
                for key, value in model_inputs.items():
                    if isinstance(value, torch.Tensor):
                        model_inputs[key] = value.to(self.device)
        """,
    },
    lambda captures, ctx, variant: claim(detail=variant),
)

ERAS = (
    EraNote("5.x", "moved when the inputs are on another device: tensor by tensor (5.15), then with `move_to_device`"),
)

CASES = (
    Case(
        "a-literal-key",
        """
        input_tensor = model_inputs.get("inputs_embeds", model_inputs["input_ids"])
        if (self.device.type != "meta") and (input_tensor is not None) and (input_tensor.device != self.device):
            model_inputs = move_to_device(model_inputs, self.device)  # the caller's device may differ
        """,
        detail="when the inputs are elsewhere",
    ),
    Case(
        "tensor-by-tensor",
        """
        input_tensor = model_inputs.get("inputs_embeds", model_inputs[input_ids_key])
        if self.device.type != "meta" and input_tensor is not None and input_tensor.device != self.device:
            for key, value in model_inputs.items():
                if isinstance(value, torch.Tensor):
                    model_inputs[key] = value.to(self.device)
        """,
        detail="when the inputs are elsewhere, tensor by tensor",
    ),
    NoOp(
        "on-every-call",
        """
        model_inputs = move_to_device(model_inputs, self.device)
        """,
        why="moved without looking where the inputs are: not the mixin's check",
        unrecognised="model_inputs = move_to_device(model_inputs, self.device)",
    ),
    NoOp(
        "another-test",
        """
        input_tensor = model_inputs.get("inputs_embeds", model_inputs[input_ids_key])
        if input_tensor is not None:
            model_inputs = move_to_device(model_inputs, self.device)
        """,
        why="the test does not compare the inputs' device with the model's",
        unrecognised="model_inputs = move_to_device(model_inputs, self.device)",
    ),
)
