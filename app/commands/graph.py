"""graph: the registry's mirror in the graph, compared and rebuilt (core/services/contradictions/graph_sync.py).
The command tree; the handlers are app/handlers/graph.py, imported when one runs."""
from __future__ import annotations


def register(commands) -> None:
    g = commands.group("graph", "the graph: a projection of the registry, compared with PostgreSQL and rebuilt")
    g.command("status", "PostgreSQL and the graph compared: counts, answers missing from the graph, "
                        "status mismatches, supersede links missing, nodes PostgreSQL does not hold", "graph:status_cmd")
    p = g.command("sync", "mirror answers into the graph again (a specialist or an admin)", "graph:sync_cmd")
    p.add_argument("--all", action="store_true", help="rebuild the whole graph from PostgreSQL: every answer "
                   "mirrored, nodes PostgreSQL does not hold removed")
