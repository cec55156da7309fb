"""demo, ingest, candidates, queue: getting documents in and validating candidates."""
from __future__ import annotations

import sys

from r2k.core.domain import limits

from r2k.core.domain.formats import JSONL_RECORD, LISTED as SUFFIXES

from ..cli import bounded_int
from ..output import Table, Text
from ..safe import visible

CANDIDATE_COLUMNS = ["id", "horn_type", "state", "question", "claimed_by", "version"]
HISTORY_COLUMNS = ["seq", "action", "from", "to", "actor", "at", "reason"]


def register(commands) -> None:
    demo = commands.command("demo", "load the demo corpus and users (idempotent; loading needs an admin, or "
                            "the data dir's owner while no admin exists), then open the workstation", demo_cmd,
                            authority="own")
    demo.add_argument("--no-tui", action="store_true", help="only load; do not open the workstation (so does "
                      "--json, and without a terminal the workstation is refused)")

    ingest = commands.command("ingest", "ingest documents from files or folders: Markdown, HTML, reStructuredText, "
                              "PDF, Word (.docx), plain text and JSON Lines", ingest_cmd, mutates=False)
    ingest.epilog = (
        "A JSON Lines file holds one record a line: " + JSONL_RECORD + "; a malformed line is skipped with its "
        "line number and the others go in. What states nothing (markup, navigation, a heading without a body) "
        "is dropped and counted; a part over a limit (a huge table) is skipped with its line; a file r2k cannot "
        "read (another type, an encrypted PDF, a PDF with no text layer, a FIFO) is skipped with the reason.")
    ingest.add_argument("paths", nargs="+", metavar="PATH",
                        help=f"a file ({SUFFIXES}) or a folder of them (searched recursively; any other file in it is "
                             f"listed as skipped); a text file is at most {limits.DOCUMENT_BYTES // 2**20} MB, an HTML, "
                             f"PDF or Word file {limits.PACKED_DOCUMENT_BYTES // 2**20} MB")

    cands = commands.group("candidates", "candidate answers and their validation")
    add = cands.command("add", "add one candidate by hand", cand_add, mutates=True)
    add.add_argument("--question", required=True,
                     help=f"the question the candidate answers (at most {limits.QUESTION:,} characters)")
    add.add_argument("--text", required=True, help=f"the candidate answer (at most {limits.ANSWER:,} characters)")
    add.add_argument("--horn-type", help="FACT, RULE, CONSTRAINT, PROCEDURE or OPEN_ISSUE (default: classified)")
    add.add_argument("--source-ref", help=f"where it comes from (free text, at most {limits.SOURCE_REF:,} characters)")
    lst = cands.command("list", "list candidates", cand_list)
    lst.add_argument("--state", help="only this state: PENDING, IN_REVIEW, APPROVED, REVISED, REJECTED, ESCALATED, "
                     "DISPUTED, CLOSED, SUPERSEDED, RETIRED or ADJUDICATION (reviewers disagreed)")
    lst.add_argument("--horn-type", help="only this Horn type: FACT, RULE, CONSTRAINT, PROCEDURE or OPEN_ISSUE")
    lst.add_argument("--claimed-by", metavar="USER", help="only candidates this user has claimed")
    lst.add_argument("--limit", type=bounded_int("--limit", limits.LIST_LIMIT), default=100,
                     help=f"at most this many (default 100; {limits.said(limits.LIST_LIMIT)})")
    lst.add_argument("--offset", type=bounded_int("--offset", limits.OFFSET), default=0,
                     help=f"skip this many (the next page; {limits.said(limits.OFFSET)})")
    for name, help_text in [("show", "a candidate with its sources, answer and history"),
                            ("history", "every transition of a candidate")]:
        p = cands.command(name, help_text, cand_show if name == "show" else cand_history)
        p.add_argument("id", help="the candidate's id")
    p = cands.command("claim", "claim one named candidate", cand_claim, mutates=True)
    p.add_argument("id", help="the candidate's id")
    p = cands.command("approve", "approve a claimed candidate (publishes it)", cand_decide, mutates=True)
    p.add_argument("id", help="the id of a candidate you have claimed")
    p = cands.command("revise", "approve with revised text (publishes the revision)", cand_decide, mutates=True)
    p.add_argument("id", help="the id of a candidate you have claimed")
    p.add_argument("--text", required=True,
                   help=f"the revised answer, as it will be published (at most {limits.ANSWER:,} characters)")
    for name, what in [("reject", "reject a claimed candidate"), ("escalate", "escalate: a work item generates an answer")]:
        p = cands.command(name, what, cand_decide, mutates=True)
        p.add_argument("id", help="the id of a candidate you have claimed")
        p.add_argument("--reason", required=True, help="why, in words the next reader understands "
                                                       f"(at most {limits.REASON:,} characters)")
    p = cands.command("resubmit", "put an ESCALATED candidate back in its queue with reworked text (a specialist or "
                      "an admin); the work item its escalation opened is closed, answered by the rework",
                      cand_resubmit, mutates=True)
    p.add_argument("id", help="the id of an ESCALATED candidate")
    p.add_argument("--text", required=True,
                   help=f"the reworked answer, as validators will review it (at most {limits.ANSWER:,} characters)")
    p.add_argument("--horn-type", help="FACT, RULE, CONSTRAINT, PROCEDURE or OPEN_ISSUE (default: as it was; an "
                                       "OPEN_ISSUE takes the type its reworked text classifies as)")
    p = cands.command("release", "give a claimed candidate back to the head of its queue", cand_release, mutates=True)
    p.add_argument("id", help="the id of a candidate you have claimed")
    p = cands.command("skip", "pass a claimed candidate by, for you alone: it goes back to the head of its queue "
                      "for others, and your claims serve it again only when the queue holds nothing else",
                      cand_skip, mutates=True)
    p.add_argument("id", help="the id of a candidate you have claimed")
    p = cands.command("undo", "undo your last decision within R2K_UNDO_SECONDS (60 by default), while nothing "
                      "has used it: its answer is retired, or its work item closed, and a new candidate "
                      "with the same content is claimed by you", cand_undo, mutates=True)
    p.add_argument("id", help="the id of the candidate you decided last")
    cands.command("adjudications", "candidates whose reviewers disagree, awaiting adjudication (a specialist "
                  "or an admin)", cand_adjudications)
    p = cands.command("adjudication", "a candidate awaiting adjudication with every review side by side (a "
                      "specialist or an admin)", cand_adjudication)
    p.add_argument("id", help="the id of a candidate in ADJUDICATION")
    p = cands.command("adjudicate", "decide a candidate whose reviewers disagree (a specialist or an admin): "
                      "choose one of its reviews, or make your own decision; it publishes as any decision does",
                      cand_adjudicate, mutates=True)
    p.add_argument("id", help="the id of a candidate in ADJUDICATION")
    p.add_argument("--choose", metavar="REVIEW_ID", help="the review whose decision stands (its id, as "
                   "`candidates adjudication ID` lists them)")
    p.add_argument("--action", choices=["approve", "revise", "reject"], help="your own decision instead")
    p.add_argument("--text", help=f"the revised answer, for --action revise (at most {limits.ANSWER:,} characters)")
    p.add_argument("--reason", help=f"why, for --action reject (at most {limits.REASON:,} characters)")
    for name in ("approve", "revise", "reject", "escalate", "release", "skip"):
        cands.parsers[name].add_argument(
            "--next", action="store_true",
            help="then claim and print the next candidate of the same queue (the workstation's loop)")

    queue = commands.group("queue", "the Horn-type validation queues")
    queue.command("stats", "per Horn type: pending, in review, oldest pending age", queue_stats)
    p = queue.command("claim", "claim the oldest candidate of a partition", queue_claim, mutates=True)
    p.add_argument("--horn-type", required=True, help="the partition: FACT, RULE, CONSTRAINT, PROCEDURE or OPEN_ISSUE")
    queue.command("reconcile", "rebuild every partition from PostgreSQL (after Redis lost data)", queue_reconcile)
    queue.command("sweep", "the whole sweep, now (a specialist or an admin): expired claims released, ids stuck "
                  "in flight returned, queues that miss ids rebuilt, grey TTLs expired and retries queued, work "
                  "items a dead worker left re-enqueued, article analyses a lost job left waiting queued again, the "
                  "graph caught up", queue_sweep)
    p = queue.command("config", "a queue's setting: how many independent, blind reviews each of its candidates "
                      "needs (--reviews K, an admin; 1 by default; disagreement goes to a specialist's "
                      "adjudication); without --reviews, the setting in force", queue_config, mutates=True)
    p.add_argument("horn_type", metavar="HORN_TYPE", help="FACT, RULE, CONSTRAINT, PROCEDURE or OPEN_ISSUE")
    p.add_argument("--reviews", metavar="K", help="the number of reviews per candidate, 1 to 9")
    p = queue.command("guidelines", "a queue's guidelines for its validators: the version in force, another "
                      "(--version), every version (--history), or a new one from a Markdown file (--file, an admin)",
                      queue_guidelines, mutates=True)
    p.add_argument("horn_type", metavar="HORN_TYPE", help="FACT, RULE, CONSTRAINT, PROCEDURE or OPEN_ISSUE")
    p.add_argument("--file", metavar="FILE", help="write a new version from this Markdown file (at most 512 KB)")
    p.add_argument("--version", dest="number", type=bounded_int("--version", limits.VERSION),
                   help="show this version")
    p.add_argument("--history", action="store_true", help="list every version, newest first")


