"""Speed of gold-path execution: the python worker pool vs re-importing the tools for every call.

Both run the same NESTful math gold paths (the real math samples of the published NESTful files,
replicated to --samples) in one run and must reproduce the gold answers:

- pool: `PythonEnvironment` (persistent worker processes, the tool module imported once per
  worker, paths sent in chunks and resolved in the worker, per-call timeout and memory cap,
  network cut);
- reference: in this process, for each call, import the tool module afresh and run the function
  under a per-call `signal.alarm` (the simple way to get "fresh tool state + a timeout").

Each is timed --repeat times, alternated, and the best is reported (other work on the machine adds
noise). Prints samples/s of both; the LAST line is the ratio. Run:
    .venv/bin/python bench/execution.py [--samples 5000] [--workers 2] [--repeat 3]
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import os
import py_compile
import signal
import sys
import time
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from fcbench.answers import NESTFUL_COMPARISON, answers_match
from fcbench.environments import ArgumentCoercer, CallOutcome, ErrorReason, PathRun, run_path
from fcbench.environments.python_env import PythonEnvironment
from fcbench.environments.execution import ExecutionOptions, execute_gold_paths, final_answer, planned_path
from fcbench.formats import Rejected, read_samples
from fcbench.sample import Sample, Tool

REPO = Path(__file__).resolve().parents[1]
TOOLS_MODULE = REPO / "datasets" / "nestful-math" / "tools.py"
NESTFUL = REPO.parent / "shared" / "external" / "nestful"
NESTFUL_FILES = ["toy_data.jsonl", "icl_examples.json", *(f"predictions/{p.name}" for p in sorted((NESTFUL / "predictions").glob("*.jsonl")))]
TIMEOUT_SECONDS = 5


def nestful_math_samples() -> list[Sample]:
    """Every distinct math sample of the published NESTful v2 files (by sample id)."""
    by_id: dict[str, Sample] = {}
    for name in NESTFUL_FILES:
        for item in read_samples(NESTFUL / name, "nestful"):
            if not isinstance(item, Rejected) and item.domain == "math":
                by_id.setdefault(item.id, item)
    return list(by_id.values())


def replicate(samples: list[Sample], count: int) -> list[Sample]:
    return [samples[i % len(samples)] for i in range(count)]


def all_tools(samples: Sequence[Sample]) -> list[Tool]:
    return list({tool.name: tool for sample in samples for tool in sample.tools}.values())


# --- the reference approach --------------------------------------------------------------------


class _Alarm(BaseException):
    pass


def _raise_alarm(signum: int, frame: object) -> None:
    raise _Alarm()


def reference_step_runner(tools: Sequence[Tool]) -> Callable[[Sequence[tuple[str, Mapping[str, Any]]]], list[CallOutcome]]:
    coercers = {tool.name: ArgumentCoercer(tool.parameters) for tool in tools}

    def fresh_tool(name: str) -> Callable[..., Any]:
        spec = importlib.util.spec_from_file_location("nestful_math_tools", TOOLS_MODULE)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return getattr(module, name)

    def call_step(calls: Sequence[tuple[str, Mapping[str, Any]]]) -> list[CallOutcome]:
        outcomes = []
        for name, arguments in calls:
            signal.alarm(TIMEOUT_SECONDS)
            try:
                result = fresh_tool(name)(**coercers[name](arguments))
                outcomes.append(CallOutcome.success(result))
            except _Alarm:
                outcomes.append(CallOutcome.failure(ErrorReason.TIMEOUT, "alarm"))
            except Exception as exc:
                outcomes.append(CallOutcome.failure(ErrorReason.TOOL_ERROR, repr(exc)))
            finally:
                signal.alarm(0)
        return outcomes

    return call_step


def count_correct(samples: Sequence[Sample], runs: Sequence[PathRun]) -> int:
    options = ExecutionOptions()
    return sum(
        answers_match(final_answer(sample, run, options), sample.answer, NESTFUL_COMPARISON) for sample, run in zip(samples, runs)
    )


def time_reference(samples: Sequence[Sample], tools: Sequence[Tool]) -> tuple[float, int]:
    """Seconds to run every path the reference way and check its answer; answers that match."""
    call_step = reference_step_runner(tools)
    start = time.perf_counter()
    runs = [run_path(planned_path(sample), call_step) for sample in samples]
    correct = count_correct(samples, runs)
    return time.perf_counter() - start, correct


def time_pool(samples: Sequence[Sample], environment: PythonEnvironment) -> tuple[float, int]:
    """The same work through the worker pool: every path batched into a worker round trip."""
    start = time.perf_counter()
    paths = [planned_path(sample) for sample in samples]
    options = ExecutionOptions()
    correct = 0
    for index, run in environment.iter_run_paths(paths):  # answers checked while workers go on
        sample = samples[index]
        correct += answers_match(final_answer(sample, run, options), sample.answer, NESTFUL_COMPARISON)
    return time.perf_counter() - start, correct


def time_full_results(samples: Sequence[Sample], environment: PythonEnvironment) -> float:
    """`execute_gold_paths` as the pipeline calls it: also copies every sample with its responses."""
    start = time.perf_counter()
    execute_gold_paths(samples, environment)
    return time.perf_counter() - start


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=5000)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--repeat", type=int, default=3, help="runs of each; the best is reported")
    args = parser.parse_args(argv)

    originals = nestful_math_samples()
    samples = replicate(originals, args.samples)
    tools = all_tools(originals)
    n_calls = sum(len(sample.all_calls()) for sample in samples)
    print(f"{len(originals)} NESTful math samples replicated to {len(samples)} ({n_calls} calls); {os.cpu_count()} cores")

    # Best of --repeat runs for each, alternated, because other work on the machine adds noise.
    started = time.perf_counter()
    with PythonEnvironment(TOOLS_MODULE, tools, workers=args.workers, timeout=TIMEOUT_SECONDS) as environment:
        start_ms = (time.perf_counter() - started) * 1000
        # Fair to the reference: each re-import loads cached bytecode instead of compiling the source
        # again (this machine sets PYTHONDONTWRITEBYTECODE, so import alone never writes the cache).
        py_compile.compile(str(TOOLS_MODULE), cfile=importlib.util.cache_from_source(str(TOOLS_MODULE)), doraise=True)
        signal.signal(signal.SIGALRM, _raise_alarm)
        pool_best, reference_best, full_best = math.inf, math.inf, math.inf
        for _ in range(args.repeat):
            pool_seconds, pool_correct = time_pool(samples, environment)
            reference_seconds, reference_correct = time_reference(samples, tools)
            full_best = min(full_best, time_full_results(samples, environment))
            pool_best, reference_best = min(pool_best, pool_seconds), min(reference_best, reference_seconds)
        replayed, replaced = environment.replayed_paths, environment.replaced_workers
    pool_rate, reference_rate = len(samples) / pool_best, len(samples) / reference_best
    print(f"pool ({args.workers} workers): {pool_rate:,.0f} samples/s, {pool_correct}/{len(samples)} answers match gold (start {start_ms:.0f} ms, not counted; {replayed} paths replayed, {replaced} workers replaced)")
    print(f"pool, full execute_gold_paths (samples copied with responses): {len(samples) / full_best:,.0f} samples/s")
    print(f"reference (re-import per call + signal.alarm): {reference_rate:,.0f} samples/s, {reference_correct}/{len(samples)} answers match gold")
    if not (pool_correct == reference_correct == len(samples)):
        print("WARNING: not every answer matches gold", file=sys.stderr)
    print(f"ratio pool/reference: {pool_rate / reference_rate:.1f}x")
    return 0 if math.isfinite(pool_rate) else 1


if __name__ == "__main__":
    sys.exit(main())
