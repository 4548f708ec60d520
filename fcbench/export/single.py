"""Export: validated samples -> Parquet splits in Hugging Face layout, a dataset card, and copies in
the other benchmark formats.

Layout under `<build>/export/`:

    data/<split>-00000-of-00002.parquet   one schema for every split and shard (PARQUET_SCHEMA)
    README.md                             dataset card (fcbench.export.card)
    <format>/<split>.<ext>                ExportConfig.formats other than parquet

plus `<build>/export.rejects.jsonl` (lines that could not be exported, with their reason) and
`<build>/export.summary.json`.

Memory stays bounded whatever the input size: the validated file is read line by line, each split
buffers at most one record batch (BATCH_ROWS rows / BATCH_CHARS characters) before it is written
as a row group, and a shard is closed when it reaches the configured size. Shard names need the
shard count (`-of-0000N`), which is only known at the end, so shards are written under temporary
names and renamed; the whole export is built in a temporary folder and swapped in at the end, so
a crash never leaves a half export and a re-run never leaves stale shards. The canonical copy
(`fcbench/`) is streamed too; the copies in the other projects' formats hold one split in memory
at a time, because those adapters write whole files (JSON arrays) from a list.

Determinism: rows keep the input order, splits come from fcbench.export.splits (seeded hashes), JSON
cells are dumped the same way every time, and the Parquet writer options are fixed and embed no
timestamp, so the same input and seed give byte-identical files.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Iterator

import pyarrow.parquet as pq

from fcbench.stage import VALIDATED
from fcbench.config import ExportConfig, PipelineConfig
from fcbench.export.card import CardInfo, ProvenanceTally, SplitInfo, render_card
from fcbench.errors import UserError
from fcbench.formats import FORMATS, FormatError, FormatOptions, Rejected, read_samples, write_samples
from fcbench.jsonl import dumps_line, write_json
from fcbench.runtime.output_guard import guard_counts
from fcbench.runtime.progress import counted, lines_in
from fcbench.sample import Sample, sample_to_dict
from fcbench.formats.parquet_rows import COLUMN_DOCS, PARQUET_SCHEMA, sample_to_row
from fcbench.export.parquet import SplitWriter, export_work_dir, swap_in
from fcbench.export.splits import assign_split, template_key
from fcbench.stats.tables import DatasetStats
from fcbench.stats.validated_file import LineReject, cached_stats, file_stats, read_validated
from fcbench.stage import PipelineContext, StageSummary, input_of

PARQUET = "parquet"
CANONICAL = "fcbench"  # the canonical JSONL copy: written line by line like the shards
STAGE_SUMMARIES = ("stage1", "stage2", "stage3", "filter")  # read into the card when present

# ----------------------------------------------------------------------------------------- export
@dataclass(frozen=True)
class ExportSettings:
    """What an export needs from a pipeline (a bench or a test builds one without pipelines.yaml)."""

    name: str
    config: ExportConfig
    seed: int = 0
    description: str = ""
    license: str | None = None


@dataclass(frozen=True)
class ExportPaths:
    build_dir: Path

    @property
    def export_dir(self) -> Path:
        return self.build_dir / "export"

    @property
    def rejects(self) -> Path:
        return self.build_dir / "export.rejects.jsonl"

    @property
    def summary(self) -> Path:
        return self.build_dir / "export.summary.json"


@dataclass
class ExportSummary:
    input: str
    total: int = 0
    exported: int = 0
    reasons: dict[str, int] = field(default_factory=dict)
    splits: dict[str, dict[str, Any]] = field(default_factory=dict)
    formats: dict[str, dict[str, Any]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    outputs: dict[str, str] = field(default_factory=dict)
    replaced: dict[str, Any] = field(default_factory=dict)  # what became of the previous export (output_guard)

    @property
    def rejected(self) -> int:
        return sum(self.reasons.values())

    def as_dict(self) -> dict[str, Any]:
        return {
            "input": self.input,
            "total": self.total,
            "counts": {"exported": self.exported, "rejected": self.rejected},
            "reasons": self.reasons,
            "splits": self.splits,
            "formats": self.formats,
            "warnings": self.warnings,
            "outputs": self.outputs,
            "output_guard": self.replaced,
        }


def check_formats(formats: list[str]) -> list[str]:
    """The formats to copy the export into (parquet is always written, so it is not one of them)."""
    unknown = [name for name in formats if name != PARQUET and name not in FORMATS]
    if unknown:
        raise UserError(f"stages.export.formats: unknown format {unknown[0]!r}; "
                        f"choose from: {', '.join([PARQUET, *FORMATS.names()])}")
    return [name for name in dict.fromkeys(formats) if name != PARQUET]


def format_targets(fmt: str, split: str, root: Path) -> tuple[Path, FormatOptions]:
    """Where a split goes in another format, following each project's own file layout."""
    base = root / fmt
    if fmt == "bfcl":  # BFCL keeps gold paths in possible_answer/<same name>
        return base / f"{split}.json", FormatOptions(answers_out=base / "possible_answer" / f"{split}.json")
    if fmt == "callnavi":  # CallNavi: Questions/<domain>.json beside APISchema/<domain>.json
        return (base / "Questions" / f"{split}.json",
                FormatOptions(tools_out=base / "APISchema" / f"{split}.json"))
    if fmt == "nestful":  # the spec file is written only for NESTful v1 samples
        return base / f"{split}.jsonl", FormatOptions(tools_out=base / f"{split}.spec.json")
    return base / f"{split}.jsonl", FormatOptions()


