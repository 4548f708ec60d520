"""`score --metric confetti` graded by an LLM: the dialog-act classifier and the parameter-validity
judge against the local mock server over real HTTP, with scripted verdicts (readable, unreadable,
unreadable then readable), the request cache across re-runs, and the offline report's first line.
Gold: the six turns of CONFETTI's published dialog-act set that the predictions answer, their lines
copied as published (every scorer grades the whole gold set it is given: the other 457 turns would
be counted as missing)."""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from conftest import EXTERNAL
from typer.testing import CliRunner

from fcbench.cli import app
from fcbench.evaluate.judges_confetti import read_dialog_acts, read_validity
from fcbench.llm.client import ParseError
from held_responder import HoldAfter
from fcbench.llm.mock_server import MockLLMServer, last_user_text

REPO = Path(__file__).resolve().parents[3]
PUBLISHED = EXTERNAL / "confetti" / "possible_answer_BFCL_v2_dialogacts.json"
GOLD = PUBLISHED  # replaced by the answered turns' lines (the fixture below) before any test runs
PREDICTIONS = REPO / "tests" / "data" / "predictions" / "confetti_dialogacts_responses.jsonl"
runner = CliRunner()

# The scripted classifier: the turn's text -> its answer. dialogacts_44's text gets prose, not JSON.
ACTS = {
    "I have sent a verification code": {"dialog_acts": ["function_call", "seek_information"]},  # gold has both
    "Your account is verified": {"dialog_acts": ["function_call", "provide_information"]},
    "What day and time works best": {"dialog_acts": ["seek_information"]},
    "Sorry, I can't provide quotes": "This turn is clearly a rejection of the request.",
    "I will send that email for you": {"dialog_acts": ["provide_information"]},  # gold: reject -> a miss
}
# The scripted validity judge: (parameter, value) -> verdict. The rule-based stand-in calls both
# values invalid (they are not gold values and the published set has no conversation text).
VALIDITY = {("verification_code", '"123456"'): "hallucinated", ("cancellation_reason", '"Moving abroad"'): "grounded"}


class ScriptedJudge:
    """The mock's responder: answers each prompt from the tables above, counting what it was asked."""

    def __init__(self, acts: dict[str, Any] = ACTS, garbled_once: tuple[str, ...] = ()) -> None:
        self.acts = acts
        self.garbled_once = set(garbled_once)  # texts whose FIRST answer is unreadable
        self.asked: Counter[str] = Counter()

    def __call__(self, body: dict[str, Any], call_index: int) -> dict[str, Any]:
        prompt = last_user_text(body["messages"])
        if "Text of this turn:" in prompt:
            text = prompt.split("Text of this turn:\n", 1)[1]
            key = next(key for key in self.acts if key in text)
            self.asked[key] += 1
            if key in self.garbled_once and self.asked[key] == 1:
                return {"content": "{\"dialog_acts\": "}  # cut off mid-answer
            answer = self.acts[key]
            return {"content": answer if isinstance(answer, str) else json.dumps(answer)}
        parameter = re.search(r"^Parameter: (.*)$", prompt, re.M).group(1)
        value = re.search(r"^Value \(JSON\): (.*)$", prompt, re.M).group(1)
        self.asked[f"{parameter}={value}"] += 1
        return {"content": json.dumps({"verdict": VALIDITY[(parameter, value)], "reason": "scripted"})}


@pytest.fixture(scope="module", autouse=True)
def _answered_gold(tmp_path_factory: pytest.TempPathFactory) -> None:
    global GOLD
    answered = {json.loads(line)["id"] for line in PREDICTIONS.read_text().splitlines() if line.strip()}
    lines = [line for line in PUBLISHED.read_text().splitlines() if line.strip() and json.loads(line)["id"] in answered]
    assert len(lines) == 6
    GOLD = tmp_path_factory.mktemp("confetti") / "possible_answer_dialogacts_answered.json"
    GOLD.write_text("\n".join(lines) + "\n")


def score(*args: str, predictions: Path = PREDICTIONS) -> Any:
    return runner.invoke(app, ["score", "--metric", "confetti", "--gold", str(GOLD), "--from", "confetti",
                               "--predictions", str(predictions), *args])


def llm_args(server: MockLLMServer, cache: Path) -> list[str]:
    return ["--llm-model", "judge-model", "--base-url", server.base_url, "--judge-cache", str(cache)]


