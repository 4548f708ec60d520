"""CallNavi metrics (pure): routing, syntax, structure, AST match, and stability over runs.

A CallNavi answer is `{"API": [names in call order], "parameters": [{argument: value}, ...]}`,
one parameter object per API; `"$$$"` in the ground truth marks a value unknown from the question
(or read from an earlier call): it matches anything.

Per output (`score_callnavi`):
- `syntax_valid`: the raw model text is JSON once repaired by `json_repair` (pure code; CallNavi
  used a GPT-4o "wash" prompt), `repairs` says what had to be fixed;
- `routing`: the API list equals the ground truth's, in order (API routing exact match);
- `structural`: routing, one parameter object per API, and every ground-truth parameter name
  present (extra names allowed, as in CallNavi's scorer);
- `ast_match`: structural, and every ground-truth value equal to the predicted one, `"$$$"`
  matching anything.

Default mode departs from CallNavi's published scorer (`parajudge.py`) where it is defective;
`compat=True` keeps its behaviour:
1. `"$$$"` nested inside an object value (`{"make": "Toyota", "model": "$$$"}`, 60+ items) is a
   wildcard in default mode; CallNavi compares such objects literally, so only a prediction
   that spells "$$$" itself can match.
2. An API without arguments may have no parameter object in the ground truth (`sho005`:
   `"API": ["getCartItems"], "parameters": []`, 6 items); default mode reads a missing object,
   there or in the prediction, as `{}`; CallNavi fails every prediction with one object per API.
3. CallNavi's routing flag also requires the parameter-object count to match; default mode
   judges routing on the API list only.

Stability over N runs of the same question (no stability code is published: both modes compute it
the same way). Every answer is first NORMALISED as CallNavi's `Judge_call.py` compares answers: a
parsed answer is written as canonical JSON (sorted keys), then quotes, brackets, backticks, spaces
and line breaks are removed and the text is lower-cased, so two spellings of one answer (spacing,
quote style, key order, case) are one answer:
- election score `(F1 - F2) / (N - F2)`, F1 and F2 the counts of the most and second most
  frequent normalised answers, 0 on a tie (paper, Appendix D);
- Levenshtein score: the mean normalised Levenshtein similarity between the FIRST run's
  normalised answer and each other run's (N - 1 comparisons; issue 24 reads the paper so; the
  research notes could not check the paper's text, and all pairs would weigh late runs more).

Per difficulty and macro (`CallNaviTally`): the paper reports easy / medium / hard and their
macro average (the mean of the three figures). `Judge_para.py` divides by hard-coded counts
(456 / 188 / 85 of 729); fcbench divides by the real counts of the questions scored (the
published files hold 456 / 187 / 86) and says so.

The GPT score (a 0-1 similarity of the whole answer to the ground truth, asked of GPT-4o by
`Judge_para.py`) is asked of the configured LLM judge (`fcbench.evaluate.judges_callnavi`); offline
`rule_based_gpt_score` stands in for it, and every output that carries it names it as a stand-in.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rapidfuzz.distance import Levenshtein

from fcbench.score.json_repair import repair_json
from fcbench.score.registry import metric

WILDCARD = "$$$"


@dataclass(frozen=True)
class CallNaviScore:
    syntax_valid: bool
    routing: bool
    structural: bool
    ast_match: bool
    repairs: tuple[str, ...] = ()

    @property
    def repaired(self) -> bool:
        return bool(self.repairs)


def parse_callnavi_output(output: str | Mapping[str, Any]) -> tuple[dict[str, Any] | None, tuple[str, ...]]:
    """(parsed answer or None, repairs made). An already parsed answer is taken as is."""
    if isinstance(output, Mapping):
        return dict(output), ()
    repaired = repair_json(output)
    if not repaired.ok or not isinstance(repaired.value, dict):
        return None, repaired.repairs
    return repaired.value, repaired.repairs


@metric("callnavi", llm_judged=True)
def score_callnavi(
    output: str | Mapping[str, Any], ground_truth: Mapping[str, Any], compat: bool = False
) -> CallNaviScore:
    """Grade one model output (raw text or parsed) against a question's `ground_truth`."""
    answer, repairs = parse_callnavi_output(output)
    if answer is None:
        return CallNaviScore(False, False, False, False, repairs)
    routing = routing_match(answer, ground_truth)
    if compat:
        routing = routing and _same_length(answer.get("parameters"), ground_truth.get("parameters"))
    structural = structural_match(answer, ground_truth, compat)
    ast = structural and ast_match(answer, ground_truth, compat)
    return CallNaviScore(True, routing, structural, ast, repairs)


