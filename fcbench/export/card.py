"""The dataset card (`README.md` of a Hugging Face dataset), rendered from a run's records (pure).

The YAML front matter is what the Hub and `datasets` read: `configs` maps each split to its
Parquet files, `dataset_info.features` declares the columns exactly as the Parquet schema types
them, and license / task_categories / tags / size_categories make the dataset findable. The body
says how the data was built (from the samples' provenance and the stage summaries), what it looks
like (fcbench.stats.tables) and what is known to be imperfect (grounding notes, rejects by reason,
what the format copies could not hold). Nothing in it depends on the clock or on absolute paths,
so the same run renders the same bytes. Every value that comes from the samples (domains, models,
prompt files, stage and reason names read from summary files, format warnings naming tools) is
shown as literal text unless it is a plain word (fcbench.export.markdown): a sample cannot inject
Markdown or HTML into the card.
The pipeline's own description and license, written by its owner in pipelines.yaml, are Markdown.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Mapping

import pyarrow as pa
import yaml

from fcbench.export.markdown import data_text, literal, table_cell
from fcbench.export.handcheck import HOW_MEASURED, HandCheckSummary
from fcbench.sample import Provenance
from fcbench.stats.tables import TABLE_COLUMNS, DatasetStats, hardness_lines, table_rows

# Hugging Face's size_categories buckets: (exclusive upper bound, label).
_SIZE_BUCKETS = [(1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"),
                 (10_000_000, "1M<n<10M"), (100_000_000, "10M<n<100M"), (1_000_000_000, "100M<n<1B")]

_ARROW_DTYPES = {pa.string(): "string", pa.int32(): "int32", pa.int64(): "int64", pa.bool_(): "bool",
                 pa.float64(): "float64"}


@dataclass
class ProvenanceTally:
    """What the samples' provenance says about how they were made, counted while streaming."""

    stages: Counter[str] = field(default_factory=Counter)
    source_formats: Counter[str] = field(default_factory=Counter)
    models: Counter[str] = field(default_factory=Counter)
    prompts: Counter[str] = field(default_factory=Counter)  # "file (sha256 prefix)"
    seeds: Counter[int] = field(default_factory=Counter)
    annotators: set[str] = field(default_factory=set)
    annotated: int = 0
    label_studio_tasks: int = 0
    variants: int = 0  # samples with a parent template
    templates: set[str] = field(default_factory=set)

    def add(self, provenance: Provenance, template: str) -> None:
        if provenance.stage:
            self.stages[provenance.stage] += 1
        if provenance.source_format:
            self.source_formats[provenance.source_format] += 1
        if provenance.model:
            self.models[provenance.model] += 1
        if provenance.prompt_file or provenance.prompt_hash:
            digest = f" ({provenance.prompt_hash[:12]})" if provenance.prompt_hash else ""
            self.prompts[f"{provenance.prompt_file or '(inline)'}{digest}"] += 1
        if provenance.seed is not None:
            self.seeds[provenance.seed] += 1
        if provenance.annotator:
            self.annotators.add(provenance.annotator)
            self.annotated += 1
        if provenance.label_studio_task_id is not None:
            self.label_studio_tasks += 1
        if provenance.parent_id:
            self.variants += 1
        self.templates.add(template)


@dataclass
class SplitInfo:
    name: str
    rows: int
    files: list[str]  # relative to the export folder, e.g. data/test-00000-of-00001.parquet
    num_bytes: int = 0  # uncompressed (Arrow) size
    file_bytes: int = 0  # Parquet files on disk


@dataclass
class CardInfo:
    name: str
    description: str
    license: str | None
    task_categories: list[str]
    tags: list[str]
    seed: int
    split_rule: str
    ratios: Mapping[str, float]
    schema: pa.Schema
    column_docs: Mapping[str, str]
    splits: list[SplitInfo]
    stats: DatasetStats
    provenance: ProvenanceTally
    stage_summaries: Mapping[str, Mapping[str, Any]]  # "filter" -> parsed filter.summary.json
    export_reasons: Mapping[str, int]
    format_warnings: list[str]
    handcheck: HandCheckSummary | None = None


