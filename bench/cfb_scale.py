"""A ComplexFuncBench-sized build, stage by stage: wall time and peak RSS of every stage, and the
export's throughput against one `DataFrame.to_parquet` call on the same rows.

Two sources of samples:

- **a declared pipeline** (`--pipeline NAME`, default `travel-full`): copied with its dataset folder
  into a temporary folder (the repository's own build is never touched) and built offline the way
  `build-dataset run` does, one command per stage: stage1 --offline, stage2 pull --from-export
  (its bundled Label Studio export), stage3 run --offline, filter, export, report, then evaluate;
- **synthetic long-context samples** (`--synthetic N`): a generated travel-like world whose search
  tools return result pages of up to ~1,000 records (deterministic from the arguments), and N
  candidates in ComplexFuncBench's shape: Hotels, Flights, Car Rental, Attraction and 40 % Cross,
  3 steps and 4 or 8 calls each, booking tokens of ~500 characters found only in responses, a
  constraint per query, contexts from 2k to ~128k tokens (cl100k_base) with about 25 % above 32k.
  Stages from the filter on run on them (stage1-3 produce no such samples yet).

Every stage is its own `build-dataset` subprocess: its wall time, the peak RSS of the stage process
(`wait4`'s `ru_maxrss`) and the peak RSS of its whole process tree (the stage and its tool
workers, summed, sampled every 0.1 s from /proc) are printed per stage. `evaluate` runs against the
local mock server (`fcbench.llm.mock_server`, answering every request with a final text, so each
sample costs one request carrying its whole context) with `--context-window 128000`.

Then the export is timed against its baseline on the build's own validated file, each in its own
subprocess (bench/export.py's two children): the streamed export vs the same rows collected into
one pandas DataFrame and written with one `to_parquet` call. The export's dataset card needs the
file's statistics (a token count of every response): as built, the filter measured the file it
wrote and the export reads them from the statistics cache (fcbench.stats.validated_file); a file no stage
measured (token and statistics caches empty) is measured by the export in a second process. The
LAST line is the throughput ratio, as built first, then for a file no stage measured.

    .venv/bin/python bench/cfb_scale.py                          # the travel-full pipeline
    .venv/bin/python bench/cfb_scale.py --pipeline travel        # the small bundled pipeline
    .venv/bin/python bench/cfb_scale.py --synthetic 1000         # 1,000 long-context samples
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

GOAL_SECONDS = 600
GOAL_RSS_MB = 2048
ROUNDS = 3  # alternating runs of the export and its baseline (the fastest of each is compared)


# ---------------------------------------------------------------------------------- measuring a stage
@dataclass
class StageRun:
    name: str
    seconds: float
    rss_mb: float  # the stage process
    tree_rss_mb: float  # the stage and its descendants, summed, at the worst sample
    exit_code: int
    tail: str


def _rss_kb(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as handle:
            for line in handle:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _descendants(pid: int) -> list[int]:
    found, stack = [], [pid]
    while stack:
        current = stack.pop()
        try:
            tasks = os.listdir(f"/proc/{current}/task")
        except OSError:
            continue
        for task in tasks:
            try:
                with open(f"/proc/{current}/task/{task}/children", encoding="ascii") as handle:
                    children = [int(child) for child in handle.read().split()]
            except OSError:
                continue
            found.extend(children)
            stack.extend(children)
    return found


def run_stage(name: str, command: list[str], cwd: Path, env: dict[str, str]) -> StageRun:
    started = time.perf_counter()
    log = tempfile.TemporaryFile()
    process = subprocess.Popen(command, cwd=cwd, env=env, stdout=log, stderr=subprocess.STDOUT)
    tree_peak = 0
    stop = threading.Event()

    def poll() -> None:
        nonlocal tree_peak
        while not stop.is_set():
            total = _rss_kb(process.pid) + sum(_rss_kb(child) for child in _descendants(process.pid))
            tree_peak = max(tree_peak, total)
            stop.wait(0.1)

    poller = threading.Thread(target=poll, daemon=True)
    poller.start()
    _, status, usage = os.wait4(process.pid, 0)
    process.returncode = os.waitstatus_to_exitcode(status)
    stop.set()
    poller.join()
    seconds = time.perf_counter() - started
    log.seek(0)
    tail = log.read().decode("utf-8", "replace").strip().splitlines()[-3:]
    return StageRun(name, seconds, usage.ru_maxrss / 1024, tree_peak / 1024, process.returncode, " | ".join(tail))


# -------------------------------------------------------------------------------- synthetic samples
SYNTHETIC = "cfb-synthetic"
DOMAINS = ("hotels", "flights", "car-rental", "attractions")
CITIES = ("Paris", "Sydney", "Melbourne", "Osaka", "Lima", "Oslo", "Cairo", "Quito", "Hanoi", "Porto", "Lisbon",
          "Nairobi", "Denver", "Seville", "Bergen", "Kyoto")

# The tools module of the synthetic world: every response is a pure function of the arguments, so
# the filter's re-execution reproduces it exactly in any worker.
TOOLS_MODULE = '''"""Synthetic long-context travel tools for bench/cfb_scale.py (deterministic from the arguments)."""
import hashlib
import random

WORDS = ("quiet", "central", "family", "river", "garden", "historic", "modern", "harbour", "old town", "station",
         "breakfast", "terrace", "pool", "spa", "parking", "airport", "shuttle", "view", "museum", "market")


def _rng(*parts):
    return random.Random(hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest())


def search_location(query):
    rng = _rng("loc", query)
    return {"status": True, "data": [{"dest_id": f"{query[:3].upper()}-{rng.randrange(10**6)}", "name": query,
                                      "type": kind} for kind in ("city", "district", "landmark")]}


def search(domain, dest_id, date, page_size):
    rng = _rng(domain, dest_id, date, page_size)
    items = []
    for index in range(int(page_size)):
        items.append({
            "id": f"{domain[:2].upper()}{rng.randrange(10**9)}",
            "name": f"{rng.choice(WORDS).title()} {domain} {index}",
            "price": {"amount": round(rng.uniform(20, 2000), 2), "currency": "EUR"},
            "rating": round(rng.uniform(1, 10), 1),
            "description": " ".join(rng.choice(WORDS) for _ in range(40)),
            "booking_token": "".join(rng.choice("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")
                                     for _ in range(rng.randrange(420, 560))),
        })
    return {"status": True, "data": {"dest_id": dest_id, "date": date, "results": items}}


def details(domain, item_id):
    rng = _rng("details", domain, item_id)
    return {"status": True, "data": {"id": item_id, "policies": [" ".join(rng.choice(WORDS) for _ in range(25))
                                                                  for _ in range(6)]}}


def book(domain, booking_token):
    return {"status": True, "data": {"confirmation": hashlib.sha256(booking_token.encode()).hexdigest()[:12]}}


def _for(domain):
    return {
        f"search_{domain.replace('-', '_')}": lambda dest_id, date, page_size: search(domain, dest_id, date, page_size),
        f"{domain.replace('-', '_')}_details": lambda item_id: details(domain, item_id),
        f"book_{domain.replace('-', '_')}": lambda booking_token: book(domain, booking_token),
    }


TOOLS = {"search_location": search_location}
for _domain in ("hotels", "flights", "car-rental", "attractions"):
    TOOLS.update(_for(_domain))
'''


def _tool_specs() -> list[dict[str, Any]]:
    def spec(name: str, description: str, params: dict[str, tuple[str, str]]) -> dict[str, Any]:
        return {"name": name, "description": description,
                "parameters": {"type": "object", "required": list(params),
                               "properties": {p: {"type": t, "description": d} for p, (t, d) in params.items()}}}

    specs = [spec("search_location", "Find a destination id by city name.", {"query": ("string", "a city name")})]
    for domain in DOMAINS:
        key = domain.replace("-", "_")
        specs += [
            spec(f"search_{key}", f"Search {domain} at a destination on a date; one page of results.",
                 {"dest_id": ("string", "from search_location"), "date": ("string", "YYYY-MM-DD"),
                  "page_size": ("integer", "results per page")}),
            spec(f"{key}_details", f"Policies of one {domain} result.", {"item_id": ("string", "a result id")}),
            spec(f"book_{key}", f"Book one {domain} result with its booking token.",
                 {"booking_token": ("string", "the result's booking_token")}),
        ]
    return specs


def _page_size(index: int, domains: int) -> int:
    """A result record is ~330 tokens (cl100k_base; booking tokens of random characters are dear), so
    contexts run from ~2k tokens to ~128k: 60 % short, 15 % medium, 20 % over 32k, 5 % near 100k-128k.
    A Cross sample searches two domains, each with half the page."""
    rng = random.Random(index)
    bucket = index % 20
    if bucket < 12:
        size = rng.randrange(4, 20)
    elif bucket < 15:
        size = rng.randrange(30, 80)
    elif bucket < 19:
        size = rng.randrange(105, 250)
    else:
        size = rng.randrange(280, 330)
    return max(2, size // domains)


def write_synthetic(root: Path, samples: int) -> Path:
    """The synthetic world and `samples` candidates under root/datasets/cfb-synthetic; returns the
    pipelines file declaring it."""
    import importlib.util

    from fcbench.jsonl import dumps_line
    from fcbench.sample import sample_from_dict, sample_to_dict

    dataset = root / "datasets" / SYNTHETIC
    (dataset / "build").mkdir(parents=True)
    (dataset / "tools.py").write_text(TOOLS_MODULE, encoding="utf-8")
    specs = _tool_specs()
    (dataset / "tools.json").write_text(json.dumps(specs, indent=1), encoding="utf-8")
    loaded = importlib.util.spec_from_file_location("cfb_synthetic_tools", dataset / "tools.py")
    module = importlib.util.module_from_spec(loaded)
    loaded.loader.exec_module(module)
    tools = module.TOOLS
    by_name = {spec["name"]: spec for spec in specs}
    with open(dataset / "build" / "candidates.jsonl", "w", encoding="utf-8") as out:
        for index in range(samples):
            rng = random.Random(index * 7919)
            cross = index % 5 >= 3  # 40 % Cross, as ComplexFuncBench's 400 of 1,000
            domains = rng.sample(DOMAINS, 2) if cross else [DOMAINS[(index // 5 * 3 + index % 5) % 4]]
            cities = rng.sample(CITIES, len(domains))
            day = f"2025-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d}"
            size = _page_size(index, len(domains))
            steps: list[list[dict[str, Any]]] = [[], [], []]
            phrases = []
            for position, (domain, city) in enumerate(zip(domains, cities)):
                key = domain.replace("-", "_")
                n = 4 * position
                location = tools["search_location"](query=city)
                steps[0].append({"label": f"call_{n + 1}", "name": "search_location", "arguments": {"query": city},
                                 "response": location})
                page = tools[f"search_{key}"](dest_id=location["data"][0]["dest_id"], date=day, page_size=size)
                steps[1].append({"label": f"call_{n + 2}", "name": f"search_{key}",
                                 "arguments": {"dest_id": f"$call_{n + 1}.data[0].dest_id$", "date": day,
                                               "page_size": size}, "response": page})
                cheapest = min(page["data"]["results"], key=lambda item: item["price"]["amount"])
                steps[2].append({"label": f"call_{n + 3}", "name": f"{key}_details", "arguments": {"item_id": cheapest["id"]},
                                 "response": tools[f"{key}_details"](item_id=cheapest["id"])})
                steps[2].append({"label": f"call_{n + 4}", "name": f"book_{key}",
                                 "arguments": {"booking_token": cheapest["booking_token"]},
                                 "response": tools[f"book_{key}"](booking_token=cheapest["booking_token"])})
                phrases.append(f"look at {size} {domain} results in {city} on {day}, show me the policies of the "
                               f"cheapest one and book it")
            # unique labels across the sample: renumber in path order
            counter = 0
            renamed: dict[str, str] = {}
            for step in steps:
                for call in step:
                    counter += 1
                    renamed[call["label"]] = f"call_{counter}"
            for step in steps:
                for call in step:
                    call["label"] = renamed[call["label"]]
                    for name, value in call["arguments"].items():
                        if isinstance(value, str) and value.startswith("$call_"):
                            label, rest = value[1:-1].split(".", 1)
                            call["arguments"][name] = f"${renamed[label]}.{rest}$"
            offered = ["search_location"] + [verb for d in domains for verb in
                                             (f"search_{d.replace('-', '_')}", f"{d.replace('-', '_')}_details",
                                              f"book_{d.replace('-', '_')}")]
            record = {"id": f"syn-{index:05d}", "domain": "Cross" if cross else domains[0],
                      "messages": [{"role": "user", "content": "Please " + "; then ".join(phrases) + "."}],
                      "tools": [by_name[name] for name in offered], "calls": steps,
                      "provenance": {"stage": "stage3", "parent_id": f"syn-{index // 10 * 10:05d}", "seed": 1}}
            out.write(dumps_line(sample_to_dict(sample_from_dict(record))) + "\n")
    pipelines = root / "pipelines.yaml"
    pipelines.write_text(
        "pipelines:\n"
        f"  {SYNTHETIC}:\n"
        f"    dataset_dir: datasets/{SYNTHETIC}\n"
        "    seed: 1\n"
        f"    tools: datasets/{SYNTHETIC}/tools.json\n"
        f"    environment: {{kind: python, module: datasets/{SYNTHETIC}/tools.py, timeout_s: 60, memory_mb: 1024, "
        "workers: 2}\n"
        "    stages:\n"
        "      filter: {grounding: reject, repeat: 1}\n"
        "      export: {split: template, ratios: {train: 0.2, test: 0.8}, shard_rows: 5000, formats: [parquet]}\n",
        encoding="utf-8")
    return pipelines


# ------------------------------------------------------------------------------- a declared pipeline
def copy_pipeline(root: Path, name: str) -> Path:
    """The pipelines file and every dataset folder (without their builds) under root: a pipeline's
    files may use another's (travel-full's tools build on datasets/travel/tools.py)."""
    from fcbench.config import load_pipelines

    config = load_pipelines(REPO / "pipelines.yaml")
    if name not in config.pipelines:
        raise SystemExit(f"no pipeline {name!r} in pipelines.yaml (declared: {', '.join(config.pipelines)}); "
                         f"try --pipeline travel or --synthetic 1000")
    shutil.copytree(REPO / "datasets", root / "datasets", ignore=shutil.ignore_patterns("build"))
    shutil.copy(REPO / "pipelines.yaml", root / "pipelines.yaml")
    return root / "pipelines.yaml"


def stage_commands(name: str, pipelines: Path, synthetic: bool, mock_url: str) -> list[tuple[str, list[str]]]:
    from fcbench.config import load_pipelines

    tool = str(Path(sys.executable).with_name("build-dataset"))
    common = ["--file", str(pipelines)]
    commands: list[tuple[str, list[str]]] = []
    if not synthetic:
        pipeline = load_pipelines(pipelines).pipelines[name]
        export_file = pipeline.resolve(pipeline.stages.stage2.export_file or "")
        commands += [
            ("stage1", [tool, "stage1", name, "--offline", *common]),
            ("stage2", [tool, "stage2", "pull", name, "--from-export", str(export_file), *common]),
            ("stage3", [tool, "stage3", "run", name, "--offline", *common]),
        ]
    commands += [
        ("filter", [tool, "filter", name, "--offline", *common]),
        ("export", [tool, "export", name, *common]),
        ("report", [tool, "report", name, *common]),
        ("evaluate", [tool, "evaluate", name, "--model", "bench-model", "--base-url", mock_url,
                      "--context-window", "128000", "--json", *common]),
    ]
    return commands


def _final_text(body: dict[str, Any], call_index: int) -> dict[str, Any]:
    return {"content": "Here is what I found."}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pipeline", default="travel-full")
    parser.add_argument("--synthetic", type=int, default=0, help="N synthetic long-context samples instead")
    parser.add_argument("--keep", type=Path, help="build in this folder (kept) instead of a temporary one")
    args = parser.parse_args()

    from fcbench.llm.mock_server import MockLLMServer
    from export import run_child  # bench/export.py: the export and DataFrame.to_parquet children

    root = args.keep or Path(tempfile.mkdtemp(prefix="fcbench-cfb-scale."))
    root.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "FCBENCH_PROGRESS": "0"}
    try:
        started = time.perf_counter()
        if args.synthetic:
            name = SYNTHETIC
            pipelines = write_synthetic(root, args.synthetic)
            generated = root / "datasets" / SYNTHETIC / "build" / "candidates.jsonl"
            print(f"generated {args.synthetic} synthetic candidates, {generated.stat().st_size / 1e6:.0f} MB of JSONL, "
                  f"in {time.perf_counter() - started:.0f} s")
        else:
            name = args.pipeline
            pipelines = copy_pipeline(root, name)
        runs: list[StageRun] = []
        with MockLLMServer(responder=_final_text) as server:
            for stage, command in stage_commands(name, pipelines, bool(args.synthetic), server.base_url):
                # the mock server's key, for evaluate only (the other stages run offline)
                stage_env = {**env, "OPENAI_API_KEY": "mock-server-key"} if stage == "evaluate" else env
                result = run_stage(stage, command, root, stage_env)
                runs.append(result)
                print(f"{stage:9s} {result.seconds:7.1f} s  peak RSS {result.rss_mb:7,.0f} MB (stage), "
                      f"{result.tree_rss_mb:7,.0f} MB (with workers)  exit {result.exit_code}", flush=True)
                if result.exit_code != 0:
                    raise SystemExit(f"stage {stage} failed: {result.tail}")
        build = root / "datasets" / (SYNTHETIC if args.synthetic else _dataset_dir(pipelines, name)) / "build"
        _print_shape(build)
        total = sum(run.seconds for run in runs)
        worst = max(runs, key=lambda run: run.tree_rss_mb)
        print(f"whole build: {total:.0f} s (goal <= {GOAL_SECONDS} s: {'met' if total <= GOAL_SECONDS else 'NOT met'}); "
              f"largest stage {worst.name} {worst.tree_rss_mb:,.0f} MB (goal <= {GOAL_RSS_MB} MB: "
              f"{'met' if worst.tree_rss_mb <= GOAL_RSS_MB else 'NOT met'})")
        print("load average (1, 5, 15 min): " + ", ".join(f"{load:.2f}" for load in os.getloadavg()))
        validated = build / "validated.jsonl"
        # The export's card needs the file's statistics (token counts of every response). As built,
        # the filter measured the file it wrote and the export reads the figures from the statistics
        # cache; a file no stage has measured (export --input of a foreign file: both caches empty)
        # is measured by the export, in a second process. The baseline measures nothing.
        # The export as built and its baseline alternate ROUNDS times and each keeps its fastest run:
        # other jobs on these 2 cores slow single runs by up to 2x, and the minimum is what the code costs.
        built_runs, baseline_runs = [], []
        for round_no in range(ROUNDS):
            built_runs.append(run_child("export", validated, root / f"ratio-export-built-{round_no}"))
            baseline_runs.append(run_child("baseline", validated, root / f"ratio-baseline-{round_no}"))
        built = min(built_runs, key=lambda run: run["seconds"])
        baseline = min(baseline_runs, key=lambda run: run["seconds"])
        previous = {name: os.environ.get(name) for name in ("FCBENCH_TOKEN_CACHE", "FCBENCH_STATS_CACHE")}
        os.environ["FCBENCH_TOKEN_CACHE"] = str(root / "empty-token-cache.sqlite")
        os.environ["FCBENCH_STATS_CACHE"] = str(root / "empty-stats-cache")
        try:
            unmeasured = run_child("export", validated, root / "ratio-export-unmeasured")
        finally:
            for name, value in previous.items():
                if value is None:
                    os.environ.pop(name)
                else:
                    os.environ[name] = value
        rates = {}
        for label, result in (("export as built (statistics measured by the filter)", built),
                              ("export of a file no stage measured (caches empty)", unmeasured),
                              ("baseline (DataFrame.to_parquet)", baseline)):
            rates[label] = result["samples"] / result["seconds"]
            print(f"{label}: {result['samples']} samples in {result['seconds']:.1f} s = {rates[label]:,.1f} samples/s, "
                  f"peak RSS {result['peak_rss_mb']:,.0f} MB")
        print("  (fastest of " + f"{ROUNDS} alternating runs: export as built "
              + ", ".join(f"{run['seconds']:.1f}" for run in built_runs) + " s; baseline "
              + ", ".join(f"{run['seconds']:.1f}" for run in baseline_runs) + " s)")
        print("load average (1, 5, 15 min): " + ", ".join(f"{load:.2f}" for load in os.getloadavg()))
        base = rates["baseline (DataFrame.to_parquet)"]
        print(f"throughput ratio export/baseline: "
              f"{rates['export as built (statistics measured by the filter)'] / base:.2f}x as built, "
              f"{rates['export of a file no stage measured (caches empty)'] / base:.2f}x for a file no stage measured")
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


def _dataset_dir(pipelines: Path, name: str) -> str:
    from fcbench.config import load_pipelines

    return load_pipelines(pipelines).pipelines[name].dataset_dir.removeprefix("datasets/")


def _print_shape(build: Path) -> None:
    """The built benchmark's Table 3 row and context figures (from the export's card statistics)."""
    validated = build / "validated.jsonl"
    if not validated.is_file():
        return
    from fcbench.formats import read_samples
    from fcbench.stats.tables import compute_stats

    stats = compute_stats(read_samples(validated, "fcbench"))
    overall = stats.domains[-1]
    print(f"built: {overall.samples} samples, {overall.avg_steps:.2f} steps and {overall.avg_calls:.2f} calls a sample, "
          f"context {overall.avg_context_tokens:,.0f} tokens on average, {overall.max_context_tokens:,} at most "
          f"({stats.encoding}), {stats.long_context_share:.0%} over 32k, longest value {overall.longest_value} chars")


if __name__ == "__main__":
    main()
