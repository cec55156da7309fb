"""Retrieval by section, the extractive generator on topic, and the validator's escalation reason on
the work item and in the LLM's prompt: over the demo corpus, on the session's real servers. The
pure parts (sections, scoring, the extractive selection, the prompt) run in the fast tier."""
from __future__ import annotations

import importlib
import os
import re
from pathlib import Path

import pytest

from r2k.core.adapters.llm import build_prompt
from r2k.core.bootstrap import bootstrap
from r2k.core.context import Context
from r2k.core.demo import __file__ as demo_init
from r2k.core.knowledge.extract import extract
from r2k.core.knowledge.ranking import Ranking, asks_elsewhere, unknown
from r2k.core.services.answering import generation, workitems
from r2k.core.services.documents import ingest
from r2k.core.services.documents.ingest import HEADING_SEPARATOR, sections_of
from r2k.core.services.queue import claims
from r2k.core.services.search import retrieval
from r2k.core.services.search.extractive import extractive, select, sentences, supports
from r2k.core.services.validation import candidates
from tests.conftest import r2k, r2k_json, scratch_databases
from tests.llm_server import ChatServer

CORPUS = Path(demo_init).parent / "corpus"
HEADCOUNT = "What is established about headcount?"
PPE = "What rule applies to personal protective equipment?"

PPE_SOURCES = [  # what retrieval hands the generator for PPE, best first (from the demo corpus)
    {"kind": "passage", "title": "Warehouse Safety Rules", "heading": "Personal protective equipment",
     "text": "Everyone on the warehouse floor wears safety shoes with toe caps and a high-visibility vest. Hard "
             "hats are issued at the racking maintenance area and at the container unloading bays."},
    {"kind": "passage", "title": "Warehouse Safety Rules", "heading": "Headphones on the floor",
     "text": "Wearing personal headphones or earbuds on the warehouse floor is prohibited; the only exception is "
             "hearing protection issued by the Safety Officer."},
    {"kind": "passage", "title": "Data Retention Policy", "heading": "Policy purpose",
     "text": "This policy sets how long Harbor Logistics keeps business and personal data and who approves its "
             "deletion. The Data Protection Officer owns the policy."},
]


@pytest.fixture
def demo(ctx, people):
    ingest.ingest(ctx, people["root"], [CORPUS])
    with ctx.db.begin() as tx:  # the Horn queues to what each test adds
        tx.execute("UPDATE candidates SET state = 'REJECTED'")
    ctx.redis.flushdb()
    return ctx


def with_llm(ctx: Context, url: str) -> Context:
    return bootstrap(ctx.settings.model_copy(update={"llm_url": url, "llm_retries": 0}), pool_size=2)


def citations(text: str) -> list[int]:
    return [int(n) for n in re.findall(r"\[(\d+)\]", text)]


# ----------------------------------------------------------------------------- retrieval (services)

def test_the_headcount_question_finds_the_headcount_section_first(demo, people):
    sources = retrieval.retrieve(demo, HEADCOUNT)
    best = sources[0]
    assert (best["title"], best["heading"]) == ("Harbor Logistics Company Overview", "Headcount")
    assert "620 people" in best["text"]  # a section its text never names: found by its heading
    # Only that section supports an answer; the passages near it are context, marked `related`, and
    # never count as the second source an answer needs: the item escalates no_content.
    assert sources[1:] and all(s.get("related") for s in sources[1:])
    item = workitems.create(demo, people["sam"], HEADCOUNT)
    assert generation.generate_answer(demo, item["id"])["reason"] == "no_content"


def test_a_heading_match_outranks_a_stray_word_and_sources_carry_their_section(demo):
    sources = retrieval.retrieve(demo, PPE)
    assert sources[0]["heading"] == "Personal protective equipment"
    assert all(s["kind"] == "passage" and s["title"] and "span_start" in s for s in sources)
    # The sources best first; context passages (`related`), if any, only after them.
    found = [s for s in sources if not s.get("related")]
    assert len(found) >= 2 and [s["rank"] for s in found] == sorted((s["rank"] for s in found), reverse=True)
    assert sources[:len(found)] == found


def test_the_grey_automation_counts_sources_as_generation_does(demo, people):
    from r2k.core.services.grey_entries import grey

    # The headcount section alone supports an answer (the rest is related context): the entry waits
    # for a source instead of resolving into a work item that would escalate no_content straight back.
    alone = grey.add(demo, people["root"], HEADCOUNT)
    outcome = grey.process(demo, alone["id"], force=True)
    assert (outcome["outcome"], outcome["sources"]) == ("retrying", 1)
    answered = grey.add(demo, people["root"], PPE)
    assert grey.process(demo, answered["id"], force=True)["outcome"] == "resolved"


def test_odd_questions_retrieve_without_an_error(demo):
    for question in ["", "the of", "a' | b & !c <-> d:*", "'''", "\\' headcount:A & !", "x" * 6000,
                     "C:\\temp\\ /usr/lo\\cal foo\\ \\\\ a\\'b", "e-mail@x.org/\\ http://h/a\\b?c='d'"]:
        assert isinstance(retrieval.retrieve(demo, question), list)  # tsquery syntax is never passed through
    assert retrieval.retrieve(demo, "\U0001f600 headcount?")[0]["heading"] == "Headcount"  # a symbol weighs little


