"""The filter's semantic check: three narrow yes/no questions asked separately against the local
OpenAI-compatible server, the first "no" giving the reject reason, answers cached, an unreadable
answer rejecting nothing; and its wiring into the filter stage when the pipeline has an LLM."""

from __future__ import annotations

import asyncio
import json
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from fcbench.catalog import load_tools_file
from fcbench.config import LLMConfig, load_pipelines
from fcbench.environments.python_env import PythonEnvironment
from fcbench.environments.execution import execute_gold_path
from fcbench.filter.single import run_filter_stage
from fcbench.sample import Call, Sample, sample_to_dict
from fcbench.llm.cache import RequestCache
from fcbench.llm.client import LLMClient
from fcbench.llm.mock_server import MockLLMServer
from fcbench.checks.semantic import QUESTIONS, SemanticCheck, semantic_verdicts

REPO = Path(__file__).resolve().parents[3]
TRAVEL = REPO / "datasets" / "travel"
TOOLS = [t for t in load_tools_file(TRAVEL / "tools.json") if t.name in ("Search_Flight_Location", "Search_Flights")]

# which question each sample fails ("no"), by its route; None: every answer is yes; "garbage": unreadable
ROUTES = {
    ("Sydney", "London"): None,
    ("Rome", "Berlin"): "complete",
    ("Tokyo", "Paris"): "arguments",
    ("Melbourne", "Singapore"): "responses",
    ("Barcelona", "Tokyo"): "garbage",
}
QUESTION_MARKERS = {"complete": "answer EVERY part", "arguments": "is EVERY argument value", "responses": "does EACH response"}


def flight_sample(origin: str, destination: str, environment) -> Sample:
    sample = Sample(id=f"{origin}-{destination}", domain="flights",
                    messages=[{"role": "user", "content": f"Find flights from {origin} to {destination} on June 12, 2025."}],
                    tools=TOOLS, calls=[
                        [Call(label="var_1", name="Search_Flight_Location", arguments={"query": origin}),
                         Call(label="var_2", name="Search_Flight_Location", arguments={"query": destination})],
                        [Call(label="var_3", name="Search_Flights", arguments={
                            "fromId": "$var_1.data[0].id$", "toId": "$var_2.data[0].id$", "departDate": "2025-06-12"})]])
    return execute_gold_path(sample, environment).sample


def judge(body: dict[str, Any], call_index: int) -> dict[str, Any]:
    text = body["messages"][-1]["content"]
    asked = next(name for name, marker in QUESTION_MARKERS.items() if marker in text)
    # the responses question shows no query: the route is read from the lookups' arguments
    route = next(route for route in ROUTES if all(f'{{"query": "{place}"}}' in text for place in route))
    failing = ROUTES[route]
    if failing == "garbage" and asked == "complete":
        return {"content": "I am not sure what you mean."}
    answer = "no" if failing == asked else "yes"
    return {"content": json.dumps({"answer": answer, "reason": f"{asked} judged {answer}"})}


@pytest.fixture(scope="module")
def environment():
    with PythonEnvironment(TRAVEL / "tools.py", TOOLS, workers=1, timeout=5) as env:
        yield env


@pytest.fixture(scope="module")
def samples(environment):
    return [flight_sample(origin, destination, environment) for origin, destination in ROUTES]


def _chat_requests(server: MockLLMServer) -> int:
    with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/_stats") as response:
        return json.load(response)["chat_requests"]


def _travel_pipeline(tmp_path, candidates, base_url: str):
    """The travel world filtering `candidates` with the semantic check asked at `base_url`."""
    (tmp_path / "pipelines.yaml").write_text(
        "pipelines:\n  travel:\n"
        f"    dataset_dir: {tmp_path / 'dataset'}\n"
        f"    tools: {TRAVEL / 'tools.json'}\n"
        f"    environment: {{kind: python, module: {TRAVEL / 'tools.py'}, workers: 1}}\n"
        f"    llm: {{model: mock-model, base_url: '{base_url}', max_retries: 0}}\n"
        f"    stages:\n      filter: {{input: {candidates}, grounding: reject}}\n", encoding="utf-8")
    return load_pipelines(tmp_path / "pipelines.yaml").get_pipeline("travel")


