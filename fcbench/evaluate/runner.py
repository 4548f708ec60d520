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

Memory: nothing grows with the number of samples but a small index (id and digest of each). The
input is read lazily, several times: once for the index (ids, digests, rejects, duplicate ids),
then the workers take the samples to run from a generator, then each sample is scored on its own
against its trajectory, read back by byte offset (`ComplexEvalTally` counts the summary; the
items of scores.json wait in an unnamed temporary file, since the summary comes first). With an
LLM judge, the recorded responses of the split live in a temporary SQLite database. Every pass
counts through `fcbench.runtime.progress.StageProgress`, so the memory ceiling stops a run that grows.
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
from typing import IO, Any

from pydantic import ValidationError

from fcbench.catalog.openai import openai_tool_param
from fcbench.config import LLMConfig, PipelineConfig
from fcbench.environments.recorded import DiskCalls, RecordedEnvironment, RecordedStore
from fcbench.errors import UserError
from fcbench.formats import Rejected, read_samples
from fcbench.jsonl import (JsonListSpool, check_bad_share, dumps_line, parse_json_line, write_json_lines,
                           write_json_with_list, write_text_lines)
from fcbench.runtime.progress import StageProgress
from fcbench.sample import Sample, sample_to_dict
from fcbench.stats.tokens import ENCODING, request_tokens
from fcbench.score.complexeval import (
    ComplexEvalOptions,
    ComplexEvalSession,
    ComplexEvalTally,
    judges_line,
    naive_completeness_judge,
    naive_correctness_judge,
    score_trajectory,
)
from fcbench.evaluate.judges_complexeval import LLMJudges, options_with_responses
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
    """A sample the endpoint gave no usable answer for (retries spent, a 4xx): it has no
    trajectory, so the scores count it as a failure (the gold set's rule: leaving a sample out would
    raise them), it is listed in the rejects and `gold_set.missing`, and the next run tries it again."""

    sample_id: str
    reason: str


async def run_sample(llm: LLMClient, sample: Sample, settings: Mapping[str, Any],
                     options: ComplexEvalOptions | None = None, digest: str | None = None) -> Trajectory | Unanswered:
    """Play one sample to its end; `options` must be the scorer's (the default), or the saved
    trajectory would be answered differently from how the scorer replays it. `digest`: the
    sample's `sample_digest`, when the caller has it already."""
    digest = digest or sample_digest(sample)
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
                return Trajectory(sample.id, turns, STOP_CONTEXT_OVERFLOW, len(turns), digest,
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
    return Trajectory(sample.id, turns, stop_reason, len(turns), digest, dict(settings))


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
class BenchmarkIndex:
    """What one light pass over the input keeps: never a sample, only each accepted sample's id
    and digest (input order), the input's rejects, and the tools' schemas (the recorded
    responses' keys)."""

    source: str
    digests: dict[str, str] = field(default_factory=dict)  # sample id -> sample_digest, in input order
    rejects: list[InputReject] = field(default_factory=list)
    schemas: dict[str, Any] = field(default_factory=dict)  # tool name -> parameters (the last sample's wins)
    _positions: dict[str, int] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.digests)

    def position(self, sample_id: str) -> int:
        return self._positions.get(sample_id, len(self._positions))

    def add(self, sample: Sample) -> None:
        self._positions[sample.id] = len(self.digests)
        self.digests[sample.id] = sample_digest(sample)
        for tool in sample.tools:
            self.schemas[tool.name] = tool.parameters


EXPORT_CONFIG = "data"  # export/<config>/<split>-*.parquet; a conversational export has two configs


def split_shards(build_dir: Path, split: str, config: str = EXPORT_CONFIG) -> list[Path]:
    return sorted((build_dir / "export" / config).glob(f"{split}-*.parquet"))


def _exported_splits(build_dir: Path, config: str = EXPORT_CONFIG) -> list[str]:
    names = {path.name.rsplit("-", 3)[0] for path in (build_dir / "export" / config).glob("*.parquet")}
    return sorted(names)


PARQUET_BATCH_ROWS = 16  # rows decoded into Python at a time (a long-context sample is ~0.5 MB)


def _parquet_items(shards: Sequence[Path]) -> Iterator[Sample | InputReject]:
    import pyarrow.parquet as pq

    from fcbench.formats.parquet_rows import row_to_sample

    for shard in shards:
        row_no = 0
        for batch in pq.ParquetFile(shard).iter_batches(batch_size=PARQUET_BATCH_ROWS, use_threads=False):
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


