"""ComplexEval's LLM judges (the I/O side): call equivalence, and the completeness and correctness
of the final answer on the paper's 0-2 scale, asked through the LLM layer (`fcbench.llm`: openai
SDK, request cache, retries, accounting) with prompts kept as files (`fcbench/prompts/
complexeval_*.txt`, written from ComplexFuncBench's appendix: criteria and scale kept).

The scorer (`fcbench.score.complexeval`, pure) takes them as plug-ins:
- `LLMJudges.equivalence_layer(sample)`: the `llm` MatchLayer, asked only for pairs the rules and
  the response comparison could not decide (the evaluator's order; `judged_options` puts it there);
- `LLMJudges.completeness` / `LLMJudges.correctness`: ResponseJudges.

Every verdict is cached (the request cache is keyed on the whole request: a re-run asks nothing
again). An answer that is not the JSON asked for is asked again ONCE (a second attempt with its
own cache row, `fcbench.llm.judge.JUDGE_PARSE_ATTEMPTS`); still unusable, or refused by the endpoint, it raises `JudgeError`: recorded as
`judge_error`, never guessed. An unreachable endpoint or a refused key stops the run (UserError).

The scorer is synchronous and may run inside another event loop (`evaluate`): the judges are
`fcbench.llm.judge.LLMJudge`s asked through a `JudgeSession` (the LLM layer's one background
loop); a call blocks the calling thread only.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from fcbench.config import LLMConfig
from fcbench.llm.client import Completion, ParseError
from fcbench.llm.client import json_object_answer
from fcbench.llm.judge import JudgeSession
from fcbench.sample import Call, Sample, Tool, user_query
from fcbench.environments import Environment
from fcbench.environments.recorded import RecordedEnvironment
from fcbench.score.complexeval import (ComplexEvalOptions, ResponseJudgeInput, gold_steps_with_values,
                                       response_match_layer, typed_difference_layer)
from fcbench.errors import JudgeError
from fcbench.score.matching import MatchLayer, PredictedCall

PROMPTS = Path(__file__).resolve().parents[1] / "prompts"
EQUIVALENCE_PROMPT = PROMPTS / "complexeval_call_equivalence.txt"
COMPLETENESS_PROMPT = PROMPTS / "complexeval_completeness.txt"
CORRECTNESS_PROMPT = PROMPTS / "complexeval_correctness.txt"


# ------------------------------------------------------------------------------ parsing (pure)
def parse_equivalence(completion: Completion) -> tuple[bool, str]:
    """(is_equal, reason); ParseError unless `is_equal` is a JSON boolean."""
    value = json_object_answer(completion)
    if not isinstance(value.get("is_equal"), bool):
        raise ParseError('expected {"is_equal": true or false, "reason": ...}')
    return value["is_equal"], str(value.get("reason", ""))


def parse_score(completion: Completion) -> tuple[int, str]:
    """(score, reason); ParseError unless `score` is exactly 0, 1 or 2 (not 2.5, not "2", not true)."""
    value = json_object_answer(completion)
    score = value.get("score")
    if isinstance(score, bool) or not isinstance(score, int) or score not in (0, 1, 2):
        raise ParseError('expected {"score": 0, 1 or 2, "reason": ...}')
    return score, str(value.get("reason", ""))


# ------------------------------------------------------------------------------ prompt inputs
def _dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def functions_text(tools: list[Tool]) -> str:
    return _dumps([{"name": t.name, "description": t.description, "parameters": t.parameters} for t in tools])


def gold_conversation(sample: Sample) -> list[dict[str, Any]]:
    """The messages, then each gold step's calls and their recorded responses (what the paper's
    correctness judge compares the answer with)."""
    conversation: list[dict[str, Any]] = [dict(message) for message in sample.messages]
    for step in gold_steps_with_values(sample):
        conversation.append({"role": "assistant", "function_call": [{"name": c.name, "arguments": c.arguments}
                                                                      for c in step]})
        conversation.append({"role": "observation", "content": [c.response for c in step]})
    return conversation


# ------------------------------------------------------------------------------ the judges
class NamedJudge:
    """A ResponseJudge with the name the report shows (`llm:<model>:completeness`)."""

    def __init__(self, name: str, judge: Callable[[ResponseJudgeInput], int]) -> None:
        self.__name__ = name
        self._judge = judge

    def __call__(self, given: ResponseJudgeInput) -> int:
        return self._judge(given)


class LLMJudges:
    """Use as `with LLMJudges(config, cache_path) as judges: ...`; `summary()` is the accounting
    (requests sent, cache hits, verdicts by judge and layer, judge errors)."""

    def __init__(self, config: LLMConfig, cache_path: Path, *, environ: Mapping[str, str] | None = None) -> None:
        self.config = config
        self.verdicts: Counter[str] = Counter()  # "<judge>:<verdict>" -> count
        self._lock = threading.Lock()
        self._session = JudgeSession(config, cache_path, environ=environ)
        self._judges = {name: self._session.judge(path, parse=parse) for name, path, parse in (
            ("equivalence", EQUIVALENCE_PROMPT, parse_equivalence), ("completeness", COMPLETENESS_PROMPT, parse_score),
            ("correctness", CORRECTNESS_PROMPT, parse_score))}
        self.completeness_judge = NamedJudge(f"llm:{config.model}:completeness", self.completeness)
        self.correctness_judge = NamedJudge(f"llm:{config.model}:correctness", self.correctness)

    def close(self) -> None:
        self._session.close()

    def __enter__(self) -> LLMJudges:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def model(self) -> str:
        return self.config.model

    def summary(self) -> dict[str, Any]:
        with self._lock:
            verdicts = dict(sorted(self.verdicts.items()))
        return {**self._session.summary(), "verdicts": verdicts}

    def _count(self, key: str) -> None:
        with self._lock:
            self.verdicts[key] += 1

    def _ask(self, judge: str, question: Mapping[str, str]) -> Any:
        verdict = self._session.ask(self._judges[judge], question)
        if isinstance(verdict, JudgeError):
            self._count(f"{judge}:judge_error")
            raise JudgeError(f"{judge} judge ({self.config.model}): {verdict.reason}", verdict.raw_text)
        return verdict

    # -- call equivalence ---------------------------------------------------------------------
    def equivalence_layer(self, sample: Sample) -> MatchLayer:
        """The `llm` layer for one sample's pairs: the judge sees its functions and the conversation
        so far (the messages and every response the model was given), as in the paper."""
        functions = functions_text(list(sample.tools))

        def decide(predicted: PredictedCall, gold: Call, tool: Tool | None, context: str) -> bool:
            is_equal, _ = self._ask("equivalence", {
                "functions": functions, "history": context,
                "call_1": _dumps({"name": predicted.name, "arguments": predicted.arguments}),
                "call_2": _dumps({"name": gold.name, "arguments": gold.arguments}),
            })
            self._count(f"equivalence:{'equal' if is_equal else 'different'}")
            return is_equal

        return MatchLayer("llm", decide, needs_context=True)

    # -- the final answer ---------------------------------------------------------------------
    def completeness(self, given: ResponseJudgeInput) -> int:
        if not (given.final_text or "").strip():
            self._count("completeness:rule_no_answer")
            return 0  # nothing was answered: certain without asking
        score, _ = self._ask("completeness", {"query": user_query(given.sample), "response": given.final_text or ""})
        self._count(f"completeness:{score}")
        return score

    def correctness(self, given: ResponseJudgeInput) -> int:
        if not (given.final_text or "").strip():
            self._count("correctness:rule_no_answer")
            return 0
        score, _ = self._ask("correctness", {"history": _dumps(gold_conversation(given.sample)),
                                             "response": given.final_text or ""})
        self._count(f"correctness:{score}")
        return score


def judged_options(samples: Sequence[Sample], judges: LLMJudges,
                   base: ComplexEvalOptions = ComplexEvalOptions()) -> Callable[[Sample], ComplexEvalOptions]:
    """Per-sample options in the evaluator's order: rules (in the matcher), then the response
    comparison (the recorded gold responses of these samples answer the predicted call: the same
    response as the gold call's means equivalent), then the typed-difference rule (another date,
    id, number, enum member or a typed filter on one side only is not equivalent: no judgement
    needed, `typed_difference`), then the LLM judge for what is left."""
    return options_with_responses(RecordedEnvironment.from_samples(samples), judges, base)


def options_with_responses(responses: Environment, judges: LLMJudges,
                           base: ComplexEvalOptions = ComplexEvalOptions()) -> Callable[[Sample], ComplexEvalOptions]:
    """`judged_options` with the recorded responses given (`evaluate` records its split's on disk
    as it reads them, rather than holding every sample)."""
    response_layer = response_match_layer(responses)
    difference_layer = typed_difference_layer()

    def options_for(sample: Sample) -> ComplexEvalOptions:
        layers = [*base.layers, response_layer, difference_layer, judges.equivalence_layer(sample)]
        return ComplexEvalOptions(layers=layers, similarity=base.similarity, exact_parameters=base.exact_parameters,
                                  optional_functions=base.optional_functions, grounding=base.grounding,
                                  stop_on_unmatched_turn=base.stop_on_unmatched_turn,
                                  unknown_call_response=base.unknown_call_response)

    return options_for