def test_a_lexeme_of_any_characters_is_one_tsquery_operand(ctx):
    # A backslash or a quote never ends the operand early (a syntax error: a 500), and the operand is
    # the lexeme as stored, whatever its characters: one node that finds the lexeme and nothing else.
    # A hyphenated lexeme (pip's `--keyring-provider` stems to `keyring-provid`) is found too.
    odd = "C:\\temp\\ a\\'b e-mail@x.org/\\ http://h/a\\b?c='d' o'brien --keyring-provider"
    with ctx.db.read() as tx:
        stored = [r["lexeme"] for r in tx.all("SELECT lexeme FROM unnest(to_tsvector('english', %s))", (odd,))]
        assert "keyring-provid" in stored
        lexemes = stored + ["a\\", "o'brien", "x\\'y", "a|b&!c:*", "\\\\", "'", ":*"]
        for lexeme in lexemes:
            got = tx.one("SELECT numnode(q) AS nodes, array_to_tsvector(ARRAY[%(l)s]) @@ q AS finds, "
                         "array_to_tsvector(ARRAY['other', 'a']) @@ q AS strays "
                         "FROM (SELECT " + retrieval._OPERAND.format(x="%(l)s::text") + " AS q) x", {"l": lexeme})
            assert (got["nodes"], got["finds"], got["strays"]) == (1, True, lexeme == "a"), lexeme
        # The query for any of them (the feedback terms'): each lexeme finds it, another does not.
        any_of = retrieval._ANY_OF.format(x="%(all)s::text[]")
        for lexeme in lexemes:
            found = tx.scalar("SELECT array_to_tsvector(ARRAY[%(l)s]) @@ " + any_of, {"l": lexeme, "all": lexemes})
            assert found, lexeme
        assert not tx.scalar("SELECT array_to_tsvector(ARRAY['other']) @@ " + any_of, {"all": lexemes})


def test_a_question_about_what_the_corpus_never_names_has_no_sources(demo, people):
    # The demo corpus never names Snowflake: its own backups' retention is not what is asked, and the
    # item escalates no_content rather than quoting it.
    question = "How long are backups kept in Snowflake?"
    assert retrieval.retrieve(demo, question) == []
    quoted = retrieval.retrieve(demo, question, ranking=Ranking(unknown_share=2.0))  # the rule off: it quoted them
    assert len(generation.grounding(question, quoted)) >= 2 and "Backup retention" in [s["heading"] for s in quoted]
    item = workitems.create(demo, people["sam"], question)
    assert generation.generate_answer(demo, item["id"])["reason"] == "no_content"
    # A known question with one word the corpus lacks is still answered from it.
    assert retrieval.retrieve(demo, "What rule applies to personal protective equipment, please?")[0]["heading"] \
        == "Personal protective equipment"


def test_a_question_the_corpus_does_not_answer_escalates_exactly_no_content(demo, people):
    item = workitems.create(demo, people["sam"], "What is on the canteen menu on Fridays?")
    outcome = generation.generate_answer(demo, item["id"])
    assert (outcome["outcome"], outcome["reason"]) == ("escalated", "no_content")
    assert workitems.get(demo, item["id"])["reason"] == "no_content"


def test_the_ppe_answer_is_on_topic_and_cited(demo, people):
    item = workitems.create(demo, people["sam"], PPE)
    outcome = generation.generate_answer(demo, item["id"])  # no LLM: the extractive generator
    assert outcome["outcome"] == "generated"
    (gen,) = workitems.show(demo, item["id"])["generated"]
    assert gen["model"] == "extractive"
    assert "safety shoes with toe caps" in gen["text"]
    for stray in ("headphones", "earbuds", "retention", "personal data"):
        assert stray not in gen["text"].lower()
    cited = citations(gen["text"])
    assert cited and cited[0] == 1 and max(cited) <= len(gen["sources"])
    assert gen["sources"][0]["heading"] == "Personal protective equipment"


def test_an_upgraded_data_dir_is_reindexed_by_section(demo, superuser):
    # As 0007 left them: a passage per paragraph, no title, no heading.
    superuser("DELETE FROM source_passages")
    for document in superuser("SELECT id, path, content FROM source_documents WHERE media_type = 'text/markdown'"):
        doc = extract(Path(document["path"]), document["content"])
        for ordinal, (start, end, text) in enumerate(doc.passages):
            superuser("INSERT INTO source_passages (document_id, ordinal, span_start, span_end, text) "
                      "VALUES (%s, %s, %s, %s, %s)", (document["id"], ordinal, start, end, text))
    assert retrieval.retrieve(demo, HEADCOUNT) == []  # what the issue saw: no_content
    migration = importlib.import_module("r2k.core.migrations.versions.0008_knowledge_retrieval")
    import psycopg

    from r2k.core import embedded

    with psycopg.connect(embedded.superuser_url(demo.settings)) as conn:
        migration.reindex(conn)
    assert superuser("SELECT count(*) AS n FROM source_passages WHERE heading = ''")[0]["n"] == 0
    assert retrieval.retrieve(demo, HEADCOUNT)[0]["heading"] == "Headcount"


