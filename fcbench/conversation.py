"""Conversations (CONFETTI-style), pure: the scenario a conversation plays, the conversation as one
canonical sample, its turn-level cut into the two CONFETTI sets, and their statistics.

A conversation is a `Sample` whose `messages` hold the whole dialogue in OpenAI chat roles:
    {"role": "user", "content": "..."}
    {"role": "assistant", "content": null, "tool_calls": [{"id": "var_1", "type": "function",
        "function": {"name": "...", "arguments": "<JSON text>"}}]}        one step of calls
    {"role": "tool", "tool_call_id": "var_1", "name": "...", "content": "<JSON text>"}
    {"role": "assistant", "content": "...", "dialog_acts": ["agent_inform_user", ...]}
An *agent turn* is everything the agent does between two user messages (steps of calls, then
usually a reply); its dialog acts sit on its last assistant message. `calls` is derived from the
messages (one step per assistant message with tool calls, the tool call id as the label, the tool
message as the response), so the two never disagree. `meta["conversation"]` holds the scenario,
the complexities that occur (tagged by annotators) and the calls expected to fail
(`execution_exception`: the API's error is part of the conversation).

The turn-level cut (CONFETTI's two sets):
- function-calling set: for each assistant message with tool calls, the history before it -> its calls;
- response-quality set: for each agent turn, the history before it -> its dialog acts (its calls
  and reply kept for the CONFETTI `ground_truth_content`).
"""

from __future__ import annotations

import hashlib
import json
import random
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from pydantic import BaseModel, ConfigDict, Field

from fcbench.config import COMPLEXITIES
from fcbench.sample import Call, Provenance, Sample, Step, Tool

# The dialog acts CONFETTI labels agent turns with, spelled as in its published files.
DIALOG_ACTS = ("agent_seek_information", "agent_inform_user", "agent_reject_request", "agent_function_calling",
               "agent_other")
DIALOG_ACT_TITLES = {"agent_seek_information": "seek information", "agent_inform_user": "provide information",
                     "agent_reject_request": "reject", "agent_function_calling": "function call", "agent_other": "other"}
META = "conversation"
CHOSEN_ERRORS = "chosen_errors"  # meta.conversation key: label -> the error message an author chose
# The error a simulated call answers when its author chose "error" and wrote no message.
DEFAULT_SIMULATED_ERROR = "The service could not complete this request right now. Please try again later."


@dataclass(frozen=True)
class ConfettiType:
    """One of CONFETTI's conversation types as its README lists it (name, # dialogs, description)."""

    confetti_name: str
    published_dialogs: int  # CONFETTI README table, over its 109 dialogs
    description: str


# fcbench name -> CONFETTI README row (amazon-science/confetti README.md, table "COMPLEXITY | # DIALOGS
# | DESCRIPTION"), in the README's order.
CONFETTI_TYPES: dict[str, ConfettiType] = {
    "execution_exception": ConfettiType("EXCEPTION_IN_EXECUTION", 5,
                                       "Errors or exceptions that occur during the execution of an action"),
    "failed_conversation": ConfettiType("FAILED_CONVERSATION", 5, "Interactions where the intended goal is not achieved"),
    "confirmation": ConfettiType("CONFIRMATION", 6, "Requesting user approval before executing an action"),
    "goal_switching": ConfettiType("GOAL_SWITCHING", 6, "When the user changes their objective during the conversation"),
    "no_target": ConfettiType("NO_TARGET_COMPLEXITY", 6, "Conversations without specific complexity requirements"),
    "goal_correction": ConfettiType("GOAL_CORRECTION", 7, "Adjusting or refining the user's goal based on feedback"),
    "goal_stacking": ConfettiType("GOAL_STACKING", 7, "Managing multiple user objectives simultaneously"),
    "ambiguous_goal": ConfettiType("AMBIGUOUS_GOAL", 9, "When the user's intention is unclear and requires clarification"),
    "follow_up": ConfettiType("FOLLOWUP_QUESTION", 10,
                             "Additional queries or requests for information after the initial response"),
    "implicit_goal": ConfettiType("IMPLICIT_DESCRIPTIVE_GOAL", 10,
                                 "The user describes a problem/background without directly stating their goal"),
    "overfilled_parameters": ConfettiType("OVERFILL", 11, "Providing more information than required for an action"),
    "underfilled_parameters": ConfettiType("UNDERFILL", 11, "Missing required arguments or information for an action"),
    "goal_not_supported": ConfettiType("GOAL_NOT_SUPPORTED", 15,
                                      "The user's request is not supported by the available tools or is out of scope"),
}
assert set(CONFETTI_TYPES) == set(COMPLEXITIES)
# Calls per calling agent turn, in CONFETTI's bins (1, 2, 3, 4+: 220, 46, 25, 22 in the published set).
CHAIN_BINS = ("1", "2", "3", "4+")
FUNCTION_CALLING = "function_calling"
RESPONSE_QUALITY = "response_quality"
SETS = (FUNCTION_CALLING, RESPONSE_QUALITY)


