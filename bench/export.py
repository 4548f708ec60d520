"""Export speed and memory: fcbench's streamed Parquet export vs one `DataFrame.to_parquet` call.

Generates `--samples` synthetic canonical samples (5 calls each in 4 steps, nested references,
responses of a few KB) streamed to a temporary JSONL file, then runs, each in its own subprocess so
each peak RSS is its own:

- **export of a foreign file**: `fcbench.export.single.export_samples` (line by line, bounded record
  batches, sharded) on a file no stage measured: the statistics and token-count caches are empty
  folders of this run, so the dataset card's statistics (token counts of every sample's context)
  are computed by the export itself (`export --input` of a file the filter never wrote);
- **export as built**: the same, after the file was measured into the statistics cache the way the
  filter measures the file it writes (the card then reads the figures);
- **baseline**: the same rows (same parsing and `sample_to_row`) loaded into one pandas DataFrame
  and written with a single `DataFrame.to_parquet` call (it measures nothing).

The three alternate `--rounds` times and each keeps its fastest run (other jobs on a shared machine
slow single runs; the minimum is what the code costs). Prints samples/s and peak RSS of each; the
last line is the throughput ratio export/baseline, for a foreign file and as built.

    .venv/bin/python bench/export.py                    # 100,000 samples
    .venv/bin/python bench/export.py --samples 20000
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

CITIES = ["Paris", "Sydney", "Melbourne", "Osaka", "Lima", "Oslo", "Cairo", "Quito", "Hanoi", "Porto"]


def _tool(name: str, params: dict[str, str]) -> dict[str, Any]:
    return {"name": name, "description": f"{name.replace('_', ' ')} in the travel catalogue",
            "parameters": {"type": "object", "properties": {p: {"type": t, "description": f"the {p}"}
                                                            for p, t in params.items()},
                           "required": list(params)}}


TOOLS = [
    _tool("search_location", {"query": "string"}),
    _tool("search_hotels", {"dest_id": "string", "checkin": "string", "checkout": "string"}),
    _tool("hotel_details", {"hotel_id": "integer", "currency": "string"}),
    _tool("search_flights", {"from_id": "string", "to_id": "string", "date": "string"}),
    _tool("flight_details", {"token": "string"}),
]


def _records(rng: random.Random, n: int) -> list[dict[str, Any]]:
    """A response payload of a few KB, like a travel API's result list."""
    return [{"id": rng.randrange(10**6), "name": f"{rng.choice(CITIES)} Plaza {rng.randrange(999)}",
             "price": round(rng.uniform(40, 900), 2), "rating": round(rng.uniform(1, 10), 1),
             "address": f"{rng.randrange(1, 300)} {rng.choice(CITIES)} Street",
             "amenities": rng.sample(["wifi", "pool", "gym", "spa", "parking", "bar", "breakfast"], 4)}
            for _ in range(n)]


def synthetic_sample(index: int, rng: random.Random) -> dict[str, Any]:
    city, other = rng.sample(CITIES, 2)
    calls = [
        [{"label": "call_1", "name": "search_location", "arguments": {"query": city},
          "response": {"data": [{"dest_id": f"D{index}", "city": city}]}},
         {"label": "call_2", "name": "search_location", "arguments": {"query": other},
          "response": {"data": [{"dest_id": f"E{index}", "city": other}]}}],
        [{"label": "call_3", "name": "search_hotels",
          "arguments": {"dest_id": "$call_1.data[0].dest_id$", "checkin": "2024-11-15", "checkout": "2024-11-18"},
          "response": {"data": _records(rng, 16)}}],
        [{"label": "call_4", "name": "hotel_details", "arguments": {"hotel_id": "$call_3.data[0].id$", "currency": "EUR"},
          "response": {"data": _records(rng, 8)}}],
        [{"label": "call_5", "name": "search_flights",
          "arguments": {"from_id": "$call_2.data[0].dest_id$", "to_id": "$call_1.data[0].dest_id$", "date": "2024-11-15"},
          "response": {"data": _records(rng, 12)}}],
    ]
    return {"id": f"bench-{index}", "domain": "travel",
            "messages": [{"role": "user", "content": f"Find a hotel in {city} and a flight from {other}."}],
            "tools": TOOLS, "calls": calls, "answer": f"Booked {city}",
            "provenance": {"stage": "stage3", "parent_id": f"bench-{index // 4 * 4}", "model": "bench-model", "seed": 1}}


def generate(path: Path, samples: int) -> int:
    rng = random.Random(1)
    with open(path, "w", encoding="utf-8") as handle:
        for index in range(samples):
            handle.write(json.dumps(synthetic_sample(index, rng), ensure_ascii=False) + "\n")
    return path.stat().st_size


# -------------------------------------------------------------------------------------- children
def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kB on Linux


