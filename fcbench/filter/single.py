"""The execution-based filter stage: every candidate is kept or rejected with a machine-readable reason.

Checks run cheapest first, and the first failing one decides:
1. format: the sample reads and validates (known tools, resolvable references, unique labels), each
   call names known parameters, gives the required ones, and its literal values fit their types;
   the path has the shape the pipeline asks for (`min_nested_calls`: calls reading an earlier output);
2. text: the query reads as a person writes (`fcbench.checks.query_text`): no joined clauses,
   doubled words, unfilled slots, dangling connectives, API codes, count-noun disagreement or
   24-hour values with am/pm; a reject `text.<code>` (category failed_text) otherwise; and the path
   has the shape the pipeline asks for (`min_nested_calls`: calls reading an earlier output);
3. grounding: every literal argument value is grounded at the words its provenance names
   (`fcbench.checks.provenance`, `fcbench.checks.grounding`); reported on the kept sample, or a reject when the pipeline says so;
4. execution: the gold path runs in the pipeline's environment;
5. reproduction: the run gives the recorded answer and the recorded responses (tolerance from the
   pipeline), and running it again (`repeat`) gives the same responses every time;
6. the gold audit, over the responses the tools gave (`fcbench.checks.gold_audit`): the path does
   exactly what the query asks; with an LLM, the gold judge last.

The categories follow APIGen's table (passed, failed format, failed execution, failed reproduction),
with the query text, grounding and the gold audit (`failed_gold`, reasons `gold.*`) counted on lines of their own. Decisions are journaled as they are made, so a run killed
midway resumes where it stopped; the output files are written once, atomically, in input order, and
a resumed run writes the same bytes as a clean one.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Sequence

from fcbench.stage import VALIDATED, PipelineContext, StageSummary, existing_file, filter_input, input_of
from fcbench.answers import AnswerComparison
from fcbench.config import FilterConfig, PipelineConfig
from fcbench.errors import UserError
from fcbench.environments import Environment
from fcbench.environments.execution import execute_gold_paths
from fcbench.formats import Rejected, read_samples
from fcbench.jsonl import dumps_line, parse_json_line, write_json, write_json_lines, writing
from fcbench.runtime.output_guard import guard_output
from fcbench.runtime.progress import StageProgress
from fcbench.sample import Sample, sample_to_dict
from fcbench.stats.tables import LONG_CONTEXT
from fcbench.stats.tokens import ENCODING, context_tokens
from fcbench.stats.validated_file import file_stats
from fcbench.checks.provenance import PROVENANCE_META, provenance_from_meta, kind_counts
from fcbench.checks.verdicts import (DECIDE_AGAIN_ON_RERUN, UNDECIDED_SEMANTIC, FilterCategory, Verdict, audit_verdict,
                                     comparison_of, execution_verdict, static_verdict)

BATCH_SIZE = 128  # samples executed per round trip to the environment, and per journal flush

SemanticCheck = Callable[[Sequence[Sample]], list[tuple[str, "str | None", str]]]
"""(samples that passed execution) -> (sample id, reject reason or None, detail) each, in order.
Passed in by the pipeline layer (fcbench.checks.semantic), so the filter runs without an LLM."""


# ----------------------------------------------------------------------------------------- the run
@dataclass
class FilterSummary:
    input: str
    total: int
    counts: dict[str, int]
    reasons: dict[str, int]
    grounding_reported: int  # kept samples carrying an ungrounded-value note
    grounding_notes: dict[str, list[str]]  # those notes, by sample id
    outputs: dict[str, str]
    output_guard: dict[str, Any] = field(default_factory=dict)  # what this run replaced (fcbench.runtime.output_guard)
    resumed: int = 0  # decisions taken from the journal of an interrupted run
    # parameter value reasoning: samples with a value the query implies (derived by a rule of
    # fcbench.checks.derivation, read from a response, or marked by the annotator) or that no rule
    # explains; kept vs rejected, and how many values each rule explained
    reasoning: dict[str, Any] = field(default_factory=dict)
    # tokens of context of the kept samples (fcbench.stats.tokens): counted here, where each sample is
    # made, so the export's card, the report and `stats` find every count in the token cache
    context: dict[str, Any] = field(default_factory=dict)
    # ComplexFuncBench's Table 3 row of the validated file as a whole (fcbench.stats.tables), measured
    # once here and cached by the file's content for the export's card (fcbench.stats.validated_file)
    shape: dict[str, Any] = field(default_factory=dict)
    # where the kept samples' argument values come from (fcbench.checks.provenance), by kind of source
    provenance: dict[str, Any] = field(default_factory=dict)
    # what the gold audit checked and rejected (fcbench.checks.gold_audit), for the card and the report
    gold_audit: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class ProvenanceCounts:
    """Argument values of the kept samples by kind of source (derived ones by rule)."""

    samples: int = 0
    recorded: int = 0  # samples whose map came from stage2/stage3 (the rest: inferred by the filter)
    values: Counter[str] = field(default_factory=Counter)

    def add(self, verdict: Verdict) -> None:
        if verdict.provenance is None:
            return
        self.samples += 1
        self.recorded += verdict.provenance_from == "recorded"
        self.values.update(kind_counts(provenance_from_meta(verdict.provenance)))

    def as_dict(self) -> dict[str, Any]:
        return {"samples": self.samples, "recorded": self.recorded, "inferred": self.samples - self.recorded,
                "values_by_kind": dict(sorted(self.values.items())), "values": sum(self.values.values())}


GOLD_RULES = ("gold.derived_mismatch", "gold.party_not_carried", "gold.preference_not_carried", "gold.pick_not_stated",
              "gold.pick_boundary", "gold.pick_mismatch", "gold.unstated_entry", "gold.swapped_roles",
              "gold.redundant_call", "gold.unserved_request")


def gold_audit_summary(verdicts: Sequence[Verdict], settings: FilterConfig, judge: str | None = None) -> dict[str, Any]:
    rejected = Counter(v.reason for v in verdicts if v.category is FilterCategory.FAILED_GOLD)
    return {"mode": settings.gold_audit, "rules": list(GOLD_RULES), "min_nested_calls": settings.min_nested_calls,
            "checked": sum(1 for v in verdicts if v.category in (FilterCategory.PASSED, FilterCategory.FAILED_GOLD,
                                                                 FilterCategory.FAILED_EXECUTION,
                                                                 FilterCategory.FAILED_REPRODUCTION,
                                                                 FilterCategory.FAILED_SEMANTIC)),
            "rejected": sum(rejected.values()), "rejected_by_reason": dict(sorted(rejected.items())),
            "judge": judge}


@dataclass(frozen=True)
class FilterPaths:
    validated: Path
    rejects: Path
    summary: Path
    journal: Path

    @classmethod
    def in_dir(cls, build_dir: Path) -> "FilterPaths":
        return cls(build_dir / VALIDATED, build_dir / "validated.rejects.jsonl",
                   build_dir / "filter.summary.json", build_dir / "filter.journal.jsonl")


def _content_key(record: Any, settings_key: str) -> str:
    text = json.dumps(record, sort_keys=True, ensure_ascii=False, default=str) + settings_key
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:24]


class _Journal:
    """The decisions of this run and of an interrupted one, on disk: only each decision's byte
    offset in the journal is kept in memory, so the filter's memory does not grow with the size of
    the samples (a 128k-token sample is read back from disk when the outputs are written)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offsets: dict[str, int] = {}
        if path.is_file():
            self._index()
        self.resumable = frozenset(self.offsets)  # what an interrupted run decided
        path.parent.mkdir(parents=True, exist_ok=True)
        self._append = open(path, "ab")  # noqa: SIM115 - open for the whole run, closed by close()
        if self._append.tell() and not self._ends_with_newline():
            self._append.write(b"\n")  # a line cut by a kill stays on its own line, ignored
        self._read = open(path, "rb")  # noqa: SIM115

    def _index(self) -> None:
        """Decisions already taken; a line cut short by a kill is ignored (it is redone), and one
        that asks to be decided again (DECIDE_AGAIN_ON_RERUN) is forgotten."""
        with open(self.path, "rb") as handle:
            offset = 0
            for raw in handle:
                start, offset = offset, offset + len(raw)
                if not raw.strip():
                    continue
                try:
                    value = parse_json_line(raw)
                except ValueError:
                    continue
                if isinstance(value, dict) and "key" in value:
                    if (value.get("verdict") or {}).get("reason") in DECIDE_AGAIN_ON_RERUN:
                        self.offsets.pop(value["key"], None)
                        continue
                    self.offsets[value["key"]] = start

    def _ends_with_newline(self) -> bool:
        with open(self.path, "rb") as handle:
            handle.seek(-1, os.SEEK_END)
            return handle.read(1) == b"\n"

    def __contains__(self, key: str) -> bool:
        return key in self.offsets

    def add(self, entry: dict[str, Any]) -> None:
        with writing(self.path):  # a full disk: one line naming the journal (a cut line is redone)
            self._append.seek(0, os.SEEK_END)
            offset = self._append.tell()
            self._append.write((dumps_line(entry) + "\n").encode("utf-8"))
        self.offsets[entry["key"]] = offset

    def flush(self) -> None:
        with writing(self.path):
            self._append.flush()

    def entry(self, key: str) -> dict[str, Any]:
        self._read.seek(self.offsets[key])
        return parse_json_line(self._read.readline())

    def close(self) -> None:
        try:
            self._append.close()
        except OSError:
            pass  # the unwritten rest of a failed run: redone by the next run
        self._read.close()


