"""The `r2k` command line (docs/architecture.md, Command line): parses arguments, calls a service, prints, maps errors to exits.

`r2k` alone opens the TUI. Every other command is headless and never imports Textual.
`--json` and `--as USER` are accepted before or after the command's name.
"""
from __future__ import annotations

import argparse
import functools
import importlib
import os
import sys
from typing import Callable

from r2k.core.domain.limits import VERSION, number
from r2k.core.errors import InvalidInput, R2KError, exit_code

from .output import error_line
from .safe import dumps


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error is a 400 with exit 6 and the JSON error shape."""

    def error(self, message: str):
        raise InvalidInput(f"{self.prog}: {message}")


def _common() -> argparse.ArgumentParser:
    # SUPPRESS keeps a subcommand's unset flag from overwriting one given before the command name.
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--json", action="store_true", default=argparse.SUPPRESS,
                        help="print one JSON document on stdout")
    common.add_argument("--as", dest="as_user", metavar="USER", default=argparse.SUPPRESS,
                        help="act as USER (default: R2K_USER, else the login name)")
    return common


COMMON = _common()


def bounded_int(option: str, bounds: tuple[int, int], unit: str = "") -> Callable[[str], int]:
    """An argparse type: a whole number within `bounds` (from `core.domain.limits`), else the 400 that names
    the option and its range ("--ttl is 1–31,536,000 seconds, got 2147483648"). It raises the
    InvalidInput itself, which argparse lets through, so the message is not wrapped in argparse's."""
    def parse(value: str) -> int:
        return number(value, option, bounds, unit)

    parse.__name__ = "whole number"
    return parse


