"""One writer per build, and one editor of pipelines.yaml at a time, between real processes.

A second command on a build another command is writing is refused at once, naming the holder's
pid; once the holder is killed (SIGKILL: it releases nothing itself) the next command proceeds and
says on stderr that it took the lock over. `new` commands started together all land in
pipelines.yaml (each waits for the others under the file's lock and reads the file again).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import EXTERNAL, REPO
from fcbench.config import load_pipelines
from fcbench.jsonl import dumps_line
from fcbench.runtime.writer_lock import BUILD_LOCK_NAME, BuildLocked, writer_lock
from fcbench.sample import Call
from filter_cases import candidate_line, write_pipeline

DEADLINE_S = 60  # generous: the machine is shared; nothing here measures a duration


def _cli(*args: str, cwd: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "fcbench.cli", *args], cwd=cwd, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, start_new_session=True)


def _wait_for(probe, what: str):
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        value = probe()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"no {what} within {DEADLINE_S} s")


def _holder(lock: Path) -> dict | None:
    try:
        value = json.loads(lock.read_text())
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) and value.get("pid") else None


def test_a_second_command_on_a_build_is_refused_with_the_holders_pid_and_a_killed_holder_frees_it(tmp_path):
    # enough slow candidates that the first filter is still running when the others start
    slow = [dumps_line(candidate_line(f"slow-{i}", f"Add {i} and {i + 1}.",
                                      [[Call(label="c1", name="slow_add", arguments={"a": i, "b": i + 1})]],
                                      answer=2 * i + 1)) for i in range(60)]
    pipelines = write_pipeline(tmp_path, slow)
    lock = tmp_path / "toy" / "build" / BUILD_LOCK_NAME
    first = _cli("filter", "toy", "--file", str(pipelines), cwd=tmp_path)
    try:
        holder = _wait_for(lambda: _holder(lock), "lock file")
        assert holder["pid"] == first.pid and "filter toy" in holder["command"]
        for second in (["filter", "toy", "--file", str(pipelines)], ["run", "toy", "--file", str(pipelines), "--offline"],
                       ["export", "toy", "--file", str(pipelines)]):
            refused = subprocess.run([sys.executable, "-m", "fcbench.cli", *second], cwd=tmp_path, capture_output=True,
                                     text=True, timeout=DEADLINE_S)
            assert refused.returncode == 1, refused.stderr
            assert f"pid {first.pid}" in refused.stderr and "is being written by" in refused.stderr
            assert "Traceback" not in refused.stderr and len(refused.stderr.strip().splitlines()) == 1
        assert first.poll() is None  # the holder was not disturbed
        os.kill(first.pid, signal.SIGKILL)
        first.wait(timeout=DEADLINE_S)
    finally:
        if first.poll() is None:
            os.killpg(first.pid, signal.SIGKILL)
            first.wait()
        first.stdout.close()
        first.stderr.close()
    assert _holder(lock)["pid"] == first.pid  # a kill -9 releases the lock but leaves the file
    after = subprocess.run([sys.executable, "-m", "fcbench.cli", "report", "toy", "--file", str(pipelines)],
                           cwd=tmp_path, capture_output=True, text=True, timeout=DEADLINE_S)
    assert after.returncode == 0, after.stderr
    assert f"took over the lock of pid {first.pid}" in after.stderr and "no longer running" in after.stderr
    assert not lock.exists()  # released with the command


def test_the_lock_is_reentrant_in_its_process_and_released_after(tmp_path):
    lock = tmp_path / "build" / BUILD_LOCK_NAME
    with writer_lock(lock, "the build"):
        with writer_lock(lock, "the build"):  # `run` holds it while a stage takes it again
            assert json.loads(lock.read_text())["pid"] == os.getpid()
        assert lock.exists()
    assert not lock.exists()
    # held by another process: refused at once, or after waiting for it
    holder = subprocess.Popen([sys.executable, "-c", (
        "import sys, time; from pathlib import Path; from fcbench.runtime.writer_lock import writer_lock\n"
        f"with writer_lock(Path({str(lock)!r}), 'x'):\n    print('held', flush=True); time.sleep(600)")],
        stdout=subprocess.PIPE, text=True, cwd=REPO)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(BuildLocked, match=f"pid {holder.pid}"):
            with writer_lock(lock, "the build"):
                pass
        with pytest.raises(BuildLocked, match=r"waited 0.3 s"):
            with writer_lock(lock, "the build", wait_s=0.3):
                pass
    finally:
        holder.kill()
        holder.wait()
        holder.stdout.close()
    taken_over: list[str] = []
    with writer_lock(lock, "the build", warn=taken_over.append):
        pass
    assert len(taken_over) == 1 and f"pid {holder.pid}" in taken_over[0]


def test_new_commands_started_together_each_add_their_pipeline(tmp_path):
    pipelines = tmp_path / "pipelines.yaml"
    pipelines.write_text("# comments stay\npipelines:\n  first:\n    dataset_dir: datasets/first\n")
    description = EXTERNAL / "amadeus" / "AirportCitySearch_v1_swagger_specification.json"
    names = [f"api-{index}" for index in range(5)]
    processes = [_cli("new", name, "--openapi", str(description), "--file", str(pipelines), cwd=tmp_path)
                 for name in names]
    outputs = []
    for process in processes:
        out, err = process.communicate(timeout=DEADLINE_S * 3)
        outputs.append((process.returncode, out, err))
    assert all(code == 0 for code, _, _ in outputs), outputs
    assert all("pipeline added" in out for _, out, _ in outputs)
    declared = load_pipelines(pipelines).pipelines
    assert sorted(declared) == sorted(["first", *names])  # nobody's pipeline lost
    assert pipelines.read_text().startswith("# comments stay\npipelines:\n  first:\n")
    assert not (tmp_path / ".pipelines.yaml.lock").exists()
    assert [path.name for path in tmp_path.iterdir() if path.name.startswith(".")] == []  # no temporary file left
