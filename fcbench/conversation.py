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

import json
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from pydantic import BaseModel, ConfigDict, Field

from fcbench.config import COMPLEXITIES  # noqa: F401 (the complexities conversations are tagged with)
from fcbench.sample import Call, Provenance, Sample, Step, Tool

# The dialog acts CONFETTI labels agent turns with, spelled as in its published files.
DIALOG_ACTS = ("agent_seek_information", "agent_inform_user", "agent_reject_request", "agent_function_calling",
               "agent_other")
DIALOG_ACT_TITLES = {"agent_seek_information": "seek information", "agent_inform_user": "provide information",
                     "agent_reject_request": "reject", "agent_function_calling": "function call", "agent_other": "other"}
META = "conversation"
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
                        occurring: Sequence[str] | None = None) -> Sample:
    """The canonical conversation sample (calls derived from the messages)."""
    meta: dict[str, Any] = {"scenario": scenario.model_dump(mode="json"), "failed_calls": list(failed_calls)}
    if occurring is not None:
        meta["complexities"] = list(occurring)
    meta.update(extra_meta or {})
    return Sample(id=sample_id, domain=scenario.domain, messages=messages, tools=tools,
                  calls=calls_from_messages(messages), provenance=provenance, meta={META: meta})


def scenario_of(sample: Sample) -> Scenario:
    return Scenario.model_validate(sample.meta[META]["scenario"])


def is_conversation(sample: Sample) -> bool:
    return isinstance(sample.meta.get(META), dict) and "scenario" in sample.meta[META]


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
    user_turn_count = agent_turn_count = calls = calling_turns = 0
    apis_per_turn: list[int] = []
    for conversation in conversations:
        user_turn_count += user_turns(conversation.messages)
        turns = agent_turns(conversation.messages)
        agent_turn_count += len(turns)
        for turn in turns:
            acts.update(turn.dialog_acts)
            apis_per_turn.append(len(conversation.tools))
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
    }


def conversation_environment(environment: Any) -> Any:
    """The environment as one conversation sees it: a session that remembers the conversation's
    earlier calls when the environment keeps state per conversation (the response simulator),
    else the environment itself (python tools keep their own state, recorded answers have none)."""
    session = getattr(environment, "session", None)
    return session() if callable(session) else environment
