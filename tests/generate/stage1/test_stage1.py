"""Stage1 coarse generation on the bundled travel world.

Offline: the graph sampler's drafts validate, re-execute through fcbench.environments.execution reproducing
every stored response, pass the filter's format and grounding checks, are nested, and are
byte-identical for the same seed. With an LLM: a scripted run against the local OpenAI-compatible
server over HTTP (query-writing answer, tool-call turns, a final text) gives the expected draft;
malformed output is rejected with its reason and raw text; a second run is served by the cache."""

from __future__ import annotations

import hashlib
import json
import re
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from fcbench.catalog import load_tools_file
from fcbench.cli import app
from fcbench.config import PipelineConfig, load_pipelines
from fcbench.environments.python_env import PythonEnvironment
from fcbench.environments.execution import execute_gold_paths
from fcbench.checks.verdicts import comparison_of, execution_verdict, static_verdict
from fcbench.formats import read_samples
from fcbench.references import parse_reference
from fcbench.sample import Sample, path_shape, sample_to_dict
from fcbench.checks.validate import validate_record
from generate.stage1.graph_sampler import DEFAULT_PHRASES, build_feed_graph, matched_prefix, output_fields
from fcbench.llm.mock_server import MockLLMServer
from generate.slots import load_value_pools
from generate.stage1.single import QUERY_PROMPT, reference_earlier_outputs, run_stage1

REPO = Path(__file__).resolve().parents[3]
TRAVEL = REPO / "datasets" / "travel"
FLIGHT_TOOLS = ("Search_Flight_Location", "Search_Flights", "Get_Flight_Details")


def write_pipeline(tmp_path: Path, *, seed: int = 20240601, queries: int = 40, offline: bool = True,
                   llm_url: str | None = None, tools_file: Path = TRAVEL / "tools.json",
                   cross_domain_ratio: float = 0.25, name: str = "travel", pools: bool = True) -> PipelineConfig:
    """The travel pipeline of pipelines.yaml, building into tmp_path instead of the repository."""
    llm = (f"    llm: {{model: mock-model, base_url: '{llm_url}', seed: 0, concurrency: 2, max_retries: 0}}\n"
           if llm_url else "")
    text = (
        "pipelines:\n"
        f"  {name}:\n"
        f"    dataset_dir: {tmp_path / 'dataset'}\n"
        f"    seed: {seed}\n"
        f"    tools: {tools_file}\n"
        f"    environment: {{kind: python, module: {TRAVEL / 'tools.py'}, timeout_s: 5, workers: 2}}\n"
        f"{llm}"
        "    stages:\n"
        f"      stage1: {{offline: {str(offline).lower()}, queries: {queries}, tool_subset_sizes: [3, 4, 5], "
        f"cross_domain_ratio: {cross_domain_ratio}, max_steps: 6}}\n"
        + (f"      stage3: {{variants: 3, fill: slots, value_pools: {TRAVEL / 'value_pools.json'}}}\n" if pools
           else "      stage3: {variants: 3, fill: llm}\n") +
        "      filter: {grounding: reject, repeat: 1}\n"
    )
    tmp_path.mkdir(parents=True, exist_ok=True)
    path = tmp_path / "pipelines.yaml"
    path.write_text(text, encoding="utf-8")
    return load_pipelines(path).get_pipeline(name)


@pytest.fixture(scope="module")
def travel_tools():
    return load_tools_file(TRAVEL / "tools.json")


@pytest.fixture(scope="module")
def environment(travel_tools):
    with PythonEnvironment(TRAVEL / "tools.py", travel_tools, workers=2, timeout=5) as env:
        yield env


@pytest.fixture(scope="module")
def offline_run(tmp_path_factory, environment):
    tmp_path = tmp_path_factory.mktemp("stage1")
    pipeline = write_pipeline(tmp_path)
    return pipeline, run_stage1(pipeline, environment=environment)


# ------------------------------------------------------------------------------- the feed graph
def test_names_match_outputs_to_later_inputs():
    assert matched_prefix("fromId", "id") == ("from",)
    assert matched_prefix("pick_up_place_id", "googlePlaceId") == ("pick", "up")
    assert matched_prefix("slug", "productSlug") == ()
    assert matched_prefix("hotel_id", "hotel_id") == ()
    assert matched_prefix("arrival_date", "name") is None
    paths = [field.text() for field in output_fields({"type": "object", "properties": {"data": {
        "type": "array", "items": {"type": "object", "properties": {"id": {"type": "string"}}}}}})]
    assert paths == ["data[].id"]