def test_migration_0008_reindexes_a_data_dir_of_0007_by_section(demo, services):
    """A database at 0007 holding documents, their passages as 0007 stored them, brought to head by
    the migrations themselves: every passage titled, sections headed, a JSON Lines answer headed by
    its question, nothing lost."""
    import psycopg

    from r2k.core import migrations

    name = f"r2k_before_0008_{os.getpid()}"
    with scratch_databases(services, name) as (url,):
        migrations.upgrade(url, "0007")
        with demo.db.read() as tx:
            documents = tx.all("SELECT id, path, title, media_type, content, content_hash, created_by "
                               "FROM source_documents")
            # JSON Lines are stored as "question\nanswer" blocks, a passage per answer: as ingest keeps them.
            answers = {d["id"]: [(r["span_start"], r["span_end"], r["text"]) for r in tx.all(
                "SELECT span_start, span_end, text FROM source_passages WHERE document_id = %s ORDER BY ordinal",
                (d["id"],))] for d in documents if d["media_type"] == "application/jsonl"}
        with psycopg.connect(url) as conn:
            for d in documents:
                document_id = conn.execute(
                    "INSERT INTO source_documents (path, title, media_type, content, content_hash, created_by, "
                    "created_at, updated_at) VALUES (%s, %s, %s, %s, %s, %s, now(), now()) RETURNING id",
                    (d["path"], d["title"], d["media_type"], d["content"], d["content_hash"], d["created_by"]),
                ).fetchone()[0]
                passages = answers.get(d["id"]) or extract(Path(d["path"]), d["content"]).passages
                for ordinal, (start, end, text) in enumerate(passages):
                    conn.execute("INSERT INTO source_passages (document_id, ordinal, span_start, span_end, text) "
                                 "VALUES (%s, %s, %s, %s, %s)", (document_id, ordinal, start, end, text))
        migrations.upgrade(url, "head")
        with psycopg.connect(url) as conn:
            rows = conn.execute("SELECT d.media_type, p.title, p.heading, p.text FROM source_passages p "
                                "JOIN source_documents d ON d.id = p.document_id").fetchall()
            kept = conn.execute("SELECT count(DISTINCT document_id) FROM source_passages").fetchone()[0]
    assert kept == len(documents) and all(title for _, title, _, _ in rows)
    assert ("Harbor Logistics Company Overview", "Headcount") in {(t, h) for _, t, h, _ in rows}
    jsonl = [(heading, text) for media, _, heading, text in rows if media == "application/jsonl"]
    assert jsonl and all(heading.endswith("?") and heading != text for heading, text in jsonl)


def test_migration_0025_fills_the_term_index_of_a_database_made_before_and_keeps_it_in_step(ctx, services):
    """A database at 0023 holding passages (one of an older version) gets each passage's terms with
    their weights; a passage written, re-headed or deleted after keeps its terms in step (the trigger)."""
    import psycopg

    from r2k.core import migrations

    name = f"r2k_before_0025_{os.getpid()}"

    def terms(conn, passage: int) -> dict:
        return dict(conn.execute("SELECT lexeme, weight FROM passage_terms WHERE passage_id = %s", (passage,)))

    with scratch_databases(services, name) as (url,):
        migrations.upgrade(url, "0023")
        with psycopg.connect(url) as conn:
            document = conn.execute(
                "INSERT INTO source_documents (path, title, media_type, content, content_hash, created_by, "
                "created_at, updated_at, location) VALUES ('a.md', 'Forklift Manual', 'text/markdown', 'x', 'h', "
                "'root', now(), now(), 'a.md') RETURNING id").fetchone()[0]
            ids = [conn.execute(
                "INSERT INTO source_passages (document_id, ordinal, span_start, span_end, text, title, heading, "
                "current) VALUES (%s, %s, 0, 1, %s, 'Forklift Manual', %s, %s) RETURNING id",
                (document, n, text, heading, current)).fetchone()[0]
                for n, (text, heading, current) in enumerate([
                    ("Forklift drivers renew the forklift licence yearly.", "Forklift licence", True),
                    ("Old text about the licence.", "Licence", False)])]
        migrations.upgrade(url, "head")
        with psycopg.connect(url) as conn:
            # title (A) 10 + heading (B) 4 + text twice (D) 1 each; "licenc": heading 4 + text 1
            assert terms(conn, ids[0]) == {"forklift": 16, "manual": 10, "licenc": 5, "driver": 1,
                                           "renew": 1, "year": 1}
            assert terms(conn, ids[1])["licenc"] == 5
            assert conn.execute("SELECT count(*) FROM passage_terms WHERE passage_id <> ALL(%s)",
                                (ids,)).fetchone()[0] == 0
            conn.execute("UPDATE source_passages SET heading = 'Training' WHERE id = %s", (ids[0],))
            assert terms(conn, ids[0]) == {"forklift": 12, "manual": 10, "train": 4, "licenc": 1, "driver": 1,
                                           "renew": 1, "year": 1}
            added = conn.execute(
                "INSERT INTO source_passages (document_id, ordinal, span_start, span_end, text, title, heading) "
                "VALUES (%s, 2, 0, 1, 'Pallets weigh little.', 'Forklift Manual', 'Pallets') RETURNING id",
                (document,)).fetchone()[0]
            assert terms(conn, added) == {"pallet": 5, "weigh": 1, "littl": 1, "forklift": 10, "manual": 10}
            conn.execute("DELETE FROM source_passages WHERE id = %s", (added,))
            assert terms(conn, added) == {}


