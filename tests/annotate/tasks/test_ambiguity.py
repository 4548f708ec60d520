"""The "Likely ambiguous" warnings (annotate/tasks/ambiguity.py), their measure (annotate/review/ambiguity_quality.py)
and their panel (annotate/render.flags_html). Pure: drafts are built by hand, no server, no tools run.
"""

from __future__ import annotations

import json
from typing import Any

from annotate.tasks.ambiguity import Ambiguity, Candidate, find_ambiguities
from annotate.review.ambiguity_quality import (TARGET_PRECISION, TARGET_RECALL, TrueAmbiguity, WarningQuality,
                                        baseline_warnings, checked_draft, removed_ambiguities)
from annotate.tasks.render import flags_html
from fcbench.catalog import load_tools_file
from fcbench.sample import Sample, sample_from_dict
from ls_helpers import REPO

CHECKED = REPO / "tests" / "data" / "ambiguity_checked.jsonl"


def draft(query: str, *steps: list[dict[str, Any]]) -> Sample:
    return sample_from_dict({"id": "d", "messages": [{"role": "user", "content": query}], "tools": [],
                             "calls": [list(step) for step in steps]})


def call(label: str, name: str, arguments: dict[str, Any], response: Any = None) -> dict[str, Any]:
    item: dict[str, Any] = {"label": label, "name": name, "arguments": arguments}
    if response is not None:
        item["response"] = response
    return item


def products(currencies: list[str]) -> dict[str, Any]:
    return {"data": {"products": [{"slug": f"tour-{index}", "name": f"Tour {index}",
                                   "price": {"currency": currency, "amount": 10 + index}}
                                  for index, currency in enumerate(currencies)]}}


def attractions_draft(query: str, currencies: list[str], currency: str = "USD") -> Sample:
    """The issue's draft: var_5.currency_code equals the currency of every product of var_4."""
    return draft(query,
                 [call("var_4", "Search_Attractions", {"id": "X"}, products(currencies))],
                 [call("var_5", "Get_Attraction_Details",
                       {"slug": "$var_4.data.products[1].slug$", "currency_code": currency}, {"ok": True})])


PLACES = {"data": [{"id": "PAR.CITY", "name": "Paris", "city_name": "Paris"},
                   {"id": "CDG.AIRPORT", "name": "Paris Charles de Gaulle Airport", "city_name": "Paris"},
                   {"id": "ORY.AIRPORT", "name": "Paris Orly Airport", "city_name": "Paris"}]}
OFFERS = {"data": {"flightOffers": [{"token": f"T{index}", "price": 100 + index} for index in range(4)]}}


def flights_draft(query: str, place: int = 0, offer: int = 1) -> Sample:
    return draft(query,
                 [call("var_1", "Search_Flight_Location", {"query": "Paris"}, PLACES)],
                 [call("var_2", "Search_Flights", {"fromId": f"$var_1.data[{place}].id$", "toId": "LON.CITY"}, OFFERS)],
                 [call("var_3", "Get_Flight_Details", {"token": f"$var_2.data.flightOffers[{offer}].token$"}, {})])


# ------------------------------------------------------------------------------------- the issue
def test_the_issue_usd_example_raises_no_warning_when_the_query_says_usd() -> None:
    sample = attractions_draft("Tell me about the second attraction in USD.", ["USD"] * 5)
    assert [flag.key for flag in find_ambiguities(sample)] == []


def test_a_currency_every_entry_shares_is_no_choice_even_when_the_query_is_silent() -> None:
    sample = attractions_draft("Tell me about the second attraction.", ["USD"] * 5)
    assert find_ambiguities(sample) == []


def test_one_warning_per_call_and_argument_with_the_candidates_inside() -> None:
    """Five products with five currencies and a query silent on it: ONE warning for
    var_5.currency_code (not one per product), listing the five entries, the draft's marked."""
    sample = attractions_draft("Tell me about the second attraction.", ["USD", "EUR", "GBP", "JPY", "SGD"])
    flags = find_ambiguities(sample)
    assert [flag.key for flag in flags] == ["var_5.currency_code"]
    flag = flags[0]
    assert [candidate.entry for candidate in flag.candidates] == [f"var_4.data.products[{i}]" for i in range(5)]
    assert [candidate.value for candidate in flag.candidates] == ["USD", "EUR", "GBP", "JPY", "SGD"]
    assert [candidate.chosen for candidate in flag.candidates] == [True, False, False, False, False]
    assert flag.entries == tuple(candidate.entry for candidate in flag.candidates)
    assert "4 of the 5 entries of var_4.data.products would give another value" in flag.message


