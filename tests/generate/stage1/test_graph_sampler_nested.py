"""The graph sampler and the grounding check on nested real answers (OpenAPI imports): fields read
from example answers, a field a parameter's description names, a list of ids fed one id."""

from __future__ import annotations

import random

from fcbench.checks.grounding import ungrounded_values
from fcbench.sample import Call, Sample, Tool
from generate.stage1.graph_sampler import (DraftContext, FedArguments, OutputField, PhraseBook, PlanNode, _resolve_group,
                                    build_feed_graph, described_prefix, response_fields)
from generate.slots import ValuePools

CITIES = Tool(name="GETCities", parameters={"type": "object", "properties": {"keyword": {"type": "string"}}, "required": ["keyword"]},
              returns={"type": "object", "properties": {"data": {"type": "object"}},  # the schema says object...
                       "examples": [{"data": [{"iataCode": "PAR", "geoCode": {"latitude": 48.85, "longitude": 2.35}}]}]})
HOTELS = Tool(name="hotels_by_city", parameters={"type": "object", "required": ["cityCode"], "properties": {
    "cityCode": {"type": "string", "description": "Destination city code (3 chars IATA Code)."}}},
    returns={"type": "object", "examples": [{"data": [{"hotelId": "MCLONGHM", "name": "x"}]}]},
    meta={"endpoint": "/reference-data/locations/hotels/by-city"})
SENTIMENTS = Tool(name="sentiments", parameters={"type": "object", "required": ["hotelIds"], "properties": {
    "hotelIds": {"type": "array", "items": {"type": "string"}}}}, returns={"type": "object"})
OFFER = Tool(name="offer_pricing", parameters={"type": "object", "required": ["offerId"], "properties": {
    "offerId": {"type": "string"}}}, returns={"type": "object"})
CATALOG = [CITIES, HOTELS, SENTIMENTS, OFFER]


def test_fields_come_from_example_answers_through_nested_lists():
    paths = {field.text(): field.type for field in response_fields(CITIES.returns)}
    assert paths["data[].geoCode.latitude"] == "number" and paths["data[].iataCode"] == "string"


def test_feeds_through_a_described_field_and_a_list_of_ids():
    graph = build_feed_graph(CATALOG, ValuePools({}))
    (city_group,) = graph.groups["hotels_by_city"]
    assert city_group.sources() == ["GETCities"] and city_group.fields_from("GETCities")["cityCode"].text() == "data[].iataCode"
    (ids_group,) = graph.groups["sentiments"]
    assert ids_group.sources() == ["hotels_by_city"]  # hotelIds <- hotelId; not GETCities's bare fields
    assert "offer_pricing" not in graph.groups or not graph.groups["offer_pricing"]  # no `offer` in any source
    assert described_prefix("originLocationCode", "city/airport [IATA code](http://iata.org/x) from which", "iataCode") == ("origin", "location")
    assert described_prefix("cityCode", "a code", "iataCode") is None


def test_a_list_parameter_reads_one_nested_entry_and_the_path_is_grounded():
    graph = build_feed_graph(CATALOG, ValuePools({}))
    ctx = DraftContext(graph, ValuePools({}), PhraseBook({}, {}), random.Random(0), set(graph.tools), set(), None, None)
    ctx.nodes = [PlanNode("hotels_by_city", 0, label="var_1", subject="PAR"), PlanNode("sentiments", 0)]
    group = FedArguments(0, {"hotelIds": OutputField(("data", None, "hotelId"), "string")})
    response = {"data": [{"hotelId": "MCLONGHM"}, {"hotelId": "ADNYCCTB"}]}
    references, values = _resolve_group(ctx, ctx.nodes[1], group, {"var_1": response})
    assert references == {"hotelIds": ["$var_1.data[0].hotelId$"]} and values == {"hotelIds": ["MCLONGHM"]}
    sample = Sample(id="s", messages=[{"role": "user", "content": "Hotels in PAR, then the first one's sentiments."}],
                    tools=CATALOG, calls=[[Call(label="var_1", name="hotels_by_city", arguments={"cityCode": "PAR"}, response=response)],
                                          [Call(label="var_2", name="sentiments", arguments={"hotelIds": ["MCLONGHM"]}, response={})]])
    assert ungrounded_values(sample) == []  # a literal id found deep in an earlier answer is grounded
    sample.calls[1][0].arguments["hotelIds"] = ["NOTSEEN1"]
    assert [u.parameter for u in ungrounded_values(sample)] == ["hotelIds"]