def test_the_first_pass_ranks_as_cover_density_does_and_leaves_older_versions_out(demo, superuser):
    """The term index's sums are ts_rank_cd's cover density for a query of any of the question's terms
    (each position a cover of one), so the `wide` found by words are the ones it would find."""
    questions = [HEADCOUNT, PPE, "How long are invoices kept?", "Who approves deletion of personal data?"]
    seen = 0
    for question in questions:
        with demo.db.read() as tx:
            mine = tx.all(retrieval.LEXICAL, {"question": question, "wide": 1000, "exclude": None,
                                              "answers": False, "passages": True})
            theirs = tx.all(
                "WITH " + retrieval._FROM_QUESTION + " SELECT p.id, ts_rank_cd(p.heading_search || p.search, q.q) "
                "AS rank FROM source_passages p, q WHERE (p.search @@ q.q OR p.heading_search @@ q.q) AND p.current",
                {"question": question})
        assert len(mine) == len(theirs) >= 1
        seen += len(mine)
        rank = {r["id"]: float(r["rank"]) for r in theirs}
        assert all(abs(float(r["rank"]) - rank[r["id"]]) < 1e-5 for r in mine), question
    assert seen > 10
    stale = superuser("SELECT id FROM source_passages WHERE heading = 'Personal protective equipment'")[0]["id"]

    def found() -> set:
        with demo.db.read() as tx:
            return {r["id"] for r in tx.all(retrieval.LEXICAL, {"question": PPE, "wide": 1000, "exclude": None,
                                                                "answers": False, "passages": True})}
    before = found()
    superuser("UPDATE source_passages SET current = false WHERE id = %s", (stale,))
    assert stale in before and found() == before - {stale}


def test_the_hits_without_positions_rank_as_with_them(demo, people):
    # The default (no phrase bonus) reads only which of the question's terms each candidate has; with a
    # phrase weight, their positions too. The same terms in the same places either way, so the same
    # scores: for passages and for an approved answer (its question is its heading).
    candidates.add(demo, people["root"], "How long are nightly backups kept?", "Nightly backups are kept for 30 days.",
                   "FACT")
    claimed = claims.claim_next(demo, people["alice"], "FACT")
    candidates.approve(demo, people["alice"], claimed["id"])
    kinds = set()
    for question in [HEADCOUNT, PPE, "How long are nightly backups kept?", "Who approves deletion of personal data?",
                     "Can an operator give a colleague a ride on a forklift?"]:
        with demo.db.read() as tx:
            terms, _ = retrieval.rank(tx, question)
            asked = tx.embeddings.question(tx, question)
            params = {"question": question, "cap": retrieval.COUNT_CAP, "wide": 50, "exclude": None, "answers": True,
                      "passages": True, "nearest": 20, "vector": asked[0]}
            read = {positions: sorted(tx.all(retrieval.hybrid_sql(asked[1], positions), params),
                                      key=lambda r: (r["kind"], r["id"])) for positions in (True, False)}
        assert [(r["kind"], r["id"]) for r in read[True]] == [(r["kind"], r["id"]) for r in read[False]]
        for with_positions, without in zip(read[True], read[False]):
            a, b = retrieval._hits(with_positions), retrieval._hits(without)
            assert (set(a.body), set(a.heading), set(a.title)) == (set(b.body), set(b.heading), set(b.title))
            assert retrieval.score(terms, a) == retrieval.score(terms, b)
            if set(b.body) | set(b.heading):
                kinds.add(without["kind"])
    assert kinds == {"passage", "answer"}  # the approved answer was found by its words too


# ----------------------------------------------------------------------------- the escalation reason

def test_the_validators_escalation_reason_is_on_the_work_item_and_in_the_prompt(demo, people):
    reason = "the helmet rule may be out of date: say which year it is from"
    # Not the handbook's own sentence: a passage holding the escalated text is never its answer's source.
    candidates.add(demo, people["root"], PPE, "Everyone on the floor wears a helmet.", "FACT")
    claimed = claims.claim_next(demo, people["alice"], "FACT")
    item = candidates.escalate(demo, people["alice"], claimed["id"], reason)["work_item"]

    shown = r2k_json("--as", "sam", "workitems", "show", str(item["id"]))
    assert (shown["state"], shown["escalation_reason"], shown["candidate_id"]) == ("NEW", reason, claimed["id"])
    from r2k.app.screens.workitems import render_item

    assert reason in render_item(workitems.show(demo, item["id"])).plain  # the work items screen's detail

    with ChatServer() as llm:
        live = with_llm(demo, llm.url)
        try:
            outcome = generation.generate_answer(live, item["id"])
        finally:
            live.close()
        (prompt,) = llm.prompts
    assert outcome["outcome"] == "generated"
    assert f"Why a validator escalated it: {reason}" in prompt
    assert "[1] (Warehouse Safety Rules \u203a Personal protective equipment) Everyone on the warehouse floor" in prompt
    assert "[2] (" in prompt
    assert workitems.show(demo, item["id"])["generated"][0]["prompt"] == prompt


