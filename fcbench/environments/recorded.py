"""Recorded environment: answers calls from responses annotated in samples (or recorded from a live
API), keyed by the canonical form of the call.

The key is `canonical_call_key`: tool name + arguments coerced to the tool's schema, schema defaults
filled in, numbers in one spelling (1 == 1.0), keys sorted. So a model that writes `{"adults": 1}`
where the gold call left `adults` at its default still gets the recorded answer.

A call that was never recorded gets `UNKNOWN_CALL_RESPONSE`, a fixed error answer, the way
ComplexFuncBench's evaluator answers a call it has no response for: the model sees an error it can
react to, and the outcome says `not_recorded`.
"""

from __future__ import annotations

import json
import pickle
import sqlite3
import threading
from collections.abc import Iterator, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping

from fcbench.environments import ArgumentCoercer, CallOutcome, Environment, ErrorReason, canonical_call_key
from fcbench.jsonl import write_json
from fcbench.resolve import CallSite, UnresolvedReference, resolve_arguments

if TYPE_CHECKING:
    from fcbench.sample import Sample, Tool

UNKNOWN_CALL_RESPONSE: dict[str, str] = {
    "error": "No response is available for this function call. Check the function name and arguments."
}
"""What a model gets for a call that matches no recorded call (constant, so runs are comparable)."""

STORE_FORMAT = "fcbench-recorded-calls/1"


@dataclass(frozen=True)
class RecordedCall:
    name: str
    arguments: Mapping[str, Any]
    response: Any
    # the state the call was made in, for a stateful tool server: a digest of the same sample's
    # earlier calls to it (fcbench.environments.mcp_results.state_key); "" for a stateless call
    state: str = ""


class RecordedStore:
    """Responses by canonical call key; saved as a JSON file so a benchmark built once against a
    live API replays offline."""

    def __init__(self, tools: Iterable["Tool"] | Mapping[str, Mapping[str, Any]] | None = None,
                 calls: MutableMapping[str, RecordedCall] | None = None) -> None:
        if isinstance(tools, Mapping):
            self.schemas: dict[str, Mapping[str, Any]] = dict(tools)
        else:
            self.schemas = {tool.name: tool.parameters for tool in tools or []}
        self._coercers: dict[str, ArgumentCoercer] = {}
        # in memory, or on disk (`DiskCalls`) for a benchmark too large to hold its responses
        self.calls: MutableMapping[str, RecordedCall] = {} if calls is None else calls
        self.conflicts = 0  # same call recorded again with a different response (the first is kept)
        self.unresolved = 0  # sample calls skipped because a reference could not be resolved

    def key(self, name: str, arguments: Mapping[str, Any], state: str = "") -> str:
        schema = self.schemas.get(name)
        coercer = self._coercers.get(name)
        if coercer is None:
            coercer = self._coercers[name] = ArgumentCoercer(schema)
        key = canonical_call_key(name, arguments, schema, coercer)
        return f"{key}@{state}" if state else key

    def add(self, name: str, arguments: Mapping[str, Any], response: Any, state: str = "") -> bool:
        """Record a response; False (and counted) when the call already had a different one."""
        key = self.key(name, arguments, state)
        known = self.calls.get(key)
        if known is not None:
            if known.response != response:
                self.conflicts += 1
                return False
            return True
        self.calls[key] = RecordedCall(name, dict(arguments), response, state)
        return True

    def lookup(self, name: str, arguments: Mapping[str, Any], state: str = "") -> RecordedCall | None:
        return self.calls.get(self.key(name, arguments, state))

    def __len__(self) -> int:
        return len(self.calls)

    def add_samples(self, samples: Iterable["Sample"]) -> int:
        """Record every call of the samples that carries a response (a call never answered has no
        `response` field; a null response is a real answer). References in arguments are resolved
        from the responses of the same sample, since that is the call the API really got.
        Returns how many calls were recorded."""
        added = 0
        for sample in samples:
            for name, arguments, response in _answered_calls(sample, self):
                added += self.add(name, arguments, response)
        return added

    @classmethod
    def from_samples(cls, samples: Iterable["Sample"]) -> "RecordedStore":
        samples = list(samples)
        store = cls(_tools_of(samples))
        store.add_samples(samples)
        return store

    def save(self, path: str | Path) -> None:
        """Write the store as JSON, calls sorted by key (same recording, same bytes)."""
        calls = [
            {"name": call.name, "arguments": call.arguments, **({"state": call.state} if call.state else {}),
             "response": call.response}
            for _, call in sorted(self.calls.items())
        ]
        write_json(path, {"format": STORE_FORMAT, "calls": calls}, indent=1)

    @classmethod
    def load(cls, path: str | Path, tools: Iterable["Tool"] | Mapping[str, Mapping[str, Any]] | None = None) -> "RecordedStore":
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        if not isinstance(data, dict) or data.get("format") != STORE_FORMAT:
            raise ValueError(f"{path}: not a recorded-calls file (expected format {STORE_FORMAT!r})")
        store = cls(tools)
        for item in data["calls"]:
            store.add(item["name"], item["arguments"], item["response"], item.get("state") or "")
        return store