class ConversationError(ValueError):
    """A conversation whose messages do not form a well-shaped dialogue (the message says where)."""


class Scenario(BaseModel):
    """What one conversation must play: the APIs it must use and may use, the complexity it must
    show, the reference time ("now") and the minimum number of user turns."""

    model_config = ConfigDict(extra="forbid")

    id: str
    domain: str | list[str]
    required_apis: list[str]
    optional_apis: list[str] = Field(default_factory=list)
    complexities: list[str]
    reference_time: str
    min_turns: int
    description: str = ""  # written by the LLM, or from templates offline

    @property
    def apis(self) -> list[str]:
        return self.required_apis + [name for name in self.optional_apis if name not in self.required_apis]


# ------------------------------------------------------------------------------- message helpers
def tool_call(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"id": call_id, "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments, ensure_ascii=False)}}


def tool_result(call_id: str, name: str, response: Any) -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "name": name, "content": json.dumps(response, ensure_ascii=False)}


def _json_text(value: Any, where: str) -> Any:
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError as exc:
        raise ConversationError(f"{where}: not JSON ({exc.msg})") from None


def calls_from_messages(messages: Sequence[dict[str, Any]]) -> list[Step]:
    """The conversation's calls, one step per assistant message with tool calls, each with the
    response its tool message gave (absent when none answered it)."""
    responses: dict[str, Any] = {}
    for index, message in enumerate(messages):
        if message.get("role") == "tool":
            call_id = message.get("tool_call_id")
            if not isinstance(call_id, str):
                raise ConversationError(f"message {index + 1}: a tool message needs its tool_call_id")
            responses[call_id] = _json_text(message.get("content"), f"message {index + 1} (tool {call_id})")
    steps: list[Step] = []
    seen: set[str] = set()
    for index, message in enumerate(messages):
        if message.get("role") != "assistant" or not message.get("tool_calls"):
            continue
        step = []
        for raw in message["tool_calls"]:
            function = raw.get("function") if isinstance(raw, dict) else None
            if not isinstance(function, dict) or not isinstance(function.get("name"), str):
                raise ConversationError(f"message {index + 1}: a tool call needs a function name")
            call_id = raw.get("id")
            if not isinstance(call_id, str) or call_id in seen:
                raise ConversationError(f"message {index + 1}: tool call ids must be unique strings, got {call_id!r}")
            seen.add(call_id)
            arguments = _json_text(function.get("arguments") or "{}", f"message {index + 1} ({call_id} arguments)")
            if not isinstance(arguments, dict):
                raise ConversationError(f"message {index + 1}: the arguments of {call_id} are not an object")
            call = Call(label=call_id, name=function["name"], arguments=arguments)
            if call_id in responses:
                call.response = responses[call_id]
            step.append(call)
        steps.append(step)
    return steps


def conversation_sample(sample_id: str, scenario: Scenario, messages: list[dict[str, Any]], tools: list[Tool],
                        provenance: Provenance, failed_calls: Sequence[str] = (), extra_meta: dict[str, Any] | None = None,
                        occurring: Sequence[str] | None = None, chosen_errors: dict[str, str] | None = None) -> Sample:
    """The canonical conversation sample (calls derived from the messages). `chosen_errors` (label
    -> message) is written only when an author chose a call to fail, so conversations without one
    keep the shape they always had."""
    meta: dict[str, Any] = {"scenario": scenario.model_dump(mode="json"), "failed_calls": list(failed_calls)}
    if chosen_errors:
        meta[CHOSEN_ERRORS] = dict(chosen_errors)
    if occurring is not None:
        meta["complexities"] = list(occurring)
    meta.update(extra_meta or {})
    return Sample(id=sample_id, domain=scenario.domain, messages=messages, tools=tools,
                  calls=calls_from_messages(messages), provenance=provenance, meta={META: meta})


def scenario_of(sample: Sample) -> Scenario:
    return Scenario.model_validate(sample.meta[META]["scenario"])


def is_conversation(sample: Sample) -> bool:
    return isinstance(sample.meta.get(META), dict) and "scenario" in sample.meta[META]


def chosen_errors_of(sample: Sample) -> dict[str, str]:
    """label -> message of the calls an author chose to fail (none: {})."""
    chosen = sample.meta.get(META, {}).get(CHOSEN_ERRORS) if isinstance(sample.meta.get(META), dict) else None
    return {str(label): str(message) for label, message in chosen.items()} if isinstance(chosen, dict) else {}


def error_response(message: str) -> dict[str, str]:
    """The response of a call that failed, as the conversation shows it to the agent."""
    return {"error": message}


