"""Questions a person would ask (docs/architecture.md, "Documents and extraction"): one row per form
of sentence a real corpus turned into a garbled or templated question, worded anew. Pure: the
fast tier."""
from __future__ import annotations

import pytest

from r2k.core.knowledge.claims import Claim
from r2k.core.knowledge.horn import Form, horn_type
from r2k.core.knowledge.questions import ask, names_of


def question(text: str, heading: tuple[str, ...] = ("Tuning",), kind: str = "paragraph",
             items: tuple[str, ...] = (), ordered: bool = False, intro: str = "") -> str:
    claim = Claim(text, text, 0, len(text), 1, kind, heading, items, ordered, intro)
    return ask(claim, "Handbook", horn_type(Form(text, items, ordered, intro)), names_of(text))


ROWS = [
    # "Note however that" is a label, not the subject: the condition after it is asked.
    ("Note however that if two replicas read from one spool folder, you will need to keep old segments "
     "until both have read them.",
     "What should be done if two replicas read from one spool folder?"),
    # A clause cut at its comma does not leave an "if" open.
    ("Operators who run unsupported kernels should be aware that if they hit crashes, they are on their own.",
     "Should operators who run unsupported kernels be aware?"),
    # A context phrase goes in front of a condition's question, not after it.
    ("By convention, if a folder holds a manifest file, it is a bundle.",
     "By convention, what happens if a folder holds a manifest file?"),
    # "We have to …" is asked with "do", not as "Have we to …?".
    ("In practice, we have to rebuild the index after each import.",
     "Do we have to rebuild the index after each import in practice?"),
    # An example's premise ("say X has …") is no verb of the question.
    ("As an example, say Foolib has a plugin, Barplug, and both of them are already installed.",
     "What does Foolib have?"),
    # An instruction's intro line: how to do it.
    ("To export the audit trail as CSV:", "How do you export the audit trail as CSV?"),
    # "The following is …": what it is, not "what is the following?".
    ("The following is the order in which hooks are called for a request:",
     "What is the order in which hooks are called for a request?"),
    # "It's simply impossible to …" is asked like "It is impossible to …".
    ("Sometimes it's simply impossible to find a layout that fits every screen.",
     "Is it possible to find a layout that fits every screen?"),
    # "Every time X, Y" asks what happens then.
    ("Every time a tenant is archived, the billing service writes a closing invoice.",
     "What happens every time a tenant is archived?"),
    # "… the following X:" asks which X.
    ("Plugins must implement the following hooks:", "What hooks must plugins implement?"),
    # A year after "in" asks when.
    ("The original scheduler was published in 2009 and is long out of date.",
     "When was the original scheduler published?"),
    # A second verb of the subject is a claim of its own, left out of the question.
    ("By default, the daemon does not verify signatures on downloaded bundles and runs their install hooks.",
     "Does the daemon verify signatures on downloaded bundles by default?"),
    # A modal of a "that" clause after the sentence's own verb is not the sentence's.
    ("Caching lowers the chance that a slow mirror will stall the whole build.", "What does caching lower?"),
    # "It is important to note that" is a label; an option opening the sentence is no order.
    ("It is important to note that --force skips the lock while --wait honours it.", "What does --force skip?"),
    # A name with its particle stays a name.
    ("Ada van Houten recommends keeping one scheduler per host.", "What does Ada van Houten recommend?"),
    # A context phrase of up to twelve words stays in the question: what the statement is for.
    ("For jobs which can be retried like `fetch` and `sync`, a negative count can be used to mean forever.",
     "Can a negative count be used to mean forever for jobs which can be retried like fetch and sync?"),
    # "X is that …" asks what X is; "probably" is no part of a yes/no question.
    ("One consequence of the lazy loading of plugins is that\noften, the daemon starts before they are ready.",
     "What is one consequence of the lazy loading of plugins?"),
    ("Even if the session has expired, the token is probably still cached on disk.",
     "Where is the token cached?"),
    # "It is possible for X to Y" asks whether X can Y; "Be careful not to X" is asked as the order it forbids.
    ("It is possible for a stale lock to block the nightly export.", "Can a stale lock block the nightly export?"),
    ("Be careful not to overwrite the shared key by running the setup script twice.",
     "Should you overwrite the shared key by running the setup script twice?"),
    # An adverb after "it is" does not hide the recommendation.
    ("Despite the retries, it is still a good idea to close each session explicitly.",
     "Should you close each session explicitly?"),
    # A plural subject, an adverb, then its verb (and "top" is no "to").
    ("Some storage drivers only support top level folders.", "What do some storage drivers support?"),
    # "Only X should …" asks what should, not which X; "Not all X are Y" asks whether all are.
    ("Only plain files should be placed in the spool folder; anything else is skipped.",
     "What should be placed in the spool folder?"),
    ("Not all mirrors are full mirrors.", "Are all mirrors full mirrors?"),
    # An order and the order not to do something else: one order per question.
    ("Enter the token as the password and do not fill in the user name.",
     "Should you enter the token as the password?"),
    # MyST's {pep} role keeps its name.
    ("The full grammar of version specifiers can be found in {pep}`621`.",
     "Can the full grammar of version specifiers be found in PEP 621?"),
    # A noun of -s after its adjective and before "of"/"to" is no verb: the verb is further on.
    ("Common uses of lock files include pinning builds and auditing what was shipped.",
     "What do common uses of lock files include?"),
    ("The most visible changes to the scheduler are a new queue and a shorter lease.",
     "What are the most visible changes to the scheduler?"),
    # A verb's object clause ("specify which …") is no clause boundary.
    ("You can specify which part of the ticket to match using the match_field option.",
     "Can you specify which part of the ticket to match using the match_field option?"),
    # "never" before the verb is asked with "ever".
    ("A ticket's number never changes once it has been issued.",
     "Does a ticket's number ever change once it has been issued?"),
    # A purpose whose verb the list lacks is asked as what it was made to do.
    ("Lock files were designed to ease reproducing a build on another machine.",
     "What were lock files designed to do?"),
    # An order ending where its command follows is asked as how you do it.
    ("Rebuild the search index by running:", "How do you rebuild the search index?"),
    ("Pin the worker pool like so:", "How do you pin the worker pool?"),
    # A comparison that opens the sentence links it: the condition after it is asked.
    ("Similar to the nightly job, if the sweeper fails to finish, the cache starts to refuse writes.",
     "What happens if the sweeper fails to finish?"),
    # The document speaking of itself is a subject.
    ("This operator guide describes the sweeper and its settings.", "What does this operator guide describe?"),
    # An aside between commas (a name, a participle's phrase) is left out; a list's items are not asides.
    ("The default sweeper, Reaper, uses the access time to pick entries.", "What does the default sweeper use?"),
    ("The flag LAZY, combined with max_age, selects a slower sweep.", "What does the flag LAZY select?"),
    ("Logs, Spools, and caches are swept nightly.", "Are logs, Spools, and caches swept nightly?"),
    # "If there is …" is a condition a reader can ask.
    ("If there is a lock file, then the sweeper waits for the writer to finish.",
     "What happens if there is a lock file?"),
    # "at the" says when only before a time ("at the end of"); else it is what the verb is at.
    ("The sweeper looks at the access times of the entries in each folder.",
     "What does the sweeper look at?"),
    ("The sweeper stops at the end of each night.", "When does the sweeper stop?"),
    # "as part of" says when.
    ("Eviction hooks are called as part of each sweep, before any entry is deleted.",
     "When are eviction hooks called?"),
    # MyST's superscript mark is no word of the question.
    ("{sup}`2` Pinned entries are entries that an administrator marked to keep.",
     "Are pinned entries entries that an administrator marked to keep?"),
    # A phrase of context with no comma before the subject: the sentence is asked whole.
    ("For pinned entries 0 is the oldest age and 1 is the next.",
     "Is it true that for pinned entries 0 is the oldest age and 1 is the next?"),
    # A condition whose main clause gives an option advises.
    ("If the mirror is down, one option is to install from the local wheel cache.",
     "What should be done if the mirror is down?"),
    # "works much like" asks what it works like; "makes it clear that" what it makes clear.
    ("The sweeper works much like a garbage collector: it frees what nothing points to.",
     "What does the sweeper work like?"),
    ("Naming each lock after its table makes it easy to see which one is held.",
     "What does naming each lock after its table make easy?"),
    # "You could try something like:" and its command asks what you could try.
    ("You could try something like:", "What could you try?"),
    # A question does not end on what points at its answer.
    ("We expect the migration to proceed as follows, one region at a time:",
     "Do we expect the migration to proceed?"),
    # A purpose whose main clause says what you need asks for the prerequisite.
    ("In order to sign the exports, you need a key registered with the archive.",
     "What do you need to sign the exports?"),
    # A superlative subject with a participle after its verb is asked by the participle.
    ("The default limits are taken from the site configuration file.",
     "What are the default limits taken from?"),
    # "X is the preferred way to Y" asks for the way; "X is an error when …" asks when.
    ("A lock file is the preferred way to pin a build.", "What is the preferred way to pin a build?"),
    ("A bare await is a syntax error when used outside a coroutine.", "When is a bare await a syntax error?"),
    # "One way to X is to Y" asks for the way.
    ("One way to keep two mirrors in step is to sync them from the same snapshot every night.",
     "What is one way to keep two mirrors in step?"),
]


