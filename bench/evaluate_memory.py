"""`evaluate`'s peak memory against the number of samples: the streamed runner (this tree) vs its
baseline (the runner before streaming, which held the split's samples and scored them all at
once: commit dc347a2, extracted with `git archive`), side by side on the same inputs.

Input: canonical JSONL samples, `--input FILE` (e.g. the validated.jsonl of a travel-full build
kept by `bench/cfb_scale.py --keep DIR`) or, by default, `--synthetic N` long-context samples
from cfb_scale.py's generator. The input is replicated `--copies` times (1, 2, 4 by default): each
copy's samples get their own ids and a `[copy k]` prefix on the query, so every request is a real
one. With `--parquet` the replicated samples are exported first (`split: ratio`, all in `test`,
Parquet shards as `build-dataset export` writes them) and evaluate reads that split, as in a
build; without it, evaluate reads the JSONL file (`--input`). For each size, `build-dataset
evaluate --context-window 128000 --json` runs
against the local mock server (one final-text answer per sample, as in cfb_scale.py), baseline
then streamed, each in a fresh build folder and its own subprocess; printed: wall time and peak
RSS (`wait4`'s `ru_maxrss`) of each, and whether the two wrote byte-identical trajectories.jsonl,
scores.json and evaluate.rejects.jsonl. The LAST line is the peak RSS ratio streamed/baseline at
the largest size.

    .venv/bin/python bench/evaluate_memory.py                               # 250 synthetic samples x 1, 2, 4
    .venv/bin/python bench/evaluate_memory.py --input /tmp/cfb/datasets/travel-full/build/validated.jsonl
    .venv/bin/python bench/evaluate_memory.py --input /tmp/cfb/datasets/travel-full/build/validated.jsonl --parquet
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

BASELINE_COMMIT = "dc347a2"  # the last runner that held every sample
OUTPUTS = ("trajectories.jsonl", "scores.json", "evaluate.rejects.jsonl")
PIPELINES = ("pipelines:\n  bench:\n    dataset_dir: data\n    seed: 1\n"
             "    llm: {model: bench-model, temperature: 0.0, concurrency: 4, max_retries: 0}\n"
             "    stages:\n      export: {split: ratio, ratios: {test: 1.0}, formats: [parquet]}\n")
# Runs the CLI of the code found first on sys.path (the baseline's folder is put in front).
CLI = "import sys; sys.path.insert(0, sys.argv.pop(1)); from fcbench.cli import app; app()"


def replicate(source: Path, copies: int, target: Path) -> int:
    """`copies` copies of every sample of `source`, each copy with its own ids and query."""
    count = 0
    with open(target, "w", encoding="utf-8") as out:
        for copy in range(1, copies + 1):
            with open(source, encoding="utf-8") as lines:
                for line in lines:
                    if not line.strip():
                        continue
                    record = json.loads(line)
                    if copy > 1:
                        record["id"] = f"{record['id']}-copy{copy}"
                        first = next(m for m in record["messages"] if m.get("role") == "user")
                        first["content"] = f"[copy {copy}] {first['content']}"
                    out.write(json.dumps(record, ensure_ascii=False) + "\n")
                    count += 1
    return count


def export_split(samples: Path, work: Path) -> Path:
    """The samples exported as one `test` split (Parquet shards under work/data/build/export)."""
    from fcbench.config import load_pipelines
    from fcbench.export.single import run_export_stage

    work.mkdir(parents=True)
    (work / "pipelines.yaml").write_text(PIPELINES, encoding="utf-8")
    run_export_stage(load_pipelines(work / "pipelines.yaml").get_pipeline("bench"), samples)
    return work / "data" / "build" / "export"


def run_evaluate(code_dir: Path, work: Path, samples: Path, base_url: str, export: Path | None):
    from cfb_scale import run_stage

    work.mkdir(parents=True)
    (work / "pipelines.yaml").write_text(PIPELINES, encoding="utf-8")
    source = ["--input", str(samples)]
    if export is not None:  # the same exported split for both runs, in each one's build folder
        (work / "data" / "build").mkdir(parents=True)
        (work / "data" / "build" / "export").symlink_to(export)
        source = ["--split", "test"]
    command = [sys.executable, "-c", CLI, str(code_dir), "evaluate", "bench", "--file", str(work / "pipelines.yaml"),
               "--model", "bench-model", "--base-url", base_url, *source, "--context-window", "128000", "--json"]
    env = {**os.environ, "FCBENCH_PROGRESS": "0", "OPENAI_API_KEY": "mock-server-key"}
    result = run_stage("evaluate", command, work, env)
    if result.exit_code != 0:
        raise SystemExit(f"evaluate ({code_dir}) failed: {result.tail}")
    return result, work / "data" / "build" / "eval" / "bench-model"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--input", type=Path, help="canonical JSONL samples (default: synthetic ones)")
    parser.add_argument("--synthetic", type=int, default=250, help="synthetic samples without --input")
    parser.add_argument("--copies", type=int, nargs="+", default=[1, 2, 4])
    parser.add_argument("--baseline", default=BASELINE_COMMIT, help="the commit whose runner is the baseline")
    parser.add_argument("--parquet", action="store_true", help="export the samples and evaluate the split")
    args = parser.parse_args()

    from cfb_scale import SYNTHETIC, _final_text, write_synthetic
    from fcbench.llm.mock_server import MockLLMServer

    root = Path(tempfile.mkdtemp(prefix="fcbench-evaluate-memory."))
    try:
        baseline = root / "baseline"
        baseline.mkdir()
        archive = subprocess.run(["git", "-C", str(REPO), "archive", args.baseline, "fcbench"], check=True,
                                 capture_output=True).stdout
        subprocess.run(["tar", "-x", "-C", str(baseline)], input=archive, check=True)
        source = args.input
        if source is None:
            write_synthetic(root / "synthetic", args.synthetic)
            source = root / "synthetic" / "datasets" / SYNTHETIC / "build" / "candidates.jsonl"
        print(f"input {source} ({source.stat().st_size / 1e6:.0f} MB), evaluate reading "
              f"{'its exported Parquet split' if args.parquet else 'the JSONL file'}; baseline: the runner of "
              f"{args.baseline}")
        ratio = None
        with MockLLMServer(responder=_final_text) as server:
            for copies in args.copies:
                samples = root / f"samples-x{copies}.jsonl"
                count = replicate(source, copies, samples)
                export = export_split(samples, root / f"x{copies}-export") if args.parquet else None
                old, old_dir = run_evaluate(baseline, root / f"x{copies}-baseline", samples, server.base_url, export)
                new, new_dir = run_evaluate(REPO, root / f"x{copies}-streamed", samples, server.base_url, export)
                # scores.json names its input: with --parquet, the split in each run's own build folder
                same = all((old_dir / name).read_bytes().replace(b"-baseline/", b"/")
                           == (new_dir / name).read_bytes().replace(b"-streamed/", b"/") for name in OUTPUTS)
                print(f"{count:6,} samples ({samples.stat().st_size / 1e6:5.0f} MB): baseline {old.seconds:6.1f} s "
                      f"{old.rss_mb:6,.0f} MB | streamed {new.seconds:6.1f} s {new.rss_mb:6,.0f} MB | outputs "
                      f"{'byte-identical' if same else 'DIFFER'}", flush=True)
                ratio = (count, new.rss_mb / old.rss_mb)
                samples.unlink()
                for work in root.glob(f"x{copies}-*"):
                    shutil.rmtree(work)
        print("load average (1, 5, 15 min): " + ", ".join(f"{load:.2f}" for load in os.getloadavg()))
        if ratio is not None:
            print(f"peak RSS ratio streamed/baseline at {ratio[0]:,} samples: {ratio[1]:.2f}x")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
