"""ComplexEval's LLM judges driven through the local OpenAI-compatible mock server over real HTTP
(openai SDK), with scripted verdicts: call equivalence asked only after the rules and the response
comparison, completeness and correctness on the 0-2 scale, every verdict cached, malformed judge
output asked again once and then recorded as judge_error (never guessed), and the report's first
line saying who judged."""

from __future__ import annotations

import copy
import json
import threading
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from fcbench.cli import app
from fcbench.evaluate.judges_complexeval import LLMJudges, judged_options
from fcbench.llm.judge import JUDGE_PARSE_ATTEMPTS
from fcbench.config import LLMConfig
from fcbench.formats import read_samples
from fcbench.llm.mock_server import MockLLMServer
from fcbench.sample import Sample
from fcbench.score.complexeval import judges_line, score_complexeval
from fcbench.score.complexeval_compat import CompatOptions, score_compat

REPO = Path(__file__).resolve().parents[3]
EXAMPLE = REPO / "datasets" / "complexfuncbench-example" / "trips.jsonl"
runner = CliRunner()


@cache
def _samples() -> tuple[Sample, ...]:
    return tuple(read_samples(EXAMPLE, "complexfuncbench"))


def samples() -> list[Sample]:
    return [copy.deepcopy(s) for s in _samples()]


def gold(sample_id: str) -> list[list[dict[str, Any]]]:
    s = next(s for s in _samples() if s.id == sample_id)
    return [[{"name": c.name, "arguments": copy.deepcopy(c.arguments)} for c in step] for step in s.calls]


class ScriptedJudge:
    """Answers each judge prompt from a script keyed by what the prompt is about; counts requests."""

    def __init__(self, equal: dict[str, Any] | None = None, scores: dict[str, Any] | None = None) -> None:
        self.equal = equal or {}  # a marker in call 1 -> a verdict (or a list of raw replies in turn)
        self.scores = scores or {}  # "completeness"/"correctness" + answer marker -> score or raw replies
        self.requests: Counter[str] = Counter()
        self.prompts: list[str] = []
        self.lock = threading.Lock()

    def _pick(self, table: dict[str, Any], text: str, key: str) -> Any:
        for marker, answer in table.items():
            if marker in text:
                if isinstance(answer, list):  # raw replies in order, the last one repeated
                    with self.lock:
                        n = self.requests[key]
                    return answer[min(n - 1, len(answer) - 1)]
                return answer
        return None

    def __call__(self, body: dict[str, Any], call_index: int) -> dict[str, Any]:
        text = body["messages"][-1]["content"]
        with self.lock:
            self.prompts.append(text)
        if "Function call 1 (JSON)" in text:
            call_1 = text.split("Function call 1 (JSON):")[1].split("Function call 2")[0]
            key = "equivalence:" + call_1.strip()
            with self.lock:
                self.requests[key] += 1
            answer = self._pick(self.equal, call_1, key)
            if isinstance(answer, str):
                return {"content": answer}
            return {"content": json.dumps({"is_equal": bool(answer), "reason": "scripted"})}
        kind = "completeness" if "COMPLETENESS" in text else "correctness"
        answer_text = text.split("Assistant's final answer:")[1]
        key = f"{kind}:{answer_text.strip()[:40]}"
        with self.lock:
            self.requests[key] += 1
        answer = self._pick({m[len(kind) + 1:]: v for m, v in self.scores.items() if m.startswith(kind + ":")},
                            answer_text, key)
        if isinstance(answer, str):
            return {"content": answer}
        return {"content": json.dumps({"score": 2 if answer is None else answer, "reason": "scripted"})}

    def total(self, prefix: str = "") -> int:
        with self.lock:
            return sum(n for key, n in self.requests.items() if key.startswith(prefix))


def judge_config(server: MockLLMServer) -> LLMConfig:
    return LLMConfig(model="judge-model", base_url=server.base_url, max_retries=0)


def score_with_judges(server: MockLLMServer, cache_path: Path, trajectories: list[dict[str, Any]],
                      gold_ids: tuple[str, ...] | None = None):
    """Score against the example's samples (or only `gold_ids`: one trajectory per sample counts)."""
    with LLMJudges(judge_config(server), cache_path) as judges:
        all_samples = [s for s in samples() if gold_ids is None or s.id in gold_ids]
        report = score_complexeval(all_samples, trajectories, completeness_judge=judges.completeness_judge,
                                   correctness_judge=judges.correctness_judge,
                                   options_for=judged_options(all_samples, judges))
        return report, judges.summary()


