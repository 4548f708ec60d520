"""The bundled `workspace` example (datasets/workspace): three real MCP servers (memory, filesystem,
time), every sample in a fresh sandbox.

- A fresh clone builds it offline, with no server installed, into >= 200 validated multi-step
  samples, each passing a value from one server to another through a `$label.path$` reference.
- Per-sample state isolation, on the real servers: two samples that write the same file and the
  same memory entity do not see each other, one after the other or interleaved on one worker.
- The recorded answers are what the servers say: gold paths re-executed live, each in a fresh
  sandbox, give the recorded responses (but for the answers that depend on the clock or the day).
- `evaluate` runs a model (the local mock) on the exported benchmark.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from fcbench.config import load_pipelines
from fcbench.environments import ErrorReason
from fcbench.environments.execution import execute_gold_paths
from fcbench.environments.from_config import open_environment
from fcbench.formats import read_samples
from fcbench.llm.mock_server import MockLLMServer
from fcbench.references import iter_references
from fcbench.sample import Sample
from mcp_servers import REPO, fresh_clone, require_servers

BUILD_DATASET = Path(sys.executable).parent / "build-dataset"
# answers that depend on when they are asked: the time now, a file's timestamps, and convert_time,
# which dates the converted time today (so its offsets move with daylight saving)
CLOCK_TOOLS = {"get_current_time", "get_file_info", "convert_time"}


def server_of() -> dict[str, str]:
    return {tool["name"]: tool["mcp"]["server"] for tool in json.loads((REPO / "datasets/workspace/tools.json").read_text())}


def cross_server_references(sample: Sample, servers: dict[str, str]) -> int:
    """References whose call and the call they read are served by different servers."""
    server_of_label = {call.label: servers[call.name] for call in sample.all_calls()}
    return sum(server_of_label[reference.label] != servers[call.name]
               for call in sample.all_calls() for reference in iter_references(call.arguments))


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    """A fresh clone (the tracked files only: no .mcp/, so no server can start) built offline."""
    root = fresh_clone(tmp_path_factory.mktemp("workspace") / "clone")
    assert not (root / ".mcp").exists()
    done = subprocess.run([str(BUILD_DATASET), "run", "workspace", "--offline", "--json"], cwd=root, capture_output=True,
                          text=True, timeout=1200)
    assert done.returncode == 0, done.stderr[-2000:]
    return root


def test_a_fresh_clone_builds_200_validated_cross_server_samples_offline(built):
    build = built / "datasets/workspace/build"
    samples = [item for item in read_samples(build / "validated.jsonl", "fcbench") if isinstance(item, Sample)]
    assert len(samples) >= 200
    servers = server_of()
    for sample in samples:
        assert sample.difficulty.value == "nested" and len(sample.all_calls()) >= 3
        assert cross_server_references(sample, servers) >= 1, sample.id
        query = sample.messages[0]["content"]
        assert not re.search(r"[{}$]|\bvar_\d", query), query  # said the way a person writes it
    assert {server for sample in samples for call in sample.all_calls() for server in [servers[call.name]]} == \
        {"memory", "filesystem", "time"}
    assert not (build / "mcp-logs").exists()  # every answer was replayed: no server was started
    summary = json.loads((build / "filter.summary.json").read_text())
    assert summary["counts"]["passed"] == len(samples)
    # the export reads back with Hugging Face datasets and pandas
    import datasets
    import pandas

    parquet = sorted(str(path) for path in (build / "export").rglob("*.parquet"))
    assert len(datasets.load_dataset("parquet", data_files=parquet, split="train")) == len(samples)
    assert sum(len(pandas.read_parquet(path)) for path in parquet) == len(samples)


def test_the_offline_build_is_the_same_bytes_twice(built, tmp_path):
    second = fresh_clone(tmp_path / "clone")
    done = subprocess.run([str(BUILD_DATASET), "run", "workspace", "--offline"], cwd=second, capture_output=True,
                          text=True, timeout=1200)
    assert done.returncode == 0, done.stderr[-2000:]
    for name in ("drafts.jsonl", "templates.jsonl", "candidates.jsonl", "validated.jsonl"):
        assert (second / "datasets/workspace/build" / name).read_bytes() == \
            (built / "datasets/workspace/build" / name).read_bytes(), name


def live_pipeline(workers: int = 1):
    """The workspace pipeline with its environment calling the real servers (no store)."""
    require_servers()
    pipeline = load_pipelines(REPO / "pipelines.yaml").get_pipeline("workspace")
    pipeline.environment.responses = None
    pipeline.environment.workers = workers
    return pipeline


@pytest.mark.parametrize("workers", [1, 2])
def test_two_samples_that_write_the_same_file_and_entity_do_not_see_each_other(workers):
    note = {"entities": [{"name": "Scratchpad", "entityType": "note", "observations": []}]}
    with open_environment(live_pipeline(workers), []) as environment:
        with environment.for_sample() as first, environment.for_sample() as second:
            # interleaved: each sample's calls see its own writes only, whoever ran in between
            assert first.call("write_file", {"path": "standup.txt", "content": "from the first"}).ok
            assert first.call("create_entities", note).response["entities"][0]["name"] == "Scratchpad"
            unseen = second.call("read_text_file", {"path": "standup.txt"})
            assert unseen.reason is ErrorReason.TOOL_ERROR and "ENOENT" in unseen.error
            # the same key is new to the second sample: not skipped as a duplicate of the first's
            assert second.call("create_entities", note).response["entities"][0]["name"] == "Scratchpad"
            assert second.call("add_observations", {"observations": [
                {"entityName": "Scratchpad", "contents": ["second"]}]}).ok
            assert second.call("write_file", {"path": "standup.txt", "content": "from the second"}).ok
            assert first.call("read_text_file", {"path": "standup.txt"}).response == {"content": "from the first"}
            assert first.call("open_nodes", {"names": ["Scratchpad"]}).response["entities"][0]["observations"] == []
            assert second.call("read_text_file", {"path": "standup.txt"}).response == {"content": "from the second"}
        # a later sample starts from the seed again
        with environment.for_sample() as third:
            assert third.call("open_nodes", {"names": ["Scratchpad"]}).response == {"entities": [], "relations": []}
            listing = third.call("search_files", {"path": ".", "pattern": "standup*"})
            assert listing.ok and listing.response == {"content": "No matches found"}
        assert environment.resets >= 3


def test_gold_paths_re_executed_live_give_the_recorded_answers():
    """One variant per template, each in a fresh sandbox on the real servers (two workers)."""
    pipeline = live_pipeline(workers=2)
    validated = REPO / "datasets/workspace/build/validated.jsonl"
    if not validated.is_file():  # this checkout's own offline build (the fixture builds in a copy)
        done = subprocess.run([str(BUILD_DATASET), "run", "workspace", "--offline"], cwd=REPO, capture_output=True,
                              text=True, timeout=1200)
        assert done.returncode == 0, done.stderr[-2000:]
    samples = [item for item in read_samples(validated, "fcbench") if isinstance(item, Sample) and item.id.endswith(("-v1", "-v2"))]
    assert len(samples) >= 40
    with open_environment(pipeline, samples) as environment:
        results = execute_gold_paths(samples, environment)
    compared = 0
    for sample, result in zip(samples, results):
        assert result.ok, (sample.id, result.failure)
        on_the_clock = _clock_dependent(sample)
        for recorded, run in zip(sample.all_calls(), result.path.runs):
            if recorded.label in on_the_clock:
                continue
            assert run.outcome.response == recorded.response, (sample.id, recorded.label)
            compared += 1
    assert compared >= 100


def _clock_dependent(sample: Sample) -> set[str]:
    """Labels of calls whose answer depends on the clock: a clock tool, or a call reading one's answer."""
    labels: set[str] = set()
    for call in sample.all_calls():  # in path order: a reference reads an earlier call
        if call.name in CLOCK_TOOLS or any(reference.label in labels for reference in iter_references(call.arguments)):
            labels.add(call.label)
    return labels