# ------------------------------------------------------------------------------- query decides
def test_the_query_naming_the_position_settles_the_pick() -> None:
    sample = flights_draft("Find flights from Charles de Gaulle to London, then show me the second flight.",
                           place=1, offer=1)
    assert find_ambiguities(sample) == []


def test_a_name_only_the_chosen_entry_holds_settles_it_a_shared_one_does_not() -> None:
    decided = flights_draft("Flights from Charles de Gaulle to London; the second flight.", place=1)
    assert find_ambiguities(decided) == []
    shared = flights_draft("Flights from Paris to London; the second flight.", place=0)
    flags = find_ambiguities(shared)
    assert [flag.key for flag in flags] == ["var_2.fromId"]  # 'Paris' is also in both airports' names
    assert [candidate.value for candidate in flags[0].candidates] == ["PAR.CITY", "CDG.AIRPORT", "ORY.AIRPORT"]


def test_an_ordinal_of_another_noun_does_not_settle_a_pick() -> None:
    """'first class' is not 'the first result': the city (data[0]) is still a choice."""
    sample = flights_draft("Flights from Paris to London in first class, then the second flight.", place=0)
    assert [flag.key for flag in find_ambiguities(sample)] == ["var_2.fromId"]


def test_one_position_phrase_for_two_picks_settles_neither() -> None:
    sample = draft("Tell me about the first attraction.",
                   [call("var_1", "Search_Attractions", {"q": "London"}, products(["GBP"] * 3)),
                    call("var_2", "Search_Attractions", {"q": "Rome"}, products(["EUR"] * 3))],
                   [call("var_3", "Get_Attraction_Details", {"slug": "$var_1.data.products[0].slug$"}, {}),
                    call("var_4", "Get_Attraction_Details", {"slug": "$var_2.data.products[0].slug$"}, {})])
    assert sorted(flag.key for flag in find_ambiguities(sample)) == ["var_3.slug", "var_4.slug"]
    said_twice = sample.model_copy(update={"messages": [
        {"role": "user", "content": "Tell me about the first attraction in London and the first attraction in Rome."}]})
    assert find_ambiguities(said_twice) == []


def test_a_value_the_query_spells_as_a_date_is_grounded() -> None:
    hotels = {"data": [{"hotel_id": 1, "checkin": "2025-11-15"}, {"hotel_id": 2, "checkin": "2025-11-16"}]}
    sample = draft("Rooms of the hotel from November 15, 2025.",
                   [call("var_1", "Search_Hotels", {"city": "Paris"}, hotels)],
                   [call("var_2", "Get_Room_List", {"arrival_date": "2025-11-15", "hotel_id": 77}, {})])
    assert find_ambiguities(sample) == []
    silent = sample.model_copy(update={"messages": [{"role": "user", "content": "Rooms of the hotel."}]})
    assert [flag.key for flag in find_ambiguities(silent)] == ["var_2.arrival_date"]  # a literal copied from one entry


# ----------------------------------------------------------------------------------------- ranking
def test_warnings_are_ranked_by_how_likely_they_change_the_path() -> None:
    """An id feeding a later call, with four other values, ranks above a coordinate-like value read by
    nothing later with one other value; the score's parts are said in words."""
    spots = {"data": [{"name": "A", "lat": 1.5}, {"name": "B", "lat": 2.5}]}
    sample = draft("Do it.",
                   [call("var_1", "Search_Flight_Location", {"query": "x"}, PLACES | {"more": 1}),
                    call("var_9", "Spots", {}, spots)],
                   [call("var_2", "Search_Flights", {"fromId": "$var_1.data[0].id$"}, OFFERS),
                    call("var_8", "Weather", {"lat": 2.5}, {})],
                   [call("var_3", "Get_Flight_Details", {"token": "$var_2.data.flightOffers[3].token$"}, {})])
    flags = find_ambiguities(sample)
    assert [flag.key for flag in flags] == ["var_2.fromId", "var_3.token", "var_8.lat"]
    scores = [flag.score for flag in flags]
    assert scores == sorted(scores, reverse=True) and scores[0] > scores[-1]
    assert "later calls read this call's output" in flags[0].reasons
    assert "later calls read this call's output" not in flags[1].reasons  # var_3's output is read by no one
    assert flags[-1].reasons[0] == "1 other entry gives another value"


