"""Execution environments: one interface over python tools, recorded responses and live HTTP APIs.

Every environment answers `call(name, arguments) -> CallOutcome` and is a context manager (a python
pool owns subprocesses, an HTTP one may own a recording to save). A call never raises for a bad
tool or a bad answer: the outcome carries `ok=False`, a machine-readable `reason` and a message, so
a filter stage can count reasons and the run goes on.

This module also holds the pure helpers every kind needs: running a gold path step by step with
references resolved (`run_path`), coercing arguments to a tool's JSON Schema, and the canonical
form of a call used as a recording key. It stays free of heavy imports because the python worker
subprocess imports it too.
"""

from __future__ import annotations

import gc
import json
import math
from abc import ABC, abstractmethod
from contextlib import contextmanager
from enum import Enum
from typing import Any, Callable, Iterator, Mapping, NamedTuple, Sequence

from fcbench.json_values import normalise_json  # noqa: F401 (part of this module's interface)
from fcbench.resolve import CallSite, PathIndex, UnresolvedReference, resolve_arguments


class ErrorReason(str, Enum):
    TOOL_ERROR = "tool_error"  # the tool raised
    TIMEOUT = "timeout"  # the tool ran past the per-call time limit (worker killed and replaced if needed)
    MEMORY = "memory"  # the tool hit the memory cap (MemoryError)
    WORKER_DIED = "worker_died"  # the worker process ended mid-call (crash, os._exit, cap hit hard)
    NOT_SERIALISABLE = "not_serialisable"  # the result is not JSON (a set, an object, NaN...)
    INT_TOO_LARGE = "int_too_large"  # an int beyond Python's int->str digit limit
    UNKNOWN_TOOL = "unknown_tool"  # no implementation / no spec with this name
    BAD_ARGUMENTS = "bad_arguments"  # the arguments do not bind to the tool's parameters
    BAD_REFERENCE = "bad_reference"  # a `$label.path$` argument cannot be resolved
    NOT_RECORDED = "not_recorded"  # recorded environment: no response for this call
    HTTP_STATUS = "http_status"  # the API answered with an error status
    NETWORK = "network"  # the API could not be reached
    UNEXPECTED_RESPONSE = "unexpected_response"  # the API answered, but not in the shape the catalog says
    UNSAFE_ARGUMENT = "unsafe_argument"  # a path argument would change the request's path ("..", "."): not sent


class CallOutcome(NamedTuple):
    """What one call gave: a response (`ok`) or an error with its reason.

    `response` may be set on a failure too, when the environment has something to show the model
    (the recorded environment's fixed "no such call" answer, an HTTP error body).
    A named tuple: outcomes are made by the thousand per second in bulk execution.
    """

    ok: bool
    response: Any = None
    error: str | None = None
    reason: ErrorReason | None = None

    @classmethod
    def success(cls, response: Any) -> "CallOutcome":
        return cls(True, response)

    @classmethod
    def failure(cls, reason: ErrorReason, error: str, response: Any = None) -> "CallOutcome":
        return cls(False, response, error, reason)

    def to_json(self) -> dict[str, Any]:
        if self.ok:
            return {"ok": True, "response": self.response}
        data: dict[str, Any] = {"ok": False, "error": self.error, "reason": self.reason.value if self.reason else None}
        if self.response is not None:
            data["response"] = self.response
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "CallOutcome":
        if data["ok"]:
            return cls(True, data.get("response"))
        reason = data.get("reason")
        return cls(False, data.get("response"), data.get("error"), ErrorReason(reason) if reason else None)


class PlannedCall(NamedTuple):
    """One call of a path to run: its arguments may still hold references."""

    label: str
    name: str
    arguments: Mapping[str, Any]


class CallRun(NamedTuple):
    """A call that was attempted: the arguments it really got (references resolved) and the outcome."""

    label: str
    name: str
    arguments: Mapping[str, Any]
    outcome: CallOutcome


