"""Whether two answers contradict each other: deterministic rules, pure, no I/O (docs/architecture.md,
"Conflicts").

The one entry point is `compare(a, b) -> Finding | None`. It is called on two answers that share a
subject (core/knowledge/subjects.py) by contradiction detection (core/services/contradictions/conflicts.py), and by anything
else that checks a statement against the registry (an article's claim against approved answers):
its signature and the fields of `Finding` are kept stable.

Rules, tried in this order, sentence against sentence:

- **quantity**: one quantity given two values. Numbers are read with their units (durations,
  percentages, temperatures in °C or °F, distances, areas, weights, money, data sizes, clock times,
  shares, counts of the noun the number counts: "14 loading docks" counts docks) and normalised ("half an hour" is "30
  minutes", 0 °F is about -18 °C); two values disagree when they measure the same thing (the same
  unit kind and, for counts, the same noun; the words around them alike, no other place or name) and
  neither text also gives the other's value.
- **modal**: the same statement under opposite modals: must / must not (or need not), may / may not,
  always / never, required / prohibited, allowed / forbidden.
- **negation**: the same statement, once affirmed and once denied ("is" / "is not", "does not").
- **attribute**: the same attribute of the same thing with other values ("Refunds are approved by
  the Finance Lead" / "… by the Support Manager"): the same subject and relation, values that share
  no word and name someone or something (a capitalised name or code);
- **antonym**: the same statement with one word turned into its opposite ("the oldest entry" / "the
  newest entry", "synchronous" / "asynchronous"; not two kinds of one thing, "local" / "remote copy").

A rule finds a contradiction only when the rest of the two sentences agree, so elaborations ("kept
30 days" / "kept 30 days and 2 weeks"), restrictions to another place or thing, negations that agree
("must not exceed 9 hours" / "may drive up to 9 hours"), and a rule beside its exception stated alone
("must be signed, except those sent to audit" / "those sent to audit need not be signed") are not
flagged.

Then, for two sentences worded independently, rules that first align them by what they are about (a
shared subject, or a configuration name and the words it is made of, "shared_buffers" / "shared
buffers"; two sentences each naming a configuration name or program of their own are about two
things) and then look for one disagreement:

- **aligned quantity**: one dimension, values that differ, a word near both values shared (or a
  configuration name's word, or the counted noun); not for other kinds or days of one thing, a
  period beside a duration, two measures differing at once, or bounds pointing opposite ways;
- **exception**: a rule with its exception or restriction ("except", "unless", "only", "is ignored
  on") against the same rule said of everything ("never", "any", "every", "also"), or with a condition
  ("when", "if") against "always" or "whatever";
- **stance**: advised or ruled against ("be avoided", "must not") against advised or required
  ("recommended", "has to"), or not needed ("never need") against required;
- **order**: what one sentence puts before, or lets override, the other puts after ("put X first and Y
  after them", "X takes precedence over Y");
- **precedence**: the first match said to hold against the last ("the first one that matches is used" /
  "the last one wins");
- **default**: one setting on by default and off by default ("unless X is turned off": X is on;
  "unless you enable it", "unless --x is given": off);
- **one or many**: exactly one of a thing against several of it;
- **once or each time**: done once against done each time ("not at each call" says once);
- **unbounded**: no limit against an upper bound ("unlimited in length" / "at most 255 characters");
- **opposite**: one thing let in and turned away (accept / refuse, allow / deny, enable / disable, keep /
  discard, include / exclude, grant / revoke), neither side denied or restricted.

Order and default need no more words shared when both sentences name one configuration name (it
pins what they are about); a configuration name is read as the words it is made of as written
("UserStopDelaySec": user, stop, delay; "PostgreSQL" stays a name).

Each rule's words are a table beside it with the reason. Sentence embeddings were measured as the
alignment and do not separate the pairs (docs/architecture.md, "Conflicts"): the rules stay
lexical.

The package, by job (no module imports another's private names):

- `words`: `Finding`, the function, negation and modal words, stems, sentences, names;
- `values`: quantities and units, and the quantity rule;
- `polarity`: obligations and negation (modal, negation, antonym, attribute rules);
- `alignment`: what two sentences worded independently are about, and whether they are aligned;
- `aligned_values`: the aligned quantity and unbounded rules;
- `scope`: exception, stance, opposite, once or each time, one or many;
- `order`: order, precedence, default;
- this module: `compare`, the judge that tries the rules in order.
"""
from __future__ import annotations

from .aligned_values import aligned_quantity_rule, unbounded_rule
from .order import default_rule, order_rule, precedence_rule
from .polarity import antonym_rule, attribute_rule, polarity_rules
from .scope import exception_rule, once_rule, one_or_many_rule, opposite_rule, stance_rule
from .values import Quantity, quantities, quantity_rule
from .words import Finding, sentences

__all__ = ["Finding", "Quantity", "compare", "quantities"]

# The rules in the order they are tried (each module holds its own and its words' tables)
RULES = (quantity_rule, polarity_rules, attribute_rule, antonym_rule, aligned_quantity_rule, exception_rule,
         stance_rule, order_rule, precedence_rule, default_rule, one_or_many_rule, once_rule, unbounded_rule,
         opposite_rule)


def compare(a: str, b: str) -> Finding | None:
    """Whether texts `a` and `b` (two answers on one subject, or a claim and an answer) contradict
    each other: the first rule that finds a contradiction between a sentence of `a` and a sentence
    of `b`, or None. Symmetric in whether it finds one; deterministic; pure."""
    sentences_a, sentences_b = sentences(a), sentences(b)
    if not sentences_a or not sentences_b:
        return None
    for rule in RULES:
        for sa in sentences_a:
            for sb in sentences_b:
                found = rule(sa, sb)
                if found:
                    return found
    return None
