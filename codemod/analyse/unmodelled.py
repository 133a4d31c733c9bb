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
import textwrap
from collections.abc import Callable, Iterable
from pathlib import Path

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


def _name(decorator: ast.expr) -> str:
    """A decorator's dotted name (its callee's, for a call): ``torch.no_grad`` for ``@torch.no_grad()``."""
    return ast.unparse(decorator.func if isinstance(decorator, ast.Call) else decorator)


def unmodelled(header: Iterable[str]) -> list[str]:
    """Why the method whose decorators and ``def`` line are ``header`` is beyond the rules (none: it is not)."""
    text = textwrap.dedent("".join(header)).rstrip() + "\n    pass\n"
    try:
        node = ast.parse(text).body[0]
    except (SyntaxError, ValueError, RecursionError, IndexError):
        return ["its signature could not be read on its own"]
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
        return []
    reasons = []
    if isinstance(node, ast.AsyncFunctionDef):
        reasons.append("async def: it returns a coroutine where the mixin's method returns the inputs")
    for decorator in node.decorator_list:
        if _name(decorator) not in NO_OP_DECORATORS:
            reasons.append(f"decorated with @{ast.unparse(decorator)}, which a deletion would take away with it")
    return reasons


def keep_unmodelled(findings: Iterable[Finding], read: Callable[[Path], str], root: Path) -> list[Finding]:
    """``findings`` with each override that is async or has a decorator not known to be a no-op kept as it is.
    ``read`` gives a file's text (the scan's reader: the files are read already)."""
    lines_of: dict[str, list[str]] = {}
    out = []
    for f in findings:
        o = f.override
        lines = lines_of.get(o.file)
        if lines is None:
            lines = lines_of[o.file] = read(root / o.file).splitlines(keepends=True)
        reasons = []
        if o.start_line < o.line or lines[o.line - 1].lstrip().startswith("async"):
            # the decorators and the ``def`` line; a signature over several lines ends at its colon
            end = next((n for n in range(o.line, o.end_line + 1) if lines[n - 1].rstrip().endswith(":")), o.line)
            reasons = unmodelled(lines[o.start_line - 1 : end])
        if not reasons:
            out.append(f)
            continue
        why = tuple(Reason(ReasonKind.BESPOKE, f"{text}: kept as it is", o.line) for text in reasons)
        out.append(
            dataclasses.replace(
                f, category=Category.BESPOKE, action=Action.KEEP, reasons=f.reasons + why, extras=(), flow=()
            )
        )
    return out
