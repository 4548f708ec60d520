"""Constraints that pick one entry of a long response: chosen so exactly one entry fits, followed
when a variant's responses change, and named when they no longer single out one entry."""

import random

from fcbench.checks.constraints import (PickRule, PickSpec, choose_pick, first_entries, pick_problems, repoint,
                                 select_index)
from fcbench.sample import Sample

HOTELS = [
    {"hotel_id": 1, "review_score": 9.1, "price": {"total": 410.0}, "checkin": "2026-04-03T14:00:00"},
    {"hotel_id": 2, "review_score": 7.2, "price": {"total": 150.0}, "checkin": "2026-04-03T09:00:00"},
    {"hotel_id": 3, "review_score": 8.4, "price": {"total": 260.0}, "checkin": "2026-04-03T08:30:00"},
    {"hotel_id": 4, "review_score": 8.6, "price": {"total": 300.0}, "checkin": "2026-04-03T16:00:00"},
]
SPEC = PickSpec("data.hotels", "hotel", (
    PickRule("min", "price.total", "the cheapest {noun}"),
    PickRule("min", "price.total", "the cheapest {noun} rated above {threshold}", "review_score", "above"),
    PickRule("min", "price.total", "the cheapest {noun} leaving before {threshold}", "checkin", "before"),
))


def test_the_cheapest_rated_above_8_is_one_entry_and_not_the_cheapest_overall():
    record = {"select": "min", "by": "price.total", "where": {"field": "review_score", "kind": "above", "threshold": 8}}
    assert select_index(HOTELS, record) == 2
    assert select_index(HOTELS, {"select": "min", "by": "price.total"}) == 1
    before_10 = {"select": "min", "by": "price.total", "where": {"field": "checkin", "kind": "before", "threshold": 10}}
    assert select_index(HOTELS, before_10) == 1


def test_a_tie_or_an_empty_filter_singles_out_nothing():
    tied = HOTELS + [{"hotel_id": 5, "review_score": 6.0, "price": {"total": 150.0}}]
    assert select_index(tied, {"select": "min", "by": "price.total"}) is None
    nothing = {"select": "max", "by": "price.total", "where": {"field": "review_score", "kind": "above", "threshold": 9.5}}
    assert select_index(HOTELS, nothing) is None


def test_a_chosen_pick_says_its_constraint_and_its_filter_matters():
    seen = set()
    for seed in range(30):
        pick = choose_pick(HOTELS, SPEC, random.Random(seed))
        assert pick is not None and select_index(HOTELS, pick.record) == pick.index
        seen.add(pick.text)
        where = pick.record.get("where")
        if where:  # at least two entries pass and at least one does not
            from fcbench.checks.constraints import passes
            kept = sum(passes(h, pick.record) for h in HOTELS)
            assert 2 <= kept < len(HOTELS)
    assert "the cheapest hotel" in seen
    assert any(text.startswith("the cheapest hotel rated above ") for text in seen)
    assert any(text.endswith(" am") or text.endswith(" pm") or text.endswith("noon") for text in seen)


def _sample(hotels, read_index):
    tools = [{"name": name, "description": name, "parameters": {"type": "object", "properties": {"x": {}}}}
             for name in ("Search_Hotels", "Get_Room_List")]
    return Sample.model_validate({
        "id": "s", "messages": [{"role": "user", "content": "rooms of the cheapest hotel rated above 8"}],
        "tools": tools,
        "calls": [[{"label": "var_1", "name": "Search_Hotels", "arguments": {}, "response": {"data": {"hotels": hotels}}}],
                  [{"label": "var_2", "name": "Get_Room_List",
                    "arguments": {"x": f"$var_1.data.hotels[{read_index}].hotel_id$"}}]],
        "meta": {"picks": [{"reader": "var_2", "source": "var_1", "list": "data.hotels", "select": "min",
                            "by": "price.total", "where": {"field": "review_score", "kind": "above", "threshold": 8},
                            "text": "the cheapest hotel rated above 8"}]}})


def test_a_variant_reads_the_entry_its_own_response_makes_the_cheapest():
    sample = _sample(HOTELS, 2)
    assert pick_problems(sample) == []
    variant = _sample(list(reversed(HOTELS)), 2)  # another city: the same constraint, another place in the list
    assert pick_problems(variant) and "picks var_1.data.hotels[1]" in pick_problems(variant)[0]
    moved, changed = repoint(variant)
    assert changed and moved.calls[1][0].arguments["x"] == "$var_1.data.hotels[1].hotel_id$"
    assert pick_problems(moved) == []
    assert repoint(moved) == (moved, False)
    assert first_entries(variant).calls[1][0].arguments["x"] == "$var_1.data.hotels[0].hotel_id$"


def test_a_response_where_the_constraint_fits_no_entry_is_a_problem():
    low = [{"hotel_id": 7, "review_score": 6.0, "price": {"total": 90.0}}]
    assert "singles out no entry" in pick_problems(_sample(low, 0))[0]
    assert repoint(_sample(low, 0))[1] is False
