"""The python environment's worker process: imports a tool module once, then answers calls.

Started by `fcbench.environments.python_env` as `python -m fcbench.environments.worker REQ_FD RES_FD
FOLDER` (FOLDER: its private working folder, emptied by the worker when it ends, removed by the parent).
Protocol: requests arrive on REQ_FD as length-prefixed pickles (cheap to make; only the trusted
parent writes them); answers leave on RES_FD as JSON lines (the parent never unpickles what a
process running tool code wrote). RES_FD is a pipe of its own, so whatever a tool prints (stdout
and stderr go to /dev/null) can never corrupt the protocol.

First request: the configuration (module path, tool schemas, seed, per-call timeout, memory cap,
network isolation). First answer: `{"ready": true, ...}` or `{"ready": false, "error": ...}`.
Then the requests, each answered in order:
    {"op": "call", "name", "arguments"}    -> one line: a CallOutcome as JSON
    {"op": "paths", "paths": [path, ...]}  -> lines holding JSON arrays of path answers, in order,
                                              each the PathRun in compact form (`PathRun.to_compact`);
                                              a path is a list of steps of (label, name, arguments)

Guards, in the order they apply: the network namespace is left (no network) before the tool module
is imported; the address-space cap, the file-size cap and the write confinement (`sandbox.py`:
only the private working folder, `writable` and /dev/null, where the kernel has Landlock) are set
before the import too, so a module's import-time code is held to them; each call runs under an
interval timer (the parent kills the worker if a tool ignores it); each result is checked to be
JSON before it is sent. When the requests end (the parent closed the pipe, or went away and the
next answer finds no reader), the worker kills its process group: whatever its tools started.
The parent started it with a minimal environment, in a private folder, as a session leader. Randomness: the `random`
module's shared generator is seeded from (pipeline seed, tool name, arguments) at a call's first
draw, so a call gives the same answer on any worker (numpy's, when a tool imported numpy, too).
"""

from __future__ import annotations

import ctypes
import gc
import hashlib
import importlib.util
import inspect
import json
import math
import os
import pickle
import random
import resource
import shutil
import signal
import struct
import sys
import time
import traceback
from dataclasses import dataclass
from math import isfinite
from types import ModuleType
from typing import Any, BinaryIO, Callable, Iterable, Iterator, Mapping, Sequence

from fcbench.environments import (
    ArgumentCoercer,
    CallOutcome,
    ErrorReason,
    PlannedCall,
    normalise_json,
    run_path,
)
from fcbench.environments.sandbox import PRIVATE_FOLDER_PREFIX, cap_file_size, confine_writes, kill_own_group_if_leader

CLONE_NEWNET = 0x40000000  # from <sched.h>, for libc.unshare (os.unshare only exists from Python 3.12)
NETWORK_ENV_VAR = "FCBENCH_NETWORK"  # "off" when the worker has no network, "on" when it could not be cut


class CallTimeout(BaseException):
    """Raised by the interval timer inside a tool. A BaseException so `except Exception` in a tool
    does not swallow it."""


def isolate_network() -> bool:
    """Move this process into a new, empty network namespace (needs root or CAP_SYS_ADMIN):
    even the loopback interface is down there, so a tool reaches nothing."""
    unshare = getattr(os, "unshare", None)  # Python 3.12+
    try:
        if unshare is not None:
            unshare(getattr(os, "CLONE_NEWNET", CLONE_NEWNET))
            return True
        libc = ctypes.CDLL(None, use_errno=True)
        return libc.unshare(CLONE_NEWNET) == 0
    except (OSError, AttributeError):
        return False


def cap_memory(limit_bytes: int) -> bool:
    try:
        resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))
        return True
    except (ValueError, OSError):
        return False