def demo_cmd(cli, args):
    from r2k.core.services.demo import load, loaded

    # Loading adds users and documents: an admin's job. Once loaded, a rerun only opens the workstation.
    by = cli.actor if loaded(cli.ctx) else cli.admin("load the demo")
    summary = load(cli.ctx, by=by)
    user = getattr(args, "as_user", None) or summary["users"][0]["name"]
    if args.no_tui or getattr(args, "json", False):  # a JSON document, never a TUI
        people = ", ".join(f"{u['name']} ({u['role']}{': ' + ', '.join(u['horn_types']) if u['horn_types'] else ''})"
                           for u in summary["users"])
        corpus = summary["ingest"]
        if corpus["documents"] or corpus["skipped"]:
            lines = ["demo corpus:", *(f"  {line}" for line in ingest_lines(corpus))]
        else:
            lines = [f"demo corpus: already loaded, nothing added ({len(corpus['duplicates'])} documents)"]
        lines.append(f"users: {people}" + (f"; added now: {', '.join(summary['users_added'])}"
                                           if summary["users_added"] else "; all there already"))
        if summary.get("articles"):
            lines.append("articles: " + "; ".join(f"{a['id']} {a['title']!r} {a['state']}" for a in summary["articles"]))
        lines.append(f"open the workstation: r2k --as {user}")
        return Text(summary, "\n".join(lines))
    from ..tui import run_tui

    run_tui(user=user)
    return None