def items_by_id(out: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {item["id"]: item for item in out["items"]}


# ----------------------------------------------------------------------------------- LLM grading
def test_llm_verdicts_grade_acts_and_validity_and_an_unreadable_verdict_is_a_judge_error(tmp_path: Path) -> None:
    judge = ScriptedJudge()
    with MockLLMServer(responder=judge) as server:
        result = score(*llm_args(server, tmp_path / "judges.sqlite"), "--json")
        sent = server.stats.chat_requests
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    items = items_by_id(out)
    assert items["dialogacts_0"]["predicted_acts"] == ["agent_function_calling", "agent_seek_information"]
    assert items["dialogacts_0"]["dialog_act_match"] and items["dialogacts_19"]["dialog_act_match"]
    assert items["dialogacts_77"]["predicted_acts"] == ["agent_inform_user"]
    assert not items["dialogacts_77"]["dialog_act_match"]  # the gold act is a refusal
    assert items["dialogacts_34"]["acts_from"] == "given"
    # the unreadable verdict: asked again once, then a judge_error, never a guessed act
    assert judge.asked["Sorry, I can't provide quotes"] == 2
    refused = items["dialogacts_44"]
    assert "predicted_acts" not in refused and "dialog_act_match" not in refused
    assert refused["judge_error"]["dialog_acts"].startswith("judge_error: unparseable output after 2 attempts")
    assert refused["judge_error"]["dialog_acts"].endswith("(last answer: 'This turn is clearly a rejection of the request.')")
    summary = out["summary"]
    assert summary["errors"]["judge_error"] == 1
    assert summary["n_dialog_acts"] == 5 and summary["dialog_act_accuracy"] == pytest.approx(4 / 5)
    # validity: the LLM's verdicts, not the rule (which would call both values invalid: 7/9)
    assert items["dialogacts_1"]["invalid_parameters"] == ["Telecom.ViewAccount.verification_code"]
    assert summary["n_parameters"] == 9 and summary["parameter_validity_rate"] == pytest.approx(8 / 9)
    # only the values that are not gold values were asked about; 5 turns + 1 re-ask + 2 values
    assert judge.asked["verification_code=\"123456\""] == 1 and judge.asked["cancellation_reason=\"Moving abroad\""] == 1
    assert sent == 8
    grading = summary["grading"]
    assert grading["llm"]["model"] == "judge-model" and grading["llm"]["requests"]["requests_sent"] == 8
    assert grading["dialog_act_accuracy"]["judge"].startswith("LLM judge-model")
    assert grading["dialog_act_accuracy"]["judge_errors"] == 1
    assert grading["not_graded_by_llm"][0] == "ast_soft_accuracy"


def test_a_rerun_replays_every_verdict_from_the_cache_and_reasks_only_the_judge_errors(tmp_path: Path) -> None:
    cache = tmp_path / "judges.sqlite"
    with MockLLMServer(responder=ScriptedJudge()) as server:
        first = json.loads(score(*llm_args(server, cache), "--json").stdout)
        after_first = server.stats.chat_requests
        second = json.loads(score(*llm_args(server, cache), "--json").stdout)
        # the judge_error was not cached: its question is asked again (twice), nothing else
        assert server.stats.chat_requests - after_first == 2
    assert second["items"] == first["items"]
    fixed = dict(ACTS, **{"Sorry, I can't provide quotes": {"dialog_acts": ["reject"]}})
    with MockLLMServer(responder=ScriptedJudge(fixed)) as server:
        third = json.loads(score(*llm_args(server, cache), "--json").stdout)
        assert server.stats.chat_requests == 1  # now readable at the first ask
        assert items_by_id(third)["dialogacts_44"]["dialog_act_match"] is True
        assert third["summary"]["errors"]["judge_error"] == 0
        fourth = json.loads(score(*llm_args(server, cache), "--json").stdout)
        assert server.stats.chat_requests == 1  # every verdict cached: no new request
    assert fourth["items"] == third["items"]
    assert fourth["summary"]["grading"]["llm"]["requests"]["requests_sent"] == 0
    assert fourth["summary"]["grading"]["llm"]["requests"]["cache_hits"] == 7


def test_an_unreadable_first_answer_then_a_readable_one_is_a_verdict_replayed_free(tmp_path: Path) -> None:
    cache = tmp_path / "judges.sqlite"
    fixed = dict(ACTS, **{"Sorry, I can't provide quotes": {"dialog_acts": ["reject"]}})
    judge = ScriptedJudge(fixed, garbled_once=("What day and time works best",))
    with MockLLMServer(responder=judge) as server:
        first = json.loads(score(*llm_args(server, cache), "--json").stdout)
        assert judge.asked["What day and time works best"] == 2 and server.stats.chat_requests == 8
        second = json.loads(score(*llm_args(server, cache), "--json").stdout)
        assert server.stats.chat_requests == 8
    assert items_by_id(first)["dialogacts_19"]["predicted_acts"] == ["agent_seek_information"]
    assert first["summary"]["errors"]["judge_error"] == 0 and second["items"] == first["items"]


def test_a_judge_that_never_answers_usably_fails_the_command(tmp_path: Path) -> None:
    with MockLLMServer(default="echo") as server:  # answers every prompt with prose
        result = score(*llm_args(server, tmp_path / "judges.sqlite"))
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "the LLM judge judge-model gave no usable verdict (5 items with a judge_error)" in result.stderr
    assert result.stdout.splitlines()[0].startswith("graded by LLM judge-model")  # the report is still printed


def write_pipeline(root: Path, base_url: str) -> Path:
    path = root / "pipelines.yaml"
    path.write_text("pipelines:\n  bench:\n    dataset_dir: data\n    seed: 1\n"
                    f"    llm: {{model: pipeline-judge, base_url: '{base_url}', temperature: 0.7, max_retries: 0,"
                    " api_key_env: H8_JUDGE_KEY}\n")
    return path


def test_the_pipelines_llm_block_configures_the_judge_its_key_and_its_cache(tmp_path: Path) -> None:
    secret = "sk-h8-judge-secret"
    with MockLLMServer(responder=ScriptedJudge(), api_key=secret) as server:  # 401 without this key
        pipelines = write_pipeline(tmp_path, server.base_url)
        result = runner.invoke(app, ["score", "--metric", "confetti", "--gold", str(GOLD), "--from", "confetti",
                                     "--predictions", str(PREDICTIONS), "--pipeline", "bench", "--file", str(pipelines),
                                     "--json"], env={"H8_JUDGE_KEY": secret})
        assert result.exit_code == 0, result.output
        assert server.stats.chat_requests == 8 and server.stats.by_status == {"200": 8}
    grading = json.loads(result.stdout)["summary"]["grading"]
    assert grading["llm"]["model"] == "pipeline-judge"
    cache = tmp_path / "data" / "build" / "score" / "judges.sqlite"
    assert grading["llm"]["cache"] == str(cache) and cache.is_file()
    assert secret not in result.output and secret.encode() not in cache.read_bytes()


def test_an_unreachable_judge_is_one_line_and_exit_1(tmp_path: Path) -> None:
    with socket.socket() as closed:  # a port nothing listens on
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
    result = score("--pipeline", "bench", "--file", str(write_pipeline(tmp_path, f"http://127.0.0.1:{port}/v1")))
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.stderr.strip() == f"error: cannot reach the LLM endpoint at http://127.0.0.1:{port}/v1"


# ------------------------------------------------------------------------------------- offline
def test_offline_the_first_line_says_what_no_llm_graded(tmp_path: Path) -> None:
    plain = score()
    assert plain.exit_code == 0, plain.output
    first = plain.stdout.splitlines()[0]
    assert first.startswith("NOT graded by an LLM (no LLM configured: give --llm-model, or --pipeline with an llm block)")
    assert "dialog acts by a rule-based stand-in" in first and "parameter validity by a rule-based stand-in" in first
    with MockLLMServer(responder=ScriptedJudge()) as server:
        forced = score(*llm_args(server, tmp_path / "judges.sqlite"), "--offline", "--json")
        assert server.stats.chat_requests == 0
    out = json.loads(forced.stdout)
    grading = out["summary"]["grading"]
    assert grading["llm"] is None and grading["offline_because"] == "--offline"
    assert grading["line"].startswith("NOT graded by an LLM (--offline)")
    assert forced.stderr.strip() == grading["line"]  # --json: stdout is JSON only, the line goes to stderr
    assert grading["not_graded_by_llm"] == ["ast_soft_accuracy", "dialog_act_accuracy", "parameter_validity_rate"]
    # the stand-ins' figures: both invented values invalid, the wrong "I will send" turn a miss
    assert out["summary"]["parameter_validity_rate"] == pytest.approx(7 / 9)
    assert items_by_id(out)["dialogacts_44"]["predicted_acts"] == ["agent_reject_request"]


def test_llm_options_on_a_metric_without_a_judge_are_refused() -> None:
    result = runner.invoke(app, ["score", "--metric", "bfcl", "--predictions", str(PREDICTIONS), "--llm-model", "m"])
    assert result.exit_code == 1 and "--metric bfcl has none" in result.stderr


# ------------------------------------------------------------------------------ reading verdicts
def test_verdicts_are_read_strictly() -> None:
    assert read_dialog_acts({"dialog_acts": ["Seek Information", "function_call", "seek_information"]}) == [
        "agent_seek_information", "agent_function_calling"]
    assert read_dialog_acts({"dialog_acts": ["agent_reject_request"]}) == ["agent_reject_request"]
    for bad in ({"dialog_acts": []}, {"dialog_acts": "reject"}, {"dialog_acts": ["apologise"]}, {"acts": ["other"]}):
        with pytest.raises(ParseError):
            read_dialog_acts(bad)
    assert read_validity({"verdict": "Grounded"}) is True and read_validity({"verdict": "hallucinated"}) is False
    with pytest.raises(ParseError):
        read_validity({"verdict": "probably fine"})


def test_an_unreadable_prediction_line_is_listed_its_turn_is_missing_and_the_rest_is_graded(tmp_path: Path) -> None:
    lines = PREDICTIONS.read_text().splitlines()
    broken = tmp_path / "p.jsonl"
    broken.write_text("\n".join([lines[0], '{"id": "dialogacts_1", "response": "cut', *lines[2:]]) + "\n")
    judge = ScriptedJudge()
    with MockLLMServer(responder=judge) as server:
        result = score(*llm_args(server, tmp_path / "judges.sqlite"), "--json", predictions=broken)
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert [item["id"] for item in out["items"]] == ["dialogacts_0", "dialogacts_1", "dialogacts_19", "dialogacts_34",
                                                     "dialogacts_44", "dialogacts_77"]  # the gold's order
    assert out["items"][1]["error"] == "missing_prediction" and out["items"][1]["dialog_act_match"] is False
    (unreadable,) = out["gold_set"]["unreadable"]
    assert unreadable["line"] == 2 and out["gold_set"]["missing"] == ["dialogacts_1"]
    assert out["summary"]["gold_set"]["unreadable_lines"] == 1 and out["summary"]["n"] == 6
    # the validity rate is over the values predicted: with a turn unanswered it is not reported
    assert out["summary"]["parameter_validity_rate"] is None
    assert out["items"][0]["dialog_act_match"] is True  # the readable lines are graded


def test_batch_mode_gives_the_same_verdicts_through_the_batch_api(tmp_path: Path) -> None:
    with MockLLMServer(responder=ScriptedJudge()) as server:
        online = json.loads(score(*llm_args(server, tmp_path / "online.sqlite"), "--json").stdout)
    pipelines = tmp_path / "pipelines.yaml"
    with MockLLMServer(responder=ScriptedJudge()) as server:
        pipelines.write_text("pipelines:\n  bench:\n    dataset_dir: data\n    seed: 1\n"
                             f"    llm: {{model: judge-model, base_url: '{server.base_url}', max_retries: 0,"
                             " batch: {poll_interval_s: 0.05, max_poll_interval_s: 0.2}}\n")
        result = score("--pipeline", "bench", "--file", str(pipelines), "--batch", "--json")
        served = server.stats.as_dict() | server.batches.stats()
    assert result.exit_code == 0, result.output
    assert served["chat_requests"] == 0 and served["batch_lines"] == 8  # 7 questions and the one re-ask
    assert json.loads(result.stdout)["items"] == online["items"]


def test_a_killed_run_then_a_rerun_gives_the_clean_runs_result_paying_each_verdict_once(tmp_path: Path) -> None:
    fixed = dict(ACTS, **{"Sorry, I can't provide quotes": {"dialog_acts": ["reject"]}})  # 7 questions, 7 requests
    with MockLLMServer(responder=ScriptedJudge(fixed)) as server:
        clean = json.loads(score(*llm_args(server, tmp_path / "clean.sqlite"), "--json").stdout)
    cache = tmp_path / "killed.sqlite"
    # the judge answers three questions and holds the fourth: the run is killed there, mid-way,
    # however slow the machine (no timer to race)
    judge = HoldAfter(ScriptedJudge(fixed), answered=3)
    with MockLLMServer(responder=judge) as server:
        pipelines = tmp_path / "pipelines.yaml"
        pipelines.write_text("pipelines:\n  bench:\n    dataset_dir: data\n    seed: 1\n"
                             f"    llm: {{model: judge-model, base_url: '{server.base_url}', concurrency: 1}}\n")
        command = [str(Path(sys.executable).parent / "build-dataset"), "score", "--metric", "confetti", "--gold",
                   str(GOLD), "--from", "confetti", "--predictions", str(PREDICTIONS), "--pipeline", "bench",
                   "--file", str(pipelines), "--judge-cache", str(cache)]
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        assert judge.wait_until_held(alive=lambda: process.poll() is None)
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=60)
        before_kill = judge.seen
        assert before_kill == 4  # three answered, one in flight
        judge.release()
        rerun = score("--pipeline", "bench", "--file", str(pipelines), "--judge-cache", str(cache), "--json")
        assert rerun.exit_code == 0, rerun.output
        resent = judge.seen - before_kill  # the rerun's requests (the held one, released, was counted at the kill)
    # the answers stored before the kill are not paid again (at most the one in flight is re-sent)
    assert 7 - before_kill <= resent <= 7 - before_kill + 1
    assert json.loads(rerun.stdout)["items"] == clean["items"]
