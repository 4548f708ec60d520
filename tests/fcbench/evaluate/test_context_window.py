"""`evaluate` with a model's context window (llm.context_window / --context-window), against the
local mock server over real HTTP: a request that would not fit is never sent, the sample ends there
as `context_overflow` with the tokens it needed, and the run goes on (never a crash)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from fcbench.catalog.openai import openai_tool_param
from fcbench.cli import app
from fcbench.formats import read_samples, write_samples
from fcbench.llm.mock_server import MockLLMServer
from fcbench.sample import Sample
from fcbench.score.complexeval import gold_steps_with_values
from fcbench.stats.tokens import request_tokens

REPO = Path(__file__).resolve().parents[3]
EXAMPLE = REPO / "datasets" / "complexfuncbench-example" / "trips.jsonl"
MODEL = "scripted/model-1"
runner = CliRunner()


def _samples() -> list[Sample]:
    return [item for item in read_samples(EXAMPLE, "complexfuncbench") if isinstance(item, Sample)]


def _setup(tmp_path: Path, window_in_yaml: int | None = None) -> tuple[Path, Path, list[Sample]]:
    samples = _samples()
    canonical = tmp_path / "trips.jsonl"
    write_samples(samples, canonical, "fcbench")
    extra = f", context_window: {window_in_yaml}" if window_in_yaml else ""
    pipelines = tmp_path / "pipelines.yaml"
    pipelines.write_text("pipelines:\n  bench:\n    dataset_dir: data\n    seed: 1\n"
                         f"    llm: {{model: generator, concurrency: 2, max_retries: 0{extra}}}\n", encoding="utf-8")
    return pipelines, canonical, samples


class PerfectModel:
    """Answers every turn with the gold step (then a final text) and records each request."""

    def __init__(self, samples: list[Sample]) -> None:
        self.by_query = {s.messages[0]["content"]: s for s in samples}
        self.requests: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, body: dict[str, Any], call_index: int) -> dict[str, Any]:
        sample = self.by_query[next(m["content"] for m in body["messages"] if m["role"] == "user")]
        self.requests.append((sample.id, body))
        turn = sum(m["role"] == "assistant" for m in body["messages"])
        steps = gold_steps_with_values(sample)
        if turn >= len(steps):
            return {"content": "Done."}
        return {"tool_calls": [{"name": c.name, "arguments": c.arguments} for c in steps[turn]]}


def _evaluate(pipelines: Path, base_url: str, canonical: Path, *extra: str):
    return runner.invoke(app, ["evaluate", "bench", "--file", str(pipelines), "--model", MODEL, "--base-url", base_url,
                               "--input", str(canonical), "--json", *extra])


def _trajectories(tmp_path: Path) -> dict[str, dict[str, Any]]:
    path = tmp_path / "data" / "build" / "eval" / "scripted-model-1" / "trajectories.jsonl"
    return {line["id"]: line for line in map(json.loads, path.read_text(encoding="utf-8").splitlines())}


def test_a_window_smaller_than_every_first_request_sends_nothing_and_records_each_sample(tmp_path):
    pipelines, canonical, samples = _setup(tmp_path)
    model = PerfectModel(samples)
    with MockLLMServer(responder=model) as server:
        result = _evaluate(pipelines, server.base_url, canonical, "--context-window", "20")
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout)
    assert model.requests == []
    assert sorted(printed["context_overflow"]) == sorted(s.id for s in samples)
    assert printed["scores"]["n"] == 3 and printed["scores"]["success_rate"] == 0.0
    lines = _trajectories(tmp_path)
    for sample in samples:
        tools = [openai_tool_param(tool) for tool in sample.tools]
        assert lines[sample.id]["stop_reason"] == "context_overflow"
        assert lines[sample.id]["turns"] == []
        assert lines[sample.id]["context_tokens"] == request_tokens(sample.messages, tools) > 20
    scores = json.loads((tmp_path / "data" / "build" / "eval" / "scripted-model-1" / "scores.json").read_text())
    assert scores["context_overflow"] == {"samples": [s.id for s in samples], "window": 20, "tokenizer": "cl100k_base"}


def test_a_conversation_that_outgrows_the_window_stops_before_the_request_that_would_not_fit(tmp_path):
    # The window from pipelines.yaml: every first request fits, and Cross-12 (the longest path, 4
    # steps) outgrows it once responses pile up; what did fit was sent and answered.
    samples = _samples()
    first = {s.id: request_tokens(s.messages, [openai_tool_param(t) for t in s.tools]) for s in samples}
    window = max(first.values()) + 200
    pipelines, canonical, samples = _setup(tmp_path, window_in_yaml=window)
    model = PerfectModel(samples)
    with MockLLMServer(responder=model) as server:
        result = _evaluate(pipelines, server.base_url, canonical)
    assert result.exit_code == 0, result.output
    lines = _trajectories(tmp_path)
    overflowed = [sample_id for sample_id, line in lines.items() if line["stop_reason"] == "context_overflow"]
    assert "Cross-12" in overflowed
    assert json.loads(result.stdout)["context_overflow"] == overflowed
    for sample_id in overflowed:
        line = lines[sample_id]
        assert line["context_tokens"] > window
        sent = [body for sid, body in model.requests if sid == sample_id]
        # every request sent fit, one per turn taken, and the one that did not fit was never sent
        assert len(sent) == len(line["turns"]) >= 1
        assert all(request_tokens(body["messages"], body["tools"]) <= window for body in sent)
    assert all(request_tokens(body["messages"], body["tools"]) <= window for _, body in model.requests)
    # a re-run with the same window reuses every trajectory: nothing is sent again
    before = len(model.requests)
    with MockLLMServer(responder=model) as server:
        again = _evaluate(pipelines, server.base_url, canonical)
    assert again.exit_code == 0 and len(model.requests) == before
    assert json.loads(again.stdout)["reused"] == 3
