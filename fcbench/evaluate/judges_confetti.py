"""The judges of `score --metric confetti`: CONFETTI's LLM dialog-act classifier and its LLM
parameter-validity judge (I/O), or the rule-based stand-ins offline, and what the report says
about which judge produced each figure.

The metric itself stays pure (`fcbench.score.confetti`): it takes a classifier and a judge as
plain callables. The LLM versions are asked everything at once, concurrently, in two passes over
the pure scorer:
1. a recording pass, whose classifier and judge note every question and answer `JudgeError`;
2. every question goes to the LLM (`fcbench.llm.judge.LLMJudge`: cached, an unreadable answer
   asked again once, then a `JudgeError`);
3. the scoring pass, whose classifier and judge look the verdicts up; a `JudgeError` becomes
   `JudgeError`, so that part of the item is a `judge_error` with the reason and is left out of
   its figure.
Both passes see the same lines in the same order, so they ask the same questions.

A predicted value equal to a gold or accepted value of that parameter is valid without asking
(the annotators took those values from the conversation): only the others go to the judge.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from fcbench.config import LLMConfig
from fcbench.llm.cache import canonical_json
from fcbench.llm.client import ParseError
from fcbench.errors import JudgeError
from fcbench.llm.judge import LLMJudge, judge_client, load_prompt
from fcbench.sample import Sample
from fcbench.score.confetti import (
    ConfettiOptions,
    ConfettiReport,
    ParameterUse,
    normal_dialog_act,
    score_confetti,
)
from fcbench.score.matching import PredictedCall, values_equivalent

PROMPTS = Path(__file__).resolve().parents[1] / "prompts"
DIALOG_ACTS_PROMPT = PROMPTS / "confetti_dialog_acts.txt"
VALIDITY_PROMPT = PROMPTS / "confetti_parameter_validity.txt"

# The act names the classifier prompt uses (the paper's wording) -> the published files' names.
PROMPT_ACTS = {
    "function_call": "agent_function_calling",
    "seek_information": "agent_seek_information",
    "provide_information": "agent_inform_user",
    "reject": "agent_reject_request",
    "other": "agent_other",
}
VERDICTS = {"grounded": True, "hallucinated": False}
UNAVAILABLE = "(not available: the benchmark carries no conversation history for this turn)"

RULE_BASED_ACTS = "rule-based stand-in, not an LLM (keyword rules: calls, '?', apologies)"
RULE_BASED_VALIDITY = "rule-based stand-in, not an LLM (a gold value, or the value written in the conversation)"
COMPUTED = "computed (soft string similarity over paired calls), no judge"


# ------------------------------------------------------------------------------- reading answers
def read_dialog_acts(answer: Mapping[str, Any]) -> list[str]:
    """The acts of a classifier answer, in the published files' names; `ParseError` unless it is a
    non-empty list of known acts."""
    acts = answer.get("dialog_acts")
    if not isinstance(acts, list) or not acts or not all(isinstance(act, str) for act in acts):
        raise ParseError('expected {"dialog_acts": [one or more act names], ...}')
    names = []
    for act in acts:
        key = act.strip().lower().replace(" ", "_")
        name = PROMPT_ACTS.get(key) or normal_dialog_act(key)
        if name not in PROMPT_ACTS.values():
            raise ParseError(f"unknown dialog act {act!r}; expected {', '.join(PROMPT_ACTS)}")
        names.append(name)
    return list(dict.fromkeys(names))


def read_validity(answer: Mapping[str, Any]) -> bool:
    verdict = answer.get("verdict")
    if not isinstance(verdict, str) or verdict.strip().lower() not in VERDICTS:
        raise ParseError('expected {"verdict": "grounded" or "hallucinated", ...}')
    return VERDICTS[verdict.strip().lower()]


# ------------------------------------------------------------------------------------- questions
def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def act_question(response: str, calls: Sequence[PredictedCall], history: str) -> dict[str, str]:
    listed = "\n".join(f"- {call.name}({_json(dict(call.arguments))})" for call in calls)
    return {"history": history or UNAVAILABLE, "calls": listed or "(none)", "response": response.strip() or "(no text)"}


def validity_question(use: ParameterUse) -> dict[str, str]:
    return {"history": use.history or use.context or UNAVAILABLE, "function": use.function, "parameter": use.parameter,
            "value": _json(use.value), "accepted": _json(use.accepted)}


def gold_value(use: ParameterUse) -> bool:
    return any(values_equivalent(use.value, accepted) for accepted in use.accepted)


@dataclass
class _Questions:
    """The recording pass: every question the scorer would ask, none answered."""

    acts: list[dict[str, str]] = field(default_factory=list)
    values: list[dict[str, str]] = field(default_factory=list)

    def classify(self, response: str, calls: Sequence[PredictedCall], history: str) -> list[str]:
        self.acts.append(act_question(response, calls, history))
        raise JudgeError("not asked yet")

    def judge(self, use: ParameterUse) -> bool:
        if gold_value(use):
            return True
        self.values.append(validity_question(use))
        raise JudgeError("not asked yet")


@dataclass
class _Verdicts:
    """The scoring pass: each question's verdict, by its canonical JSON."""

    acts: dict[str, list[str] | JudgeError]
    values: dict[str, bool | JudgeError]

    def classify(self, response: str, calls: Sequence[PredictedCall], history: str) -> list[str]:
        return _verdict(self.acts[canonical_json(act_question(response, calls, history))])

    def judge(self, use: ParameterUse) -> bool:
        if gold_value(use):
            return True
        return _verdict(self.values[canonical_json(validity_question(use))])