def ingest_lines(summary: dict, skips: bool = True) -> list[str]:
    """An ingest summary in words: what went in, by Horn type, what was dropped as stating nothing,
    and (unless `skips` is False: the command prints them on stderr) what was skipped and why."""
    lines = [f"{summary['documents']} document(s), {summary['candidates_total']} candidate(s): " +
             ", ".join(f"{h} {n}" for h, n in summary["candidates"].items()),
             f"{summary['fragments']} fragment(s) sent to the grey queue"]
    if summary.get("dropped"):
        lines.append(f"{summary['dropped_total']} piece(s) dropped as stating nothing: " +
                     ", ".join(f"{reason} {n}" for reason, n in summary["dropped"].items()))
    if summary["duplicates"]:
        lines.append(f"{len(summary['duplicates'])} already ingested (same content), skipped")
    if summary.get("versions"):
        lines.append(f"{len(summary['versions'])} new version(s) of documents read before: "
                     f"{summary['unchanged']} statement(s) unchanged, {summary['withdrawn']} pending candidate(s) "
                     f"withdrawn, {summary['flagged']} answer(s) flagged source_changed")
    if summary.get("merged"):
        lines.append(f"{summary['merged']} statement(s) another document states too: a source more for their candidate")
    if summary["skipped"] and not skips:
        lines.append(f"{len(summary['skipped'])} skipped (listed above)")
    for s in summary["skipped"] if skips else ():
        where = s["path"] + (f":{s['line']}" if s.get("line") else "")
        lines.append(f"skipped {where}: {s['reason']}")
    return lines


