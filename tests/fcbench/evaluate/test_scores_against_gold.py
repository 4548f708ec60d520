"""Issue 23's attacks on `build-dataset score`, each on a prediction file built from the real
published files: every scorer grades the GOLD SET, so no rewriting of a prediction file raises a
figure. The grading rule comes from the gold; each gold item is scored once (the first line wins,
later ones are listed as duplicates); a gold item without a line counts as wrong and is listed;
a line for an id the gold does not have is listed and not scored."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from fcbench.cli import app
from prediction_files import (NESTFUL_ICL, bfcl_case, callnavi_case, complexeval_case, confetti_case, nestful_case,
                              nestful_gold, raised_figures, score, write_lines)

runner = CliRunner()


def _cli_score(*args: str) -> dict:
    result = runner.invoke(app, ["score", *args, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_bfcl_takes_the_grading_rule_from_the_gold_not_from_the_line(tmp_path):
    case = bfcl_case()
    honest = score(case, case.lines, tmp_path)
    assert honest.summary["accuracy"] == pytest.approx((360 + 180) / 640)
    # the wrong simple_python lines claim live_relevance (any call is right there)
    relabelled = [dict(line, category="live_relevance") if line["id"].startswith("simple_python") else line
                  for line in case.lines]
    gamed = score(case, relabelled, tmp_path)
    assert gamed.summary["accuracy"] == honest.summary["accuracy"]
    item = next(item for item in gamed.items if item["id"] == "simple_python_3")
    assert item["valid"] is False and item["category"] == "simple_python"


def test_bfcl_on_the_command_line_relabelled_lines_stay_at_simple_pythons_figure(tmp_path):
    from conftest import EXTERNAL

    lines = bfcl_case().lines[:10]  # the help example's shape: 10 items of 400, item 3 wrong
    gamed = [dict(line, category="live_relevance") for line in lines]
    common = ["--metric", "bfcl", "--questions", str(EXTERNAL / "bfcl" / "BFCL_v4_simple_python.json"),
              "--answers", str(EXTERNAL / "bfcl" / "possible_answer_BFCL_v4_simple_python.json")]
    honest = _cli_score(*common, "--predictions", str(write_lines(tmp_path / "honest.jsonl", lines)))
    relabelled = _cli_score(*common, "--predictions", str(write_lines(tmp_path / "gamed.jsonl", gamed)))
    assert relabelled["summary"]["accuracy"] == honest["summary"]["accuracy"] == pytest.approx(9 / 400)
    assert honest["gold_set"]["missing"][:2] == ["simple_python_10", "simple_python_11"]
    assert len(honest["gold_set"]["missing"]) == 390


def test_nestful_lines_for_ids_not_in_the_gold_are_listed_and_not_scored(tmp_path):
    gold = nestful_gold(tmp_path)
    published = [json.loads(line) for line in NESTFUL_ICL.read_text().splitlines()]
    honest = _cli_score("--metric", "nestful", "--gold", str(gold), "--predictions", str(NESTFUL_ICL))
    assert honest["summary"]["full_acc"] == pytest.approx(0.18)
    # 300 lines for samples the gold does not have, each carrying its own calls as its gold
    foreign = []
    for n in range(300):
        line = dict(published[n % 100], sample_id=f"made-up-{n}")
        line["output"] = line["generated_text"] = json.dumps(json.loads(published[n % 100]["output"]))
        foreign.append(line)
    gamed = write_lines(tmp_path / "gamed.jsonl", published + foreign)
    out = _cli_score("--metric", "nestful", "--gold", str(gold), "--predictions", str(gamed))
    assert out["summary"]["full_acc"] == pytest.approx(0.18)
    assert out["summary"]["n"] == 100
    assert out["gold_set"]["foreign"][0] == {"line": 101, "id": "made-up-0"}
    assert len(out["gold_set"]["foreign"]) == 300 and len(out["items"]) == 100


@pytest.mark.parametrize("make_case", [bfcl_case, callnavi_case, complexeval_case, confetti_case, "nestful"])
def test_dropping_wrong_lines_and_repeating_right_ones_raises_no_figure(make_case, tmp_path):
    case = nestful_case(tmp_path) if make_case == "nestful" else make_case()
    honest = score(case, case.lines, tmp_path)
    verdicts = {item_id(case, item): item for item in honest.items}
    right = [line for line in case.lines if is_right(case, verdicts[str(line[case.id_field])])]
    wrong = [line for line in case.lines if not is_right(case, verdicts[str(line[case.id_field])])]
    assert right and wrong
    gamed = score(case, right + right[: len(right) // 2], tmp_path, "gamed.jsonl")
    assert raised_figures(honest.summary, gamed.summary) == []
    assert sorted(gamed.gold_set["missing"]) == sorted(str(line[case.id_field]) for line in wrong)
    assert [entry["id"] for entry in gamed.gold_set["duplicates"]] == \
        [str(line[case.id_field]) for line in right[: len(right) // 2]]
    assert gamed.summary["gold_set"]["gold"] == honest.summary["gold_set"]["gold"]


def item_id(case, item) -> str:
    return str(item.get("sample_id", item.get("id")))


def is_right(case, item) -> bool:
    return {"bfcl": lambda: item["valid"], "callnavi": lambda: item["ast_match"],
            "complexeval": lambda: item["success"], "confetti": lambda: item["exact"],
            "nestful": lambda: item["full_match"]}[case.metric]()


def test_a_missing_prediction_is_wrong_even_where_no_call_is_the_right_answer(tmp_path):
    # an irrelevance item is right when the model calls nothing: an absent line is not "nothing called"
    case = bfcl_case()
    without_irrelevance = [line for line in case.lines if not line["id"].startswith("irrelevance")]
    result = score(case, without_irrelevance, tmp_path)
    assert result.summary["accuracy"] == pytest.approx(360 / 640)
    missing = next(item for item in result.items if item["id"] == "irrelevance_0")
    assert missing == {"id": "irrelevance_0", "category": "irrelevance", "valid": False,
                       "error_type": "missing_prediction"}


def test_duplicate_lines_the_first_one_wins_and_the_others_are_listed(tmp_path):
    case = complexeval_case()
    car = case.lines[2]
    lucky = {"id": "Car-Rental-3", "turns": complexeval_case_gold_turns("Car-Rental-3")}
    result = score(case, case.lines + [lucky], tmp_path)
    assert result.summary["success_rate"] == pytest.approx(2 / 3)
    assert result.gold_set["duplicates"] == [{"line": 4, "id": "Car-Rental-3", "first": 3}]
    first = score(case, case.lines[:2] + [lucky, car], tmp_path, "other.jsonl")
    assert first.summary["success_rate"] == 1.0  # the first line is the answer, whichever it is


def complexeval_case_gold_turns(sample_id: str) -> list:
    from fcbench.formats import read_samples
    from prediction_files import TRIPS

    sample = next(s for s in read_samples(TRIPS, "complexfuncbench") if s.id == sample_id)
    return [[{"name": c.name, "arguments": c.arguments} for c in step] for step in sample.calls] + ["Done."]


def test_nestful_without_gold_says_each_line_is_graded_against_the_gold_it_carries(tmp_path):
    result = runner.invoke(app, ["score", "--metric", "nestful", "--predictions", str(NESTFUL_ICL)])
    assert result.exit_code == 0, result.output
    assert "no --gold" in result.output and "the gold each line carries" in result.output
    doubled = write_lines(tmp_path / "doubled.jsonl", [json.loads(line) for line in NESTFUL_ICL.read_text().splitlines()] * 2)
    out = _cli_score("--metric", "nestful", "--predictions", str(doubled))
    assert out["summary"]["n"] == 100 and len(out["gold_set"]["duplicates"]) == 100
    assert out["summary"]["full_acc"] == pytest.approx(0.18)
    # --compat scores every line, as NESTful's own scorer does, and says so
    compat = runner.invoke(app, ["score", "--metric", "nestful", "--compat", "--predictions", str(doubled)])
    assert compat.exit_code == 0 and "every line is scored, as NESTful's scorer does" in compat.output


def test_the_terminal_lists_missing_duplicate_and_foreign_lines(tmp_path):
    from conftest import EXTERNAL

    lines = bfcl_case().lines[:3]
    path = write_lines(tmp_path / "p.jsonl", lines + [lines[0], {"id": "nope_1", "result": []}])
    result = runner.invoke(app, ["score", "--metric", "bfcl", "--predictions", str(path),
                                 "--questions", str(EXTERNAL / "bfcl" / "BFCL_v4_simple_python.json"),
                                 "--answers", str(EXTERNAL / "bfcl" / "possible_answer_BFCL_v4_simple_python.json")])
    assert result.exit_code == 0, result.output
    assert "397 of 400 gold items have no prediction (counted wrong): simple_python_3, simple_python_4" in result.stderr
    assert "1 duplicate line (the first line of an id is scored): line 4 (simple_python_0)" in result.stderr
    assert "1 line for an id not in the gold (not scored): line 5 (nope_1)" in result.stderr