def routing_match(answer: Mapping[str, Any], ground_truth: Mapping[str, Any]) -> bool:
    """The same APIs in the same order."""
    apis = answer.get("API")
    return isinstance(apis, list) and apis == list(ground_truth["API"])


def structural_match(
    answer: Mapping[str, Any], ground_truth: Mapping[str, Any], compat: bool = False
) -> bool:
    if not routing_match(answer, ground_truth):
        return False
    pairs = _parameter_pairs(answer, ground_truth, compat)
    if pairs is None:
        return False
    return all(set(gold) <= set(predicted) for predicted, gold in pairs)


def ast_match(answer: Mapping[str, Any], ground_truth: Mapping[str, Any], compat: bool = False) -> bool:
    if not structural_match(answer, ground_truth, compat):
        return False
    pairs = _parameter_pairs(answer, ground_truth, compat) or []
    for predicted, gold in pairs:
        for name, gold_value in gold.items():
            if compat:
                # CallNavi skips "$$$" and {} at the top level only and compares the rest as is.
                if gold_value != WILDCARD and gold_value != {} and gold_value != predicted[name]:
                    return False
            elif not values_match(predicted[name], gold_value):
                return False
    return True


def values_match(predicted: Any, gold: Any) -> bool:
    """Gold "$$$" (and gold {} for an object CallNavi left unspecified) match anything; objects
    need every gold key, with extra keys allowed as at the top level; lists match in order."""
    if gold == WILDCARD or gold == {}:
        return True
    if isinstance(gold, dict):
        return isinstance(predicted, dict) and all(
            key in predicted and values_match(predicted[key], value) for key, value in gold.items()
        )
    if isinstance(gold, list):
        return (
            isinstance(predicted, list)
            and len(predicted) == len(gold)
            and all(values_match(p, g) for p, g in zip(predicted, gold))
        )
    if isinstance(gold, bool) or isinstance(predicted, bool):
        return type(gold) is type(predicted) and gold == predicted
    return gold == predicted


def _same_length(left: Any, right: Any) -> bool:
    return isinstance(left, list) and isinstance(right, list) and len(left) == len(right)


def _parameter_pairs(
    answer: Mapping[str, Any], ground_truth: Mapping[str, Any], compat: bool
) -> list[tuple[dict[str, Any], dict[str, Any]]] | None:
    """(predicted, gold) parameter objects, one per API; None when the shapes cannot be paired."""
    predicted, gold = answer.get("parameters"), list(ground_truth.get("parameters") or [])
    if not isinstance(predicted, list):
        return None
    if not compat:
        # Fix 2: an API with no arguments may have no parameter object (in the ground truth or in
        # the prediction): read the missing objects as {}.
        n_apis = len(ground_truth["API"])
        gold += [{}] * (n_apis - len(gold))
        predicted = predicted + [{}] * (n_apis - len(predicted))
    if len(predicted) != len(gold) or not all(isinstance(p, dict) for p in predicted):
        return None
    return list(zip(predicted, gold))


