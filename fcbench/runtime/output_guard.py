"""Nothing good is overwritten by something worse (pure but for counting the previous output's lines).

A stage about to replace its output with a result of zero samples, or of fewer than
`min_output_share` (pipelines.yaml, default 0.5) of the samples its previous output holds, keeps
the previous output untouched, writes the new files beside it (`drafts.new.jsonl`,
`stage1.summary.new.json`, ...) and stops with exit 1 saying why, unless told `--force`. The
summary of every run says what it replaced.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fcbench.errors import UserError
from fcbench.jsonl import StagedFile, write_json


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
