"""The QA report of a build: one self-contained HTML page with plots, and the same numbers as JSON.

Three layers, kept apart so the numbers are tested without files or matplotlib:
1. gathering (pure): parsed stage files -> a typed `ReportData` (statistics, annotator corrections,
   rejects by reason per stage, evaluation scores, splits, problems);
2. reading (I/O): `read_build(build_dir)` opens every stage file it knows, streams the big ones
   through the pure functions, and turns a missing or broken file into a line under "problems"
   instead of an exception (a half-finished build must still get a report);
3. rendering: `render_charts` (matplotlib, Agg, PNG) and `render_html` (embedded data URIs, no
   external assets, no network). Output is byte-identical for identical inputs: fixed figure
   sizes and dpi, PNG metadata without the matplotlib version, no timestamps.
"""

from __future__ import annotations

import base64
import html
import io
import json
import math
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fcbench.runtime.progress import counted
from fcbench.formats import Rejected, read_samples
from fcbench.jsonl import JsonLine, iter_json_lines, write_json, write_text
from fcbench.sample import Sample, path_shape
from fcbench.score.paper_tables import merge_tables
from fcbench.stats.tables import TABLE_COLUMNS, DatasetStats, compute_stats, hardness_lines, table_rows
from fcbench.stage import PipelineContext, StageSummary

# ------------------------------------------------------------------------------------ stage layout
# The stage that writes each file, in pipeline order (see DESIGN.md and the stage conventions).
STAGE_ORDER = ("stage1", "stage2", "stage3", "filter", "export")
STAGE_OUTPUTS = {"stage1": "drafts", "stage2": "templates", "stage3": "candidates", "filter": "validated"}
_STAGE_BY_OUTPUT = {stem: stage for stage, stem in STAGE_OUTPUTS.items()} | {"export": "export"}
# The dataset the report describes is the furthest stage output present.
DATASET_PREFERENCE = ("validated", "candidates", "templates", "drafts")
QA_FILE = "stage2.qa.json"

EVAL_DIR = "eval"
SCORES_FILE = "scores.json"
EXPORT_DATA_DIR = Path("export") / "data"
REPORT_HTML = "report.html"
REPORT_JSON = "report.json"
NO_REASON = "(no reason)"
MAX_PROBLEMS_PER_FILE = 5  # a file with thousands of broken lines should not bury the others

# What the annotators fixed, in the order the issue lists them; stage2.qa.json may spell a figure
# with the annotation error vocabulary (annotate/tasks/error_types.py) instead, hence the aliases.
CORRECTION_FIGURES: dict[str, tuple[str, ...]] = {
    "samples": ("samples", "annotated", "total"),
    "corrected": ("corrected", "samples_corrected"),
    "queries_rewritten": ("queries_rewritten", "query_rewritten"),
    "calls_added": ("calls_added", "call_missing"),
    "calls_removed": ("calls_removed", "call_redundant"),
    "calls_reordered": ("calls_reordered", "order_error"),
    "arguments_fixed": ("arguments_fixed",),
    "entries_deleted": ("entries_deleted", "response_entries_deleted", "ambiguous_response"),
    "tools_dropped": ("tools_dropped", "overlapping_tools"),
}
ARGUMENTS_BY_TYPE_KEYS = ("arguments_fixed_by_type", "arguments_fixed_by_parameter_type", "args_fixed_by_type")


# ------------------------------------------------------------------------------------- data model
@dataclass(frozen=True)
class DatasetSection:
    source: str  # the stage file measured, relative to the build dir
    stats: DatasetStats
    steps: dict[int, int]  # number of steps -> samples

    def as_dict(self) -> dict[str, Any]:
        return {"source": self.source, **self.stats.as_dict(),
                "steps": {str(steps): n for steps, n in self.steps.items()}}


@dataclass(frozen=True)
class CorrectionsSection:
    source: str
    figures: dict[str, float]  # name -> count (or rate), known names first
    breakdowns: dict[str, dict[str, float]]  # e.g. arguments_fixed_by_type -> {type: count}

    def as_dict(self) -> dict[str, Any]:
        return {"source": self.source, "figures": self.figures, "breakdowns": self.breakdowns}


@dataclass(frozen=True)
class StageRejects:
    stage: str
    reasons: dict[str, int]  # what the chart shows: the rejects file, else the summary's reasons
    rejects_file: str | None = None
    rejects_file_reasons: dict[str, int] | None = None
    summary_file: str | None = None
    summary_reasons: dict[str, int] | None = None
    summary_counts: dict[str, float] | None = None

    @property
    def total(self) -> int:
        return sum(self.reasons.values())

    def as_dict(self) -> dict[str, Any]:
        return {"stage": self.stage, "total": self.total, "reasons": self.reasons,
                "rejects_file": self.rejects_file, "rejects_file_reasons": self.rejects_file_reasons,
                "summary_file": self.summary_file, "summary_reasons": self.summary_reasons,
                "summary_counts": self.summary_counts}


@dataclass(frozen=True)
class ModelScores:
    """One model's ComplexEval summary (fcbench.score.complexeval.summarise)."""

    model: str
    n: int
    success_rate: float
    call_accuracy: float
    completeness: float | None
    correctness: float | None
    errors: dict[str, int]
    param_type_error_rate: dict[str, float]
    by_domain: dict[str, dict[str, Any]]
    judges: dict[str, Any] = field(default_factory=dict)  # who produced completeness/correctness (0-2 scale)

    def as_dict(self) -> dict[str, Any]:
        return {"model": self.model, "n": self.n, "success_rate": self.success_rate,
                "call_accuracy": self.call_accuracy, "completeness": self.completeness,
                "correctness": self.correctness, "errors": self.errors,
                "param_type_error_rate": self.param_type_error_rate, "by_domain": self.by_domain,
                "judges": self.judges}