def test_each_question_gives_its_reject_reason(samples, tmp_path):
    with MockLLMServer(responder=judge) as server:
        config = LLMConfig(model="mock-model", base_url=server.base_url, max_retries=0)

        async def ask() -> list:
            async with LLMClient(config, RequestCache(tmp_path / "cache.sqlite")) as client:
                return await semantic_verdicts(samples, client)

        verdicts = asyncio.run(ask())
        sent = _chat_requests(server)
    by_id = {sample_id: (reason, detail) for sample_id, reason, detail in verdicts}
    assert by_id["Sydney-London"] == (None, "")
    assert by_id["Rome-Berlin"] == ("semantic.incomplete_path", "complete judged no")
    assert by_id["Tokyo-Paris"] == ("semantic.unsupported_argument", "arguments judged no")
    assert by_id["Melbourne-Singapore"] == ("semantic.response_mismatch", "responses judged no")
    reason, detail = by_id["Barcelona-Tokyo"]  # unreadable: kept, and the detail says so
    assert reason is None and "semantic.incomplete_path unanswered" in detail
    # 3 questions a sample, asked separately; the unreadable one is re-asked twice more
    assert sent == 3 * len(samples) + 2
    assert [q.reason for q in QUESTIONS] == ["semantic.incomplete_path", "semantic.unsupported_argument",
                                             "semantic.response_mismatch"]


def test_answers_are_cached(samples, tmp_path):
    with MockLLMServer(responder=judge) as server:
        check = SemanticCheck(LLMConfig(model="mock-model", base_url=server.base_url, max_retries=0), tmp_path / "c.sqlite")
        first = check(samples[:2])
        sent = _chat_requests(server)
        assert check(samples[:2]) == first
        assert _chat_requests(server) == sent == 6
        assert check.accounting[-1]["cache_hits"] == 6 and check.accounting[-1]["requests_sent"] == 0


def test_filter_stage_runs_the_semantic_check_when_an_llm_is_configured(samples, tmp_path):
    candidates = tmp_path / "candidates.jsonl"
    candidates.write_text("".join(json.dumps(sample_to_dict(s)) + "\n" for s in samples[:4]), encoding="utf-8")
    with MockLLMServer(responder=judge) as server:
        pipeline = _travel_pipeline(tmp_path, candidates, server.base_url)
        summary = run_filter_stage(pipeline)
        rejects = [json.loads(line) for line in (pipeline.build_dir / "validated.rejects.jsonl").read_text().splitlines()]
        offline = run_filter_stage(pipeline, offline=True)
    assert summary.counts == {"passed": 1, "failed_format": 0, "failed_text": 0, "failed_grounding": 0, "failed_gold": 0, "failed_execution": 0,
                              "failed_reproduction": 0, "failed_semantic": 3}
    assert summary.reasons == {"semantic.incomplete_path": 1, "semantic.response_mismatch": 1,
                               "semantic.unsupported_argument": 1}
    assert {r["id"]: r["category"] for r in rejects} == {"Rome-Berlin": "failed_semantic", "Tokyo-Paris": "failed_semantic",
                                                        "Melbourne-Singapore": "failed_semantic"}
    assert offline.counts["passed"] == 4 and "failed_semantic" not in offline.counts


def test_a_value_no_grounding_rule_explains_is_left_to_the_semantic_check_and_fails_closed_offline(environment, tmp_path):
    def unexplained(origin: str, destination: str) -> Sample:
        sample = flight_sample(origin, destination, environment)
        step = [call.model_copy(update={"arguments": {**call.arguments, "departDate": "2025-06-14"}})
                for call in sample.calls[1]]  # the query says June 12: no rule derives the 14th
        return execute_gold_path(sample.model_copy(update={"calls": [sample.calls[0], step]}), environment).sample

    deferred = [unexplained("Sydney", "London"), unexplained("Tokyo", "Paris")]
    candidates = tmp_path / "candidates.jsonl"
    candidates.write_text("".join(json.dumps(sample_to_dict(s)) + "\n" for s in deferred), encoding="utf-8")
    with MockLLMServer(responder=judge) as server:
        pipeline = _travel_pipeline(tmp_path, candidates, server.base_url)
        judged = run_filter_stage(pipeline)
        kept = [json.loads(line) for line in (pipeline.build_dir / "validated.jsonl").read_text().splitlines()]
        offline = run_filter_stage(pipeline, offline=True, force=True)  # nothing kept: --force writes it
    # the judge accepts Sydney-London's arguments and rejects Tokyo-Paris's: only that one is rejected
    assert judged.counts["passed"] == 1 and judged.reasons == {"semantic.unsupported_argument": 1}
    assert kept[0]["meta"]["grounding"]["left_to_semantic_check"] == ['var_3.departDate="2025-06-14"']
    assert judged.reasoning["deferred_to_semantic"] == 2 and judged.reasoning["deferred_rejected"] == 1
    # without an LLM nothing can judge the value: the pipeline's grounding setting rejects it
    assert offline.counts["failed_grounding"] == 2 and offline.counts["passed"] == 0
