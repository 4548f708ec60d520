"""The validated file as the export reads it, and its dataset statistics, measured once per content.

`read_validated` is the export's reader: a Sample per good line, a reject (with its reason code)
per bad line or repeated id, never a crash. `file_stats` gives the statistics of such a file (the
dataset card's Table 3 and what makes the samples hard: fcbench.stats.tables), which cost as much to
measure as the export itself on long-context benchmarks (a token count of every response). They
are a pure function of the file's bytes and of the code that measures them, so they are cached on
disk under the SHA-256 of both (`$FCBENCH_STATS_CACHE`, default `~/.cache/fcbench/stats/`; `off`
disables it): the filter measures the file it has just written, and the export's card then reads
the figures instead of measuring again (the report and `stats` measure what they read, with the
token counts cached). A cache entry that cannot be read or written is ignored (measured again),
never an error.

A file no stage measured (`export --input` of a foreign file) is measured on every core
(`read_validated_parallel`): worker processes read, check and classify byte ranges of whole lines
and measure each sample, token counts included (the expensive part); the export has them make
each sample's Parquet row as well, so every line is parsed once. The lines come back in input
order, the repeated-id rule and the bad-line policy are applied to them as one reader would, and the
figures are summed up in that order (fcbench.stats.tables.StatsTally): the statistics and the
export are the same, byte for byte, as one process reading the file line by line.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import threading
import time
from collections import deque
from concurrent.futures import Future
from dataclasses import dataclass
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any, Callable, Iterator

from pydantic import ValidationError

from fcbench.errors import UserError
from fcbench.jsonl import _BOM, check_bad_share, iter_json_lines, parse_json_line, read_json_line_at, write_json
from fcbench.sample import Sample, sample_from_dict
from fcbench.stats.tables import DatasetStats, DomainRow, StatsTally, sample_figures


@dataclass
class LineReject:
    """A line the export cannot take, with its reason code."""

    line_no: int
    reason: str
    detail: str
    raw: Any

    def record(self, source: Path) -> dict[str, Any]:
        sample_id = self.raw.get("id") if isinstance(self.raw, dict) else None
        return {"id": sample_id, "reason": self.reason, "detail": self.detail,
                "source": f"{source}:{self.line_no}", "raw": self.raw}


def read_validated(path: Path) -> Iterator[Sample | LineReject]:
    """The input line by line: a Sample, or a reject with its reason code (never a crash)."""
    seen_ids: set[str] = set()  # ids only: a few bytes per sample, unlike the samples themselves
    for line in iter_json_lines(path):
        item = classify_line(line.line_no, line.value, line.error)
        if isinstance(item, Sample):
            if item.id in seen_ids:
                yield duplicate_reject(line.line_no, item.id, line.value)
                continue
            seen_ids.add(item.id)
        yield item


def classify_line(line_no: int, value: Any, error: str | None) -> Sample | LineReject:
    """One line as the export takes it: a Sample, or a reject with its reason (the repeated-id
    rule needs every earlier line: the reader applies it)."""
    if error:
        return LineReject(line_no, "not_json", error, None)
    try:
        return sample_from_dict(value)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "(record)"
        return LineReject(line_no, "invalid_sample", f"{where}: {first['msg']}", value)


def duplicate_reject(line_no: int, sample_id: str, value: Any) -> LineReject:
    # Two rows with one id would make scores per item ambiguous; the first one is kept.
    return LineReject(line_no, "duplicate_id", f"id {sample_id!r} already exported", value)


def measure_file(source: Path, workers: int | None = None) -> DatasetStats:
    """The statistics of what read_validated yields (duplicate ids and bad lines counted as
    rejects), measured on every core (`workers`, default all of them)."""
    tally = StatsTally()
    for line in read_validated_parallel(source, sample_figures, workers):
        if line.reject is not None:
            tally.add_reject(line.reject.reason)
        else:
            tally.add(line.made)
    return tally.result()


# -------------------------------------------------------------------- reading on every core
CHUNK_BYTES = 2 * 1024 * 1024  # a worker's task: whole lines, about this much of the file
AHEAD_PER_WORKER = 2  # tasks handed out ahead of the one being consumed (bounds the memory held)


@dataclass
class ReadLine:
    """One non-blank line of a validated file, as `read_validated` would classify it, with what
    the caller's function made of its sample (`made`; None for a reject)."""

    line_no: int
    offset: int
    reject: LineReject | None = None
    sample_id: str | None = None
    made: Any = None


