"""Python environment: tool implementations from a module file, run in a pool of worker processes.

Workers are started once and import the module once (never a process per call). Each has two pipes
of its own, requests in and answers out (see `worker.py`), and at most one request in flight, so
the parent drives all of them from one poll loop and keeps every worker busy.

Guards and who enforces them:
- per-call timeout: the worker's interval timer; if a tool ignores it (a long C call, a swallowed
  exception), the parent's deadline (timeout + grace) kills the worker and starts a new one;
- memory: RLIMIT_AS in the worker (MemoryError -> `memory`; a worker that dies -> `worker_died`,
  replaced);
- network: the worker leaves the network namespace when it can (root); `network_isolated` says
  whether it did, and tools see `FCBENCH_NETWORK=off|on`;
- results: checked to be JSON in the worker (`not_serialisable`, `int_too_large`);
- environment variables, files and processes (`sandbox.py`): each worker starts with a minimal
  environment (an allow-list: no API key, no token reaches a tool), in a private folder of its own
  (also its HOME and TMPDIR, removed with it), may write only there and under `writable` where the
  kernel has Landlock (`filesystem_confined`), files capped at `max_file_mb`, and leads a process
  group of its own that is killed with it (and by it when the command goes away), so nothing a
  tool started outlives the command.

Speed: `run_paths` sends gold paths in chunks (one pickled request per chunk, built only when a
worker is free); the worker resolves references itself and answers in JSON batches every few
milliseconds, so a path costs no round trip of its own. If a worker has to be killed, the paths it
had not answered are run again call by call, so the hanging call is the one that gets `timeout`
(and the calls before it their responses).
"""

from __future__ import annotations

import json
import os
import pickle
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Mapping, Sequence

from fcbench.environments import (
    CallOutcome,
    Environment,
    ErrorReason,
    PathRun,
    PlannedCall,
    paused_gc,
    run_path,
)
from fcbench.environments.sandbox import (DEFAULT_MAX_FILE_MB, kill_process_group, make_private_folder,
                                          worker_environment)

if TYPE_CHECKING:
    from fcbench.sample import Tool


class EnvironmentStartError(RuntimeError):
    """The pool could not start (the module does not import, a worker never answered)."""


DEFAULT_MEMORY_LIMIT_MB = 1024
START_TIMEOUT_SECONDS = 60.0


