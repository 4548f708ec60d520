"""NESTful's protocols: in-context learning (`nestful-icl`) and a ReAct agent (`nestful-react`).

`nestful-icl`, as NESTful's evaluation code runs chat models (IBM/NESTFUL commit e2f88d5,
`src/eval.py` + `src/instruct_data_prep.py`, read from the piotrhelm/NESTFUL fork):
- the k FIRST examples of `icl_examples.json` (k = 3 by default, `--icl-examples`), the same for
  every sample, each written `#Example-i / Input: <question> / Output: <gold call list>` (the
  examples' tools are not shown), in the generic chat layout the code uses for chat models
  (`deepseek_prompt_input`: system = instruction + the sample's tools + the format + the
  examples, user = the question); prompt: fcbench/prompts/nestful_icl_system.txt;
- greedy decoding (temperature 0), 1,000 new tokens, no stop sequence, the answer `.strip()`ped;
- the answer is read as the published scorer reads a plain-JSON model's (`--compat`) and by
  fcbench's parser (default); a reply that is not a call list is a parsing error, counted.
Choices where the paper and code leave one open (said in scores.json too):
- API models have no prompt in the repository: every model gets the generic chat layout above;
- the tools are listed as one plain JSON array (the code double-encodes them as a JSON string);
- `output.jsonl`'s `input` holds the question (IBM's code stores the whole prompt there; its
  scorer never reads it); the prompts are in `prompts.jsonl` beside it;
- samples that are themselves ICL examples are evaluated like the others (as the code does: the
  published data holds two of the three); their number is reported.

`nestful-react` (the paper evaluates ReAct; no ReAct code or prompt is published, so everything
here is fcbench's choice, documented): the standard ReAct text loop (Thought / Action / Action
Input / Observation / Final Answer, fcbench/prompts/nestful_react_system.txt) in chat form: the
model's step is an assistant message, generation stops at "Observation:", the observation comes
back as a user message `Observation ($var_k): <JSON>`. Each action is EXECUTED in the pipeline's
environment (refused before anything is sent when it cannot execute: only a `python` environment
runs new calls), with references `$var_k.result$` resolved first; a tool error is the observation
(`{"error": ...}`) and the loop goes on; an action naming no tool, or an Action Input that is not a
JSON object, gets an error observation and is not executed. At most `--max-steps` (10) actions;
temperature 0, 1,000 tokens a step; no examples. The predicted sequence written for the scorer is
the executed actions, labelled `$var_k` in order (so F1 Param and Full Seq. Acc. can match gold
references only when the model passed references, as the prompt allows); Win Rate re-executes
that sequence as NESTful's scorer does; Answer Match compares the agent's own Final Answer.

Both write NESTful's own prediction file, `output.jsonl` (one line per sample: `sample_id`,
`input`, `output`, `gold_answer`, `tools`, `generated_text`; `output`, `gold_answer` and `tools`
JSON-encoded strings, as `src/eval.py` writes them), which NESTful's `src/scorer.py` reads with
`--model_name DeepSeek-V3` (a bare JSON list) and fcbench's NESTful reader reads as v2 records.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from fcbench.config import PipelineConfig
from fcbench.environments import Environment
from fcbench.evaluate.protocols.common import (Finished, LoopProtocol, RunContext, ScoringContext, WorkItem, item_key,
                                               json_text)
from fcbench.evaluate.runner import Unanswered
from fcbench.catalog.nestful import tools_to_nestful
from fcbench.llm.client import ChatRequest, LLMRejection
from fcbench.llm.prompts import PromptFile
from fcbench.jsonl import write_json_lines
from fcbench.resolve import CallSite, UnresolvedReference, resolve_arguments
from fcbench.sample import Sample
from fcbench.score.nestful import environment_executor, final_answers_match, score_nestful
from fcbench.score.paper_tables import nestful_setting, nestful_table

PROMPTS = Path(__file__).resolve().parents[2] / "prompts"
ICL_PROMPT = PROMPTS / "nestful_icl_system.txt"
ICL_EXAMPLES = PROMPTS / "nestful_icl_examples.json"
REACT_PROMPT = PROMPTS / "nestful_react_system.txt"
OUTPUT_FILE = "output.jsonl"
PROMPTS_FILE = "prompts.jsonl"
EXECUTABLE_ENVIRONMENTS = ("python",)  # the kinds that run a call never recorded before


def _prompt(path: Path) -> PromptFile:
    return PromptFile.load(path, path.parent)


# ---------------------------------------------------------------------------------- pure helpers
def icl_examples_text(examples: Sequence[Mapping[str, Any]]) -> str:
    """NESTful's example block: `\\n#Example-i\\nInput: ...\\nOutput: <json.dumps(output)>\\n` each."""
    return "".join(f"\n#Example-{index}\nInput: {example['input']}\nOutput: {json.dumps(example['output'])}\n"
                   for index, example in enumerate(examples, start=1))


