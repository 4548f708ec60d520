"""A kill -9 at any point of `run travel-chat --offline` (the conversational pipeline: stage1
scenarios and conversations, stage2 from the bundled export, filter, export of both sets, report),
over a complete build, then a re-run, gives the same build tree, byte for byte, as a clean re-run.
Three seeded kill points (the single-turn stages are killed at ten each in test_kill_resume.py)."""

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

REPO = Path(__file__).resolve().parents[3]
BUILD_DATASET = str(Path(sys.executable).parent / "build-dataset")
KILLS = 3


def _tree(folder: Path) -> dict[str, str]:
    return {str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(folder.rglob("*")) if path.is_file()}


def _run(cwd: Path) -> float:
    started = time.monotonic()
    subprocess.run([BUILD_DATASET, "run", "travel-chat", "--offline", "--json", "--file", "pipelines.yaml"], cwd=cwd,
                   check=True, capture_output=True, timeout=300, env={**os.environ, "FCBENCH_PROGRESS": "0"})
    return time.monotonic() - started


def test_a_killed_conversational_run_then_a_rerun_gives_the_same_build_tree(tmp_path):
    root = tmp_path / "clean"
    for folder in ("travel", "travel-chat"):
        shutil.copytree(REPO / "datasets" / folder, root / "datasets" / folder,
                        ignore=shutil.ignore_patterns("build", "__pycache__"))
    shutil.copy(REPO / "pipelines.yaml", root / "pipelines.yaml")
    _run(root)
    work = tmp_path / "work"  # one path for every run: summaries name their files by absolute path
    shutil.copytree(root, work)
    duration = _run(work)
    expected = _tree(work / "datasets" / "travel-chat" / "build")
    assert any(name.startswith("export/function_calling/") for name in expected)
    points = random.Random("kill-travel-chat")
    for attempt in range(KILLS):
        shutil.rmtree(work)
        shutil.copytree(root, work)
        process = subprocess.Popen([BUILD_DATASET, "run", "travel-chat", "--offline", "--file", "pipelines.yaml"],
                                   cwd=work, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                   env={**os.environ, "FCBENCH_PROGRESS": "0"})
        time.sleep(points.uniform(0, duration))
        process.send_signal(signal.SIGKILL)
        process.wait()
        _run(work)
        assert _tree(work / "datasets" / "travel-chat" / "build") == expected, f"kill {attempt}"
