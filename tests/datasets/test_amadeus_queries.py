"""The amadeus drafts ask what a traveller asks (issue 26): no operation summary of the 11 published
descriptions pasted in, no API spelling, no glitch; every pick says which list it comes from; and
no gold feeds an argument from an entry that is not what it names."""

from __future__ import annotations

import json
import re
import shutil

import pytest

from conftest import EXTERNAL, REPO
from fcbench.checks.query_text import query_text_problems
from fcbench.config import load_pipelines
from fcbench.references import iter_references
from generate.stage1.single import run_stage1

AMADEUS = REPO / "datasets" / "amadeus"
DESCRIPTIONS = ["AirportCitySearch_v1", "CitySearch_v1", "FlightOffersSearch_v2", "FlightOffersPrice_v1", "HotelList_v1",
                "HotelSearch_v3", "HotelRatings_v2", "ToursandActivities_v1", "PointsOfInterest_v1", "TransferSearch_v1",
                "TransferBook_v1"]


def _words(text: str) -> str:
    return " ".join(re.findall(r"[a-z0-9]+", text.lower()))


def summaries() -> list[str]:
    """Every operation's `summary` and `description` first sentence in the published descriptions."""
    found = []
    for stem in DESCRIPTIONS:
        spec = json.loads((EXTERNAL / "amadeus" / f"{stem}_swagger_specification.json").read_text(encoding="utf-8"))
        for operations in spec.get("paths", {}).values():
            for operation in operations.values() if isinstance(operations, dict) else []:
                if not isinstance(operation, dict):
                    continue
                for key in ("summary", "description"):
                    text = str(operation.get(key) or "").strip()
                    first = _words(re.split(r"(?<=[.!?])\s", text, maxsplit=1)[0])
                    if len(first.split()) >= 3:
                        found.append(first)
    return sorted(set(found))


@pytest.fixture(scope="module")
def drafts(tmp_path_factory):
    """Stage1 of the bundled pipeline, replayed from the committed recorded answers, in a copy."""
    root = tmp_path_factory.mktemp("amadeus")
    dataset = root / "amadeus"
    shutil.copytree(AMADEUS, dataset, ignore=shutil.ignore_patterns("build"))
    text = (REPO / "pipelines.yaml").read_text(encoding="utf-8").replace("datasets/amadeus", str(dataset))
    (root / "pipelines.yaml").write_text(text.replace("datasets/", f"{REPO}/datasets/"), encoding="utf-8")
    pipeline = load_pipelines(root / "pipelines.yaml").get_pipeline("amadeus")
    return run_stage1(pipeline, offline=True).drafts


def test_every_draft_of_the_requested_count_is_made(drafts) -> None:
    assert len(drafts) == 40 and all(draft.provenance.prompt_file.endswith("phrases.txt") for draft in drafts)


def test_no_query_pastes_an_operation_summary(drafts) -> None:
    known = summaries()
    assert len(known) >= 15 and "returns a list of airports and cities matching a given keyword" in known
    for draft in drafts:
        query = f" {_words(draft.messages[-1]['content'])} "
        pasted = [summary for summary in known if f" {summary} " in query]
        assert not pasted, (draft.id, pasted)


def test_every_query_reads_as_a_user_writes(drafts) -> None:
    for draft in drafts:
        query = draft.messages[-1]["content"]
        assert query_text_problems(query, draft.tools) == [], (draft.id, query)
        assert not re.search(r"\bthe \w+ result\b", query), query  # a pick names what it picks


def test_no_call_reads_a_point_of_interest_as_a_location_or_looks_up_a_code_the_user_typed(drafts) -> None:
    """The wrong gold the hand audit found, at its source: getAirportCity fed a point of interest's
    id, flights fed from lookups that answer Munich for any code."""
    readers = {}
    for draft in drafts:
        labels = {call.label: call.name for call in draft.all_calls()}
        for call in draft.all_calls():
            for value in call.arguments.values():
                for reference in iter_references(value):
                    readers.setdefault(call.name, set()).add(labels[reference.label])
    assert readers.get("getAirportCity", set()) <= {"getAirportCitySearch"}
    assert "getFlightOffers" not in readers and readers.get("getOfferPricing", set()) <= {"getMultiHotelOffers"}
    assert {"getAirportCity", "getOfferPricing", "getPointOfInterest", "GETActivity"} <= set(readers)