def ingest_cmd(cli, args):
    from r2k.core.services import ingest

    progress = cli.progress().start("ingesting", None)

    def on_file(path, index, total):
        progress.update(index, total, f"ingesting {visible(path.name)}" if path.name else "done")

    try:
        summary = ingest.ingest(cli.ctx, cli.actor, args.paths, on_file=on_file)
    finally:
        progress.stop()
    lines = ingest_lines(summary, skips=False)  # each skip is said once, on stderr
    for s in summary["skipped"]:
        # A file name, or a reason quoting the file, may hold controls.
        print(visible(f"r2k: skipped {s['path']}{':' + str(s['line']) if s.get('line') else ''}: {s['reason']}"),
              file=sys.stderr)
    if summary["skipped"] and not summary["documents"] and not summary["duplicates"]:
        from r2k.core.errors import InvalidInput

        raise InvalidInput(f"nothing was ingested: all {len(summary['skipped'])} file(s) were skipped")
    return Text(summary, "\n".join(lines))


def cand_add(cli, args):
    from r2k.core.services import candidates

    return candidates.add(cli.ctx, cli.actor, args.question, args.text, args.horn_type, args.source_ref,
                          idempotency_key=args.idempotency_key)


def cand_list(cli, args):
    from r2k.core.services import candidate_views

    rows = candidate_views.list_candidates(cli.ctx, args.state, args.horn_type, limit=args.limit, offset=args.offset,
                                      claimed_by=args.claimed_by)
    return Table(rows, CANDIDATE_COLUMNS)


def cand_show(cli, args):
    from r2k.core.services import candidate_views

    cli.actor  # reading needs a known user too (docs/architecture.md, Command line)
    shown = candidate_views.show(cli.ctx, args.id)
    return Text(shown, candidate_text(shown))


def candidate_text(c: dict) -> str:
    """A candidate as a validator reads it in a terminal: what it says, where it comes from (the
    passage itself; --json has the surrounding excerpt), what became of it, and its history.
    Stored texts are made visible before they are wrapped, so the lines keep their width."""
    import textwrap

    from ..output import render_text

    def block(label: str, text: str) -> list[str]:
        return textwrap.wrap(" ".join(visible(text).split()), 100, initial_indent=f"{label:<10}",
                             subsequent_indent=" " * 10) or [label]

    lines = [f"Candidate {c['id']} · {c['horn_type']} · {c['state']} · version {c['version']}",
             *block("Question", c["question"]), *block("Answer", c["text"])]
    if c.get("claimed_by"):
        lines.append(f"{'Claimed':<10}by {c['claimed_by']}, lease until {c['lease_expires_at']}")
    if c.get("answer"):
        a = c["answer"]
        lines.append(f"{'Published':<10}answer {a['id']} ({a['status']})")
    if item := c.get("work_item"):  # generated from it, or escalated to it
        lines.append(f"{'Work item':<10}{item['link']} work item {item['id']} ({item['state']})")
    lines += ["", f"Sources ({len(c['sources'])})" if c["sources"] else "Sources: none (added by hand)"]
    for i, src in enumerate(c["sources"], 1):
        where = src.get("path") or src.get("ref") or ""
        if src.get("span"):
            where += f", characters {src['span'][0]}–{src['span'][1]}"
        lines.append(f"  [{i}] " + "  ".join(part for part in (src.get("title"), where) if part))
        if src.get("excerpt") and src.get("match"):
            passage = src["excerpt"][src["match"][0]:src["match"][1]]
            lines += textwrap.wrap(" ".join(visible(passage).split()), 100, initial_indent="      > ",
                                   subsequent_indent="        ")
    lines += ["", "History", render_text(Table(c["history"], HISTORY_COLUMNS))]
    return "\n".join(lines)