# ---------------------------------------------------------------- feeds on the Amadeus descriptions
def _amadeus_graph():
    from pathlib import Path

    from fcbench.catalog import load_tools_file
    from generate.slots import load_value_pools

    here = Path(__file__).resolve().parents[3] / "datasets" / "amadeus"
    return build_feed_graph(load_tools_file(here / "tools.json"), load_value_pools(here / "value_pools.json"))


def _sources(graph, tool: str, parameter: str) -> dict[str, str]:
    group = next(g for g in graph.groups.get(tool, []) if parameter in g.parameters)
    return {source: group.fields_from(source)[parameter].text() for source in group.sources()}


def test_an_id_feeds_only_the_resource_it_identifies():
    """Issue 26's wrong gold: a point of interest's id read as an airport's location id, a flight
    offer's id priced as a hotel offer. The answers link each entry to itself: the link must be the
    reader's resource (`/reference-data/locations/{locationId}`, one path segment)."""
    graph = _amadeus_graph()
    assert _sources(graph, "getAirportCity", "locationId") == {"getAirportCitySearch": "data[].id"}
    assert _sources(graph, "getOfferPricing", "offerId") == {"getMultiHotelOffers": "data[].offers[].id"}
    assert set(_sources(graph, "getPointOfInterest", "poisId")) == {"getPointsOfInterest", "getPointsOfInterestBySquare"}
    assert set(_sources(graph, "GETActivity", "activityId")) == {"ListActivities", "ListActivitiesBySquare"}


def test_a_bare_code_feeds_nothing_and_flights_take_the_codes_a_traveller_types():
    graph = _amadeus_graph()
    # the transfer's start and the flight's ends come from the value pools, not from a vehicle's `code`
    # or a rate family's `code` (nor from a lookup a model could skip: PAR looked up gives MUC in the mock)
    assert not graph.groups.get("getTransferOffers") and not graph.groups.get("getFlightOffers")
    assert "getFlightOffers" not in graph.goals()


def test_example_answers_lead_where_the_schema_disagrees():
    from generate.stage1.graph_sampler import response_fields

    returns = {"type": "object", "properties": {"data": {"type": "object", "properties": {"offers": {
        "type": "array", "items": {"type": "object", "properties": {"id": {"type": "string"}}}}}}},
        "examples": [{"data": [{"offers": [{"id": "TSXOJ6LFQ2"}]}]}]}
    texts = [field.text() for field in response_fields(returns)]
    assert texts.index("data[].offers[].id") < texts.index("data.offers[].id")  # the real answer's shape first


# ------------------------------------------------------------ look-ups on the travel-full catalog
def _travel_full_graph():
    from pathlib import Path

    from fcbench.catalog import load_tools_file
    from generate.slots import load_value_pools

    here = Path(__file__).resolve().parents[3] / "datasets" / "travel-full"
    return build_feed_graph(load_tools_file(here / "tools.json"), load_value_pools(here / "value_pools.json"))


def test_a_search_that_restates_its_input_feeds_nothing():
    """Hand-checked travel-full-draft-0166-v3: the car's pick-up read from the hotel search's
    `search_center`, the coordinates that search was given: a model looks the place up instead.
    And "hotels near Empire State Building" read from the car search's `route_info.pick_up`
    (its `pick_up_latitude` restated, and moved to the city centre by the tool): wrong gold."""
    graph = _travel_full_graph()
    hotel_sources = _sources(graph, "Search_Hotels_By_Coordinates", "latitude")
    assert not any("route_info" in field or "search_center" in field for field in hotel_sources.values())
    # what a rental's details say of its pick-up is no restated argument (it takes a search key)
    assert hotel_sources.get("Get_Car_Rental_Details") == "data.pick_up.latitude"
    fields = {field for field in _sources(graph, "Search_Car_Rentals", "pick_up_latitude").values()}
    assert fields and not any("search_center" in field for field in fields)
    assert _sources(graph, "Search_Car_Rentals", "pick_up_latitude")["Search_Hotels_By_Coordinates"] == \
        "data.hotels[].latitude"  # a hotel's own place still feeds a car picked up there


