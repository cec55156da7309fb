"""Retrieval and extractive generation over the demo corpus (issue: knowledge, item 2).

Runs the labelled questions of bench/retrieval_set.json (each with the passage that answers it: its
document and section heading, and a fact the answer must quote) on embedded services:

- recall@5: the share of questions whose answering passage is among the 5 sources retrieved
  (the passage named, or any source quoting the fact);
- answers with the fact: the share whose generated answer (the built-in extractive generator, run
  through the real generation task) contains the expected fact;
- false no_content: the share of these questions, all answered by the corpus, that escalated
  `no_content` instead.

It also prints how many of the set's unanswerable questions escalated `no_content` (they should).
Targets: recall@5 >= 0.9, answers with the fact >= 0.8, false no_content <= 5%.

    python bench/retrieval.py [--misses]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from _common import ROOT, bench_env, r2k, verdict

SET = Path(__file__).with_name("retrieval_set.json")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--misses", action="store_true", help="print each question that missed, and why")
    parser.add_argument("--keep", action="store_true", help="leave the bench's services running")
    args = parser.parse_args()
    env = bench_env("retrieval")
    sys.path.insert(0, str(ROOT))
    from r2k.core.context import Context
    from r2k.core.domain import SYSTEM
    from r2k.core.services import generation, users, workitems
    from r2k.core.services.demo import load
    from r2k.core.services.retrieval import retrieve

    labelled = json.loads(SET.read_text())
    questions, unanswerable = labelled["questions"], labelled["unanswerable"]
    ctx = Context(settings=None)
    if ctx.settings.llm_url:
        raise SystemExit("unset R2K_LLM_URL: this bench measures the built-in extractive generator")
    try:
        load(ctx, by=SYSTEM)  # users and the demo corpus (adds nothing when they are there)
        actor = users.resolve(ctx, "root")
        with ctx.db.read() as tx:
            documents = {Path(r["path"]).name: r["id"] for r in tx.all("SELECT id, path FROM source_documents")}

        found = first = with_fact = no_content = 0
        took: list[float] = []
        floor: list[float] = []  # the same questions as one bare full-text query each, in the same run
        misses: list[str] = []
        for q in questions:
            wanted = {(documents[p["document"]], p["heading"]) for p in q["passages"]}
            start = time.perf_counter()
            sources = retrieve(ctx, q["question"], 5)
            took.append((time.perf_counter() - start) * 1000)
            start = time.perf_counter()  # the floor: one bare full-text query for the same question
            with ctx.db.read() as tx:
                tx.all("SELECT id FROM source_passages WHERE search @@ plainto_tsquery('english', %s) "
                       "ORDER BY ts_rank_cd(search, plainto_tsquery('english', %s)) DESC LIMIT 5",
                       (q["question"], q["question"]))
            floor.append((time.perf_counter() - start) * 1000)
            hits = [s.get("document_id") is not None and (s["document_id"], s["heading"]) in wanted
                    or q["fact"] in s["text"] for s in sources]
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
    finally:
        ctx.redis.delete("rq:queue:raw_to_knowledge_generation")  # the jobs the work items queued: run here
        ctx.close()
        if not args.keep:
            r2k(env, "services", "down", "--as", "root", check=False)

    n = len(questions)
    print(f"{n} labelled questions over {len({p['document'] for q in questions for p in q['passages']})} documents "
          f"(median retrieval {statistics.median(took):.1f} ms; floor, one bare full-text query: "
          f"{statistics.median(floor):.1f} ms)")
    print(f"recall@5                 {found / n:6.3f}   (recall@1 {first / n:.3f}; target >= 0.9: "
          f"{verdict(found / n, 0.9, lower_is_better=False)})")
    print(f"answers with the fact    {with_fact / n:6.3f}   (target >= 0.8: "
          f"{verdict(with_fact / n, 0.8, lower_is_better=False)})")
    print(f"false no_content         {no_content / n:6.3f}   ({no_content}/{n}; target <= 0.05: "
          f"{verdict(no_content / n, 0.05 + 1e-9)})")
    print(f"unanswerable questions escalated no_content: {true_no_content}/{len(unanswerable)}")
    if misses:
        print("\nmisses:\n" + "\n".join(misses))


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