RAW_TEXT_SHOWN = 200  # characters of an unreadable answer kept in the item, enough to see what went wrong


def _verdict(verdict: Any) -> Any:
    if isinstance(verdict, JudgeError):
        raw = " ".join(verdict.raw_text.split())
        shown = raw if len(raw) <= RAW_TEXT_SHOWN else raw[:RAW_TEXT_SHOWN] + "..."
        raise JudgeError(f"judge_error: {verdict.reason}" + (f" (last answer: {shown!r})" if shown else ""))
    return verdict


# ------------------------------------------------------------------------------------- the runs
@dataclass
class JudgedReport:
    report: ConfettiReport
    grading: dict[str, Any]  # which judge produced each figure; the first line says it in words
    first_line: str
    nothing_usable: bool  # the LLM was asked and gave no usable verdict at all


def score_offline(samples: Iterable[Sample], predictions: Sequence[Mapping[str, Any]], why: str,
                  score_calls: bool = True) -> JudgedReport:
    """The rule-based stand-ins (the pure scorer's defaults); `why` says why no LLM graded.
    `score_calls` False: the lines' calls are shown to the act classifier only (a response-quality
    set)."""
    report = score_confetti(samples, predictions, ConfettiOptions(score_calls=score_calls))
    grading = grading_of(report.items, None, RULE_BASED_ACTS, RULE_BASED_VALIDITY, why=why)
    return _judged(report, grading)


def score_with_llm(samples: Iterable[Sample], predictions: Sequence[Mapping[str, Any]], config: LLMConfig,
                   cache_path: Path, environ: Mapping[str, str] | None = None, score_calls: bool = True) -> JudgedReport:
    samples = list(samples)
    questions = _Questions()
    score_confetti(samples, predictions, ConfettiOptions(act_classifier=questions.classify,
                                                         validity_judge=questions.judge, score_calls=score_calls))
    acts, values, llm_summary = asyncio.run(_ask(config, cache_path, questions, environ))
    verdicts = _Verdicts({canonical_json(q): v for q, v in zip(questions.acts, acts)},
                         {canonical_json(q): v for q, v in zip(questions.values, values)})
    report = score_confetti(samples, predictions, ConfettiOptions(act_classifier=verdicts.classify,
                                                                  validity_judge=verdicts.judge, score_calls=score_calls))
    judge = f"LLM {config.model}"
    llm = {"model": config.model, "base_url": llm_summary["base_url"],
           "cache": str(cache_path), "asked": {"dialog_acts": len(questions.acts), "parameter_values": len(questions.values)},
           "requests": {key: llm_summary.get(key) for key in ("requests_sent", "cache_hits", "completed", "rejected",
                                                               "retries", "rejections", "cost_usd")}}
    grading = grading_of(report.items, llm, judge + " (dialog-act classifier)",
                         judge + " (parameter-validity judge; a value equal to a gold value is valid without asking)")
    judged = _judged(report, grading)
    asked = len(questions.acts) + len(questions.values)
    failed = sum(isinstance(v, JudgeError) for v in [*acts, *values])
    judged.nothing_usable = asked > 0 and failed == asked
    return judged


