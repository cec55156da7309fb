"""The spine of the core: one loop for the workstation and the command line, reactions declared in
one table, one notice shape, edges enforced, an install with one top-level name."""
from __future__ import annotations

import json

from r2k.core.services.queue import candidate_views, claims
from r2k.core.services.validation import candidates
from tests.conftest import r2k, r2k_json


def _three_facts(ctx, people):
    return [candidates.add(ctx, people["root"], f"Q{i}?", f"Fact {i}.", "FACT")["id"] for i in range(3)]


def test_decide_and_next_is_the_screens_loop_in_core(ctx, people):
    ids = _three_facts(ctx, people)
    first = claims.next_for_review(ctx, people["alice"], "FACT")
    assert first["id"] == ids[0] and first["sources"] == []  # read as a reviewer sees it
    result = claims.decide_and_next(ctx, people["alice"], first["id"], "approve", idempotency_key="k1")
    assert result["decided"]["candidate"]["state"] == "APPROVED" and result["error"] is None
    assert result["next"]["id"] == ids[1] and result["next"]["state"] == "IN_REVIEW"
    again = claims.decide_and_next(ctx, people["alice"], first["id"], "approve", idempotency_key="k1")
    assert again["decided"] == result["decided"]  # a repeated key applies nothing twice


def test_every_cli_decision_takes_next(ctx, people):
    ids = _three_facts(ctx, people)
    claims.claim_next(ctx, people["alice"], "FACT")
    out = r2k("--as", "alice", "candidates", "approve", str(ids[0]), "--next")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(f"Approved candidate {ids[0]}") and f"Next: Candidate {ids[1]}" in out.stdout
    rejected = r2k_json("--as", "alice", "candidates", "reject", str(ids[1]), "--reason", "no", "--next")
    assert rejected["decided"]["candidate"]["state"] == "REJECTED" and rejected["next"]["id"] == ids[2]
    released = r2k_json("--as", "alice", "candidates", "release", str(ids[2]), "--next")
    # The next is claimed before the release: an empty queue, not the released candidate again.
    assert released["released"]["state"] == "PENDING" and released["next"] is None
    assert candidate_views.get(ctx, ids[2])["state"] == "PENDING"
    last = r2k("--as", "alice", "candidates", "claim", str(ids[2]))
    assert last.returncode == 0
    out = r2k("--as", "alice", "candidates", "escalate", str(ids[2]), "--reason", "unsure", "--next")
    assert out.returncode == 0 and "The FACT queue is empty" in out.stdout


def test_release_next_claims_another_candidate_first(ctx, people):
    ids = _three_facts(ctx, people)
    claims.claim_next(ctx, people["alice"], "FACT")
    result = claims.release_and_next(ctx, people["alice"], ids[0])
    assert result["next"]["id"] == ids[1]
    assert candidate_views.get(ctx, ids[0])["state"] == "PENDING"
    refused = r2k("--json", "--as", "bob", "candidates", "release", str(ids[1]), "--next")
    assert refused.returncode == 7  # not bob's claim: refused before anything is claimed for him
    assert candidate_views.list_candidates(ctx, "IN_REVIEW", claimed_by="bob") == []
    assert json.loads(refused.stderr)["status"] == 403


# ----------------------------------------------------------------------------- edges