class _Exporter:
    """One export run: streams samples into split writers and tallies what the card reports."""

    def __init__(self, source: Path, settings: ExportSettings, work_dir: Path, copy_formats: list[str]) -> None:
        self.source = source
        self.settings = settings
        self.work_dir = work_dir
        self.data_dir = work_dir / "data"
        self.data_dir.mkdir(parents=True)
        self.canonical_dir = work_dir / ".canonical"  # per-split canonical lines for format copies
        self.copy_formats = copy_formats
        self.writers: dict[str, SplitWriter] = {}
        self.canonical_files: dict[str, IO[str]] = {}
        self.provenance = ProvenanceTally()
        self.summary = ExportSummary(input=str(source))
        self.reason_counts: Counter[str] = Counter()
        self.rejects_tmp = work_dir / ".rejects.jsonl"

    def samples(self) -> Iterator[Sample | Rejected]:
        """Export each sample as it is read, and hand it on."""
        config = self.settings.config
        with open(self.rejects_tmp, "w", encoding="utf-8") as rejects:
            for item in read_validated(self.source):
                self.summary.total += 1
                if isinstance(item, LineReject):
                    self.reason_counts[item.reason] += 1
                    rejects.write(dumps_line(item.record(self.source)) + "\n")
                    yield Rejected(f"{self.source}:{item.line_no}", item.reason)
                    continue
                split = assign_split(item, config.split, self.settings.seed, config.ratios)
                self._writer(split).add(sample_to_row(item))
                if self.copy_formats:
                    self._canonical_file(split).write(dumps_line(sample_to_dict(item)) + "\n")
                self.provenance.add(item.provenance, template_key(item))
                self.summary.exported += 1
                yield item

    def _writer(self, split: str) -> SplitWriter:
        if split not in self.writers:
            config = self.settings.config
            self.writers[split] = SplitWriter(split, self.data_dir, config.shard_rows, config.shard_bytes)
        return self.writers[split]

    def _canonical_file(self, split: str) -> IO[str]:
        if split not in self.canonical_files:
            self.canonical_dir.mkdir(exist_ok=True)
            self.canonical_files[split] = open(self.canonical_dir / f"{split}.jsonl", "w", encoding="utf-8")
        return self.canonical_files[split]

    def close_canonical_files(self) -> None:
        for handle in self.canonical_files.values():
            handle.close()

    def finish_splits(self) -> list[SplitInfo]:
        self.close_canonical_files()
        infos = []
        for split in self._split_order():
            writer = self.writers[split]
            shards = writer.finish()
            files = [f"data/{path.name}" for path in shards]
            file_bytes = sum(path.stat().st_size for path in shards)
            infos.append(SplitInfo(split, writer.rows, files, writer.num_bytes, file_bytes))
            self.summary.splits[split] = {"rows": writer.rows, "shards": len(files), "files": files,
                                          "num_bytes": writer.num_bytes, "file_bytes": file_bytes}
        self.summary.reasons = dict(self.reason_counts.most_common())
        return infos

    def _split_order(self) -> list[str]:
        """Declared ratio order first (train before test, as the user wrote them), then by name."""
        declared = [name for name in self.settings.config.ratios if name in self.writers]
        return declared + sorted(name for name in self.writers if name not in declared)

    def write_format_copies(self, splits: list[SplitInfo]) -> None:
        for fmt in self.copy_formats:
            files: list[str] = []
            warnings: list[str] = []
            for split in splits:
                canonical = self.canonical_dir / f"{split.name}.jsonl"
                target, options = format_targets(fmt, split.name, self.work_dir)
                if fmt == CANONICAL:  # the split's canonical lines are that copy already: streamed, never held
                    target.parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(canonical, target)
                    continue
                samples = [item for item in read_samples(canonical, "fcbench") if isinstance(item, Sample)]
                try:
                    lines = write_samples(samples, target, fmt, options)
                except (FormatError, ValueError) as exc:
                    lines = [f"split not written: {exc}"]
                warnings += [f"{fmt}/{split.name}: {line}" for line in lines]
            format_dir = self.work_dir / fmt
            if format_dir.is_dir():
                files = sorted(str(path.relative_to(self.work_dir)) for path in format_dir.rglob("*") if path.is_file())
            self.summary.formats[fmt] = {"files": files, "warnings": warnings}
            self.summary.warnings += warnings
        if self.canonical_dir.exists():
            shutil.rmtree(self.canonical_dir)


