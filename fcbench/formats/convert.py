"""Convert a benchmark file from one format to another through the canonical sample."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fcbench.formats import FormatOptions, Rejected, read_samples, write_samples
from fcbench.jsonl import write_json_lines
from fcbench.sample import Sample


@dataclass
class ConversionResult:
    converted: int
    rejected: int
    warnings: list[str] = field(default_factory=list)
    rejects_file: Path | None = None
    reasons: dict[str, int] = field(default_factory=dict)  # reject reason -> items

    def as_dict(self) -> dict[str, Any]:
        return {
            "converted": self.converted,
            "rejected": self.rejected,
            "warnings": self.warnings,
            "rejects_file": str(self.rejects_file) if self.rejects_file else None,
            "reasons": self.reasons,
        }


def rejects_path(output: Path) -> Path:
    return output.with_name(output.name + ".rejects.jsonl")


def convert_file(input_file: Path, from_format: str, to_format: str, output: Path,
                 options: FormatOptions = FormatOptions()) -> ConversionResult:
    samples: list[Sample] = []
    rejects: list[Rejected] = []
    for item in read_samples(input_file, from_format, options):
        (rejects if isinstance(item, Rejected) else samples).append(item)
    warnings = write_samples(samples, output, to_format, options)
    result = ConversionResult(converted=len(samples), rejected=len(rejects), warnings=warnings,
                              reasons=dict(sorted(Counter(r.reason for r in rejects).items())))
    if rejects:
        result.rejects_file = rejects_path(output)
        write_json_lines(result.rejects_file,
                         ({"source": r.source, "reason": r.reason, "raw": r.raw} for r in rejects))
    return result
