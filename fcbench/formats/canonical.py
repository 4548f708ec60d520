"""The canonical fcbench format: JSON Lines of `Sample` records."""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

from pydantic import ValidationError

from fcbench.formats import FormatOptions, Rejected, sniff_format
from fcbench.jsonl import iter_json_lines, write_json_lines
from fcbench.sample import Sample, sample_from_dict, sample_to_dict


def read(path: Path, options: FormatOptions = FormatOptions()) -> Iterator[Sample | Rejected]:
    for line in iter_json_lines(path):
        source = f"{path}:{line.line_no}"
        if line.error:
            yield Rejected(source, line.error)
            continue
        try:
            yield sample_from_dict(line.value)
        except ValidationError as exc:
            looks_like = sniff_format(line.value)
            if looks_like not in (None, "fcbench"):
                yield Rejected(source, f"not an fcbench sample: looks like {looks_like}: use --from {looks_like}",
                               line.value)
                continue
            first = exc.errors()[0]
            field = ".".join(str(part) for part in first["loc"]) or "(record)"
            yield Rejected(source, f"{field}: {first['msg']}", line.value)


def write(samples: list[Sample], path: Path, options: FormatOptions = FormatOptions()) -> list[str]:
    write_json_lines(path, (sample_to_dict(sample) for sample in samples))
    return []
