"""candidates: candidate answers and their validation, one by one. The handlers of the tree in
app/commands/candidates.py."""
from __future__ import annotations

import textwrap

from r2k.core.services.queue import candidate_views, claims, skip, undo
from r2k.core.services.validation import candidates, overlap

from ..output import Table, Text, render_text
from ..safe import visible
from ..wording import decision_said, release_said, resubmit_said

CANDIDATE_COLUMNS = ["id", "horn_type", "state", "question", "claimed_by", "version"]
HISTORY_COLUMNS = ["seq", "action", "from", "to", "actor", "at", "reason"]


def cand_add(cli, args):
    return candidates.add(cli.ctx, cli.actor, args.question, args.text, args.horn_type, args.source_ref,
                          idempotency_key=args.idempotency_key)


def cand_list(cli, args):
    rows = candidate_views.list_candidates(cli.ctx, args.state, args.horn_type, limit=args.limit, offset=args.offset,
                                      claimed_by=args.claimed_by)
    return Table(rows, CANDIDATE_COLUMNS)


def cand_show(cli, args):
    cli.actor  # reading needs a known user too (docs/architecture.md, Command line)
    shown = candidate_views.show(cli.ctx, args.id)
    return Text(shown, candidate_text(shown))


def candidate_text(c: dict) -> str:
    """A candidate as a validator reads it in a terminal: what it says, where it comes from (the
    passage itself; --json has the surrounding excerpt), what became of it, and its history.
    Stored texts are made visible before they are wrapped, so the lines keep their width."""
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
    cli.actor
    return Table(candidate_views.history(cli.ctx, args.id), HISTORY_COLUMNS)


def cand_claim(cli, args):
    return claims.claim(cli.ctx, cli.actor, args.id, **cli.opts())


def cand_decide(cli, args):
    action = args.candidates_command
    fields = {"text": getattr(args, "text", None), "reason": getattr(args, "reason", None), **cli.opts()}
    if args.next:
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
    if args.next:
        result = claims.release_and_next(cli.ctx, cli.actor, args.id, **cli.opts())
        released = result["released"]
        return _with_next(result, release_said(released), released["horn_type"])
    released = candidates.release(cli.ctx, cli.actor, args.id, **cli.opts())
    return Text(released, release_said(released))


def cand_skip(cli, args):
    opts = cli.opts()
    result = skip.skip(cli.ctx, cli.actor, args.id, then_next=args.next, **opts)
    skipped = result["skipped"]
    said = (f"Skipped candidate {skipped['id']}: back at the head of the {skipped['horn_type']} queue for others; "
            f"your claims pass it by while the queue holds anything else.")
    if args.next:
        return _with_next(result, said, skipped["horn_type"])
    return Text(result, said)


def cand_undo(cli, args):
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


def cand_adjudications(cli, args):
    return Table(overlap.list_adjudications(cli.ctx, cli.actor), ["id", "horn_type", "question", "reviews", "version"])


def cand_adjudication(cli, args):
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
    done = overlap.adjudicate(cli.ctx, cli.actor, args.id, choose=args.choose, action=args.action, text=args.text,
                              reason=args.reason, **cli.opts())
    state = done["candidate"]["state"]
    action = {"APPROVED": "approve", "REVISED": "revise", "REJECTED": "reject"}[state]
    return Text(done, decision_said(action, done["candidate"]["id"], done) + " (adjudicated).")


def cand_resubmit(cli, args):
    done = candidates.resubmit(cli.ctx, cli.actor, args.id, args.text, horn_type=args.horn_type, **cli.opts())
    return Text(done, resubmit_said(done) + ".")
