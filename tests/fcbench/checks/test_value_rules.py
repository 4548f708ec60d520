"""Each rule reads its words back into a value and writes a new value in the old words' style; a
value a rule cannot say is None (the variant's reject), never the old words."""

from __future__ import annotations

import pytest

from fcbench.checks.derivation import stated_in
from fcbench.checks.value_rules import UNREAD, read, reads_as, write

CABIN = {"type": "string", "enum": ["ECONOMY", "PREMIUM_ECONOMY", "BUSINESS", "FIRST"]}


@pytest.mark.parametrize("rule, old, value, new", [
    ("date.spelled", "November 15, 2025", "2026-06-01", "June 1, 2026"),
    ("date.spelled", "15 November 2025", "2026-06-01", "1 June 2026"),
    ("time", "5:45 pm", "06:30", "6:30 am"),
    ("time", "9 am", "12:00", "noon"),
    ("time", "noon", "17:45", "5:45 pm"),
    ("currency", "euros", "GBP", "pounds"),
    ("currency", "€", "GBP", "£"),
    ("currency", "GBP", "EUR", "EUR"),
    ("count.words", "for a group of four", 2, "for the two of us"),
    ("count.words", "just for me", 3, "for a group of three"),
    ("count.words", "the two of us", 1, "just me"),
    ("count.words", "four", 3, "three"),
    ("duration", "three nights", 5, "five nights"),
    ("duration", "a week", 14, "two weeks"),
    ("enum.words", "premium economy", "BUSINESS", "business"),
    ("literal", "Paris", "Rome", "Rome"),
    ("literal", "3", 2, "2"),
])
def test_a_new_value_is_said_in_the_old_words_style_and_reads_back(rule, old, value, new):
    written = write(rule, value, old)
    assert written == new
    assert reads_as(rule, [written], value, schema=CABIN if rule == "enum.words" else None)


def test_what_a_rule_cannot_say_is_none_never_the_old_words():
    assert write("unit", 4.83, "3 miles") is None  # a converted quantity is not re-said
    assert write("date.offset", "2026-06-08", "a week") is None  # dependent: recomputed, never written
    assert write("time", "25:00", "9 am") is None
    assert write("count.words", 0, "a group of four") is None
    assert write("currency", "XYZ", "euros") is None


def test_words_read_as_their_rule_or_as_nothing():
    assert read("date.offset", ["April 3, 2026", "a week"]) == "2026-04-10"
    assert read("date.offset", ["April 3, 2026", "the next day"]) == "2026-04-04"
    assert read("date.offset", ["April 3, 2026", "Paris"]) is UNREAD
    assert read("time", ["06:30 pm"]) == "18:30"
    assert read("time", ["23:10 pm"]) is UNREAD  # an hour past 12 with pm says nothing
    assert read("unit", ["3 miles"], params={"unit": "km"}) == pytest.approx(4.828032)
    assert reads_as("unit", ["3 miles"], 4.8, {"unit": "km"})  # rounded as whoever wrote it
    assert read("literal", ["Rome", "rome"]) == "Rome"  # one name said twice
    assert read("literal", ["Rome", "Paris"]) is UNREAD
    assert read("enum.words", ["cheapest"], params={"words": "cheapest", "value": "price"}) == "price"
    assert read("count.words", ["three"]) == 3


def test_a_more_specific_reading_claims_its_words():
    rules = {(fact.text, fact.rule) for fact in stated_in(
        "for three nights from June 12, 2025 at 06:30 pm, prices in Australian dollars, for a group of four")}
    assert ("three nights", "duration") in rules and ("three", "count.words") not in rules
    assert ("06:30 pm", "time") in rules
    assert ("Australian dollars", "currency") in rules and ("dollars", "currency") not in rules
    assert ("for a group of four", "count.words") in rules and ("four", "count.words") not in rules
