"""services, db, users, audit, replay: running and checking the installation."""
from __future__ import annotations

import logging

from ..output import Table, Text

log = logging.getLogger(__name__)


def register(commands) -> None:
    services = commands.group("services", "manage the embedded services (PostgreSQL, Redis, graph)")
    services.command("up", "start every embedded service that no R2K_*_URL replaces", services_up)
    services.command("down", "stop the embedded services (an admin)", services_down, authority="admin")
    services.command("status", "each service, embedded or external, where it listens, whether it answers, "
                     "and which credential it is reached with", services_status, authority="own")

    db = commands.group("db", "the database schema")
    db.command("upgrade", "apply the schema migrations (Alembic) up to the newest (an admin)", db_upgrade,
               authority="admin", checks_schema=False)

    index = commands.group("index", "the vector index of retrieval by meaning (pgvector)")
    index.command("rebuild", "embed every passage, candidate and answer again with the configured model (an "
                  "admin); in batches, each committed: run again, it resumes where it stopped", index_rebuild,
                  authority="admin")

    users = commands.group("users", "users and their authority (local administration)")
    add = users.command("add", "add a user (an admin; while no admin exists, the data dir's owner)", users_add,
                        mutates=True, authority="admin")
    add.add_argument("name", help="the user's name, as given to --as or R2K_USER")
    add.add_argument("--role", required=True, choices=["validator", "specialist", "admin"],
                     help="validator (reviews candidates), specialist (grey queue, work items) or admin")
    add.add_argument("--horn-types", default="", metavar="H[,H…]",
                     help="for validators: the Horn types they hold authority for, e.g. FACT,RULE")
    users.command("list", "list users", users_list)
    _register_tokens(users)
    add_key = users.command("add-key", "let a public key in through `r2k serve ssh` as this user (an admin; the "
                            "user must exist)", users_add_key, mutates=True, authority="admin")
    add_key.add_argument("name", help="the r2k user the key's SSH sessions act as")
    add_key.add_argument("--key-file", required=True, metavar="F", help="the public key, a .pub file as ssh-keygen "
                         "writes it")
    add_key.add_argument("--authorized-keys", metavar="FILE", help="the file `serve ssh` reads (default: "
                         "ssh/authorized_keys in the data dir)")

    audit = commands.group("audit", "the signed event log")
    verify = audit.command("verify", "recompute every hash chain and signature under the trusted keys (the data "
                           "dir's own, and R2K_TRUSTED_KEYS: a file of one public key a line, hex or base64, # "
                           "for comments); name the first broken link, and every chain cut short or gone since "
                           "a checkpoint", audit_verify)
    verify.add_argument("--anchor", metavar="FILE",
                        help="a checkpoint saved from `r2k audit anchor --json` (default: the newest trusted "
                             "checkpoint in the database and the data dir)")
    audit.command("anchor", "write a checkpoint of the events so far, if any are new, and print the latest: "
                  "keep it off this host, to check the log against later", audit_anchor)

    replay = commands.command("replay", "rebuild every projection from the events and compare", replay_cmd)
    replay.add_argument("--verify", action="store_true", help="report differences (exit 1 when any)")
    replay.add_argument("--repair", action="store_true", help="rewrite every damaged projection row from its "
                        "events (an admin) and report what changed")


def _register_tokens(users) -> None:
    """users token create|list|revoke (docs/architecture.md, "HTTP API"); the handlers, in
    app/commands/tokens.py, load only when one runs."""
    def handler(name: str):
        def run(cli, args):
            from . import tokens

            return getattr(tokens, name)(cli, args)

        return run

    token = users.group("token", "API tokens for `r2k serve api`: an admin's for anyone, a user's for themselves")
    p = token.command("create", "a new token, shown once (it acts as the user in every request)", handler("create"),
                      mutates=True)
    p.add_argument("--user", metavar="NAME", help="whose token (default: you; another's: an admin)")
    p.add_argument("--name", default="", help="a label to tell it apart by (at most 200 characters)")
    p = token.command("list", "tokens (yours unless --user or --all), never the tokens themselves", handler("list_cmd"))
    p.add_argument("--user", metavar="NAME", help="another user's tokens (an admin)")
    p.add_argument("--all", action="store_true", help="every user's tokens (an admin)")
    p = token.command("revoke", "revoke a token by id: its requests are refused (401) from now on", handler("revoke"),
                      mutates=True)
    p.add_argument("id", help="the token's id (`r2k users token list`)")


def services_up(cli, args):
    from r2k.core.services import admin

    admin.services_up(cli.ctx)
    return services_status(cli, args)


def services_down(cli, args):
    from r2k.core.services import admin

    return Table(admin.services_down(cli.ctx), ["name", "stopped"])


