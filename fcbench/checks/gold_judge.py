"""The gold audit's last layer (with an LLM configured): a judge asked "does this path do exactly
what the query asks, no more, no less?" about each sample that passed every other check.

Asked through the LLM layer's judge mechanism (`fcbench.llm.judge.LLMJudge`: the prompt file
`fcbench/prompts/gold_judge.txt`, temperature 0, every verdict cached by the request cache so a
re-run pays nothing, an unreadable answer asked again once). It fails closed: "no" rejects
(`gold.judge_rejected`, with the judge's reason), and a question the judge could not answer rejects
too (`gold.judge_undecided`) and is decided again on the next run (the filter's journal forgets
it, the cache keeps no unusable answer).

`GoldJudge` is the synchronous callable the filter stage receives, with the semantic check's
signature: samples -> (sample id, reject reason or None, detail) each, in order.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

from fcbench.checks.provenance import PROVENANCE_META, provenance_from_meta, ProvenanceError
from fcbench.checks.semantic import path_text
from fcbench.checks.verdicts import UNDECIDED_GOLD_JUDGE
from fcbench.config import LLMConfig
from fcbench.llm.client import ParseError
from fcbench.llm.judge import JudgeError, LLMJudge, judge_client, judge_llm_config, load_prompt
from fcbench.sample import Sample, user_query

GOLD_JUDGE_PROMPT = Path(__file__).resolve().parents[1] / "prompts" / "gold_judge.txt"
REJECTED = "gold.judge_rejected"
UNDECIDED = UNDECIDED_GOLD_JUDGE

JudgeVerdict = tuple[str, "str | None", str]


def read_verdict(answer: dict[str, Any]) -> tuple[bool, str]:
    """(the path does exactly what the query asks, the judge's reason); ParseError otherwise."""
    value = answer.get("answer")
    if not isinstance(value, str) or value.strip().lower() not in ("yes", "no"):
        raise ParseError('expected {"answer": "yes" or "no", "reason": ...}')
    return value.strip().lower() == "yes", str(answer.get("reason", ""))


def provenance_text(sample: Sample) -> str:
    try:
        provenance = provenance_from_meta(sample.meta.get(PROVENANCE_META)) if sample.meta.get(PROVENANCE_META) else {}
    except ProvenanceError:
        return "(none recorded)"
    lines = [f"{label}.{name}: {source.describe()}" for label, arguments in provenance.items()
             for name, source in arguments.items()]
    return "\n".join(lines) or "(none recorded)"


def question(sample: Sample) -> dict[str, str]:
    return {"query": user_query(sample), "path": path_text(sample, with_responses=True),
            "provenance": provenance_text(sample)}


def verdicts_of(samples: Sequence[Sample], answers: Sequence[Any]) -> list[JudgeVerdict]:
    verdicts: list[JudgeVerdict] = []
    for sample, answer in zip(samples, answers):
        if isinstance(answer, JudgeError):
            verdicts.append((sample.id, UNDECIDED, f"the judge gave no usable answer ({answer.reason})"))
        elif answer[0]:
            verdicts.append((sample.id, None, ""))
        else:
            verdicts.append((sample.id, REJECTED, answer[1] or "the judge says the path does not do what the query asks"))
    return verdicts


@dataclass
class GoldJudge:
    """samples -> verdicts, through a cached judge client (the pipeline's `judge:` block, else its
    `llm:` block, at temperature 0)."""

    config: LLMConfig
    cache_path: Path
    prompt_path: Path = GOLD_JUDGE_PROMPT
    accounting: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def for_pipeline(cls, judge: LLMConfig | None, llm: LLMConfig, cache_path: Path) -> "GoldJudge":
        config = judge_llm_config(judge or llm, None, None)
        assert config is not None
        return cls(config, cache_path)

    @property
    def model(self) -> str:
        return self.config.model or "?"

    def __call__(self, samples: Sequence[Sample]) -> list[JudgeVerdict]:
        if not samples:
            return []
        return asyncio.run(self._run(samples))

    async def _run(self, samples: Sequence[Sample]) -> list[JudgeVerdict]:
        from fcbench.llm.cache import RequestCache

        cache = RequestCache(self.cache_path)
        try:
            async with judge_client(self.config, cache) as client:
                judge = LLMJudge(client, load_prompt(self.prompt_path), read_verdict)
                answers = await judge.ask_all([question(sample) for sample in samples])
                self.accounting.append(client.summary())
                return verdicts_of(samples, answers)
        finally:
            cache.close()


__all__ = ["GOLD_JUDGE_PROMPT", "GoldJudge", "REJECTED", "UNDECIDED"]
