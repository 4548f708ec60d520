"""Conversations drafted with an LLM, against the local OpenAI-compatible mock server over real HTTP:
the scenario written by the LLM, an LLM user simulator and an LLM agent calling the travel tools by
function calling; a looping simulator is a `turn_cap` reject, an off-script one an `off_script`
reject with its raw text; a second run is served from the request cache. And the response
simulator environment (kind: simulated): answers from the LLM, errors as failed calls, cached."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

from fcbench.catalog import load_tools_file
from fcbench.config import load_pipelines
from fcbench.conversation import agent_turns, user_turns
from fcbench.environments.from_config import open_environment
from fcbench.formats import read_samples
from fcbench.llm.mock_server import MockLLMServer
from fcbench.pipeline.run import run_stage

REPO = Path(__file__).resolve().parents[3]
TRAVEL = REPO / "datasets" / "travel"
FLIGHT_TOOLS = ("Search_Flight_Location", "Search_Flights", "Get_Flight_Details")


def _pipeline(tmp_path: Path, url: str, environment: str) -> Any:
    specs = [spec for spec in json.loads((TRAVEL / "tools.json").read_text()) if spec["name"] in FLIGHT_TOOLS]
    (tmp_path / "tools.json").write_text(json.dumps(specs))
    (tmp_path / "pipelines.yaml").write_text(
        "pipelines:\n"
        "  chat:\n"
        "    kind: conversation\n"
        f"    dataset_dir: {tmp_path / 'chat'}\n"
        "    seed: 0\n"
        f"    tools: {tmp_path / 'tools.json'}\n"
        f"    environment: {environment}\n"
        f"    llm: {{model: mock-model, base_url: '{url}', seed: 0, concurrency: 2, max_retries: 0}}\n"
        "    conversation: {scenarios: 3, complexities: {follow_up: 1.0}, min_turns: 2, max_turns: 3}\n")
    return load_pipelines(tmp_path / "pipelines.yaml").get_pipeline("chat")


def _stats(server: MockLLMServer) -> dict[str, Any]:
    with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/_stats") as response:
        return json.load(response)


def scripted(body: dict[str, Any], call_index: int) -> dict[str, Any]:
    """Scenario i (the client sends seed + i * 1000): 0 plays well, 1 never stops, 2 leaves its role."""
    scenario = body.get("seed", 0) // 1000
    messages = body["messages"]
    first = messages[0].get("content") or ""
    if first.startswith("Write the scenario"):
        return {"content": json.dumps({"description": "You fly from Sydney to London on June 12, 2025."})}
    if first.startswith("You play a USER"):
        said = sum(1 for m in messages if m["role"] == "assistant")  # the simulator's own earlier turns
        if scenario == 2:
            return {"content": json.dumps({"message": "Assistant: I have booked your flight.", "done": False})}
        if scenario == 1:
            return {"content": json.dumps({"message": f"And what about option {said}?", "done": False})}
        lines = ["Find flights from Sydney to London on June 12, 2025.", "Which one is the cheapest?", "Thanks, bye!"]
        return {"content": json.dumps({"message": lines[min(said, 2)], "done": said >= 2})}
    # the agent: what it does depends on where the conversation is
    users = sum(1 for m in messages if m["role"] == "user")
    since_user = messages[max(i for i, m in enumerate(messages) if m["role"] == "user") + 1:]
    tools_done = sum(1 for m in since_user if m["role"] == "tool")
    if users == 1 and tools_done == 0:
        return {"tool_calls": [{"name": "Search_Flight_Location", "arguments": {"query": "Sydney"}},
                               {"name": "Search_Flight_Location", "arguments": {"query": "London"}}]}
    if users == 1 and tools_done == 2:
        return {"tool_calls": [{"name": "Search_Flights", "arguments": {
            "fromId": "SYD.CITY", "toId": "LON.CITY", "departDate": "2025-06-12"}}]}
    if users == 1:
        return {"content": "I found several flights on June 12, 2025. Do you want the cheapest?"}
    return {"content": "The cheapest is the first offer."}


def test_llm_user_and_agent_draft_conversations_with_turn_cap_and_off_script_rejects(tmp_path):
    with MockLLMServer(responder=scripted) as server:
        pipeline = _pipeline(tmp_path, server.base_url,
                             f"{{kind: python, module: {TRAVEL / 'tools.py'}, workers: 1}}")
        summary = run_stage("stage1", pipeline)
        sent = _stats(server)["chat_requests"]
        drafts_bytes = (pipeline.build_dir / "drafts.jsonl").read_bytes()
        assert summary.counts == {"scenarios": 3, "drafts": 1, "rejected": 2}
        rejects = {json.loads(line)["id"]: json.loads(line)
                   for line in (pipeline.build_dir / "drafts.rejects.jsonl").read_text().splitlines()}
        assert rejects["chat-conv-0002"]["reason"] == "stage1.turn_cap"
        assert rejects["chat-conv-0003"]["reason"] == "stage1.off_script"
        assert "Assistant: I have booked" in rejects["chat-conv-0003"]["raw"]  # the raw text is kept
        (draft,) = list(read_samples(pipeline.build_dir / "drafts.jsonl", "fcbench"))
        assert draft.meta["conversation"]["scenario"]["description"] == "You fly from Sydney to London on June 12, 2025."
        written = [json.loads(line) for line in (pipeline.build_dir / "scenarios.jsonl").read_text().splitlines()]
        assert [s["description"] for s in written] == ["You fly from Sydney to London on June 12, 2025."] * 3
        assert user_turns(draft.messages) == 2
        assert [[call.name for call in step] for step in draft.calls] == [
            ["Search_Flight_Location", "Search_Flight_Location"], ["Search_Flights"]]
        assert draft.calls[1][0].response["data"]["flightOffers"]  # executed by the travel tools
        # "I found several flights on June 12, 2025. Do you want the cheapest?": it informs, then asks
        assert [turn.dialog_acts for turn in agent_turns(draft.messages)] == [
            ["agent_function_calling", "agent_inform_user", "agent_seek_information"], ["agent_inform_user"]]
        # a second run is served from the cache, except the off-script turn: an unusable answer is
        # never replayed, so its 3 attempts are asked again (and rejected again); the same bytes
        run_stage("stage1", pipeline, force=True)
        assert _stats(server)["chat_requests"] == sent + 3
        assert (pipeline.build_dir / "drafts.jsonl").read_bytes() == drafts_bytes


PROMPTS: list[str] = []


def simulator(body: dict[str, Any], call_index: int) -> dict[str, Any]:
    prompt = body["messages"][0]["content"]
    PROMPTS.append(prompt)
    arguments = json.loads(prompt.split("The call's arguments:\n", 1)[1].split("\n", 1)[0])
    if arguments.get("query") == "Atlantis":
        return {"content": json.dumps({"error": "no such place: Atlantis"})}
    if arguments.get("query") == "broken":
        return {"content": "I think the answer would be some airports"}
    place = str(arguments.get("query") or arguments.get("toId") or "any")
    return {"content": json.dumps({"status": True, "data": [{"id": f"{place[:3].upper()}.CITY"}]})}


def test_response_simulator_answers_from_the_llm_and_caches(tmp_path):
    with MockLLMServer(responder=simulator) as server:
        pipeline = _pipeline(tmp_path, server.base_url, "{kind: simulated}")
        tools = load_tools_file(tmp_path / "tools.json")
        with open_environment(pipeline, []) as environment:
            ok = environment.call("Search_Flight_Location", {"query": "Sydney"})
            refused = environment.call("Search_Flight_Location", {"query": "Atlantis"})
            unusable = environment.call("Search_Flight_Location", {"query": "broken"})
            unknown = environment.call("Teleport", {})
        assert ok.ok and ok.response == {"status": True, "data": [{"id": "SYD.CITY"}]}
        assert not refused.ok and refused.reason.value == "tool_error" and "Atlantis" in refused.error
        assert not unusable.ok and unusable.reason.value == "unexpected_response"  # never a made-up answer
        assert not unknown.ok and unknown.reason.value == "unknown_tool"
        sent = _stats(server)["chat_requests"]
        with open_environment(pipeline, []) as environment:
            again = environment.call("Search_Flight_Location", {"query": "Sydney"})
        assert again == ok and _stats(server)["chat_requests"] == sent  # cached like every LLM call
        # a session (one conversation) carries state: a call is asked knowing what was answered before
        asked = len(PROMPTS)
        with open_environment(pipeline, []) as environment:
            session = environment.session()
            session.call("Search_Flight_Location", {"query": "Sydney"})  # nothing before it: the cached prompt
            session.call("Search_Flight_Location", {"query": "London"})
        assert len(PROMPTS) == asked + 1
        assert '"SYD.CITY"' in PROMPTS[-1].split("earlier in the same conversation")[1]
        # the simulator is driven by the tool's description and output schema
        assert tools[0].description in PROMPTS[0] and json.dumps(tools[0].returns["type"]) in PROMPTS[0]
        assert '"returns"' in PROMPTS[0] and "2025-06-01T09:00:00" in PROMPTS[0]


def scripted_with_simulator(body: dict[str, Any], call_index: int) -> dict[str, Any]:
    if body["messages"][0].get("content", "").startswith("You simulate an API"):
        return simulator(body, call_index)
    return scripted(body, call_index)


def test_conversations_against_the_response_simulator_are_re_executed_by_the_filter_from_the_cache(tmp_path):
    from fcbench.filter.conversation import filter_conversations

    with MockLLMServer(responder=scripted_with_simulator) as server:
        pipeline = _pipeline(tmp_path, server.base_url, "{kind: simulated}")
        assert run_stage("stage1", pipeline).counts["drafts"] == 1
        (draft,) = list(read_samples(pipeline.build_dir / "drafts.jsonl", "fcbench"))
        assert draft.calls[0][0].response == {"status": True, "data": [{"id": "SYD.CITY"}]}  # simulated
        assert draft.meta["conversation"]["failed_calls"] == [] and len(draft.all_calls()) == 3
        sent = _stats(server)["chat_requests"]
        with open_environment(pipeline, [draft]) as environment:
            summary = filter_conversations([draft], environment, pipeline.stages.filter, tmp_path / "f", "drafts")
        assert summary.counts["passed"] == 1  # every call re-executed in order, the same answers
        assert _stats(server)["chat_requests"] == sent  # ... from the cache


def test_offline_refuses_the_response_simulator(tmp_path):
    from typer.testing import CliRunner

    from fcbench.cli import app

    _pipeline(tmp_path, "http://127.0.0.1:9/v1", "{kind: simulated}")
    result = CliRunner().invoke(app, ["stage1", "chat", "--offline", "--file", str(tmp_path / "pipelines.yaml")])
    assert result.exit_code == 1 and "--offline does not use" in result.output and "Traceback" not in result.output
