"""Chaos soak: nothing is claimed twice or lost, whatever crashes.

    python bench/soak.py [--validators 50] [--minutes 10] [--workers 2] [--seed N] [--reviews K]

In a data dir of its own (`R2K_DATA_DIR`, else /tmp/r2k-bench-soak; emptied at the start of every
run, and refused when it holds anything a soak did not make), with every other `R2K_*` setting
dropped (the soak kills its servers: never anyone else's):

- **Load.** `r2k services up` starts the embedded servers; the demo corpus (documents to generate
  from), an admin (`soak-admin`) and N validators (`soak-v01`…, two or three Horn types each, every
  type held by someone) are added through core, and candidates copied from the demo's, each with a
  question of its own, are created with `candidates.create_candidate` in batches inside
  `ctx.db.begin()`, queued after the commit by their reactions. A loader thread keeps
  every Horn queue topped up the same way for the whole run (through the outages too).
- **Validators.** N OS processes (`soak.py --_validator`), each a workstation's Context (a pool of
  `--pool` connections, as the TUI) in a loop: `claims.claim_next` on one of its Horn types
  (with an idempotency key, so a claim whose reply was lost is not taken twice), a think time, then
  `approve`/`revise`/`reject`/`escalate` at random with an idempotency key of its own, retried with
  the same key after any error that is not a 4xx (503, a driver's connection error, anything
  unexpected) with a bounded backoff. It never dies of an error. Every claim, every decision about
  to be sent, and every decision it was told succeeded or refused is appended to a journal of its
  own (`soak/journal-vNN-G.jsonl`), flushed at once; errors go to `soak/validator-vNN-G.log`.
- **Workers.** `--workers` `r2k worker --processes K` processes generate for the escalations (and
  sync the graph, and sweep every R2K_SWEEP_INTERVAL s).
- **Chaos.** From a shuffled deck of the kinds (so a short run meets each), every `--interval`
  seconds a `kill -9` of: PostgreSQL (the postmaster of `run/postgres.json`), Redis, the graph
  server, a whole `r2k worker` (its process group; a fresh `r2k worker` is started), one RQ worker
  of a pool in the middle of a job (`worker-job`: the pool is relied on to respawn it), or a
  validator right after its claim or while its decision is in flight (a fresh validator process
  takes its place, as the same user). A killed server is restarted as an operator would: `r2k
  services up` after `--restart-pause` seconds (retried until it succeeds); the soak also records
  when r2k had it back by itself (a process that needed it starts a dead embedded server), and
  `--restart self` relies on that alone (`services up` only after 60 s). Validators follow a
  server after an outage as the workstation does (`ctx.reconnect`). After a server fault the
  loop waits for the first successful decision of a candidate claimed after the fault (up to 45 s)
  before the next one, so each recovery time is a fault's own.
- **The end.** Chaos stops, the servers are brought up, validators are told to stop (SIGTERM: each
  finishes the decision it holds, up to 60 s, and exits), workers are stopped, and after
  QUEUE_SETTLE s one `r2k queue sweep` runs. Then the invariants, each a line `invariant … PASS`:

  - double claims: in every candidate's signed event chain, no claim while another is held, no
    decision but by the holder of the claim, no second decision; in the journals, no candidate
    decided by two validator processes, and each reported decision follows, in the chain, the very
    claim (its idempotency key) that validator made;
  - candidates lost: every PENDING/DISPUTED candidate is in its Horn partition (the list or its
    in-flight set), every IN_REVIEW one has a claim whose lease was live when the sweep ran;
  - decisions reported successful but missing from the database: each journalled success has its
    event (same idempotency key and action) and its `validation_records` row;
  - decisions applied but reported refused: no decision a validator was refused (a 4xx) has an
    event with its key (a retry that applied twice, or a first try that applied and was reported
    failed);
  - validators that died by themselves: none (a validator never dies of an error);
  - `r2k audit verify` and `r2k replay --verify`, through the CLI as the admin: exact;
  - no process left behind: after `r2k services down` and stopping what it started, no process
    carrying this run's R2K_SOAK_TAG in its environment (every process it started and all theirs:
    servers, backends, pool workers) is alive.

It also prints decisions per second, p50/p99 decision latency (first send to success) of the
decisions that overlap no server outage (a fault until the first decision after it), each fault,
and by kind the time from the kill to the first successful decision of a candidate claimed after
it (targets: under 15 s for PostgreSQL, under 5 s for Redis; figures, not invariants), the errors
the validators saw and the error lines of the workers' logs, and what the sweeps are for, watched
every 2 s: queued candidates out of their partition, expired claims not released, RQ queue depths,
claims answered 404 while PostgreSQL holds unreachable queued rows (`--drained` keeps one Horn queue
near empty), the fate of the jobs killed workers were running, servers back at another address.
`--escalations` sets the share of decisions that make work for the workers. `--reviews K` makes
every queue require K blind reviews per candidate (overlap, docs/architecture.md "Overlap"): a
review short of the K-th is a `review` move, a disagreeing K-th a `disagree` (to adjudication);
the double-claim invariant then also counts a validator reviewing one candidate twice in a round,
"decided by two validators" means two final decisions, and a review needs its event, not a
validation record. Exits 1 when an
invariant fails, and then keeps the servers' data for inspection. Ctrl-C (or SIGTERM) stops every
process it started and the servers of its data dir.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import uuid
from collections import Counter, defaultdict
from pathlib import Path

from _common import ROOT, percentile

HORNS = ("FACT", "RULE", "CONSTRAINT", "PROCEDURE", "OPEN_ISSUE")
SERVERS = ("postgres", "redis", "graph")
KINDS = ("postgres", "redis", "graph", "worker", "worker-job", "validator")
TARGETS = {"postgres": 15.0, "redis": 5.0}
DECISIONS = ("approve", "revise", "reject", "escalate")
TAG_VAR = "R2K_SOAK_TAG"
MARKER = ".r2k-soak"
ADMIN = "soak-admin"
RECOVERY_WAIT = 45.0
SELF_RESTART_WAIT = 60.0  # --restart self: how long r2k has to restart a killed server before the operator does   # seconds the chaos loop waits for the first decision after a server fault
STOP_GRACE = 60.0      # seconds a validator has to finish its decision once told to stop


def now() -> float:
    return time.time()


def norm(message: str) -> str:
    """A message with its numbers and ids blurred, to count alike errors together."""
    message = re.sub(r"'[^']*'", "'…'", message.strip().splitlines()[0] if message.strip() else "")
    return re.sub(r"\d+(\.\d+)?", "N", message)[:220]


# ============================================================================ the validator process

def validator_main(args) -> int:
    """One validator: claim, think, decide, journal; until told to stop (SIGTERM)."""
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    parent = os.getppid()
    rng = random.Random(args.seed)
    think_lo, think_hi = (float(x) for x in args.think.split(":"))
    journal = open(args.journal, "a", buffering=1)
    import logging

    logging.basicConfig(level=logging.WARNING, format="LOG %(created).3f %(levelname)s %(name)s: %(message)s")
    me = f"{args.user}.{os.getpid()}.{uuid.uuid4().hex[:6]}"
    seen_tracebacks: set = set()
    counter = iter(range(1, 1 << 60))

    def write(ev: str, **fields) -> None:
        journal.write(json.dumps({"ev": ev, "t": now(), **fields}) + "\n")
        journal.flush()

    from r2k.core.bootstrap import bootstrap
    from r2k.core.errors import R2KError
    from r2k.core.outage import service_error

    ctx = bootstrap(pool_size=args.pool or None)

    def classify(exc: BaseException) -> tuple[int, str, str]:
        if isinstance(exc, R2KError):
            return exc.status, type(exc).__name__, exc.message
        name = f"{type(exc).__module__}.{type(exc).__name__}"
        try:
            translated = service_error(exc, ctx)
        except Exception:  # noqa: BLE001
            translated = None
        return (503 if translated is not None else 500), name, str(exc)

    def report(phase: str, exc: BaseException) -> int:
        status, name, message = classify(exc)
        # One write a line: the pool's threads log to the same stderr.
        sys.stderr.write(f"ERR {now():.3f} {phase} {status} {name}: "
                         f"{(message.strip().splitlines() or [''])[0][:300]}\n")
        key = (phase, name, norm(message))
        if status >= 500 and key not in seen_tracebacks and len(seen_tracebacks) < 40:
            seen_tracebacks.add(key)
            sys.stderr.write("TRACEBACK " + "".join(traceback.format_exception(exc)).rstrip().replace("\n", "\n  ")
                             + "\n")
        sys.stderr.flush()
        return status

    def orphaned() -> bool:
        return os.getppid() != parent

    def backoff(n: int, exc: BaseException | None = None) -> None:
        """Wait (bounded), then, when a service did not answer, follow it as the workstation does
        (app/tui.py `reconnect`: `ctx.reconnect(part)`, which finds a server that came back elsewhere
        and starts an embedded one that died), where this r2k has it."""
        time.sleep(min(2.0, 0.05 * 2 ** min(n, 6)) * rng.uniform(0.5, 1.0))
        if exc is None or not hasattr(ctx, "reconnect"):
            return
        try:
            down = service_error(exc, ctx)
            part = getattr(down, "part", None)
            if part:
                ctx.reconnect(part)
        except Exception as follow_error:  # noqa: BLE001 - still down: the next attempt says so
            sys.stderr.write(f"FOLLOW {now():.3f} {type(follow_error).__name__}: "
                             f"{(str(follow_error).strip().splitlines() or [''])[0][:200]}\n")

    actor = None
    n = 0
    while actor is None:
        if stop.is_set() or orphaned():
            write("exit", why="stopped before starting")
            return 0
        try:
            from r2k.core.services.people import users

            actor = users.resolve(ctx, args.user)
        except Exception as exc:  # noqa: BLE001
            report("start", exc)
            n += 1
            backoff(n, exc)
    from r2k.core.services.queue import claims
    from r2k.core.services.validation import candidates

    horns = sorted(actor.horn_types, key=HORNS.index)
    write("start", pid=os.getpid(), user=args.user, horns=horns)
    looked: dict[str, float] = {}

    def empty_but_queued(horn: str) -> None:
        """A claim said the partition is empty: does PostgreSQL hold queued candidates of it that
        settled (their push, if any, is long done)? At most every 2 s per Horn type."""
        if now() - looked.get(horn, 0) < 2:
            return
        looked[horn] = now()
        from r2k.core.adapters.redis_queues import inflight_key, queue_key

        try:
            with ctx.db.read() as tx:
                queued = {r["id"] for r in tx.all(
                    "SELECT id FROM candidates WHERE horn_type = %s AND state IN ('PENDING', 'DISPUTED') "
                    "AND updated_at < now() - interval '5 seconds' LIMIT 5000", (horn,))}
            if not queued:
                return
            held = {int(i) for i in ctx.redis.lrange(queue_key(horn), 0, -1)}
            held |= {int(i) for i in ctx.redis.zrange(inflight_key(horn), 0, -1)}
        except Exception:  # noqa: BLE001
            return
        if queued - held:  # neither listed nor in flight: out of reach of every claim
            write("empty_but_queued", horn=horn, queued=len(queued - held))

    def claim_one():
        """A claim on one of our Horn types: (row, journal fields), or None when all are empty
        or we are told to stop."""
        fails = 0
        while not (stop.is_set() or orphaned()):
            order = horns[:]
            rng.shuffle(order)
            empty = 0
            for horn in order:
                key = f"{me}:claim:{next(counter)}"
                t0 = now()
                while True:
                    try:
                        row = claims.claim_next(ctx, actor, horn, idempotency_key=key)
                        return row, {"horn": horn, "claim_key": key, "claim_t0": t0, "claim_t": now()}
                    except Exception as exc:  # noqa: BLE001 - errors are expected: back off, carry on
                        status = report("claim", exc)
                        if status == 404:
                            empty += 1
                            empty_but_queued(horn)
                            break
                        if status in (400, 403, 409, 422):
                            fails += 1
                            backoff(fails)
                            break  # a fresh key, maybe another Horn type
                        fails += 1
                        if stop.is_set() or orphaned():
                            return None
                        backoff(fails, exc)  # 503 or unexpected: the same request again, same key
            if empty == len(order):
                time.sleep(0.5)
        return None

    while not (stop.is_set() or orphaned()):
        got = claim_one()
        if got is None:
            break
        row, claimed = got
        cid = row["id"]
        write("claim", id=cid, key=claimed["claim_key"], horn=claimed["horn"], t0=claimed["claim_t0"])
        time.sleep(rng.uniform(think_lo, think_hi))
        e = args.escalations
        if row["horn_type"] == "OPEN_ISSUE":  # never approved or revised
            choices, weights = ("reject", "escalate"), [1 - e, e]
        else:
            choices, weights = DECISIONS, [(1 - e) / 2, (1 - e) / 4, (1 - e) / 4, e]
        action = rng.choices(choices, weights=weights)[0]
        key = f"{me}:{action}:{cid}:{next(counter)}"
        write("send", id=cid, action=action, key=key)
        t_send = now()
        attempts = 0
        stop_deadline = None
        while True:
            attempts += 1
            t0 = time.perf_counter()
            try:
                if action == "approve":
                    done = candidates.approve(ctx, actor, cid, idempotency_key=key)
                elif action == "revise":
                    done = candidates.revise(ctx, actor, cid, f"{row['text'][:2000]} (revised by {args.user})",
                                             idempotency_key=key)
                elif action == "reject":
                    done = candidates.reject(ctx, actor, cid, f"rejected by {args.user} in the soak",
                                             idempotency_key=key)
                else:
                    done = candidates.escalate(ctx, actor, cid, f"escalated by {args.user} in the soak",
                                               idempotency_key=key)
                call = time.perf_counter() - t0
                # Under overlap the move made may be a review (back to PENDING) or a disagreement.
                moved = {"PENDING": "review", "ADJUDICATION": "disagree"}.get(done["candidate"]["state"], action)
                write("decided", id=cid, action=action, event=moved, key=key, user=args.user, t_send=t_send,
                      latency=now() - t_send, call=call, attempts=attempts, **claimed)
                break
            except Exception as exc:  # noqa: BLE001 - errors are expected: back off, carry on
                status = report("decide", exc)
                if 400 <= status < 500:
                    write("refused", id=cid, action=action, key=key, user=args.user, status=status,
                          message=classify(exc)[2][:300], attempts=attempts)
                    break
                if stop.is_set() and stop_deadline is None:
                    stop_deadline = now() + args.stop_grace
                if orphaned() or (stop_deadline is not None and now() > stop_deadline):
                    write("abandoned", id=cid, action=action, key=key, user=args.user, attempts=attempts)
                    break
                backoff(attempts, exc)
    write("exit", why="orphaned" if orphaned() else "stopped")
    try:
        from r2k.core import audit

        audit.wait_pending()
    except Exception:  # noqa: BLE001
        pass
    return 0


# ============================================================================ the parent: set-up

def prepare_env(args) -> tuple[dict, Path, list[str]]:
    """The soak's environment: its own data dir, nothing else of the caller's R2K_* settings."""
    data_dir = Path(os.environ.get("R2K_DATA_DIR") or Path(tempfile.gettempdir()) / "r2k-bench-soak").resolve()
    dropped = sorted(k for k in os.environ if k.startswith("R2K_") and k != "R2K_DATA_DIR")
    env = {k: v for k, v in os.environ.items() if not k.startswith("R2K_")}
    env.update({"R2K_DATA_DIR": str(data_dir), "R2K_CLAIM_LEASE_SECONDS": str(args.lease),
                TAG_VAR: uuid.uuid4().hex, "PYTHONUNBUFFERED": "1"})
    os.environ.clear()
    os.environ.update(env)
    return env, data_dir, dropped


def empty_data_dir(data_dir: Path) -> None:
    """Start from an empty data dir: one a soak made is stopped and removed; any other is refused."""
    if data_dir.exists() and any(data_dir.iterdir()):
        if not (data_dir / MARKER).exists():
            raise SystemExit(f"{data_dir} is not empty and was not made by the soak: the soak kills and removes "
                             f"its data dir's servers, so give it an empty R2K_DATA_DIR")
        from r2k.core import embedded
        from r2k.core.config import Settings

        try:
            embedded.purge(Settings(data_dir=data_dir))
        except Exception as exc:  # noqa: BLE001
            print(f"note: stopping the servers of the previous soak failed: {exc}")
        shutil.rmtree(data_dir)
    data_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
    (data_dir / MARKER).write_text("made by bench/soak.py; emptied at the start of every soak\n")


def proc_stat(pid: int) -> tuple[str, int, int] | None:
    """(state, ppid, pgrp) of a process, None when gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    fields = stat[stat.rindex(")") + 2:].split()
    return fields[0], int(fields[1]), int(fields[2])


