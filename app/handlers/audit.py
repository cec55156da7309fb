"""audit: the signed event log verified and anchored. The handlers of the tree in
app/commands/audit.py."""
from __future__ import annotations

from r2k.core.errors import Conflict, NotFound
from r2k.core.services.operations import admin

from ..output import Text
from ..safe import visible


def audit_verify(cli, args):
    report = admin.audit_verify(cli.ctx, getattr(args, "anchor", None))
    return Text(report, _verify_said(report)), (0 if report["ok"] else 1)


def _anchor_said(anchor: dict | None) -> str:
    if anchor is None:
        return "no checkpoint yet, so a chain cut short or deleted could not be checked"
    source = {"database and file": "the database and the data dir's file", "database": "the database",
              "file": "the data dir's file"}.get(anchor["source"], anchor["source"])
    return (f"checkpoint {anchor['number']} ({anchor['events']} events in {anchor['chains']} chains, "
            f"{anchor['created_at']}, from {source})")


def _verify_said(report: dict) -> str:
    """Each damaged chain and checkpoint on a line of its own, in words."""
    if report["ok"]:
        return (f"ok: {report['events']} events in {report['chains']} chains, every hash and signature verifies "
                f"under the trusted keys; checked against {_anchor_said(report['anchor'])}")
    chains = {(b["aggregate_type"], b["aggregate_id"]) for b in report["broken"]}
    chains |= {(d["aggregate_type"], d["aggregate_id"]) for d in report["damaged_chains"]}
    lines = [f"BROKEN: {len(chains)} chain(s) of {report['chains']} damaged, "
             f"{len(report['checkpoints']['problems'])} checkpoint problem(s); "
             f"checked against {_anchor_said(report['anchor'])}"]
    lines += [f"  event {b['event_id']} ({b['aggregate_type']} {b['aggregate_id']} seq {b['seq']}): {b['problem']}"
              for b in report["broken"]]
    lines += [f"  chain {d['aggregate_type']} {d['aggregate_id']}: {d['problem']}" for d in report["damaged_chains"]]
    lines += [f"  {p['problem']}" for p in report["checkpoints"]["problems"]]
    return one_per_line(lines)


def one_per_line(lines: list[str]) -> str:
    """Lines that name what the database holds: a stored id with a newline in it cannot print a
    line of its own (a forged "ok")."""
    return "\n".join(visible(line, multiline=False) for line in lines)


def audit_anchor(cli, args):
    outcome = admin.audit_anchor(cli.ctx)
    latest = outcome.latest
    if latest is None:
        if outcome.refused:
            raise Conflict("no checkpoint written: " + "; ".join(outcome.refused))
        if outcome.written is None and "still being written" in (outcome.skipped or ""):
            raise Conflict(f"no checkpoint written: {outcome.skipped}")
        raise NotFound("no checkpoint yet: the event log is empty")
    lines = [f"checkpoint {latest['number']}" + (" (written now)" if outcome.written else "")
             + f": {latest['events']} events in {latest['chains']} chains, up to event {latest['watermark']}",
             f"  root       {latest['root']}",
             f"  hash       {latest['hash']}",
             f"  signed by  key {latest['key_id']} at {latest['created_at']}",
             "keep it off this host (`r2k audit anchor --json > anchor.json`), and check the log against it "
             "with `r2k audit verify --anchor anchor.json`"]
    if outcome.refused:
        lines[1:1] = ["  NOT a fresh checkpoint: the log no longer matches the latest one:"] + \
                     [f"    {p}" for p in outcome.refused]
        return Text({**latest, "refused": outcome.refused}, "\n".join(lines)), 1
    return Text(latest, "\n".join(lines))