@dataclass
class _Chunk:
    """What a worker read in one byte range: its lines (numbered from 1 within the range) and
    the bad-line counts the reader's policy needs."""

    lines: list[ReadLine]
    line_count: int  # every line, blank ones too (to number the next range's lines)
    non_blank: int
    bad: int
    first_error: str | None  # "line N: ..." with N within the range


def _read_chunk(source: Path, start: int, end: int, make: Callable[[Sample], Any]) -> _Chunk:
    """Read, check and classify the lines in [start, end) exactly as iter_json_lines and
    read_validated do (but for repeated ids, which need the lines before), and apply `make` to
    every sample."""
    lines: list[ReadLine] = []
    line_count = non_blank = bad = 0
    first_error = None
    offset = start
    with open(source, "rb") as handle:
        handle.seek(start)
        while offset < end:
            raw = handle.readline()
            if not raw:
                break
            line_start, offset = offset, offset + len(raw)
            line_count += 1
            if line_start == 0 and raw.startswith(_BOM):
                raw = raw[len(_BOM):]
            if not raw.strip():
                continue
            non_blank += 1
            try:
                value, error = parse_json_line(raw), None
            except ValueError as exc:
                value, error = None, str(exc)
                bad += 1
                first_error = first_error or f"line {line_count}: {exc}"
            item = classify_line(line_count, value, error)
            if isinstance(item, LineReject):
                lines.append(ReadLine(line_count, line_start, reject=item))
            else:
                lines.append(ReadLine(line_count, line_start, sample_id=item.id, made=make(item)))
    return _Chunk(lines, line_count, non_blank, bad, first_error)


def _chunk_bounds(source: Path, size: int | None = None) -> Iterator[tuple[int, int]]:
    """Byte ranges of whole lines, each about `size` bytes (a longer line is a range of its own)."""
    size = size or CHUNK_BYTES
    total = source.stat().st_size
    with open(source, "rb") as handle:
        start = 0
        while start < total:
            handle.seek(min(start + size, total))
            if start + size < total:
                handle.readline()  # to the end of the line the cut falls in
            end = min(handle.tell(), total) if start + size < total else total
            yield start, end
            start = end


def read_validated_parallel(source: Path, make: Callable[[Sample], Any], workers: int | None = None
                            ) -> Iterator[ReadLine]:
    """`read_validated` on every core: worker processes read, check and classify byte ranges of
    whole lines and apply `make` (a module-level function: it goes to the workers by name) to each
    sample; the lines come back here in input order, where the repeated-id rule and the bad-line
    policy (fcbench.jsonl) are applied as one reader would. A sample is only handed over as what
    `make` made of it (a row, a few figures), never the sample itself. With one core, or where no
    worker starts or one dies, the ranges are read here instead: slower, the same lines."""
    workers = workers if workers is not None else default_workers()
    pool = _start_pool(workers) if workers > 1 else None
    seen_ids: set[str] = set()
    lines_before = total = bad = 0
    first_error = None
    pending: deque[tuple[int, int, Future | None]] = deque()
    bounds = _chunk_bounds(source)
    failed = False
    try:
        while True:
            while pool is not None and len(pending) < max(1, workers * AHEAD_PER_WORKER):
                bound = next(bounds, None)
                if bound is None:
                    break
                try:
                    pending.append((*bound, pool.submit(_read_chunk, source, *bound, make)))
                except (RuntimeError, OSError):  # the pool broke: the rest is read here
                    pending.append((*bound, None))
                    pool = _stop_pool(pool)
            if not pending:
                bound = next(bounds, None)
                if bound is None:
                    break
                pending.append((*bound, None))
            start, end, future = pending.popleft()
            chunk = None
            if future is not None:
                try:
                    chunk = future.result()
                except Exception:  # noqa: BLE001 (a killed or failed worker: its range is read here)
                    chunk = None
            if chunk is None:
                chunk = _read_chunk(source, start, end, make)
            total += chunk.non_blank
            bad += chunk.bad
            if first_error is None and chunk.first_error is not None:
                number, _, rest = chunk.first_error.partition(": ")
                first_error = f"line {int(number.split()[1]) + lines_before}: {rest}"
            for line in chunk.lines:
                line.line_no += lines_before
                if line.reject is not None:
                    line.reject.line_no = line.line_no
                elif line.sample_id in seen_ids:
                    line.reject = duplicate_reject(line.line_no, line.sample_id, read_json_line_at(source, line.offset))
                    line.made = None
                else:
                    seen_ids.add(line.sample_id)
                yield line
            lines_before += chunk.line_count
        check_bad_share(source, total, bad, first_error)
    except BaseException:
        failed = True
        raise
    finally:
        if pool is not None:
            if failed:
                for process in list((getattr(pool, "_processes", None) or {}).values()):
                    process.terminate()
            # waited for even after a failure (its workers are gone by now): a pool left to the
            # interpreter's exit can write to its closed wakeup pipe, a traceback after the error line
            pool.shutdown(wait=True, cancel_futures=True)


