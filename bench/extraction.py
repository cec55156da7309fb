"""Extraction measured on real corpora (issue: real documents in, item 8): candidates drawn at
random from `r2k ingest` of the corpora in bench/corpora.py, labelled by hand against the
criteria in bench/extraction_labels/README.md.

    python bench/extraction.py --draw 150 --seed 1 --out bench/extraction_labels/sample-1-before.jsonl
    python bench/extraction.py --draw 150 --seed 2 --exclude bench/extraction_labels/sample-1-before.jsonl \\
        --out bench/extraction_labels/sample-2-after.jsonl
    python bench/extraction.py --draw 150 --seed 3 --exclude bench/extraction_labels/sample-1-before.jsonl \
        --exclude bench/extraction_labels/sample-2-after.jsonl --out bench/extraction_labels/sample-3-after.jsonl
    python bench/extraction.py --draw 150 --seed 4 --fresh --exclude bench/extraction_labels/sample-1-before.jsonl \
        --exclude bench/extraction_labels/sample-2-after.jsonl --exclude bench/extraction_labels/sample-3-after.jsonl \
        --out bench/extraction_labels/sample-4-after.jsonl
    python bench/extraction.py --draw 150 --seed 5 --fresh --exclude … (samples 1 to 4) \
        --out bench/extraction_labels/sample-5-after.jsonl
    python bench/extraction.py --draw 150 --seed 6 --fresh --exclude … (samples 1 to 5) \
        --out bench/extraction_labels/sample-6-after.jsonl
    python bench/extraction.py --draw 150 --seed 7 --fresh --exclude … (samples 1 to 6) \
        --out bench/extraction_labels/sample-7-after.jsonl
    python bench/extraction.py --draw 150 --seed 8 --fresh --exclude … (samples 1 to 7) \
        --out bench/extraction_labels/sample-8-after.jsonl
    python bench/extraction.py          # every sample's figures, and which is the result

The corpora are ingested once into the bench's own data dir (R2K_DATA_DIR, else
/tmp/r2k-bench-extraction) by `r2k ingest`, each file in its own format; `--fresh` ingests again
into an empty one (after a change to extraction). A draw is stratified: the same number from each
corpus (the rest to the first; a corpus with fewer candidates left than its share gives the rest to the others, in
order), random with the seed, never a candidate an excluded sample holds.
Targets on the sample drawn after tuning: all three right >= 80%, Horn type right >= 90%,
distinct questions >= 95% of the candidates of each corpus.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import random
import shutil
import sys
from collections import Counter
from pathlib import Path

from _common import ROOT, bench_env, r2k
from corpora import CACHE, CORPORA, corpus_of, files

LABELS = Path(__file__).with_name("extraction_labels")
RESULT = "sample-8-after.jsonl"  # the last drawn, after the last tuning commit
ROLES = {  # what each sample is: only the last, drawn after the last tuning commit, is a result
    "sample-1-before.jsonl": "before tuning",
    "sample-2-after.jsonl": "after a first round of tuning; tuned on since",
    "sample-3-after.jsonl": "after a second round of tuning; tuned on since",
    "sample-4-after.jsonl": "after a third round of tuning; tuned on since",
    "sample-5-after.jsonl": "after a fourth round of tuning; tuned on since",
    "sample-6-after.jsonl": "drawn after the fifth round of tuning; tuned on since",
    "sample-7-after.jsonl": "drawn after the sixth round of tuning, the result then; tuned on since",
}
TARGETS = {"all three right": 0.80, "Horn type right": 0.90, "distinct questions": 0.95}


def key_of(path: str, text: str) -> dict:
    return {"path": str(Path(path).relative_to(CACHE)) if path.startswith(str(CACHE)) else path,
            "statement": hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()}


def ingest(env: dict, fresh: bool) -> None:
    data = Path(env["R2K_DATA_DIR"])
    if fresh and data.exists():
        r2k(env, "services", "down", check=False)
        shutil.rmtree(data)
    if (data / "extraction-ingested").exists():
        return
    r2k(env, "users", "add", "root", "--role", "admin", check=False)
    for name in CORPORA:
        paths = [str(p) for p in files(name)]
        result = r2k(env, "--json", "--as", "root", "ingest", *paths)
        summary = json.loads(result.stdout)
        print(f"ingested {name}: {summary['documents']} documents, {summary['candidates_total']} candidates, "
              f"{summary['fragments']} fragments, {summary.get('dropped_total', 0)} dropped, "
              f"{len(summary['skipped'])} skipped", file=sys.stderr)
    (data / "extraction-ingested").write_text("yes\n")


def candidates() -> list[dict]:
    """Every extracted candidate with its document's path and corpus."""
    sys.path.insert(0, str(ROOT))
    from r2k.core.bootstrap import bootstrap

    ctx = bootstrap(settings=None)
    with ctx.db.read() as tx:
        rows = tx.all("SELECT c.id, c.question, c.text AS answer_text, c.horn_type, d.path FROM candidates c "
                      "JOIN source_documents d ON d.id = c.document_id WHERE c.origin = 'extracted' ORDER BY c.id")
    out = []
    for row in rows:
        corpus = corpus_of(row["path"])
        if corpus:
            out.append({"corpus": corpus, "path": row["path"], "question": row["question"],
                        "answer": row["answer_text"], "horn_type": row["horn_type"]})
    return out