class BenchmarkInput:
    """The samples to evaluate, in file order: `--input` (canonical JSONL) or the exported split.
    Never held: each pass reads the file again, one sample (or one small Parquet batch) at a time.
    `index()` is the light first pass; `samples()` then yields the samples it accepted."""

    def __init__(self, build_dir: Path, split: str, input_file: Path | None, limit: int | None,
                 config: str = EXPORT_CONFIG) -> None:
        self.limit = limit
        self.input_file = input_file
        self.shards: list[Path] = []
        if input_file is not None:
            if not input_file.is_file():
                raise UserError(f"{input_file}: no such file")
            self.source = str(input_file)
        else:
            self.shards = split_shards(build_dir, split, config)
            if not self.shards:
                available = _exported_splits(build_dir, config)
                found = f"exported splits: {', '.join(available)}" if available else "nothing exported yet"
                raise UserError(f"no split {split!r} under {build_dir / 'export' / config} ({found}); "
                                "run build-dataset export, or pass --input FILE")
            self.source = str(self.shards[0].parent / f"{split}-*.parquet")

    def _items(self) -> Iterator[Sample | InputReject]:
        return _canonical_items(self.input_file) if self.input_file is not None else _parquet_items(self.shards)

    def index(self, progress: StageProgress | None = None) -> BenchmarkIndex:
        index = BenchmarkIndex(self.source)
        for item in self._items():
            if self.limit is not None and len(index) >= self.limit:
                break
            if isinstance(item, InputReject):
                index.rejects.append(item)
            elif item.id in index.digests:
                # one id, two samples: a saved trajectory could not say which one it belongs to
                index.rejects.append(InputReject(item.id, "duplicate_id", "id already in the benchmark", self.source))
            else:
                index.add(item)
            if progress is not None:
                progress.advance()
        return index

    def samples(self, index: BenchmarkIndex) -> Iterator[Sample]:
        """The samples `index` accepted, read again in the same order (a duplicate id is the later
        sample, so it is skipped by its position); a file changed since the index was made stops
        the run rather than scoring other samples than it counted."""
        expected = 0
        for item in self._items():
            if expected >= len(index):
                return
            if isinstance(item, InputReject):
                continue
            position = index.position(item.id)
            if position < expected:
                continue  # the duplicate the index rejected
            if position > expected:
                raise UserError(f"{self.source} changed while evaluate was reading it (sample {item.id!r} out of "
                                "place); run evaluate again")
            expected += 1
            yield item
        if expected < len(index):
            raise UserError(f"{self.source} changed while evaluate was reading it ({expected} of {len(index)} "
                            "samples found again); run evaluate again")


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


def saved_trajectory_offsets(path: Path, expected: Mapping[str, str], settings: Mapping[str, Any]) -> dict[str, int]:
    """The reusable lines of an earlier run, as byte offsets by id (the last line of an id wins):
    for a sample of this benchmark (same content) run with the same settings. A line cut by a kill
    does not parse and is left out; the file's bad-line share is checked as any reader's is."""
    if not path.is_file():
        return {}
    offsets: dict[str, int] = {}
    settings = dict(settings)
    total = bad = 0
    first_error = None
    with open(path, "rb") as handle:
        offset = 0
        for line_no, raw in enumerate(handle, start=1):
            start, offset = offset, offset + len(raw)
            if line_no == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw, start = raw[3:], start + 3
            if not raw.strip():
                continue
            total += 1
            try:
                value = parse_json_line(raw)
            except ValueError as exc:
                bad += 1
                first_error = first_error or f"line {line_no}: {exc}"
                continue
            if not isinstance(value, dict) or not isinstance(value.get("turns"), list):
                continue
            sample_id = value.get("id")
            if expected.get(sample_id) == value.get("sample_sha") and value.get("settings") == settings:
                offsets[sample_id] = start
    check_bad_share(path, total, bad, first_error)
    return offsets


def read_trajectory(handle: IO[bytes], offset: int) -> dict[str, Any]:
    """The saved trajectory at `offset` of the open trajectories file."""
    handle.seek(offset)
    return parse_json_line(handle.readline())


