"""Label Studio JSON exports read as a stream of task objects, never parsed whole.

An export of 1,000 long-response tasks is hundreds of MB of JSON (each task carries its draft, the
draft rendered as HTML and the annotations); parsed at once it takes gigabytes. `ExportTasks`
keeps the export in a file (the user's, or a temporary one the server's download is written to
chunk by chunk) and parses one task at a time each time it is iterated; it can be iterated again
(the pull reads the drafts for the environment and the tasks for the checks in separate passes).
"""

from __future__ import annotations

import gzip
import json
import shutil
import tempfile
import weakref
from pathlib import Path
from typing import IO, Any, Iterable, Iterator

from fcbench.errors import UserError

CHUNK_CHARS = 1 << 20


class ExportTasks:
    """The task objects of one export file, read lazily. Opening checks that the file is a JSON
    array (the same messages as parsing it whole); a task that breaks the JSON further on stops the
    iteration with a `UserError` naming the line (a pull writes nothing until every task is read)."""

    def __init__(self, path: Path, name: str | None = None) -> None:
        self.path = path
        self.name = name or str(path)
        self.tasks_read = 0
        self._check_start()

    def _open(self) -> IO[str]:
        if self.path.suffix == ".gz":  # a gzip-compressed export (.json.gz) is read as it is
            return gzip.open(self.path, "rt", encoding="utf-8")
        return open(self.path, encoding="utf-8")

    def _check_start(self) -> None:
        try:
            with self._open() as handle:
                head = handle.read(4096).lstrip("\ufeff \t\r\n")
        except (OSError, EOFError, UnicodeDecodeError) as exc:
            raise UserError(f"{self.name}: not a readable Label Studio JSON export ({exc})") from None
        if not head.startswith("["):  # not an array: parsed whole for the exact message (not an export anyway)
            try:
                with self._open() as handle:
                    json.load(handle)
            except (OSError, EOFError, UnicodeDecodeError) as exc:
                raise UserError(f"{self.name}: not a readable Label Studio JSON export ({exc})") from None
            except json.JSONDecodeError as exc:
                raise UserError(f"{self.name}: not a Label Studio JSON export ({exc.msg} at line {exc.lineno})") from None
            raise UserError(f"{self.name}: not a Label Studio JSON export (expected a list of tasks)")

    def __iter__(self) -> Iterator[Any]:
        seen = with_id = 0
        try:
            with self._open() as handle:
                for task in iter_json_array(handle):
                    seen += 1
                    with_id += isinstance(task, dict) and "id" in task
                    yield task
        except (OSError, EOFError, UnicodeDecodeError) as exc:
            raise UserError(f"{self.name}: not a readable Label Studio JSON export ({exc})") from None
        except json.JSONDecodeError as exc:
            raise UserError(f"{self.name}: not a Label Studio JSON export ({exc.msg} at line {exc.lineno})") from None
        if seen and not with_id:
            raise UserError(f"{self.name}: not a Label Studio JSON export (no task has an 'id')")
        self.tasks_read = seen


def iter_json_array(handle: IO[str], chunk_chars: int = CHUNK_CHARS) -> Iterator[Any]:
    """The items of the JSON array in `handle`, one at a time: memory holds about one item (plus a
    chunk). `json.JSONDecodeError` (line numbers counted from the start of the file) when the text
    is not one JSON array."""
    decoder = json.JSONDecoder()
    buffer = handle.read(chunk_chars).lstrip("\ufeff")
    at_end = not buffer
    position = 0
    lines_before = 0  # newlines in the text already dropped from the buffer

    def error(message: str, where: int) -> json.JSONDecodeError:
        exc = json.JSONDecodeError(message, buffer, where)
        exc.lineno += lines_before
        return exc

    def drop() -> None:
        nonlocal buffer, position, lines_before
        lines_before += buffer.count("\n", 0, position)
        buffer = buffer[position:]
        position = 0

    def more(minimum: int) -> None:
        nonlocal buffer, at_end
        drop()
        chunk = handle.read(max(chunk_chars, minimum))
        at_end = not chunk
        buffer += chunk

    def skip_space() -> None:
        nonlocal position
        while True:
            while position < len(buffer) and buffer[position] in " \t\r\n":
                position += 1
            if position < len(buffer) or at_end:
                return
            more(chunk_chars)

    skip_space()
    if position >= len(buffer) or buffer[position] != "[":
        raise error("Expecting '['", position)
    position += 1
    first = True
    while True:
        skip_space()
        if position >= len(buffer):
            raise error("Expecting ',' delimiter or ']'", position)
        if buffer[position] == "]":
            position += 1
            skip_space()
            if position < len(buffer):
                raise error("Extra data", position)
            return
        if not first:
            if buffer[position] != ",":
                raise error("Expecting ',' delimiter", position)
            position += 1
            skip_space()
        while True:
            try:
                value, end = decoder.raw_decode(buffer, position)
            except json.JSONDecodeError as exc:
                if at_end:
                    raise error(exc.msg, exc.pos) from None
                more(len(buffer))  # the item goes on past the buffer: read as much again (linear overall)
                continue
            if end >= len(buffer) and not at_end:  # a number may go on in the next chunk
                more(len(buffer))
                continue
            break
        yield value
        position, first = end, False
        if position > chunk_chars:  # drop what was read, so the buffer stays about one item long
            drop()


class SpooledExport(ExportTasks):
    """An export downloaded into a temporary file (removed with the object, or at exit)."""

    def __init__(self, chunks: Iterable[bytes], name: str) -> None:
        folder = Path(tempfile.mkdtemp(prefix="fcbench-export-"))
        self._cleanup = weakref.finalize(self, shutil.rmtree, folder, True)
        path = folder / "export.json"
        with open(path, "wb") as out:
            for chunk in chunks:
                out.write(chunk)
        super().__init__(path, name)

    def close(self) -> None:
        self._cleanup()
