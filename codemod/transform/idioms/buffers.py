"""TB010's fix: a non-persistent buffer ``__init__`` computes, which 5.x's ``from_pretrained`` leaves empty, is
computed again by the model's ``_init_weights``.

The module keeps the arguments it was built with: ``self.__dict__.setdefault("_init_kwargs", {...})`` is the first
statement of its ``__init__`` and of each subclass's in the file, so the most derived class's arguments win (and it
runs before ``nn.Module.__init__``, which a plain attribute could not). Each ``_init_weights`` of the file's
``PreTrainedModel`` classes, or a new one calling ``super()``'s, then builds a fresh module from those arguments
and copies its buffers in. 5.x calls ``_init_weights`` on every module whose buffers it left empty; on 4.x the
copy writes the values the buffers already hold. A module that builds parameters or submodules is not rebuilt
(a fresh copy would allocate and initialise them for nothing) and is reported, as is a signature whose arguments
cannot be kept by name (``*args``, positional-only).
"""

from __future__ import annotations

import ast

import libcst as cst

from codemod.analyse.blockers import blocks
from codemod.analyse.buffers_rule import empty_buffer_classes
from codemod.transform.idioms.base import IdiomEdit, IdiomTarget, NotMigrated, Plan, Source, classes

RESTORE = '''def _restore_buffers(module):
    """Copy in the buffers a fresh module built with the same arguments computes: 5.0's from_pretrained leaves a
    non-persistent buffer that __init__ computed empty (torch.empty_like)."""
    fresh = type(module)(**module._init_kwargs)
    for name, buffer in fresh.named_buffers(recurse=False):
        current = getattr(module, name, None)
        if current is not None and current.shape == buffer.shape:
            current.copy_(buffer)
        else:
            device = current.device if current is not None else buffer.device
            module.register_buffer(name, buffer.to(device), persistent=False)'''

_KEEP = 'self.__dict__.setdefault("{key}", {{{items}}})  # TB010: _init_weights rebuilds its buffers from these'
_BRANCH = "if isinstance({module}, ({names},)):\n    _restore_buffers({module})"
_METHOD = "def _init_weights(self, module):\n    super()._init_weights(module)\n    " + _BRANCH.format(
    module="module", names="{names}"
).replace("\n", "\n    ")


def restore_buffers(source: Source, target: IdiomTarget) -> Plan:
    """The plan that makes the file's ``_init_weights`` restore the buffers TB010 finds, on a 5.x target."""
    plan = Plan()
    if not blocks("5.0.0", target.release):
        return plan
    tree = source.syntax
    if tree is None:
        return plan
    owners = empty_buffer_classes(tree)
    if not owners:
        return plan
    by_name = {c.name.value: c for c in classes(source.module)}
    restorable = sorted(n for n in owners if n in by_name and _restorable(source, by_name[n], plan))
    models = [c for c in by_name.values() if _is_pretrained_model(source, c)]
    if restorable and not models:
        for name in restorable:
            plan.not_migrated.append(
                NotMigrated("TB010", source.line(by_name[name]), "no PreTrainedModel in the file")
            )
        return Plan(not_migrated=plan.not_migrated)
    if not restorable:
        return plan
    kept = _keep_arguments(source, by_name, restorable, plan)
    if not kept:
        return plan
    names = ", ".join(kept)
    restoring = Plan()
    for model in _init_weights_owners(source, by_name, models):
        _restore_in(source, model, names, restoring)
    if restoring.not_migrated:  # arguments kept that nothing rebuilds from would only add noise
        return Plan(not_migrated=[n for n in plan.not_migrated if n.reason] + restoring.not_migrated)
    plan.merge(restoring)
    plan.definitions.append(RESTORE)
    return plan


def _base_names(source: Source, cls: cst.ClassDef) -> list[str]:
    return [source.code(b.value).rsplit(".", 1)[-1] for b in cls.bases]


def _is_pretrained_model(source: Source, cls: cst.ClassDef) -> bool:
    return "PreTrainedModel" in _base_names(source, cls)


def _init(cls: cst.ClassDef) -> cst.FunctionDef | None:
    body = cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ()
    return next((s for s in body if isinstance(s, cst.FunctionDef) and s.name.value == "__init__"), None)


def _builds_parameters(tree: ast.Module, class_name: str) -> bool:
    """Whether the class's ``__init__`` makes parameters or submodules (``nn.Linear(...)``, ``nn.Parameter(...)``)."""
    inits = [
        f
        for c in ast.walk(tree)
        if isinstance(c, ast.ClassDef) and c.name == class_name
        for f in c.body
        if isinstance(f, ast.FunctionDef) and f.name == "__init__"
    ]
    for node in (n for init in inits for n in ast.walk(init)):
        if isinstance(node, ast.Call):
            called = ast.unparse(node.func)
            if called.startswith(("nn.", "torch.nn.")) and not called.startswith(
                ("nn.functional", "torch.nn.functional", "nn.init", "torch.nn.init")
            ):
                return True
    return False


