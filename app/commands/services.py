"""services: the embedded services started, stopped and each service's status. The command tree; the
handlers are app/handlers/services.py, imported when one runs."""
from __future__ import annotations


def register(commands) -> None:
    services = commands.group("services", "manage the embedded services (PostgreSQL, Redis, graph)")
    services.command("up", "start every embedded service that no R2K_*_URL replaces", "services:services_up")
    services.command("down", "stop the embedded services (an admin)", "services:services_down", authority="admin")
    services.command("status", "each service, embedded or external, where it listens, whether it answers, "
                     "and which credential it is reached with", "services:services_status", authority="own")
