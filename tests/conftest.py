"""Shared test fixtures: where the published files live, and the canonical round trip."""

from __future__ import annotations

from pathlib import Path

import pytest

from fcbench.formats import FormatOptions, Rejected, read_samples, write_samples
from fcbench.sample import Sample

REPO = Path(__file__).resolve().parents[1]
# CI clones the repository with shared/ beside it; a developer's checkout has the same layout.
EXTERNAL = REPO.parent / "shared" / "external"
TEST_DATA = REPO / "tests" / "data"


@pytest.fixture(autouse=True)
def _memory_ceiling_restored():
    """A test that sets the memory ceiling (fcbench.runtime.memory) leaves the default to the next one."""
    from fcbench.runtime.memory import memory_ceiling_mb, set_memory_ceiling

    before = memory_ceiling_mb()
    yield
    set_memory_ceiling(before)


@pytest.fixture
def external() -> Path:
    assert EXTERNAL.is_dir(), f"published files expected at {EXTERNAL}"
    return EXTERNAL


def read_all(path: Path, fmt: str, options: FormatOptions = FormatOptions()) -> list[Sample]:
    """Read a file and fail the test on any rejected item (published files must import whole)."""
    items = list(read_samples(path, fmt, options))
    rejected = [item for item in items if isinstance(item, Rejected)]
    assert not rejected, f"{len(rejected)} rejected, first: {rejected[0]}"
    return items


def through_canonical(samples: list[Sample], tmp_path: Path) -> list[Sample]:
    """Write samples as canonical JSONL and read them back, proving the canonical file keeps all."""
    canonical = tmp_path / "canonical.jsonl"
    write_samples(samples, canonical, "fcbench")
    return read_all(canonical, "fcbench")