def _exit_with_parent(parent_pid: int, every_s: float = 0.5) -> None:
    """A worker ends when the process that started it does: a forked pool worker holds both ends
    of its task pipe, so after a kill -9 of its parent it would wait forever."""
    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(every_s)
        os._exit(1)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


def _start_pool(workers: int) -> Any:
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    try:
        # fork: the workers start at once with fcbench imported (spawn would import it again)
        context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else None)
        return ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_exit_with_parent,
                                   initargs=(os.getpid(),))
    except (OSError, ValueError, RuntimeError):
        return None


def _stop_pool(pool: Any) -> None:
    try:
        pool.shutdown(wait=False, cancel_futures=True)
    except Exception:  # noqa: BLE001 (a broken pool: nothing more to stop)
        pass
    return None


def default_workers() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


# ------------------------------------------------------------------------------------ the cache
def stats_cache_dir() -> Path | None:
    configured = os.environ.get("FCBENCH_STATS_CACHE", "")
    if configured.lower() == "off":
        return None
    if configured:
        return Path(configured)
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "fcbench" / "stats"


@lru_cache(maxsize=1)
def code_fingerprint() -> str:
    """The measuring code: every fcbench module (a change anywhere may change a figure) and the
    tokenizer's version."""
    digest = hashlib.sha256()
    package = Path(__file__).resolve().parents[1]  # the whole fcbench package
    for module in sorted(package.rglob("*.py")):
        digest.update(str(module.relative_to(package)).encode())
        digest.update(module.read_bytes())
    try:
        digest.update(f"bpe-openai={metadata.version('bpe-openai')}".encode())
    except metadata.PackageNotFoundError:
        digest.update(b"bpe-openai=none")
    return digest.hexdigest()


def _cache_file(source: Path) -> Path | None:
    folder = stats_cache_dir()
    if folder is None:
        return None
    with open(source, "rb") as handle:
        content = hashlib.file_digest(handle, "sha256").hexdigest()
    key = hashlib.sha256(f"{content}:{code_fingerprint()}".encode()).hexdigest()
    return folder / f"{key}.json"


def cache_file_of(source: Path) -> Path | None:
    """Where this file's figures are (or would be) cached; None without a cache or a readable file."""
    try:
        return _cache_file(source)
    except OSError:
        return None


def remember_stats(cache_file: Path | None, stats: DatasetStats) -> None:
    """Keep measured figures for the next reader of the same bytes (a cache that cannot be
    written is only a cache: the figures are measured again next time)."""
    if cache_file is None:
        return
    try:
        write_json(cache_file, stats_to_json(stats))
    except (OSError, UserError):
        pass


def stats_to_json(stats: DatasetStats) -> dict[str, Any]:
    """Every field as measured (unrounded), so the figures read back are the figures computed."""
    return dataclasses.asdict(stats)


def stats_from_json(value: dict[str, Any]) -> DatasetStats:
    fields = dict(value)
    fields["domains"] = [DomainRow(**row) for row in fields["domains"]]
    for name in ("nesting_depth", "dependencies", "sequence_length", "nested_calls"):  # JSON keys are strings; these are counts
        fields[name] = {int(key): count for key, count in fields[name].items()}
    return DatasetStats(**fields)


def stats_in_cache(cache_file: Path | None) -> DatasetStats | None:
    """The figures kept in `cache_file` (from `cache_file_of`), None when there are none."""
    return _read_cache(cache_file)


def _read_cache(cache_file: Path | None) -> DatasetStats | None:
    try:
        if cache_file is None or not cache_file.is_file():
            return None
        return stats_from_json(json.loads(cache_file.read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError, KeyError):
        return None  # unreadable or from an older layout: measured again


def cached_stats(source: Path) -> DatasetStats | None:
    """The figures of this exact file if they were measured before (None: not known)."""
    return _read_cache(cache_file_of(source))


def file_stats(source: Path) -> DatasetStats:
    """The statistics of `source`, from the cache or measured (and then remembered)."""
    cache_file = cache_file_of(source)
    known = _read_cache(cache_file)
    if known is not None:
        return known
    stats = measure_file(source)
    remember_stats(cache_file, stats)
    return stats