def saved_trajectories(path: Path, expected: Mapping[str, str], settings: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """`saved_trajectory_offsets` with each line read (for a small file: the run reads by offset)."""
    offsets = saved_trajectory_offsets(path, expected, settings)
    if not offsets:
        return {}
    with open(path, "rb") as handle:
        return {sample_id: read_trajectory(handle, offset) for sample_id, offset in offsets.items()}


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


def _kept_in_input_order(path: Path, index: BenchmarkIndex, offsets: Mapping[str, int]) -> Iterator[dict[str, Any]]:
    """The reusable lines of `path`, one at a time, in the benchmark's order."""
    if not offsets:
        return
    with open(path, "rb") as handle:
        for sample_id in index.digests:
            if sample_id in offsets:
                yield read_trajectory(handle, offsets[sample_id])


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
    extra: dict[str, Any] = field(default_factory=dict)  # the protocol's: tables, choices, reference files

    @property
    def tables(self) -> list[dict[str, Any]]:
        return list(self.extra.get("tables") or [])

    def as_dict(self) -> dict[str, Any]:
        return {"protocol": "complexfuncbench", "model": self.model, "scores": self.scores, **self.extra,
                "trajectories": str(self.trajectories_path),
                "scores_file": str(self.scores_path), "input": self.source, "samples": self.samples,
                "ran": self.ran, "reused": self.reused, "not_evaluated": self.not_evaluated, "llm": self.llm,
                "judges": self.judges, "context_overflow": self.context_overflow}


ScoredObserver = Callable[[Sample, Mapping[str, Any], Any], None]
"""(sample, its saved trajectory line, its ComplexEvalVerdict): told of each sample as it is
scored, in input order (the protocol writes ComplexFuncBench's own result file from it)."""
DocumentExtra = Callable[[Mapping[str, Any]], dict[str, Any]]
"""(the summary) -> keys scores.json (and --json) carry before the summary: tables, choices."""


ProgressCallback = Callable[[int, int], None]  # (samples done, samples in total)


OptionsFor = Callable[[Sample], ComplexEvalOptions]


@dataclass
class _Counting:
    """This run's progress: the stage's progress (bar or log lines, and the memory ceiling) and
    the caller's callback, if any."""

    stage: StageProgress
    callback: ProgressCallback | None
    total: int

    def advance(self, count: int = 1) -> None:
        self.stage.advance(count)
        if self.callback is not None:
            self.callback(self.stage.done, self.total)


async def _run_samples(llm: LLMClient, samples: Iterable[Sample], settings: Mapping[str, Any],
                       log: TrajectoryLog, progress: _Counting, options_for: OptionsFor | None = None,
                       digests: Mapping[str, str] | None = None) -> list[Unanswered]:
    """`concurrency` workers, each taking the next sample (read from the input as it is taken)
    and playing it to its end."""
    pending = iter(samples)
    unanswered: list[Unanswered] = []
    digests = digests or {}

    async def worker() -> None:
        for sample in pending:  # one shared iterator: two workers never take the same sample
            outcome = await run_sample(llm, sample, settings, options_for(sample) if options_for else None,
                                       digests.get(sample.id))
            if isinstance(outcome, Unanswered):
                unanswered.append(outcome)
            else:
                log.append(outcome.to_json())
            progress.advance()

    await run_workers(worker, llm.parallelism)
    return unanswered


async def _drive(config: LLMConfig, cache: RequestCache, samples: Iterable[Sample], settings: Mapping[str, Any],
                 log: TrajectoryLog, progress: _Counting, environ: Mapping[str, str] | None,
                 options_for: OptionsFor | None = None,
                 digests: Mapping[str, str] | None = None) -> tuple[list[Unanswered], dict[str, Any]]:
    async with LLMClient(config, cache, environ=environ) as llm:
        unanswered = await _run_samples(llm, samples, settings, log, progress, options_for, digests)
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
             judge: LLMConfig | None = None, observer: ScoredObserver | None = None,
             document_extra: DocumentExtra | None = None) -> EvaluationResult:
    """Run the model on every sample not already evaluated, then score all saved trajectories.
    With `judge`, the LLM judges decide call equivalence (after the rules and the recorded
    responses) during the run and when scoring, and grade the final answers; their verdicts are
    cached in build/eval/<model>/judges.sqlite. Without it, the rule-based stand-ins judge.

    Streams: the input is read once for ids and digests, then again for the samples to run and
    again to score them one at a time against their saved trajectory (read back by offset), so
    memory does not grow with the number of samples; every pass counts through `StageProgress`,
    which stops the run past the memory ceiling (`fcbench.runtime.memory`)."""
    benchmark = BenchmarkInput(build_dir, split, input_file, limit)
    label = f"evaluate {config.model}"
    with StageProgress(f"{label}: reading", None) as reading:
        index = benchmark.index(reading)
    paths = EvalPaths.for_model(build_dir, config.model)
    created = not paths.model_dir.exists()
    paths.model_dir.mkdir(parents=True, exist_ok=True)
    try:
        hooks = _Hooks(observer, document_extra)
        if judge is None:
            return _evaluate_into(config, benchmark, index, paths, extra_turns, environ, progress, hooks=hooks)
        with LLMJudges(judge, paths.model_dir / JUDGE_CACHE_FILE, environ=environ) as judges:
            return _evaluate_into(config, benchmark, index, paths, extra_turns, environ, progress, judges, hooks)
    except BaseException:
        # A run that failed before any trajectory was saved (endpoint down, key refused, killed
        # at once) leaves no model folder behind for later reports to list as a broken evaluation.
        if created and not _has_trajectories(paths):
            shutil.rmtree(paths.model_dir, ignore_errors=True)
        raise


