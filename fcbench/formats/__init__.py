"""Format adapters: each published benchmark format converted to and from the canonical sample.

Every adapter module exposes the same two functions, so the registry below is the only place that
knows which formats exist:

    read(path: Path, options: FormatOptions) -> Iterator[Sample | Rejected]
    write(samples: list[Sample], path: Path, options: FormatOptions) -> list[str]   # warnings

`read` yields a `Rejected` for an item it cannot convert (with the reason) and goes on; it raises
`FormatError` only when the file as a whole is not of the format. `write` returns one warning line
per kind of information the target format cannot express, with a count, never dropping silently.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Iterable, Iterator

from fcbench.errors import UserError
from fcbench.registry import Registry
from fcbench.sample import Sample


class FormatError(UserError):
    """The input is not a file of the announced format (a user error: one line, exit 1)."""


@dataclass(frozen=True)
class Rejected:
    """An input item that could not become a sample, kept with its reason (never dropped)."""

    source: str  # "FILE:LINE" or "FILE#index"
    reason: str
    raw: object = None


@dataclass(frozen=True)
class FormatOptions:
    """Second files of two-file formats, named explicitly both ways."""

    answers: Path | None = None  # BFCL possible answers to read
    answers_out: Path | None = None  # BFCL possible answers to write
    tools: Path | None = None  # NESTful v1 spec / CallNavi APISchema to read
    tools_out: Path | None = None  # NESTful v1 spec to write
    nestful_version: str | None = None  # "v1" or "v2" when writing NESTful; default from samples
    no_gold: bool = False  # BFCL: convert questions without their answers, knowingly (no gold calls)


# name -> the module under fcbench.formats implementing read/write, imported at first use; the one
# place that knows which formats exist (fcbench.registry)
FORMATS: Registry[ModuleType] = Registry("format", error=FormatError)
FORMATS.register_lazy("fcbench", "fcbench.formats.canonical")
FORMATS.register_lazy("complexfuncbench", "fcbench.formats.complexfuncbench")
FORMATS.register_lazy("nestful", "fcbench.formats.nestful")
FORMATS.register_lazy("callnavi", "fcbench.formats.callnavi")
FORMATS.register_lazy("bfcl", "fcbench.formats.bfcl")
FORMATS.register_lazy("confetti", "fcbench.formats.confetti")


def sniff_format(record: object) -> str | None:
    """Which known format one record looks like, from the keys each format always has (pure), or
    None. Used to say "looks like NESTful: use --from nestful" instead of a schema error."""
    if not isinstance(record, dict):
        return None
    keys = set(record)
    if {"messages", "calls"} <= keys:
        return "fcbench"
    if "sample_id" in keys and "input" in keys and ({"output", "gold_answer"} & keys):
        return "nestful"
    if {"question", "function"} <= keys:
        return "bfcl"
    truth = record.get("ground_truth")
    if isinstance(truth, dict) and "API" in truth:
        return "callnavi"
    if "dialog_id" in keys or (isinstance(truth, list) and str(record.get("id", "")).startswith(("dialogacts", "conversations"))):
        return "confetti"
    if {"id", "conversations"} <= keys:
        return "complexfuncbench"
    return None


def adapter(name: str) -> ModuleType:
    return FORMATS.get(name)


def read_samples(path: Path, fmt: str, options: FormatOptions = FormatOptions()) -> Iterator[Sample | Rejected]:
    if not Path(path).is_file():
        raise FormatError(f"{path}: no such file")
    return adapter(fmt).read(Path(path), options)


def write_samples(samples: Iterable[Sample], path: Path, fmt: str, options: FormatOptions = FormatOptions()) -> list[str]:
    return adapter(fmt).write(list(samples), Path(path), options)
