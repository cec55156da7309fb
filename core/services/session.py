"""What a front end (the command line, the workstation) holds to talk to the core: a `Context` (the
settings and the connections, opened lazily), the channel live notices come on and their one shape,
how to tell a service outage from any other failure, the backoff to reconnect with, and the
checkpoint to let finish before a command exits. The front ends reach the core through
`core.bootstrap` (to make their Context), its services, domain, errors and config only
(docs/architecture.md, "Layout")."""
from __future__ import annotations

import json
import sys

from ..context import Context
from ..notices import CHANNEL, shaped
from ..outage import delays, service_error

__all__ = ["CHANNEL", "Context", "delays", "finish_checkpoint", "notice", "service_error"]


def notice(entity: str, id=None, action: str | None = None, state: str | None = None,  # noqa: A002 - the shape's name
           version: int | None = None, actor: str | None = None) -> dict:
    """A live notice as the screens read it off the channel, for what a front end tells its own
    screens (its worker, its acting user, the services answering again): the one shape of
    docs/architecture.md, "Reactions", built where the channel's notices are."""
    return json.loads(shaped(entity, id, action, state, version, actor))


def finish_checkpoint(timeout: float = 30.0) -> None:
    """Let a checkpoint this process's commits started finish (a command about to exit:
    docs/architecture.md, "Event log and audit"). The audit module is consulted only when already
    loaded: a process that never committed started none, and a command's start-up stays lean."""
    if __package__.rsplit(".", 1)[0] + ".audit" in sys.modules:
        from .. import audit

        audit.wait_pending(timeout)
