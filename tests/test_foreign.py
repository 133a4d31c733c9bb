"""Model code nobody here wrote: ``fixtures/foreign``, a tree of third-party classes, judged against what a
deletion or ``super()`` really reaches (``codemod.analyse.fallback``) and never rewritten into code that cannot run.

The tree is scanned as a private copy named ``foreign`` (its files import each other relatively and as
``foreign.…``). Targets are stand-in ``transformers`` packages (``make_target_package``): one whose
``PreTrainedModel`` is a GenerationMixin (as until 4.51) and one whose is not (as from 4.52); the real
releases are checked in the ``network`` tests at the end.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from codemod.analyse.classify import Action
from codemod.analyse.fallback import FallbackKind
from codemod.analyse.scan import ScanResult, scan
from codemod.analyse.target import Target, TargetOrigin, from_path, from_release
from codemod.checkout import resolve
from codemod.cli import app
from codemod.transform.apply import compute_changes
from codemod.transform.plan import EditKind

from .conftest import FOREIGN, copy_fixture, make_target_package
from .flakes import assert_no_new_flakes

runner = CliRunner()

PRE_452 = "4.51.0.fixture"
POST_452 = "4.52.0.fixture"


@pytest.fixture
def targets(tmp_path: Path) -> dict[str, Path]:
    return {
        PRE_452: make_target_package(tmp_path / "pre", PRE_452, pretrained_generative=True),
        POST_452: make_target_package(tmp_path / "post", POST_452, pretrained_generative=False),
    }


def scan_tree(root: Path, target: Target | None = None) -> ScanResult:
    return scan(resolve(root, with_git=False), use_cache=False, jobs=1, target=target)


def outcome(result: ScanResult, class_name: str) -> tuple[Action, FallbackKind, str, list[EditKind]]:
    """(the action the plan ends with, the fallback, every reason and hold in one text, the edits)."""
    [finding] = [f for f in result.findings if f.override.class_name == class_name]
    # as `codemod apply --mark` plans a tree (nothing verifies it): a kept override's reason shows as its mark
    plan = compute_changes(result, mark_kept=True, hold_unproven=True).plan
    oid = finding.override.id
    texts = [r.text for r in finding.reasons] + [h.detail for h in plan.held if h.subject == oid]
    edits = [e.kind for e in plan.edits() if e.override_id == oid]
    return plan.action_of(oid), finding.override.fallback.kind, " | ".join(texts), edits  # type: ignore[return-value]


#: (class, target, action, fallback, a fragment of its reasons, the edits) — each pattern of issue 9
CASES = [
    pytest.param(
        "GenerationWrapper",
        None,
        Action.KEEP,
        FallbackKind.NONE,
        "would leave GenerationWrapper without the method",
        [],
        id="wrapper-delegating-to-self.model",
    ),
    pytest.param(
        "PlainLM", None, Action.KEEP, FallbackKind.NONE, "no base defines it (object)", [], id="base-less-open-dict"
    ),
    pytest.param("TinyLM", None, Action.KEEP, FallbackKind.NONE, "no base defines it (nn.Module)", [], id="nn-module"),
    pytest.param(
        "AdapterModel",
        None,
        Action.KEEP,
        FallbackKind.UNKNOWN,
        "base PushToHubMixin cannot be resolved: imported from transformers.utils, and no target release",
        [],
        id="stored-bound-method-no-target",
    ),
    pytest.param(
        "AdapterModel",
        POST_452,
        Action.KEEP,
        FallbackKind.NONE,
        "no base defines it (torch.nn.Module)",
        [],
        id="stored-bound-method-with-target",
    ),
    pytest.param(
        "AdapterForCausalLM",
        None,
        Action.KEEP,
        FallbackKind.MIXIN,
        "a method stored on the instance and bound to another object at run time",
        [EditKind.MARK],
        id="stored-bound-method-reaching-the-mixin",
    ),
    pytest.param(
        "BaseVLForChat",
        None,
        Action.DELETE,
        FallbackKind.PARENT,
        "judged against the override of BaseVL (modeling_base.py:14)",
        [EditKind.DELETE],
        id="same-file-child-identical-to-its-parent",
    ),
    pytest.param(
        "VLForImages",
        None,
        Action.REDUCE,
        FallbackKind.PARENT,
        "pixel_values only on the first step",
        [EditKind.REDUCE, EditKind.MARK],
        id="other-file-child-first-step-pixels",
    ),
    pytest.param(
        "VLWithModalities",
        None,
        Action.REDUCE,
        FallbackKind.PARENT,
        "modalities is passed on; the dict BaseVL returns drops it",
        [EditKind.REDUCE, EditKind.MARK],
        id="absolute-import-child-adds-modalities",
    ),
    pytest.param(
        "LegacyForCausalLM",
        PRE_452,
        Action.DELETE,
        FallbackKind.MIXIN,
        "",
        [EditKind.DELETE],
        id="pretrained-only-before-4.52",
    ),
    pytest.param(
        "LegacyForCausalLM",
        POST_452,
        Action.DELETE,
        FallbackKind.MIXIN,
        "a deletion or super() adds GenerationMixin to the bases",
        [EditKind.DELETE, EditKind.ADD_MIXIN_BASE],
        id="pretrained-only-from-4.52",
    ),
    pytest.param(
        "LegacyForCausalLM",
        None,
        Action.DELETE,
        FallbackKind.MIXIN,
        "with no target release, PreTrainedModel may not be a GenerationMixin",
        [EditKind.DELETE, EditKind.ADD_MIXIN_BASE],
        id="pretrained-only-built-in",
    ),
    pytest.param(
        "PastForCausalLM",
        None,
        Action.KEEP,
        FallbackKind.MIXIN,
        "passes past_key_values from its parameter 'past', which generate() does not fill",
        [EditKind.MARK],
        id="legacy-past-parameter",
    ),
    pytest.param(
        "MaskedForMaskedLM",
        None,
        Action.KEEP,
        FallbackKind.MIXIN,
        "refused: MaskedForMaskedLM.forward takes neither use_cache nor **kwargs",
        [EditKind.MARK],
        id="masked-lm-closed-dict-forward-without-use-cache",
    ),
    pytest.param(
        "StaticShapeForCausalLM",
        None,
        Action.KEEP,
        FallbackKind.MIXIN,
        "refused: the statement at line 17, kept in front of super(), changes input_ids, which the fallback "
        "prepares itself",
        [EditKind.MARK],
        id="kept-statement-slicing-what-the-mixin-slices",
    ),
    pytest.param(
        "ImageForCausalLM",
        None,
        Action.REDUCE,
        FallbackKind.MIXIN,
        "kept as is in front of super(): if cache_position[0] != 0 and (not self.config.images_every_step)",
        [EditKind.REDUCE, EditKind.MARK],
        id="body-resets-a-parameter",
    ),
    pytest.param(
        "LaterImageForCausalLM",
        None,
        Action.REDUCE,
        FallbackKind.MIXIN,
        "pixel_values is set to None after the first step",
        [EditKind.REDUCE, EditKind.MARK],
        id="later-step-by-position",
    ),
    pytest.param(
        "StaleForCausalLM",
        None,
        Action.KEEP,
        FallbackKind.MIXIN,
        "its class's _update_model_kwargs_for_generation never moves cache_position on",
        [EditKind.MARK],
        id="own-kwargs-update-leaves-cache-position-stale",
    ),
    pytest.param(
        "StaleChatForCausalLM",
        None,
        Action.KEEP,
        FallbackKind.MIXIN,
        "its class's _update_model_kwargs_for_generation never moves cache_position on",
        [EditKind.MARK],
        id="a-base-in-another-file-leaves-cache-position-stale",
    ),
    pytest.param(
        "CopiedForCausalLM",
        None,
        Action.REDUCE,
        FallbackKind.MIXIN,
        "pixel_values only on the first step",
        [EditKind.REDUCE, EditKind.MARK, EditKind.DROP_MARKER],
        id="copied-from-outside-the-tree-reduced",
    ),
]


@pytest.mark.parametrize(("class_name", "version", "action", "fallback", "reason", "edits"), CASES)
def test_each_pattern_ends_in_the_right_action_with_the_right_reason(
    foreign: Path,
    targets: dict[str, Path],
    class_name: str,
    version: str | None,
    action: Action,
    fallback: FallbackKind,
    reason: str,
    edits: list[EditKind],
) -> None:
    target = from_path(targets[version]) if version else None
    got_action, got_fallback, texts, got_edits = outcome(scan_tree(foreign, target), class_name)
    assert (got_action, got_fallback, got_edits) == (action, fallback, edits), texts
    assert reason in texts


def test_a_parent_found_through_an_absolute_import_is_the_same_parent(foreign: Path) -> None:
    result = scan_tree(foreign)
    parents = {
        f.override.class_name: f.override.fallback.override_id
        for f in result.findings
        if f.override.fallback.kind is FallbackKind.PARENT
    }
    assert parents == dict.fromkeys(["BaseVLForChat", "VLForImages", "VLWithModalities"], "modeling_base.py::BaseVL")


# --------------------------------------------------------------------------------------------- the CLI

#: files the built-in run changes, and what it changes in each (asserted below)
CHANGED = [
    "adapters.py",
    "modeling_base.py",
    "modeling_copied.py",
    "modeling_fewer.py",
    "modeling_images.py",
    "modeling_legacy.py",
    "modeling_masked.py",
    "modeling_past.py",
    "modeling_stale.py",
    "modeling_stale_chat.py",
    "modeling_static.py",
    "modeling_vl.py",
]
#: files left as they are, and why
NOOP = {
    "wrappers.py": "no base defines the method: deleting or reducing would break every class; kept, and "
    "nothing is overwritten, so not marked",
    "__init__.py": "no override",
}


def apply_tree(root: Path, *args: str) -> str:
    result = runner.invoke(app, ["apply", str(root), "--no-cache", "--mark", *args])
    assert result.exit_code == 0, result.output
    return result.output


def test_apply_on_the_tree_writes_only_code_that_can_run(foreign: Path, tmp_path: Path) -> None:
    before = copy_fixture(FOREIGN, tmp_path / "before")
    output = apply_tree(foreign, "--target", "built-in")
    changed = sorted(p.name for p in foreign.glob("*.py") if p.read_text() != (before / p.name).read_text())
    assert changed == CHANGED, output
    assert sorted(set(p.name for p in foreign.glob("*.py")) - set(changed)) == sorted(NOOP)
    for name in changed:
        compile((foreign / name).read_text(encoding="utf-8"), name, "exec", dont_inherit=True)
    assert_no_new_flakes(before, foreign, changed)
    # a child reduced onto its closed-dict parent re-creates the key the parent drops
    vl = (foreign / "modeling_vl.py").read_text()
    assert vl.count("super().prepare_inputs_for_generation(") == 2
    assert '        if cache_position[0] == 0:\n            model_inputs["pixel_values"] = pixel_values\n' in vl
    assert '        model_inputs["modalities"] = modalities\n' in vl
    # a parameter the kept statement resets stays in the signature and reaches super() as it left it
    images = (foreign / "modeling_images.py").read_text()
    image, later = images.split("class LaterImageForCausalLM")
    assert (
        "        if cache_position[0] != 0 and not self.config.images_every_step:\n            pixel_values = None\n"
        in image
    )
    signature = image.split("def prepare_inputs_for_generation(")[1].split("):")[0]
    assert "pixel_values=pixel_values" in image and "pixel_values=None" in signature
    # under the step's position alone, the reduction sets the key to None after super(), under the same test
    assert '        if cache_position[0] != 0:\n            model_inputs["pixel_values"] = None\n' in later
    assert "pixel_values=pixel_values" not in later
    # with no target release, PreTrainedModel may not be a GenerationMixin: it is added, with its import
    legacy = (foreign / "modeling_legacy.py").read_text()
    assert "class LegacyForCausalLM(LegacyPreTrainedModel, GenerationMixin):" in legacy
    assert "from transformers import PreTrainedModel\nfrom transformers import GenerationMixin\n" in legacy
    assert "def prepare_inputs_for_generation" not in legacy
    # a method copied from outside the tree, reduced, loses its marker (it copies nothing now)
    copied = (foreign / "modeling_copied.py").read_text()
    assert (
        "    # Copied from transformers" not in copied and copied.count("super().prepare_inputs_for_generation(") == 1
    )
    # a second apply changes nothing
    snapshot = {p.name: p.read_text() for p in foreign.glob("*.py")}
    apply_tree(foreign)
    assert {p.name: p.read_text() for p in foreign.glob("*.py")} == snapshot


def test_without_verify_a_change_only_verification_proves_is_held_back(foreign: Path, tmp_path: Path) -> None:
    """Model code outside transformers gets no verification from a plain apply: a deletion that would change
    what generate() feeds the model (here position_ids the override never passed) is held back, with why."""
    before = (foreign / "modeling_fewer.py").read_bytes()
    result = runner.invoke(app, ["apply", str(foreign), "--no-cache"])
    assert result.exit_code == 0, result.output
    assert (foreign / "modeling_fewer.py").read_bytes() == before
    held = [line for line in result.output.splitlines() if "FewerForCausalLM" in line]
    assert held and "unproven without --verify" in held[0] and "position_ids" in result.output, result.output
    # the scan still says what it is and what a verified apply would try
    finding = next(f for f in scan_tree(foreign).findings if f.override.class_name == "FewerForCausalLM")
    assert finding.action is Action.DELETE and finding.flow


def test_a_target_where_pretrained_model_is_generative_adds_no_base(foreign: Path, targets: dict[str, Path]) -> None:
    apply_tree(foreign, "--mixin", str(targets[PRE_452]))
    legacy = (foreign / "modeling_legacy.py").read_text()
    assert "class LegacyForCausalLM(LegacyPreTrainedModel):" in legacy
    assert "import GenerationMixin" not in legacy and "def prepare_inputs_for_generation" not in legacy


def scan_json(*args: str) -> dict:
    result = runner.invoke(app, ["scan", *args, "--format", "json", "--no-cache"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_the_report_says_what_the_tree_is_judged_against(foreign: Path, targets: dict[str, Path]) -> None:
    built_in = scan_json(str(foreign), "--target", "built-in")["mixin"]
    assert (built_in["judged_against"], built_in["release"], built_in["hoisted"]) == ("built-in", None, False)
    assert built_in["pretrained_model_generative"] is None and built_in["era"] == "cache-position"
    document = scan_json(str(foreign), "--mixin", str(targets[POST_452]))
    mixin = document["mixin"]
    assert (mixin["judged_against"], mixin["release"], mixin["hoisted"]) == ("path", POST_452, False)
    assert mixin["pretrained_model_generative"] is False and mixin["source"].startswith(
        "transformers/generation/utils.py:"
    )
    assert document["summary"]["by_fallback"] == {"mixin": 12, "parent-override": 3, "none": 4, "unknown": 0}
    [chat] = [f for f in document["findings"] if f["class"] == "BaseVLForChat"]
    assert chat["fallback"] == {
        "kind": "parent-override",
        "class": "BaseVL",
        "file": "modeling_base.py",
        "line": 14,
        "release": None,
        "override": "modeling_base.py::BaseVL",
        "adds_mixin_base": False,
        "detail": "the override of BaseVL (modeling_base.py:14)",
    }
    [legacy] = [f for f in document["findings"] if f["class"] == "LegacyForCausalLM"]
    assert legacy["fallback"]["kind"] == "mixin" and legacy["fallback"]["adds_mixin_base"] is True
    assert legacy["fallback"]["release"] == POST_452


def test_the_table_header_says_what_the_tree_is_judged_against(foreign: Path, targets: dict[str, Path]) -> None:
    result = runner.invoke(app, ["scan", str(foreign), "--no-cache", "--mixin", str(targets[PRE_452])])
    assert result.exit_code == 0, result.output
    assert f"judged against transformers {PRE_452} (--mixin" in " ".join(result.stdout.split())


@pytest.mark.parametrize(
    ("args", "message"),
    [
        pytest.param(["--target", "4.57.1", "--mixin", "."], "give --target or --mixin, not both", id="both"),
        pytest.param(["--mixin", "/nonexistent/transformers"], "--mixin: no such directory", id="missing-mixin"),
        pytest.param(
            ["--mixin", "."], "is neither a transformers checkout nor a transformers package", id="not-a-package"
        ),
    ],
)
def test_target_usage_errors(foreign: Path, args: list[str], message: str) -> None:
    result = runner.invoke(app, ["scan", str(foreign), "--no-cache", *[str(foreign) if a == "." else a for a in args]])
    assert result.exit_code == 2
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1 and message in result.stderr


def test_a_checkout_is_judged_against_itself_only(mini_checkout: Path, targets: dict[str, Path]) -> None:
    result = runner.invoke(app, ["scan", str(mini_checkout), "--no-cache", "--mixin", str(targets[POST_452])])
    assert result.exit_code == 2
    assert "is judged against its own mixin" in result.stderr


def test_a_scan_cached_without_a_module_sees_it_appear(foreign: Path) -> None:
    """A base's module that was not there is part of what a cached scan depends on."""
    (foreign / "modeling_base.py").rename(foreign / "elsewhere.py")
    first = scan(resolve(foreign, with_git=False), jobs=1)
    assert {f.override.class_name: f.override.fallback.kind for f in first.findings}[
        "VLForImages"
    ] is FallbackKind.UNKNOWN
    shutil.copy(foreign / "elsewhere.py", foreign / "modeling_base.py")
    again = scan(resolve(foreign, with_git=False), jobs=1)
    assert {f.override.class_name: f.override.fallback.kind for f in again.findings}[
        "VLForImages"
    ] is FallbackKind.PARENT


