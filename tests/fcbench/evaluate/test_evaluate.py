"""`build-dataset evaluate` against the local mock server over real HTTP: scripted models (perfect,
with known mistakes, looping) on the bundled ComplexFuncBench example, resume after SIGKILL, and
the one-line errors of a refused key and an unreachable endpoint."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from fcbench.cli import app
from fcbench.config import LLMConfig, load_pipelines
from fcbench.export.single import run_export_stage
from fcbench.formats import read_samples, write_samples
from fcbench.sample import Sample
from fcbench.score.complexeval import gold_steps_with_values
from fcbench.evaluate.runner import (
    assistant_message,
    evaluate,
    model_slug,
    predicted_call,
    saved_trajectories,
    tool_call_ids,
)
from fcbench.llm.client import Completion, ToolCall
from held_responder import HoldAfter
from fcbench.llm.mock_server import MockLLMServer

REPO = Path(__file__).resolve().parents[3]
EXAMPLE = REPO / "datasets" / "complexfuncbench-example" / "trips.jsonl"
MODEL = "scripted/model-1"
SLUG = "scripted-model-1"
runner = CliRunner()


# --------------------------------------------------------------------------------------- fixtures
def example_samples() -> list[Sample]:
    samples = [item for item in read_samples(EXAMPLE, "complexfuncbench")]
    assert [s.id for s in samples if isinstance(s, Sample)] == ["Cross-12", "Hotels-7", "Car-Rental-3"]
    return samples


@pytest.fixture
def samples() -> list[Sample]:
    return example_samples()


@pytest.fixture
def canonical_input(tmp_path: Path, samples: list[Sample]) -> Path:
    path = tmp_path / "trips.canonical.jsonl"
    write_samples(samples, path, "fcbench")
    return path


def write_pipelines(root: Path, concurrency: int = 2, extra: str = "") -> Path:
    """A pipeline whose build dir is root/data/build; max_retries 0 keeps error tests fast."""
    path = root / "pipelines.yaml"
    path.write_text(
        "pipelines:\n"
        "  bench:\n"
        "    dataset_dir: data\n"
        "    seed: 1\n"
        f"    llm: {{model: generator, temperature: 0.0, concurrency: {concurrency}, max_retries: 0}}\n" + extra,
        encoding="utf-8")
    return path


def first_user_text(body: dict[str, Any]) -> str:
    return next(m["content"] for m in body["messages"] if m["role"] == "user")


def model_turn(body: dict[str, Any]) -> int:
    """0-based: how many times the model already answered in this conversation."""
    return sum(m["role"] == "assistant" for m in body["messages"])


def gold_turn(sample: Sample, turn: int) -> list[dict[str, Any]]:
    return [{"name": c.name, "arguments": c.arguments} for c in gold_steps_with_values(sample)[turn]]


class ScriptedModel:
    """A responder that knows each sample by its query and answers turn `k` from `script(sample, k)`
    (a list of calls, or a text). It records every request, per sample."""

    def __init__(self, samples: list[Sample], script: Callable[[Sample, int], list[dict[str, Any]] | str]) -> None:
        self.by_query = {s.messages[0]["content"]: s for s in samples}
        self.script = script
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.lock = threading.Lock()

    def __call__(self, body: dict[str, Any], call_index: int) -> dict[str, Any]:
        sample = self.by_query[first_user_text(body)]
        with self.lock:
            self.requests.append((sample.id, body))
        answer = self.script(sample, model_turn(body))
        return {"content": answer} if isinstance(answer, str) else {"tool_calls": answer}

    def counts(self) -> Counter:
        with self.lock:
            return Counter(sample_id for sample_id, _ in self.requests)


def perfect(sample: Sample, turn: int) -> list[dict[str, Any]] | str:
    steps = gold_steps_with_values(sample)
    return gold_turn(sample, turn) if turn < len(steps) else "Here is what I found for you."


def with_mistakes(sample: Sample, turn: int) -> list[dict[str, Any]] | str:
    if sample.id == "Cross-12":
        if turn == 1:  # the landmark looked up with the flight location search: wrong function
            return [{"name": "Search_Flight_Location", "arguments": {"query": "Royal Botanic Gardens Victoria, Melbourne"}}]
        return gold_turn(sample, turn)
    if sample.id == "Hotels-7":
        if turn == 1:  # arguments that are not JSON
            return [{"name": "Search_Hotels", "arguments": '{"dest_id": "2390", "search_type": '}]
        if turn == 2:  # dest_id left out, corrected at the next turn
            arguments = {k: v for k, v in gold_turn(sample, 1)[0]["arguments"].items() if k != "dest_id"}
            return [{"name": "Search_Hotels", "arguments": arguments}]
        if turn == 3:
            return gold_turn(sample, 1)
        if turn == 0:
            return gold_turn(sample, 0)
        return "The cheapest hotels in Shibuya are listed above."
    return "I cannot look up car rentals."  # Car-Rental-3: stops before its only call


def evaluate_cli(pipelines: Path, base_url: str, *extra: str):
    return runner.invoke(app, ["evaluate", "bench", "--file", str(pipelines), "--model", MODEL,
                               "--base-url", base_url, "--json", *extra])


def read_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


# --------------------------------------------------------------------------------------- pure parts
def test_model_slug_makes_a_folder_name():
    assert model_slug("Qwen/Qwen2.5-7B-Instruct") == "Qwen-Qwen2.5-7B-Instruct"
    assert model_slug("gpt-4o-mini") == "gpt-4o-mini"
    assert model_slug("hf.co/org/m:q4") == "hf.co-org-m-q4"


def test_predicted_call_keeps_text_that_is_not_a_json_object():
    assert predicted_call(ToolCall("c1", "f", '{"a": 1}')) == {"name": "f", "arguments": {"a": 1}}
    assert predicted_call(ToolCall("c1", "f", "")) == {"name": "f", "arguments": {}}
    assert predicted_call(ToolCall("c1", "f", '{"a": ')) == {"name": "f", "arguments": '{"a": '}
    assert predicted_call(ToolCall("c1", "f", "[1]")) == {"name": "f", "arguments": "[1]"}


def test_tool_call_ids_are_unique_and_never_empty():
    calls = [ToolCall("", "f", "{}"), ToolCall("x", "f", "{}"), ToolCall("x", "g", "{}")]
    assert tool_call_ids(calls, 2) == ["call_2_0", "x", "x_2"]
    completion = Completion(None, calls, "tool_calls", {})
    message = assistant_message(completion, tool_call_ids(calls, 2))
    assert [c["id"] for c in message["tool_calls"]] == ["call_2_0", "x", "x_2"]
    assert message["tool_calls"][2]["function"] == {"name": "g", "arguments": "{}"}


# --------------------------------------------------------------------------------- scripted models
def test_perfect_model_scores_one_and_history_grows_as_the_protocol_says(tmp_path, samples, canonical_input):
    model = ScriptedModel(samples, perfect)
    pipelines = write_pipelines(tmp_path)
    with MockLLMServer(responder=model) as server:
        result = evaluate_cli(pipelines, server.base_url, "--input", str(canonical_input))
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout)
    assert printed["model"] == MODEL
    assert printed["trajectories"] == str(tmp_path / "data" / "build" / "eval" / SLUG / "trajectories.jsonl")
    scores = printed["scores"]
    assert scores["n"] == 3
    assert scores["success_rate"] == 1.0
    assert scores["call_accuracy"] == 1.0
    assert scores["errors"] == {"func_error": 0, "param_missing": 0, "hallucination": 0, "value_error": 0,
                                "stop_early": 0}
    assert set(scores["by_domain"]) == {"Cross", "Hotels", "Car-Rental"}
    assert all(d["success_rate"] == 1.0 for d in scores["by_domain"].values())
    # steps + 1 final answer per sample: 4+1, 2+1, 1+1
    assert model.counts() == {"Cross-12": 5, "Hotels-7": 3, "Car-Rental-3": 2}

    # the second request of Hotels-7: query, assistant tool_calls, one tool message per call id
    body = next(b for sample_id, b in model.requests if sample_id == "Hotels-7" and model_turn(b) == 1)
    assert [m["role"] for m in body["messages"]] == ["user", "assistant", "tool"]
    call = body["messages"][1]["tool_calls"][0]
    assert call["function"] == {"name": "Search_Hotel_Destination", "arguments": '{"query": "Shibuya"}'}
    assert body["messages"][2]["tool_call_id"] == call["id"]
    gold_response = samples[1].calls[0][0].response
    assert json.loads(body["messages"][2]["content"]) == gold_response
    # tools passed natively, as the SDK's entries
    assert [t["function"]["name"] for t in body["tools"]] == ["Search_Hotel_Destination", "Search_Hotels"]
    assert body["tools"][0]["type"] == "function"

    scores_file = json.loads((tmp_path / "data" / "build" / "eval" / SLUG / "scores.json").read_text())
    assert scores_file["summary"] == scores
    assert [item["id"] for item in scores_file["items"]] == ["Cross-12", "Hotels-7", "Car-Rental-3"]
    lines = read_lines(tmp_path / "data" / "build" / "eval" / SLUG / "trajectories.jsonl")
    assert [line["id"] for line in lines] == ["Cross-12", "Hotels-7", "Car-Rental-3"]
    assert lines[2]["turns"] == [gold_turn(samples[2], 0), "Here is what I found for you."]
    assert lines[2]["stop_reason"] == "final_text"


def test_model_with_known_mistakes_gets_the_expected_scores(tmp_path, samples, canonical_input):
    model = ScriptedModel(samples, with_mistakes)
    pipelines = write_pipelines(tmp_path)
    with MockLLMServer(responder=model) as server:
        result = evaluate_cli(pipelines, server.base_url, "--input", str(canonical_input))
    assert result.exit_code == 0, result.output
    scores = json.loads(result.stdout)["scores"]
    assert scores["success_rate"] == pytest.approx(1 / 3)  # only Hotels-7, after correcting itself
    assert scores["call_accuracy"] == pytest.approx(4 / 8)  # 2 of 5 + 2 of 2 + 0 of 1
    assert scores["errors"] == {"func_error": 1, "param_missing": 0, "hallucination": 0, "value_error": 0,
                                "stop_early": 1}
    # failed calls: the wrong function, the unparseable arguments (value_error), the missing dest_id
    assert scores["call_errors"] == {"func_error": 1, "param_missing": 1, "hallucination": 0, "value_error": 1}
    by_domain = scores["by_domain"]
    assert by_domain["Cross"]["call_accuracy"] == pytest.approx(2 / 5)
    assert by_domain["Hotels"]["success_rate"] == 1.0
    assert by_domain["Car-Rental"]["call_accuracy"] == 0.0
    # the wrong function ends Cross-12 at once (off the gold path): 2 requests
    assert model.counts() == {"Cross-12": 2, "Hotels-7": 5, "Car-Rental-3": 1}

    # the model saw ComplexEval's format messages, so it could correct itself
    hotels = [b for sample_id, b in model.requests if sample_id == "Hotels-7"]
    after_bad_json = json.loads(hotels[2]["messages"][-1]["content"])
    assert "not JSON" in after_bad_json["error"]
    after_missing = json.loads(hotels[3]["messages"][-1]["content"])
    assert after_missing == {"error": "Function Search_Hotels requires parameters ['dest_id', 'search_type', "
                                      "'arrival_date', 'departure_date'], but ['search_type', 'arrival_date', "
                                      "'departure_date', 'adults', 'room_qty', 'sort_by', 'currency_code'] do not "
                                      "provide ['dest_id']."}
    lines = {line["id"]: line for line in read_lines(tmp_path / "data" / "build" / "eval" / SLUG / "trajectories.jsonl")}
    assert lines["Hotels-7"]["turns"][1] == [{"name": "Search_Hotels", "arguments": '{"dest_id": "2390", "search_type": '}]
    assert lines["Cross-12"]["stop_reason"] == "off_path"

    # the saved trajectories give the same figures through the score command
    scored = runner.invoke(app, ["score", "--metric", "complexeval", "--gold", str(canonical_input), "--predictions",
                                 str(tmp_path / "data" / "build" / "eval" / SLUG / "trajectories.jsonl"), "--json"])
    assert scored.exit_code == 0, scored.output
    assert json.loads(scored.stdout)["summary"]["call_accuracy"] == pytest.approx(0.5)


def test_a_looping_model_is_cut_off_after_gold_steps_plus_extra_turns(tmp_path, samples):
    only_car = tmp_path / "car.jsonl"
    write_samples([samples[2]], only_car, "fcbench")

    def loops(sample: Sample, turn: int) -> list[dict[str, Any]]:
        return [{"name": "Search_Car_Rentals", "arguments": {"driver_age": 45}}]  # always missing parameters

    model = ScriptedModel(samples, loops)
    with MockLLMServer(responder=model) as server:
        config = LLMConfig(model=MODEL, base_url=server.base_url, max_retries=0)
        result = evaluate(config, tmp_path / "build", input_file=only_car, extra_turns=3, environ={})
    assert model.counts() == {"Car-Rental-3": 1 + 3}
    line = read_lines(result.trajectories_path)[0]
    assert line["stop_reason"] == "max_turns"
    assert line["model_turns"] == 4
    assert result.scores["success_rate"] == 0.0
    assert result.scores["errors"]["param_missing"] == 1


def test_exported_split_is_read_from_parquet(tmp_path, samples, canonical_input):
    pipelines = write_pipelines(tmp_path, extra="    stages:\n      export: {split: ratio, ratios: {test: 1.0}}\n")
    run_export_stage(load_pipelines(pipelines).get_pipeline("bench"), canonical_input)
    model = ScriptedModel(samples, perfect)
    with MockLLMServer(responder=model) as server:
        result = evaluate_cli(pipelines, server.base_url, "--limit", "2")
        missing = evaluate_cli(pipelines, server.base_url, "--split", "validation")
    assert result.exit_code == 0, result.output
    printed = json.loads(result.stdout)
    assert printed["scores"]["n"] == 2 and printed["scores"]["success_rate"] == 1.0
    assert printed["input"].endswith("export/data/test-*.parquet")
    assert missing.exit_code == 1
    assert missing.stderr.strip().splitlines() == [missing.stderr.strip()]
    assert "no split 'validation'" in missing.stderr and "exported splits: test" in missing.stderr


# ------------------------------------------------------------------------------------------- resume
def _stats(server: MockLLMServer) -> dict[str, Any]:
    with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/_stats") as response:
        return json.loads(response.read())


def test_resume_after_sigkill_gives_the_same_scores_and_resends_nothing_finished(tmp_path, samples, canonical_input):
    clean_dir, killed_dir = tmp_path / "clean", tmp_path / "killed"
    clean_dir.mkdir()
    killed_dir.mkdir()
    clean_pipelines = write_pipelines(clean_dir, concurrency=1)
    killed_pipelines = write_pipelines(killed_dir, concurrency=1)
    executable = shutil.which("build-dataset", path=str(Path(sys.executable).parent))
    assert executable

    with MockLLMServer(responder=ScriptedModel(samples, perfect)) as clean_server:
        clean = evaluate_cli(clean_pipelines, clean_server.base_url, "--input", str(canonical_input))
    assert clean.exit_code == 0, clean.output
    clean_scores = (clean_dir / "data" / "build" / "eval" / SLUG / "scores.json").read_text()

    model = ScriptedModel(samples, perfect)
    # the model answers the first sample's five turns and holds the next request: the run is killed
    # there, after the first trajectory is written, however slow the machine (no timer to race)
    held = HoldAfter(model, answered=5)
    trajectories = killed_dir / "data" / "build" / "eval" / SLUG / "trajectories.jsonl"
    with MockLLMServer(responder=held) as server:
        process = subprocess.Popen([executable, "evaluate", "bench", "--file", str(killed_pipelines), "--model", MODEL,
                                    "--base-url", server.base_url, "--input", str(canonical_input), "--json"],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        assert held.wait_until_held(alive=lambda: process.poll() is None)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if trajectories.is_file() and trajectories.read_text(encoding="utf-8").count("\n") >= 1:
                break
            time.sleep(0.02)
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=60)
        first_run = model.counts()  # before the release: the held request never reached the model
        held.release()
        assert first_run["Cross-12"] == 5  # the first sample finished before the kill
        assert sum(first_run.values()) == 5  # and the run did not
        finished_before_kill = {line["id"] for line in read_lines(trajectories)}
        assert "Cross-12" in finished_before_kill and len(finished_before_kill) < 3

        rerun = evaluate_cli(killed_pipelines, server.base_url, "--input", str(canonical_input))
        assert rerun.exit_code == 0, rerun.output
        both_runs = model.counts()
        total_requests = _stats(server)["chat_requests"]

    second_run = both_runs - first_run
    assert all(second_run[sample_id] == 0 for sample_id in finished_before_kill)
    # each answered turn is replayed from the cache: at most the one request in flight at the kill is paid twice
    assert 10 <= total_requests <= 11
    printed = json.loads(rerun.stdout)
    assert printed["reused"] == len(finished_before_kill)
    assert (killed_dir / "data" / "build" / "eval" / SLUG / "scores.json").read_text() == clean_scores
    assert [line["id"] for line in read_lines(trajectories)] == ["Cross-12", "Hotels-7", "Car-Rental-3"]

    # a third run has nothing left to do: no request at all
    with MockLLMServer(responder=model) as idle_server:
        third = evaluate_cli(killed_pipelines, idle_server.base_url, "--input", str(canonical_input))
        assert _stats(idle_server)["chat_requests"] == 0
    assert third.exit_code == 0 and json.loads(third.stdout)["reused"] == 3


def test_a_cut_last_line_is_ignored_and_that_sample_runs_again(tmp_path, samples, canonical_input):
    model = ScriptedModel(samples, perfect)
    with MockLLMServer(responder=model) as server:
        config = LLMConfig(model=MODEL, base_url=server.base_url)
        first = evaluate(config, tmp_path / "build", input_file=canonical_input, environ={})
        text = first.trajectories_path.read_text(encoding="utf-8")
        first.trajectories_path.write_text(text[: text.rindex("{") + 20], encoding="utf-8")  # a kill mid-line
        second = evaluate(config, tmp_path / "build", input_file=canonical_input, environ={})
    assert second.reused == 2 and second.ran == 1
    assert second.llm["requests_sent"] == 0  # Car-Rental-3's turns come from the request cache
    assert second.scores == first.scores
    assert len(read_lines(second.trajectories_path)) == 3


def test_a_changed_sample_is_not_reused(tmp_path, samples):
    path = tmp_path / "trajectories.jsonl"
    path.write_text(json.dumps({"id": "a", "turns": [], "sample_sha": "old", "settings": {"x": 1}}) + "\n"
                    + json.dumps({"id": "b", "turns": [], "sample_sha": "same", "settings": {"x": 1}}) + "\n",
                    encoding="utf-8")
    assert set(saved_trajectories(path, {"a": "new", "b": "same"}, {"x": 1})) == {"b"}
    assert saved_trajectories(path, {"a": "new", "b": "same"}, {"x": 2}) == {}


# ------------------------------------------------------------------------------------------- errors
def test_wrong_key_is_one_line_and_exit_1(tmp_path, canonical_input, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-wrong-key-123")
    pipelines = write_pipelines(tmp_path)
    with MockLLMServer(api_key="sk-right-key") as server:
        result = evaluate_cli(pipelines, server.base_url, "--input", str(canonical_input))
    assert result.exit_code == 1
    assert result.stderr == ("error: the LLM endpoint refused the API key from $OPENAI_API_KEY (HTTP 401)\n")
    assert "sk-wrong-key-123" not in result.output
    assert result.stdout == ""


def test_unreachable_endpoint_is_one_line_and_exit_1(tmp_path, canonical_input):
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    pipelines = write_pipelines(tmp_path)
    result = evaluate_cli(pipelines, f"http://127.0.0.1:{port}/v1", "--input", str(canonical_input))
    assert result.exit_code == 1
    assert result.stderr == f"error: cannot reach the LLM endpoint at http://127.0.0.1:{port}/v1\n"
    # nothing left behind for a later report to list as a broken evaluation
    assert not (tmp_path / "data" / "build" / "eval" / SLUG).exists()


def test_a_sample_the_endpoint_refuses_counts_as_a_failure_and_runs_again_next_time(tmp_path, samples, canonical_input):
    pipelines = write_pipelines(tmp_path)
    model = ScriptedModel(samples, perfect)
    refusing = [{"user_contains": "Shibuya", "status": 400}]  # e.g. a prompt too long for this model
    with MockLLMServer(refusing, responder=model) as server:
        first = evaluate_cli(pipelines, server.base_url, "--input", str(canonical_input))
    assert first.exit_code == 0, first.output
    printed = json.loads(first.stdout)
    # scored against every sample: leaving the refused one out would give 1.0
    assert printed["scores"]["n"] == 3 and printed["scores"]["success_rate"] == pytest.approx(2 / 3)
    assert printed["not_evaluated"] == {"llm_error": 1}
    rejects = read_lines(tmp_path / "data" / "build" / "eval" / SLUG / "evaluate.rejects.jsonl")
    assert rejects == [{"id": "Hotels-7", "reason": "llm_error", "detail": "HTTP 400"}]
    scores = json.loads((tmp_path / "data" / "build" / "eval" / SLUG / "scores.json").read_text())
    assert scores["gold_set"] == {"gold": 3, "answered": 2, "missing": ["Hotels-7"]}
    assert [item["error"]["type"] for item in scores["items"] if item["id"] == "Hotels-7"] == ["missing_prediction"]

    with MockLLMServer(responder=model) as server:
        second = evaluate_cli(pipelines, server.base_url, "--input", str(canonical_input))
    printed = json.loads(second.stdout)
    assert (printed["reused"], printed["ran"], printed["scores"]["n"]) == (2, 1, 3)
    assert printed["scores"]["success_rate"] == 1.0 and printed["not_evaluated"] == {}
    assert read_lines(tmp_path / "data" / "build" / "eval" / SLUG / "evaluate.rejects.jsonl") == []


def test_without_json_a_table_per_domain_is_printed(tmp_path, samples, canonical_input):
    pipelines = write_pipelines(tmp_path)
    with MockLLMServer(responder=ScriptedModel(samples, with_mistakes)) as server:
        result = runner.invoke(app, ["evaluate", "bench", "--file", str(pipelines), "--model", MODEL,
                                     "--base-url", server.base_url, "--input", str(canonical_input)])
    assert result.exit_code == 0, result.output
    rows = {line.split("│")[1].strip(): [cell.strip() for cell in line.split("│")[2:-1]]
            for line in result.stdout.splitlines() if line.count("│") == 7}
    assert rows["Cross"] == ["1", "0.000", "0.400", "0.00", "0.00"]  # cut off the path: no final answer
    assert rows["Hotels"][:3] == ["1", "1.000", "1.000"]
    assert rows["overall"][:3] == ["3", "0.333", "0.500"]
    assert "scores:" in result.stdout and str(tmp_path / "data" / "build" / "eval" / SLUG / "scores.json") in result.stdout


def test_evaluate_with_batch_sends_every_model_turn_through_the_batch_api(tmp_path, samples, canonical_input):
    """`--batch`: the same trajectories and scores, every turn answered through /v1/batches."""
    model = ScriptedModel(samples, perfect)
    pipelines = write_pipelines(tmp_path)
    with MockLLMServer(responder=model) as server:
        result = evaluate_cli(pipelines, server.base_url, "--input", str(canonical_input), "--batch")
        served = server.stats.as_dict() | server.batches.stats()
    assert result.exit_code == 0, result.output
    scores = json.loads(result.stdout)["scores"]
    assert scores["n"] == 3 and scores["success_rate"] == 1.0 and scores["call_accuracy"] == 1.0
    assert served["chat_requests"] == 0 and served["batch_lines"] == 5 + 3 + 2
    assert served["batch_lines_repeated"] == 0
    assert model.counts() == {"Cross-12": 5, "Hotels-7": 3, "Car-Rental-3": 2}


# ------------------------------------------------------------------------------------ LLM judges
class Judge:
    """The judge endpoint: call equivalence by a marker in call 1, scores by a marker in the answer."""

    def __init__(self) -> None:
        self.asked: Counter = Counter()
        self.lock = threading.Lock()

    def __call__(self, body: dict[str, Any], call_index: int) -> dict[str, Any]:
        text = body["messages"][-1]["content"]
        if "Function call 1 (JSON)" in text:
            with self.lock:
                self.asked["equivalence"] += 1
            call_1 = text.split("Function call 1 (JSON):")[1].split("Function call 2")[0]
            return {"content": json.dumps({"is_equal": "Shibuya, Tokyo" in call_1, "reason": "scripted"})}
        kind = "completeness" if "COMPLETENESS" in text else "correctness"
        with self.lock:
            self.asked[kind] += 1
        return {"content": json.dumps({"score": 1 if kind == "completeness" else 2, "reason": "scripted"})}


def near_miss(sample: Sample, turn: int) -> list[dict[str, Any]] | str:
    """Perfect, except Hotels-7 looks its destination up as "Shibuya, Tokyo" (rules say no, the judge yes)."""
    answer = perfect(sample, turn)
    if sample.id == "Hotels-7" and turn == 0:
        return [{"name": "Search_Hotel_Destination", "arguments": {"query": "Shibuya, Tokyo"}}]
    return answer


def test_evaluate_with_an_llm_judge_matches_what_rules_cannot_and_grades_answers(tmp_path, samples, canonical_input):
    model, judge = ScriptedModel(samples, near_miss), Judge()
    pipelines = write_pipelines(tmp_path)
    with MockLLMServer(responder=model) as server, MockLLMServer(responder=judge) as judge_server:
        result = evaluate_cli(pipelines, server.base_url, "--input", str(canonical_input),
                              "--judge-model", "judge-4o", "--judge-base-url", judge_server.base_url)
        assert result.exit_code == 0, result.output
        asked = dict(judge.asked)
        again = evaluate_cli(pipelines, server.base_url, "--input", str(canonical_input),
                             "--judge-model", "judge-4o", "--judge-base-url", judge_server.base_url)
        assert again.exit_code == 0 and dict(judge.asked) == asked  # every verdict came from the cache
    scores = json.loads(result.stdout)["scores"]
    assert scores["success_rate"] == 1.0  # the judged call got the gold response live, so the model went on
    assert (scores["completeness"], scores["correctness"]) == (1.0, 2.0)
    assert asked == {"equivalence": 1, "completeness": 3, "correctness": 3}
    eval_dir = tmp_path / "data" / "build" / "eval" / SLUG
    scores_file = json.loads((eval_dir / "scores.json").read_text())
    assert next(iter(scores_file)) == "judges_note" and "llm:judge-4o:completeness" in scores_file["judges_note"]
    hotels = next(item for item in scores_file["items"] if item["id"] == "Hotels-7")
    assert hotels["calls"][0]["layer"] == "llm" and hotels["calls"][1]["layer"] == "rule"
    assert (eval_dir / "judges.sqlite").is_file()
    assert json.loads(again.stdout)["scores"] == scores


def test_evaluate_without_a_judge_says_rule_based_first(tmp_path, samples, canonical_input):
    model = ScriptedModel(samples, near_miss)
    pipelines = write_pipelines(tmp_path)
    with MockLLMServer(responder=model) as server:
        result = runner.invoke(app, ["evaluate", "bench", "--file", str(pipelines), "--model", MODEL,
                                     "--base-url", server.base_url, "--input", str(canonical_input)])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[0].startswith("ComplexEval judges: RULE-BASED STAND-INS")
    scores_file = json.loads((tmp_path / "data" / "build" / "eval" / SLUG / "scores.json").read_text())
    assert scores_file["judges"]["rule_based"] is True and "RULE-BASED" in scores_file["judges_note"]
    hotels = next(item for item in scores_file["items"] if item["id"] == "Hotels-7")
    assert not hotels["success"]  # without the judge "Shibuya, Tokyo" is not "Shibuya"


def test_the_judge_comes_from_the_pipeline_unless_the_command_line_names_one(tmp_path):
    from fcbench.llm.judge import judge_llm_config

    plain = load_pipelines(write_pipelines(tmp_path)).get_pipeline("bench")
    assert judge_llm_config(plain.judge, None, None) is None
    assert judge_llm_config(plain.judge, "j", "http://127.0.0.1:1/v1").model == "j"
    configured = load_pipelines(write_pipelines(tmp_path, extra="    judge: {model: gpt-4o, base_url: "
                                                "'http://127.0.0.1:2/v1', api_key_env: JUDGE_KEY}\n")).get_pipeline("bench")
    judge = judge_llm_config(configured.judge, None, None)
    assert (judge.model, judge.base_url, judge.api_key_env) == ("gpt-4o", "http://127.0.0.1:2/v1", "JUDGE_KEY")
    assert judge_llm_config(configured.judge, "other", None).api_key_env == "JUDGE_KEY"
    lone_url = evaluate_cli(write_pipelines(tmp_path), "http://127.0.0.1:9/v1", "--judge-base-url", "http://x/v1")
    assert lone_url.exit_code == 1 and "--judge-base-url needs --judge-model" in lone_url.stderr


def test_a_judge_without_a_verdict_is_a_judge_error_live_and_when_scored(tmp_path, samples, canonical_input):
    class Garbled(Judge):
        def __call__(self, body, call_index):
            if "Function call 1 (JSON)" in body["messages"][-1]["content"]:
                with self.lock:
                    self.asked["equivalence"] += 1
                return {"content": "They look the same to me."}
            return super().__call__(body, call_index)

    model, judge = ScriptedModel(samples, near_miss), Garbled()
    pipelines = write_pipelines(tmp_path)
    with MockLLMServer(responder=model) as server, MockLLMServer(responder=judge) as judge_server:
        result = evaluate_cli(pipelines, server.base_url, "--input", str(canonical_input),
                              "--judge-model", "judge-4o", "--judge-base-url", judge_server.base_url)
    assert result.exit_code == 0, result.output
    # asked once and again once, live; the scorer's replay reuses that outcome instead of asking anew
    assert judge.asked["equivalence"] == 2
    scores = json.loads(result.stdout)["scores"]
    assert scores["judge_errors"]["samples"] == 1 and scores["judge_errors"]["calls"] == 1
    hotels = json.loads((tmp_path / "data" / "build" / "eval" / SLUG / "scores.json").read_text())["items"][1]
    assert hotels["error"]["type"] == "judge_error" and hotels["calls"][0]["layer"] == "judge_error"
    assert model.counts()["Hotels-7"] == 1  # the judged call got the error response: the session ended there