@dataclass(frozen=True)
class Headline:
    """The short summary at the top of the page."""

    samples: int | None
    splits: dict[str, int]
    filter_pass_rate: float | None
    filter_passed: int | None
    filter_total: int | None
    best_model: str | None
    best_success_rate: float | None

    def as_dict(self) -> dict[str, Any]:
        return {"samples": self.samples, "splits": self.splits, "filter_pass_rate": self.filter_pass_rate,
                "filter_passed": self.filter_passed, "filter_total": self.filter_total,
                "best_model": self.best_model, "best_success_rate": self.best_success_rate}


@dataclass
class ReportData:
    title: str
    headline: Headline
    dataset: DatasetSection | None
    corrections: CorrectionsSection | None
    stages: list[StageRejects]
    evaluations: list[ModelScores]
    problems: list[str] = field(default_factory=list)
    conversations: dict[str, Any] | None = None  # a conversational build: export/statistics.json (Table 2/3)
    # every evaluation's results in its paper's layout (evaluate --protocol), one table per layout,
    # a row per model (fcbench.score.paper_tables)
    paper_tables: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        extra = {"conversations": self.conversations} if self.conversations is not None else {}
        if self.paper_tables:
            extra["paper_tables"] = self.paper_tables
        return {
            **extra,
            "title": self.title,
            "summary": self.headline.as_dict(),
            "dataset": self.dataset.as_dict() if self.dataset else None,
            "corrections": self.corrections.as_dict() if self.corrections else None,
            "rejects": {stage.stage: stage.as_dict() for stage in self.stages},
            "evaluations": {scores.model: scores.as_dict() for scores in self.evaluations},
            "problems": self.problems,
        }


# ------------------------------------------------------------------------ gathering (pure functions)
def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def numeric_items(mapping: Any) -> dict[str, float]:
    """The numeric entries of a JSON object (others ignored); {} for anything not an object."""
    if not isinstance(mapping, Mapping):
        return {}
    return {str(key): value for key, value in mapping.items() if _is_number(value)}


def dataset_section(items: Iterable[Sample | Rejected], source: str) -> DatasetSection:
    """compute_stats plus the step distribution, in one pass so a large file is read once."""
    steps: Counter[int] = Counter()

    def counting_steps() -> Iterator[Sample | Rejected]:
        for item in counted(items, f"report: {Path(source).name}", None):  # also checks the memory ceiling
            if isinstance(item, Sample):
                steps[path_shape(item).n_steps] += 1
            yield item

    stats = compute_stats(counting_steps())
    return DatasetSection(source, stats, {n: steps[n] for n in sorted(steps)})


def reject_reasons(lines: Iterable[JsonLine], source: str) -> tuple[dict[str, int], list[str]]:
    """Count the reasons of a `*.rejects.jsonl` file; unreadable lines become problems."""
    reasons: Counter[str] = Counter()
    problems: list[str] = []
    for line in lines:
        if line.error is not None:
            problems.append(f"{source}:{line.line_no}: {line.error}")
            continue
        reason = line.value.get("reason") if isinstance(line.value, dict) else None
        if not isinstance(reason, str) or not reason:
            problems.append(f"{source}:{line.line_no}: reject without a reason")
            reason = NO_REASON
        reasons[reason] += 1
    return _by_count(reasons), _capped(problems, source)


def _by_count(counter: Counter[str]) -> dict[str, int]:
    # Most frequent first, ties by name, so the order never depends on file order.
    return {key: counter[key] for key in sorted(counter, key=lambda k: (-counter[k], k))}


def _capped(problems: list[str], source: str) -> list[str]:
    if len(problems) <= MAX_PROBLEMS_PER_FILE:
        return problems
    return problems[:MAX_PROBLEMS_PER_FILE] + [f"{source}: {len(problems) - MAX_PROBLEMS_PER_FILE} more problems"]


def stage_rejects(stage: str, rejects: tuple[str, dict[str, int]] | None,
                  summary: tuple[str, Any] | None) -> tuple[StageRejects, list[str]]:
    """Reasons of one stage from its rejects file and its summary; a disagreement is a problem
    (it means one of the two files is stale or a stage dropped samples without a line)."""
    problems: list[str] = []
    summary_reasons: dict[str, int] | None = None
    summary_counts: dict[str, float] | None = None
    if summary is not None:
        summary_name, document = summary
        if isinstance(document, Mapping) and ("counts" in document or "reasons" in document):
            summary_reasons = {k: int(v) for k, v in numeric_items(document.get("reasons")).items()}
            summary_counts = numeric_items(document.get("counts"))
        else:
            problems.append(f"{summary_name}: expected an object with \"counts\" and/or \"reasons\"")
    file_reasons = rejects[1] if rejects else None
    if file_reasons is not None and summary_reasons and file_reasons != summary_reasons:
        problems.append(f"{stage}: {rejects[0]} ({sum(file_reasons.values())} rejects) disagrees with "
                        f"{summary[0]} ({sum(summary_reasons.values())} by reason)")
    chosen = file_reasons if file_reasons is not None else (summary_reasons or {})
    return StageRejects(stage, _by_count(Counter(chosen)), rejects[0] if rejects else None, file_reasons,
                        summary[0] if summary else None, summary_reasons, summary_counts), problems


def corrections_section(document: Any, source: str) -> tuple[CorrectionsSection | None, list[str]]:
    """What annotators fixed, from stage2.qa.json: the figures at the top level or under "summary"
    (known figures under their canonical name, any other number kept as is) and every object of
    numbers as a breakdown (arguments fixed by parameter type, error types...)."""
    if not isinstance(document, Mapping):
        return None, [f"{source}: expected a JSON object"]
    body = document.get("summary") if isinstance(document.get("summary"), Mapping) else document
    numbers = numeric_items(body)
    figures: dict[str, float] = {}
    used: set[str] = set()
    for name, aliases in CORRECTION_FIGURES.items():
        key = next((alias for alias in aliases if alias in numbers), None)
        if key is not None:
            figures[name] = numbers[key]
            used.add(key)
    breakdowns: dict[str, dict[str, float]] = {}
    for key in ARGUMENTS_BY_TYPE_KEYS:
        if numeric_items(body.get(key)):
            breakdowns["arguments_fixed_by_type"] = numeric_items(body[key])
            used.add(key)
            break
    if "arguments_fixed" not in figures and "arguments_fixed_by_type" in breakdowns:
        figures["arguments_fixed"] = sum(breakdowns["arguments_fixed_by_type"].values())
    for key in sorted(numbers):
        if key not in used:
            figures[key] = numbers[key]
    for key in sorted(body):
        if key not in used and numeric_items(body[key]):
            breakdowns[str(key)] = numeric_items(body[key])
    if not figures and not breakdowns:
        return None, [f"{source}: no figures found (expected counts such as queries_rewritten)"]
    return CorrectionsSection(source, figures, breakdowns), []