def test_an_item_made_by_hand_has_no_escalation_reason_and_a_refused_escalation_changes_nothing(demo, people):
    item = workitems.create(demo, people["sam"], HEADCOUNT)
    assert workitems.get(demo, item["id"])["escalation_reason"] is None
    candidates.add(demo, people["root"], HEADCOUNT, "The company employs about 620 people.", "FACT")
    claimed = claims.claim_next(demo, people["alice"], "FACT")
    result = r2k("--as", "alice", "candidates", "escalate", str(claimed["id"]), "--reason", "x" * 5000)
    assert result.returncode == 6 and "reason" in result.stderr
    assert [i["id"] for i in workitems.list_items(demo)] == [item["id"]]  # no item opened


# ----------------------------------------------------------------------------- pure: the index

def test_sections_carry_their_heading_path_and_a_qa_pair_its_question():
    doc = extract(Path("guide.md"), "# Guide\n\nIntro paragraph that says what the guide covers.\n\n## Staff\n\n"
                                    "The site employs forty people in two shifts.\n\nSecond paragraph about the "
                                    "staff rota here.\n\n### Night\n\nThe night shift has six people on it.\n\n"
                                    "## Common questions\n\nQ: Are visitors escorted?\nA: Visitors are escorted "
                                    "at all times on site.\n\n## Gaps\n\nSee appendix B.\n")
    got = [(s.heading, s.text) for s in sections_of(doc)]
    assert got == [
        ("", "Intro paragraph that says what the guide covers."),
        ("Staff", "The site employs forty people in two shifts.\n\nSecond paragraph about the staff rota here."),
        (f"Staff{HEADING_SEPARATOR}Night", "The night shift has six people on it."),
        (f"Common questions{HEADING_SEPARATOR}Are visitors escorted?", "Visitors are escorted at all times on site."),
    ]  # "See appendix B." states nothing: not indexed
    for section in sections_of(doc):
        assert doc.content[section.start:section.end].endswith(section.text.splitlines()[-1])


def test_plain_text_and_json_lines_sections():
    text = extract(Path("notes.txt"), "Night Notes\n\nSTAFFING\n\nThe night shift runs from ten to six daily.\n\n"
                                      "Slot booking:\n\nCarriers book their slots on the carrier page.\n")
    assert [(s.heading, s.text[:20]) for s in sections_of(text)] == [("Staffing", "The night shift runs"),
                                                                     ("Slot booking", "Carriers book their ")]
    lines = extract(Path("faq.jsonl"), '{"question": "How long are chats kept?", "answer": "Chats are kept for two '
                                       'years in Helm."}\n')
    (section,) = sections_of(lines)
    assert (section.heading, section.text) == ("How long are chats kept?", "Chats are kept for two years in Helm.")
    assert ingest.jsonl_heading(lines.content, section.start) == "How long are chats kept?"


def test_a_long_section_is_split_and_each_part_keeps_the_heading():
    paragraph = "Every dock door is inspected by the dock supervisor at the start of a shift. " * 6
    doc = extract(Path("long.md"), "# Long\n\n## Docks\n\n" + "\n\n".join([paragraph.strip()] * 6) + "\n")
    parts = sections_of(doc)
    assert len(parts) > 1 and {p.heading for p in parts} == {"Docks"}
    assert all(len(p.text) <= ingest.SECTION_CHARS for p in parts)


# ----------------------------------------------------------------------------- pure: ranking

def terms(*pairs) -> list[retrieval.Term]:
    return [retrieval.Term(lexeme, position, weight) for lexeme, position, weight in pairs]


def test_a_heading_match_scores_as_its_weight_says_and_phrases_count():
    asked = terms(("person", 5, 2.0), ("protect", 6, 2.0), ("equip", 7, 2.0))
    section = retrieval.Hits(body={}, heading={"person": [2], "protect": [3], "equip": [4]}, title={})
    stray = retrieval.Hits(body={"person": [2], "protect": [30]}, heading={}, title={})
    phrase = retrieval.Hits(body={"person": [2], "protect": [3], "equip": [4]}, heading={}, title={})
    scattered = retrieval.Hits(body={"person": [2], "protect": [20], "equip": [40]}, heading={}, title={})
    # The default weighs a heading 1.3 (bench/retrieval.py: the real set's recall and top-1 gain);
    # at 1.0 the section scores as the same words in its text.
    assert retrieval.score(asked, section)[0] > retrieval.score(asked, phrase)[0]
    level = Ranking(heading_weight=1.0)
    assert retrieval.score(asked, section, level)[0] == retrieval.score(asked, phrase, level)[0]
    # The phrase bonus is off by default (it cost the real sets); with a weight, adjacent terms score more.
    assert retrieval.score(asked, phrase)[0] == retrieval.score(asked, scattered)[0]
    phrases = Ranking(phrase_weight=0.5)
    assert retrieval.score(asked, phrase, phrases)[0] > retrieval.score(asked, scattered, phrases)[0]
    assert retrieval.score(asked, scattered)[1] == 1.0 and retrieval.score(asked, stray)[1] == pytest.approx(2 / 3)
    assert retrieval.score(asked, stray)[0] < retrieval.score(asked, scattered)[0]