def mutating(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    parser.add_argument("--idempotency-key", metavar="KEY", help="a repeat within 24 h returns the first result "
                        "(at most 200 characters)")
    parser.add_argument("--expected-version", metavar="N", type=bounded_int("--expected-version", VERSION),
                        help="fail with 409 unless the entity is at N")
    return parser


class Commands:
    """A tree of subcommands; each leaf has a handler `(cli, args) -> result`."""

    def __init__(self, subparsers):
        self._subparsers = subparsers
        self.parsers: dict[str, argparse.ArgumentParser] = {}  # each leaf by name, to add shared options

    def group(self, name: str, help_text: str) -> "Commands":
        parser = self._subparsers.add_parser(name, help=help_text, description=help_text, parents=[COMMON])
        sub = parser.add_subparsers(dest=f"{name}_command", metavar="COMMAND", parser_class=Parser)
        parser.set_defaults(group_help=parser.format_help)  # given no subcommand, the group prints this
        return Commands(sub)

    def command(self, name: str, help_text: str, handler: str, *, mutates: bool = False,
                authority: str = "user", checks_schema: bool = True) -> argparse.ArgumentParser:
        """A leaf command. `handler`: "module:function" of app/handlers/, imported only when the
        command runs, so the tree (and help) loads no service. `authority`: "user" (a known user,
        reads included), "admin", or "own" (the handler checks, for commands that must also work
        before the database answers)."""
        parser = self._subparsers.add_parser(name, help=help_text, description=help_text, parents=[COMMON])
        parser.set_defaults(handler=handler, authority=authority, checks_schema=checks_schema)
        self.parsers[name] = parser
        if mutates:
            mutating(parser)
        return parser


# The modules of app/commands, in the order `r2k --help` lists their commands, and the top-level
# commands each registers (a test checks these against what the modules register).
MODULES = {
    "services": ("services",), "db": ("db",), "index": ("index",), "users": ("users",), "audit": ("audit",),
    "replay": ("replay",),
    "demo": ("demo",), "ingest": ("ingest",), "candidates": ("candidates",), "queue": ("queue",),
    "registry": ("registry",), "workitems": ("workitems",), "worker": ("worker",), "grey": ("grey",),
    "conflicts": ("conflicts",), "graph": ("graph",), "stats": ("stats",), "serve": ("serve",),
    "tasks": ("tasks",), "events": ("events",), "export": ("export",),
    "comments": ("comments",), "webhooks": ("webhooks",),
}
OWNER = {command: module for module, commands in MODULES.items() for command in commands}


def command_named(argv: list[str]) -> str | None:
    """The top-level command in `argv`: its first word that is neither an option nor `--as`'s value.
    None when help is asked for before it (`r2k -h users` is the top level's help, every command)."""
    value_next = False
    for token in argv:
        if value_next:
            value_next = False
        elif token == "--as":
            value_next = True
        elif token in ("-h", "--help"):
            return None
        elif not token.startswith("-"):
            return token
    return None


def parser(argv: list[str] | None = None) -> Parser:
    """The command tree `argv` needs: for a known command, only its own module's part (imported and
    built for it alone: building all ~80 parsers, argparse asking gettext for every help text, was
    most of what a short command spent besides its query); for help, no command or an unknown one,
    the whole tree, so the listing and the error name every command."""
    module = OWNER.get(command_named(argv or []))
    return _tree((module,) if module else tuple(MODULES))


@functools.lru_cache(maxsize=None)
def _tree(modules: tuple[str, ...]) -> Parser:
    # Once per process and part: a process that runs commands in-process (the tests do, hundreds of
    # times) builds each only once.
    return build_parser(modules)


def build_parser(modules: tuple[str, ...] = tuple(MODULES)) -> Parser:
    parser = Parser(prog="r2k", description="r2k: a terminal reviewer workstation that turns raw documents "
                    "into validated knowledge. Run `r2k` alone to open the workstation.", parents=[COMMON])
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    commands = Commands(sub)
    for name in modules:
        importlib.import_module(f".commands.{name}", __package__).register(commands)
    return parser


def handler_named(spec: str) -> Callable:
    """A command's handler from its "module:function" (app/handlers/module.py)."""
    module, function = spec.split(":")
    return getattr(importlib.import_module(f".handlers.{module}", __package__), function)


# ----------------------------------------------------------------------------- entry

def print_error(error: dict, as_json: bool) -> None:
    """With --json the error is the JSON document `{"error", "status", "message"}`; without, one
    readable line (docs/architecture.md, Command line). Either is terminal-safe: an error may echo
    what was given, a bad id or a stored text."""
    print(dumps(error) if as_json else error_line(error), file=sys.stderr)


def wants_json(argv: list[str], args: argparse.Namespace | None) -> bool:
    # Before the arguments parse (a usage error), the flag is looked for in what was typed.
    return bool(getattr(args, "json", False)) if args is not None else "--json" in argv


def fail(error: R2KError, as_json: bool = True) -> int:
    print_error(error.as_dict(), as_json)
    return exit_code(error.status)


def no_terminal() -> InvalidInput | None:
    """Why the workstation cannot open here: stdin or stdout is not a terminal (a pipe, a file,
    /dev/null), where a TUI would only write escape codes nobody sees and wait for keys that never
    come. None on a terminal, and when Textual is told to draw elsewhere (textual-serve's web driver
    runs each browser session on pipes)."""
    if os.environ.get("TEXTUAL_DRIVER") or (sys.stdin.isatty() and sys.stdout.isatty()):
        return None
    return InvalidInput("the workstation needs a terminal (stdin and stdout a tty): run a command "
                        "(r2k --help lists them), or add --json to one for a JSON document")


def opens_workstation(args: argparse.Namespace) -> bool:
    """`r2k demo` opens the workstation once loaded, unless told not to (`--no-tui`, or `--json`)."""
    return args.command == "demo" and not args.no_tui and not getattr(args, "json", False)


def run(argv: list[str]) -> int:
    args = None
    try:
        args = parser(argv).parse_args(argv)
        if getattr(args, "command", None) is None:
            raise InvalidInput("no command given: run `r2k --help`, or `r2k` alone for the workstation")
        if getattr(args, "handler", None) is None and getattr(args, "group_help", None):
            print(args.group_help())  # a group given no subcommand (`r2k candidates`) shows its help
            return 0
    except R2KError as error:
        return fail(error, wants_json(argv, args))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # noqa: BLE001 - no input gives a traceback: a 500 naming it
        return internal_error(exc, wants_json(argv, args))
    return _running().execute(argv, args)


def internal_error(exc: Exception, as_json: bool) -> int:
    """What no refusal of r2k's explains: a 500 naming the exception (R2K_DEBUG=1 raises it instead)."""
    if os.environ.get("R2K_DEBUG"):
        raise exc
    print_error({"error": "InternalError", "status": 500,
                 "message": f"{type(exc).__name__}: {exc} (set R2K_DEBUG=1 for the traceback)"}, as_json)
    return 1


def _running():
    # Here, not at the top: what running a command needs (the settings' pydantic, its services, the
    # database drivers: 0.3-0.9 s) loads only once the arguments parsed, so help and a usage error
    # never pay it (`r2k --help` 0.10 s).
    from . import running

    return running


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    if all(a in ("--as",) or a.startswith("--as=") or (i > 0 and argv[i - 1] == "--as")
           for i, a in enumerate(argv)):
        # `r2k` (optionally `r2k --as USER`) opens the workstation, on a terminal only.
        sys.exit(_running().open_workstation(argv))
    sys.exit(run(argv))
