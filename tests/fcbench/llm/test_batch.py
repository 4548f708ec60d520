"""The Batch API mode of the LLM client, over real HTTP against the mock server's /v1/files and
/v1/batches: answers into the same cache, faults retried without duplicates, a kill resumed."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import pytest

from fcbench.config import BatchConfig, LLMConfig, PricesConfig
from fcbench.llm.batch import batch_line, split_to_limits
from fcbench.llm.cache import RequestCache
from fcbench.llm.client import ChatRequest, Completion, LLMClient, LLMRejection, LLMReply, ParseError, RetryPolicy
from fcbench.llm.mock_server import MockLLMServer, rule_from_dict

FAST_POLL = {"poll_interval_s": 0.05, "max_poll_interval_s": 0.2, "gather_window_s": 0.02}
RETRY = RetryPolicy(max_retries=2, base_delay_s=0.01, max_delay_s=0.05, parse_attempts=2)


def batch_config(server: MockLLMServer, **batch: Any) -> LLMConfig:
    prices = batch.pop("prices", PricesConfig())
    return LLMConfig(model="mock-model", base_url=server.base_url, mode="batch", prices=prices,
                     batch=BatchConfig(**{**FAST_POLL, **batch}))


def asks(count: int) -> list[ChatRequest]:
    return [ChatRequest(messages=[{"role": "user", "content": f"question {n}"}], sample_index=n) for n in range(count)]


def run(llm_config: LLMConfig, requests: list[ChatRequest], cache: RequestCache, parse=None) -> tuple[list, dict]:
    async def go() -> tuple[list, dict]:
        async with LLMClient(llm_config, cache, environ={}, retry=RETRY) as llm:
            return await llm.complete_all(requests, parse), llm.summary()

    return asyncio.run(go())


def test_split_to_limits_keeps_both_limits_and_the_order() -> None:
    lines = [(f"k{n}", batch_line(f"k{n}", {"messages": [{"role": "user", "content": "x" * n}]})) for n in range(10)]
    by_count = split_to_limits(lines, max_requests=4, max_bytes=10**9)
    assert [len(chunk) for chunk in by_count] == [4, 4, 2]
    limit = sum(len(line) for _, line in lines[:3])
    by_bytes = split_to_limits(lines, max_requests=100, max_bytes=limit)
    assert all(sum(len(line) for _, line in chunk) <= limit for chunk in by_bytes)
    assert [key for chunk in by_bytes for key, _ in chunk] == [key for key, _ in lines]


def test_every_request_is_answered_by_one_batch_into_the_same_cache(tmp_path: Path) -> None:
    prices = PricesConfig(input_per_million=2.0, output_per_million=8.0)
    usage = {"prompt_tokens": 100, "completion_tokens": 20}
    with MockLLMServer([rule_from_dict({"usage": usage, "content": "ok"}, "test")], billed=True) as server:
        with RequestCache(tmp_path / "cache.db") as cache:
            outcomes, summary = run(batch_config(server, prices=prices), asks(20), cache)
            assert len(cache) == 20
            # the same requests online now replay from that cache: nothing is sent again
            online = LLMConfig(model="mock-model", base_url=server.base_url, prices=prices)
            replayed, replay_summary = run(online, asks(20), cache)
        served = server.stats.as_dict() | server.batches.stats()
    assert all(isinstance(o, LLMReply) and o.completion.content == "ok" for o in outcomes)
    assert served["chat_requests"] == 0 and served["batches"] == 1 and served["batch_lines"] == 20
    assert summary["mode"] == "batch" and summary["batches_submitted"] == 1
    assert summary["cost_usd"] == pytest.approx(0.5 * (20 * 100 * 2.0 + 20 * 20 * 8.0) / 1e6)  # batch price
    assert replay_summary["cache_hits"] == 20 and replay_summary["requests_sent"] == 0
    assert [o.completion.content for o in replayed] == ["ok"] * 20


def test_batches_are_split_to_the_provider_limits(tmp_path: Path) -> None:
    with MockLLMServer() as server:
        with RequestCache(tmp_path / "cache.db") as cache:
            outcomes, summary = run(batch_config(server, max_requests_per_file=7), asks(20), cache)
        served = server.batches.stats()
    assert all(isinstance(o, LLMReply) for o in outcomes)
    assert served == {"batches": 3, "batch_lines": 20, "batch_lines_repeated": 0}
    assert summary["batches_submitted"] == 3


@pytest.mark.parametrize(("fault", "resent"), [("fail", 20), ("expire", 10), ("drop:3", 3), ("error:2", 2)])
def test_what_a_faulty_batch_did_not_answer_is_sent_again_and_nothing_twice(tmp_path: Path, fault: str,
                                                                            resent: int) -> None:
    with MockLLMServer(batch_faults=[fault]) as server:
        with RequestCache(tmp_path / "cache.db") as cache:
            outcomes, summary = run(batch_config(server), asks(20), cache)
            assert len(cache) == 20
        served = server.batches.stats()
    assert all(isinstance(o, LLMReply) for o in outcomes)
    assert served["batches"] == 2  # the faulty one, then one with exactly what it did not answer
    assert served["batch_lines"] == 20 + resent and served["batch_lines_repeated"] == resent
    assert sum(summary["retries"].values()) == resent


def test_a_request_the_endpoint_refuses_is_rejected_not_sent_again(tmp_path: Path) -> None:
    refuse = rule_from_dict({"user_contains": "question 3", "status": 400}, "test")
    with MockLLMServer([refuse]) as server:
        with RequestCache(tmp_path / "cache.db") as cache:
            outcomes, summary = run(batch_config(server), asks(5), cache)
        served = server.batches.stats()
    assert isinstance(outcomes[3], LLMRejection) and outcomes[3].reason == "HTTP 400"
    assert all(isinstance(o, LLMReply) for n, o in enumerate(outcomes) if n != 3)
    assert served["batches"] == 1 and served["batch_lines_repeated"] == 0


def test_an_unparseable_answer_is_asked_again_in_the_next_batch(tmp_path: Path) -> None:
    def parse(completion: Completion) -> Any:
        value = json.loads(completion.content or "null") if (completion.content or "").startswith("{") else None
        if not isinstance(value, dict):
            raise ParseError("not a JSON object")
        return value

    script = [rule_from_dict({"user_contains": "question 1", "times": 1, "content": "sorry"}, "test"),
              rule_from_dict({"content": "{\"ok\": true}"}, "test")]
    with MockLLMServer(script) as server:
        with RequestCache(tmp_path / "cache.db") as cache:
            outcomes, _ = run(batch_config(server), asks(3), cache, parse=parse)
        served = server.batches.stats()
    assert all(isinstance(o, LLMReply) and o.parsed == {"ok": True} for o in outcomes)
    assert outcomes[1].attempts == 2 and served == {"batches": 2, "batch_lines": 4, "batch_lines_repeated": 0}


_CLIENT = textwrap.dedent("""
    import asyncio, sys
    from fcbench.config import BatchConfig, LLMConfig
    from fcbench.llm.cache import RequestCache
    from fcbench.llm.client import ChatRequest, LLMClient

    url, cache_path = sys.argv[1], sys.argv[2]
    config = LLMConfig(model="mock-model", base_url=url, mode="batch",
                       batch=BatchConfig(poll_interval_s=0.05, max_poll_interval_s=0.2, gather_window_s=0.02))
    requests = [ChatRequest(messages=[{"role": "user", "content": f"question {n}"}], sample_index=n) for n in range(12)]

    async def go():
        async with LLMClient(config, RequestCache(cache_path), environ={}) as llm:
            await llm.complete_all(requests)

    asyncio.run(go())
