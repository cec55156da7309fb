"""The pure knowledge package (the fast tier, no server): every reader on small documents of its
format made here, the claims cut from them, their questions and Horn types, and the files that
cannot be read, each with a clear reason (docs/architecture.md, "Documents and extraction")."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from r2k.core.domain import formats, limits
from r2k.core.knowledge import horn
from r2k.core.knowledge.claims import leans_back, sentences, split_claims
from r2k.core.knowledge.documents import LEANING, NAVIGATION
from r2k.core.knowledge.extract import BINARY, READERS, ExtractError, extract, sections_of
from tests import documents

# ----------------------------------------------------------------------------- Markdown


def units_by_topic(doc) -> dict[str, list]:
    out: dict[str, list] = {}
    for unit in doc.units:
        out.setdefault(unit.topic, []).append(unit)
    return out


def test_markdown_code_lists_definitions_footnotes_and_tables_are_what_they_are():
    doc = extract(Path("dock-manual.md"), documents.MARKDOWN.encode())
    assert doc.title == "Dock manual" and doc.media_type == "text/markdown"
    by = units_by_topic(doc)
    # A `# line` inside a fenced block is code, not a heading: no section is named after it.
    assert set(by) == {"Starting the conveyor", "Upgrading the firmware", "Keys", "Glossary", "Notes", "Sizes"}
    assert all(s.heading[-1:] != ("Start the belt",) for s in doc.document.sections)
    # The paragraph broken by the code block is one claim, the code its context, the lower-case rest with it.
    (start,) = by["Starting the conveyor"]
    assert start.text.startswith("Run the start script") and start.text.endswith("green lamp is lit.")
    assert "./start-belt --slow" in start.text
    # A loose numbered list of steps is one PROCEDURE.
    (upgrade,) = by["Upgrading the firmware"]
    assert upgrade.horn_type == "PROCEDURE" and upgrade.text.count("\n\n") == 2
    assert upgrade.question == "How do you upgrade the firmware?"
    # An intro line keeps the list it introduces; its obligation makes a RULE.
    (keys,) = by["Keys"]
    assert keys.text.startswith("The following keys must") and "`SLOW` halves" in keys.text
    assert keys.horn_type == "RULE" and keys.question == "Which keys must have the specified meaning?"
    # A definition keeps its term.
    (term,) = by["Glossary"]
    assert term.text.startswith("100-999") and "Dynamically allocated" in term.text
    assert term.question == "What is meant by 100-999?"
    # The footnote goes with the sentence that cites it, and is no candidate of its own.
    (note,) = by["Notes"]
    assert note.horn_type == "CONSTRAINT" and "2019 safety audit" in note.text
    assert not any(u.text.startswith("This rule comes") for u in doc.units)
    # A two-column table is context; a row that reads as one statement is a FACT.
    assert [u.text for u in by["Sizes"]] == ["North belt: runs forty metres from the dock to the store",
                                            "South belt: runs twelve metres from the dock to the wrapper"]
    # Front matter is context: never a candidate.
    assert not any("owner: ops" in u.text for u in doc.units)
    for unit in doc.units:  # each span is where its text is (a table's row: its line), for the review's highlight
        shown = doc.content[unit.span[0]:unit.span[1]]
        assert shown in unit.text or all(cell in shown for cell in unit.text.split(": ", 1))
        assert unit.line == doc.content.count("\n", 0, unit.span[0]) + 1


def test_a_huge_table_is_skipped_with_its_line_and_the_rest_goes_in():
    rows = "\n".join(f"| row {i} | " + "word " * 40 + "|" for i in range(200))
    content = "# Big\n\n## Intro\n\nThe yard opens at six every morning of the week.\n\n## Table\n\n| a | b |\n|---|---|\n" + rows
    doc = extract(Path("big.md"), content)
    assert [u.text for u in doc.units][:1] == ["The yard opens at six every morning of the week."]
    assert doc.skipped and all(line == 9 for line, _ in doc.skipped)
    assert all(re.match(r"an answer is at most 20,000 characters", why) for _, why in doc.skipped) or \
        all(len(u.text) <= limits.ANSWER for u in doc.units)
    assert all(len(s.text) <= limits.ANSWER for s in sections_of(doc))


def test_one_paragraph_over_the_limit_is_skipped_with_its_line_and_the_rest_goes_in():
    content = "# Long\n\n## Gates\n\nGate four closes at ten every night.\n\n## Words\n\n" + "word " * 5_000 + "\n"
    doc = extract(Path("long.md"), content)
    assert [u.text for u in doc.units] == ["Gate four closes at ten every night."]
    assert doc.skipped == [(9, "an answer is at most 20,000 characters; this one has 24,999")]


def test_markup_navigation_symbols_and_bare_headings_are_dropped_and_counted():
    doc = extract(Path("junk.md"), "# Junk\n\n## Empty heading\n\n## Real\n\nThe gate closes at ten every night.\n\n"
                                  "<div class=\"x\">\n\n</div>\n\n---\n\n\u2022\n\nNext\n\nSee section 4.\n\n"
                                  "Gates close early.\n")
    assert [u.text for u in doc.units] == ["The gate closes at ten every night."]
    assert [f.text for f in doc.fragments] == ["Gates close early."]  # a sentence too short to answer
    assert doc.dropped == {"heading without a body": 1, "lone symbols": 1, "markup": 2, "navigation": 2}


# ----------------------------------------------------------------------------- HTML

SPHINX = b"""<!DOCTYPE html><html><head><meta charset="utf-8"><title>Guide &#8212; Docs</title>
<script>var x = 1;</script><style>p {}</style></head><body>
<a class="skip-link" href="#main">Skip to main content</a>
<header><nav><a href="/">Home</a> <a href="/docs">Docs</a></nav></header>
<div class="related"><ul><li><a href="a.html">previous</a></li><li><a href="b.html">next</a></li></ul></div>
<div class="document"><div class="body" role="main">
<section id="guide"><h1>Guide<a class="headerlink" href="#guide">\xc2\xb6</a></h1>
<p>The gate <em>closes</em> at ten every night of the week.</p>
<section><h2>Steps<a class="headerlink" href="#s">\xc2\xb6</a></h2>
<p>To open the gate:</p><ol><li><p>Swipe the badge.</p></li><li><p>Push the bar.</p></li></ol>
<div class="admonition note"><p class="admonition-title">Note</p><p>Visitors must not open the gate alone.</p></div>
<dl class="py function"><dt>open_gate(<em>badge</em>)</dt><dd><p>Opens the gate for one badge holder.</p></dd></dl>
<pre># not a heading
open_gate(badge)</pre>
<table><tr><th>Gate</th><th>Hours</th></tr><tr><td>North</td><td>from six to ten every day</td></tr></table>
</section></section></div></div>
<div class="sphinxsidebar"><h3>Table of Contents</h3><ul><li><a href="#">Guide</a></li></ul></div>
<aside><p>Sponsored: buy our gates, the best gates in the world.</p></aside>
<footer><p>Copyright 2024, the gate team. All rights reserved.</p></footer></body></html>"""


def test_html_keeps_the_main_content_without_navigation_and_boilerplate():
    doc = extract(Path("guide.html"), SPHINX)
    assert doc.title == "Guide" and doc.media_type == "text/html"
    texts = [u.text for u in doc.units]
    assert texts[0] == "The gate closes at ten every night of the week."
    steps = next(u for u in doc.units if u.horn_type == "PROCEDURE")
    assert steps.text == "To open the gate:\n\n1. Swipe the badge.\n2. Push the bar." and \
        steps.question == "How do you open the gate?"
    assert next(u for u in doc.units if "Visitors" in u.text).horn_type == "CONSTRAINT"
    assert next(u for u in doc.units if u.text.startswith("open_gate(badge)")).question == "What does open_gate() do?"
    stored = doc.content
    for gone in ("Skip to main content", "Home", "previous", "Table of Contents", "Sponsored", "Copyright",
                 "var x", "\u00b6", "Note\n"):
        assert gone not in stored, gone
    assert "```\n# not a heading" in stored  # code stays code in the stored text
    assert all(s.heading[-1:] != ("not a heading",) for s in doc.document.sections)
    assert doc.dropped["navigation"] >= 4 and doc.dropped["markup"] == 2
    for unit in doc.units:
        shown = stored[unit.span[0]:unit.span[1]]
        assert shown == unit.text or all(cell in shown for cell in unit.text.split(": ", 1))


def test_html_in_a_declared_charset_is_read_and_undeclared_bad_bytes_are_refused():
    latin = "<html><head><meta charset=\"iso-8859-1\"></head><body><p>Le caf\u00e9 ouvre \u00e0 sept heures chaque matin.</p></body></html>"
    assert "caf\u00e9" in extract(Path("cafe.html"), latin.encode("latin-1")).units[0].text
    with pytest.raises(ExtractError, match="not UTF-8 text"):
        extract(Path("bad.html"), b"<p>caf\xe9 opens at seven every morning</p>")


# ----------------------------------------------------------------------------- reStructuredText

def test_rst_reads_sections_lists_definitions_and_footnotes_and_never_a_local_file(tmp_path, capsys):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET LINE")
    source = f"""=====
