"""Ray backend of the python environment: gold paths run as Ray tasks, in batches.

`environment.backend: ray` keeps every guarantee of the local pool because each Ray task drives
the very same worker subprocess (`worker.py` through a one-worker `PythonEnvironment`, kept alive
in the Ray worker process between tasks): the per-call timeout, the memory cap, the empty network
namespace, the call-seeded randomness and the JSON check of results all apply unchanged. A task
answers its batch in the compact form the local pool decodes (`PathRun.to_compact`), so the runs,
and every file a stage writes from them, are byte-identical to the local backend's.

Where it runs: with no `address`, a local Ray cluster this object starts (loopback only, no
dashboard, a small object store) and stops on `close`; with an address, an existing cluster
(`ray://head:10001`, `head:6379`, `auto`) whose nodes have fcbench installed and the tool module
at the same path. A driver already connected to Ray (`ray.is_initialized()`) is used as it is.

Faults: a batch whose Ray worker died (killed, out of memory, node lost) is submitted again, up
to `max_retries` times; results are stored by path index, so a retried batch never duplicates a
run. A batch still lost after that ends the command with a user error; the filter's journal keeps
every batch decided before, so a re-run resumes and converges to the same files.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import logging
import os
import pickle
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Mapping, Sequence

from fcbench.environments import CallOutcome, Environment, PathRun, PlannedCall
from fcbench.environments.python_env import DEFAULT_MEMORY_LIMIT_MB, EnvironmentStartError, PythonEnvironment
from fcbench.errors import UserError

if TYPE_CHECKING:
    from fcbench.sample import Tool

# Ray resolves "127.0.0.1" to the machine's reachable address and its gRPC servers listen on every
# interface, unless it believes it runs on a laptop-only platform: this switch (read by Ray at
# import and inherited by the processes it starts) keeps a local cluster on loopback.
_LOOPBACK_SWITCH = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
IN_FLIGHT_PER_CPU = 2  # batches queued per CPU: enough to keep workers busy, bounded memory


class RayBatchLost(UserError):
    """A batch could not be run even after its retries (the cluster keeps losing its workers)."""


# --- inside a Ray worker process ---------------------------------------------------------------

_ENVIRONMENTS: "OrderedDict[str, PythonEnvironment]" = OrderedDict()
_KEPT_ENVIRONMENTS = 2  # tool modules kept warm per Ray worker process


def _environment(key: str, config: Mapping[str, Any]) -> PythonEnvironment:
    """The one-worker pool for this configuration, started at the first task and kept for the
    next ones (a worker subprocess imports the tool module once, not once per batch)."""
    environment = _ENVIRONMENTS.get(key)
    if environment is None:
        environment = PythonEnvironment(config["module"], config["schemas"], workers=1, timeout=config["timeout"],
                                        memory_limit_mb=config["memory_limit_mb"], seed=config["seed"],
                                        isolate_network=config["isolate_network"])
        _ENVIRONMENTS[key] = environment
        while len(_ENVIRONMENTS) > _KEPT_ENVIRONMENTS:
            _ENVIRONMENTS.popitem(last=False)[1].close()
    _ENVIRONMENTS.move_to_end(key)
    return environment


@atexit.register
def _close_environments() -> None:
    while _ENVIRONMENTS:
        _ENVIRONMENTS.popitem()[1].close()


def hello_task(key: str, config: Mapping[str, Any]) -> dict[str, Any]:
    environment = _environment(key, config)
    return {"tools": environment.tool_names, "network_isolated": environment.network_isolated,
            "memory_capped": environment.memory_capped}


def run_paths_task(key: str, config: Mapping[str, Any], paths: Sequence[Any]) -> tuple[bytes, int]:
    """Run a batch of paths (plain `(label, name, arguments)` triples); the answers as one JSON
    array of compact runs, and how many worker subprocesses had to be replaced meanwhile."""
    environment = _environment(key, config)
    replaced = environment.replaced_workers
    planned = [[[PlannedCall(*call) for call in step] for step in path] for path in paths]
    runs = environment.run_paths(planned)
    answers = json.dumps([run.to_compact() for run in runs], ensure_ascii=False).encode()
    return answers, environment.replaced_workers - replaced


def call_step_task(key: str, config: Mapping[str, Any], calls: Sequence[tuple[str, Mapping[str, Any]]]) -> bytes:
    outcomes = _environment(key, config).call_step(calls)
    return json.dumps([outcome.to_json() for outcome in outcomes], ensure_ascii=False).encode()


# --- in the driver -----------------------------------------------------------------------------


def _import_ray(local_cluster: bool) -> Any:
    if local_cluster:
        os.environ[_LOOPBACK_SWITCH] = "0"
    try:
        import ray
        from ray._private import ray_constants
    except ImportError:
        raise EnvironmentStartError("environment.backend 'ray' needs Ray: pip install 'fcbench[ray]'") from None
    if local_cluster:  # Ray may have been imported before the switch was set
        ray_constants.ENABLE_RAY_CLUSTER = False
    return ray


class RayEnvironment(Environment):
    """The python environment's tools, run by Ray tasks that each drive a worker subprocess."""

    def __init__(
        self,
        module: str | Path,
        tools: Iterable["Tool"] | Mapping[str, Mapping[str, Any]] | None = None,
        *,
        address: str | None = None,
        num_cpus: int | None = None,
        paths_per_task: int = 256,
        max_retries: int = 3,
        object_store_mb: int = 100,
        timeout: float = 5.0,
        memory_limit_mb: int | None = DEFAULT_MEMORY_LIMIT_MB,
        seed: int = 0,
        isolate_network: bool = True,
    ) -> None:
        self.module = Path(module).resolve()
        if not self.module.is_file():
            raise EnvironmentStartError(f"{self.module}: no such tool module")
        schemas: dict[str, Any] = {}
        if isinstance(tools, Mapping):
            schemas = {str(name): dict(schema) for name, schema in tools.items()}
        elif tools is not None:
            schemas = {tool.name: tool.parameters for tool in tools}
        self._config = {"module": str(self.module), "schemas": schemas, "timeout": timeout,
                        "memory_limit_mb": memory_limit_mb, "seed": seed, "isolate_network": isolate_network}
        self._key = hashlib.sha256(pickle.dumps(sorted(self._config.items(), key=lambda item: item[0]))).hexdigest()
        self.paths_per_task = paths_per_task
        self.max_retries = max_retries
        self.retried_batches = 0  # batches submitted again after their Ray worker died
        self.replaced_workers = 0  # worker subprocesses replaced inside the Ray tasks (timeouts, crashes)
        self.tasks = 0
        self._ray = _import_ray(local_cluster=address is None)
        self._owns_connection = False
        self._closed = False
        ray = self._ray
        if not ray.is_initialized():
            quiet = {"log_to_driver": False, "logging_level": logging.WARNING}
            if address is None:
                ray.init(address="local", num_cpus=num_cpus or 2, include_dashboard=False,
                         object_store_memory=object_store_mb * 1024 * 1024, **quiet)
            else:
                try:
                    ray.init(address=address, **quiet)
                except (ConnectionError, RuntimeError, ValueError) as exc:
                    raise EnvironmentStartError(f"cannot join the Ray cluster at {address}: {exc}") from None
            self._owns_connection = True
        try:
            # the configuration travels once into the object store, not with every task
            self._config_ref = ray.put(self._config)
            self._hello = ray.remote(max_retries=0)(hello_task)
            self._run_paths = ray.remote(max_retries=0)(run_paths_task)
            self._call_step = ray.remote(max_retries=0)(call_step_task)
            self.cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
            try:
                hello = ray.get(self._hello.remote(self._key, self._config_ref))
            except ray.exceptions.RayTaskError as exc:
                raise EnvironmentStartError(str(getattr(exc, "cause", exc))) from None
        except BaseException:
            self.close()
            raise
        self.tool_names: list[str] = hello["tools"]
        self.network_isolated: bool = hello["network_isolated"]
        self.memory_capped: bool = hello["memory_capped"]

    # -- the Environment interface ------------------------------------------------------------

    def call(self, name: str, arguments: Mapping[str, Any]) -> CallOutcome:
        return self.call_step([(name, arguments)])[0]

    def call_step(self, calls: Sequence[tuple[str, Mapping[str, Any]]]) -> list[CallOutcome]:
        plain = [(name, dict(arguments)) for name, arguments in calls]
        answers = self._get_with_retries(lambda: self._call_step.remote(self._key, self._config_ref, plain),
                                         f"a step of {len(calls)} call(s)")
        return [CallOutcome.from_json(answer) for answer in json.loads(answers)]

    def iter_run_paths(self, paths: Sequence[Sequence[Sequence[PlannedCall]]]) -> Iterator[tuple[int, PathRun]]:
        """Batches of paths as Ray tasks, at most a few per CPU queued at once; `(index, run)`
        yielded as each batch comes back."""
        if self._closed:
            raise RuntimeError("the ray environment is closed")
        ray = self._ray
        # spread a small request over every CPU rather than filling one batch
        size = max(1, min(self.paths_per_task, -(-len(paths) // self.cpus)))
        spans = iter([(start, min(start + size, len(paths))) for start in range(0, len(paths), size)])
        in_flight: dict[Any, tuple[int, int]] = {}
        attempts: dict[tuple[int, int], int] = {}
        try:
            while True:
                while len(in_flight) < self.cpus * IN_FLIGHT_PER_CPU:
                    span = next(spans, None)
                    if span is None:
                        break
                    in_flight[self._submit(paths, span)] = span
                if not in_flight:
                    return
                done, _ = ray.wait(list(in_flight), num_returns=1)
                span = in_flight.pop(done[0])
                try:
                    answers, replaced = ray.get(done[0])
                except ray.exceptions.RayTaskError as exc:  # the task itself raised: not worth retrying
                    raise RayBatchLost(f"Ray task failed on paths {span[0]}-{span[1] - 1}: "
                                       f"{getattr(exc, 'cause', exc)}") from None
                except ray.exceptions.RayError as exc:  # the worker or its node died: run the batch again
                    attempts[span] = attempts.get(span, 0) + 1
                    if attempts[span] > self.max_retries:
                        raise RayBatchLost(f"Ray lost paths {span[0]}-{span[1] - 1} {attempts[span]} times "
                                           f"({type(exc).__name__}); re-run the command to resume") from None
                    self.retried_batches += 1
                    in_flight[self._submit(paths, span)] = span
                    continue
                self.replaced_workers += replaced
                for offset, answer in enumerate(json.loads(answers)):
                    index = span[0] + offset
                    yield index, PathRun.from_compact(answer, paths[index])
        finally:
            for ref in in_flight:  # the caller stopped early: drop what is still queued
                ray.cancel(ref, force=False)

    def _submit(self, paths: Sequence[Sequence[Sequence[PlannedCall]]], span: tuple[int, int]) -> Any:
        # plain tuples: cheaper to pickle than NamedTuples
        plain = [[[(call.label, call.name, call.arguments) for call in step] for step in paths[index]]
                 for index in range(*span)]
        self.tasks += 1
        return self._run_paths.remote(self._key, self._config_ref, plain)

    def _get_with_retries(self, submit: Any, what: str) -> Any:
        ray = self._ray
        for attempt in range(self.max_retries + 1):
            try:
                return ray.get(submit())
            except ray.exceptions.RayTaskError as exc:
                raise RayBatchLost(f"Ray task failed on {what}: {getattr(exc, 'cause', exc)}") from None
            except ray.exceptions.RayError as exc:
                if attempt == self.max_retries:
                    raise RayBatchLost(f"Ray lost {what} {attempt + 1} times ({type(exc).__name__})") from None
                self.retried_batches += 1
        raise AssertionError("unreachable")

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._owns_connection:
            # a local cluster we started stops here (its workers, and their worker subprocesses,
            # with it); for an existing cluster this only disconnects this driver
            self._ray.shutdown()
