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

import functools
import json
import os
import shutil
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, Iterator

import pyarrow.parquet as pq

from fcbench.stage import VALIDATED
from fcbench.config import ExportConfig, PipelineConfig
from fcbench.export.handcheck import HandCheckSummary, read_handcheck
from fcbench.export.card import CardInfo, ProvenanceTally, SplitInfo, render_card
from fcbench.errors import UserError
from fcbench.formats import FORMATS, FormatError, FormatOptions, read_samples, write_samples
from fcbench.jsonl import dumps_line, write_json, writing
from fcbench.runtime.output_guard import beside, guard_counts, refuse_input_inside, refuse_overwriting
from fcbench.runtime.progress import counted, lines_in
from fcbench.sample import Provenance, Sample, path_shape, sample_to_dict
from fcbench.formats.parquet_rows import COLUMN_DOCS, PARQUET_SCHEMA, sample_to_row
from fcbench.export.parquet import SplitWriter, export_work_dir, swap_in
from fcbench.export.splits import assign_split, template_key
from fcbench.stats.tables import DatasetStats
from fcbench.stats.tables import SampleFigures, StatsTally, sample_figures
from fcbench.stats.validated_file import (ReadLine, cache_file_of, read_validated_parallel, remember_stats,
                                          stats_in_cache)
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
    handcheck: HandCheckSummary | None = None  # the measured error rate (stages.export.handcheck)


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

    def __init__(self, source: Path, settings: ExportSettings, work_dir: Path, copy_formats: list[str],
                 shown: Path | None = None) -> None:
        self.source = source
        self.shown = shown or work_dir  # the folder messages name (the export, not its work folder)
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

    def samples(self, card: "_CardStatistics") -> Iterator[ReadLine]:
        """Export each line as it comes (read and turned into a row on every core, in input
        order: fcbench.stats.validated_file.read_validated_parallel), and hand it on. A write that
        fails (a full disk) is one line naming the export folder; the export in place is only
        replaced at the end."""
        make = functools.partial(export_line, self.settings, bool(self.copy_formats), card.measuring)
        with writing(self.shown), open(self.rejects_tmp, "w", encoding="utf-8") as rejects:
            for line in read_validated_parallel(self.source, make):
                self.summary.total += 1
                if line.reject is not None:
                    card.add_reject(line.reject.reason)
                    self.reason_counts[line.reject.reason] += 1
                    with writing(self.shown):
                        rejects.write(dumps_line(line.reject.record(self.source)) + "\n")
                    yield line
                    continue
                exported: ExportedLine = line.made
                with writing(self.shown):
                    self._writer(exported.split).add(exported.row)
                    if exported.canonical is not None:
                        self._canonical_file(exported.split).write(exported.canonical + "\n")
                self.provenance.add(exported.provenance, exported.template)
                card.add(exported.figures)
                self.summary.exported += 1
                yield line

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
        handles, self.canonical_files = list(self.canonical_files.values()), {}
        for handle in handles:
            handle.close()

    def finish_splits(self) -> list[SplitInfo]:
        with writing(self.shown):
            self.close_canonical_files()
        infos = []
        for split in self._split_order():
            writer = self.writers[split]
            with writing(self.shown):
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
                    with writing(self.shown):
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


@dataclass(frozen=True)
class ExportedLine:
    """What a worker makes of one sample for the export: everything the writing process needs,
    never the sample itself."""

    split: str
    row: dict[str, Any]
    canonical: str | None  # its line in the canonical copy (only when format copies are written)
    provenance: Provenance
    template: str
    figures: SampleFigures | None  # the card's figures (None when they are known from the cache)


def export_line(settings: ExportSettings, canonical: bool, measure: bool, sample: Sample) -> ExportedLine:
    """One sample made ready for the export (run in the worker processes, so it must be pure)."""
    config = settings.config
    shape = path_shape(sample)  # the row and the figures both need it
    return ExportedLine(assign_split(sample, config.split, settings.seed, config.ratios), sample_to_row(sample, shape),
                        dumps_line(sample_to_dict(sample)) if canonical else None, sample.provenance,
                        template_key(sample), sample_figures(sample, shape) if measure else None)


