"""Progress of a long stage, on stderr (stdout stays for results and `--json`).

On a terminal: a rich progress bar with the count, rate and time left. Elsewhere (CI logs, a pipe):
one plain line every `log_every_s` seconds, the first after `quiet_s` (a run shorter than that
prints nothing, so quick commands and tests stay quiet). `FCBENCH_PROGRESS=0` turns it off.
Counting also checks the stage's memory ceiling (`fcbench.runtime.memory`), whether or not it is shown.
"""

from __future__ import annotations

import os
import sys
import time
from typing import IO, Any, Awaitable, Iterable, Iterator, TypeVar

from fcbench.runtime.memory import CHECK_EVERY_S, check_memory

T = TypeVar("T")


class StageProgress:
    """`with StageProgress("filter", total) as progress: ... progress.advance(n)`"""

    def __init__(self, label: str, total: int | None, *, stream: IO[str] | None = None,
                 log_every_s: float = 10.0, quiet_s: float = 2.0) -> None:
        self.label = label
        self.total = total
        self.done = 0
        self._stream = stream or sys.stderr
        self._log_every_s = log_every_s
        self._quiet_s = quiet_s
        self._started = time.monotonic()
        self._last_line = self._started
        self._last_memory_check = float("-inf")  # the first count checks at once: a short stage is checked too
        self._enabled = os.environ.get("FCBENCH_PROGRESS", "1") != "0"
        self._bar: Any = None
        self._task: Any = None

    def __enter__(self) -> StageProgress:
        if self._enabled and self._stream.isatty():
            from rich.console import Console
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

            self._bar = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TextColumn("{task.fields[rate]}"), TimeRemainingColumn(),
                                 console=Console(file=self._stream), transient=True)
            self._bar.start()
            self._task = self._bar.add_task(self.label, total=self.total, rate="")
        return self

    def advance(self, count: int = 1) -> None:
        self.done += count
        now = time.monotonic()
        if now - self._last_memory_check >= CHECK_EVERY_S:
            self._last_memory_check = now
            check_memory(self.label, self.done, self.total)
        if self._bar is not None:
            rate = self.done / max(now - self._started, 1e-9)
            self._bar.update(self._task, advance=count, rate=f"{rate:,.0f}/s")
            return
        if self._enabled and now - self._started >= self._quiet_s and now - self._last_line >= self._log_every_s:
            self._last_line = now
            print(self.line(now), file=self._stream, flush=True)

    def line(self, now: float | None = None) -> str:
        """`filter: 2,048/10,000 (20%), 812/s, about 10 s left`."""
        elapsed = max((now or time.monotonic()) - self._started, 1e-9)
        rate = self.done / elapsed
        if self.total:
            left = (self.total - self.done) / rate if rate > 0 else float("inf")
            eta = f", about {left:.0f} s left" if left != float("inf") else ""
            return f"{self.label}: {self.done:,}/{self.total:,} ({self.done / self.total:.0%}), {rate:,.0f}/s{eta}"
        return f"{self.label}: {self.done:,} done, {rate:,.0f}/s"

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()


def counted(items: Iterable[T], label: str, total: int | None) -> Iterator[T]:
    """Items as they are read, each counted on a StageProgress (progress, and the memory ceiling)."""
    with StageProgress(label, total) as progress:
        for item in items:
            progress.advance()
            yield item


def lines_in(path: str | os.PathLike[str]) -> int:
    """About how many lines a file holds, for a progress total: newlines counted in 1 MiB chunks,
    nothing parsed (a few hundredths of a second for 100 MB, where reading the lines costs ten times
    that; blank lines are counted too, which a progress bar does not mind)."""
    count = 0
    last = b"\n"
    with open(path, "rb") as handle:
        while chunk := handle.read(1 << 20):
            count += chunk.count(b"\n")
            last = chunk[-1:]
    return count + (last != b"\n")  # a last line without its newline


async def progress_of(work: Awaitable[T], progress: StageProgress) -> T:
    """Await one item of a stage run concurrently (asyncio.gather) and count it when it is done."""
    result = await work
    progress.advance()
    return result
