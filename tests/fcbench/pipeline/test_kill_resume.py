"""A kill -9 at any point of a stage, over an existing build, then a re-run of that stage, gives the
same build tree, byte for byte, as one clean run: outputs, rejects, summaries, and no leftover
temporary file or work folder.

Each stage of the bundled travel pipeline (offline) is killed at 4 points, one drawn from a seeded
generator in each quarter of the time a clean run of it takes (so the start, the middle and the
end of the run are all hit), each time over a copy of the complete build.
"""

from __future__ import annotations

import hashlib
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
BUILD_DATASET = str(Path(sys.executable).parent / "build-dataset")
STAGES = [["stage1", "travel"], ["stage3", "run", "travel"], ["filter", "travel"], ["export", "travel"]]
KILLS_PER_STAGE = 4  # one per quarter of the run: as much coverage as 10 random points, in 40% of the time


def _tree(folder: Path) -> dict[str, str]:
    """Every file (hidden ones too) under the build folder with its content hash."""
    return {str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(folder.rglob("*")) if path.is_file()}


def _run(arguments: list[str], cwd: Path) -> None:
    subprocess.run([BUILD_DATASET, *arguments, "--file", "pipelines.yaml"], cwd=cwd, check=True,
                   capture_output=True, timeout=300, env={**os.environ, "FCBENCH_PROGRESS": "0"})


@pytest.fixture(scope="module")
def clean_build(tmp_path_factory) -> tuple[Path, dict[str, float]]:
    """A complete offline build of the travel example, and how long each stage takes on it."""
    root = tmp_path_factory.mktemp("clean")
    shutil.copytree(REPO / "datasets" / "travel", root / "datasets" / "travel",
                    ignore=shutil.ignore_patterns("build", "__pycache__"))
    shutil.copy(REPO / "pipelines.yaml", root / "pipelines.yaml")
    _run(["stage1", "travel"], root)
    _run(["stage2", "pull", "travel", "--from-export", "datasets/travel/annotations/stage2_export.json"], root)
    for arguments in STAGES:
        _run(arguments, root)
    # Then each stage once more over the complete build: the state a re-run reaches (its summary
    # says what it replaced), and the time a run takes, over which the kills are spread.
    durations = {}
    for arguments in STAGES:
        started = time.monotonic()
        _run(arguments, root)
        durations[arguments[0]] = time.monotonic() - started
    return root, durations


@pytest.mark.parametrize("arguments", STAGES, ids=[a[0] for a in STAGES])
def test_a_kill_at_any_point_then_a_rerun_gives_the_same_build_tree(clean_build, tmp_path, arguments):
    root, durations = clean_build
    work = tmp_path / "work"  # one path for every run: summaries name their files by absolute path
    shutil.copytree(root, work)
    _run(arguments, work)
    expected = _tree(work / "datasets" / "travel" / "build")
    points = random.Random(f"kill-{arguments[0]}")
    for attempt in range(KILLS_PER_STAGE):
        shutil.rmtree(work)
        shutil.copytree(root, work)
        process = subprocess.Popen([BUILD_DATASET, *arguments, "--file", "pipelines.yaml"], cwd=work,
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                   env={**os.environ, "FCBENCH_PROGRESS": "0"})
        quarter = durations[arguments[0]] / KILLS_PER_STAGE
        time.sleep(points.uniform(attempt * quarter, (attempt + 1) * quarter))
        process.send_signal(signal.SIGKILL)
        process.wait()
        _run(arguments, work)
        assert _tree(work / "datasets" / "travel" / "build") == expected, f"kill {attempt} of {arguments[0]}"
