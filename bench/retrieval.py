"""Hybrid retrieval and extractive generation, measured (docs/architecture.md, "Retrieval").

Three labelled sets, each run on embedded services in a data dir of its own:

- `demo`: bench/retrieval_set.json over the demo corpus (core/demo/corpus), written beside the corpus
  it was tuned on; a fresh data dir each run (or the one R2K_DATA_DIR names);
- `real`: bench/retrieval_real_set.json over the real corpora of bench/corpora.py (PostgreSQL 15's
  administration chapters, the Python 3.11 Language Reference and FAQs, pip 24.0's documentation),
  written and frozen before any tuning;
- `fresh`: bench/retrieval_fresh_set.json over the same corpora, written after an earlier round of
  tuning; it has been tuned on since (issue 27's second round), so it is a tuning set like `real`;
- `fresh2`: bench/retrieval_fresh2_set.json over the same corpora, its sections drawn at random
  (bench/retrieval_draw.py); held out through issue 27's second round and reported then, it has been
  a tuning set since its third, like `real` and `fresh`;
- `fresh3`: bench/retrieval_fresh3_set.json over the same corpora, when the file is there: the
  held-out set, written and committed before anything was measured on it. Its figures, and only
  its, say how the tuning generalises; never tune on its misses (and never print them: `--misses`
  leaves its own out). Reported last, marked as the held-out result; the others are marked as
  tuning sets.

The real corpora are ingested once into /tmp/r2k-bench-retrieval-real (R2K_BENCH_REAL_DIR), by the
same ingest `r2k ingest` runs; `--reingest` starts that data dir again (and measures the ingest).

For each set, per corpus and in all:

- recall@5: the share of questions with a source among the 5 retrieved that holds the answer: of the
  labelled section (document and heading; the demo set also counts any source quoting its fact) and
  holding an expected fact;
- top-1: the share whose first source holds an expected fact;
- answer: the share whose generated answer (the built-in extractive generator, run through the real
  generation task) holds an expected fact (facts compared case-insensitively, spacing normalised);
- false no_content: the share of these questions, all answered by the corpus, that escalated
  `no_content` instead; and how many of the set's unanswerable questions escalated it (they should);
- median and p95 retrieval beside a floor measured in the same run: for each question one bare
  vector query (the question embedded, then the nearest passages through the HNSW index) plus one
  bare full-text query.

Then one ablation row per constant of the ranking (core/knowledge/ranking.py, `Ranking`): the same
figures with that constant changed (the answer composed by the same extractive generator, without the
task's storage), so each one's measured effect is printed beside the default. And what embedding
costs ingest, when the bench ingested: the time spent embedding, beside the ingest's whole time.

Targets (the held-out set, fresh3): recall@5 >= 0.95, top-1 >= 0.80, answer >= 0.85, false no_content <= 5%;
median retrieval <= 2x its floor; embedding <= half the ingest. The demo set stays at its figures.

    python bench/retrieval.py [--set demo|real|fresh2|fresh3|all] [--misses] [--no-ablation] [--reingest] [--keep]

`--set real` runs the three tuning sets over the real corpora (real, fresh and fresh2, one process),
`--set fresh2` that one alone, `--set fresh3` the held-out one, `--set all` demo, the tuning sets,
then fresh3 when it is there. `--misses` prints each tuning question that missed with the stage it
missed at: not retrieved (no source of the labelled section holding a fact among the 5), retrieved
but not first (the first source lacks the fact), or first but not in the answer (the composed
answer lacks it), with a count of each.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import ROOT, median, percentile, r2k, verdict

HERE = Path(__file__).parent
DEMO_SET = HERE / "retrieval_set.json"
REAL_SET = HERE / "retrieval_real_set.json"
FRESH_SET = HERE / "retrieval_fresh_set.json"
FRESH2_SET = HERE / "retrieval_fresh2_set.json"  # a tuning set since issue 27's third round
FRESH3_SET = HERE / "retrieval_fresh3_set.json"  # held out, when it is there
HELD_OUT = "fresh3"
REAL_DIR = Path(os.environ.get("R2K_BENCH_REAL_DIR") or Path(tempfile.gettempdir()) / "r2k-bench-retrieval-real")
TARGETS = {"recall5": 0.95, "top1": 0.80, "answer": 0.85, "false_nc": 0.05}


def ablations(Ranking) -> list[tuple[str, object]]:
    """Each constant of the ranking changed alone: (what the row says, the ranking)."""
    d = Ranking()
    return [
        ("default", d),
        ("vectors off: lexical only", d.but(vectors=False)),
        ("fusion_weight 0 (coverage only)", d.but(fusion_weight=0.0)),
        ("fusion_weight 2 (fused ranks lead)", d.but(fusion_weight=2.0)),
        (f"rrf_k 10 (from {d.rrf_k})", d.but(rrf_k=10)),
        (f"nearest 10 (from {d.nearest})", d.but(nearest=10)),
        (f"nearest 20 (from {d.nearest})", d.but(nearest=20)),
        ("similarity support off", d.but(best_similarity=2.0, other_similarity=2.0)),
        (f"other_similarity 0.4 (from {d.other_similarity})", d.but(other_similarity=0.4)),
        (f"best_similarity 0.55 (from {d.best_similarity})", d.but(best_similarity=0.55)),
        (f"best_coverage 0.4 (from {d.best_coverage})", d.but(best_coverage=0.4)),
        (f"other_coverage 0.3 (from {d.other_coverage})", d.but(other_coverage=0.3)),
        (f"heading_weight 1.0 (from {d.heading_weight})", d.but(heading_weight=1.0)),
        (f"title_weight 1.0 (from {d.title_weight})", d.but(title_weight=1.0)),
        (f"phrase_weight 0.5 (from {d.phrase_weight})", d.but(phrase_weight=0.5)),
        ("generic_weight 1.0", d.but(generic_weight=1.0)),
        (f"similarity_weight 0 (from {d.similarity_weight})", d.but(similarity_weight=0.0)),
        (f"similarity_weight 1 (from {d.similarity_weight})", d.but(similarity_weight=1.0)),
        (f"similarity_weight 3 (from {d.similarity_weight})", d.but(similarity_weight=3.0)),
        (f"wide 200 (from {d.wide})", d.but(wide=200)),
        (f"wide 20 (from {d.wide})", d.but(wide=20)),
        ("feedback_terms 0 (no related context)", d.but(feedback_terms=0)),
        (f"best_within 1 (from {d.best_within}: the first or none)", d.but(best_within=1)),
        ("unknown_share off (unknown names asked)", d.but(unknown_share=2.0)),
        (f"unknown_share 0.4 (from {d.unknown_share})", d.but(unknown_share=0.4)),
    ]


def composition_ablations() -> list[tuple[str, dict]]:
    """Each constant of the extractive composition changed alone: (what the row says, the changes)."""
    from r2k.core.services.search import extractive as x

    return [
        ("default", {}),
        (f"MEANING_WEIGHT 0.25 (from {x.MEANING_WEIGHT})", {"MEANING_WEIGHT": 0.25}),
        (f"CONTEXT_WEIGHT 0 (from {x.CONTEXT_WEIGHT})", {"CONTEXT_WEIGHT": 0.0}),
        (f"QUANTITY_BONUS 0 (from {x.QUANTITY_BONUS})", {"QUANTITY_BONUS": 0.0}),
        (f"RANK_STEP 0 (from {x.RANK_STEP})", {"RANK_STEP": 0.0}),
        (f"RANK_STEP 0.1 (from {x.RANK_STEP})", {"RANK_STEP": 0.1}),
        (f"KEEP 0.5 (from {x.KEEP})", {"KEEP": 0.5}),
        (f"HEADING_SHARE 0.5 (from {x.HEADING_SHARE})", {"HEADING_SHARE": 0.5}),
        (f"ON_TOPIC 0 (from {x.ON_TOPIC})", {"ON_TOPIC": 0.0}),
        ("NAMED_OTHERS off (another source's sentences free)", {"HEADING_NAMES": 2.0}),
        (f"REFERS_BACK 0 (from {x.REFERS_BACK})", {"REFERS_BACK": 0.0}),
        (f"REFERS_BACK 1 (from {x.REFERS_BACK})", {"REFERS_BACK": 1.0}),
        ("INTRO_NOT_REPEATED off (an item may repeat its intro)", {"INTRO_NOT_REPEATED": False}),
        (f"MAX_SENTENCES 4 (from {x.MAX_SENTENCES})", {"MAX_SENTENCES": 4}),
        (f"MAX_SENTENCES 8 (from {x.MAX_SENTENCES})", {"MAX_SENTENCES": 8}),
    ]


def plain(text: str) -> str:
    return " ".join((text or "").lower().split())


def facts_of(q: dict) -> list[str]:
    return [plain(f) for f in (q.get("facts") or [q["fact"]])]


def holds(q: dict, text: str) -> bool:
    said = plain(text)
    return any(f in said for f in facts_of(q))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--set", choices=("demo", "real", "fresh2", "fresh3", "all"), default="all",
                        help="real: the tuning sets over the real corpora (real, fresh and fresh2, same run); "
                             "fresh2: that tuning set alone; fresh3: the held-out set over the same corpora")
    parser.add_argument("--misses", action="store_true", help="print each question that missed, and why")
    parser.add_argument("--no-ablation", action="store_true", help="skip the ablation rows")
    parser.add_argument("--reingest", action="store_true", help="ingest the real corpora again, into an empty dir")
    parser.add_argument("--keep", action="store_true", help="leave the bench's services (and the demo data dir)")
    args = parser.parse_args()
    if args.set == "all":  # each in a process of its own: its own data dir, its own services
        flags = [f for f, on in (("--misses", args.misses), ("--no-ablation", args.no_ablation),
                                 ("--reingest", args.reingest), ("--keep", args.keep)) if on]
        for name in ("demo", "real", *((HELD_OUT,) if FRESH3_SET.exists() else ())):
            once = [f for f in flags if f != "--reingest" or name != HELD_OUT]  # real ingested it already
            got = subprocess.run([sys.executable, __file__, "--set", name, *once], cwd=ROOT, check=False)
            if got.returncode:
                raise SystemExit(got.returncode)
        return
    if args.set == HELD_OUT and not FRESH3_SET.exists():
        raise SystemExit(f"{FRESH3_SET.name} is not there yet")
    if args.set in ("real", "fresh2", HELD_OUT):
        os.environ["R2K_DATA_DIR"] = str(REAL_DIR)
        if args.reingest and REAL_DIR.exists():
            _services_down()
            shutil.rmtree(REAL_DIR)
        REAL_DIR.mkdir(parents=True, exist_ok=True)
    fresh = not os.environ.get("R2K_DATA_DIR")
    if fresh:  # a data dir of its own each run: the ingest is measured, and the index built the same way
        os.environ["R2K_DATA_DIR"] = tempfile.mkdtemp(prefix="r2k-bench-retrieval-")
    env = dict(os.environ)
    sys.path.insert(0, str(ROOT))
    from r2k.core.bootstrap import bootstrap
    from r2k.core.domain import SYSTEM
    from r2k.core.services.people import users
    from r2k.core.services.search import embeddings

    ctx = bootstrap(settings=None)
    if ctx.settings.llm_url:
        raise SystemExit("unset R2K_LLM_URL: this bench measures the built-in extractive generator")
    try:
        start = time.perf_counter()
        ctx.embeddings.embedder.embed(["the model loaded once per process"])
        model_load = time.perf_counter() - start
        embedding_took = _time_embedding(embeddings)
        start = time.perf_counter()
        if args.set == "demo":
            from r2k.core.services.operations.demo import load

            load(ctx, by=SYSTEM)  # users and the demo corpus (adds nothing when they are there)
            what = "the demo corpus"
        else:
            what = _ingest_real(ctx, SYSTEM)
        ingest_took = time.perf_counter() - start
        actor = users.resolve(ctx, "root")
        status = embeddings.status(ctx)
        print(f"\n== {args.set} corpus ({status['detail']}; load average {_load()})")
        if embedding_took["calls"]:
            share = embedding_took["seconds"] / ingest_took
            print(f"ingest of {what}: {ingest_took:.2f} s, of which embedding {embedding_took['seconds']:.2f} s "
                  f"({share:.0%}, {embedding_took['calls']} batches; target <= 50%: {verdict(share, 0.5 + 1e-9)}); "
                  f"loading the model, once per process before it: {model_load:.2f} s")
        else:
            print(f"ingest: {what} was there already: run with --reingest (or without R2K_DATA_DIR) to measure it")
        sets = {"demo": [("demo", DEMO_SET)],
                "real": [("real", REAL_SET), ("fresh", FRESH_SET), ("fresh2", FRESH2_SET)],
                "fresh2": [("fresh2", FRESH2_SET)], HELD_OUT: [(HELD_OUT, FRESH3_SET)]}[args.set]
        for name, path in sets:
            _run_set(ctx, actor, name, json.loads(path.read_text()), args)
    finally:
        ctx.redis.delete("rq:queue:raw_to_knowledge_generation")  # the jobs the work items queued: run here
        ctx.close()
        if not args.keep:
            if fresh:  # the servers stopped and their cluster removed, wherever it lives
                from r2k.core import embedded

                embedded.purge(ctx.settings)
                shutil.rmtree(env["R2K_DATA_DIR"], ignore_errors=True)
            else:
                r2k(env, "services", "down", "--as", "root", check=False)


def _services_down() -> None:
    env = dict(os.environ, R2K_DATA_DIR=str(REAL_DIR))
    r2k(env, "services", "down", "--as", "root", check=False)


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _ingest_real(ctx, system) -> str:
    """The real corpora, ingested once into the bench's data dir (marked when done)."""
    sys.path.insert(0, str(HERE))
    from corpora import CORPORA, files

    from r2k.core.services.documents import ingest
    from r2k.core.services.people import users

    mark = REAL_DIR / "retrieval-ingested"
    if not mark.exists():
        with ctx.db.read() as tx:
            there = tx.scalar("SELECT count(*) FROM users WHERE name = 'root'")
        if not there:
            users.add(ctx, "root", "admin", by=system)
        root = users.resolve(ctx, "root")
        for name in CORPORA:
            ingest.ingest(ctx, root, files(name))
        mark.write_text("yes\n")
    return "the real corpora (" + ", ".join(CORPORA) + ")"