def test_the_dict_form_round_trips() -> None:
    flag = find_ambiguities(flights_draft("Flights from Paris; the second flight.", place=0))[0]
    assert Ambiguity.from_dict(json.loads(json.dumps(flag.as_dict()))) == flag


# ------------------------------------------------------------------------------------------- panel
def test_the_panel_shows_one_block_per_warning_ranked_with_compact_candidates() -> None:
    low = Ambiguity("response_entries", "low <b>", call="var_9", argument="x", score=0.2,
                    candidates=(Candidate("var_1.data[0]", "a", True), Candidate("var_1.data[1]", "b", False)))
    high = Ambiguity("response_entries", "high", call="var_2", argument="fromId", score=0.9,
                     candidates=tuple(Candidate(f"var_1.data[{i}]", f"ID{i}", i == 0, f"Place {i}") for i in range(10)))
    html = flags_html([low, high])
    assert html.count('<div class="flag">') == 2
    assert html.index("var_2.fromId") < html.index("var_9.x")  # ranked, whatever the input order
    assert "Likely ambiguous (2)" in html and "score 0.90" in html
    assert "<b>[0] &quot;ID0&quot; (Place 0) ◀ draft</b> · [1] &quot;ID1&quot; (Place 1)" in html
    assert "… 2 more" in html  # 10 candidates, 8 shown
    assert "low &lt;b&gt;" in html and "low <b>" not in html
    assert flags_html([]) == ""
    many = flags_html([Ambiguity("response_entries", f"m{i}", call=f"var_{i}", argument="a", score=i / 100)
                       for i in range(25)])
    assert many.count('<div class="flag">') == 20 and "… 5 lower-ranked warnings not shown" in many
    assert "var_24.a" in many and "var_0.a" not in many  # the lowest scores are the ones left out


# ------------------------------------------------------------------------- truth from an annotation
def test_what_disambiguation_removed_is_read_from_draft_and_gold() -> None:
    before = flights_draft("Flights from Paris; the second flight.", place=0, offer=1)
    # entries of var_1.data deleted: var_2.fromId's ambiguity removed
    assert [(item.key, item.reason) for item in removed_ambiguities(before, before, {"var_1": {("data", 1), ("data", 2)}})] \
        == [("var_2.fromId", "2 entries of var_1.data deleted")]
    # re-pointed at another flight offer: var_3.token's
    repointed = flights_draft("Flights from Paris; the second flight.", place=0, offer=2)
    assert [item.key for item in removed_ambiguities(before, repointed, {})] == ["var_3.token"]
    # a tool dropped
    assert [item.key for item in removed_ambiguities(before, before, {}, ["Search_Car_Location"])] \
        == ["tool:Search_Car_Location"]
    # another field of the same entry (a wrong field fixed) is a correction, not an ambiguity
    other_field = before.model_copy(deep=True)
    other_field.calls[1][0].arguments["fromId"] = "$var_1.data[0].name$"
    assert removed_ambiguities(before, other_field, {}) == []


def test_deleting_entries_that_all_give_the_same_value_removes_no_ambiguity_of_that_argument() -> None:
    sample = attractions_draft("Tell me about the second attraction.", ["USD"] * 5)
    deleted = {"var_4": {("data", "products", 0)}}
    assert [item.key for item in removed_ambiguities(sample, sample, deleted)] == ["var_5.slug"]


def test_precision_and_recall_count_warnings_and_ambiguities() -> None:
    quality = WarningQuality()
    flags = [Ambiguity("response_entries", "", call="var_2", argument="a"),
             Ambiguity("response_entries", "", call="var_3", argument="b"),
             Ambiguity("overlapping_tools", "", tools=("T1", "T2"))]
    quality.add("s1", flags, [TrueAmbiguity("var_2.a", ""), TrueAmbiguity("var_4.c", ""), TrueAmbiguity("tool:T2", "")])
    quality.add("s2", [], [])
    assert (quality.warnings, quality.true_warnings, quality.ambiguities, quality.recalled) == (3, 2, 3, 2)
    assert quality.precision == 2 / 3 and quality.recall == 2 / 3
    assert quality.false_warnings == ["s1: var_3.b"] and quality.missed == ["s1: var_4.c"]
    assert WarningQuality().precision is None and WarningQuality().as_dict()["recall"] is None


