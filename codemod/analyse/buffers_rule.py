"""TB010: a non-persistent buffer computed in a module's ``__init__``, which 5.x's ``from_pretrained`` leaves empty.

4.57.1 builds the model under accelerate's ``init_empty_weights()`` (``include_buffers=False``): buffers are made on
the real device with the values ``__init__`` computes. 5.0.0 builds it under ``torch.device("meta")`` and
``_move_missing_keys_from_meta_to_device`` replaces every non-persistent buffer with ``torch.empty_like(...)``; only
``_init_weights`` puts values back, and the default one knows only transformers' own rotary embeddings (a
``*RotaryEmbedding`` with ``original_inv_freq``). So a 4.3x rotary embedding's ``inv_freq`` / ``cos_cached`` hold
whatever memory held, and the model generates NaN or garbage. Read from one file: its ``_init_weights`` is the
tree's when the model class is there, and a buffer the file never reads is left alone.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from codemod.analyse.blockers import BlockerRule, Example, Hit, NearMiss, TreeFacts


def _is_self_call(node: ast.AST, method: str | None = None) -> bool:
    """``self.<method>(...)`` (any method when ``method`` is None)."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "self"
        and (method is None or node.func.attr == method)
    )


def _non_persistent_name(call: ast.Call) -> str | None:
    """The buffer name of ``self.register_buffer("name", value, persistent=False)``, else None."""
    if not _is_self_call(call, "register_buffer") or not call.args:
        return None
    flag = (
        call.args[2] if len(call.args) > 2 else next((k.value for k in call.keywords if k.arg == "persistent"), None)
    )
    name = call.args[0]
    if not (isinstance(flag, ast.Constant) and flag.value is False):
        return None
    return name.value if isinstance(name, ast.Constant) and isinstance(name.value, str) else None


def _methods(cls: ast.ClassDef) -> dict[str, ast.FunctionDef]:
    return {n.name: n for n in cls.body if isinstance(n, ast.FunctionDef)}


def _setup(methods: dict[str, ast.FunctionDef]) -> list[ast.FunctionDef]:
    """``__init__`` and the methods of the class it calls (``self._set_cos_sin_cache(...)``)."""
    init = methods.get("__init__")
    if init is None:
        return []
    called = {n.func.attr for n in ast.walk(init) if _is_self_call(n)}  # type: ignore[attr-defined]
    return [init, *(methods[m] for m in sorted(called) if m in methods and m != "__init__")]


def _rebinds(statement: ast.stmt, name: str, methods: dict[str, ast.FunctionDef], depth: int = 0) -> bool:
    """Whether ``statement`` sets ``self.<name>`` every time it runs: an assignment, a ``register_buffer`` of it, or
    a call of a method whose body does so at its top level."""
    if isinstance(statement, ast.Assign):
        return any(isinstance(t, ast.Attribute) and ast.unparse(t) == f"self.{name}" for t in statement.targets)
    if not isinstance(statement, ast.Expr) or not isinstance(statement.value, ast.Call):
        return False
    call = statement.value
    if _is_self_call(call, "register_buffer") and call.args and ast.unparse(call.args[0]) in (repr(name), f'"{name}"'):
        return True
    method = methods.get(call.func.attr) if _is_self_call(call) else None  # type: ignore[attr-defined]
    return method is not None and depth < 2 and any(_rebinds(s, name, methods, depth + 1) for s in method.body)


def _recomputed_in_forward(name: str, methods: dict[str, ast.FunctionDef]) -> bool:
    """Whether ``forward`` sets the buffer at its top level (not under an ``if``) before it reads it."""
    forward = methods.get("forward")
    for statement in forward.body if forward else []:
        if _rebinds(statement, name, methods):
            return True
        if any(isinstance(n, ast.Attribute) and n.attr == name for n in ast.walk(statement)):
            return False
    return False


def _restored_by_init_weights(tree: ast.Module, name: str, cls: ast.ClassDef) -> bool:
    """Whether the file's ``_init_weights`` names the buffer, calls a method of its module that sets it, or
    rebuilds the module (``_restore_buffers``, TB010's fix) where it names its class."""
    methods = _methods(cls)
    for node in ast.walk(tree):
        if not (isinstance(node, ast.FunctionDef) and node.name == "_init_weights"):
            continue
        names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
        if {"_restore_buffers", cls.name} <= names:
            return True
        for inner in ast.walk(node):
            if isinstance(inner, ast.Attribute) and inner.attr == name:
                return True
            if isinstance(inner, ast.Constant) and inner.value == name:
                return True
            called = inner.func.attr if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute) else ""
            method = methods.get(called)
            if method is not None and any(
                _rebinds(s, name, methods) for s in ast.walk(method) if isinstance(s, ast.stmt)
            ):
                return True
    return False


