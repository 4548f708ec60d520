"""Stage1's LLM path on imported Amadeus tools: the query and the path come from a scripted model
served by the local OpenAI-compatible mock server, the calls go to Prism through the http
environment (recording), and ids the model copies out of nested answers become references."""

from __future__ import annotations

import json


from conftest import EXTERNAL
from fcbench.catalog.openapi import import_openapi
from fcbench.config import load_pipelines
from fcbench.environments.http_env import HttpEnvironment
from fcbench.environments.recorded import RecordedEnvironment, load_store_and_journal
from fcbench.llm.mock_server import MockLLMServer
from fcbench.environments.prism import start_prism
from fcbench.pipeline.scaffold import catalog_record
from generate.stage1.single import run_stage1

FILES = [EXTERNAL / "amadeus" / "HotelList_v1_swagger_specification.json",
         EXTERNAL / "amadeus" / "HotelRatings_v2_swagger_specification.json"]
QUERY = "Find hotels in PAR and tell me how guests rate the first one."



def scripted(body, call_index):
    if not body.get("tools"):
        return {"content": json.dumps({"query": QUERY})}
    done = [m for m in body["messages"] if m.get("role") == "tool"]
    if not done:
        return {"tool_calls": [{"name": "get-shopping-hotels-by-city", "arguments": {"cityCode": "PAR"}}]}
    if len(done) == 1:
        first = json.loads(done[0]["content"])["data"][0]["hotelId"]
        return {"tool_calls": [{"name": "getSentimentsByHotelIds", "arguments": {"hotelIds": [first]}}]}
    return {"content": "Guests rate it well."}


def test_llm_drafts_over_prism_with_nested_references(tmp_path):
    tools = import_openapi(FILES).tools
    (tmp_path / "tools.json").write_text(json.dumps([catalog_record(tool) for tool in tools]))
    store = tmp_path / "recorded.json"
    with MockLLMServer(responder=scripted) as llm, start_prism(FILES, tmp_path / "logs") as prism:
        (tmp_path / "pipelines.yaml").write_text(
            "pipelines:\n  hotels:\n"
            f"    dataset_dir: {tmp_path / 'dataset'}\n    tools: {tmp_path / 'tools.json'}\n"
            f"    environment: {{kind: http, responses: {store}}}\n"
            f"    llm: {{model: mock-model, base_url: '{llm.base_url}', seed: 0, concurrency: 1, max_retries: 0}}\n"
            "    stages:\n      stage1: {offline: false, queries: 1, tool_subset_sizes: [4]}\n")
        pipeline = load_pipelines(tmp_path / "pipelines.yaml").get_pipeline("hotels")
        with HttpEnvironment(tools, base_urls=prism.base_urls, record_path=store) as environment:
            result = run_stage1(pipeline, environment=environment)
    (draft,) = result.drafts
    assert draft.messages[-1]["content"] == QUERY
    ratings = draft.calls[1][0]
    assert ratings.arguments == {"hotelIds": ["$var_1.data[0].hotelId$"]}  # copied from a nested list entry
    assert ratings.response["data"][0]["hotelId"]  # Prism's answer from the published example
    # the same path replays offline from what was recorded
    replay = RecordedEnvironment(load_store_and_journal(store, tools))
    assert replay.call("getSentimentsByHotelIds", {"hotelIds": [draft.calls[0][0].response["data"][0]["hotelId"]]}).ok
