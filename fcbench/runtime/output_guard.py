"""Nothing good is overwritten by something worse (pure but for counting the previous output's lines).

A stage about to replace its output with a result of zero samples, or of fewer than
`min_output_share` (pipelines.yaml, default 0.5) of the samples its previous output holds, keeps
the previous output untouched, writes the new files beside it (`drafts.new.jsonl`,
`stage1.summary.new.json`, ...) and stops with exit 1 saying why, unless told `--force`. The
summary of every run says what it replaced.

Two more ways an output destroys what it should not, both refused before anything is written:
an output that is one of the command's inputs (through a symlink or a hard link too), and two
outputs that are one file (`convert -o a.json --answers-out a.json`): `refuse_overwriting`. And a
disk that fills up or is read-only while a stage writes ends in one line naming the file
(`disk_errors`, fcbench.jsonl's `WriteFailed`): every stage file is staged beside its target and
renamed into place only once it is complete, so the files in place stay whole.
"""

from __future__ import annotations

import errno
import os
import sqlite3
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Mapping

from fcbench.errors import UserError
from fcbench.jsonl import StagedFile, WriteFailed, describe_os_error, write_json


class OutputKept(UserError):
    """The previous output was kept; the new one is beside it."""


def beside(path: Path) -> Path:
    """Where a kept-back file goes: `drafts.jsonl` -> `drafts.new.jsonl`, `export/` -> `export.new/`."""
    return path.with_name(f"{path.stem}.new{path.suffix}")


def count_lines(path: Path) -> int:
    with open(path, "rb") as handle:
        return sum(1 for line in handle if line.strip())


@dataclass
class GuardedOutputs:
    target: Path
    new_samples: int
    previous_samples: int | None  # None: there was no previous output
    kept_because: str | None = None

    def path(self, path: Path) -> Path:
        """Where to write one of the stage's files (beside the real one when the previous is kept)."""
        return beside(path) if self.kept_because else path

    def summary(self) -> dict[str, Any]:
        return {"previous_samples": self.previous_samples, "new_samples": self.new_samples,
                "replaced_previous": self.previous_samples is not None and not self.kept_because,
                **({"kept_previous_because": self.kept_because} if self.kept_because else {})}

    def finish(self) -> None:
        """Call after writing: stops the command (exit 1) when the previous output was kept."""
        if self.kept_because:
            raise OutputKept(f"{self.target}: kept the previous output: {self.kept_because}; the new result is in "
                             f"{beside(self.target)} (re-run with --force to replace it anyway)")


def guard_output(target: Path, new_samples: int, *, force: bool, min_share: float) -> GuardedOutputs:
    """For a stage file of one sample a line: its previous line count is the previous result."""
    previous = count_lines(target) if target.is_file() else None
    return guard_counts(target, new_samples, previous, force=force, min_share=min_share)


def guard_counts(target: Path, new_samples: int, previous: int | None, *, force: bool,
                 min_share: float) -> GuardedOutputs:
    """Whether a new result of `new_samples` may replace a previous one of `previous` samples."""
    guarded = GuardedOutputs(target, new_samples, previous)
    if force or not previous:
        return guarded
    if new_samples == 0:
        guarded.kept_because = f"the new result has no samples, the previous one {previous}"
    elif new_samples < min_share * previous:
        guarded.kept_because = (f"the new result has {new_samples} samples, fewer than {min_share:.0%} of the "
                                f"previous {previous} (pipelines.yaml min_output_share)")
    return guarded


def place_guarded(samples: StagedFile, rejects: StagedFile, *, force: bool, min_share: float) -> GuardedOutputs:
    """Put a streamed stage's samples and rejects in place, or beside the previous output it keeps."""
    guarded = guard_output(samples.target, samples.lines, force=force, min_share=min_share)
    samples.sync()  # both on disk before either is renamed: a full disk replaces neither
    rejects.sync()
    samples.place(guarded.path(samples.target))
    rejects.place(guarded.path(rejects.target))
    return guarded


