"""How datasets/amadeus was made, step by step (re-run any step to refresh it):

  .venv/bin/python datasets/amadeus/build.py import     # build-dataset new's files for the 11 descriptions + domains
  .venv/bin/python datasets/amadeus/build.py record     # Prism per description; stage1 + (with the export) the
                                                       # later stages with --record: fills recorded.json
Then `build-dataset run amadeus --offline` replays everything from recorded.json.

The pipeline entry in pipelines.yaml was appended by `build-dataset new amadeus --openapi ...` (the
files below) and then edited by hand: domains, seed, stage settings, the stage2 export.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
AMADEUS = REPO.parent / "shared" / "external" / "amadeus"
HERE = REPO / "datasets" / "amadeus"
DESCRIPTIONS = [AMADEUS / f"{stem}_swagger_specification.json" for stem in (
    "AirportCitySearch_v1", "CitySearch_v1", "FlightOffersSearch_v2", "FlightOffersPrice_v1", "HotelList_v1",
    "HotelSearch_v3", "HotelRatings_v2", "ToursandActivities_v1", "PointsOfInterest_v1", "TransferSearch_v1",
    "TransferBook_v1")]
# A draft mixes the tools of its domains: lookups go with the domain that uses their answers.
DOMAIN_OF_SOURCE = {"AirportCitySearch": "flights", "FlightOffersSearch": "flights", "FlightOffersPrice": "flights",
                    "CitySearch": "activities", "ToursandActivities": "activities", "PointsOfInterest": "activities",
                    "HotelList": "hotels", "HotelSearch": "hotels", "HotelRatings": "hotels",
                    "TransferSearch": "transfers", "TransferBook": "transfers"}

# Required arguments the descriptions give no example for: written by hand (like travel's pools),
# each used by the tools listed. Everything else in value_pools.json is seeded from the descriptions.
# `distinct`: two calls of one request draw two values (two searches look for two things).
HAND_SLOTS = {
    "place_code": {"description": "IATA city/airport codes a user types as a keyword (hand-written)",
                   "distinct": True,
                   "used_by": [{"tool": "getAirportCitySearch", "arguments": {"keyword": "value"}}],
                   "values": [{"value": code} for code in ("PAR", "LON", "MUC", "NYC", "BCN", "MAD")]},
    # a traveller names the airports of a flight by their codes: no lookup stands between what the
    # user says and the search (the descriptions' mock answers every lookup with Munich, and a
    # model that knows PAR would be scored wrong against a looked-up MUC)
    "flight_code": {"description": "IATA city codes of a flight's ends, as a traveller types them (hand-written)",
                    "distinct": True,
                    "used_by": [{"tool": "getFlightOffers", "arguments": {"originLocationCode": "value"}},
                                {"tool": "getFlightOffers", "arguments": {"destinationLocationCode": "value"}}],
                    "values": [{"value": code} for code in ("PAR", "LON", "MUC", "NYC", "BCN", "MAD")]},
    "transfer_from": {"description": "airports a transfer starts at (hand-written)",
                      "used_by": [{"tool": "getTransferOffers", "arguments": {"startLocationCode": "value"}}],
                      "values": [{"value": code} for code in ("CDG", "ORY", "LHR", "MUC")]},
    "departure_date": {"description": "departure dates (hand-written)",
                       "used_by": [{"tool": "getFlightOffers", "arguments": {"departureDate": "value"}}],
                       "values": [{"value": day} for day in ("2026-12-01", "2026-12-15", "2027-01-10", "2027-02-03")]},
    "transfer_start": {"description": "transfer pick-up date-times (hand-written)",
                       "used_by": [{"tool": "getTransferOffers", "arguments": {"startDateTime": "value"}}],
                       "values": [{"value": at} for at in ("2026-12-01T10:30:00", "2026-12-15T18:00:00")]},
    "party": {"description": "number of adult travellers (hand-written)",
              "used_by": [{"tool": "getFlightOffers", "arguments": {"adults": "value"}},
                          {"tool": "getMultiHotelOffers", "arguments": {"adults": "value"}}],
              "values": [{"value": n} for n in (1, 2, 3)]},
    "area": {"description": "bounding boxes (Amadeus's Barcelona and Paris examples, hand-written)",
             "used_by": [{"tool": tool, "arguments": {side: side for side in ("north", "west", "south", "east")}}
                         for tool in ("ListActivitiesBySquare", "getPointsOfInterestBySquare")],
             "values": [{"north": 41.397158, "west": 2.160873, "south": 41.394582, "east": 2.177181},
                        {"north": 48.91, "west": 2.25, "south": 48.8, "east": 2.41}]},
}


# API codes no query says: their words are not a user's (BEDBANK, analytics.travelers.score) or
# not valid for every tool the slot fills (quoteAirOffers' includes offered to GETCities)
UNSAID = {
    "hotelSource": ("BEDBANK", "DIRECTCHAIN", "ALL"), "radiusUnit": ("KM", "MILE"), "view": ("LIGHT", "FULL"),
    "paymentPolicy": ("GUARANTEE", "DEPOSIT", "NONE"), "sort": ("analytics.travelers.score",),
    "include": (["credit-card-fees"], ["bags"], ["other-services"], ["detailed-fare-rules"]),
    "amenities": (["NO_KID_ALLOWED"], ["NO_PORN_FILMS"], ["GUARDED_PARKG"], ["SERV_SPEC_MENU"], ["BAR or LOUNGE"],
                  ["WI-FI_IN_ROOM"], ["KIDS_WELCOME"], ["ANIMAL_WATCHING"]),
}


def import_descriptions() -> None:
    from fcbench.catalog.lint import lint_tools, count_by_code
    from fcbench.catalog.openapi import import_openapi
    from fcbench.jsonl import write_json
    from fcbench.pipeline.scaffold import catalog_record, value_pools

    imported = import_openapi(DESCRIPTIONS)
    assert not imported.errors, [n.describe() for n in imported.errors]
    records = [catalog_record(tool) for tool in imported.tools]
    for record in records:
        record["domain"] = DOMAIN_OF_SOURCE[record["http"]["openapi"]["source"].split("_")[0]]
    write_json(HERE / "tools.json", records, indent=2)
    pools = value_pools(imported.tools)
    pools["slots"].update(HAND_SLOTS)
    # the descriptions give one city code (PAR): more, so stage3 has other cities to substitute;
    # two hotel searches of one request are in two cities
    pools["slots"]["cityCode"]["values"] += [{"value": code} for code in ("LON", "NYC", "BCN", "MAD")]
    pools["slots"]["cityCode"]["distinct"] = True
    # coordinates a user does not type: hotels near a place are found from a place's answer
    for slot in ("latitude", "longitude"):
        del pools["slots"][slot]
    for slot, values in UNSAID.items():
        for value in pools["slots"][slot]["values"]:
            if value["value"] in values:
                value["unsaid"] = True
    write_json(HERE / "value_pools.json", pools, indent=2)
    findings = lint_tools(imported.tools)
    write_json(HERE / "import_report.json", {
        "files": [str(Path(f).relative_to(REPO.parent)) for f in imported.files], "tools": len(records),
        "notes": [n.as_dict() for n in imported.notes],
        "lint": {"counts": count_by_code(findings), "findings": [f.as_dict() for f in findings]}}, indent=2)
    print(f"{len(records)} tools, lint {count_by_code(findings)}")


def record(stages: list[str]) -> None:
    """Start Prism (one process per description), point the http environment at it in record
    mode, and run the stages: only calls not yet in recorded.json are sent."""
    from fcbench.config import load_pipelines
    from fcbench.environments.prism import start_prism

    pipeline = load_pipelines(REPO / "pipelines.yaml").get_pipeline("amadeus")
    with start_prism(DESCRIPTIONS, pipeline.build_dir / "prism-logs") as servers:
        pipeline.environment.record = True
        pipeline.environment.base_urls = servers.base_urls
        for stage in stages:
            print(stage, json.dumps(run_stage(pipeline, stage), default=str)[:400])


def run_stage(pipeline, stage: str):
    """One stage through the stage contract, offline (the LLM is not used while recording)."""
    from fcbench.pipeline.run import run_stage as run_declared_stage

    if stage not in ("stage1", "stage2", "stage3", "filter"):
        raise SystemExit(f"unknown stage {stage!r}")
    return run_declared_stage(stage, pipeline, offline=True).as_dict()


if __name__ == "__main__":
    command, *rest = sys.argv[1:] or ["help"]
    if command == "import":
        import_descriptions()
    elif command == "record":
        record(rest or ["stage1", "stage2", "stage3", "filter"])
    else:
        print(__doc__)