def question_of(sample: Sample) -> str:
    users = [m for m in sample.messages if m.get("role") == "user" and isinstance(m.get("content"), str)]
    return users[-1]["content"] if users else ""


def nestful_record(sample: Sample, generated_text: str) -> dict[str, Any]:
    """One `output.jsonl` line as `src/eval.py` writes it (keys in its order; `output`,
    `gold_answer` and `tools` JSON-encoded; `input` = the question, see the module docstring)."""
    output = [{"name": call.name, "label": f"${call.label.lstrip('$')}", "arguments": call.arguments}
              for call in sample.all_calls()]
    answer = sample.answer if "answer" in sample.model_fields_set else None
    return {"sample_id": sample.id, "input": question_of(sample), "output": json.dumps(output),
            "gold_answer": json.dumps(answer), "tools": json.dumps(tools_to_nestful(sample.tools)),
            "generated_text": generated_text}


_REACT_FINAL = re.compile(r"Final Answer\s*:\s*(?P<answer>.*)", re.DOTALL)
_REACT_ACTION = re.compile(r"Action\s*:\s*(?P<name>[^\n]*)\n+\s*Action Input\s*:\s*(?P<input>.*)", re.DOTALL)
REACT_STOP = "\nObservation:"


def react_step(text: str) -> dict[str, Any]:
    """One ReAct step of the model: `{"final": answer}`, `{"action": name, "input": text}`, or
    `{"error": why}`. Text after an invented "Observation:" is ignored (the stop sequence should
    have cut it); an action wins over a final answer written after it."""
    text = text.split(REACT_STOP.strip(), 1)[0] if "Observation:" in text else text
    action = _REACT_ACTION.search(text)
    if action:
        return {"action": action.group("name").strip().strip("`\"' "), "input": action.group("input").strip()}
    final = _REACT_FINAL.search(text)
    if final:
        return {"final": final.group("answer").strip()}
    return {"error": "neither an Action with an Action Input nor a Final Answer"}


def react_arguments(text: str) -> dict[str, Any] | None:
    """The Action Input as a JSON object (a ```json fence tolerated), else None."""
    stripped = text.strip()
    if stripped.startswith("```"):
        stripped = stripped.strip("`").strip().removeprefix("json").strip()
    try:
        value = json.loads(stripped)
    except json.JSONDecodeError:
        first, last = stripped.find("{"), stripped.rfind("}")
        if first < 0 or last <= first:
            return None
        try:
            value = json.loads(stripped[first:last + 1])
        except json.JSONDecodeError:
            return None
    return value if isinstance(value, dict) else None


def decoded_answer(text: str | None) -> Any:
    """A Final Answer as a value: JSON when it is JSON (`40.0`, `[1, 2]`), else the text."""
    if text is None:
        return None
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text.strip()


def _executable(pipeline: PipelineConfig) -> bool:
    return pipeline.environment is not None and pipeline.environment.kind in EXECUTABLE_ENVIRONMENTS


