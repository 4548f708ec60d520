"""ComplexFuncBench's protocol (`complexfuncbench`, the default for single-turn pipelines): the
ComplexEval loop (`fcbench.evaluate.runner`, `fcbench.score.complexeval`) with the paper's
decoding settings, its results table and its own result file.

- Decoding: greedy (temperature 0.0), 2,048 new tokens, tools passed natively, no system prompt
  (the first message is the query): ComplexFuncBench's runners for GPT, Qwen, Mistral, Claude
  (THUDM/ComplexFuncBench @ c37b284, models/gpt.py l.54-61); `--temperature` and `--max-tokens`
  override them, and scores.json says which applied. (Before issue 24, `evaluate` used the
  pipeline's sampling settings: travel's 0.7 and 1,024 tokens.)
- The loop, its judges and its resume are the runner's (see its docstring).
- Table: the paper's Table 2 layout per domain (`fcbench.score.paper_tables`).
- Reference file: `complexfuncbench_result.jsonl` beside trajectories.jsonl, one line per sample
  in the shape `evaluation.py` writes (`id`, `gen_convs` = the conversation the model had, with the
  observations it was given, `message` = "Success." or the error, `count_dict`, `resp_eval`), so
  `print_results.py`-style tooling reads it. Where fcbench's verdicts differ from the published
  runner's (its error names, its free look-ups; see bench/README.md) the file carries fcbench's;
  `build-dataset score --metric complexeval --compat` gives the runner's own verdicts.
Choices (said in scores.json): the model's text answer ends a sample as in the GPT runner; a
sample whose gold path is complete and whose model then keeps calling ends as a func_error.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from fcbench.config import PipelineConfig
from fcbench.errors import UserError
from fcbench.evaluate.protocols.common import Protocol
from fcbench.evaluate.runner import EvalPaths, EvaluationResult, evaluate_pipeline
from fcbench.jsonl import dumps_line
from fcbench.sample import Sample
from fcbench.score.complexeval import gold_steps_with_values, judges_line
from fcbench.score.paper_tables import complexfuncbench_table

RESULT_FILE = "complexfuncbench_result.jsonl"
SUCCESS = "Success."
# fcbench's error names -> the published runner's, where one means the other
REFERENCE_ERROR_NAMES = {"hallucination": "param_hallucination"}


def count_dict(sample: Sample, verdict: Any) -> dict[str, int]:
    """`evaluation.py`'s counts: the gold call turns and calls, the calls matched, the model's
    call turns, and the success turn (the first gold step still holding a required call left,
    or every step: `get_success_turn`)."""
    steps = gold_steps_with_values(sample)
    remaining = set(verdict.record.remaining_labels)
    success_turn = next((index for index, step in enumerate(steps) if any(c.label in remaining for c in step)),
                        len(steps))
    return {"success_turn_num": success_turn, "total_turn_num": len(steps), "correct_call_num": verdict.n_correct_calls,
            "total_call_num": sum(len(step) for step in steps), "real_turn_num": len(verdict.record.turns)}


def result_line(sample: Sample, verdict: Any) -> dict[str, Any]:
    """One line of ComplexFuncBench's result file for a scored trajectory."""
    convs: list[dict[str, Any]] = [dict(message) for message in sample.messages]
    for turn in verdict.record.turns:
        convs.append({"role": "assistant", "function_call": [{"name": j.name, "arguments": j.arguments} for j in turn]})
        convs.append({"role": "observation", "content": [j.response for j in turn]})
    final = verdict.record.final_text
    resp_eval = None
    if isinstance(final, str):
        convs.append({"role": "assistant", "content": final})
        if not final:
            empty = {"score": -2, "reason": "Do not generate response successfully."}
            resp_eval = {"complete": dict(empty), "correct": dict(empty)}
        else:
            # -1 where the judge gave no verdict, as the published runner marks a failed judge
            resp_eval = {"complete": {"score": -1 if verdict.completeness is None else verdict.completeness,
                                      "reason": "fcbench's completeness judge (scores.json says which)"},
                         "correct": {"score": -1 if verdict.correctness is None else verdict.correctness,
                                     "reason": "fcbench's correctness judge (scores.json says which)"}}
    message: Any = SUCCESS
    if not verdict.success:
        message = {"error_type": REFERENCE_ERROR_NAMES.get(verdict.error_type, verdict.error_type),
                   "content": verdict.error_detail}
    return {"id": sample.id, "gen_convs": convs, "message": message, "count_dict": count_dict(sample, verdict),
            "resp_eval": resp_eval}