def _run_set(ctx, actor, name: str, labelled: dict, args) -> None:
    from r2k.core.knowledge.ranking import Ranking
    from r2k.core.services.answering import generation, workitems
    from r2k.core.services.search.extractive import extractive
    from r2k.core.services.search.retrieval import retrieve

    questions, unanswerable = labelled["questions"], labelled["unanswerable"]
    with ctx.db.read() as tx:
        documents = {r["id"]: Path(r["path"]).name for r in tx.all("SELECT id, path FROM source_documents")}
    lenient = name == "demo"  # the demo set's rule: the section named, or any source quoting the fact

    def hits_of(q, sources):
        wanted = {(p["document"], p["heading"]) for p in q["passages"]}
        out = []
        for s in sources:
            section = (documents.get(s.get("document_id")), s["heading"]) in wanted
            out.append(section or holds(q, s["text"]) if lenient else section and holds(q, s["text"]))
        return out

    def top_of(q, sources):
        return bool(sources) and (hits_of(q, sources[:1])[0] if lenient else holds(q, sources[0]["text"]))

    for q in questions[:5]:  # warm: the model loaded, the statements prepared
        retrieve(ctx, q["question"], 5)
        _floor(ctx, q["question"])
    per: dict[str, dict] = {}
    misses: list[str] = []
    stages: dict[str, int] = {}
    for q in questions:
        corpus = q.get("corpus", "demo")
        row = per.setdefault(corpus, {"n": 0, "recall5": 0, "top1": 0, "answer": 0, "false_nc": 0,
                                      "took": [], "floor": []})
        start = time.perf_counter()
        sources = retrieve(ctx, q["question"], 5)
        row["took"].append((time.perf_counter() - start) * 1000)
        row["floor"].append(_floor(ctx, q["question"]))
        hits = hits_of(q, sources)
        outcome = generate(ctx, generation, workitems, actor, q["question"])
        answer = outcome.get("text") or ""
        row["n"] += 1
        row["recall5"] += any(hits)
        row["top1"] += top_of(q, sources)
        row["answer"] += holds(q, answer)
        row["false_nc"] += outcome.get("reason") == "no_content"
        stage = ("not retrieved" if not any(hits) else "retrieved, not first" if not top_of(q, sources)
                 else "first, not in the answer" if not holds(q, answer) else None)  # the first it missed at
        if stage:
            stages[stage] = stages.get(stage, 0) + 1
        if args.misses and stage and name != HELD_OUT:
            top = "; ".join(f"{documents.get(s.get('document_id'), s['title'])[:28]} / {s['heading'][-50:]}"
                            f"{' (related)' if s.get('related') else ''}" for s in sources[:5]) or "(none)"
            misses.append(f"- {stage} [{corpus}] {q['question']}  (want {q['passages'][0]['document']} / "
                          f"{q['passages'][0]['heading'][-50:]}: {facts_of(q)[0][:40]!r})\n    retrieved: {top}\n"
                          f"    answer{' (holds the fact)' if holds(q, answer) else ''}: "
                          f"{answer[:240] or outcome.get('reason')!s}")
    true_no_content = 0
    for question in unanswerable:
        outcome = generate(ctx, generation, workitems, actor, question)
        true_no_content += outcome.get("reason") == "no_content"
        if args.misses and outcome.get("reason") != "no_content" and name != HELD_OUT:
            misses.append(f"- (unanswerable) {question}\n    answer: {(outcome.get('text') or '')[:160]}")

    everything = {"n": sum(r["n"] for r in per.values()), "took": [t for r in per.values() for t in r["took"]],
                  "floor": [t for r in per.values() for t in r["floor"]]}
    for k in ("recall5", "top1", "answer", "false_nc"):
        everything[k] = sum(r[k] for r in per.values())
    kind = "HELD OUT: the result" if name == HELD_OUT else "demo" if name == "demo" else "a tuning set"
    print(f"\n{name} set ({kind}): {everything['n']} labelled questions ({labelled_over(questions)}), "
          f"{len(unanswerable)} unanswerable; load average {_load()}")
    print(f"  {'corpus':12} {'n':>4} {'recall@5':>8} {'top-1':>6} {'answer':>6} {'false nc':>8} "
          f"{'median ms':>9} {'p95 ms':>7} {'floor med':>9} {'floor p95':>9} {'x floor':>7}")
    for corpus, r in [*sorted(per.items()), ("all", everything)]:
        n = r["n"]
        ratio = median(r["took"]) / median(r["floor"])
        print(f"  {corpus:12} {n:4} {r['recall5'] / n:8.3f} {r['top1'] / n:6.3f} {r['answer'] / n:6.3f} "
              f"{r['false_nc'] / n:8.3f} {median(r['took']):9.2f} {percentile(r['took'], 95):7.2f} "
              f"{median(r['floor']):9.2f} {percentile(r['floor'], 95):9.2f} {ratio:7.2f}")
    n = everything["n"]
    if name != "demo":
        which = "this is it" if name == HELD_OUT else "this one is tuned on"
        print(f"  targets (on the held-out {HELD_OUT} set; {which}): " + ", ".join(
            f"{k} {everything[k] / n:.3f} {verdict(everything[k] / n, t + (1e-9 if k == 'false_nc' else 0), k == 'false_nc')}"
            for k, t in TARGETS.items()))
    ratio = median(everything["took"]) / median(everything["floor"])
    print(f"  median retrieval {ratio:.2f}x its floor (target <= 2x: {verdict(ratio, 2.0 + 1e-9)}); "
          f"unanswerable questions escalated no_content: {true_no_content}/{len(unanswerable)}")
    print("  misses by stage: " + ", ".join(f"{stage} {stages.get(stage, 0)}" for stage in (
        "not retrieved", "retrieved, not first", "first, not in the answer")))
    if not args.no_ablation:
        print(f"\n  ablation on the {name} set (each constant of core/knowledge/ranking.py changed alone; "
              "answers by the extractive generator):")
        print(f"    {'ranking':40} {'recall@5':>8} {'top-1':>6} {'answer':>6} {'false nc':>8} {'unans nc':>8}")
        for label, ranking in ablations(Ranking):
            r = _ablation(ctx, ranking, questions, unanswerable, hits_of, top_of, retrieve, extractive)
            print(f"    {label:40} {r['recall5']:8.3f} {r['top1']:6.3f} {r['answer']:6.3f} {r['false_nc']:8.3f} "
                  f"{r['unanswerable_nc']:>5}/{len(unanswerable)}")
    if not args.no_ablation:
        print(f"\n  composition ablation on the {name} set (each constant of core/services/search/extractive.py changed "
              "alone, the sources as ranked by default):")
        print(f"    {'composition':40} {'answer':>6}")
        for label, changes in composition_ablations():
            print(f"    {label:40} {_composed(ctx, questions, changes, retrieve):6.3f}")
    if misses:
        print(f"\n  misses ({name} set):\n" + "\n".join(misses))


