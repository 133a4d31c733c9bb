"""Where each side of a verification runs: the interpreter, the transformers, the code under test.

A transformers checkout runs on itself: its ``src`` is both the code under test and the library,
in an environment made from its own pins. Model code outside transformers (a remote-code
directory, a library's model files, one file) runs on a *release*: the target release for the new
code, and for the old code the release it was written for (``--from``) or the same target. Each
release is fetched once (its sdist: the source and its pins), gets its environment, and goes on
``PYTHONPATH`` with the tree.

A tree is imported as it is used: files in a package (``__init__.py`` up the folders) by their
dotted path with the folder above the package on the path; loose files of a remote-code
repository (``configuration_x.py`` beside ``modeling_x.py``, imported relatively) as a namespace
package named :data:`TREE_PACKAGE`, a link to the tree in a scratch folder, which is how
``trust_remote_code`` imports them too.
"""

from __future__ import annotations

import contextlib
import dataclasses
import shutil
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path, PurePosixPath

from codemod.checkout import Checkout, CheckoutKind
from codemod.environment import Environment, ensure_environment
from codemod.verify.runner import Side

#: the namespace package a tree's loose files are imported under
TREE_PACKAGE = "codemod_tree"


@dataclasses.dataclass(frozen=True)
class TreeModule:
    """How one file of a tree is imported: its dotted name, and the folder that goes on the path."""

    module: str
    #: relative to the tree root: the folder above the file's top package ("" for the tree root)
    path_root: str
    #: imported through the :data:`TREE_PACKAGE` link (loose files), else by its own packages
    linked: bool


def tree_module(root: Path, relative: str) -> TreeModule:
    """The import of ``relative`` (a ``.py`` file below ``root``) as the tree's users import it."""
    parts = PurePosixPath(relative).with_suffix("").parts
    folders = list(parts[:-1])
    # climb while the folder is a package: the topmost package's parent goes on the path
    top = len(folders)
    while top > 0 and (root.joinpath(*folders[:top]) / "__init__.py").is_file():
        top -= 1
    if top == len(folders):  # the file's folder is no package: loose remote-code files
        return TreeModule(".".join([TREE_PACKAGE, *parts]), "/".join(folders), linked=True)
    return TreeModule(".".join(parts[top:]), "/".join(folders[:top]), linked=False)


def release_environment(
    version: str,
    device: str,
    *,
    python: Path | None = None,
    requirements: Sequence[str] = (),
    progress: Callable[[str], None] | None = None,
) -> tuple[Environment, Path]:
    """(environment, the release's ``src``) for a transformers release, fetched and made once."""
    from codemod.checkout import resolve
    from codemod.fetch import fetch_release

    checkout = resolve(fetch_release(version, progress=progress), with_git=False)
    assert checkout.package_dir is not None
    environment = ensure_environment(checkout, device, python=python, extra=tuple(requirements), progress=progress)
    return environment, checkout.package_dir.parent


@contextlib.contextmanager
def tree_side(python: Path, library_src: Path, tree_root: Path, modules: Sequence[TreeModule]) -> Iterator[Side]:
    """A side running the tree at ``tree_root`` on the transformers in ``library_src``."""
    scratch = Path(tempfile.mkdtemp(prefix="codemod-tree-"))
    try:
        (scratch / TREE_PACKAGE).symlink_to(tree_root, target_is_directory=True)
        roots = dict.fromkeys(tree_root / m.path_root for m in modules if not m.linked)
        yield Side(python, (library_src, scratch, *roots), tree_root)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def is_tree(checkout: Checkout) -> bool:
    return checkout.kind in (CheckoutKind.TREE, CheckoutKind.FILE)