def distinct(rows: list[dict]) -> dict:
    by: dict[str, list[str]] = {}
    for row in rows:
        by.setdefault(row["corpus"], []).append(row["question"].strip().lower())
    return {name: [len(set(qs)), len(qs)] for name, qs in by.items()}


def draw(n: int, seed: int, out: Path, exclude: list[Path]) -> None:
    rows = candidates()
    excluded = {json.dumps(line["key"], sort_keys=True) for path in exclude for line in read(path)[1]}
    rng = random.Random(seed)
    names = list(CORPORA)
    per = {name: n // len(names) + (i < n % len(names)) for i, name in enumerate(names)}
    pools = {name: [r for r in rows if r["corpus"] == name
                    and json.dumps(key_of(r["path"], r["answer"]), sort_keys=True) not in excluded] for name in names}
    short = sum(max(0, per[name] - len(pools[name])) for name in names)
    for name in names:  # a corpus whose candidates the samples before took leaves its share to the others, in order
        per[name] = min(per[name], len(pools[name]))
    for name in names:
        more = min(short, len(pools[name]) - per[name])
        per[name] += more
        short -= more
    picked = []
    for name in names:
        picked += rng.sample(pools[name], per[name])
    with out.open("w") as handle:
        handle.write(json.dumps({"sample": out.stem, "seed": seed, "drawn": len(picked), "per_corpus": per,
                                 "distinct_questions": distinct(rows)}) + "\n")
        for r in picked:
            handle.write(json.dumps({"key": key_of(r["path"], r["answer"]), "corpus": r["corpus"],
                                     "question": r["question"], "answer": r["answer"], "horn_type": r["horn_type"],
                                     "question_ok": None, "answer_ok": None, "horn_ok": None, "right_type": None,
                                     "note": ""}, ensure_ascii=False) + "\n")
    print(f"drew {len(picked)} candidates into {out}")


def read(path: Path) -> tuple[dict, list[dict]]:
    lines = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    return lines[0], lines[1:]


def figures(path: Path, now: dict | None) -> None:
    header, rows = read(path)
    labelled = [r for r in rows if None not in (r["question_ok"], r["answer_ok"], r["horn_ok"])]
    role = "the result (drawn after the last tuning)" if path.name == RESULT else ROLES.get(path.name, "tuned on")
    print(f"{path.name}: seed {header['seed']}, {len(labelled)} of {len(rows)} labelled; {role}")
    if not labelled:
        return
    for corpus in [*CORPORA, None]:
        part = [r for r in labelled if corpus is None or r["corpus"] == corpus]
        if not part:
            continue
        all3 = sum(r["question_ok"] and r["answer_ok"] and r["horn_ok"] for r in part) / len(part)
        horn = sum(r["horn_ok"] for r in part) / len(part)
        question = sum(r["question_ok"] for r in part) / len(part)
        answer = sum(r["answer_ok"] for r in part) / len(part)
        counts = (now or header["distinct_questions"]).get(corpus) if corpus else None
        if corpus is None:
            totals = [sum(v[0] for v in (now or header["distinct_questions"]).values()),
                      sum(v[1] for v in (now or header["distinct_questions"]).values())]
            counts = totals
        share = counts[0] / counts[1] if counts and counts[1] else float("nan")
        print(f"  {corpus or 'all':12} n={len(part):3}  all three right {all3:6.1%}  Horn type right {horn:6.1%}  "
              f"question ok {question:6.1%}  answer ok {answer:6.1%}  distinct questions {share:6.1%} "
              f"({counts[0] if counts else '?'} of {counts[1] if counts else '?'})")
    if path.name == RESULT:
        wrong = Counter((r["horn_type"], r["right_type"]) for r in labelled if not r["horn_ok"])
        if wrong:
            print("  Horn types labelled wrong (given → right): " +
                  ", ".join(f"{a}→{b} {n}" for (a, b), n in wrong.most_common()))
        all3 = sum(r["question_ok"] and r["answer_ok"] and r["horn_ok"] for r in labelled) / len(labelled)
        horn = sum(r["horn_ok"] for r in labelled) / len(labelled)
        counts = now or header["distinct_questions"]
        worst = min(v[0] / v[1] for v in counts.values() if v[1])
        for what, value in (("all three right", all3), ("Horn type right", horn), ("distinct questions", worst)):
            print(f"  target {what} >= {TARGETS[what]:.0%}: {value:.1%} "
                  f"{'meets target' if value >= TARGETS[what] else 'MISSES target'}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--draw", type=int, help="draw this many candidates to label")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--exclude", type=Path, action="append", default=[])
    parser.add_argument("--fresh", action="store_true", help="ingest the corpora again into an empty data dir")
    args = parser.parse_args()
    env = bench_env("extraction")
    if args.draw:
        ingest(env, args.fresh)
        draw(args.draw, args.seed, args.out, args.exclude)
        return
    samples = sorted(LABELS.glob("sample-*.jsonl"))
    for path in samples:
        figures(path, None)  # each sample's distinct questions as they were when it was drawn


if __name__ == "__main__":
    main()