def _keyed(items: Iterable[Sample | Rejected], settings_key: str) -> Iterator[tuple[str, Sample | Rejected]]:
    for item in items:
        record = sample_to_dict(item) if isinstance(item, Sample) else [item.source, item.raw]
        yield _content_key(record, settings_key), item


def _pending_batches(keyed: Iterable[tuple[str, Sample | Rejected]], journal: _Journal, size: int,
                     keys: list[str], resumed: list[int]) -> Iterator[list[tuple[str, Sample | Rejected]]]:
    """Bounded batches of the items not decided yet, read as they come; every key is recorded in
    input order (`keys`), and the ones an interrupted run decided are counted (`resumed`)."""
    batch: list[tuple[str, Sample | Rejected]] = []
    in_batch: set[str] = set()
    for key, item in keyed:
        keys.append(key)
        if key in journal.resumable:
            resumed[0] += 1
            continue
        if key in journal:  # the same item again, decided in an earlier batch of this run
            continue
        if key in in_batch:  # the same item twice: one decision serves both lines
            continue
        batch.append((key, item))
        in_batch.add(key)
        if len(batch) >= size:
            yield batch
            batch, in_batch = [], set()
    if batch:
        yield batch


def run_filter(items: Iterable[Sample | Rejected], environment: Environment, settings: FilterConfig,
               paths: FilterPaths, input_name: str, batch_size: int = BATCH_SIZE,
               semantic_check: SemanticCheck | None = None, force: bool = False,
               min_output_share: float = 0.5, total: int | None = None,
               gold_judge: SemanticCheck | None = None) -> FilterSummary:
    """Filter `items` (read lazily, in bounded batches) into the validated and rejects files.
    `total`: how many items to expect, for the progress line (unknown when None). `gold_judge`:
    the gold audit's LLM layer (fcbench.checks.gold_judge), asked last."""
    judge_name = getattr(gold_judge, "model", "llm") if gold_judge is not None else None
    settings_key = (settings.model_dump_json() + ("+semantic" if semantic_check else "")
                    + (f"+gold_judge:{judge_name}" if gold_judge else ""))
    comparison = comparison_of(settings)
    journal = _Journal(paths.journal)
    keys: list[str] = []  # input order: a 24-character key per item, never the item
    resumed = [0]
    try:
        with StageProgress("filter", total) as progress:
            size = max(batch_size, environment.min_batch_paths)
            for batch in _pending_batches(_keyed(items, settings_key), journal, size, keys, resumed):
                for key, entry in _decide_batch(batch, environment, settings, comparison, semantic_check, gold_judge):
                    journal.add(entry)
                journal.flush()
                progress.advance(len(batch))
        verdicts, kept_tokens = [], []
        sources = ProvenanceCounts()
        for key in keys:
            entry = journal.entry(key)
            verdicts.append(Verdict.from_json(entry["verdict"]))
            if verdicts[-1].kept:  # (a journal of an older version has no count: made now)
                kept_tokens.append(entry.get("context_tokens") or context_tokens(Sample.model_validate(entry["sample"])))
                sources.add(verdicts[-1])
            verdicts[-1].provenance = None  # counted: the maps stay on disk, not in memory
        kept = sum(verdict.kept for verdict in verdicts)
        guarded = guard_output(paths.validated, kept, force=force, min_share=min_output_share)
        write_json_lines(guarded.path(paths.validated),
                         (entry["sample"] for entry in map(journal.entry, keys)
                          if entry["verdict"]["category"] == "passed"))
        write_json_lines(guarded.path(paths.rejects), (
            {**{k: entry["verdict"][k] for k in ("id", "category", "reason", "detail")}, "sample": entry["sample"]}
            for entry in map(journal.entry, keys) if entry["verdict"]["category"] != "passed"))
    finally:
        journal.close()
    summary = FilterSummary(
        input=input_name,
        total=len(verdicts),
        counts={category.value: sum(v.category is category for v in verdicts) for category in FilterCategory
                if (category is not FilterCategory.FAILED_SEMANTIC or semantic_check is not None)
                and category is not FilterCategory.FAILED_TYPE},  # conversation types: the conversation filter's
        reasons=dict(sorted(Counter(v.reason for v in verdicts if v.reason).items())),
        grounding_reported=sum(1 for v in verdicts if v.kept and v.notes),
        grounding_notes={v.id: v.notes for v in verdicts if v.kept and v.notes},
        reasoning=reasoning_summary(verdicts),
        context=context_summary(kept_tokens),
        outputs={"validated": str(guarded.path(paths.validated)), "rejects": str(guarded.path(paths.rejects))},
        output_guard=guarded.summary(),
        shape=file_stats(guarded.path(paths.validated)).domains[-1].as_dict(),
        provenance=sources.as_dict(),
        gold_audit=gold_audit_summary(verdicts, settings, judge_name),
    )
    write_json(guarded.path(paths.summary), summary.as_dict(), indent=2)
    paths.journal.unlink(missing_ok=True)  # the outputs now hold every decision
    summary.resumed = resumed[0]
    guarded.finish()
    return summary