def labelled_over(questions: list[dict]) -> str:
    return f"{len({(q.get('corpus'), p['document']) for q in questions for p in q['passages']})} documents"


def _floor(ctx, question: str) -> float:
    """One bare vector query and one bare full-text query for `question`, in ms."""
    start = time.perf_counter()
    with ctx.db.read() as tx:
        asked = ctx.embeddings.question(tx, question)
        if asked:
            vector, d = asked
            tx.all(f"SELECT passage_id FROM passage_vectors ORDER BY embedding::vector({d}) <=> %s::vector({d}) "
                   "LIMIT 5", (vector,))
    with ctx.db.read() as tx:
        tx.all("SELECT id FROM source_passages WHERE search @@ plainto_tsquery('english', %s) "
               "ORDER BY ts_rank_cd(search, plainto_tsquery('english', %s)) DESC LIMIT 5", (question, question))
    return (time.perf_counter() - start) * 1000


def _ablation(ctx, ranking, questions, unanswerable, hits_of, top_of, retrieve, extractive) -> dict:
    """The figures with `ranking`; the answer composed as generation composes it (the sources that
    support one, `no_content` with fewer than 2), without the task's storage."""
    from r2k.core.services.answering.generation import grounding, meaning

    near = meaning(ctx)

    found = first = fact = false_nc = 0
    for q in questions:
        sources = retrieve(ctx, q["question"], 5, ranking=ranking)
        hits = hits_of(q, sources)
        found += any(hits)
        first += top_of(q, sources)
        kept = grounding(q["question"], sources)
        if len([s for s in kept if not s.get("related")]) < 2:
            false_nc += 1
        else:
            fact += holds(q, extractive(q["question"], kept, meaning=near).text)
    unanswered = sum(len([s for s in grounding(question, retrieve(ctx, question, 5, ranking=ranking))
                          if not s.get("related")]) < 2 for question in unanswerable)
    n = len(questions)
    return {"recall5": found / n, "top1": first / n, "answer": fact / n, "false_nc": false_nc / n,
            "unanswerable_nc": unanswered}