def model_scores(model: str, document: Any, source: str) -> tuple[ModelScores | None, list[str]]:
    """A ComplexEval summary, bare or wrapped as the score command prints it ({metric, summary})."""
    if isinstance(document, Mapping) and isinstance(document.get("summary"), Mapping):
        document = document["summary"]
    if not isinstance(document, Mapping) or not all(_is_number(document.get(k))
                                                    for k in ("n", "success_rate", "call_accuracy")):
        return None, [f"{source}: not a ComplexEval summary (needs n, success_rate, call_accuracy)"]
    by_domain = document.get("by_domain")
    return ModelScores(
        model=model,
        n=int(document["n"]),
        success_rate=float(document["success_rate"]),
        call_accuracy=float(document["call_accuracy"]),
        completeness=document.get("completeness") if _is_number(document.get("completeness")) else None,
        correctness=document.get("correctness") if _is_number(document.get("correctness")) else None,
        errors={k: int(v) for k, v in numeric_items(document.get("errors")).items()},
        param_type_error_rate=numeric_items(document.get("param_type_error_rate")),
        by_domain={str(d): dict(v) for d, v in sorted(by_domain.items()) if isinstance(v, Mapping)}
        if isinstance(by_domain, Mapping) else {},
        judges=dict(document["judges"]) if isinstance(document.get("judges"), Mapping) else {},
    ), []


def best_model(evaluations: Sequence[ModelScores]) -> ModelScores | None:
    """Highest success rate; call accuracy, then the name, break ties so the pick is stable."""
    if not evaluations:
        return None
    return min(evaluations, key=lambda s: (-s.success_rate, -s.call_accuracy, s.model))


def headline(dataset: DatasetSection | None, stages: Sequence[StageRejects], evaluations: Sequence[ModelScores],
             splits: Mapping[str, int]) -> Headline:
    filter_counts = next((s.summary_counts for s in stages if s.stage == "filter" and s.summary_counts), None)
    passed = total = rate = None
    if filter_counts and "passed" in filter_counts:
        passed = int(filter_counts["passed"])
        total = int(sum(filter_counts.values()))
        rate = passed / total if total else None
    best = best_model(evaluations)
    return Headline(samples=dataset.stats.samples if dataset else None, splits=dict(splits),
                    filter_pass_rate=rate, filter_passed=passed, filter_total=total,
                    best_model=best.model if best else None, best_success_rate=best.success_rate if best else None)


def stage_of_file(name: str) -> str:
    """`drafts.rejects.jsonl` -> stage1, `filter.summary.json` -> filter, unknown stems as is."""
    stem = name.split(".", 1)[0]
    return _STAGE_BY_OUTPUT.get(stem, stem)


def stage_sort_key(stage: str) -> tuple[int, str]:
    return (STAGE_ORDER.index(stage) if stage in STAGE_ORDER else len(STAGE_ORDER), stage)