def finish_summary(guarded: GuardedOutputs, summary: dict[str, Any], outputs: dict[str, Path], summary_path: Path) -> None:
    """Write a stage's summary (where its files went, what it replaced), then stop the command
    (exit 1) if the previous output was kept."""
    summary["outputs"] = {**{name: str(guarded.path(path)) for name, path in outputs.items()},
                          "summary": str(guarded.path(summary_path))}
    summary["output_guard"] = guarded.summary()
    write_json(guarded.path(summary_path), summary, indent=2)
    guarded.finish()


# ------------------------------------------------------------------ outputs that would overwrite
def same_file(first: Path, second: Path) -> bool:
    """Whether two paths name one file: the same path once symlinks are resolved, or (both
    existing) one inode, which a hard link or a bind mount shares."""
    if Path(first).resolve() == Path(second).resolve():
        return True
    try:
        return os.path.samefile(first, second)
    except OSError:  # one of them does not exist yet: resolving was the whole answer
        return False


def refuse_overwriting(command: str, inputs: Mapping[str, Path | None], outputs: Mapping[str, Path | None]) -> None:
    """Refuse (UserError) a command whose output is one of its inputs, or whose two outputs are
    one file (the second would overwrite the first). Names are how the user gave them
    (`-o`, `--answers-out`, `IN`); None means not given."""
    given_outputs = [(name, Path(path)) for name, path in outputs.items() if path is not None]
    given_inputs = [(name, Path(path)) for name, path in inputs.items() if path is not None]
    for index, (name, path) in enumerate(given_outputs):
        for input_name, input_path in given_inputs:
            if same_file(path, input_path):
                raise UserError(f"{command}: {name} {path} is the input {input_name} {input_path}; "
                                "writing it would destroy the input: choose another output")
        for other_name, other in given_outputs[:index]:
            if same_file(path, other):
                raise UserError(f"{command}: {other_name} {other} and {name} {path} are the same file; "
                                "one output would overwrite the other: give each its own")


def refuse_input_inside(command: str, input_name: str, input_path: Path, output_dir: Path) -> None:
    """Refuse an input that lives inside a folder the command replaces as a whole."""
    resolved, folder = Path(input_path).resolve(), Path(output_dir).resolve()
    if resolved == folder or folder in resolved.parents:
        raise UserError(f"{command}: {input_name} {input_path} is inside {output_dir}, which this command replaces; "
                        "copy it elsewhere first")


# ------------------------------------------------------------------------------ disks that fail
# What a full, read-only or failing disk raises; EACCES/EPERM too (a folder made read-only).
_DISK_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG, errno.EIO, errno.EACCES,
                          errno.EPERM})
_WRITE_ONLY_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG})
# SQLite says it in words (the request cache, batch ids, tokens): these are the disk's doing.
_SQLITE_DISK_WORDS = ("disk is full", "readonly database", "disk i/o error", "unable to open database")


@contextmanager
def disk_errors(folder: Path) -> Iterator[None]:
    """A stage writing under `folder`: a write that fails in a writer that does not go through
    fcbench.jsonl (Parquet shards, journals, SQLite) is one `WriteFailed` naming the file (or the
    folder), not a traceback. The stage's files in place are whole: each is staged and renamed
    into place only once complete."""
    try:
        yield
    except WriteFailed:
        raise
    except sqlite3.OperationalError as exc:
        if any(words in str(exc).lower() for words in _SQLITE_DISK_WORDS):
            raise WriteFailed(f"{folder}: a database could not be written: {exc}; "
                              "no output was left half-written") from None
        raise
    except OSError as exc:
        if exc.errno not in _DISK_ERRNOS:
            raise
        where = exc.filename or folder
        doing = "cannot write: " if exc.errno in _WRITE_ONLY_ERRNOS else ""
        raise WriteFailed(f"{where}: {doing}{describe_os_error(exc)}; no output was left half-written") from None