def test_evaluate_scores_a_model_that_makes_the_gold_calls(built, tmp_path):
    """`evaluate` over the exported benchmark, with the local mock as the model: it answers each
    turn with the gold step, references written out as the values the recorded answers hold, so
    ComplexEval's protocol (answers from the recorded responses) must score every sample a success."""
    from fcbench.resolve import CallSite, resolve_arguments

    validated = [item for item in read_samples(built / "datasets/workspace/build/validated.jsonl", "fcbench")
                 if isinstance(item, Sample)]
    steps_of: dict[str, list[list[dict]]] = {}
    for sample in validated:
        outputs = {call.label: call.response for call in sample.all_calls()}
        steps_of[sample.messages[0]["content"]] = [
            [{"name": call.name, "arguments": resolve_arguments(call.arguments, outputs, CallSite(call.label, call.name))}
             for call in step] for step in sample.calls]

    def gold_model(body, call_index):
        query = next(message["content"] for message in body["messages"] if message["role"] == "user")
        turn = sum(message["role"] == "assistant" for message in body["messages"])
        steps = steps_of[query]
        return {"tool_calls": steps[turn]} if turn < len(steps) else {"content": "Done."}

    with MockLLMServer(responder=gold_model) as server:
        environ = {**os.environ, "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-mock", "HOME": str(tmp_path)}
        done = subprocess.run([str(BUILD_DATASET), "evaluate", "workspace", "--model", "gold-model", "--limit", "12",
                               "--json"], cwd=built, env=environ, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    scores = json.loads(done.stdout)["scores"]
    assert scores["n"] == 12 and scores["success_rate"] == 1.0 and scores["call_accuracy"] == 1.0
    assert set(scores["by_domain"]) <= {"memory+filesystem", "memory+time", "filesystem+time"}
