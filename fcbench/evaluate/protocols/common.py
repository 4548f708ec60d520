"""The runner loop every protocol but ComplexEval shares (`run_protocol`), and the protocol contract.

A protocol (`Protocol`) says what it runs and how it scores; this module does the rest, the same
way for each:

1. refuse, before anything is sent, a protocol that does not fit the pipeline (one clear line);
2. read the benchmark (the exported split, or `--input`), the rejected items counted;
3. cut it into work items (a sample; a sample and a run for repeated runs), each keyed;
4. reuse what an earlier run saved in `predictions.jsonl` for the same item, sample (digest) and
   settings, and run the rest through the one LLM layer (`LLMClient`: request cache, retries,
   Batch API with `--batch`), each finished item appended at once, so a run killed at any point
   resumes and no answered request is paid twice (the cache answers the turns of an item cut
   short);
5. rewrite `predictions.jsonl` in work order (the same benchmark gives the same bytes however
   the run went), write the reference's own prediction files, score, and write `scores.json`
   (the choices made, the settings, who judged, the paper-layout tables, the summary, the items)
   and `evaluate.rejects.jsonl`.

Where: `<build>/eval/<model-slug>/<protocol folder>/`. The benchmark is held in memory (the
published benchmarks these protocols reproduce have at most a few thousand items); ComplexEval's
runner (`fcbench.evaluate.runner`) streams, for 1,000 long-context samples.
"""

from __future__ import annotations

import asyncio
import json
import shutil
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from fcbench.config import LLMConfig, PipelineConfig
from fcbench.environments import Environment
from fcbench.errors import UserError
from fcbench.evaluate.runner import (EXPORT_CONFIG, BenchmarkInput, InputReject, Unanswered, evaluation_llm_config,
                                     model_slug, sample_digest)
from fcbench.jsonl import check_bad_share, dumps_line, parse_json_line, write_json, write_json_lines
from fcbench.llm.cache import RequestCache
from fcbench.llm.client import LLMClient, run_workers
from fcbench.llm.judge import judge_llm_config
from fcbench.runtime.progress import StageProgress
from fcbench.sample import Sample

EVAL_DIR = "eval"
PREDICTIONS_FILE = "predictions.jsonl"
SCORES_FILE = "scores.json"
REJECTS_FILE = "evaluate.rejects.jsonl"
REQUESTS_CACHE = "requests.sqlite"
JUDGES_CACHE = "judges.sqlite"


# ------------------------------------------------------------------------------------ options
@dataclass(frozen=True)
class ProtocolOptions:
    """What one `build-dataset evaluate` invocation chooses; None keeps the protocol's default."""

    model: str
    base_url: str | None = None
    split: str = "test"
    input_file: Path | None = None
    limit: int | None = None
    batch: bool = False
    temperature: float | None = None
    max_tokens: int | None = None
    runs: int | None = None  # callnavi: repeated runs of each question
    icl_examples: int = 3  # nestful-icl: the first k of NESTful's icl_examples.json
    max_steps: int = 10  # nestful-react: actions per question
    compat: bool = False  # the tables show the published scorer's figures where it differs
    judge_model: str | None = None
    judge_base_url: str | None = None
    context_window: int | None = None
    extra_turns: int = 3  # complexfuncbench
    environ: Mapping[str, str] | None = None
    progress: Any = None  # (done, total) callback


@dataclass(frozen=True)
class WorkItem:
    """One unit of work: a sample (and, for repeated runs, which run; for a benchmark of two
    sets, which set). `key` names it in predictions.jsonl."""

    key: str
    sample: Sample
    digest: str
    run: int = 0
    part: str = EXPORT_CONFIG


@dataclass
class RunContext:
    """What a protocol's `run_item` may use: the model, the pipeline's environment (open for the
    whole run, or None), this run's options and the settings recorded with every prediction."""

    llm: LLMClient
    pipeline: PipelineConfig
    options: ProtocolOptions
    environment: Environment | None
    settings: dict[str, Any]


