"""Ray backend of the python environment: gold paths run as Ray actor tasks, in batches.

`environment.backend: ray` keeps every guarantee of the local pool because each Ray actor (one per
CPU) drives the very same worker subprocess (`worker.py` through a one-worker `PythonEnvironment`,
kept alive between batches): the per-call timeout, the memory cap, the empty network
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

import json
import logging
import os
from collections import deque
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Mapping, Sequence

from fcbench.environments import CallOutcome, Environment, PathRun, PlannedCall
from fcbench.environments.python_env import DEFAULT_MEMORY_LIMIT_MB, EnvironmentStartError, PythonEnvironment
from fcbench.environments.sandbox import DEFAULT_MAX_FILE_MB
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


class PathRunner:
    """A Ray actor (one per CPU) owning a one-worker pool: its worker subprocess imports the tool
    module once and serves every batch the actor gets. Actor calls, not plain tasks: a call costs
    no scheduling lease, which is most of a small batch's overhead."""

    def __init__(self, config: Mapping[str, Any]) -> None:
        self.environment = PythonEnvironment(config["module"], config["schemas"], workers=1, timeout=config["timeout"],
                                             memory_limit_mb=config["memory_limit_mb"], seed=config["seed"],
                                             isolate_network=config["isolate_network"], pass_env=config["pass_env"],
                                             writable=config["writable"], max_file_mb=config["max_file_mb"])

    def hello(self) -> dict[str, Any]:
        environment = self.environment
        return {"tools": environment.tool_names, "network_isolated": environment.network_isolated,
                "memory_capped": environment.memory_capped}

    def run_paths(self, paths: Sequence[Any]) -> tuple[bytes, int]:
        """Run a batch of paths (plain `(label, name, arguments)` triples); the answers as one
        JSON array of compact runs, and how many worker subprocesses were replaced meanwhile."""
        environment = self.environment
        replaced = environment.replaced_workers
        planned = [[[PlannedCall(*call) for call in step] for step in path] for path in paths]
        runs = environment.run_paths(planned)
        answers = json.dumps([run.to_compact() for run in runs], ensure_ascii=False).encode()
        return answers, environment.replaced_workers - replaced

    def call_step(self, calls: Sequence[tuple[str, Mapping[str, Any]]]) -> bytes:
        outcomes = self.environment.call_step(calls)
        return json.dumps([outcome.to_json() for outcome in outcomes], ensure_ascii=False).encode()

    def close(self) -> None:
        self.environment.close()


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


def start_local_cluster(num_cpus: int = 2, object_store_mb: int = 100) -> Any:
    """Start a local Ray cluster on loopback for this process (no dashboard, quiet); Ray's module."""
    ray = _import_ray(local_cluster=True)
    ray.init(address="local", num_cpus=num_cpus, include_dashboard=False,
             object_store_memory=object_store_mb * 1024 * 1024, log_to_driver=False, logging_level=logging.WARNING)
    return ray


