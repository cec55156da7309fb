"""Horn types by logical form (docs/architecture.md, "Documents and extraction"): one row per rule of
core/knowledge/horn.py's table that a real corpus got wrong, worded anew. Pure: the fast tier."""
from __future__ import annotations

import pytest

from r2k.core.knowledge.horn import Form, horn_type

ROWS = [
    # An if / when statement of what follows is a RULE, "if any" included ("if any," alone is elliptic).
    ("If any of the mirrors goes offline for some reason, it is swapped out for the spare.", "RULE"),
    ("Each time a tenant is archived, the billing service writes a closing invoice.", "RULE"),
    # A condition whose main clause asks is an example's question, not what follows.
    ("If the queue holds ten jobs, how many does each worker take? Each of the two takes five.", "FACT"),
    # A condition inside a description is not one: an alternative value, a relative clause, an "if" of "whether".
    ("owner_ref is the account that opened the ticket, or None if the ticket came in by mail.", "FACT"),
    ("The gateway offers a hook, which lets you register a handler that runs when a packet arrives.", "FACT"),
    ("Some mail clients poll the server twice while checking if a login is required, so double entries "
     "in the access log are harmless.", "FACT"),
    # A recommendation worded as the best way, a passive need, "may only", "you could consider" are RULEs.
    ("The simplest way is to pin every dependency in a lock file.", "RULE"),
    ("A lock file is the recommended way to freeze a build.", "RULE"),
    ("The suggested approach is to build the wheel once and copy it to each host.", "RULE"),
    ("The plugin loader needs to be upgraded before the plugins themselves.", "RULE"),
    ("continue may only appear inside a loop body.", "RULE"),
    ("In that case you could consider splitting the archive in two.", "RULE"),
    ("It is often useful to prune stale branches before a release.", "RULE"),
    # An instruction ("To X:" and its command) and a method's contract ("Should return …") are RULEs.
    ("To rotate the signing keys:", "RULE"),
    ("Called to resize the widget. Should return the new preferred width in pixels.", "RULE"),
    # A prohibition: an adverb between the modal and its "never", "it is unwise to", "be careful not to", an error when.
    ("Callers should generally never cache the session token.", "CONSTRAINT"),
    ("It is unwise to store the passphrase next to the key.", "CONSTRAINT"),
    ("Be careful not to commit the generated secrets file.", "CONSTRAINT"),
    ("A bare await is a syntax error when used outside an async function.", "CONSTRAINT"),
    # Two orders in order ("first …, and then …") are a PROCEDURE.
    ("To rotate a log, first make sure the writer is paused, and then move the file aside.", "PROCEDURE"),
    # A suggestion ("you could try"), "it’s best to" with a typographic apostrophe, a best way "is usually to".
    ("You could also try a shallow clone of the repository.", "RULE"),
    ("To parse large logs quickly, it’s best to stream them line by line.", "RULE"),
    ("For small deployments, the easiest approach is usually to run everything on one host.", "RULE"),
    # A sentence wholly in brackets is read as itself, its condition included.
    ("(If the mirror is unreachable, you can still install from the local wheel cache.)", "RULE"),
    # An order whose object is a bare plural and a place; a noun phrase opening a description is no order.
    ("Declare constants at the top of the settings module.", "RULE"),
    ("Import statements in a package run once per interpreter.", "FACT"),
    # "may be <participle>" with a time or a frequency says what can happen; without, it grants.
    ("More columns may be added to the export in the future.", "FACT"),
    ("The index may be scanned several times for a single report.", "FACT"),
    ("Stale lock files may be removed by the operator.", "RULE"),
    # An order whose verb takes "with": "Start with …".
    ("To learn the settings, start with the operator guide.", "RULE"),
    # An order after a colon: "X offers a better way: keep one …".
    ("Lock files offer a simpler way: keep one lock file per service and commit it.", "RULE"),
    ("Recovery works like a replay: the server reads each segment in order.", "FACT"),
    # "It is important to note that" describes: no obligation.
    ("It is important to note that the index is rebuilt nightly.", "FACT"),
    # What is possible is no permission.
    ("You may also find that the cache grows after an upgrade.", "FACT"),
    ("Slow disks may reduce the effective throughput considerably.", "FACT"),
]


@pytest.mark.parametrize("text,expected", ROWS, ids=[row[0][:40] for row in ROWS])
def test_horn_type_by_logical_form(text, expected):
    assert horn_type(Form(text)) == expected


def test_a_method_definition_with_a_contract_is_a_rule():
    """A definition whose term is a call signature: its later sentences' obligations are its contract."""
    term = "Widget.measure(self, hint)"
    text = f"{term}: Called to size the widget. The result must be a pair of integers."
    assert horn_type(Form(text, term=term)) == "RULE"
    assert horn_type(Form(f"{term}: Called to size the widget. The result is cached.", term=term)) == "FACT"