def load_tools(module_path: str) -> dict[str, Callable[..., Any]]:
    """The module's `TOOLS` mapping when it has one (names that are not identifiers), else every
    public function the module itself defines (imported helpers are not tools)."""
    spec = importlib.util.spec_from_file_location("fcbench_tool_module", module_path)
    if spec is None or spec.loader is None:
        raise ImportError(f"{module_path}: not a python module")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    declared = getattr(module, "TOOLS", None)
    if isinstance(declared, Mapping):
        return {str(name): function for name, function in declared.items() if callable(function)}
    return _public_functions(module)


def _public_functions(module: ModuleType) -> dict[str, Callable[..., Any]]:
    return {
        name: value
        for name, value in vars(module).items()
        if inspect.isfunction(value) and value.__module__ == module.__name__ and not name.startswith("_")
    }


@dataclass(frozen=True)
class Binding:
    """What keyword binding needs to know about a tool, computed once (inspect.bind is slow)."""

    names: frozenset[str]
    required: frozenset[str]
    any_keyword: bool  # the tool takes **kwargs

    @classmethod
    def of(cls, function: Callable[..., Any]) -> "Binding | None":
        try:
            parameters = inspect.signature(function).parameters.values()
        except (TypeError, ValueError):  # some builtins have no signature: let the call decide
            return None
        keyword_kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
        names = frozenset(p.name for p in parameters if p.kind in keyword_kinds)
        # A positional-only parameter cannot be given by keyword: required ones make the tool
        # uncallable here, which the `required` check reports.
        required = frozenset(
            p.name for p in parameters if p.default is inspect.Parameter.empty and p.kind not in _VARIADIC
        )
        return cls(names, required, any(p.kind is inspect.Parameter.VAR_KEYWORD for p in parameters))

    def problem(self, arguments: Mapping[str, Any]) -> str | None:
        missing = self.required.difference(arguments)
        if missing:
            return f"missing argument(s): {', '.join(sorted(missing))}"
        if not self.any_keyword:
            unexpected = set(arguments).difference(self.names)
            if unexpected:
                return f"unexpected argument(s): {', '.join(sorted(unexpected))}"
        return None


_VARIADIC = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)


_SEED_SCALARS = frozenset({int, float, str, bool, type(None)})


def derived_seed(seed: int, name: str, arguments: Mapping[str, Any]) -> int:
    """A 64-bit seed from the pipeline seed and the canonical call (1.0 and 1 count as one)."""
    if all(type(value) in _SEED_SCALARS for value in arguments.values()):
        body = repr(sorted((key, _one_spelling(value)) for key, value in arguments.items()))
    else:
        try:
            body = json.dumps(normalise_json(arguments), sort_keys=True, ensure_ascii=False)
        except (TypeError, ValueError):
            body = repr(sorted(arguments.items(), key=lambda item: item[0]))
    key = f"{seed}:{name}:{body}".encode()
    return int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "big")


class CallSeededRandom(random.Random):
    """The class given to the `random` module's shared generator in a worker: a pending call
    seeds it at the first draw. `random()` and `getrandbits()` are the primitives every other
    method (randint, choice, shuffle, gauss...) draws through."""

    pending: tuple[int, str, Mapping[str, Any]] | None = None

    def _seed_pending(self) -> None:
        pending, self.pending = self.pending, None
        if pending is not None:
            super().seed(derived_seed(*pending))

    def random(self) -> float:
        if self.pending is not None:
            self._seed_pending()
        return super().random()

    def getrandbits(self, k: int) -> int:
        if self.pending is not None:
            self._seed_pending()
        return super().getrandbits(k)

    def getstate(self) -> Any:
        self._seed_pending()
        return super().getstate()

    def seed(self, *args: Any, **kwargs: Any) -> None:  # a tool seeding explicitly wins
        self.pending = None
        super().seed(*args, **kwargs)

    def setstate(self, state: Any) -> None:  # so does a tool restoring a state
        self.pending = None
        super().setstate(state)


