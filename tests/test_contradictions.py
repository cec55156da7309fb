"""The fast tier for conflicts: an answer's subjects (core/subjects.py) and the contradiction rules
(core/contradictions.py), pure logic with no server (docs/architecture.md, "Conflicts")."""
from __future__ import annotations

import pytest

from r2k.core.subjects import LIMIT, singular, subjects_of


def test_two_answers_about_one_thing_share_a_subject_however_their_questions_are_worded():
    a = subjects_of("How long are backups kept?", "Backups are kept for 30 days in the Helm vault.")
    b = subjects_of("What is established about backup retention?", "Nightly backups are retained for 14 days.")
    assert "backup" in a and "backup" in b
    assert a[0] == "backup" and b[0] == "backup retention"  # the asked topic first


def test_subjects_are_named_things_and_noun_phrases_lowercase_without_units_or_verbs():
    found = subjects_of("What is established about Rotterdam warehouse?",
                        "The Rotterdam warehouse has 14 loading docks and a 1,800 square metre cold room.")
    assert found[:3] == ["rotterdam warehouse", "rotterdam", "warehouse"]
    assert "loading dock" in found and all(t == t.lower() for t in found)
    named = subjects_of("Which systems hold the stock?", "Warehouse stock is managed in Quay WMS and Convoy TMS.")
    assert "quay wms" in named and "convoy tms" in named
    assert not {"day", "kept", "managed", "the", "has"} & set(named + found)


def test_subjects_are_a_handful_in_a_stable_order():
    text = ("Forklift drivers inspect brakes, horns, lights, forks, chains, tyres, batteries, mirrors, "
            "seat belts and hydraulic hoses before every shift in the Antwerp cross-dock.")
    first = subjects_of("What are the steps for forklift inspection?", text)
    assert len(first) <= LIMIT and first == subjects_of("What are the steps for forklift inspection?", text)
    assert first[0] == "forklift inspection"
    assert subjects_of("", "") == [] and subjects_of("?", "...") == []


@pytest.mark.parametrize("plural,one", [("docks", "dock"), ("batteries", "battery"), ("boxes", "box"),
                                        ("glass", "glass"), ("status", "status"), ("bus", "bus"),
                                        ("switches", "switch"), ("logistics", "logistics")])
def test_plurals_are_singularised_lightly(plural, one):
    assert singular(plural) == one