def run_export(source: Path, out: Path) -> dict[str, Any]:
    from fcbench.config import ExportConfig
    from fcbench.export.single import ExportPaths, ExportSettings, export_samples

    settings = ExportSettings(name="bench", config=ExportConfig(ratios={"train": 0.8, "test": 0.2}), seed=1)
    start = time.perf_counter()
    summary = export_samples(source, ExportPaths(out), settings)
    seconds = time.perf_counter() - start
    written = sum(p.stat().st_size for p in (out / "export" / "data").iterdir())
    return {"samples": summary.exported, "seconds": seconds, "bytes": written,
            "shards": sum(s["shards"] for s in summary.splits.values())}


def run_baseline(source: Path, out: Path) -> dict[str, Any]:
    import pandas as pd

    from fcbench.formats.parquet_rows import sample_to_row
    from fcbench.jsonl import iter_json_lines
    from fcbench.sample import sample_from_dict

    start = time.perf_counter()
    rows = [sample_to_row(sample_from_dict(line.value)) for line in iter_json_lines(source)]
    frame = pd.DataFrame(rows)
    out.mkdir(parents=True, exist_ok=True)
    target = out / "all.parquet"
    frame.to_parquet(target, index=False)
    seconds = time.perf_counter() - start
    return {"samples": len(frame), "seconds": seconds, "bytes": target.stat().st_size, "shards": 1}


def child_main(kind: str, source: Path, out: Path) -> None:
    result = (run_export if kind == "export" else run_baseline)(source, out)
    result["peak_rss_mb"] = peak_rss_mb()
    print(json.dumps(result))


def run_child(kind: str, source: Path, out: Path, env: dict[str, str] | None = None) -> dict[str, Any]:
    completed = subprocess.run([sys.executable, __file__, "--child", kind, "--input", str(source), "--out", str(out)],
                               capture_output=True, text=True, check=False, env={**os.environ, **(env or {})})
    if completed.returncode != 0:
        raise SystemExit(f"{kind} failed:\n{completed.stderr}")
    return json.loads(completed.stdout.strip().splitlines()[-1])


def caches(folder: Path) -> dict[str, str]:
    """The environment of a child whose statistics and token-count caches live in `folder`."""
    folder.mkdir(parents=True, exist_ok=True)
    return {"FCBENCH_STATS_CACHE": str(folder / "stats"), "FCBENCH_TOKEN_CACHE": str(folder / "tokens.sqlite")}


def measure_into_cache(source: Path, env: dict[str, str]) -> None:
    """What the filter does for the file it writes: its statistics measured into the cache."""
    subprocess.run([sys.executable, "-c", "import sys; from pathlib import Path; "
                    "from fcbench.stats.validated_file import file_stats; file_stats(Path(sys.argv[1]))", str(source)],
                   check=True, env={**os.environ, **env}, cwd=REPO)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--samples", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=1, help="alternating runs of each; the fastest counts")
    parser.add_argument("--child", choices=["export", "baseline"])
    parser.add_argument("--input", type=Path)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if args.child:
        child_main(args.child, args.input, args.out)
        return
    with tempfile.TemporaryDirectory(prefix="fcbench-export-bench.") as folder:
        work = Path(folder)
        source = work / "validated.jsonl"
        size = generate(source, args.samples)
        print(f"input: {args.samples} samples, {size / 1e6:.0f} MB of JSONL ({size / args.samples / 1e3:.1f} kB a sample)")
        built_env = caches(work / "built-caches")
        measure_into_cache(source, built_env)
        runs: dict[str, list[dict[str, Any]]] = {"foreign": [], "built": [], "baseline": []}
        for round_no in range(args.rounds):
            # a foreign file: caches empty for every run (a fresh folder each time)
            runs["foreign"].append(run_child("export", source, work / f"foreign-{round_no}",
                                             caches(work / f"foreign-caches-{round_no}")))
            runs["built"].append(run_child("export", source, work / f"built-{round_no}", built_env))
            runs["baseline"].append(run_child("baseline", source, work / f"baseline-{round_no}"))
    best = {kind: min(results, key=lambda result: result["seconds"]) for kind, results in runs.items()}
    titles = {"foreign": "export of a file no stage measured (caches empty)",
              "built": "export as built (statistics measured before, as the filter does)",
              "baseline": "baseline (DataFrame.to_parquet)"}
    for kind, result in best.items():
        rate = result["samples"] / result["seconds"]
        spread = ", ".join(f"{run['seconds']:.1f}" for run in runs[kind])
        print(f"{titles[kind]}: {result['samples']} samples in {result['seconds']:.1f} s = {rate:,.0f} samples/s "
              f"(runs: {spread} s), peak RSS {result['peak_rss_mb']:,.0f} MB, {result['bytes'] / 1e6:.0f} MB Parquet "
              f"in {result['shards']} file(s)")
    # Other jobs on the machine slow every run; the load average says how much to trust the figures.
    print("load average (1, 5, 15 min): " + ", ".join(f"{load:.2f}" for load in os.getloadavg()))
    rate = {kind: result["samples"] / result["seconds"] for kind, result in best.items()}
    print(f"throughput ratio export/baseline: {rate['foreign'] / rate['baseline']:.2f}x for a file no stage measured, "
          f"{rate['built'] / rate['baseline']:.2f}x as built")


if __name__ == "__main__":
    main()
