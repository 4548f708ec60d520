"""`build-dataset score`: the JSON contract ({metric, summary, items, gold_set}, one item per gold
item in the gold's order) on the real published files."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import EXTERNAL
from fcbench.cli import app

runner = CliRunner()
BFCL = EXTERNAL / "bfcl"


def _score(*args: str) -> dict:
    result = runner.invoke(app, ["score", *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def _write_lines(path: Path, lines: list[dict]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def _gold_subset(path: Path, source: Path, ids: set[str]) -> Path:
    """The lines of a published file whose id is in `ids`, as published."""
    path.write_text("".join(line + "\n" for line in source.read_text().splitlines()
                            if line.strip() and json.loads(line)["id"] in ids))
    return path


def test_bfcl_items_follow_the_gold_and_a_second_line_for_an_id_is_a_duplicate(tmp_path):
    predictions = _write_lines(tmp_path / "p.jsonl", [
        {"id": "simple_python_1", "category": "simple_python",  # float for an integer parameter
         "result": [{"math.factorial": {"number": 5.0}}]},
        {"id": "parallel_multiple_0", "category": "parallel_multiple", "result": [  # order swapped
            {"math_toolkit.product_of_primes": {"count": 5}},
            {"math_toolkit.sum_of_multiples": {"lower_limit": 1, "upper_limit": 1000, "multiples": [3, 5]}}]},
        {"id": "simple_python_0", "category": "simple_python",
         "result": [{"calculate_triangle_area": {"base": 10, "height": 5}}]},
        {"id": "simple_python_1", "category": "simple_python", "result": [{"math.factorial": {"number": 5}}]},
        {"id": "no_such_item", "result": []},
    ])
    ids = {"simple_python_0", "simple_python_1", "simple_python_2", "parallel_multiple_0"}
    out = _score("--metric", "bfcl", "--predictions", str(predictions),
                 "--questions", str(_gold_subset(tmp_path / "q1.json", BFCL / "BFCL_v4_simple_python.json", ids)),
                 "--answers", str(BFCL / "possible_answer_BFCL_v4_simple_python.json"),
                 "--questions", str(_gold_subset(tmp_path / "q2.json", BFCL / "BFCL_v4_parallel_multiple.json", ids)),
                 "--answers", str(BFCL / "possible_answer_BFCL_v4_parallel_multiple.json"))
    assert out["metric"] == "bfcl"
    assert [(item["id"], item["valid"]) for item in out["items"]] == [
        ("simple_python_0", True), ("simple_python_1", False), ("simple_python_2", False), ("parallel_multiple_0", True)]
    assert out["items"][1]["error_type"].startswith("type_error")  # the first line of an id is its answer
    assert out["items"][2]["error_type"] == "missing_prediction"
    assert out["gold_set"]["duplicates"] == [{"line": 4, "id": "simple_python_1", "first": 1}]
    assert out["gold_set"]["foreign"] == [{"line": 5, "id": "no_such_item"}]
    assert out["summary"]["n"] == 4 and out["summary"]["accuracy"] == 0.5
    assert out["summary"]["by_category"] == {"simple_python": {"n": 3, "accuracy": 1 / 3},
                                             "parallel_multiple": {"n": 1, "accuracy": 1.0}}
    assert out["summary"]["gold_set"] == {"gold": 4, "answered": 3, "missing": 1, "duplicate_lines": 1,
                                          "foreign_lines": 1, "unreadable_lines": 0}


def test_nestful_compat_reproduces_the_reference_scorer_on_published_predictions():
    # NESTful's own scorer, run by the authors of these predictions, logged 0.919 / 0.517 / 0.276 /
    # 0.180 for this file with a lenient parser; compat reads the text as the reference does for
    # generic models, so line 44 (a list cut off mid-way) fails to parse and f1_param reads 0.518
    # (tests/fcbench/score/test_nestful_score.py pins both readings).
    out = _score("--metric", "nestful", "--compat", "--predictions",
                 str(EXTERNAL / "nestful" / "predictions" / "nestful_3-qwen3-8b-8bit-icl.jsonl"))
    summary = out["summary"]
    assert summary["n"] == 100 and len(out["items"]) == 100
    assert [round(summary[k], 3) for k in ("f1_func", "f1_param", "partial_acc", "full_acc")] == [0.919, 0.518, 0.276, 0.18]


def test_callnavi_repeated_runs_give_the_papers_election_score(tmp_path):
    gold = {"API": ["getAccountID"], "parameters": [{"accountNumber": "123456"}]}
    other = {"API": ["getCustomerID"], "parameters": [{"accountNumber": "123456"}]}
    third = {"API": ["getAccountBalance"], "parameters": [{"accountID": "123456"}]}
    fourth = '{"API": ["getAccountIDfromName"], "parameters": [{"name": "x"},]}'  # trailing comma: repaired
    runs = [gold, gold, other, third, fourth]  # AABCD -> (2 - 1) / (5 - 1) = 0.25
    predictions = _write_lines(tmp_path / "runs.jsonl",
                               [{"id": "ban01", "run": n, "output": output} for n, output in enumerate(runs, start=1)])
    bank = EXTERNAL / "callnavi" / "Questions" / "bank.json"
    ban01 = tmp_path / "ban01.json"  # the published question alone: the gold set of this file
    ban01.write_text(json.dumps([q for q in json.loads(bank.read_text()) if q["id"] == "ban01"]))
    out = _score("--metric", "callnavi", "--questions", str(ban01), "--predictions", str(predictions))
    assert out["summary"]["election_stability"] == 0.25
    assert out["summary"]["ast_exact_match"] == 0.4
    assert [item["ast_match"] for item in out["items"]] == [True, True, False, False, False]
    assert [item["run"] for item in out["items"]] == ["1", "2", "3", "4", "5"]
    assert out["items"][4]["syntax_valid"] and out["items"][4]["repairs"]
    # ban01 is easy: one question, 5 outputs; the macro over the one difficulty present is its figure
    assert out["summary"]["by_difficulty"]["easy"]["ast_exact_match"] == 0.4
    assert out["summary"]["macro"]["election_stability"] == 0.25
    # the GPT score's stand-in, named: gold 1.0 twice; getCustomerID: API 0, value 1 of 1 -> 0.5;
    # getAccountBalance: API 0, accountNumber missing -> 0; the repaired fourth: API 0, name missing -> 0
    assert [item["gpt_score"] for item in out["items"]] == [1.0, 1.0, 0.5, 0.0, 0.0]
    assert out["summary"]["gpt_score_judge"].startswith("RULE-BASED STAND-IN")

    # against the whole bank file, the other 114 questions are missing in all five runs: wrong, and
    # the stability (over the answers given) is not reported
    whole = _score("--metric", "callnavi", "--questions", str(bank), "--predictions", str(predictions))
    assert whole["summary"]["n"] == 115 * 5 and whole["summary"]["ast_exact_match"] == 2 / (115 * 5)
    assert whole["summary"]["election_stability"] is None and "570 question runs" in whole["summary"]["stability_note"]
    # unlabelled repeats are not runs: the first line answers, the others are duplicates
    unlabelled = _write_lines(tmp_path / "unlabelled.jsonl", [{"id": "ban01", "output": run} for run in runs])
    once = _score("--metric", "callnavi", "--questions", str(ban01), "--predictions", str(unlabelled))
    assert once["summary"]["n"] == 1 and len(once["gold_set"]["duplicates"]) == 4
    assert "election_stability" not in once["summary"]


def test_callnavi_gpt_score_from_an_llm_judge(tmp_path):
    from fcbench.llm.mock_server import MockLLMServer

    gold = {"API": ["getAccountID"], "parameters": [{"accountNumber": "123456"}]}
    predictions = _write_lines(tmp_path / "runs.jsonl", [{"id": "ban01", "run": 1, "output": gold},
                                                         {"id": "ban01", "run": 2, "output": "x"}])
    bank = EXTERNAL / "callnavi" / "Questions" / "bank.json"
    ban01 = tmp_path / "ban01.json"
    ban01.write_text(json.dumps([q for q in json.loads(bank.read_text()) if q["id"] == "ban01"]))

    def judge(body, call_index):
        text = body["messages"][0]["content"]
        return {"content": "[[1.00]]" if '"123456"' in text.split("End of predict JSON")[0] else "[[0.05]]"}

    with MockLLMServer(responder=judge) as server:
        out = _score("--metric", "callnavi", "--questions", str(ban01),
                     "--predictions", str(predictions), "--llm-model", "judge", "--base-url", server.base_url,
                     "--judge-cache", str(tmp_path / "judges.sqlite"))
        asked = server.stats.chat_requests
    assert [item["gpt_score"] for item in out["items"]] == [1.0, 0.05] and asked == 2
    assert out["summary"]["macro"]["gpt_score"] == pytest.approx(0.525)  # (1.0 + 0.05) / 2
    assert out["summary"]["gpt_score_judge"] == "LLM judge with CallNavi's GPT-4o prompt (temperature 0)"


def test_unknown_metric_is_one_line_and_exit_1(tmp_path):
    predictions = _write_lines(tmp_path / "p.jsonl", [{"id": "x"}])
    result = runner.invoke(app, ["score", "--metric", "nope", "--predictions", str(predictions)])
    assert result.exit_code == 1
    assert "unknown metric 'nope'" in result.output and "Traceback" not in result.output


def test_confetti_gold_against_itself_and_a_perturbed_string(tmp_path):
    gold = EXTERNAL / "confetti" / "possible_answer_BFCL_v2_conversationsclean.json"
    predictions = _write_lines(tmp_path / "p.jsonl", [
        {"id": "conversationsclean_0", "result": [{"HRCompanyDirectory_employees": {"name": "Shalissa Valentino"}}]},
        {"id": "conversationsclean_2", "result": [{"BookFlight_get_airport_code": {"query": "San Diego"}}]},
        {"id": "conversationsclean_4", "result": [{"BookFlight_search_flights": {  # one wrong string parameter
            "departure_airport": "SAN", "arrival_airport": "DFW", "departure_date": "2024-04-24"}}]},
    ])
    answered = _gold_subset(tmp_path / "gold.json", gold, {"conversationsclean_0", "conversationsclean_2",
                                                            "conversationsclean_4"})
    out = _score("--metric", "confetti", "--gold", str(answered), "--from", "confetti",
                 "--predictions", str(predictions))
    assert out["metric"] == "confetti" and len(out["items"]) == 3
    scores = [item["ast_soft"] for item in out["items"]]
    assert scores[0] == 1.0 and scores[1] == 1.0
    assert 0.5 < scores[2] < 1.0  # soft: two exact parameters, one similar string
    assert [item["exact"] for item in out["items"]] == [True, True, False]


def test_complexeval_scores_saved_trajectories_against_the_bundled_example(tmp_path):
    from fcbench.formats import read_samples
    from conftest import REPO

    example = REPO / "datasets" / "complexfuncbench-example" / "trips.jsonl"
    samples = {s.id: s for s in read_samples(example, "complexfuncbench")}
    car = samples["Car-Rental-3"]
    gold_call = car.calls[0][0]
    perfect = [[{"name": gold_call.name, "arguments": gold_call.arguments}], "Here are the cars."]
    silent = ["I cannot help with that."]  # stops before calling anything
    predictions = _write_lines(tmp_path / "t.jsonl", [
        {"id": "Car-Rental-3", "turns": perfect},
        {"id": "Hotels-7", "turns": silent},
    ])
    out = _score("--metric", "complexeval", "--gold", str(example), "--from", "complexfuncbench",
                 "--predictions", str(predictions))
    assert out["summary"]["n"] == 3
    assert out["summary"]["success_rate"] == pytest.approx(1 / 3)
    assert out["summary"]["errors"]["stop_early"] == 1
    assert [(item["id"], item["success"]) for item in out["items"]] == [
        ("Cross-12", False), ("Hotels-7", False), ("Car-Rental-3", True)]
    assert out["items"][0]["error"]["type"] == "missing_prediction" and out["gold_set"]["missing"] == ["Cross-12"]


def test_an_unknown_metric_lists_the_available_ones_and_an_empty_file_is_an_error(tmp_path: Path) -> None:
    predictions = tmp_path / "preds.jsonl"
    predictions.write_text("")
    unknown = runner.invoke(app, ["score", "--metric", "bleu", "--predictions", str(predictions)])
    assert unknown.exit_code == 1
    assert "unknown metric 'bleu', available: bfcl, callnavi, nestful, complexeval, confetti" in unknown.stderr
    empty = runner.invoke(app, ["score", "--metric", "nestful", "--predictions", str(predictions)])
    assert empty.exit_code == 1 and "no predictions in the file" in empty.stderr


def test_complexeval_default_and_compat_on_the_help_example(tmp_path):
    """tests/data/predictions/complexeval_trips.jsonl: Cross-12 gold with adults 2.0, Hotels-7 repeating
    its free look-up, Car-Rental-3 answering without calls."""
    from conftest import REPO

    help_example = REPO / "tests" / "data" / "predictions" / "complexeval_trips.jsonl"
    common = ["--metric", "complexeval", "--gold", str(REPO / "datasets" / "complexfuncbench-example" / "trips.jsonl"),
              "--from", "complexfuncbench", "--predictions"]
    default = _score(*common, str(help_example))
    compat = _score(*common, str(help_example), "--compat")
    verdicts = lambda out: [(i["success"], i["n_correct_calls"]) for i in out["items"]]  # noqa: E731
    # default: 2.0 is JSON Schema's integer 2; a repeated look-up counts once
    assert verdicts(default) == [(True, 5), (True, 2), (False, 0)]
    # compat: the published runner's count includes the repeated look-up (3 correct of 2 gold calls)
    assert verdicts(compat) == [(True, 5), (True, 3), (False, 0)]
    assert compat["summary"]["mode"] == "compat" and compat["summary"]["errors"] == {"stop_early": 1}
    assert default["summary"]["judges"]["rule_based"] and "RULE-BASED" in default["summary"]["judges_note"]
    # Hotels-7 skipping its free destination look-up: still a success, with its one search
    skipping = {"id": "Hotels-7", "turns": [[{"name": "Search_Hotels", "arguments": {
        "dest_id": "2390", "search_type": "district", "arrival_date": "2025-03-03", "departure_date": "2025-03-06",
        "adults": 1, "room_qty": 1, "sort_by": "price", "currency_code": "JPY"}}], "Shibuya Capsule Inn is the cheapest."]}
    lines = [json.loads(line) for line in help_example.read_text().splitlines()]
    skipped = _score(*common, str(_write_lines(tmp_path / "skip.jsonl", [lines[0], skipping, lines[2]])))
    assert verdicts(skipped)[1] == (True, 1)


def test_an_unreadable_prediction_line_is_listed_and_the_other_lines_are_scored(tmp_path):
    published = (EXTERNAL / "nestful" / "predictions" / "nestful_3-qwen3-8b-8bit-icl.jsonl").read_text().splitlines()[:6]
    tools = Path(__file__).resolve().parents[3] / "datasets" / "nestful-math" / "tools.py"

    def score(lines: list[str]) -> dict:
        path = tmp_path / "predictions.jsonl"
        path.write_text("\n".join(lines) + "\n")
        result = runner.invoke(app, ["score", "--metric", "nestful", "--predictions", str(path), "--tools-module",
                                     str(tools), "--json"])
        assert result.exit_code == 0, result.output
        return json.loads(result.stdout)

    clean = score(published)
    broken = score(published[:3] + ['{"sample_id": '] + published[3:])
    assert broken["summary"]["gold_set"]["unreadable_lines"] == 1 and clean["summary"]["gold_set"]["unreadable_lines"] == 0
    (unreadable,) = broken["gold_set"]["unreadable"]
    assert unreadable["line"] == 4 and unreadable["error"]
    assert broken["items"] == clean["items"]  # the readable lines are scored as before
    assert {k: v for k, v in broken["summary"].items() if k != "gold_set"} == \
        {k: v for k, v in clean["summary"].items() if k != "gold_set"}
