"""CallNavi's GPT score: the LLM judge of parameter quality (`Judge_para.py`), through the one judge
mechanism (`fcbench.llm.judge.LLMJudge`: every verdict cached, an unreadable answer asked again
once, then a `JudgeError`, never a guessed score), or its rule-based stand-in offline.

The prompt is CallNavi's, verbatim (fcbench/prompts/callnavi_gpt_score.txt): the predicted answer
(parsed, `{}` when it did not parse, as the published wash leaves it) and the ground truth, each
as `json.dumps`; the judge answers "[[0.85]]". Read as `Judge_para.py` reads it (brackets removed,
a float), and it must lie in [0, 1]. CallNavi asked GPT-4o at its default temperature; fcbench's
judges run at temperature 0 (a verdict should not depend on a draw), said in scores.json.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from fcbench.config import LLMConfig
from fcbench.llm.cache import RequestCache
from fcbench.llm.client import ParseError
from fcbench.llm.judge import JudgeError, LLMJudge, judge_client, load_prompt

PROMPT = Path(__file__).resolve().parents[1] / "prompts" / "callnavi_gpt_score.txt"
RULE_BASED = ("RULE-BASED STAND-IN for CallNavi's GPT-4o score (not an LLM): half API list, half parameter "
              "values (fcbench.score.callnavi.rule_based_gpt_score)")


def read_bracketed_score(text: str) -> dict[str, Any]:
    """`[[0.85]]` -> {"score": 0.85}: brackets removed and the rest read as a float, as
    `Judge_para.py` does; `ParseError` for anything else or a score outside [0, 1]."""
    stripped = text.replace("[", "").replace("]", "").strip()
    try:
        score = float(stripped)
    except ValueError:
        raise ParseError(f"expected a score like [[0.85]], got {text.strip()[:60]!r}") from None
    if not 0.0 <= score <= 1.0:
        raise ParseError(f"the score {score} is outside [0, 1]")
    return {"score": score}


def gpt_score_question(answer: Any, ground_truth: Mapping[str, Any]) -> dict[str, str]:
    return {"predict": json.dumps(answer if answer is not None else {}), "ground_truth": json.dumps(ground_truth)}


def ask_gpt_scores(questions: Sequence[Mapping[str, str]], config: LLMConfig, cache_path: Path,
                   environ: Mapping[str, str] | None = None) -> tuple[list[float | JudgeError], dict[str, Any]]:
    """One score (or `JudgeError`) per question, in order, and the judge client's accounting."""
    return asyncio.run(_ask(questions, config, cache_path, environ))


async def _ask(questions: Sequence[Mapping[str, str]], config: LLMConfig, cache_path: Path,
               environ: Mapping[str, str] | None) -> tuple[list[float | JudgeError], dict[str, Any]]:
    with RequestCache(cache_path) as cache:
        async with judge_client(config, cache, environ) as client:
            judge: LLMJudge[float] = LLMJudge(client, load_prompt(PROMPT), json_answer=False,
                                              parse=lambda completion: float(
                                                  read_bracketed_score(completion.content or "")["score"]))
            verdicts = await judge.ask_all(questions)
            return verdicts, client.summary()
