"""`build-dataset evaluate`: run a live model on an exported benchmark with the ComplexEval protocol.

The protocol itself (which call matches which gold call, what each call is answered with, when
the next gold step opens, when the sample ends) is `fcbench.score.complexeval.ComplexEvalSession`;
this module only drives it against a model:

    messages = the sample's messages; tools = the sample's tools as the SDK's `tools` entries
    loop: ask the model -> its tool calls of this turn are one step of predicted calls
          -> session.respond(calls) -> append the assistant message (its tool_calls) and one
             `tool` message per call id carrying the response JSON -> ask again
          until the session ends, the model answers in text, or the turn bound is reached

Arguments that are not JSON are handed to the session as written: its format check answers with
ComplexEval's message, which the model sees and may correct.

Resume: every request goes through `LLMClient` (its SQLite cache is keyed on the whole message
history, so the turns answered before a kill are replayed free) and every finished trajectory is
appended to `<build>/eval/<model-slug>/trajectories.jsonl` at once; a re-run skips the samples
already there (a line cut by a kill does not parse and is dropped). Scores are never computed
live: the saved trajectories are replayed through the shared scorer (`score_complexeval`), so
`scores.json` is the same whether the run was interrupted or not, and `build-dataset score
--metric complexeval` on the same files gives the same figures.
"""

from __future__ import annotations

import asyncio
import shutil
import hashlib
import json
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from fcbench.catalog.openai import openai_tool_param
from fcbench.config import LLMConfig, PipelineConfig
from fcbench.errors import UserError
from fcbench.formats import Rejected, read_samples
from fcbench.jsonl import dumps_line, iter_json_lines, write_json, write_json_lines
from fcbench.sample import Sample, sample_to_dict
from fcbench.tokens import ENCODING, request_tokens
from fcbench.score.complexeval import (
    ComplexEvalOptions,
    ComplexEvalSession,
    judges_line,
    score_complexeval,
)
from fcbench.complexeval_judges import LLMJudges, judged_options
from fcbench.llm.judge import JUDGE_CACHE_FILE, judge_llm_config
from fcbench.llm.cache import RequestCache, canonical_json
from fcbench.llm.client import (ChatRequest, LLMClient, LLMRejection, ToolCall, assistant_message, tool_call_ids,
                          run_workers, tool_message)

EVAL_DIR = "eval"
DEFAULT_SPLIT = "test"
# A sample may take this many model turns beyond its gold steps (one for the final answer, the
# rest to correct calls after an error message) before it is cut off: a looping model must stop.
DEFAULT_EXTRA_TURNS = 3
STOP_MAX_TURNS = "max_turns"
# The next request would not fit the model's context window (llm.context_window / --context-window):
# it is not sent; the sample ends there, is scored on the turns it had, and is counted apart.
STOP_CONTEXT_OVERFLOW = "context_overflow"

_NOT_SLUG = re.compile(r"[^A-Za-z0-9._-]+")


# ------------------------------------------------------------------------------------- pure helpers
def model_slug(model: str) -> str:
    """A folder name for a model id: `Qwen/Qwen2.5-7B-Instruct` -> `Qwen-Qwen2.5-7B-Instruct`."""
    slug = _NOT_SLUG.sub("-", model).strip("-.")
    return slug or "model"


def sample_digest(sample: Sample) -> str:
    """Identifies the exact sample a trajectory was run on: a changed sample is run again."""
    return hashlib.sha256(canonical_json(sample_to_dict(sample)).encode("utf-8")).hexdigest()


def run_settings(config: LLMConfig, extra_turns: int, judge: LLMConfig | None = None) -> dict[str, Any]:
    """What else shapes a trajectory: a saved one is reused only when all of it is unchanged (the
    judge too: its verdicts decide which response the model saw; and the context window, where the
    model was given one)."""
    settings = {"model": config.model, "temperature": config.temperature, "seed": config.seed,
                "max_tokens": config.max_tokens, "extra_turns": extra_turns,
                "judge": None if judge is None else judge.model}
    if config.context_window is not None:
        settings["context_window"] = config.context_window
    return settings