# rules that only read a value the query writes in another spelling ("April 3, 2026", "premium economy")
SPELLING_RULES = frozenset({"date.spelled", "enum.words"})


def reasoning_summary(verdicts: Sequence[Verdict]) -> dict[str, Any]:
    """How many samples needed parameter value reasoning, how many of those were kept, and which
    rule explained how many values (a sample rejected before the grounding check is not counted)."""
    needing = [v for v in verdicts if any(d["rule"] not in SPELLING_RULES for d in v.derived)
               or v.deferred or v.reason == "grounding.ungrounded_value"]
    rejected = Counter(v.reason for v in needing if not v.kept)
    return {
        # a value the query implies: derived by a rule other than a mere spelling, read from a
        # response, marked by the annotator, or that no rule explains
        "samples": len(needing),
        "share": round(len(needing) / len(verdicts), 4) if verdicts else 0.0,
        "kept": sum(v.kept for v in needing),
        "rejected": sum(not v.kept for v in needing),
        "rejected_by_reason": dict(sorted(rejected.items())),
        "samples_with_spelled_values_only": sum(bool(v.derived) and v not in needing for v in verdicts),
        "deferred_to_semantic": sum(bool(v.deferred) for v in verdicts),
        "deferred_rejected": sum(bool(v.deferred) and not v.kept for v in verdicts),
        "values_by_rule": dict(sorted(Counter(d["rule"] for v in verdicts for d in v.derived).items())),
    }