# ---------------------------------------------------------------------------------- reading (I/O)
@dataclass
class _Reader:
    """Reads build files, turning each failure into a problem line that names the file."""

    build_dir: Path
    problems: list[str] = field(default_factory=list)

    def relative(self, path: Path) -> str:
        return path.relative_to(self.build_dir).as_posix()

    def json_document(self, path: Path) -> tuple[bool, Any]:
        try:
            with open(path, encoding="utf-8") as handle:
                return True, json.load(handle)
        except json.JSONDecodeError as exc:
            self.problems.append(f"{self.relative(path)}: not valid JSON ({exc.msg} at line {exc.lineno})")
        except (OSError, UnicodeDecodeError) as exc:
            self.problems.append(f"{self.relative(path)}: cannot be read ({exc.__class__.__name__})")
        return False, None

    def dataset(self) -> DatasetSection | None:
        for stem in DATASET_PREFERENCE:
            path = self.build_dir / f"{stem}.jsonl"
            if path.is_file():
                return self._dataset_from(path)
        self.problems.append("no stage output to describe: none of "
                             + ", ".join(f"{stem}.jsonl" for stem in DATASET_PREFERENCE) + " exists")
        return None

    def _dataset_from(self, path: Path) -> DatasetSection | None:
        name = self.relative(path)
        unreadable: list[str] = []

        def noting_rejects() -> Iterator[Sample | Rejected]:
            for item in read_samples(path, "fcbench"):
                if isinstance(item, Rejected):
                    unreadable.append(f"{name}:{item.source.rsplit(':', 1)[-1]}: {item.reason}")
                yield item

        try:
            section = dataset_section(noting_rejects(), name)
        except (OSError, UnicodeDecodeError) as exc:
            self.problems.append(f"{name}: cannot be read ({exc.__class__.__name__})")
            return None
        self.problems.extend(_capped(unreadable, name))
        return section

    def rejects(self, path: Path) -> dict[str, int] | None:
        name = self.relative(path)
        try:
            reasons, problems = reject_reasons(iter_json_lines(path), name)
        except (OSError, UnicodeDecodeError) as exc:
            self.problems.append(f"{name}: cannot be read ({exc.__class__.__name__})")
            return None
        self.problems.extend(problems)
        return reasons

    def stages(self) -> list[StageRejects]:
        rejects = {stage_of_file(p.name): p for p in sorted(self.build_dir.glob("*.rejects.jsonl"))}
        summaries = {stage_of_file(p.name): p for p in sorted(self.build_dir.glob("*.summary.json"))}
        for stage, stem in STAGE_OUTPUTS.items():
            # A stage that wrote its output but no summary ran incompletely (or by another tool).
            if (self.build_dir / f"{stem}.jsonl").is_file() and stage not in summaries:
                self.problems.append(f"{stage}: {stem}.jsonl exists but {stage}.summary.json is missing")
        result = []
        for stage in sorted(set(rejects) | set(summaries), key=stage_sort_key):
            counted = None
            if stage in rejects:
                reasons = self.rejects(rejects[stage])
                counted = (self.relative(rejects[stage]), reasons) if reasons is not None else None
            summary = None
            if stage in summaries:
                ok, document = self.json_document(summaries[stage])
                summary = (self.relative(summaries[stage]), document) if ok else None
            if counted is None and summary is None:
                continue
            section, problems = stage_rejects(stage, counted, summary)
            self.problems.extend(problems)
            if counted is None and section.summary_reasons and stage in STAGE_OUTPUTS:
                self.problems.append(f"{stage}: {STAGE_OUTPUTS[stage]}.rejects.jsonl is missing but "
                                     f"{section.summary_file} counts {sum(section.summary_reasons.values())} rejects")
            result.append(section)
        return result

    def corrections(self) -> CorrectionsSection | None:
        path = self.build_dir / QA_FILE
        if not path.is_file():
            return None
        ok, document = self.json_document(path)
        if not ok:
            return None
        section, problems = corrections_section(document, QA_FILE)
        self.problems.extend(problems)
        return section

    def evaluations(self) -> list[ModelScores]:
        result = []
        eval_dir = self.build_dir / EVAL_DIR
        if not eval_dir.is_dir():
            return result
        for model_dir in sorted(p for p in eval_dir.iterdir() if p.is_dir()):
            path = model_dir / SCORES_FILE
            if not path.is_file():
                if not _protocol_scores(model_dir):  # only other protocols' evaluations: nothing missing
                    self.problems.append(f"{self.relative(path)}: missing (evaluation not scored)")
                continue
            ok, document = self.json_document(path)
            if not ok:
                continue
            scores, problems = model_scores(model_dir.name, document, self.relative(path))
            self.problems.extend(problems)
            if scores is not None:
                result.append(scores)
        return result

    def paper_tables(self) -> list[dict[str, Any]]:
        """The tables of every evaluation's scores.json (ComplexEval's in the model folder, the
        other protocols' one folder down), a layout's rows from several models put together."""
        eval_dir = self.build_dir / EVAL_DIR
        if not eval_dir.is_dir():
            return []
        found: list[dict[str, Any]] = []
        for model_dir in sorted(p for p in eval_dir.iterdir() if p.is_dir()):
            paths = ([model_dir / SCORES_FILE] if (model_dir / SCORES_FILE).is_file() else []) + _protocol_scores(model_dir)
            for path in paths:
                ok, document = self.json_document(path)
                tables = document.get("tables") if ok and isinstance(document, Mapping) else None
                if tables is None:
                    continue
                if not isinstance(tables, list) or not all(_is_paper_table(t) for t in tables):
                    self.problems.append(f"{self.relative(path)}: `tables` is not a list of paper tables")
                    continue
                found.extend(tables)
        return merge_tables(found)

    def splits(self) -> dict[str, int]:
        """Rows per split, read from the Parquet footers (exact whatever the export summary says)."""
        data_dir = self.build_dir / EXPORT_DATA_DIR
        if not data_dir.is_dir():
            return {}
        import pyarrow.parquet as pq  # only needed once a build has been exported

        rows: Counter[str] = Counter()
        for path in sorted(data_dir.glob("*.parquet")):
            split = path.name.split("-", 1)[0]
            try:
                rows[split] += pq.read_metadata(path).num_rows
            except (OSError, ValueError) as exc:  # pyarrow raises ArrowInvalid (a ValueError) on junk
                self.problems.append(f"{self.relative(path)}: not a readable Parquet file ({exc.__class__.__name__})")
        return dict(sorted(rows.items()))


def _protocol_scores(model_dir: Path) -> list[Path]:
    """scores.json of the protocols evaluated one folder below a model's (evaluate --protocol)."""
    return sorted(path / SCORES_FILE for path in model_dir.iterdir() if path.is_dir() and (path / SCORES_FILE).is_file())


def _is_paper_table(table: Any) -> bool:
    return (isinstance(table, Mapping) and isinstance(table.get("columns"), list) and isinstance(table.get("rows"), list)
            and all(isinstance(c, Mapping) and {"group", "name"} <= set(c) for c in table["columns"])
            and all(isinstance(r, Mapping) and isinstance(r.get("cells"), list)
                    and len(r["cells"]) == len(table["columns"]) for r in table["rows"])
            and isinstance(table.get("title"), str) and isinstance(table.get("protocol"), str)
            and isinstance(table.get("notes", []), list))


def read_build(build_dir: Path, title: str | None = None) -> ReportData:
    """Everything the report shows about one build directory; never raises on a bad stage file."""
    reader = _Reader(build_dir)
    if not build_dir.is_dir():
        reader.problems.append(f"{build_dir}: build directory does not exist (no stage has run)")
        return ReportData(title or build_dir.name, headline(None, [], [], {}), None, None, [], [], reader.problems)
    dataset = reader.dataset()
    stages = reader.stages()
    corrections = reader.corrections()
    evaluations = reader.evaluations()
    paper_tables = reader.paper_tables()
    splits = reader.splits()
    statistics = build_dir / "export" / "statistics.json"
    conversations = reader.json_document(statistics)[1] if statistics.is_file() else None
    return ReportData(title or build_dir.parent.name, headline(dataset, stages, evaluations, splits), dataset,
                      corrections, stages, evaluations, reader.problems,
                      conversations if isinstance(conversations, dict) else None, paper_tables)


# ------------------------------------------------------------------------------------------ charts
# One palette for the whole page: a key keeps its colour in every chart it appears in.
PALETTE = ("#4C78A8", "#F58518", "#54A24B", "#E45756", "#72B7B2", "#EECA3B", "#B279A2", "#FF9DA6",
           "#9D755D", "#BAB0AC", "#1F4E79", "#8C564B")
