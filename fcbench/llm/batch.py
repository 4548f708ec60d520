"""The OpenAI Batch API behind the LLM client (`llm.mode: batch`): same requests, same request
cache, half the price, answers within the completion window.

How a request travels: the client asks `BatchSender.answer(key, ...)` on a cache miss; requests
arriving within `gather_window_s` of each other are gathered, split to the provider's limits
(requests and bytes per input file), uploaded (`files.create(purpose="batch")`), submitted
(`batches.create`), and polled with growing waits. When a batch ends, its output and error files
are downloaded; every usable answer goes into the request cache at once, keyed by its
`custom_id` (the cache key), and the waiting requests get their answers or a failure.

Never lose a paid answer, never pay twice: each batch id and the keys it carries are written to a
ledger (SQLite, in the cache's file) as soon as the batch is created. A run that starts while the
ledger has batches it did not collect (the previous run was killed) first waits for them and
collects their answers into the cache: their requests are not submitted again. A request whose
batch failed or expired, or that is missing from the output, or that came back with a 429/5xx,
is sent again in a later batch, by the client's retry budget.
"""

from __future__ import annotations

import asyncio
import json
import logging
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import openai

from fcbench.config import BatchConfig
from fcbench.llm.cache import RequestCache

log = logging.getLogger(__name__)

ENDPOINT = "/v1/chat/completions"
TERMINAL = frozenset({"completed", "failed", "expired", "cancelled"})

_LEDGER_SCHEMA = """
CREATE TABLE IF NOT EXISTS llm_batches (
    batch_id TEXT PRIMARY KEY,
    created_at REAL NOT NULL,
    status TEXT NOT NULL,
    collected INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS llm_batch_items (
    batch_id TEXT NOT NULL,
    key TEXT NOT NULL,
    key_text TEXT NOT NULL,
    PRIMARY KEY (batch_id, key)
);
"""


@dataclass(frozen=True)
class BatchAnswer:
    """A usable completion, already in the cache."""

    body: dict[str, Any]


@dataclass(frozen=True)
class BatchFailure:
    """No usable answer for this request from its batch; `retryable`: sending it again may help."""

    reason: str
    retryable: bool
    raw_text: str = ""


BatchOutcome = BatchAnswer | BatchFailure


