"""`build-dataset export PIPELINE` for `kind: conversation` pipelines: the validated conversations cut
into CONFETTI's two turn-level sets, written as Parquet splits in Hugging Face layout, split by
conversation (every turn of one conversation lands in the same split), with a dataset card.

Layout under `<build>/export/`:

    function_calling/<split>-00000-of-00001.parquet    history -> calls (one row per calling turn)
    response_quality/<split>-00000-of-00001.parquet    history -> dialog acts (one row per agent turn)
    README.md            card: two configs, construction, Table 2/3-style statistics
    statistics.json      the same statistics, per split and overall
    <format>/<set>/<split>.<ext>   the copies listed in stages.export.formats (fcbench, confetti)

The response-quality set may be capped per dialog act for label balance
(`stages.export.max_per_dialog_act`, per split; off by default, as the published CONFETTI set,
whose every agent turn is a row): the turns left out are counted per act, before and after, in
statistics.json and the card.

Both sets use the canonical Parquet schema (`fcbench.formats.parquet_rows`), so `row_to_sample` reads them back.
Splits: `stages.export.ratios` over a seeded hash of the conversation id (`split: domain` groups by
domain instead). The export is built in a work folder and swapped in whole; the same input and
seed give byte-identical files.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import yaml

from fcbench.runtime.progress import counted, lines_in
from fcbench.config import PipelineConfig
from fcbench.stage import VALIDATED
from fcbench.conversation import (CHAIN_BINS, CONFETTI_TYPES, DIALOG_ACT_TITLES, DIALOG_ACTS, RESPONSE_QUALITY, SETS,
                                  ConversationError, calls_from_messages, cap_per_dialog_act, conversation_stats,
                                  is_conversation, turn_level_samples)
from fcbench.errors import UserError
from fcbench.formats import FormatError, read_samples, write_samples
from fcbench.jsonl import write_json, write_json_lines
from fcbench.runtime.output_guard import guard_counts
from fcbench.formats.parquet_rows import sample_to_row
from fcbench.export.parquet import export_work_dir, swap_in, write_split
from fcbench.sample import Sample
from fcbench.export.splits import domain_split_name, split_for_key
from fcbench.stage import PipelineContext, StageSummary, input_of

COPY_FORMATS = {"fcbench": "jsonl", "confetti": "json"}
SET_TITLES = {"function_calling": "function-calling set (history up to a calling turn -> its calls)",
              "response_quality": "response-quality set (history up to an agent turn -> its dialog acts)"}


@dataclass
class ConversationExportSummary:
    input: str
    total: int = 0
    exported: int = 0  # conversations
    reasons: dict[str, int] = field(default_factory=dict)
    splits: dict[str, dict[str, Any]] = field(default_factory=dict)  # split -> rows per set, conversations
    statistics: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    outputs: dict[str, str] = field(default_factory=dict)
    replaced: dict[str, Any] = field(default_factory=dict)  # what became of the previous export (output_guard)

    @property
    def rejected(self) -> int:
        return sum(self.reasons.values())

    def as_dict(self) -> dict[str, Any]:
        return {"input": self.input, "kind": "conversation", "total": self.total, "output_guard": self.replaced,
                "counts": {"exported": self.exported, "rejected": self.rejected}, "reasons": self.reasons,
                "splits": self.splits, "statistics": self.statistics, "warnings": self.warnings,
                "outputs": self.outputs}


def conversation_split(conversation: Sample, rule: str, seed: int, ratios: Mapping[str, float]) -> str:
    if rule == "domain":
        return domain_split_name(conversation)
    return split_for_key(conversation.id, seed, ratios)


def previous_conversations(export_dir: Path) -> int | None:
    """Conversations of the export in place (its statistics.json), None when there is none."""
    try:
        return int(json.loads((export_dir / "statistics.json").read_text(encoding="utf-8"))["overall"]["conversations"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def export_conversations(source: Path, build_dir: Path, pipeline: PipelineConfig,
                         force: bool = False) -> ConversationExportSummary:
    """A result smaller than `min_output_share` of the export in place keeps that export: the new
    one goes to `export.new/` (with `export.summary.new.json`) and OutputKept is raised, unless `force`."""
    settings = pipeline.stages.export
    if not source.is_file():
        raise UserError(f"{source}: no such file (the export reads the filter's validated.jsonl; run the filter)")
    unknown = [fmt for fmt in settings.formats if fmt != "parquet" and fmt not in COPY_FORMATS]
    if unknown:
        raise UserError(f"stages.export.formats: a conversational export writes parquet, "
                        f"{', '.join(COPY_FORMATS)}; not {unknown[0]!r}")
    summary = ConversationExportSummary(str(source))
    rejects: list[dict[str, Any]] = []
    by_split: dict[str, list[Sample]] = {}
    for item in counted(read_samples(source, "fcbench"), "export conversations", lines_in(source)):
        summary.total += 1
        if not isinstance(item, Sample):
            rejects.append({"id": None, "reason": "unreadable", "detail": f"{item.source}: {item.reason}"})
            continue
        if not is_conversation(item):
            rejects.append({"id": item.id, "reason": "not_a_conversation", "detail": "no meta.conversation.scenario"})
            continue
        try:  # the turn-level cut needs messages and calls that agree (the filter checks it; --input may not)
            if turn_level_samples(item) and item.calls != calls_from_messages(item.messages):
                raise ConversationError("its calls are not the ones its messages make")
        except (ConversationError, KeyError, TypeError) as exc:
            rejects.append({"id": item.id, "reason": "bad_conversation", "detail": str(exc)})
            continue
        split = conversation_split(item, settings.split, pipeline.seed, settings.ratios)
        by_split.setdefault(split, []).append(item)
    summary.reasons = dict(sorted(Counter(reject["reason"] for reject in rejects).items()))
    summary.exported = sum(len(conversations) for conversations in by_split.values())
    if not summary.exported:
        write_json_lines(build_dir / "export.rejects.jsonl", rejects)
        raise UserError(f"{source}: no conversation could be exported ({len(rejects)} rejected)")
    order = [name for name in settings.ratios if name in by_split] + sorted(set(by_split) - set(settings.ratios))
    work = export_work_dir(build_dir)
    try:
        statistics: dict[str, Any] = {"overall": conversation_stats(c for s in order for c in by_split[s]), "splits": {}}
        cap = settings.max_per_dialog_act
        capping: dict[str, Any] = {"max_per_dialog_act": cap, "splits": {}}
        for split in order:
            conversations = by_split[split]
            cut = [turn_level_samples(conversation) for conversation in conversations]
            info: dict[str, Any] = {"conversations": len(conversations)}
            for set_name in SETS:
                samples = [sample for sets in cut for sample in sets[set_name]]
                if set_name == RESPONSE_QUALITY:
                    kept, dropped = cap_per_dialog_act(samples, cap, pipeline.seed)
                    capping["splits"][split] = {"rows_before": len(samples), "rows_after": len(kept),
                                                "dialog_acts_before": _act_counts(samples),
                                                "dialog_acts_after": _act_counts(kept), "left_out": len(dropped)}
                    samples = kept
                written = write_split((sample_to_row(sample) for sample in samples), split, work / set_name,
                                      settings.shard_rows, settings.shard_bytes)
                info[set_name] = {"rows": written.rows, "shards": len(written.paths)}
                for fmt in settings.formats:
                    if fmt in COPY_FORMATS:
                        target = work / fmt / set_name / f"{split}.{COPY_FORMATS[fmt]}"
                        target.parent.mkdir(parents=True, exist_ok=True)
                        try:
                            for warning in write_samples(samples, target, fmt):
                                summary.warnings.append(f"{fmt} {set_name} {split}: {warning}")
                        except FormatError as exc:
                            summary.warnings.append(f"{fmt} {set_name} {split}: not written: {exc}")
            summary.splits[split] = info
            statistics["splits"][split] = conversation_stats(conversations)
        capping["overall"] = {key: sum(split[key] for split in capping["splits"].values())
                              for key in ("rows_before", "rows_after", "left_out")}
        for key in ("dialog_acts_before", "dialog_acts_after"):
            capping["overall"][key] = {act: sum(split[key].get(act, 0) for split in capping["splits"].values())
                                       for act in DIALOG_ACTS}
        statistics["response_quality_cap"] = capping
        summary.statistics = statistics
        write_json(work / "statistics.json", statistics, indent=2)
        (work / "README.md").write_text(render_conversation_card(pipeline, summary), encoding="utf-8")
        guarded = guard_counts(build_dir / "export", summary.exported, previous_conversations(build_dir / "export"),
                               force=force, min_share=pipeline.min_output_share)
        summary.replaced = guarded.summary()
        export_dir = guarded.path(build_dir / "export")
        swap_in(work, export_dir)
    finally:
        if work.exists():
            shutil.rmtree(work)
    rejects_file, summary_file = guarded.path(build_dir / "export.rejects.jsonl"), guarded.path(build_dir / "export.summary.json")
    write_json_lines(rejects_file, rejects)
    summary.outputs = {"export": str(export_dir), "card": str(export_dir / "README.md"),
                       "statistics": str(export_dir / "statistics.json"), "rejects": str(rejects_file),
                       "summary": str(summary_file)}
    write_json(summary_file, summary.as_dict(), indent=2)
    guarded.finish()
    return summary


def _act_counts(samples: list[Sample]) -> dict[str, int]:
    """Response-quality rows carrying each dialog act (a row may carry several)."""
    counts = Counter(act for sample in samples for act in sample.dialog_acts or [])
    return {act: counts[act] for act in DIALOG_ACTS}


def run_conversation_export(pipeline: PipelineConfig, input_file: Path | None = None,
                            force: bool = False) -> ConversationExportSummary:
    return export_conversations(input_file or pipeline.build_dir / VALIDATED, pipeline.build_dir, pipeline, force)


# ------------------------------------------------------------------------------------------- card
def _table(header: list[str], rows: list[list[Any]]) -> list[str]:
    return ["| " + " | ".join(header) + " |", "|" + "---|" * len(header),
            *("| " + " | ".join(str(cell) for cell in row) + " |" for row in rows)]


def statistics_tables(statistics: Mapping[str, Any]) -> list[str]:
    """CONFETTI's Table 2 (conversations, turns, calls, APIs per turn) and Table 3 (dialog acts)."""
    columns = [("overall", statistics["overall"]), *statistics["splits"].items()]
    figures = [("conversations", "conversations"), ("user turns", "user_turns"), ("agent turns", "agent_turns"),
               ("avg. turns per conversation", "avg_turns"), ("avg. user turns per conversation", "avg_user_turns"),
               ("function-calling turns", "function_calling_turns"), ("calls", "calls"),
               ("avg. calls per calling turn", "avg_calls_per_turn"), ("avg. APIs available per turn", "avg_apis_per_turn")]
    lines = ["### Conversations (CONFETTI Table 2)", ""]
    lines += _table(["", *[name for name, _ in columns]], [[title, *[stats[key] for _, stats in columns]]
                                                           for title, key in figures])
    lines += ["", "### Dialog acts of agent turns (CONFETTI Table 3)", ""]
    lines += _table(["dialog act", "name in the data", *[name for name, _ in columns]],
                    [[DIALOG_ACT_TITLES[act], f"`{act}`", *[stats["dialog_acts"].get(act, 0) for _, stats in columns]]
                     for act in DIALOG_ACTS])
    lines += ["", "### Calls per calling agent turn (CONFETTI's chain lengths: 1 / 2 / 3 / 4+)", ""]
    lines += _table(["calls in the turn", *[name for name, _ in columns]],
                    [[bin_, *[stats.get("chain_lengths", {}).get(bin_, 0) for _, stats in columns]] for bin_ in CHAIN_BINS])
    complexities = sorted({name for _, stats in columns for name in stats["complexities"]})
    if complexities:
        lines += ["", "### Conversation types (CONFETTI complexities, tagged by annotators)", "",
                  "Dialogs per type as the annotators ticked them, next to CONFETTI's README table (109 dialogs).", ""]
        known = [name for name in CONFETTI_TYPES if name in complexities] + [n for n in complexities if n not in CONFETTI_TYPES]
        lines += _table(["type", "CONFETTI name", *[name for name, _ in columns], "CONFETTI # dialogs"],
                        [[name, f"`{CONFETTI_TYPES[name].confetti_name}`" if name in CONFETTI_TYPES else "",
                          *[stats["complexities"].get(name, 0) for _, stats in columns],
                          CONFETTI_TYPES[name].published_dialogs if name in CONFETTI_TYPES else ""] for name in known])
    return lines


