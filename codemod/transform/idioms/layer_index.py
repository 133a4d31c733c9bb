"""Thread a layer index into attention classes that have none: ``Cache.update`` needs ``self.layer_idx``.

The 4.3x shape: the model builds its decoder layers in ``nn.ModuleList([Layer(config) for _ in range(n)])`` and
each layer builds its attention in ``__init__`` (``self.self_attn = Attention(config=config)``). Both ``__init__``
get ``layer_idx=None``, the attention keeps ``self.layer_idx``, the layer passes it on, and the comprehension
passes its loop variable. Any other construction (a dict of attention classes, a layer built outside such a
comprehension, ``*args``) is a reason not to edit, returned instead of a plan.
"""

from __future__ import annotations

import libcst as cst

from codemod.transform.idioms.base import Plan, Source, classes, functions, parameters, squeezed, walk

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


def _class_tables(source: Source, names: set[str]) -> dict[str, set[int]]:
    """Module-level ``TABLE = {"eager": Attention, ...}`` naming a class in ``names``: table -> ids of those names."""
    tables: dict[str, set[int]] = {}
    for statement in source.module.body:
        small = statement.body[0] if isinstance(statement, cst.SimpleStatementLine) else None
        if not (isinstance(small, cst.Assign) and len(small.targets) == 1 and isinstance(small.value, cst.Dict)):
            continue
        target = small.targets[0].target
        named = [e.value for e in small.value.elements if isinstance(e, cst.DictElement)]
        if isinstance(target, cst.Name) and any(isinstance(v, cst.Name) and v.value in names for v in named):
            tables[target.value] = {id(v) for v in named if isinstance(v, cst.Name)} | {id(target)}
    return tables


def _calls_of(source: Source, names: set[str]) -> tuple[list[cst.Call], str | None]:
    """Every call of a class in ``names``, directly or through a module-level table of classes
    (``TABLE[config.attn_implementation](config=config)``), or why a class is used otherwise."""
    tables = _class_tables(source, names)
    calls: list[cst.Call] = []
    allowed: set[int] = set().union(*tables.values()) if tables else set()
    for node in walk(source.module):
        if not isinstance(node, cst.Call):
            continue
        func = node.func
        if isinstance(func, cst.Name) and func.value in names:
            calls.append(node)
            allowed.add(id(func))
        elif isinstance(func, cst.Subscript) and isinstance(func.value, cst.Name) and func.value.value in tables:
            calls.append(node)
            allowed.add(id(func.value))
    for node in walk(source.module):
        if not isinstance(node, cst.Name) or id(node) in allowed or node.value not in names | set(tables):
            continue
        if not any(isinstance(c, cst.ClassDef) and c.name is node for c in walk(source.module)):
            if not _is_base(source, node):
                line = source.line(node)
                return [], f"line {line}: {node.value} is named outside a call (an alias, a table passed on)"
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


def _inherits_init(cls: cst.ClassDef) -> bool:
    """No ``__init__`` of its own, or one that hands ``*args, **kwargs`` on to ``super().__init__`` (a layer index
    given to the class reaches its base)."""
    init = _init(cls)
    if init is None:
        return True
    p = init.params
    if not (isinstance(p.star_arg, cst.Param) and p.star_kwarg is not None):
        return False
    call = f"super().__init__(*{p.star_arg.name.value},**{p.star_kwarg.name.value})"
    body = init.body.body if isinstance(init.body, cst.IndentedBlock) else ()
    return any(
        isinstance(s, cst.SimpleStatementLine) and squeezed(cst.Module([]).code_for_node(s.body[0])) == call
        for s in body
    )


def _init_owner(by_name: dict[str, cst.ClassDef], name: str) -> cst.ClassDef | None:
    """The class of this module whose ``__init__`` class ``name`` runs: itself, or the base it inherits it from."""
    cls, seen = by_name.get(name), set()
    while cls is not None and _inherits_init(cls) and cls.name.value not in seen:
        seen.add(cls.name.value)
        bases = [b.value.value for b in cls.bases if isinstance(b.value, cst.Name) and b.value.value in by_name]
        cls = by_name[bases[0]] if bases else None
    return cls


def thread(source: Source, attention_classes: set[str]) -> Plan | str:
    """The plan that gives each attention class in ``attention_classes`` its layer index, or why it cannot."""
    plan = Plan()
    by_name = {c.name.value: c for c in classes(source.module)}
    owners: dict[str, cst.ClassDef] = {}
    for name in sorted(attention_classes):
        owner = _init_owner(by_name, name)
        if owner is None:
            return f"{name} has no __init__ in this file to keep a layer index"
        owners[owner.name.value] = owner
    for name, cls in sorted(owners.items()):
        if keeps_layer_idx(source, cls):
            continue
        init = _init(cls)
        assert init is not None  # an owner has one
        why = _takes_layer_idx(init, source, plan, keep=True)
        if why:
            return why
        # the classes that run this __init__: those built anywhere must be handed the index
        runs_it = {n for n in by_name if (o := _init_owner(by_name, n)) is not None and o.name.value == name}
        calls, why = _calls_of(source, runs_it)
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