def callnavi_rates(scores: Sequence[CallNaviScore]) -> dict[str, float]:
    """Share of outputs passing each check (and needing a repair), as the paper reports them."""
    n = len(scores)
    if n == 0:
        return {}
    return {
        "syntax_validity": sum(s.syntax_valid for s in scores) / n,
        "repaired": sum(s.repaired for s in scores) / n,
        "routing_exact_match": sum(s.routing for s in scores) / n,
        "structural_accuracy": sum(s.structural for s in scores) / n,
        "ast_exact_match": sum(s.ast_match for s in scores) / n,
    }


# ---------------------------------------------------------------------------------------------
# Stability over repeated runs


def answer_key(answer: Any) -> str:
    """A canonical text for an answer, so equal answers count as one (key order aside)."""
    if isinstance(answer, str):
        return answer
    return json.dumps(answer, sort_keys=True, ensure_ascii=False)


# What `Judge_call.py` strips before comparing two answers (then it lower-cases): quotes, brackets,
# line breaks, spaces and backticks. Tabs and carriage returns are spacing too.
_NOT_COMPARED = str.maketrans("", "", "'\"[]\n\r\t `")


def normalised_answer(output: Any) -> str:
    """One answer's normalised text (see the module docstring): parsed when it parses (then
    canonical JSON), quotes/brackets/spacing removed, lower-cased."""
    if isinstance(output, Mapping):
        text = answer_key(dict(output))
    elif isinstance(output, str):
        parsed, _ = parse_callnavi_output(output)
        text = answer_key(parsed) if parsed is not None else output
    else:
        text = answer_key(output)
    return text.translate(_NOT_COMPARED).lower()


@metric("callnavi_election_stability")
def election_stability(answers: Sequence[Any]) -> float:
    """(F1 - F2) / (N - F2) over the normalised answers: how clearly one answer wins over N runs;
    0 on a tie for first.

    AAAAA -> 1, AAAAB -> 0.75, AAABC -> 0.5, AAABB -> 1/3, AABCD -> 0.25, AABBC -> 0, ABCDE -> 0.
    """
    if not answers:
        raise ValueError("the election score needs at least one answer")
    counts = sorted(Counter(normalised_answer(a) for a in answers).values(), reverse=True)
    first = counts[0]
    second = counts[1] if len(counts) > 1 else 0
    if first == second:
        return 0.0
    return (first - second) / (len(answers) - second)


@metric("callnavi_levenshtein_stability")
def levenshtein_stability(outputs: Sequence[Any]) -> float:
    """Mean normalised Levenshtein similarity of the first output to each other one, on the
    normalised answers (1: every run wrote the first run's answer). One output: 1."""
    if not outputs:
        raise ValueError("the Levenshtein score needs at least one output")
    texts = [normalised_answer(o) for o in outputs]
    first, others = texts[0], texts[1:]
    if not others:
        return 1.0
    return sum(Levenshtein.normalized_similarity(first, other) for other in others) / len(others)


# ---------------------------------------------------------------------------------------------
# The GPT score's offline stand-in


def rule_based_gpt_score(output: str | Mapping[str, Any], ground_truth: Mapping[str, Any]) -> float:
    """RULE-BASED STAND-IN for CallNavi's GPT-4o score (0-1 similarity of the predicted answer to
    the ground truth, "whether the API calling list is the same and whether all parameters
    match"): 0 for an answer that does not parse; else half for the API list (positions naming the
    gold API, over the longer list) and half for the parameters (gold values matched at their
    position, "$$$" matching anything, over the gold values; the API half alone when the ground
    truth has no values). Three decimals, as the judge is asked for."""
    answer, _ = parse_callnavi_output(output)
    if answer is None:
        return 0.0
    gold_apis = list(ground_truth.get("API") or [])
    predicted_apis = answer.get("API") if isinstance(answer.get("API"), list) else []
    longest = max(len(gold_apis), len(predicted_apis))
    api_part = sum(p == g for p, g in zip(predicted_apis, gold_apis)) / longest if longest else 1.0
    gold_parameters = [entry for entry in ground_truth.get("parameters") or [] if isinstance(entry, dict)]
    predicted_parameters = answer.get("parameters") if isinstance(answer.get("parameters"), list) else []
    total = matched = 0
    for position, gold in enumerate(gold_parameters):
        predicted = predicted_parameters[position] if position < len(predicted_parameters) else {}
        for name, value in gold.items():
            total += 1
            matched += isinstance(predicted, dict) and name in predicted and values_match(predicted[name], value)
    score = api_part if not total else (api_part + matched / total) / 2
    return round(score, 3)


