"""An override kept only for its signature becomes one line naming the mixin's method with that signature.

4.45's ``generate()`` refuses ``inputs_embeds`` for a model whose ``prepare_inputs_for_generation`` does not name
them in its signature, and upstream's own ``test_generate_from_inputs_embeds_decoder_only`` decides by the same
signature whether to run. So where a migration leaves an override that is nothing but::

    def prepare_inputs_for_generation(self, input_ids, **kwargs):
        # Overwritten -- keeps its signature for generate()
        return super().prepare_inputs_for_generation(input_ids, **kwargs)

the refusal is the whole of what it does. The generic mixin this tool installs in a stub era (``rules.generic_mixin``)
carries the same call under that signature (``REFUSING_EMBEDS``), and the class names it instead::

    prepare_inputs_for_generation = GenerationMixin._prepare_inputs_for_generation_refusing_embeds

Only where that is the same method: the class's ``super()`` is the mixin's (no parent override in between), the
file is a plain modeling file in the package (a modular source's converter and a generated file's ``# Copied from``
checks read methods), and the signature is exactly ``(self, input_ids, **kwargs)`` or ``**model_kwargs`` (the two
names 4.45's ``_validate_model_kwargs`` reads alike). A class without GenerationMixin among its bases (4.45's masked
LMs) gets it there, as a deletion does: 4.45's ``can_generate()`` otherwise looks for an override whose name is not
the mixin's, and the variant's is. The plan marks the edits that may (``with_aliases``); the rewrite checks the
method it wrote has that shape (``bare_forwarding``), removes it as it removes a deleted one (its comments and
``# Copied from`` marker with it), and sets the line among the class attributes at the top of the class (where
``utils/check_copies.py`` wants a class's only unnamed block). Verification runs the class like any other change.
"""

from __future__ import annotations

import dataclasses

import libcst as cst
import libcst.matchers as m

from codemod.analyse.fallback import FallbackKind
from codemod.analyse.index import Override
from codemod.rules.generic_mixin import REFUSING_EMBEDS
from codemod.sources import METHOD, MIXIN_CLASS, FileKind
from codemod.transform.plan import Edit, EditKind, Plan, mixin_import

#: the class-level line that takes the place of the method
ASSIGNMENT = f"{METHOD} = {MIXIN_CLASS}.{REFUSING_EMBEDS}"
#: the names of ``**kwargs`` that 4.45's ``_validate_model_kwargs`` reads alike (either lets forward's names through)
KWARGS_NAMES = frozenset({"kwargs", "model_kwargs"})
#: the edits whose result may be a bare ``super()`` call
_ALIASABLE_KINDS = frozenset({EditKind.REDUCE, EditKind.TRIM})


def may_alias(o: Override) -> bool:
    """Whether the class of ``o`` may name the mixin's variant in place of a method that only calls ``super()``:
    ``super()`` is the mixin's, its bases are known, and the file is a plain modeling file of the package."""
    return (
        o.in_library
        and o.kind is FileKind.MODELING
        and o.generated_from is None
        and o.fallback is not None
        and o.fallback.kind is FallbackKind.MIXIN
        and not o.fallback.adds_mixin_base
        and o.inherits_generation_mixin is not None
    )


def with_aliases(
    plan: Plan, overrides: dict[str, Override], mixin_installed: bool, override_enables_generation: bool
) -> Plan:
    """``plan`` with ``Edit.alias`` set on the reductions and trims of the overrides that may name the mixin's
    variant, in shards whose every changed member may (a copy group changes alike); ``mixin_installed``: the mixin is
    the one this tool installs (a stub era), which carries the variant; ``override_enables_generation``: the release
    decides ``can_generate()`` by whether the class overrides the method (4.45), so a class without GenerationMixin
    among its bases gets it there with the line."""
    if not mixin_installed:
        return plan
    shards = []
    for shard in plan.shards:
        changed = {e.override_id for e in shard.edits if e.kind in _ALIASABLE_KINDS and e.override_id is not None}
        if changed and all(oid in overrides and may_alias(overrides[oid]) for oid in changed):
            edits = [dataclasses.replace(e, alias=True) if e.kind in _ALIASABLE_KINDS else e for e in shard.edits]
            with_base = {(e.file, e.class_name) for e in edits if e.kind is EditKind.ADD_MIXIN_BASE}
            for oid in sorted(changed):
                o = overrides[oid]
                if (
                    override_enables_generation
                    and o.inherits_generation_mixin is False
                    and (o.file, o.class_name) not in with_base
                ):
                    edits.append(
                        Edit(
                            o.file,
                            o.class_name,
                            EditKind.ADD_MIXIN_BASE,
                            oid,
                            "can_generate() reads the mixin's name in the method the class names: it needs "
                            "GenerationMixin among its bases",
                            mixin_import(o),
                            alias=True,
                        )
                    )
            shard = dataclasses.replace(shard, edits=tuple(edits))
        shards.append(shard)
    return dataclasses.replace(plan, shards=tuple(shards))


def _forwarding_call(ids: str, kwargs: str) -> m.Call:
    return m.Call(
        func=m.Attribute(value=m.Call(func=m.Name("super"), args=[]), attr=m.Name(METHOD)),
        args=[m.Arg(value=m.Name(ids), keyword=None, star=""), m.Arg(value=m.Name(kwargs), keyword=None, star="**")],
    )


def bare_forwarding(function: cst.FunctionDef) -> bool:
    """Whether ``function`` is nothing but ``return super().prepare_inputs_for_generation(input_ids, **kwargs)`` under
    ``(self, input_ids, **kwargs)`` (or ``**model_kwargs``; or the same through a ``model_inputs`` local), comments
    aside: the method the mixin's variant is, under the same signature."""
    if function.decorators or function.asynchronous is not None or function.name.value != METHOD:
        return False
    params = function.params
    star = params.star_kwarg
    if (
        params.posonly_params
        or params.kwonly_params
        or not isinstance(params.star_arg, cst.MaybeSentinel)
        or not isinstance(star, cst.Param)
        or star.name.value not in KWARGS_NAMES
        or [p.name.value for p in params.params] != ["self", "input_ids"]
        or any(p.default is not None for p in params.params)
    ):
        return False
    body = function.body
    if not isinstance(body, cst.IndentedBlock):
        return False
    call = _forwarding_call("input_ids", star.name.value)
    statements = list(body.body)
    direct = m.SimpleStatementLine(body=[m.Return(value=call)])
    through_local = (
        m.SimpleStatementLine(body=[m.Assign(targets=[m.AssignTarget(target=m.Name("model_inputs"))], value=call)]),
        m.SimpleStatementLine(body=[m.Return(value=m.Name("model_inputs"))]),
    )
    return (len(statements) == 1 and m.matches(statements[0], direct)) or (
        len(statements) == 2 and all(m.matches(s, t) for s, t in zip(statements, through_local, strict=False))
    )
