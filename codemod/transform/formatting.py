"""New code laid out as its project lays out its own: ``ruff format`` at the project's line length (transformers' 119).

Pure. The code this tool writes from templates and from other places' source (a hook's statements moved into the
mixin's method one level deeper, a hook attribute naming six inputs) must pass the checkout's ``make quality``
(``ruff format --check``), or the pull request fails its first CI job. ``black`` lays it out: ruff's formatter
follows black's style, and black runs in process on a string. Only the snippet the tool writes is formatted, at
the indent it will have; the file around it stays byte for byte as it was. The line length is the file's project's
(``codemod.style``, read at the edge and passed in): 119 for transformers, what a remote-code repository says for its.
"""

from __future__ import annotations

import functools
import textwrap

import black
from black.mode import Mode, TargetVersion

from codemod.sources import MARK

#: the line length transformers formats to (ruff, ``line-length = 119``): the default; a method body's indent and a
#: class body's
LINE_LENGTH = 119
BODY_INDENT = 8
CLASS_INDENT = 4
#: what ends a mark cut to fit its line
CUT = "…"


@functools.lru_cache(maxsize=8)
def _mode(line_length: int) -> Mode:
    """Quotes stay as written: a moved expression keeps its file's style (transformers' is double quotes already).
    The target is Python 3.9, transformers' oldest: left to guess from a snippet, black assumes Python 2 may read
    it and puts no trailing comma after a call's ``**kwargs`` split one per line, where ruff (told the project's
    target) does."""
    return Mode(line_length=line_length, string_normalization=False, target_versions={TargetVersion.PY39})


def laid_out(code: str, indent: int, line_length: int = LINE_LENGTH) -> str:
    """``code`` (statements at column 0) laid out as they will stand at ``indent`` columns in a file formatted at
    ``line_length``, returned at column 0 again; as it is when black cannot parse it (the rewrite then reports what
    is wrong with it)."""
    if not code.strip():
        return code
    levels = indent // 4
    # nested blocks put the snippet at its indent: black measures its lines where they will be
    header = "".join(f"{'    ' * level}if _:\n" for level in range(levels))
    try:
        formatted = black.format_str(header + textwrap.indent(code, "    " * levels), mode=_mode(line_length))
    except ValueError:  # black's InvalidInput
        return code
    body = formatted.splitlines(keepends=True)[levels:]
    return textwrap.dedent("".join(fitted_marks(line, line_length) for line in body))


def fitted_marks(line: str, line_length: int = LINE_LENGTH) -> str:
    """``line`` (with its indent), or the mark it holds fitted to ``line_length`` (:func:`fitted_mark`)."""
    stripped = line.lstrip(" ")
    if not stripped.startswith(MARK):
        return line
    indent = len(line) - len(stripped)
    end = line[len(line.rstrip("\r\n")) :]
    return " " * indent + fitted_mark(stripped.rstrip("\r\n"), indent, line_length) + end


def fitted_mark(mark: str, indent: int, line_length: int = LINE_LENGTH) -> str:
    """A ``# Overwritten -- a; b; c`` comment the tool wrote, as it fits a line of ``line_length`` at ``indent``
    columns: the phrases that fit, then "; …" (ruff wraps no comment, and a mark read back takes its first line only;
    the report has the whole reason). One phrase too long alone is cut between words."""
    room = line_length - indent
    if len(mark) <= room or not mark.startswith(MARK):
        return mark
    phrases = mark[len(MARK) :].strip().split("; ")
    kept: list[str] = []
    for phrase in phrases:
        if len(f"{MARK} {'; '.join([*kept, phrase])}; {CUT}") > room:
            break
        kept.append(phrase)
    if kept:
        return f"{MARK} {'; '.join(kept)}; {CUT}"
    words = mark.split(" ")
    while len(words) > 3 and len(" ".join(words) + f" {CUT}") > room:
        words.pop()
    return " ".join(words).rstrip(" ,;(") + f" {CUT}"