def context_summary(tokens: Sequence[int]) -> dict[str, Any]:
    return {"encoding": ENCODING, "samples": len(tokens), "mean": round(sum(tokens) / len(tokens), 1) if tokens else 0.0,
            "max": max(tokens, default=0), f"over_{LONG_CONTEXT // 1000}k": sum(count > LONG_CONTEXT for count in tokens)}


def _with_derivations(sample: Sample, static: Verdict) -> Sample:
    """The kept sample, saying where each argument value comes from (meta.provenance) and how its
    implied values were found (meta.grounding)."""
    meta = dict(sample.meta)
    if static.provenance is not None:
        meta[PROVENANCE_META] = static.provenance
    if static.derived or static.deferred:
        grounding: dict[str, Any] = {"derived": static.derived}
        if static.deferred:
            grounding["left_to_semantic_check"] = static.deferred
        meta["grounding"] = grounding
    return sample.model_copy(update={"meta": meta}) if meta != sample.meta else sample


def _decide_batch(batch: Sequence[tuple[str, Sample | Rejected]], environment: Environment,
                  settings: FilterConfig, comparison: AnswerComparison,
                  semantic_check: SemanticCheck | None = None,
                  gold_judge: SemanticCheck | None = None) -> Iterator[tuple[str, dict[str, Any]]]:
    to_run: list[tuple[str, Sample, Verdict]] = []
    for key, item in batch:
        if isinstance(item, Rejected):
            verdict = Verdict(str(item.source), FilterCategory.FAILED_FORMAT, "format.schema", item.reason)
            yield key, {"key": key, "verdict": verdict.to_json(), "sample": item.raw}
            continue
        try:
            verdict = static_verdict(item, settings, semantic_check is not None)
        except Exception as exc:  # one sample the checks cannot handle must not stop the others
            verdict = Verdict(item.id, FilterCategory.FAILED_FORMAT, "format.unprocessable", f"{type(exc).__name__}: {exc}")
        if not verdict.kept:
            yield key, {"key": key, "verdict": verdict.to_json(), "sample": sample_to_dict(item)}
        else:
            to_run.append((key, item, verdict))
    if not to_run:
        return
    samples = [sample for _, sample, _ in to_run]
    runs = [execute_gold_paths(samples, environment) for _ in range(settings.repeat)]
    decided = []
    for index, (key, sample, static) in enumerate(to_run):
        sample_runs = [attempt[index] for attempt in runs]
        verdict = execution_verdict(sample, sample_runs, comparison, static.notes)
        verdict.derived, verdict.deferred = static.derived, static.deferred
        verdict.provenance, verdict.provenance_from = static.provenance, static.provenance_from
        if sample_runs[0].ok:
            verdict = audit_verdict(sample_runs[0].sample, verdict, settings)
        decided.append((key, verdict, _with_derivations(sample_runs[0].sample, static) if verdict.kept else sample))
    if semantic_check is not None:  # last and dearest: only what executed is asked about
        passed = [(key, verdict, kept) for key, verdict, kept in decided if verdict.kept]
        for (_, verdict, _), (_, reason, detail) in zip(passed, semantic_check([kept for _, _, kept in passed])):
            if reason:
                verdict.category, verdict.reason, verdict.detail = FilterCategory.FAILED_SEMANTIC, reason, detail
            elif detail:  # the judge could not answer: fail closed, and ask again on the next run
                verdict.category, verdict.reason, verdict.detail = FilterCategory.FAILED_SEMANTIC, UNDECIDED_SEMANTIC, detail
    if gold_judge is not None and settings.gold_audit != "off":  # the gold audit's last layer
        passed = [(key, verdict, kept) for key, verdict, kept in decided if verdict.kept]
        for (_, verdict, _), (_, reason, detail) in zip(passed, gold_judge([kept for _, _, kept in passed])):
            if reason and settings.gold_audit == "reject":  # undecided too: fail closed, decided again next run
                verdict.category, verdict.reason, verdict.detail = FilterCategory.FAILED_GOLD, reason, detail
            elif reason:
                verdict.notes = verdict.notes + [f"{reason}: {detail}"]
    for key, verdict, kept_sample in decided:
        entry = {"key": key, "verdict": verdict.to_json(), "sample": sample_to_dict(kept_sample)}
        if verdict.kept:
            entry["context_tokens"] = context_tokens(kept_sample)
        yield key, entry


