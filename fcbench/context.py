"""What every stage of one pipeline shares, resolved in one place: its tool catalog (read once,
one rule for a missing file) and where its build files are. Stages ask here instead of reading
the catalog their own way.

The rule for the catalog: a pipeline that names a catalog (`tools:`) whose file is missing is an
error wherever it is read, never an empty catalog; a pipeline that names none has none (`None`):
stage1 then refuses to run, the environment uses the tools the samples carry, and the annotation
stages hash no catalog tools.
"""

from __future__ import annotations

from pathlib import Path

from fcbench.config import PipelineConfig
from fcbench.errors import UserError
from fcbench.sample import Tool

# Every file a pipeline's stages write under its build folder, named once.
DRAFTS = "drafts.jsonl"
TEMPLATES = "templates.jsonl"
CANDIDATES = "candidates.jsonl"
FILLED_CANDIDATES = "candidates.filled.jsonl"
VALIDATED = "validated.jsonl"

_catalogs: dict[tuple[Path, int, int], list[Tool]] = {}


def pipeline_catalog(pipeline: PipelineConfig) -> list[Tool] | None:
    """The pipeline's tool catalog, read once per file version (path, size, mtime), or None when
    the pipeline names none."""
    path = pipeline.tools_path
    if path is None:
        return None
    try:
        stat = path.stat()
    except FileNotFoundError:
        raise UserError(f"{path}: no such tool catalog (pipeline {pipeline.name!r}, `tools:` in pipelines.yaml)") from None
    key = (path.resolve(), stat.st_size, stat.st_mtime_ns)
    if key not in _catalogs:
        from fcbench.catalog import load_tools_file

        _catalogs[key] = load_tools_file(path)
    return list(_catalogs[key])