class _CardStatistics:
    """The card's statistics: read from the statistics cache when this file was measured before
    (the filter measures what it writes: fcbench.stats.validated_file), else measured with the
    export: the workers that turn lines into rows also measure each sample (token counts of its
    context: as costly as the export itself on long-context benchmarks), and the figures are summed
    up here in input order, then kept in the cache for the next reader of the same bytes."""

    def __init__(self, source: Path) -> None:
        self.cache_file = cache_file_of(source)
        self.known = stats_in_cache(self.cache_file)
        self.tally = StatsTally() if self.known is None else None

    @property
    def measuring(self) -> bool:
        return self.tally is not None

    def add_reject(self, reason: str) -> None:
        if self.tally is not None:
            self.tally.add_reject(reason)

    def add(self, figures: SampleFigures | None) -> None:
        if self.tally is not None and figures is not None:
            self.tally.add(figures)

    def result(self) -> DatasetStats:
        if self.known is None and self.tally is not None:
            self.known = self.tally.result()
            remember_stats(self.cache_file, self.known)
        assert self.known is not None
        return self.known


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
        handcheck=settings.handcheck,
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
    refuse_input_inside("export", "--input", source, paths.export_dir)
    refuse_input_inside("export", "--input", source, beside(paths.export_dir))
    refuse_overwriting("export", {"--input": source},
                       {"export.rejects.jsonl": paths.rejects, "export.summary.json": paths.summary,
                        "export.rejects.new.jsonl": beside(paths.rejects),
                        "export.summary.new.json": beside(paths.summary)})
    copy_formats = check_formats(settings.config.formats)
    with writing(paths.export_dir):
        work_dir = export_work_dir(paths.build_dir)
    exporter = _Exporter(source, settings, work_dir, copy_formats, shown=paths.export_dir)
    try:
        card_stats = _CardStatistics(source)
        for _ in counted(exporter.samples(card_stats), "export", lines_in(source)):
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
            with writing(paths.export_dir):
                (work_dir / "README.md").write_text(card, encoding="utf-8")
        with writing(rejects):
            os.replace(exporter.rejects_tmp, rejects)
        summary.outputs = {"export": str(export_dir), "card": str(export_dir / "README.md"),
                           "rejects": str(rejects), "summary": str(summary_file)}
        if splits:
            with writing(export_dir):
                swap_in(work_dir, export_dir)
        write_json(summary_file, summary.as_dict(), indent=2)
    finally:
        try:
            exporter.close_canonical_files()
        except OSError:
            pass  # a write already failed and is being reported; the work folder goes below
        if work_dir.exists():
            shutil.rmtree(work_dir, ignore_errors=True)
    if not splits:
        top = "; ".join(f"{count} {reason}" for reason, count in list(summary.reasons.items())[:3])  # most common first
        raise UserError(f"{source}: no sample could be exported ({summary.rejected} rejected: {top}; every reject "
                        f"in {rejects})")
    guarded.finish()
    return summary


def run_export_stage(pipeline: PipelineConfig, input_file: Path | None = None, force: bool = False) -> ExportSummary:
    """`build-dataset export PIPELINE`: `<build>/validated.jsonl` (or `input_file`) exported."""
    declared = pipeline.stages.export.handcheck
    handcheck = read_handcheck(pipeline.resolve(declared), pipeline.name, declared) if declared else None
    settings = ExportSettings(name=pipeline.name, config=pipeline.stages.export, seed=pipeline.seed,
                              description=pipeline.description, license=pipeline.license, handcheck=handcheck)
    source = input_file or pipeline.build_dir / VALIDATED
    return export_samples(source, ExportPaths(pipeline.build_dir), settings, force=force,
                          min_output_share=pipeline.min_output_share)


def run(ctx: PipelineContext, settings: Any = None) -> StageSummary:
    """The stage contract (fcbench.stage)."""
    exported = run_export_stage(ctx.config, input_of(settings), force=ctx.force)
    return StageSummary("export", {"exported": exported.exported, "rejected": exported.rejected}, exported.reasons,
                        exported.outputs, {"exported": exported.exported, "splits": exported.splits,
                                           "rejected": exported.rejected}, report=exported)