def test_a_reader_takes_the_look_up_of_its_own_domain_even_in_a_cross_domain_draft():
    """Hand-checked travel-full-draft-0026-v5 and -0166-v3: hotels near a place read the car
    look-up's coordinates, a car rental the hotels' look-up (same coordinates, other calls than a
    model makes). With both domains' look-ups allowed and the other domain preferred, every draw
    takes a look-up of the reader's own domain (for cars, its own family's, not the taxi's)."""
    from generate.stage1.graph_sampler import _choose_source, _is_lookup

    graph = _travel_full_graph()
    domains = {"hotels", "car-rental"}
    for reader, parameter, natural in (
            ("Search_Hotels_By_Coordinates", "latitude", {"Location_to_Lat_Long", "Search_Hotel_Destination"}),
            ("Search_Car_Rentals", "pick_up_latitude", {"Search_Car_Location"})):
        group = next(g for g in graph.groups[reader] if parameter in g.parameters)
        assert {"Location_to_Lat_Long", "Search_Car_Location"} <= set(group.sources())  # both could feed it
        drawn = set()
        for seed in range(60):
            ctx = DraftContext(graph, ValuePools({}), PhraseBook({}, {}), random.Random(seed), set(graph.tools),
                               domains, None, None)
            drawn.add(_choose_source(ctx, reader, group, {reader}))
        assert {source for source in drawn if _is_lookup(source)} <= natural and drawn & natural, drawn


def test_a_place_the_user_names_is_looked_up_not_read_from_another_things_details():
    """Hand-checked travel-full-draft-0047-v5: "drop off at Sagrada Familia" read the attraction
    details' location, where the car's own look-up (the one its description names) finds the
    place; travel-chat-all conv-0035 was rejected by its annotator for the same. An entry of a
    search's results (the cheapest hotel: no name to look up) still feeds the car."""
    from generate.stage1.graph_sampler import _choose_source

    graph = _travel_full_graph()
    group = next(g for g in graph.groups["Search_Car_Rentals"] if "drop_off_latitude" in g.parameters)
    assert {"Get_Attraction_Details", "Search_Car_Location", "Search_Hotels_By_Coordinates"} <= set(group.sources())
    drawn = set()
    for seed in range(80):
        ctx = DraftContext(graph, ValuePools({}), PhraseBook({}, {}), random.Random(seed), set(graph.tools),
                           {"attractions", "hotels"}, None, None)
        drawn.add(_choose_source(ctx, "Search_Car_Rentals", group, {"Search_Car_Rentals"}))
    assert "Get_Attraction_Details" not in drawn and "Search_Car_Location" in drawn
    assert "Search_Hotels_By_Coordinates" in drawn  # a hotel found by a search: read from its entry


def test_a_draft_offers_one_route_to_each_thing_it_asks_for():
    """Hand-checked travel-full-draft-0081-v2: "hotels near Eiffel Tower" offered both the
    destination search (Search_Hotel_Destination, Search_Hotels) and the coordinates search
    (Location_to_Lat_Long, Search_Hotels_By_Coordinates): each finds its own "cheapest hotel", so a
    model taking the route the gold did not is scored wrong. A draft's goals reuse one route, and a
    distractor that can feed what a needed tool feeds is not offered."""
    from generate.stage1.graph_sampler import _rivals, sample_tool_subset

    graph = _travel_full_graph()
    routes = {"Search_Hotels", "Search_Hotels_By_Coordinates"}
    hotel_drafts = both_needed = 0
    for index in range(400):
        subset = sample_tool_subset(index, index % 3 == 0, graph, [4, 5, 6, 7, 8, 9], seed=20240601)
        offered, needed = set(subset.tools), set(subset.needed)
        assert needed <= offered and not (offered - needed) & _rivals(graph, needed), (index, subset)
        hotel_drafts += bool(offered & routes)
        if routes <= offered:  # only when two goals each ask for one (a hotel search and a car at a hotel)
            assert routes <= needed and len(subset.goals) == 2, (index, subset)
            both_needed += 1
    assert hotel_drafts > 100  # hotels are drafted often: the rule was exercised
    assert both_needed <= 4, both_needed
