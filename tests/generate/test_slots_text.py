"""Slot substitution writes what a person writes (issue 26): "for 1 adult", never "for 1 adults";
an API code substituted in words ("lowest price", never "lowest_price"); a value the pools mark
unsaid never substituted in."""

from __future__ import annotations

import random

from fcbench.checks.query_text import query_text_problems
from fcbench.sample import Call, Sample, Tool
from generate.slots import Span, agree_following_noun, find_value_text, render_like, substitute_slots, value_pools_from_dict

TOOL = Tool(name="Search_Hotels", description="Search hotels.", parameters={"type": "object", "properties": {
    "adults": {"type": "integer"}, "sortBy": {"type": "string", "enum": ["trending", "lowest_price", "attr_book_score"]}}})
POOLS = value_pools_from_dict({"slots": {
    "adults": {"used_by": [{"tool": "Search_Hotels", "arguments": {"adults": "adults"}}],
               "values": [{"adults": 1}, {"adults": 2}]},
    "order": {"used_by": [{"tool": "Search_Hotels", "arguments": {"sortBy": "sortBy"}}],
              "values": [{"sortBy": "trending"}, {"sortBy": "lowest_price"}, {"sortBy": "attr_book_score", "unsaid": True}]}}})


def test_the_count_noun_agrees_with_the_new_count() -> None:
    query = "Find hotels for 2 adults, then 3 Nights."
    assert agree_following_noun(query, query.index("2") + 1, 1) == (query.index("adults") + 6, " adult")
    assert agree_following_noun(query, query.index("3") + 1, 1) == (query.index("Nights") + 6, " Night")
    assert agree_following_noun(query, query.index("3") + 1, 4) == (query.index("Nights") + 6, " Nights")
    assert agree_following_noun("under 150 USD", 9, 1) is None  # not a count noun
    assert agree_following_noun(query, 5, "2025-06-12") is None  # not a count


def test_a_code_is_written_as_words_like_the_query_wrote_the_old_value() -> None:
    span = Span(0, 8, "sortBy")
    assert render_like(span, "lowest_price", "trending") == "lowest price"
    assert render_like(span, "FIRST", "business") == "first"  # the query wrote BUSINESS as "business"
    assert render_like(span, "USD", "EUR") == "USD" and render_like(span, "Rome", "Paris") == "Rome"
    # a time zone is an identifier the user types: never "america/sao paulo"
    assert render_like(span, "America/Sao_Paulo", "America/New_York") == "America/Sao_Paulo"
    # and a code said in words is found again: the next substitution finds "lowest price"
    assert [(s.start, s.end, s.style) for s in find_value_text("showing the lowest price ones first", "sortBy",
                                                                 "lowest_price")] == [(12, 24, "spoken")]


def test_substitution_never_writes_a_glitch_nor_an_unsaid_value() -> None:
    template = Sample(id="t", messages=[{"role": "user", "content": "Find hotels for 2 adults showing trending ones first."}],
                      tools=[TOOL], calls=[[Call(label="var_1", name="Search_Hotels",
                                                 arguments={"adults": 2, "sortBy": "trending"})]])
    queries = set()
    for seed in range(30):
        variant = substitute_slots(template, POOLS, random.Random(seed))
        queries.add(variant.query)
        assert query_text_problems(variant.query, [TOOL]) == [], variant.query
        assert variant.calls[0][0].arguments["sortBy"] != "attr_book_score"
    assert queries == {"Find hotels for 1 adult showing lowest price ones first."}


FLIGHTS = Tool(name="Search_Flights", description="Search flights.", parameters={"type": "object", "properties": {
    "cabinClass": {"type": "string", "enum": ["ECONOMY", "PREMIUM_ECONOMY", "BUSINESS", "FIRST"]}}})
CABINS = value_pools_from_dict({"slots": {"cabin_class": {
    "used_by": [{"tool": "Search_Flights", "arguments": {"cabinClass": "cabinClass"}}],
    "values": [{"cabinClass": "ECONOMY", "words": "economy"}, {"cabinClass": "BUSINESS", "words": "business class"},
               {"cabinClass": "FIRST", "words": "first class"}]}}})


def test_the_pools_words_never_repeat_a_word_the_query_says_beside_them() -> None:
    """travel-full-draft-0002: "flying economy class" became "flying business class class"."""
    template = Sample(id="t", messages=[{"role": "user", "content": "Find flights flying economy class, please."}],
                      tools=[FLIGHTS], calls=[[Call(label="var_1", name="Search_Flights", arguments={"cabinClass": "ECONOMY"})]])
    seen = set()
    for seed in range(12):
        variant = substitute_slots(template, CABINS, random.Random(seed))
        assert variant.problem is None, variant.problem
        assert query_text_problems(variant.query, [FLIGHTS]) == [], variant.query
        cabin = variant.calls[0][0].arguments["cabinClass"]
        assert variant.query == {"BUSINESS": "Find flights flying business class, please.",
                                 "FIRST": "Find flights flying first class, please."}[cabin]
        seen.add(cabin)
    assert seen == {"BUSINESS", "FIRST"}
