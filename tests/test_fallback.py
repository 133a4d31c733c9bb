"""``codemod.analyse.fallback`` (what a deletion or super() reaches) and ``codemod.analyse.soundness`` (what an edit must not
leave behind), on small trees written here."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from codemod.analyse.fallback import FallbackKind
from codemod.analyse.index import FactsCache, build_index
from codemod.analyse.soundness import dead_statements, new_problems
from codemod.analyse.target import from_path
from codemod.checkout import resolve

from .conftest import make_target_package

HEADER = "import torch\nfrom torch import nn\nfrom transformers import GenerationMixin, PreTrainedModel\n\n\n"
METHOD = "    def prepare_inputs_for_generation(self, input_ids, **kwargs):\n        return {'input_ids': input_ids}\n"


def write_tree(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text), encoding="utf-8")
    return root


def fallbacks(root: Path, target=None) -> dict[str, tuple[FallbackKind, str | None, str]]:
    index = build_index(resolve(root, with_git=False), cache=FactsCache(None), jobs=1, target=target)
    return {o.class_name: (o.fallback.kind, o.fallback.class_name, o.fallback.detail) for o in index.overrides}


@pytest.mark.parametrize(
    ("files", "expected"),
    [
        pytest.param(
            {"m.py": HEADER + "class A(PreTrainedModel, GenerationMixin):\n" + METHOD + "\n\nclass B(A):\n" + METHOD},
            {"A": (FallbackKind.MIXIN, "GenerationMixin"), "B": (FallbackKind.PARENT, "A")},
            id="same-file-parent",
        ),
        pytest.param(
            {
                "pkg/__init__.py": "from .base import Base\n",
                "pkg/base.py": HEADER + "class Base(PreTrainedModel, GenerationMixin):\n" + METHOD,
                "pkg/child.py": "from pkg import Base\n\n\nclass Child(Base):\n" + METHOD,
            },
            {"Base": (FallbackKind.MIXIN, "GenerationMixin"), "Child": (FallbackKind.PARENT, "Base")},
            id="re-exported-by-a-package-init",
        ),
        pytest.param(
            {
                "m.py": HEADER
                + "class Mixin:\n    pass\n\n\nclass A(Mixin, PreTrainedModel, GenerationMixin):\n"
                + METHOD
            },
            {"A": (FallbackKind.MIXIN, "GenerationMixin")},
            id="a-mixin-without-the-method-is-passed",
        ),
        pytest.param(
            {"m.py": "from accelerate import Thing\n\n\nclass A(Thing):\n" + METHOD},
            {"A": (FallbackKind.UNKNOWN, "Thing")},
            id="a-base-from-outside-the-tree",
        ),
        pytest.param(
            {"m.py": "class A(Undefined):\n" + METHOD},
            {"A": (FallbackKind.UNKNOWN, "Undefined")},
            id="a-name-neither-defined-nor-imported",
        ),
        pytest.param(
            {
                "m.py": HEADER + "class Other:\n    prepare_inputs_for_generation = staticmethod(print)\n\n\n"
                "class A(Other, GenerationMixin):\n" + METHOD
            },
            {"A": (FallbackKind.UNKNOWN, "Other")},
            id="a-method-bound-by-assignment",
        ),
        pytest.param(
            {"m.py": "import torch.nn as tnn\n\n\nclass A(tnn.Module):\n" + METHOD},
            {"A": (FallbackKind.NONE, None)},
            id="an-aliased-torch-module",
        ),
        pytest.param(
            {"m.py": HEADER + "class A(nn.Module):\n" + METHOD + "\n\nclass B(A, GenerationMixin):\n" + METHOD},
            # the MRO is B, A, nn.Module, GenerationMixin: A's override comes first
            {"A": (FallbackKind.NONE, None), "B": (FallbackKind.PARENT, "A")},
            id="python-mro-order",
        ),
    ],
)
def test_fallback_of_each_shape(tmp_path: Path, files: dict[str, str], expected: dict) -> None:
    root = write_tree(tmp_path / "tree", files)
    found = {name: (kind, cls) for name, (kind, cls, _) in fallbacks(root).items()}
    assert found == expected


def test_names_from_transformers_resolve_in_the_target(tmp_path: Path) -> None:
    package = make_target_package(tmp_path / "target", "4.52.0.fixture", pretrained_generative=False)
    root = write_tree(
        tmp_path / "tree",
        {
            "m.py": "import transformers\nfrom transformers.utils import PushToHubMixin\n\n\n"
            "class A(transformers.PreTrainedModel):\n" + METHOD + "\n\nclass B(PushToHubMixin):\n" + METHOD,
        },
    )
    found = fallbacks(root, from_path(package))
    assert found["A"][0] is FallbackKind.MIXIN and "once GenerationMixin is among the bases" in found["A"][2]
    assert found["B"][0] is FallbackKind.NONE and "no base defines it (object)" in found["B"][2]


# --------------------------------------------------------------------------------------------- soundness


@pytest.mark.parametrize(
    ("before", "after", "problems"),
    [
        pytest.param(
            "def f(x):\n    return x\n",
            "def f():\n    return x\n",
            ["UndefinedName: undefined name 'x'"],
            id="a-parameter-removed-that-the-body-reads",
        ),
        pytest.param(
            "def f(x):\n    return x\n",
            "def f():\n    if True:\n        x = None\n    return 1\n",
            ["UnusedVariable: local variable 'x' is assigned to but never used"],
            id="a-dead-store",
        ),
        pytest.param(
            "import os\nimport sys\nprint(os, sys)\n",
            "import os\nimport sys\nprint(os)\n",
            ["UnusedImport: 'sys' imported but unused"],
            id="an-import-left-unused",
        ),
        pytest.param(
            "def f():\n    return 1\n",
            "def f():\n    return 1\n\n\ndef f():\n    return 2\n",
            ["RedefinedWhileUnused: redefinition of unused 'f' from line …"],
            id="a-redefinition",
        ),
    ],
)
def test_new_pyflakes_problems_are_found(before: str, after: str, problems: list[str]) -> None:
    assert new_problems(before, after) == problems


@pytest.mark.parametrize(
    ("before", "after", "why"),
    [
        pytest.param(
            "def f():\n    return x\n",
            "def f():\n    return x\n",
            "a problem the original had already",
            id="old-problem",
        ),
        pytest.param("import os\n", "", "a problem removed", id="removed-problem"),
        pytest.param(
            "class A:\n    pass\n\n\nA = int\n",
            "import sys\n\nprint(sys)\n\n\nclass A:\n    pass\n\n\nA = int\n",
            "an old redefinition moved down by an import added above it (InternLM2's RMSNorm)",
            id="old-problem-on-another-line",
        ),
    ],
)
def test_no_new_problems(before: str, after: str, why: str) -> None:
    assert new_problems(before, after) == [], why


def test_a_kept_statement_that_only_resets_a_parameter_is_dead_once_nothing_reads_it(tmp_path: Path) -> None:
    root = write_tree(
        tmp_path / "tree",
        {
            "m.py": HEADER
            + textwrap.dedent("""\
        class A(PreTrainedModel, GenerationMixin):
            def forward(self, input_ids=None, pixel_values=None, **kwargs):
                return input_ids

            def prepare_inputs_for_generation(self, input_ids, cache_position=None, pixel_values=None, **kwargs):
                if cache_position[0] != 0:
                    pixel_values = None
                return {"input_ids": input_ids, "pixel_values": pixel_values, **kwargs}
        """)
        },
    )
    [override] = build_index(resolve(root, with_git=False), cache=FactsCache(None), jobs=1).overrides
    body = "model_inputs = super().prepare_inputs_for_generation(input_ids, **kwargs)\nreturn model_inputs\n"
    assert "assigns pixel_values, which nothing reads any more" in dead_statements(override, (0,), body)
    passed = "model_inputs = super().prepare_inputs_for_generation(input_ids, pixel_values=pixel_values, **kwargs)\n"
    assert dead_statements(override, (0,), passed + "return model_inputs\n") is None
