"""The http environment against Prism vs the same calls sent with a bare httpx client, in one run.

Prism (`prism mock`, fcbench/environments/install_prism.sh) serves three Amadeus descriptions, one process each
on free 127.0.0.1 ports. The same list of distinct GET calls is sent (a) through HttpEnvironment
in record mode (request building from the description's locations, per-host limit, retries armed,
size cap, JSON decoding, the recording journal) and (b) as the same prepared requests with a
bare `httpx.Client`, both from 8 threads. Rounds alternate and each side keeps its best round (the
machine is shared). Then: replay of the recorded calls from the store (RecordedEnvironment), and
the import of all 40 descriptions.

  .venv/bin/python bench/http_env.py [--calls 600] [--rounds 3]

The last line is the ratio http-environment throughput / bare-client throughput (goal >= 0.9).
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from fcbench.catalog.openapi import import_openapi  # noqa: E402
from fcbench.environments.http_env import HttpEnvironment, build_request  # noqa: E402
from fcbench.environments.recorded import RecordedEnvironment, load_store_and_journal  # noqa: E402
from fcbench.environments.prism import start_prism  # noqa: E402

AMADEUS = REPO.parent / "shared" / "external" / "amadeus"
FILES = [AMADEUS / f"{stem}_swagger_specification.json" for stem in
         ("HotelList_v1", "ToursandActivities_v1", "AirportCitySearch_v1")]
THREADS = 8


def planned_calls(count: int, salt: int) -> list[tuple[str, dict]]:
    """Distinct calls (so record mode sends every one) spread over the three servers."""
    calls = []
    for index in range(count):
        n = salt * 100000 + index
        kind = index % 3
        if kind == 0:
            calls.append(("get-shopping-hotels-by-city", {"cityCode": "PAR", "radius": 1 + n % 300, "radiusUnit": "KM",
                                                          "ratings": [str(1 + n % 5)], "hotelSource": "ALL"}))
        elif kind == 1:
            calls.append(("ListActivities", {"latitude": 41.0 + (n % 997) / 1000, "longitude": 2.1, "radius": 1 + n % 20}))
        else:
            calls.append(("getAirportCitySearch", {"subType": ["CITY", "AIRPORT"], "keyword": "MUC", "page[offset]": n}))
    return calls


def timed_pool(function, items) -> float:
    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=THREADS) as pool:
        results = list(pool.map(function, items))
    elapsed = time.perf_counter() - start
    assert all(results), "a call failed"
    return elapsed


def through_environment(tools, base_urls, calls) -> float:
    with tempfile.TemporaryDirectory() as folder:
        with HttpEnvironment(tools, base_urls=base_urls, record_path=Path(folder) / "store.json",
                             max_per_host=THREADS) as environment:
            return timed_pool(lambda call: environment.call(*call).ok, calls)


def bare_client(tools, base_urls, calls) -> float:
    by_name = {tool.name: tool for tool in tools}
    requests = [build_request(by_name[name], arguments, None, base_urls) for name, arguments in calls]
    with httpx.Client(timeout=10.0, limits=httpx.Limits(max_connections=None, max_keepalive_connections=64)) as client:
        def send(request) -> bool:
            answer = client.request(request.method, request.url, params=list(request.params), headers=dict(request.headers))
            json.loads(answer.content)
            return answer.status_code == 200
        return timed_pool(send, requests)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=600)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    start = time.perf_counter()
    imported = import_openapi([AMADEUS])
    import_s = time.perf_counter() - start
    print(f"import: {len(imported.files)} descriptions, {len(imported.tools)} tools, {len(imported.errors)} errors "
          f"in {import_s:.3f} s (goal < 5 s)")

    tools = import_openapi(FILES).tools
    with tempfile.TemporaryDirectory() as logs, start_prism(FILES, Path(logs)) as servers:
        through_environment(tools, servers.base_urls, planned_calls(60, 999))  # warm up both paths
        bare_client(tools, servers.base_urls, planned_calls(60, 998))
        env_best = bare_best = float("inf")
        for round_index in range(args.rounds):
            calls = planned_calls(args.calls, round_index)
            env_best = min(env_best, through_environment(tools, servers.base_urls, calls))
            bare_best = min(bare_best, bare_client(tools, servers.base_urls, calls))
            print(f"round {round_index + 1}: http environment {args.calls / env_best:,.0f} calls/s, "
                  f"bare httpx {args.calls / bare_best:,.0f} calls/s (best so far)")
        with tempfile.TemporaryDirectory() as folder:
            store_path = Path(folder) / "store.json"
            calls = planned_calls(args.calls, 77)
            with HttpEnvironment(tools, base_urls=servers.base_urls, record_path=store_path) as environment:
                assert all(environment.call(*call).ok for call in calls)
            replay = RecordedEnvironment(load_store_and_journal(store_path, tools))
    repeats = max(1, 60000 // len(calls))
    start = time.perf_counter()
    for _ in range(repeats):
        for name, arguments in calls:
            replay.call(name, arguments)
    replay_s = time.perf_counter() - start
    assert replay.misses == 0
    print(f"replay: {repeats * len(calls) / replay_s:,.0f} calls/s from the store, offline (goal >= 20,000)")
    print(f"http environment {args.calls / env_best:,.0f} calls/s vs bare httpx {args.calls / bare_best:,.0f} calls/s, "
          f"{THREADS} threads, {args.calls} calls x {args.rounds} rounds against Prism")
    print(f"ratio http environment / bare client: {bare_best / env_best:.2f}")


if __name__ == "__main__":
    main()