# ------------------------------------------------------------------------------------ front matter
def feature_of(data_type: pa.DataType) -> dict[str, Any]:
    """The `datasets` YAML spelling of one Arrow type (`{"dtype": "int32"}`, `{"list": "string"}`)."""
    if pa.types.is_list(data_type) and data_type.value_type in _ARROW_DTYPES:
        return {"list": _ARROW_DTYPES[data_type.value_type]}
    if data_type in _ARROW_DTYPES:
        return {"dtype": _ARROW_DTYPES[data_type]}
    raise ValueError(f"no dataset-card spelling for Arrow type {data_type}")


def features_yaml(schema: pa.Schema) -> list[dict[str, Any]]:
    return [{"name": column.name, **feature_of(column.type)} for column in schema]


def size_category(rows: int) -> str:
    for bound, label in _SIZE_BUCKETS:
        if rows < bound:
            return label
    return "n>1T"


def split_glob(split: str) -> str:
    # The dash after the name keeps `test-*` from also matching a split named `test_hard`.
    return f"data/{split}-*"


def front_matter(info: CardInfo) -> dict[str, Any]:
    total = sum(split.rows for split in info.splits)
    matter: dict[str, Any] = {}
    if info.license:
        matter["license"] = info.license.lower()  # the Hub's license ids are lowercase (apache-2.0)
    matter["pretty_name"] = info.name
    matter["task_categories"] = list(info.task_categories)
    matter["tags"] = list(info.tags)
    matter["size_categories"] = [size_category(total)]
    matter["configs"] = [{
        "config_name": "default",
        "data_files": [{"split": split.name, "path": split_glob(split.name)} for split in info.splits],
    }]
    matter["dataset_info"] = {
        "features": features_yaml(info.schema),
        # `datasets` ignores a split entry lacking any of name / num_bytes / num_examples.
        "splits": [{"name": split.name, "num_bytes": split.num_bytes, "num_examples": split.rows}
                   for split in info.splits],
        "download_size": sum(split.file_bytes for split in info.splits),
        "dataset_size": sum(split.num_bytes for split in info.splits),
    }
    return matter


# -------------------------------------------------------------------------------------------- body
def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    """A GFM table; cells holding data must already be `data_text()` or `literal()` (numbers and
    fcbench's own words are written as they are)."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(table_cell(cell) for cell in row) + " |" for row in rows]
    return lines + [""]


def _counter_table(title: str, counts: Mapping[Any, int], none_text: str, unit: str = "samples") -> list[str]:
    """Counts by a name that comes from the data (`data_text`: a plain word as is, else literally)."""
    if not counts:
        return [f"{none_text}", ""]
    ordered = sorted(counts.items(), key=lambda item: (-item[1], str(item[0])))
    return _table([title, unit], [[data_text(key), n] for key, n in ordered])


def _split_rule_text(info: CardInfo) -> str:
    ratios = ", ".join(f"{name} {ratio:g}" for name, ratio in info.ratios.items())
    if info.split_rule == "ratio":
        return (f"Samples are assigned by ratio ({ratios}) from a hash of (seed {info.seed}, sample id): "
                "a sample's split never changes when others are added. **Variants of one template may be "
                "in different splits** (`split: ratio` was chosen over the default `split: template`): a "
                "model may have seen a test item's template during training.")
    if info.split_rule == "template":
        return (f"Samples are assigned by ratio ({ratios}) from a hash of (seed {info.seed}, template id), the "
                "template id being `provenance.parent_id` or the sample's own id: all variants of one "
                "template are in the same split.")
    return "One split per domain (a sample spanning several domains is in `cross_domain`)."


def _structure_section(info: CardInfo) -> list[str]:
    lines = ["## Dataset structure", "",
             "One row per benchmark item. Nested values whose shape varies from item to item (messages, "
             "tool specs, call arguments and responses) are JSON strings, so every split and shard has the "
             "same Parquet schema; `fcbench.formats.parquet_rows.row_to_sample(row)` decodes a row back into the "
             "canonical fcbench sample.", ""]
    # `list<string>` as a code span: bare, `<string>` is an HTML tag and the type would show as "list"
    rows = [[f"`{column.name}`", literal(feature_of(column.type).get("dtype") or f"list<{feature_of(column.type)['list']}>"),
             info.column_docs.get(column.name, "")] for column in info.schema]
    lines += _table(["column", "type", "content"], rows)
    split = info.splits[0].name if info.splits else "test"
    lines += ["```python", "from datasets import load_dataset", "from fcbench.formats.parquet_rows import row_to_sample", "",
              f'rows = load_dataset("parquet", data_files={{"{split}": "{split_glob(split)}"}})["{split}"]',
              "sample = row_to_sample(rows[0])  # a validated fcbench Sample", "```", ""]
    return lines


def _splits_section(info: CardInfo) -> list[str]:
    lines = ["## Splits", "", _split_rule_text(info), ""]
    return lines + _table(["split", "rows", "shards"], [[data_text(s.name), s.rows, len(s.files)] for s in info.splits])


def _number_or_literal(value: Any) -> str:
    return str(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else data_text(value)


def _summary_counts(summary: Mapping[str, Any]) -> str:
    """A stage summary's counts, read from its file (`data_text` unless they are numbers)."""
    counts = summary.get("counts")
    if isinstance(counts, Mapping):
        return ", ".join(f"{data_text(str(key).replace('_', ' '))} {_number_or_literal(value)}"
                         for key, value in counts.items())
    return "-"


