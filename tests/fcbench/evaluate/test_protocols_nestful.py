"""`evaluate --protocol nestful-icl` and `--protocol nestful-react` against the mock server over real
HTTP, on three published NESTful samples (tests/protocol_cases.py), with scores computed by hand.

The three gold paths: S1 divide(529, 23) -> subtract($var_1.result$, 5) = 18.0; S2 multiply(15, 100)
-> divide($var_1.result$, 15) = 100.0; S3 divide(60, 15) -> multiply($var_1.result$, 10) = 40.0.
fcbench's default NESTful scores per sample: F1 Func / F1 Param = multiset F1 of function names /
of (function, parameter, value) with labels grounded to function names; Partial = longest common
subsequence of call signatures / the longer length; Full = all signatures equal; Win = executing
the predicted sequence gives the gold answer.
"""

from __future__ import annotations

import json

import pytest
from protocol_cases import (NESTFUL_IDS, NESTFUL_TOOLS, SLUG, Scripted, evaluate, icl_answer, llm_block, nestful_input,
                            nestful_pipeline, nestful_sample_of, react_answer, read_lines, runner, write_pipelines)

from fcbench.cli import app
from fcbench.formats import read_samples
from fcbench.llm.mock_server import MockLLMServer
from fcbench.sample import Sample


def test_icl_sends_nestfuls_prompt_and_scores_by_hand(tmp_path):
    canonical, samples = nestful_input(tmp_path)
    pipelines = nestful_pipeline(tmp_path)
    model = Scripted(icl_answer(samples), key=lambda body: nestful_sample_of(body, samples).id)
    with MockLLMServer(responder=model) as server:
        result = evaluate(pipelines, server.base_url, "--protocol", "nestful-icl", "--input", str(canonical))
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert model.counts() == {sample_id: 1 for sample_id in NESTFUL_IDS}  # one request a sample

    # the prompt: NESTful's chat layout, the sample's tools as a JSON array, 3 examples, greedy, 1,000 tokens
    body = model.requests[0]
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    system = body["messages"][0]["content"]
    assert system.startswith("You are a helpful assistant with access to the following function calls.")
    assert system.count("#Example-") == 3 and "#Example-1\nInput: In objective test" in system
    assert body["temperature"] == 0.0 and body["max_tokens"] == 1000 and "tools" not in body
    tools = json.loads(system.split("you can invoke:\n", 1)[1].split("\nDO NOT try", 1)[0])
    assert isinstance(tools, list) and {"name", "parameters", "output_parameters"} <= set(tools[0])

    summary = out["scores"]
    # S1 perfect: F1 1, Param 1, Partial 1, Full, Win (529 / 23 - 5 = 18).
    # S2 [multiply, multiply] vs [multiply, divide]: F1 Func 2*1/(2+2) = 0.5; Param: 2 of 4 items on
    #    each side match -> 2*2/8 = 0.5; Partial 1/2; not Full; Win: 1500 * 15 = 22500 != 100.
    # S3 prose: a parsing error, no calls: 0 everywhere.
    assert summary["f1_func"] == pytest.approx((1 + 0.5 + 0) / 3)
    assert summary["f1_param"] == pytest.approx((1 + 0.5 + 0) / 3)
    assert summary["partial_acc"] == pytest.approx((1 + 0.5 + 0) / 3)
    assert summary["full_acc"] == pytest.approx(1 / 3)
    assert summary["win_rate"] == pytest.approx(1 / 3)
    assert summary["parsing_errors"] == 1
    # the published scorer (compat): macro F1 over the gold's labels. Intent sets per sample (gold ->
    # predicted): S1 {divide, subtract} -> same; S2 {multiply, divide} -> {multiply}; S3 {divide,
    # multiply} -> {} (parse error). divide: TP 1, FN 2 -> F1 2*1/(2*1+2) = 0.5; subtract: 1;
    # multiply: TP 1, FN 1 -> 2/3. Macro = (0.5 + 1 + 2/3) / 3 = 13/18.
    assert summary["compat"]["f1_func"] == pytest.approx(13 / 18)
    assert summary["compat"]["full_acc"] == pytest.approx(1 / 3) and summary["compat"]["parsing_errors"] == 1

    # the paper's layout: Three-shot ICL x the five metrics, 2 decimals
    table = out["tables"][0]
    assert [c["name"] for c in table["columns"]] == ["F1 Func", "F1 Param", "Partial Seq. Acc.", "Full Seq. Acc.",
                                                     "Win Rate"]
    assert {c["group"] for c in table["columns"]} == {"Three-shot ICL"}
    assert table["rows"] == [{"model": "scripted/m1", "values": [summary[k] for k in (
        "f1_func", "f1_param", "partial_acc", "full_acc", "win_rate")], "cells": ["0.50", "0.50", "0.50", "0.33", "0.33"]}]
    assert any("generic chat layout" in choice for choice in out["choices"])
    assert out["choices"][0] == ("decoding: temperature 0.0, max_tokens 1000 (NESTful's src/eval.py: temperature 0.0, "
                                 "max_tokens 1000)")

    # NESTful's own file, read back by fcbench's NESTful reader (the published files' reader)
    folder = tmp_path / "data" / "build" / "eval" / SLUG / "nestful-icl-3shot"
    output = folder / "output.jsonl"
    assert out["reference_files"]["nestful_output"] == str(output)
    lines = read_lines(output)
    assert [list(line) for line in lines] == [["sample_id", "input", "output", "gold_answer", "tools",
                                               "generated_text"]] * 3
    assert all(isinstance(line[key], str) for line in lines for key in ("output", "gold_answer", "tools"))
    read_back = [item for item in read_samples(output, "nestful")]
    assert [s.id for s in read_back if isinstance(s, Sample)] == list(NESTFUL_IDS)
    assert read_back[0].answer == 18.0 and [c.name for c in read_back[0].all_calls()] == ["divide", "subtract"]
    assert read_back[2].meta["nestful"]["extra_fields"]["generated_text"] == "I think the answer is 40."
    # and scored by `score --metric nestful` from that file alone, the same figures
    scored = runner.invoke(app, ["score", "--metric", "nestful", "--predictions", str(output), "--tools-module",
                                 str(NESTFUL_TOOLS), "--json"])
    assert scored.exit_code == 0, scored.output
    assert json.loads(scored.stdout)["summary"]["win_rate"] == pytest.approx(1 / 3)
    assert (folder / "prompts.jsonl").is_file() and len(read_lines(folder / "prompts.jsonl")) == 3


