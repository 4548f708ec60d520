"""`evaluate --protocol callnavi` against the mock server over real HTTP: four published CallNavi bank
questions (two easy, one medium, one hard), each asked 3 times with scripted answers
(tests/protocol_cases.py CALLNAVI_ANSWERS), every figure computed by hand below.

Per output: syntax (parses), routing (API list equal), structural (routing + every gold key),
AST (structural + every gold value, "$$$" matching anything). Per question over its runs: election
(F1 - F2) / (N - F2) and Levenshtein (first run vs each other) on normalised answers.
"""

from __future__ import annotations

import json

import pytest
from protocol_cases import (CALLNAVI_ANSWERS, CALLNAVI_BANK, CALLNAVI_IDS, SLUG, Scripted, callnavi_answer, callnavi_input, evaluate,
                            llm_block, write_pipelines)

from fcbench.formats import read_samples
from fcbench.llm.mock_server import MockLLMServer
from fcbench.score.callnavi import normalised_answer

EASY, MEDIUM, HARD = "easy", "medium", "hard"
# ban02's right and wrong answers, normalised: '{api:getaccountbalance,parameters:{accountid:987654}}'
# (53 characters) and the same with 111111: 6 substitutions -> similarity 1 - 6/53 = 47/53
BAN02_SIMILARITY = 47 / 53


def _pipelines(tmp_path, concurrency=2):
    return write_pipelines(tmp_path, llm_block(concurrency, seed=0))


def test_the_normalised_lengths_the_arithmetic_below_uses():
    right, wrong = CALLNAVI_ANSWERS["ban02"][:2]
    assert normalised_answer(right) == "{api:getaccountbalance,parameters:{accountid:987654}}"
    assert len(normalised_answer(right)) == 53 and len(normalised_answer(wrong)) == 53


