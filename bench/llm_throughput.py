"""Throughput, memory and kill-resume of the LLM client (`fcbench.llm.client.LLMClient`) against the local
OpenAI-compatible server (`fcbench.llm.mock_server`, run as its own process on 127.0.0.1).

1. Throughput: --requests chat requests (default 2,000), each held --latency-ms by the server
   (default 200 ms), with --concurrency C (default 50), through the openai SDK with the SQLite
   cache on. The ideal rate is C / latency; the client should reach >= 90% of it.
2. Memory: the client's RSS at 25/50/75/100% of that run (requests are pulled lazily by C workers
   and each answer goes to the cache, so RSS should not grow with the run).
3. Kill and resume: a client subprocess runs the same requests against a fresh cache and is killed
   with SIGKILL after a random delay; a re-run must send exactly the requests that have no cached
   answer (counted by the server's /_stats).

The throughput run is repeated --repeat times (default 3, each with a fresh cache) because other
work on the machine adds noise; the LAST line printed is the best achieved / ideal ratio. Run
(from the repository root):
    .venv/bin/python bench/llm_throughput.py [--requests 2000] [--concurrency 50] [--latency-ms 200] [--repeat 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import re
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from fcbench.config import LLMConfig
from fcbench.llm.cache import RequestCache
from fcbench.llm.client import ChatRequest, LLMClient, LLMReply

REPO = Path(__file__).resolve().parents[1]


def rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def requests(count: int):
    """Lazily made, like a stage streaming its input: memory must not depend on `count`."""
    tools = [{"type": "function", "function": {"name": "search_hotels", "description": "Hotels in a city.",
                                               "parameters": {"type": "object", "properties": {
                                                   "city": {"type": "string"}, "nights": {"type": "integer"}},
                                                   "required": ["city", "nights"]}}}]
    for index in range(count):
        yield ChatRequest(messages=[{"role": "user", "content": f"Find a hotel for request {index}"}],
                          tools=tools, sample_index=index)


def start_server(latency_ms: float) -> tuple[subprocess.Popen[str], str]:
    server = subprocess.Popen([sys.executable, "-m", "fcbench.llm.mock_server", "--port", "0",
                               "--latency-ms", str(latency_ms)], cwd=REPO, stdout=subprocess.PIPE, text=True)
    assert server.stdout is not None
    match = re.search(r"(http://127\.0\.0\.1:\d+/v1)", server.stdout.readline())
    if not match:
        server.kill()
        raise SystemExit("the mock server did not start")
    return server, match.group(1)


def served(base_url: str) -> int:
    with urllib.request.urlopen(base_url.removesuffix("/v1") + "/_stats") as response:
        return int(json.load(response)["chat_requests"])


def client_config(base_url: str, concurrency: int) -> LLMConfig:
    return LLMConfig(model="mock-model", base_url=base_url, concurrency=concurrency, max_retries=3)


async def run_client(base_url: str, cache_path: Path, count: int, concurrency: int,
                     checkpoints: dict[int, float] | None = None) -> dict:
    """All requests; with `checkpoints` ({answers done: RSS}), RSS is sampled at those counts."""
    done, replies = 0, 0

    def on_outcome(index: int, outcome: object) -> None:
        nonlocal done, replies
        done += 1
        replies += isinstance(outcome, LLMReply)
        if checkpoints is not None and done in checkpoints:
            checkpoints[done] = rss_mib()

    with RequestCache(cache_path) as cache:
        async with LLMClient(client_config(base_url, concurrency), cache, environ={}) as llm:
            await llm.run(requests(count), on_outcome)
            return {**llm.summary(), "replies": replies}


def throughput(base_url: str, count: int, concurrency: int, latency_ms: float, cache_path: Path,
               checkpoints: dict[int, float] | None = None) -> float:
    """One timed run with a fresh cache; returns achieved / ideal and prints the line."""
    started = time.perf_counter()
    summary = asyncio.run(run_client(base_url, cache_path, count, concurrency, checkpoints))
    elapsed = time.perf_counter() - started
    ideal = concurrency / (latency_ms / 1000)
    achieved = count / elapsed
    print(f"throughput: {count} requests, concurrency {concurrency}, {latency_ms:g} ms each: "
          f"{elapsed:.2f} s, {achieved:.1f} req/s achieved vs {ideal:.1f} req/s ideal = {achieved / ideal:.3f} "
          f"({summary['replies']} replies, {summary['requests_sent']} sent, retries: {summary['retries'] or 'none'})")
    return achieved / ideal


def memory_line(before: float, checkpoints: dict[int, float]) -> str:
    marks = sorted(checkpoints)
    return (f"memory (client RSS): {before:.1f} MiB before; "
            + ", ".join(f"{100 * (i + 1) // len(marks)}%: {checkpoints[mark]:.1f} MiB" for i, mark in enumerate(marks)))


def kill_and_resume(base_url: str, count: int, concurrency: int, latency_ms: float, work: Path,
                    rng: random.Random) -> None:
    cache_path = work / "resume.db"
    command = [sys.executable, str(Path(__file__).resolve()), "--client", base_url, "--cache", str(cache_path),
               "--requests", str(count), "--concurrency", str(concurrency)]
    baseline = served(base_url)
    client = subprocess.Popen(command, cwd=REPO, stdout=subprocess.DEVNULL)
    while served(base_url) == baseline and client.poll() is None:  # the delay counts from the first request
        time.sleep(0.01)
    full_run_s = count / concurrency * latency_ms / 1000
    delay = rng.uniform(0.1 * full_run_s, 0.9 * full_run_s)
    time.sleep(delay)
    client.send_signal(signal.SIGKILL)
    client.wait()
    time.sleep(0.5)  # requests the killed client had already written may still be arriving
    with sqlite3.connect(cache_path) as reader:
        answered = reader.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
    sent_before_kill = served(base_url) - baseline
    subprocess.run(command, cwd=REPO, check=True, stdout=subprocess.DEVNULL)
    resent = served(base_url) - baseline - sent_before_kill
    with sqlite3.connect(cache_path) as reader:
        final_rows = reader.execute("SELECT COUNT(*) FROM responses").fetchone()[0]
    verdict = "OK" if resent == count - answered and final_rows == count else "MISMATCH"
    print(f"kill/resume: SIGKILL {delay:.2f} s after the first request; the killed run had sent {sent_before_kill} "
          f"requests and cached {answered} answers; the re-run sent {resent} (expected {count} - {answered} = "
          f"{count - answered}); cache now {final_rows} rows: {verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--latency-ms", type=float, default=200.0)
    parser.add_argument("--repeat", type=int, default=3, help="timed runs; the best is the last line (other "
                        "work on the machine adds noise)")
    parser.add_argument("--seed", type=int, default=None, help="for the kill delay (default: random)")
    parser.add_argument("--client", metavar="BASE_URL", help=argparse.SUPPRESS)  # the subprocess that gets killed
    parser.add_argument("--cache", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.client:
        asyncio.run(run_client(args.client, args.cache, args.requests, args.concurrency))
        return
    server, base_url = start_server(args.latency_ms)
    try:
        with tempfile.TemporaryDirectory(prefix="llm-bench-") as work:
            checkpoints = {args.requests * quarter // 4: 0.0 for quarter in (1, 2, 3, 4)}
            before = rss_mib()
            ratios = [throughput(base_url, args.requests, args.concurrency, args.latency_ms,
                                 Path(work) / f"throughput-{run}.db", checkpoints if run == 0 else None)
                      for run in range(args.repeat)]
            print(memory_line(before, checkpoints) + " (first run)")
            kill_and_resume(base_url, args.requests, args.concurrency, args.latency_ms, Path(work),
                            random.Random(args.seed))
    finally:
        server.terminate()
        server.wait(timeout=10)
    print(f"ratio achieved/ideal (best of {args.repeat}): {max(ratios):.3f}")


if __name__ == "__main__":
    main()