def test_feed_graph_of_the_travel_catalog(travel_tools):
    graph = build_feed_graph(travel_tools, load_value_pools(TRAVEL / "value_pools.json"))
    flights = {group.words: group for group in graph.groups["Search_Flights"]}
    assert set(flights) == {("from",), ("to",)}
    assert flights[("from",)].sources() == ["Search_Flight_Location"]
    assert flights[("from",)].fields_from("Search_Flight_Location")["fromId"].text() == "data[].id"
    # the destination id and its search type come from the same entry of the same lookup
    (hotels,) = graph.groups["Search_Hotels"]
    assert hotels.parameters == ("dest_id", "search_type") and hotels.sources() == ["Search_Hotel_Destination"]
    # the description names both tools that give a slug
    (details,) = graph.groups["Get_Attraction_Details"]
    assert details.sources() == ["Search_Attraction_Location", "Search_Attractions"]
    # "(data.destinations[].id)" in the description excludes products[].id
    (attractions,) = graph.groups["Search_Attractions"]
    assert attractions.fields_from("Search_Attraction_Location")["id"].text() == "data.destinations[].id"
    assert graph.unfillable == {}
    assert "Search_Flight_Location" not in graph.goals() and "Get_Room_List" in graph.goals()


# ------------------------------------------------------------------------------- offline drafts
def test_offline_travel_drafts_are_valid_with_provenance(offline_run):
    pipeline, result = offline_run
    assert len(result.drafts) == 40 and result.rejects == []
    lines = (pipeline.build_dir / "drafts.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 40
    phrases_hash = hashlib.sha256(DEFAULT_PHRASES.read_bytes()).hexdigest()
    for line in lines:
        record = json.loads(line)
        assert validate_record(record) == []
        draft = Sample.model_validate(record)
        assert draft.provenance.stage == "stage1" and draft.provenance.model == "graph-sampler"
        assert draft.provenance.seed == 20240601 and draft.provenance.prompt_hash == phrases_hash
        assert draft.provenance.prompt_file.endswith("graph_sampler_phrases.txt")
        called = {call.name for call in draft.all_calls()}
        assert called <= set(draft.provenance.sampled_tools) == {tool.name for tool in draft.tools}
        assert all("response" in call.model_fields_set for call in draft.all_calls())
    summary = json.loads((pipeline.build_dir / "stage1.summary.json").read_text())
    assert summary["counts"]["drafts"] == 40 and summary["generator"] == "graph-sampler"
    # round(40 * 0.25) drafts mix two domains
    assert summary["counts"]["cross_domain"] == 10
    assert sum(isinstance(d.domain, list) and len(d.domain) == 2 for d in result.drafts) == 10
    assert (pipeline.build_dir / "drafts.rejects.jsonl").read_text() == ""


def test_offline_drafts_re_execute_and_reproduce(offline_run, environment):
    pipeline, _ = offline_run
    drafts = list(read_samples(pipeline.build_dir / "drafts.jsonl", "fcbench"))
    runs = execute_gold_paths(drafts, environment)
    comparison = comparison_of(pipeline.stages.filter)
    verdicts = [execution_verdict(draft, [run], comparison, []) for draft, run in zip(drafts, runs)]
    assert [v.reason for v in verdicts if not v.kept] == []
    shapes = [path_shape(draft) for draft in drafts]
    assert sum(shape.difficulty.value == "nested" for shape in shapes) == 40
    assert sum(shape.nesting_depth >= 2 for shape in shapes) >= 8  # lookup -> search -> details chains (9 at this seed)
    assert sum(len(step) > 1 for draft in drafts for step in draft.calls) >= 10  # parallel lookups


def test_offline_drafts_pass_the_filters_format_and_grounding_checks(offline_run):
    pipeline, result = offline_run
    problems = [(d.id, v.reason, v.detail) for d in result.drafts
                if not (v := static_verdict(d, pipeline.stages.filter)).kept]
    assert problems == []  # grounding: reject, so every literal value is stated in the query


def test_flight_ids_are_references_to_the_lookups(offline_run):
    _, result = offline_run
    flights = [(draft, call) for draft in result.drafts for call in draft.all_calls() if call.name == "Search_Flights"]
    assert flights
    for draft, call in flights:
        labels = {c.label: c.name for c in draft.all_calls()}
        origin = parse_reference(call.arguments["fromId"])
        assert origin is not None and labels[origin.label] == "Search_Flight_Location"
        assert origin.path == ("data", 0, "id")  # the lookup's first entry matches the name in the query
        lookup = next(c for c in draft.all_calls() if c.label == origin.label)
        assert lookup.arguments["query"] in draft.messages[0]["content"]
        assert lookup.response["data"][0]["id"].endswith((".CITY", ".AIRPORT"))


def test_same_seed_gives_byte_identical_drafts(tmp_path, environment, offline_run):
    pipeline, _ = offline_run
    again = write_pipeline(tmp_path)
    run_stage1(again, environment=environment)
    assert (again.build_dir / "drafts.jsonl").read_bytes() == (pipeline.build_dir / "drafts.jsonl").read_bytes()
    other = write_pipeline(tmp_path / "other", seed=7, queries=5)
    run_stage1(other, environment=environment)
    assert (other.build_dir / "drafts.jsonl").read_bytes() != (pipeline.build_dir / "drafts.jsonl").read_bytes()


def test_cli_stage1_offline_json(tmp_path):
    pipeline = write_pipeline(tmp_path, queries=4, cross_domain_ratio=0.0)
    result = CliRunner().invoke(app, ["stage1", "travel", "--file", str(tmp_path / "pipelines.yaml"), "--offline", "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["counts"]["drafts"] == 4 and summary["mode"] == "offline"
    assert len((pipeline.build_dir / "drafts.jsonl").read_text().splitlines()) == 4


def test_cli_stage1_without_catalog_is_one_line_error(tmp_path):
    (tmp_path / "pipelines.yaml").write_text(
        f"pipelines:\n  bare:\n    dataset_dir: {tmp_path}\n    environment: {{kind: python, module: x.py}}\n")
    result = CliRunner().invoke(app, ["stage1", "bare", "--file", str(tmp_path / "pipelines.yaml")])
    assert result.exit_code == 1
    assert "names no tool catalog" in result.output and "Traceback" not in result.output


# ------------------------------------------------------------------------------- the LLM path
QUERY = "Find flights from Sydney to London on June 12, 2025, then show me the details of the first offer."


def _tool_messages(body: dict[str, Any]) -> list[dict[str, Any]]:
    return [m for m in body["messages"] if m.get("role") == "tool"]


def scripted(body: dict[str, Any], call_index: int) -> dict[str, Any]:
    """The model of the test: draft index = seed // 1000 (the client derives seed + index * 1000 + attempt)."""
    draft = body.get("seed", 0) // 1000
    if not body.get("tools"):  # the query-writing request
        if draft == 1:
            return {"content": "Sure! Here is a query: flights please"}  # not the JSON asked for
        return {"content": json.dumps({"query": QUERY})}
    done = _tool_messages(body)
    if draft == 2:
        return {"tool_calls": [{"name": "Search_Flight_Location", "arguments": '{"query": "Sydney"'}]}
    if not done:
        return {"tool_calls": [{"name": "Search_Flight_Location", "arguments": {"query": "Sydney"}},
                               {"name": "Search_Flight_Location", "arguments": {"query": "London"}}]}
    if len(done) == 2:
        return {"tool_calls": [{"name": "Search_Flights", "arguments": {
            "fromId": "SYD.CITY", "toId": "LON.CITY", "departDate": "2025-06-12"}}]}
    if len(done) == 3:
        offers = json.loads(done[-1]["content"])["data"]["flightOffers"]
        return {"tool_calls": [{"name": "Get_Flight_Details", "arguments": {"token": offers[0]["token"]}}]}
    return {"content": "The first offer leaves Sydney on June 12, 2025."}


def _server_stats(server: MockLLMServer) -> dict[str, Any]:
    with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/_stats") as response:
        return json.load(response)


@pytest.fixture
def flights_only(tmp_path):
    """A catalog of the three flight tools, so every sampled subset is the flight domain."""
    specs = [spec for spec in json.loads((TRAVEL / "tools.json").read_text()) if spec["name"] in FLIGHT_TOOLS]
    path = tmp_path / "flight_tools.json"
    path.write_text(json.dumps(specs), encoding="utf-8")
    return path


def test_llm_stage1_scripted_run_rejects_and_cache(tmp_path, flights_only, environment):
    with MockLLMServer(responder=scripted) as server:
        # no value pools: the LLM path needs none
        pipeline = write_pipeline(tmp_path, queries=3, offline=False, llm_url=server.base_url, tools_file=flights_only,
                                  cross_domain_ratio=0.0, pools=False)
        result = run_stage1(pipeline, environment=environment)
        first_requests = _server_stats(server)["chat_requests"]
        drafts_bytes = (pipeline.build_dir / "drafts.jsonl").read_bytes()

        assert [d.id for d in result.drafts] == ["travel-draft-0001"]
        draft = result.drafts[0]
        assert draft.messages == [{"role": "user", "content": QUERY}]
        assert [[call.name for call in step] for step in draft.calls] == [
            ["Search_Flight_Location", "Search_Flight_Location"], ["Search_Flights"], ["Get_Flight_Details"]]
        assert all("response" in call.model_fields_set for call in draft.all_calls())
        flights = draft.calls[1][0]
        # values copied out of responses became references to them
        assert flights.arguments == {"fromId": "$var_1.data[0].id$", "toId": "$var_2.data[0].id$", "departDate": "2025-06-12"}
        assert draft.calls[2][0].arguments == {"token": "$var_3.data.flightOffers[0].token$"}
        assert draft.calls[2][0].response["data"]["token"] == flights.response["data"]["flightOffers"][0]["token"]
        assert draft.provenance.model == "mock-model" and draft.provenance.stage == "stage1"
        assert draft.provenance.prompt_hash == hashlib.sha256(QUERY_PROMPT.read_bytes()).hexdigest()
        assert draft.provenance.sampled_tools == list(FLIGHT_TOOLS)
        assert draft.meta["stage1"]["final_text"].startswith("The first offer")
        assert validate_record(sample_to_dict(draft)) == []

        rejects = {r["id"]: r for r in map(json.loads, (pipeline.build_dir / "drafts.rejects.jsonl").read_text().splitlines())}
        assert rejects["travel-draft-0002"]["reason"] == "stage1.unusable_query"
        assert rejects["travel-draft-0002"]["raw"] == "Sure! Here is a query: flights please"
        assert rejects["travel-draft-0003"]["reason"] == "stage1.bad_tool_arguments"
        assert rejects["travel-draft-0003"]["raw"] == '{"query": "Sydney"'
        summary = json.loads((pipeline.build_dir / "stage1.summary.json").read_text())
        assert summary["reasons"] == {"stage1.bad_tool_arguments": 1, "stage1.unusable_query": 1}
        # draft 1: a query + 4 turns; draft 2: 3 unparseable answers; draft 3: a query + 1 turn
        assert summary["llm"]["requests_sent"] == first_requests == 5 + 3 + 2
        assert summary["llm"]["tokens"]["prompt"] > 0 and summary["llm"]["tokens"]["completion"] > 0

        again = run_stage1(pipeline, environment=environment)
        # every usable answer came from the cache; draft 2's 3 unusable answers were asked again
        # (a re-run may fix them), and the script answers them the same way
        assert _server_stats(server)["chat_requests"] == first_requests + 3
        assert again.summary["llm"]["requests_sent"] == 3 and again.summary["llm"]["cache_hits"] == 7
        assert (pipeline.build_dir / "drafts.jsonl").read_bytes() == drafts_bytes


def test_reference_earlier_outputs_leaves_stated_values():
    from fcbench.sample import Call

    steps = [[Call(label="a", name="f", arguments={"q": "Paris"}, response={"data": [{"id": "PAR.CITY", "n": 3}]})],
             [Call(label="b", name="g", arguments={"id": "PAR.CITY", "n": 3, "q": "Paris"}, response={})]]
    rewritten = reference_earlier_outputs(steps, "flights from Paris for 3 people")
    assert rewritten[1][0].arguments == {"id": "$a.data[0].id$", "n": 3, "q": "Paris"}
    assert re.fullmatch(r"\$a\.data\[0\]\.id\$", rewritten[1][0].arguments["id"])


def test_an_llm_query_in_the_apis_words_is_asked_again_then_kept_only_as_a_users(tmp_path, flights_only, environment):
    """The LLM path's query must read as a user's (the text lint, with the offered tools): a
    query written with the API's codes is asked again; the re-written one is the draft's."""
    codes = "Find flights from SYD.CITY to LON.CITY on June 12, 2025 in PREMIUM_ECONOMY, then show me the first offer."

    def model(body: dict[str, Any], call_index: int) -> dict[str, Any]:
        if not body.get("tools") and body.get("seed", 0) % 1000 == 0:
            return {"content": json.dumps({"query": codes})}  # the first answer: the API's spelling
        return scripted({**body, "seed": 0}, call_index)

    with MockLLMServer(responder=model) as server:
        pipeline = write_pipeline(tmp_path, queries=1, offline=False, llm_url=server.base_url, tools_file=flights_only,
                                  cross_domain_ratio=0.0, pools=False)
        result = run_stage1(pipeline, environment=environment)
    (draft,) = result.drafts
    assert draft.messages == [{"role": "user", "content": QUERY}]
    assert result.summary["llm"]["requests_sent"] == 1 + 1 + 4  # the refused query, the user's one, the path
