"""The full-size travel world (datasets/travel-full): long answers, long tokens, checked tokens, and
committed files that are exactly what datasets/travel-full/build.py writes."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FULL = ROOT / "datasets" / "travel-full"


def _load(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def world():
    return _load("travel_full_world_test", FULL / "tools.py").TOOLS


def test_answers_are_long_and_tokens_are_long_and_checked(world):
    city = world["Search_Hotel_Destination"]("London")["data"][0]
    hotels = world["Search_Hotels"](city["dest_id"], city["search_type"], "2025-06-12", "2025-06-15")
    assert len(hotels["data"]["hotels"]) >= 30 and len(json.dumps(hotels)) > 128_000  # 32k tokens at 4 chars a token
    offers = world["Search_Flights"]("LON.CITY", "PAR.CITY", "2025-08-20", "2025-08-27")["data"]["flightOffers"]
    details = world["Get_Flight_Details"](offers[0]["token"])["data"]
    assert len(details["booking_token"]) >= 500
    rules = world["Get_Flight_Fare_Rules"](details["booking_token"])["data"]["rules"]
    assert [rule["flight"] for rule in rules] == [segment["flightNumber"] for segment in details["segments"]]
    broken = details["booking_token"][:-1] + ("0" if details["booking_token"][-1] != "0" else "1")
    with pytest.raises(ValueError, match="is not a booking_token"):
        world["Get_Flight_Fare_Rules"](broken)
    rooms = world["Get_Room_List"](hotels["data"]["hotels"][0]["hotel_id"], "2025-06-12", "2025-06-15")["data"]
    conditions = world["Get_Room_Booking_Conditions"](rooms["rooms"][0]["rates"][1]["block_id"])["data"]
    assert conditions["refundable"] is True and conditions["hotel_id"] == rooms["hotel_id"]


def test_the_full_world_keeps_the_compact_worlds_ids_and_answers_the_same_way_twice(world):
    compact = _load("travel_compact_world_test", ROOT / "datasets" / "travel" / "tools.py").TOOLS
    ids = [[(entry["dest_id"], entry["search_type"]) for entry in tools["Search_Hotel_Destination"]("Rome")["data"]]
           for tools in (compact, world)]
    assert ids[0] == ids[1]  # same places, same ids (the full world has more hotels in them)
    assert compact["Search_Flight_Location"]("Paris") == world["Search_Flight_Location"]("Paris")
    first = world["Search_Attractions"](world["Search_Attraction_Location"]("Rome")["data"]["destinations"][0]["id"])
    again = world["Search_Attractions"](world["Search_Attraction_Location"]("Rome")["data"]["destinations"][0]["id"])
    assert first == again


def test_the_committed_catalog_and_pools_are_what_the_build_script_writes(tmp_path):
    build = _load("travel_full_build_test", FULL / "build.py")
    build.write_catalog(tmp_path)
    for name in ("tools.json", "value_pools.json"):
        assert (tmp_path / name).read_bytes() == (FULL / name).read_bytes(), name
    domains = {tool["domain"] for tool in json.loads((FULL / "tools.json").read_text())}
    assert domains == {"flights", "hotels", "car-rental", "attractions"}


def test_the_bundled_export_is_read_gzipped_and_carries_rewritten_queries_and_provenance():
    from annotate.exchange.pull import read_export_file

    tasks = read_export_file(FULL / "annotations" / "stage2_export.json.gz")
    assert len(tasks) >= 100
    results = [{region["from_name"]: region["value"] for region in task["annotations"][0]["result"]} for task in tasks]
    fixed = [r for r in results if r["verdict"]["choices"] == ["fix"]]
    assert fixed and all(r["query"]["text"][0] for r in fixed)
    # each senior's provenance field says where every value comes from (a stay's end: its start and
    # "a week", annotate/README.md), and every line of it reads back
    fields = [r["provenance"]["text"][0] for r in results]
    assert all(fields) and any("date.offset" in field for field in fields)
    from annotate.tasks.provenance_text import parse_provenance

    for task, result, field in zip(tasks, results, fields):
        query = result["query"]["text"][0] if result["query"]["text"][0] else task["data"]["query"]
        _, unread = parse_provenance(field, query)
        assert unread == [], (task["data"]["sample_id"], unread[:1])


def test_the_searches_list_what_their_descriptions_say(world):
    """Hand-check of travel-full (round 3): the catalog said "Lists at most 5 hotels" while the full
    world listed 40 of up to 48 matches, so "the cheapest hotel" was picked over part of them and a
    model trusting the description might sort or page instead. Every match is listed now, and the
    descriptions say what a model gets."""
    described = {tool["name"]: tool["description"] for tool in json.loads((FULL / "tools.json").read_text())}
    assert "Lists every matching hotel" in described["Search_Hotels"]
    assert "Lists every matching hotel" in described["Search_Hotels_By_Coordinates"]
    assert "Lists up to 8 cars" in described["Search_Car_Rentals"]
    paris = world["Search_Hotel_Destination"]("Paris")["data"][0]
    listing = world["Search_Hotels"](paris["dest_id"], paris["search_type"], "2025-06-12", "2025-06-15")["data"]
    assert listing["total_count"] == len(listing["hotels"]) > 40
    around = world["Search_Hotels_By_Coordinates"](48.8566, 2.3522, "2025-06-12", "2025-06-15", radius=20)["data"]
    assert around["total_count"] == len(around["hotels"]) > 5
    place = world["Search_Car_Location"]("Heathrow")["data"][0]["coordinates"]
    cars = world["Search_Car_Rentals"](place["latitude"], place["longitude"], place["latitude"], place["longitude"],
                                       "2025-08-20", "2025-08-23", "09:00", "09:00")["data"]["search_results"]
    assert 5 < len(cars) <= 8