@dataclass
class Finished:
    """What scoring a run gives back to the loop."""

    summary: dict[str, Any]
    items: list[dict[str, Any]]
    tables: list[dict[str, Any]]
    reference_files: dict[str, str]  # what -> path of a file in the reference's own format
    judges: dict[str, Any] = field(default_factory=dict)  # who judged what (a stand-in named as such)
    first_line: str = ""  # said before everything else (who judged)


@dataclass
class ScoringContext:
    """What a protocol's `finish` gets: the work, the saved record of each item that has one, in
    work order, the folder to write into, and the judge LLM (None: the rule-based stand-ins)."""

    pipeline: PipelineConfig
    options: ProtocolOptions
    folder: Path
    work: list[WorkItem]
    records: dict[str, dict[str, Any]]
    environment: Environment | None
    judge: LLMConfig | None
    model: str


class Protocol(ABC):
    """One paper's way of running models: `evaluate(pipeline)` runs and scores it. The docstring of
    each says the choices it made where the paper leaves one open, and `choices` repeats them for
    scores.json."""

    name: ClassVar[str]
    kind: ClassVar[str] = "single"  # the pipeline kind it runs on
    temperature: ClassVar[float]  # the paper's decoding settings (overridable)
    max_tokens: ClassVar[int]
    sampling_source: ClassVar[str]  # where those settings come from
    choices: ClassVar[tuple[str, ...]] = ()
    parts: ClassVar[tuple[str, ...]] = (EXPORT_CONFIG,)  # the exported configs it reads

    def __init__(self, options: ProtocolOptions) -> None:
        self.options = options

    # -- before anything is sent ---------------------------------------------------------------
    def refusal(self, pipeline: PipelineConfig) -> str | None:
        """Why this protocol cannot run on the pipeline (one line), or None."""
        if pipeline.kind != self.kind:
            if self.kind == "single":
                return (f"--protocol {self.name} runs single-turn samples; pipeline {pipeline.name!r} is "
                        f"kind {pipeline.kind} (use --protocol confetti)")
            return (f"--protocol {self.name} evaluates conversation turns teacher-forced; pipeline "
                    f"{pipeline.name!r} is kind {pipeline.kind} (use --protocol complexfuncbench, nestful-icl, "
                    "nestful-react or callnavi)")
        return None

    def folder(self) -> str:
        return self.name

    def llm_config(self, pipeline: PipelineConfig) -> LLMConfig:
        config = evaluation_llm_config(pipeline, self.options.model, self.options.base_url, self.options.batch,
                                       self.options.context_window)
        temperature = self.temperature if self.options.temperature is None else self.options.temperature
        max_tokens = self.max_tokens if self.options.max_tokens is None else self.options.max_tokens
        return config.model_copy(update={"temperature": temperature, "max_tokens": max_tokens})

    def run_settings(self, config: LLMConfig) -> dict[str, Any]:
        """What shapes a prediction: a saved one is reused only when all of it is unchanged."""
        return {"protocol": self.name, "model": config.model, "temperature": config.temperature,
                "max_tokens": config.max_tokens, "seed": config.seed}

    def needs_environment(self, pipeline: PipelineConfig) -> bool:
        """Whether the run opens the pipeline's environment (to execute calls)."""
        return False

    def split_parts(self, samples: list[Sample]) -> dict[str, list[Sample]]:
        """The samples of one `--input` file by part (a one-part protocol: all of them)."""
        return {self.parts[0]: samples}

    @abstractmethod
    def evaluate(self, pipeline: PipelineConfig) -> Any:
        """Run the model on the pipeline's benchmark and score it (a result with `as_dict()`,
        `tables`, `scores`)."""