class DiskCalls(MutableMapping[str, RecordedCall]):
    """Recorded calls by key in a private temporary SQLite database (on disk, a few MB of page
    cache in memory, deleted when closed or when the process dies), for a store that must not
    grow with the benchmark: `evaluate` records every response of its split here. Safe to use
    from several threads (the protocol's judges ask from worker threads)."""

    def __init__(self) -> None:
        # "": SQLite's private temporary database, unlinked at once, so a kill leaves nothing behind
        self._db = sqlite3.connect("", check_same_thread=False)
        self._db.execute("CREATE TABLE calls (key TEXT PRIMARY KEY, call BLOB NOT NULL)")
        self._lock = threading.Lock()

    def __getitem__(self, key: str) -> RecordedCall:
        with self._lock:
            row = self._db.execute("SELECT call FROM calls WHERE key = ?", (key,)).fetchone()
        if row is None:
            raise KeyError(key)
        # our own bytes, written by __setitem__ in this process: pickle keeps every value exact
        return pickle.loads(row[0])

    def __setitem__(self, key: str, call: RecordedCall) -> None:
        with self._lock:
            self._db.execute("INSERT OR REPLACE INTO calls VALUES (?, ?)", (key, pickle.dumps(call)))

    def __delitem__(self, key: str) -> None:
        with self._lock:
            if not self._db.execute("DELETE FROM calls WHERE key = ?", (key,)).rowcount:
                raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        with self._lock:
            keys = [row[0] for row in self._db.execute("SELECT key FROM calls ORDER BY key")]
        return iter(keys)

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM calls").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._db.close()


def _tools_of(samples: Iterable["Sample"]) -> dict[str, Mapping[str, Any]]:
    return {tool.name: tool.parameters for sample in samples for tool in sample.tools}


def _answered_calls(sample: "Sample", store: RecordedStore) -> Iterable[tuple[str, Mapping[str, Any], Any]]:
    outputs: dict[str, Any] = {}
    for step_index, step in enumerate(sample.all_steps()):
        for call in step:
            if "response" not in call.model_fields_set:
                continue
            try:
                arguments = resolve_arguments(call.arguments, outputs, CallSite(call.label, call.name, step_index))
            except UnresolvedReference:
                store.unresolved += 1
                continue
            yield call.name, arguments, call.response
        for call in step:  # a step's calls are parallel: none reads another, so record outputs after
            if "response" in call.model_fields_set:
                outputs[call.label] = call.response


class RecordedEnvironment(Environment):
    """Replays recorded responses; never reaches a network or runs code."""

    def __init__(self, store: RecordedStore, unknown_call_response: Any = UNKNOWN_CALL_RESPONSE) -> None:
        self.store = store
        self.unknown_call_response = unknown_call_response
        self.misses = 0

    @classmethod
    def from_samples(cls, samples: Iterable["Sample"]) -> "RecordedEnvironment":
        return cls(RecordedStore.from_samples(samples))

    def call(self, name: str, arguments: Mapping[str, Any]) -> CallOutcome:
        recorded = self.store.lookup(name, arguments)
        if recorded is not None:
            return CallOutcome.success(recorded.response)
        self.misses += 1
        return CallOutcome.failure(
            ErrorReason.NOT_RECORDED, f"no recorded response for {name} with these arguments", self.unknown_call_response
        )


class RecordingJournal:
    """Append-only log of the answers a recording run receives, beside the store file
    (`<store>.journal.jsonl`): each answer is one flushed line the moment it arrives, so killing
    the run loses nothing received. `open` loads the store and any journal a killed run left;
    `close` writes the whole store atomically and removes the journal."""

    def __init__(self, store_path: Path, store: RecordedStore) -> None:
        self.store_path = store_path
        self.store = store
        self.path = journal_path(store_path)
        self._lock = threading.Lock()
        self._file = None

    @classmethod
    def open(cls, store_path: str | Path, tools: Iterable["Tool"] | Mapping[str, Mapping[str, Any]] | None = None
             ) -> tuple[RecordedStore, "RecordingJournal"]:
        store_path = Path(store_path)
        store = load_store_and_journal(store_path, tools)
        return store, cls(store_path, store)

    def append(self, name: str, arguments: Mapping[str, Any], response: Any, state: str = "") -> None:
        record = {"name": name, "arguments": arguments, **({"state": state} if state else {}), "response": response}
        line = json.dumps(record, ensure_ascii=False)
        with self._lock:
            if self._file is None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                self._file = self.path.open("a", encoding="utf-8")
            self._file.write(line + "\n")
            self._file.flush()

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None
            if len(self.store) or self.store_path.exists():
                self.store.save(self.store_path)
            self.path.unlink(missing_ok=True)


def journal_path(store_path: str | Path) -> Path:
    store_path = Path(store_path)
    return store_path.with_name(store_path.name + ".journal.jsonl")


def load_store_and_journal(store_path: str | Path, tools: Iterable["Tool"] | Mapping[str, Mapping[str, Any]] | None = None
                           ) -> RecordedStore:
    """The store file (empty if absent) plus what a killed recording left in its journal; a line
    cut off by the kill (the last one) is ignored."""
    store_path = Path(store_path)
    store = RecordedStore.load(store_path, tools) if store_path.is_file() else RecordedStore(tools)
    journal = journal_path(store_path)
    if journal.is_file():
        for line in journal.read_text(encoding="utf-8").splitlines():
            try:
                item = json.loads(line)
            except ValueError:
                continue
            if isinstance(item, dict) and {"name", "arguments", "response"} <= item.keys():
                store.add(item["name"], item["arguments"], item["response"], item.get("state") or "")
    return store