def test_llm_judges_decide_what_rules_cannot_and_grade_the_answer(tmp_path: Path) -> None:
    hotels = gold("Hotels-7")
    hotels[0][0]["arguments"]["query"] = "Shibuya, Tokyo"  # the same place written more fully
    car = gold("Car-Rental-3")
    car[0][0]["arguments"]["driver_age"] = 30  # another number than gold's 45: a rule settles it
    elsewhere = gold("Cross-12")
    elsewhere[0][1]["arguments"]["query"] = "Perth"  # another place: free text, only the judge can tell
    script = ScriptedJudge(equal={"Shibuya, Tokyo": True, '"query": "Perth"': False},
                           scores={"completeness:cheapest": 1, "correctness:cheapest": 2})
    trajectories = [
        {"id": "Cross-12", "turns": gold("Cross-12") + ["Flights and hotels are listed above."]},
        {"id": "Hotels-7", "turns": hotels + ["The cheapest is Shibuya Capsule Inn."]},
        {"id": "Car-Rental-3", "turns": car + ["No car."]},
    ]
    with MockLLMServer(responder=script) as server:
        report, accounting = score_with_judges(server, tmp_path / "judges.sqlite", trajectories)
        # a second model's answer to Cross-12 (one trajectory per sample counts in a report)
        other, other_accounting = score_with_judges(server, tmp_path / "judges.sqlite", [
            {"id": "Cross-12", "turns": elsewhere + ["Flights from Sydney to Perth."]}], gold_ids=("Cross-12",))
    cross, hotels_item, car_item = report.items
    (elsewhere_item,) = other.items
    assert cross["success"] and {c["layer"] for c in cross["calls"]} == {"rule"}  # rules first: no judge asked
    assert hotels_item["success"] and hotels_item["calls"][0]["layer"] == "llm"
    assert (hotels_item["completeness"], hotels_item["correctness"]) == (1, 2)
    assert not car_item["success"] and car_item["calls"][0]["layer"] == "rule_typed"
    assert car_item["error"]["type"] == "hallucination"  # 30 appears nowhere the model looked
    assert not elsewhere_item["success"] and elsewhere_item["calls"][1]["layer"] == "llm"
    assert script.total("equivalence:") == 2  # only the two pairs no rule could decide
    assert report.summary["judges"]["rule_based"] is False
    assert report.summary["judges"]["completeness"] == "llm:judge-model:completeness"
    assert report.summary["call_layers"]["llm"] == 1 and report.summary["call_layers"]["rule_typed"] == 1
    assert other.summary["call_layers"]["llm"] == 1
    assert judges_line(report.summary["judges"]).startswith("ComplexEval judges: call equivalence by rules, then")
    assert accounting["verdicts"]["equivalence:equal"] == 1 and other_accounting["verdicts"]["equivalence:different"] == 1


def test_every_verdict_is_cached_a_rerun_asks_nothing(tmp_path: Path) -> None:
    hotels = gold("Hotels-7")
    hotels[0][0]["arguments"]["query"] = "Shibuya, Tokyo"
    trajectories = [{"id": "Hotels-7", "turns": hotels + ["The cheapest is Shibuya Capsule Inn."]}]
    script = ScriptedJudge(equal={"Shibuya, Tokyo": True})
    with MockLLMServer(responder=script) as server:
        first, _ = score_with_judges(server, tmp_path / "judges.sqlite", trajectories)
        sent = server.stats.as_dict()
        second, accounting = score_with_judges(server, tmp_path / "judges.sqlite", trajectories)
        assert server.stats.as_dict() == sent  # nothing sent again
    assert first.items == second.items
    assert accounting["requests_sent"] == 0 and accounting["cache_hits"] == 3


def test_malformed_judge_output_is_asked_again_once_then_a_judge_error(tmp_path: Path) -> None:
    hotels = gold("Hotels-7")
    hotels[0][0]["arguments"]["query"] = "Shibuya, Tokyo"
    car = gold("Car-Rental-3")
    script = ScriptedJudge(
        equal={"Shibuya, Tokyo": ["It is the same place, I think.", '{"is_equal": "yes"}', '{"is_equal": true}']},
        scores={"completeness:Compact": ["Score: 2", '{"score": 2}'],  # fixed on the retry
                "correctness:Compact": ['{"score": 2.5, "reason": "x"}', '{"score": "2"}', '{"score": 2}'],
                "correctness:Economy": 2},
    )
    trajectories = [
        {"id": "Hotels-7", "turns": hotels + ["The cheapest is Shibuya Capsule Inn."]},
        {"id": "Car-Rental-3", "turns": car + ["Compact cars from USD 40 a day."]},
        {"id": "Cross-12", "turns": gold("Cross-12") + ["Economy cars from USD 30 a day."]},
    ]
    with MockLLMServer(responder=script) as server:
        report, accounting = score_with_judges(server, tmp_path / "judges.sqlite", trajectories)
    _, hotels_item, car_item = report.items  # the gold's order: Cross-12, Hotels-7, Car-Rental-3
    # equivalence: two unusable answers -> judge_error, not a match and not a guess
    assert script.total("equivalence:") == JUDGE_PARSE_ATTEMPTS == 2
    assert hotels_item["calls"][0]["layer"] == "judge_error" and not hotels_item["success"]
    assert hotels_item["error"]["type"] == "judge_error"
    # completeness: unusable then usable -> the usable verdict; correctness: two unusable -> judge_error
    assert car_item["completeness"] == 2 and script.total("completeness:Compact") == 2
    assert car_item["correctness"] == "judge_error" and script.total("correctness:Compact") == 2
    assert "correctness" in car_item["judge_errors"]
    assert report.summary["judge_errors"] == {"samples": 1, "calls": 1, "completeness": 0, "correctness": 1}
    # the session that ended off the path has no answer (0, certain without asking); the judge_error is
    # left out of the average: (0 + 2) / 2, where a guessed 0 would give 2 / 3
    assert hotels_item["correctness"] == 0 and report.summary["correctness"] == 1.0
    assert accounting["verdicts"]["correctness:judge_error"] == 1


