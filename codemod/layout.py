"""Where output goes decides its layout: a terminal's width, or, for a file, a pipe or a CI log, none.

Without a terminal rich assumes 80 columns: it folds a table's last column a few letters per line and
wraps sentences mid-phrase. ``lay_out`` gives such a console a width no line reaches, and tables made
for it take the width of their content (``fills_width``) instead of filling one.
"""

from __future__ import annotations

import io

from rich.console import Console

#: the width of a console that is not a terminal: wider than any line, so nothing wraps
LOG_WIDTH = 1 << 16


def lay_out(console: Console) -> None:
    """A terminal keeps its own width (``COLUMNS`` too); anything else is laid out for a log, whatever
    ``COLUMNS`` says: a CI runner or a test harness exports ``COLUMNS=80`` with no terminal behind it.

    A file name may be any bytes (Python decodes the others to lone surrogates): the stream writes them back as
    the bytes they were, where its strict UTF-8 would stop the command with a traceback."""
    if isinstance(console.file, io.TextIOWrapper) and console.file.errors == "strict":
        console.file.reconfigure(errors="surrogateescape")
    console.width = None if console.file.isatty() else LOG_WIDTH  # type: ignore[assignment]  # rich types the setter int; it stores what Console(width=None) does: None measures the terminal again


def fills_width(console: Console) -> bool:
    """Whether a table should stretch to the console's width (a terminal), or keep its content's (a log)."""
    return console.width < LOG_WIDTH