def alive(pid: int) -> bool:
    st = proc_stat(pid)
    return st is not None and st[0] not in ("Z", "X")


def tagged_processes(tag: str) -> list[tuple[int, str]]:
    """Every live process (but this one) whose environment carries this run's tag."""
    needle = f"{TAG_VAR}={tag}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            environ = Path(f"/proc/{entry}/environ").read_bytes()
        except OSError:
            continue
        if needle in environ.split(b"\0") and alive(int(entry)):
            try:
                cmd = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                cmd = "?"
            found.append((int(entry), cmd.strip()[:120]))
    return found


def group_members(pgid: int) -> list[int]:
    members = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            st = proc_stat(int(entry))
            if st and st[2] == pgid and st[0] not in ("Z", "X"):
                members.append(int(entry))
    return members


# ============================================================================ the parent: the soak

class Journals:
    """Tails every validator's journal: complete lines only, each file from where it was left."""

    def __init__(self, logdir: Path):
        self.logdir = logdir
        self.offsets: dict[Path, int] = {}
        self.entries: list[dict] = []
        self.last: dict[Path, dict] = {}
        self.decided: list[dict] = []
        self._lock = threading.Lock()

    def poll(self) -> None:
        with self._lock:
            for path in sorted(self.logdir.glob("journal-*.jsonl")):
                offset = self.offsets.get(path, 0)
                try:
                    with open(path, "rb") as handle:
                        handle.seek(offset)
                        data = handle.read()
                except OSError:
                    continue
                end = data.rfind(b"\n")
                if end < 0:
                    continue
                self.offsets[path] = offset + end + 1
                for line in data[:end].splitlines():
                    try:
                        entry = json.loads(line)
                    except ValueError:
                        continue
                    entry["journal"] = path.name
                    self.entries.append(entry)
                    self.last[path] = entry
                    if entry["ev"] == "decided":
                        self.decided.append(entry)

    def first_decision_after(self, t: float) -> dict | None:
        """The first success of a decision on a candidate claimed (the claim asked for) after t."""
        best = None
        for e in self.decided:
            if e["claim_t0"] > t and (best is None or e["t"] < best["t"]):
                best = e
        return best


