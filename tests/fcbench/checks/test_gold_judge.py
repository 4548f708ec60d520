"""The gold audit's LLM layer, against the local OpenAI-compatible server: "no" rejects with the
judge's reason, an unusable answer rejects too (fail closed) and is asked again on the next run,
answers are cached, and the prompt shows the query, the path and where each value comes from."""

from __future__ import annotations

import json
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from fcbench.catalog import load_tools_file
from fcbench.checks.gold_judge import GOLD_JUDGE_PROMPT, question
from fcbench.checks.provenance import infer_provenance, with_provenance
from fcbench.config import load_pipelines
from fcbench.environments.execution import execute_gold_path
from fcbench.environments.python_env import PythonEnvironment
from fcbench.llm.mock_server import MockLLMServer
from fcbench.filter.single import run_filter_stage
from fcbench.sample import Call, Sample, sample_to_dict

REPO = Path(__file__).resolve().parents[3]
TRAVEL = REPO / "datasets" / "travel"
TOOLS = [t for t in load_tools_file(TRAVEL / "tools.json") if t.name in ("Search_Flight_Location", "Search_Flights")]
ANSWERS = {"Sydney": "yes", "Rome": "no", "Barcelona": "garbage"}  # by origin


def flight(origin: str, destination: str, environment) -> Sample:
    sample = Sample(id=f"{origin}-{destination}", domain="flights",
                    messages=[{"role": "user", "content": f"Find flights from {origin} to {destination} on June 12, 2025."}],
                    tools=TOOLS, calls=[
                        [Call(label="var_1", name="Search_Flight_Location", arguments={"query": origin}),
                         Call(label="var_2", name="Search_Flight_Location", arguments={"query": destination})],
                        [Call(label="var_3", name="Search_Flights", arguments={
                            "fromId": "$var_1.data[0].id$", "toId": "$var_2.data[0].id$", "departDate": "2025-06-12"})]])
    return execute_gold_path(sample, environment).sample


def responder(body: dict[str, Any], call_index: int) -> dict[str, Any]:
    text = body["messages"][-1]["content"]
    if "You audit one gold answer" not in text:  # the semantic check's questions: all yes
        return {"content": json.dumps({"answer": "yes", "reason": "fine"})}
    origin = next(name for name in ANSWERS if f"Find flights from {name}" in text)
    if ANSWERS[origin] == "garbage":
        return {"content": "Hmm, hard to say."}
    return {"content": json.dumps({"answer": ANSWERS[origin], "reason": f"judged {ANSWERS[origin]} for {origin}"})}


@pytest.fixture(scope="module")
def environment():
    with PythonEnvironment(TRAVEL / "tools.py", TOOLS, workers=1, timeout=5) as env:
        yield env


def _requests(server: MockLLMServer) -> int:
    with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/_stats") as response:
        return json.load(response)["chat_requests"]


def test_the_prompt_shows_the_query_the_path_and_the_provenance(environment):
    sample = flight("Sydney", "London", environment)
    sample = with_provenance(sample, infer_provenance(sample).provenance)
    asked = question(sample)
    assert asked["query"] == "Find flights from Sydney to London on June 12, 2025."
    assert 'var_3 = Search_Flights({"fromId": "$var_1.data[0].id$"' in asked["path"]
    assert "var_3.departDate: derived date.spelled 'June 12, 2025'" in asked["provenance"].splitlines()
    text = GOLD_JUDGE_PROMPT.read_text()
    assert "{{query}}" in text and "{{path}}" in text and "{{provenance}}" in text and "exactly what the query asks" in text


def test_the_judge_rejects_fails_closed_and_asks_again_only_what_it_could_not_decide(environment, tmp_path):
    samples = [flight(origin, destination, environment) for origin, destination in
               (("Sydney", "London"), ("Rome", "Berlin"), ("Barcelona", "Tokyo"))]
    candidates = tmp_path / "candidates.jsonl"
    candidates.write_text("".join(json.dumps(sample_to_dict(s)) + "\n" for s in samples), encoding="utf-8")
    (tmp_path / "pipelines.yaml").write_text(
        "pipelines:\n  travel:\n"
        f"    dataset_dir: {tmp_path / 'dataset'}\n    tools: {TRAVEL / 'tools.json'}\n"
        f"    environment: {{kind: python, module: {TRAVEL / 'tools.py'}, workers: 1}}\n"
        "    llm: {model: mock-model, base_url: 'BASE', max_retries: 0}\n"
        f"    stages:\n      filter: {{input: {candidates}, grounding: reject}}\n", encoding="utf-8")
    with MockLLMServer(responder=responder) as server:
        text = (tmp_path / "pipelines.yaml").read_text().replace("BASE", server.base_url)
        (tmp_path / "pipelines.yaml").write_text(text, encoding="utf-8")
        pipeline = load_pipelines(tmp_path / "pipelines.yaml").get_pipeline("travel")
        first = run_filter_stage(pipeline)
        asked_first = _requests(server)
        second = run_filter_stage(pipeline, force=True)
        asked_again = _requests(server) - asked_first
        offline = run_filter_stage(pipeline, offline=True, force=True)
    rejects = {row["id"]: row for row in
               (json.loads(line) for line in (pipeline.build_dir / "validated.rejects.jsonl").read_text().splitlines())}
    assert first.counts["passed"] == 1 and first.counts["failed_gold"] == 2
    assert first.reasons == {"gold.judge_rejected": 1, "gold.judge_undecided": 1}
    assert first.gold_audit["judge"] == "mock-model"
    assert second.reasons == first.reasons
    # only the undecided question is asked again (the first answer and its one re-ask), the rest is cached
    assert asked_again == 2
    assert offline.counts["passed"] == 3 and offline.gold_audit["judge"] is None and rejects == {}
