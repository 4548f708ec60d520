"""Task <-> scenario for the scenario review before drafting (label_config/
stage1_scenario_review.xml). Pure: no server, no files.

CONFETTI's conversations were written from scenarios "seeded with required complexities and APIs";
fcbench has people review each sampled scenario before a conversation is drafted from it.

Push: a sampled scenario becomes a task carrying the scenario as sampled (and its hash: a review of
another sampling is stale), the scenario shown with its APIs, and a prediction that pre-fills the
editable parts: the description, the conversation types, and the rest as JSON
(`{"required_apis", "optional_apis", "reference_time", "min_turns"}`).

Pull: the reviewer's answer becomes a reviewed scenario (accept: as sampled, or with the edits
made; edit: the edits), a rejected one (the reviewer's decision, kept with its notes), or the
problems that send it back: no verdict (`no_verdict`), JSON that does not parse (`bad_json`) or
is not the expected object (`bad_shape`), and an edited scenario that cannot be played
(`bad_scenario`: an API not in the catalog, no required API, an API both required and optional,
no conversation type, a type that needs two goals with one, a reference time that is not ISO 8601,
a minimum of user turns outside 1..max_turns, an empty description).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from html import escape
from typing import Any, Collection, Sequence

from annotate.tasks.conversation import scenario_html
from annotate.tasks.problems import Problem, ProblemCode
from annotate.tasks.single import choices_result, read_result, textarea_result
from fcbench.checks.conversation_types import RULES
from fcbench.conversation import COMPLEXITIES, ReviewedScenario, Scenario, ScenarioReview, scenario_hash
from fcbench.sample import Tool

SCENARIO_REVIEW_KIND = "fcbench-scenario-review"
SCENARIO_OBJECT = "scenario"  # the HyperText every control points at
REVIEW_VERDICTS = ("accept", "edit", "reject")
EDITABLE_FIELDS = ("required_apis", "optional_apis", "reference_time", "min_turns")
MULTI_GOAL = ("goal_switching", "goal_stacking")  # types played with two goals (two required APIs)


def scenario_settings_text(scenario: Scenario) -> str:
    return json.dumps({name: getattr(scenario, name) for name in EDITABLE_FIELDS}, ensure_ascii=False, indent=1)


def scenario_review_task(scenario: Scenario, tools: Sequence[Tool], model_version: str = "draft") -> dict[str, Any]:
    """The task of one sampled scenario; `tools`: the scenario's APIs (shown with their parameters)."""
    data = {
        "kind": SCENARIO_REVIEW_KIND,
        "sample_id": scenario.id,
        "draft_hash": scenario_hash(scenario),  # what pushing twice compares (annotate.exchange.push)
        "scenario": scenario.model_dump(mode="json"),
        "feedback_html": "",
        "scenario_html": scenario_html(scenario, tools) + _types_html(scenario),
    }
    result = [textarea_result("description", SCENARIO_OBJECT, scenario.description),
              choices_result("complexities", SCENARIO_OBJECT, scenario.complexities),
              textarea_result("scenario_json", SCENARIO_OBJECT, scenario_settings_text(scenario))]
    return {"data": data, "predictions": [{"model_version": model_version, "result": result}]}


def _types_html(scenario: Scenario) -> str:
    rows = "".join(f"<li><b>{escape(name)}</b>: {escape(RULES.get(name, ''))}</li>" for name in scenario.complexities)
    return f'<div class="fcb"><h3>What the conversation must show</h3><ul>{rows}</ul></div>'


@dataclass(frozen=True)
class ScenarioReviewAnswer:
    verdict: str | None
    description: str | None
    complexities: tuple[str, ...]
    scenario_json: str | None
    notes: str = ""

    @classmethod
    def from_result(cls, result: Sequence[Any]) -> "ScenarioReviewAnswer":
        values = read_result(result)
        verdicts = values.get("verdict") or []
        return cls(verdicts[0] if verdicts else None, values.get("description"), tuple(values.get("complexities") or ()),
                   values.get("scenario_json"), values.get("notes", "") or "")


@dataclass
class ScenarioReviewOutcome:
    reviewed: ReviewedScenario | None  # accepted, edited, or rejected by the reviewer (verdict "reject")
    problems: list[Problem]


def sampled_scenario(data: dict[str, Any]) -> Scenario:
    """The scenario as it was pushed (ValueError when the task holds none)."""
    raw = data.get("scenario")
    if not isinstance(raw, dict):
        raise ValueError("the task data holds no scenario")
    return Scenario.model_validate(raw)


