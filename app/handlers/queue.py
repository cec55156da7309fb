"""queue: the Horn-type validation queues: counts, claims, repair, the sweep, settings, guidelines.
The handlers of the tree in app/commands/queue.py."""
from __future__ import annotations

from r2k.core.domain import files, limits
from r2k.core.errors import InvalidInput
from r2k.core.services.answering import generation
from r2k.core.services.operations import sweeps
from r2k.core.services.queue import candidate_views, claims, queue_index
from r2k.core.services.validation import guidelines, overlap

from ..output import Table, Text, render_text
from ..safe import visible
from ..widgets.format import span


def queue_stats(cli, args):
    cli.actor
    stats = candidate_views.queue_stats(cli.ctx)
    shown = [{**row, "oldest_pending": span(row["oldest_pending_age_seconds"])} for row in stats]
    return Text(stats, render_text(Table(shown, ["horn_type", "pending", "in_review", "disputed", "queued",
                                                 "oldest_pending"])))


def queue_guidelines(cli, args):
    actor = cli.actor
    if sum(bool(x) for x in (args.file, args.number is not None, args.history)) > 1:
        raise InvalidInput("--file, --version and --history go one at a time")
    if args.file:
        guidelines.may_write(actor)
        body = files.read_text_argument(args.file, "--file", limits.ARTICLE_FILE)
        row = guidelines.set_guidelines(cli.ctx, actor, args.horn_type, body, idempotency_key=args.idempotency_key)
        return Text(row, f"{row['horn_type']} guidelines: version {row['number']} in force")
    if args.history:
        return Table(guidelines.history(cli.ctx, args.horn_type), ["number", "author", "created_at", "characters"])
    row = guidelines.show(cli.ctx, args.horn_type, args.number)
    if row is None:
        horn = args.horn_type.upper()
        return Text(None, f"The {visible(horn, multiline=False)} queue has no guidelines yet "
                          f"(an admin writes them: r2k queue guidelines {visible(horn, multiline=False)} --file FILE).")
    return Text(row, f"{row['horn_type']} guidelines, version {row['number']} by "
                     f"{visible(row['author'], multiline=False)} ({row['created_at']}):\n\n{visible(row['body'])}")


def queue_config(cli, args):
    actor = cli.actor
    if args.reviews is None:
        row = overlap.settings(cli.ctx, args.horn_type)
        k = row["reviews"]
        by = f" (set by {visible(row['set_by'], multiline=False)} at {row['set_at']})" if row["set_by"] else ""
        return Text(row, f"The {row['horn_type']} queue requires {k} review{'s' if k > 1 else ''} per candidate{by}.")
    row = overlap.configure(cli.ctx, actor, args.horn_type, args.reviews, idempotency_key=args.idempotency_key)
    k = row["reviews"]
    return Text(row, f"The {row['horn_type']} queue now requires {k} independent review{'s' if k > 1 else ''} "
                     f"per candidate.")


def queue_claim(cli, args):
    return claims.claim_next(cli.ctx, cli.actor, args.horn_type, idempotency_key=args.idempotency_key)


def queue_reconcile(cli, args):
    cli.actor
    rows = queue_index.reconcile(cli.ctx)
    recovered = generation.recover(cli.ctx, stale_after=generation.STALE_GENERATING)
    text = "\n".join(f"{r['horn_type']:<11} {r['queued']} queued (was {r['was']})" for r in rows)
    text += f"\nwork items re-enqueued: {len(recovered['requeued'])}"
    return Text({"partitions": rows, "work_items": recovered}, text)


def queue_sweep(cli, args):
    swept = sweeps.sweep_now(cli.ctx, cli.actor)
    return Text(swept, "\n".join(sweep_lines(swept)))


def sweep_lines(swept: dict) -> list[str]:
    """What a sweep did, one line a part."""
    if "skipped" in swept:
        return [f"nothing swept: {swept['skipped']} (try again in a few seconds)"]
    claims, grey, items = swept["claims"], swept["grey"], swept["work_items"]
    rescued = sum(len(ids) for ids in claims["rescued"].values())
    lines = [f"expired claims released: {len(claims['released'])}",
             f"ids stuck in flight returned to their queues: {rescued}",
             f"partitions rebuilt: {', '.join(claims['rebuilt']) or 'none'}",
             f"grey entries expired (TTL): {len(grey['expired'])}",
             f"grey entries queued for processing (retries due, stale): {len(grey['requeued'])}",
             f"work items re-enqueued for generation: {len(items['requeued'])}",
             f"article analyses queued again: {len(swept.get('tasks', {}).get('requeued', []))}"]
    graph = swept.get("graph")
    if graph is not None:
        if "unavailable" in graph:
            lines.append(f"graph: not caught up, it does not answer ({graph['unavailable']})")
        else:
            lines.append(f"graph: {graph.get('synced', 0)} answer(s) synced of {graph.get('lagging', 0)} lagging")
    return lines
