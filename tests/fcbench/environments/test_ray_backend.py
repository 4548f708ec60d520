"""The Ray backend on a real local Ray cluster (127.0.0.1, 2 CPUs, no dashboard): the filter's
files are byte-identical to the local pool's, the worker guards still apply, and a Ray worker
killed mid-batch costs a retry, never a lost or duplicated result."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import TEST_DATA
from fcbench.cli import app
from fcbench.environments import ErrorReason, PlannedCall
from fcbench.environments.python_env import PythonEnvironment
from fcbench.jsonl import dumps_line
from fcbench.sample import Call, Sample, sample_to_dict

ray = pytest.importorskip("ray", reason="the Ray backend is tested where `fcbench[ray]` is installed (CI installs it)")

from fcbench.environments.ray_backend import RayBatchLost, RayEnvironment, start_local_cluster  # noqa: E402
from filter_cases import TOOLS, TOOLS_MODULE, one_of_each_failure  # noqa: E402

RAY_TOOLS = TEST_DATA / "ray_tools.py"
OUTPUTS = ("validated.jsonl", "validated.rejects.jsonl", "filter.summary.json")


def _candidates() -> list[str]:
    """Every failure kind of the filter tests (minus the tool that answers differently on every
    run) and 300 nested additions, so the filter sends several batches."""
    lines = [line for line in one_of_each_failure() if not _calls_ticket(line)]
    for i in range(300):
        calls = [[Call(label="c1", name="add", arguments={"a": i, "b": 1})],
                 [Call(label="c2", name="add", arguments={"a": "$c1.result$", "b": i % 7})]]
        sample = Sample(id=f"chain{i:03d}", messages=[{"role": "user", "content": f"Add {i} and 1, then {i % 7}."}],
                        tools=TOOLS, calls=calls, answer=i + 1 + i % 7)
        lines.append(dumps_line(sample_to_dict(sample)))
    return lines


def _calls_ticket(line: str) -> bool:
    try:
        record = json.loads(line)
    except ValueError:
        return False  # the broken line: kept, it must be rejected the same way on both backends
    return any(call.get("name") == "ticket" for step in record.get("calls") or [] for call in step)


def _pipeline(folder: Path, backend: str) -> Path:
    (folder / "toy").mkdir(parents=True)
    (folder / "toy" / "candidates.jsonl").write_text("\n".join(_candidates()) + "\n")
    pipelines = folder / "pipelines.yaml"
    pipelines.write_text(textwrap.dedent(f"""\
        pipelines:
          toy:
            dataset_dir: toy
            seed: 3
            environment:
              kind: python
              module: {TOOLS_MODULE}
              timeout_s: 5
              workers: 2
              backend: {backend}
              ray: {{paths_per_task: 32}}
            stages:
              filter: {{input: toy/candidates.jsonl, repeat: 2}}
        """))
    return pipelines


def test_the_filter_on_ray_writes_the_same_bytes_as_the_local_pool(tmp_path):
    for backend in ("local", "ray"):
        result = CliRunner().invoke(app, ["filter", "toy", "--file", str(_pipeline(tmp_path / backend, backend)), "--json"])
        assert result.exit_code == 0, result.output
    assert not ray.is_initialized()  # the command stopped the local cluster it started
    for name in OUTPUTS:
        local = (tmp_path / "local" / "toy" / "build" / name).read_bytes()
        on_ray = (tmp_path / "ray" / "toy" / "build" / name).read_bytes()
        assert on_ray == local.replace(str(tmp_path / "local").encode(), str(tmp_path / "ray").encode()), name
    summary = json.loads((tmp_path / "ray" / "toy" / "build" / "filter.summary.json").read_text())
    assert summary["counts"]["passed"] >= 300 and summary["total"] == len(_candidates())
    assert summary["counts"]["failed_execution"] >= 1 and summary["counts"]["failed_format"] >= 1


@pytest.fixture(scope="module")
def cluster():
    """One local cluster for the remaining tests (starting one takes seconds)."""
    start_local_cluster(num_cpus=2, object_store_mb=100)
    assert ray.get_runtime_context().gcs_address.startswith("127.0.0.1:")  # loopback only
    yield
    ray.shutdown()


def _paths(marker: Path, n: int = 120, kill_at: int = 70) -> list[list[list[PlannedCall]]]:
    paths = []
    for i in range(n):
        first = PlannedCall("c1", "noisy", {"a": i})
        if i == kill_at:  # in the middle of a batch
            first = PlannedCall("c1", "kill_ray_worker_once", {"a": i, "marker": str(marker)})
        second = (PlannedCall("c2", "boom", {"a": "$c1.result$"}) if i % 25 == 0
                  else PlannedCall("c2", "add", {"a": "$c1.result$", "b": i}))
        paths.append([[first], [second]])
    return paths


def test_a_ray_worker_killed_mid_batch_is_retried_without_loss_or_duplicates(cluster, tmp_path):
    marker = tmp_path / "killed-once"  # written by the tool: its folder is made writable for it
    paths = _paths(marker)
    with RayEnvironment(RAY_TOOLS, paths_per_task=20, seed=5, writable=[tmp_path]) as environment:
        assert environment.network_isolated == PythonEnvironment(RAY_TOOLS, workers=1).network_isolated
        yielded = list(environment.iter_run_paths(paths))
        assert environment.retried_batches >= 1
    assert marker.exists()  # the kill really happened
    indexes = [index for index, _ in yielded]
    assert sorted(indexes) == list(range(len(paths)))  # every path once: none lost, none twice

    with PythonEnvironment(RAY_TOOLS, workers=2, seed=5, writable=[tmp_path]) as local:  # the marker exists: no kill
        expected = local.run_paths(paths)
    runs = dict(yielded)
    assert [runs[i].to_compact() for i in range(len(paths))] == [run.to_compact() for run in expected]
    assert runs[25].failed.outcome.reason is ErrorReason.TOOL_ERROR and not runs[26].failed


def test_a_batch_lost_beyond_its_retries_is_a_user_error_and_a_rerun_converges(cluster, tmp_path):
    marker = tmp_path / "killed-once"
    paths = _paths(marker, 40, kill_at=23)
    with RayEnvironment(RAY_TOOLS, paths_per_task=10, max_retries=0, seed=5, writable=[tmp_path]) as environment:
        with pytest.raises(RayBatchLost, match="re-run the command to resume"):
            list(environment.iter_run_paths(paths))
    with RayEnvironment(RAY_TOOLS, paths_per_task=10, max_retries=0, seed=5, writable=[tmp_path]) as environment:
        again = environment.run_paths(paths)
        assert environment.retried_batches == 0
    with PythonEnvironment(RAY_TOOLS, workers=2, seed=5, writable=[tmp_path]) as local:
        assert [run.to_compact() for run in again] == [run.to_compact() for run in local.run_paths(paths)]


def test_the_worker_guards_apply_inside_ray_tasks(cluster):
    bad_tools = TEST_DATA / "bad_tools.py"
    with RayEnvironment(bad_tools, timeout=10, memory_limit_mb=512) as environment, \
            PythonEnvironment(bad_tools, workers=1, timeout=10, memory_limit_mb=512) as local:
        assert environment.memory_capped and environment.tool_names == local.tool_names
        expected = {"hangs": ErrorReason.TIMEOUT,
                    "allocates_without_bound": ErrorReason.MEMORY, "dies": ErrorReason.WORKER_DIED,
                    "returns_a_set": ErrorReason.NOT_SERIALISABLE}
        for name, reason in expected.items():
            on_ray, here = environment.call(name, {}), local.call(name, {})
            assert on_ray.reason is reason and here.reason is reason, (name, on_ray, here)
        assert environment.call("network_status", {}) == local.call("network_status", {})
        assert environment.call("subtract", {"a": 5, "b": 2}).response == {"result": 3}