def predicted_call(tool_call: ToolCall) -> dict[str, Any]:
    """The call as the session (and the saved trajectory) sees it: arguments decoded when they are
    a JSON object, else the text as the model wrote it, so the session's format check reports it."""
    try:
        decoded = json.loads(tool_call.arguments) if tool_call.arguments.strip() else {}
    except json.JSONDecodeError:
        decoded = None
    arguments: Any = decoded if isinstance(decoded, dict) else tool_call.arguments
    return {"name": tool_call.name, "arguments": arguments}


def turn_limit(session: ComplexEvalSession, extra_turns: int) -> int:
    return len(session.steps) + extra_turns


# ---------------------------------------------------------------------------------- one sample (async)
@dataclass(frozen=True)
class Trajectory:
    """One finished sample: what the scorer replays (`turns`) and how the run ended."""

    sample_id: str
    turns: list[Any]  # each a list of {name, arguments} (one model turn), or the final text / None
    stop_reason: str
    model_turns: int  # chat requests the sample took (replayed from the cache or sent)
    sample_sha: str
    settings: dict[str, Any]
    context_tokens: int | None = None  # the request that did not fit (context_overflow only)

    def to_json(self) -> dict[str, Any]:
        record = {"id": self.sample_id, "turns": self.turns, "stop_reason": self.stop_reason,
                  "model_turns": self.model_turns, "sample_sha": self.sample_sha, "settings": self.settings}
        if self.context_tokens is not None:
            record["context_tokens"] = self.context_tokens
        return record


@dataclass(frozen=True)
class Unanswered:
    """A sample the endpoint gave no usable answer for (retries spent, a 4xx): not scored, and
    tried again on the next run rather than counted as the model's failure."""

    sample_id: str
    reason: str


async def run_sample(llm: LLMClient, sample: Sample, settings: Mapping[str, Any],
                     options: ComplexEvalOptions | None = None) -> Trajectory | Unanswered:
    """Play one sample to its end; `options` must be the scorer's (the default), or the saved
    trajectory would be answered differently from how the scorer replays it."""
    session = ComplexEvalSession(sample, options or ComplexEvalOptions())
    history: list[dict[str, Any]] = [dict(message) for message in sample.messages]
    tools = [openai_tool_param(tool) for tool in sample.tools] or None
    limit = turn_limit(session, int(settings["extra_turns"]))
    window = settings.get("context_window")
    turns: list[Any] = []
    while not session.finished and len(turns) < limit:
        if window is not None:
            needed = request_tokens(history, tools)
            if needed > window:
                return Trajectory(sample.id, turns, STOP_CONTEXT_OVERFLOW, len(turns), sample_digest(sample),
                                  dict(settings), context_tokens=needed)
        outcome = await llm.complete(ChatRequest(messages=list(history), tools=tools))
        if isinstance(outcome, LLMRejection):
            return Unanswered(sample.id, outcome.reason)
        completion = outcome.completion
        if not completion.tool_calls:
            turns.append(completion.content)
            session.stop(completion.content)
            break
        calls = [predicted_call(call) for call in completion.tool_calls]
        # in a worker thread: an LLM judge asked by the session blocks that thread, not this loop
        responses = await asyncio.to_thread(session.respond, calls)
        ids = tool_call_ids(completion.tool_calls, len(turns))
        history.append(assistant_message(completion, ids))
        history.extend(tool_message(call_id, response) for call_id, response in zip(ids, responses))
        turns.append(calls)
    stop_reason = (session.record.stop_reason or "") if session.finished else STOP_MAX_TURNS
    return Trajectory(sample.id, turns, stop_reason, len(turns), sample_digest(sample), dict(settings))