class _Worker:
    """One worker subprocess (the leader of its own process group, in a private folder, with a
    minimal environment: `sandbox.py`) and the parent's ends of its two pipes."""

    def __init__(self, config_frame: bytes, pass_env: Sequence[str] = ()) -> None:
        self.stderr = tempfile.TemporaryFile()
        self.folder = str(make_private_folder())
        request_read, self.request_fd = os.pipe()
        self.result_fd, result_write = os.pipe()
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "fcbench.environments.worker", str(request_read), str(result_write),
                 self.folder],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,  # what tools print goes nowhere; answers have their own pipe
                stderr=self.stderr,  # the worker's own start-up errors; tools' stderr goes to /dev/null
                pass_fds=(request_read, result_write),
                close_fds=True,
                cwd=self.folder,
                env=worker_environment(os.environ, Path(self.folder), pass_env),
                start_new_session=True,  # a process group of its own, killed with the worker
            )
        except BaseException:
            shutil.rmtree(self.folder, ignore_errors=True)
            raise
        finally:
            os.close(request_read)
            os.close(result_write)
        self.buffer = bytearray()
        self.hello: dict[str, Any] = {}
        self.send(config_frame)

    def send(self, frame: bytes) -> None:
        view = memoryview(frame)
        while view:
            view = view[os.write(self.request_fd, view) :]

    def read_available(self) -> list[bytes] | None:
        """Complete lines read so far; None when the worker closed its end (it died)."""
        chunk = os.read(self.result_fd, 1 << 20)
        if not chunk:
            return None
        self.buffer += chunk
        if b"\n" not in chunk:
            return []
        *lines, rest = self.buffer.split(b"\n")
        self.buffer = bytearray(rest)
        return lines

    def _ended(self, timeout: float) -> tuple[bool, int]:
        """Whether the worker has ended (within `timeout`), and how, WITHOUT reaping it: until it is
        reaped its pid cannot be reused, so killing its process group by that id cannot hit another
        program's group. Returns (ended, code), code < 0 for a signal as in Popen.returncode."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                info = os.waitid(os.P_PID, self.process.pid, os.WEXITED | os.WNOWAIT | os.WNOHANG)
            except ChildProcessError:  # reaped already (by Popen): its returncode says how
                return True, self.process.returncode if self.process.returncode is not None else 0
            if info is not None and info.si_pid == self.process.pid:
                return True, info.si_status if info.si_code == os.CLD_EXITED else -info.si_status
            if time.monotonic() >= deadline:
                return False, 0
            time.sleep(0.01)

    def death_note(self) -> str:
        ended, code = self._ended(1.0)
        if not ended:
            return "worker closed its answer pipe"
        if code < 0:
            note = f"worker killed by signal {signal.Signals(-code).name}"
        else:
            note = f"worker exited with status {code}"
        self.stderr.seek(0)
        last_lines = self.stderr.read()[-2000:].decode(errors="replace").strip().splitlines()[-1:]
        return f"{note}: {last_lines[0]}" if last_lines else note

    def kill(self) -> None:
        """The worker and everything its tools started (its process group; the worker is not
        reaped before, see `_ended`)."""
        kill_process_group(self.process.pid)
        self.process.wait()
        self._close_fds()

    def stop(self, grace: float = 2.0) -> None:
        """Close the request pipe (the worker's loop ends on EOF, and it kills its group); kill the
        group if it lingers, and in any case what is left of it."""
        try:
            os.close(self.request_fd)
        except OSError:
            pass
        self._ended(grace)  # not reaped: the group id stays ours until the wait below
        kill_process_group(self.process.pid)
        self.process.wait()
        self._close_fds(request=False)

    def _close_fds(self, request: bool = True) -> None:
        self.stderr.close()
        shutil.rmtree(self.folder, ignore_errors=True)
        for fd in ((self.request_fd, self.result_fd) if request else (self.result_fd,)):
            try:
                os.close(fd)
            except OSError:
                pass


@dataclass
class _Job:
    """One request for one worker and the answers it will bring back, in order.

    A call job expects one line (a CallOutcome); a paths job sends a chunk of gold paths and gets
    their answers in batches (lines holding arrays), so a hang loses only those not yet answered.
    """

    request: bytes
    result_indexes: list[int]  # where each expected answer goes in the caller's result list
    call_counts: list[int]  # calls behind each expected answer (sets the deadline for it)
    paths: list[Sequence[Sequence[PlannedCall]]] | None = None  # for a paths job, the paths sent


@dataclass
class _InFlight:
    slot: int
    job: _Job
    received: int
    deadline: float


_RETRY_CALL_BY_CALL = object()  # marks a path whose worker was lost before answering it
MAX_PATHS_PER_REQUEST = 64


class PythonEnvironment(Environment):
    """A pool of worker processes running the tools of one python module."""

    def __init__(
        self,
        module: str | Path,
        tools: Iterable["Tool"] | Mapping[str, Mapping[str, Any]] | None = None,
        *,
        workers: int | None = None,
        timeout: float = 5.0,
        memory_limit_mb: int | None = DEFAULT_MEMORY_LIMIT_MB,
        seed: int = 0,
        isolate_network: bool = True,
        pass_env: Sequence[str] = (),
        writable: Sequence[str | Path] = (),
        max_file_mb: int = DEFAULT_MAX_FILE_MB,
    ) -> None:
        """`pass_env`: variables tools may read besides the allow-list of `sandbox.py`;
        `writable`: folders tools may write under besides their private one (where Landlock
        confines them); `max_file_mb`: the size cap of every file a tool writes."""
        self.module = Path(module).resolve()
        if not self.module.is_file():
            raise EnvironmentStartError(f"{self.module}: no such tool module")
        self.timeout = timeout
        self.grace = 0.5 + timeout / 4  # the worker's own timer fires first; this is the backstop
        self.n_workers = max(1, workers or os.cpu_count() or 1)
        self._pass_env = tuple(pass_env)
        self._config_frame = self._config(self.module, tools, timeout, memory_limit_mb, seed, isolate_network,
                                          writable, max_file_mb)
        self._lock = threading.Lock()
        self._workers: list[_Worker] = []
        self.replaced_workers = 0  # workers killed (timeout) or dead, and started again
        self.replayed_paths = 0  # paths re-run call by call after their worker was lost
        try:
            for _ in range(self.n_workers):
                self._workers.append(_Worker(self._config_frame, self._pass_env))
            for worker in self._workers:
                self._await_hello(worker)
        except BaseException:
            self.close()
            raise
        first = self._workers[0].hello
        self.tool_names: list[str] = first["tools"]
        self.network_isolated: bool = all(worker.hello["network_isolated"] for worker in self._workers)
        self.memory_capped: bool = all(worker.hello["memory_capped"] for worker in self._workers)
        self.filesystem_confined: bool = all(worker.hello.get("filesystem_confined") for worker in self._workers)

    @staticmethod
    def _config(
        module: Path, tools: Any, timeout: float, memory_limit_mb: int | None, seed: int, isolate_network: bool,
        writable: Sequence[str | Path] = (), max_file_mb: int = DEFAULT_MAX_FILE_MB,
    ) -> bytes:
        schemas: dict[str, Any] = {}
        if isinstance(tools, Mapping):
            schemas = {str(name): dict(schema) for name, schema in tools.items()}
        elif tools is not None:
            schemas = {tool.name: tool.parameters for tool in tools}
        config: dict[str, Any] = {
            "module": str(module),
            "timeout": timeout,
            "memory_limit_bytes": memory_limit_mb * 1024 * 1024 if memory_limit_mb else None,
            "seed": seed,
            "isolate_network": isolate_network,
            "schemas": schemas,
            # the worker adds its own private folder (its working directory) to these
            "writable": [str(Path(path).resolve()) for path in writable],
            "max_file_bytes": max_file_mb * 1024 * 1024,
        }
        return _request(config)

    def _await_hello(self, worker: _Worker) -> None:
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while True:
            remaining = deadline - time.monotonic()
            ready, _, _ = select.select([worker.result_fd], [], [], max(0.0, remaining))
            if not ready:
                worker.kill()
                raise EnvironmentStartError(f"{self.module}: worker did not start within {START_TIMEOUT_SECONDS:g} s")
            lines = worker.read_available()
            if lines is None:
                raise EnvironmentStartError(f"{self.module}: worker failed to start ({worker.death_note()})")
            if lines:
                hello = json.loads(lines[0])
                if not hello.get("ready"):
                    worker.kill()
                    raise EnvironmentStartError(hello.get("error") or f"{self.module}: worker failed to start")
                worker.hello = hello
                return

    # -- the Environment interface ------------------------------------------------------------

    def call(self, name: str, arguments: Mapping[str, Any]) -> CallOutcome:
        return self.call_step([(name, arguments)])[0]

    def call_step(self, calls: Sequence[tuple[str, Mapping[str, Any]]]) -> list[CallOutcome]:
        jobs = [
            _Job(_request({"op": "call", "name": name, "arguments": arguments}), [index], [1])
            for index, (name, arguments) in enumerate(calls)
        ]
        return self._run_jobs(jobs, len(calls))

    def iter_run_paths(self, paths: Sequence[Sequence[Sequence[PlannedCall]]]) -> Iterator[tuple[int, PathRun]]:
        """Run gold paths in chunks spread over the workers, yielding `(index, run)` as answers
        arrive, so the caller's own work on a result overlaps with the workers running the rest.
        The pool is held until the iterator is exhausted or closed."""
        if not self._workers:
            raise RuntimeError("the python environment is closed")
        chunk = max(1, min(MAX_PATHS_PER_REQUEST, len(paths) // (len(self._workers) * 4)))
        results: list[Any] = [None] * len(paths)
        replay: list[int] = []
        with self._lock:
            batches = self._dispatch(_path_jobs(paths, chunk), results)
            while True:
                with paused_gc():  # decoding answers; the caller's code between yields is not paused
                    batch = next(batches, None)
                if batch is None:
                    break
                for index in batch:
                    if results[index] is _RETRY_CALL_BY_CALL:
                        replay.append(index)
                    else:
                        yield index, results[index]
        # A killed worker lost the answers of the paths it had not sent back: replay each of them
        # call by call so the failing call is named exactly (the calls before it get their answers).
        self.replayed_paths += len(replay)
        for index in replay:
            yield index, run_path(paths[index], self.call_step)

    def close(self) -> None:
        workers, self._workers = self._workers, []
        for worker in workers:
            worker.stop()

    # -- the dispatch loop --------------------------------------------------------------------

    def _run_jobs(self, jobs: Iterable[_Job], n_results: int) -> list[Any]:
        if not self._workers:
            raise RuntimeError("the python environment is closed")
        results: list[Any] = [None] * n_results
        with self._lock:
            for _ in self._dispatch(jobs, results):
                pass
        return results

    def _dispatch(self, jobs: Iterable[_Job], results: list[Any]) -> Iterator[list[int]]:
        """Keep every worker busy: jobs are taken (and built, when `jobs` is a generator) only as
        workers free up, so building requests overlaps with the workers' running. Yields the
        indexes of the results stored by each round of answers."""
        filled: list[int] = []
        pending = iter(jobs)
        job: _Job | None = next(pending, None)
        idle = deque(range(len(self._workers)))
        in_flight: dict[int, _InFlight] = {}  # by the worker's answer fd
        poller = select.poll()
        while job is not None or in_flight:
            while job is not None and idle:
                slot = idle.popleft()
                worker = self._send(slot, job.request)
                in_flight[worker.result_fd] = _InFlight(slot, job, 0, self._deadline(job, 0))
                poller.register(worker.result_fd, select.POLLIN)
                job = next(pending, None)
            wait = min(flight.deadline for flight in in_flight.values()) - time.monotonic()
            for fd, _ in poller.poll(max(0, int(wait * 1000) + 1)):
                flight = in_flight[fd]
                lines = self._workers[flight.slot].read_available()
                if lines is None:
                    self._fail_rest(flight, results, filled, ErrorReason.WORKER_DIED, self._workers[flight.slot].death_note())
                elif not self._take_answers(flight, lines, results, filled):
                    self._fail_rest(flight, results, filled, ErrorReason.WORKER_DIED, "unreadable answer from the worker")
                    lines = None
                if lines is not None and flight.received < len(flight.job.result_indexes):
                    continue  # more answers to come from this worker
                poller.unregister(fd)
                del in_flight[fd]
                idle.append(self._replace(flight.slot) if lines is None else flight.slot)
            now = time.monotonic()
            for fd, flight in list(in_flight.items()):
                if now >= flight.deadline:
                    poller.unregister(fd)
                    del in_flight[fd]
                    self._fail_rest(flight, results, filled, ErrorReason.TIMEOUT, f"no answer within {self.timeout:g} s; worker killed")
                    idle.append(self._replace(flight.slot))
            if filled:
                yield filled
                filled = []

    def _deadline(self, job: _Job, received: int) -> float:
        return time.monotonic() + job.call_counts[received] * self.timeout + self.grace

    def _take_answers(self, flight: _InFlight, lines: list[bytes], results: list[Any], filled: list[int]) -> bool:
        """Store the answers that arrived; False when a line is not a valid answer."""
        job = flight.job
        for line in lines:
            try:
                message = json.loads(line)
                # a call job's line is one outcome; a paths job's line is an array of path answers
                answers = [CallOutcome.from_json(message)] if job.paths is None else message
                if not isinstance(answers, list) or flight.received + len(answers) > len(job.result_indexes):
                    return False
                for answer in answers:
                    if job.paths is not None:
                        answer = _path_answer(answer, job.paths[flight.received])
                    results[job.result_indexes[flight.received]] = answer
                    filled.append(job.result_indexes[flight.received])
                    flight.received += 1
            except (ValueError, KeyError, TypeError, IndexError):
                return False
        if flight.received < len(job.result_indexes):
            flight.deadline = self._deadline(job, flight.received)
        return True

    @staticmethod
    def _fail_rest(flight: _InFlight, results: list[Any], filled: list[int], reason: ErrorReason, message: str) -> None:
        for index in flight.job.result_indexes[flight.received :]:
            results[index] = _RETRY_CALL_BY_CALL if flight.job.paths is not None else CallOutcome.failure(reason, message)
            filled.append(index)
        flight.received = len(flight.job.result_indexes)

    def _send(self, slot: int, request: bytes) -> _Worker:
        """Send a request, replacing a worker that died while idle (its pipe is broken)."""
        try:
            self._workers[slot].send(request)
        except BrokenPipeError:
            self._replace(slot)
            self._workers[slot].send(request)
        return self._workers[slot]

    def _replace(self, slot: int) -> int:
        """Kill the worker in `slot` (if still alive) and start a fresh one in its place."""
        self._workers[slot].kill()
        worker = _Worker(self._config_frame, self._pass_env)
        self._await_hello(worker)
        self._workers[slot] = worker
        self.replaced_workers += 1
        return slot


def _request(message: Any) -> bytes:
    """A request frame: 4-byte big-endian length, then the pickle (see worker.py: pickle only
    ever flows from this trusted process to the worker)."""
    payload = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    return struct.pack(">I", len(payload)) + payload


def _path_jobs(paths: Sequence[Sequence[Sequence[PlannedCall]]], chunk: int) -> Iterator[_Job]:
    for first in range(0, len(paths), chunk):
        indexes = list(range(first, min(first + chunk, len(paths))))
        sent = [paths[i] for i in indexes]
        # plain tuples: pickle handles them in C, while a NamedTuple costs a Python call each
        plain = [[[(label, name, arguments) for label, name, arguments in step] for step in path] for path in sent]
        yield _Job(_request({"op": "paths", "paths": plain}), indexes, [_count(path) for path in sent], sent)


def _count(path: Sequence[Sequence[PlannedCall]]) -> int:
    return sum(len(step) for step in path)


def _path_answer(answer: Any, path: Sequence[Sequence[PlannedCall]]) -> Any:
    if not isinstance(answer, list):  # the worker could not run this path: replay it call by call
        return _RETRY_CALL_BY_CALL
    return PathRun.from_compact(answer, path)
