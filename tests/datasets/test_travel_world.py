"""datasets/travel/: the bundled travel world. Its catalog loads and lints clean, every spec matches
its implementation, a ComplexFuncBench-style nested path runs through the real python environment
(the same responses every time), bad input is a tool error, and every value pool entry executes."""

from __future__ import annotations

import functools
import importlib.util
import inspect
import json
import sys
from collections.abc import Iterator
from types import ModuleType
from typing import Any

import jsonschema
import pytest
from conftest import REPO

from fcbench.catalog import load_tools_file
from fcbench.catalog.lint import lint_tools
from fcbench.environments import CallOutcome, ErrorReason
from fcbench.environments.python_env import PythonEnvironment
from fcbench.environments.execution import GoldPathResult, execute_gold_path
from fcbench.sample import Call, Difficulty, Sample, Tool, path_shape

TRAVEL = REPO / "datasets" / "travel"
TOOLS_MODULE = TRAVEL / "tools.py"
TOOLS_FILE = TRAVEL / "tools.json"
VALUE_POOLS = TRAVEL / "value_pools.json"
MAX_RESPONSE_BYTES = 6000  # "a few KB": what a model reads back must stay small


def load_module() -> ModuleType:
    spec = importlib.util.spec_from_file_location("travel_world_tools", TOOLS_MODULE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def module() -> ModuleType:
    return load_module()


@pytest.fixture(scope="module")
def tools() -> list[Tool]:
    return load_tools_file(TOOLS_FILE)


@pytest.fixture(scope="module")
def raw_specs() -> dict[str, dict[str, Any]]:
    return {spec["name"]: spec for spec in json.loads(TOOLS_FILE.read_text())}


@pytest.fixture(scope="module")
def environment(tools: list[Tool]) -> Iterator[PythonEnvironment]:
    with PythonEnvironment(TOOLS_MODULE, tools, workers=1, timeout=5) as pool:
        yield pool


@functools.cache
def returns_validator(name: str) -> jsonschema.protocols.Validator:
    """Built once per tool: `jsonschema.validate` re-checks the schema itself on every call."""
    spec = next(spec for spec in json.loads(TOOLS_FILE.read_text()) if spec["name"] == name)
    validator_class = jsonschema.validators.validator_for(spec["returns"])
    validator_class.check_schema(spec["returns"])
    return validator_class(spec["returns"])


def check_response(raw_specs: dict[str, dict[str, Any]], name: str, outcome: CallOutcome) -> Any:
    """The call succeeded, its response fits the tool's declared `returns` and is small."""
    assert outcome.ok, f"{name}: {outcome.error}"
    assert name in raw_specs
    returns_validator(name).validate(outcome.response)
    assert len(json.dumps(outcome.response)) <= MAX_RESPONSE_BYTES, f"{name} response too large"
    return outcome.response["data"]


# ------------------------------------------------------------------------------------------- catalog
def test_catalog_loads_and_lints_clean(tools: list[Tool]) -> None:
    assert len(tools) == 15
    assert lint_tools(tools) == []  # not even a warning
    by_name = {tool.name: tool for tool in tools}
    flights = by_name["Search_Flights"].parameters
    assert flights["required"] == ["fromId", "toId", "departDate"]
    assert flights["properties"]["cabinClass"]["enum"] == ["ECONOMY", "PREMIUM_ECONOMY", "BUSINESS", "FIRST"]
    assert flights["properties"]["departDate"]["format"] == "date"


def test_every_spec_has_an_implementation_with_the_same_parameters(module: ModuleType,
                                                                    raw_specs: dict[str, dict[str, Any]]) -> None:
    assert sorted(module.TOOLS) == sorted(raw_specs)
    for name, spec in raw_specs.items():
        function = module.TOOLS[name]
        assert function.__name__ == name
        signature = inspect.signature(function).parameters
        declared = spec["parameters"]["properties"]
        assert list(signature) == list(declared), name
        required_in_code = [p for p, parameter in signature.items() if parameter.default is inspect.Parameter.empty]
        assert required_in_code == spec["parameters"]["required"], name
        for parameter_name, parameter in signature.items():
            if "default" in declared[parameter_name]:
                assert parameter.default == declared[parameter_name]["default"], f"{name}.{parameter_name}"
        assert spec["domain"] in ("flights", "hotels", "car-rental", "attractions", "taxi")
        assert spec["returns"]["properties"]["data"], name


def test_module_exposes_only_tools_and_does_no_io_at_import() -> None:
    """Loaded twice, the world is the same (nothing random or clock-driven at import)."""
    first, second = load_module(), load_module()
    assert [h.place.name for h in first.HOTELS.values()] == [h.place.name for h in second.HOTELS.values()]
    assert list(first.HOTELS) == list(second.HOTELS)
    assert sorted(first.PRODUCTS) == sorted(second.PRODUCTS)
    assert len(first.CITIES) == 10 and len(first.HOTELS) == 80 and len(first.PRODUCTS) == 50


# ---------------------------------------------------------------------------------- the nested path
def call(label: str, name: str, **arguments: Any) -> Call:
    return Call(label=label, name=name, arguments=arguments)


def sydney_melbourne_sample(tools: list[Tool]) -> Sample:
    """ComplexFuncBench's 'Cross' shape: two flight locations and a geocode in parallel, then the
    flight search and the hotel search read ids and coordinates from them, then the cheapest
    offer's details are read through its token."""
    return Sample(
        id="travel-sydney-melbourne",
        messages=[{"role": "user", "content": (
            "Two of us fly from Sydney to Melbourne on 2025-11-15: find the cheapest economy flight, and its "
            "baggage allowance. We also need a room within 5 km of the Royal Botanic Gardens Victoria from "
            "2025-11-15 to 2025-11-18, prices in AUD.")}],
        tools=tools,
        calls=[
            [call("var_1", "Search_Flight_Location", query="Sydney"),
             call("var_2", "Search_Flight_Location", query="Melbourne"),
             call("var_3", "Location_to_Lat_Long", query="Royal Botanic Gardens Victoria, Melbourne")],
            [call("var_4", "Search_Flights", fromId="$var_1.data[0].id$", toId="$var_2.data[0].id$",
                  departDate="2025-11-15", adults=2, cabinClass="ECONOMY", sort="CHEAPEST", currency_code="AUD"),
             call("var_5", "Search_Hotels_By_Coordinates", latitude="$var_3.data[0].latitude$",
                  longitude="$var_3.data[0].longitude$", arrival_date="2025-11-15", departure_date="2025-11-18",
                  radius=5, adults=2, room_qty=1, currency_code="AUD")],
            [call("var_6", "Get_Flight_Details", token="$var_4.data.flightOffers[0].token$")],
        ],
    )


def run_sample(sample: Sample, tools: list[Tool], seed: int) -> GoldPathResult:
    with PythonEnvironment(TOOLS_MODULE, tools, workers=1, timeout=5, seed=seed) as pool:
        return execute_gold_path(sample, pool)


def test_sydney_melbourne_path_runs_nested_and_deterministic(tools: list[Tool],
                                                             raw_specs: dict[str, dict[str, Any]]) -> None:
    sample = sydney_melbourne_sample(tools)
    shape = path_shape(sample)
    assert (shape.difficulty, shape.n_steps, shape.n_calls, shape.nesting_depth) == (Difficulty.NESTED, 3, 6, 2)

    first = run_sample(sample, tools, seed=0)
    assert first.ok, first.failure
    second = run_sample(sample, tools, seed=12345)  # another pool, another seed: the world ignores both
    responses = [c.response for c in first.sample.all_calls()]
    assert responses == [c.response for c in second.sample.all_calls()]
    assert "response" not in sample.calls[0][0].model_fields_set  # the input sample is untouched

    runs = {run.label: run for run in first.path.runs}
    for run in runs.values():
        check_response(raw_specs, run.name, run.outcome)

    # the flight search got the ids the location searches returned (city ids come first)
    assert runs["var_4"].arguments["fromId"] == "SYD.CITY"
    assert runs["var_4"].arguments["toId"] == "MEL.CITY"
    sydney = [entry["id"] for entry in runs["var_1"].outcome.response["data"]]
    melbourne = [entry["id"] for entry in runs["var_2"].outcome.response["data"]]
    assert sydney == ["SYD.CITY", "SYD.AIRPORT"]
    assert melbourne == ["MEL.CITY", "MEL.AIRPORT", "AVV.AIRPORT"]  # Avalon: disambiguation matters

    offers = runs["var_4"].outcome.response["data"]["flightOffers"]
    assert len(offers) >= 3
    totals = [offer["price"]["total"] for offer in offers]
    assert totals == sorted(totals)  # CHEAPEST
    for offer in offers:
        assert offer["price"]["currency"] == "AUD" and offer["cabinClass"] == "ECONOMY"
        segment = offer["segments"][0]
        assert segment["departureAirport"]["code"] == "SYD"
        assert segment["arrivalAirport"]["code"] in ("MEL", "AVV")
        assert segment["departureTime"].startswith("2025-11-15T")
        assert offer["price"]["total"] == pytest.approx(2 * offer["price"]["perAdult"], abs=0.02)

    assert runs["var_5"].arguments["latitude"] == -37.8304  # the geocoded gardens
    hotels = runs["var_5"].outcome.response["data"]["hotels"]
    assert len(hotels) >= 3
    assert all(hotel["distance_km"] <= 5 for hotel in hotels)
    assert [hotel["distance_km"] for hotel in hotels] == sorted(hotel["distance_km"] for hotel in hotels)
    assert {hotel["city_name"] for hotel in hotels} == {"Melbourne"}
    assert all(hotel["price"]["currency"] == "AUD" and hotel["checkout_date"] == "2025-11-18" for hotel in hotels)

    details = runs["var_6"].outcome.response["data"]
    assert details["token"] == offers[0]["token"]
    assert details["price"] == offers[0]["price"]
    assert details["adults"] == 2 and details["tripType"] == "ONEWAY"
    assert details["segments"][0]["flightNumber"] == offers[0]["segments"][0]["flightNumber"]


def test_hotel_and_attraction_chains(environment: PythonEnvironment, tools: list[Tool],
                                     raw_specs: dict[str, dict[str, Any]]) -> None:
    """Destination id -> hotels -> rooms, and attraction destination -> products -> details ->
    hotels near the attraction: every id a tool takes comes from another tool's response."""
    sample = Sample(
        id="travel-rome", messages=[{"role": "user", "content": "Rome: rooms near the Colosseum, and a tour."}],
        tools=tools,
        calls=[
            [call("d", "Search_Hotel_Destination", query="Colosseum"),
             call("a", "Search_Attraction_Location", query="Rome")],
            [call("h", "Search_Hotels", dest_id="$d.data[0].dest_id$", search_type="$d.data[0].search_type$",
                  arrival_date="2026-04-03", departure_date="2026-04-10", sort_by="price"),
             call("p", "Search_Attractions", id="$a.data.destinations[0].id$", sortBy="lowest_price",
                  currency_code="EUR")],
            [call("r", "Get_Room_List", hotel_id="$h.data.hotels[0].hotel_id$", arrival_date="2026-04-03",
                  departure_date="2026-04-10", adults=3),
             call("x", "Get_Attraction_Details", slug="$p.data.products[0].slug$", currency_code="EUR")],
            [call("n", "Search_Hotels_By_Coordinates", latitude="$x.data.location.latitude$",
                  longitude="$x.data.location.longitude$", arrival_date="2026-04-03", departure_date="2026-04-10",
                  radius=2)],
        ],
    )
    result = execute_gold_path(sample, environment)
    assert result.ok, result.failure
    runs = {run.label: run for run in result.path.runs}
    for run in runs.values():
        check_response(raw_specs, run.name, run.outcome)
    assert runs["h"].arguments["search_type"] == "LANDMARK"
    hotel_list = runs["h"].outcome.response["data"]
    assert hotel_list["nights"] == 7 and hotel_list["hotels"]
    nightly = [hotel["price"]["per_night"] for hotel in hotel_list["hotels"]]
    assert nightly == sorted(nightly)
    rooms = runs["r"].outcome.response["data"]["rooms"]
    assert [room["fits_party"] for room in rooms] == [False, False, True]  # 3 adults: only the suite
    products = runs["p"].outcome.response["data"]["products"]
    assert [product["price"]["amount"] for product in products] == sorted(p["price"]["amount"] for p in products)
    assert runs["x"].outcome.response["data"]["cityName"] == "Rome"


def test_car_and_taxi_chains(environment: PythonEnvironment, tools: list[Tool],
                             raw_specs: dict[str, dict[str, Any]]) -> None:
    sample = Sample(
        id="travel-london", messages=[{"role": "user", "content": "London: car from Heathrow, taxi to the museum."}],
        tools=tools,
        calls=[
            [call("c", "Search_Car_Location", query="Heathrow"),
             call("t1", "Taxi_Search_Location", query="Heathrow"),
             call("t2", "Taxi_Search_Location", query="British Museum")],
            [call("r", "Search_Car_Rentals", pick_up_latitude="$c.data[0].coordinates.latitude$",
                  pick_up_longitude="$c.data[0].coordinates.longitude$",
                  drop_off_latitude="$c.data[0].coordinates.latitude$",
                  drop_off_longitude="$c.data[0].coordinates.longitude$", pick_up_date="2025-12-20",
                  drop_off_date="2025-12-27", pick_up_time="10:00", drop_off_time="09:00", driver_age=23,
                  currency_code="GBP"),
             call("x", "Search_Taxi", pick_up_place_id="$t1.data[0].googlePlaceId$",
                  drop_off_place_id="$t2.data[0].googlePlaceId$", pick_up_date="2025-12-20", pick_up_time="23:30")],
        ],
    )
    result = execute_gold_path(sample, environment)
    assert result.ok, result.failure
    runs = {run.label: run for run in result.path.runs}
    for run in runs.values():
        check_response(raw_specs, run.name, run.outcome)
    rental = runs["r"].outcome.response["data"]
    assert rental["rental_days"] == 7  # 10:00 on the 20th to 09:00 on the 27th
    assert rental["route_info"]["pick_up"]["name"] == "London Heathrow Airport"
    prices = [car["pricing_info"]["price"] for car in rental["search_results"]]
    assert len(prices) == 5 and prices == sorted(prices)
    assert all(car["pricing_info"]["young_driver_fee"] > 0 for car in rental["search_results"])
    assert all(car["pricing_info"]["one_way_fee"] == 0 for car in rental["search_results"])
    taxi = runs["x"].outcome.response["data"]
    assert taxi["journey"]["pickUpLocation"]["name"] == "London Heathrow Airport"
    assert taxi["journey"]["dropOffLocation"]["name"] == "British Museum"
    assert [offer["vehicleType"] for offer in taxi["results"]] == [
        "Standard", "Executive", "People carrier", "Large people carrier"]


# ---------------------------------------------------------------------------------------- candidates
@pytest.mark.parametrize(("tool", "query", "expected_first", "at_least"), [
    ("Search_Flight_Location", "London", "LON.CITY", 5),
    ("Search_Flight_Location", "Barcelona", "BCN.CITY", 3),
    ("Search_Flight_Location", "New York", "NYC.CITY", 4),
    ("Search_Hotel_Destination", "Melbourne", "Melbourne", 5),
    ("Location_to_Lat_Long", "Royal Botanic Garden", "Royal Botanic Garden Sydney", 2),
    ("Search_Car_Location", "Tokyo", "Tokyo", 5),
    ("Taxi_Search_Location", "Paris", "Paris", 5),
])
def test_searches_offer_several_candidates(environment: PythonEnvironment, raw_specs: dict[str, dict[str, Any]],
                                           tool: str, query: str, expected_first: str, at_least: int) -> None:
    data = check_response(raw_specs, tool, environment.call(tool, {"query": query}))
    assert len(data) >= at_least
    first = data[0]
    assert first.get("id", first.get("name")) == expected_first
    if tool == "Location_to_Lat_Long":  # the two gardens of the world: the city tells them apart
        assert {entry["formatted_address"].split(", ")[1] for entry in data} == {"Sydney", "Melbourne"}
    if tool == "Search_Hotel_Destination":
        assert {"CITY", "LANDMARK"} <= {entry["search_type"] for entry in data}
    if tool == "Taxi_Search_Location":  # the exact name first, then places named after the city
        assert [entry["type"] for entry in data[:3]] == ["city", "airport", "airport"]


def test_attraction_search_offers_products_and_destinations(environment: PythonEnvironment,
                                                           raw_specs: dict[str, dict[str, Any]]) -> None:
    data = check_response(raw_specs, "Search_Attraction_Location",
                          environment.call("Search_Attraction_Location", {"query": "Barcelona"}))
    assert len(data["products"]) == 5 and [d["cityName"] for d in data["destinations"]] == ["Barcelona"]
    sight = check_response(raw_specs, "Search_Attraction_Location",
                           environment.call("Search_Attraction_Location", {"query": "Sagrada Familia"}))
    assert [p["title"] for p in sight["products"]] == ["Sagrada Familia guided visit"] and sight["destinations"] == []


# ------------------------------------------------------------------------------------------ bad input
@pytest.mark.parametrize(("tool", "arguments", "message"), [
    ("Search_Flights", {"fromId": "XXX.AIRPORT", "toId": "MEL.CITY", "departDate": "2025-11-15"}, "not a known id"),
    ("Search_Flights", {"fromId": "SYD.CITY", "toId": "MEL.CITY", "departDate": "15/11/2025"}, "YYYY-MM-DD"),
    ("Search_Flights", {"fromId": "SYD.CITY", "toId": "MEL.CITY", "departDate": "2025-02-30"}, "not a calendar date"),
    ("Search_Flights", {"fromId": "SYD.CITY", "toId": "MEL.CITY", "departDate": "2025-11-15",
                        "returnDate": "2025-11-10"}, "before departDate"),
    ("Search_Flights", {"fromId": "MEL.AIRPORT", "toId": "MEL.CITY", "departDate": "2025-11-15"}, "same city"),
    ("Search_Flights", {"fromId": "SYD.CITY", "toId": "MEL.CITY", "departDate": "2025-11-15",
                        "cabinClass": "LUXURY"}, "cabinClass must be one of"),
    ("Get_Flight_Details", {"token": "FOT_bm9wZQ_0000"}, "not a flight token"),
    ("Search_Hotels", {"dest_id": "-2001001", "search_type": "DISTRICT", "arrival_date": "2025-11-15",
                       "departure_date": "2025-11-18"}, "is a CITY destination"),
    ("Search_Hotels", {"dest_id": "42", "search_type": "CITY", "arrival_date": "2025-11-15",
                       "departure_date": "2025-11-18"}, "not known"),
    ("Search_Hotels_By_Coordinates", {"latitude": -37.8, "longitude": 144.9, "arrival_date": "2025-11-18",
                                      "departure_date": "2025-11-15"}, "must be after arrival_date"),
    ("Search_Hotels_By_Coordinates", {"latitude": 95, "longitude": 144.9, "arrival_date": "2025-11-15",
                                      "departure_date": "2025-11-18"}, "latitude must be a number"),
    ("Get_Room_List", {"hotel_id": 1, "arrival_date": "2025-11-15", "departure_date": "2025-11-18"},
     "not a known hotel"),
    ("Search_Car_Rentals", {"pick_up_latitude": 0.0, "pick_up_longitude": 0.0, "drop_off_latitude": 0.0,
                            "drop_off_longitude": 0.0, "pick_up_date": "2025-11-15", "drop_off_date": "2025-11-18",
                            "pick_up_time": "10:00", "drop_off_time": "10:00"}, "no car rental desk"),
    ("Search_Car_Rentals", {"pick_up_latitude": 51.47, "pick_up_longitude": -0.4543, "drop_off_latitude": 49.0097,
                            "drop_off_longitude": 2.5479, "pick_up_date": "2025-11-15", "drop_off_date": "2025-11-18",
                            "pick_up_time": "10:00", "drop_off_time": "10:00"}, "across borders"),
    ("Search_Car_Rentals", {"pick_up_latitude": 51.47, "pick_up_longitude": -0.4543, "drop_off_latitude": 51.47,
                            "drop_off_longitude": -0.4543, "pick_up_date": "2025-11-15", "drop_off_date": "2025-11-18",
                            "pick_up_time": "25:00", "drop_off_time": "10:00"}, "HH:MM"),
    ("Search_Attractions", {"id": "nowhere"}, "not an attraction destination"),
    ("Get_Attraction_Details", {"slug": "no-such-tour"}, "not a known attraction"),
    ("Search_Taxi", {"pick_up_place_id": "ChIJnothing", "drop_off_place_id": "ChIJnothing",
                     "pick_up_date": "2025-11-15", "pick_up_time": "10:00"}, "not a known place"),
    ("Search_Flight_Location", {"query": "  "}, "non-empty string"),
])
def test_bad_input_is_a_tool_error(environment: PythonEnvironment, tool: str, arguments: dict[str, Any],
                                   message: str) -> None:
    outcome = environment.call(tool, arguments)
    assert not outcome.ok and outcome.reason is ErrorReason.TOOL_ERROR
    assert outcome.error is not None and "ValueError" in outcome.error and message in outcome.error


def test_taxi_between_cities_is_refused(environment: PythonEnvironment) -> None:
    sydney = environment.call("Taxi_Search_Location", {"query": "Sydney Opera House"}).response["data"][0]
    melbourne = environment.call("Taxi_Search_Location", {"query": "Federation Square"}).response["data"][0]
    outcome = environment.call("Search_Taxi", {"pick_up_place_id": sydney["googlePlaceId"],
                                               "drop_off_place_id": melbourne["googlePlaceId"],
                                               "pick_up_date": "2025-11-15", "pick_up_time": "10:00"})
    assert outcome.reason is ErrorReason.TOOL_ERROR and "a taxi ride is at most" in (outcome.error or "")


def test_a_failing_call_stops_the_path_without_crashing(environment: PythonEnvironment, tools: list[Tool]) -> None:
    sample = sydney_melbourne_sample(tools)
    flights = sample.calls[1][0]
    bad_flights = flights.model_copy(update={"arguments": {**flights.arguments, "departDate": "tomorrow"}})
    broken = sample.model_copy(update={"calls": [sample.calls[0], [bad_flights, sample.calls[1][1]], sample.calls[2]]})
    result = execute_gold_path(broken, environment)
    assert not result.ok
    assert result.failure is not None and result.failure.name == "Search_Flights"
    assert result.failure.outcome.reason is ErrorReason.TOOL_ERROR
    assert len(result.path.runs) == 5  # the details call after the failed step never ran
    assert "response" not in result.sample.calls[2][0].model_fields_set
    missing = environment.call("Search_Flights", {"fromId": "SYD.CITY"})
    assert missing.reason is ErrorReason.BAD_ARGUMENTS and "departDate" in (missing.error or "")


# --------------------------------------------------------------------------------------- value pools
def base_calls(environment: PythonEnvironment) -> dict[str, dict[str, Any]]:
    """A known-good call per tool, into which a slot's fields are substituted."""
    def data(tool: str, arguments: dict[str, Any]) -> Any:
        outcome = environment.call(tool, arguments)
        assert outcome.ok, outcome.error
        return outcome.response["data"]

    stay = {"arrival_date": "2025-11-15", "departure_date": "2025-11-18"}
    hotel_id = data("Search_Hotels", {"dest_id": "-2001001", "search_type": "CITY", **stay})["hotels"][0]["hotel_id"]
    places = [data("Taxi_Search_Location", {"query": q})[0]["googlePlaceId"] for q in ("Heathrow", "Tower of London")]
    paris = data("Search_Attraction_Location", {"query": "Paris"})
    return {
        "Search_Flights": {"fromId": "SYD.CITY", "toId": "MEL.CITY", "departDate": "2025-11-15"},
        "Search_Hotels": {"dest_id": "-2001001", "search_type": "CITY", **stay},
        "Search_Hotels_By_Coordinates": {"latitude": -33.8568, "longitude": 151.2153, **stay},
        "Get_Room_List": {"hotel_id": hotel_id, **stay},
        "Search_Car_Rentals": {"pick_up_latitude": -33.9399, "pick_up_longitude": 151.1753,
                               "drop_off_latitude": -33.8688, "drop_off_longitude": 151.2093,
                               "pick_up_date": "2025-11-15", "drop_off_date": "2025-11-18",
                               "pick_up_time": "10:00", "drop_off_time": "10:00"},
        "Search_Attractions": {"id": paris["destinations"][0]["id"]},
        "Get_Attraction_Details": {"slug": paris["products"][0]["productSlug"]},
        "Search_Taxi": {"pick_up_place_id": places[0], "drop_off_place_id": places[1],
                        "pick_up_date": "2025-11-15", "pick_up_time": "10:00"},
    }


def test_every_value_pool_entry_executes(environment: PythonEnvironment, raw_specs: dict[str, dict[str, Any]]) -> None:
    pools = json.loads(VALUE_POOLS.read_text())["slots"]
    bases = base_calls(environment)
    planned: list[tuple[str, str, str, dict[str, Any], dict[str, Any]]] = []  # slot, tool, argument set, value
    for slot_name, slot in pools.items():
        assert slot["values"] and slot["used_by"], slot_name
        for value in slot["values"]:
            for use in slot["used_by"]:
                arguments = {**bases.get(use["tool"], {}),
                             **{argument: value[field] for argument, field in use["arguments"].items()}}
                planned.append((slot_name, use["tool"], json.dumps(value), arguments, value))
    outcomes = environment.call_step([(tool, arguments) for _, tool, _, arguments, _ in planned])
    assert len(planned) == 672
    for (slot_name, tool, shown, _, value), outcome in zip(planned, outcomes):
        assert outcome.ok, f"{slot_name} {shown} in {tool}: {outcome.error}"
        data = check_response(raw_specs, tool, outcome)
        if "query" in value:  # a place: the search finds it
            found = data["products"] + data["destinations"] if tool == "Search_Attraction_Location" else data
            assert found, f"{slot_name} {shown}: {tool} found nothing"
        if slot_name in ("district", "landmark") and tool == "Location_to_Lat_Long":
            assert data[0]["name"] == value["query"]  # the place itself comes first
        if slot_name == "airport" and tool == "Search_Flight_Location":
            assert data[0]["id"] == value["flight_id"]
        if slot_name == "city" and tool == "Search_Flight_Location":
            assert data[0]["id"] == value["flight_id"]