def review_scenario(sampled: Scenario, answer: ScenarioReviewAnswer, catalog: Collection[str], max_turns: int,
                    review: dict[str, Any] | None = None) -> ScenarioReviewOutcome:
    """The reviewed scenario from the reviewer's answer, or the problems that send it back.
    `catalog`: the tool names an API may be; `review`: who and which task (ScenarioReview fields)."""
    problems: list[Problem] = []
    base = {"sampled_hash": scenario_hash(sampled), "notes": answer.notes.strip(), **(review or {})}
    if answer.verdict is None:
        problems.append(Problem(ProblemCode.NO_VERDICT, "no verdict chosen (accept, edit or reject)"))
        return ScenarioReviewOutcome(None, problems)
    if answer.verdict not in REVIEW_VERDICTS:
        problems.append(Problem(ProblemCode.BAD_SHAPE, f"unknown verdict {answer.verdict!r}"))
        return ScenarioReviewOutcome(None, problems)
    if answer.verdict == "reject":
        return ScenarioReviewOutcome(ReviewedScenario(scenario=sampled, review=ScenarioReview(verdict="reject", **base)),
                                     problems)
    edited = _edited(sampled, answer, set(catalog), max_turns, problems)
    if edited is None or problems:
        return ScenarioReviewOutcome(None, problems)
    changed = [name for name in Scenario.model_fields if getattr(edited, name) != getattr(sampled, name)]
    return ScenarioReviewOutcome(ReviewedScenario(scenario=edited, review=ScenarioReview(verdict=answer.verdict,
                                                                                         changed=changed, **base)),
                                 problems)


def _iso_time(value: Any) -> bool:
    if not isinstance(value, str):
        return False
    try:
        datetime.fromisoformat(value)
    except ValueError:
        return False
    return True


def _edited(sampled: Scenario, answer: ScenarioReviewAnswer, catalog: set[str], max_turns: int,
            problems: list[Problem]) -> Scenario | None:
    settings: dict[str, Any] = {name: getattr(sampled, name) for name in EDITABLE_FIELDS}
    if answer.scenario_json is not None and answer.scenario_json.strip():
        try:
            value = json.loads(answer.scenario_json)
        except json.JSONDecodeError as exc:
            problems.append(Problem(ProblemCode.BAD_JSON, f"the scenario JSON does not parse: {exc.msg} at line "
                                    f"{exc.lineno} column {exc.colno}"))
            return None
        if not isinstance(value, dict) or set(value) - set(EDITABLE_FIELDS):
            problems.append(Problem(ProblemCode.BAD_SHAPE, "the scenario JSON must be an object with "
                                    f"{', '.join(EDITABLE_FIELDS)} (and nothing else)"))
            return None
        settings.update(value)
    required, optional = settings["required_apis"], settings["optional_apis"]
    for key, names in (("required_apis", required), ("optional_apis", optional)):
        if not isinstance(names, list) or not all(isinstance(name, str) for name in names):
            problems.append(Problem(ProblemCode.BAD_SHAPE, f"{key} must be a list of API names"))
            return None
        unknown = [name for name in names if name not in catalog]
        if unknown:
            problems.append(Problem(ProblemCode.BAD_SCENARIO, f"{key}: {unknown[0]!r} is not an API of the catalog"))
    if not required:
        problems.append(Problem(ProblemCode.BAD_SCENARIO, "the scenario needs at least one required API (the user's goal)"))
    both = sorted(set(required) & set(optional))
    if both:
        problems.append(Problem(ProblemCode.BAD_SCENARIO, f"{both[0]} is both required and optional"))
    complexities = list(answer.complexities) if answer.complexities else list(sampled.complexities)
    unknown_types = [name for name in complexities if name not in COMPLEXITIES]
    if unknown_types:
        problems.append(Problem(ProblemCode.BAD_SCENARIO, f"unknown conversation type {unknown_types[0]!r}"))
    if not answer.complexities:
        problems.append(Problem(ProblemCode.BAD_SCENARIO, "tick at least one conversation type (no_target: none in particular)"))
    two_goals = [name for name in complexities if name in MULTI_GOAL]
    if two_goals and len(required) < 2:
        problems.append(Problem(ProblemCode.BAD_SCENARIO, f"{two_goals[0]} needs two goals: list two required APIs "
                                "(for goal_switching the goal dropped first, the goal switched to last)"))
    time = settings["reference_time"]
    if not _iso_time(time):
        problems.append(Problem(ProblemCode.BAD_SCENARIO, f"reference_time must be an ISO 8601 date and time, got {time!r}"))
    turns = settings["min_turns"]
    if not isinstance(turns, int) or isinstance(turns, bool) or not 1 <= turns <= max_turns:
        problems.append(Problem(ProblemCode.BAD_SCENARIO, f"min_turns must be a whole number from 1 to {max_turns} "
                                f"(conversation.max_turns), got {turns!r}"))
    description = (answer.description if answer.description is not None else sampled.description).strip()
    if not description:
        problems.append(Problem(ProblemCode.BAD_SCENARIO, "the description is empty: the user simulator and the "
                                "annotators read it"))
    if problems:
        return None
    return sampled.model_copy(update={"required_apis": required, "optional_apis": optional, "reference_time": time,
                                      "min_turns": turns, "complexities": complexities, "description": description})
