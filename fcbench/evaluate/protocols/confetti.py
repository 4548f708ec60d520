"""CONFETTI's protocol (`confetti`, the default for `kind: conversation`): off-policy, turn-level,
teacher-forced evaluation, as the paper describes it ("off-policy turn-level evaluation").

Every item of the two turn-level sets the conversational export writes is one request: the
model gets the GOLD conversation up to that point (user turns, the gold agent's calls and their
recorded results, the gold agent's texts: the sample's `messages`) and the turn's tools natively
(`tools=`), and answers once; its earlier answers are never fed back.
- function-calling set (`export/function_calling`): the model's calls are scored against the
  turn's gold calls (AST soft accuracy, chains multiplied), and their values for hallucination
  (parameter validity, over the calls with a right function name only);
- response-quality set (`export/response_quality`): the model's answer (its text and its calls)
  is classified into dialog acts and compared with the gold acts.
Dialog acts and parameter validity are graded by the configured judge LLM (`--judge-model` or the
pipeline's judge block; fcbench's prompts, fcbench/evaluate/judges_confetti.py), else by the
rule-based stand-ins, and the first line of the output says which.
Choices where the paper leaves one open (CONFETTI publishes data only: no evaluation code, prompt
or settings; said in scores.json too):
- decoding: greedy (temperature 0), 1,024 new tokens; no system prompt (the history as it is);
- a chained turn is asked step by step, one request per step, as the export cuts it (each step's
  history holds the gold earlier steps and their results: teacher forcing inside the chain too,
  as CONFETTI's one-call-per-line possible-answer file implies);
- the breakdowns' bins (APIs offered: 1-5 | 6-10 | 11-20 | 21+; turns before the evaluated one:
  1-4 | 5-8 | 9-12 | 13+; chain length 1 | 2 | 3 | 4+) are fcbench's.

Reference files: BFCL's result shape, which CONFETTI's possible-answer files pair with (by `id`):
`confetti/<set>/<split>_result.json`, one JSON object a line, `{"id", "result": [{function:
{argument: value}}]}` (BFCL's decoded form; arguments that were not a JSON object are kept as the
model's text; fcbench scores such a call as passing no argument, and counts it as
`undecodable_arguments`), plus `"response"` (the model's
text) in the response-quality set. They pair with `export/confetti/<set>/<split>.json`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

from fcbench.catalog.openai import openai_tool_param
from fcbench.evaluate.judges_confetti import JudgedReport, score_offline, score_with_llm
from fcbench.evaluate.protocols.common import (JUDGES_CACHE, Finished, LoopProtocol, RunContext, ScoringContext, WorkItem,
                                               item_key)
from fcbench.evaluate.runner import Unanswered
from fcbench.jsonl import write_json_lines
from fcbench.llm.client import ChatRequest, LLMRejection
from fcbench.sample import Sample
from fcbench.score.paper_tables import confetti_tables

FUNCTION_CALLING = "function_calling"
RESPONSE_QUALITY = "response_quality"
REFERENCE_DIR = "confetti"


def result_of(record: Mapping[str, Any], unreadable: Any = None) -> list[dict[str, Any]]:
    """BFCL's decoded result of a saved answer: one `{function: arguments}` per call, arguments
    decoded when they are a JSON object, else `unreadable` (None: the model's text as it is, for
    the reference file; the scorer gets `{}`: a call whose arguments cannot be read passed none,
    so it scores as the wrong call it is, rather than leaving the turn out of the average)."""
    result = []
    for call in record.get("calls") or []:
        text = call.get("arguments") or ""
        decoded = decoded_arguments(text)
        result.append({call.get("name", ""): decoded if decoded is not None else (text if unreadable is None
                                                                                   else unreadable)})
    return result


def decoded_arguments(text: str) -> dict[str, Any] | None:
    try:
        decoded = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError:
        return None
    return decoded if isinstance(decoded, dict) else None


def judges_line(fc: JudgedReport, rq: JudgedReport) -> str:
    """Who graded what, first: the parameter validity of the function-calling set, the dialog
    acts of the response-quality set; AST soft accuracy is computed."""
    acts = rq.grading["dialog_act_accuracy"]
    validity = fc.grading["parameter_validity_rate"]
    llm = fc.grading.get("llm") or rq.grading.get("llm")
    errors = acts.get("judge_errors", 0) + validity.get("judge_errors", 0)
    left_out = f"; {errors} judge_error(s) left out of the figures" if errors else ""
    if llm is None:
        why = fc.grading.get("offline_because") or rq.grading.get("offline_because")
        return (f"NOT graded by an LLM ({why}): dialog acts by a {acts['judge']}; parameter validity by a "
                f"{validity['judge']}; AST soft accuracy computed, no judge")
    return (f"graded by LLM {llm['model']} at {llm['base_url']}: dialog acts ({acts['classified']} responses "
            f"classified), parameter validity (values that are not gold values judged){left_out}; NOT graded by "
            "an LLM: AST soft accuracy (computed, no judge)")


class Confetti(LoopProtocol):
    name: ClassVar[str] = "confetti"
    kind: ClassVar[str] = "conversation"
    temperature: ClassVar[float] = 0.0
    max_tokens: ClassVar[int] = 1024
    sampling_source: ClassVar[str] = "CONFETTI publishes no decoding settings: fcbench's choice, greedy"
    parts: ClassVar[tuple[str, ...]] = (FUNCTION_CALLING, RESPONSE_QUALITY)
    choices: ClassVar[tuple[str, ...]] = (
        "teacher-forced: each turn (each step of a chained turn) gets the gold history, tools passed natively, no "
        "system prompt; one request per item",
        "parameter validity over the calls with a right function name only",
        "dialog acts: a turn is right when any predicted act is a gold act (also reported: exact match is not)",
        "breakdown bins (APIs 1-5|6-10|11-20|21+, turns 1-4|5-8|9-12|13+, chain 1|2|3|4+) are fcbench's",
    )

    def split_parts(self, samples: list[Sample]) -> dict[str, list[Sample]]:
        return {FUNCTION_CALLING: [s for s in samples if s.dialog_acts is None],
                RESPONSE_QUALITY: [s for s in samples if s.dialog_acts is not None]}

    def work_items(self, part: str, samples: Sequence[Sample], digests: Mapping[str, str]) -> list[WorkItem]:
        return [WorkItem(item_key(part, sample), sample, digests[f"{part}/{sample.id}"], part=part)
                for sample in samples]

    async def run_item(self, ctx: RunContext, item: WorkItem) -> dict[str, Any] | Unanswered:
        tools = [openai_tool_param(tool) for tool in item.sample.tools] or None
        request = ChatRequest(messages=[dict(message) for message in item.sample.messages], tools=tools)
        outcome = await ctx.llm.complete(request)
        if isinstance(outcome, LLMRejection):
            return Unanswered(item.sample.id, outcome.reason)
        completion = outcome.completion
        return {"content": completion.content,
                "calls": [{"name": call.name, "arguments": call.arguments} for call in completion.tool_calls]}

    def finish(self, ctx: ScoringContext) -> Finished:
        sets: dict[str, tuple[list[Sample], list[dict[str, Any]]]] = {FUNCTION_CALLING: ([], []),
                                                                        RESPONSE_QUALITY: ([], [])}
        written: dict[str, list[dict[str, Any]]] = {FUNCTION_CALLING: [], RESPONSE_QUALITY: []}
        undecodable = 0
        for item in ctx.work:
            record = ctx.records.get(item.key)
            if record is None:
                continue
            line: dict[str, Any] = {"id": item.sample.id, "result": result_of(record, unreadable={})}
            as_written: dict[str, Any] = {"id": item.sample.id, "result": result_of(record)}
            undecodable += sum(decoded_arguments(call.get("arguments") or "") is None for call in record.get("calls") or [])
            if item.part == RESPONSE_QUALITY:
                line["response"] = as_written["response"] = record.get("content") or ""
            sets[item.part][0].append(item.sample)
            sets[item.part][1].append(line)
            written[item.part].append(as_written)
        fc = self._judged(ctx, *sets[FUNCTION_CALLING], score_calls=True)
        rq = self._judged(ctx, *sets[RESPONSE_QUALITY], score_calls=False)
        fc_summary, rq_summary = fc.report.summary, rq.report.summary
        rq_items = rq.report.items
        exact = [set(i["predicted_acts"]) == set(i["gold_acts"]) for i in rq_items if "predicted_acts" in i]
        summary = {
            "ast_soft_accuracy": fc_summary.get("ast_soft_accuracy"),
            "ast_exact_accuracy": fc_summary.get("ast_exact_accuracy"),
            "parameter_validity_rate": fc_summary.get("parameter_validity_rate"),
            "dialog_act_accuracy": rq_summary.get("dialog_act_accuracy"),
            "dialog_act_exact_set_accuracy": sum(exact) / len(exact) if exact else None,
            "by_api_count": fc_summary.get("by_api_count"), "by_turn_count": fc_summary.get("by_turn_count"),
            "by_chain_bin": fc_summary.get("by_chain_bin"),
            "undecodable_arguments": undecodable,
            "function_calling": fc_summary, "response_quality": rq_summary,
        }
        split = "input" if ctx.options.input_file is not None else ctx.options.split
        files = {}
        for part, lines in written.items():
            path = ctx.folder / REFERENCE_DIR / part / f"{split}_result.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            write_json_lines(path, lines)
            files[f"bfcl_result:{part}"] = str(path)
        first_line = judges_line(fc, rq)
        notes = [f"Judges: {first_line}"]
        tables = [table.to_json() for table in confetti_tables(ctx.model, summary, notes)]
        items = [{"set": FUNCTION_CALLING, **item} for item in fc.report.items]
        items += [{"set": RESPONSE_QUALITY, **item} for item in rq_items]
        judges = {FUNCTION_CALLING: fc.grading, RESPONSE_QUALITY: rq.grading}
        return Finished(summary, items, tables, files, judges=judges, first_line=first_line)

    def _judged(self, ctx: ScoringContext, samples: list[Sample], lines: list[dict[str, Any]],
                score_calls: bool) -> JudgedReport:
        if ctx.judge is None:
            return score_offline(samples, lines, "no judge LLM configured: give --judge-model or a judge block",
                                 score_calls=score_calls)
        return score_with_llm(samples, lines, ctx.judge, ctx.folder / JUDGES_CACHE, ctx.options.environ,
                              score_calls=score_calls)
