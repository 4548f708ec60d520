"""Stage3 keeps every variant meaning what its query says: new slot values are written only at the
words their provenance names, in those words' style, and every value that follows from them (a
stay's end, a party carried to the rooms) is read again from the new query, for the offline slot
fill and the LLM fill alike. Executed against the full-size travel world."""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest

from fcbench.catalog import load_tools_file
from fcbench.checks.gold_audit import gold_audit
from fcbench.checks.provenance import check_provenance, infer_provenance, recorded_provenance
from fcbench.config import load_pipelines
from fcbench.environments.execution import execute_gold_path
from fcbench.environments.python_env import PythonEnvironment
from fcbench.llm.mock_server import MockLLMServer
from fcbench.sample import Call, Sample, sample_to_dict, user_query
from generate.slots import load_value_pools, substitute_slots
from generate.stage3.single import run_stage3

REPO = Path(__file__).resolve().parents[3]
FULL = REPO / "datasets" / "travel-full"
POOLS = load_value_pools(FULL / "value_pools.json")
TOOLS = {tool.name: tool for tool in load_tools_file(FULL / "tools.json")}


@pytest.fixture(scope="module")
def environment():
    with PythonEnvironment(FULL / "tools.py", list(TOOLS.values()), workers=2, timeout=20, memory_limit_mb=512) as env:
        yield env


def _template(environment, query: str, steps: list[list[Call]], template_id: str = "tpl", **meta) -> Sample:
    names = sorted({c.name for step in steps for c in step})
    sample = Sample(id=template_id, messages=[{"role": "user", "content": query}], tools=[TOOLS[n] for n in names],
                    calls=steps, meta=meta)
    return execute_gold_path(sample, environment).sample


def week_and_car(environment) -> Sample:
    """travel-full-draft-0166's shape: hotels for a week, a car for three days, one trip."""
    query = ("Find hotels in Paris for a week starting June 12, 2025, then rent a car at Le Marais on June 12, 2025 "
             "at 5:45 pm and return it at Le Marais on June 15, 2025 at 5:45 pm.")
    return _template(environment, query, [
        [Call(label="var_1", name="Search_Hotel_Destination", arguments={"query": "Paris"}),
         Call(label="var_2", name="Search_Car_Location", arguments={"query": "Le Marais"})],
        [Call(label="var_3", name="Search_Hotels", arguments={
            "dest_id": "$var_1.data[0].dest_id$", "search_type": "$var_1.data[0].search_type$",
            "arrival_date": "2025-06-12", "departure_date": "2025-06-19"}),
         Call(label="var_4", name="Search_Car_Rentals", arguments={
             "pick_up_latitude": "$var_2.data[0].coordinates.latitude$",
             "pick_up_longitude": "$var_2.data[0].coordinates.longitude$",
             "drop_off_latitude": "$var_2.data[0].coordinates.latitude$",
             "drop_off_longitude": "$var_2.data[0].coordinates.longitude$",
             "pick_up_date": "2025-06-12", "drop_off_date": "2025-06-15", "pick_up_time": "17:45",
             "drop_off_time": "17:45"})]], template_id="week")


def test_a_new_stay_start_moves_the_week_and_only_the_words_that_state_it(environment):
    template = week_and_car(environment)
    provenance = infer_provenance(template, enum_vocabulary={}).provenance
    seen_times = set()
    for seed in range(8):
        substitution = substitute_slots(template, POOLS, random.Random(seed), provenance)
        assert substitution.problem is None, substitution.problem
        calls = {c.label: c.arguments for step in substitution.calls for c in step}
        hotel, car = calls["var_3"], calls["var_4"]
        start = hotel["arrival_date"]
        # "a week starting <new start>": the hotel's end is recomputed, never the pool's 3-night end
        from datetime import date, timedelta
        assert hotel["departure_date"] == (date.fromisoformat(start) + timedelta(days=7)).isoformat()
        stay = next(new for slot, _, new in substitution.changed if slot == "stay")
        assert car["pick_up_date"] == start == stay["start"] and car["drop_off_date"] == stay["end"]
        spelled = f"{date.fromisoformat(start):%B} {date.fromisoformat(start).day}, {date.fromisoformat(start).year}"
        assert f"a week starting {spelled}" in substitution.query
        # the time is said as a traveller says it, and reads back as the value
        said = re.search(r"at (\S+ [ap]m|noon)", substitution.query).group(1)
        assert car["pick_up_time"] == car["drop_off_time"]
        seen_times.add(car["pick_up_time"])
        assert ":" not in said or not said.startswith("0")
        variant = template.model_copy(update={"messages": [{"role": "user", "content": substitution.query}],
                                              "calls": substitution.calls})
        assert check_provenance(variant, substitution.provenance) == []
        assert ("var_3", "departure_date") in {(label, name) for label, name, _, _ in substitution.recomputed}
    assert len(seen_times) > 1  # times do vary (they were never substituted before: "5:45 pm" held no "17:45")


