"""Precision and recall of the deterministic contradiction rules (core/contradictions.py) on three
labelled sets of answer pairs, each beside a word-overlap baseline computed in the same run:

- bench/contradictions_set.json, written together with the rules it scores (in the demo corpus's
  style; most of its contradicting pairs are one-sentence edits of a token or two);
- bench/contradictions_real_set.json, written from the real corpora's own statements before any
  change to the detector: each side worded independently, the contradictions as people make them
  (another number, a reversed obligation, an exception dropped), consistent pairs sharing most words;
  the set the rules are tuned on;
- bench/contradictions_fresh_set.json, from other documentation (Debian's section-5 manual pages:
  ssh_config, logind.conf, rsyncd.conf, systemd.service ...), written and frozen before the rules
  were tuned on the real set, and never tuned on: its figure is the result. Also a changed default
  and a swapped order among its contradictions; same values in other units, and a rule beside its
  exception, among its consistent pairs.

The baseline says "contradicts" when the two sides' word sets overlap (Jaccard) at least a threshold,
the threshold that scores best on that set (so the baseline is given every advantage).
Targets (the fresh set, held out): precision >= 0.9, recall >= 0.8.

Also the median time to detect over one subject: every pair of answers that share a subject
(core/subjects.py) compared, per subject, next to the floor of the same loop with a comparison that
does nothing; for the set, and for the demo corpus read as approved answers (whose flags, unlabelled,
--verbose prints). Pure: no services.

    python bench/contradictions.py [--verbose]
"""
from __future__ import annotations

import itertools
import json
import sys
import time
from collections import defaultdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import median  # noqa: E402

from r2k.core.contradictions import compare  # noqa: E402
from r2k.core.subjects import subjects_of  # noqa: E402

SET = Path(__file__).resolve().parent / "contradictions_set.json"
REAL_SET = Path(__file__).resolve().parent / "contradictions_real_set.json"
FRESH_SET = Path(__file__).resolve().parent / "contradictions_fresh_set.json"
WORD = __import__("re").compile(r"[a-z0-9]+")


def overlap(a: str, b: str) -> float:
    """The Jaccard overlap of two texts' word sets."""
    x, y = set(WORD.findall(a.lower())), set(WORD.findall(b.lower()))
    return len(x & y) / max(len(x | y), 1)


def baseline(pairs: list[dict]) -> tuple[float, float, float]:
    """(threshold, precision, recall) of the word-overlap baseline at its best threshold (by F1)."""
    best = (0.0, 0.0, 0.0, -1.0)
    for step in range(5, 100, 5):
        t = step / 100
        said = [overlap(p["a"], p["b"]) >= t for p in pairs]
        tp = sum(s and p["contradicts"] for s, p in zip(said, pairs))
        fp = sum(s and not p["contradicts"] for s, p in zip(said, pairs))
        fn = sum(not s and p["contradicts"] for s, p in zip(said, pairs))
        precision = tp / (tp + fp) if tp + fp else 1.0
        recall = tp / (tp + fn) if tp + fn else 1.0
        f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
        if f1 > best[3]:
            best = (t, precision, recall, f1)
    return best[:3]


def per_subject(groups: list[list[str]], judge) -> list[float]:
    """Seconds `judge` takes over every pair of each group (the answers on one subject), one per group."""
    times = []
    for group in groups:
        start = time.perf_counter()
        for x, y in itertools.combinations(group, 2):
            judge(x, y)
        times.append(time.perf_counter() - start)
    return times


def nothing(x: str, y: str) -> bool:
    """The floor: a comparison that does nothing, so the loop alone is timed."""
    return x == y


def main() -> None:
    verbose = "--verbose" in sys.argv
    pairs = json.loads(SET.read_text())["pairs"]
    print("== the old set (bench/contradictions_set.json, written with the rules)")
    score_set(pairs, verbose)
    real = json.loads(REAL_SET.read_text())["pairs"]
    print("\n== the real set (bench/contradictions_real_set.json, from the real corpora; the rules are tuned on it)")
    score_set(real, verbose)
    fresh = json.loads(FRESH_SET.read_text())["pairs"]
    print("\n== the fresh set (bench/contradictions_fresh_set.json, manual pages, frozen before tuning, held out)")
    score_set(fresh, verbose)
    print()
    timing(pairs)
    corpus(verbose)