class PathRun:
    """The calls of a path that were attempted, in path order. A path stops after the first step
    with a failed call, since later calls may read its output; those calls are simply absent.

    A run decoded from a worker's answer keeps the compact form and builds its `CallRun`s only
    when asked: a filter that needs `ok` and the final answer of thousands of paths never pays
    for objects it does not read.
    """

    __slots__ = ("_runs", "n_calls", "_compact", "_planned")

    def __init__(self, runs: list[CallRun] | None = None, n_calls: int = 0) -> None:
        self._runs = runs if runs is not None else []
        self.n_calls = n_calls  # calls in the path, run or not
        self._compact: Sequence[Sequence[Any]] | None = None
        self._planned: list[PlannedCall] | None = None

    @property
    def runs(self) -> list[CallRun]:
        if self._compact is not None:
            self._runs = _materialise(self._planned or [], self._compact)
            self._compact = None
        return self._runs

    @property
    def ok(self) -> bool:
        if self._compact is not None:
            return len(self._compact) == self.n_calls and all(item[0] for item in self._compact)
        return len(self._runs) == self.n_calls and all(run.outcome.ok for run in self._runs)

    @property
    def last_outcome(self) -> tuple[str, CallOutcome] | None:
        """Tool name and outcome of the last call attempted (where a final answer comes from),
        read without building every CallRun."""
        if self._compact is not None:
            if not self._compact or not self._planned:
                return None
            return self._planned[len(self._compact) - 1].name, _outcome(self._compact[-1])
        return (self._runs[-1].name, self._runs[-1].outcome) if self._runs else None

    @property
    def failed(self) -> CallRun | None:
        return next((run for run in self.runs if not run.outcome.ok), None)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PathRun) and (self.runs, self.n_calls) == (other.runs, other.n_calls)

    def __repr__(self) -> str:
        return f"PathRun(runs={self.runs!r}, n_calls={self.n_calls})"

    def to_compact(self) -> list[Any]:
        """The run as the worker sends it: per call `[true, response]` or `[false, error, reason,
        response shown with the error]`. Labels, names and arguments are not sent: the parent has
        the path, and re-resolves the arguments from the responses when it needs them."""
        if self._compact is not None:  # decoded from a worker and never expanded: already compact
            return list(self._compact)
        compact: list[Any] = []
        for run in self.runs:
            outcome = run.outcome
            if outcome.ok:
                compact.append([True, outcome.response])
            else:
                compact.append([False, outcome.error, outcome.reason.value if outcome.reason else None, outcome.response])
        return compact

    @classmethod
    def from_compact(cls, compact: Sequence[Sequence[Any]], path: Sequence[Sequence[PlannedCall]]) -> "PathRun":
        planned = [call for step in path for call in step]
        run = cls(None, len(planned))
        run._compact, run._planned = compact, planned
        return run


def _outcome(item: Sequence[Any]) -> CallOutcome:
    if item[0]:
        return CallOutcome(True, item[1])
    return CallOutcome(False, item[3], item[1], ErrorReason(item[2]) if item[2] else None)


def _materialise(planned: Sequence[PlannedCall], compact: Sequence[Sequence[Any]]) -> list[CallRun]:
    """CallRuns from a compact answer: the arguments each call got are resolved again from the
    responses (the same JSON values the worker resolved them from, so the same result)."""
    outputs: dict[str, Any] = {}
    runs: list[CallRun] = []
    for call, item in zip(planned, compact):
        outcome = _outcome(item)
        arguments = call.arguments
        if outcome.reason is not ErrorReason.BAD_REFERENCE:
            try:
                arguments = resolve_arguments(call.arguments, outputs, CallSite(call.label, call.name))
            except UnresolvedReference:  # cannot happen for a call the worker ran; keep as planned
                pass
        runs.append(CallRun(call.label, call.name, arguments, outcome))
        if outcome.ok:
            outputs[call.label] = outcome.response
    return runs


StepRunner = Callable[[Sequence[tuple[str, Mapping[str, Any]]]], list[CallOutcome]]


