"""index: the vector index of retrieval by meaning rebuilt. The command tree; the handlers are
app/handlers/index.py, imported when one runs."""
from __future__ import annotations


def register(commands) -> None:
    index = commands.group("index", "the vector index of retrieval by meaning (pgvector)")
    index.command("rebuild", "embed every passage, candidate and answer again with the configured model (an "
                  "admin); in batches, each committed: run again, it resumes where it stopped", "index:index_rebuild",
                  authority="admin")