def cand_history(cli, args):
    from r2k.core.services import candidate_views

    cli.actor
    return Table(candidate_views.history(cli.ctx, args.id), HISTORY_COLUMNS)


def cand_claim(cli, args):
    from r2k.core.services import claims

    return claims.claim(cli.ctx, cli.actor, args.id, **cli.opts())


def cand_decide(cli, args):
    from r2k.core.services import candidates

    from ..wording import decision_said

    action = args.candidates_command
    fields = {"text": getattr(args, "text", None), "reason": getattr(args, "reason", None), **cli.opts()}
    if args.next:
        from r2k.core.services import claims

        result = claims.decide_and_next(cli.ctx, cli.actor, args.id, action, **fields)
        decided = result["decided"]
        said = decision_said(action, decided["candidate"]["id"], decided) + "."
        return _with_next(result, said, decided["candidate"]["horn_type"])
    decided = candidates.decide(cli.ctx, cli.actor, args.id, action, **fields)
    return Text(decided, decision_said(action, decided["candidate"]["id"], decided) + ".")


def _with_next(result: dict, said: str, horn_type: str):
    """What was done, then the next candidate of the queue as `candidates show` prints it (or why
    there is none). The step done stands even when the next claim failed: exit 0, said plainly."""
    shown = result["next"]
    if shown is not None:
        return Text(result, f"{said}\n\nNext: {candidate_text(shown)}")
    if result["error"] and result["error"]["status"] != 404:
        return Text(result, f"{said}\nThe next {horn_type} candidate could not be claimed: {result['error']['message']}")
    return Text(result, f"{said}\nThe {horn_type} queue is empty: nothing more to claim.")


def cand_release(cli, args):
    from r2k.core.services import candidates

    from ..wording import release_said

    if args.next:
        from r2k.core.services import claims

        result = claims.release_and_next(cli.ctx, cli.actor, args.id, **cli.opts())
        released = result["released"]
        return _with_next(result, release_said(released), released["horn_type"])
    released = candidates.release(cli.ctx, cli.actor, args.id, **cli.opts())
    return Text(released, release_said(released))


def cand_skip(cli, args):
    from r2k.core.services import skip

    opts = cli.opts()
    result = skip.skip(cli.ctx, cli.actor, args.id, then_next=args.next, **opts)
    skipped = result["skipped"]
    said = (f"Skipped candidate {skipped['id']}: back at the head of the {skipped['horn_type']} queue for others; "
            f"your claims pass it by while the queue holds anything else.")
    if args.next:
        return _with_next(result, said, skipped["horn_type"])
    return Text(result, said)


def cand_undo(cli, args):
    from r2k.core.services import undo

    result = undo.undo(cli.ctx, cli.actor, args.id, **cli.opts())
    undone, made = result["undone"], result["candidate"]
    lines = [f"Undid your {undone['action']} of candidate {undone['candidate']['id']} "
             f"(now {undone['candidate']['state']})."]
    if undone.get("retired"):
        lines.append(f"Answer {undone['retired']['id']} is RETIRED (reason: undone).")
    if undone.get("work_item"):
        lines.append(f"Work item {undone['work_item']['id']} is CLOSED (reason: undone).")
    lines.append(f"Candidate {made['id']}, with the same content, is claimed by you: decide it again.")
    return Text(result, "\n".join(lines))