def services_status(cli, args):
    from r2k.core.services import admin

    rows = admin.services_status(cli.ctx)
    if next(r["answers"] for r in rows if r["name"] == "postgres"):
        cli.actor  # a known user, once the database can tell; a server that is down is the operator's to see
    redis_answers = next(r["answers"] for r in rows if r["name"] == "redis")
    breaker = _breaker_row(cli) if redis_answers else None  # status never starts a service
    if breaker:
        rows.append(breaker)
    postgres_answers = next(r["answers"] for r in rows if r["name"] == "postgres")
    retrieval = _retrieval_row(cli) if postgres_answers else None
    if retrieval:
        rows.append(retrieval)
    from ..remote.status import status_rows

    rows += status_rows(cli.ctx.settings.data_dir)  # each running `serve ssh`, with its sessions
    return Table(rows, ["name", "mode", "listens", "answers", "credential", "detail"])


def _breaker_row(cli) -> dict | None:
    """The LLM circuit breaker's state, when Redis answers (it lives there)."""
    try:
        from r2k.core.services import generation

        state = generation.breaker_status(cli.ctx)
    except Exception as exc:  # noqa: BLE001 - the other rows stand; this one is left out, and said why
        log.warning("services status: the LLM circuit breaker could not be read, so its row is left out (%s: %s)",
                    type(exc).__name__, exc)
        return None
    return {"name": "llm", "mode": "external" if cli.ctx.settings.llm_url else "embedded",
            "url": state.get("url"), "listens": state.get("url"), "answers": state["state"] != "open",
            "detail": f"circuit {state['state']}, {state['failures']} consecutive failures", "pid": None,
            "circuit": state}


def _retrieval_row(cli) -> dict | None:
    """How retrieval runs: by words and meaning, lexical only and why, or refused (a model mismatch)."""
    try:
        from r2k.core.services import embeddings

        state = embeddings.status(cli.ctx)
    except Exception as exc:  # noqa: BLE001 - the other rows stand; this one is left out, and said why
        log.warning("services status: the vector index could not be read, so its row is left out (%s: %s)",
                    type(exc).__name__, exc)
        return None
    settings = cli.ctx.settings
    return {"name": "retrieval", "mode": "external" if settings.embeddings_url else "embedded",
            "url": settings.embeddings_url or state.get("model"), "answers": state["retrieval"] != "refused",
            "detail": state["detail"], "pid": None, "retrieval": state}


def index_rebuild(cli, args):
    from r2k.core.services import embeddings

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


def db_upgrade(cli, args):
    from r2k.core.services import admin

    return admin.db_upgrade(cli.ctx)


def users_add(cli, args):
    from r2k.core.services import users

    horns = [h for h in args.horn_types.split(",") if h.strip()]
    return users.add(cli.ctx, args.name, args.role, horns, by=cli.actor, idempotency_key=args.idempotency_key)


def users_add_key(cli, args):
    from r2k.core.domain import files, limits
    from r2k.core.services import users

    text = files.read_text_argument(args.key_file, "--key-file", limits.KEY_FILE, errors="replace")
    return users.add_key(cli.ctx, args.name, text, by=cli.actor, path=args.authorized_keys,
                         idempotency_key=args.idempotency_key)


def users_list(cli, args):
    from r2k.core.services import users

    return Table(users.list_users(cli.ctx), ["name", "role", "horn_types", "version"])


def audit_verify(cli, args):
    from r2k.core.services import admin

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
    return _one_per_line(lines)


def _one_per_line(lines: list[str]) -> str:
    """Lines that name what the database holds: a stored id with a newline in it cannot print a
    line of its own (a forged "ok")."""
    from ..safe import visible

    return "\n".join(visible(line, multiline=False) for line in lines)


def audit_anchor(cli, args):
    from r2k.core.errors import Conflict, NotFound
    from r2k.core.services import admin

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


def replay_cmd(cli, args):
    from r2k.core.services import admin

    if args.repair:
        return _repair(cli, admin.replay_repair(cli.ctx, cli.admin("run `r2k replay --repair`")))
    report = admin.replay(cli.ctx)
    if report["ok"]:
        text = f"ok: {report['events']} events rebuild all {report['rows']} rows exactly"
    else:
        lines = [f"{len(report['differences'])} difference(s) between events and tables:"]
        for d in report["differences"][:50]:
            where = f"{d['aggregate_type']} {d['id']}" + (f".{d['column']}" if d.get("column") else "")
            what = d.get("problem") or f"events say {d['from_events']!r}, table has {d['in_table']!r}"
            lines.append(f"  {where}: {what}")
        text = _one_per_line(lines)
    return Text(report, text), (0 if report["ok"] or not args.verify else 1)


def _repair(cli, report: dict):
    """What `replay --repair` changed, a line each; exit 1 when differences remain."""
    lines = [f"repaired {len(report['changed'])} difference(s); {len(report['left'])} left"
             + ("; every projection now matches its events" if report["ok"] else "")]
    for c in report["changed"][:200]:
        where = f"{c['aggregate_type']} {c['id']}" + (f".{c['column']}" if c.get("column") else "")
        lines.append(f"  {where}: " + (c.get("change") or f"{c['from']!r} -> {c['to']!r}"))
    for d in report["left"][:50]:
        where = f"{d['aggregate_type']} {d['id']}" + (f".{d['column']}" if d.get("column") else "")
        lines.append(f"  left {where}: {d['why']}")
    return Text(report, _one_per_line(lines)), (0 if report["ok"] else 1)