def _has_trajectories(paths: EvalPaths) -> bool:
    return paths.trajectories.is_file() and paths.trajectories.stat().st_size > 0


def _recorded_responses(benchmark: BenchmarkInput, index: BenchmarkIndex, calls: DiskCalls,
                        label: str) -> RecordedEnvironment:
    """The gold responses of the benchmark's samples, by call (the judges' response layer), kept in
    a temporary database on disk rather than in memory."""
    store = RecordedStore(index.schemas, calls=calls)
    with StageProgress(f"{label}: recording responses", len(index)) as progress:
        for sample in benchmark.samples(index):
            store.add_samples([sample])
            progress.advance()
    return RecordedEnvironment(store)


@dataclass(frozen=True)
class _Hooks:
    observer: ScoredObserver | None = None
    document_extra: DocumentExtra | None = None


def _evaluate_into(config: LLMConfig, benchmark: BenchmarkInput, index: BenchmarkIndex, paths: EvalPaths,
                   extra_turns: int, environ: Mapping[str, str] | None, progress: ProgressCallback | None,
                   judges: LLMJudges | None = None, hooks: _Hooks = _Hooks()) -> EvaluationResult:
    label = f"evaluate {config.model}"
    settings = run_settings(config, extra_turns, judges.config if judges else None)
    calls = DiskCalls() if judges else None
    try:
        options_for = None
        if judges is not None and calls is not None:
            options_for = options_with_responses(_recorded_responses(benchmark, index, calls, label), judges)
        kept = saved_trajectory_offsets(paths.trajectories, index.digests, settings)
        to_run = sum(sample_id not in kept for sample_id in index.digests)
        log = TrajectoryLog(paths.trajectories, _kept_in_input_order(paths.trajectories, index, kept))
        unanswered: list[Unanswered] = []
        llm_summary: dict[str, Any] = {}
        try:
            with StageProgress(label, len(index)) as stage:
                counting = _Counting(stage, progress, len(index))
                counting.advance(len(kept))
                if to_run:
                    pending = (sample for sample in benchmark.samples(index) if sample.id not in kept)
                    with RequestCache(paths.cache) as cache:
                        # each digest as the index computed it: a sample is serialised for it once
                        unanswered, llm_summary = asyncio.run(_drive(config, cache, pending, settings, log, counting,
                                                                     environ, options_for, index.digests))
        finally:
            log.close()
        return _score_and_write(config, benchmark, index, paths, settings, unanswered, llm_summary, ran=to_run,
                                reused=len(kept), judges=judges, options_for=options_for, hooks=hooks)
    finally:
        if calls is not None:
            calls.close()


