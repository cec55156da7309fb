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
from r2k.core.context import Context
from r2k.core.demo import __file__ as demo_init
from r2k.core.extract import extract
from r2k.core.knowledge.ranking import Ranking
from r2k.core.services import candidates, claims, generation, ingest, retrieval, workitems
from r2k.core.services.extractive import extractive, select, supports
from r2k.core.services.ingest import HEADING_SEPARATOR, sections_of
from tests.conftest import on_database, r2k, r2k_json
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
    return Context(ctx.settings.model_copy(update={"llm_url": url, "llm_retries": 0}), pool_size=2)


def citations(text: str) -> list[int]:
    return [int(n) for n in re.findall(r"\[(\d+)\]", text)]


# ----------------------------------------------------------------------------- retrieval (services)

def test_the_headcount_question_finds_the_headcount_section_first(demo):
    sources = retrieval.retrieve(demo, HEADCOUNT)
    assert len(sources) >= 2  # grounded: it does not escalate no_content
    best = sources[0]
    assert (best["title"], best["heading"]) == ("Harbor Logistics Company Overview", "Headcount")
    assert "620 people" in best["text"]  # a section its text never names: found by its heading


def test_a_heading_match_outranks_a_stray_word_and_sources_carry_their_section(demo):
    sources = retrieval.retrieve(demo, PPE)
    assert sources[0]["heading"] == "Personal protective equipment"
    assert all(s["kind"] == "passage" and s["title"] and "span_start" in s for s in sources)
    assert sources == sorted(sources, key=lambda s: -s["rank"]) or sources[-1].get("related")


def test_odd_questions_retrieve_without_an_error(demo):
    for question in ["", "the of", "a' | b & !c <-> d:*", "'''", "\\' headcount:A & !", "x" * 6000,
                     "C:\\temp\\ /usr/lo\\cal foo\\ \\\\ a\\'b", "e-mail@x.org/\\ http://h/a\\b?c='d'"]:
        assert isinstance(retrieval.retrieve(demo, question), list)  # tsquery syntax is never passed through
    assert retrieval.retrieve(demo, "\U0001f600 headcount?")[0]["heading"] == "Headcount"  # a symbol weighs little


def test_a_lexeme_of_any_characters_is_one_tsquery_operand(ctx):
    with ctx.db.read() as tx:  # a backslash or a quote never ends the operand early (a syntax error: a 500)
        for lexeme in ["a\\", "o'brien", "x\\'y", "a|b&!c:*", "\\\\"]:
            tx.scalar("SELECT to_tsquery('simple', %s)::text", (retrieval._quoted(lexeme),))


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

    from r2k.core import embedded, migrations

    superuser = embedded.superuser_url(services)
    name = f"r2k_before_0008_{os.getpid()}"
    with psycopg.connect(on_database(superuser, "postgres"), autocommit=True) as admin:
        admin.execute(f"DROP DATABASE IF EXISTS {name}")
        admin.execute(f"CREATE DATABASE {name}")
    url = on_database(superuser, name)
    try:
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
    finally:
        if services.database_url:  # the embedded cluster is removed whole (DROP DATABASE forces a checkpoint)
            with psycopg.connect(on_database(superuser, "postgres"), autocommit=True) as admin:
                admin.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")
    assert kept == len(documents) and all(title for _, title, _, _ in rows)
    assert ("Harbor Logistics Company Overview", "Headcount") in {(t, h) for _, t, h, _ in rows}
    jsonl = [(heading, text) for media, _, heading, text in rows if media == "application/jsonl"]
    assert jsonl and all(heading.endswith("?") and heading != text for heading, text in jsonl)


# ----------------------------------------------------------------------------- the escalation reason

def test_the_validators_escalation_reason_is_on_the_work_item_and_in_the_prompt(demo, people):
    reason = "the 600 figure may be out of date: say which year it is from"
    # Not the handbook's own sentence: a passage holding the escalated text is never its answer's source.
    candidates.add(demo, people["root"], HEADCOUNT, "The company employs about 600 people.", "FACT")
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
    assert "[1] (Harbor Logistics Company Overview \u203a Headcount) The company employs about 620 people" in prompt
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
    paragraph = "Each paragraph of this long section says something about the dock rules. " * 6
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
    # The default weighs a heading as the text (bench/retrieval.py measured 1.3 losing a top-1 with
    # vectors on); a heavier heading weight still ranks the section above the same words in its text.
    heavier = Ranking(heading_weight=1.3)
    assert retrieval.score(asked, section, heavier)[0] > retrieval.score(asked, phrase, heavier)[0]
    assert retrieval.score(asked, section)[0] == retrieval.score(asked, phrase)[0]
    assert retrieval.score(asked, phrase)[0] > retrieval.score(asked, scattered)[0]
    assert retrieval.score(asked, scattered)[1] == 1.0 and retrieval.score(asked, stray)[1] == pytest.approx(2 / 3)
    assert retrieval.score(asked, stray)[0] < retrieval.score(asked, scattered)[0]


def test_a_rare_term_weighs_more_than_a_common_one():
    assert retrieval.idf(300, 1) > retrieval.idf(300, 40) > retrieval.idf(300, 300) > 0
    assert retrieval.idf(300, 0) == retrieval.idf(300, 1)


# ----------------------------------------------------------------------------- pure: the extractive generator

def test_the_extractive_answer_quotes_the_best_section_and_leaves_stray_words_out():
    answer = extractive(PPE, PPE_SOURCES).text
    assert answer == ("Everyone on the warehouse floor wears safety shoes with toe caps and a high-visibility vest. "
                      "[1] Hard hats are issued at the racking maintenance area and at the container unloading "
                      "bays. [1]")


def test_a_headed_section_answers_even_when_its_sentences_share_no_word_with_the_question():
    sources = [{"title": "Overview", "heading": "Headcount", "text": "The company employs about 620 people."},
               {"title": "Overview", "heading": "Company profile", "related": True,
                "text": "Harbor Logistics is a contract logistics company."}]
    assert extractive(HEADCOUNT, sources).text == "The company employs about 620 people. [1]"


def test_another_source_adds_a_sentence_only_when_it_has_most_of_the_question():
    question = "How long are nightly database backups kept?"
    sources = [{"heading": "Backup retention", "text": "Nightly database backups are retained for 30 days."},
               {"heading": "Storage", "text": "Database backups run nightly at two. They are kept encrypted."},
               {"heading": "Restore test", "text": "The monthly restore test reads the nightly database backups."}]
    chosen = select(question, sources)
    assert chosen[0] == (1, "Nightly database backups are retained for 30 days.")
    # One sentence from another source at most, and one with most of the question's telling words.
    assert chosen[1:] == [(2, "Database backups run nightly at two.")]


def test_a_list_is_quoted_item_by_item_with_one_citation():
    sources = [{"heading": "Spill response", "text": "1. Stop traffic in the aisle.\n2. Collect the spill kit."},
               {"heading": "Other", "text": "Unrelated words about other things entirely."}]
    assert extractive("What are the steps for spill response?", sources).text == (
        "1. Stop traffic in the aisle.\n2. Collect the spill kit. [1]")


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