async def _ask(config: LLMConfig, cache_path: Path, questions: _Questions,
               environ: Mapping[str, str] | None) -> tuple[list[Any], list[Any], dict[str, Any]]:
    from fcbench.llm.cache import RequestCache

    with RequestCache(cache_path) as cache:
        async with judge_client(config, cache, environ) as client:
            classifier = LLMJudge(client, load_prompt(DIALOG_ACTS_PROMPT), read_dialog_acts)
            validity = LLMJudge(client, load_prompt(VALIDITY_PROMPT), read_validity)
            acts, values = await asyncio.gather(classifier.ask_all(questions.acts), validity.ask_all(questions.values))
            return acts, values, client.summary()


# --------------------------------------------------------------------------------- the grading
def grading_of(items: Sequence[Mapping[str, Any]], llm: dict[str, Any] | None, acts_judge: str, validity_judge: str,
               why: str | None = None) -> dict[str, Any]:
    """Which judge produced each figure, with counts, and which parts no LLM graded."""
    given = sum(item.get("acts_from") == "given" for item in items)
    classified = sum(item.get("acts_from") == "classifier" for item in items)
    act_errors = sum("dialog_acts" in item.get("judge_error", {}) for item in items)
    validity_errors = sum("parameter_validity" in item.get("judge_error", {}) for item in items)
    not_llm = ["ast_soft_accuracy"]
    if llm is None:
        not_llm += ["dialog_act_accuracy", "parameter_validity_rate"]
    elif given:
        not_llm.append("dialog_act_accuracy (the turns whose acts are given in the predictions)")
    return {
        "llm": llm,
        "offline_because": why,
        "ast_soft_accuracy": {"judge": COMPUTED},
        "dialog_act_accuracy": {"judge": acts_judge, "classified": classified, "given_in_predictions": given,
                                "judge_errors": act_errors},
        "parameter_validity_rate": {"judge": validity_judge, "judge_errors": validity_errors},
        "not_graded_by_llm": not_llm,
    }


def grading_line(grading: Mapping[str, Any]) -> str:
    """The report's first line: what was NOT graded by an LLM, and who graded the rest."""
    acts = grading["dialog_act_accuracy"]
    validity = grading["parameter_validity_rate"]
    count = acts["given_in_predictions"]
    given = f"; dialog acts given in the predictions for {count} turn{'s' if count != 1 else ''} (not classified)" \
        if count else ""
    if grading["llm"] is None:
        return (f"NOT graded by an LLM ({grading['offline_because']}): dialog acts by a {acts['judge']}; "
                f"parameter validity by a {validity['judge']}; AST soft accuracy computed, no judge{given}")
    llm = grading["llm"]
    errors = acts["judge_errors"] + validity["judge_errors"]
    left_out = f"; {errors} judge_error{'s' if errors != 1 else ''} left out of the figures" if errors else ""
    return (f"graded by LLM {llm['model']} at {llm['base_url']}: dialog acts ({acts['classified']} responses "
            f"classified), parameter validity ({llm['asked']['parameter_values']} values that are not gold values "
            f"judged){left_out}; NOT graded by an LLM: AST soft accuracy (computed, no judge){given}")


def _judged(report: ConfettiReport, grading: dict[str, Any]) -> JudgedReport:
    line = grading_line(grading)
    grading = {"line": line, **grading}
    report.summary = {"grading": grading, **report.summary}
    return JudgedReport(report, grading, line, nothing_usable=False)
