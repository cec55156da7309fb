"""The embedded graph server: a `redis-server` of its own with FalkorDB's module loaded.

It is reached through FalkorDB's own protocol (the `falkordb` client) on its Unix socket (a
`unix://` URL); no Bolt port is opened, since FalkorDB calls its Bolt support experimental. It keeps
an append-only file in its directory of the data dir, so the graph survives a restart; PostgreSQL
stays the truth: the sweep catches the graph up on what changed while it was away, and
`r2k graph sync --all` rebuilds it. A separate process from the queue server, so a graph fault
never takes the queues down. How it is configured, started and adopted is shared with the queue
server (`core/embedded/redis.py`).
"""
from __future__ import annotations

from .redis import RedisServer

GRAPH = RedisServer("graph", "R2K_GRAPH_URL", module="falkordb.so")