def _read(tree: ast.Module) -> set[str]:
    """The attribute names the file reads (a buffer nothing reads cannot change the output, empty or not)."""
    return {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Load)}


def _empty_buffers(tree: ast.Module, facts: TreeFacts) -> Iterator[Hit]:
    read = _read(tree)
    for cls in ast.walk(tree):
        if not isinstance(cls, ast.ClassDef):
            continue
        methods = _methods(cls)
        seen: set[str] = set()
        for method in _setup(methods):
            for node in ast.walk(method):
                name = _non_persistent_name(node) if isinstance(node, ast.Call) else None
                if name is None or name in seen or name not in read:
                    continue
                seen.add(name)
                if _recomputed_in_forward(name, methods) or _restored_by_init_weights(tree, name, cls):
                    continue
                yield Hit(getattr(node, "lineno", 0), ast.unparse(node), detail=f"{cls.name}.{name}")


def empty_buffer_classes(tree: ast.Module) -> dict[str, list[str]]:
    """class name -> the non-persistent buffers of it that TB010 finds (the fix in ``codemod.transform.idioms``)."""
    found: dict[str, list[str]] = {}
    for hit in _empty_buffers(tree, TreeFacts()):
        owner, _, name = hit.detail.partition(".")
        found.setdefault(owner, []).append(name)
    return found


_ROTARY = (
    "class RotaryEmbedding(torch.nn.Module):\n"
    "    def __init__(self, dim, base=10000):\n"
    "        super().__init__()\n"
    "        inv_freq = 1.0 / (base ** (torch.arange(0, dim, 2).float() / dim))\n"
    '        self.register_buffer("inv_freq", inv_freq, persistent=False)\n'
)

BUFFERS = BlockerRule(
    "TB010",
    "empty-non-persistent-buffer",
    "computes a non-persistent buffer in __init__, which from_pretrained leaves empty",
    "5.0.0",
    "modeling_utils.py: 4.57.1 builds the model under init_empty_weights() (include_buffers=False: buffers keep "
    "their values); 5.0.0 builds it under torch.device('meta'), _move_missing_keys_from_meta_to_device sets every "
    "non-persistent buffer to torch.empty_like(buffer), and only _init_weights restores one (the default only a "
    "RotaryEmbedding with original_inv_freq): the model generates NaN ('probability tensor contains inf/nan')",
    "recompute the buffer in the model's `_init_weights` (`if isinstance(module, XRotaryEmbedding): "
    "module.inv_freq.copy_(...)`), or compute it in `forward`",
    _empty_buffers,
    (
        Example("rotary", _ROTARY + "\n    def forward(self, t):\n        return torch.outer(t, self.inv_freq)\n"),
        Example(
            "positional",
            "class Alibi(nn.Module):\n    def __init__(self, n):\n"
            "        self.register_buffer('slopes', get_slopes(n), False)\n"
            "    def forward(self, x):\n        return x + self.slopes\n",
        ),
        Example(
            "grown-only",
            _ROTARY + "        self._set_cos_sin_cache(2048)\n\n    def _set_cos_sin_cache(self, seq_len):\n"
            "        t = torch.arange(seq_len).type_as(self.inv_freq)\n"
            '        self.register_buffer("cos_cached", t.cos(), persistent=False)\n\n'
            "    def forward(self, x, seq_len):\n        if seq_len > self.max_seq_len_cached:\n"
            "            self._set_cos_sin_cache(seq_len)\n        return self.cos_cached[:seq_len]\n",
            hits=2,
        ),
    ),
    (
        NearMiss(
            "persistent",
            "class M(nn.Module):\n    def __init__(self):\n"
            '        self.register_buffer("position_ids", torch.arange(512))\n',
            "a persistent buffer: saved with the weights and loaded back",
        ),
        NearMiss(
            "forward-sets-it",
            "class M(nn.Module):\n    def __init__(self):\n"
            '        self.register_buffer("mask", torch.zeros(8, 8), persistent=False)\n\n'
            "    def forward(self, x):\n        self.mask = torch.tril(torch.ones(8, 8))\n        return x * self.mask\n",
            "forward sets it before any read",
        ),
        NearMiss(
            "unread",
            "class Attention(nn.Module):\n    def __init__(self):\n"
            '        self.register_buffer("masked_bias", torch.tensor(-1e4), persistent=False)\n',
            "nothing in the file reads it (Qwen-7B's masked_bias)",
        ),
        NearMiss(
            "init-weights",
            _ROTARY + "\n\nclass ToyPreTrainedModel(PreTrainedModel):\n    def _init_weights(self, module):\n"
            "        if isinstance(module, RotaryEmbedding):\n            module.inv_freq.copy_(make_inv_freq())\n",
            "the model's _init_weights restores it",
        ),
    ),
)
