"""`evaluate --protocol confetti` (the default for `kind: conversation`) against the mock server over
real HTTP, on four hand-made turns (tests/protocol_cases.py confetti_records), scored by hand:

- conv-1_f0 (gold book_table(Luigi, 2, 19:00)); the model books for 3 people: soft score of the
  call = mean over the 3 gold parameters (1 + 0 + 1) / 3 = 2/3; validity (rule-based stand-in):
  Luigi and 19:00 are gold values, 3 is written nowhere in the conversation -> 2 valid of 3.
- conv-2_f1 (gold get_weather(P1), after the gold get_location call and its result): the model
  looks Paris up again -> another function: 0; the call's name is wrong, so its value is not
  judged for validity.
  AST soft accuracy = (2/3 + 0) / 2 = 1/3; parameter validity = 2/3 (counting the wrong-name
  call's value too would say 2/4).
- conv-1_r0 (gold act: seek information): "For how many people, and at what time?" -> '?' -> seek: right.
- conv-3_r0 (gold act: function calling): "Sorry, I cannot do that." -> reject: wrong.
  Dialog-act accuracy = 1/2.
"""

from __future__ import annotations

import json

import pytest
from protocol_cases import SLUG, Scripted, confetti_answer, confetti_input, evaluate, llm_block, read_lines, \
    runner, write_pipelines

from fcbench.cli import app
from fcbench.formats import read_samples, write_samples
from fcbench.llm.mock_server import MockLLMServer


def _conversation_pipeline(tmp_path, concurrency=2):
    return write_pipelines(tmp_path, "    kind: conversation\n" + llm_block(concurrency))


def test_confetti_is_teacher_forced_and_scored_by_hand(tmp_path):
    canonical, samples = confetti_input(tmp_path)
    pipelines = _conversation_pipeline(tmp_path)
    model = Scripted(confetti_answer)
    with MockLLMServer(responder=model) as server:
        result = evaluate(pipelines, server.base_url, "--input", str(canonical))  # no --protocol: the kind's default
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["protocol"] == "confetti" and len(model.requests) == 4
    # teacher forcing: the chained turn's request holds the GOLD earlier call and its result
    chained = next(b for b in model.requests if b["messages"][0]["content"].startswith("What is the weather"))
    assert [m["role"] for m in chained["messages"]] == ["user", "assistant", "tool"]
    assert chained["messages"][1]["tool_calls"][0]["function"]["arguments"] == '{"query": "Paris"}'
    assert [t["function"]["name"] for t in chained["tools"]] == ["get_location", "get_weather"]
    assert chained["temperature"] == 0.0 and chained["max_tokens"] == 1024

    summary = out["scores"]
    assert summary["ast_soft_accuracy"] == pytest.approx((2 / 3 + 0) / 2)
    assert summary["parameter_validity_rate"] == pytest.approx(2 / 3)
    assert summary["function_calling"]["n_validity_calls_wrong_name"] == 1
    assert summary["dialog_act_accuracy"] == 0.5
    # breakdowns: f0 offers 1 API after 1 turn (the user's), f1 offers 2 after 2 (user, agent): all in
    # the first bins; both turns have one gold call
    assert summary["by_api_count"]["1-5"] == {"n": 2, "ast_soft_accuracy": pytest.approx(1 / 3)}
    assert summary["by_turn_count"]["1-4"] == {"n": 2, "ast_soft_accuracy": pytest.approx(1 / 3)}
    assert summary["by_chain_bin"]["1"]["n"] == 2 and summary["by_chain_bin"]["2"]["n"] == 0
    main, by_apis, by_turns, by_chain = out["tables"]
    assert [c["name"] for c in main["columns"]] == ["AST Soft Acc.", "Parameter Validity", "Dialog-Act Acc."]
    assert main["rows"][0]["cells"] == ["33.33", "66.67", "50.00"]
    assert [c["name"] for c in by_apis["columns"]] == ["1-5 (n=2)", "6-10 (n=0)", "11-20 (n=0)", "21+ (n=0)"]
    assert by_turns["rows"][0]["cells"] == ["33.33", "-", "-", "-"]
    assert out["judges_note"].startswith("NOT graded by an LLM (no judge LLM configured")

    # BFCL's result shape, paired by id with the possible-answer files CONFETTI's shape gives the gold,
    # and scored from those two files alone by `score --metric confetti`: the same AST figure
    folder = tmp_path / "data" / "build" / "eval" / SLUG / "confetti" / "confetti"
    fc_lines = read_lines(folder / "function_calling" / "input_result.json")
    assert fc_lines == [{"id": "conv-1_f0", "result": [{"book_table": {"restaurant": "Luigi", "people": 3, "time": "19:00"}}]},
                        {"id": "conv-2_f1", "result": [{"get_location": {"query": "Paris, France"}}]}]
    rq_lines = read_lines(folder / "response_quality" / "input_result.json")
    assert [line["response"] for line in rq_lines] == ["For how many people, and at what time?", "Sorry, I cannot do that."]
    gold = tmp_path / "possible_answer_fc.json"
    write_samples(samples[:2], gold, "confetti")
    assert [s.id for s in read_samples(gold, "confetti")] == [line["id"] for line in fc_lines]
    scored = runner.invoke(app, ["score", "--metric", "confetti", "--gold", str(gold), "--from", "confetti",
                                 "--predictions", str(folder / "function_calling" / "input_result.json"), "--offline",
                                 "--json"])
    assert scored.exit_code == 0, scored.output
    assert json.loads(scored.stdout)["summary"]["ast_soft_accuracy"] == pytest.approx(1 / 3)