def _core_imports() -> dict[str, set[str]]:
    """Every import statement in core, inside functions too (not those under `if TYPE_CHECKING`,
    which never run), as edges between core's modules."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent / "core"
    modules = {}
    for path in root.rglob("*.py"):
        rel = path.relative_to(root.parent).with_suffix("")
        parts = list(rel.parts)
        if "versions" in parts or parts[-1] == "env":  # Alembic's scripts are loaded by Alembic, not imported
            continue
        is_package = parts[-1] == "__init__"
        name = ".".join(["r2k", *(parts[:-1] if is_package else parts)])  # as installed, under r2k
        modules[name] = (path, is_package)

    def resolve(current: str, is_package: bool, node) -> list[str]:
        if isinstance(node, ast.Import):
            return [a.name for a in node.names]
        base = current.split(".") if is_package else current.split(".")[:-1]
        if node.level:
            base = base[:len(base) - node.level + 1]
            target = ".".join(base + ([node.module] if node.module else []))
        else:
            target = node.module
        return [f"{target}.{a.name}" if f"{target}.{a.name}" in modules else target for a in node.names]

    graph = {}
    for name, (path, is_package) in modules.items():
        tree = ast.parse(path.read_text())
        skip = {id(n) for guard in ast.walk(tree) if isinstance(guard, ast.If)
                and getattr(guard.test, "id", None) == "TYPE_CHECKING" for n in ast.walk(guard)}
        edges = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)) and id(node) not in skip:
                edges |= {t for t in resolve(name, is_package, node) if t in modules and t != name}
        graph[name] = edges
    return graph


def test_core_has_no_import_cycle():
    graph = _core_imports()
    index, low, stack, on_stack, cycles, counter = {}, {}, [], set(), [], [0]

    def visit(v):  # Tarjan's strongly connected components
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    import sys

    sys.setrecursionlimit(10000)
    for v in graph:
        if v not in index:
            visit(v)
    assert cycles == []
    assert "r2k.core.services.validation.candidates" in graph["r2k.core.reactions"]  # the walk sees real edges


def test_workflows_leave_follow_ups_to_the_reactions_table():
    """No workflow imports another workflow for what follows its moves: the decision does not call
    the registry, the registry does not call the candidates, and so on."""
    graph = _core_imports()
    workflows = {f"r2k.core.services.{m}" for m in (
        "validation.candidates", "queue.claims", "answers.registry", "answering.workitems", "grey_entries.grey",
        "answering.generation", "contradictions.graph_sync", "documents.ingest")}
    candidates = "r2k.core.services.validation.candidates"
    allowed = {  # a command whose own work makes another workflow's entity
        "r2k.core.services.queue.claims": {candidates},  # the review loop decides
        "r2k.core.services.answering.generation": {candidates, "r2k.core.services.answering.workitems"},  # makes a candidate
        "r2k.core.services.documents.ingest": {candidates, "r2k.core.services.grey_entries.grey"},  # makes candidates, entries
    }
    crossing = {m: sorted((graph[m] & workflows) - allowed.get(m, set())) for m in workflows}
    assert {m: c for m, c in crossing.items() if c} == {}
    # The commands (sweeps, skip, undo, the demo …) may use other workflows' commands, but no module
    # of core/services, found rather than listed, makes another's follow-up by hand: the functions
    # the reactions table runs are run by it alone.
    modules = _service_modules()
    assert {"r2k.core.services.queue.claims", "r2k.core.services.queue.skip",
            "r2k.core.services.operations.sweeps"} <= set(modules)
    by_hand = {name: found for name, path in modules.items() if (found := _reactions_named(name, path))}
    assert by_hand == {}


def _service_modules() -> dict:
    """Every module of core/services and of its workflow packages (its name as installed, its file),
    found by pkgutil."""
    import importlib.util
    import pkgutil
    from pathlib import Path

    from r2k.core import services

    return {info.name: Path(importlib.util.find_spec(info.name).origin)
            for info in pkgutil.walk_packages(services.__path__, f"{services.__name__}.")}


def _reaction_functions() -> set[tuple[str, str]]:
    """(module, function) of every reaction and effect of the table that a service module defines."""
    from r2k.core.reactions import MANY, TABLE

    return {(f.__module__, f.__name__) for f in [*(f for row in TABLE for f in (*row.then, *row.after)), *MANY.values()]
            if f.__module__.startswith("r2k.core.services.")}


def _reactions_named(name: str, path) -> list[str]:
    """The reaction functions of other modules that the module `name` imports or names (`x.f`,
    `from .x import f`), inside functions too."""
    import ast

    reactions = _reaction_functions()
    modules = {m for m, _ in reactions} | set(_service_modules())
    tree = ast.parse(path.read_text())
    aliases, found = {}, set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            aliases.update({a.asname: a.name for a in node.names if a.asname and a.name in modules})
        elif isinstance(node, ast.ImportFrom):
            base = name.split(".")[:-1]
            base = base[:len(base) - node.level + 1] if node.level else []
            target = ".".join(base + ([node.module] if node.module else []))
            for a in node.names:
                if f"{target}.{a.name}" in modules:
                    aliases[a.asname or a.name] = f"{target}.{a.name}"
                elif (target, a.name) in reactions and target != name:
                    found.add(f"{target}.{a.name}")
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
            module = aliases.get(node.value.id)
            if (module, node.attr) in reactions and module != name:
                found.add(f"{module}.{node.attr}")
    return sorted(found)


# ----------------------------------------------------------------------------- reactions and notices

# Rows of the reactions table for events that are no machine's move: what the core records through
# engine.record or engine.update (checked below to be written out in some call of core), and why
# something follows it.
NOT_MOVES = {
    ("source_document", "ingested"): "ingest records a document (no machine); it may answer grey entries",
    ("candidate", "source_added"): "another document states a candidate's statement: a source more, no move",
    ("comment", "add"): "a comment is recorded (no machine: never edited nor deleted); its notice tells who it mentions",
    ("guidelines", "write"): "a queue's guidelines get a new version (no machine: every version kept)",
}


def _recorded_events() -> set[tuple[str, str]]:
    """(aggregate, event type) of every engine.record and engine.update call in core that spells
    both out (an f-string's event type, as the grey history's, is none of the table's)."""
    import ast
    from pathlib import Path

    found = set()
    for path in (Path(__file__).resolve().parent.parent / "core").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "engine"
                    and node.func.attr in ("record", "update") and len(node.args) > 1
                    and isinstance(node.args[1], ast.Constant)):
                continue
            kind = next((k.value for k in node.keywords if k.arg == "event_type"), ast.Constant("created"))
            if isinstance(kind, ast.Constant):
                found.add((node.args[1].value, kind.value))
    return found


