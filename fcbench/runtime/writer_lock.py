"""One writer at a time: a lock file that says who holds it.

Two commands writing one build folder at once break each other (each replaces files the other is
reading or writing), and two `new` commands editing `pipelines.yaml` at once lose each other's
pipeline. So a command that writes takes the folder's (or the file's) lock first: a file holding the
holder's pid, host, command and start time, locked with a POSIX record lock (`fcntl.lockf`). The
kernel releases that lock when its process dies, however it dies (kill -9 included), and a forked
child never inherits it, so a lock whose holder is gone is free at once: the file left behind only
says who held it, and the next command takes it over (saying so on stderr). A command that finds the
lock held either stops at once naming the holder (`BuildLocked`, exit 1: a build) or waits for it
up to a deadline (`wait_s`: a quick edit such as `new`).

Within one process the lock is re-entrant (`run` holds it while each stage takes it again): POSIX
record locks belong to the process, so the holder's own second request must not open the file
again (closing any descriptor of a locked file releases the process's lock on it).
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import socket
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterator

from fcbench.errors import UserError
from fcbench.jsonl import WriteFailed, describe_os_error

BUILD_LOCK_NAME = ".writer.lock"  # in a pipeline's build folder
POLL_S = 0.05  # how often a waiting command tries again
MAX_COMMAND_CHARS = 300  # the holder's command line as shown (the start of it)


class BuildLocked(UserError):
    """Another running command holds the lock; the message names it."""


@dataclass(frozen=True)
class Holder:
    """Who holds (or last held) a lock, as written in its file."""

    pid: int | None
    host: str = "?"
    command: str = "?"
    started_at: str = "?"

    @classmethod
    def parse(cls, text: str) -> "Holder | None":
        try:
            value = json.loads(text)
        except ValueError:
            return None
        if not isinstance(value, dict):
            return None
        pid = value.get("pid")
        return cls(pid if isinstance(pid, int) else None, str(value.get("host", "?")),
                   str(value.get("command", "?")), str(value.get("started_at", "?")))

    def describe(self) -> str:
        return f"pid {self.pid} on {self.host} ({self.command}, since {self.started_at})"


def this_holder() -> Holder:
    program = Path(sys.argv[0]).name if sys.argv else "python"
    if program == "__main__.py" and "fcbench" in sys.argv[0]:
        program = "build-dataset"  # `python -m fcbench.cli` is the same command
    command = " ".join([program, *sys.argv[1:]])
    if len(command) > MAX_COMMAND_CHARS:
        command = command[:MAX_COMMAND_CHARS - 1] + "…"
    return Holder(os.getpid(), socket.gethostname(), command,
                  datetime.now(timezone.utc).isoformat(timespec="seconds"))


# path -> (descriptor, depth): the locks this process holds
_held: dict[str, tuple[int, int]] = {}
_held_guard = threading.Lock()


def _warn(message: str) -> None:
    print(f"warning: {message}", file=sys.stderr)


def _try_lock(path: Path) -> int | None:
    """A descriptor of `path` locked by this process, or None when another process holds it."""
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            os.close(fd)
            if exc.errno in (errno.EACCES, errno.EAGAIN):
                return None
            raise
        # The holder removes the file on release: if it did between our open and our lock, this
        # descriptor locks a file nobody else will look at; lock the file now at that path instead.
        try:
            current = os.stat(path).st_ino
        except FileNotFoundError:
            current = None
        if current == os.fstat(fd).st_ino:
            return fd
        os.close(fd)


def _read_holder(path: Path) -> Holder | None:
    """The holder named in a lock file another process holds (never called on one this process
    holds: see _read_locked)."""
    try:
        return Holder.parse(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return None


def _read_locked(fd: int) -> Holder | None:
    """The holder named in a file this process has locked, read through the locked descriptor
    (opening the file again and closing it would release the lock: POSIX locks belong to the
    process and end with any of its descriptors of the file)."""
    try:
        data = os.pread(fd, 64 * 1024, 0)
    except OSError:
        return None
    return Holder.parse(data.decode("utf-8", "replace")) if data.strip() else None


def _write_holder(fd: int, holder: Holder) -> None:
    data = json.dumps({"pid": holder.pid, "host": holder.host, "command": holder.command,
                       "started_at": holder.started_at}).encode("utf-8")
    os.ftruncate(fd, 0)
    os.pwrite(fd, data + b"\n", 0)


@contextmanager
def writer_lock(path: Path, what: str, *, wait_s: float = 0.0,
                warn: Callable[[str], None] = _warn) -> Iterator[None]:
    """Hold the lock `path` inside the block. `what` names the thing locked in messages ("the build
    of pipeline 'travel'"). Held by another process: BuildLocked at once, or after `wait_s`
    seconds of trying. A lock file left by a holder that died is taken over (said through `warn`).
    The file is removed on release."""
    key = str(Path(os.path.abspath(path)))
    with _held_guard:
        if key in _held:  # this process holds it already (a stage inside `run`)
            fd, depth = _held[key]
            _held[key] = (fd, depth + 1)
            reentered = True
        else:
            reentered = False
    if reentered:
        try:
            yield
        finally:
            with _held_guard:
                fd, depth = _held[key]
                _held[key] = (fd, depth - 1)
        return
    fd = _acquire(Path(key), what, wait_s, warn)
    with _held_guard:
        _held[key] = (fd, 1)
    try:
        yield
    finally:
        with _held_guard:
            del _held[key]
        # removed while still locked: a command that opened the old file finds it gone and retries
        try:
            os.unlink(key)
        except OSError:
            pass
        os.close(fd)


def _acquire(path: Path, what: str, wait_s: float, warn: Callable[[str], None]) -> int:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise WriteFailed(f"{path.parent}: cannot create the folder: {describe_os_error(exc)}") from None
    deadline = time.monotonic() + wait_s
    while True:
        try:
            fd = _try_lock(path)
        except OSError as exc:
            raise WriteFailed(f"{path}: cannot create the lock file: {describe_os_error(exc)}") from None
        if fd is not None:
            break
        if time.monotonic() >= deadline:
            holder = _read_holder(path)
            who = holder.describe() if holder is not None else "another process"
            waited = f" (waited {wait_s:g} s)" if wait_s else ""
            raise BuildLocked(f"{path}: {what} is being written by {who}{waited}; wait until that command ends "
                              "(or stop it), then run this one again")
        time.sleep(POLL_S)
    previous = _read_locked(fd)
    if previous is not None and previous.pid is not None:
        # the lock was free, yet the file names a holder: that command ended without releasing it
        warn(f"{path}: took over the lock of {previous.describe()}, which is no longer running")
    try:
        _write_holder(fd, this_holder())
    except OSError as exc:
        os.close(fd)
        raise WriteFailed(f"{path}: cannot write the lock file: {describe_os_error(exc)}") from None
    return fd


def build_lock(build_dir: Path, pipeline: str) -> Any:
    """The lock of one pipeline's build folder: one writing command at a time."""
    return writer_lock(build_dir / BUILD_LOCK_NAME, f"the build of pipeline {pipeline!r}")


def file_lock_path(path: Path) -> Path:
    """The lock file of an edited file (`pipelines.yaml` -> `.pipelines.yaml.lock` beside it)."""
    return path.with_name(f".{path.name}.lock")