def test_the_cosine_counts_beside_the_words_and_the_fused_ranks():
    def candidate(key, score, similarity):
        return retrieval.Candidate(("passage", key), {}, score=score, coverage=score, similarity=similarity)

    # Two passages with the question's words alike: the one nearer in meaning ranks first; with
    # similarity_weight 0 the fused ranks alone decide, and a far one with more words still wins.
    words, meaning = candidate(1, 0.60, 0.30), candidate(2, 0.50, 0.70)
    assert [c.key[1] for c in retrieval.order([words, meaning])] == [2, 1]
    assert [c.key[1] for c in retrieval.order([words, meaning], Ranking(similarity_weight=0.0))] == [1, 2]
    lexical_only = candidate(3, 0.60, None)  # no vector (no pgvector, or not embedded): its words only
    assert retrieval.order([lexical_only])[0].final == pytest.approx(0.60 + 0.5 * 1.0)


def test_a_question_mostly_of_names_no_passage_has_asks_elsewhere():
    def term(lexeme, weight, df):
        return retrieval.Term(lexeme, 0, weight, df)

    # "What is the maximum size of a Redis key?": `redi` no passage has, 0.42 of the weight, and the
    # question names it: the corpus speaks of something else, no passage is a source however near.
    question = "What is the maximum size of a Redis key?"
    redis = [term("maximum", 1.0, 40), term("size", 1.0, 60), term("redi", 2.5, 0), term("key", 1.4, 30)]
    assert unknown(redis, question) == pytest.approx(2.5 / 5.9)
    assert asks_elsewhere(redis, question)
    assert not asks_elsewhere(redis, question, Ranking(unknown_share=0.5))
    # A name a third of the question's weight is enough: the question's other words ("port", "default")
    # are the corpus's own, and its nearest passages answer them about another product.
    cassandra = [term("port", 1.2, 20), term("cassandra", 2.5, 0), term("use", 0.3, 300), term("default", 3.0, 80)]
    assert unknown(cassandra, "Which port does Cassandra use by default?") == pytest.approx(2.5 / 7.0)
    assert asks_elsewhere(cassandra, "Which port does Cassandra use by default?")
    # A plain word the corpus lacks is another wording, not another subject: "Can an operator give a
    # colleague a ride on a forklift?" is the demo corpus's, though it never says "ride".
    ride = [term("oper", 1.0, 9), term("colleagu", 2.5, 0), term("ride", 2.5, 0), term("forklift", 1.5, 12)]
    assert unknown(ride, "Can an operator give a colleague a ride on a forklift?") == 0.0
    # A name the corpus has is no sign; a stem whose y became i still names its word ("Hardy").
    assert unknown([term("sqlite", 2.0, 3), term("page", 1.0, 9)], "What is the page size of SQLite?") == 0.0
    assert unknown([term("hardi", 2.0, 0), term("page", 2.0, 9)], "What did Hardy write?") == pytest.approx(0.5)
    assert unknown([term("much", 0.5, 0), term("ram", 2.0, 5)], "How MUCH RAM?") == 0.0  # a word of asking
    assert unknown([], "") == 0.0


def test_the_best_source_may_be_the_second_ranked_when_the_first_does_not_ground_an_answer():
    from r2k.core.knowledge.ranking import choose

    def candidate(key, coverage, similarity):
        return retrieval.Candidate(("passage", key), {}, score=coverage, coverage=coverage, similarity=similarity)

    # First by its words and rank, but it covers 0.4 of the question and is far in meaning: it grounds
    # nothing as the best must. The second covers 0.8: it is the best source, the first may follow it.
    stray, answers, weak = candidate(1, 0.40, 0.20), candidate(2, 0.80, 0.50), candidate(3, 0.10, 0.10)
    assert [c.key[1] for c in choose([stray, answers, weak], 5)] == [2, 1]
    assert choose([stray, answers, weak], 5, Ranking(best_within=1)) == []  # the first or none, as before
    assert choose([stray, weak, answers], 5) == []  # only the best two are looked at
    assert choose([], 5) == []


def test_the_vector_side_asks_no_more_neighbours_than_the_hnsw_scan_returns():
    # pgvector's HNSW scan returns at most hnsw.ef_search rows (40 unless set): `nearest` past it
    # would be cut silently, and the bench's rows for it would measure nothing.
    assert 0 < Ranking().nearest <= 40


def test_a_rare_term_weighs_more_than_a_common_one():
    assert retrieval.idf(300, 1) > retrieval.idf(300, 40) > retrieval.idf(300, 300) > 0
    assert retrieval.idf(300, 0) == retrieval.idf(300, 1)


