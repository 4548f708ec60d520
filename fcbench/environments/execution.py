"""Executing a sample's gold path against an environment, and computing its final answer.

Steps run in order, the parallel calls of a step together, references resolved from earlier
results (`fcbench.environments.run_path`). The input sample is never changed: the result holds a
copy in which every call that ran carries its `response` (a call that failed or never ran keeps no
response at all, which the canonical file tells apart from a null response).

The final answer is the last call's response, narrowed to the one output a tool declares when its
`returns` schema has a single property: NESTful math tools return `{"result": x}` and NESTful's
gold answer is x. An explicit `answer_path` overrides that.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from fcbench.answers import AnswerComparison, ExecutionFailed, answers_match
from fcbench.environments import CallRun, Environment, PathRun, PlannedCall, paused_gc
from fcbench.resolve import walk_path
from fcbench.sample import Call, Sample, Step


@dataclass(frozen=True)
class ExecutionOptions:
    answer_path: tuple[str | int, ...] | None = None  # where the answer sits in the last response; None: auto


@dataclass(frozen=True)
class GoldPathResult:
    sample: Sample  # a copy of the input with responses on the calls that ran
    path: PathRun
    answer: Any  # an `ExecutionFailed` when the path did not run through

    @property
    def ok(self) -> bool:
        return self.path.ok

    @property
    def failure(self) -> CallRun | None:
        """The first call that failed (None when every call ran; see `path.n_calls`)."""
        return self.path.failed

    def matches_gold(self, comparison: AnswerComparison = AnswerComparison()) -> bool | None:
        """Whether the computed answer equals the sample's gold answer; None if it has none."""
        if "answer" not in self.sample.model_fields_set:
            return None
        return answers_match(self.answer, self.sample.answer, comparison)


def planned_path(sample: Sample) -> list[list[PlannedCall]]:
    """The sample's gold path (first turn, then later turns) as calls to run."""
    steps = sample.all_steps() if sample.turns else sample.calls
    return [[PlannedCall(call.label, call.name, call.arguments) for call in step] for step in steps]


def execute_gold_path(sample: Sample, environment: Environment, options: ExecutionOptions = ExecutionOptions()) -> GoldPathResult:
    return execute_gold_paths([sample], environment, options)[0]


def execute_gold_paths(
    samples: Sequence[Sample], environment: Environment, options: ExecutionOptions = ExecutionOptions()
) -> list[GoldPathResult]:
    """Execute many samples; an environment that can batch (the python pool) runs them together."""
    paths = [planned_path(sample) for sample in samples]
    results: list[GoldPathResult | None] = [None] * len(samples)
    with paused_gc():
        # results are built as runs arrive, while the environment's workers run the rest
        for index, run in environment.iter_run_paths(paths):
            results[index] = _result(samples[index], run, options)
    return [result for result in results if result is not None]


def _result(sample: Sample, run: PathRun, options: ExecutionOptions) -> GoldPathResult:
    executed = with_responses(sample, run)
    return GoldPathResult(executed, run, final_answer(executed, run, options))


def with_responses(sample: Sample, run: PathRun) -> Sample:
    """A copy of the sample whose calls carry the responses of the run, matched by position."""
    runs = iter(run.runs)  # in path order; calls after a failed step have no run

    def fill(steps: list[Step]) -> list[Step]:
        return [[_with_response(call, next(runs, None)) for call in step] for step in steps]

    update: dict[str, Any] = {"calls": fill(sample.calls)}
    if sample.turns is not None:
        update["turns"] = [turn.model_copy(update={"calls": fill(turn.calls)}) for turn in sample.turns]
    return sample.model_copy(update=update)


def _with_response(call: Call, run: CallRun | None) -> Call:
    if run is None or not run.outcome.ok:
        return call.model_copy()
    return call.model_copy(update={"response": run.outcome.response})


def final_answer(sample: Sample, run: PathRun, options: ExecutionOptions = ExecutionOptions()) -> Any:
    if not run.ok:
        failed = run.failed
        return ExecutionFailed(failed.outcome.reason.value if failed and failed.outcome.reason else "not_run")
    last = run.last_outcome
    if last is None:
        return ExecutionFailed("no_calls")
    last_name, last_outcome = last
    response = last_outcome.response
    if options.answer_path is not None:
        try:
            return walk_path(response, options.answer_path)
        except (LookupError, TypeError) as exc:
            return ExecutionFailed(f"answer_path: {exc}")
    single = _single_output(sample, last_name)
    if single is not None and isinstance(response, dict) and single in response:
        return response[single]
    return response


def _single_output(sample: Sample, tool_name: str) -> str | None:
    """The name of the only output a tool declares (`returns` with one property), if any."""
    for tool in sample.tools:
        if tool.name == tool_name and tool.returns:
            properties = tool.returns.get("properties")
            if isinstance(properties, dict) and len(properties) == 1:
                return next(iter(properties))
    return None


__all__ = [
    "ExecutionOptions",
    "GoldPathResult",
    "execute_gold_path",
    "execute_gold_paths",
    "final_answer",
    "planned_path",
    "with_responses",
]