def _install_call_seeded_random() -> CallSeededRandom:
    """Turn `random`'s shared generator into a CallSeededRandom, before any tool imports `random`
    names, and rebind the module-level functions (bound methods of that generator)."""
    shared = random._inst  # type: ignore[attr-defined]
    shared.__class__ = CallSeededRandom
    for name in dir(random):
        bound = getattr(random, name)
        if getattr(bound, "__self__", None) is shared:
            setattr(random, name, getattr(shared, name))
    return shared


def _one_spelling(value: Any) -> Any:
    return int(value) if type(value) is float and value.is_integer() else value


class ToolRunner:
    """Runs one call of a loaded tool with every guard, and never raises."""

    def __init__(
        self,
        tools: dict[str, Callable[..., Any]],
        schemas: Mapping[str, Any],
        seed: int,
        timeout: float,
        lazy_random: CallSeededRandom | None = None,
    ) -> None:
        self.tools = tools
        self.lazy_random = lazy_random
        self.coercers = {name: ArgumentCoercer(schemas.get(name)) for name in tools}
        self.bindings = {name: Binding.of(function) for name, function in tools.items()}
        self.seed = seed
        self.timeout = timeout
        self.timer_fired = False
        signal.signal(signal.SIGALRM, self._on_alarm)

    def _on_alarm(self, signum: int, frame: object) -> None:
        self.timer_fired = True
        raise CallTimeout()

    def seed_for(self, name: str, arguments: Mapping[str, Any]) -> None:
        """Seed from the pipeline seed and the call itself, so a random tool gives the same answer
        to the same call whichever worker runs it and in whatever order. The `random` module's
        generator is seeded lazily, at the call's first draw (most tools never draw)."""
        if self.lazy_random is not None:
            self.lazy_random.pending = (self.seed, name, arguments)
        else:  # in-process use (tests): seed eagerly
            random.seed(derived_seed(self.seed, name, arguments))
        numpy = sys.modules.get("numpy")
        if numpy is not None:
            numpy.random.seed(derived_seed(self.seed, name, arguments) & 0xFFFFFFFF)

    def call_step(self, calls: Sequence[tuple[str, Mapping[str, Any]]]) -> list[CallOutcome]:
        return [self.call(name, arguments) for name, arguments in calls]

    def call(self, name: str, arguments: Mapping[str, Any]) -> CallOutcome:
        function = self.tools.get(name)
        if function is None:
            return CallOutcome.failure(ErrorReason.UNKNOWN_TOOL, f"no tool named {name!r} in the module")
        if type(arguments) is not dict:
            return CallOutcome.failure(ErrorReason.BAD_ARGUMENTS, "arguments must be an object")
        bound = self.coercers[name](arguments)
        binding = self.bindings[name]
        if binding is not None and bound.keys() != binding.names:  # exact match: nothing to check
            problem = binding.problem(bound)
            if problem is not None:  # keyword binding only: never by dict order
                return CallOutcome.failure(ErrorReason.BAD_ARGUMENTS, f"{name}: {problem}")
        self.seed_for(name, bound)
        self.timer_fired = False
        try:
            signal.setitimer(signal.ITIMER_REAL, self.timeout)
            try:
                result = function(**bound)
            finally:
                signal.setitimer(signal.ITIMER_REAL, 0)
        except BaseException as exc:  # SystemExit and KeyboardInterrupt from a tool are tool errors too
            return self._failure(name, exc)
        if self.timer_fired:  # the tool swallowed the timer's exception and returned anyway
            return _timeout(name, self.timeout)
        if type(result) is dict:  # the common shape ({"result": 0.2}), checked inline
            for key, item in result.items():
                kind = type(item)
                if type(key) is not str or not (
                    (kind is float and isfinite(item))
                    or (kind is int and item.bit_length() < _SAFE_INT_BITS)
                    or kind in _CHEAP_SCALARS
                ):
                    return as_json_outcome(name, result)
            return CallOutcome(True, result)
        return as_json_outcome(name, result)

    def _failure(self, name: str, exc: BaseException) -> CallOutcome:
        if isinstance(exc, CallTimeout) or self.timer_fired:
            return _timeout(name, self.timeout)
        if isinstance(exc, MemoryError):
            return CallOutcome.failure(ErrorReason.MEMORY, f"{name}: ran out of memory (cap reached)")
        return CallOutcome.failure(ErrorReason.TOOL_ERROR, f"{name}: {type(exc).__name__}: {exc}"[:2000])