# ---------------------------------------------------------------------------------------------
# The paper's figures: per difficulty and macro


DIFFICULTIES = ("easy", "medium", "hard")


@dataclass
class _DifficultyCounts:
    questions: int = 0
    outputs: int = 0
    syntax_valid: int = 0
    routing: int = 0
    structural: int = 0
    ast_match: int = 0
    gpt_score_sum: float = 0.0
    gpt_scored: int = 0
    election_sum: float = 0.0
    levenshtein_sum: float = 0.0

    def figures(self) -> dict[str, Any]:
        def share(count: float, of: int) -> float | None:
            return count / of if of else None

        return {
            "questions": self.questions,
            "outputs": self.outputs,
            "syntax_validity": share(self.syntax_valid, self.outputs),
            "routing_exact_match": share(self.routing, self.outputs),
            "structural_accuracy": share(self.structural, self.outputs),
            "ast_exact_match": share(self.ast_match, self.outputs),
            "gpt_score": share(self.gpt_score_sum, self.gpt_scored),
            "election_stability": share(self.election_sum, self.questions),
            "levenshtein_stability": share(self.levenshtein_sum, self.questions),
        }


MACRO_FIGURES = ("syntax_validity", "routing_exact_match", "structural_accuracy", "ast_exact_match", "gpt_score",
                 "election_stability", "levenshtein_stability")


@dataclass
class CallNaviTally:
    """Every output of every run of every question, counted per difficulty; `figures()` gives each
    difficulty's shares, their macro average (the mean of the difficulties present) and the micro
    overall (every output alike, as `Judge_para.py`'s "overall")."""

    by_difficulty: dict[str, _DifficultyCounts] = field(default_factory=dict)

    def add_question(self, difficulty: str, outputs: Sequence[Any], scores: Sequence[CallNaviScore],
                     gpt_scores: Sequence[float | None]) -> None:
        counts = self.by_difficulty.setdefault(difficulty, _DifficultyCounts())
        counts.questions += 1
        counts.outputs += len(scores)
        counts.syntax_valid += sum(s.syntax_valid for s in scores)
        counts.routing += sum(s.routing for s in scores)
        counts.structural += sum(s.structural for s in scores)
        counts.ast_match += sum(s.ast_match for s in scores)
        judged = [g for g in gpt_scores if g is not None]
        counts.gpt_score_sum += sum(judged)
        counts.gpt_scored += len(judged)
        counts.election_sum += election_stability(outputs)
        counts.levenshtein_sum += levenshtein_stability(outputs)

    def figures(self) -> dict[str, Any]:
        order = [d for d in DIFFICULTIES if d in self.by_difficulty] + sorted(set(self.by_difficulty) - set(DIFFICULTIES))
        per = {d: self.by_difficulty[d].figures() for d in order}
        macro: dict[str, Any] = {}
        for name in MACRO_FIGURES:
            values = [figures[name] for figures in per.values() if figures[name] is not None]
            macro[name] = sum(values) / len(values) if values else None
        total = _DifficultyCounts()
        for counts in self.by_difficulty.values():
            for name in vars(total):
                setattr(total, name, getattr(total, name) + getattr(counts, name))
        return {"by_difficulty": per, "macro": macro, "overall": total.figures()}