def test_confetti_on_a_single_turn_pipeline_is_refused_before_anything_is_sent(tmp_path):
    canonical, _ = confetti_input(tmp_path)
    pipelines = write_pipelines(tmp_path, llm_block())
    with MockLLMServer() as server:
        result = evaluate(pipelines, server.base_url, "--protocol", "confetti", "--input", str(canonical))
        sent = server.stats.chat_requests
    assert result.exit_code == 1 and sent == 0
    assert result.stderr == ("error: --protocol confetti evaluates conversation turns teacher-forced; pipeline 'bench' "
                             "is kind single (use --protocol complexfuncbench, nestful-icl, nestful-react or callnavi)\n")


def test_a_single_turn_protocol_on_a_conversation_pipeline_is_refused(tmp_path):
    canonical, _ = confetti_input(tmp_path)
    pipelines = _conversation_pipeline(tmp_path)
    with MockLLMServer() as server:
        result = evaluate(pipelines, server.base_url, "--protocol", "callnavi", "--input", str(canonical))
        assert server.stats.chat_requests == 0
    assert result.exit_code == 1
    assert result.stderr.startswith("error: --protocol callnavi runs single-turn samples; pipeline 'bench' is kind "
                                    "conversation")


def test_an_unknown_protocol_is_one_line(tmp_path):
    pipelines = write_pipelines(tmp_path, llm_block())
    result = evaluate(pipelines, "http://127.0.0.1:9/v1", "--protocol", "bfcl")
    assert result.exit_code == 1
    assert result.stderr == ("error: unknown protocol 'bfcl', available: complexfuncbench, nestful-icl, nestful-react, "
                             "callnavi, confetti\n")


def test_arguments_that_are_not_a_json_object_score_as_a_call_without_arguments_counted(tmp_path):
    canonical, _ = confetti_input(tmp_path)
    pipelines = _conversation_pipeline(tmp_path)

    def broken(body):
        if body["messages"][0]["content"].startswith("Book a table at Luigi for 2"):
            return {"tool_calls": [{"name": "book_table", "arguments": '{"restaurant": "Luigi", "people": '}]}
        return confetti_answer(body)

    with MockLLMServer(responder=Scripted(broken)) as server:
        result = evaluate(pipelines, server.base_url, "--input", str(canonical))
    assert result.exit_code == 0, result.output
    scores = json.loads(result.stdout)["scores"]
    assert scores["undecodable_arguments"] == 1
    # f0: book_table with no readable argument -> (0 + 0 + 0) / 3 = 0, never left out of the average
    # (a model must not gain by writing garbage); f1: 0 as before -> (0 + 0) / 2
    assert scores["function_calling"]["n_ast"] == 2 and scores["ast_soft_accuracy"] == 0.0
    written = read_lines(tmp_path / "data" / "build" / "eval" / SLUG / "confetti" / "confetti" / "function_calling"
                         / "input_result.json")
    assert written[0]["result"] == [{"book_table": '{"restaurant": "Luigi", "people": '}]  # as the model wrote it
