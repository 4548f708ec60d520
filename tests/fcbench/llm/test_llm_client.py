"""The LLM client against the local OpenAI-compatible server, over real HTTP through the openai SDK:
retries (429 with Retry-After, 500), malformed bodies and unparseable output rejected with their raw
text, the cache, sample indexes, one-line user errors, the key kept secret, token and cost sums."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import threading
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from fcbench.config import LLMConfig, PricesConfig
from fcbench.errors import UserError
from fcbench.llm.cache import RequestCache
from fcbench.llm.client import (
    ChatRequest,
    Completion,
    LLMClient,
    LLMRejection,
    LLMReply,
    ParseError,
    RetryPolicy,
    parse_retry_after,
    resolve_endpoint,
)
from fcbench.llm.mock_server import MockLLMServer, Reply, rule_from_dict

FAKE_KEY = "sk-fcbench-FAKE-7f3a9c1e5b"  # recognisable, so it can be searched for in everything written
FAST = RetryPolicy(max_retries=2, base_delay_s=0.01, max_delay_s=0.05, parse_attempts=3)
TOOLS = [{"type": "function", "function": {"name": "get_weather", "description": "Weather for a city.",
                                           "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                                          "required": ["city"]}}}]


def rules(*items: dict[str, Any]):
    return [rule_from_dict(item, "test") for item in items]


def stats(server: MockLLMServer) -> dict[str, Any]:
    with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/_stats") as response:
        return json.load(response)


def config(server_or_url: MockLLMServer | str, **overrides: Any) -> LLMConfig:
    url = server_or_url if isinstance(server_or_url, str) else server_or_url.base_url
    return LLMConfig(model="mock-model", base_url=url, **overrides)


def ask(text: str, index: int = 0) -> ChatRequest:
    return ChatRequest(messages=[{"role": "user", "content": text}], sample_index=index)


def run(llm_config: LLMConfig, requests: list[ChatRequest], *, cache: RequestCache | None = None,
        parse=None, retry: RetryPolicy = FAST, environ: dict[str, str] | None = None) -> tuple[list, dict]:
    """Answer `requests` with a fresh client; (outcomes, summary)."""

    async def go() -> tuple[list, dict]:
        async with LLMClient(llm_config, cache, environ={"OPENAI_API_KEY": FAKE_KEY} if environ is None else environ,
                             retry=retry) as llm:
            outcomes = await llm.complete_all(requests, parse)
            return outcomes, llm.summary()

    return asyncio.run(go())


def json_object(completion: Completion) -> Any:
    try:
        value = json.loads(completion.content or "")
    except json.JSONDecodeError as exc:
        raise ParseError(f"not JSON: {exc.msg}") from None
    if not isinstance(value, dict) or "query" not in value:
        raise ParseError("expected an object with 'query'")
    return value


# ------------------------------------------------------------------------------------- retries
def test_429_waits_for_retry_after_then_succeeds(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="fcbench.llm.client")
    with MockLLMServer(rules({"times": 1, "status": 429, "retry_after": 1})) as server:
        outcomes, summary = run(config(server), [ask("hello")])
        assert stats(server)["by_status"] == {"429": 1, "200": 1}
    assert isinstance(outcomes[0], LLMReply)
    assert outcomes[0].completion.content == "echo: hello"
    # the backoff alone would wait ~0.25 s: the wait the client chose is the header's second (plus
    # its up-to-10% spread), read from what it announced, not timed
    waits = [float(record.getMessage().split(" in ")[-1].removesuffix(" s")) for record in caplog.records
             if "retry 1/" in record.getMessage()]
    assert len(waits) == 1 and 1.0 <= waits[0] <= 1.1, waits
    assert summary["retries"] == {"HTTP 429": 1}
    assert summary["requests_sent"] == 2


def test_503_with_retry_after_is_retried_too() -> None:
    with MockLLMServer(rules({"times": 1, "status": 503, "retry_after": 0.3})) as server:
        outcomes, summary = run(config(server), [ask("hi")])
        assert stats(server)["chat_requests"] == 2
    assert isinstance(outcomes[0], LLMReply)
    assert summary["retries"] == {"HTTP 503": 1}


def test_500s_are_retried_with_backoff_then_succeed() -> None:
    with MockLLMServer(rules({"times": 2, "status": 500})) as server:
        outcomes, summary = run(config(server), [ask("hi")])
        assert stats(server)["by_status"] == {"500": 2, "200": 1}
    assert isinstance(outcomes[0], LLMReply)
    assert summary["retries"] == {"HTTP 500": 2}


def test_500_forever_is_rejected_after_the_bounded_tries_keeping_the_body() -> None:
    with MockLLMServer(rules({"status": 500})) as server:
        outcomes, summary = run(config(server), [ask("hi")])
        assert stats(server)["chat_requests"] == FAST.max_retries + 1 == 3
    rejection = outcomes[0]
    assert isinstance(rejection, LLMRejection)
    assert rejection.reason == "HTTP 500 after 3 tries"
    assert "mock error 500" in rejection.raw_text
    assert summary["rejected"] == 1 and summary["completed"] == 0


def test_400_is_rejected_at_once_without_retry() -> None:
    with MockLLMServer(rules({"status": 400})) as server:
        outcomes, summary = run(config(server), [ask("hi")])
        assert stats(server)["chat_requests"] == 1
    assert isinstance(outcomes[0], LLMRejection) and outcomes[0].reason == "HTTP 400"
    assert summary["retries"] == {}


def test_malformed_body_is_retried_then_rejected_with_the_raw_text() -> None:
    with MockLLMServer(rules({"user_contains": "broken", "malformed": "invalid_json"})) as server:
        outcomes, summary = run(config(server), [ask("broken please"), ask("fine")])
        assert stats(server)["chat_requests"] == 3 + 1
    rejection, reply = outcomes
    assert isinstance(rejection, LLMRejection)
    assert rejection.reason == "malformed response (body is not valid JSON) after 3 tries"
    assert rejection.raw_text.startswith('{"id": "chatcmpl-broken", "choices": [{"message": {"content": "unfinished')
    assert isinstance(reply, LLMReply) and reply.completion.content == "echo: fine"
    assert summary["retries"] == {"malformed response (body is not valid JSON)": 2}


def test_a_body_without_choices_is_retried_and_the_next_answer_kept() -> None:
    with MockLLMServer(rules({"times": 1, "malformed": "missing_choices"})) as server:
        outcomes, summary = run(config(server), [ask("hi")])
        assert stats(server)["chat_requests"] == 2
    assert isinstance(outcomes[0], LLMReply)
    assert summary["retries"] == {"malformed response (no choices in the body)": 1}


# ------------------------------------------------------------------------------- parse failures
def test_unparseable_output_is_rejected_after_n_attempts_with_the_raw_text(tmp_path: Path) -> None:
    seeds: list[int] = []

    def not_json(body: dict[str, Any], call_index: int) -> Reply:
        seeds.append(body["seed"])
        return Reply(content="Sure! Here is the query: book a flight")

    with MockLLMServer(responder=not_json) as server:
        with RequestCache(tmp_path / "cache.db") as cache:
            outcomes, summary = run(config(server, seed=11), [ask("write a query")], cache=cache, parse=json_object)
            assert stats(server)["chat_requests"] == 3
            again, summary_again = run(config(server, seed=11), [ask("write a query")], cache=cache, parse=json_object)
            assert stats(server)["chat_requests"] == 6  # unusable answers are not replayed: asked again
    rejection = outcomes[0]
    assert isinstance(rejection, LLMRejection)
    assert rejection.attempts == 3
    assert rejection.raw_text == "Sure! Here is the query: book a flight"
    assert rejection.reason.startswith("unparseable output after 3 attempts: not JSON")
    assert seeds == [11, 12, 13] * 2  # each attempt is its own request, not a repeat of the same seeded one
    assert summary["retries"] == {"unparseable output": 2}
    assert summary["rejections"] == {"unparseable output after 3 attempts": 1}
    assert again == outcomes and summary_again["cache_hits"] == 0


def test_a_parse_failure_then_a_good_answer_gives_a_reply_at_attempt_two() -> None:
    answers = iter(["not json", json.dumps({"query": "Find hotels in Rome"})])
    with MockLLMServer(responder=lambda body, index: Reply(content=next(answers))) as server:
        outcomes, _ = run(config(server), [ask("write a query")], parse=json_object)
        assert stats(server)["chat_requests"] == 2
    reply = outcomes[0]
    assert isinstance(reply, LLMReply)
    assert reply.parsed == {"query": "Find hotels in Rome"} and reply.attempts == 2


# ------------------------------------------------------------------------------------- the cache
def test_a_second_run_with_the_cache_sends_zero_requests(tmp_path: Path) -> None:
    requests = [ask(f"question {n}") for n in range(5)]
    with MockLLMServer(latency_ms=20) as server, RequestCache(tmp_path / "cache.db") as cache:
        first, first_summary = run(config(server), requests, cache=cache)
        assert stats(server)["chat_requests"] == 5
        second, second_summary = run(config(server), requests, cache=cache)
        assert stats(server)["chat_requests"] == 5
    assert [o.completion.content for o in second] == [o.completion.content for o in first]
    assert [o.completion.content for o in first] == [f"echo: question {n}" for n in range(5)]
    assert all(o.cached for o in second) and not any(o.cached for o in first)
    assert first_summary["requests_sent"] == 5 and second_summary["requests_sent"] == 0
    assert second_summary["cache_hits"] == 5


def test_distinct_sample_indexes_are_distinct_requests(tmp_path: Path) -> None:
    seen: list[tuple[int, str]] = []

    def record(body: dict[str, Any], call_index: int) -> Reply:
        seen.append((body["seed"], body["messages"][0]["content"]))
        return Reply(content=f"variant seeded {body['seed']}")

    variants = [ask("rewrite: book a table", index) for index in range(3)]
    with MockLLMServer(responder=record) as server, RequestCache(tmp_path / "cache.db") as cache:
        first, _ = run(config(server, seed=5, temperature=0.8), variants, cache=cache)
        assert stats(server)["chat_requests"] == 3
        replay, _ = run(config(server, seed=5, temperature=0.8), variants, cache=cache)
        assert stats(server)["chat_requests"] == 3
        assert len(cache) == 3
    assert sorted(seen) == [(5, "rewrite: book a table"), (1005, "rewrite: book a table"),
                            (2005, "rewrite: book a table")]
    assert [o.completion.content for o in first] == ["variant seeded 5", "variant seeded 1005", "variant seeded 2005"]
    assert [o.completion.content for o in replay] == [o.completion.content for o in first]


def test_tool_calls_reach_the_caller(tmp_path: Path) -> None:
    with MockLLMServer(rules({"user_contains": "Paris", "tool_calls": [
            {"name": "get_weather", "arguments": {"city": "Paris"}}]})) as server:
        outcomes, _ = run(config(server), [ChatRequest([{"role": "user", "content": "Weather in Paris?"}], tools=TOOLS),
                                           ChatRequest([{"role": "user", "content": "Weather?"}], tools=TOOLS)])
    scripted, planned = (outcome.completion.tool_calls for outcome in outcomes)
    assert [(c.name, json.loads(c.arguments)) for c in scripted] == [("get_weather", {"city": "Paris"})]
    assert [(c.name, json.loads(c.arguments)) for c in planned] == [("get_weather", {"city": "<city>"})]


# ------------------------------------------------------------------------------------- concurrency
def test_in_flight_requests_never_exceed_the_configured_concurrency() -> None:
    lock, in_flight, peak = threading.Lock(), [0], [0]

    def slow(body: dict[str, Any], call_index: int) -> Reply:
        with lock:
            in_flight[0] += 1
            peak[0] = max(peak[0], in_flight[0])
        time.sleep(0.05)
        with lock:
            in_flight[0] -= 1
        return Reply(content="ok")

    with MockLLMServer(responder=slow) as server:
        outcomes, _ = run(config(server, concurrency=3), [ask(f"q{n}") for n in range(12)])
    assert len(outcomes) == 12 and all(isinstance(o, LLMReply) for o in outcomes)
    assert peak[0] == 3


# --------------------------------------------------------------------------------- user errors
def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_an_unreachable_endpoint_is_one_clear_line() -> None:
    port = _closed_port()
    with pytest.raises(UserError) as error:
        run(config(f"http://127.0.0.1:{port}/v1"), [ask("hi"), ask("ho")])
    assert str(error.value) == f"cannot reach the LLM endpoint at http://127.0.0.1:{port}/v1"


def test_a_refused_key_names_the_variable_never_the_value(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    with MockLLMServer(api_key="the-right-key") as server:
        with pytest.raises(UserError) as error:
            run(config(server, api_key_env="MY_LLM_KEY"), [ask("hi")], environ={"MY_LLM_KEY": FAKE_KEY})
        assert stats(server)["by_status"] == {"401": 1}  # not retried
    message = str(error.value)
    assert message == "the LLM endpoint refused the API key from $MY_LLM_KEY (HTTP 401)"
    assert "\n" not in message
    assert FAKE_KEY not in caplog.text and FAKE_KEY not in repr(error.value.__context__)


def test_the_right_key_is_accepted() -> None:
    with MockLLMServer(api_key=FAKE_KEY) as server:
        outcomes, _ = run(config(server), [ask("hi")])
    assert isinstance(outcomes[0], LLMReply)


def test_a_missing_key_for_a_remote_endpoint_names_the_variable() -> None:
    with pytest.raises(UserError, match=r"no API key: set \$OPENAI_API_KEY"):
        resolve_endpoint(LLMConfig(model="gpt-4o"), {})
    endpoint, key = resolve_endpoint(LLMConfig(model="m"), {"OPENAI_BASE_URL": "http://localhost:8000/v1"})
    assert endpoint.base_url == "http://localhost:8000/v1" and key == "no-key"  # local servers need none
    endpoint, _ = resolve_endpoint(LLMConfig(model="m", base_url="http://127.0.0.1:9/v1"),
                                   {"OPENAI_BASE_URL": "http://elsewhere/v1", "OPENAI_API_KEY": "k"})
    assert endpoint.base_url == "http://127.0.0.1:9/v1"  # pipelines.yaml wins over the environment


def test_the_key_never_reaches_anything_written(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    cache_path = tmp_path / "cache.db"
    requests = [ask("ok"), ask("broken"), ChatRequest([{"role": "user", "content": "plan"}], tools=TOOLS)]
    with MockLLMServer(rules({"times": 1, "status": 429, "retry_after": 0}, {"times": 1, "status": 500},
                             {"user_contains": "broken", "malformed": "invalid_json"}), api_key=FAKE_KEY) as server:
        async def go() -> list[str]:
            async with LLMClient(config(server), RequestCache(cache_path), environ={"OPENAI_API_KEY": FAKE_KEY},
                                 retry=FAST) as llm:
                outcomes = await llm.complete_all(requests, json_object)
                return [repr(outcomes), json.dumps(llm.summary()), json.dumps(llm.provenance()), repr(llm.endpoint)]

        written = asyncio.run(go())
    assert any("unparseable output" in text for text in written)  # the run did go through its error paths
    files = [path.read_bytes() for path in tmp_path.iterdir()]
    assert len(files) >= 2  # the database and its WAL
    for blob in files:
        assert FAKE_KEY.encode() not in blob
    for text in [*written, caplog.text]:
        assert FAKE_KEY not in text


# ------------------------------------------------------------------------------------- accounting
def test_tokens_and_cost_are_summed_and_cache_hits_cost_nothing(tmp_path: Path) -> None:
    prices = PricesConfig(input_per_million=2.0, output_per_million=8.0)
    usage = {"prompt_tokens": 100, "completion_tokens": 20}
    # billed=True: the server stands in for a paid endpoint (the mock itself is free, see below)
    with MockLLMServer(rules({"times": 1, "status": 500}, {"usage": usage}), billed=True) as server:
        with RequestCache(tmp_path / "cache.db") as cache:
            _, summary = run(config(server, prices=prices), [ask(f"q{n}") for n in range(3)], cache=cache)
            _, replayed = run(config(server, prices=prices), [ask(f"q{n}") for n in range(3)], cache=cache)
    assert summary["tokens"] == {"prompt": 300, "completion": 60, "cached_prompt": 0, "cached_completion": 0}
    assert summary["cost_usd"] == pytest.approx((300 * 2.0 + 60 * 8.0) / 1e6)
    assert summary["requests_sent"] == 4 and summary["answers_received"] == 3  # the 500 costs a request, no tokens
    assert replayed["cost_usd"] == 0 and replayed["saved_by_cache_usd"] == pytest.approx(0.00108)
    assert replayed["tokens"]["cached_prompt"] == 300


def test_a_run_against_the_local_mock_server_is_not_billed() -> None:
    prices = PricesConfig(input_per_million=2.0, output_per_million=8.0)
    with MockLLMServer(rules({"usage": {"prompt_tokens": 100, "completion_tokens": 20}})) as server:
        _, summary = run(config(server, prices=prices), [ask(f"q{n}") for n in range(3)])
    assert summary["tokens"]["prompt"] == 300 and summary["cost_usd"] == 0
    assert summary["unbilled_answers"] == 3 and "mock server" in summary["unbilled_because"]


def test_estimated_usage_is_reported_by_the_server_and_summed() -> None:
    with MockLLMServer() as server:
        outcomes, summary = run(config(server), [ask("a" * 40), ask("b" * 80)])
    usages = [o.completion.body["usage"] for o in outcomes]
    assert summary["tokens"]["prompt"] == sum(u["prompt_tokens"] for u in usages)
    assert summary["tokens"]["completion"] == sum(u["completion_tokens"] for u in usages)
    assert usages[1]["completion_tokens"] > usages[0]["completion_tokens"]  # "echo: " + 80 chars vs 40


# ----------------------------------------------------------------------------------- pure parts
def test_retry_after_headers() -> None:
    assert parse_retry_after({"retry-after": "2"}) == 2.0
    assert parse_retry_after({"retry-after": "0.5"}) == 0.5
    assert parse_retry_after({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    assert parse_retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:10 GMT"}, now=1445412480.0) == 10.0
    assert parse_retry_after({}) is None and parse_retry_after({"retry-after": "soon"}) is None


def test_backoff_grows_exponentially_within_jitter_and_cap() -> None:
    import random

    policy, rng = RetryPolicy(base_delay_s=1.0, max_delay_s=8.0), random.Random(0)
    for retry_number, full in [(1, 1.0), (2, 2.0), (3, 4.0), (4, 8.0), (6, 8.0)]:
        wait = policy.backoff_s(retry_number, rng)
        assert full / 2 <= wait <= full
    assert 3.0 <= policy.retry_after_wait_s(3.0, rng) <= 3.3


# ------------------------------------------------------------------ the SDK's HTTP client, retries
COMPLETION = json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": "m",
                         "choices": [{"index": 0, "message": {"role": "assistant", "content": "chunked hello"},
                                      "finish_reason": "stop"}],
                         "usage": {"prompt_tokens": 3, "completion_tokens": 2}}).encode()


class _UnusualServer:
    """A server answering the way other OpenAI-compatible servers may: chunked bodies, closing the
    connection after each answer (stale keep-alive connections on the client side)."""

    def __init__(self, mode: str) -> None:
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        connections: list[int] = []  # client ports, in request order

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers["Content-Length"]))
                connections.append(self.client_address[1])  # the client port: one per connection
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                if mode == "chunked":
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    for start in range(0, len(COMPLETION), 50):
                        piece = COMPLETION[start:start + 50]
                        self.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
                    self.wfile.write(b"0\r\n\r\n")
                else:  # "drop": says keep-alive, then closes, as an idle timeout would
                    self.send_header("Content-Length", str(len(COMPLETION)))
                    self.end_headers()
                    self.wfile.write(COMPLETION)
                    self.close_connection = True

        self.connections = connections
        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.http.daemon_threads = True
        threading.Thread(target=self.http.serve_forever, args=(0.05,), daemon=True).start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.http.server_address[1]}/v1"

    def close(self) -> None:
        self.http.shutdown()
        self.http.server_close()


@pytest.mark.parametrize("mode", ["chunked", "drop"])
def test_the_http_client_reads_chunked_bodies_and_survives_closed_connections(mode: str) -> None:
    server = _UnusualServer(mode)
    try:
        outcomes, summary = run(config(server.base_url, concurrency=2), [ask(f"q{n}") for n in range(6)])
    finally:
        server.close()
    assert [o.completion.content for o in outcomes] == ["chunked hello"] * 6
    assert summary["tokens"]["prompt"] == 18  # each answer counted once
    # A connection the server closed while idle may fail one send, which is retried, never lost.
    assert set(summary["retries"]) <= {"connection error"}
    if mode == "chunked":
        assert summary["retries"] == {}
    if mode == "drop":
        assert len(set(server.connections)) == 6  # a new connection each time, no request lost


def test_a_slow_endpoint_times_out_is_retried_then_rejected() -> None:
    with MockLLMServer(latency_ms=600) as server:
        async def go() -> tuple[list, dict]:
            async with LLMClient(config(server), environ={}, retry=FAST, timeout_s=0.2) as llm:
                return await llm.complete_all([ask("hi")]), llm.summary()

        outcomes, summary = asyncio.run(go())
    assert isinstance(outcomes[0], LLMRejection) and outcomes[0].reason == "timeout after 3 tries"
    assert summary["retries"] == {"timeout": 2}


def test_should_retry_takes_what_another_try_may_fix_and_nothing_else() -> None:
    from fcbench.llm.client import _NotRetryable, _Retryable, should_retry

    assert should_retry(_Retryable("HTTP 429", 1.0)) and should_retry(_Retryable("timeout"))
    assert not should_retry(_NotRetryable("HTTP 400", "")) and not should_retry(ValueError("bug"))


def test_the_connection_pool_is_sized_to_the_requests_in_flight() -> None:
    """The SDK's default pool keeps 20 idle connections; 50 in flight would reconnect 30 each time."""
    with MockLLMServer() as server:
        async def go() -> tuple[list, dict]:
            async with LLMClient(config(server, concurrency=30), environ={}) as llm:
                first = await llm.complete_all([ask(f"a{n}") for n in range(60)])
                return first, llm.summary()

        outcomes, summary = asyncio.run(go())
        stats = server.stats.as_dict()
    assert len(outcomes) == 60 and all(isinstance(o, LLMReply) for o in outcomes)
    assert summary["retries"] == {} and stats["chat_requests"] == 60
    assert stats["connections"] <= 30  # the second 30 requests reuse the first 30 connections