def _score_and_write(config: LLMConfig, benchmark: BenchmarkInput, index: BenchmarkIndex, paths: EvalPaths,
                     settings: Mapping[str, Any], unanswered: Sequence[Unanswered], llm_summary: dict[str, Any],
                     ran: int, reused: int, judges: LLMJudges | None = None,
                     options_for: OptionsFor | None = None, hooks: _Hooks = _Hooks()) -> EvaluationResult:
    """Score every saved trajectory against its sample, one sample at a time, and write the
    trajectories (input order, not completion order: the same benchmark gives the same files
    however it ran), the rejects and scores.json; the scores' items are spooled to disk, since the
    summary they are counted into comes first in scores.json."""
    saved = saved_trajectory_offsets(paths.trajectories, index.digests, settings)
    tally = ComplexEvalTally()
    completeness_judge = judges.completeness_judge if judges else naive_completeness_judge
    correctness_judge = judges.correctness_judge if judges else naive_correctness_judge
    overflow: list[str] = []
    missing: list[str] = []
    label = f"evaluate {config.model}: scoring"
    with (JsonListSpool(paths.model_dir) as items, StageProgress(label, len(saved)) as progress,
          open(paths.trajectories, "rb") as log):

        def scored_lines() -> Iterator[str]:
            for sample in benchmark.samples(index):
                if sample.id not in saved:
                    # the gold set's rule (fcbench.score.gold_set): a sample the run could not get a
                    # trajectory for (llm_error) is scored as a failure, never left out of the figures
                    missing.append(sample.id)
                    items.append(tally.add_missing(sample))
                    continue
                line = read_trajectory(log, saved[sample.id])
                if line.get("stop_reason") == STOP_CONTEXT_OVERFLOW:
                    overflow.append(line["id"])
                # the same layers as the live run: its verdicts come back from the judges' cache
                options = options_for(sample) if options_for is not None else ComplexEvalOptions()
                verdict = score_trajectory(sample, line["turns"] or [], options, completeness_judge,
                                           correctness_judge)
                if hooks.observer is not None:
                    hooks.observer(sample, line, verdict)
                items.append(tally.add(verdict))
                progress.advance()
                yield dumps_line(line)

        write_text_lines(paths.trajectories, scored_lines())
        summary = tally.summary(completeness_judge, correctness_judge)
        if judges is not None:
            llm_summary = {**llm_summary, "judges": judges.summary()}
        not_evaluated = Counter(reject.reason for reject in index.rejects)
        not_evaluated.update("llm_error" for _ in unanswered)
        rejects = [reject.to_json() for reject in index.rejects]
        rejects += [{"id": item.sample_id, "reason": "llm_error", "detail": item.reason}  # not completion order
                    for item in sorted(unanswered, key=lambda item: index.position(item.sample_id))]
        write_json_lines(paths.rejects, rejects)
        extra = hooks.document_extra(summary) if hooks.document_extra is not None else {}
        # who judged comes first: a reader of scores.json sees at once whether these are LLM verdicts
        document = {"judges_note": judges_line(summary["judges"]), "judges": summary["judges"],
                    "metric": "complexeval", "model": config.model, "input": benchmark.source,
                    "samples": len(index), "settings": dict(settings),
                    "not_evaluated": dict(sorted(not_evaluated.items())), **extra,
                    "gold_set": {"gold": len(index), "answered": len(index) - len(missing), "missing": missing},
                    "summary": summary, "items": None}
        if config.context_window is not None:
            document["context_overflow"] = {"samples": overflow, "window": config.context_window,
                                            "tokenizer": ENCODING}
        write_json_with_list(paths.scores, document, "items", items)
    return EvaluationResult(model=config.model, source=benchmark.source, samples=len(index),
                            trajectories_path=paths.trajectories, scores_path=paths.scores,
                            rejects_path=paths.rejects, scores=summary, ran=ran, reused=reused,
                            not_evaluated=dict(sorted(not_evaluated.items())), llm=llm_summary,
                            judges=summary["judges"], context_overflow=overflow, extra=extra)


def evaluate_pipeline(pipeline: PipelineConfig, model: str, *, base_url: str | None = None,
                      split: str = DEFAULT_SPLIT, input_file: Path | None = None, limit: int | None = None,
                      extra_turns: int = DEFAULT_EXTRA_TURNS, environ: Mapping[str, str] | None = None,
                      progress: ProgressCallback | None = None, batch: bool = False,
                      judge_model: str | None = None, judge_base_url: str | None = None,
                      context_window: int | None = None, sampling: Mapping[str, Any] | None = None,
                      observer: ScoredObserver | None = None,
                      document_extra: DocumentExtra | None = None) -> EvaluationResult:
    """`sampling`: decoding settings over the pipeline's llm block (the protocol's: the paper's
    temperature and max_tokens unless the command line set them)."""
    config = evaluation_llm_config(pipeline, model, base_url, batch, context_window)
    if sampling:
        config = config.model_copy(update=dict(sampling))
    if judge_base_url is not None and judge_model is None and pipeline.judge is None:
        raise UserError("--judge-base-url needs --judge-model (or a judge block in pipelines.yaml)")
    # the pipeline's judge block with the command line's model and endpoint, at temperature 0,
    # online: the protocol waits for each verdict (None: the rule-based stand-ins judge)
    judge = judge_llm_config(pipeline.judge, judge_model, judge_base_url)
    if judge is not None:
        judge = judge.model_copy(update={"mode": "online"})
    return evaluate(config, pipeline.build_dir, split=split, input_file=input_file, limit=limit,
                    extra_turns=extra_turns, environ=environ, progress=progress, judge=judge, observer=observer,
                    document_extra=document_extra)
