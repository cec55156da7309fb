"""Hybrid retrieval and extractive generation over the demo corpus (docs/architecture.md, "Retrieval").

Runs the labelled questions of bench/retrieval_set.json (each with the passage that answers it: its
document and section heading, and a fact the answer must quote) on embedded services, in a fresh data
dir of its own (or the one R2K_DATA_DIR names):

- recall@5: the share of questions whose answering passage is among the 5 sources retrieved
  (the passage named, or any source quoting the fact); recall@1 the same for the first source;
- answers with the fact: the share whose generated answer (the built-in extractive generator, run
  through the real generation task) contains the expected fact;
- false no_content: the share of these questions, all answered by the corpus, that escalated
  `no_content` instead; and how many of the set's unanswerable questions escalated it (they should).

Then one ablation row per constant of the ranking (core/knowledge/ranking.py, `Ranking`): the same
figures with that constant changed (the answer composed by the same extractive generator, without the
task's storage), so each one's measured effect is printed beside the default.

Speed: median and p95 retrieval beside a floor measured in the same run, for each question one bare
vector query (the question embedded, then the nearest passages through the HNSW index) plus one bare
full-text query. And what embedding costs ingest: the time spent embedding the corpus's passages,
candidates and answers as they were written, beside the ingest's whole time.

Targets: recall@5 >= 0.9, answers with the fact >= 0.8, false no_content <= 5%, median retrieval
<= 2x its floor, embedding <= half the ingest.

    python bench/retrieval.py [--misses] [--keep]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from _common import ROOT, median, percentile, r2k, verdict

SET = Path(__file__).with_name("retrieval_set.json")


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
        (f"nearest 40 (from {d.nearest})", d.but(nearest=40)),
        ("similarity support off", d.but(best_similarity=2.0, other_similarity=2.0)),
        ("similarity 0.40 / 0.35", d.but(best_similarity=0.40, other_similarity=0.35)),
        ("similarity 0.55 / 0.50", d.but(best_similarity=0.55, other_similarity=0.50)),
        (f"best_coverage 0.4 (from {d.best_coverage})", d.but(best_coverage=0.4)),
        (f"other_coverage 0.2 (from {d.other_coverage})", d.but(other_coverage=0.2)),
        (f"heading_weight 1.3 (from {d.heading_weight})", d.but(heading_weight=1.3)),
        (f"title_weight 1.0 (from {d.title_weight})", d.but(title_weight=1.0)),
        ("phrase_weight 0", d.but(phrase_weight=0.0)),
        ("generic_weight 1.0", d.but(generic_weight=1.0)),
        (f"wide 200 (from {d.wide})", d.but(wide=200)),
        (f"wide 20 (from {d.wide})", d.but(wide=20)),
        ("feedback_terms 0 (no related context)", d.but(feedback_terms=0)),
    ]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--misses", action="store_true", help="print each question that missed, and why")
    parser.add_argument("--keep", action="store_true", help="leave the bench's services and data dir")
    args = parser.parse_args()
    fresh = not os.environ.get("R2K_DATA_DIR")
    if fresh:  # a data dir of its own each run: the ingest is measured, and the index built the same way
        os.environ["R2K_DATA_DIR"] = tempfile.mkdtemp(prefix="r2k-bench-retrieval-")
    env = dict(os.environ)
    sys.path.insert(0, str(ROOT))
    from r2k.core.context import Context
    from r2k.core.domain import SYSTEM
    from r2k.core.knowledge.ranking import Ranking
    from r2k.core.services import embeddings, generation, users, workitems
    from r2k.core.services.demo import load
    from r2k.core.services.extractive import extractive
    from r2k.core.services.retrieval import retrieve

    labelled = json.loads(SET.read_text())
    questions, unanswerable = labelled["questions"], labelled["unanswerable"]
    ctx = Context(settings=None)
    if ctx.settings.llm_url:
        raise SystemExit("unset R2K_LLM_URL: this bench measures the built-in extractive generator")
    try:
        start = time.perf_counter()
        ctx.embeddings.embedder.embed(["the model loaded once per process"])
        model_load = time.perf_counter() - start
        embedding_took = _time_embedding(embeddings)
        start = time.perf_counter()
        load(ctx, by=SYSTEM)  # users and the demo corpus (adds nothing when they are there)
        ingest_took = time.perf_counter() - start
        actor = users.resolve(ctx, "root")
        with ctx.db.read() as tx:
            documents = {Path(r["path"]).name: r["id"] for r in tx.all("SELECT id, path FROM source_documents")}
        status = embeddings.status(ctx)

        def hits_of(q, sources):
            wanted = {(documents[p["document"]], p["heading"]) for p in q["passages"]}
            return [s.get("document_id") is not None and (s["document_id"], s["heading"]) in wanted
                    or q["fact"] in s["text"] for s in sources]

        for q in questions[:5]:  # warm: the model loaded, the statements prepared
            retrieve(ctx, q["question"], 5)
            _floor(ctx, q["question"])
        found = first = with_fact = no_content = 0
        took: list[float] = []
        floor: list[float] = []
        misses: list[str] = []
        for q in questions:
            start = time.perf_counter()
            sources = retrieve(ctx, q["question"], 5)
            took.append((time.perf_counter() - start) * 1000)
            floor.append(_floor(ctx, q["question"]))
            hits = hits_of(q, sources)
            found += any(hits)
            first += bool(hits[:1] and hits[0])
            outcome = generate(ctx, generation, workitems, actor, q["question"])
            answer = outcome.get("text") or ""
            with_fact += q["fact"] in answer
            no_content += outcome.get("reason") == "no_content"
            if args.misses and not (any(hits) and q["fact"] in answer):
                top = "; ".join(f"{s['title'][:24]} / {s['heading'][:40]}" for s in sources[:3]) or "(none)"
                misses.append(f"- {q['question']}\n    retrieved: {top}\n    answer: "
                              f"{answer[:160] or outcome.get('reason')!s}")
        true_no_content = 0
        for question in unanswerable:
            outcome = generate(ctx, generation, workitems, actor, question)
            true_no_content += outcome.get("reason") == "no_content"
            if args.misses and outcome.get("reason") != "no_content":
                misses.append(f"- (unanswerable) {question}\n    answer: {(outcome.get('text') or '')[:160]}")

        rows = []
        for label, ranking in ablations(Ranking):
            rows.append((label, _ablation(ctx, ranking, questions, unanswerable, hits_of, retrieve, extractive)))
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

    n = len(questions)
    print(f"{n} labelled questions over {len({p['document'] for q in questions for p in q['passages']})} documents; "
          f"retrieval: {status['detail']}")
    print(f"recall@5                 {found / n:6.3f}   (recall@1 {first / n:.3f}; target >= 0.9: "
          f"{verdict(found / n, 0.9, lower_is_better=False)})")
    print(f"answers with the fact    {with_fact / n:6.3f}   (target >= 0.8: "
          f"{verdict(with_fact / n, 0.8, lower_is_better=False)})")
    print(f"false no_content         {no_content / n:6.3f}   ({no_content}/{n}; target <= 0.05: "
          f"{verdict(no_content / n, 0.05 + 1e-9)})")
    print(f"unanswerable questions escalated no_content: {true_no_content}/{len(unanswerable)}")
    ratio = median(took) / median(floor)
    print(f"retrieval: median {median(took):.2f} ms, p95 {percentile(took, 95):.2f} ms; floor (one bare vector "
          f"query plus one bare full-text query): median {median(floor):.2f} ms, p95 {percentile(floor, 95):.2f} ms; "
          f"median {ratio:.2f}x the floor (target <= 2x: {verdict(ratio, 2.0 + 1e-9)})")
    if embedding_took["calls"]:
        share = embedding_took["seconds"] / ingest_took
        print(f"ingest of the demo corpus: {ingest_took:.2f} s, of which embedding {embedding_took['seconds']:.2f} s "
              f"({share:.0%}, {embedding_took['calls']} batches; target <= 50%: {verdict(share, 0.5 + 1e-9)}); "
              f"loading the model, once per process before it: {model_load:.2f} s")
    else:
        print("ingest: the demo corpus was there already (R2K_DATA_DIR): run without it to measure the ingest")
    print("\nablation (each constant of core/knowledge/ranking.py changed alone; answers by the extractive generator):")
    print(f"  {'ranking':40} {'recall@5':>8} {'top-1':>6} {'fact':>6} {'false nc':>8} {'unans nc':>8}")
    for label, r in rows:
        print(f"  {label:40} {r['recall5']:8.3f} {r['top1']:6.3f} {r['fact']:6.3f} {r['false_nc']:8.3f} "
              f"{r['unanswerable_nc']:>5}/{len(unanswerable)}")
    if misses:
        print("\nmisses:\n" + "\n".join(misses))


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


def _ablation(ctx, ranking, questions, unanswerable, hits_of, retrieve, extractive) -> dict:
    found = first = fact = false_nc = 0
    for q in questions:
        sources = retrieve(ctx, q["question"], 5, ranking=ranking)
        hits = hits_of(q, sources)
        found += any(hits)
        first += bool(hits[:1] and hits[0])
        if len(sources) < 2:
            false_nc += 1
        else:
            fact += q["fact"] in extractive(q["question"], sources).text
    unanswered = sum(len(retrieve(ctx, question, 5, ranking=ranking)) < 2 for question in unanswerable)
    n = len(questions)
    return {"recall5": found / n, "top1": first / n, "fact": fact / n, "false_nc": false_nc / n,
            "unanswerable_nc": unanswered}


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