class ResultFile:
    """Writes the result lines as the scorer goes (input order), into a temporary file renamed at
    the end: the file is whole or absent, never half-written. Opened at the first line (the
    runner creates the folder, and removes it when a run fails before anything was saved)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.partial = path.with_name(path.name + ".partial")
        self._handle: Any = None

    def __call__(self, sample: Sample, line: Mapping[str, Any], verdict: Any) -> None:
        if self._handle is None:
            self._handle = open(self.partial, "w", encoding="utf-8")  # noqa: SIM115 - closed by close()
        self._handle.write(dumps_line(result_line(sample, verdict)) + "\n")

    def close(self, keep: bool) -> None:
        if self._handle is None:
            if keep:  # nothing was scored: an empty file, as the runner writes empty trajectories
                self.path.write_text("", encoding="utf-8")
            return
        self._handle.close()
        if keep:
            os.replace(self.partial, self.path)
        else:
            self.partial.unlink(missing_ok=True)


class ComplexFuncBench(Protocol):
    name: ClassVar[str] = "complexfuncbench"
    temperature: ClassVar[float] = 0.0
    max_tokens: ClassVar[int] = 2048
    sampling_source: ClassVar[str] = "ComplexFuncBench's runners: temperature 0.0, max_tokens 2048"
    choices: ClassVar[tuple[str, ...]] = (
        "no system prompt, tools passed natively, as ComplexFuncBench's GPT/Qwen/Mistral/Claude runners",
        "the model's text answer ends a sample; a sample's last call turn with a failed call fails it (GPT runner)",
        "complexfuncbench_result.jsonl carries fcbench's verdicts (score --metric complexeval --compat gives the "
        "published runner's)",
    )

    def evaluate(self, pipeline: PipelineConfig) -> EvaluationResult:
        refusal = self.refusal(pipeline)
        if refusal:
            raise UserError(refusal)
        options = self.options
        temperature = self.temperature if options.temperature is None else options.temperature
        max_tokens = self.max_tokens if options.max_tokens is None else options.max_tokens
        paper = options.temperature is None and options.max_tokens is None
        choices = [f"decoding: temperature {temperature}, max_tokens {max_tokens} "
                   f"({self.sampling_source if paper else 'set on the command line'})", *self.choices]
        writer = ResultFile(EvalPaths.for_model(pipeline.build_dir, options.model).model_dir / RESULT_FILE)

        def document_extra(summary: Mapping[str, Any]) -> dict[str, Any]:
            table = complexfuncbench_table(options.model, summary, [judges_line(summary["judges"])])
            return {"protocol": self.name, "choices": choices,
                    "reference_files": {"complexfuncbench_result": RESULT_FILE}, "tables": [table.to_json()]}

        done = False
        try:
            result = evaluate_pipeline(pipeline, options.model, base_url=options.base_url, split=options.split,
                                       input_file=options.input_file, limit=options.limit,
                                       extra_turns=options.extra_turns, environ=options.environ,
                                       progress=options.progress, batch=options.batch,
                                       judge_model=options.judge_model, judge_base_url=options.judge_base_url,
                                       context_window=options.context_window,
                                       sampling={"temperature": temperature, "max_tokens": max_tokens},
                                       observer=writer, document_extra=document_extra)
            done = True
        finally:
            writer.close(keep=done)
        result.extra["reference_files"] = {"complexfuncbench_result": str(writer.path)}
        return result


def read_result_file(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