# ------------------------------------------------------------------------------------------ inputs
@dataclass(frozen=True)
class InputReject:
    sample_id: str | None
    reason: str
    detail: str
    source: str

    def to_json(self) -> dict[str, Any]:
        return {"id": self.sample_id, "reason": self.reason, "detail": self.detail, "source": self.source}


@dataclass
class Benchmark:
    source: str
    samples: list[Sample] = field(default_factory=list)
    rejects: list[InputReject] = field(default_factory=list)


def split_shards(build_dir: Path, split: str) -> list[Path]:
    return sorted((build_dir / "export" / "data").glob(f"{split}-*.parquet"))


def _exported_splits(build_dir: Path) -> list[str]:
    names = {path.name.rsplit("-", 3)[0] for path in (build_dir / "export" / "data").glob("*.parquet")}
    return sorted(names)


def _parquet_items(shards: Sequence[Path]) -> Iterator[Sample | InputReject]:
    import pyarrow.parquet as pq

    from fcbench.rows import row_to_sample

    for shard in shards:
        row_no = 0
        for batch in pq.ParquetFile(shard).iter_batches():
            for row in batch.to_pylist():
                row_no += 1
                try:
                    yield row_to_sample(row)
                except (ValidationError, ValueError, KeyError, TypeError) as exc:
                    yield InputReject(row.get("id"), "invalid_row", str(exc).splitlines()[0], f"{shard}#{row_no}")


def _canonical_items(path: Path) -> Iterator[Sample | InputReject]:
    for item in read_samples(path, "fcbench"):
        if isinstance(item, Rejected):
            raw_id = item.raw.get("id") if isinstance(item.raw, dict) else None
            yield InputReject(raw_id, "invalid_sample", item.reason, item.source)
        else:
            yield item


def load_benchmark(build_dir: Path, split: str, input_file: Path | None, limit: int | None) -> Benchmark:
    """The samples to evaluate, in file order: `--input` (canonical JSONL) or the exported split."""
    if input_file is not None:
        if not input_file.is_file():
            raise UserError(f"{input_file}: no such file")
        items: Iterable[Sample | InputReject] = _canonical_items(input_file)
        source = str(input_file)
    else:
        shards = split_shards(build_dir, split)
        if not shards:
            available = _exported_splits(build_dir)
            found = f"exported splits: {', '.join(available)}" if available else "nothing exported yet"
            raise UserError(f"no split {split!r} under {build_dir / 'export' / 'data'} ({found}); "
                            "run build-dataset export, or pass --input FILE")
        items = _parquet_items(shards)
        source = str(shards[0].parent / f"{split}-*.parquet")
    benchmark = Benchmark(source)
    seen: set[str] = set()
    for item in items:
        if limit is not None and len(benchmark.samples) >= limit:
            break
        if isinstance(item, InputReject):
            benchmark.rejects.append(item)
        elif item.id in seen:
            # one id, two samples: a saved trajectory could not say which one it belongs to
            benchmark.rejects.append(InputReject(item.id, "duplicate_id", "id already in the benchmark", source))
        else:
            seen.add(item.id)
            benchmark.samples.append(item)
    return benchmark


# ----------------------------------------------------------------------------------------- outputs
@dataclass(frozen=True)
class EvalPaths:
    model_dir: Path

    @classmethod
    def for_model(cls, build_dir: Path, model: str) -> EvalPaths:
        return cls(build_dir / EVAL_DIR / model_slug(model))

    @property
    def trajectories(self) -> Path:
        return self.model_dir / "trajectories.jsonl"

    @property
    def scores(self) -> Path:
        return self.model_dir / "scores.json"

    @property
    def rejects(self) -> Path:
        return self.model_dir / "evaluate.rejects.jsonl"

    @property
    def cache(self) -> Path:
        return self.model_dir / "requests.sqlite"