def queue_stats(cli, args):
    from r2k.core.services import candidate_views

    from ..output import render_text
    from ..widgets.format import span

    cli.actor
    stats = candidate_views.queue_stats(cli.ctx)
    shown = [{**row, "oldest_pending": span(row["oldest_pending_age_seconds"])} for row in stats]
    return Text(stats, render_text(Table(shown, ["horn_type", "pending", "in_review", "disputed", "queued",
                                                 "oldest_pending"])))


def queue_guidelines(cli, args):
    from r2k.core.domain import files
    from r2k.core.errors import InvalidInput
    from r2k.core.services import guidelines

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
    from r2k.core.services import overlap

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


def cand_adjudications(cli, args):
    from r2k.core.services import overlap

    return Table(overlap.list_adjudications(cli.ctx, cli.actor), ["id", "horn_type", "question", "reviews", "version"])


def cand_adjudication(cli, args):
    import textwrap

    from r2k.core.services import overlap

    shown = overlap.adjudication(cli.ctx, cli.actor, args.id)
    c = shown["candidate"]
    lines = [f"Candidate {c['id']} · {c['horn_type']} · {c['state']} · version {c['version']}",
             f"{'Question':<10}{visible(c['question'], multiline=False)}",
             f"{'Answer':<10}{visible(c['text'], multiline=False)}", "", "Reviews, side by side:"]
    for r in shown["reviews"]:
        lines.append(f"  review {r['id']}  {visible(r['actor'], multiline=False)}: {r['action']}")
        for label, value in (("text", r["revised_text"]), ("reason", r["reason"])):
            if value:
                lines.extend(textwrap.wrap(" ".join(visible(value).split()), 96, initial_indent=f"    {label:<7}",
                                           subsequent_indent=" " * 11))
    lines.append(f"\nDecide: r2k candidates adjudicate {c['id']} --choose REVIEW_ID, or --action approve|revise|reject")
    return Text(shown, "\n".join(lines))


def cand_adjudicate(cli, args):
    from r2k.core.services import overlap

    from ..wording import decision_said

    done = overlap.adjudicate(cli.ctx, cli.actor, args.id, choose=args.choose, action=args.action, text=args.text,
                              reason=args.reason, **cli.opts())
    state = done["candidate"]["state"]
    action = {"APPROVED": "approve", "REVISED": "revise", "REJECTED": "reject"}[state]
    return Text(done, decision_said(action, done["candidate"]["id"], done) + " (adjudicated).")


def queue_claim(cli, args):
    from r2k.core.services import claims

    return claims.claim_next(cli.ctx, cli.actor, args.horn_type, idempotency_key=args.idempotency_key)


def queue_reconcile(cli, args):
    from r2k.core.services import generation, queue_index

    cli.actor
    rows = queue_index.reconcile(cli.ctx)
    recovered = generation.recover(cli.ctx, stale_after=generation.STALE_GENERATING)
    text = "\n".join(f"{r['horn_type']:<11} {r['queued']} queued (was {r['was']})" for r in rows)
    text += f"\nwork items re-enqueued: {len(recovered['requeued'])}"
    return Text({"partitions": rows, "work_items": recovered}, text)


def queue_sweep(cli, args):
    from r2k.core.services import sweeps

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


def cand_resubmit(cli, args):
    from r2k.core.services import candidates

    from ..wording import resubmit_said

    done = candidates.resubmit(cli.ctx, cli.actor, args.id, args.text, horn_type=args.horn_type, **cli.opts())
    return Text(done, resubmit_said(done) + ".")
