"""The checkout's own ``GenerationMixin.prepare_inputs_for_generation``, and what it implements.

Classification is relative to this. Its behaviours are derived by running the same recognisers
over its body as over the overrides, so a mixin of a release this tool has never seen is judged by
what it visibly does; statements no rule understands are listed and add no behaviour.

Eras (see DESIGN.md): a stub that raises (≤ 4.45), a generic version slicing by
``cache_position`` (4.46 – 5.0), and one slicing by ``next_sequence_length`` (later 5.x).
For a stub, classification is relative to the generic implementation that ``apply`` installs.
"""

from __future__ import annotations

import ast
import dataclasses
import textwrap
from pathlib import Path

from codemod.analyse.analysis import BodyAnalysis, Unrecognised
from codemod.analyse.target import Target, TargetOrigin, for_checkout, pretrained_model_generative
from codemod.checkout import Checkout
from codemod.contracts import Vocabulary
from codemod.rules.slice_to_last_token import CACHE_BEFORE_FIRST_STEP
from codemod.sources import METHOD, MIXIN_CLASS, READ_ERRORS, read_source

__all__ = [
    "MIXIN_CLASS",
    "Era",
    "MixinProfile",
    "built_in_profile",
    "hoisted_profile",
    "profile_from_analysis",
    "profile_from_source",
    "read_profile",
]


class Era(Vocabulary):
    STUB = "stub"
    CACHE_POSITION = "cache-position"
    NEXT_SEQUENCE_LENGTH = "next-sequence-length"
    UNKNOWN = "unknown"


@dataclasses.dataclass(frozen=True)
class MixinProfile:
    #: where the implementation classification is relative to: "path:line", or the hoisted rule
    source: str
    era: Era
    #: the checkout's own mixin is a stub and we compare against the implementation apply installs
    hoisted: bool
    behaviours: frozenset[str]
    details: tuple[tuple[str, str], ...]  # behaviour -> detail, as recognised
    #: keys dropped outside the first step (5.x ``MULTIMODAL_INPUTS_TO_DROP_OUTSIDE_PREFILL``)
    first_step_only_inputs: tuple[str, ...]
    #: keys the mixin never forwards
    never_forwarded: tuple[str, ...]
    unrecognised: tuple[Unrecognised, ...]
    analysis: BodyAnalysis | None = None
    #: behaviours ``generate()`` takes care of outside this method (name, facets)
    generate_behaviours: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = ()
    #: the release decides ``can_generate()`` by whether the class overrides this method (4.45 – 4.51,
    #: for classes that do not inherit GenerationMixin): deleting such an override disables generate()
    override_enables_generation: bool = False
    #: the release the scan is judged against (None: built only from source text, in tests)
    target: Target | None = None
    #: the target's PreTrainedModel is a GenerationMixin (until 4.51), or not (from 4.52); None: no release
    pretrained_model_generative: bool | None = None

    def behaviour_facets(self) -> dict[str, list[dict[str, str]]]:
        """Behaviour name -> the facets of each occurrence, in the method or in generate()."""
        found: dict[str, list[dict[str, str]]] = {}
        if self.analysis is not None:
            for r in self.analysis.recognised:
                found.setdefault(r.behaviour, []).append(dict(r.facets))
        for name, facets in self.generate_behaviours:
            found.setdefault(name, []).append(dict(facets))
        return found

    def detail(self, behaviour: str) -> str:
        return dict(self.details).get(behaviour, "")

    @property
    def implements(self) -> bool:
        return self.era is not Era.STUB


def _is_stub(function: ast.FunctionDef) -> bool:
    """The ≤ 4.45 mixin: a method whose body (docstring aside) only raises."""
    body = [s for s in function.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    return len(body) == 1 and isinstance(body[0], ast.Raise)


def _string_tuple(text: str, name: str) -> tuple[str, ...]:
    """A module-level ``NAME = ("a", "b", ...)`` (or list/set) of strings, read without importing."""
    for node in ast.parse(text).body:
        if isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == name for t in targets) and node.value is not None:
                try:
                    value = ast.literal_eval(node.value)
                except ValueError:
                    return ()
                return tuple(sorted(str(v) for v in value))
    return ()


