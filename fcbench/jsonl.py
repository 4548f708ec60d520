"""JSON Lines files: read line by line (keeping line numbers for error messages), write atomically.

A stage file is written to a temporary file beside the target and renamed over it, so a crash or
kill mid-write never leaves a half-written file that a re-run would mistake for finished work.
A write that fails (a full or read-only disk, a file-size limit, no permission) ends in one
`WriteFailed` naming the file; the temporary file is removed and the file in place is untouched.
"""

from __future__ import annotations

import errno
import glob
import json
import os
import sys
import tempfile
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator

from fcbench.errors import UserError


# Limits a line must keep to be read: past them a line is a reject with its reason (named by file
# and line), never a crash of the whole command. Generous for real benchmarks (the largest
# published lines here are under 1 MB and nest under 20 levels).
MAX_LINE_BYTES = 64 * 1024 * 1024
MAX_DEPTH = 256
_BOM = b"\xef\xbb\xbf"

# The one bad-line policy of every reader: a bad line is skipped and reported (file:line), and a
# file whose share of bad lines is above this is refused as a whole, since it is most likely not
# the file that was meant (a binary, another format, a truncated copy). `build-dataset
# --max-bad-share S` or a pipeline's `max_bad_line_share` sets it; 1 never refuses.
DEFAULT_MAX_BAD_SHARE = 0.5
_max_bad_share: ContextVar[float] = ContextVar("max_bad_share", default=DEFAULT_MAX_BAD_SHARE)


class WriteFailed(UserError):
    """A file could not be written (full or read-only disk, no permission, file-size limit): one
    line naming it; nothing in place was replaced by a partial file."""


# Why a write failed, in words (the errno's own text is terse and says nothing about what is kept).
_WRITE_REASONS = {
    errno.ENOSPC: "no space left on the device",
    errno.EDQUOT: "disk quota exceeded",
    errno.EROFS: "the file system is read-only",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
    errno.EFBIG: "file too large (the file system's or this process's file-size limit)",
    errno.EIO: "input/output error on the device",
}


def describe_os_error(exc: OSError) -> str:
    return _WRITE_REASONS.get(exc.errno or 0) or exc.strerror or str(exc)


def write_failed(path: str | Path, exc: OSError) -> WriteFailed:
    return WriteFailed(f"{path}: cannot write: {describe_os_error(exc)}; what was in place is unchanged")


@contextmanager
def writing(path: str | Path) -> Iterator[None]:
    """Inside the block, an OSError is the one-line `WriteFailed` naming `path`."""
    try:
        yield
    except WriteFailed:
        raise
    except OSError as exc:
        raise write_failed(path, exc) from None


class TooManyBadLines(UserError):
    """More of a file's lines are unreadable than the bad-line policy allows."""


@contextmanager
def bad_line_policy(max_share: float) -> Iterator[None]:
    """Read files with this share of bad lines allowed (0..1) inside the block."""
    token = _max_bad_share.set(max_share)
    try:
        yield
    finally:
        _max_bad_share.reset(token)


def set_bad_line_policy(max_share: float) -> None:
    """Set the allowed share of bad lines for the rest of this command (the CLI's root option)."""
    _max_bad_share.set(max_share)


def max_bad_share() -> float:
    return _max_bad_share.get()


def check_bad_share(path: str | Path, total: int, bad: int, first_error: str | None) -> None:
    """Refuse a file whose share of bad lines is over the policy's (pure but for the setting)."""
    share = _max_bad_share.get()
    if total and bad / total > share:
        raise TooManyBadLines(
            f"{path}: {bad} of {total} lines are unreadable ({bad / total:.0%}), more than the {share:.0%} allowed; "
            f"first: {first_error}. Is it the right file? (build-dataset --max-bad-share 1 ... reads its good lines anyway)")