DIFFICULTY_COLOURS = {"none": "#BAB0AC", "single": "#4C78A8", "multiple": "#F58518", "nested": "#E45756"}
SUCCESS_COLOUR = "#54A24B"
ERROR_COLOURS = {"func_error": "#E45756", "param_missing": "#F58518", "hallucination": "#B279A2",
                 "value_error": "#EECA3B", "stop_early": "#72B7B2"}
ACCENT = "#4C78A8"
FIGURE_DPI = 100
WIDE = (9.0, 3.6)
MEDIUM = (6.4, 3.2)
SMALL = (3.4, 2.8)  # three side by side in the page width
BREAKDOWN = (4.2, 3.2)  # beside a MEDIUM chart


@dataclass(frozen=True)
class Chart:
    section: str
    name: str
    title: str
    png: bytes


def colour_map(keys: Iterable[str]) -> dict[str, str]:
    """Colours by sorted key, so the same set of keys always gets the same colours."""
    return {key: PALETTE[i % len(PALETTE)] for i, key in enumerate(sorted(set(keys)))}


def _matplotlib():
    import matplotlib

    matplotlib.use("Agg")  # no display on servers and CI; also the only backend we test
    import matplotlib.pyplot as plt

    return plt


_STYLE = {"font.family": "DejaVu Sans", "font.size": 10, "axes.titlesize": 11, "axes.titleweight": "bold",
          "axes.spines.top": False, "axes.spines.right": False, "axes.grid": True, "axes.grid.axis": "y",
          "grid.color": "#E5E5E5", "axes.axisbelow": True, "axes.edgecolor": "#888888"}


def _png(figure) -> bytes:
    buffer = io.BytesIO()
    # Software=None drops the matplotlib version, the only varying metadata of an Agg PNG.
    figure.savefig(buffer, format="png", dpi=FIGURE_DPI, metadata={"Software": None})
    _matplotlib().close(figure)
    return buffer.getvalue()


def _bar_chart(title: str, counts: Mapping[str, float], colours: Sequence[str] | str, xlabel: str,
               ylabel: str = "samples", size: tuple[float, float] = SMALL, percent: bool = False) -> bytes:
    plt = _matplotlib()
    figure, axes = plt.subplots(figsize=size, layout="constrained")
    labels = list(counts)
    values = [counts[label] for label in labels]
    bars = axes.bar(range(len(labels)), values, color=colours, width=0.7)
    axes.set_xticks(range(len(labels)), labels, rotation=30 if max(map(len, labels), default=0) > 8 else 0,
                    ha="right" if max(map(len, labels), default=0) > 8 else "center")
    axes.bar_label(bars, labels=[f"{v:.0%}" if percent else f"{v:g}" for v in values], fontsize=8, padding=2)
    axes.set_title(title)
    axes.set_xlabel(xlabel)
    axes.set_ylabel(ylabel)
    axes.margins(y=0.15)
    if percent:
        axes.yaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{v:.0%}"))
    return _png(figure)


def _stacked_bars(title: str, rows: Mapping[str, Mapping[str, float]], colours: Mapping[str, str],
                  xlabel: str, size: tuple[float, float] = WIDE, percent: bool = False) -> bytes:
    """Horizontal stacked bars: one row per category (stage, model), one segment per key."""
    plt = _matplotlib()
    height = max(2.2, 1.2 + 0.55 * len(rows))  # bars keep their thickness whatever the row count
    figure, axes = plt.subplots(figsize=(size[0], height), layout="constrained")
    names = list(rows)[::-1]  # first row on top
    keys = [key for key in colours if any(rows[name].get(key) for name in names)]
    left = [0.0] * len(names)
    for key in keys:
        values = [rows[name].get(key, 0) for name in names]
        axes.barh(names, values, left=left, color=colours[key], label=key, height=0.6)
        left = [a + b for a, b in zip(left, values)]
    axes.grid(True, axis="x", color="#E5E5E5")
    axes.grid(False, axis="y")
    axes.set_title(title)
    axes.set_xlabel(xlabel)
    if percent:
        axes.xaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{v:.0%}"))
    if keys:
        axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    return _png(figure)


def _grouped_bars(title: str, groups: Sequence[str], series: Mapping[str, Mapping[str, float]],
                  colours: Mapping[str, str], ylabel: str) -> bytes:
    """Bars per group (parameter type), one bar per series (model), values as rates."""
    plt = _matplotlib()
    figure, axes = plt.subplots(figsize=WIDE, layout="constrained")
    width = 0.8 / max(len(series), 1)
    for index, (name, values) in enumerate(series.items()):
        xs = [g + (index - (len(series) - 1) / 2) * width for g in range(len(groups))]
        axes.bar(xs, [values.get(group, 0.0) for group in groups], width=width, color=colours[name], label=name)
    axes.set_xticks(range(len(groups)), groups)
    axes.set_ylim(0, 1)
    axes.yaxis.set_major_formatter(plt.FuncFormatter(lambda v, _: f"{v:.0%}"))
    axes.set_title(title)
    axes.set_ylabel(ylabel)
    axes.set_xlabel("parameter type")
    axes.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    return _png(figure)


def _dataset_charts(dataset: DatasetSection) -> list[Chart]:
    stats = dataset.stats
    difficulty = {level: n for level, n in stats.difficulty.items()}
    return [
        Chart("dataset", "context_tokens", "Context length", _bar_chart(
            f"Context length ({stats.encoding} tokens)", stats.context_histogram, ACCENT, "tokens of context",
            size=MEDIUM)),
        Chart("dataset", "difficulty", "Difficulty", _bar_chart(
            "Difficulty (from the gold path)", difficulty,
            [DIFFICULTY_COLOURS.get(k, ACCENT) for k in difficulty], "difficulty")),
        Chart("dataset", "steps", "Steps per sample", _bar_chart(
            "Steps per sample", {str(k): v for k, v in dataset.steps.items()}, ACCENT, "steps")),
        Chart("dataset", "nesting_depth", "Nesting depth", _bar_chart(
            "Nesting depth", {str(k): v for k, v in stats.nesting_depth.items()}, "#72B7B2",
            "longest chain of references")),
    ]


