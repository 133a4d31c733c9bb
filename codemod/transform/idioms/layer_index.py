"""Thread a layer index into attention classes that have none: ``Cache.update`` needs ``self.layer_idx``.

The 4.3x shape: the model builds its decoder layers in ``nn.ModuleList([Layer(config) for _ in range(n)])`` and
each layer builds its attention in ``__init__`` (``self.self_attn = Attention(config=config)``). Both ``__init__``
get ``layer_idx=None``, the attention keeps ``self.layer_idx``, the layer passes it on, and the comprehension
passes its loop variable. Any other construction (a dict of attention classes, a layer built outside such a
comprehension, ``*args``) is a reason not to edit, returned instead of a plan.
"""

from __future__ import annotations

import libcst as cst

from codemod.transform.idioms.base import Plan, Source, classes, functions, is_name, parameters, squeezed, walk

LAYER_IDX = "layer_idx"


def _init(cls: cst.ClassDef) -> cst.FunctionDef | None:
    return next((f for f in cls.body.body if isinstance(f, cst.FunctionDef) and f.name.value == "__init__"), None)


def keeps_layer_idx(source: Source, cls: cst.ClassDef) -> bool:
    init = _init(cls)
    return init is not None and any(
        squeezed(source.code(n)).startswith("self.layer_idx=")
        for n in walk(init)
        if isinstance(n, cst.Assign | cst.AnnAssign)
    )


def _keyword(value: str) -> cst.Arg:
    equal = cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))
    return cst.Arg(value=cst.Name(value), keyword=cst.Name(LAYER_IDX), equal=equal)


def _with_arg(call: cst.Call, value: str) -> cst.Call:
    args = list(call.args)
    arg = _keyword(value)
    if args and isinstance(args[-1].comma, cst.Comma):  # a trailing comma stays the last thing
        arg = arg.with_changes(comma=args[-1].comma)
        args[-1] = args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    return call.with_changes(args=[*args, arg])


def _with_param(params: cst.Parameters) -> cst.Parameters:
    equal = cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))
    param = cst.Param(cst.Name(LAYER_IDX), default=cst.Name("None"), equal=equal)
    items = list(params.params)
    if items and isinstance(items[-1].comma, cst.Comma):
        param = param.with_changes(comma=items[-1].comma)
        items[-1] = items[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
    return params.with_changes(params=[*items, param])


def _takes_layer_idx(init: cst.FunctionDef, source: Source, plan: Plan, keep: bool) -> str | None:
    """Give ``init`` a ``layer_idx=None`` parameter (and with ``keep``, ``self.layer_idx = layer_idx``)."""
    p = init.params
    if LAYER_IDX in parameters(init):
        return None if not keep else f"line {source.line(init)}: __init__ takes layer_idx and keeps no self.layer_idx"
    if not isinstance(p.star_arg, cst.MaybeSentinel) or p.star_kwarg is not None or p.kwonly_params:
        return f"line {source.line(init)}: __init__ takes *args, **kwargs or keyword-only parameters"
    plan.replace[p] = _with_param(p)
    if keep:
        body = list(init.body.body) if isinstance(init.body, cst.IndentedBlock) else []
        statement = source.statement(f"self.{LAYER_IDX} = {LAYER_IDX}")
        supers = [s for s in body if squeezed(source.statement_code(s)).startswith("super(")]
        if supers:
            plan.after[supers[0]] = [statement]
        elif body:
            plan.before[body[0]] = [statement]
        else:
            return f"line {source.line(init)}: __init__ has no body to keep the index in"
    return None


def _enclosing(source: Source, target: cst.CSTNode) -> tuple[cst.ClassDef, cst.FunctionDef] | None:
    """The class and method whose body holds ``target``."""
    for cls in classes(source.module):
        for function in functions(cls):
            if any(n is target for n in walk(function)):
                return cls, function
    return None


def _calls_of(source: Source, names: set[str]) -> tuple[list[cst.Call], str | None]:
    """Every call of a class in ``names``, or why the class is used otherwise (named outside a call)."""
    calls: list[cst.Call] = []
    called: set[int] = set()
    for node in walk(source.module):
        if isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value in names:
            calls.append(node)
            called.add(id(node.func))
    for node in walk(source.module):
        if isinstance(node, cst.Name) and node.value in names and id(node) not in called:
            line = source.line(node)
            if not any(isinstance(c, cst.ClassDef) and c.name is node for c in walk(source.module)):
                if not _is_base(source, node):
                    return [], f"line {line}: {node.value} is named outside a call (a dict of classes, an alias)"
    return calls, None


def _is_base(source: Source, name: cst.Name) -> bool:
    return any(isinstance(c, cst.ClassDef) and any(b.value is name for b in c.bases) for c in walk(source.module))


def _comprehension_site(source: Source, call: cst.Call, plan: Plan) -> str | None:
    """``[Layer(config) for _ in range(n)]``: the loop variable becomes ``layer_idx`` and is passed on."""
    for node in walk(source.module):
        if isinstance(node, cst.ListComp | cst.GeneratorExp) and node.elt is call:
            loop = node.for_in
            if loop.inner_for_in is not None or not isinstance(loop.target, cst.Name):
                break
            if not squeezed(source.code(loop.iter)).startswith("range("):
                break
            variable = loop.target.value
            if variable == "_":
                plan.replace[loop.target] = cst.Name(LAYER_IDX)
                variable = LAYER_IDX
            plan.replace[call] = _with_arg(call, variable)
            return None
    return f"line {source.line(call)}: the layer is built outside a comprehension over range()"


def thread(source: Source, attention_classes: set[str]) -> Plan | str:
    """The plan that gives each attention class in ``attention_classes`` its layer index, or why it cannot."""
    plan = Plan()
    by_name = {c.name.value: c for c in classes(source.module)}
    for name in sorted(attention_classes):
        cls = by_name.get(name)
        if cls is None or keeps_layer_idx(source, cls):
            continue
        init = _init(cls)
        if init is None:
            return f"line {source.line(cls)}: {name} has no __init__ of its own to keep a layer index"
        why = _takes_layer_idx(init, source, plan, keep=True)
        if why:
            return why
        subclasses = {c.name.value for c in by_name.values() if any(is_name(b.value, name) for b in c.bases)}
        calls, why = _calls_of(source, {name} | {s for s in subclasses if _init(by_name[s]) is None})
        if why:
            return why
        for call in calls:
            why = _attention_site(source, call, plan, by_name)
            if why:
                return why
    return plan


def _attention_site(source: Source, call: cst.Call, plan: Plan, by_name: dict[str, cst.ClassDef]) -> str | None:
    """An attention built in a layer's ``__init__``: pass the layer's index, which the layer is given by its
    comprehension."""
    enclosing = _enclosing(source, call)
    if enclosing is None or enclosing[1].name.value != "__init__":
        return f"line {source.line(call)}: the attention is built outside a layer's __init__"
    layer, init = enclosing
    plan.replace[call] = _with_arg(call, LAYER_IDX)
    if LAYER_IDX in parameters(init):
        return None
    why = _takes_layer_idx(init, source, plan, keep=False)
    if why:
        return why
    calls, why = _calls_of(source, {layer.name.value})
    if why:
        return why
    if not calls:
        return f"line {source.line(layer)}: {layer.name.value} is not built in this file"
    for site in calls:
        why = _comprehension_site(source, site, plan)
        if why:
            return why
    return None
