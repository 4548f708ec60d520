"""The LLM client's Batch API mode vs online calls, on the same requests, against the local mock
server (over real HTTP, one run each, fresh caches):

- online: `--requests` chat requests at concurrency 50, each held `--latency-ms` by the server;
- batch: the same requests through `/v1/files` + `/v1/batches` (gathered, uploaded, polled, output
  downloaded into the cache). The mock answers a batch as soon as it is polled, so this measures
  fcbench's own overhead on the batch path (building, uploading, polling, reading back), not a
  provider's queue (hours at most with OpenAI's 24 h window).

Both runs are priced with the same per-token prices (the mock plays a paid endpoint here); the
batch run is priced at `batch_discount` (0.5). The last line is the batch/online wall-time ratio
with the cost ratio beside it. Run from the repository root:
    .venv/bin/python bench/batch_api.py [--requests 2000] [--latency-ms 200]
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from fcbench.config import BatchConfig, LLMConfig, PricesConfig  # noqa: E402
from fcbench.llm.cache import RequestCache  # noqa: E402
from fcbench.llm.client import ChatRequest, LLMClient, LLMReply  # noqa: E402
from fcbench.llm.mock_server import MockLLMServer  # noqa: E402

PRICES = PricesConfig(input_per_million=0.15, output_per_million=0.60)


def _requests(count: int) -> list[ChatRequest]:
    return [ChatRequest(messages=[{"role": "user", "content": f"Write a hotel search query number {n}."}],
                        sample_index=n) for n in range(count)]


def _run(config: LLMConfig, count: int, cache_path: Path) -> tuple[float, dict[str, Any], int]:
    async def go() -> tuple[list, dict[str, Any]]:
        with RequestCache(cache_path) as cache:
            async with LLMClient(config, cache, environ={}) as llm:
                return await llm.complete_all(_requests(count)), llm.summary()

    started = time.perf_counter()
    outcomes, summary = asyncio.run(go())
    return time.perf_counter() - started, summary, sum(isinstance(o, LLMReply) for o in outcomes)


def measure(n_requests: int = 2000, latency_ms: float = 200.0) -> dict[str, Any]:
    """Wall time and cost of the same requests online and through the Batch API."""
    with MockLLMServer(latency_ms=latency_ms, billed=True) as server, tempfile.TemporaryDirectory() as work:
        online = LLMConfig(model="mock-model", base_url=server.base_url, concurrency=50, prices=PRICES)
        batch = online.model_copy(update={"mode": "batch",
                                          "batch": BatchConfig(poll_interval_s=0.2, max_poll_interval_s=1.0)})
        online_s, online_summary, online_ok = _run(online, n_requests, Path(work) / "online.db")
        batch_s, batch_summary, batch_ok = _run(batch, n_requests, Path(work) / "batch.db")
        served = server.batches.stats()
    return {
        "requests": n_requests,
        "online": {"seconds": round(online_s, 2), "answered": online_ok, "cost_usd": online_summary["cost_usd"]},
        "batch": {"seconds": round(batch_s, 2), "answered": batch_ok, "cost_usd": batch_summary["cost_usd"],
                  "batches": served["batches"], "lines_sent_twice": served["batch_lines_repeated"]},
        "wall_ratio": round(batch_s / online_s, 3),
        "cost_ratio": round(batch_summary["cost_usd"] / online_summary["cost_usd"], 3),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--latency-ms", type=float, default=200.0)
    args = parser.parse_args()
    result = measure(args.requests, args.latency_ms)
    online, batch = result["online"], result["batch"]
    print(f"online: {online['answered']}/{result['requests']} answered in {online['seconds']} s, "
          f"cost ${online['cost_usd']:.6f}")
    print(f"batch:  {batch['answered']}/{result['requests']} answered in {batch['seconds']} s "
          f"({batch['batches']} batch, {batch['lines_sent_twice']} lines sent twice), cost ${batch['cost_usd']:.6f}")
    print(f"batch/online wall-time ratio: {result['wall_ratio']} (cost ratio {result['cost_ratio']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