def saved_trajectories(path: Path, expected: Mapping[str, str], settings: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The reusable lines of an earlier run, by id: for a sample of this benchmark (same content)
    run with the same settings. A line cut by a kill does not parse and is left out."""
    if not path.is_file():
        return {}
    kept: dict[str, dict[str, Any]] = {}
    for line in iter_json_lines(path):
        value = line.value
        if line.error or not isinstance(value, dict) or not isinstance(value.get("turns"), list):
            continue
        sample_id = value.get("id")
        if expected.get(sample_id) == value.get("sample_sha") and value.get("settings") == dict(settings):
            kept[sample_id] = value
    return kept


class TrajectoryLog:
    """Appends each finished trajectory as one line, flushed at once, so a kill loses at most
    the line being written (which the next run ignores)."""

    def __init__(self, path: Path, kept: Iterable[Mapping[str, Any]]) -> None:
        # Start from the reusable lines only: a cut line must not stay in front of new ones.
        write_json_lines(path, kept)
        self._handle = open(path, "a", encoding="utf-8")  # noqa: SIM115 - open for the whole run, closed by close()

    def append(self, record: Mapping[str, Any]) -> None:
        self._handle.write(dumps_line(record) + "\n")
        self._handle.flush()

    def close(self) -> None:
        self._handle.close()


# -------------------------------------------------------------------------------------------- a run
@dataclass
class EvaluationResult:
    model: str
    source: str
    samples: int
    trajectories_path: Path
    scores_path: Path
    rejects_path: Path
    scores: dict[str, Any]  # the scorer's summary (ComplexFuncBench's Table 2 and error analysis)
    judges: dict[str, Any] = field(default_factory=dict)  # who judged (rule-based stand-ins or an LLM)
    ran: int = 0  # samples run in this invocation
    reused: int = 0  # samples whose trajectory an earlier run had saved
    not_evaluated: dict[str, int] = field(default_factory=dict)  # reason -> samples
    llm: dict[str, Any] = field(default_factory=dict)  # requests sent, cache hits, tokens, cost
    context_overflow: list[str] = field(default_factory=list)  # samples cut at the context window

    def as_dict(self) -> dict[str, Any]:
        return {"model": self.model, "scores": self.scores, "trajectories": str(self.trajectories_path),
                "scores_file": str(self.scores_path), "input": self.source, "samples": self.samples,
                "ran": self.ran, "reused": self.reused, "not_evaluated": self.not_evaluated, "llm": self.llm,
                "judges": self.judges, "context_overflow": self.context_overflow}


ProgressCallback = Callable[[int, int], None]  # (samples done, samples in total)


OptionsFor = Callable[[Sample], ComplexEvalOptions]


async def _run_samples(llm: LLMClient, samples: Sequence[Sample], settings: Mapping[str, Any],
                       log: TrajectoryLog, progress: ProgressCallback | None, done_before: int,
                       total: int, options_for: OptionsFor | None = None) -> list[Unanswered]:
    """`concurrency` workers, each taking the next sample and playing it to its end."""
    pending = iter(samples)
    unanswered: list[Unanswered] = []
    done = done_before

    async def worker() -> None:
        nonlocal done
        for sample in pending:  # one shared iterator: two workers never take the same sample
            outcome = await run_sample(llm, sample, settings, options_for(sample) if options_for else None)
            if isinstance(outcome, Unanswered):
                unanswered.append(outcome)
            else:
                log.append(outcome.to_json())
            done += 1
            if progress is not None:
                progress(done, total)

    await run_workers(worker, llm.parallelism)
    return unanswered


async def _drive(config: LLMConfig, cache: RequestCache, samples: Sequence[Sample], settings: Mapping[str, Any],
                 log: TrajectoryLog, progress: ProgressCallback | None, done_before: int, total: int,
                 environ: Mapping[str, str] | None,
                 options_for: OptionsFor | None = None) -> tuple[list[Unanswered], dict[str, Any]]:
    async with LLMClient(config, cache, environ=environ) as llm:
        unanswered = await _run_samples(llm, samples, settings, log, progress, done_before, total, options_for)
        return unanswered, llm.summary()


def evaluation_llm_config(pipeline: PipelineConfig, model: str, base_url: str | None,
                          batch: bool = False, context_window: int | None = None) -> LLMConfig:
    """The pipeline's llm block (sampling, concurrency, key variable, prices) with the model and
    endpoint given on the command line (and the Batch API with `batch`, the model's context window
    with `context_window`)."""
    if pipeline.llm is None:
        return LLMConfig(model=model, base_url=base_url, mode="batch" if batch else "online",
                         context_window=context_window)
    update: dict[str, Any] = {"model": model}
    if context_window is not None:
        update["context_window"] = context_window
    if batch:
        update["mode"] = "batch"
    if base_url is not None:
        update["base_url"] = base_url
    return pipeline.llm.model_copy(update=update)


def evaluate(config: LLMConfig, build_dir: Path, *, split: str = DEFAULT_SPLIT, input_file: Path | None = None,
             limit: int | None = None, extra_turns: int = DEFAULT_EXTRA_TURNS,
             environ: Mapping[str, str] | None = None, progress: ProgressCallback | None = None,
             judge: LLMConfig | None = None) -> EvaluationResult:
    """Run the model on every sample not already evaluated, then score all saved trajectories.
    With `judge`, the LLM judges decide call equivalence (after the rules and the recorded
    responses) during the run and when scoring, and grade the final answers; their verdicts are
    cached in build/eval/<model>/judges.sqlite. Without it, the rule-based stand-ins judge."""
    benchmark = load_benchmark(build_dir, split, input_file, limit)
    paths = EvalPaths.for_model(build_dir, config.model)
    created = not paths.model_dir.exists()
    paths.model_dir.mkdir(parents=True, exist_ok=True)
    try:
        if judge is None:
            return _evaluate_into(config, benchmark, paths, extra_turns, environ, progress)
        with LLMJudges(judge, paths.model_dir / JUDGE_CACHE_FILE, environ=environ) as judges:
            return _evaluate_into(config, benchmark, paths, extra_turns, environ, progress, judges)
    except BaseException:
        # A run that failed before any trajectory was saved (endpoint down, key refused, killed
        # at once) leaves no model folder behind for later reports to list as a broken evaluation.
        if created and not _has_trajectories(paths):
            shutil.rmtree(paths.model_dir, ignore_errors=True)
        raise


def _has_trajectories(paths: EvalPaths) -> bool:
    return paths.trajectories.is_file() and paths.trajectories.stat().st_size > 0


def _evaluate_into(config: LLMConfig, benchmark: Benchmark, paths: EvalPaths, extra_turns: int,
                   environ: Mapping[str, str] | None, progress: ProgressCallback | None,
                   judges: LLMJudges | None = None) -> EvaluationResult:
    settings = run_settings(config, extra_turns, judges.config if judges else None)
    options_for = judged_options(benchmark.samples, judges) if judges else None
    digests = {sample.id: sample_digest(sample) for sample in benchmark.samples}
    kept = saved_trajectories(paths.trajectories, digests, settings)
    to_run = [sample for sample in benchmark.samples if sample.id not in kept]
    log = TrajectoryLog(paths.trajectories, [kept[s.id] for s in benchmark.samples if s.id in kept])
    unanswered: list[Unanswered] = []
    llm_summary: dict[str, Any] = {}
    try:
        if to_run:
            with RequestCache(paths.cache) as cache:
                unanswered, llm_summary = asyncio.run(_drive(config, cache, to_run, settings, log, progress,
                                                             len(kept), len(benchmark.samples), environ, options_for))
    finally:
        log.close()
    return _score_and_write(config, benchmark, paths, settings, unanswered, llm_summary, ran=len(to_run),
                            reused=len(kept), judges=judges)


def _score_and_write(config: LLMConfig, benchmark: Benchmark, paths: EvalPaths, settings: Mapping[str, Any],
                     unanswered: Sequence[Unanswered], llm_summary: dict[str, Any], ran: int,
                     reused: int, judges: LLMJudges | None = None) -> EvaluationResult:
    digests = {sample.id: sample_digest(sample) for sample in benchmark.samples}
    saved = saved_trajectories(paths.trajectories, digests, settings)
    # input order, not completion order: the same benchmark gives the same files however it ran
    lines = [saved[sample.id] for sample in benchmark.samples if sample.id in saved]
    write_json_lines(paths.trajectories, lines)
    scored = [sample for sample in benchmark.samples if sample.id in saved]
    replay = [{"id": line["id"], "turns": line["turns"]} for line in lines]
    if judges is None:
        report = score_complexeval(scored, replay)
    else:  # the same layers as the live run: its verdicts come back from the judges' cache
        report = score_complexeval(scored, replay, completeness_judge=judges.completeness_judge,
                                   correctness_judge=judges.correctness_judge,
                                   options_for=judged_options(benchmark.samples, judges))
        llm_summary = {**llm_summary, "judges": judges.summary()}
    not_evaluated = Counter(reject.reason for reject in benchmark.rejects)
    not_evaluated.update("llm_error" for _ in unanswered)
    rejects = [reject.to_json() for reject in benchmark.rejects]
    order = {sample.id: index for index, sample in enumerate(benchmark.samples)}  # not completion order
    rejects += [{"id": item.sample_id, "reason": "llm_error", "detail": item.reason}
                for item in sorted(unanswered, key=lambda item: order.get(item.sample_id, len(order)))]
    write_json_lines(paths.rejects, rejects)
    overflow = [line["id"] for line in lines if line.get("stop_reason") == STOP_CONTEXT_OVERFLOW]
    # who judged comes first: a reader of scores.json sees at once whether these are LLM verdicts
    document = {"judges_note": judges_line(report.summary["judges"]), "judges": report.summary["judges"],
                "metric": "complexeval", "model": config.model, "input": benchmark.source,
                "samples": len(benchmark.samples), "settings": dict(settings),
                "not_evaluated": dict(sorted(not_evaluated.items())),
                "summary": report.summary, "items": report.items}
    if config.context_window is not None:
        document["context_overflow"] = {"samples": overflow, "window": config.context_window, "tokenizer": ENCODING}
    write_json(paths.scores, document, indent=2)
    return EvaluationResult(model=config.model, source=benchmark.source, samples=len(benchmark.samples),
                            trajectories_path=paths.trajectories, scores_path=paths.scores,
                            rejects_path=paths.rejects, scores=report.summary, ran=ran, reused=reused,
                            not_evaluated=dict(sorted(not_evaluated.items())), llm=llm_summary,
                            judges=report.summary["judges"], context_overflow=overflow)


def evaluate_pipeline(pipeline: PipelineConfig, model: str, *, base_url: str | None = None,
                      split: str = DEFAULT_SPLIT, input_file: Path | None = None, limit: int | None = None,
                      extra_turns: int = DEFAULT_EXTRA_TURNS, environ: Mapping[str, str] | None = None,
                      progress: ProgressCallback | None = None, batch: bool = False,
                      judge_model: str | None = None, judge_base_url: str | None = None,
                      context_window: int | None = None) -> EvaluationResult:
    config = evaluation_llm_config(pipeline, model, base_url, batch, context_window)
    if judge_base_url is not None and judge_model is None and pipeline.judge is None:
        raise UserError("--judge-base-url needs --judge-model (or a judge block in pipelines.yaml)")
    # the pipeline's judge block with the command line's model and endpoint, at temperature 0,
    # online: the protocol waits for each verdict (None: the rule-based stand-ins judge)
    judge = judge_llm_config(pipeline.judge, judge_model, judge_base_url)
    if judge is not None:
        judge = judge.model_copy(update={"mode": "online"})
    return evaluate(config, pipeline.build_dir, split=split, input_file=input_file, limit=limit,
                    extra_turns=extra_turns, environ=environ, progress=progress, judge=judge)