def test_every_move_of_every_workflow_has_its_row_in_the_reactions_table():
    """Every action of every machine has its row (a move with nothing to follow still has its notice)."""
    from r2k.core.reactions import INDEX
    from tests.test_engine import MACHINES

    assert "conflict_flag" in {m.name for m in MACHINES}  # all of core/machines, not a list here
    missing = [(m.name, action) for m in MACHINES for action in m.actions if (m.name, action) not in INDEX]
    assert missing == []


def test_every_row_of_the_reactions_table_names_an_event_the_core_makes():
    """The other way: a row's action is one a move (or a creation move) of its entity's machine can
    make, or an event the core records as listed in NOT_MOVES; a typo or a row nothing sets off fails."""
    from r2k.core.reactions import INDEX
    from tests.test_engine import MACHINES

    actions = {m.name: set(m.actions) for m in MACHINES}
    dead = sorted((entity, action) for entity, action in INDEX
                  if action not in actions.get(entity, ()) and (entity, action) not in NOT_MOVES)
    assert dead == []
    assert set(NOT_MOVES) <= set(INDEX)  # the list holds only rows the table has
    assert set(NOT_MOVES) - _recorded_events() == set()  # and only events some call records
    assert not set(NOT_MOVES) & {(e, a) for e, acts in actions.items() for a in acts}  # a move needs no entry


def test_every_live_notice_has_one_shape_built_from_the_event(ctx, people):
    from r2k.core.notices import CHANNEL

    pubsub = ctx.redis.pubsub(ignore_subscribe_messages=True)
    pubsub.subscribe(CHANNEL)
    pubsub.get_message(timeout=1)
    added = candidates.add(ctx, people["root"], "Q?", "A fact.", "FACT")
    claimed = claims.claim_next(ctx, people["alice"], "FACT")
    approved = candidates.approve(ctx, people["alice"], claimed["id"])
    seen = []
    import time

    deadline = time.time() + 5
    while time.time() < deadline and len(seen) < 4:
        message = pubsub.get_message(timeout=0.5)
        if message and message["type"] == "message":
            seen.append(json.loads(message["data"]))
    pubsub.close()
    assert all(set(n) == {"entity", "id", "action", "state", "version", "actor"} for n in seen), seen
    assert [(n["entity"], n["id"], n["action"], n["state"], n["actor"]) for n in seen] == [
        ("candidate", added["id"], "extract", "PENDING", "root"),
        ("candidate", claimed["id"], "claim", "IN_REVIEW", "alice"),
        ("candidate", claimed["id"], "approve", "APPROVED", "alice"),
        ("answer", approved["answer"]["id"], "publish", "APPROVED", "alice"),
    ]
    assert seen[2]["version"] == approved["candidate"]["version"]


