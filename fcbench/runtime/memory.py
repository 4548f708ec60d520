"""Every stage's memory ceiling: a stage that grows past it stops with a clear error.

The stages stream (bounded batches in, lines written as they are made), so their memory does not
grow with the number of samples; the ceiling is the guard that says so. A stage whose resident
memory passes `memory_ceiling_mb` (pipelines.yaml, default 2,048 MB; `build-dataset
--memory-ceiling-mb`) stops with exit 1 before the machine starts swapping, saying where it was;
like any stopped run it replaces no output, and a re-run resumes where the stage keeps a journal.

The check is made by `fcbench.runtime.progress.StageProgress` as items are counted (at most every
`CHECK_EVERY_S`), so every stage that shows progress respects the ceiling. It measures this
process only: the tool subprocesses of an environment have their own limits (timeouts, ulimits).
"""

from __future__ import annotations

import os
import resource
import sys
from contextvars import ContextVar
from pathlib import Path

from fcbench.errors import UserError

DEFAULT_CEILING_MB = 2048  # the bound: no stage above 2 GB resident
MIN_CEILING_MB = 256  # below this the interpreter and its libraries alone would pass it
CHECK_EVERY_S = 1.0  # reading /proc is cheap, but a stage may count millions of items

_ceiling_mb: ContextVar[int] = ContextVar("memory_ceiling_mb", default=DEFAULT_CEILING_MB)
_PAGE_MB = os.sysconf("SC_PAGE_SIZE") / 2**20 if hasattr(os, "sysconf") else 4 / 1024


class MemoryCeilingExceeded(UserError):
    """A stage's resident memory went past the configured ceiling."""


def set_memory_ceiling(megabytes: int) -> None:
    """The ceiling for the rest of this command (the CLI sets the pipeline's, or the option's)."""
    _ceiling_mb.set(megabytes)


def memory_ceiling_mb() -> int:
    return _ceiling_mb.get()


def resident_mb() -> float:
    """This process's resident memory now (its peak where /proc is missing)."""
    try:
        pages = int(Path("/proc/self/statm").read_text().split()[1])
        return pages * _PAGE_MB
    except (OSError, IndexError, ValueError):
        peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # kB on Linux, bytes on macOS
        return peak / 2**20 if sys.platform == "darwin" else peak / 1024


def check_memory(stage: str, done: int, total: int | None) -> None:
    """Stop `stage` (after `done` of `total` items) when this process is over the ceiling."""
    ceiling = _ceiling_mb.get()
    used = resident_mb()
    if used > ceiling:
        where = f"{done:,} of {total:,}" if total else f"{done:,}"
        raise MemoryCeilingExceeded(
            f"{stage}: {used:,.0f} MB resident, over the memory ceiling of {ceiling:,} MB (pipelines.yaml "
            f"memory_ceiling_mb, or build-dataset --memory-ceiling-mb), after {where} items; stopped, no output "
            f"replaced. Raise the ceiling if this machine has the memory, or report it: the stage should stream")