class LoopProtocol(Protocol):
    """A protocol run by the shared loop (`run_protocol`): it says what the work items are, how
    one is run and how the saved records are scored."""

    def evaluate(self, pipeline: PipelineConfig) -> ProtocolResult:
        return run_protocol(pipeline, self)

    # -- the work ------------------------------------------------------------------------------
    @abstractmethod
    def work_items(self, part: str, samples: Sequence[Sample], digests: Mapping[str, str]) -> list[WorkItem]: ...

    @abstractmethod
    async def run_item(self, ctx: RunContext, item: WorkItem) -> dict[str, Any] | Unanswered:
        """Run one item; the record is saved as it is (plus the loop's own keys)."""

    @abstractmethod
    def finish(self, ctx: ScoringContext) -> Finished:
        """Write the reference's files and score every saved record."""


# -------------------------------------------------------------------------------- the benchmark
@dataclass
class Benchmark:
    samples: dict[str, list[Sample]]  # part -> samples in input order
    digests: dict[str, str]  # (part-qualified) sample key -> digest
    rejects: list[InputReject]
    source: str


def load_benchmark(pipeline: PipelineConfig, protocol: LoopProtocol, options: ProtocolOptions) -> Benchmark:
    """The exported split of every part the protocol reads, or the `--input` file split by part."""
    inputs: list[tuple[str | None, BenchmarkInput]] = []
    if options.input_file is not None:
        inputs.append((None, BenchmarkInput(pipeline.build_dir, options.split, options.input_file, options.limit)))
    else:
        inputs += [(part, BenchmarkInput(pipeline.build_dir, options.split, None, options.limit, config=part))
                   for part in protocol.parts]
    samples: dict[str, list[Sample]] = {part: [] for part in protocol.parts}
    rejects: list[InputReject] = []
    for part, source in inputs:
        with StageProgress(f"evaluate {options.model}: reading", None) as progress:
            index = source.index(progress)
        rejects.extend(index.rejects)
        read = list(source.samples(index))
        for name, part_samples in (protocol.split_parts(read) if part is None else {part: read}).items():
            samples.setdefault(name, []).extend(part_samples)
    digests = {f"{part}/{sample.id}": sample_digest(sample) for part, items in samples.items() for sample in items}
    source = str(options.input_file) if options.input_file is not None else ", ".join(
        source.source for _, source in inputs)
    return Benchmark(samples, digests, rejects, source)


