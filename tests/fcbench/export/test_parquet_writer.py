"""One Parquet writer: the single export and the conversation sets write their shards with
`fcbench.export.parquet` and nothing else writes Parquet."""

from __future__ import annotations

import ast
from pathlib import Path

import pyarrow.parquet as pq

from fcbench.export.parquet import SplitWriter, write_split
from fcbench.formats.parquet_rows import sample_to_row
from fcbench.sample import Sample

REPO = Path(__file__).resolve().parents[3]


def test_only_the_parquet_module_writes_parquet():
    writers = []
    for path in (REPO / "fcbench").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Attribute) and node.attr in ("write_table", "ParquetWriter", "write_to_dataset"):
                writers.append(path.relative_to(REPO).as_posix())
    assert sorted(set(writers)) == ["fcbench/export/parquet.py"]


def test_shards_are_cut_at_rows_or_bytes_and_named_in_hugging_face_layout(tmp_path):
    sample = Sample(id="s", messages=[{"role": "user", "content": "x" * 2_000}], tools=[], calls=[])
    rows = [sample_to_row(sample.model_copy(update={"id": f"s{n}"})) for n in range(10)]
    by_rows = write_split(rows, "train", tmp_path / "rows", shard_rows=4, shard_chars=10**9)
    by_bytes = write_split(rows, "train", tmp_path / "bytes", shard_rows=100, shard_chars=5_000)
    assert [path.name for path in by_rows.paths] == [f"train-0000{i}-of-00003.parquet" for i in range(3)]
    assert len(by_bytes.paths) > 1 and by_bytes.rows == 10
    assert [row["id"] for path in by_bytes.paths for row in pq.read_table(path).to_pylist()] == [f"s{n}" for n in range(10)]
    assert isinstance(by_rows, SplitWriter)
