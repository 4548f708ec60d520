"""Tool workers in a minimal environment, a private folder and their own process group
(fcbench/environments/sandbox.py): a tool never sees a planted secret, writes only where it may,
and nothing it starts outlives the command, even a killed one."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from conftest import TEST_DATA
from fcbench.environments import ErrorReason
from fcbench.environments.python_env import PythonEnvironment
from fcbench.environments.sandbox import landlock_abi, worker_environment

TOOLS = TEST_DATA / "sandbox_tools.py"
BUILD_DATASET = Path(sys.executable).parent / "build-dataset"
PLANTED = {"OPENAI_API_KEY": "sk-planted-openai-5f1c", "MY_API_TOKEN": "tok-planted-auth-env-9a2e",
           "FCBENCH_LS_TOKEN": "ls-planted-token-77b0", "AWS_SECRET_ACCESS_KEY": "aws-planted-secret-3d4f"}


@pytest.fixture
def planted(monkeypatch):
    for name, value in PLANTED.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("LANG", "C.UTF-8")
    monkeypatch.setenv("EXTRA_FOR_TOOLS", "named-in-pass-env")
    return PLANTED


def test_a_tool_sees_only_the_allow_list_never_a_secret(planted):
    with PythonEnvironment(TOOLS, workers=1, timeout=10, pass_env=["EXTRA_FOR_TOOLS"]) as environment:
        variables = environment.call("read_environment", {}).response["variables"]
        where = environment.call("where_am_i", {}).response
    text = json.dumps(variables)
    assert not [name for name, secret in planted.items() if secret in text]
    assert set(variables) <= {"PATH", "LANG", "LANGUAGE", "TZ", "PYTHONHASHSEED", "LD_LIBRARY_PATH", "PYTHONPATH",
                              "HOME", "TMPDIR", "FCBENCH_NETWORK", "EXTRA_FOR_TOOLS"} | {
                                  name for name in variables if name.startswith("LC_")}
    assert variables["LANG"] == "C.UTF-8" and variables["EXTRA_FOR_TOOLS"] == "named-in-pass-env"
    # the private folder is the working folder, HOME and TMPDIR; it is gone with the worker
    assert where["cwd"] == where["home"] == where["tmp"] == variables["HOME"]
    assert Path(where["cwd"]).name.startswith("fcbench-tool-") and not Path(where["cwd"]).exists()
    assert where["process_group"] == where["pid"]  # the worker leads a process group of its own


def test_the_worker_environment_is_the_allow_list_plus_home_and_python_path():
    parent = {"PATH": "/bin", "LC_ALL": "C", "OPENAI_API_KEY": "x", "PYTHONPATH": "/extra", "SECRET": "y"}
    environment = worker_environment(parent, Path("/tmp/private"), ["SECRET"])
    assert environment["PATH"] == "/bin" and environment["LC_ALL"] == "C" and environment["SECRET"] == "y"
    assert "OPENAI_API_KEY" not in environment
    assert environment["HOME"] == environment["TMPDIR"] == "/tmp/private"
    assert environment["PYTHONPATH"].split(os.pathsep)[-1] == "/extra"


@pytest.mark.skipif(landlock_abi() < 1, reason="needs Landlock (Linux 5.13+); the CI machines have it")
def test_a_tool_writes_only_in_its_folder_and_the_folders_made_writable(tmp_path):
    allowed = tmp_path / "allowed"
    allowed.mkdir()
    with PythonEnvironment(TOOLS, workers=1, timeout=10, writable=[allowed], max_file_mb=1) as environment:
        assert environment.filesystem_confined
        inside = environment.call("write_file", {"path": "scratch.txt"}).response
        outside = environment.call("write_file", {"path": str(tmp_path / "outside.txt")}).response
        beside = environment.call("write_file", {"path": str(allowed / "ok.txt")}).response
        huge = environment.call("write_file", {"path": "big.bin", "size": 2 * 1024 * 1024}).response
        after = environment.call("where_am_i", {})  # the worker survived the refused writes
    assert inside["written"] and beside["written"] and (allowed / "ok.txt").exists()
    assert outside == {"written": False, "error": "PermissionError", "errno": 13}
    assert not (tmp_path / "outside.txt").exists()
    assert huge["written"] is False and huge["errno"] == 27  # EFBIG: the 1 MB cap, not a dead worker
    assert after.ok


def _processes_with(marker: str) -> list[int]:
    """Live processes whose command line holds `marker` (zombies waiting for a reaper count as gone)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if marker.encode() not in (entry / "cmdline").read_bytes():
                continue
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            found.append(int(entry.name))
    return found


