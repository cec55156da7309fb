"""The registry answers an article cites: their statuses now, and the article rendered with them."""
from __future__ import annotations

from ...adapters.postgres import Tx


def not_current(tx: Tx, sources: list[dict], *, lock: bool = False) -> list[dict]:
    """The flagged claims (kind `not_current`) of the cited answers that are no longer APPROVED in the
    registry: superseded, disputed or retired, each named with its status. `lock`: the answers are
    held (FOR SHARE) until the transaction ends, so none moves on between this check and the commit."""
    ids = sorted({s["answer_id"] for s in sources if s.get("answer_id") is not None})
    if not ids:
        return []
    rows = tx.all("SELECT a.id, a.status, (SELECT n.id FROM approved_answers n WHERE n.supersedes_id = a.id "
                  "ORDER BY n.id DESC LIMIT 1) AS superseded_by FROM approved_answers a WHERE a.id = ANY(%s) "
                  f"ORDER BY a.id{' FOR SHARE OF a' if lock else ''}", (ids,))
    gone = {r["id"]: r for r in rows if r["status"] != "APPROVED"}
    found = {r["id"] for r in rows}
    gone.update({i: {"id": i, "status": "missing", "superseded_by": None} for i in ids if i not in found})
    flags = []
    for source in sources:
        answer = gone.get(source.get("answer_id"))
        if answer is None:
            continue
        why = f"registry answer {answer['id']} is {status_said(answer)}"
        for claim in source.get("claims") or [f"(the article cites registry answer {answer['id']})"]:
            flags.append({"claim": claim, "kind": "not_current", "answer_id": answer["id"], "answer_text": None,
                          "why": why, "coverage": source.get("coverage")})
    return flags


def status_said(answer: dict) -> str:
    """An answer's registry status in words: APPROVED, DISPUTED, RETIRED, SUPERSEDED by answer 9."""
    if answer["status"] == "SUPERSEDED" and answer.get("superseded_by"):
        return f"SUPERSEDED by answer {answer['superseded_by']}"
    return answer["status"]


def headed_by_title(body: str, title: str) -> bool:
    """The article's Markdown opens with its title as a heading already ("# Backups")."""
    first = next((line.strip() for line in (body or "").splitlines() if line.strip()), "")
    return first.startswith("# ") and " ".join(first[2:].split()).casefold() == " ".join(title.split()).casefold()


def render(row: dict, statuses: dict[int, dict] | None = None) -> str:
    """The article as published: its title once (the body's own heading when it opens with it), its
    Markdown, then the registry answers its claims rest on, each with its registry status when
    `statuses` (answer id → row) are given."""
    body = (row["body"] or "").strip()
    lines = ([] if headed_by_title(body, row["title"]) else [f"# {row['title']}", ""]) + [body, ""]
    sources = row.get("sources") or []
    if sources:
        lines += ["## Sources", ""]
        for n, s in enumerate(sources, 1):
            line = f"{n}. Registry answer {s['answer_id']}" + (f": {s['question']}" if s.get("question") else "")
            if statuses is not None:
                line += f" ({status_said(statuses[s['answer_id']])})" if s["answer_id"] in statuses else " (missing)"
            lines.append(line)
        lines.append("")
    if row.get("task_version"):
        lines += [f"_Version {row['task_version']}._", ""]
    return "\n".join(lines)


def statuses(tx: Tx, sources: list[dict]) -> dict[int, dict]:
    """Each cited answer's registry row now (id, status, superseded_by), by id."""
    ids = [s["answer_id"] for s in sources if s.get("answer_id") is not None]
    rows = tx.all("SELECT a.id, a.status, (SELECT n.id FROM approved_answers n WHERE n.supersedes_id = a.id "
                  "ORDER BY n.id DESC LIMIT 1) AS superseded_by FROM approved_answers a WHERE a.id = ANY(%s)",
                  (ids,)) if ids else []
    return {r["id"]: r for r in rows}
