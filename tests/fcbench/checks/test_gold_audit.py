"""The gold audit: each kind of wrong gold found in the bundled builds gets its own reject reason,
and its right twin passes."""

from __future__ import annotations

import random

from gold_cases import DESTINATION, call, hotel_and_rooms, sample, week_stay
from fcbench.checks.constraints import bound_decides, choose_pick, PickRule, PickSpec, select_index
from fcbench.checks.gold_audit import gold_audit, stated_stays
from fcbench.checks.provenance import infer_provenance


def audit(case) -> list[str]:
    return [problem.reason for problem in gold_audit(case, infer_provenance(case).provenance)]


def test_a_stay_said_for_a_week_ends_a_week_after_its_start():
    assert stated_stays("for a week starting April 3, 2026, then for three nights from May 1, 2026") == [
        ((20, 33), 7, "a week starting April 3, 2026"), ((62, 73), 3, "three nights from May 1, 2026")]
    assert audit(week_stay()) == []
    problems = gold_audit(week_stay(departure="2025-11-18"), infer_provenance(week_stay(departure="2025-11-18")).provenance)
    # (and "a week" is then the source of nothing: the stay the query asks is not booked)
    assert [p.reason for p in problems] == ["gold.derived_mismatch", "gold.unserved_request"]
    assert "var_3.departure_date=2025-11-18" in problems[0].detail and "2025-11-22" in problems[0].detail


def test_a_party_stated_for_a_search_is_carried_to_its_rooms_and_back():
    assert audit(hotel_and_rooms(room_phrase="the first rate of the second room")) == []
    assert audit(hotel_and_rooms(search_adults=4, rooms_adults=None, room_phrase="the first rate of the second room")) == \
        ["gold.party_not_carried"]
    assert audit(hotel_and_rooms(search_adults=None, rooms_adults=4, room_phrase="the first rate of the second room")) == \
        ["gold.party_not_carried"]


def test_a_currency_asked_for_a_search_is_not_left_to_the_default_where_its_entries_are_read():
    """Hand-checked travel-full-draft-0018-v4: hotels "with prices in Singapore dollars", then the
    rooms of the cheapest with no currency (US dollars): a model carrying SGD over is as right."""
    room = "the first rate of the second room"
    assert audit(hotel_and_rooms(room_phrase=room, search_currency="EUR", rooms_currency="EUR")) == []
    assert audit(hotel_and_rooms(room_phrase=room, search_currency="EUR", rooms_currency="GBP")) == []  # said: fine
    assert audit(hotel_and_rooms(room_phrase=room, rooms_currency="EUR")) == []  # asked of the rooms only
    assert audit(hotel_and_rooms(room_phrase=room, search_currency="EUR")) == ["gold.preference_not_carried"]


def test_a_pick_is_stated_decided_by_its_bound_and_read():
    room = "the first rate of the second room"
    # a pick stated for one call applied to another: its words are not in the query
    assert "gold.pick_not_stated" in audit(hotel_and_rooms(room_phrase=room, pick_text="the closest hotel rated above 7"))
    # the reader reads another hotel than the one the constraint picks
    assert "gold.pick_mismatch" in audit(hotel_and_rooms(room_phrase=room, hotel_index=0))
    # a hotel rated exactly 8.0 would win "rated above 8" read inclusively: the query does not decide
    assert "gold.pick_boundary" in audit(hotel_and_rooms(room_phrase=room, scores=(9.0, 8.5, 8.0)))


def test_a_bound_an_entry_sits_on_is_never_drawn():
    """"after 4 pm" read inclusively at 16:00 changes the answer: such a threshold is not offered."""
    flights = [{"price": {"total": 100}, "segments": [{"departureTime": "2025-06-12T16:00:00"}]},
               {"price": {"total": 200}, "segments": [{"departureTime": "2025-06-12T17:30:00"}]},
               {"price": {"total": 300}, "segments": [{"departureTime": "2025-06-12T09:00:00"}]}]
    after_4 = {"list": "data.flightOffers", "select": "min", "by": "price.total",
               "where": {"field": "segments[0].departureTime", "kind": "after", "threshold": 16}}
    assert select_index(flights, after_4, inclusive=True) == 0 and select_index(flights, after_4, inclusive=False) == 1
    assert not bound_decides(flights, after_4)
    spec = PickSpec("data.flightOffers", "flight", (PickRule("min", "price.total", "the cheapest {noun} leaving after {threshold}",
                                                             "segments[0].departureTime", "after"),))
    for seed in range(40):
        pick = choose_pick(flights, spec, random.Random(seed))
        assert pick is None or bound_decides(flights, pick.record)


