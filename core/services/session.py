"""What a front end (the command line, the workstation) holds to talk to the core: a `Context` (the
settings and the connections, opened lazily), the channel live notices come on, how to tell a
service outage from any other failure, and the backoff to reconnect with. The front ends reach the
core through its services, domain, errors and config only (docs/architecture.md, "Layout")."""
from __future__ import annotations

from ..context import Context
from ..notices import CHANNEL
from ..outage import delays, service_error

__all__ = ["CHANNEL", "Context", "delays", "service_error"]
