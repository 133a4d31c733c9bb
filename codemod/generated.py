"""Generated pages (docs/rules.md, docs/measurements.md): written when stale, or checked in CI without writing."""

from __future__ import annotations

import sys
from pathlib import Path


def refresh(path: Path, text: str, *, check: bool, command: str) -> int:
    """Write ``text`` to ``path`` where it differs, or with ``check`` only say whether it is current: the exit
    status, 1 for a stale page under ``check`` (the message names ``command``, which writes it)."""
    current = path.read_text(encoding="utf-8") if path.is_file() else None
    if check:
        if current != text:
            print(f"{path} is not current: run `{command}`", file=sys.stderr)
            return 1
        return 0
    if current != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(f"wrote {path}")
    else:
        print(f"{path} is current")
    return 0
