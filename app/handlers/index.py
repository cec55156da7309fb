"""index: the vector index of retrieval by meaning rebuilt. The handlers of the tree in
app/commands/index.py."""
from __future__ import annotations

from r2k.core.services.search import embeddings

from ..output import Text


def index_rebuild(cli, args):
    progress = cli.progress().start("embedding", None)
    try:
        result = embeddings.rebuild(cli.ctx, on_progress=lambda kind, done, total: progress.update(
            done, total, f"embedding {kind}s"))
    finally:
        progress.stop()
    counts = ", ".join(f"{n:,} {kind}s" for kind, n in result["embedded"].items())
    how = "resumed and finished" if result["resumed"] else "rebuilt"
    return Text(result, f"vector index {how}: {counts} embedded with {result['model']} "
                        f"({result['dimension']} dimensions)")