# ----------------------------------------------------------------------------- pure: the extractive generator

def test_the_extractive_answer_quotes_the_section_the_question_names_and_leaves_stray_words_out():
    answer = extractive(PPE, PPE_SOURCES).text
    assert answer == ("Everyone on the warehouse floor wears safety shoes with toe caps and a high-visibility vest. "
                      "[1] Hard hats are issued at the racking maintenance area and at the container unloading "
                      "bays. [1]")


def test_a_headed_section_answers_even_when_its_sentences_share_no_word_with_the_question():
    sources = [{"title": "Overview", "heading": "Headcount", "text": "The company employs about 620 people."},
               {"title": "Overview", "heading": "Company profile", "related": True,
                "text": "Harbor Logistics is a contract logistics company."}]
    assert extractive(HEADCOUNT, sources).text == "The company employs about 620 people. [1]"


def test_the_answer_is_taken_from_any_source_and_from_anywhere_in_a_section():
    question = "How many days are nightly database backups kept?"
    sources = [{"heading": "Backups", "text": "Nightly database backups run at two. They go to the Frankfurt "
                                              "region. Operators check the job each morning."},
               {"heading": "Storage", "text": "Storage is encrypted at rest. The racks are in hall B. Nightly "
                                              "database backups are kept for thirty days."},
               {"heading": "Canteen", "text": "The canteen opens at seven."}]
    chosen = select(question, sources)
    # The sentence that answers is the third of the second source: quoted, and cited [2].
    assert (2, "Nightly database backups are kept for thirty days.") in chosen
    assert all(number != 3 for number, _ in chosen)  # nothing of the question in it
    assert "thirty days. [2]" in extractive(question, sources).text
    assert chosen == sorted(chosen, key=lambda c: c[0])  # quoted in source order


def test_a_word_and_its_short_forms_meet():
    from r2k.core.services.search.extractive import stem, terms

    # "ends" and "end", "maps" and "map", "saved" and "save", "excluded" and "exclude": one term each,
    # where the stem cut only a longer word's ending; "class" and "classes" too, and "class" is no plural.
    for forms in (["end", "ends"], ["map", "maps"], ["save", "saved"], ["exclude", "excluded", "excludes"],
                  ["class", "classes"], ["user", "users"], ["define", "defined"], ["exceed", "exceeds", "exceeded"],
                  ["speed", "speeds"]):
        assert len({stem(f) for f in forms}) == 1, forms
    assert stem("class") == "class" and stem("access") == "access"
    assert terms("the exception is cleared at the end") >= {stem("ends")}


def test_the_sentence_with_the_questions_short_forms_is_chosen():
    # "What does defining __slots__ save?": the sentence that says what is saved has "saved".
    question = "What does defining __slots__ save?"
    sources = [{"heading": "__slots__", "text": "__slots__ allow us to explicitly declare data members. The space "
                                                "saved over using __dict__ can be significant. Attribute lookup "
                                                "speed can be significantly improved as well."},
               {"heading": "Notes on using __slots__", "text": "When inheriting from a class without __slots__, "
                                                               "the __dict__ attribute is always accessible."}]
    assert "The space saved over using __dict__ can be significant. [1]" in extractive(question, sources).text


def test_a_definitions_sentence_is_quoted_with_its_term():
    question = "How much memory does the server use for shared buffers by default?"
    sources = [{"heading": "Memory", "text": "shared_buffers (integer): Sets the amount of memory the database "
                                             "server uses for shared memory buffers. The default is typically "
                                             "128 megabytes (128MB). This parameter can only be set at server "
                                             "start.\ntemp_buffers (integer): Sets the maximum amount of memory "
                                             "used for temporary buffers within each database session."},
               {"heading": "Disk", "text": "temp_file_limit (integer): Specifies the maximum amount of disk "
                                           "space that a process can use for temporary files."}]
    answer = extractive(question, sources).text
    assert "shared_buffers (integer): The default is typically 128 megabytes (128MB). [1]" in answer


def test_a_list_item_is_quoted_with_its_intro():
    question = "Which hash algorithms are refused?"
    sources = [{"heading": "Hashes", "text": "Some hash algorithms are refused:\n\n- md5 is refused as weak\n"
                                             "- sha1 is refused as weak\n\nsha256 is the recommended algorithm."},
               {"heading": "Other", "text": "Hashes are checked for every requirement."}]
    chosen = select(question, sources)
    assert chosen[0] == (1, "Some hash algorithms are refused:")  # the intro once, before its items
    assert (1, "- md5 is refused as weak") in chosen and (1, "- sha1 is refused as weak") in chosen
    assert [text for _, text in chosen].count("Some hash algorithms are refused:") == 1


def test_every_item_of_a_list_is_quoted_with_its_intro_none_taken_for_a_repeat_of_it():
    # An item is scored with its intro's words; "- Crates" beside the intro is no repeat of it.
    sources = [{"heading": "Storage", "text": "There are three different ways to store widgets:\n\n- Crates\n"
                                              "- Shelves\n- Cold rooms\n\nEach suits a different widget."},
               {"heading": "Other", "text": "Widgets are counted weekly."}]
    assert extractive("What are the three ways to store widgets?", sources).text == (
        "There are three different ways to store widgets:\n- Crates\n- Shelves\n- Cold rooms [1]")