def profile_from_source(text: str, source: str, *, hoisted: bool = False, helpers_text: str = "") -> MixinProfile:
    """Profile the mixin method found in ``text`` (the mixin module's source)."""
    # Only the class's method is analysed; parsing the whole 5,000-line module with libcst is slow,
    # so the method is cut out with ``ast`` first.
    tree = ast.parse(text)
    method_node = None
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == MIXIN_CLASS:
            method_node = next((n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == METHOD), None)
    if method_node is None:
        return MixinProfile(source, Era.UNKNOWN, hoisted, frozenset(), (), (), (), ())
    located = f"{source}:{method_node.lineno}"
    if _is_stub(method_node):
        return MixinProfile(located, Era.STUB, hoisted, frozenset(), (), (), (), ())
    import libcst as cst
    from libcst.metadata import MetadataWrapper, PositionProvider

    from codemod.analyse.recognise import analyse_function

    lines = text.splitlines(keepends=True)
    start = min([d.lineno for d in method_node.decorator_list] + [method_node.lineno])
    snippet = textwrap.dedent("".join(lines[start - 1 : method_node.end_lineno]))
    wrapper = MetadataWrapper(cst.parse_module(snippet))
    function = next(n for n in wrapper.module.body if isinstance(n, cst.FunctionDef))
    analysis = analyse_function(function, wrapper.resolve(PositionProvider), line_offset=start - 1)
    positions = _positions_in_generate(tree) if "position-ids-from-mask" not in analysis.behaviours else ()
    outside = positions + _cache_before_first_step(tree)
    return profile_from_analysis(
        analysis,
        located,
        hoisted=hoisted,
        generate_behaviours=outside,
        first_step_only=_string_tuple(text + "\n" + helpers_text, "MULTIMODAL_INPUTS_TO_DROP_OUTSIDE_PREFILL"),
    )


def profile_from_analysis(
    analysis: BodyAnalysis,
    source: str,
    *,
    hoisted: bool = False,
    generate_behaviours: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (),
    first_step_only: tuple[str, ...] = (),
) -> MixinProfile:
    """The profile of an implementation already analysed: the mixin's, or a parent class's own override
    that a child's deletion or ``super()`` would reach (classification is relative to that)."""
    behaviours = analysis.behaviours
    if "slice-by-next-sequence-length" in behaviours:
        era = Era.NEXT_SEQUENCE_LENGTH
    elif "slice-by-cache-position" in behaviours:
        era = Era.CACHE_POSITION
    else:
        era = Era.UNKNOWN
    never = tuple(sorted(set(analysis.dropped) | _never_forwarded(analysis)))
    return MixinProfile(
        source=source,
        era=era,
        hoisted=hoisted,
        behaviours=behaviours | {name for name, _ in generate_behaviours},
        generate_behaviours=generate_behaviours,
        details=tuple((r.behaviour, r.detail) for r in analysis.recognised),
        first_step_only_inputs=first_step_only,
        never_forwarded=never,
        unrecognised=analysis.unrecognised,
        analysis=analysis,
    )


def _mixin_methods(tree: ast.Module) -> dict[str, ast.FunctionDef]:
    """The methods of the module's ``GenerationMixin``, by name."""
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == MIXIN_CLASS:
            return {item.name: item for item in node.body if isinstance(item, ast.FunctionDef)}
    return {}


def _cache_before_first_step(tree: ast.Module) -> tuple[tuple[str, tuple[tuple[str, str], ...]], ...]:
    """Whether ``generate()`` makes the cache before the first step for a model that declares nothing about caches
    (remote code), and whether that still-empty cache is true.

    Read from ``_prepare_cache_for_generation`` (4.42 on): until 4.53 a cache is made only for a model that sets
    ``_supports_cache_class`` (``_supports_default_dynamic_cache`` asks it); from 4.54.0 for every model but the
    stateful ones, an empty ``DynamicCache()`` (``len()`` 0: false); from 4.56.0 built from the model's config
    (``{"config": self.config}``), a layer per hidden layer: true while still empty. Then an override's cache test
    holds on the prompt step.
    """
    methods = _mixin_methods(tree)
    prepare, supports = methods.get("_prepare_cache_for_generation"), methods.get("_supports_default_dynamic_cache")
    if prepare is None or supports is None or "_supports_cache_class" in ast.unparse(supports):
        return ()
    empty = "truthy" if "'config': self.config" in ast.unparse(prepare) else "falsy"
    return ((CACHE_BEFORE_FIRST_STEP, (("empty", empty), ("where", "generate(), before the first step"))),)