@dataclass(frozen=True)
class JsonLine:
    """One non-blank line: its 1-based number and either the parsed value or the parse error;
    `offset` is where the line starts in the file (a reader can seek back to it later instead of
    holding the value)."""

    line_no: int
    value: Any = None
    error: str | None = None
    offset: int = 0


class _BadValue(ValueError):
    """A line that is JSON but holds a value no reader or writer can carry safely."""


def _no_constant(name: str) -> Any:
    raise _BadValue(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if value in (float("inf"), float("-inf")):
        raise _BadValue(f"number {text[:40]} is out of range for a float")
    return value


def _check_depth_and_text(value: Any, check_text: bool) -> None:
    """Nesting within MAX_DEPTH and, when asked, no string that cannot be written as UTF-8 (a lone
    surrogate such as \\ud800 passes json.loads and crashes every writer later)."""
    if check_text:
        _check_depth_and_every_string(value)
        return
    # Level by level, keeping only the containers of the next level: every line of every stage file
    # goes through here, and long-context samples hold tens of thousands of scalars each.
    level = [value] if isinstance(value, (dict, list)) else []
    depth = 1
    while level:
        # a value of any kind one level further down is past the limit
        if depth >= MAX_DEPTH and any(len(item) for item in level):
            raise _BadValue(f"nested deeper than {MAX_DEPTH} levels")
        deeper: list[Any] = []
        for item in level:
            children = item.values() if type(item) is dict else item
            deeper += [child for child in children if type(child) is dict or type(child) is list]
        level = deeper
        depth += 1


def _check_depth_and_every_string(value: Any) -> None:
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise _BadValue(f"nested deeper than {MAX_DEPTH} levels")
        if isinstance(item, dict):
            for key, child in item.items():
                _encodable(key)
                stack.append((child, depth + 1))
        elif isinstance(item, list):
            stack.extend((child, depth + 1) for child in item)
        elif isinstance(item, str):
            _encodable(item)


def _encodable(text: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise _BadValue(f"invalid Unicode: lone surrogate {text[exc.start]!r}") from None


def parse_json_line(raw: bytes) -> Any:
    """One JSON document from one line of bytes, or ValueError saying what is wrong with it."""
    if len(raw) > MAX_LINE_BYTES:
        raise ValueError(f"line of {len(raw) / 1e6:.1f} MB, over the {MAX_LINE_BYTES // 2**20} MiB limit")
    nul = raw.find(b"\x00")
    if nul >= 0:
        raise ValueError(f"NUL byte at column {nul + 1}")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8 (byte 0x{raw[exc.start]:02x} at column {exc.start + 1}; "
                         f"save the file as UTF-8)") from None
    try:
        value = json.loads(text, parse_constant=_no_constant, parse_float=_finite_float)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON ({exc.msg} at column {exc.colno})") from None
    except RecursionError:
        raise ValueError(f"nested deeper than {MAX_DEPTH} levels") from None
    except _BadValue as exc:
        raise ValueError(str(exc)) from None
    except ValueError:  # an integer of more digits than Python converts
        raise ValueError(f"integer of more than {sys.get_int_max_str_digits()} digits") from None
    try:
        _check_depth_and_text(value, check_text=b"\\u" in raw and (b"\\ud" in raw.lower()))
    except _BadValue as exc:
        raise ValueError(str(exc)) from None
    return value


def iter_json_lines(path: str | Path) -> Iterator[JsonLine]:
    """Every non-blank line of a JSON Lines file, each parsed on its own: a bad line (broken JSON,
    not UTF-8, NUL byte, NaN/Infinity or an overflowing number, lone surrogate, too deep, too long)
    is a `JsonLine` with its error and the lines after it are still read. A UTF-8 byte-order mark
    at the start is skipped. Once the file is read, more bad lines than the bad-line policy allows
    raise `TooManyBadLines` (a stage writing atomically then keeps its previous output)."""
    total = bad = 0
    first_error = None
    offset = 0
    with open(path, "rb") as handle:
        for line_no, raw in enumerate(handle, start=1):
            start, offset = offset, offset + len(raw)
            if line_no == 1 and raw.startswith(_BOM):
                raw = raw[len(_BOM):]
            if not raw.strip():
                continue
            total += 1
            try:
                yield JsonLine(line_no, parse_json_line(raw), offset=start)
            except ValueError as exc:
                bad += 1
                first_error = first_error or f"line {line_no}: {exc}"
                yield JsonLine(line_no, error=str(exc), offset=start)
    check_bad_share(path, total, bad, first_error)


def read_json_line_at(path: str | Path, offset: int) -> Any:
    """The JSON value of the line that starts at `offset` (from `JsonLine.offset`): a file read
    once for an index can be read back one line at a time. ValueError when the line is bad."""
    with open(path, "rb") as handle:
        handle.seek(offset)
        raw = handle.readline()
    if offset == 0 and raw.startswith(_BOM):
        raw = raw[len(_BOM):]
    return parse_json_line(raw)


def dumps_line(record: Any) -> str:
    """One record as one line; `ensure_ascii=False` keeps non-English text readable."""
    return json.dumps(record, ensure_ascii=False, separators=(", ", ": "))


def _default_mode() -> int:
    """The mode a plain `open()` would give (0o666 less the umask): mkstemp's 0o600 would make
    stage outputs and exports unreadable to anyone else."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


class StagedFile:
    """A file written as it is made (a stage's lines, one at a time: its memory does not grow with
    them) to a temporary file beside `target`, put in place whole by `place()`; a run that fails or
    is killed before that leaves the target untouched.

    A kill -9 leaves `.NAME.<random>.tmp` behind; the next staging of the same file removes it
    (one writer per file: a stage's outputs are its own)."""

    def __init__(self, target: str | Path) -> None:
        self.target = Path(target)
        self.lines = 0
        self._placed = False
        self._synced = False
        if self.target.exists() and not self.target.is_file():
            # renaming over a folder fails, and over a device (/dev/full) or a pipe replaces it
            raise WriteFailed(f"{self.target}: is not a regular file (a folder, a device or a pipe); "
                              "refusing to replace it")
        with writing(self.target):
            self.target.parent.mkdir(parents=True, exist_ok=True)
            for leftover in self.target.parent.glob(f".{glob.escape(self.target.name)}.*.tmp"):
                leftover.unlink(missing_ok=True)
            fd, self._tmp_name = tempfile.mkstemp(prefix=f".{self.target.name}.", suffix=".tmp",
                                                  dir=self.target.parent)
        self.handle = os.fdopen(fd, "w", encoding="utf-8")

    def write_line(self, line: str) -> None:
        try:
            self.handle.write(line)
            self.handle.write("\n")
        except OSError as exc:
            self.discard()  # give the space back at once; the target is untouched
            raise write_failed(self.target, exc) from None
        self.lines += 1

    def write_json_line(self, record: Any) -> None:
        self.write_line(dumps_line(record))

    def sync(self) -> None:
        """Flush to the disk and give the mode a plain `open()` would give: a full disk shows here
        (buffered writes fail late), before anything is renamed. A stage placing several files
        syncs them all first, so a failure replaces none of them."""
        if self._synced:
            return
        try:
            self.handle.flush()
            os.fsync(self.handle.fileno())
            self.handle.close()
            os.chmod(self._tmp_name, _default_mode())
        except OSError as exc:
            self.discard()
            raise write_failed(self.target, exc) from None
        self._synced = True

    def place(self, path: str | Path | None = None) -> Path:
        """Sync, then rename over `path` (default: the target; a stage keeping its previous output
        places the new one beside it instead)."""
        destination = Path(path) if path is not None else self.target
        self.sync()
        with writing(destination):
            os.replace(self._tmp_name, destination)
        self._placed = True
        return destination

    def discard(self) -> None:
        if not self._placed:
            try:
                self.handle.close()
            except OSError:
                pass  # the buffered rest could not be written: it is being thrown away anyway
            Path(self._tmp_name).unlink(missing_ok=True)

    def __enter__(self) -> "StagedFile":
        return self

    def __exit__(self, *exc: object) -> None:
        self.discard()  # placed already, or failed: nothing of it stays


def _atomic_text(path: str | Path, write) -> None:
    """Write a text file atomically: a temporary file beside the target, fsynced, given the mode a
    plain `open()` would give, then renamed over the target."""
    with StagedFile(path) as staged:
        with writing(path):
            write(staged.handle)
        staged.place()


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


class JsonListSpool:
    """The items of one list of a JSON document, written to an unnamed temporary file as they are
    made and placed into the document by `write_json_with_list`: for a document whose figures,
    written before the list, are counted over all its items, without holding the items. The file
    has no name, so a killed run leaves nothing behind."""

    def __init__(self, directory: str | Path | None = None, indent: int = 2) -> None:
        self.indent = indent
        self.count = 0
        self._where = Path(directory or tempfile.gettempdir())
        with writing(self._where):
            self._file = tempfile.TemporaryFile("w+", encoding="utf-8", dir=directory)  # noqa: SIM115 - closed by close()

    def append(self, item: Any) -> None:
        # the list is a value of the document's top level, so its items sit two levels deep; a JSON
        # text holds no raw newline inside a string, so indenting every line is exact
        pad = "\n" + " " * (2 * self.indent)
        text = json.dumps(item, ensure_ascii=False, indent=self.indent).replace("\n", pad)
        with writing(self._where):
            self._file.write(("," if self.count else "") + pad + text)
        self.count += 1

    def copy_to(self, handle: Any) -> None:
        self._file.flush()
        self._file.seek(0)
        while chunk := self._file.read(1 << 20):
            handle.write(chunk)

    def close(self) -> None:
        self._file.close()

    def __enter__(self) -> JsonListSpool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def write_json_with_list(path: str | Path, document: dict[str, Any], key: str, spool: JsonListSpool) -> None:
    """Write `document` atomically with the spooled items as its list `key` (which must be one of
    its keys, its value ignored): the same bytes as `write_json(path, {... key: items ...},
    indent=spool.indent)`, the items never all in memory."""
    if key not in document:
        raise KeyError(key)
    indent = spool.indent
    pad = "\n" + " " * indent

    def write(handle: Any) -> None:
        handle.write("{")
        for index, (name, value) in enumerate(document.items()):
            handle.write(("," if index else "") + pad + json.dumps(name, ensure_ascii=False) + ": ")
            if name != key:
                handle.write(json.dumps(value, ensure_ascii=False, indent=indent).replace("\n", pad))
            elif spool.count:
                handle.write("[")
                spool.copy_to(handle)
                handle.write(pad + "]")
            else:
                handle.write("[]")
        handle.write("\n}\n")

    _atomic_text(path, write)


def read_json_or_lines(path: str | Path) -> list[Any]:
    """Read a file that is either one JSON array or JSON Lines (published files use both under
    a `.json` name). Raises ValueError naming the file and line on a broken line."""
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except UnicodeDecodeError:
        text = None  # one bad line: read line by line below, which names it
        stripped = ""
    else:
        stripped = text.lstrip()
    if text is not None and stripped.startswith("["):
        try:
            value = json.loads(text, parse_constant=_no_constant, parse_float=_finite_float)
            if isinstance(value, list):
                return value
        except (json.JSONDecodeError, _BadValue, RecursionError):
            pass  # a JSON Lines file whose first record is an array (or a bad document): line by line
    records = []
    for line in iter_json_lines(path):
        if line.error:
            raise ValueError(f"{path}:{line.line_no}: {line.error}")
        records.append(line.value)
    return records