# ---------------------------------------------------------------------------------- the protocols
class _Nestful(LoopProtocol):
    temperature: ClassVar[float] = 0.0
    max_tokens: ClassVar[int] = 1000
    sampling_source: ClassVar[str] = "NESTful's src/eval.py: temperature 0.0, max_tokens 1000"

    def work_items(self, part: str, samples: Sequence[Sample], digests: Mapping[str, str]) -> list[WorkItem]:
        return [WorkItem(item_key(part, sample), sample, digests[f"{part}/{sample.id}"], part=part)
                for sample in samples]

    def generated_text(self, record: Mapping[str, Any]) -> str:
        raise NotImplementedError

    def score_lines(self, ctx: ScoringContext) -> tuple[list[dict[str, Any]], list[Sample]]:
        lines, samples = [], []
        for item in ctx.work:
            record = ctx.records.get(item.key)
            if record is None:
                continue
            lines.append(nestful_record(item.sample, self.generated_text(record)))
            samples.append(item.sample)
        return lines, samples

    def _score(self, ctx: ScoringContext, lines: list[dict[str, Any]], samples: list[Sample],
               setting: str, extra: Mapping[str, Any], notes: Sequence[str]) -> Finished:
        gold = {sample.id: sample for sample in samples}
        executor = environment_executor(ctx.environment) if ctx.environment is not None else None
        default = score_nestful(lines, gold, compat=False, executor=executor)
        compat = score_nestful(lines, gold, compat=True, executor=executor)
        summary = {**default.summary, "parsing_errors": len(default.parse_failures), **extra,
                   "compat": {**compat.summary, "parsing_errors": len(compat.parse_failures)},
                   "figures_in_tables": "compat (NESTful's src/scorer.py)" if ctx.options.compat else "default"}
        if executor is None:
            notes = [*notes, "Win Rate not computed: the pipeline's environment cannot execute calls."]
        shown = summary["compat"] if ctx.options.compat else summary
        mode = ("Figures of NESTful's published scorer (--compat)." if ctx.options.compat else
                "Figures of fcbench's NESTful scorer (default mode; --compat shows the published scorer's, "
                "both are in summary).")
        table = nestful_table(ctx.model, {**shown, "answer_match": summary.get("answer_match")}, setting,
                              [mode, *notes])
        items = [{**item, "compat": other} for item, other in zip(default.items, compat.items)]
        output = ctx.folder / OUTPUT_FILE
        write_json_lines(output, lines)
        return Finished(summary, items, [table.to_json()], {"nestful_output": str(output)},
                        judges={"note": "NESTful has no judge: every figure is computed"})