def _composed(ctx, questions, changes: dict, retrieve) -> float:
    """The share of answers holding the fact, composed with `changes` to the extractive generator's
    constants (set on its module for the call, then put back), from the default ranking's sources."""
    from r2k.core.services.answering.generation import grounding, meaning
    from r2k.core.services.search import extractive as x

    near = meaning(ctx)
    before = {k: getattr(x, k) for k in changes}
    fact = 0
    try:
        for k, v in changes.items():
            setattr(x, k, v)
        for q in questions:
            kept = grounding(q["question"], retrieve(ctx, q["question"], 5))
            if len(kept) >= 2:
                fact += holds(q, x.extractive(q["question"], kept, x.MAX_SENTENCES, meaning=near).text)
    finally:
        for k, v in before.items():
            setattr(x, k, v)
    return fact / len(questions)


def _time_embedding(embeddings) -> dict:
    """Wrap what embeds on ingest (the document's batch, and the reactions) to add up its time."""
    took = {"seconds": 0.0, "calls": 0, "depth": 0}

    def timed(original):
        def run(*args, **kwargs):
            took["depth"] += 1
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                took["depth"] -= 1
                if not took["depth"]:  # write_where calls write: counted once
                    took["seconds"] += time.perf_counter() - start
                    took["calls"] += 1
        return run

    embeddings.Embeddings.write = timed(embeddings.Embeddings.write)
    embeddings.Embeddings.write_where = timed(embeddings.Embeddings.write_where)
    return took


def generate(ctx, generation, workitems, actor, question: str) -> dict:
    """One work item for `question`, generated by the real task (extractive, no LLM); its outcome
    with the generated text."""
    item = workitems.create(ctx, actor, question)
    outcome = generation.generate_answer(ctx, item["id"])
    if outcome.get("outcome") == "generated":
        with ctx.db.read() as tx:
            outcome["text"] = tx.scalar("SELECT text FROM generated_candidates WHERE work_item_id = %s "
                                        "ORDER BY attempt DESC LIMIT 1", (item["id"],))
    return outcome


if __name__ == "__main__":
    main()
