"""The one Parquet writer of the exports (single samples and `kind: conversation` sets alike):
splits as shards of bounded size (`stages.export.shard_rows` / `shard_bytes`), named
`<split>-0000i-of-0000N.parquet` in Hugging Face layout, with one set of writer options; and the
export's work folder, built beside the previous export and swapped in whole, readable by others
as a plain `mkdir` would make it."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from fcbench.formats.parquet_rows import PARQUET_SCHEMA, SHAPE_COLUMNS, row_chars

# A record batch (= one Parquet row group) is flushed at whichever limit comes first. 1000 rows keep
# row groups useful for readers; the character cap bounds memory when responses are large.
BATCH_ROWS = 1_000
BATCH_CHARS = 32_000_000

# Statistics on small typed columns help readers skip row groups; on multi-KB JSON strings they
# would only bloat the footer.
_STATISTICS_COLUMNS = ["id", "difficulty", *SHAPE_COLUMNS, "parent_id"]
_WRITER_OPTIONS: dict[str, Any] = {
    "compression": "zstd",
    "compression_level": 3,
    "use_dictionary": True,  # tool specs repeat across rows: dictionaries shrink them a lot
    "write_statistics": _STATISTICS_COLUMNS,
    "version": "2.6",
    "data_page_version": "1.0",
    "store_schema": True,  # readers get the exact Arrow types back (int32, list<string>)
}


def shard_name(split: str, index: int, count: int) -> str:
    return f"{split}-{index:05d}-of-{count:05d}.parquet"


class SplitWriter:
    """Writes one split as Parquet shards of bounded size, one record batch buffered at a time."""

    def __init__(self, split: str, data_dir: Path, shard_rows: int, shard_chars: int) -> None:
        self.split = split
        self.data_dir = data_dir
        self.shard_rows = shard_rows
        self.shard_chars = shard_chars
        self.rows = 0
        self.paths: list[Path] = []  # the shards, once finished
        self.num_bytes = 0  # Arrow (uncompressed) size, what `datasets` reports as a split's num_bytes
        self._shard_paths: list[Path] = []
        self._writer: pq.ParquetWriter | None = None
        self._shard_row_count = 0
        self._shard_char_count = 0
        self._batch: list[dict[str, Any]] = []
        self._batch_chars = 0

    def add(self, row: dict[str, Any]) -> None:
        size = row_chars(row)
        shard_full = self._shard_row_count >= self.shard_rows or self._shard_char_count + size > self.shard_chars
        if self._shard_row_count and shard_full:
            self._close_shard()
        if self._writer is None:
            self._open_shard()
        self._batch.append(row)
        self._batch_chars += size
        self._shard_row_count += 1
        self._shard_char_count += size
        self.rows += 1
        if len(self._batch) >= BATCH_ROWS or self._batch_chars >= BATCH_CHARS:
            self._flush_batch()

    def finish(self) -> list[Path]:
        """Close the last shard and give every shard its final `-0000i-of-0000N` name."""
        if self._writer is not None:
            self._close_shard()
        count = len(self._shard_paths)
        final = []
        for index, temporary in enumerate(self._shard_paths):
            target = self.data_dir / shard_name(self.split, index, count)
            os.replace(temporary, target)
            final.append(target)
        self.paths = final
        return final

    def _open_shard(self) -> None:
        path = self.data_dir / f".{self.split}-{len(self._shard_paths):05d}.parquet.partial"
        self._writer = pq.ParquetWriter(path, PARQUET_SCHEMA, **_WRITER_OPTIONS)
        self._shard_paths.append(path)
        self._shard_row_count = 0
        self._shard_char_count = 0

    def _flush_batch(self) -> None:
        if self._batch and self._writer is not None:
            batch = pa.RecordBatch.from_pylist(self._batch, schema=PARQUET_SCHEMA)
            self._writer.write_batch(batch)
            self.num_bytes += batch.nbytes
        self._batch = []
        self._batch_chars = 0

    def _close_shard(self) -> None:
        self._flush_batch()
        if self._writer is not None:
            self._writer.close()
        self._writer = None


def write_split(rows: Any, split: str, data_dir: Path, shard_rows: int, shard_chars: int) -> SplitWriter:
    """Write `rows` (any iterable) as one split's shards; the writer tells rows, sizes and paths."""
    data_dir.mkdir(parents=True, exist_ok=True)
    writer = SplitWriter(split, data_dir, shard_rows, shard_chars)
    for row in rows:
        writer.add(row)
    writer.finish()
    return writer


# ------------------------------------------------------------------------------ the work folder
def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def export_work_dir(build_dir: Path) -> Path:
    """A fresh work folder for an export beside the previous one (leftovers of a killed export
    removed first), with the mode a plain `mkdir` gives: mkdtemp's 0700 would hide the export from
    other users once swapped in."""
    build_dir.mkdir(parents=True, exist_ok=True)
    _remove_leftovers(build_dir)
    work_dir = Path(tempfile.mkdtemp(prefix=".export.", dir=build_dir))
    os.chmod(work_dir, 0o777 & ~_umask())
    return work_dir


def _remove_leftovers(build_dir: Path) -> None:
    """Work folders of an export that was killed (`.export.<random>`, `.export.old`): one export
    runs at a time per build folder, so whatever is there now is a leftover."""
    for leftover in build_dir.glob(".export.*"):
        if leftover.is_dir():
            shutil.rmtree(leftover, ignore_errors=True)


def swap_in(work_dir: Path, export_dir: Path) -> None:
    """Replace the previous export as a whole (no stale shard of an earlier, larger run survives)."""
    if export_dir.exists():
        old = export_dir.with_name(f".{export_dir.name}.old")
        if old.exists():
            shutil.rmtree(old)
        os.replace(export_dir, old)
        os.replace(work_dir, export_dir)
        shutil.rmtree(old)
    else:
        os.replace(work_dir, export_dir)