def test_icl_one_shot_shows_one_example_in_its_own_folder(tmp_path):
    canonical, samples = nestful_input(tmp_path)
    pipelines = nestful_pipeline(tmp_path)
    model = Scripted(icl_answer(samples))
    with MockLLMServer(responder=model) as server:
        result = evaluate(pipelines, server.base_url, "--protocol", "nestful-icl", "--icl-examples", "1",
                          "--input", str(canonical), "--limit", "1")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert model.requests[0]["messages"][0]["content"].count("#Example-") == 1
    assert out["tables"][0]["columns"][0]["group"] == "One-shot ICL"
    assert out["predictions"].endswith("nestful-icl-1shot/predictions.jsonl")
    assert out["scores"]["samples_that_are_icl_examples"] == []


def test_react_executes_each_action_and_scores_by_hand(tmp_path):
    canonical, samples = nestful_input(tmp_path)
    pipelines = nestful_pipeline(tmp_path)
    model = Scripted(react_answer(samples), key=lambda body: nestful_sample_of(body, samples).id)
    with MockLLMServer(responder=model) as server:
        result = evaluate(pipelines, server.base_url, "--protocol", "nestful-react", "--input", str(canonical))
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    # S1: act, act, answer; S2: act, act, answer; S3: a tool that does not exist, then answer
    assert model.counts() == {NESTFUL_IDS[0]: 3, NESTFUL_IDS[1]: 3, NESTFUL_IDS[2]: 2}
    body = model.requests[0]
    assert body["stop"] == ["\nObservation:"] and body["temperature"] == 0.0
    assert body["messages"][1]["content"].startswith("Question: ")

    summary = out["scores"]
    # S1: the executed actions are the gold path ($var_1 passed on): 1 / 1 / 1 / Full / Win; answer 18 = 18.0.
    # S2: multiply(15, 100), divide(1500, 15): F1 Func 1; Param 3 of 4 items match (divide.arg_0 is 1500, not
    #     $multiply.result$) -> 2*3/8 = 0.75; Partial 1/2; not Full; Win (re-executed: 100 = 100.0); answer 100.
    # S3: nothing executed: 0 / 0 / 0, no Win; answer 40 = 40.0.
    assert summary["f1_func"] == pytest.approx((1 + 1 + 0) / 3)
    assert summary["f1_param"] == pytest.approx((1 + 0.75 + 0) / 3)
    assert summary["partial_acc"] == pytest.approx((1 + 0.5 + 0) / 3)
    assert summary["full_acc"] == pytest.approx(1 / 3)
    assert summary["win_rate"] == pytest.approx(2 / 3)
    assert summary["answer_match"] == 1.0
    assert summary["stop_reasons"] == {"final_answer": 3}
    table = out["tables"][0]
    assert table["protocol"] == "nestful-react" and table["columns"][-1]["name"] == "Answer Match"
    assert table["rows"][0]["cells"] == ["0.67", "0.58", "0.50", "0.33", "0.67", "1.00"]

    lines = read_lines(tmp_path / "data" / "build" / "eval" / SLUG / "nestful-react" / "output.jsonl")
    assert json.loads(lines[1]["generated_text"]) == [
        {"name": "multiply", "label": "$var_1", "arguments": {"arg_0": 15, "arg_1": 100}},
        {"name": "divide", "label": "$var_2", "arguments": {"arg_0": 1500, "arg_1": 15}}]
    assert json.loads(lines[2]["generated_text"]) == [] and lines[2]["final_answer"] == "40"
    assert [s.id for s in read_samples(tmp_path / "data" / "build" / "eval" / SLUG / "nestful-react" / "output.jsonl",
                                       "nestful")] == list(NESTFUL_IDS)