class NestfulICL(_Nestful):
    name: ClassVar[str] = "nestful-icl"
    choices: ClassVar[tuple[str, ...]] = (
        "prompt: NESTful's generic chat layout (deepseek_prompt_input) for every model, API models included (the "
        "repository has no prompt for them)",
        "tools listed as one plain JSON array (NESTful's code double-encodes them)",
        "in-context examples: the first k of NESTful's icl_examples.json, in file order, the same for every sample",
        "output.jsonl `input` = the question (IBM's code stores the whole prompt; its scorer never reads it); the "
        "prompts are in prompts.jsonl",
    )

    def folder(self) -> str:
        return f"nestful-icl-{self.options.icl_examples}shot"

    def run_settings(self, config: Any) -> dict[str, Any]:
        # the prompt and the examples file too: a prediction made with another prompt is not reused
        return {**super().run_settings(config), "icl_examples": self.options.icl_examples,
                "prompt_sha256": _prompt(ICL_PROMPT).sha256, "examples_sha256": _prompt(ICL_EXAMPLES).sha256}

    def refusal(self, pipeline: PipelineConfig) -> str | None:
        if not 1 <= self.options.icl_examples <= len(self.examples()):
            return f"--icl-examples must be between 1 and {len(self.examples())} (NESTful's icl_examples.json)"
        return super().refusal(pipeline)

    def examples(self) -> list[dict[str, Any]]:
        return json.loads(ICL_EXAMPLES.read_text(encoding="utf-8"))

    def needs_environment(self, pipeline: PipelineConfig) -> bool:
        return _executable(pipeline)  # for the win rate only: without it, the table says so

    def messages(self, sample: Sample) -> list[dict[str, str]]:
        prompt = _prompt(ICL_PROMPT)
        examples = icl_examples_text(self.examples()[: self.options.icl_examples])
        system = prompt.render(tools=json.dumps(tools_to_nestful(sample.tools)), examples=examples)
        return [{"role": "system", "content": system}, {"role": "user", "content": question_of(sample)}]

    async def run_item(self, ctx: RunContext, item: WorkItem) -> dict[str, Any] | Unanswered:
        request = ChatRequest(messages=self.messages(item.sample), prompt_hash=_prompt(ICL_PROMPT).sha256)
        outcome = await ctx.llm.complete(request)
        if isinstance(outcome, LLMRejection):
            return Unanswered(item.sample.id, outcome.reason)
        return {"generated_text": (outcome.completion.content or "").strip()}

    def generated_text(self, record: Mapping[str, Any]) -> str:
        return str(record.get("generated_text", ""))

    def finish(self, ctx: ScoringContext) -> Finished:
        lines, samples = self.score_lines(ctx)
        examples = self.examples()[: self.options.icl_examples]
        shown = {example["sample_id"] for example in examples}
        overlap = sorted(sample.id for sample in samples if sample.id in shown)
        write_json_lines(ctx.folder / PROMPTS_FILE, [{"sample_id": sample.id, "messages": self.messages(sample)}
                                                     for sample in samples])
        notes = [f"{len(overlap)} evaluated sample(s) are themselves in-context examples (as in NESTful's code)."] \
            if overlap else []
        finished = self._score(ctx, lines, samples, nestful_setting(self.name, self.options.icl_examples),
                               {"icl_examples": len(examples), "icl_example_ids": [e["sample_id"] for e in examples],
                                "samples_that_are_icl_examples": overlap}, notes)
        finished.reference_files["prompts"] = str(ctx.folder / PROMPTS_FILE)
        return finished