def test_a_word_elsewhere_in_the_query_that_spells_an_old_value_is_never_replaced(environment):
    """travel-full-draft-0003-v4: the sort's "cheapest" was replaced everywhere, the pick's words too."""
    query = ("Find flights from Paris to Rome on August 20, 2025 showing the cheapest offers first, then show me the "
             "details of the cheapest flight.")
    template = _template(environment, query, [
        [Call(label="var_1", name="Search_Flight_Location", arguments={"query": "Paris"}),
         Call(label="var_2", name="Search_Flight_Location", arguments={"query": "Rome"})],
        [Call(label="var_3", name="Search_Flights", arguments={"fromId": "$var_1.data[0].id$", "toId": "$var_2.data[0].id$",
                                                               "departDate": "2025-08-20", "sort": "CHEAPEST"})],
        [Call(label="var_4", name="Get_Flight_Details", arguments={"token": "$var_3.data.flightOffers[0].token$"})]],
        picks=[{"reader": "var_4", "source": "var_3", "list": "data.flightOffers", "select": "min", "by": "price.total",
                "text": "the cheapest flight"}])
    changed = 0
    for seed in range(12):
        substitution = substitute_slots(template, POOLS, random.Random(seed))
        assert substitution.problem is None, substitution.problem
        sort = next(c for step in substitution.calls for c in step if c.label == "var_3").arguments["sort"]
        assert "the details of the cheapest flight" in substitution.query  # the pick's words stay
        assert re.search(rf"showing the {dict(BEST='best', CHEAPEST='cheapest', FASTEST='fastest')[sort]} offers first",
                         substitution.query)
        assert sort not in substitution.query  # never the code
        changed += sort != "CHEAPEST"
    assert changed


def test_the_llm_fill_has_its_dependent_values_read_again_from_its_query(tmp_path, environment):
    template = week_and_car(environment)
    source = tmp_path / "templates.jsonl"
    source.write_text(json.dumps(sample_to_dict(template)) + "\n", encoding="utf-8")
    query = ("Find hotels in Rome for a week starting September 5, 2025, then rent a car at Trastevere on "
             "September 5, 2025 at 9 am and return it at Trastevere on September 8, 2025 at 9 am.")

    def scripted(body, call_index):
        if not body.get("tools"):
            return {"content": json.dumps({"query": query})}
        # the model gives the hotel the car's 3-day end: the query says a week
        return {"tool_calls": [
            {"name": "Search_Hotel_Destination", "arguments": {"query": "Rome"}},
            {"name": "Search_Car_Location", "arguments": {"query": "Trastevere"}},
            {"name": "Search_Hotels", "arguments": {"dest_id": "x", "search_type": "CITY", "arrival_date": "2025-09-05",
                                                    "departure_date": "2025-09-08"}},
            {"name": "Search_Car_Rentals", "arguments": {
                "pick_up_date": "2025-09-05", "drop_off_date": "2025-09-08", "pick_up_time": "09:00",
                "drop_off_time": "09:00"}}]}

    with MockLLMServer(responder=scripted) as server:
        pipelines = tmp_path / "pipelines.yaml"
        pipelines.write_text(
            "pipelines:\n  travel-full:\n"
            f"    dataset_dir: {tmp_path / 'dataset'}\n    seed: 5\n    tools: {FULL / 'tools.json'}\n"
            f"    environment: {{kind: python, module: {FULL / 'tools.py'}, timeout_s: 20, memory_mb: 512}}\n"
            f"    llm: {{model: mock-model, base_url: '{server.base_url}', seed: 0, max_retries: 0}}\n"
            "    stages:\n"
            f"      stage3: {{variants: 1, fill: llm, value_pools: {FULL / 'value_pools.json'}}}\n"
            "      filter: {grounding: reject}\n", encoding="utf-8")
        pipeline = load_pipelines(pipelines).get_pipeline("travel-full")
        result = run_stage3(pipeline, from_file=source, environment=environment)
    assert [r["reason"] for r in result.rejects] == []
    (variant,) = result.candidates
    hotel = next(c for c in variant.all_calls() if c.label == "var_3")
    assert hotel.arguments["departure_date"] == "2025-09-12"  # recomputed from "a week starting September 5"
    assert variant.meta["stage3"]["recomputed"] == [
        {"label": "var_3", "argument": "departure_date", "from": "2025-09-08", "to": "2025-09-12"}]
    recorded = recorded_provenance(variant)
    assert [s.text for s in recorded["var_3"]["departure_date"].spans] == ["September 5, 2025", "a week"]
    assert check_provenance(variant, recorded) == [] and gold_audit(variant, recorded) == []
    assert user_query(variant) == query


def test_a_10_mb_query_is_refused_by_stage3_without_reading_it(tmp_path, environment):
    """Derivation work is bounded per query: the template is rejected at once with its reason."""
    template = week_and_car(environment)
    huge = template.model_copy(update={"id": "huge", "messages": [
        {"role": "user", "content": user_query(template) + " and" * 2_500_000}]})
    source = tmp_path / "templates.jsonl"
    source.write_text(json.dumps(sample_to_dict(huge)) + "\n" + json.dumps(sample_to_dict(template)) + "\n",
                      encoding="utf-8")
    pipelines = tmp_path / "pipelines.yaml"
    pipelines.write_text(
        "pipelines:\n  travel-full:\n"
        f"    dataset_dir: {tmp_path / 'dataset'}\n    seed: 5\n    tools: {FULL / 'tools.json'}\n"
        f"    environment: {{kind: python, module: {FULL / 'tools.py'}, timeout_s: 20, memory_mb: 512}}\n"
        "    stages:\n"
        f"      stage3: {{variants: 2, fill: slots, value_pools: {FULL / 'value_pools.json'}}}\n"
        "      filter: {grounding: reject}\n", encoding="utf-8")
    result = run_stage3(load_pipelines(pipelines).get_pipeline("travel-full"), from_file=source, environment=environment)
    assert [(r["id"], r["reason"]) for r in result.rejects if r["parent_id"] == "huge"] == [("huge-v1", "stage3.query_too_long")]
    assert len(user_query(huge)) > 10_000_000
    assert [c.provenance.parent_id for c in result.candidates] == ["week", "week"]