def _timeout(name: str, seconds: float) -> CallOutcome:
    return CallOutcome.failure(ErrorReason.TIMEOUT, f"{name}: no answer within {seconds:g} s")


# Values that are always valid JSON as they are (floats and ints need their own checks).
_CHEAP_SCALARS = frozenset({str, bool, type(None)})

# Results made only of these travel as they are; anything else goes through a JSON round trip.
_PLAIN_SCALARS = (str, bool, type(None))
_SAFE_INT_BITS = 13_000  # ~3,900 decimal digits: under Python's 4,300-digit int->str limit


def _is_plain(value: Any) -> bool:
    kind = type(value)
    if kind in _PLAIN_SCALARS:
        return True
    if kind is int:
        return value.bit_length() < _SAFE_INT_BITS
    if kind is float:
        return math.isfinite(value)
    return False


def _is_plain_flat(value: Any) -> bool:
    """A scalar, or a dict with string keys / a list of plain scalars: the shape of most tool
    results, checked without serialising."""
    if _is_plain(value):
        return True
    if type(value) is dict:
        return all(type(key) is str and _is_plain(item) for key, item in value.items())
    if type(value) is list:
        return all(_is_plain(item) for item in value)
    return False


def as_json_outcome(name: str, result: Any) -> CallOutcome:
    """The result as it will reach the parent (JSON), or the reason it cannot travel.

    A non-plain value is re-read from its JSON text so that a later call reading it through a
    reference sees exactly what the parent records (tuples become lists, int keys strings).
    """
    if _is_plain_flat(result):
        return CallOutcome.success(result)
    try:
        text = json.dumps(result, allow_nan=False, ensure_ascii=False)
    except ValueError as exc:
        message = str(exc)
        if "integer string conversion" in message:
            # Python refuses int->str beyond sys.get_int_max_str_digits(): such a number cannot be
            # written to any JSON file of the benchmark either.
            return CallOutcome.failure(ErrorReason.INT_TOO_LARGE, f"{name}: result has an integer with too many digits")
        return CallOutcome.failure(ErrorReason.NOT_SERIALISABLE, f"{name}: result is not JSON ({message})")
    except (TypeError, RecursionError) as exc:
        return CallOutcome.failure(ErrorReason.NOT_SERIALISABLE, f"{name}: result is not JSON ({exc})")
    return CallOutcome.success(json.loads(text))


def answer_path(steps: Sequence[Sequence[tuple[str, str, Mapping[str, Any]]]], runner: ToolRunner) -> Any:
    """A path's run in the compact form `PathRun.from_compact` reads; an error object when the
    request itself is malformed (the parent then replays the path call by call)."""
    try:
        path = [[PlannedCall(*call) for call in step] for step in steps]
        return run_path(path, runner.call_step, runner.call).to_compact()
    except Exception:
        return {"error": traceback.format_exc(limit=3)}


FLUSH_EVERY_SECONDS = 0.02


def read_frames(stream: BinaryIO) -> Iterator[Any]:
    """Requests from the parent: a 4-byte big-endian length, then a pickle. Pickle only flows
    parent -> worker (the parent is trusted); answers flow back as JSON, never unpickled."""
    while True:
        header = stream.read(4)
        if len(header) < 4:
            return
        (size,) = struct.unpack(">I", header)
        payload = stream.read(size)
        if len(payload) < size:
            return
        yield pickle.loads(payload)