def cap_lines(statistics: Mapping[str, Any]) -> list[str]:
    """The card's account of the dialog-act cap: the setting, and the rows per act before and after."""
    capping = statistics.get("response_quality_cap") or {}
    cap = capping.get("max_per_dialog_act")
    overall = capping.get("overall") or {}
    if cap is None:
        lines = ["No cap (`stages.export.max_per_dialog_act` is off): every agent turn is a row of the "
                 "response-quality set, as in the published CONFETTI set (463 rows, every agent turn of its 109 dialogs)."]
    else:
        lines = [f"At most {cap} response-quality rows per dialog act in each split (`stages.export.max_per_dialog_act`), "
                 f"for label balance: {overall.get('left_out', 0)} of {overall.get('rows_before', 0)} agent turns left out "
                 "(a turn with several acts is kept only while each of its acts is under the cap; rarest acts first). "
                 "The published CONFETTI set has no such cap."]
    lines += ["", *_table(["dialog act", "rows before the cap", "rows exported"],
                          [[f"`{act}`", (overall.get("dialog_acts_before") or {}).get(act, 0),
                            (overall.get("dialog_acts_after") or {}).get(act, 0)] for act in DIALOG_ACTS])]
    return lines


def render_conversation_card(pipeline: PipelineConfig, summary: ConversationExportSummary) -> str:
    splits = list(summary.splits)
    matter: dict[str, Any] = {}
    if pipeline.license:
        matter["license"] = pipeline.license.lower()
    matter["pretty_name"] = pipeline.name
    matter["task_categories"] = list(pipeline.stages.export.task_categories)
    matter["tags"] = [*pipeline.stages.export.tags, "multi-turn", "conversational", "confetti"]
    matter["configs"] = [{"config_name": set_name,
                          "data_files": [{"split": split, "path": f"{set_name}/{split}-*"} for split in splits]}
                         for set_name in SETS]
    lines = ["---", yaml.safe_dump(matter, sort_keys=False, allow_unicode=True).rstrip(), "---", "",
             f"# {pipeline.name}", "", pipeline.description or "", "",
             "A conversational function-calling benchmark built by fcbench the way CONFETTI (Alkhouli et al.) was: "
             "scenarios seeded with required and optional APIs, a required conversation complexity, a reference time "
             "and a minimum number of user turns; conversations drafted against the tools' environment, authored and "
             "reviewed in Label Studio (turns, calls checked against the tools' schemas, dialog acts, complexities), "
             "re-executed call by call and checked for grounding turn by turn, then cut into turn-level samples.", "",
             "## Configurations", ""]
    for set_name in SETS:
        rows = ", ".join(f"{split}: {summary.splits[split][set_name]['rows']}" for split in splits)
        lines.append(f"- `{set_name}`: {SET_TITLES[set_name]}; rows {rows}")
    lines += ["", "```python", "from datasets import load_dataset",
              f'calls = load_dataset("parquet", data_files={{"{splits[0]}": "function_calling/{splits[0]}-*.parquet"}})',
              "```", "", "## Splits", "",
              f"By conversation (`{pipeline.stages.export.split}` rule, seed {pipeline.seed}): every turn of a "
              "conversation is in the same split, so no split sees another's history.", ""]
    lines += _table(["split", "conversations", *SETS], [[split, info["conversations"], *[info[s]["rows"] for s in SETS]]
                                                       for split, info in summary.splits.items()])
    lines += ["", "## Statistics", "", *statistics_tables(summary.statistics), ""]
    lines += ["## Dialog-act cap (response-quality set)", "", *cap_lines(summary.statistics), ""]
    if summary.reasons:
        lines += ["## Not exported", "", *[f"- {reason}: {count}" for reason, count in summary.reasons.items()], ""]
    return "\n".join(lines)


def run(ctx: PipelineContext, settings: Any = None) -> StageSummary:
    """The stage contract (fcbench.stage)."""
    exported = run_conversation_export(ctx.config, input_of(settings), force=ctx.force)
    return StageSummary("export", {"exported": exported.exported, "rejected": exported.rejected}, exported.reasons,
                        exported.outputs, {"exported": exported.exported, "splits": exported.splits,
                                           "rejected": exported.rejected}, report=exported)
