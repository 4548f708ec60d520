"""At scale, each engine against its single-machine baseline, side by side in one run.

1. Ray vs the local pool: the filter stage (`fcbench.filter.single.run_filter`, static checks, execution
   twice for reproduction, verdicts, journal, output files) on --candidates NESTful math
   candidates (the real math samples of the published NESTful files, replicated with distinct
   ids), once with `backend: local` (2 worker processes) and once with `backend: ray` (a local Ray
   cluster of 2 CPUs started by the environment). The outputs must be byte-identical. Also the
   bare execution of the same gold paths (`iter_run_paths`), and the per-task overhead: the mean
   round trip of a one-path batch on Ray minus the same on the local pool.
2. Label Studio on PostgreSQL vs SQLite: push then pull --tasks stage2 tasks (`bench/label_studio.py`'s
   drafts and measures), one server of each kind started by `annotate.studio.server`.
3. Batch API vs online: `bench/batch_api.py`'s `measure(n_requests)`.

Sections can be skipped (--skip ray,studio,batch). The LAST line is the Ray/local ratio of the
filter stage. Run:
    .venv/bin/python bench/scale.py [--candidates 100000] [--tasks 5000] [--requests 2000]
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from execution import TOOLS_MODULE, all_tools, nestful_math_samples  # noqa: E402

from fcbench.config import FilterConfig  # noqa: E402
from fcbench.environments.python_env import PythonEnvironment  # noqa: E402
from fcbench.environments.execution import planned_path  # noqa: E402
from fcbench.filter.single import FilterPaths, run_filter  # noqa: E402
from fcbench.sample import Sample  # noqa: E402

WORKERS = 2
ROUND_TRIPS = 300
OUTPUTS = ("validated.jsonl", "validated.rejects.jsonl")


def candidates(count: int) -> list[Sample]:
    base = nestful_math_samples()
    return [base[i % len(base)].model_copy(update={"id": f"{base[i % len(base)].id}#{i}"}) for i in range(count)]


def ray_section(count: int) -> float:
    from fcbench.environments.ray_backend import RayEnvironment

    samples = candidates(count)
    tools = all_tools(samples[: 5000])
    settings = FilterConfig(repeat=2)  # as the bundled pipelines: each candidate executed twice
    work = Path(tempfile.mkdtemp(prefix="fcbench-scale-"))
    times: dict[str, float] = {}
    bare: dict[str, float] = {}
    round_trip: dict[str, float] = {}
    paths = [planned_path(sample) for sample in samples]
    try:
        environments = {
            "local": lambda: PythonEnvironment(TOOLS_MODULE, tools, workers=WORKERS, timeout=5),
            "ray": lambda: RayEnvironment(TOOLS_MODULE, tools, num_cpus=WORKERS, timeout=5),
        }
        tasks = 0
        for name, make in environments.items():
            with make() as environment:
                started = time.perf_counter()
                for _ in environment.iter_run_paths(paths):
                    pass
                bare[name] = time.perf_counter() - started
                if name == "ray":
                    tasks = environment.tasks
                one = paths[:1]
                started = time.perf_counter()
                for _ in range(ROUND_TRIPS):  # a batch of one path: what a batch costs beyond its work
                    for _ in environment.iter_run_paths(one):
                        pass
                round_trip[name] = (time.perf_counter() - started) / ROUND_TRIPS
                started = time.perf_counter()
                summary = run_filter(samples, environment, settings, FilterPaths.in_dir(work / name), "candidates")
                times[name] = time.perf_counter() - started
            print(f"  {name:5s}: filter {times[name]:7.2f} s ({count / times[name]:8.0f} candidates/s, "
                  f"{summary.counts.get('passed', 0)} passed); bare execution {bare[name]:6.2f} s "
                  f"({count / bare[name]:8.0f} paths/s)", flush=True)
        identical = all((work / "local" / f).read_bytes() == (work / "ray" / f).read_bytes() for f in OUTPUTS)
        print(f"  outputs byte-identical: {identical}")
        overhead_ms = (round_trip["ray"] - round_trip["local"]) * 1000
        print(f"  one-path batch round trip: ray {round_trip['ray'] * 1000:.2f} ms, local "
              f"{round_trip['local'] * 1000:.2f} ms: per-task overhead {overhead_ms:.2f} ms "
              f"({overhead_ms * 1000 / 256:.1f} us per path in a batch of 256; {tasks} Ray batches here)")
        print(f"  bare execution ray/local: {bare['ray'] / bare['local']:.2f}x")
        if not identical:
            raise SystemExit("Ray and local outputs differ")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return times["ray"] / times["local"]


def studio_section(tasks: int) -> float:
    from studio_scale import measure_push_pull

    figures = {database: measure_push_pull(tasks, database) for database in ("sqlite", "postgresql")}
    for database, (push, pull) in figures.items():
        print(f"  {database:10s}: push {push:6.1f} s ({tasks / push:5.0f} tasks/s), pull {pull:6.1f} s "
              f"({tasks / pull:5.0f} tasks/s)")
    ratio = (sum(figures["postgresql"])) / sum(figures["sqlite"])
    print(f"  push+pull postgresql/sqlite: {ratio:.2f}x")
    return ratio


def batch_section(requests: int) -> Any:
    path = REPO / "bench" / "batch_api.py"
    if not path.is_file():
        print("  skipped: bench/batch_api.py is not on this branch (the Batch API bench of issue 13 part 1)")
        return None
    spec = importlib.util.spec_from_file_location("batch_api", path)
    module = importlib.util.module_from_spec(spec)  # type: ignore[arg-type]
    assert spec and spec.loader
    spec.loader.exec_module(module)
    result = module.measure(requests)
    print(f"  {result}")
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--candidates", type=int, default=100_000)
    parser.add_argument("--tasks", type=int, default=5000)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--skip", default="", help="comma-separated sections to skip: ray,studio,batch")
    args = parser.parse_args()
    skip = set(filter(None, args.skip.split(",")))
    ray_ratio = None
    if "batch" not in skip:
        print(f"Batch API vs online, {args.requests} requests against the mock:")
        batch_section(args.requests)
    if "studio" not in skip:
        print(f"Label Studio push + pull of {args.tasks} tasks, PostgreSQL vs SQLite:")
        studio_section(args.tasks)
    if "ray" not in skip:
        print(f"Filter on {args.candidates} candidates, Ray (2 CPUs) vs local pool ({WORKERS} workers):")
        ray_ratio = ray_section(args.candidates)
    if ray_ratio is not None:
        print(f"ray/local filter time ratio: {ray_ratio:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
