"""The labelled samples re-read by the current extraction code, without drawing (a tuning aid for
bench/extraction.py, never a result): each labelled candidate's document is extracted again and
its statement looked up by the label's key (document path and the SHA-256 of its text).

- statement unchanged, question unchanged: the old labels hold as they are;
- statement unchanged, question changed: its Horn label still holds (the type is judged on the
  text; the right type is the label's), the question is printed to be read again;
- statement gone (cut otherwise now): printed, to be read again.

    python bench/relabel.py                 # every tuning sample (1 to 7)
    python bench/relabel.py --show changed  # also print each changed question and Horn type

Figures from here are on tuning sets: they say what a change did to faults already seen, not how
it generalises (bench/extraction.py's result sample does).
"""
from __future__ import annotations

import argparse
import hashlib
import json
from collections import Counter
from pathlib import Path

from corpora import CACHE

from r2k.core.knowledge.extract import ExtractError, extract_parts

LABELS = Path(__file__).with_name("extraction_labels")
TUNING = [f"sample-{n}-{'before' if n == 1 else 'after'}.jsonl" for n in range(1, 8)]


def units_of(path: str) -> dict[str, tuple[str, str]]:
    """statement hash -> (question, Horn type) of every candidate the current code cuts from a document."""
    file = CACHE / path
    try:
        parts = extract_parts(file, file.read_bytes())
    except ExtractError:
        return {}
    return {hashlib.sha256(u.text.encode("utf-8", "surrogatepass")).hexdigest(): (u.question, u.horn_type)
            for part in parts for u in part.units}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--show", choices=["changed", "horn", "none"], default="none")
    parser.add_argument("--sample", action="append", help="only these samples (file names)")
    args = parser.parse_args()
    cache: dict[str, dict] = {}
    total = Counter()
    for name in args.sample or TUNING:
        rows = [json.loads(line) for line in (LABELS / name).read_text().splitlines()[1:] if line.strip()]
        c = Counter()
        for row in rows:
            if None in (row["question_ok"], row["answer_ok"], row["horn_ok"]):
                continue
            path = row["key"]["path"]
            if path not in cache:
                cache[path] = units_of(path)
            now = cache[path].get(row["key"]["statement"])
            c["labelled"] += 1
            right = row["horn_type"] if row["horn_ok"] else row["right_type"]
            if now is None:
                c["statement gone"] += 1
                c["gone, was answer ok"] += row["answer_ok"]
                if args.show == "changed":
                    print(f"[{name} gone] was answer_ok={row['answer_ok']}: {row['answer'][:150]!r}")
                continue
            question, horn = now
            c["statement kept"] += 1
            c["horn right"] += horn == right
            c["horn right before"] += row["horn_ok"]
            if question == row["question"]:
                c["question same"] += 1
                c["question ok (same)"] += row["question_ok"]
                c["all three (same q)"] += row["question_ok"] and row["answer_ok"] and horn == right
            else:
                c["question changed"] += 1
            if args.show == "horn" and horn != right:
                print(f"[{name[7]}] {horn}->{right} was {row['horn_type']}: {row['answer'][:200]!r}")
            if args.show == "changed" and (question != row["question"] or horn != row["horn_type"]):
                print(f"[{name}] horn {row['horn_type']}→{horn} (right {right}); q_ok was {row['question_ok']}\n"
                      f"   old Q: {row['question']}\n   new Q: {question}\n   A: {row['answer'][:160]!r}")
        total.update(c)
        print(f"{name}: " + ", ".join(f"{k} {v}" for k, v in c.items()))
    kept = total["statement kept"] or 1
    print(f"all tuning samples: {dict(total)}")
    print(f"Horn right on statements kept: {total['horn right'] / kept:.1%} "
          f"(their old labels: {total['horn right before'] / kept:.1%}); tuning sets, not a result")


if __name__ == "__main__":
    main()