# ----------------------------------------------------------------------------- the committed sets
def test_the_warnings_meet_the_target_on_the_hand_checked_drafts() -> None:
    """Quality target of the issue (not a timing): precision >= 0.8 at recall >= 0.9 on the 50
    hand-checked drafts, and on the 14 judged after the rules were revised."""
    catalogs = {name: {tool.name: tool for tool in load_tools_file(REPO / "datasets" / name / "tools.json")}
                for name in ("travel", "amadeus")}
    rows = [json.loads(line) for line in CHECKED.read_text(encoding="utf-8").splitlines()]
    checked = [checked_draft(row, catalogs) for row in rows]
    by_split = {split: [item for item in checked if item.split == split] for split in ("hand_checked", "held_out")}
    assert len(by_split["hand_checked"]) == 50 and len(by_split["held_out"]) == 14
    assert all(row["note"].strip() and all(item["reason"].strip() for item in row["ambiguities"]) for row in rows)
    for split, items in by_split.items():
        quality, baseline = WarningQuality(), WarningQuality()
        for item in items:
            quality.add(item.sample.id, find_ambiguities(item.sample), item.truths)
            baseline.add(item.sample.id, baseline_warnings(item.sample), item.truths)
        assert quality.ambiguities > 10, split
        assert quality.precision is not None and quality.precision >= TARGET_PRECISION, (split, quality.as_dict())
        assert quality.recall is not None and quality.recall >= TARGET_RECALL, (split, quality.as_dict())
        assert baseline.precision is not None and baseline.precision < quality.precision  # the old rule was noise


def test_warnings_stored_in_a_task_read_back_also_in_the_old_shape() -> None:
    from annotate.tasks.single import ambiguities_of

    flag = find_ambiguities(flights_draft("Flights from Paris; the second flight.", place=0))[0]
    old = {"kind": "response_entries", "message": "var_2.fromId comes from var_1.data[0]", "entries": ["var_1.data[0]"],
           "tools": []}
    assert ambiguities_of({"ambiguity": [flag.as_dict(), old, "junk"]}) == [
        flag, Ambiguity("response_entries", "var_2.fromId comes from var_1.data[0]", ("var_1.data[0]",))]


def test_odd_drafts_give_warnings_or_nothing_never_an_error() -> None:
    """References past the end, into scalars, to unknown calls, negative indexes, lists of strings,
    nested lists of references, a response that is not JSON-like data: no exception."""
    places = {"data": [{"id": "A", "name": "Alpha"}, {"id": "B", "name": "Beta"}], "tags": ["x", "y", "z"]}
    sample = draft("Go.",
                   [call("var_1", "Find", {"q": "a"}, places), call("var_2", "Other", {}, "plain text")],
                   [call("var_3", "Use", {"past_end": "$var_1.data[9].id$", "into_scalar": "$var_2.data[0]$",
                                          "unknown": "$var_7.data[0].id$", "last": "$var_1.data[-1].id$",
                                          "tag": "$var_1.tags[1]$", "both": ["$var_1.data[0].id$", "$var_1.data[1].id$"],
                                          "nested": {"deep": [{"id": "$var_1.data[0].name$"}]}, "empty": [], "none": None},
                         {})])
    flags = {flag.key: flag for flag in find_ambiguities(sample)}
    # "both" reads every entry: no other choice was possible
    assert set(flags) == {"var_3.last", "var_3.tag", "var_3.nested"}
    assert [candidate.chosen for candidate in flags["var_3.last"].candidates] == [False, True]  # [-1] is the last


def test_a_warning_on_whole_entries_stores_short_previews_not_copies() -> None:
    rooms = {"data": [{"room_id": index, "text": "x" * 1000} for index in range(3)]}
    sample = draft("Book it.", [call("var_1", "Rooms", {}, rooms)], [call("var_2", "Book", {"room": "$var_1.data[0]$"}, {})])
    flag = find_ambiguities(sample)[0]
    assert flag.key == "var_2.room"
    assert all(isinstance(c.value, str) and len(c.value) == 201 and c.value.endswith("…") for c in flag.candidates)
    assert len(json.dumps(flag.as_dict())) < 1500