# --------------------------------------------------------------------------------------------- real releases


@pytest.mark.network
@pytest.mark.slow
@pytest.mark.parametrize(
    ("version", "edits", "generative"),
    [
        # 4.51: PreTrainedModel is a GenerationMixin, but can_generate() looks for the override or the mixin among
        # the bases: a deletion adds it all the same (the 4.45 – 4.51 rule)
        pytest.param("4.51.3", [EditKind.DELETE, EditKind.ADD_MIXIN_BASE], True, id="4.51.3"),
        pytest.param("4.52.4", [EditKind.DELETE, EditKind.ADD_MIXIN_BASE], False, id="4.52.4"),
    ],
)
def test_a_pretrained_only_class_against_real_releases(foreign: Path, version: str, edits, generative: bool) -> None:
    target = from_release(version)
    assert (target.origin, target.release) == (TargetOrigin.RELEASE, version)
    result = scan_tree(foreign, target)
    assert result.profile.pretrained_model_generative is generative
    action, fallback, texts, got = outcome(result, "LegacyForCausalLM")
    assert (action, fallback, got) == (Action.DELETE, FallbackKind.MIXIN, edits), texts
    assert result.profile.source.startswith("transformers/generation/utils.py:")


def test_a_class_level_copy_from_outside_the_tree_is_planned_without_a_crash(foreign: Path) -> None:
    """A class marked ``# Copied from transformers.…`` as a whole, its source outside the tree: the copy cannot
    be checked, so it constrains nothing; its override is planned like any other (a reduction's marker is the
    method's, and a class-level one stays)."""
    (foreign / "modeling_whole_copy.py").write_text(
        (foreign / "modeling_copied.py")
        .read_text(encoding="utf-8")
        .replace(
            "    # Copied from transformers.models.chameleon.modeling_chameleon.ChameleonForConditionalGeneration"
            ".prepare_inputs_for_generation\n",
            "",
        )
        .replace(
            "class CopiedForCausalLM(",
            "# Copied from transformers.models.chameleon.modeling_chameleon."
            "ChameleonForConditionalGeneration with Chameleon->WholeCopy\nclass WholeCopyForCausalLM(",
        ),
        encoding="utf-8",
    )
    result = scan_tree(foreign)
    [finding] = [f for f in result.findings if f.override.class_name == "WholeCopyForCausalLM"]
    assert finding.override.copied_from is not None and finding.override.copied_from.source_id is None
    plan = compute_changes(result, hold_unproven=True).plan
    assert plan.action_of(finding.override.id) is Action.REDUCE
    assert EditKind.DROP_MARKER not in [e.kind for e in plan.edits() if e.override_id == finding.override.id]
