"""What the classifier's rules do not model is kept as it is: an edit is only as safe as what was proven.

The rules read a method's body; two things outside it change what the method is, and no rule looks at them:

* ``async def``: the method returns a coroutine where the mixin's returns the inputs; deleting it changes what
  every caller gets;
* a decorator: it may wrap the method in anything (caching, logging, a changed signature, side effects); a
  deletion takes it away with the method. Only the decorators listed in ``NO_OP_DECORATORS`` are known to
  change nothing a deletion or a reduction would lose.

``keep_unmodelled`` turns the finding of such an override into *keep*, with the reason; its extras go, so that
no later stage (a reduction, a hook) edits it either.
"""

from __future__ import annotations

import ast
import dataclasses
from collections.abc import Iterable

from codemod.analyse.classify import Action, Category, Finding, Reason
from codemod.contracts import ReasonKind

#: decorators that leave the method as it is for every caller (no gradients, not traced or compiled): their
#: dotted names, called or not (``@torch.no_grad()`` and ``@torch.no_grad``)
NO_OP_DECORATORS = frozenset(
    {
        "torch.no_grad",
        "no_grad",
        "torch.inference_mode",
        "inference_mode",
        "torch.jit.unused",
        "torch.jit.ignore",
        "torch.compiler.disable",
        "torch._dynamo.disable",
        "torch.compiler.disable_dynamo",
    }
)


def _name(decorator: str) -> str:
    """A decorator's dotted name (its callee's, for a call): ``torch.no_grad`` for ``@torch.no_grad()``."""
    node = ast.parse(decorator, mode="eval").body
    return ast.unparse(node.func if isinstance(node, ast.Call) else node)


def reasons(asynchronous: bool, decorators: Iterable[str]) -> list[str]:
    """Why a method (``async def`` or not, with these decorators' code) is beyond the rules (none: it is not)."""
    out = []
    if asynchronous:
        out.append("async def: it returns a coroutine where the mixin's method returns the inputs")
    for decorator in decorators:
        if _name(decorator) not in NO_OP_DECORATORS:
            out.append(f"decorated with @{decorator}, which a deletion would take away with it")
    return out


def keep_unmodelled(findings: Iterable[Finding]) -> list[Finding]:
    """``findings`` with each override that is async or has a decorator not known to be a no-op kept as it is
    (the index read both from the method's syntax)."""
    out = []
    for f in findings:
        o = f.override
        why = tuple(
            Reason(ReasonKind.BESPOKE, f"{text}: kept as it is", o.line)
            for text in reasons(o.asynchronous, o.decorators)
        )
        if not why:
            out.append(f)
            continue
        out.append(
            dataclasses.replace(
                f, category=Category.BESPOKE, action=Action.KEEP, reasons=f.reasons + why, extras=(), flow=()
            )
        )
    return out
