"""Open the environment a pipeline declares (`environment:` in pipelines.yaml)."""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from typing import Callable, Iterable, Sequence
from typing import Any

from fcbench.config import PipelineConfig
from fcbench.stage import pipeline_catalog
from fcbench.environments import Environment
from fcbench.errors import UserError
from fcbench.registry import Registry
from fcbench.sample import Sample, Tool

# kind (pipelines.yaml `environment.kind`) -> opener(pipeline, tools), each registered on its
# opener below; the one place that knows the kinds (fcbench.registry)
EnvironmentOpener = Callable[[PipelineConfig, list[Tool]], Environment]
ENVIRONMENTS: Registry[EnvironmentOpener] = Registry("environment kind")


def pipeline_tools(pipeline: PipelineConfig, samples: Iterable[Sample]) -> list[Tool]:
    """The pipeline's catalog when it names one, else the tools the samples carry (first spec of
    each name), so argument coercion always has a schema. `samples` is iterated once, only when
    the pipeline names no catalog (a stream of a large file is never held)."""
    catalog = pipeline_catalog(pipeline)
    if catalog is not None:
        return catalog
    tools: dict[str, Tool] = {}
    for sample in samples:
        for tool in sample.tools:
            tools.setdefault(tool.name, tool)
    return list(tools.values())


def open_environment(pipeline: PipelineConfig, samples: Iterable[Sample]) -> Environment:
    settings = pipeline.environment
    if settings is None:
        raise UserError(f"pipeline {pipeline.name!r} declares no environment: add `environment:` to pipelines.yaml")
    opener = ENVIRONMENTS.get(settings.kind, where=f"pipeline {pipeline.name!r}: ")
    return opener(pipeline, pipeline_tools(pipeline, samples))


def environment_for(pipeline: PipelineConfig, samples: Iterable[Sample],
                    given: Environment | None) -> AbstractContextManager[Environment]:
    """`given` as it is (an environment the caller opened and closes: tests, a shared pool), else
    the pipeline's, opened for the block and closed after it (`samples` give it its tools)."""
    return nullcontext(given) if given is not None else open_environment(pipeline, samples)


@ENVIRONMENTS.register("python")
def _python_environment(pipeline: PipelineConfig, tools: list[Tool]) -> Environment:
    """Tool implementations run in worker subprocesses (locally, or as Ray tasks with `backend: ray`)."""
    from fcbench.environments.python_env import EnvironmentStartError, PythonEnvironment

    settings = pipeline.environment
    if not settings.module:
        raise UserError(f"pipeline {pipeline.name!r}: a python environment needs `module:`")
    try:
        if settings.backend == "ray":
            return _ray_environment(pipeline, tools)
        return PythonEnvironment(pipeline.resolve(settings.module), tools, workers=settings.workers,
                                 timeout=settings.timeout_s, memory_limit_mb=settings.memory_mb,
                                 seed=pipeline.seed, **_sandbox_settings(pipeline))
    except EnvironmentStartError as exc:
        raise UserError(f"pipeline {pipeline.name!r}: {exc}") from None


@ENVIRONMENTS.register("recorded")
def _recorded_environment(pipeline: PipelineConfig, tools: list[Tool]) -> Environment:
    """Answers from recorded responses only (no tool code, no network)."""
    from fcbench.environments.recorded import RecordedEnvironment, RecordedStore

    try:  # the config guarantees `responses` for this kind
        return RecordedEnvironment(RecordedStore.load(pipeline.resolve(pipeline.environment.responses or ""), tools))
    except (OSError, ValueError) as exc:
        raise UserError(f"pipeline {pipeline.name!r}: {exc}") from None


@ENVIRONMENTS.register("http")
def _http_environment(pipeline: PipelineConfig, tools: list[Tool]) -> Environment:
    """Replay from the recorded store (offline, the default), or with `record` (set by `--record`)
    call the server and record into the store, sending only the calls not recorded yet."""
    from fcbench.environments.recorded import RecordedEnvironment, load_store_and_journal

    settings = pipeline.environment
    store_path = pipeline.resolve(settings.responses or "")
    if not settings.record:
        try:
            return RecordedEnvironment(load_store_and_journal(store_path, tools))
        except (OSError, ValueError) as exc:
            raise UserError(f"pipeline {pipeline.name!r}: {exc}") from None
    from fcbench.environments.http_env import HttpEnvironment

    return HttpEnvironment(tools, base_url=settings.base_url, base_urls=settings.base_urls, timeout=settings.timeout_s,
                           auth_env=settings.auth_env, auth_header=settings.auth_header, auth_scheme=settings.auth_scheme,
                           auth_in=settings.auth_in,
                           record_path=store_path, retries=settings.retries, max_per_host=settings.max_per_host,
                           max_response_bytes=int(settings.max_response_mb * 1024 * 1024))


def with_recording(pipeline: PipelineConfig) -> PipelineConfig:
    """The pipeline with its http environment switched to recording (`--record`)."""
    settings = pipeline.environment
    if settings is None or settings.kind != "http":
        raise UserError(f"pipeline {pipeline.name!r}: --record needs an `http` environment")
    settings.record = True
    return pipeline


def _ray_environment(pipeline: PipelineConfig, tools: Sequence[Tool]) -> Environment:
    """`backend: ray`: the same worker subprocesses, driven by Ray tasks (see ray_backend.py)."""
    from fcbench.environments.ray_backend import RayEnvironment

    settings = pipeline.environment
    assert settings is not None and settings.module is not None
    ray = settings.ray
    return RayEnvironment(pipeline.resolve(settings.module), tools, address=ray.address,
                          num_cpus=ray.num_cpus or (settings.workers if ray.address is None else None), paths_per_task=ray.paths_per_task,
                          max_retries=ray.max_retries, object_store_mb=ray.object_store_mb,
                          timeout=settings.timeout_s, memory_limit_mb=settings.memory_mb, seed=pipeline.seed,
                          **_sandbox_settings(pipeline))


def _sandbox_settings(pipeline: PipelineConfig) -> dict[str, Any]:
    """What the pipeline lets its tools see and write beyond the sandbox's defaults (sandbox.py)."""
    settings = pipeline.environment
    return {"pass_env": list(settings.pass_env), "writable": [pipeline.resolve(path) for path in settings.writable],
            "max_file_mb": settings.max_file_mb}


@ENVIRONMENTS.register("simulated")
def _simulated_environment(pipeline: PipelineConfig, tools: list[Tool]) -> Environment:
    """The LLM answers each call from the tool's description and output schema (cached)."""
    from fcbench.environments.simulated import SimulatedEnvironment
    from fcbench.llm.cache import LLM_CACHE_FILE

    if pipeline.llm is None:
        raise UserError(f"pipeline {pipeline.name!r}: environment kind 'simulated' needs an `llm:` block")
    reference_time = pipeline.conversation.reference_time if pipeline.conversation else ""
    pipeline.build_dir.mkdir(parents=True, exist_ok=True)
    return SimulatedEnvironment(tools, pipeline.llm, pipeline.build_dir / LLM_CACHE_FILE, reference_time,
                                jitter_seed=pipeline.seed)