def _restorable(source: Source, cls: cst.ClassDef, plan: Plan) -> bool:
    init = _init(cls)
    line = source.line(cls)
    if init is None:
        plan.not_migrated.append(NotMigrated("TB010", line, "its __init__ is inherited from another file"))
        return False
    if source.syntax is not None and _builds_parameters(source.syntax, cls.name.value):
        plan.not_migrated.append(
            NotMigrated("TB010", line, "the module builds parameters: a fresh copy would make them for nothing")
        )
        return False
    return True


def _arguments(init: cst.FunctionDef) -> str | None:
    """``"a": a, "b": b, **kwargs`` for ``__init__(self, a, b=1, **kwargs)``; None when not every argument has a
    name to pass it by (positional-only, ``*args``)."""
    params = init.params
    if params.posonly_params or isinstance(params.star_arg, cst.Param) or not params.params:
        return None
    named = [p.name.value for p in (*params.params[1:], *params.kwonly_params)]
    items = [f'"{n}": {n}' for n in named]
    if isinstance(params.star_kwarg, cst.Param):
        items.append(f"**{params.star_kwarg.name.value}")
    return ", ".join(items)


def _keep_arguments(source: Source, by_name: dict[str, cst.ClassDef], owners: list[str], plan: Plan) -> list[str]:
    """Put the ``_init_kwargs`` statement first in each owner's ``__init__`` and its subclasses'; the owners done."""
    done = []
    kept: set[int] = set()  # an __init__ already given the statement (a subclass of two owners)
    for name in owners:
        family = [by_name[name], *_subclasses(source, by_name, name)]
        inits = [i for c in family if (i := _init(c)) is not None]
        arguments = [_arguments(i) for i in inits]
        if any(a is None for a in arguments):
            plan.not_migrated.append(
                NotMigrated("TB010", source.line(by_name[name]), "an __init__ takes *args or positional-only ones")
            )
            continue
        for init, items in zip(inits, arguments, strict=True):
            body = list(init.body.body) if isinstance(init.body, cst.IndentedBlock) else []
            if not body or id(init) in kept:
                continue
            kept.add(id(init))
            first = body[1] if len(body) > 1 and _is_docstring(body[0]) else body[0]
            plan.before.setdefault(first, []).append(source.statement(_KEEP.format(key="_init_kwargs", items=items)))
        plan.edits.append(
            IdiomEdit("TB010", source.line(by_name[name]), f"{name} keeps its arguments; _init_weights rebuilds it")
        )
        done.append(name)
    return done


def _is_docstring(statement: cst.BaseStatement) -> bool:
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and isinstance(statement.body[0], cst.Expr)
        and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def _subclasses(source: Source, by_name: dict[str, cst.ClassDef], name: str) -> list[cst.ClassDef]:
    found: list[cst.ClassDef] = []
    parents = {name}
    changed = True
    while changed:
        changed = False
        for cls in by_name.values():
            if cls not in found and cls.name.value not in parents and parents & set(_base_names(source, cls)):
                found.append(cls)
                parents.add(cls.name.value)
                changed = True
    return found


def _init_weights_owners(
    source: Source, by_name: dict[str, cst.ClassDef], models: list[cst.ClassDef]
) -> list[cst.ClassDef]:
    """The file's ``PreTrainedModel`` classes, and every class below them that defines ``_init_weights``."""
    owners = list(models)
    for model in models:
        owners += [c for c in _subclasses(source, by_name, model.name.value) if _method(c, "_init_weights")]
    return owners


def _method(cls: cst.ClassDef, name: str) -> cst.FunctionDef | None:
    body = cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ()
    return next((s for s in body if isinstance(s, cst.FunctionDef) and s.name.value == name), None)


def _restore_in(source: Source, model: cst.ClassDef, names: str, plan: Plan) -> None:
    method = _method(model, "_init_weights")
    if method is None:
        body = list(model.body.body) if isinstance(model.body, cst.IndentedBlock) else []
        if body:
            new = source.statement(_METHOD.format(names=names)).with_changes(
                leading_lines=[cst.EmptyLine(indent=False)]
            )
            plan.after.setdefault(body[-1], []).append(new)
        return
    params = [p.name.value for p in method.params.params]
    statements = list(method.body.body) if isinstance(method.body, cst.IndentedBlock) else []
    if len(params) != 2 or not statements:
        plan.not_migrated.append(NotMigrated("TB010", source.line(method), "_init_weights is not (self, module)"))
        return
    first = statements[1] if len(statements) > 1 and _is_docstring(statements[0]) else statements[0]
    plan.before.setdefault(first, []).append(source.statement(_BRANCH.format(module=params[1], names=names)))
