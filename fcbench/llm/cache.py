"""The LLM request cache: one SQLite row per answered request, so a re-run never pays twice.

The key is a hash of everything that shapes the answer (model, messages, tools, sampling
parameters, seed, prompt file hash) plus the sample index and the attempt number: N variants of
one prompt stay N distinct rows, and a re-run replays each of them identically.

Each answer is committed as soon as it arrives; WAL mode makes that cheap and keeps committed rows
when the process is killed, so a resumed run re-sends only the requests that had no answer yet.
The client writes from its one event-loop thread: one writer. No API key is ever part of a row.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from pathlib import Path
from typing import Any, Mapping

LLM_CACHE_FILE = "llm-cache.sqlite"  # a pipeline's request cache, in its build folder

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    request TEXT NOT NULL,
    response TEXT NOT NULL,
    created_at REAL NOT NULL
)
"""


def canonical_json(value: Any) -> str:
    """Key order and whitespace do not change the key: the same request always hashes the same."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def cache_key(key_fields: Mapping[str, Any] | str) -> str:
    """sha256 of the canonical JSON of the fields (or of that JSON text, when given)."""
    return hashlib.sha256(_as_text(key_fields).encode("utf-8")).hexdigest()


def _as_text(value: Mapping[str, Any] | str) -> str:
    return value if isinstance(value, str) else canonical_json(value)


class RequestCache:
    """`get(key)` / `put(key, request, response)` over a SQLite file (created with its folder)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # isolation_level=None: autocommit, every put is its own committed transaction.
        self._db = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        # NORMAL in WAL mode: a killed process loses nothing committed (only a power cut could).
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("PRAGMA busy_timeout=10000")
        self._db.execute(_SCHEMA)

    def get(self, key: str) -> dict[str, Any] | None:
        row = self._db.execute("SELECT response FROM responses WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else None

    def put(self, key: str, request: Mapping[str, Any] | str, response: Mapping[str, Any] | str) -> None:
        """Store one answer; `request` / `response` may be given as JSON text already (the client
        has both in hand: serialising them again would cost CPU on every request)."""
        self._db.execute("INSERT OR REPLACE INTO responses (key, request, response, created_at) VALUES (?, ?, ?, ?)",
                         (key, _as_text(request), _as_text(response), time.time()))

    def delete(self, key: str) -> None:
        """Forget an answer (one that could not be used), so that a re-run asks again."""
        self._db.execute("DELETE FROM responses WHERE key = ?", (key,))

    def __len__(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def __contains__(self, key: object) -> bool:
        return self._db.execute("SELECT 1 FROM responses WHERE key = ?", (key,)).fetchone() is not None

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> RequestCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