Gates
=====

Opening
=======

The following rules apply:

* Visitors must sign in.
* Drivers must wear a vest.

Badge
   A card that opens the gates.

Night
-----

Gates close at ten every night [#]_.

.. [#] Since the 2020 audit.

.. include:: {secret}

.. raw:: html
   :file: {secret}

.. code-block:: python

   # not a heading
   open_gate()

.. unknown-directive:: whatever
"""
    doc = extract(Path("gates.rst"), source)
    assert doc.title == "Gates" and doc.media_type == "text/x-rst"
    assert "TOP SECRET" not in doc.content and all("TOP SECRET" not in u.text for u in doc.units)
    assert capsys.readouterr().err == ""  # docutils' reports go nowhere
    by = units_by_topic(doc)
    (rules,) = by["Opening"][:1]
    assert rules.text == "The following rules apply:\n\n- Visitors must sign in.\n- Drivers must wear a vest." and \
        rules.horn_type == "RULE"
    assert any(u.text == "Badge: A card that opens the gates." for u in by["Opening"])
    (night,) = by["Night"]
    assert night.text.startswith("Gates close at ten every night.") and "Since the 2020 audit." in night.text
    assert next(s for s in doc.document.sections if s.heading == ("Opening", "Night"))


# ----------------------------------------------------------------------------- PDF and Word

def test_pdf_text_layer_is_read_into_headings_paragraphs_and_lists():
    raw = documents.pdf([["Gate manual", "1 Opening hours", "The north gate opens at six every", "morning of the week.",
                          "", "2 Steps", "1. Swipe the badge at the reader.", "2. Push the bar to open it."],
                         ["Gate manual", "3 Rules", "Visitors must never open the gate alone."],
                         ["Gate manual", "4 Night", "The gate is locked at ten every night."]])
    doc = extract(Path("gates.pdf"), raw)
    assert doc.media_type == "application/pdf"
    texts = {u.topic: u for u in doc.units}
    assert texts["1 Opening hours"].text == "The north gate opens at six every morning of the week."
    assert texts["2 Steps"].horn_type == "PROCEDURE"
    assert texts["3 Rules"].horn_type == "CONSTRAINT"
    assert "Gate manual" not in doc.content  # a line repeated on every page is a running head
    # Found by its first bytes whatever its name says.
    assert extract(Path("gates.bin"), raw).media_type == "application/pdf"


@pytest.mark.parametrize("make,words", [
    (lambda: documents.blank_pdf(), "no text layer"),
    (lambda: documents.encrypted(documents.pdf([["A secret statement about the gates at night."]])), "encrypted"),
    (lambda: b"%PDF-1.4 garbage that is no PDF at all", "not a PDF pypdf can read"),
])
def test_a_pdf_that_cannot_be_read_is_refused_with_its_reason(make, words):
    with pytest.raises(ExtractError, match=words):
        extract(Path("bad.pdf"), make())


def test_word_paragraphs_headings_lists_and_tables_are_read_by_their_styles():
    def build(d):
        d.add_heading("Gate manual", 0)
        d.add_heading("Opening", 1)
        d.add_paragraph("The north gate opens at six every morning of the week.")
        d.add_paragraph("To open the gate:")
        d.add_paragraph("Swipe the badge at the reader.", style="List Number")
        d.add_paragraph("Push the bar to open the gate.", style="List Number")
        d.add_heading("Rules", 1)
        d.add_paragraph("Visitors must not open the gate alone at night.")
        table = d.add_table(rows=2, cols=2)
        table.rows[0].cells[0].text, table.rows[0].cells[1].text = "Gate", "Hours"
        table.rows[1].cells[0].text, table.rows[1].cells[1].text = "North", "from six to ten every day"

    doc = extract(Path("gates.docx"), documents.docx(build))
    assert doc.title == "Gate manual"
    by = units_by_topic(doc)
    assert [u.horn_type for u in by["Opening"]] == ["FACT", "PROCEDURE"]
    assert by["Opening"][1].text == "To open the gate:\n\n1. Swipe the badge at the reader.\n2. Push the bar to open the gate."
    assert [u.horn_type for u in by["Rules"]] == ["CONSTRAINT", "FACT"]  # the rule, and the table's row
    assert "| North | from six to ten every day |" in doc.content


# Ids of their own: a zip made at collection holds its time, so pytest-xdist's workers, collecting a
# second apart, would name the case differently and refuse to run the suite.
@pytest.mark.parametrize("raw,words", [
    (b"PK\x03\x04 not a zip at all", "not a readable zip"),
    (documents.zip_bomb(0), "no word/document.xml"),
], ids=["not-a-zip", "no-document-part"])
def test_a_word_file_that_cannot_be_read_is_refused_with_its_reason(raw, words):
    if words == "no word/document.xml":
        import io
        import zipfile

        out = io.BytesIO()
        with zipfile.ZipFile(out, "w") as archive:
            archive.writestr("hello.txt", "hi")
        raw = out.getvalue()
    with pytest.raises(ExtractError, match=words):
        extract(Path("bad.docx"), raw)


def test_a_zip_bomb_is_refused_before_it_is_unpacked():
    with pytest.raises(ExtractError, match="unpacks to at most 64 MB"):
        extract(Path("bomb.docx"), documents.zip_bomb(65 * 2**20))


# ----------------------------------------------------------------------------- text, JSON Lines, bad files

def test_json_lines_skip_a_malformed_line_with_its_number_and_keep_the_good_ones():
    doc = extract(Path("faq.jsonl"), '{"question": "Who signs refunds?", "answer": "The support lead signs refunds."}\n'
                                     '{"question": "Broken", \n'
                                     '{"question": "When are refunds paid?", "answer": "Within five days.", '
                                     '"horn_type": "FACT"}\n')
    assert [u.question for u in doc.units] == ["Who signs refunds?", "When are refunds paid?"]
    assert [u.line for u in doc.units] == [1, 3]
    assert doc.skipped == [(2, "malformed JSON: Expecting property name enclosed in double quotes at column 24")]


@pytest.mark.parametrize("name,raw,words", [
    ("empty.md", b"", "nothing to review"),
    ("blank.pdf", b"", "an empty file"),
    ("binary.md", bytes(range(256)), "not UTF-8 text"),
    ("latin.txt", "caf\u00e9 au lait every morning".encode("latin-1"), "not UTF-8 text (byte 0xe9 at offset 3)"),
    ("nul.md", b"# a\n\nThe gate\x00 closes.\n", "NUL"),
    ("sheet.odt", b"x", "unsupported file type .odt"),
])
def test_a_bad_file_is_refused_with_a_clear_reason(name, raw, words):
    with pytest.raises(ExtractError, match=re.escape(words)):
        extract(Path(name), raw)


def test_the_formats_the_help_lists_are_the_ones_read():
    assert set(READERS) == set(formats.SUFFIXES) and BINARY == {s for s, (_, b) in READERS.items() if b}


# ----------------------------------------------------------------------------- claims and questions

def test_a_long_paragraph_is_split_where_a_sentence_stands_alone():
    text = ("The north gate opens at six every morning. It closes at ten. Visitors must sign in at the gatehouse. "
            "This applies to drivers too. The yard has fourteen docks.")
    parts = [text[a:b] for a, b in split_claims(text)]
    assert parts == ["The north gate opens at six every morning. It closes at ten.",
                     "Visitors must sign in at the gatehouse. This applies to drivers too.",
                     "The yard has fourteen docks."]
    assert split_claims("One claim. And its reason.") == [(0, 26)]  # short: one claim
    # a sentence pointing back ("this class object") stays with the one it points at
    text = ("A class definition is an executable statement. It first evaluates the inheritance list. "
            "The class name is bound to this class object in the local namespace. Classes are objects too.")
    assert [text[a:b] for a, b in split_claims(text)][1:] == ["Classes are objects too."]


def test_questions_are_specific_and_distinct_without_templates():
    content = "# Yard\n\n" + "".join(f"## Gate {n}\n\nThe gate closes at ten every night.\n\n" for n in range(3))
    content += "## Rules\n\nPedestrians must not cross the yard.\n\nVisitors must sign in at the gatehouse.\n\n" \
               "If the alarm sounds, leave by the nearest exit.\n\nNightly backups are kept for 14 days.\n"
    doc = extract(Path("yard.md"), content)
    questions = [u.question for u in doc.units]
    assert questions[3:] == ["May pedestrians cross the yard?", "Must visitors sign in at the gatehouse?",
                             "What should be done if the alarm sounds?", "How long are nightly backups kept?"]
    # The same statement under three headings: told apart by its section.
    assert questions[:3] == ["Gate 0: when does the gate close?", "Gate 1: when does the gate close?",
                             "Gate 2: when does the gate close?"]
    assert not any(re.match(r"What (is established about|rule applies to)", q) for q in questions)


@pytest.mark.parametrize("paragraph,introduces,leans", [
    # opens on what came before it
    ("Another is to concatenate a regular string to the raw string.", False, True),
    ("On the other hand, if global was required for all references, you would use it all the time.", False, True),
    ("Or you can use the numeric constants 0, 1 and 2.", False, True),
    ("Elsewhere, _ is a regular identifier.", False, True),
    ("In fact, it can be better because a specification cannot test every property.", False, True),
    ("(b) When I read code that says len(x) I know it asks for a length.", False, True),
    ("Yes.", False, True),
    ("As with removing duplicates, iterating in reverse is one possibility.", False, True),
    # its first sentence points back
    ("The first time you call this function, mydict contains a single item.", False, True),
    ("There are several possible reasons for this.", False, True),
    ("The default is the first method in the above list that the platform supports.", False, True),
    ("Hexadecimal is just as easy.", False, True),
    ("In such a case the recovery process could be re-run from the beginning.", False, True),
    ("There is no similar exception for backup manifests.", False, True),
    ("The result is then formatted using the format() protocol.", False, True),
    ("This explicit declaration is required in order to remind you that you modify the variable:", True, True),
    ("If it were to go unvacuumed for longer than that, data loss could result.", False, True),
    ("Second, it means that no special syntax is necessary.", False, True),
    ("This will result in:", True, True),
    ("The preceding statement is not true on Microsoft Windows.", False, True),
    ("Let’s say you have an object x and want to change one of its methods.", False, True),
    ("You can achieve the desired effect in a number of ways.", False, True),
    ("We make every effort to ensure that such situations happen rarely.", False, True),
    ("The practical implication of that is that some situations stay slow.", False, True),
    ("You can then use isinstance() to check whether a class implements an ABC.", False, True),
    ("The hash code is then used to calculate a location in an internal array.", False, True),
    ("One is to use the freeze tool, which is included in the source tree.", False, True),
    ("Answer 2: Fortunately, there is Stackless Python.", False, True),
    ("I had a number of gripes about the ABC language.", False, True),
    ("Chat transcripts are deleted at the end of that period.", False, False),
    ("The drawback of this procedure is that it depends on the client.", False, True),
    ("The first is done by executing chmod +x scriptfile.", False, True),  # one of a series named before
    ("Any other keyword arguments are passed through to all metaclass operations.", False, True),
    # an intro line that points back before its last words
    ("All of these immutable classes have a different signature than their parent class:", True, True),
    ("Invoking an unbound method in this way is avoided by bypassing the instance when looking up methods:", True, True),
    ("A custom object to do the same would look like this:", True, True),
    ("The simplest way to write it is like this:", True, False),
    # an intro line announcing an example: the example of the claim before it
    ("Here is a simple example that demonstrates the behavior of generators:", True, True),
    ("Some examples of floating point literals:", True, True),
    ("For example:", True, True),
    ("Here are the rules:", True, False),
    ("In order to remind you of that fact, it does not return the sorted list.", False, True),
    ("If recovery finds corrupted WAL data, recovery will halt at that point.", False, False),  # within the sentence
    ("For int operands, the result is an int unless the exponent is negative; in that case it is a float.", False, False),
    ("An iterator is created for that iterable.", False, True),  # a demonstrative: the iterable named before
    ("The tool ensures that file names are unique.", False, False),  # "that" a conjunction
    # stands alone
    ("First, the dock clerk checks the seal; then the driver signs; finally the gate opens.", False, False),
    ("If it is acceptable to alter imports, replace the hook.", False, False),
    ("The result of the division is a float.", False, False),
    ("Visitors must sign in at the gatehouse.", False, False),
    ("No one may open the gate alone.", False, False),
    ("This policy sets how long Harbor Logistics keeps business data.", False, False),  # the document itself
    ("When two chapters of this handbook disagree, staff follow the stricter one.", False, False),
    ("Engineers shall not approve their own changes, and this applies to standard changes too.", False, False),
    ("It is unresolved which roles count as essential on-site staff.", False, False),
    ("It is possible to force the hash checking mode.", False, False),
    # an intro line points forward at what follows its colon
    ("The following rules apply:", True, False),
    ("Consider this function:", True, False),
    ("Another way is to use a list:", True, True),
    ("This type of bug bites beginners. Consider this function:", True, True),  # two sentences: it points back
])
def test_a_paragraph_that_leans_on_text_before_it_is_told_apart(paragraph, introduces, leans):
    assert leans_back(paragraph, introduces) is leans


def test_a_leaning_paragraph_joins_the_claim_before_it_else_is_dropped_and_counted():
    content = ("# Strings\n\n## Raw strings\n\nOne workaround is to use regular strings and double the backslashes.\n\n"
               "Another is to concatenate a regular string containing an escaped backslash:\n\n"
               "```\nr'C:\\this' '\\\\'\n```\n\n"
               "## Reasons\n\nThere are several possible reasons for this.\n\n"
               "## Ports\n\nFor Unix, see a Usenet post by Mitch Chapman:\n\n"
               "The sample file is shown in Example 21.2.\n\nThe port opens at boot.\n")
    doc = extract(Path("strings.md"), content)
    texts = [u.text for u in doc.units]
    # the leaning paragraph and the code it introduces go on the claim before it: one claim, both workarounds
    assert texts[0].startswith("One workaround") and "Another is to concatenate" in texts[0] and "r'C:" in texts[0]
    # first in its section, it has nothing to lean on: no candidate, counted as what it is
    assert not any("several possible reasons" in t for t in texts) and doc.dropped[LEANING] == 1
    # pointers elsewhere are navigation
    assert texts[1:] == ["The port opens at boot."] and doc.dropped[NAVIGATION] == 2


def test_a_definite_subject_the_paragraph_before_names_continues_it_and_a_list_without_intro_takes_its_paragraph():
    content = ("# Search\n\npip can search PyPI for packages using the search command and a query.\n\n"
               "The query will be used to search the names and summaries of all packages.\n\n"
               "## Modulo\n\nFloor division and modulo are connected with divmod().\n\n"
               "The modulo operation can be customized using the special __mod__() method.\n\n"
               "## Conflicts\n\nPip cannot install two packages that ask for conflicting versions of pytest.\n\n"
               "- `pytest-cov` version `2.12.1` requires `pytest` 4.6 or later.\n"
               "- `package_tea` version `4.3.0` depends on `package_water` 2.3.1.\n\n"
               "## Gates\n\nIf a gate is blocked, the yard lead opens gate four.\n\n"
               "1. Stop at the barrier.\n2. Show the badge to the guard.\n\n"
               "## Navigation\n\nThe port opens at boot.\n\nFor more discussion see Section 30.4.\n")
    doc = extract(Path("search.md"), content)
    texts = [u.text for u in doc.units]
    # "The query" is the query the paragraph before names: one claim
    assert texts[0].startswith("pip can search") and texts[0].endswith("all packages.")
    # "The modulo operation" with a modifier names a thing of its own: a claim alone
    assert "The modulo operation can be customized using the special __mod__() method." in texts
    # the list with no intro of its own goes with the paragraph before it, which introduces it
    conflict = next(u for u in doc.units if u.text.startswith("Pip cannot install"))
    assert "package_tea" in conflict.text
    # numbered steps after a paragraph stand alone: a PROCEDURE of their own
    assert "If a gate is blocked, the yard lead opens gate four." in texts
    assert [u.horn_type for u in doc.units if u.text.startswith("1. Stop")] == ["PROCEDURE"]
    # a pointer elsewhere is navigation, not a claim
    assert not any("more discussion" in t for t in texts) and texts[-1] == "The port opens at boot."


def asked(sentence: str, context: str = "") -> str:
    """The question r2k asks of a sentence alone in its section."""
    doc = extract(Path("q.md"), f"# Doc\n\n{context}\n\n## Part\n\n{sentence}\n")
    return doc.units[-1].question


@pytest.mark.parametrize("sentence,question", [
    ("It is also recommended that mappings provide the methods keys() and values().",
     "Should mappings provide the methods keys and values?"),
    ("You have started the interpreter in interactive mode.", "Have you started the interpreter in interactive mode?"),
    ("Relative imports use leading dots.", "What do relative imports use?"),
    ("Many Python projects use {file}`requirements.txt` files, to specify the packages.",
     "What do many Python projects use?"),
    ("Functions are already first class objects in Python.", "Are functions first class objects in Python?"),
    ("In practice the egg fragment is only required to help pip find the clone.", "Why is the egg fragment required?"),
    ("If you encounter a TLS error you should open an issue on the tracker.",
     "What should be done if you encounter a TLS error?"),
    ("Changed in version 3.7: Added hash-based .pyc files.", "What changed in version 3.7?"),
    ("(Previous releases supported storing the password in plain text. This is no longer possible.)",
     "Is it true that previous releases supported storing the password in plain text?"),
    ("To specify which database server pg_dump should contact, use the options -h and -p.",
     "How do you specify which database server pg_dump should contact?"),
    ("USB storage devices are blocked on company laptops and may not be used to move customer data.",
     "What are USB storage devices blocked on?"),  # the sentence's verb is "are", not the later "may"
    ("The snippet assumes that a must have a member attribute called x.", "What does the snippet assume?"),
    ("Back in the days of Python 1.5, Greg Stein implemented a patch set that removed the GIL.",
     "Is it true that back in the days of Python 1.5, Greg Stein implemented a patch set that removed the GIL?"),
    ("Changed in version 3.2: Previously it was illegal to delete a name from the local namespace.",
     "What changed in version 3.2?"),
    ("Except at the beginning of a line, the whitespace characters space, tab and formfeed can be used interchangeably.",
     "Can the whitespace characters space, tab and formfeed be used interchangeably except at the beginning of a line?"),
    ("The PSF’s home page is at https://www.python.org/psf/.", "Is the PSF’s home page at https://www.python.org/psf/?"),
    # (a bare "The solution is …" leans on the problem it solves: test_claim_extraction.py)
    ("The solution for an int literal is to separate the literal from the period with either a space or parentheses.",
     "Is the solution for an int literal to separate the literal from the period with either a space or parentheses?"),
    ("Objects are never explicitly destroyed; however, when they become unreachable they may be collected.",
     "Are objects destroyed?"),
    ("It is often expected that a function call creates new objects for default values.",
     "Is it expected that a function call creates new objects for default values?"),
    ("Comparisons yield boolean values: True or False.", "What do comparisons yield?"),  # no label before a colon
    ("One leading dot means the current package where the module making the import exists.",
     "What does one leading dot mean?"),
    ("Statements that contain simple syntax errors are not logged by the server.",
     "Are statements that contain simple syntax errors logged by the server?"),
    ("If it is acceptable to only alter the behaviour of import statements, then replacing the hook is enough.",
     "What happens if it is acceptable to only alter the behaviour of import statements?"),
    ("Just import the config module in all modules; the module then becomes a global name.",
     "Should you just import the config module in all modules?"),
    ("To display the expression text and its value, (useful in debugging), an equal sign may be added.",
     "How do you display the expression text and its value?"),
    ("See section 8 for the syntax of lists. Note that lambdas cannot contain statements.",
     "Can lambdas contain statements?"),  # the pointer is no question; the claim after it is
    ("Include files or directories can be used to separate portions of the configuration.",
     "Can include files or directories be used to separate portions of the configuration?"),
    ("It is impossible to know in advance which attribute will be referenced at runtime.",
     "Is it possible to know in advance which attribute will be referenced at runtime?"),
    ("You are advised to monitor the archiving process to ensure that it is working as you intend.",
     "Are you advised to monitor the archiving process to ensure that it is working as you intend?"),
    # a clause a little over its limit is asked whole: a question cut mid-phrase is garbled
    ("There are certain operations that hold critical locks and should therefore complete as quickly as possible.",
     "Are there certain operations that hold critical locks and should therefore complete as quickly as possible?"),
    ("The parentheses may be omitted when the yield expression is the sole expression on the right hand side of an "
     "assignment statement.", "May the parentheses be omitted when the yield expression is the sole expression on the "
     "right hand side of an assignment statement?"),
    ("You can use pip cache dir to get the cache directory that pip is currently configured to use.",
     "Can you use pip cache dir to get the cache directory that pip is currently configured to use?"),
    ("There are ways to reduce the degree to which pip might backtrack.",  # "to which" goes on
     "Are there ways to reduce the degree to which pip might backtrack?"),
    ("Storage that has a higher random read cost relative to sequential, like magnetic disks, might also be better "
     "modeled with a higher value for random_page_cost.", "Is it true that storage that has a higher random read "
     "cost relative to sequential, like magnetic disks, might also be better modeled with a higher value for "
     "random_page_cost?"),
    ("pg_dumpall works by emitting commands to re-create roles.", "How does pg_dumpall work?"),  # "by" and a gerund
    # a condition, then what you can do: asked as what you can do
    ("If more flexibility than pg_basebackup can provide is required, you can also make a base backup using the API.",
     "What can you do if more flexibility than pg_basebackup can provide is required?"),
    # "is allowed to …", "is defined to …": asked whole; only a purpose ("is used to") asks why
    ("A maximum of autovacuum_max_workers worker processes are allowed to run at the same time.",
     "Are a maximum of autovacuum_max_workers worker processes allowed to run at the same time?"),
    ("The operator not in is defined to have the inverse truth value of in.",
     "Is the operator not in defined to have the inverse truth value of in?"),
    ("Support for most relational databases is available.", "Is support for most relational databases available?"),
    ("Namespace packages may or may not correspond directly to objects on the file system.",
     "May namespace packages correspond directly to objects on the file system?"),
    ("If attribute is empty then filter can be used as a value for ldapsearchfilter.",  # if … then, no comma
     "What happens if attribute is empty?"),
    ("Each command typed interactively is a block.", "What is each command typed interactively?"),  # its subject's
    ("pip's configuration files are located in fairly standard locations.", "Where are pip's configuration files located?"),
    ("The very first article about Python was written in 1991.", "When was the very first article about Python written?"),
    # a purpose, then what a thing does: how it does it; then an order or a modal: how you do it
    ("To indicate that the spec represents a namespace portion, the path entry finder sets the search locations.",
     "How does the path entry finder indicate that the spec represents a namespace portion?"),
    ("To rename a file, use os.rename(old_path, new_path).", "How do you rename a file?"),
    ("To display the expression text and its value, an equal sign may be added.",
     "How do you display the expression text and its value?"),
    ("Note that keyring needs to be installed separately from pip.", "Does keyring need to be installed separately from pip?"),
    ("The value of some objects can change.", "Can the value of some objects change?"),
    ("A value higher than autovacuum_freeze_max_age wouldn't make sense because a vacuum runs anyway.",
     "Would a value higher than autovacuum_freeze_max_age make sense?"),
    ("No escaping occurs when interpreting the string literal.", "When does no escaping occur?"),
    ("In the default configuration, autovacuuming is enabled and the related parameters are appropriately set.",
     "Is autovacuuming enabled in the default configuration?"),
    ("The standbys whose names appear earlier in the list are given higher priority.",
     "What are the standbys whose names appear earlier in the list given?"),
    ("If you want to decrease the timeout to 10 seconds when running pip freeze, add a freeze section.",
     "How do you decrease the timeout to 10 seconds when running pip freeze?"),
    ("When using an archive_command script, it's desirable to enable logging_collector.",
     "What should be done when using an archive_command script?"),
    ("Setting keyring-provider to import makes pip communicate with keyring via its interface.",
     "What does setting keyring-provider to import make pip do?"),
    ("Name resolution of free variables occurs at runtime, not at compile time.",
     "When does name resolution of free variables occur?"),
    ("The end of input also serves as an implicit terminator for the final physical line.",
     "What does the end of input serve as?"),
    ("The dotted name in the pattern is looked up using standard name resolution rules.",
     "How is the dotted name in the pattern looked up?"),
    ("It is a SyntaxError to use an async with statement outside the body of a coroutine function.",
     "Is it a SyntaxError to use an async with statement outside the body of a coroutine function?"),
    ("Formal parameters using the syntax *identifier or **identifier cannot be used as keyword argument names.",
     "Can formal parameters using the syntax *identifier or **identifier be used as keyword argument names?"),
    ("In a DLL, linkage is declared in the source code with __declspec(dllexport).",
     "In a DLL, what is linkage declared in?"),
    ("Sometimes the packages that you have asked pip to install are incompatible because you were too strict.",
     "Are the packages that you have asked pip to install incompatible?"),
    ("Note that tuples are not formed by the parentheses, but rather by use of the comma.",
     "Are tuples formed by the parentheses?"),
    # a count asks for the first thing counted; a number's thousands comma is no clause boundary
    ("The Rotterdam warehouse has 14 loading docks and a cold room of 1,800 square metres.",
     "How many loading docks does the Rotterdam warehouse have?"),
    ("The Hamburg warehouse has 9 loading docks, 12,500 pallet positions and a 600 square metre cold room.",
     "How many loading docks does the Hamburg warehouse have?"),
    ("Since 2019 the archive has held 1,250,000 records of deliveries made in the region.",
     "Is it true that since 2019 the archive has held 1,250,000 records of deliveries made in the region?"),
    # too long to ask whole: cut where a clause ends, never with an ellipsis
    ("New, stable releases have been coming out steadily roughly every 6 to 18 months since 1991, and this seems likely "
     "to continue for many years to come now.",
     "Is it true that new, stable releases have been coming out steadily roughly every 6 to 18 months since 1991?"),
])
def test_a_sentence_is_asked_as_a_person_would_ask_it(sentence, question):
    assert asked(sentence) == question


def test_an_emphatic_does_a_sentence_after_a_setting_name_and_a_term_with_a_remark():
    assert asked("(Keyring does have an API to request a backend.)", "We use Keyring here.") == \
        "Does Keyring have an API to request a backend?"
    text = "Each worker checks each table as needed. log_autovacuum_min_duration can be set to monitor it."
    assert [text[a:b] for a, b in sentences(text)] == ["Each worker checks each table as needed.",
                                                       "log_autovacuum_min_duration can be set to monitor it."]
    doc = extract(Path("io.rst"), "Types\n=====\n\nI/O objects (also known as file objects)\n"
                                  "   A file object represents an open file on the disk.\n")
    assert [u.question for u in doc.units] == ["What are I/O objects?"]


def test_steps_a_thing_is_done_in_are_asked_how_it_is_done():
    doc = extract(Path("import.md"), "# Statements\n\n## The import statement\n\nThe basic import statement (no from "
                                     "clause) is executed in two steps:\n\n1. find a module, loading it if necessary\n"
                                     "2. define a name in the local namespace\n")
    assert [(u.question, u.horn_type) for u in doc.units] == [("How is the basic import statement executed?", "PROCEDURE")]


def test_a_list_whose_intro_has_several_sentences_is_asked_by_the_first():
    doc = extract(Path("p.md"), "# Doc\n\n## Defaults\n\nPostgreSQL provides three SQL commands to establish "
                                "configuration defaults. In addition, there are two commands:\n\n"
                                "- The ALTER DATABASE command sets defaults per database.\n"
                                "- The ALTER ROLE command sets defaults per role.\n")
    assert [u.question for u in doc.units] == ["What does PostgreSQL provide to establish configuration defaults?"]


def test_a_list_under_a_bare_label_is_asked_by_its_label_and_section():
    doc = extract(Path("n.md"), "# Doc\n\n## String literals\n\nNotes:\n\n- A backslash ends a line.\n- A quote ends a string.\n")
    assert [u.question for u in doc.units] == ["What are the notes on string literals?"]


def test_a_name_of_two_words_keeps_its_capitals_at_the_start_of_a_question():
    context = "The company is based in Rotterdam."
    assert asked("Harbor Logistics runs 64 forklifts.", context) == "What does Harbor Logistics run?"
    assert asked("Harbor Logistics is a contract logistics company.", context) == "What is Harbor Logistics?"
    assert asked("Python is, however, aggressive about cleaning up memory.", "Programs in Python run.") == \
        "Is Python aggressive about cleaning up memory?"  # an aside between commas is no part of the question
    assert asked("Previous releases stored the password.", "A previous release is listed.") == \
        "Is it true that previous releases stored the password?"


# ----------------------------------------------------------------------------- Horn types by logical form

@pytest.mark.parametrize("text,horn_type", [
    # FACT: holds unconditionally
    ("The plant employs 85 people.", "FACT"),
    ("Each site has its own Site Manager.", "FACT"),
    ("By default, pip does not perform any checks against tampering.", "FACT"),  # a negation in a description
    ("The upstream authors do not consider it a bug.", "FACT"),
    ("The GNU Project do not in general consider a missing manual page a bug.", "FACT"),
    ("He said \u201cyou must not do that\u201d and left.", "FACT"),  # a prohibition quoted
    ("It has been suggested that the lock should be per interpreter.", "FACT"),
    ("This may take a while on a large table.", "FACT"),  # "may" of possibility
    ("pip tries to use its cache whenever possible.", "FACT"),
    ("The default strategy is only-if-needed.", "FACT"),
    # RULE: obligation, recommendation or permission, conditional or not
    ("Packages must include a copyright file.", "RULE"),
    ("Visitors must sign in.", "RULE"),
    ("You should run the tests before a release.", "RULE"),
    ("The maintainer shall answer within a week.", "RULE"),
    ("A signature is required for every delivery.", "RULE"),
    ("Visitors may park in bays one to six.", "RULE"),
    ("If the cold room passes 8 \u00b0C, move the stock.", "RULE"),
    ("When a truck arrives late, the dock lead reassigns its slot.", "RULE"),
    ("Use a list to make an array.", "RULE"),  # an order
    ("To connect, a user must not only pass the checks but must hold the privilege.", "RULE"),
    # CONSTRAINT: a prohibition
    ("You should not specify a Pre-Depends entry unless it is needed.", "CONSTRAINT"),
    ("Forklifts must never carry people.", "CONSTRAINT"),
    ("Pedestrians may not cross the yard.", "CONSTRAINT"),
    ("Smoking is not allowed on the dock.", "CONSTRAINT"),
    ("No one may open the gate alone.", "CONSTRAINT"),
    ("No package may depend on a virtual package alone.", "CONSTRAINT"),
    ("Do not run the server as root.", "CONSTRAINT"),
    ("The snippet assumes that a must have a member attribute called x.", "FACT"),  # an obligation assumed, not laid down
    ("Back in the days of Python 1.5, Greg Stein implemented a patch set.", "FACT"),  # "Back in" is no order
    ("join() is a string method because it joins a sequence.", "FACT"),
    ("Just import the config module in all modules of your application.", "RULE"),  # an order, softened
    ("Include files or directories can be used to separate the configuration.", "FACT"),  # a subject, not an order
    ("Exit interviews are offered to every leaver.", "FACT"),
    ("It is a SyntaxError to use an async with statement outside a coroutine.", "CONSTRAINT"),
    ("Except when part of a list display, an expression list containing a comma yields a tuple.", "FACT"),
    ("There is no difference if parentheses or square brackets are used.", "FACT"),
    ("The comprehension consists of an expression followed by for or if clauses.", "FACT"),
    ("To accumulate bytes objects, the recommended idiom is to extend a bytearray.", "RULE"),
    ("It is sometimes necessary to move imports into a function.", "RULE"),
    ("Look for a PEP titled Python Release Schedule.", "RULE"),
    ("Never leave the key in the lock.", "CONSTRAINT"),
    # PROCEDURE: ordered steps
    ("1. Stop the service.\n2. Back up the data.\n3. Upgrade.", "PROCEDURE"),
    ("First stop the engine, then chock the wheels, finally open the doors.", "PROCEDURE"),
    ("1. The package is in main.\n2. The package has a copyright file.", "FACT"),  # a list of conditions
    # OPEN_ISSUE: what the text says is unknown or undecided, or asks
    ("It is not yet decided whether telematics data is kept.", "OPEN_ISSUE"),
    ("Whether the cameras are kept is unclear.", "OPEN_ISSUE"),
    ("Does the heat limit apply to the loading bays?", "OPEN_ISSUE"),
    ("A proposal for an upgrade-all command is being considered.", "OPEN_ISSUE"),
    ("The behaviour is unspecified for negative sizes.", "FACT"),  # a standard saying so is a description
    ("Namespace packages may or may not correspond directly to objects on the file system.", "FACT"),  # possible
    ("To recover using continuous archiving, you need a continuous sequence of archived WAL files.", "RULE"),  # required
])
def test_each_horn_type_by_its_logical_form(text, horn_type):
    assert horn.of_text(text) == horn_type


@pytest.mark.parametrize("items,ordered,intro,horn_type", [
    (("Stop the conveyor.", "Back up the settings.", "Install the firmware."), True, "", "PROCEDURE"),
    (("Download the script.", "Open a terminal and run it."), False, "", "PROCEDURE"),  # all orders, in order
    (("The package is in main.", "It has a copyright file."), True, "", "FACT"),
    (("If equal, prefer the pinned one.", "If still equal, prefer the newest."), False, "", "RULE"),
    (("STOP halts the belt", "SLOW halves its speed"), False, "The following keys must have these meanings:", "RULE"),
    (("the package is in main", "it builds"), True, "A package is accepted when all these conditions hold:", "RULE"),
])
def test_a_list_is_typed_by_its_items_and_its_intro(items, ordered, intro, horn_type):
    assert horn.horn_type(horn.Form(" ".join(items), items, ordered, intro)) == horn_type


@pytest.mark.parametrize("term,body,horn_type", [
    # a setting's description: the modal of a clause and a "when" inside a phrase are how it behaves
    ("external_pid_file (string)", "Specifies the name of a PID file that the server should create.", "FACT"),
    ("vacuum_cost_page_dirty (integer)", "The estimated cost charged when vacuum modifies a clean block.", "FACT"),
    ("enable_material (boolean)", "Enables or disables the query planner's use of materialization.", "FACT"),
    # opening on a condition, it says what follows: a RULE; forbidding, a CONSTRAINT
    ("data_sync_retry (boolean)", "When set to off, PostgreSQL will raise a PANIC-level error.", "RULE"),
    ("ssl_passphrase (string)", "Specifies a command that must not be run as root.", "CONSTRAINT"),
    # any other definition by the table
    ("Badge", "A card that opens every gate on the site.", "FACT"),
    ("Visitors", "Visitors must sign in at the gatehouse.", "RULE"),
])
def test_a_definition_that_describes_is_a_fact_unless_it_forbids_or_opens_on_a_condition(term, body, horn_type):
    assert horn.horn_type(horn.Form(f"{term}: {body}", term=term)) == horn_type


def test_the_rules_are_one_table_in_the_order_they_are_tried():
    assert [name for name, _ in horn.RULES] == ["OPEN_ISSUE", "PROCEDURE", "CONSTRAINT", "RULE", "FACT"]


def test_an_html_table_of_one_paragraph_cells_is_a_table_whose_rows_read_as_statements():
    html = ("<html><body><main><h1>Escapes</h1><p>Escape sequences are read by the lexer.</p><table>"
            "<tr><th><p>Escape</p></th><th><p>Meaning</p></th></tr>"
            "<tr><td><p>\\n</p></td><td><p>ASCII Linefeed</p></td></tr>"
            "<tr><td><p>\\uxxxx</p></td><td><p>Character with 16-bit hex value xxxx</p></td></tr></table></main></body></html>")
    doc = extract(Path("escapes.html"), html.encode())
    assert [b.kind for _, b in doc.document.blocks()] == ["paragraph", "table"]  # no cell read as a paragraph
    assert [u.text for u in doc.units] == ["Escape sequences are read by the lexer.",
                                           "\\uxxxx: Character with 16-bit hex value xxxx"]