def test_display_url_drops_credentials_and_query_strings():
    from fcbench.llm.client import display_url

    assert display_url("https://user:s3cret@api.example.com:8443/v1?api-key=s3cret#x") == "https://api.example.com:8443/v1"
    assert display_url("http://127.0.0.1:8000/v1") == "http://127.0.0.1:8000/v1"


def test_unusable_answers_are_not_replayed_from_the_cache_on_a_rerun(tmp_path: Path) -> None:
    """A re-run must be able to fix what the model got wrong: answers that never parsed are
    forgotten, so the re-run asks again (and a now-usable answer is accepted)."""
    script = rules({"user_contains": "query", "times": 3, "content": "not json"},
                   {"user_contains": "query", "content": '{"query": "hotels in Oslo"}'})
    with MockLLMServer(script) as server, RequestCache(tmp_path / "cache.db") as cache:
        first, _ = run(config(server), [ask("write a query")], cache=cache, parse=json_object)
        assert isinstance(first[0], LLMRejection) and first[0].raw_text == "not json"
        assert len(cache) == 0  # the three unusable answers are gone
        second, summary = run(config(server), [ask("write a query")], cache=cache, parse=json_object)
    assert isinstance(second[0], LLMReply) and second[0].parsed == {"query": "hotels in Oslo"}
    assert summary["cache_hits"] == 0 and summary["answers_received"] == 1
