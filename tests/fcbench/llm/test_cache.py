"""The SQLite request cache: the key covers what shapes an answer, rows persist and are written as
each answer arrives, and a run killed midway re-sends only what had no answer."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from fcbench.config import LLMConfig
from fcbench.llm.cache import RequestCache, cache_key, canonical_json
from fcbench.llm.client import ChatRequest, LLMClient
from held_responder import HoldAfter
from fcbench.llm.mock_server import MockLLMServer

REPO = Path(__file__).resolve().parents[3]
BASE = ChatRequest(messages=[{"role": "user", "content": "Plan a trip to Kyoto"}],
                   tools=[{"type": "function", "function": {"name": "search", "parameters": {"type": "object"}}}],
                   sample_index=0, prompt_hash="sha256:aaa")


def served(server: MockLLMServer) -> int:
    with urllib.request.urlopen(f"http://127.0.0.1:{server.port}/_stats") as response:
        return json.load(response)["chat_requests"]


def test_rows_persist_across_reopening_in_wal_mode(tmp_path: Path) -> None:
    path = tmp_path / "nested" / "llm.db"
    with RequestCache(path) as cache:
        cache.put("k1", {"model": "m"}, {"choices": [{"message": {"content": "ünïcode"}}]})
        cache.put("k1", {"model": "m"}, {"choices": [{"message": {"content": "replaced"}}]})
        assert len(cache) == 1
    with RequestCache(path) as reopened:
        assert reopened.get("k1") == {"choices": [{"message": {"content": "replaced"}}]}
        assert reopened.get("missing") is None
        assert "k1" in reopened and "k2" not in reopened
    with sqlite3.connect(path) as raw:
        assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert json.loads(raw.execute("SELECT request FROM responses").fetchone()[0]) == {"model": "m"}


def test_the_key_ignores_key_order_but_not_values() -> None:
    assert cache_key({"a": 1, "b": [1, {"c": 2, "d": 3}]}) == cache_key({"b": [1, {"d": 3, "c": 2}], "a": 1})
    assert cache_key({"a": 1}) != cache_key({"a": 1.5})
    assert canonical_json({"b": "é", "a": None}) == '{"a":null,"b":"é"}'


@pytest.mark.parametrize("change", [
    {"model": "other-model"}, {"temperature": 0.7}, {"seed": 42}, {"max_tokens": 64},
    {"messages": [{"role": "user", "content": "Plan a trip to Osaka"}]}, {"tools": None},
    {"tool_choice": "required"}, {"prompt_hash": "sha256:bbb"}, {"sample_index": 1}, {"attempt": 1},
])
def test_everything_that_shapes_the_answer_changes_the_key(change: dict) -> None:
    base_config = LLMConfig(model="mock-model", base_url="http://127.0.0.1:9/v1")
    config_change = {k: v for k, v in change.items() if k in ("model", "temperature", "seed", "max_tokens")}
    request_change = {k: v for k, v in change.items() if k in ("messages", "tools", "tool_choice", "prompt_hash",
                                                                 "sample_index")}
    baseline = LLMClient(base_config, environ={}).cache_fields(BASE, attempt=0)
    changed_client = LLMClient(base_config.model_copy(update=config_change), environ={})
    changed = changed_client.cache_fields(ChatRequest(**{**BASE.__dict__, **request_change}),
                                          attempt=change.get("attempt", 0))
    assert cache_key(changed) != cache_key(baseline)


def test_each_answer_is_in_the_cache_as_soon_as_it_arrives(tmp_path: Path) -> None:
    path = tmp_path / "llm.db"
    rows_seen_by_another_reader: list[int] = []

    def on_outcome(index: int, outcome: object) -> None:
        with sqlite3.connect(path) as reader:  # a separate connection: only committed rows are visible
            rows_seen_by_another_reader.append(reader.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    with MockLLMServer(latency_ms=30) as server, RequestCache(path) as cache:
        async def go() -> None:
            async with LLMClient(LLMConfig(model="m", base_url=server.base_url, concurrency=1), cache,
                                 environ={}) as llm:
                await llm.run([ChatRequest([{"role": "user", "content": f"q{n}"}]) for n in range(4)], on_outcome)

        asyncio.run(go())
    assert rows_seen_by_another_reader == [1, 2, 3, 4]


CLIENT = """
import asyncio, sys
from fcbench.config import LLMConfig
from fcbench.llm.cache import RequestCache
from fcbench.llm.client import ChatRequest, LLMClient

base_url, cache_path, count = sys.argv[1], sys.argv[2], int(sys.argv[3])

async def main():
    async with LLMClient(LLMConfig(model="m", base_url=base_url, concurrency=4), RequestCache(cache_path), environ={}) as llm:
        await llm.run((ChatRequest([{"role": "user", "content": f"q{n}"}], sample_index=n) for n in range(count)),
                      lambda index, outcome: None)
        print(llm.summary()["requests_sent"])

asyncio.run(main())
"""


def test_a_run_killed_midway_resends_only_the_unanswered_requests(tmp_path: Path) -> None:
    path, total = tmp_path / "llm.db", 80
    environment = {**os.environ, "PYTHONPATH": str(REPO)}
    # the server answers twelve requests and holds the rest: the kill lands mid-run however slow
    # the machine, with exactly the twelve answers stored
    held = HoldAfter(lambda body, call_index: None, answered=12)
    with MockLLMServer(responder=held) as server:
        client = subprocess.Popen([sys.executable, "-c", CLIENT, server.base_url, str(path), str(total)],
                                  env=environment, stdout=subprocess.PIPE, text=True)
        assert held.wait_until_held(alive=lambda: client.poll() is None)
        deadline = time.monotonic() + 60
        answered = 0
        while answered < 12 and time.monotonic() < deadline:
            time.sleep(0.02)
            with sqlite3.connect(path) as reader:
                try:
                    answered = reader.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
                except sqlite3.OperationalError:  # the table is not created yet
                    answered = 0
        client.send_signal(signal.SIGKILL)
        client.wait(timeout=60)
        client.stdout.close()
        held.release()
    with RequestCache(path) as cache:
        kept = len(cache)
    assert kept == 12
    with MockLLMServer() as server:  # a fresh server counts the re-run's requests alone
        rerun = subprocess.run([sys.executable, "-c", CLIENT, server.base_url, str(path), str(total)],
                               env=environment, capture_output=True, text=True, timeout=120)
        assert rerun.returncode == 0, rerun.stderr
        resent = served(server)
    assert resent == total - kept == int(rerun.stdout.strip())
    with RequestCache(path) as cache:
        assert len(cache) == total
