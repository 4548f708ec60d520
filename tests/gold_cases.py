"""Small samples in the travel-full world's shape, one per kind of wrong gold the issue "right
gold" found in the bundled builds (each with its right twin). Shared by the provenance, audit,
stage3 and bench tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from fcbench.catalog import load_tools_file
from fcbench.sample import Call, Sample

REPO = Path(__file__).resolve().parents[1]
TOOLS = {tool.name: tool for tool in load_tools_file(REPO / "datasets" / "travel-full" / "tools.json")}


def call(label: str, name: str, response: Any = None, **arguments: Any) -> Call:
    made = Call(label=label, name=name, arguments=arguments)
    return made.model_copy(update={"response": response}) if response is not None else made


def sample(query: str, steps: list[list[Call]], sample_id: str = "case", **meta: Any) -> Sample:
    names = {c.name for step in steps for c in step}
    return Sample(id=sample_id, messages=[{"role": "user", "content": query}],
                  tools=[TOOLS[name] for name in sorted(names)], calls=steps, meta=meta)


def hotels(*entries: tuple[float, float, float]) -> dict[str, Any]:
    """A Search_Hotels answer: (price, review score, distance) per hotel."""
    return {"status": True, "data": {"hotels": [
        {"hotel_id": 1000 + i, "price": {"total": price}, "review_score": score, "distance_km": km,
         "latitude": 48.0 + i, "longitude": 2.0 + i} for i, (price, score, km) in enumerate(entries)]}}


DESTINATION = {"status": True, "data": [{"dest_id": "-1", "search_type": "CITY", "name": "Paris", "city_name": "Paris"},
                                        {"dest_id": "2", "search_type": "DISTRICT", "name": "Le Marais", "city_name": "Paris"}]}
ROOMS = {"status": True, "data": {"rooms": [
    {"room_id": "r1", "rates": [{"block_id": "B11", "refundable": False}, {"block_id": "B12", "refundable": True}]},
    {"room_id": "r2", "rates": [{"block_id": "B21", "refundable": False}, {"block_id": "B22", "refundable": True}]}]}}


def week_stay(departure: str = "2025-11-22", drop_off: str = "2025-11-18") -> Sample:
    """travel-full-draft-0166-v1 in small: hotels for a week, a car for three days."""
    query = ("Find hotels in Paris for a week starting November 15, 2025, then rent a car at Le Marais on "
             "November 15, 2025 at 9 am and return it at Le Marais on November 18, 2025 at 9 am.")
    return sample(query, [
        [call("var_1", "Search_Hotel_Destination", DESTINATION, query="Paris"),
         call("var_2", "Search_Car_Location", {"status": True, "data": [
             {"name": "Le Marais", "coordinates": {"latitude": 48.86, "longitude": 2.36}}]}, query="Le Marais")],
        [call("var_3", "Search_Hotels", hotels((120, 8.1, 1.0)), dest_id="$var_1.data[0].dest_id$",
              search_type="$var_1.data[0].search_type$", arrival_date="2025-11-15", departure_date=departure),
         call("var_4", "Search_Car_Rentals", {"status": True, "data": {"search_results": [{"search_key": "K1"}]}},
              pick_up_latitude="$var_2.data[0].coordinates.latitude$",
              pick_up_longitude="$var_2.data[0].coordinates.longitude$",
              drop_off_latitude="$var_2.data[0].coordinates.latitude$",
              drop_off_longitude="$var_2.data[0].coordinates.longitude$",
              pick_up_date="2025-11-15", drop_off_date=drop_off, pick_up_time="09:00", drop_off_time="09:00")]])


def hotel_and_rooms(search_adults: int | None = 4, rooms_adults: int | None = 4, room_phrase: str = "the second room",
                    rate: int = 0, pick_text: str = "the cheapest hotel rated above 8",
                    hotel_index: int = 1, scores: tuple[float, ...] = (9.0, 8.5, 7.0),
                    search_currency: str | None = None, rooms_currency: str | None = None) -> Sample:
    """A search, the rooms of a picked hotel and the booking conditions of one rate."""
    party = " for a group of four" if search_adults == 4 or rooms_adults == 4 else ""
    words = {"EUR": " with prices in euros", "GBP": " with prices in pounds", None: ""}
    # a currency asked of the rooms comes with their stay and party said again, as stage1 writes it
    rooms_clause = f" for three nights from June 12, 2025{party}{words[rooms_currency]}" if rooms_currency else ""
    query = (f"Find hotels in Paris for three nights from June 12, 2025{party}{words[search_currency]}, then list the "
             f"rooms of {pick_text}{rooms_clause}, then give me the booking conditions of {room_phrase}.")
    search: dict[str, Any] = {"dest_id": "$var_1.data[0].dest_id$", "search_type": "$var_1.data[0].search_type$",
                              "arrival_date": "2025-06-12", "departure_date": "2025-06-15"}
    if search_adults is not None:
        search["adults"] = search_adults
    if search_currency is not None:
        search["currency_code"] = search_currency
    rooms: dict[str, Any] = {"hotel_id": f"$var_2.data.hotels[{hotel_index}].hotel_id$",
                             "arrival_date": "2025-06-12", "departure_date": "2025-06-15"}
    if rooms_adults is not None:
        rooms["adults"] = rooms_adults
    if rooms_currency is not None:
        rooms["currency_code"] = rooms_currency
    prices = (300.0, 150.0, 90.0)
    pick = {"reader": "var_3", "source": "var_2", "list": "data.hotels", "select": "min", "by": "price.total",
            "where": {"field": "review_score", "kind": "above", "threshold": 8.0}, "text": "the cheapest hotel rated above 8"}
    return sample(query, [
        [call("var_1", "Search_Hotel_Destination", DESTINATION, query="Paris")],
        [call("var_2", "Search_Hotels", hotels(*zip(prices, scores, (1.0, 2.0, 3.0))), **search)],
        [call("var_3", "Get_Room_List", ROOMS, **rooms)],
        [call("var_4", "Get_Room_Booking_Conditions", {"status": True, "data": {"refundable": False}},
              block_id=f"$var_3.data.rooms[1].rates[{rate}].block_id$")]], picks=[pick])