def _appears_within(marker: str, seconds: float = 60.0) -> bool:
    """The child's command line is set a moment after its parent sees the exec succeed."""
    deadline = time.monotonic() + seconds
    while not _processes_with(marker):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def _gone_within(marker: str, seconds: float = 60.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not _processes_with(marker):
            return True
        time.sleep(0.2)
    return False


def _samples(path: Path, calls: list[tuple[str, dict]]) -> Path:
    tools = [{"name": "spawn_sleeper", "parameters": {"type": "object", "properties": {"marker": {"type": "string"}}}},
             {"name": "linger", "parameters": {"type": "object", "properties": {"seconds": {"type": "number"}}}}]
    lines = [{"id": f"s{n}", "messages": [{"role": "user", "content": "go"}], "tools": tools,
              "calls": [[{"label": "var_1", "name": name, "arguments": arguments}]]}
             for n, (name, arguments) in enumerate(calls)]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_a_process_a_tool_started_does_not_outlive_the_command(tmp_path):
    marker = f"fcbench-sleeper-{uuid.uuid4().hex}"
    samples = _samples(tmp_path / "samples.jsonl", [("spawn_sleeper", {"marker": marker})])
    done = subprocess.run([str(BUILD_DATASET), "execute", str(samples), "--tools-module", str(TOOLS), "--json"],
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["items"][0]["ok"] is True  # the child was started
    assert _gone_within(marker)


def test_nor_does_it_outlive_a_killed_command(tmp_path):
    marker = f"fcbench-sleeper-{uuid.uuid4().hex}"
    samples = _samples(tmp_path / "samples.jsonl", [("spawn_sleeper", {"marker": marker}), ("linger", {"seconds": 3})])
    command = subprocess.Popen([str(BUILD_DATASET), "execute", str(samples), "--tools-module", str(TOOLS),
                                ], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not _processes_with(marker) and time.monotonic() < deadline and command.poll() is None:
            time.sleep(0.02)
        (sleeper,) = _processes_with(marker)
        folder = Path(os.readlink(f"/proc/{sleeper}/cwd"))  # the worker's private folder
        assert folder.name.startswith("fcbench-tool-")
        deadline = time.monotonic() + 60
        while not (folder / "sleeper.pid").exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert (folder / "sleeper.pid").exists()
        command.send_signal(signal.SIGKILL)  # no clean-up in the command: the worker must do it
        command.wait(timeout=30)
    finally:
        if command.poll() is None:
            command.kill()
    assert _gone_within(marker)
    # the worker emptied its folder; the next command that starts workers removes it
    deadline = time.monotonic() + 60
    while any(folder.iterdir()) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not any(folder.iterdir())
    with PythonEnvironment(TOOLS, workers=1, timeout=10):
        assert not folder.exists()


def test_a_worker_killed_for_its_timeout_takes_its_children_along(tmp_path):
    marker = f"fcbench-sleeper-{uuid.uuid4().hex}"
    with PythonEnvironment(TOOLS, workers=1, timeout=1) as environment:
        assert environment.call("spawn_sleeper", {"marker": marker}).ok
        assert _appears_within(marker)
        # a call that ignores the worker's timer gets the worker killed and replaced: its group goes too
        timed_out = environment.call("hang_ignoring_the_timer", {})
        assert timed_out.reason is ErrorReason.TIMEOUT
        assert _gone_within(marker)
        assert environment.call("where_am_i", {}).ok  # the replacement serves


def test_a_tool_that_returns_the_environment_puts_no_secret_in_samples_or_exports(tmp_path, planted):
    """The filter keeps each executed response in its sample, and the export publishes it: a tool that
    returns os.environ is the shortest way a key would leak into a published benchmark."""
    from typer.testing import CliRunner

    from fcbench.cli import app

    (tmp_path / "data").mkdir()
    tool = {"name": "read_environment", "description": "Every environment variable the tool can see.",
            "parameters": {"type": "object", "properties": {}},
            "returns": {"type": "object", "properties": {"variables": {"type": "object"}}}}
    (tmp_path / "data" / "tools.json").write_text(json.dumps([tool]))
    candidates = [{"id": f"env-{n}", "domain": "system", "messages": [{"role": "user", "content": "Show the environment."}],
                   "tools": [tool], "calls": [[{"label": "var_1", "name": "read_environment", "arguments": {}}]]}
                  for n in range(3)]
    (tmp_path / "data" / "candidates.jsonl").write_text("".join(json.dumps(line) + "\n" for line in candidates))
    (tmp_path / "pipelines.yaml").write_text(f"""pipelines:
  envleak:
    dataset_dir: data
    seed: 1
    domains: [system]
    tools: data/tools.json
    environment: {{kind: python, module: {TOOLS}, timeout_s: 10}}
    stages:
      filter: {{input: data/candidates.jsonl, grounding: report}}
      export: {{split: ratio, ratios: {{test: 1.0}}, formats: [parquet, fcbench]}}
""")
    runner = CliRunner()
    filtered = runner.invoke(app, ["filter", "envleak", "--file", str(tmp_path / "pipelines.yaml")])
    assert filtered.exit_code == 0, filtered.output
    exported = runner.invoke(app, ["export", "envleak", "--file", str(tmp_path / "pipelines.yaml")])
    assert exported.exit_code == 0, exported.output
    validated = (tmp_path / "data" / "build" / "validated.jsonl").read_text()
    assert validated.count('"FCBENCH_NETWORK"') == 3 and '"PATH"' in validated  # the tool did answer, kept
    leaked = {name: [str(path.relative_to(tmp_path)) for path in tmp_path.rglob("*")
                     if path.is_file() and secret.encode() in path.read_bytes()]
              for name, secret in planted.items()}
    assert leaked == {name: [] for name in planted}