def run_path(
    steps: Sequence[Sequence[PlannedCall]],
    call_step: StepRunner,
    call_one: Callable[[str, Mapping[str, Any]], CallOutcome] | None = None,
) -> PathRun:
    """Run a gold path: steps in order, references resolved from earlier outputs, the calls of a
    step handed to `call_step` together (an environment may run them in parallel).

    Shared by the parent process and the python worker, so batched and call-by-call execution
    give the same result by construction. Written for speed: it runs once per call in bulk runs.
    `call_one`, when given, runs a step of a single call (the usual NESTful step) directly.
    """
    index = PathIndex([call.label for call in step] for step in steps)  # built only if an error needs it
    outputs: dict[str, Any] = {}
    runs: list[CallRun] = []
    n_calls = 0
    for step in steps:
        n_calls += len(step)
    for step_index, step in enumerate(steps):
        if len(step) == 1:  # most paths are chains of single calls: the same logic, fewer objects
            call = step[0]
            try:
                arguments = resolve_arguments(call.arguments, outputs, CallSite(call.label, call.name, step_index), index)
            except UnresolvedReference as exc:
                runs.append(CallRun(call.label, call.name, call.arguments, CallOutcome(False, None, str(exc), ErrorReason.BAD_REFERENCE)))
                break
            outcome = call_one(call.name, arguments) if call_one is not None else call_step([(call.name, arguments)])[0]
            runs.append(CallRun(call.label, call.name, arguments, outcome))
            if not outcome.ok:
                break
            outputs[call.label] = outcome.response
            continue
        if not step:
            continue
        arguments_of: list[Mapping[str, Any]] = []
        failures: list[CallOutcome | None] = []
        to_run: list[tuple[str, Mapping[str, Any]]] = []
        for call in step:
            try:
                arguments = resolve_arguments(call.arguments, outputs, CallSite(call.label, call.name, step_index), index)
                failures.append(None)
                to_run.append((call.name, arguments))
            except UnresolvedReference as exc:
                arguments = call.arguments
                failures.append(CallOutcome(False, None, str(exc), ErrorReason.BAD_REFERENCE))
            arguments_of.append(arguments)
        outcomes = iter(call_step(to_run) if to_run else ())
        step_failed = False
        for call, arguments, failed in zip(step, arguments_of, failures):
            outcome = failed if failed is not None else next(outcomes)
            runs.append(CallRun(call.label, call.name, arguments, outcome))
            if outcome.ok:
                outputs[call.label] = outcome.response
            else:
                step_failed = True
        if step_failed:
            break
    return PathRun(runs, n_calls)


@contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector around bulk work that builds many small acyclic objects
    (decoded answers, copied calls): its passes over a large heap of loaded samples otherwise cost
    more than the work itself. Reference counting still frees everything."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


class Environment(ABC):
    """Where tool calls are answered. Context-managed; `call` never raises for a bad tool."""

    # Paths per `iter_run_paths` call below which the environment idles between calls (a remote
    # backend pays a round trip per call); a bulk caller batches at least this many. 0: any.
    min_batch_paths = 0

    @abstractmethod
    def call(self, name: str, arguments: Mapping[str, Any]) -> CallOutcome: ...

    def call_step(self, calls: Sequence[tuple[str, Mapping[str, Any]]]) -> list[CallOutcome]:
        """The parallel calls of one step; environments that can run them concurrently override."""
        return [self.call(name, arguments) for name, arguments in calls]

    def iter_run_paths(self, paths: Sequence[Sequence[Sequence[PlannedCall]]]) -> Iterator[tuple[int, PathRun]]:
        """Run many gold paths, yielding `(index, run)` as each is done (in any order). The python
        pool overrides this to batch paths into worker round trips and keep every worker busy."""
        for index, path in enumerate(paths):
            yield index, run_path(path, self.call_step)

    def run_paths(self, paths: Sequence[Sequence[Sequence[PlannedCall]]]) -> list[PathRun]:
        """Run many gold paths; the runs in the order of `paths`."""
        runs: list[PathRun] = [PathRun()] * len(paths)
        with paused_gc():
            for index, run in self.iter_run_paths(paths):
                runs[index] = run
        return runs

    def close(self) -> None:
        """Release what the environment holds (subprocesses, recordings)."""

    def __enter__(self) -> "Environment":
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


# --- arguments against a JSON Schema (pure) -----------------------------------------------------

# Exact Python types per JSON type: `type(value) in ...` is the fast path (and keeps bool apart
# from integer, since type(True) is bool).
_PY_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "integer": (int,),
    "number": (int, float),
    "boolean": (bool,),
    "array": (list, tuple),
    "object": (dict,),
    "null": (type(None),),
}


def _allowed_types(schema: Mapping[str, Any]) -> list[str]:
    declared = schema.get("type")
    if isinstance(declared, str):
        return [declared]
    if isinstance(declared, list):
        return [name for name in declared if isinstance(name, str)]
    alternatives = schema.get("anyOf") or schema.get("oneOf") or []
    return [name for alternative in alternatives if isinstance(alternative, dict) for name in _allowed_types(alternative)]