# ------------------------------------------------------------------ the stage contract (fcbench.stage)
def run_filter_stage(pipeline: PipelineConfig, input_file: Path | None = None, offline: bool = False,
                     force: bool = False) -> FilterSummary:
    """`build-dataset filter PIPELINE`: filter the candidates (`fcbench.stage.filter_input`, or
    `input_file`) into validated.jsonl + validated.rejects.jsonl + filter.summary.json under the
    build folder. With `llm:` configured (and not `offline`), the LLM's semantic check runs last.
    A result much smaller than the previous validated file keeps it (fcbench.runtime.output_guard)
    unless `force`."""
    from fcbench.environments.from_config import open_environment
    from fcbench.runtime.progress import lines_in

    source = input_file or existing_file(filter_input(pipeline), "set stages.filter.input or pass --input")
    if not source.is_file():
        raise UserError(f"{source}: no such file (the filter reads the previous stage's output; "
                        f"set stages.filter.input or pass --input)")
    paths = FilterPaths.in_dir(pipeline.build_dir)
    if source.resolve() in (paths.validated.resolve(), paths.rejects.resolve()):
        raise UserError(f"{source}: the filter writes this file; it cannot also read it (give the candidates)")
    if not force and not _has_content(source):
        # nothing to filter is a failed build, not an empty success: say where the candidates went
        # (`--force` still runs, for who means to replace the validated file with nothing)
        raise UserError(f"{source}: the filter's input is empty: no candidate to validate (the previous stage kept "
                        f"none; its rejects file, e.g. {pipeline.build_dir / 'candidates.rejects.jsonl'}, says why "
                        f"for each, and `build-dataset stage3 run {pipeline.name}` prints what to change)")
    # Streamed: the candidates are read in bounded batches (memory does not grow with their size);
    # a pipeline without a catalog takes its tools from the samples, in a pass of their own.
    samples = (item for item in read_samples(source, "fcbench") if isinstance(item, Sample))
    with open_environment(pipeline, samples) as environment:
        return run_filter(read_samples(source, "fcbench"), environment, pipeline.stages.filter, paths, str(source),
                          semantic_check=_semantic_check(pipeline, offline), force=force,
                          min_output_share=pipeline.min_output_share, total=lines_in(source),
                          gold_judge=_gold_judge(pipeline, offline))