def test_every_entry_read_is_chosen_by_the_query():
    assert audit(hotel_and_rooms(room_phrase="the first rate of the second room")) == []
    # "the second room" says which room, not which of its two rates (different conditions)
    problems = gold_audit(case := hotel_and_rooms(room_phrase="the second room"), infer_provenance(case).provenance)
    assert [p.reason for p in problems] == ["gold.unstated_entry"]
    assert "var_3.data.rooms[1].rates[0] of 2 entries" in problems[0].detail
    # a city look-up's first product read as "Rome": five products, nothing says which
    products = {"status": True, "data": {"products": [{"productSlug": f"p{i}", "title": f"Tour {i}", "cityName": "Rome"}
                                                      for i in range(5)]}}
    rome = sample("Tell me about Rome.", [[call("var_1", "Search_Attraction_Location", products, query="Rome")],
                                          [call("var_2", "Get_Attraction_Details", slug="$var_1.data.products[0].productSlug$")]])
    assert audit(rome) == ["gold.unstated_entry"]
    # the place the user named, by its name (only one entry has it): chosen
    paris = sample("Find hotels in Paris for three nights from June 12, 2025.", [
        [call("var_1", "Search_Hotel_Destination", DESTINATION, query="Paris")],
        [call("var_2", "Search_Hotels", dest_id="$var_1.data[0].dest_id$", search_type="$var_1.data[0].search_type$",
              arrival_date="2025-06-12", departure_date="2025-06-15")]])
    assert audit(paris) == []
    # an ordinal says which only with its list's noun: "the second room" does not choose a hotel
    unnamed = paris.model_copy(deep=True)
    unnamed.calls[1][0].arguments["dest_id"] = "$var_1.data[1].dest_id$"
    unnamed.calls[1][0].arguments["search_type"] = "$var_1.data[1].search_type$"
    assert audit(unnamed) == ["gold.unstated_entry", "gold.unstated_entry"]
    # the annotator's fix: the query names the district (its label says it is in Paris, so "Le
    # Marais, Paris" means the district, not the city the look-up was asked for)
    district = {"status": True, "data": [{**DESTINATION["data"][0], "label": "Paris, France"},
                                         {**DESTINATION["data"][1], "label": "Le Marais, Paris, France"}]}
    named = unnamed.model_copy(deep=True)
    named.messages[-1]["content"] = named.messages[-1]["content"].replace("in Paris", "in Le Marais, Paris")
    named.calls[0][0].response = district
    assert audit(named) == []
    # naming the city does not choose the district
    city_only = named.model_copy(deep=True)
    city_only.messages[-1]["content"] = unnamed.messages[-1]["content"]
    assert audit(city_only) == ["gold.unstated_entry", "gold.unstated_entry"]


def test_no_call_the_query_does_not_ask_for():
    right = hotel_and_rooms(room_phrase="the first rate of the second room")
    # the same call twice
    doubled = right.model_copy(deep=True)
    doubled.calls[3].append(doubled.calls[3][0].model_copy(update={"label": "var_5"}))
    assert audit(doubled) == ["gold.redundant_call"]
    # a leaf nothing in the query asks for: the fare rules of a flight in a hotel query
    extra = right.model_copy(deep=True)
    extra.calls.append([call("var_5", "Get_Flight_Fare_Rules", booking_token="$var_3.data.rooms[1].rates[0].block_id$")])
    assert audit(extra) == ["gold.redundant_call"]
    # "Tell me about Picasso Museum": the details are what the query asks, though no word says "details"
    single = {"status": True, "data": {"products": [{"productSlug": "p1", "title": "Picasso Museum ticket"}]}}
    museum = sample("Tell me about Picasso Museum.", [[call("var_1", "Search_Attraction_Location", single, query="Picasso Museum")],
                                                      [call("var_2", "Get_Attraction_Details", slug="$var_1.data.products[0].productSlug$")]])
    assert audit(museum) == []