def _export_stats_beside(source: Path, parent_pid: int) -> DatasetStats:
    """`file_stats` in the second process, which ends when its parent does: a forked pool worker
    holds both ends of its task pipe, so after a kill -9 of the export it would wait forever."""
    _exit_with_parent(parent_pid)
    return file_stats(source)


def _exit_with_parent(parent_pid: int, every_s: float = 0.5) -> None:
    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(every_s)
        os._exit(1)

    threading.Thread(target=watch, name="exit-with-parent", daemon=True).start()


class _StatsBeside:
    """The card's statistics: read from the statistics cache when this file was measured before
    (the filter measures what it writes: fcbench.stats.validated_file), else computed in a second
    process while this one writes the Parquet shards: measuring long-context samples (token
    counts of every response) costs as much as exporting them, and the two need nothing from each
    other. Each process reads the file line by line, so memory stays bounded in both. Where no
    second process can start, or it dies, the statistics are computed here instead (slower, same
    figures)."""

    def __init__(self, source: Path) -> None:
        self.source = source
        self.pool: Any = None
        self.future: Any = None
        self.known: DatasetStats | None = None

    def __enter__(self) -> "_StatsBeside":
        self.known = cached_stats(self.source)
        if self.known is not None:
            return self
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        try:
            # fork: the child starts at once with fcbench already imported (spawn would re-import it)
            context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else None)
            self.pool = ProcessPoolExecutor(max_workers=1, mp_context=context)
            self.future = self.pool.submit(_export_stats_beside, self.source, os.getpid())
        except (OSError, ValueError, RuntimeError):
            self.pool = self.future = None
        return self

    def result(self) -> DatasetStats:
        if self.known is not None:
            return self.known
        if self.future is not None:
            try:
                return self.future.result()
            except Exception:  # a killed or failed child: the figures are computed here instead
                pass
        return file_stats(self.source)

    def __exit__(self, exc_type: Any, *rest: object) -> None:
        if self.pool is None:
            return
        if exc_type is not None:  # the export failed: its statistics are not wanted, do not wait for them
            for process in list((getattr(self.pool, "_processes", None) or {}).values()):
                process.terminate()
        self.pool.shutdown(wait=exc_type is None, cancel_futures=True)


def read_stage_summaries(build_dir: Path) -> dict[str, dict[str, Any]]:
    summaries = {}
    for stage in STAGE_SUMMARIES:
        path = build_dir / f"{stage}.summary.json"
        if path.is_file():
            try:
                value = json.loads(path.read_text(encoding="utf-8"))
            except json.JSONDecodeError:
                continue  # a broken summary leaves the card without that stage, not the export undone
            if isinstance(value, dict):
                summaries[stage] = value
    return summaries