@pytest.mark.parametrize("text,expected", ROWS, ids=[row[0][:40] for row in ROWS])
def test_question_of_a_sentence(text, expected):
    assert question(text) == expected


def test_a_procedure_under_a_how_to_heading_asks_how():
    items = ("Stop the scheduler.", "Copy the spool folder.", "Start the scheduler again.")
    text = "\n".join(f"{n}. {item}" for n, item in enumerate(items, 1))
    assert question(text, heading=("How to move the spool",), kind="list", items=items, ordered=True) == \
        "How do you move the spool?"


def test_a_procedure_under_a_heading_that_asks_is_asked_by_its_intro_or_the_heading():
    items = ("Exports first.", "Imports next.", "Active code last.")
    intro = "Ada Lovelace suggests performing steps in the following order in each module:"
    text = intro + "\n\n" + "\n".join(f"- {item}" for item in items)
    claim = Claim(text, text, 0, len(text), 1, "list", ("How can modules import each other?",), items, False, intro)
    assert horn_type(Form(text, items, False, intro)) == "PROCEDURE"
    assert ask(claim, "Handbook", "PROCEDURE", names_of(text)) == "What does Ada Lovelace suggest?"
    intro = "There are two factors that produce this result:"
    claim = Claim(text, text, 0, len(text), 1, "list", ("Why is the build slow?",), items, True, intro)
    assert ask(claim, "Handbook", "PROCEDURE", names_of(text)) == "Why is the build slow?"


@pytest.mark.parametrize("intro,expected", [
    # a list whose intro is a noun phrase (no verb of its own) asks what the list holds
    ("Some unsafe layouts that have been proposed:", "What are some unsafe layouts that have been proposed?"),
    # an intro that states something is asked by what it states
    ("The sweeper removes these kinds of entries:", "What does the sweeper remove?"),
])
def test_a_lists_intro_is_asked_by_what_it_says(intro, expected):
    items = ("Entries older than a week.", "Entries whose owner is gone.")
    text = intro + "\n\n" + "\n".join(f"- {item}" for item in items)
    assert question(text, kind="list", items=items, intro=intro) == expected


def test_a_one_word_order_heading_a_list_asks_what():
    items = ("the sweeper", "the archiver")
    text = "Restart:\n\n- the sweeper\n- the archiver"
    assert question(text, kind="list", items=items, intro="Restart:") == "What should you restart?"