def _construction_section(info: CardInfo) -> list[str]:
    tally = info.provenance
    lines = ["## Construction", "",
             "Built with fcbench's staged pipeline: coarse generation (stage1), senior annotation in Label "
             "Studio (stage2), generalization into query variants (stage3), an execution-based filter, "
             "and this export. Counts below come from the samples' provenance and the stage summary files.", ""]
    if info.stage_summaries:
        lines += ["### Stage results", ""]
        lines += _table(["stage", "input", "outcome"],
                        [[data_text(stage), _number_or_literal(summary["total"]) if "total" in summary else "-",
                          _summary_counts(summary)]
                         for stage, summary in info.stage_summaries.items()])
    lines += ["### Provenance of the exported samples", ""]
    lines += _counter_table("stage", tally.stages, "No sample records the stage that made it.")
    lines += _counter_table("source format", tally.source_formats, "No sample was imported from a published format.")
    lines += _counter_table("model", tally.models, "No sample records an LLM (none was used, or it was not recorded).")
    lines += _counter_table("prompt (sha256)", tally.prompts, "No sample records a prompt file.")
    seeds = ", ".join(str(seed) for seed in sorted(tally.seeds)) or "none recorded"
    lines += [f"- Generation seeds: {seeds}; export seed: {info.seed}.",
              # Annotator ids may be personal (Label Studio logins): the card counts them, never names them.
              f"- Annotators: {len(tally.annotators)} distinct, {tally.annotated} samples annotated, "
              f"{tally.label_studio_tasks} samples linked to a Label Studio task.",
              f"- Templates: {len(tally.templates)}; variants generated from a template: {tally.variants}.", ""]
    return lines + _gold_section(info)


def _gold_section(info: CardInfo) -> list[str]:
    """Where the values come from and what the gold audit checked (filter.summary.json)."""
    filter_summary = info.stage_summaries.get("filter", {})
    audit, provenance = filter_summary.get("gold_audit"), filter_summary.get("provenance")
    if not isinstance(audit, Mapping):
        return []
    judge = audit.get("judge") or "none (no LLM configured: the rules only)"
    lines = ["### Gold audit", "",
             "Every argument value of a kept sample is tied to its source in `meta.provenance`: the words of "
             "the query that state it (a slot), a rule over those words (a derivation: a date and \"a week\", "
             "\"a group of four\", \"euros\"), a reference to an earlier response, or a declared default. The "
             f"filter checks each value at its words and audits each path (mode `{audit.get('mode')}`, rules: "
             f"{', '.join(str(rule) for rule in audit.get('rules') or [])}; LLM judge: {judge}): "
             f"{audit.get('rejected', 0)} of {audit.get('checked', 0)} candidates checked were rejected.", ""]
    lines += _counter_table("gold audit reject", audit.get("rejected_by_reason") or {}, "No candidate was rejected by the audit.")
    if isinstance(provenance, Mapping) and provenance.get("values_by_kind"):
        lines += [f"Argument values of the {provenance.get('samples', 0)} kept samples by source "
                  f"({provenance.get('recorded', 0)} maps recorded by stage2 and stage3, the others inferred by the "
                  "filter):", ""]
        lines += _counter_table("source", provenance["values_by_kind"], "", unit="values")
    return lines + handcheck_lines(info.handcheck)