def test_compat_mode_uses_the_judge_as_its_paid_llm_layer_after_the_exact_list(tmp_path: Path) -> None:
    cross = gold("Cross-12")
    cross[2][0]["arguments"]["cabinClass"] = "Economy"  # not on the exact-match list: the LLM decides
    exact = gold("Cross-12")
    exact[2][0]["arguments"]["currency_code"] = "aud"  # on the list: value_error, the LLM never asked
    script = ScriptedJudge(equal={'"cabinClass": "Economy"': True, '"currency_code": "aud"': True})
    cross_only = [s for s in samples() if s.id == "Cross-12"]
    with MockLLMServer(responder=script) as server, LLMJudges(judge_config(server), tmp_path / "j.sqlite") as judges:
        reports = [score_compat(cross_only, [{"id": "Cross-12", "turns": turns + ["ok"]}],
                                completeness_judge=judges.completeness_judge,
                                correctness_judge=judges.correctness_judge,
                                options_for=lambda sample: CompatOptions(layers=[judges.equivalence_layer(sample)]))
                   for turns in (cross, exact)]
    assert reports[0].items[0]["success"] and reports[0].items[0]["calls"][3]["layer"] == "llm"
    assert reports[1].items[0]["error"]["type"] == "value_error"
    assert script.total("equivalence:") == 1
    # the judge saw the conversation so far, as in the paper: the query and the responses given
    (asked,) = [text for text in script.prompts if "Function call 1 (JSON)" in text]
    history = asked.split("Conversation so far")[1].split("Function call 1")[0]
    assert "Sydney to Melbourne" in history and "MEL.CITY" in history and "-37.8303689" in history


def _write(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    return path


@pytest.mark.parametrize("compat", [False, True])
def test_score_cli_says_who_judged_on_its_first_line(tmp_path: Path, compat: bool) -> None:
    predictions = _write(tmp_path / "t.jsonl", [{"id": "Car-Rental-3", "turns": gold("Car-Rental-3") + ["Cars."]}])
    car_gold = tmp_path / "car.jsonl"  # the example's Car-Rental-3 line alone: the gold set of this file
    car_gold.write_text(next(line for line in EXAMPLE.read_text().splitlines() if '"Car-Rental-3"' in line) + "\n")
    common = ["score", "--metric", "complexeval", "--gold", str(car_gold), "--from", "complexfuncbench",
              "--predictions", str(predictions)] + (["--compat"] if compat else [])
    stand_in = runner.invoke(app, common)
    assert stand_in.exit_code == 0, stand_in.output
    assert stand_in.stdout.splitlines()[0].startswith("ComplexEval judges: RULE-BASED STAND-INS")
    offline = runner.invoke(app, common + ["--llm-model", "judge-model", "--offline", "--json"])
    assert offline.exit_code == 0 and "RULE-BASED STAND-INS" in offline.stderr and "(--offline)" in offline.stderr
    assert json.loads(offline.stdout)["summary"]["judges"]["rule_based"] is True
    script = ScriptedJudge(scores={"completeness:Cars": 1, "correctness:Cars": 0})
    with MockLLMServer(responder=script) as server:
        judged = runner.invoke(app, common + ["--llm-model", "judge-model", "--base-url", server.base_url,
                                              "--judge-cache", str(tmp_path / "c.sqlite")])
        as_json = runner.invoke(app, common + ["--llm-model", "judge-model", "--base-url", server.base_url,
                                               "--judge-cache", str(tmp_path / "c.sqlite"), "--json"])
    assert judged.exit_code == 0, judged.output
    first = judged.stdout.splitlines()[0]
    assert first.startswith("ComplexEval judges: call equivalence by rules, then") and "llm:judge-model" in first
    summary = json.loads(as_json.stdout)["summary"]
    assert (summary["completeness"], summary["correctness"]) == (1.0, 0.0)
    assert summary["judge_llm"]["requests_sent"] == 0  # the second run was answered from the cache
    assert script.total() == 2


def test_score_cli_with_an_unreachable_judge_is_one_line_and_exit_1(tmp_path: Path) -> None:
    predictions = _write(tmp_path / "t.jsonl", [{"id": "Car-Rental-3", "turns": gold("Car-Rental-3") + ["Cars."]}])
    result = runner.invoke(app, ["score", "--metric", "complexeval", "--gold", str(EXAMPLE), "--from",
                                 "complexfuncbench", "--predictions", str(predictions), "--llm-model", "j",
                                 "--base-url", "http://127.0.0.1:9/v1", "--judge-cache", str(tmp_path / "c.sqlite")])
    assert result.exit_code == 1
    assert "cannot reach the LLM endpoint" in result.stderr and "Traceback" not in result.output