def is_error_response(response: Any) -> bool:
    return isinstance(response, dict) and set(response) == {"error"}


def failed_labels(sample: Sample) -> set[str]:
    """The calls whose response is an error: recorded as failing, or answered `{"error": ...}`."""
    meta = sample.meta.get(META) if isinstance(sample.meta.get(META), dict) else {}
    failed = {str(label) for label in meta.get("failed_calls") or []}
    failed |= {call.label for call in sample.all_calls() if is_error_response(call.response)}
    return failed


def scenario_hash(scenario: Scenario) -> str:
    """What a reviewer saw of a sampled scenario, as a SHA-256 (a review of another sampling is stale)."""
    text = json.dumps(scenario.model_dump(mode="json"), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class ScenarioReview(BaseModel):
    """Who reviewed a sampled scenario and what they decided (a line of scenarios.reviewed.jsonl)."""

    model_config = ConfigDict(extra="forbid")

    verdict: str  # accept | edit (reject: the scenario is not in the reviewed file)
    sampled_hash: str  # scenario_hash of the scenario as sampled (and shown to the reviewer)
    label_studio_task_id: int | None = None
    label_studio_annotation_id: int | None = None
    annotator: str | None = None
    notes: str = ""
    changed: list[str] = Field(default_factory=list)  # the scenario fields the reviewer edited


class ReviewedScenario(BaseModel):
    """A scenario a reviewer accepted or edited: what stage1 drafts when the review is on."""

    model_config = ConfigDict(extra="forbid")

    scenario: Scenario
    review: ScenarioReview


# ------------------------------------------------------------------------------------ agent turns
@dataclass
class AgentTurn:
    """The messages of one agent turn (between two user messages) and where it starts."""

    start: int  # index of its first message in the conversation
    messages: list[dict[str, Any]] = field(default_factory=list)

    @property
    def dialog_acts(self) -> list[str]:
        acts: list[str] = []
        for message in self.messages:
            for act in message.get("dialog_acts") or []:
                if act not in acts:
                    acts.append(act)
        return acts

    @property
    def steps(self) -> list[list[dict[str, Any]]]:
        return [message["tool_calls"] for message in self.messages
                if message.get("role") == "assistant" and message.get("tool_calls")]

    @property
    def reply(self) -> str:
        texts = [message.get("content") for message in self.messages
                 if message.get("role") == "assistant" and isinstance(message.get("content"), str)]
        return "\n".join(text for text in texts if text.strip())


def agent_turns(messages: Sequence[dict[str, Any]]) -> list[AgentTurn]:
    turns: list[AgentTurn] = []
    current: AgentTurn | None = None
    for index, message in enumerate(messages):
        if message.get("role") == "user":
            current = None
            continue
        if message.get("role") not in ("assistant", "tool"):
            continue
        if current is None:
            current = AgentTurn(index)
            turns.append(current)
        current.messages.append(message)
    return turns


def user_turns(messages: Sequence[dict[str, Any]]) -> int:
    return sum(1 for message in messages if message.get("role") == "user")


def model_history(messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages as a model reads them: without the annotation keys (dialog acts)."""
    return [{key: value for key, value in message.items() if key != "dialog_acts"} for message in messages]


# ------------------------------------------------------------------------------- turn-level cut
def _turn_sample(conversation: Sample, index: int, kind: str, history: list[dict[str, Any]], calls: list[Call],
                 confetti: dict[str, Any]) -> Sample:
    scenario = conversation.meta[META]["scenario"]
    sample = Sample(
        id=f"{conversation.id}_{kind[0]}{index}",
        domain=conversation.domain,
        messages=model_history(history),
        tools=conversation.tools,
        calls=[calls] if calls else [],
        provenance=conversation.provenance.model_copy(update={"parent_id": conversation.id}),
        meta={"confetti": {"dialog_id": f"{conversation.id}_{index}", **confetti},
              META: {"conversation_id": conversation.id, "set": kind, "turn": index,
                     "complexities": list(conversation.meta[META].get("complexities") or scenario["complexities"])}},
    )
    return sample


def _calls_of(tool_calls: Sequence[dict[str, Any]], by_label: dict[str, Call]) -> list[Call]:
    return [by_label[raw["id"]] for raw in tool_calls]


def function_calling_samples(conversation: Sample) -> list[Sample]:
    """One sample per assistant message with tool calls: the history before it -> its calls."""
    by_label = {call.label: call for call in conversation.all_calls()}
    samples = []
    for index, message in enumerate(conversation.messages):
        if message.get("role") == "assistant" and message.get("tool_calls"):
            samples.append(_turn_sample(conversation, len(samples), FUNCTION_CALLING, conversation.messages[:index],
                                        _calls_of(message["tool_calls"], by_label), {}))
    return samples


def response_quality_samples(conversation: Sample) -> list[Sample]:
    """One sample per agent turn: the history before it -> its dialog acts (with its calls and reply)."""
    by_label = {call.label: call for call in conversation.all_calls()}
    samples = []
    for number, turn in enumerate(agent_turns(conversation.messages)):
        calls = [call for step in turn.steps for call in _calls_of(step, by_label)]
        sample = _turn_sample(conversation, number, RESPONSE_QUALITY, conversation.messages[:turn.start], calls,
                              {"reply": turn.reply})
        sample.dialog_acts = turn.dialog_acts
        samples.append(sample)
    return samples


def turn_level_samples(conversation: Sample) -> dict[str, list[Sample]]:
    return {FUNCTION_CALLING: function_calling_samples(conversation),
            RESPONSE_QUALITY: response_quality_samples(conversation)}


# ------------------------------------------------------------------------------------ statistics
def conversation_stats(conversations: Iterable[Sample]) -> dict[str, Any]:
    """CONFETTI's Table 2/3 figures: conversations, user turns, average turns, calls per
    function-calling turn, APIs available per turn, dialog acts and complexities."""
    conversations = list(conversations)
    acts: Counter[str] = Counter()
    complexities: Counter[str] = Counter()
    chains: Counter[str] = Counter()
    user_turn_count = agent_turn_count = calls = calling_turns = 0
    apis_per_turn: list[int] = []
    for conversation in conversations:
        user_turn_count += user_turns(conversation.messages)
        turns = agent_turns(conversation.messages)
        agent_turn_count += len(turns)
        for turn in turns:
            acts.update(turn.dialog_acts)
            apis_per_turn.append(len(conversation.tools))
            turn_calls = sum(len(step) for step in turn.steps)
            if turn_calls:
                chains[chain_bin(turn_calls)] += 1
        for message in conversation.messages:
            if message.get("role") == "assistant" and message.get("tool_calls"):
                calling_turns += 1
                calls += len(message["tool_calls"])
        meta = conversation.meta.get(META, {})
        complexities.update(meta.get("complexities") or meta.get("scenario", {}).get("complexities") or [])
    count = len(conversations)
    return {
        "conversations": count,
        "user_turns": user_turn_count,
        "agent_turns": agent_turn_count,
        "avg_user_turns": round(user_turn_count / count, 2) if count else 0.0,
        "avg_turns": round((user_turn_count + agent_turn_count) / count, 2) if count else 0.0,
        "function_calling_turns": calling_turns,
        "calls": calls,
        "avg_calls_per_turn": round(calls / calling_turns, 2) if calling_turns else 0.0,
        "avg_apis_per_turn": round(sum(apis_per_turn) / len(apis_per_turn), 2) if apis_per_turn else 0.0,
        "dialog_acts": {act: acts[act] for act in DIALOG_ACTS if acts[act]},
        "complexities": dict(sorted(complexities.items())),
        "chain_lengths": {name: chains[name] for name in CHAIN_BINS},  # calls per calling agent turn
    }


def chain_bin(calls: int) -> str:
    return str(calls) if calls < 4 else "4+"


# ------------------------------------------------------------------------ dialog-act cap (balance)
def cap_per_dialog_act(samples: Sequence[Sample], cap: int | None, seed: int) -> tuple[list[Sample], list[Sample]]:
    """(kept, dropped) response-quality samples with at most `cap` samples carrying each dialog act.
    A turn carries several acts: it is kept only while every one of its acts is under the cap.
    Turns are visited rarest act first (a turn with a reject goes in before the informs fill the
    cap), ties in an order seeded by `seed` and the turn id (not file order, so no conversation is
    favoured); the kept ones keep their input order. `cap` None: nothing dropped."""
    if cap is None:
        return list(samples), []
    rarity = Counter(act for sample in samples for act in sample.dialog_acts or [])

    def visit_order(index: int) -> tuple[int, float]:
        acts = samples[index].dialog_acts or []
        return min((rarity[act] for act in acts), default=0), random.Random(f"{seed}:{samples[index].id}").random()

    counts: Counter[str] = Counter()
    keep: set[int] = set()
    for index in sorted(range(len(samples)), key=visit_order):
        acts = samples[index].dialog_acts or []
        if all(counts[act] < cap for act in acts):
            counts.update(acts)
            keep.add(index)
    kept = [sample for i, sample in enumerate(samples) if i in keep]
    dropped = [sample for i, sample in enumerate(samples) if i not in keep]
    return kept, dropped


def conversation_environment(environment: Any) -> Any:
    """The environment as one conversation sees it: a session that remembers the conversation's
    earlier calls when the environment keeps state per conversation (the response simulator),
    else the environment itself (python tools keep their own state, recorded answers have none)."""
    session = getattr(environment, "session", None)
    return session() if callable(session) else environment