def test_callnavi_runs_each_question_n_times_and_scores_per_difficulty_by_hand(tmp_path):
    canonical, samples = callnavi_input(tmp_path)
    pipelines = _pipelines(tmp_path)
    model = Scripted(callnavi_answer(samples), key=lambda body: next(
        s.id for s in samples if s.messages[0]["content"] in body["messages"][0]["content"]))
    with MockLLMServer(responder=model) as server:
        result = evaluate(pipelines, server.base_url, "--protocol", "callnavi", "--runs", "3", "--input", str(canonical))
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert model.counts() == {sample_id: 3 for sample_id in CALLNAVI_IDS}
    # the prompt: CallNavi's, one user message, the domain's APIs rendered as predict.py renders them
    body = model.requests[0]
    assert [m["role"] for m in body["messages"]] == ["user"] and body["temperature"] == 1.0
    prompt = body["messages"][0]["content"]
    assert prompt.startswith("\n            Give the API list with describtion below")
    assert ("Function:\ndef getAccountID({'customerID': 'string'})\n   \"\"\"\n   Retrieves the unique account ID "
            "associated with a given customer ID.\n\n   Args:\n   customerID (str)\n\n   Returns:\n   AccountID: string\n"
            "   \"\"\"\n\n") in prompt
    assert prompt.endswith('NO explanation/notes in answer! Only JSON!"\n            ')
    assert sorted(b["seed"] for b in model.requests) == [0] * 4 + [1000] * 4 + [2000] * 4  # run r: seed r * 1000

    figures = out["scores"]["by_difficulty"]
    # easy = ban01 (3 right, three spellings) + ban02 (right, wrong id, wrong id): 6 outputs
    #   routing 6/6; structural 6/6; AST 3 + 1 = 4/6; syntax 6/6
    #   election: ban01 one answer -> 1; ban02 A B B -> (2 - 1) / (3 - 1) = 0.5; mean 0.75
    #   Levenshtein: ban01 1; ban02 (47/53 + 47/53) / 2 = 47/53; mean (1 + 47/53) / 2 = 50/53
    #   GPT score (stand-in): ban01 1, 1, 1; ban02 1, then API 1 and values 0/1 -> (1 + 0) / 2 = 0.5 twice;
    #   (3 + 1 + 0.5 + 0.5) / 6 = 5/6
    assert figures[EASY]["questions"] == 2 and figures[EASY]["outputs"] == 6
    assert figures[EASY]["routing_exact_match"] == 1.0 and figures[EASY]["structural_accuracy"] == 1.0
    assert figures[EASY]["ast_exact_match"] == pytest.approx(4 / 6)
    assert figures[EASY]["syntax_validity"] == 1.0
    assert figures[EASY]["election_stability"] == pytest.approx(0.75)
    assert figures[EASY]["levenshtein_stability"] == pytest.approx(50 / 53)
    assert figures[EASY]["gpt_score"] == pytest.approx(5 / 6)
    # medium = ban047: right, right, "" -> routing 2/3, AST 2/3, syntax 2/3; election A A X -> 0.5;
    #   Levenshtein (1 + similarity to "" = 0) / 2 = 0.5; GPT (1 + 1 + 0) / 3
    assert figures[MEDIUM]["routing_exact_match"] == pytest.approx(2 / 3)
    assert figures[MEDIUM]["ast_exact_match"] == pytest.approx(2 / 3)
    assert figures[MEDIUM]["syntax_validity"] == pytest.approx(2 / 3)
    assert figures[MEDIUM]["election_stability"] == 0.5 and figures[MEDIUM]["levenshtein_stability"] == 0.5
    assert figures[MEDIUM]["gpt_score"] == pytest.approx(2 / 3)
    # hard = ban042: the first of two APIs only, 3 times -> routing 0, AST 0, syntax 1; stable: 1 and 1;
    #   GPT: API 1 of 2 positions -> 0.5; values 4 of 5 (transferID of the missing call) -> 0.8; (0.5 + 0.8) / 2
    assert figures[HARD]["routing_exact_match"] == 0.0 and figures[HARD]["ast_exact_match"] == 0.0
    assert figures[HARD]["syntax_validity"] == 1.0
    assert figures[HARD]["election_stability"] == 1.0 and figures[HARD]["levenshtein_stability"] == 1.0
    assert figures[HARD]["gpt_score"] == pytest.approx(0.65)
    macro = out["scores"]["macro"]
    assert macro["routing_exact_match"] == pytest.approx((1 + 2 / 3 + 0) / 3)      # 5/9
    assert macro["ast_exact_match"] == pytest.approx((4 / 6 + 2 / 3 + 0) / 3)     # 4/9
    assert macro["election_stability"] == pytest.approx((0.75 + 0.5 + 1) / 3)
    assert macro["levenshtein_stability"] == pytest.approx((50 / 53 + 0.5 + 1) / 3)
    assert macro["gpt_score"] == pytest.approx((5 / 6 + 2 / 3 + 0.65) / 3)
    assert out["scores"]["overall"]["routing_exact_match"] == pytest.approx(8 / 12)  # micro: 6 + 2 + 0 of 12

    # the table: Routing and AST per difficulty and macro, then the rest; the stand-in named
    table = out["tables"][0]
    assert [(c["group"], c["name"]) for c in table["columns"][:8]] == [
        ("API Routing", "Easy"), ("API Routing", "Medium"), ("API Routing", "Hard"), ("API Routing", "Macro"),
        ("Parameters (AST)", "Easy"), ("Parameters (AST)", "Medium"), ("Parameters (AST)", "Hard"),
        ("Parameters (AST)", "Macro")]
    assert table["rows"][0]["cells"][:8] == ["100.0", "66.7", "0.0", "55.6", "66.7", "66.7", "0.0", "44.4"]
    assert any("RULE-BASED STAND-IN" in note for note in table["notes"])
    assert out["judges_note"].startswith("CallNavi GPT score by a RULE-BASED STAND-IN")
    assert out["scores"]["gpt_score_judge"].startswith("RULE-BASED STAND-IN")

    # CallNavi's own files: results_stab/<domain>_<run>_para_<model>.json, in question order, paired by
    # position with the Questions file written beside them, read back by fcbench's CallNavi reader
    root = tmp_path / "data" / "build" / "eval" / SLUG / "callnavi" / "callnavi"
    questions = [s for s in read_samples(root / "Questions" / "bank.json", "callnavi")]
    assert [q.id for q in questions] == list(CALLNAVI_IDS)
    published = {item["id"]: item for item in json.loads(CALLNAVI_BANK.read_text(encoding="utf-8"))}
    for run in range(3):
        results = json.loads((root / "results_stab" / f"bank_{run}_para_{SLUG}.json").read_text(encoding="utf-8"))
        assert [r["predict"] for r in results] == [CALLNAVI_ANSWERS[i][run] for i in CALLNAVI_IDS]
        assert [r["ground_truth"] for r in results] == [str(published[i]["ground_truth"]) for i in CALLNAVI_IDS]
        washed = json.loads((root / "results_washed" / f"bank_{run}_washed_{SLUG}.json").read_text(encoding="utf-8"))
        assert [w["ground_truth"] for w in washed] == [published[i]["ground_truth"] for i in CALLNAVI_IDS]
    assert washed[2]["predict"] == {}  # ban047's empty third answer, as wash.py leaves it


