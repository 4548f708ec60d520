"""Writes tests/data/ambiguity_checked.jsonl: 50 stage1 drafts and, for each, the ambiguities a
person found by reading it (see tests/data/README.md). The judgments below were written by hand,
draft by draft, before the warnings were measured against them; this script only joins them to the
drafts `build-dataset stage1 travel` and `build-dataset stage1 amadeus` write offline.

    build-dataset stage1 travel --offline && build-dataset stage1 amadeus --offline
    .venv/bin/python tests/data/make_ambiguity_checked.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
OUT = REPO / "tests" / "data" / "ambiguity_checked.jsonl"
TRAVEL_IDS = [f"travel-draft-{n:04d}" for n in range(1, 27)]  # the first 26 travel drafts; all 24 amadeus ones
# the other 14 travel drafts, judged by the same rule AFTER the warnings were revised on the 50
# above: a check that the revision did not just learn the 50 (split "held_out")
HELD_OUT_IDS = [f"travel-draft-{n:04d}" for n in range(27, 41)]

# draft id -> (one line on the draft, {"call.argument": why it is ambiguous})
AIRPORT_OR_CITY = "the query names a city; its airports (other entries) would serve the request as well"
JUDGED: dict[str, tuple[str, dict[str, str]]] = {
    "travel-draft-0001": ("'from Paris to London': city picked among the city and its airports; the flight is "
                          "'the second flight' (decided)",
                          {"var_3.fromId": AIRPORT_OR_CITY + " (PAR.CITY vs CDG, ORY)",
                           "var_3.toId": AIRPORT_OR_CITY + " (LON.CITY vs LHR, LGW, LCY, STN)"}),
    "travel-draft-0002": ("'the second attraction' decides the slug; Melbourne has one destination",  {}),
    "travel-draft-0003": ("one-entry location list: nothing to choose", {}),
    "travel-draft-0004": ("'from Paris': city among its airports; Gatwick and London's destination have one entry",
                          {"var_5.fromId": AIRPORT_OR_CITY + " (PAR.CITY vs CDG, ORY)"}),
    "travel-draft-0005": ("every list read has one entry", {}),
    "travel-draft-0006": ("every list read has one entry", {}),
    "travel-draft-0007": ("'from New York to Berlin': city codes picked among airports",
                          {"var_3.fromId": AIRPORT_OR_CITY + " (NYC.CITY vs JFK, LGA, EWR)",
                           "var_3.toId": AIRPORT_OR_CITY + " (BER.CITY vs BER.AIRPORT)"}),
    "travel-draft-0008": ("'near Kensington': the area or one of two hotels named after it; 'the third hotel' decided",
                          {"var_2.latitude": "Kensington Park Hotel and Kensington Grand Hotel are also 'Kensington'",
                           "var_2.longitude": "same entry choice as the latitude"}),
    "travel-draft-0009": ("one destination: nothing to choose", {}),
    "travel-draft-0010": ("'hotels in Sentosa': district, a landmark and two hotels on Sentosa; 'to Singapore': the "
                          "city or four places in it; 'the second hotel' decided",
                          {"var_4.dest_id": "Sentosa Universal Studios, Sentosa Suites, Sentosa Inn also match 'Sentosa'",
                           "var_4.search_type": "follows the same choice: DISTRICT, LANDMARK or HOTEL",
                           "var_5.drop_off_place_id": "Changi Airport, Botanic Gardens, Gardens by the Bay, Merlion "
                                                      "Park are all 'Singapore'"}),
    "travel-draft-0011": ("'to Sentosa': the island or three places on it; 'the second attraction' decided",
                          {"var_5.drop_off_place_id": "Sentosa Universal Studios, Sentosa Suites, Sentosa Inn are on "
                                                      "Sentosa too"}),
    "travel-draft-0012": ("every list read has one entry", {}),
    "travel-draft-0013": ("every list read has one entry", {}),
    "travel-draft-0014": ("four place names, each matching the place and hotels or sights in it",
                          {"var_5.pick_up_place_id": "Barceloneta Lodge and Barceloneta Boutique Hotel are in "
                                                     "Barceloneta too",
                           "var_5.drop_off_place_id": "Gracia Grand Hotel and Gracia Residences are in Gracia too",
                           "var_6.pick_up_latitude": "'at Barcelona': the city, El Prat, Girona airport, Sagrada "
                                                     "Familia, Park Guell",
                           "var_6.pick_up_longitude": "same entry choice as the latitude",
                           "var_6.drop_off_latitude": "Gothic Quarter Inn and Gothic Quarter Lodge are in the quarter",
                           "var_6.drop_off_longitude": "same entry choice as the latitude"}),
    "travel-draft-0015": ("one landmark entry; 'the second hotel' decided", {}),
    "travel-draft-0016": ("'Tell me about London': any of five London products; 'the first attraction' decides the "
                          "Barcelona one; currency SGD is in the query",
                          {"var_4.slug": "British Museum, Tower of London, London Eye, Hyde Park tours are all "
                                         "'about London'"}),
    "travel-draft-0017": ("every list read has one entry", {}),
    "travel-draft-0018": ("one destination: nothing to choose", {}),
    "travel-draft-0019": ("'to Sydney': the city or four places in it",
                          {"var_3.drop_off_place_id": "the airport, Opera House, Harbour Bridge, Botanic Garden are "
                                                      "all in Sydney"}),
    "travel-draft-0020": ("'from Shinjuku': the district or two hotels in it; Tokyo Tower has one entry",
                          {"var_3.pick_up_place_id": "Shinjuku Grand Hotel and Shinjuku Residences are in Shinjuku"}),
    "travel-draft-0021": ("one product: nothing to choose", {}),
    "travel-draft-0022": ("every list read has one entry", {}),
    "travel-draft-0023": ("every list read has one entry", {}),
    "travel-draft-0024": ("one product: nothing to choose", {}),
    "travel-draft-0025": ("every list read has one entry", {}),
    "travel-draft-0026": ("every list read has one entry", {}),
    "amadeus-draft-0001": ("'locationId the second result' decides data[1]", {}),
    "amadeus-draft-0003": ("'locationId the first result' decides data[0]", {}),
    "amadeus-draft-0004": ("'locationId the first result' decides data[0]", {}),
    "amadeus-draft-0005": ("'poisId the second result', 'locationId the third result' decide; the two geoCodes of "
                           "var_2 are equal", {}),
    "amadeus-draft-0007": ("one-entry hotel lists (the transfer from a country code is wrong, not ambiguous)", {}),
    "amadeus-draft-0008": ("'the third result', 'the second result' decide both coordinate picks", {}),
    "amadeus-draft-0009": ("every pick is named 'the first/second result'; the two iataCodes of var_2 are equal", {}),
    "amadeus-draft-0011": ("'locationId the second result' decides; both iataCodes are MUC", {}),
    "amadeus-draft-0013": ("'locationId the first result' decides; both iataCodes are MUC", {}),
    "amadeus-draft-0018": ("'hotelIds the first result', 'poisId the third result' decide", {}),
    "amadeus-draft-0020": ("one-entry lists", {}),
    "amadeus-draft-0021": ("'the second result' and 'the first result' decide both hotel picks", {}),
    "amadeus-draft-0024": ("one-entry lists", {}),
    "amadeus-draft-0027": ("'the second result' then 'the first result' decide the two locationIds", {}),
    "amadeus-draft-0028": ("'locationId the second result' decides; both countryCodes are DE", {}),
    "amadeus-draft-0030": ("one-entry list", {}),
    "amadeus-draft-0031": ("one-entry list", {}),
    "amadeus-draft-0034": ("'poisId the second result' decides; the activity lists have one entry", {}),
    "amadeus-draft-0035": ("'locationId the first result' decides", {}),
    "amadeus-draft-0036": ("'hotelIds the second result', 'latitude the first result' decide", {}),
    "amadeus-draft-0037": ("both candidates give the same iataCode MUC", {}),
    "amadeus-draft-0038": ("one-entry list", {}),
    "amadeus-draft-0039": ("one-entry list", {}),
    "amadeus-draft-0040": ("'locationId the second result' decides; both iataCodes are MUC", {}),
}
JUDGED_HELD_OUT: dict[str, tuple[str, dict[str, str]]] = {
    "travel-draft-0027": ("one destination: nothing to choose", {}),
    "travel-draft-0028": ("'from Melbourne to Southbank': each names a place and places or hotels in it",
                          {"var_3.pick_up_place_id": "Melbourne Airport, Cricket Ground, CBD Plaza, CBD Suites are "
                                                     "all 'Melbourne'",
                           "var_3.drop_off_place_id": "Southbank Plaza and Southbank Suites are in Southbank"}),
    "travel-draft-0029": ("'tell me about Sydney': any of five Sydney products; 'the second attraction' decides the "
                          "Barcelona one; Gothic Quarter has one entry",
                          {"var_5.slug": "Opera House, Harbour Bridge, Botanic Garden, Taronga Zoo are all 'about "
                                         "Sydney'"}),
    "travel-draft-0030": ("'hotels in Paris': the city or four of its districts (the bundled senior deleted "
                          "them); 'the second hotel' decided",
                          {"var_2.dest_id": "Le Marais, Montmartre, Saint-Germain, Champs-Elysees are in Paris",
                           "var_2.search_type": "follows the same choice: CITY or DISTRICT"}),
    "travel-draft-0031": ("one destination: nothing to choose", {}),
    "travel-draft-0032": ("every list read has one entry", {}),
    "travel-draft-0033": ("one destination: nothing to choose", {}),
    "travel-draft-0034": ("every list read has one entry", {}),
    "travel-draft-0035": ("'to Trastevere': the district or two hotels in it; Trevi Fountain has one entry",
                          {"var_5.drop_off_place_id": "Trastevere Suites and Trastevere Inn are in Trastevere"}),
    "travel-draft-0036": ("'from Kensington': the area or two hotels named after it",
                          {"var_3.pick_up_place_id": "Kensington Park Hotel and Kensington Grand Hotel are in "
                                                     "Kensington"}),
    "travel-draft-0037": ("'from Berlin to Tokyo': city codes picked among airports",
                          {"var_3.fromId": AIRPORT_OR_CITY + " (BER.CITY vs BER.AIRPORT)",
                           "var_3.toId": AIRPORT_OR_CITY + " (TYO.CITY vs HND, NRT)"}),
    "travel-draft-0038": ("every list read has one entry", {}),
    "travel-draft-0039": ("'from Melbourne to London': city codes among airports; 'the second flight' decided",
                          {"var_3.fromId": AIRPORT_OR_CITY + " (MEL.CITY vs MEL.AIRPORT, AVV)",
                           "var_3.toId": AIRPORT_OR_CITY + " (LON.CITY vs LHR, LGW, LCY, STN)"}),
    "travel-draft-0040": ("every list read has one entry", {}),
}


def main() -> None:
    sys.path.insert(0, str(REPO))
    from fcbench.catalog import load_tools_file

    rows = []
    for pipeline, wanted in (("travel", set(TRAVEL_IDS) | set(HELD_OUT_IDS)), ("amadeus", None)):
        catalog = {tool.name: tool.model_dump(mode="json", exclude_unset=True)
                   for tool in load_tools_file(REPO / "datasets" / pipeline / "tools.json")}
        for line in (REPO / "datasets" / pipeline / "build" / "drafts.jsonl").read_text().splitlines():
            draft = json.loads(line)
            if wanted is not None and draft["id"] not in wanted:
                continue
            split = "held_out" if draft["id"] in JUDGED_HELD_OUT else "hand_checked"
            note, ambiguities = {**JUDGED, **JUDGED_HELD_OUT}[draft["id"]]
            names = [tool["name"] for tool in draft["tools"]]
            if any(catalog.get(tool["name"]) != tool for tool in draft["tools"]):
                sys.exit(f"{draft['id']}: its tools differ from datasets/{pipeline}/tools.json; store them whole")
            rows.append({"id": draft["id"], "pipeline": pipeline, "split": split, "note": note,
                         "ambiguities": [{"key": key, "reason": reason} for key, reason in ambiguities.items()],
                         "tool_names": names, "draft": {key: value for key, value in draft.items() if key != "tools"}})
    missing = (set(JUDGED) | set(JUDGED_HELD_OUT)) - {row["id"] for row in rows}
    if missing:
        sys.exit(f"judged drafts not found: {sorted(missing)}")
    OUT.write_text("".join(json.dumps(row, ensure_ascii=False, sort_keys=True) + "\n" for row in rows))
    print(f"{sum(row['split'] == 'hand_checked' for row in rows)} hand-checked drafts + "
          f"{sum(row['split'] == 'held_out' for row in rows)} held out, {sum(len(row['ambiguities']) for row in rows)} ambiguities -> {OUT}")


if __name__ == "__main__":
    main()
