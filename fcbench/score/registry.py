"""The one metric registry. Each metric is registered where it is defined (`@metric("nestful")`
on its pure scorer, in `fcbench/score/<family>.py`); the command that grades prediction files
(`build-dataset score --metric NAME`) attaches the metric's file reader next to that reader
(`fcbench.evaluate.score_files`), and looks metrics up here and nowhere else."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, TypeVar

from fcbench.registry import Registry

F = TypeVar("F", bound=Callable[..., Any])


@dataclass
class Metric:
    name: str
    score: Callable[..., Any]  # the pure scorer: parsed data in, typed result out
    llm_judged: bool = False  # graded in part by an LLM judge (`score --llm-model/--pipeline/--offline`)
    # prediction files -> result (`score --metric NAME`); None: a scorer other code calls, not a command
    score_files: Callable[[Any], Any] | None = None


METRICS: Registry[Metric] = Registry("metric")


def metric(name: str, *, llm_judged: bool = False) -> Callable[[F], F]:
    """Register the decorated pure scorer as the metric `name`."""

    def register(score: F) -> F:
        METRICS.register(name, Metric(name, score, llm_judged))
        return score

    return register


def reads_files(name: str) -> Callable[[F], F]:
    """Attach the decorated function as metric `name`'s reader of prediction files."""

    def attach(score_files: F) -> F:
        METRICS.get(name).score_files = score_files
        return score_files

    return attach


def file_metrics() -> list[Metric]:
    """The metrics `score --metric` grades files with, in registration order."""
    return [entry for entry in METRICS if entry.score_files is not None]
