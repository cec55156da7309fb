"""Running a parsed command (docs/architecture.md, "Command line"): the settings checked, the acting
user authorised, the handler called, its result printed, a driver's failure said as the 503 it is,
and the checkpoint a commit started let finish. Opening the workstation, likewise. app/cli.py
imports this module only once the arguments parsed, so help never loads what running needs."""
from __future__ import annotations

import argparse
import sys

from r2k.core.bootstrap import bootstrap
from r2k.core.config import get_settings
from r2k.core.domain import jsonable
from r2k.core.errors import R2KError
from r2k.core.services.people import users
from r2k.core.services.session import finish_checkpoint, service_error

from .cli import fail, handler_named, internal_error, no_terminal, opens_workstation, print_error, wants_json
from .output import json_form, render_text
from .progress import Progress
from .safe import dumps


class Cli:
    """What a handler gets besides its args: the context and the acting user, both lazy."""

    def __init__(self, args: argparse.Namespace):
        self.args = args
        self._ctx = None
        self._actor = None

    @property
    def ctx(self):
        if self._ctx is None:
            self._ctx = bootstrap(check_schema=getattr(self.args, "checks_schema", True))
        return self._ctx

    @property
    def actor_name(self) -> str:
        return getattr(self.args, "as_user", None) or self.ctx.settings.acting_user

    @property
    def actor(self):
        """The acting user, a known one (403 otherwise); while no admin exists, the data dir's owner."""
        if self._actor is None:
            self._actor = users.acting(self.ctx, self.actor_name)
        return self._actor

    def admin(self, what: str = "administer r2k"):
        """The acting user, who must be an admin (403 otherwise)."""
        self._actor = users.acting(self.ctx, self.actor_name, admin=True, what=what)
        return self._actor

    def authorize(self) -> None:
        """Every command acts as a known user, and administration as an admin, before it does anything."""
        level = getattr(self.args, "authority", "user")
        if level == "admin":
            self.admin(f"run `r2k {' '.join(self.command_path())}`")
        elif level == "user":
            self.actor

    def command_path(self) -> list[str]:
        path = [self.args.command]
        sub = getattr(self.args, f"{self.args.command}_command", None)
        return path + ([sub] if sub else [])

    def opts(self) -> dict:
        """The mutating options every command accepts (docs/architecture.md, Command line)."""
        return {"idempotency_key": getattr(self.args, "idempotency_key", None),
                "expected_version": getattr(self.args, "expected_version", None)}

    def progress(self):
        """A progress bar on a terminal (stderr), silent otherwise or with --json."""
        return Progress(enabled=sys.stderr.isatty() and not getattr(self.args, "json", False))


def execute(argv: list[str], args: argparse.Namespace) -> int:
    """A parsed command, run: its exit code."""
    cli = None
    try:
        get_settings()  # every R2K_* setting in its range before the command starts anything (a 400)
        if opens_workstation(args) and (refused := no_terminal()) is not None:
            raise refused  # before anything loads or starts
        cli = Cli(args)
        cli.authorize()
        result = handler_named(args.handler)(cli, args)
        code, error = 0, None
        if isinstance(result, tuple):  # (result, exit code[, error]) for reports such as audit verify
            result, code, *rest = result
            error = rest[0] if rest else None  # a report that failed in part: its stderr line too
        if getattr(args, "streams", False):
            pass  # it printed its JSON lines as they came (`events tail`)
        elif getattr(args, "json", False):
            print(dumps(jsonable(json_form(result)), default=str))
        elif result is not None:
            print(render_text(result))
        if error is not None:
            print_error(error, wants_json(argv, args))
        return code
    except R2KError as error:
        return fail(error, wants_json(argv, args))
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # a driver's connection failure is a 503 naming the service
        translated = service_error(exc, cli.ctx if cli and cli._ctx else None)
        if translated is not None:
            return fail(translated, wants_json(argv, args))
        return internal_error(exc, wants_json(argv, args))
    finally:
        if cli is not None and cli._ctx is not None:
            finish_checkpoint()  # one this command's commit started
            cli._ctx.close()


def open_workstation(argv: list[str]) -> int:
    """`r2k [--as USER]`: the workstation, on a terminal only, with every R2K_* setting in its range
    (checked first, as for every command)."""
    try:
        get_settings()
    except R2KError as exc:
        return fail(exc, as_json=False)
    if (refused := no_terminal()) is not None:
        return fail(refused, as_json=False)
    # Here, not at the top: Textual and every screen (0.5-1 s), which a headless command never imports.
    from .tui import run_tui

    user = None
    for i, a in enumerate(argv):
        if a.startswith("--as="):
            user = a.split("=", 1)[1]
        elif a == "--as" and i + 1 < len(argv):
            user = argv[i + 1]
    return run_tui(user=user)