class RayEnvironment(Environment):
    """The python environment's tools, run by Ray actors that each drive a worker subprocess."""

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
        pass_env: Sequence[str] = (),
        writable: Sequence[str | Path] = (),
        max_file_mb: int = DEFAULT_MAX_FILE_MB,
    ) -> None:
        """`pass_env`, `writable`, `max_file_mb`: as for `PythonEnvironment` (sandbox.py); on a
        cluster the variables are read from each node's environment and the folders are its own."""
        self.module = Path(module).resolve()
        if not self.module.is_file():
            raise EnvironmentStartError(f"{self.module}: no such tool module")
        schemas: dict[str, Any] = {}
        if isinstance(tools, Mapping):
            schemas = {str(name): dict(schema) for name, schema in tools.items()}
        elif tools is not None:
            schemas = {tool.name: tool.parameters for tool in tools}
        self._config = {"module": str(self.module), "schemas": schemas, "timeout": timeout,
                        "memory_limit_mb": memory_limit_mb, "seed": seed, "isolate_network": isolate_network,
                        "pass_env": list(pass_env), "writable": [str(path) for path in writable],
                        "max_file_mb": max_file_mb}
        self.paths_per_task = paths_per_task
        self.max_retries = max_retries
        self.retried_batches = 0  # batches submitted again after their Ray worker died
        self.replaced_workers = 0  # worker subprocesses replaced inside the actors (timeouts, crashes)
        self.tasks = 0  # batches sent
        self.min_batch_paths = 0  # set once the cluster's CPUs are known
        self._ray = _import_ray(local_cluster=address is None)
        self._owns_connection = False
        self._actors: list[Any] = []
        self._closed = False
        ray = self._ray
        if not ray.is_initialized():
            if address is None:
                start_local_cluster(num_cpus or 2, object_store_mb)
            else:
                try:
                    ray.init(address=address, log_to_driver=False, logging_level=logging.WARNING)
                except (ConnectionError, RuntimeError, ValueError) as exc:
                    raise EnvironmentStartError(f"cannot join the Ray cluster at {address}: {exc}") from None
            self._owns_connection = True
        try:
            # actors are not restarted by Ray: a dead one is replaced here and its batch sent again
            self._actor_class = ray.remote(num_cpus=1, max_restarts=0, max_task_retries=0)(PathRunner)
            # one actor per CPU of the cluster, or at most `num_cpus` on an existing one
            self.cpus = max(1, int(ray.cluster_resources().get("CPU", 1)))
            if num_cpus:
                self.cpus = min(self.cpus, num_cpus)
            self._actors = [self._actor_class.remote(self._config) for _ in range(self.cpus)]
            # enough full batches to queue IN_FLIGHT_PER_CPU on every actor
            self.min_batch_paths = paths_per_task * self.cpus * IN_FLIGHT_PER_CPU
            hellos = [actor.hello.remote() for actor in self._actors]
            try:
                hello = ray.get(hellos)[0]
            except ray.exceptions.RayError as exc:
                raise EnvironmentStartError(_cause(exc)) from None
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
        self._check_open()
        ray = self._ray
        plain = [(name, dict(arguments)) for name, arguments in calls]
        for attempt in range(self.max_retries + 1):
            slot = attempt % len(self._actors)
            actor = self._actors[slot]
            try:
                answers = ray.get(actor.call_step.remote(plain))
                return [CallOutcome.from_json(answer) for answer in json.loads(answers)]
            except ray.exceptions.RayActorError as exc:
                if attempt == self.max_retries:
                    raise RayBatchLost(f"Ray lost a step of {len(calls)} call(s) {attempt + 1} times: {_cause(exc)}") from None
                self.retried_batches += 1
                self._replace(slot, actor)
            except ray.exceptions.RayError as exc:
                raise RayBatchLost(f"Ray failed on a step of {len(calls)} call(s): {_cause(exc)}") from None
        raise AssertionError("unreachable")

    def iter_run_paths(self, paths: Sequence[Sequence[Sequence[PlannedCall]]]) -> Iterator[tuple[int, PathRun]]:
        """Batches of paths as actor calls, a few queued per actor so none idles between batches;
        `(index, run)` yielded as each batch comes back."""
        self._check_open()
        ray = self._ray
        # spread a small request over every actor rather than filling one batch
        size = max(1, min(self.paths_per_task, -(-len(paths) // len(self._actors))))
        spans = deque((start, min(start + size, len(paths))) for start in range(0, len(paths), size))
        in_flight: dict[Any, tuple[int, Any, tuple[int, int]]] = {}  # ref -> (actor slot, actor, span)
        queued = [0] * len(self._actors)
        attempts: dict[tuple[int, int], int] = {}
        try:
            while spans or in_flight:
                for slot in range(len(self._actors)):
                    while spans and queued[slot] < IN_FLIGHT_PER_CPU:
                        span = spans.popleft()
                        in_flight[self._submit(slot, paths, span)] = (slot, self._actors[slot], span)
                        queued[slot] += 1
                done, _ = ray.wait(list(in_flight), num_returns=1)
                slot, actor, span = in_flight.pop(done[0])
                queued[slot] -= 1
                try:
                    answers, replaced = ray.get(done[0])
                except ray.exceptions.RayActorError as exc:  # the actor's process died: run the batch again
                    attempts[span] = attempts.get(span, 0) + 1
                    if attempts[span] > self.max_retries:
                        raise RayBatchLost(f"Ray lost paths {span[0]}-{span[1] - 1} {attempts[span]} times "
                                           f"({_cause(exc)}); re-run the command to resume") from None
                    self.retried_batches += 1
                    self._replace(slot, actor)  # its other queued batches fail too and come back here
                    spans.appendleft(span)
                    continue
                except ray.exceptions.RayError as exc:  # the actor method itself raised: a bug, not a fault
                    raise RayBatchLost(f"Ray failed on paths {span[0]}-{span[1] - 1}: {_cause(exc)}") from None
                self.replaced_workers += replaced
                for offset, answer in enumerate(json.loads(answers)):
                    index = span[0] + offset
                    yield index, PathRun.from_compact(answer, paths[index])
        finally:
            for ref in in_flight:  # the caller stopped early: drop what is still queued
                try:
                    ray.cancel(ref)
                except Exception:  # noqa: BLE001 - already finished or its actor gone: nothing to drop
                    pass

    def _submit(self, slot: int, paths: Sequence[Sequence[Sequence[PlannedCall]]], span: tuple[int, int]) -> Any:
        # plain tuples: cheaper to pickle than NamedTuples
        plain = [[[(call.label, call.name, call.arguments) for call in step] for step in paths[index]]
                 for index in range(*span)]
        self.tasks += 1
        return self._actors[slot].run_paths.remote(plain)

    def _replace(self, slot: int, dead: Any) -> None:
        """A fresh actor in place of a dead one, once: the dead actor's other queued batches fail
        too, and find it replaced already."""
        if self._actors[slot] is dead:
            self._ray.kill(dead, no_restart=True)
            self._actors[slot] = self._actor_class.remote(self._config)

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("the ray environment is closed")

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        ray = self._ray
        if ray.is_initialized():
            for actor in self._actors:  # their worker subprocesses end with them
                ray.kill(actor, no_restart=True)
        self._actors = []
        if self._owns_connection:
            # a local cluster we started stops here; for an existing cluster this only
            # disconnects this driver
            ray.shutdown()


def _cause(exc: BaseException) -> str:
    cause = getattr(exc, "cause", None)
    return str(cause if cause is not None else exc).strip().splitlines()[-1][:500]
