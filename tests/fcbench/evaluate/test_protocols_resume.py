"""Every protocol of the shared loop resumes after SIGKILL with the same outputs and no request paid
twice, takes the Batch API (`--batch`), and runs on a bundled pipeline from a fresh clone (the files
git tracks, nothing built) with its paper-layout table and its reference file. ComplexEval's own
resume is tested in test_evaluate.py."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from protocol_cases import (MODEL, SLUG, Scripted, callnavi_answer, callnavi_input, confetti_answer, confetti_input,
                            evaluate, icl_answer, llm_block, nestful_input, nestful_pipeline, react_answer,
                            read_lines, runner, stats, write_pipelines)

from conftest import REPO
from fcbench.cli import app
from fcbench.formats import read_samples
from fcbench.formats.callnavi import WriteLosses, item_from_sample
from fcbench.llm.mock_server import MockLLMServer
from fcbench.sample import Sample

EXECUTABLE = Path(sys.executable).parent / "build-dataset"


def _nestful(root: Path, samples_from: Path) -> dict[str, Any]:
    canonical, samples = nestful_input(samples_from)
    return {"pipelines": nestful_pipeline(root, concurrency=1), "input": canonical, "samples": samples}


# protocol -> (how to make its pipeline and input, its scripted model, extra arguments, the files to compare)
CASES = {
    "nestful-icl": (_nestful, icl_answer, [], ["nestful-icl-3shot/predictions.jsonl", "nestful-icl-3shot/scores.json",
                                               "nestful-icl-3shot/output.jsonl"]),
    "nestful-react": (_nestful, react_answer, [], ["nestful-react/predictions.jsonl", "nestful-react/scores.json",
                                                   "nestful-react/output.jsonl"]),
    "callnavi": (lambda root, shared: {"pipelines": write_pipelines(root, llm_block(1, seed=0)),
                                       **dict(zip(("input", "samples"), callnavi_input(shared)))},
                 callnavi_answer, ["--runs", "3"],
                 ["callnavi/predictions.jsonl", "callnavi/scores.json", "callnavi/callnavi/results_stab/bank_2_para_"
                  + SLUG + ".json"]),
    "confetti": (lambda root, shared: {"pipelines": write_pipelines(root, "    kind: conversation\n" + llm_block(1)),
                                       **dict(zip(("input", "samples"), confetti_input(shared)))},
                 lambda samples: confetti_answer, [],
                 ["confetti/predictions.jsonl", "confetti/scores.json",
                  "confetti/confetti/function_calling/input_result.json"]),
}


@pytest.mark.parametrize("protocol", sorted(CASES))
def test_resume_after_sigkill_gives_the_same_outputs_and_pays_no_request_twice(tmp_path, protocol):
    make, answer, extra, compared = CASES[protocol]
    clean_dir, killed_dir = tmp_path / "clean", tmp_path / "killed"
    clean_dir.mkdir()
    killed_dir.mkdir()
    clean, killed = make(clean_dir, tmp_path), make(killed_dir, tmp_path)
    arguments = ["--protocol", protocol, "--input", str(clean["input"]), *extra]

    with MockLLMServer(responder=Scripted(answer(clean["samples"]))) as server:
        first = evaluate(clean["pipelines"], server.base_url, *arguments)
        clean_requests = stats(server.port)["chat_requests"]
    assert first.exit_code == 0, first.output
    eval_dir = Path("data") / "build" / "eval" / SLUG
    expected = {name: (clean_dir / eval_dir / name).read_bytes() for name in compared}

    predictions = killed_dir / eval_dir / compared[0]
    with MockLLMServer(responder=Scripted(answer(killed["samples"])), latency_ms=150) as server:
        process = subprocess.Popen([str(EXECUTABLE), "evaluate", "bench", "--file", str(killed["pipelines"]),
                                    "--model", MODEL, "--base-url", server.base_url, "--json", *arguments],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if predictions.is_file() and predictions.read_text(encoding="utf-8").count("\n") >= 1:
                break
            time.sleep(0.02)
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
        before_kill = stats(server.port)["chat_requests"]
        saved = len(read_lines(predictions))
        assert 1 <= saved < len(read_lines(clean_dir / eval_dir / compared[0]))  # killed mid-run
        rerun = evaluate(killed["pipelines"], server.base_url, *arguments)
        total = stats(server.port)["chat_requests"]
    assert rerun.exit_code == 0, rerun.output
    printed = json.loads(rerun.stdout)
    assert printed["reused"] == saved and printed["ran"] == printed["items"] - saved
    # every answered request is replayed from the cache: at most the one in flight at the kill is paid twice
    assert clean_requests <= total <= clean_requests + 1, (clean_requests, before_kill, total)
    for name, content in expected.items():
        assert (killed_dir / eval_dir / name).read_bytes() == content, name

    with MockLLMServer(responder=Scripted(answer(killed["samples"]))) as idle:  # nothing left to do
        third = evaluate(killed["pipelines"], idle.base_url, *arguments)
        assert stats(idle.port)["chat_requests"] == 0
    assert json.loads(third.stdout)["reused"] == printed["items"]


@pytest.mark.parametrize("protocol", ["callnavi", "nestful-react"])
def test_batch_sends_every_request_through_the_batch_api_with_the_same_scores(tmp_path, protocol):
    make, answer, extra, _ = CASES[protocol]
    online_dir, batch_dir = tmp_path / "online", tmp_path / "batch"
    online_dir.mkdir()
    batch_dir.mkdir()
    online, batched = make(online_dir, tmp_path), make(batch_dir, tmp_path)
    arguments = ["--protocol", protocol, "--input", str(online["input"]), *extra]
    with MockLLMServer(responder=Scripted(answer(online["samples"]))) as server:
        first = evaluate(online["pipelines"], server.base_url, *arguments)
        online_requests = server.stats.chat_requests
    with MockLLMServer(responder=Scripted(answer(batched["samples"]))) as server:
        second = evaluate(batched["pipelines"], server.base_url, *arguments, "--batch")
        served = server.stats.as_dict() | server.batches.stats()
    assert first.exit_code == 0 and second.exit_code == 0, second.output
    assert served["chat_requests"] == 0 and served["batch_lines"] == online_requests
    assert json.loads(second.stdout)["llm"]["mode"] == "batch"
    assert json.loads(second.stdout)["scores"] == json.loads(first.stdout)["scores"]


# ----------------------------------------------------------------------- bundled pipelines, fresh clone
def _fresh_clone(target: Path) -> Path:
    """What a fresh clone holds: every file git tracks, nothing built (with shared/ beside it)."""
    listed = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z"], capture_output=True, check=True).stdout
    for name in filter(None, listed.decode().split("\0")):
        source = REPO / name
        if source.is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target / name)
    return target


def _build(root: Path, pipeline: str) -> None:
    done = subprocess.run([str(EXECUTABLE), "run", pipeline, "--offline", "--json"], cwd=root, capture_output=True,
                          text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-2000:]


def _exported(root: Path, pipeline: str, config: str = "data") -> list[Sample]:
    from fcbench.evaluate.runner import BenchmarkInput

    source = BenchmarkInput(root / "datasets" / pipeline / "build", "test", None, None, config=config)
    return list(source.samples(source.index()))


def _evaluate_bundled(root: Path, pipeline: str, server: MockLLMServer, *arguments: str) -> dict[str, Any]:
    result = runner.invoke(app, ["evaluate", pipeline, "--file", str(root / "pipelines.yaml"), "--model", MODEL,
                                 "--base-url", server.base_url, "--json", *arguments])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_every_protocol_runs_on_a_bundled_pipeline_of_a_fresh_clone(tmp_path):
    """A model that answers with the gold scores 1 on every figure the gold decides (hand-computed:
    every sample right -> every share 1.0), each protocol on the bundled benchmark it belongs to."""
    root = _fresh_clone(tmp_path / "clone")
    for pipeline in ("nestful-math", "travel", "travel-chat"):
        _build(root, pipeline)

    # nestful-icl and nestful-react on nestful-math (the published math samples, executable tools)
    math = {s.messages[0]["content"]: s for s in _exported(root, "nestful-math")}

    def gold_list(body: dict[str, Any]) -> dict[str, Any]:
        question = body["messages"][-1]["content"]
        sample = next(s for q, s in math.items() if q in question)
        return {"content": json.dumps([{"name": c.name, "label": f"${c.label}", "arguments": c.arguments}
                                       for c in sample.all_calls()])}

    with MockLLMServer(responder=Scripted(gold_list)) as server:
        icl = _evaluate_bundled(root, "nestful-math", server, "--protocol", "nestful-icl", "--limit", "5")
    assert [icl["scores"][k] for k in ("f1_func", "f1_param", "partial_acc", "full_acc", "win_rate")] == [1.0] * 5
    assert icl["tables"][0]["rows"][0]["cells"] == ["1.00"] * 5
    assert len([s for s in read_samples(Path(icl["reference_files"]["nestful_output"]), "nestful")
                if isinstance(s, Sample)]) == 5

    def react_gold(body: dict[str, Any]) -> dict[str, Any]:
        question = next(m["content"] for m in body["messages"] if m["role"] == "user")
        sample = next(s for q, s in math.items() if q in question)
        done = sum(m["role"] == "assistant" for m in body["messages"])
        calls = sample.all_calls()
        if done < len(calls):
            call = calls[done]
            return {"content": f"Action: {call.name}\nAction Input: {json.dumps(call.arguments)}"}
        return {"content": f"Final Answer: {json.dumps(sample.answer)}"}

    with MockLLMServer(responder=Scripted(react_gold)) as server:
        react = _evaluate_bundled(root, "nestful-math", server, "--protocol", "nestful-react", "--limit", "4")
    assert [react["scores"][k] for k in ("f1_func", "f1_param", "full_acc", "win_rate", "answer_match")] == [1.0] * 5

    # callnavi on travel: the gold CallNavi answer, every run
    travel = _exported(root, "travel")[:3]

    def callnavi_gold(body: dict[str, Any]) -> dict[str, Any]:
        text = body["messages"][0]["content"]
        sample = next(s for s in travel if s.messages[0]["content"] in text)
        return {"content": json.dumps(item_from_sample(sample, WriteLosses())["ground_truth"])}

    with MockLLMServer(responder=Scripted(callnavi_gold)) as server:
        navi = _evaluate_bundled(root, "travel", server, "--protocol", "callnavi", "--runs", "2", "--limit", "3")
    overall = navi["scores"]["overall"]
    assert [overall[k] for k in ("routing_exact_match", "ast_exact_match", "election_stability",
                                 "levenshtein_stability")] == [1.0] * 4
    assert Path(navi["reference_files"][next(k for k in navi["reference_files"] if k.startswith("results_stab"))]).is_file()

    # confetti on travel-chat (the default for kind: conversation): the gold calls where the history asks
    # for some (a response-quality turn may share its history with a function-calling one: the same
    # request, answered once), else a question
    calling = {json.dumps(s.messages, sort_keys=True): s for s in _exported(root, "travel-chat", "function_calling")}

    def confetti_gold(body: dict[str, Any]) -> dict[str, Any]:
        sample = calling.get(json.dumps(body["messages"], sort_keys=True))
        if sample is not None:
            return {"tool_calls": [{"name": c.name, "arguments": c.arguments} for c in sample.calls[0]]}
        return {"content": "Could you tell me more?"}

    with MockLLMServer(responder=Scripted(confetti_gold)) as server:
        chat = _evaluate_bundled(root, "travel-chat", server, "--limit", "4")
    assert chat["protocol"] == "confetti"
    assert chat["scores"]["ast_soft_accuracy"] == 1.0 and chat["scores"]["parameter_validity_rate"] == 1.0
    assert [t["title"] for t in chat["tables"]][0] == "CONFETTI: function calling and response quality"
    fc_file = Path(chat["reference_files"]["bfcl_result:function_calling"])
    assert [line["id"] for line in read_lines(fc_file)] == [
        s.id for s in _exported(root, "travel-chat", "function_calling")[:4]]
    gold_ids = {s.id for s in read_samples(root / "datasets" / "travel-chat" / "build" / "export" / "confetti"
                                           / "function_calling" / "test.json", "confetti")}
    assert {line["id"] for line in read_lines(fc_file)} <= gold_ids  # pairs with the exported possible answers