class Soak:
    def __init__(self, args, env: dict, data_dir: Path):
        self.args, self.env, self.data_dir = args, env, data_dir
        self.tag = env[TAG_VAR]
        self.rng = random.Random(args.seed)
        self.logdir = data_dir / "soak"
        self.logdir.mkdir(mode=0o700, exist_ok=True)
        self.journals = Journals(self.logdir)
        self.validators: dict[int, subprocess.Popen] = {}
        self.journal_of: dict[int, Path] = {}
        self.vlog_of: dict[int, Path] = {}
        self.vgen: Counter = Counter()
        self.workers: dict[int, subprocess.Popen] = {}
        self.wgen: Counter = Counter()
        self.wlog_of: dict[int, Path] = {}
        self.wstarted: dict[int, float] = {}
        self.killed: set[int] = set()          # pids we killed on purpose
        self.started: set[int] = set()         # every pid we started (validators, workers, CLI commands)
        self.server_pids: dict[str, set[int]] = defaultdict(set)
        self.faults: list[dict] = []
        self.unexpected: list[dict] = []       # validators or workers that exited by themselves
        self.cli_log: list[dict] = []
        self.later: list[tuple[float, object]] = []
        self.users: list[tuple[str, list[str]]] = []
        self._ctxs: dict[str, tuple[object, dict]] = {}
        self.loader = None
        self.loader_stop = threading.Event()
        self.loader_errors: Counter = Counter()
        self.created = 0
        self.t_start = self.t_end = None
        self.templates: dict[str, list[dict]] = {}
        self.seq = 0
        self.missing_since: dict[int, float] = {}
        self.missing_longest: dict[int, float] = {}
        self.missing_now = 0
        self.expired_longest = (0.0, 0.0)
        self.samples: list[tuple[float, int, float, int, int]] = []

    # -------------------------------------------------------------------- the soak's own connections

    @property
    def ctx(self):
        """This thread's Context, made anew whenever a server came back at another address: the soak's
        own figures and checks must read our servers, whatever the processes under test do."""
        from r2k.core.bootstrap import bootstrap

        name = threading.current_thread().name
        addresses = self.addresses()
        held = self._ctxs.get(name)
        if held is None or held[1] != addresses:
            if held is not None:
                try:
                    held[0].close()
                except Exception:  # noqa: BLE001
                    pass
            held = (bootstrap(pool_size=3), addresses)
            self._ctxs[name] = held
        return held[0]

    def addresses(self) -> dict:
        from r2k.core import embedded
        from r2k.core.config import get_settings

        return {part: (embedded.common.read_state(get_settings(), part) or {}).get("socket") for part in SERVERS}

    def retry(self, fn, what: str, tries: int = 30):
        """The soak's own reads at the end, through a connection a restart may have broken (the
        first use after one fails, as for every client): tried again for up to a minute."""
        for attempt in range(tries):
            try:
                return fn()
            except Exception as exc:  # noqa: BLE001
                if attempt == tries - 1:
                    raise
                print(f"  (the soak's own {what} failed, tried again: {type(exc).__name__}: "
                      f"{(str(exc).strip().splitlines() or [''])[0][:160]})", flush=True)
                time.sleep(min(2.0, 0.2 * (attempt + 1)))

    def close_contexts(self) -> None:
        for ctx, _ in self._ctxs.values():
            try:
                ctx.close()
            except Exception:  # noqa: BLE001
                pass
        self._ctxs.clear()

    # -------------------------------------------------------------------- commands and processes

    def cli(self, *argv: str, timeout: float = 180, check: bool = False) -> subprocess.CompletedProcess:
        """One `r2k` command, in a session of its own (a Ctrl-C never reaches a server it starts)."""
        t0 = now()
        proc = subprocess.Popen([sys.executable, "-m", "r2k.app", *argv], cwd=ROOT, env=self.env, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
        self.started.add(proc.pid)
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            err += f"\n(soak: killed after {timeout:.0f} s)"
        result = subprocess.CompletedProcess(proc.args, proc.returncode, out, err)
        self.cli_log.append({"argv": argv, "rc": proc.returncode, "seconds": now() - t0, "t": t0,
                             "stderr": err.strip()[-600:]})
        if check and proc.returncode != 0:
            raise SystemExit(f"r2k {' '.join(argv)} failed ({proc.returncode}): {err.strip()}")
        return result

    def note_servers(self) -> dict[str, dict]:
        from r2k.core import embedded
        from r2k.core.config import get_settings

        states = {}
        for part in SERVERS:
            state = embedded.common.read_state(get_settings(), part) or {}
            states[part] = state
            if state.get("pid"):
                self.server_pids[part].add(state["pid"])
        return states

    def start_validator(self, slot: int) -> None:
        self.vgen[slot] += 1
        gen = self.vgen[slot]
        user, _ = self.users[slot]
        journal = self.logdir / f"journal-v{slot + 1:02d}-{gen}.jsonl"
        log = self.logdir / f"validator-v{slot + 1:02d}-{gen}.log"
        with open(log, "a") as out:
            proc = subprocess.Popen(
                [sys.executable, str(Path(__file__).resolve()), "--_validator", "--user", user, "--journal",
                 str(journal), "--seed", str(self.args.seed * 1000 + slot * 37 + gen), "--think", self.args.think,
                 "--pool", str(self.args.pool), "--stop-grace", str(STOP_GRACE), "--restart", self.args.restart,
                 "--escalations", str(self.args.escalations)],
                cwd=ROOT, env=self.env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                start_new_session=True)
        self.started.add(proc.pid)
        self.validators[slot], self.journal_of[slot], self.vlog_of[slot] = proc, journal, log

    def start_worker(self, j: int) -> None:
        self.wgen[j] += 1
        log = self.logdir / f"worker-{j + 1}-{self.wgen[j]}.log"
        with open(log, "a") as out:
            proc = subprocess.Popen([sys.executable, "-m", "r2k.app", "worker", "--processes",
                                     str(self.args.worker_processes), "--as", ADMIN],
                                    cwd=ROOT, env=self.env, stdout=out, stderr=subprocess.STDOUT,
                                    stdin=subprocess.DEVNULL, start_new_session=True)
        self.started.add(proc.pid)
        self.workers[j], self.wlog_of[j], self.wstarted[j] = proc, log, now()

    # -------------------------------------------------------------------- load

    def setup(self) -> None:
        import logging

        logging.basicConfig(filename=self.logdir / "parent.log", level=logging.WARNING,
                            format="%(asctime)s %(levelname)s %(name)s: %(message)s")
        t0 = now()
        self.cli("services", "up", check=True)
        self.note_servers()
        from r2k.core.domain import SYSTEM
        from r2k.core.services.operations.demo import load
        from r2k.core.services.people import users

        load(self.ctx, SYSTEM)
        users.add(self.ctx, ADMIN, "admin", by=SYSTEM)
        if self.args.reviews > 1:
            from r2k.core.services.validation import overlap

            admin = users.resolve(self.ctx, ADMIN)
            for horn in HORNS:
                overlap.configure(self.ctx, admin, horn, self.args.reviews)
        for i in range(self.args.validators):
            horns = {HORNS[i % len(HORNS)], *self.rng.sample(HORNS, self.rng.randint(1, 2))}
            horns = sorted(horns, key=HORNS.index)
            name = f"soak-v{i + 1:02d}"
            users.add(self.ctx, name, "validator", horns, by=SYSTEM)
            self.users.append((name, horns))
        with self.ctx.db.read() as tx:
            for r in tx.all("SELECT question, text, horn_type, source_refs, document_id FROM candidates "
                            "WHERE origin = 'extracted' ORDER BY id"):
                self.templates.setdefault(r["horn_type"], []).append(r)
        holders = Counter(h for _, hs in self.users for h in hs)
        for horn in HORNS:
            self.create(horn, self.initial(holders[horn]) if horn != self.args.drained else self.stock(horn, holders[horn])[1])
        print(f"set-up: servers up, demo corpus, {len(self.users)} validators and {ADMIN}, "
              f"{self.created} candidates created in {now() - t0:.1f} s")

    def initial(self, holders: int) -> int:
        return max(150, 12 * holders)

    def stock(self, horn: str, holders: int) -> tuple[int, int]:
        """(refill below this many PENDING, by this many): the drained Horn type only when empty."""
        if horn == self.args.drained:
            return 1, max(5, holders)
        return self.initial(holders) // 2, self.initial(holders) // 2

    def create(self, horn: str, count: int) -> None:
        """`count` candidates of `horn`, created through core in batches and queued after commit."""
        from r2k.core.domain import SYSTEM
        from r2k.core.services.validation import candidates

        templates = self.templates.get(horn) or [t for ts in self.templates.values() for t in ts]
        ctx = self.ctx
        while count > 0:
            batch = min(count, 250)
            rows: list[dict] = []
            with ctx.db.begin() as tx:
                for _ in range(batch):
                    self.seq += 1
                    src = templates[self.seq % len(templates)]
                    rows.append(candidates.create_candidate(
                        tx, SYSTEM, f"{src['question'].rstrip('?')} (soak {self.seq})?", src["text"], horn,
                        src["source_refs"], origin="extracted", document_id=src["document_id"]))
            self.created += batch
            count -= batch

    def load_forever(self) -> None:
        """Keep every Horn queue topped up, through the outages too (errors: wait and retry), and
        watch what the sweeps are for: queued candidates missing from their partition, expired
        claims not yet released."""
        holders = Counter(h for _, hs in self.users for h in hs)
        fails = 0
        while not self.loader_stop.wait(2.0 if not fails else min(5.0, 0.5 * fails)):
            try:
                with self.ctx.db.read() as tx:
                    pending = {r["horn_type"]: r["n"] for r in tx.all(
                        "SELECT horn_type, count(*) AS n FROM candidates WHERE state = 'PENDING' GROUP BY 1")}
                for horn in HORNS:
                    low, refill = self.stock(horn, holders[horn])
                    if pending.get(horn, 0) < low:
                        self.create(horn, refill)
                fails = 0
            except Exception as exc:  # noqa: BLE001 - an outage: the loader waits like everyone else
                fails += 1
                self.loader_errors[f"{type(exc).__name__}: {norm(str(exc))}"] += 1
                continue
            try:
                self.watch()
            except Exception:  # noqa: BLE001 - an outage: the next look will tell
                pass

    def watch(self) -> None:
        """One look, Redis first and PostgreSQL second (as the sweep does: a claim in between only
        makes Redis look fuller), at rows queued and settled for 5 s that are in no partition, and at
        claims whose lease ran out."""
        held = self.partitions()
        from r2k.core.adapters import jobs

        depth = jobs.depth(self.ctx.redis)
        with self.ctx.db.read() as tx:
            queued = tx.all("SELECT id, horn_type FROM candidates WHERE state IN ('PENDING', 'DISPUTED') "
                            "AND updated_at < now() - interval '5 seconds'")
            expired = tx.scalar("SELECT extract(epoch FROM now() - min(lease_expires_at)) FROM candidates "
                                "WHERE state = 'IN_REVIEW' AND lease_expires_at < now()")
        t = now()
        missing = {r["id"] for r in queued if r["id"] not in held[r["horn_type"]]}
        for cid in missing:
            self.missing_since.setdefault(cid, t)
            self.missing_longest[cid] = t - self.missing_since[cid]
        for cid in list(self.missing_since):
            if cid not in missing:
                del self.missing_since[cid]
        self.missing_now = len(missing)
        if expired is not None and float(expired) > self.expired_longest[0]:
            self.expired_longest = (float(expired), t)
        self.samples.append((t, len(missing), float(expired or 0), depth.get("graph", 0), depth.get("generation", 0)))

    def partitions(self) -> dict[str, set[int]]:
        """The ids each Horn partition holds: its list and its in-flight set."""
        from r2k.core.adapters.redis_queues import inflight_key, queue_key

        pipe = self.ctx.redis.pipeline(transaction=True)
        for horn in HORNS:
            pipe.lrange(queue_key(horn), 0, -1)
            pipe.zrange(inflight_key(horn), 0, -1)
        got = pipe.execute()
        return {horn: {int(i) for i in got[2 * k]} | {int(i) for i in got[2 * k + 1]} for k, horn in enumerate(HORNS)}

    # -------------------------------------------------------------------- supervision

    def tick(self, seconds: float = 0.0) -> None:
        """Wait `seconds` while watching: journals read, processes that exited by themselves noted
        and replaced, checks that were due run."""
        end = now() + seconds
        while True:
            self.journals.poll()
            for slot, proc in list(self.validators.items()):
                if proc.poll() is not None and proc.pid not in self.killed:
                    self.unexpected.append({"what": f"validator {self.users[slot][0]}", "pid": proc.pid,
                                            "rc": proc.returncode, "t": now(),
                                            "tail": tail(self.vlog_of[slot], 8)})
                    self.killed.add(proc.pid)
                    self.start_validator(slot)
            for j, proc in list(self.workers.items()):
                if proc.poll() is not None and proc.pid not in self.killed and now() - self.wstarted[j] > 2:
                    self.unexpected.append({"what": f"r2k worker {j + 1}", "pid": proc.pid, "rc": proc.returncode,
                                            "t": now(), "tail": tail(self.wlog_of[j], 12)})
                    self.killed.add(proc.pid)
                    kill_group(proc.pid)
                    self.start_worker(j)
            for due, fn in list(self.later):
                if now() >= due:
                    self.later.remove((due, fn))
                    fn()
            if now() >= end:
                return
            time.sleep(min(0.2, max(0.0, end - now())))

    # -------------------------------------------------------------------- faults

    def fault(self, kind: str) -> dict:
        f = {"kind": kind, "t": now(), "detail": ""}
        if kind in SERVERS:
            state = self.note_servers()[kind]
            pid, address = state.get("pid"), state.get("socket")
            if not pid or not alive(pid):
                f["skipped"] = f"{kind} not running"
                return f
            os.kill(pid, signal.SIGKILL)
            f["t"] = now()
            f["detail"] = f"pid {pid} (socket {address}) killed"
            wait = self.args.restart_pause if self.args.restart == "operator" else SELF_RESTART_WAIT
            while now() < f["t"] + wait:
                self.tick(0.1)
                back = self.note_servers()[kind]
                if "self_restart" not in f and back.get("pid") and back["pid"] != pid and alive(back["pid"]):
                    f["self_restart"] = now() - f["t"]
                    f["detail"] += (f"; r2k itself had it back {f['self_restart']:.1f} s later (pid {back['pid']}, "
                                    f"socket {back.get('socket')})")
                    if self.args.restart == "self":
                        break
            if self.args.restart == "self" and "self_restart" in f:
                after = back
                f["up_ok"] = True
                f["restarted_at"] = now()
                if after.get("socket") != address:
                    f["moved"] = (address, after.get("socket"), listener(address))
                    f["detail"] += f" (ADDRESS CHANGED: {address} is now held by {f['moved'][2]})"
                return f
            if self.args.restart == "self":
                f["detail"] += f"; nothing of r2k restarted it within {SELF_RESTART_WAIT:.0f} s: `services up`"
            tries = []
            while True:
                t0 = now()
                result = self.cli("services", "up", "--as", ADMIN, timeout=180)
                tries.append({"rc": result.returncode, "seconds": now() - t0,
                              "stderr": result.stderr.strip()[-400:]})
                if result.returncode == 0 or now() > self.t_end + 30 or len(tries) >= 20:
                    break
                self.tick(2.0)
            after = self.note_servers()[kind]
            f["up"] = tries
            f["up_ok"] = tries[-1]["rc"] == 0
            f["restarted_at"] = now()
            f["address_after"] = after.get("socket")
            said = ", ".join("rc %s %.1fs" % (t["rc"], t["seconds"]) for t in tries)
            f["detail"] += (f"; `services up` x{len(tries)} ({said}), now pid {after.get('pid')} socket "
                            f"{after.get('socket')}")
            if after.get("socket") != address:
                f["moved"] = (address, after.get("socket"), listener(address))
                f["detail"] += f" (ADDRESS CHANGED: {address} is now held by {f['moved'][2]})"
            return f
        if kind == "worker":
            j = self.rng.randrange(len(self.workers))
            proc = self.workers[j]
            members = group_members(proc.pid)
            f["jobs"] = self.busy_jobs({proc.pid})
            self.killed.add(proc.pid)
            kill_group(proc.pid)
            f["t"] = now()
            proc.wait()
            f["detail"] = (f"r2k worker {j + 1} (pid {proc.pid}, {len(members)} processes) killed"
                           + (f" with job(s) {', '.join(job for _, job in f['jobs'])}" if f["jobs"] else "")
                           + "; a fresh one started")
            self.tick(1.0)
            self.start_worker(j)
            return f
        if kind == "worker-job":
            return self.kill_busy_worker(f)
        return self.kill_validator(f)

    def kill_busy_worker(self, f: dict) -> dict:
        from rq import Worker

        groups = {proc.pid: j for j, proc in self.workers.items() if proc.poll() is None}
        deadline = now() + 8
        target = state = None
        while now() < deadline and target is None:
            try:
                registered = Worker.all(connection=self.ctx.redis)
            except Exception as exc:  # noqa: BLE001
                f["skipped"] = f"Redis: {exc}"
                return f
            ours = [(w, proc_stat(w.pid)) for w in registered if w.pid]
            ours = [(w, st[2]) for w, st in ours if st and st[2] in groups and w.pid != st[2]]
            busy = [(w, g) for w, g in ours if w.get_state() == "busy"]
            if busy:
                target, state = self.rng.choice(busy), "busy"
            elif ours and now() > deadline - 0.3:
                target, state = self.rng.choice(ours), "idle"
            else:
                self.tick(0.1)
        if target is None:
            f["skipped"] = "no RQ worker of ours registered"
            return f
        w, pgid = target
        job = w.get_current_job_id() if state == "busy" else None
        f["jobs"] = [(w.pid, job)] if job else []
        before = len(group_members(pgid))
        os.kill(w.pid, signal.SIGKILL)
        f["t"] = now()
        self.killed.add(w.pid)
        f["detail"] = f"RQ worker pid {w.pid} of r2k worker {groups[pgid] + 1} killed ({state}{', job ' + job if job else ''})"

        def respawned(f=f, pgid=pgid, before=before):
            if not alive(pgid) or pgid in self.killed:
                f["detail"] += "; its r2k worker was gone within 15 s (killed or exited): respawn not judged"
                return
            count = len(group_members(pgid))
            f["detail"] += f"; 15 s later its group has {count} processes (had {before})"
            f["respawned"] = count >= before
        self.later.append((now() + 15, respawned))
        return f

    def busy_jobs(self, pgids: set[int]) -> list[tuple[int, str]]:
        """(pid, job id) of every RQ worker of these process groups that is running a job."""
        from rq import Worker

        try:
            found = []
            for w in Worker.all(connection=self.ctx.redis):
                st = proc_stat(w.pid) if w.pid else None
                if st and st[2] in pgids and w.get_state() == "busy" and w.get_current_job_id():
                    found.append((w.pid, w.get_current_job_id()))
            return found
        except Exception:  # noqa: BLE001 - Redis down: not known
            return []

    def killed_jobs(self) -> list[dict]:
        """What became of each job a killed worker was running: re-run and finished, and when."""
        from r2k.core.adapters import jobs

        out = []
        for f in self.faults:
            for _pid, job_id in f.get("jobs", []):
                row = {"job": job_id, "kind": f["kind"], "killed_at": f["t"], "status": "?", "after": None,
                       "func": "?"}
                try:
                    job = jobs.job(self.ctx.redis, job_id)
                    row["func"] = job.func_name.rsplit(".", 1)[-1]
                    row["status"] = str(job.get_status(refresh=True).value if job.get_status() else "?")
                    ended = job.ended_at.timestamp() if job.ended_at else None
                    row["after"] = ended - f["t"] if ended and ended > f["t"] else None
                except Exception as exc:  # noqa: BLE001
                    row["status"] = f"gone ({type(exc).__name__})"
                out.append(row)
        return out

    def kill_validator(self, f: dict) -> dict:
        want = self.rng.choice(("claim", "send"))
        deadline = now() + 6
        while True:
            self.journals.poll()
            ready = [s for s, p in self.validators.items() if p.poll() is None
                     and (self.journals.last.get(self.journal_of[s]) or {}).get("ev") == want]
            if ready or now() > deadline:
                break
            time.sleep(0.01)
        if not ready:
            ready = [s for s, p in self.validators.items() if p.poll() is None]
            want = "any"
        if not ready:
            f["skipped"] = "no validator running"
            return f
        slot = self.rng.choice(ready)
        proc = self.validators[slot]
        last = self.journals.last.get(self.journal_of[slot]) or {}
        self.killed.add(proc.pid)
        proc.kill()
        f["t"] = now()
        proc.wait()
        phase = {"claim": "right after its claim", "send": "with its decision in flight"}.get(want, "")
        f["detail"] = (f"validator {self.users[slot][0]} (pid {proc.pid}) killed {phase or 'wherever it was'}"
                       + (f" (candidate {last.get('id')}{', ' + last['action'] if last.get('action') else ''})"
                          if last.get("id") else ""))
        f["phase"] = want
        self.tick(0.5)
        self.start_validator(slot)
        return f

    # -------------------------------------------------------------------- the run

    def run(self) -> int:
        args = self.args
        self.setup()
        self.loader = threading.Thread(target=self.load_forever, daemon=True, name="loader")
        self.loader.start()
        for j in range(args.workers):
            self.start_worker(j)
        for slot in range(len(self.users)):
            self.start_validator(slot)
            time.sleep(0.05)
        self.t_start = now()
        self.t_end = self.t_start + args.minutes * 60
        from r2k.core.config import get_settings

        self.sweep_interval = get_settings().sweep_interval
        print(f"{args.validators} validators, {args.workers} x `r2k worker --processes {args.worker_processes}`, "
              f"chaos for {args.minutes:g} min (seed {args.seed}; claim lease {args.lease} s; {args.drained} kept "
              f"drained; {args.escalations:.0%} of decisions escalate; servers restarted by "
              f"{'the operator' if args.restart == 'operator' else 'r2k itself'}; "
              f"logs in {self.logdir})", flush=True)
        deck: list[str] = []
        lo, hi = (float(x) for x in args.interval.split(":"))
        self.tick(min(lo, 3.0))
        while now() < self.t_end:
            self.tick(min(self.rng.uniform(lo, hi), max(0.0, self.t_end - now())))
            if now() >= self.t_end:
                break
            if not deck:
                deck = list(KINDS)
                self.rng.shuffle(deck)
            f = self.fault(deck.pop())
            self.faults.append(f)
            print(f"  t+{f['t'] - self.t_start:6.1f}s  {f['kind']:<10} {f.get('skipped') or f['detail']}", flush=True)
            if f["kind"] in SERVERS and "skipped" not in f:
                limit = f["t"] + RECOVERY_WAIT
                while now() < min(limit, self.t_end) and self.journals.first_decision_after(f["t"]) is None:
                    self.tick(0.2)
        self.t_chaos_end = now()
        return self.finish()

    def finish(self) -> int:
        print(f"chaos over after {self.t_chaos_end - self.t_start:.0f} s; stopping validators and workers", flush=True)
        up = self.cli("services", "up", "--as", ADMIN)
        if up.returncode != 0:
            print(f"  `services up` at the end failed ({up.returncode}): {up.stderr.strip()[-300:]}")
        self.note_servers()
        for proc in self.validators.values():
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
        deadline = now() + STOP_GRACE + 30
        stuck = []
        for slot, proc in self.validators.items():
            try:
                proc.wait(timeout=max(0.1, deadline - now()))
            except subprocess.TimeoutExpired:
                stuck.append(self.users[slot][0])
                self.killed.add(proc.pid)
                proc.kill()
                proc.wait()
            if proc.returncode not in (0, -signal.SIGKILL) and proc.pid not in self.killed:
                self.unexpected.append({"what": f"validator {self.users[slot][0]}", "pid": proc.pid,
                                        "rc": proc.returncode, "t": now(), "tail": tail(self.vlog_of[slot], 8)})
        t_validators_done = now()
        print(f"  validators stopped in {t_validators_done - self.t_chaos_end:.1f} s", flush=True)
        self.loader_stop.set()
        self.loader.join(30)
        killed_jobs = self.retry(self.killed_jobs, "read of the killed workers' jobs")
        for proc in self.workers.values():
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        deadline = now() + 30
        for proc in self.workers.values():
            try:
                proc.wait(timeout=max(0.1, deadline - now()))
            except subprocess.TimeoutExpired:
                pass
            self.killed.add(proc.pid)
            kill_group(proc.pid)
        t_workers_done = now()
        self.journals.poll()
        from r2k.core.services.queue.queue_index import QUEUE_SETTLE

        time.sleep(max(0.0, QUEUE_SETTLE + 1 - (now() - t_validators_done)))
        def clock():
            with self.ctx.db.read() as tx:
                return tx.scalar("SELECT now()")
        sweep_at = self.retry(clock, "read of the database's clock")
        before = self.retry(lambda: self.lost(sweep_at), "look at the partitions")
        print(f"  workers stopped in {t_workers_done - t_validators_done:.1f} s", flush=True)
        sweep = self.cli("queue", "sweep", "--as", ADMIN)
        results = self.retry(lambda: self.check(sweep_at), "check")
        results["before_sweep"] = before
        results["killed_jobs"] = killed_jobs
        results["stuck_validators"] = stuck
        results["sweep"] = sweep
        t0 = now()
        verify = self.cli("audit", "verify", "--as", ADMIN, timeout=600)
        replay = self.cli("replay", "--verify", "--as", ADMIN, timeout=600)
        print(f"  audit verify and replay --verify took {now() - t0:.1f} s", flush=True)
        results["verify"], results["replay"] = verify, replay
        self.copy_server_logs()
        self.close_contexts()
        down = self.cli("services", "down", "--as", ADMIN)
        results["down"] = down
        time.sleep(1.0)
        results["left"] = self.left_behind()
        return self.report(results)

    # -------------------------------------------------------------------- the invariants

    def check(self, sweep_at) -> dict:
        from r2k.core.adapters.redis_queues import inflight_key, queue_key

        ctx = self.ctx
        entries = self.journals.entries
        with ctx.db.read() as tx:
            candidates = tx.all("SELECT id, horn_type, state, claimed_by, lease_expires_at, updated_at FROM candidates")
            events = tx.all("SELECT aggregate_id, seq, type, actor, idempotency_key, created_at FROM events "
                            "WHERE aggregate_type = 'candidate' ORDER BY aggregate_id, seq")
            records = Counter((r["candidate_id"], r["action"], r["actor"]) for r in tx.all(
                "SELECT candidate_id, action, actor FROM validation_records"))
            items = tx.all("SELECT state, count(*) AS n, extract(epoch FROM now() - min(updated_at)) AS oldest "
                           "FROM work_items GROUP BY state ORDER BY state")
        listed, inflight, duplicates = {}, {}, 0
        for horn in HORNS:  # Redis after PostgreSQL here: nothing moves any more
            ids = [int(i) for i in ctx.redis.lrange(queue_key(horn), 0, -1)]
            duplicates += len(ids) - len(set(ids))
            listed[horn] = set(ids)
            inflight[horn] = {int(i) for i in ctx.redis.zrange(inflight_key(horn), 0, -1)}

        chains: dict[int, list[dict]] = defaultdict(list)
        by_key: dict[str, tuple[int, int]] = {}
        for ev in events:
            cid = int(ev["aggregate_id"])
            chain = chains[cid]
            if ev["idempotency_key"]:
                by_key[ev["idempotency_key"]] = (cid, len(chain))
            chain.append(ev)

        # Double claims, in the signed events.
        overlaps, by_other, twice, reviewed_twice, examples = 0, 0, 0, 0, []
        for cid, chain in chains.items():
            holder, decided, reviewers = None, 0, set()
            for ev in chain:
                if ev["type"] in ("claim", "re_review"):
                    if holder is not None:
                        overlaps += 1
                        examples.append(f"candidate {cid}: {ev['actor']} claimed (seq {ev['seq']}) while "
                                        f"{holder} held it")
                    if ev["actor"] in reviewers:
                        reviewed_twice += 1
                        examples.append(f"candidate {cid}: {ev['actor']} claimed it again (seq {ev['seq']}) "
                                        f"with a review of theirs open")
                    holder = ev["actor"]
                elif ev["type"] == "review":  # overlap: a decision short of the k-th, the claim ends
                    if holder != ev["actor"]:
                        by_other += 1
                        examples.append(f"candidate {cid}: review by {ev['actor']} (seq {ev['seq']}) on a "
                                        f"claim held by {holder}")
                    reviewers.add(ev["actor"])
                    holder = None
                elif ev["type"] in (*DECISIONS, "disagree"):
                    reviewers = set()
                    if holder != ev["actor"]:
                        by_other += 1
                        examples.append(f"candidate {cid}: {ev['type']} by {ev['actor']} (seq {ev['seq']}) on a "
                                        f"claim held by {holder}")
                    decided += 1
                    if decided == 2:
                        twice += 1
                        examples.append(f"candidate {cid}: decided a second time (seq {ev['seq']})")
                    holder = None
                elif ev["type"] == "release":
                    holder = None
                elif ev["type"] == "dispute":
                    decided = 0
        # ... and in the journals.
        decided_entries = [e for e in entries if e["ev"] == "decided"]
        final = [e for e in decided_entries if e.get("event", e["action"]) != "review"]  # a review is not final
        journals_of = defaultdict(set)
        for e in final:
            journals_of[e["id"]].add(e["journal"])
        two_validators = [cid for cid, js in journals_of.items() if len(js) > 1]
        examples += [f"candidate {cid}: decided by {', '.join(sorted(journals_of[cid]))}" for cid in two_validators[:5]]
        not_own, missing_event, missing_record = 0, 0, 0
        # A final decision has its validation record; a review or a disagreement has its event only.
        wanted = Counter((e["id"], e["action"], e["user"]) for e in decided_entries if e.get("event", e["action"]) == e["action"])
        for e in decided_entries:
            where = by_key.get(e["key"])
            if where is None or chains[where[0]][where[1]]["type"] != e.get("event", e["action"]) or where[0] != e["id"]:
                missing_event += 1
                examples.append(f"candidate {e['id']}: {e['action']} by {e['user']} (key {e['key']}) reported "
                                f"successful, no such event")
                continue
            chain = chains[where[0]][:where[1]]
            claim = next((ev for ev in reversed(chain) if ev["type"] in ("claim", "re_review")), None)
            if claim is None or claim["idempotency_key"] != e["claim_key"] or claim["actor"] != e["user"]:
                not_own += 1
                examples.append(f"candidate {e['id']}: {e['user']}'s {e['action']} follows the claim "
                                f"{claim and claim['idempotency_key']} by {claim and claim['actor']}, not its own "
                                f"{e['claim_key']}")
        for key, count in wanted.items():
            if records[key] < count:
                missing_record += count - records[key]
                examples.append(f"candidate {key[0]}: {key[1]} by {key[2]} reported successful, "
                                f"{records[key]} validation record(s) of it")
        claims = [e for e in entries if e["ev"] == "claim"]
        unclaimed = [e for e in claims if e["key"] not in by_key or by_key[e["key"]][0] != e["id"]
                     or chains[e["id"]][by_key[e["key"]][1]]["type"] not in ("claim", "re_review")]
        examples += [f"candidate {e['id']}: claim {e['key']} reported successful, no such claim event"
                     for e in unclaimed[:5]]
        refused = [e for e in entries if e["ev"] == "refused"]
        applied_refused = [e for e in refused if e["key"] in by_key]
        examples += [f"candidate {e['id']}: {e['action']} by {e['user']} was refused ({e['status']}: "
                     f"{e['message'][:120]}) yet its event is there" for e in applied_refused[:5]]

        # Lost candidates.
        lost_queued, lost_review, stale = [], [], 0
        queued_ids = set()
        for c in candidates:
            if c["state"] in ("PENDING", "DISPUTED"):
                queued_ids.add(c["id"])
                if c["id"] not in listed[c["horn_type"]] and c["id"] not in inflight[c["horn_type"]]:
                    lost_queued.append(c["id"])
            elif c["state"] == "IN_REVIEW":
                if not c["claimed_by"] or c["lease_expires_at"] is None or c["lease_expires_at"] <= sweep_at:
                    lost_review.append(c["id"])
        stale = sum(len(listed[h] - queued_ids) for h in HORNS)
        stale_inflight = sum(len(inflight[h] - queued_ids) for h in HORNS)
        by_id = {c["id"]: c for c in candidates}
        t0 = self.t_start
        for cid in lost_queued[:5]:
            c = by_id[cid]
            tail_events = ", ".join(f"{ev['type']} by {ev['actor']} at t+{ev['created_at'].timestamp() - t0:.1f}s"
                                    for ev in chains[cid][-3:])
            examples.append(f"candidate {cid} ({c['horn_type']}): {c['state']}, in no partition; last events: "
                            f"{tail_events}")
        for horn in sorted({by_id[cid]["horn_type"] for cid in lost_queued}):
            states = Counter(by_id[i]["state"] if i in by_id else "no such row" for i in inflight[horn])
            stale_listed = Counter(by_id[i]["state"] if i in by_id else "no such row"
                                   for i in listed[horn] - queued_ids)
            n_queued = sum(1 for c in candidates if c["horn_type"] == horn and c["state"] in ("PENDING", "DISPUTED"))
            examples.append(f"the {horn} partition: {len(listed[horn])} listed, {len(inflight[horn])} in flight "
                            f"({', '.join(f'{n} {st}' for st, n in states.items()) or 'none'}); listed but not "
                            f"queued: {', '.join(f'{n} {st}' for st, n in stale_listed.items()) or 'none'}; "
                            f"PostgreSQL queues {n_queued}: so the sweep's count (listed + in flight = "
                            f"{len(listed[horn]) + len(inflight[horn])}) "
                            + ("misses nothing" if len(listed[horn]) + len(inflight[horn]) >= n_queued else "is short"))
        examples += [f"candidate {cid}: IN_REVIEW without a live claim" for cid in lost_review[:5]]

        # What the journals say of the decisions the database has.
        outcome = {}
        for e in entries:
            if e["ev"] in ("send", "decided", "refused", "abandoned"):
                outcome[e["key"]] = e["ev"]  # the last word of the journal on each decision
        untold = Counter()
        for key, (cid, i) in by_key.items():
            if chains[cid][i]["type"] in (*DECISIONS, "review", "disagree"):
                said = outcome.get(key)
                if said == "send":
                    untold["sent by a validator killed before it heard back"] += 1
                elif said == "abandoned":
                    untold["abandoned unanswered at the stop"] += 1
                elif said is None:
                    untold["in no journal at all"] += 1
        return {"candidates": len(candidates), "states": Counter(c["state"] for c in candidates),
                "overlaps": overlaps, "by_other": by_other, "twice": twice, "two_validators": len(two_validators),
                "reviewed_twice": reviewed_twice, "reviews": sum(1 for e in decided_entries if e.get("event") == "review"),
                "disagreed": sum(1 for e in decided_entries if e.get("event") == "disagree"),
                "not_own": not_own, "unclaimed": len(unclaimed), "claims": len(claims), "missing_event": missing_event, "missing_record": missing_record,
                "decided": len(decided_entries), "refused": len(refused), "applied_refused": len(applied_refused),
                "refused_by": Counter(f"{e['status']} {norm(e['message'])}" for e in refused),
                "lost_queued": lost_queued, "lost_review": lost_review, "stale": stale,
                "stale_inflight": stale_inflight, "duplicates": duplicates,
                "untold": untold, "items": items, "examples": examples}

    def lost(self, at) -> tuple[list[int], list[int]]:
        """(queued candidates in no partition, IN_REVIEW ones without a claim live at `at`)."""
        held = self.partitions()
        with self.ctx.db.read() as tx:
            rows = tx.all("SELECT id, horn_type, state, claimed_by, lease_expires_at FROM candidates "
                          "WHERE state IN ('PENDING', 'DISPUTED', 'IN_REVIEW')")
        queued = [r["id"] for r in rows if r["state"] != "IN_REVIEW" and r["id"] not in held[r["horn_type"]]]
        review = [r["id"] for r in rows if r["state"] == "IN_REVIEW" and (
            not r["claimed_by"] or r["lease_expires_at"] is None or r["lease_expires_at"] <= at)]
        return queued, review

    def left_behind(self) -> list[tuple[int, str]]:
        for proc in [*self.validators.values(), *self.workers.values()]:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
        return tagged_processes(self.tag)

    def copy_server_logs(self) -> None:
        state = self.note_servers().get("postgres") or {}
        if state.get("pgdata"):
            try:
                shutil.copy(Path(state["pgdata"]) / "server.log", self.logdir / "postgres-server.log")
            except OSError:
                pass

    # -------------------------------------------------------------------- the report

    def report(self, r: dict) -> int:
        ok_all = True

        def invariant(name: str, figure, ok: bool, detail: str = "") -> None:
            nonlocal ok_all
            ok_all &= ok
            print(f"invariant  {name:<62} {figure!s:>8}  {'PASS' if ok else 'FAIL'}" + (f"  ({detail})" if detail else ""))

        seconds = self.t_chaos_end - self.t_start
        decided = self.journals.decided
        print()
        print(f"ran {seconds:.0f} s of chaos with {self.args.validators} validators; {r['candidates']} candidates "
              f"({', '.join(f'{s} {n}' for s, n in sorted(r['states'].items()))}); {self.created} created by the soak")
        print(f"decisions reported successful: {r['decided']} ({r['decided'] / seconds:.1f}/s), refused (4xx): "
              f"{r['refused']}" + (f" [{'; '.join(f'{n} x {m}' for m, n in r['refused_by'].most_common(4))}]"
                                    if r["refused"] else ""))
        if r["untold"]:
            print("decisions in the database no journal reported: "
                  + ", ".join(f"{n} {why}" for why, n in r["untold"].items()))

        # Latency outside outages, recovery by kind.
        windows = []
        for f in self.faults:
            if f["kind"] in SERVERS and "skipped" not in f:
                first = self.journals.first_decision_after(f["t"])
                f["recovery"] = first["t"] - f["t"] if first else None
                windows.append((f["t"], first["t"] if first else self.t_chaos_end))
            elif "skipped" not in f:
                first = self.journals.first_decision_after(f["t"])
                f["recovery"] = first["t"] - f["t"] if first else None
        calm = [e["latency"] for e in decided
                if not any(e["t_send"] < hi and e["t"] > lo for lo, hi in windows)]
        print(f"decision latency outside outages (first send to success, n={len(calm)}): "
              f"p50 {percentile(calm, 50) * 1000:.1f} ms, p99 {percentile(calm, 99) * 1000:.1f} ms")
        print("faults, and the time from each to the first successful decision of a candidate claimed after it:")
        for kind in KINDS:
            done = [f for f in self.faults if f["kind"] == kind and "skipped" not in f]
            skipped = [f for f in self.faults if f["kind"] == kind and "skipped" in f]
            times = [f["recovery"] for f in done if f.get("recovery") is not None]
            never = sum(1 for f in done if f.get("recovery") is None)
            target = TARGETS.get(kind)
            line = f"  {kind:<10} {len(done):>3} faults"
            if times:
                line += (f"   median {percentile(times, 50):6.1f} s   max {max(times):6.1f} s   "
                         f"each: {' '.join(f'{t:.1f}' for t in times)}")
            if never:
                line += f"   {never} with no decision after it"
            if target and done:
                worst = max(times) if times and not never else float("inf")
                line += f"   (target < {target:.0f} s: {'meets target' if worst < target else 'MISSES target'})"
            if skipped:
                line += f"   [{len(skipped)} skipped: {skipped[0]['skipped']}]"
            print(line)
        if self.args.restart == "operator" and self.args.restart_pause:
            print(f"  (a server's time includes the operator's {self.args.restart_pause:g} s pause before "
                  f"`r2k services up`, unless r2k had it back first)")
        for kind in SERVERS:
            done = [f for f in self.faults if f["kind"] == kind and "skipped" not in f]
            selves = [f["self_restart"] for f in done if "self_restart" in f]
            if done:
                print(f"  {kind}: restarted by r2k itself (a process that needed it) before "
                      + ("the operator's `services up`: " if self.args.restart == "operator" else
                         f"{SELF_RESTART_WAIT:.0f} s: ")
                      + f"{len(selves)} of {len(done)}"
                      + (f", after {percentile(selves, 50):.1f} s median, {max(selves):.1f} s max" if selves else ""))
        moved = [f for f in self.faults if "moved" in f]
        if moved:
            print(f"servers that came back at ANOTHER address (the old one taken meanwhile): {len(moved)} of "
                  f"{sum(1 for f in self.faults if f['kind'] in SERVERS and 'skipped' not in f)} restarts")
            for f in moved:
                old, new, who = f["moved"]
                print(f"  t+{f['t'] - self.t_start:.0f}s {f['kind']}: {old} -> {new}; {old} held by {who}; first "
                      f"decision after it: " + (f"{f['recovery']:.1f} s" if f.get("recovery") is not None else "none"))
        failed_ups = [t for f in self.faults for t in f.get("up", []) if t["rc"] != 0]
        if failed_ups:
            print(f"`r2k services up` failed {len(failed_ups)} time(s) after a kill:")
            for msg, n in Counter(norm(t["stderr"].splitlines()[-1] if t["stderr"] else "") for t in failed_ups).most_common(5):
                print(f"  {n} x {msg}")
        respawn = [f for f in self.faults if "respawned" in f]
        if respawn:
            print(f"RQ pool respawned the killed worker: {sum(f['respawned'] for f in respawn)} of {len(respawn)}")
            for f in respawn:
                if not f["respawned"]:
                    print(f"  not respawned: t+{f['t'] - self.t_start:.0f}s {f['detail']}")
        last = {}
        for e in decided:
            slot = e["journal"].split("-")[1]
            last[slot] = max(last.get(slot, 0), e["t"])
        quiet = sorted(f"soak-{slot}" for slot in {f"v{i + 1:02d}" for i in range(len(self.users))}
                       if last.get(slot, 0) < self.t_chaos_end - 60)
        print(f"validators with no successful decision in the last 60 s of chaos: {len(quiet)} of {len(self.users)}"
              + (f" ({', '.join(quiet[:12])}{' …' if len(quiet) > 12 else ''})" if quiet else ""))
        print("work items: " + (", ".join(f"{i['state']} {i['n']}" + (f" (oldest untouched {i['oldest']:.0f} s)"
                                                                     if i["state"] in ("NEW", "GENERATING") else "")
                                          for i in r["items"]) or "none"))
        print(f"during the run (a look every 2 s): {len(self.missing_longest)} queued candidates seen missing from "
              f"their partition for more than 5 s after their last change"
              + (f", the longest for at least {max(self.missing_longest.values()):.0f} s" if self.missing_longest else "")
              + f"; {self.missing_now} missing at the last look. Longest an expired claim waited for a sweep: "
              f"{self.expired_longest[0]:.0f} s" + (f" (at t+{self.expired_longest[1] - self.t_start:.0f}s)"
                                                     if self.expired_longest[0] else "")
              + f"; the workers sweep every {self.sweep_interval} s")
        if self.samples:
            step = max(1, len(self.samples) // 12)
            print("  by time: t+s: queued candidates missing from their partition / oldest unreleased expired "
                  "claim (s) / RQ graph queue / RQ generation queue")
            print("    " + "  ".join(f"{t - self.t_start:.0f}: {m}/{e:.0f}/{g}/{n}" for t, m, e, g, n in
                                     self.samples[::step]))
        empties = [e for e in self.journals.entries if e["ev"] == "empty_but_queued"]
        if empties:
            print(f"claims answered 404 'queue empty' while PostgreSQL held queued candidates of that Horn type "
                  f"(settled 5 s): {len(empties)} times, by Horn type "
                  + ", ".join(f"{h} {n}" for h, n in Counter(e['horn'] for e in empties).most_common())
                  + f"; up to {max(e['queued'] for e in empties)} queued")
        else:
            print("claims answered 404 'queue empty' while PostgreSQL held queued candidates of that Horn type: never")
        queued_before, review_before = r["before_sweep"]
        print(f"before the final sweep: {len(queued_before)} queued candidates in no partition, "
              f"{len(review_before)} IN_REVIEW without a live claim")
        if r["killed_jobs"]:
            evaluable = [j for j in r["killed_jobs"] if self.t_chaos_end - j["killed_at"] >= 60]
            rerun = [j for j in evaluable if j["status"] == "finished" and j["after"] is not None and j["after"] <= 60]
            print(f"jobs running in a killed worker: {len(r['killed_jobs'])}; of the {len(evaluable)} killed at least "
                  f"60 s before the end, finished again within 60 s: {len(rerun)}")
            for j in r["killed_jobs"][:12]:
                print(f"  t+{j['killed_at'] - self.t_start:5.0f}s {j['kind']:<10} {j['func']:<28} {j['job'][:24]:<24} "
                      f"{j['status']}" + (f", ended {j['after']:.0f} s after the kill" if j["after"] is not None else ""))
        self.print_errors()
        if r["stuck_validators"]:
            print(f"validators that did not exit within {STOP_GRACE + 30:.0f} s of SIGTERM (killed): "
                  f"{', '.join(r['stuck_validators'])}")
        sweep = r["sweep"]
        print(f"`r2k queue sweep`: rc {sweep.returncode}: " + "; ".join(sweep.stdout.strip().splitlines())
              + (f" {sweep.stderr.strip()[-300:]}" if sweep.returncode else ""))
        print(f"Redis partitions: {r['stale']} listed ids no longer queued, {r['stale_inflight']} in-flight ids no longer "
              f"queued, {r['duplicates']} duplicates")
        print()

        double = (r["overlaps"] + r["by_other"] + r["twice"] + r["two_validators"] + r["not_own"] + r["unclaimed"]
                  + r["reviewed_twice"])
        if self.args.reviews > 1:
            print(f"overlap (k = {self.args.reviews}): {r['reviews']} reviews short of k, {r['disagreed']} "
                  f"disagreements sent to adjudication, {r['states'].get('ADJUDICATION', 0)} awaiting it")
        invariant("double claims", double, double == 0,
                  f"in the events: overlapping claims {r['overlaps']}, decisions by a non-holder {r['by_other']}, "
                  f"decided twice {r['twice']}, reviewed twice in a round {r['reviewed_twice']}; in the journals: "
                  f"decided by two validators {r['two_validators']}, "
                  f"not on the decider's own claim {r['not_own']}, claims with no claim event {r['unclaimed']} "
                  f"of {r['claims']}")
        lost = len(r["lost_queued"]) + len(r["lost_review"])
        invariant("candidates lost (neither decided nor queued nor claimed)", lost, lost == 0,
                  f"PENDING/DISPUTED in no partition {len(r['lost_queued'])}, IN_REVIEW without a live claim "
                  f"{len(r['lost_review'])}, of {r['candidates']}")
        missing = r["missing_event"] + r["missing_record"]
        invariant("decisions reported successful but missing from the database", missing, missing == 0,
                  f"of {r['decided']}: no event {r['missing_event']}, no validation record {r['missing_record']}")
        invariant("decisions applied but reported refused", r["applied_refused"], r["applied_refused"] == 0,
                  f"of {r['refused']} refused")
        died = [u for u in self.unexpected if u["what"].startswith("validator")]
        invariant("validators that died by themselves", len(died), not died)
        for label, result in (("`r2k audit verify`", r["verify"]), ("`r2k replay --verify`", r["replay"])):
            first = (result.stdout.strip() or result.stderr.strip() or "").splitlines()
            good = result.returncode == 0 and bool(first) and first[0].startswith("ok")
            invariant(f"{label} exact", f"rc {result.returncode}", good,
                      first[0][:200] + (f" (+{len(first) - 1} lines)" if len(first) > 1 else "") if first else "")
        left = r["left"]
        invariant("processes left behind after `services down` and stopping ours", len(left), not left,
                  f"`services down` rc {r['down'].returncode}" + ("; " + "; ".join(f"{p} {c}" for p, c in left[:6])
                                                                  if left else ""))
        if r["examples"]:
            print("\nwhat failed, first cases:")
            for line in r["examples"][:25]:
                print(f"  {line}")
        if self.unexpected:
            print("\nprocesses that exited by themselves (each replaced):")
            for u in self.unexpected[:10]:
                print(f"  t+{u['t'] - self.t_start:.0f}s {u['what']} pid {u['pid']} rc {u['rc']}:")
                for line in u["tail"]:
                    print(f"      {line}")
        print(f"\nlogs and journals: {self.logdir}")
        if not ok_all:
            self.args.keep_cluster = True
            print(f"the servers' data is kept for inspection: R2K_DATA_DIR={self.data_dir} r2k services up --as {ADMIN}")
        print("RESULT: " + ("PASS" if ok_all else "FAIL"))
        return 0 if ok_all else 1

    def print_errors(self) -> None:
        seen, logged = Counter(), Counter()
        for path in self.logdir.glob("validator-*.log"):
            for line in path.read_text(errors="replace").splitlines():
                if line.startswith("ERR "):
                    _, _, phase, status, rest = line.split(" ", 4)
                    seen[f"{phase} {status} {norm(rest)}"] += 1
                elif line.startswith("LOG "):
                    logged[norm(line.split(" ", 2)[2])] += 1
                elif line.startswith("FOLLOW "):
                    logged["ctx.reconnect failed (still down): " + norm(line.split(" ", 2)[2])] += 1
        if seen:
            print(f"errors the validators saw ({sum(seen.values())}; tracebacks in soak/validator-*.log):")
            for what, n in seen.most_common(14):
                print(f"  {n:>6} x {what}")
        if logged:
            print(f"log lines of core in the validators ({sum(logged.values())}):")
            for what, n in logged.most_common(8):
                print(f"  {n:>6} x {what}")
        exceptions, lines = Counter(), Counter()
        pattern = re.compile(r"(error|exception|refused|failed|abandon|could not|warning)", re.I)
        for path in self.logdir.glob("worker-*.log"):
            in_traceback = False
            for line in path.read_text(errors="replace").splitlines():
                if line.startswith("Traceback"):
                    in_traceback = True
                    continue
                if in_traceback:
                    if line.startswith(" ") or not line.strip():
                        continue
                    in_traceback = False
                    if line.startswith("During handling") or line.startswith("The above exception"):
                        in_traceback = True
                        continue
                    exceptions[norm(line)] += 1
                    continue
                if pattern.search(line):
                    lines[norm(re.sub(r"\b[0-9a-f]{16,}\b", "ID", re.sub(r"^\d\d:\d\d:\d\d ", "", line)))] += 1
        if exceptions:
            print(f"exceptions in the workers' logs (tracebacks' last lines, {sum(exceptions.values())}; soak/worker-*.log):")
            for what, n in exceptions.most_common(10):
                print(f"  {n:>6} x {what}")
        if lines:
            print(f"other error lines in the workers' logs ({sum(lines.values())}):")
            for what, n in lines.most_common(10):
                print(f"  {n:>6} x {what}")
        deaths = {path.name: path.read_text(errors="replace").count("Process r2k sweep scheduler:")
                  for path in self.logdir.glob("worker-*.log")}
        print(f"sweep schedulers that died (a traceback under 'Process r2k sweep scheduler:'): {sum(deaths.values())} "
              f"of the {len(deaths)} `r2k worker` processes started"
              + (f" ({', '.join(f'{k}' for k, v in sorted(deaths.items()) if v)})" if sum(deaths.values()) else ""))
        if self.loader_errors:
            print("errors the loader saw (retried): " + "; ".join(f"{n} x {m}" for m, n in self.loader_errors.most_common(4)))

    # -------------------------------------------------------------------- clean-up

    def cleanup(self) -> None:
        """Whatever happened: every process we started, and the servers of our data dir, stopped."""
        self.loader_stop.set()
        for proc in self.validators.values():
            if proc.poll() is None:
                proc.kill()
        for proc in self.workers.values():
            kill_group(proc.pid)
        for proc in [*self.validators.values(), *self.workers.values()]:
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                pass
        self.close_contexts()
        from r2k.core import embedded
        from r2k.core.config import get_settings

        try:
            embedded.down(get_settings())
        except Exception as exc:  # noqa: BLE001
            print(f"clean-up: stopping the servers failed: {exc}")
        for pid, _cmd in tagged_processes(self.tag):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        if not self.args.keep_cluster:
            try:
                embedded.postgres.purge(get_settings())  # a cluster kept outside the data dir (run by root)
            except Exception:  # noqa: BLE001
                pass


def listener(path: str | None) -> str:
    """Who listens on the Unix socket `path` now: 'pid N (command), started HH:MM:SS', 'nobody' or '?'."""
    inodes = set()
    try:
        for line in Path("/proc/net/unix").read_text().splitlines()[1:]:
            fields = line.split()
            if len(fields) >= 8 and fields[7] == path and fields[5] == "01":  # 01: listening
                inodes.add(fields[6])
    except OSError:
        return "?"
    if not inodes:
        return "nobody"
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            for fd in os.listdir(f"/proc/{entry}/fd"):
                target = os.readlink(f"/proc/{entry}/fd/{fd}")
                if target.startswith("socket:[") and target[8:-1] in inodes:
                    cmd = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
                    return f"pid {entry} ({cmd.strip()[:80]}, started {started_at(int(entry))})"
        except OSError:
            continue
    return "?"


def started_at(pid: int) -> str:
    """A process's start, as HH:MM:SS local time."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
        ticks = int(stat[stat.rindex(")") + 2:].split()[19])
        boot = next(int(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines()
                    if line.startswith("btime"))
        return time.strftime("%H:%M:%S", time.localtime(boot + ticks / os.sysconf("SC_CLK_TCK")))
    except (OSError, ValueError, StopIteration):
        return "?"


def kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def tail(path: Path, lines: int) -> list[str]:
    try:
        return path.read_text(errors="replace").splitlines()[-lines:]
    except OSError:
        return []


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--validators", type=int, default=50)
    parser.add_argument("--minutes", type=float, default=10.0)
    parser.add_argument("--workers", type=int, default=2, help="`r2k worker` processes")
    parser.add_argument("--worker-processes", type=int, default=2, help="--processes of each `r2k worker`")
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--interval", default="2:6", help="seconds between faults, MIN:MAX")
    parser.add_argument("--think", default="0.05:0.4", help="a validator's think time, MIN:MAX seconds")
    parser.add_argument("--lease", type=int, default=30, help="R2K_CLAIM_LEASE_SECONDS for the soak")
    parser.add_argument("--restart-pause", type=float, default=2.0,
                        help="seconds between killing a server and `r2k services up`")
    parser.add_argument("--restart", choices=("operator", "self"), default="operator",
                        help="operator: `r2k services up` after --restart-pause whatever happened; self: rely on r2k "
                             f"to restart a killed server (`services up` only if it did not within {SELF_RESTART_WAIT:.0f} s)")
    parser.add_argument("--drained", default="CONSTRAINT", choices=HORNS,
                        help="a Horn type whose queue is topped up only when empty, so claims find it empty often")
    parser.add_argument("--escalations", type=float, default=0.2,
                        help="the share of decisions that escalate (each makes a work item for the workers); of the "
                             "rest, half approve, a quarter revise, a quarter reject (OPEN_ISSUE: reject)")
    parser.add_argument("--pool", type=int, default=2, help="each validator's PostgreSQL pool (0: one connection)")
    parser.add_argument("--reviews", type=int, default=1, choices=range(1, 10), metavar="K",
                        help="blind reviews per candidate in every queue (overlap; 1: none)")
    parser.add_argument("--keep-cluster", action="store_true",
                        help="run as root: keep the PostgreSQL cluster under /var/lib/r2k-postgres at the end")
    parser.add_argument("--_validator", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--user", help=argparse.SUPPRESS)
    parser.add_argument("--journal", help=argparse.SUPPRESS)
    parser.add_argument("--stop-grace", type=float, default=STOP_GRACE, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args._validator:
        return validator_main(args)
    if args.seed is None:
        args.seed = random.randrange(1, 1_000_000)
    env, data_dir, dropped = prepare_env(args)
    if dropped:
        print(f"ignored (the soak runs and kills servers of its own): {', '.join(dropped)}")
    empty_data_dir(data_dir)
    soak = Soak(args, env, data_dir)

    def interrupted(*_):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, interrupted)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # even when started with SIGINT ignored
    code = 130
    try:
        code = soak.run()
    except KeyboardInterrupt:
        print("\ninterrupted: stopping everything the soak started", flush=True)
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        soak.cleanup()
    return code


if __name__ == "__main__":
    sys.exit(main())