def score_set(pairs: list[dict], verbose: bool) -> None:
    tp = fp = fn = tn = 0
    by_kind: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for pair in pairs:
        found = compare(pair["a"], pair["b"])
        backwards = compare(pair["b"], pair["a"])
        if (found is None) != (backwards is None):
            print(f"ASYMMETRIC: {pair['a']!r} / {pair['b']!r}")
        said = found is not None
        if pair["contradicts"]:
            by_kind[pair["kind"]][1] += 1
            by_kind[pair["kind"]][0] += said
            tp += said
            fn += not said
        else:
            fp += said
            tn += not said
        if verbose or said != pair["contradicts"]:
            mark = "ok  " if said == pair["contradicts"] else ("FP  " if said else "FN  ")
            print(f"{mark}[{pair['kind']}] {pair['a']}  |  {pair['b']}"
                  + (f"  => {found.kind}: {found.detail}" if found else ""))
    precision = tp / (tp + fp) if tp + fp else 1.0
    recall = tp / (tp + fn) if tp + fn else 1.0
    print(f"pairs: {len(pairs)} ({tp + fn} contradicting, {tn + fp} consistent)")
    print(f"precision: {precision:.3f} (target >= 0.9: {'meets' if precision >= 0.9 else 'MISSES'})")
    print(f"recall:    {recall:.3f} (target >= 0.8: {'meets' if recall >= 0.8 else 'MISSES'})")
    print("recall by kind: " + ", ".join(f"{k} {found}/{total}" for k, (found, total) in sorted(by_kind.items())))
    t, bp, br = baseline(pairs)
    print(f"word-overlap baseline (Jaccard >= {t:.2f}, its best threshold on this set): precision {bp:.3f}, "
          f"recall {br:.3f}")


def timing(pairs: list[dict]) -> None:
    # Detection per subject: the set's answers grouped by the subjects they share.
    texts = sorted({p[side] for p in pairs for side in ("a", "b")})
    by_subject: dict[str, list[str]] = defaultdict(list)
    for text in texts:
        for subject in subjects_of("", text):
            by_subject[subject].append(text)
    groups = [g for g in by_subject.values() if len(g) > 1]
    floor = median(per_subject(groups, nothing))
    took = median(per_subject(groups, compare))
    pairs_per = median([len(g) * (len(g) - 1) / 2 for g in groups])
    print(f"detection per subject (the set): median {took * 1000:.2f} ms over {len(groups)} subjects "
          f"(median {pairs_per:.0f} pairs each); floor (a comparison that does nothing) {floor * 1000:.3f} ms")


def corpus(verbose: bool) -> None:
    """The demo corpus as if every non-open unit were approved: the pairs sharing a subject that
    the rules flag (unlabelled: read them with --verbose), and the time per subject there."""
    from r2k.core.extract import extract
    from r2k.core.services.demo import CORPUS

    units = []
    for path in sorted(CORPUS.iterdir()):
        units += [u.text for u in extract(path, path.read_text()).units if u.horn_type != "OPEN_ISSUE"]
    by_subject: dict[str, set[int]] = defaultdict(set)
    for i, text in enumerate(units):
        for subject in subjects_of("", text):
            by_subject[subject].add(i)
    pairs = {p for ids in by_subject.values() for p in itertools.combinations(sorted(ids), 2)}
    flagged = [(a, b, f) for a, b in sorted(pairs) if (f := compare(units[a], units[b]))]
    print(f"demo corpus: {len(units)} answers, {len(pairs)} pairs sharing a subject, {len(flagged)} flagged")
    for a, b, f in flagged if verbose else []:
        print(f"  {f.kind}: {f.detail}\n    {units[a][:120]}\n    {units[b][:120]}")
    groups = [[units[i] for i in sorted(ids)] for ids in by_subject.values() if len(ids) > 1]
    times, floors = per_subject(groups, compare), per_subject(groups, nothing)
    print(f"detection per subject (demo corpus): median {median(times) * 1000:.2f} ms over {len(times)} subjects; "
          f"floor {median(floors) * 1000:.3f} ms")


if __name__ == "__main__":
    main()