class BatchLedger:
    """Which batches were submitted with which keys, and which were collected (SQLite)."""

    def __init__(self, path: str | Path) -> None:
        self._db = sqlite3.connect(str(path), isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA busy_timeout=10000")
        self._db.executescript(_LEDGER_SCHEMA)

    def record(self, batch_id: str, items: list[tuple[str, str]]) -> None:
        # One transaction: the connection autocommits each statement (isolation_level=None), so
        # without BEGIN a kill between the batch row and its item rows would leave a batch whose
        # requests a resumed run does not know it already paid for, and sends again.
        self._db.execute("BEGIN IMMEDIATE")
        try:
            self._db.execute("INSERT OR IGNORE INTO llm_batches (batch_id, created_at, status) VALUES (?, ?, ?)",
                             (batch_id, time.time(), "submitted"))
            self._db.executemany("INSERT OR IGNORE INTO llm_batch_items (batch_id, key, key_text) VALUES (?, ?, ?)",
                                 [(batch_id, key, key_text) for key, key_text in items])
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

    def uncollected(self) -> list[str]:
        rows = self._db.execute("SELECT batch_id FROM llm_batches WHERE collected = 0 ORDER BY created_at").fetchall()
        return [row[0] for row in rows]

    def items(self, batch_id: str) -> dict[str, str]:
        rows = self._db.execute("SELECT key, key_text FROM llm_batch_items WHERE batch_id = ?", (batch_id,)).fetchall()
        return dict(rows)

    def mark_collected(self, batch_id: str, status: str) -> None:
        self._db.execute("UPDATE llm_batches SET collected = 1, status = ? WHERE batch_id = ?", (status, batch_id))

    def close(self) -> None:
        self._db.close()


def batch_line(key: str, payload: dict[str, Any]) -> bytes:
    return (json.dumps({"custom_id": key, "method": "POST", "url": ENDPOINT, "body": payload},
                       ensure_ascii=False, separators=(",", ":")) + "\n").encode("utf-8")


def split_to_limits(lines: list[tuple[str, bytes]], max_requests: int, max_bytes: int) -> list[list[tuple[str, bytes]]]:
    """Consecutive chunks of (key, line) within both limits (a line alone over the byte limit
    still gets a chunk of its own: the provider then refuses that one request, not the run)."""
    chunks: list[list[tuple[str, bytes]]] = []
    current: list[tuple[str, bytes]] = []
    size = 0
    for key, line in lines:
        if current and (len(current) >= max_requests or size + len(line) > max_bytes):
            chunks.append(current)
            current, size = [], 0
        current.append((key, line))
        size += len(line)
    if current:
        chunks.append(current)
    return chunks


@dataclass
class _Pending:
    key_text: str
    payload: dict[str, Any]
    futures: list[asyncio.Future[BatchOutcome]] = field(default_factory=list)


class BatchSender:
    """One per LLM client (one event loop). `answer()` waits for the batch that carries the request."""

    def __init__(self, sdk: openai.AsyncOpenAI, cache: RequestCache, ledger: BatchLedger, settings: BatchConfig,
                 check_body: Any) -> None:
        self._sdk = sdk
        self._cache = cache
        self._ledger = ledger
        self._settings = settings
        self._check_body = check_body  # text -> (body | None, problem | None)
        self._pending: dict[str, _Pending] = {}
        self._flusher: asyncio.Task[None] | None = None
        self._resumed = False
        self.batches_submitted = 0
        self.batches_resumed = 0

    async def answer(self, key: str, key_text: str, payload: dict[str, Any]) -> BatchOutcome:
        future: asyncio.Future[BatchOutcome] = asyncio.get_running_loop().create_future()
        self._pending.setdefault(key, _Pending(key_text, payload)).futures.append(future)
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.create_task(self._flush_loop())
        return await future

    async def _flush_loop(self) -> None:
        while self._pending:
            # Gather: wait while requests keep arriving (every coroutine of the stage that is about
            # to ask gets to ask), then take them all.
            seen = -1
            while seen != len(self._pending) and len(self._pending) < self._settings.max_requests_per_file:
                seen = len(self._pending)
                await asyncio.sleep(self._settings.gather_window_s)
            taken, self._pending = self._pending, {}
            try:
                outcomes = await self._process(taken)
            except BaseException as exc:  # a user error or a cancel: every waiting request hears of it
                for pending in taken.values():
                    for future in pending.futures:
                        if not future.done():
                            future.set_exception(exc)
                if isinstance(exc, asyncio.CancelledError):
                    raise
                continue
            for key, pending in taken.items():
                for future in pending.futures:
                    if not future.done():
                        future.set_result(outcomes[key])

    async def _process(self, taken: dict[str, _Pending]) -> dict[str, BatchOutcome]:
        outcomes: dict[str, BatchOutcome] = {}
        if not self._resumed:
            self._resumed = True
            # Batches a killed run left running: wait for them, keep their answers, send none again.
            uncollected = self._ledger.uncollected()
            self.batches_resumed = len(uncollected)
            for batch_id, found in zip(uncollected, await asyncio.gather(*(self._wait_and_collect(b) for b in uncollected))):
                for key, outcome in found.items():
                    if key in taken:
                        outcomes[key] = outcome
        to_send = {key: pending for key, pending in taken.items()
                   if key not in outcomes or isinstance(outcomes[key], BatchFailure)}
        for key in list(to_send):
            cached = self._cache.get(key)
            if cached is not None:
                outcomes[key] = BatchAnswer(cached)
                del to_send[key]
        if not to_send:
            return outcomes
        lines = [(key, batch_line(key, pending.payload)) for key, pending in to_send.items()]
        chunks = split_to_limits(lines, self._settings.max_requests_per_file, self._settings.max_bytes_per_file)
        batch_ids = [await self._submit(chunk, to_send) for chunk in chunks]
        for found in await asyncio.gather(*(self._wait_and_collect(batch_id) for batch_id in batch_ids)):
            outcomes.update({key: outcome for key, outcome in found.items() if key in to_send})
        for key in to_send:
            outcomes.setdefault(key, BatchFailure("batch: missing from the output", retryable=True))
        return outcomes

    async def _submit(self, chunk: list[tuple[str, bytes]], pending: dict[str, _Pending]) -> str:
        data = b"".join(line for _, line in chunk)
        uploaded = await self._sdk.files.create(file=("fcbench-batch.jsonl", data), purpose="batch")
        batch = await self._sdk.batches.create(input_file_id=uploaded.id, endpoint=ENDPOINT,
                                               completion_window=self._settings.completion_window,
                                               metadata={"client": "fcbench"})
        # Recorded before anything else can fail: a kill from here on resumes this batch.
        self._ledger.record(batch.id, [(key, pending[key].key_text) for key, _ in chunk])
        self.batches_submitted += 1
        log.info("LLM batch %s submitted: %d requests, %d bytes", batch.id, len(chunk), len(data))
        return batch.id

    async def _wait_and_collect(self, batch_id: str) -> dict[str, BatchOutcome]:
        delay = self._settings.poll_interval_s
        while True:
            batch = await self._sdk.batches.retrieve(batch_id)
            if batch.status in TERMINAL:
                break
            await asyncio.sleep(delay)
            delay = min(delay * 1.5, self._settings.max_poll_interval_s)
        items = self._ledger.items(batch_id)
        outcomes: dict[str, BatchOutcome] = {}
        for file_id in (batch.output_file_id, batch.error_file_id):
            if file_id:
                content = await self._sdk.files.content(file_id)
                outcomes.update(self._read_result_file(content.content, items))
        if batch.status != "completed":
            log.warning("LLM batch %s ended %s: %d of %d requests answered; the rest are sent again",
                        batch_id, batch.status, sum(isinstance(o, BatchAnswer) for o in outcomes.values()), len(items))
            for key in items:
                outcomes.setdefault(key, BatchFailure(f"batch {batch.status}", retryable=True))
        self._ledger.mark_collected(batch_id, batch.status)
        return outcomes

    def _read_result_file(self, data: bytes, items: dict[str, str]) -> dict[str, BatchOutcome]:
        outcomes: dict[str, BatchOutcome] = {}
        for number, raw in enumerate(data.decode("utf-8", errors="replace").splitlines(), start=1):
            if not raw.strip():
                continue
            try:
                record = json.loads(raw)
                key = str(record["custom_id"])
            except (json.JSONDecodeError, KeyError, TypeError):
                log.warning("LLM batch result line %d is not a result record; ignored", number)
                continue
            if key not in items:
                continue  # not ours (or not of this batch): never cached under a foreign key
            response = record.get("response") or {}
            status = int(response.get("status_code") or 0)
            body_text = json.dumps(response.get("body"), ensure_ascii=False)
            if status == 200:
                body, problem = self._check_body(body_text)
                if body is not None:
                    self._cache.put(key, items[key], body_text)  # at once: a kill must not lose a paid answer
                    outcomes[key] = BatchAnswer(body)
                    continue
                outcomes[key] = BatchFailure(f"malformed response ({problem})", retryable=True, raw_text=body_text)
            else:
                error = record.get("error") or {}
                reason = f"HTTP {status}" if status else f"batch error {error.get('code', 'unknown')}"
                outcomes[key] = BatchFailure(reason, retryable=status in (0, 408, 429) or status >= 500, raw_text=body_text)
        return outcomes