""")


def test_a_run_killed_while_its_batch_runs_resumes_that_batch_and_submits_nothing_again(tmp_path: Path) -> None:
    cache_path = tmp_path / "cache.db"
    # the batch stays "in progress" until the child is killed (no timer to race on a loaded machine),
    # then completes at the re-run's first poll
    with MockLLMServer(batch_processing_s=3600) as server:
        child = subprocess.Popen([sys.executable, "-c", _CLIENT, server.base_url, str(cache_path)],
                                 env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3])})
        deadline = time.monotonic() + 60
        recorded = 0
        while time.monotonic() < deadline and not recorded:
            time.sleep(0.05)
            if cache_path.exists():
                with sqlite3.connect(cache_path) as db:
                    try:
                        recorded = db.execute("SELECT COUNT(*) FROM llm_batches").fetchone()[0]
                    except sqlite3.OperationalError:
                        recorded = 0
        child.send_signal(signal.SIGKILL)
        child.wait()
        assert recorded == 1 and server.batches.stats()["batches"] == 1  # killed while its batch ran
        server.batches.processing_s = 0.0
        with RequestCache(cache_path) as cache:
            assert len(cache) == 0  # nothing was answered before the kill
            outcomes, summary = run(batch_config(server), asks(12), cache)
            assert len(cache) == 12
        served = server.batches.stats()
    assert all(isinstance(o, LLMReply) for o in outcomes)
    assert summary["batches_resumed"] == 1  # the killed run's batch was waited for, not sent again
    # On a busy machine the killed run may have gathered only some requests into its batch: the
    # re-run then submits the others, once. Either way no request is ever sent twice.
    assert served["batches"] == 1 + summary["batches_submitted"]
    assert served["batch_lines"] == 12 and served["batch_lines_repeated"] == 0
