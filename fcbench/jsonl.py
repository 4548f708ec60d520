"""JSON Lines files: read line by line (keeping line numbers for error messages), write atomically.

A stage file is written to a temporary file beside the target and renamed over it, so a crash or
kill mid-write never leaves a half-written file that a re-run would mistake for finished work.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator


@dataclass(frozen=True)
class JsonLine:
    """One non-blank line: its 1-based number and either the parsed value or the parse error."""

    line_no: int
    value: Any = None
    error: str | None = None


def iter_json_lines(path: str | Path) -> Iterator[JsonLine]:
    with open(path, encoding="utf-8") as handle:
        for line_no, text in enumerate(handle, start=1):
            if not text.strip():
                continue
            try:
                yield JsonLine(line_no, json.loads(text))
            except json.JSONDecodeError as exc:
                yield JsonLine(line_no, error=f"not valid JSON ({exc.msg} at column {exc.colno})")


def dumps_line(record: Any) -> str:
    """One record as one line; `ensure_ascii=False` keeps non-English text readable."""
    return json.dumps(record, ensure_ascii=False, separators=(", ", ": "))


def _default_mode() -> int:
    """The mode a plain `open()` would give (0o666 less the umask): mkstemp's 0o600 would make
    stage outputs and exports unreadable to anyone else."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def _atomic_text(path: str | Path, write) -> None:
    """Write a text file atomically: a temporary file beside the target, fsynced, given the mode a
    plain `open()` would give, then renamed over the target."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp_name, _default_mode())
        os.replace(tmp_name, target)
    except BaseException:
        Path(tmp_name).unlink(missing_ok=True)
        raise


def write_text_lines(path: str | Path, lines: Iterable[str]) -> int:
    """Write text lines atomically; returns how many were written."""
    count = 0

    def write(handle) -> None:
        nonlocal count
        for line in lines:
            handle.write(line)
            handle.write("\n")
            count += 1

    _atomic_text(path, write)
    return count


def write_text(path: str | Path, text: str) -> None:
    _atomic_text(path, lambda handle: handle.write(text))


def write_json_lines(path: str | Path, records: Iterable[Any]) -> int:
    """Write records atomically, one JSON document a line; returns how many were written."""
    return write_text_lines(path, (dumps_line(record) for record in records))


def write_json(path: str | Path, value: Any, *, indent: int | None = None) -> None:
    """Write one JSON document atomically (for formats that are JSON arrays or objects)."""
    write_text(path, json.dumps(value, ensure_ascii=False, indent=indent) + "\n")


def read_json_or_lines(path: str | Path) -> list[Any]:
    """Read a file that is either one JSON array or JSON Lines (published files use both under
    a `.json` name). Raises ValueError naming the file and line on a broken line."""
    text = Path(path).read_text(encoding="utf-8")
    stripped = text.lstrip()
    if stripped.startswith("["):
        try:
            value = json.loads(text)
            if isinstance(value, list):
                return value
        except json.JSONDecodeError:
            pass  # a JSON Lines file whose first record is an array: fall through
    records = []
    for line in iter_json_lines(path):
        if line.error:
            raise ValueError(f"{path}:{line.line_no}: {line.error}")
        records.append(line.value)
    return records
