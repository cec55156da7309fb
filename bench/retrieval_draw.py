"""The sections a held-out retrieval set is written on, drawn at random: a seeded choice of a corpus's
file, then of one of its passages (as ingest cuts them) of at least 60 words, skipping the sections
the earlier sets label (real, fresh, fresh2), 18 per corpus. Prints them to a file (--out); a
question was then written by hand for each that had something to ask.

    python bench/retrieval_draw.py                                   # seed 20261204: fresh2's draw
    python bench/retrieval_draw.py --seed 20261205 --out /tmp/retrieval-drawn3.json   # fresh3's

fresh2 was drawn with seed 20261204 when only the real and fresh sets were excluded; with fresh2
excluded too, that seed no longer reproduces its draw exactly (its own sections are now skipped).
"""
import argparse
import json
import random
import sys
from pathlib import Path

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))
from corpora import CORPORA, files

from r2k.core.knowledge.extract import extract_parts
from r2k.core.services.documents.ingest import sections_of

EXCLUDED = ["retrieval_real_set.json", "retrieval_fresh_set.json", "retrieval_fresh2_set.json"]

ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
ap.add_argument("--seed", type=int, default=20261204)
ap.add_argument("--out", default="/tmp/retrieval-drawn.json")
args = ap.parse_args()

used = set()
for f in EXCLUDED:
    d = json.loads((HERE / f).read_text())
    for q in d["questions"]:
        for p in q["passages"]:
            used.add((p["document"], p["heading"]))
rng = random.Random(args.seed)
out = {}
for name in CORPORA:
    fs = files(name)
    picked = []
    tries = 0
    while len(picked) < 18 and tries < 500:
        tries += 1
        path = rng.choice(fs)
        try:
            parts = extract_parts(path, path.read_bytes())
        except Exception:  # a file ingest refuses has no passage to draw
            continue
        secs = [(s.heading, s.text) for doc in parts for s in sections_of(doc) if len(s.text.split()) >= 60]
        if not secs:
            continue
        h, t = rng.choice(secs)
        if (path.name, h) in used or any(p[0] == path.name and p[1] == h for p in picked):
            continue
        picked.append((path.name, h, t))
    out[name] = picked
Path(args.out).write_text(json.dumps(out, indent=1))
for name, ps in out.items():
    print(name, len(ps), [(p[0], p[1][-40:], len(p[2])) for p in ps])
