"""Comments on candidates, answers, grey entries, work items and article tasks: each an event, never
edited nor deleted; `@name` of a known user is a mention, which the comment's live notice carries
to that user's workstation; shown terminal-safe."""
from __future__ import annotations

import json
import time

import pytest

from r2k.core.errors import InvalidInput
from r2k.core.services import tasks
from r2k.core.services.answering import workitems
from r2k.core.services.grey_entries import grey
from r2k.core.services.queue import claims
from r2k.core.services.validation import candidates, comments
from tests.conftest import error_of, r2k, r2k_json


@pytest.fixture
def things(ctx, people):
    """One of each kind a comment can be on, by id."""
    candidate = candidates.add(ctx, people["root"], "How long are backups kept?", "Backups are kept 30 days.", "FACT")
    candidates.add(ctx, people["root"], "Where are backups stored?", "Backups are stored in Frankfurt.", "FACT")
    claimed = claims.claim_next(ctx, people["alice"], "FACT")
    claimed = claims.claim_next(ctx, people["alice"], "FACT") if claimed["id"] == candidate["id"] else claimed
    answer = candidates.approve(ctx, people["alice"], claimed["id"])["answer"]
    entry = grey.add(ctx, people["sam"], "Which WMS version is in use?", assignee="sam")
    item = workitems.create(ctx, people["sam"], "Who signs off a dock change?")
    task = tasks.create(ctx, people["alice"], "Backups", "# Backups\n\nBackups are kept 30 days.\n")
    return {"candidate": candidate["id"], "answer": answer["id"], "grey": entry["id"], "workitem": item["id"],
            "task": task["id"]}


def count(superuser) -> int:
    return superuser("SELECT count(*) AS n FROM comments")[0]["n"]


def test_a_comment_on_each_kind_is_listed_in_order_with_its_author(ctx, people, things):
    for kind, entity_id in things.items():
        r2k_json("--as", "bob", "comments", "add", kind, str(entity_id), "--text", f"first on the {kind}")
        r2k_json("--as", "alice", "comments", "add", kind, str(entity_id), "--text", f"second on the {kind}")
    for kind, entity_id in things.items():
        listed = r2k_json("--as", "sam", "comments", "list", kind, str(entity_id))
        assert [(c["author"], c["body"]) for c in listed] == [("bob", f"first on the {kind}"),
                                                              ("alice", f"second on the {kind}")]
    assert {c["entity_type"] for c in r2k_json("--as", "sam", "comments", "list")} == {
        "candidate", "answer", "grey_entry", "work_item", "task"}
    on_tasks = r2k_json("--as", "sam", "comments", "list", "task")
    assert [c["body"] for c in on_tasks] == ["second on the task", "first on the task"]  # newest first


def test_mentions_are_the_known_users_named_and_their_notice_goes_out(ctx, people, things):
    listener = ctx.redis.pubsub(ignore_subscribe_messages=True)
    listener.subscribe("raw_to_knowledge:events")
    made = r2k_json("--as", "alice", "comments", "add", "candidate", str(things["candidate"]), "--text",
                    "Still 30 days, @bob? Ask @sam. (@nobody is no user; mail bob@example.org is no mention.)")
    assert made["mentions"] == ["bob", "sam"]
    heard = []
    deadline = time.monotonic() + 5
    while not heard and time.monotonic() < deadline:
        message = listener.get_message(timeout=0.1)
        if message and json.loads(message["data"])["entity"] == "comment":
            heard.append(json.loads(message["data"]))
    listener.close()
    assert heard == [{"entity": "comment", "id": made["id"], "action": "add", "state": None, "version": 1,
                      "actor": "alice"}]
    assert [c["id"] for c in r2k_json("--as", "bob", "comments", "list", "--mentions", "bob")] == [made["id"]]
    assert r2k_json("--as", "bob", "comments", "list", "--mentions", "vera") == []
    assert comments.mentioned("@ada. And @ben-, @ada again; x@y.z") == ["ada", "ben"]


def test_bad_input_is_a_clear_error_and_stores_nothing(ctx, people, things, superuser):
    cases = [
        (["comments", "add", "candidate", "999999", "--text", "hi"], 3, "no candidate 999999"),
        (["comments", "add", "grey", "abc", "--text", "hi"], 6, "a grey entry id is a number"),
        (["comments", "add", "document", "1", "--text", "hi"], 6, "comments are on candidate, answer, grey"),
        (["comments", "add", "task", str(things["task"]), "--text", "   "], 6, "a comment needs text"),
        (["comments", "add", "task", str(things["task"]), "--text", "x" * 10_001], 6, "at most 10,000"),
        (["comments", "add", "task", str(things["task"]), "--text", "a\x00b"], 6, "NUL"),
        (["comments", "list", "5"], 6, "comments are on candidate"),
        (["comments", "list", "candidate", "--mentions", "zed"], 3, "no user 'zed'"),
    ]
    for args, code, words in cases:
        result = r2k("--as", "bob", *args)
        assert result.returncode == code and words in error_of(result)["message"], (args, result.stderr)
    result = r2k("--as", "nobody", "comments", "add", "task", str(things["task"]), "--text", "hi")
    assert result.returncode == 7
    assert count(superuser) == 0
    with pytest.raises(InvalidInput, match="an id needs its kind"):
        comments.list_comments(ctx, None, 3)


def test_a_repeat_with_its_key_is_one_comment(ctx, people, things, superuser):
    args = ("--as", "bob", "comments", "add", "answer", str(things["answer"]), "--text", "checked with ops",
            "--idempotency-key", "k1")
    first, again = r2k_json(*args), r2k_json(*args)
    assert first == again and count(superuser) == 1
    other = r2k("--as", "bob", "comments", "add", "answer", str(things["answer"]), "--text", "other",
                "--idempotency-key", "k1")
    assert other.returncode == 4 and count(superuser) == 1


def test_an_edited_or_deleted_comment_is_caught_by_replay(ctx, people, things, superuser):
    made = r2k_json("--as", "bob", "comments", "add", "candidate", str(things["candidate"]), "--text", "as written")
    assert r2k("--as", "root", "replay", "--verify").returncode == 0
    superuser("UPDATE comments SET body = 'as the insider prefers' WHERE id = %s", (made["id"],))
    result = r2k("--json", "--as", "root", "replay", "--verify")
    assert result.returncode == 1
    assert [(d["aggregate_type"], d["id"], d["column"], d["from_events"], d["in_table"])
            for d in json.loads(result.stdout)["differences"]] == [
        ("comment", str(made["id"]), "body", "as written", "as the insider prefers")]
    superuser("DELETE FROM comments WHERE id = %s", (made["id"],))
    result = r2k("--json", "--as", "root", "replay", "--verify")
    assert result.returncode == 1
    assert [(d["aggregate_type"], d["id"], d["problem"]) for d in json.loads(result.stdout)["differences"]] == [
        ("comment", str(made["id"]), "events exist but the row is missing")]


def test_stored_controls_are_shown_escaped(ctx, people, things):
    r2k_json("--as", "bob", "comments", "add", "task", str(things["task"]), "--text", "red \x1b[31malert\x07 here")
    shown = r2k("--as", "bob", "comments", "list", "task", str(things["task"])).stdout
    assert "\x1b" not in shown and "\x07" not in shown and "\\x1b[31malert\\x07" in shown