def _card_info(settings: ExportSettings, splits: list[SplitInfo], stats: DatasetStats, exporter: _Exporter,
               stage_summaries: dict[str, dict[str, Any]]) -> CardInfo:
    config = settings.config
    return CardInfo(
        name=settings.name, description=settings.description, license=settings.license,
        task_categories=config.task_categories, tags=config.tags, seed=settings.seed,
        split_rule=config.split, ratios=config.ratios, schema=PARQUET_SCHEMA, column_docs=COLUMN_DOCS,
        splits=splits, stats=stats, provenance=exporter.provenance, stage_summaries=stage_summaries,
        export_reasons=exporter.summary.reasons, format_warnings=exporter.summary.warnings,
    )


def previous_export_rows(export_dir: Path) -> int | None:
    """Rows of the export already in place (from its Parquet footers), None when there is none."""
    shards = sorted((export_dir / "data").glob("*.parquet"))
    if not shards:
        return None
    return sum(pq.read_metadata(shard).num_rows for shard in shards)


def export_samples(source: Path, paths: ExportPaths, settings: ExportSettings, *, force: bool = False,
                   min_output_share: float = 0.5) -> ExportSummary:
    """Export the canonical JSONL file `source` into `paths`; returns the summary also written to
    export.summary.json. Raises UserError when no sample could be exported. A result smaller than
    `min_output_share` of the export in place keeps that export: the new one goes to `export.new/`
    (with `export.summary.new.json`) and OutputKept is raised, unless `force`."""
    if not source.is_file():
        raise UserError(f"{source}: no such file (the export reads the filter's validated.jsonl; "
                        f"run the filter stage or pass --input)")
    copy_formats = check_formats(settings.config.formats)
    work_dir = export_work_dir(paths.build_dir)
    exporter = _Exporter(source, settings, work_dir, copy_formats)
    try:
        with _StatsBeside(source) as card_stats:
            for _ in counted(exporter.samples(), "export", lines_in(source)):
                pass
            stats = card_stats.result()
        splits = exporter.finish_splits()
        exporter.write_format_copies(splits)
        summary = exporter.summary
        guarded = guard_counts(paths.export_dir, summary.exported, previous_export_rows(paths.export_dir),
                               force=force, min_share=min_output_share)
        summary.replaced = guarded.summary()
        export_dir, rejects, summary_file = (guarded.path(paths.export_dir), guarded.path(paths.rejects),
                                             guarded.path(paths.summary))
        if splits:
            card = render_card(_card_info(settings, splits, stats, exporter, read_stage_summaries(paths.build_dir)))
            (work_dir / "README.md").write_text(card, encoding="utf-8")
        os.replace(exporter.rejects_tmp, rejects)
        summary.outputs = {"export": str(export_dir), "card": str(export_dir / "README.md"),
                           "rejects": str(rejects), "summary": str(summary_file)}
        if splits:
            swap_in(work_dir, export_dir)
        write_json(summary_file, summary.as_dict(), indent=2)
    finally:
        exporter.close_canonical_files()
        if work_dir.exists():
            shutil.rmtree(work_dir)
    if not splits:
        top = "; ".join(f"{count} {reason}" for reason, count in list(summary.reasons.items())[:3])  # most common first
        raise UserError(f"{source}: no sample could be exported ({summary.rejected} rejected: {top}; every reject "
                        f"in {rejects})")
    guarded.finish()
    return summary




def run_export_stage(pipeline: PipelineConfig, input_file: Path | None = None, force: bool = False) -> ExportSummary:
    """`build-dataset export PIPELINE`: `<build>/validated.jsonl` (or `input_file`) exported."""
    settings = ExportSettings(name=pipeline.name, config=pipeline.stages.export, seed=pipeline.seed,
                              description=pipeline.description, license=pipeline.license)
    source = input_file or pipeline.build_dir / VALIDATED
    return export_samples(source, ExportPaths(pipeline.build_dir), settings, force=force,
                          min_output_share=pipeline.min_output_share)


def run(ctx: PipelineContext, settings: Any = None) -> StageSummary:
    """The stage contract (fcbench.stage)."""
    exported = run_export_stage(ctx.config, input_of(settings), force=ctx.force)
    return StageSummary("export", {"exported": exported.exported, "rejected": exported.rejected}, exported.reasons,
                        exported.outputs, {"exported": exported.exported, "splits": exported.splits,
                                           "rejected": exported.rejected}, report=exported)
