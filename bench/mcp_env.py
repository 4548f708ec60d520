"""The mcp environment's per-sample state: sandbox reset in place vs a server restart per sample, in one run.

The workspace example's validated gold paths (memory, filesystem and time servers, datasets/workspace)
are executed live, no store, each sample in a fresh sandbox, two ways:
- **reset** (what the environment does): before a sample's first call the worker's sandbox folder
  is emptied and re-seeded; the servers keep running (the memory server re-reads its file on every
  call, the filesystem server reads the folder);
- **restart** (the baseline): the stateful servers are stopped and started again for every sample
  (`reset: restart` on each server).
Both give the same answers (checked: every response but the clock-dependent ones). Then the same
paths replayed from the recording (offline, no server). Rounds alternate; each side keeps its best.

  .venv/bin/python bench/mcp_env.py [--samples 120] [--rounds 2] [--workers 2]

Needs the servers (bash fcbench/environments/install_mcp_servers.sh). The last line is the ratio
reset throughput / restart throughput.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

CLOCK_TOOLS = {"get_current_time", "get_file_info", "convert_time"}


def samples(count: int):
    from fcbench.config import load_pipelines
    from fcbench.formats import read_samples
    from fcbench.pipeline.run import run_pipeline
    from fcbench.sample import Sample

    pipeline = load_pipelines(REPO / "pipelines.yaml").get_pipeline("workspace")
    validated = pipeline.build_dir / "validated.jsonl"
    if not validated.is_file():
        run_pipeline(pipeline, offline=True)
    found = [item for item in read_samples(validated, "fcbench") if isinstance(item, Sample)]
    return (found * (count // len(found) + 1))[:count]


def run(mode: str, paths, workers: int) -> tuple[float, list]:
    from fcbench.config import load_pipelines
    from fcbench.environments.execution import execute_gold_paths
    from fcbench.environments.from_config import open_environment

    pipeline = load_pipelines(REPO / "pipelines.yaml").get_pipeline("workspace")
    if mode != "replay":
        pipeline.environment.responses = None
        pipeline.environment.workers = workers
        for server in pipeline.environment.servers.values():
            server.reset = "restart" if mode == "restart" else "files"
    pipeline.dataset_dir = tempfile.mkdtemp(prefix="bench-mcp-")  # its mcp-logs, not the dataset's build folder
    with open_environment(pipeline, paths) as environment:
        start = time.perf_counter()
        results = execute_gold_paths(paths, environment)
        elapsed = time.perf_counter() - start
    assert all(result.ok for result in results), next(result.failure for result in results if not result.ok)
    return elapsed, results


def same_answers(a, b) -> int:
    compared = 0
    for left, right in zip(a, b):
        for one, two in zip(left.path.runs, right.path.runs):
            if one.name not in CLOCK_TOOLS and not any(r.label in _clock(left) for r in _refs(one)):
                assert one.outcome.response == two.outcome.response, (one.name, one.outcome, two.outcome)
                compared += 1
    return compared


def _refs(run):
    from fcbench.references import iter_references

    return list(iter_references(run.arguments))


def _clock(result) -> set[str]:
    return {run.label for run in result.path.runs if run.name in CLOCK_TOOLS}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=120)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    paths = samples(args.samples)
    calls = sum(len(sample.all_calls()) for sample in paths)
    best = {"reset": float("inf"), "restart": float("inf"), "replay": float("inf")}
    answers = {}
    for _ in range(args.rounds):
        for mode in ("reset", "restart", "replay"):
            elapsed, results = run(mode, paths, args.workers)
            best[mode] = min(best[mode], elapsed)
            answers[mode] = results
    compared = same_answers(answers["reset"], answers["restart"])
    print(f"{len(paths)} samples, {calls} calls, {args.workers} workers, best of {args.rounds}; "
          f"{compared} answers compared between reset and restart: all equal")
    for mode in ("reset", "restart", "replay"):
        print(f"{mode:8s} {best[mode]:7.2f} s  {len(paths) / best[mode]:8.1f} samples/s  {calls / best[mode]:8.1f} calls/s")
    print(f"ratio reset/restart throughput: {best['restart'] / best['reset']:.2f}x")


if __name__ == "__main__":
    main()