class ValueCoercer:
    """Coerces values to one property schema; built once per schema (tools are called many times).

    Why lenient: published catalogs declare loose types (NESTful's `sqrt` says "int" and gets
    floats), so a value that does not fit is left for the tool to judge rather than rejected here.
    What it fixes is what breaks real tools: "12" for a number, 5.0 for an integer-only parameter
    (`math.factorial(5.0)` raises), "true" for a boolean, a JSON-encoded list for an array.
    """

    __slots__ = ("types", "fits", "items", "properties")

    def __init__(self, schema: Any) -> None:
        schema = schema if isinstance(schema, dict) else {}
        self.types = [name for name in _allowed_types(schema) if name in _PY_TYPES]
        self.fits = frozenset(py for name in self.types for py in _PY_TYPES[name])
        items = schema.get("items")
        self.items = ValueCoercer(items) if isinstance(items, dict) and "array" in self.types else None
        properties = schema.get("properties")
        self.properties = (
            ArgumentCoercer(schema) if isinstance(properties, dict) and properties and "object" in self.types else None
        )

    def __call__(self, value: Any) -> Any:
        if not self.types:
            return value
        if type(value) not in self.fits:
            for name in self.types:
                converted = _convert(value, name)
                if converted is not _NO_CONVERSION:
                    value = converted
                    break
            else:
                return value
        if self.items is not None and isinstance(value, list):
            return [self.items(item) for item in value]
        if self.properties is not None and isinstance(value, dict):
            return self.properties(value)
        return value


class ArgumentCoercer:
    """Coerces an argument dict by its object schema; arguments it does not name pass as they are."""

    __slots__ = ("by_name",)

    def __init__(self, parameters: Mapping[str, Any] | None) -> None:
        properties = (parameters or {}).get("properties") or {}
        self.by_name = {name: ValueCoercer(schema) for name, schema in properties.items()}
        self.by_name = {name: coercer for name, coercer in self.by_name.items() if coercer.types}

    def __call__(self, arguments: Mapping[str, Any]) -> Mapping[str, Any]:
        """The coerced arguments: the same mapping when every value already fits (callers must
        not mutate it), else a new dict."""
        by_name = self.by_name
        coerced: dict[str, Any] | None = None
        for name, value in arguments.items():
            coercer = by_name.get(name)
            if coercer is None or (type(value) in coercer.fits and coercer.items is None and coercer.properties is None):
                continue
            new = coercer(value)
            if new is not value:
                if coerced is None:
                    coerced = dict(arguments)
                coerced[name] = new
        return arguments if coerced is None else coerced


_NO_CONVERSION = object()


def _convert(value: Any, type_name: str) -> Any:
    if type_name == "integer":
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, str):
            text = value.strip()
            if text.lstrip("+-").isdigit():
                return int(text)
            number = _parse_float(text)
            if number is not None and number.is_integer():
                return int(number)
    elif type_name == "number":
        if isinstance(value, str):
            text = value.strip()
            if text.lstrip("+-").isdigit():
                return int(text)
            number = _parse_float(text)
            if number is not None and math.isfinite(number):
                return number
    elif type_name == "boolean":
        if isinstance(value, str) and value.strip().lower() in ("true", "false"):
            return value.strip().lower() == "true"
    elif type_name == "string":
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return str(value)
    elif type_name in ("array", "object"):
        if isinstance(value, str) and value.strip()[:1] in ("[", "{"):
            try:
                parsed = json.loads(value)
            except ValueError:
                return _NO_CONVERSION
            if type(parsed) in _PY_TYPES[type_name]:
                return parsed
    return _NO_CONVERSION


def _parse_float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def coerce_value(value: Any, schema: Mapping[str, Any]) -> Any:
    """Convert a value to a type its schema allows when that loses nothing; else return it as is."""
    return ValueCoercer(schema)(value)


def coerce_arguments(arguments: Mapping[str, Any], parameters: Mapping[str, Any] | None) -> dict[str, Any]:
    """Coerce each argument by its property schema; arguments the schema does not name pass as is."""
    return dict(ArgumentCoercer(parameters)(arguments))


def with_defaults(arguments: Mapping[str, Any], parameters: Mapping[str, Any] | None) -> dict[str, Any]:
    """The arguments plus every schema `default` the call left out (the call the API really got)."""
    filled = dict(arguments)
    for name, schema in ((parameters or {}).get("properties") or {}).items():
        if name not in filled and isinstance(schema, Mapping) and "default" in schema:
            filled[name] = schema["default"]
    return filled


def canonical_call_key(
    name: str,
    arguments: Mapping[str, Any],
    parameters: Mapping[str, Any] | None = None,
    coercer: ArgumentCoercer | None = None,
) -> str:
    """One string per distinct call: arguments coerced to the schema, defaults filled, numbers
    normalised, keys sorted. (`coercer`: the schema's prebuilt ArgumentCoercer, to skip building it.)

    Two calls a tool cannot tell apart (`{"n": 1}` and `{"n": 1.0}`, or one leaving out an
    argument at its default) get the same key, so a recording made once answers both.
    """
    coerced = (coercer or ArgumentCoercer(parameters))(arguments)
    filled = with_defaults(coerced, parameters)
    body = json.dumps(normalise_json(filled), sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return f"{name}:{body}"