def answer_requests(requests: Iterable[Any], runner: ToolRunner, result_fd: int) -> None:
    """One answer line per call request; for a paths request, lines that are JSON arrays of path
    answers, in order.

    Answers of a paths request are batched and flushed every few milliseconds (and at its end):
    the parent then wakes and decodes once for many paths, and a hang loses at most a few
    milliseconds' worth of answers, which the parent recomputes.
    """
    for request in requests:
        op = request.get("op") if isinstance(request, dict) else None
        if op == "paths":
            batch: list[Any] = []
            last_flush = time.monotonic()
            for path in request["paths"]:
                batch.append(answer_path(path, runner))
                if time.monotonic() - last_flush >= FLUSH_EVERY_SECONDS:
                    write_text(result_fd, _dumps(batch))
                    batch, last_flush = [], time.monotonic()
            if batch:
                write_text(result_fd, _dumps(batch))
        elif op == "call":
            outcome = runner.call(request.get("name", ""), request.get("arguments") or {})
            write_text(result_fd, _dumps(outcome.to_json()))
        else:
            error = {"ok": False, "reason": ErrorReason.BAD_ARGUMENTS.value, "error": f"unknown request {op!r}"}
            write_text(result_fd, _dumps(error))


def _dumps(message: Any) -> str:
    return json.dumps(message, ensure_ascii=False) + "\n"


def write_text(fd: int, text: str) -> None:
    view = memoryview(text.encode())
    while view:
        view = view[os.write(fd, view) :]


def write_line(fd: int, message: Mapping[str, Any]) -> None:
    write_text(fd, _dumps(message))


def serve(request_fd: int, result_fd: int, private_folder: str | None = None) -> int:
    frames = read_frames(os.fdopen(request_fd, "rb"))
    config = next(frames)
    network_isolated = isolate_network() if config.get("isolate_network", True) else False
    os.environ[NETWORK_ENV_VAR] = "off" if network_isolated else "on"
    memory_capped = cap_memory(int(config["memory_limit_bytes"])) if config.get("memory_limit_bytes") else False
    file_size_capped = cap_file_size(int(config["max_file_bytes"])) if config.get("max_file_bytes") else False
    sys.dont_write_bytecode = True  # the tool module's folder is not the worker's to write in
    filesystem_confined = confine_writes([os.getcwd(), *config.get("writable", [])])
    lazy_random = _install_call_seeded_random()  # before the tools import names from `random`
    try:
        tools = load_tools(config["module"])
    except BaseException as exc:
        write_line(result_fd, {"ready": False, "error": f"cannot import {config['module']}: {type(exc).__name__}: {exc}"})
        return 1
    runner = ToolRunner(tools, config.get("schemas") or {}, int(config.get("seed", 0)), float(config["timeout"]), lazy_random)
    _silence_stderr()  # from here on stderr is the tools' (start-up errors above stay visible to the parent)
    write_line(
        result_fd,
        {"ready": True, "tools": sorted(tools), "network_isolated": network_isolated, "memory_capped": memory_capped,
         "filesystem_confined": filesystem_confined, "file_size_capped": file_size_capped},
    )
    gc.freeze()  # the module and start-up objects are permanent: keep them out of every collection
    try:
        answer_requests(frames, runner, result_fd)
    finally:  # the parent closed the pipe or is gone (BrokenPipeError): nothing a tool started outlives us
        if private_folder and os.path.basename(private_folder).startswith(PRIVATE_FOLDER_PREFIX):
            _empty(private_folder)  # the folder itself is swept by the next command (sandbox.py)
        kill_own_group_if_leader()
    return 0


def _empty(folder: str) -> None:
    for entry in os.scandir(folder):
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path, ignore_errors=True)
        else:
            try:
                os.unlink(entry.path)
            except OSError:
                pass


def _silence_stderr() -> None:
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    os.close(devnull)


def main(argv: Sequence[str]) -> int:
    return serve(int(argv[1]), int(argv[2]), argv[3] if len(argv) > 3 else None)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