# ----------------------------------------------------------------------------- saved predictions
def saved_records(path: Path, expected: Mapping[str, str], settings: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The reusable lines of an earlier run, by key: an item of this benchmark (same sample
    digest) run with the same settings. A line cut by a kill does not parse and is left out."""
    if not path.is_file():
        return {}
    kept: dict[str, dict[str, Any]] = {}
    total = bad = 0
    first_error = None
    settings = dict(settings)
    with open(path, "rb") as handle:
        for line_no, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            total += 1
            try:
                value = parse_json_line(raw)
            except ValueError as exc:
                bad += 1
                first_error = first_error or f"line {line_no}: {exc}"
                continue
            if not isinstance(value, dict):
                continue
            key = value.get("key")
            if key in expected and expected[key] == value.get("sample_sha") and value.get("settings") == settings:
                kept[key] = value
    check_bad_share(path, total, bad, first_error)
    return kept


class PredictionLog:
    """Appends each finished item as one line, flushed at once: a kill loses at most the line
    being written (which the next run ignores)."""

    def __init__(self, path: Path, kept: Sequence[Mapping[str, Any]]) -> None:
        write_json_lines(path, kept)  # the reusable lines only: a cut line must not stay in front
        self._handle = open(path, "a", encoding="utf-8")  # noqa: SIM115 - closed by close()

    def append(self, record: Mapping[str, Any]) -> None:
        self._handle.write(dumps_line(record) + "\n")
        self._handle.flush()

    def close(self) -> None:
        self._handle.close()


# ----------------------------------------------------------------------------------- the result
@dataclass
class ProtocolResult:
    protocol: str
    model: str
    source: str
    items: int  # work items in the benchmark
    folder: Path
    predictions_path: Path
    scores_path: Path
    rejects_path: Path
    finished: Finished
    choices: list[str]
    settings: dict[str, Any]
    ran: int = 0
    reused: int = 0
    not_evaluated: dict[str, int] = field(default_factory=dict)
    llm: dict[str, Any] = field(default_factory=dict)

    @property
    def scores(self) -> dict[str, Any]:
        return self.finished.summary

    @property
    def tables(self) -> list[dict[str, Any]]:
        return self.finished.tables

    def as_dict(self) -> dict[str, Any]:
        return {"protocol": self.protocol, "model": self.model, "judges_note": self.finished.first_line,
                "scores": self.scores, "tables": self.tables, "choices": self.choices, "settings": self.settings,
                "predictions": str(self.predictions_path), "reference_files": self.finished.reference_files,
                "scores_file": str(self.scores_path), "input": self.source, "items": self.items, "ran": self.ran,
                "reused": self.reused, "not_evaluated": self.not_evaluated, "llm": self.llm}


# ------------------------------------------------------------------------------------- the loop
def run_protocol(pipeline: PipelineConfig, protocol: LoopProtocol) -> ProtocolResult:
    options = protocol.options
    refusal = protocol.refusal(pipeline)
    if refusal:
        raise UserError(refusal)
    if options.judge_base_url is not None and options.judge_model is None and pipeline.judge is None:
        raise UserError("--judge-base-url needs --judge-model (or a judge block in pipelines.yaml)")
    config = protocol.llm_config(pipeline)
    judge = judge_llm_config(pipeline.judge, options.judge_model, options.judge_base_url, options.batch)
    benchmark = load_benchmark(pipeline, protocol, options)
    work = [item for part, samples in benchmark.samples.items()
            for item in protocol.work_items(part, samples, benchmark.digests)]
    if not work:
        raise UserError(f"nothing to evaluate in {benchmark.source}: no sample was read"
                        + (f" ({len(benchmark.rejects)} rejected)" if benchmark.rejects else ""))
    folder = pipeline.build_dir / EVAL_DIR / model_slug(config.model) / protocol.folder()
    created = not folder.exists()
    folder.mkdir(parents=True, exist_ok=True)
    try:
        return _run_into(pipeline, protocol, config, judge, benchmark, work, folder)
    except BaseException:
        # a run that failed before any prediction was saved (endpoint down, key refused) leaves no
        # folder behind for a later report to list as a broken evaluation
        predictions = folder / PREDICTIONS_FILE
        if created and not (predictions.is_file() and predictions.stat().st_size):
            shutil.rmtree(folder, ignore_errors=True)
        raise


def _run_into(pipeline: PipelineConfig, protocol: LoopProtocol, config: LLMConfig, judge: LLMConfig | None,
              benchmark: Benchmark, work: list[WorkItem], folder: Path) -> ProtocolResult:
    options = protocol.options
    settings = protocol.run_settings(config)
    predictions = folder / PREDICTIONS_FILE
    expected = {item.key: item.digest for item in work}
    kept = saved_records(predictions, expected, settings)
    pending = [item for item in work if item.key not in kept]
    environment = None
    if protocol.needs_environment(pipeline):
        from fcbench.environments.from_config import open_environment

        environment = open_environment(pipeline, [item.sample for item in work])
    try:
        llm_summary: dict[str, Any] = {}
        unanswered: list[tuple[WorkItem, Unanswered]] = []
        log = PredictionLog(predictions, [kept[item.key] for item in work if item.key in kept])
        try:
            with StageProgress(f"evaluate {config.model} ({protocol.name})", len(work)) as progress:
                progress.advance(len(kept))
                if options.progress is not None:
                    options.progress(progress.done, len(work))
                if pending:
                    with RequestCache(folder / REQUESTS_CACHE) as cache:
                        unanswered, llm_summary = asyncio.run(_drive(
                            pipeline, protocol, config, cache, pending, settings, log, progress, environment))
        finally:
            log.close()
        records = saved_records(predictions, expected, settings)
        write_json_lines(predictions, [records[item.key] for item in work if item.key in records])  # work order
        finished = protocol.finish(ScoringContext(pipeline, options, folder, work, records, environment, judge,
                                                  config.model))
    finally:
        if environment is not None:
            environment.close()
    not_evaluated = Counter(reject.reason for reject in benchmark.rejects)
    not_evaluated.update("llm_error" for _ in unanswered)
    position = {item.key: index for index, item in enumerate(work)}
    rejects = [reject.to_json() for reject in benchmark.rejects]
    rejects += [{"id": item.sample.id, "key": item.key, "reason": "llm_error", "detail": outcome.reason}
                for item, outcome in sorted(unanswered, key=lambda pair: position[pair[0].key])]
    rejects_path = folder / REJECTS_FILE
    write_json_lines(rejects_path, rejects)
    choices = [f"decoding: temperature {config.temperature}, max_tokens {config.max_tokens} "
               f"({protocol.sampling_source if _paper_sampling(options) else 'set on the command line'})",
               *protocol.choices]
    document = {"judges_note": finished.first_line, "judges": finished.judges, "protocol": protocol.name,
                "model": config.model, "input": benchmark.source, "items_total": len(work), "settings": settings,
                "choices": choices, "not_evaluated": dict(sorted(not_evaluated.items())),
                "reference_files": {what: _relative(path, folder) for what, path in finished.reference_files.items()},
                "tables": finished.tables, "summary": finished.summary, "items": finished.items}
    scores_path = folder / SCORES_FILE
    write_json(scores_path, document, indent=2)
    return ProtocolResult(protocol.name, config.model, benchmark.source, len(work), folder, predictions, scores_path,
                          rejects_path, finished, choices, settings, ran=len(pending), reused=len(kept),
                          not_evaluated=dict(sorted(not_evaluated.items())), llm=llm_summary)


def _paper_sampling(options: ProtocolOptions) -> bool:
    return options.temperature is None and options.max_tokens is None


def _relative(path: str, folder: Path) -> str:
    try:
        return str(Path(path).relative_to(folder))
    except ValueError:
        return path


async def _drive(pipeline: PipelineConfig, protocol: LoopProtocol, config: LLMConfig, cache: RequestCache,
                 pending: list[WorkItem], settings: dict[str, Any], log: PredictionLog, progress: StageProgress,
                 environment: Environment | None) -> tuple[list[tuple[WorkItem, Unanswered]], dict[str, Any]]:
    """`parallelism` workers take the next item, run it and append its record."""
    options = protocol.options
    unanswered: list[tuple[WorkItem, Unanswered]] = []
    async with LLMClient(config, cache, environ=options.environ) as llm:
        ctx = RunContext(llm, pipeline, options, environment, settings)
        queue: Iterator[WorkItem] = iter(pending)

        async def worker() -> None:
            for item in queue:  # one shared iterator: two workers never take the same item
                outcome = await protocol.run_item(ctx, item)
                if isinstance(outcome, Unanswered):
                    unanswered.append((item, outcome))
                else:
                    log.append({"key": item.key, "id": item.sample.id, "part": item.part, "run": item.run,
                                **outcome, "sample_sha": item.digest, "settings": settings})
                progress.advance()
                if options.progress is not None:
                    options.progress(progress.done, progress.total)

        await run_workers(worker, llm.parallelism)
        return unanswered, llm.summary()


# ---------------------------------------------------------------------------------- shared helpers
def item_key(part: str, sample: Sample, run: int | None = None) -> str:
    key = f"{part}/{sample.id}"
    return key if run is None else f"{key}#{run}"


def samples_by_id(work: Sequence[WorkItem]) -> dict[str, Sample]:
    return {item.sample.id: item.sample for item in work}


def json_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)
