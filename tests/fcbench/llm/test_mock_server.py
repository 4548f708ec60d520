"""The local OpenAI-compatible server: what the openai SDK sees over HTTP, the script rules, the
injected failures, the stats, and the `build-dataset mock-llm` command."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import openai
import pytest

from fcbench.errors import UserError
from fcbench.llm.mock_server import (
    MockLLMServer,
    Reply,
    load_script,
    placeholder_value,
    rule_from_dict,
)

TOOLS = [{"type": "function", "function": {
    "name": "search_hotels", "description": "Hotels in a city.",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string"}, "nights": {"type": "integer"}, "budget": {"type": ["number", "null"]},
        "sort": {"type": "string", "enum": ["price", "rating"]}, "pets": {"type": "boolean"}},
        "required": ["city", "nights", "sort", "pets", "budget"]}}}]


def sdk(server: MockLLMServer, key: str = "any") -> openai.OpenAI:
    return openai.OpenAI(api_key=key, base_url=server.base_url, max_retries=0)


def post_chat(server: MockLLMServer, body: dict[str, Any], key: str | None = None) -> tuple[int, dict[str, str], bytes]:
    """A raw HTTP POST: (status, headers, body bytes), error statuses included."""
    request = urllib.request.Request(f"http://127.0.0.1:{server.port}/v1/chat/completions",
                                     data=json.dumps(body).encode(), method="POST",
                                     headers={"Content-Type": "application/json",
                                              **({"Authorization": f"Bearer {key}"} if key else {})})
    try:
        with urllib.request.urlopen(request) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


def get_json(server: MockLLMServer, path: str) -> Any:
    with urllib.request.urlopen(f"http://127.0.0.1:{server.port}{path}") as response:
        return json.load(response)


USER = [{"role": "user", "content": "Find me a hotel in Lisbon"}]


# ----------------------------------------------------------------------------- through the SDK
def test_the_sdk_lists_models_and_gets_a_planned_tool_call() -> None:
    with MockLLMServer(models=["mock-model", "mock-small"]) as server:
        client = sdk(server)
        assert [model.id for model in client.models.list()] == ["mock-model", "mock-small"]
        completion = client.chat.completions.create(model="mock-model", messages=USER, tools=TOOLS)
    message = completion.choices[0].message
    assert completion.choices[0].finish_reason == "tool_calls"
    assert message.tool_calls[0].function.name == "search_hotels"
    assert json.loads(message.tool_calls[0].function.arguments) == {
        "city": "<city>", "nights": 1, "sort": "price", "pets": True, "budget": 1.0}
    assert completion.usage.total_tokens == completion.usage.prompt_tokens + completion.usage.completion_tokens


def test_after_a_tool_result_the_plan_answers_in_text() -> None:
    history = [*USER, {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1_0", "type": "function", "function": {"name": "search_hotels", "arguments": "{}"}}]},
               {"role": "tool", "tool_call_id": "call_1_0", "content": "[]"}]
    with MockLLMServer() as server:
        completion = sdk(server).chat.completions.create(model="mock-model", messages=history, tools=TOOLS)
    assert completion.choices[0].message.content == "echo: Find me a hotel in Lisbon"
    assert completion.choices[0].message.tool_calls is None


def test_echo_default_ignores_tools() -> None:
    with MockLLMServer(default="echo") as server:
        completion = sdk(server).chat.completions.create(model="m", messages=USER, tools=TOOLS)
    assert completion.choices[0].message.content == "echo: Find me a hotel in Lisbon"
    assert completion.model == "m"


def test_same_request_same_bytes() -> None:
    """Deterministic answers (fixed `created`, ids from the call order) keep cached runs reproducible."""
    with MockLLMServer() as first_server, MockLLMServer() as second_server:
        first = post_chat(first_server, {"model": "m", "messages": USER})[2]
        second = post_chat(second_server, {"model": "m", "messages": USER})[2]
    assert first == second


# ------------------------------------------------------------------------------------- scripts
def test_rules_match_by_substring_call_order_and_times() -> None:
    script = [{"call": 2, "content": "second call"},  # plain dicts are rules too
              {"user_contains": "Lisbon", "times": 2, "content": "scripted Lisbon"}]
    with MockLLMServer(script) as server:
        client = sdk(server)
        answers = [client.chat.completions.create(model="m", messages=USER).choices[0].message.content
                   for _ in range(4)]
    # call 2 is taken by the first rule, so the `times: 2` rule serves calls 1 and 3, then is spent
    assert answers == ["scripted Lisbon", "second call", "scripted Lisbon", "echo: Find me a hotel in Lisbon"]


def test_a_callable_responder_sees_the_request_and_may_fall_through() -> None:
    seen: list[int] = []

    def responder(body: dict[str, Any], call_index: int) -> dict[str, Any] | None:
        seen.append(call_index)
        return {"content": f"temperature {body['temperature']}"} if "temperature" in body else None

    with MockLLMServer(responder=responder) as server:
        client = sdk(server)
        warm = client.chat.completions.create(model="m", messages=USER, temperature=0.7)
        plain = client.chat.completions.create(model="m", messages=USER)
    assert warm.choices[0].message.content == "temperature 0.7"
    assert plain.choices[0].message.content == "echo: Find me a hotel in Lisbon"
    assert seen == [1, 2]


def test_script_files_in_json_and_jsonl(tmp_path: Path) -> None:
    jsonl = tmp_path / "script.jsonl"
    jsonl.write_text('{"user_contains": "hotel", "tool_calls": [{"name": "search_hotels", "arguments": {"city": "Lisbon"}}]}\n'
                     '\n{"call": 3, "status": 429, "retry_after": 2}\n', encoding="utf-8")
    listed = tmp_path / "script.json"
    listed.write_text(json.dumps([{"times": 1, "status": 500}, {"content": "fine", "usage": {"prompt_tokens": 7,
                                                                                             "completion_tokens": 3}}]))
    from_lines, from_list = load_script(jsonl), load_script(listed)
    assert [(r.user_contains, r.call) for r in from_lines] == [("hotel", None), (None, 3)]
    assert from_lines[1].reply == Reply(status=429, retry_after=2)
    assert from_list[0].times == 1 and from_list[1].reply.usage == {"prompt_tokens": 7, "completion_tokens": 3}
    with MockLLMServer(from_lines) as server:
        status, _, body = post_chat(server, {"model": "m", "messages": USER})
    assert status == 200
    assert json.loads(body)["choices"][0]["message"]["tool_calls"][0]["function"] == {
        "name": "search_hotels", "arguments": '{"city": "Lisbon"}'}


def test_bad_script_lines_are_named(tmp_path: Path) -> None:
    broken = tmp_path / "broken.jsonl"
    broken.write_text('{"content": "ok"}\n{"contnet": "typo"}\n', encoding="utf-8")
    with pytest.raises(UserError, match=r"broken.jsonl:2: unknown key 'contnet'"):
        load_script(broken)
    not_json = tmp_path / "not.jsonl"
    not_json.write_text('{"content": "ok"}\n{"content": \n', encoding="utf-8")
    with pytest.raises(UserError, match=r"not.jsonl:2: not valid JSON"):
        load_script(not_json)
    with pytest.raises(UserError, match="malformed must be one of invalid_json, missing_choices"):
        rule_from_dict({"malformed": "garbage"}, "rule")
    with pytest.raises(UserError, match="rule: status must be int, got '429'"):
        rule_from_dict({"status": "429"}, "rule")
    with pytest.raises(UserError, match="rule: call must be int, got 1.5"):
        rule_from_dict({"call": 1.5}, "rule")
    with pytest.raises(UserError, match="each tool_calls entry needs a string 'name'"):
        rule_from_dict({"tool_calls": [{"arguments": {}}]}, "rule")


# ------------------------------------------------------------------------------ injected failures
def test_rate_limit_carries_retry_after_and_an_openai_error_body() -> None:
    with MockLLMServer([rule_from_dict({"status": 429, "retry_after": 1.5}, "t")]) as server:
        status, headers, body = post_chat(server, {"model": "m", "messages": USER})
        with pytest.raises(openai.RateLimitError):
            sdk(server).chat.completions.create(model="m", messages=USER)
    assert status == 429 and headers["Retry-After"] == "1.5"
    assert json.loads(body)["error"]["type"] == "rate_limit_exceeded"


def test_malformed_bodies() -> None:
    script = [rule_from_dict({"user_contains": "json", "malformed": "invalid_json"}, "t"),
              rule_from_dict({"user_contains": "choices", "malformed": "missing_choices"}, "t")]
    with MockLLMServer(script) as server:
        _, _, broken = post_chat(server, {"model": "m", "messages": [{"role": "user", "content": "bad json"}]})
        _, _, no_choices = post_chat(server, {"model": "m", "messages": [{"role": "user", "content": "no choices"}]})
    with pytest.raises(json.JSONDecodeError):
        json.loads(broken)
    parsed = json.loads(no_choices)
    assert "choices" not in parsed and parsed["usage"]["prompt_tokens"] > 0


def test_a_configured_key_is_required() -> None:
    with MockLLMServer(api_key="right-key") as server:
        assert post_chat(server, {"model": "m", "messages": USER}, key="wrong-key")[0] == 401
        assert post_chat(server, {"model": "m", "messages": USER})[0] == 401
        assert post_chat(server, {"model": "m", "messages": USER}, key="right-key")[0] == 200
        with pytest.raises(openai.AuthenticationError) as error:
            sdk(server, key="wrong-key").models.list()
        assert sdk(server, key="right-key").models.list().data[0].id == "mock-model"
        assert get_json(server, "/_stats")["by_status"] == {"401": 2, "200": 1}
    assert "wrong-key" not in str(error.value)  # the server never echoes a key back


def test_stats_count_every_chat_request_by_status() -> None:
    script = [rule_from_dict({"call": 1, "status": 500}, "t"), rule_from_dict({"call": 2, "status": 429}, "t")]
    with MockLLMServer(script) as server:
        for _ in range(4):
            post_chat(server, {"model": "m", "messages": USER})
        bad_status, _, bad_body = post_chat(server, {"model": "m", "messages": "not a list"})
        stats = get_json(server, "/_stats")
    connections = stats.pop("connections")
    assert stats.pop("max_in_flight") == 1  # one after the other
    assert 1 <= connections <= 6  # 5 chat requests (kept alive or not) and the GET /_stats itself
    assert stats == {"chat_requests": 5, "model_requests": 0, "by_status": {"500": 1, "429": 1, "200": 2, "400": 1},
                     "batches": 0, "batch_lines": 0, "batch_lines_repeated": 0}
    assert bad_status == 400 and json.loads(bad_body)["error"]["message"] == "'messages' must be a list of objects"


def test_requests_held_by_latency_are_served_concurrently() -> None:
    """Seen from the server's count of requests in flight, not timed: a loaded machine is slower,
    not less concurrent (the latency figures are bench/llm_throughput.py's)."""
    with MockLLMServer(latency_ms=500) as server:
        post_chat(server, {"model": "m", "messages": USER})
        alone = get_json(server, "/_stats")["max_in_flight"]
        with ThreadPoolExecutor(10) as pool:
            statuses = list(pool.map(lambda _: post_chat(server, {"model": "m", "messages": USER})[0], range(10)))
        together = get_json(server, "/_stats")["max_in_flight"]
    assert alone == 1
    assert statuses == [200] * 10
    assert together >= 2  # one after the other would never have two in flight


def test_placeholder_values_follow_the_schema_type() -> None:
    assert placeholder_value("n", {"type": "integer"}) == 1
    assert placeholder_value("x", {"type": ["null", "array"]}) == []
    assert placeholder_value("unit", {"enum": ["celsius", "fahrenheit"]}) == "celsius"
    assert placeholder_value("city", {}) == "<city>"


# ------------------------------------------------------------------------------------ the command
def test_the_mock_llm_command_serves_in_the_foreground(tmp_path: Path) -> None:
    script = tmp_path / "replies.jsonl"
    script.write_text('{"user_contains": "ping", "content": "pong"}\n', encoding="utf-8")
    process = subprocess.Popen([sys.executable, "-c", "from fcbench.cli import app; app()", "mock-llm", "--port", "0",
                                "--script", str(script), "--latency-ms", "10"],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        first_line = process.stdout.readline()
        match = re.search(r"mock LLM server at (http://127\.0\.0\.1:\d+/v1)", first_line)
        assert match, first_line
        client = openai.OpenAI(api_key="unused", base_url=match.group(1), max_retries=0)
        answer = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "ping"}])
        assert answer.choices[0].message.content == "pong"
        assert f"OPENAI_BASE_URL={match.group(1)}" in first_line
    finally:
        process.terminate()
        process.wait(timeout=10)
        process.stdout.close()
        process.stderr.close()


def test_the_mock_llm_command_reports_a_missing_script_in_one_line(tmp_path: Path) -> None:
    result = subprocess.run([sys.executable, "-c", "from fcbench.cli import app; app()", "mock-llm",
                             "--script", str(tmp_path / "nope.jsonl")], capture_output=True, text=True, timeout=60)
    assert result.returncode == 1
    assert result.stderr == f"error: {tmp_path / 'nope.jsonl'}: no such file\n"
