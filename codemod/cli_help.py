"""Help and usage errors laid out like the rest of the output: rich panels on a terminal; off one (a pipe, a
file, a CI log) plain text that no width folds, and a usage error in one line.

typer draws help and click's usage errors with rich at 80 columns when there is no terminal (and with
boxes in a GitHub Actions log, which typer takes for a terminal): ``codemod apply --help | cat`` was 118
folded lines, an unknown option a four-line box. Off a terminal the commands here write each option on
one line of its own, grouped under the panels a terminal shows, and a usage error as ``error: <what>
(see 'codemod apply --help')``, as every other error is reported.
"""

from __future__ import annotations

import contextlib
import inspect
import sys
from typing import Any

import typer
from rich.console import Console
from typer.core import TyperArgument, TyperCommand, TyperGroup

from codemod.errors import one_line

#: the panel of options that name none (typer's own name for it), listed after the named panels
OPTIONS = "Options"
ARGUMENTS = "Arguments"


def _click_exception() -> type[Exception]:
    """click's ``ClickException`` as typer raises it (typer vendors its own click in recent releases)."""
    return next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException")


ClickException = _click_exception()


_argument_type = TyperArgument.display_type_rich


def _declared_type(self: TyperArgument, ctx: Any) -> str | None:
    """An argument with a metavar is named by it alone: typer would add its Python type (``PATH <list[Path]>``)."""
    return None if self.metavar is not None else _argument_type(self, ctx)


TyperArgument.display_type_rich = _declared_type  # type: ignore[method-assign, assignment]  # where typer reads it


def on_terminal() -> bool:
    """Whether help goes to a terminal (rich panels) or to a pipe, a file or a log (plain lines)."""
    return sys.stdout.isatty()


def paragraphs(text: str) -> list[str]:
    """A docstring's paragraphs, each on one line: a hard newline inside a sentence is a space."""
    return [" ".join(p.split()) for p in inspect.cleandoc(text).split("\n\n") if p.strip()]


def summary(text: str | None) -> str:
    """A command's one-line summary: its help's first paragraph."""
    return next(iter(paragraphs(text or "")), "")


def plain_help(command: Any, ctx: Any) -> str:
    """``command``'s help as plain lines: usage, the paragraphs of its help, then its arguments, each named
    panel of options in the order they first appear, the unnamed options and (for the group) the commands;
    every row one line, its names padded to the widest in the help."""
    sections: dict[str, list[tuple[str, str]]] = {}
    for param in command.get_params(ctx):
        record = param.get_help_record(ctx)
        if record is None:
            continue
        is_argument = param.param_type_name == "argument"
        panel = ARGUMENTS if is_argument else getattr(param, "rich_help_panel", None) or OPTIONS
        name, text = record
        sections.setdefault(panel, []).append((name, " ".join((text or param.help or "").split())))
    if isinstance(command, TyperGroup):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            if sub is not None and not sub.hidden:
                sections.setdefault("Commands", []).append((name, summary(sub.help)))
    order = [ARGUMENTS, *(p for p in sections if p not in (ARGUMENTS, OPTIONS, "Commands")), OPTIONS, "Commands"]
    width = max((len(name) for rows in sections.values() for name, _ in rows), default=0)
    lines = [command.get_usage(ctx), ""]
    for paragraph in paragraphs(command.help or ""):
        lines += [paragraph, ""]
    for panel in order:
        if panel in sections:
            lines.append(f"{panel}:")
            lines += [f"  {name.ljust(width)}  {text}".rstrip() for name, text in sections[panel]]
            lines.append("")
    return "\n".join(lines)


def usage_error_line(error: Exception, program: str) -> str:
    """A usage error in one line, with the help to read: ``No such option: --foo (see 'codemod apply --help')``
    (``program``'s help when click did not say which command the error is in)."""
    text = one_line(getattr(error, "format_message", lambda: str(error))())
    ctx = getattr(error, "ctx", None)
    if ctx is not None and ctx.command.get_help_option(ctx) is not None:
        return f"{text} (see '{ctx.command_path} {ctx.help_option_names[0]}')"
    return f"{text} (see '{program} --help')"


class _Layout:
    """What a command and the group share: help whose paragraphs are one line each (typer's rich help keeps a
    docstring's hard newlines), a ``--help`` without a type, plain lines off a terminal."""

    help: str | None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.help:
            self.help = "\n\n".join(paragraphs(self.help))

    def get_help_option(self, ctx: Any) -> Any:
        option = super().get_help_option(ctx)  # type: ignore[misc]  # click's Command, after this in the bases
        if option is not None:
            option.metavar = ""  # a flag: typer would show <bool>
        return option

    def format_help(self, ctx: Any, formatter: Any) -> None:
        if on_terminal():
            super().format_help(ctx, formatter)  # type: ignore[misc]  # typer's rich help, after this in the bases
        else:
            formatter.write(plain_help(self, ctx))


class Command(_Layout, TyperCommand):
    """A command whose help is plain lines off a terminal."""


class Group(_Layout, TyperGroup):
    """The group: help as ``Command``'s, and a usage error reported in one line on stderr (exit 2), on a
    terminal too, as every other error is."""

    def main(
        self,
        args: Any = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        windows_expand_args: bool = True,
        **extra: Any,
    ) -> Any:
        if not standalone_mode:
            return super().main(args, prog_name, complete_var, False, windows_expand_args, **extra)
        try:
            # not standalone: click's errors come here instead of to typer's boxes; an Exit comes back as its code
            code = super().main(args, prog_name, complete_var, False, windows_expand_args, **extra)
        except ClickException as error:
            if type(error).__name__ == "NoArgsIsHelpError":  # no arguments at all: the help, as click shows it
                # the help, made when the error was (on a terminal: drawn then, and empty here)
                text: str = getattr(error, "format_message", lambda: "")()
                if text:
                    with contextlib.suppress(BrokenPipeError):
                        print(text)
            else:
                Console(stderr=True, soft_wrap=True).print(
                    f"error: {usage_error_line(error, prog_name or self.name or 'codemod')}",
                    style="red",
                    markup=False,
                    highlight=False,
                )
            sys.exit(getattr(error, "exit_code", 2))
        except typer.Abort:
            Console(stderr=True).print("Aborted.", style="red")
            sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)