def _positions_in_generate(tree: ast.Module) -> tuple[tuple[str, tuple[tuple[str, str], ...]], ...]:
    """Input preparation that later mixins moved into ``generate()``: position_ids built once.

    5.x builds ``position_ids`` from the mask in ``_prepare_position_ids_for_generation`` (padding
    set to 0, not 1) and only slices them here.
    """
    item = _mixin_methods(tree).get("_prepare_position_ids_for_generation")
    code = ast.unparse(item) if item is not None else ""
    if ".cumsum(-1) - 1" not in code:
        return ()
    padding = "0" if "masked_fill(attention_mask == 0, 0)" in code else "1"
    facets = (
        ("padding", padding),
        ("slice", "new tokens"),
        ("when", "forward accepts position_ids"),
        ("where", "once, in generate()"),
    )
    return (("position-ids-from-mask", facets),)


def _never_forwarded(analysis: BodyAnalysis) -> set[str]:
    out: set[str] = set()
    for r in analysis.recognised:
        never = r.facet("never") if r.behaviour == "forward-kwargs" else None
        if never:
            out.update(never.split(","))
    return out


def hoisted_profile() -> MixinProfile:
    """The profile of the generic implementation ``apply`` installs into a stub mixin."""
    from codemod.rules import generic_mixin  # the implementation we ship, as source text

    profile = profile_from_source(generic_mixin.MODULE_SOURCE, "rules/generic_mixin.py", hoisted=True)
    return profile


def built_in_profile() -> MixinProfile:
    """The generic implementation this tool ships, as what a tree without a target is judged against:
    nothing is installed anywhere (``hoisted`` is false)."""
    profile = hoisted_profile()
    return dataclasses.replace(
        profile,
        source=f"{profile.source} (built-in, 4.46 – 5.2 style)",
        hoisted=False,
        target=Target(TargetOrigin.BUILT_IN),
    )


def read_profile(checkout: Checkout, target: Target | None = None) -> MixinProfile:
    """The profile classification is relative to, for this checkout and target (default: ``for_checkout``).

    A checkout judged against itself whose mixin is a stub is compared with the generic implementation
    ``apply`` installs (``hoisted``). A tree or file is judged against its target's mixin as it is (a
    stub there implements nothing: nothing is installed into a release), or, without a target, against
    the generic implementation this tool ships, and the report says so.
    """
    target = target if target is not None else for_checkout(checkout)
    path: Path | None = target.mixin_file
    package_dir = target.package_dir
    if path is None or package_dir is None:  # a mixin file lies in a package
        return built_in_profile()
    text = read_source(path)
    shown = (
        checkout.relative(path)
        if target.origin is TargetOrigin.CHECKOUT
        else f"transformers/{path.resolve().relative_to(package_dir.resolve()).as_posix()}"
    )
    profile = profile_from_source(text, shown)
    if profile.era is Era.STUB and target.origin is TargetOrigin.CHECKOUT:
        hoisted = hoisted_profile()
        profile = dataclasses.replace(
            hoisted, source=f"{hoisted.source} (installed by apply; {profile.source} is a stub)"
        )
    return dataclasses.replace(
        profile,
        override_enables_generation=_override_enables_generation(target.package_dir),
        target=target,
        pretrained_model_generative=pretrained_model_generative(target),
    )


#: the text of the check in ``PreTrainedModel.can_generate`` that makes an override enable generate()
_CAN_GENERATE_BY_OVERRIDE = '"GenerationMixin" not in str(cls.prepare_inputs_for_generation)'


def _override_enables_generation(package_dir: Path | None) -> bool:
    if package_dir is None:
        return False
    try:
        text = read_source(package_dir / "modeling_utils.py")
    except READ_ERRORS:
        return False
    return _CAN_GENERATE_BY_OVERRIDE in text
