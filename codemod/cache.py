"""The tool's per-user cache directory (downloaded releases and the like).

It lives in the platform's user cache (``platformdirs.user_cache_dir("transformers-codemod")``)
so that nothing is ever written into the checkout being migrated or the current directory.
``CODEMOD_CACHE_DIR`` overrides it, so tests and CI can point it at a scratch or shared place.
"""

from __future__ import annotations

import os
from pathlib import Path, PurePath

import platformdirs

#: environment variable that replaces the platform's user cache directory
ENV_VAR = "CODEMOD_CACHE_DIR"
APP_NAME = "transformers-codemod"


def cache_root() -> Path:
    """The cache's root directory, absolute; not created.

    A relative ``CODEMOD_CACHE_DIR`` is made absolute once, here, so that later ``chdir`` calls
    cannot move the cache under the caller's feet.
    """
    override = os.environ.get(ENV_VAR, "").strip()
    if override:
        return Path(override).expanduser().resolve()
    return Path(platformdirs.user_cache_dir(APP_NAME)).resolve()


def cache_dir(*parts: str) -> Path:
    """Create (with parents) and return ``cache_root() / parts...``, e.g. ``cache_dir("releases")``.

    ``parts`` must be plain relative names: an absolute part or ``..`` would let a caller write
    outside the cache, which is the one thing this module exists to prevent.
    """
    for part in parts:
        pure = PurePath(part)
        if not part or pure.is_absolute() or ".." in pure.parts:
            raise ValueError(f"cache_dir: {part!r} is not a relative name inside the cache")
    path = cache_root().joinpath(*parts)
    path.mkdir(parents=True, exist_ok=True)
    return path