def _has_content(path: Path, probe: int = 65536) -> bool:
    """Whether the file (gzip-compressed when it ends in .gz) holds anything but white space in its
    first bytes; read as bytes, so a file with unreadable lines is left to the reader's own rules."""
    import gzip

    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rb") as handle:
        return bool(handle.read(probe).strip())


def _semantic_check(pipeline: PipelineConfig, offline: bool) -> SemanticCheck | None:
    """The LLM judge when one is usable; a configured endpoint without its key is skipped with a
    warning, so an offline build (the bundled example) still filters by execution alone."""
    if pipeline.llm is None or offline:
        return None
    from fcbench.checks.semantic import SemanticCheck as LLMSemanticCheck
    from fcbench.llm.cache import LLM_CACHE_FILE
    from fcbench.llm.client import resolve_endpoint

    try:
        resolve_endpoint(pipeline.llm, os.environ)
    except UserError as exc:
        logging.getLogger(__name__).warning("semantic check skipped: %s", exc)
        return None
    return LLMSemanticCheck(pipeline.llm, pipeline.build_dir / LLM_CACHE_FILE, jitter_seed=pipeline.seed)


def _gold_judge(pipeline: PipelineConfig, offline: bool):
    """The gold audit's LLM judge (the pipeline's `judge:` block, else its `llm:` block), when one
    is usable; like the semantic check, skipped with a warning when its key is missing."""
    if pipeline.llm is None or offline or pipeline.stages.filter.gold_audit == "off":
        return None
    from fcbench.checks.gold_judge import GoldJudge
    from fcbench.llm.cache import LLM_CACHE_FILE
    from fcbench.llm.client import resolve_endpoint

    try:
        resolve_endpoint(pipeline.judge or pipeline.llm, os.environ)
    except UserError as exc:
        logging.getLogger(__name__).warning("gold judge skipped: %s", exc)
        return None
    return GoldJudge.for_pipeline(pipeline.judge, pipeline.llm, pipeline.build_dir / LLM_CACHE_FILE)


def run(ctx: PipelineContext, settings: Any = None) -> StageSummary:
    filtered = run_filter_stage(ctx.config, input_of(settings), offline=not ctx.uses_llm, force=ctx.force)
    return StageSummary("filter", filtered.counts, filtered.reasons, filtered.outputs, report=filtered)