def _corrections_charts(corrections: CorrectionsSection) -> list[Chart]:
    counts = {k: v for k, v in corrections.figures.items() if k not in ("samples", "corrected")}
    charts = []
    if counts:
        charts.append(Chart("corrections", "fixes", "What annotators fixed", _bar_chart(
            "What annotators fixed", {k.replace("_", " "): v for k, v in counts.items()}, ACCENT,
            "", ylabel="count", size=MEDIUM)))
    for name, breakdown in corrections.breakdowns.items():
        colours = colour_map(breakdown)
        charts.append(Chart("corrections", name, name.replace("_", " "), _bar_chart(
            name.replace("_", " ").capitalize(), breakdown, [colours[k] for k in breakdown], "", ylabel="count",
            size=BREAKDOWN)))
    return charts


def _rejects_chart(stages: Sequence[StageRejects]) -> list[Chart]:
    rows = {stage.stage: stage.reasons for stage in stages if stage.reasons}
    if not rows:
        return []
    colours = colour_map(reason for reasons in rows.values() for reason in reasons)
    return [Chart("rejects", "rejects_by_stage", "Rejects by reason per stage", _stacked_bars(
        "Rejects by reason per stage", rows, colours, "rejected samples"))]


def _evaluation_charts(evaluations: Sequence[ModelScores]) -> list[Chart]:
    if not evaluations:
        return []
    shares = {}
    for scores in evaluations:
        n = scores.n or 1
        row = {"success": scores.success_rate}
        row.update({kind: count / n for kind, count in scores.errors.items()})
        shares[scores.model] = row
    kinds = list(dict.fromkeys(k for row in shares.values() for k in row if k != "success"))
    colours = {"success": SUCCESS_COLOUR, **{k: ERROR_COLOURS.get(k, PALETTE[i % len(PALETTE)])
                                              for i, k in enumerate(kinds)}}
    charts = [Chart("evaluation", "outcomes", "Outcome per model", _stacked_bars(
        "Outcome per model (share of samples)", shares, colours, "share of samples", percent=True))]
    types = list(dict.fromkeys(t for s in evaluations for t in s.param_type_error_rate))
    if types:
        charts.append(Chart("evaluation", "param_type_error_rate", "Error rate per parameter type", _grouped_bars(
            "Error rate per parameter type", types,
            {s.model: s.param_type_error_rate for s in evaluations},
            colour_map(s.model for s in evaluations), "error rate")))
    return charts


def render_charts(report: ReportData) -> list[Chart]:
    import matplotlib

    _matplotlib()
    with matplotlib.rc_context(_STYLE):
        charts = _dataset_charts(report.dataset) if report.dataset else []
        charts += _corrections_charts(report.corrections) if report.corrections else []
        charts += _rejects_chart(report.stages)
        charts += _evaluation_charts(report.evaluations)
    return charts


# -------------------------------------------------------------------------------------------- HTML
SECTIONS = {
    "summary": "Summary",
    "dataset": "Dataset statistics",
    "corrections": "Annotator corrections",
    "rejects": "Rejects by stage",
    "evaluation": "Evaluations",
    "problems": "Problems",
}

_CSS = """
body{font-family:-apple-system,"Segoe UI",Roboto,"DejaVu Sans",Helvetica,Arial,sans-serif;font-size:15px;
line-height:1.5;color:#222;background:#f6f7f9;margin:0}
main{max-width:1180px;margin:0 auto;padding:24px 28px 48px}
h1{font-size:26px;margin:0 0 4px}h2{font-size:20px;margin:36px 0 12px;padding-bottom:6px;border-bottom:2px solid #4C78A8}
h3{font-size:16px;margin:20px 0 8px}.sub{color:#666;margin:0 0 20px}
.cards{display:flex;flex-wrap:wrap;gap:14px}.card{background:#fff;border-radius:8px;padding:14px 18px;min-width:190px;
flex:1;box-shadow:0 1px 3px rgba(0,0,0,.08)}.card .k{color:#666;font-size:13px;text-transform:uppercase;letter-spacing:.04em}
.card .v{font-size:26px;font-weight:600;color:#1F4E79}.card .d{color:#555;font-size:13px}
table{border-collapse:collapse;background:#fff;margin:8px 0 16px;box-shadow:0 1px 3px rgba(0,0,0,.08);font-size:14px}
th,td{padding:6px 12px;border-bottom:1px solid #eee;text-align:left}td:first-child{white-space:nowrap}th{background:#eef2f7;font-weight:600}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}tr:nth-child(even) td{background:#fafbfc}
.charts{display:flex;flex-wrap:wrap;gap:14px}figure{margin:0;background:#fff;border-radius:8px;padding:8px;
box-shadow:0 1px 3px rgba(0,0,0,.08)}figure img{display:block;max-width:100%;height:auto}
.empty{color:#666;font-style:italic}.problems li{color:#A33}code{background:#eef2f7;padding:1px 4px;border-radius:3px}
"""


def _e(value: Any) -> str:
    return html.escape(str(value), quote=True)


def _number(value: Any) -> str:
    if isinstance(value, float) and not value.is_integer():
        return f"{value:.3f}"
    return f"{int(value):,}" if _is_number(value) else _e(value)


def _percent(value: float | None) -> str:
    return "–" if value is None else f"{value:.1%}"