def handcheck_lines(check: HandCheckSummary | None) -> list[str]:
    """The error rate measured by hand on the held-out part of the hand-checked samples."""
    if check is None:
        return []
    rate = check.error_rate
    said = (f"**{check.held_out_problems} of {check.held_out} held-out samples ({100 * rate:.1f} %) have a problem**"
            if rate is not None else "no held-out sample of this build was checked: no rate is stated")
    return ["### Measured error rate", "",
            f"Hand-checked samples of this build: {check.checked} ({check.problems} with a problem), of which "
            f"{check.held_out} held out; {said}. How: {HOW_MEASURED}. The verdicts: `{check.source}`.", ""]


def _statistics_section(stats: DatasetStats) -> list[str]:
    lines = ["## Statistics", ""]
    # the first column is the samples' domain: data; the others are figures fcbench formats
    lines += _table(list(TABLE_COLUMNS), [[data_text(row[0]), *row[1:]] for row in table_rows(stats)])
    lines += [f"- {line}" for line in hardness_lines(stats)] + [""]
    lines += _table([f"context tokens ({stats.encoding})", "samples"], [[k, v] for k, v in stats.context_histogram.items()])
    lines += _table(["difficulty (from the gold path)", "samples"], [[k, v] for k, v in stats.difficulty.items()])
    if stats.published_difficulty:  # the labels the source files gave: data
        lines += _table(["difficulty (as published)", "samples"],
                        [[data_text(k), v] for k, v in stats.published_difficulty.items()])
    lines += _table(["nesting depth", "samples"], [[k, v] for k, v in stats.nesting_depth.items()])
    lines += _table(["dependencies", "samples"], [[k, v] for k, v in stats.dependencies.items()])
    return lines


def _limitations_section(info: CardInfo) -> list[str]:
    lines = ["## Known limitations", ""]
    filter_summary = info.stage_summaries.get("filter", {})
    grounding = filter_summary.get("grounding_reported")
    if grounding:
        lines += [f"- {_number_or_literal(grounding)} samples kept by the filter have argument values not found in "
                  "the query or earlier responses (grounding notes in filter.summary.json).", ""]
    filter_reasons = filter_summary.get("reasons") or {}
    if filter_reasons:
        lines += ["Candidates rejected by the filter, by reason:", ""]
        lines += _counter_table("reason", filter_reasons, "")
    if info.export_reasons:
        lines += ["Lines of the validated file that could not be exported, by reason:", ""]
        lines += _counter_table("reason", info.export_reasons, "")
    if info.format_warnings:  # they name the samples' tools and ids: shown literally
        lines += ["What the copies in other formats could not hold:", ""]
        lines += [f"- {literal(warning)}" for warning in info.format_warnings] + [""]
    if len(lines) == 2:
        lines += ["None recorded by the pipeline.", ""]
    return lines


def render_card(info: CardInfo) -> str:
    header = yaml.safe_dump(front_matter(info), sort_keys=False, allow_unicode=True, width=1000)
    body = [f"# {info.name}", ""]
    if info.description:
        body += [info.description.strip(), ""]
    body += _structure_section(info)
    body += _splits_section(info)
    body += _construction_section(info)
    body += _statistics_section(info.stats)
    body += _limitations_section(info)
    body += ["## License", "", info.license or "No license declared in pipelines.yaml.", ""]
    return "---\n" + header + "---\n\n" + "\n".join(body)


def read_front_matter(text: str) -> dict[str, Any]:
    """The YAML between the leading `---` lines of a card (for tests and tools reading a card)."""
    if not text.startswith("---\n"):
        raise ValueError("no YAML front matter")
    end = text.index("\n---\n", 4)
    return yaml.safe_load(text[4:end])
