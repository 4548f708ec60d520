"""The new conversation types drafted with an LLM, against the local OpenAI-compatible mock server
over real HTTP, from scenarios a reviewer edited (`conversation.review`): stage1 first writes the
LLM-described scenarios and waits; the reviewed ones are drafted with their reviewed text (the
scenario writer is not asked again); a failed_conversation's goal calls answer the author's chosen
outage unexecuted; each conversation that shows its type is a draft, each that does not is a
`stage1.type_missing.<type>` reject (confirmation, goal_not_supported, goal_switching); goal stacking
and a conversation with no target are drafted too."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fcbench.config import load_pipelines
from fcbench.conversation import ReviewedScenario, Scenario, ScenarioReview, chosen_errors_of, scenario_hash
from fcbench.formats import read_samples
from fcbench.llm.mock_server import MockLLMServer
from fcbench.pipeline.run import run_stage
from generate.stage1.conversation_llm import SERVICE_DOWN

REPO = Path(__file__).resolve().parents[3]
TRAVEL = REPO / "datasets" / "travel"
FLIGHT_TOOLS = ("Search_Flight_Location", "Search_Flights", "Get_Flight_Details")
# index -> (type, required APIs, plays well); the reviewer sets both, the mock plays accordingly
PLAN = [("confirmation", ["Search_Flights"], True), ("confirmation", ["Search_Flights"], False),
        ("goal_not_supported", ["Search_Flights"], True), ("goal_not_supported", ["Search_Flights"], False),
        ("failed_conversation", ["Search_Flights"], True),
        ("goal_switching", ["Search_Flights", "Search_Flight_Location"], True),
        ("goal_switching", ["Search_Flights", "Search_Flight_Location"], False),
        ("goal_stacking", ["Search_Flights", "Search_Flight_Location"], True), ("no_target", ["Search_Flights"], True)]
REQUEST = "Find flights from Sydney to London on June 12, 2025."
LOCATIONS = [{"name": "Search_Flight_Location", "arguments": {"query": "Sydney"}},
             {"name": "Search_Flight_Location", "arguments": {"query": "London"}}]
SEARCH = [{"name": "Search_Flights", "arguments": {"fromId": "SYD.CITY", "toId": "LON.CITY", "departDate": "2025-06-12"}}]
USER_LINES = {
    "confirmation": [REQUEST + " Please check with me before you search.", "Yes, go ahead.", "Thanks, bye!"],
    "goal_not_supported": [REQUEST, "Can you also book me a hotel in London?", "All right, bye!"],
    "failed_conversation": [REQUEST, "Please try once more.", "Never mind, bye."],
    "goal_switching": ["Find flights from Sydney to London.", "Actually, forget the flights. Which airports does "
                       "Paris have?", "Thanks, bye!"],
    "goal_stacking": [REQUEST + " And which airports does Paris have?", "Thanks, bye!", "Bye!"],
    "no_target": [REQUEST, "Thanks, bye!", "Bye!"],
}


def _agent(kind: str, good: bool, users: int, tools_done: int) -> dict[str, Any]:
    """What the scripted agent does at this point of the conversation."""
    if kind == "confirmation":
        if users == 1 and good:
            return {"content": "Shall I search flights from Sydney to London on June 12, 2025?"}
        if tools_done == 0:
            return {"tool_calls": LOCATIONS}
        if tools_done == 2:
            return {"tool_calls": SEARCH}
        return {"content": "I found several flights on June 12, 2025; the first leaves in the morning."}
    if kind == "goal_not_supported":
        if users == 2:
            return {"content": "I'm sorry, but I can't book hotels: I can only search flights." if good
                    else "Sure, I will look into hotels for you later."}
        return {"tool_calls": LOCATIONS} if tools_done == 0 else {"tool_calls": SEARCH} if tools_done == 2 else \
            {"content": "I found several flights on June 12, 2025."}
    if kind == "failed_conversation":
        if users == 1:
            return {"tool_calls": LOCATIONS} if tools_done == 0 else {"tool_calls": SEARCH} if tools_done == 2 else \
                {"content": "Sorry, the flight search is unavailable right now. Shall I try again?"}
        return {"tool_calls": SEARCH} if tools_done == 0 else {"content": "It failed again: I cannot search flights now."}
    if kind in ("goal_stacking", "no_target"):
        paris = [{"name": "Search_Flight_Location", "arguments": {"query": "Paris"}}] if kind == "goal_stacking" else []
        return {"tool_calls": LOCATIONS + paris} if tools_done == 0 else {"tool_calls": SEARCH} \
            if tools_done == 2 + len(paris) else {"content": "I found several flights on June 12, 2025."
                                                  + (" Paris has Charles de Gaulle and Orly." if paris else "")}
    # goal_switching
    if users == 1:
        if good:
            return {"content": "Which date do you want to fly?"}
        busy = {"name": "Search_Flights", "arguments": {"fromId": "SYD.CITY", "toId": "LON.CITY", "departDate": "2025-06-01"}}
        return {"tool_calls": LOCATIONS} if tools_done == 0 else {"tool_calls": [busy]} if tools_done == 2 else \
            {"content": "Here are flights for today."}
    return {"tool_calls": [{"name": "Search_Flight_Location", "arguments": {"query": "Paris"}}]} if tools_done == 0 \
        else {"content": "Paris has Charles de Gaulle and Orly."}


SCENARIO_PROMPTS: list[str] = []


def scripted(body: dict[str, Any], call_index: int) -> dict[str, Any]:
    index = body.get("seed", 0) // 1000
    kind, _, good = PLAN[index] if index < len(PLAN) else PLAN[0]
    messages = body["messages"]
    first = messages[0].get("content") or ""
    if first.startswith("Write the scenario"):
        SCENARIO_PROMPTS.append(first)
        return {"content": json.dumps({"description": "You fly from Sydney to London on June 12, 2025."})}
    if first.startswith("You play a USER"):
        said = sum(1 for m in messages if m["role"] == "assistant")
        lines = USER_LINES[kind]
        return {"content": json.dumps({"message": lines[min(said, 2)], "done": said >= 2})}
    users = sum(1 for m in messages if m["role"] == "user")
    since_user = messages[max(i for i, m in enumerate(messages) if m["role"] == "user") + 1:]
    return _agent(kind, good, users, sum(1 for m in since_user if m["role"] == "tool"))


def _pipeline(tmp_path: Path, url: str) -> Any:
    specs = [spec for spec in json.loads((TRAVEL / "tools.json").read_text()) if spec["name"] in FLIGHT_TOOLS]
    (tmp_path / "tools.json").write_text(json.dumps(specs))
    (tmp_path / "pipelines.yaml").write_text(
        "pipelines:\n"
        "  chat:\n"
        "    kind: conversation\n"
        f"    dataset_dir: {tmp_path / 'chat'}\n"
        "    seed: 0\n"
        f"    tools: {tmp_path / 'tools.json'}\n"
        f"    environment: {{kind: python, module: {TRAVEL / 'tools.py'}, workers: 1}}\n"
        f"    llm: {{model: mock-model, base_url: '{url}', seed: 0, concurrency: 2, max_retries: 0}}\n"
        f"    conversation: {{scenarios: {len(PLAN)}, complexities: [no_target], min_turns: 2, max_turns: 4,"
        " review: {enabled: true}}\n")
    return load_pipelines(tmp_path / "pipelines.yaml").get_pipeline("chat")


def test_new_types_drafted_by_the_llm_from_reviewed_scenarios(tmp_path):
    with MockLLMServer(responder=scripted) as server:
        pipeline = _pipeline(tmp_path, server.base_url)
        waiting = run_stage("stage1", pipeline)
        assert waiting.details["status"] == "awaiting_review" and waiting.counts["awaiting_review"] == len(PLAN)
        assert not (pipeline.build_dir / "drafts.jsonl").exists()
        sampled = [Scenario.model_validate(json.loads(line))
                   for line in (pipeline.build_dir / "scenarios.jsonl").read_text().splitlines()]
        assert {s.description for s in sampled} == {"You fly from Sydney to London on June 12, 2025."}  # the LLM's
        asked = len(SCENARIO_PROMPTS)
        reviewed = []
        for scenario, (kind, required, _) in zip(sampled, PLAN):
            edited = scenario.model_copy(update={"complexities": [kind], "required_apis": required,
                                                 "optional_apis": [t for t in FLIGHT_TOOLS if t not in required],
                                                 "description": f"Reviewed: play {kind}."})
            reviewed.append(ReviewedScenario(scenario=edited, review=ScenarioReview(
                verdict="edit", sampled_hash=scenario_hash(scenario), changed=["complexities", "description"])))
        (pipeline.build_dir / "scenarios.reviewed.jsonl").write_text(
            "".join(json.dumps(item.model_dump(mode="json")) + "\n" for item in reviewed))

        summary = run_stage("stage1", pipeline)
    assert len(SCENARIO_PROMPTS) == asked  # reviewed texts are not rewritten by the scenario writer
    assert summary.counts == {"scenarios": len(PLAN), "reviewed": len(PLAN), "awaiting_review": 0, "drafts": 6,
                              "rejected": 3}
    assert summary.reasons == {"stage1.type_missing.confirmation": 1, "stage1.type_missing.goal_not_supported": 1,
                               "stage1.type_missing.goal_switching": 1}
    drafts = {draft.id: draft for draft in read_samples(pipeline.build_dir / "drafts.jsonl", "fcbench")}
    by_kind = {draft.meta["conversation"]["scenario"]["complexities"][0]: draft for draft in drafts.values()}
    assert set(by_kind) == {"confirmation", "goal_not_supported", "failed_conversation", "goal_switching",
                            "goal_stacking", "no_target"}
    assert {"Search_Flights", "Search_Flight_Location"} <= {c.name for c in by_kind["goal_stacking"].all_calls()}
    assert all(d.meta["conversation"]["scenario"]["description"].startswith("Reviewed:") for d in drafts.values())
    refusal = [m for m in by_kind["goal_not_supported"].messages if m.get("dialog_acts") == ["agent_reject_request"]]
    assert refusal and "can't book hotels" in refusal[0]["content"]
    failed = by_kind["failed_conversation"]
    searches = [call for call in failed.all_calls() if call.name == "Search_Flights"]
    assert len(searches) == 2 and chosen_errors_of(failed) == {call.label: SERVICE_DOWN for call in searches}
    assert all(call.response == {"error": SERVICE_DOWN} for call in searches)  # never executed: the chosen outage
    assert [call.name for call in by_kind["goal_switching"].all_calls()] == ["Search_Flight_Location"]
    rejects = [json.loads(line) for line in (pipeline.build_dir / "drafts.rejects.jsonl").read_text().splitlines()]
    reasons = {row["reason"]: row["detail"] for row in rejects}
    assert "is completed, not dropped" in reasons["stage1.type_missing.goal_switching"]
    assert "approve" in reasons["stage1.type_missing.confirmation"]
