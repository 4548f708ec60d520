"""The filter's semantic check (APIGen's third stage), asked as narrow yes/no questions.

A sample that passed execution may still be wrong in meaning. Each question is asked on its own
(one request each, cached by the LLM client's request cache, so a rerun pays nothing), and the first
"no", in this order, is the reject reason:
1. `semantic.incomplete_path`: does the path answer every part of the query?
2. `semantic.unsupported_argument`: is each argument value stated in the query or derivable from
   it and the earlier responses?
3. `semantic.response_mismatch`: does each response fit its tool's purpose?
An answer that cannot be read (after the client's re-asks) rejects nothing: the sample is kept and
the detail says which question went unanswered, so a flaky endpoint never silently drops data.

Each question is an `fcbench.llm.judge.LLMJudge` (render -> ask -> read -> JudgeError), the one way
fcbench asks an LLM judge. `semantic_verdicts(samples, client)` is the async core; `SemanticCheck`
is the synchronous callable the filter stage receives (`fcbench.filter.single.run_filter(...,
semantic_check=...)`), opening its own client per batch so each event loop owns its connections.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from fcbench.config import LLMConfig
from fcbench.sample import Sample, user_query
from fcbench.errors import JudgeError
from fcbench.llm.client import Completion, LLMClient, ParseError
from fcbench.llm.judge import LLMJudge
from fcbench.llm.prompts import PromptFile

PROMPTS = Path(__file__).resolve().parents[1] / "prompts"

RESPONSE_CHARS = 1500  # a response is cut to this many characters in a question: enough to judge


@dataclass(frozen=True)
class Question:
    reason: str  # the reject reason when the answer is "no"
    prompt: Path


QUESTIONS = (
    Question("semantic.incomplete_path", PROMPTS / "semantic_complete.txt"),
    Question("semantic.unsupported_argument", PROMPTS / "semantic_arguments.txt"),
    Question("semantic.response_mismatch", PROMPTS / "semantic_responses.txt"),
)

SemanticVerdict = tuple[str, str | None, str]  # (sample id, reject reason or None, detail)


def parse_yes_no(completion: Completion) -> tuple[bool, str]:
    """(answer is yes, the model's reason); `ParseError` when the answer is neither."""
    text = (completion.content or "").strip()
    if text.startswith("```"):
        text = text.strip("`").removeprefix("json").strip()
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        value = None
    if isinstance(value, dict) and isinstance(value.get("answer"), str):
        answer, reason = value["answer"].strip().lower(), str(value.get("reason", ""))
    else:  # a bare "yes" / "no" is an answer too
        answer, reason = text.lower().rstrip("."), ""
    if answer not in ("yes", "no"):
        raise ParseError("expected {\"answer\": \"yes\" or \"no\", \"reason\": ...}")
    return answer == "yes", reason


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, sort_keys=True)
    return text if len(text) <= RESPONSE_CHARS else text[:RESPONSE_CHARS] + "...(cut)"


def path_text(sample: Sample, with_responses: bool) -> str:
    lines = []
    for number, step in enumerate(sample.all_steps(), start=1):
        for call in step:
            line = f"step {number}: {call.label} = {call.name}({json.dumps(call.arguments, ensure_ascii=False)})"
            if with_responses and "response" in call.model_fields_set:
                line += f"\n  response: {_short(call.response)}"
            lines.append(line)
    return "\n".join(lines)


def tools_text(sample: Sample) -> str:
    used = {call.name for call in sample.all_calls()}
    return "\n".join(f"- {tool.name}: {tool.description}" for tool in sample.tools if tool.name in used)


def question_values(question: Question, sample: Sample) -> dict[str, str]:
    """The prompt's `{{name}}` values for one sample (the completeness question sees no responses)."""
    with_responses = question.reason != "semantic.incomplete_path"
    return {"query": user_query(sample), "path": path_text(sample, with_responses), "tools": tools_text(sample)}


async def semantic_verdicts(samples: Sequence[Sample], client: LLMClient,
                            prompts: Sequence[PromptFile] | None = None) -> list[SemanticVerdict]:
    """One verdict per sample, in order; the three questions of every sample are asked concurrently
    (the client bounds what is in flight)."""
    prompts = list(prompts) if prompts is not None else [PromptFile.load(q.prompt, q.prompt.parent) for q in QUESTIONS]
    judges = [LLMJudge(client, prompt, parse=parse_yes_no) for prompt in prompts]
    answers = await asyncio.gather(*(judge.ask_all([question_values(question, sample) for sample in samples])
                                     for judge, question in zip(judges, QUESTIONS)))
    return [_verdict(sample.id, [answers[q][number] for q in range(len(QUESTIONS))])
            for number, sample in enumerate(samples)]


def _verdict(sample_id: str, answers: Sequence[Any]) -> SemanticVerdict:
    unanswered = []
    for question, answer in zip(QUESTIONS, answers):
        if isinstance(answer, JudgeError):
            unanswered.append(f"{question.reason} unanswered ({answer.reason})")
            continue
        is_yes, why = answer
        if not is_yes:
            return sample_id, question.reason, why
    return sample_id, None, "; ".join(unanswered)


@dataclass
class SemanticCheck:
    """The callable the filter stage gets: samples -> verdicts, through a cached client."""

    config: LLMConfig
    cache_path: Path
    jitter_seed: int | None = None
    accounting: list[dict[str, Any]] = field(default_factory=list)  # one client summary per batch

    def __call__(self, samples: Sequence[Sample]) -> list[SemanticVerdict]:
        if not samples:
            return []
        return asyncio.run(self._run(samples))

    async def _run(self, samples: Sequence[Sample]) -> list[SemanticVerdict]:
        from fcbench.llm.cache import RequestCache

        cache = RequestCache(self.cache_path)
        try:
            async with LLMClient(self.config, cache, jitter_seed=self.jitter_seed) as client:
                verdicts = await semantic_verdicts(samples, client)
                self.accounting.append(client.summary())
                return verdicts
        finally:
            cache.close()