def test_a_sentence_that_refers_back_is_quoted_with_the_one_it_follows():
    # "Currently that includes …" shares no word with the question: it is about what the sentence
    # before it is about, and holds the answer, against six sentences that name the option.
    question = "Which platforms support the frobnicate option?"
    sources = [{"heading": "Frobnicate", "text": (
        "The frobnicate option is available only on platforms whose kernel offers the splice call. Currently that "
        "includes Linux and FreeBSD.\n\nThe frobnicate option is off unless the server is told otherwise.\n\n"
        "Setting the frobnicate option takes effect at the next restart.\n\nA platform without splice logs a "
        "warning when the frobnicate option is set.\n\nThe frobnicate option may be changed by superusers only."
        "\n\nPlatform packagers may build with the frobnicate option compiled out.")},
               {"heading": "Other", "text": "Unrelated words about other things entirely."}]
    answer = extractive(question, sources).text
    assert answer.startswith("The frobnicate option is available only on platforms whose kernel offers the splice "
                             "call. [1] Currently that includes Linux and FreeBSD. [1]")


def test_a_hard_wrapped_paragraph_is_read_as_its_sentences():
    text = "pip's caching behaviour is disabled by passing the\n`--no-cache-dir` option.\n\n- one item\n  wrapped"
    assert sentences(text) == ["pip's caching behaviour is disabled by passing the `--no-cache-dir` option.",
                               "- one item wrapped"]


def test_a_list_is_quoted_item_by_item_with_one_citation():
    sources = [{"heading": "Spill response", "text": "1. Stop traffic in the aisle.\n2. Collect the spill kit."},
               {"heading": "Other", "text": "Unrelated words about other things entirely."}]
    assert extractive("What are the steps for spill response?", sources).text == (
        "1. Stop traffic in the aisle.\n2. Collect the spill kit. [1]")


def test_a_related_passage_is_context_never_a_source():
    question = "How long are nightly database backups kept?"
    found = [{"kind": "passage", "heading": "Backup retention", "text": "Nightly database backups are kept for 30 days."},
             {"kind": "passage", "heading": "Backup site", "related": True,
              "text": "The backup site is in Frankfurt and holds the nightly database backups."}]
    assert generation.grounding(question, found) == found[:1]  # one source: the item escalates no_content
    assert all(number == 1 for number, _ in select(question, found))


def test_a_sentence_that_leaves_its_matter_undecided_is_never_quoted():
    question = "Will the telematics units score operator driving behaviour?"
    sources = [{"heading": "Telematics", "text": "It is not yet decided whether the telematics units will score "
                                                 "operator driving behaviour. The units log every lift."},
               {"heading": "Works council", "text": "Telematics scores of operator driving behaviour remain to be "
                                                    "decided by the works council."}]
    assert select(question, sources) == [(1, "The units log every lift.")]


def test_a_source_that_only_says_the_matter_is_undecided_supports_no_answer():
    question = "Will the telematics units score operator driving behaviour?"
    undecided = {"text": "It is not yet decided whether the telematics units will score operator behaviour. "
                         "Is it allowed at all?"}
    assert not supports(question, undecided)
    assert supports(question, {"text": "Telematics units score operator driving behaviour from May."})
    assert not supports(question, {"text": "The canteen opens at seven."})  # settles something, not this
    assert supports(question, {"heading": "Telematics", "text": "The units log every lift."})  # its heading


def test_nothing_to_quote_gives_an_empty_answer():
    assert extractive(PPE, []).text == "" and select(PPE, [{"heading": "", "text": "  "}]) == []


def test_the_prompt_names_the_escalation_reason_and_each_sources_section():
    prompt = build_prompt("Q?", [{"title": "Doc", "heading": "Part", "text": "A fact."},
                                 {"title": "Registry answer 4", "heading": None, "text": "Another."}],
                          escalation_reason="check the year")
    assert prompt.splitlines()[:2] == ["Question: Q?", "Why a validator escalated it: check the year"]
    assert "[1] (Doc \u203a Part) A fact." in prompt and "[2] (Registry answer 4) Another." in prompt
    assert "escalated" not in build_prompt("Q?", [{"title": "Doc", "text": "A fact."}])


def test_adjacent_positions_are_found_as_by_looking_at_every_pair():
    """The phrase bonus's test (ranking.adjacent) looks only at the next position after each one: the
    same answer as every pair, on lists in any order."""
    import random

    from r2k.core.knowledge.ranking import adjacent

    rng = random.Random(27)
    for _ in range(5000):
        first = [rng.randint(0, 30) for _ in range(rng.randint(0, 6))]
        second = [rng.randint(0, 30) for _ in range(rng.randint(0, 6))]
        within = rng.randint(1, 4)
        every_pair = any(0 < q - p <= within for p in first for q in second)
        assert adjacent(first, second, within) is every_pair, (first, second, within)