def test_the_layers_hold(tmp_path):
    """import-linter's contracts (.importlinter): core imports neither app nor workers, workers do not
    import app, core's knowledge package (pure text logic) reaches no service, adapter, embedded server
    or context, and app reaches core only through its services, domain, errors and config."""
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    lint = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    assert lint, "import-linter is a test dependency"
    result = subprocess.run([lint, "--config", str(root / ".importlinter")], cwd=root, capture_output=True,
                            text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    contracts = (root / ".importlinter").read_text().count("[importlinter:contract:")
    assert contracts >= 5 and f"{contracts} kept, 0 broken" in result.stdout, result.stdout


def test_no_knowledge_module_imports_a_private_name_of_another():
    """core/knowledge/ is read module by module: what one takes from another is that one's public
    name (docs/architecture.md, "Layout"), so a private helper can change without a reader of the
    importer knowing."""
    import ast
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent / "core" / "knowledge"
    taken = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.level or "knowledge" in (node.module or "")):
                taken += [f"{path.relative_to(root)}: {alias.name} from {'.' * node.level}{node.module or ''}"
                          for alias in node.names if alias.name.startswith("_") and alias.name != "__future__"]
    assert taken == [], taken


def test_every_core_module_is_on_one_side_of_the_app_contract():
    """A new module of core is either a door for the front ends or behind them: say which."""
    import configparser
    from pathlib import Path

    root = Path(__file__).resolve().parent.parent
    config = configparser.ConfigParser()
    config.read(root / ".importlinter")
    behind = set(config["importlinter:contract:app-through-services"]["forbidden_modules"].split())
    doors = {"r2k.core.bootstrap", "r2k.core.services", "r2k.core.domain", "r2k.core.errors", "r2k.core.config"}
    top = {f"r2k.core.{p.stem}" if p.is_file() else f"r2k.core.{p.name}" for p in (root / "core").iterdir()
           if (p.suffix == ".py" and p.stem != "__init__") or (p.is_dir() and (p / "__init__.py").exists())}
    assert top == behind | doors, (top - behind - doors, (behind | doors) - top)


# ----------------------------------------------------------------------------- RQ task names

def _enqueued_tasks() -> list[tuple[str, str, str]]:
    """(file:line, queue kind, task name) of every `jobs.enqueue(ctx, KIND, NAME, …)` call in core."""
    import ast
    from pathlib import Path

    core = Path(__file__).resolve().parent.parent / "core"
    found = []
    for path in sorted(core.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("enqueue", "enqueue_all")
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "jobs"):
                kind, name = node.args[1:3]
                assert isinstance(kind, ast.Constant) and isinstance(name, ast.Constant), (
                    f"{path.name}:{node.lineno}: name the queue and the task as they are in the registry")
                found.append((f"{path.name}:{node.lineno}", kind.value, name.value))
    return found


def test_core_enqueues_only_tasks_of_the_one_registry_and_every_task_is_enqueued_somewhere():
    """A task's name is checked by the fast tier, not first by a job failing in production: every name
    core enqueues is in core.adapters.jobs.TASKS (which the workers run, and nothing else), on a queue
    of QUEUES; and no registered task is left that nothing enqueues."""
    from r2k.core.adapters.jobs import QUEUES, TASKS

    calls = _enqueued_tasks()
    assert len(calls) >= 7  # the generation, graph, grey and task jobs: the walk finds them
    unknown = [(where, kind, name) for where, kind, name in calls if name not in TASKS or kind not in QUEUES]
    assert unknown == []
    # The sweep is enqueued by the workers' scheduler (by its path).
    assert set(TASKS) - {name for _, _, name in calls} == {"sweep_task"}