def test_react_stops_at_the_step_cap(tmp_path):
    canonical, samples = nestful_input(tmp_path)
    pipelines = nestful_pipeline(tmp_path)
    model = Scripted(lambda body: {"content": 'Action: add\nAction Input: {"arg_0": 1, "arg_1": 1}'})
    with MockLLMServer(responder=model) as server:
        result = evaluate(pipelines, server.base_url, "--protocol", "nestful-react", "--input", str(canonical),
                          "--limit", "1", "--max-steps", "2")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert len(model.requests) == 2 and out["scores"]["stop_reasons"] == {"max_steps": 1}
    assert out["settings"]["max_steps"] == 2


def test_react_is_refused_before_anything_is_sent_without_an_executable_environment(tmp_path):
    canonical, _ = nestful_input(tmp_path)
    (tmp_path / "a").mkdir()
    no_environment = nestful_pipeline(tmp_path / "a", environment=False)
    recorded_dir = tmp_path / "b"
    recorded_dir.mkdir()
    (recorded_dir / "recorded.json").write_text("{}", encoding="utf-8")
    recorded = write_pipelines(recorded_dir, llm_block() + "    environment: {kind: recorded, responses: recorded.json}\n")
    with MockLLMServer() as server:
        first = evaluate(no_environment, server.base_url, "--protocol", "nestful-react", "--input", str(canonical))
        second = evaluate(recorded, server.base_url, "--protocol", "nestful-react", "--input", str(canonical))
        sent = server.stats.chat_requests
    assert first.exit_code == 1 and second.exit_code == 1 and sent == 0
    assert first.stderr == ("error: --protocol nestful-react executes every action: pipeline 'bench' has no "
                            "environment (it needs environment kind python)\n")
    assert "environment kind 'recorded' cannot run a call it has not recorded" in second.stderr
    assert second.stderr.count("\n") == 1 and "Traceback" not in second.output
    assert not (tmp_path / "a" / "data" / "build" / "eval").exists()