def test_the_gpt_score_comes_from_the_judge_llm_cached(tmp_path):
    canonical, samples = callnavi_input(tmp_path)
    pipelines = _pipelines(tmp_path)
    model = Scripted(callnavi_answer(samples))
    with MockLLMServer(responder=model) as server:
        first = evaluate(pipelines, server.base_url, "--protocol", "callnavi", "--runs", "2", "--input", str(canonical),
                         "--judge-model", "judge", "--judge-base-url", server.base_url)
        judged = sum("total rating" in b["messages"][0]["content"] for b in model.requests)
        again = evaluate(pipelines, server.base_url, "--protocol", "callnavi", "--runs", "2", "--input",
                         str(canonical), "--judge-model", "judge", "--judge-base-url", server.base_url)
        after = len(model.requests)
    assert first.exit_code == 0 and again.exit_code == 0, first.output
    out = json.loads(first.stdout)
    # every judge verdict [[0.9]]: 0.9 for every difficulty and the macro
    assert out["scores"]["macro"]["gpt_score"] == pytest.approx(0.9)
    assert out["scores"]["gpt_score_judge"].startswith("LLM judge with CallNavi's GPT-4o prompt")
    assert out["judges_note"].startswith("CallNavi GPT score by LLM judge")
    judge_body = next(b for b in model.requests if "total rating" in b["messages"][0]["content"])
    assert "response_format" not in judge_body and judge_body["temperature"] == 0.0
    assert "======Begin of ground truth JSON======\n{\"API\": [\"getAccountID\"]" in "".join(
        b["messages"][0]["content"] for b in model.requests if "total rating" in b["messages"][0]["content"])
    # 8 outputs, one judge question per distinct (parsed answer, ground truth): ban01's two spellings
    # parse to one answer, ban02 right and wrong are two, ban047 and ban042 repeat theirs -> 1 + 2 + 1 + 1
    assert judged == 5
    assert after == 8 + judged  # the re-run: predictions reused, verdicts from the judge cache: nothing sent


def test_an_unreadable_gpt_score_is_a_judge_error_left_out(tmp_path):
    canonical, samples = callnavi_input(tmp_path)
    pipelines = _pipelines(tmp_path)
    answer = callnavi_answer(samples)

    def judge_says_words(body):
        if "total rating" in body["messages"][0]["content"]:
            return {"content": "They look quite similar."}
        return answer(body)

    with MockLLMServer(responder=Scripted(judge_says_words)) as server:
        result = evaluate(pipelines, server.base_url, "--protocol", "callnavi", "--runs", "1", "--input",
                          str(canonical), "--limit", "1", "--judge-model", "judge", "--judge-base-url", server.base_url)
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert out["scores"]["judge_errors"] == 1 and out["scores"]["macro"]["gpt_score"] is None
    item = json.loads((tmp_path / "data" / "build" / "eval" / SLUG / "callnavi" / "scores.json").read_text())["items"][0]
    assert item["gpt_score"] is None and item["judge_error"].startswith("unparseable output after 2 attempts")


def test_more_runs_later_reuse_the_runs_already_made(tmp_path):
    canonical, samples = callnavi_input(tmp_path)
    pipelines = _pipelines(tmp_path)
    model = Scripted(callnavi_answer(samples))
    with MockLLMServer(responder=model) as server:
        two = evaluate(pipelines, server.base_url, "--protocol", "callnavi", "--runs", "2", "--input", str(canonical))
        three = evaluate(pipelines, server.base_url, "--protocol", "callnavi", "--runs", "3", "--input", str(canonical))
    assert two.exit_code == 0 and three.exit_code == 0, three.output
    out = json.loads(three.stdout)
    assert (out["reused"], out["ran"]) == (8, 4)  # runs 0 and 1 of the 4 questions kept, run 2 asked
    assert len(model.requests) == 8 + 4 and out["scores"]["runs"] == 3
