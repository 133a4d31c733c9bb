"""The one root of the errors a user can act on, and the one way their messages hide credentials.

Every stage raises a subclass of :class:`CodemodError` for what the user can fix (a missing path, an
unreadable tree, a release PyPI does not have, a failed API call); ``codemod.cli`` catches it once and
prints one line, exiting with the error's ``exit_code``. Anything else is a bug and keeps its traceback.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

#: credentials in a URL: ``https://user:secret@host`` and a bare token, ``https://ghp_abc123@host``
_URL_CREDENTIALS = re.compile(r"(?<=://)[^/@\s]+@")


class CodemodError(Exception):
    """An error the user can act on: one line on stderr, exit status ``exit_code`` (2: a usage or tool
    error; 1 is what ``diff`` and ``verify`` say about the code, never an error)."""

    exit_code = 2


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """``text`` with every secret, and the credentials of any URL in it, replaced by ``***``."""
    for secret in secrets:
        if secret:
            text = text.replace(secret, "***")
    return _URL_CREDENTIALS.sub("***@", text)


def one_line(text: str) -> str:
    """A message as one line: a tool's multi-line output (pip, git) joined by `` | ``."""
    return " | ".join(line.strip() for line in text.splitlines() if line.strip())