class NestfulReAct(_Nestful):
    name: ClassVar[str] = "nestful-react"
    sampling_source: ClassVar[str] = "NESTful's src/eval.py settings (temperature 0.0, max_tokens 1000) per step"
    choices: ClassVar[tuple[str, ...]] = (
        "no ReAct code or prompt is published: the standard ReAct text loop (Thought / Action / Action Input / "
        "Observation / Final Answer), fcbench/prompts/nestful_react_system.txt, stop at 'Observation:'",
        "every action executed in the pipeline's environment, references $var_k.result$ resolved first; a tool "
        "error is the observation",
        "predicted sequence for the scorer = the executed actions, labelled $var_k in order",
        "Answer Match (fcbench's): the agent's Final Answer against the gold answer",
    )

    def run_settings(self, config: Any) -> dict[str, Any]:
        return {**super().run_settings(config), "max_steps": self.options.max_steps,
                "prompt_sha256": _prompt(REACT_PROMPT).sha256}

    def refusal(self, pipeline: PipelineConfig) -> str | None:
        refused = super().refusal(pipeline)
        if refused:
            return refused
        if not _executable(pipeline):
            kind = pipeline.environment.kind if pipeline.environment is not None else None
            what = f"environment kind {kind!r} cannot run a call it has not recorded" if kind else "no environment"
            return (f"--protocol nestful-react executes every action: pipeline {pipeline.name!r} has {what} "
                    f"(it needs environment kind {' or '.join(EXECUTABLE_ENVIRONMENTS)})")
        return None

    def needs_environment(self, pipeline: PipelineConfig) -> bool:
        return True

    async def run_item(self, ctx: RunContext, item: WorkItem) -> dict[str, Any] | Unanswered:
        assert ctx.environment is not None
        sample = item.sample
        prompt = _prompt(REACT_PROMPT)
        tools = {tool.name for tool in sample.tools}
        history: list[dict[str, Any]] = [
            {"role": "system", "content": prompt.render(tools=json.dumps(tools_to_nestful(sample.tools)))},
            {"role": "user", "content": f"Question: {question_of(sample)}"}]
        actions: list[dict[str, Any]] = []
        outputs: dict[str, Any] = {}
        trace: list[dict[str, Any]] = []
        invalid = 0
        stop_reason, final = "max_steps", None
        while len(actions) + invalid < self.options.max_steps:
            outcome = await ctx.llm.complete(ChatRequest(messages=list(history), stop=(REACT_STOP,),
                                                         prompt_hash=prompt.sha256))
            if isinstance(outcome, LLMRejection):
                return Unanswered(sample.id, outcome.reason)
            text = (outcome.completion.content or "").strip()
            step = react_step(text)
            trace.append({"model": text})
            if "final" in step:
                stop_reason, final = "final_answer", step["final"]
                break
            if "error" in step:
                stop_reason = "unparseable_step"
                trace[-1]["error"] = step["error"]
                break
            observation, label = await self._act(ctx.environment, step, tools, actions, outputs)
            if label is None:
                invalid += 1
            history += [{"role": "assistant", "content": text},
                        {"role": "user", "content": f"Observation ({label or 'not run'}): {json_text(observation)}"}]
            trace[-1].update(observation=observation, label=label)
        return {"actions": actions, "final_answer": final, "stop_reason": stop_reason, "invalid_actions": invalid,
                "trace": trace}

    @staticmethod
    async def _act(environment: Environment, step: Mapping[str, str], tools: set[str],
                   actions: list[dict[str, Any]], outputs: dict[str, Any]) -> tuple[Any, str | None]:
        """Execute one action: (observation, its label), or (error observation, None) when the
        action is not run."""
        name = step["action"]
        if name not in tools:
            return {"error": f"unknown tool {name!r}; use one of the tools listed"}, None
        arguments = react_arguments(step["input"])
        if arguments is None:
            return {"error": "Action Input must be a JSON object of the tool's arguments"}, None
        label = f"var_{len(actions) + 1}"
        try:
            resolved = resolve_arguments(arguments, outputs, CallSite(label, name))
        except UnresolvedReference as exc:
            return {"error": f"cannot resolve a reference: {exc}"}, None
        result = await asyncio.to_thread(environment.call, name, dict(resolved))
        actions.append({"name": name, "label": f"${label}", "arguments": arguments})
        if result.ok:
            outputs[label] = result.response
            return result.response, f"${label}"
        return {"error": result.error or "the tool failed"}, f"${label}"

    def generated_text(self, record: Mapping[str, Any]) -> str:
        return json.dumps(record.get("actions") or [])

    def finish(self, ctx: ScoringContext) -> Finished:
        lines, samples = self.score_lines(ctx)
        matches, stops = [], Counter()
        for item in ctx.work:
            record = ctx.records.get(item.key)
            if record is None:
                continue
            stops[record.get("stop_reason", "?")] += 1
            answer = decoded_answer(record.get("final_answer"))
            has_gold = "answer" in item.sample.model_fields_set
            matches.append(has_gold and record.get("final_answer") is not None
                           and final_answers_match(answer, item.sample.answer))
        for line, item in zip(lines, [i for i in ctx.work if i.key in ctx.records]):
            record = ctx.records[item.key]
            line["final_answer"] = record.get("final_answer")
            line["react_trace"] = record.get("trace")
        extra = {"answer_match": sum(matches) / len(matches) if matches else None, "stop_reasons": dict(sorted(stops.items())),
                 "max_steps": self.options.max_steps}
        finished = self._score(ctx, lines, samples, nestful_setting(self.name), extra, [
            "ReAct: no code is published; prompt and loop are fcbench's (see choices)."])
        return finished