def _table(headers: Sequence[str], rows: Iterable[Sequence[Any]], numeric_from: int = 1) -> str:
    head = "".join(f'<th class="n">{_e(h)}</th>' if i >= numeric_from else f"<th>{_e(h)}</th>"
                   for i, h in enumerate(headers))
    body = "".join("<tr>" + "".join(f'<td class="n">{cell}</td>' if i >= numeric_from else f"<td>{cell}</td>"
                                    for i, cell in enumerate(row)) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _figures(charts: Sequence[Chart]) -> str:
    if not charts:
        return ""
    items = "".join(
        f'<figure><img alt="{_e(c.title)}" src="data:image/png;base64,{base64.b64encode(c.png).decode("ascii")}">'
        f"</figure>" for c in charts)
    return f'<div class="charts">{items}</div>'


def _card(key: str, value: str, detail: str = "") -> str:
    return f'<div class="card"><div class="k">{_e(key)}</div><div class="v">{_e(value)}</div>' \
           f'<div class="d">{_e(detail)}</div></div>'


def _summary_html(report: ReportData) -> str:
    h = report.headline
    splits = ", ".join(f"{name} {rows:,}" for name, rows in h.splits.items())
    cards = [
        _card("Samples", "–" if h.samples is None else f"{h.samples:,}",
              report.dataset.source if report.dataset else "no stage output yet"),
        _card("Splits", str(len(h.splits)) if h.splits else "–", splits or "not exported yet"),
        _card("Filter pass rate", _percent(h.filter_pass_rate),
              f"{h.filter_passed:,} of {h.filter_total:,} kept" if h.filter_total is not None else "filter not run yet"),
        _card("Best model", h.best_model or "–",
              f"success rate {_percent(h.best_success_rate)}" if h.best_model else "no evaluation run yet"),
    ]
    return f'<div class="cards">{"".join(cards)}</div>'


def _dataset_html(dataset: DatasetSection | None, charts: Sequence[Chart]) -> str:
    if dataset is None:
        return '<p class="empty">No stage output yet: no dataset statistics.</p>'
    stats = dataset.stats
    rows = [tuple(_e(cell) for cell in row) for row in table_rows(stats)]
    parts = [f"<p>Measured on <code>{_e(dataset.source)}</code>: {stats.samples:,} samples"
             + (f", {stats.rejected:,} unreadable lines" if stats.rejected else "") + ".</p>",
             "<h3>Per domain</h3>", _table(TABLE_COLUMNS, rows),
             "<ul>" + "".join(f"<li>{_e(line)}</li>" for line in hardness_lines(stats)) + "</ul>"]
    distributions = [(f"context tokens ({stats.encoding})", stats.context_histogram), ("difficulty", stats.difficulty)]
    if stats.published_difficulty:
        distributions.append(("published difficulty", stats.published_difficulty))
    distributions += [("steps", dataset.steps), ("nesting depth", stats.nesting_depth),
                      ("dependencies", stats.dependencies)]
    parts.append(_figures(charts))
    # One line per distribution ("value: samples"): a row per value made the table pages long.
    parts.append("<h3>Distributions</h3>")
    parts.append(_table(("distribution", "samples per value"),
                        [(_e(name), _e(" · ".join(f"{k}: {v:,}" for k, v in dist.items()) or "–"))
                         for name, dist in distributions], numeric_from=2))
    return "".join(parts)


def _corrections_html(corrections: CorrectionsSection | None, charts: Sequence[Chart]) -> str:
    if corrections is None:
        return f'<p class="empty">No annotation QA yet ({QA_FILE} not found).</p>'
    parts = [f"<p>From <code>{_e(corrections.source)}</code>.</p>",
             _table(("correction", "count"), [(_e(k.replace("_", " ")), _number(v))
                                              for k, v in corrections.figures.items()])]
    for name, breakdown in corrections.breakdowns.items():
        parts.append(f"<h3>{_e(name.replace('_', ' ').capitalize())}</h3>")
        parts.append(_table(("key", "count"), [(_e(k), _number(v)) for k, v in breakdown.items()]))
    parts.append(_figures(charts))
    return "".join(parts)


def _rejects_html(stages: Sequence[StageRejects], charts: Sequence[Chart]) -> str:
    if not stages:
        return '<p class="empty">No stage has written a rejects or summary file yet.</p>'
    rows = []
    for stage in stages:
        counts = ", ".join(f"{k.replace('_', ' ')} {_number(v)}" for k, v in (stage.summary_counts or {}).items())
        rows.append((_e(stage.stage), _e(counts or "–"), _number(stage.total)))
    parts = [_table(("stage", "outcomes (from the summary)", "rejects"), rows, numeric_from=2)]
    reason_rows = [(_e(s.stage), _e(reason), _number(n)) for s in stages for reason, n in s.reasons.items()]
    if reason_rows:
        parts += ["<h3>Rejects by reason</h3>", _table(("stage", "reason", "rejects"), reason_rows, numeric_from=2)]
    else:
        parts.append('<p class="empty">No rejects in any stage.</p>')
    parts.append(_figures(charts))
    return "".join(parts)


def _out_of_two(value: float | None) -> str:
    """ComplexEval's completeness and correctness are mean scores on a 0-2 scale, not shares."""
    return "-" if value is None else f"{value:.2f} / 2"


def _judges_note(evaluations: Sequence[ModelScores]) -> str:
    lines = []
    for scores in evaluations:
        judges = scores.judges
        if not judges:
            who = "judges not recorded (an evaluation from before judges were recorded)"
        elif judges.get("rule_based"):
            who = (f"rule-based stand-ins ({_e(judges.get('completeness', '?'))}, {_e(judges.get('correctness', '?'))}), "
                   f"not LLM judges: no LLM judge was configured")
        else:
            who = f"{_e(judges.get('completeness', '?'))} (completeness), {_e(judges.get('correctness', '?'))} (correctness)"
        lines.append(f"<p class=\"note\">{_e(scores.model)}: completeness and correctness judged by {who}.</p>")
    return "".join(lines)


def _evaluation_html(evaluations: Sequence[ModelScores], charts: Sequence[Chart]) -> str:
    if not evaluations:
        return '<p class="empty">No evaluation run yet.</p>'
    kinds = list(dict.fromkeys(k for s in evaluations for k in s.errors))
    rows = [(_e(s.model), _number(s.n), _percent(s.success_rate), _percent(s.call_accuracy),
             _out_of_two(s.completeness), _out_of_two(s.correctness), *(_number(s.errors.get(k, 0)) for k in kinds))
            for s in evaluations]
    headers = ("model", "samples", "success", "call accuracy", "completeness (0-2)", "correctness (0-2)",
               *(kind.replace("_", " ") for kind in kinds))
    parts = [_judges_note(evaluations), _table(headers, rows)]
    types = list(dict.fromkeys(t for s in evaluations for t in s.param_type_error_rate))
    if types:
        parts += ["<h3>Error rate per parameter type</h3>",
                  _table(("model", *types), [(_e(s.model), *(_percent(s.param_type_error_rate.get(t))
                                                              for t in types)) for s in evaluations])]
    domain_rows = [(_e(s.model), _e(d), _number(f.get("n", 0)), _percent(f.get("success_rate")),
                    _percent(f.get("call_accuracy"))) for s in evaluations for d, f in s.by_domain.items()]
    if domain_rows:
        parts += ["<h3>Per domain</h3>", _table(("model", "domain", "samples", "success", "call accuracy"),
                                                domain_rows, numeric_from=2)]
    parts.append(_figures(charts))
    return "".join(parts)


def _problems_html(problems: Sequence[str]) -> str:
    if not problems:
        return '<p class="empty">No problems found in the stage files.</p>'
    return '<ul class="problems">' + "".join(f"<li>{_e(p)}</li>" for p in problems) + "</ul>"


def _conversations_html(statistics: Mapping[str, Any]) -> str:
    """A conversational build's figures per split: conversations, turns, calls, APIs per turn,
    dialog acts and complexities (what export/statistics.json holds)."""
    columns = [("overall", statistics.get("overall") or {}), *(statistics.get("splits") or {}).items()]
    figures = ["conversations", "user_turns", "agent_turns", "avg_turns", "function_calling_turns", "calls",
               "avg_calls_per_turn", "avg_apis_per_turn"]
    rows = [[_e(name.replace("_", " ")), *[_number(stats.get(name)) for _, stats in columns]] for name in figures]
    acts = sorted({act for _, stats in columns for act in (stats.get("dialog_acts") or {})})
    kinds = sorted({kind for _, stats in columns for kind in (stats.get("complexities") or {})})
    rows += [[f"dialog act <code>{_e(act)}</code>", *[_number((stats.get("dialog_acts") or {}).get(act, 0))
                                                    for _, stats in columns]] for act in acts]
    rows += [[f"complexity {_e(kind)}", *[_number((stats.get("complexities") or {}).get(kind, 0)) for _, stats in columns]]
             for kind in kinds]
    return _table(["", *[name for name, _ in columns]], rows)


def _paper_tables_html(tables: Sequence[Mapping[str, Any]]) -> str:
    """Each table as its paper prints it: a header row of column groups (spanning their columns),
    a header row of column names, a row per model; then its notes."""
    parts = []
    for table in tables:
        columns = table["columns"]
        groups: list[tuple[str, int]] = []
        for column in columns:
            if groups and groups[-1][0] == column["group"]:
                groups[-1] = (column["group"], groups[-1][1] + 1)
            else:
                groups.append((column["group"], 1))
        group_row = "".join(f'<th class="n" colspan="{span}">{_e(group)}</th>' for group, span in groups) \
            if any(group for group, _ in groups) else ""
        head = (f'<tr><th rowspan="2">model</th>{group_row}</tr><tr>' if group_row else "<tr><th>model</th>") + \
            "".join(f'<th class="n">{_e(c["name"])}</th>' for c in columns) + "</tr>"
        body = "".join("<tr><td>" + _e(row.get("model", "?")) + "</td>" + "".join(
            f'<td class="n">{_e(cell)}</td>' for cell in row["cells"]) + "</tr>" for row in table["rows"])
        notes = "".join(f'<p class="note">{_e(note)}</p>' for note in table.get("notes", []))
        parts.append(f"<h3>{_e(table['title'])}</h3><table><thead>{head}</thead><tbody>{body}</tbody></table>{notes}")
    return "".join(parts)


def render_html(report: ReportData, charts: Sequence[Chart]) -> str:
    by_section = {name: [c for c in charts if c.section == name] for name in SECTIONS}
    bodies = {
        "summary": _summary_html(report),
        "dataset": _dataset_html(report.dataset, by_section["dataset"]),
        "corrections": _corrections_html(report.corrections, by_section["corrections"]),
        "rejects": _rejects_html(report.stages, by_section["rejects"]),
        "evaluation": _evaluation_html(report.evaluations, by_section["evaluation"]),
        "problems": _problems_html(report.problems),
    }
    sections = "".join(f'<section id="{key}"><h2>{_e(title)}</h2>{bodies[key]}</section>'
                       for key, title in SECTIONS.items())
    if report.paper_tables:  # after the evaluations, before the problems
        papers = (f'<section id="papers"><h2>Results in the papers\' layouts</h2>'
                  f"{_paper_tables_html(report.paper_tables)}</section>")
        sections = sections.replace('<section id="problems">', papers + '<section id="problems">', 1)
    if report.conversations:
        sections = (f'<section id="conversations"><h2>Conversations (CONFETTI Table 2/3)</h2>'
                    f"{_conversations_html(report.conversations)}</section>") + sections
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            f"<title>QA report: {_e(report.title)}</title><style>{_CSS}</style></head><body><main>"
            f"<h1>QA report: {_e(report.title)}</h1><p class=\"sub\">fcbench build report</p>"
            f"{sections}</main></body></html>\n")


# --------------------------------------------------------------------------------------- writing
@dataclass(frozen=True)
class ReportFiles:
    html: Path
    json: Path
    report: ReportData
    images: int


def write_report(build_dir: Path, title: str | None = None) -> ReportFiles:
    """Write `<build>/report.html` and `<build>/report.json` (atomically) and return them."""
    report = read_build(build_dir, title)
    charts = render_charts(report)
    build_dir.mkdir(parents=True, exist_ok=True)
    html_path, json_path = build_dir / REPORT_HTML, build_dir / REPORT_JSON
    write_text(html_path, render_html(report, charts))
    write_json(json_path, report.as_dict(), indent=2)
    return ReportFiles(html_path, json_path, report, len(charts))


def run(ctx: PipelineContext, settings: Any = None) -> StageSummary:
    """The stage contract (fcbench.stage): the QA report of whatever the build folder holds."""
    files = write_report(ctx.build_dir, title=ctx.config.name)
    return StageSummary("report", outputs={"report": str(files.html), "report_json": str(files.json)}, report=files)
