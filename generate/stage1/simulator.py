"""Drafting a conversation for a scenario without an LLM: a deterministic, rule-based user and agent.

The plan comes from the graph sampler (`propose_draft`): an executable path over the scenario's
APIs and the query that states it. The rules below play it as a conversation against the
environment, shaped by the scenario's complexity:

- underfilled_parameters: the first request leaves one date out ("until April 10" without the
  arrival) and says so; the agent asks; the user gives it.
- overfilled_parameters: the request adds details no API takes; the agent says what it could not use.
- goal_correction: the request states a date one day off; the agent checks it; the user corrects it.
- execution_exception: the request gives an impossible date; the call fails with the API's error;
  the agent reports it and asks again; the user gives the right date; the call is made again.
- ambiguous_goal / implicit_goal: the user opens vaguely; the agent asks what they need.
- follow_up: after the answer, the user asks about a detail of the first result the answer did not
  give; the agent reads it out.
While the scenario wants more user turns, the user asks for more details of the first result; the
conversation ends with one goodbye (another one when the search found nothing).
- goal_switching: a second plan for the scenario's last goal; the user opens with the first goal
  leaving a date out, and while the agent asks for it, drops that goal for the second one.
- goal_stacking: one plan for both goals, asked in one message; the agent serves both.
- confirmation: the agent restates the request and asks before calling; the user approves.
- goal_not_supported: after the answer, the user asks for something no offered tool does (a
  restaurant table, insurance, the weather, a visa: one whose words no offered tool mentions);
  the agent rejects it.
- failed_conversation: the goal call is chosen to fail (the service is down: an author's chosen
  error, never executed); the agent says so and offers to retry; the retry fails too; the user
  gives up.
- no_target: the request, the calls, the answer.

Calls are made one step at a time through the environment with references resolved to the values
the earlier responses gave (a model calls with values, not references). The agent's turns carry
the dialog acts the rules know they perform. Every choice takes the scenario's seed.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any, Sequence

from fcbench.errors import ItemRejected
from fcbench.conversation import Scenario, error_response, tool_call, tool_result
from fcbench.checks.derivation import is_iso_date
from fcbench.environments import Environment
from fcbench.environments.chosen import call_step_with_chosen_errors
from fcbench.references import iter_references
from fcbench.resolve import CallSite, UnresolvedReference, resolve_arguments
from fcbench.sample import Call, Tool
from generate.stage1.graph_sampler import (DraftRequest, FeedGraph, PhraseBook, PlanFailed, ProposedDraft, propose_draft)
from generate.slots import ValuePools, spell_date

OFFLINE_COMPLEXITIES = frozenset({"underfilled_parameters", "overfilled_parameters", "goal_correction",
                                  "execution_exception", "ambiguous_goal", "implicit_goal", "follow_up",
                                  "goal_switching", "goal_stacking", "confirmation", "goal_not_supported",
                                  "failed_conversation", "no_target"})
IMPOSSIBLE_DATE = "2025-02-30"  # no such day: every date-taking API refuses it
EXTRA_DETAILS = ["I am travelling with my dog.", "I would like a quiet place, away from the street.",
                 "It is for my parents' anniversary.", "I prefer to pay by card."]
NOTHING_FOUND = "nothing that matches your request"
EMPTY_CLOSING = ("Too bad. Thanks for checking anyway.", "I'm sorry I could not find anything. Have a good day!")
# Requests no travel tool serves, each with the words that would show an offered tool does serve it.
UNSUPPORTED_REQUESTS = [("Could you also reserve a table for dinner at a restaurant nearby?", ("restaurant", "dinner", "dining")),
                        ("Can you also buy travel insurance for this trip?", ("insurance",)),
                        ("Could you also tell me what the weather will be like there?", ("weather", "forecast")),
                        ("Can you also check whether I need a visa for this trip?", ("visa",))]
SERVICE_DOWN = "The service is temporarily unavailable. Please try again later."  # failed_conversation's chosen error
CLOSINGS = [("Thanks, that is all I needed.", "You're welcome, have a good trip!"),
            ("Great, thank you for your help.", "Glad I could help. Enjoy your travels!"),
            ("Perfect. Nothing else for now.", "All right. Have a nice day!")]


@dataclass
class DraftedConversation:
    messages: list[dict[str, Any]]
    failed_calls: list[str] = field(default_factory=list)
    plan_query: str = ""
    chosen_errors: dict[str, str] = field(default_factory=dict)  # label -> message: failures chosen, not executed


# ------------------------------------------------------------------------------------ the agent
@dataclass
class _Agent:
    environment: Environment
    messages: list[dict[str, Any]]
    outputs: dict[str, Any] = field(default_factory=dict)
    failed: list[str] = field(default_factory=list)
    chosen: dict[str, str] = field(default_factory=dict)
    calls_made: int = 0

    def say_user(self, text: str) -> None:
        self.messages.append({"role": "user", "content": text})

    def say(self, text: str, acts: Sequence[str], turn_acts: list[str]) -> None:
        """The agent's reply closing its turn: the turn's acts go on it."""
        acts_of_turn = list(dict.fromkeys([*turn_acts, *acts]))
        self.messages.append({"role": "assistant", "content": text, "dialog_acts": acts_of_turn})

    def call_step(self, step: Sequence[Call], overrides: dict[str, dict[str, Any]] | None = None,
                  expect_failure: bool = False, chosen: dict[str, str] | None = None) -> list[tuple[str, Any, bool]]:
        """Resolve, execute and record one step; (label, response, ok) per call. `chosen` (plan
        label -> message): calls an author chose to fail, answered with that error unexecuted."""
        planned = []
        for call in step:
            try:
                arguments = dict(resolve_arguments(call.arguments, self.outputs, CallSite(call.label, call.name)))
            except UnresolvedReference as exc:
                raise ItemRejected("unresolved_reference", str(exc)) from None
            arguments.update((overrides or {}).get(call.label, {}))
            self.calls_made += 1
            planned.append((f"var_{self.calls_made}", call, arguments))
        choices = [(chosen or {}).get(call.label) for _, call, _ in planned]
        outcomes = call_step_with_chosen_errors(self.environment, [(call.name, arguments) for _, call, arguments in planned],
                                                choices)
        self.messages.append({"role": "assistant", "content": None,
                              "tool_calls": [tool_call(label, call.name, arguments) for label, call, arguments in planned]})
        results = []
        for (label, call, _), outcome, message in zip(planned, outcomes, choices):
            response = outcome.response if outcome.ok else error_response(outcome.error or "the call failed")
            self.messages.append(tool_result(label, call.name, response))
            if outcome.ok:
                self.outputs[call.label] = outcome.response
            elif message is not None:
                self.failed.append(label)
                self.chosen[label] = message
            elif expect_failure:
                self.failed.append(label)
            else:
                raise ItemRejected("execution_failed", f"{call.name}: {outcome.error}")
            results.append((label, response, outcome.ok))
        return results


# ------------------------------------------------------------------------------------ helpers
def _literal_dates(calls: Sequence[Call]) -> list[tuple[Call, str, str]]:
    """(call, parameter, ISO date) for every literal date argument of the plan."""
    found = []
    for call in calls:
        for name, value in call.arguments.items():
            if isinstance(value, str) and not list(iter_references(value)) and is_iso_date(value):
                found.append((call, name, value))
    return found


def _spoken(name: str) -> str:
    """A field or parameter name as words: "requestedPickUpDateTime" -> "requested pick up date time"."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", name).replace("_", " ").replace("-", " ")
    return " ".join(spaced.split()).lower()


def _say_value(value: Any) -> str:
    """A response value as an agent says it: dates and date-times spelled, codes in words."""
    if isinstance(value, str):
        moment = re.fullmatch(r"(\d{4}-\d{2}-\d{2})(?:T(\d{2}:\d{2})(?::\d{2})?)?", value)
        if moment:
            day = spell_date(moment.group(1))
            return f"{day} at {moment.group(2)}" if moment.group(2) else day
        if re.fullmatch(r"[A-Z][A-Z_]{3,}", value):
            return value.replace("_", " ").lower()
    return str(value)


_SKIPPED_KEYS = {"status", "message", "token", "slug", "id", "currency"}


def _plain_fields(value: dict[str, Any], limit: int, depth: int = 0) -> list[tuple[str, Any]]:
    """Up to `limit` (name, value) pairs of a record's plain fields, then of its nested records."""
    parts = []
    for key, item in value.items():
        if key in _SKIPPED_KEYS or key.lower().endswith(("_id", "id", "token", "url", "code")):
            continue
        if isinstance(item, (str, int, float)) and not isinstance(item, bool):
            parts.append((key, item))
    if depth < 2:
        for item in value.values():
            if isinstance(item, dict) and len(parts) < limit:
                parts.extend(_plain_fields(item, limit - len(parts), depth + 1))
    return parts[:limit]


def _first_entries(value: Any, depth: int = 0) -> list[dict[str, Any]] | None:
    """The first list of records in a response, depth first (the results a user asked for); an
    empty list counts: the search found nothing."""
    if depth > 6:
        return None
    if isinstance(value, list) and all(isinstance(item, dict) for item in value):
        return value
    children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else []
    for child in children:
        if isinstance(child, (dict, list)):
            found = _first_entries(child, depth + 1)
            if found is not None:
                return found
    return None


def _name_of(record: dict[str, Any], depth: int = 0) -> str | None:
    """What a result is called: its name (or that of its main nested record: a car's vehicle)."""
    for key in ("name", "title", "hotel_name", "description"):
        if isinstance(record.get(key), str) and record[key].strip():
            return record[key].strip().rstrip(".")
    if depth < 2:
        for item in record.values():
            if isinstance(item, dict) and (found := _name_of(item, depth + 1)):
                return found
    return None


_UNITS = ("minutes", "hours", "nights", "days", "km", "m2")  # a field named for its unit: "size_m2"
LONG_TEXT = 60  # longer texts (descriptions) are not read out in a summary


def _field(key: str, value: Any) -> str:
    """One field as an agent says it: "size: 18 m2", "duration: 60 minutes", "seats: 4"."""
    words = _spoken(key).split()
    unit = words[-1] if len(words) > 1 and words[-1] in _UNITS else None
    name = " ".join(words[:-1] if unit else words)
    return f"{name}: {_say_value(value).rstrip('.')}" + (f" {unit}" if unit else "")


def _readable(fields: list[tuple[str, Any]], skip: str | None = None) -> list[tuple[str, Any]]:
    return [(key, value) for key, value in fields
            if value != skip and not (isinstance(value, str) and (len(value) > LONG_TEXT or value.rstrip(".") == skip))]


def _details(record: dict[str, Any], limit: int, skip: str | None = None) -> str:
    fields = _readable(_plain_fields(record, 12), skip)[:limit]
    return ", ".join(_field(key, item) for key, item in fields)


def describe_result(response: Any) -> str:
    """A short spoken summary of a response: how many results and the first one (its name, then a
    few plain fields), or the one record's; "nothing" when the search found nothing."""
    entries = _first_entries(response)
    if entries is not None:
        if not entries:
            return "nothing that matches your request"
        first = entries[0]
        name = _name_of(first)
        details = _details(first, 3, skip=name)
        head = f"{len(entries)} option{'s' if len(entries) != 1 else ''}"
        if name:
            return f"{head}; the first is {name}" + (f" ({details})" if details else "")
        return f"{head}; the first has {details or 'no details'}"
    data = response.get("data", response) if isinstance(response, dict) else response
    if isinstance(data, dict):
        name = _name_of(data)
        details = _details(data, 4, skip=name)
        return (f"{name}" + (f": {details}" if details else "")) if name else details or "no details"
    return json.dumps(data, ensure_ascii=False)[:200]


def _follow_up_field(response: Any, said: str) -> tuple[str, Any, bool] | None:
    """A plain field of the first result (or of the one record) the answer did not say yet, to
    ask about: (name, value, whether it is an entry of a list)."""
    entries = _first_entries(response)
    if entries is not None:
        record, in_list = (entries[0] if entries else None), True
    else:
        data = response.get("data", response) if isinstance(response, dict) else response
        record, in_list = (data if isinstance(data, dict) else None), False
    if record is None:
        return None
    for key, value in _plain_fields(record, 12):
        if _say_value(value) not in said and _spoken(key) not in said and len(str(value)) <= LONG_TEXT:
            return key, value, in_list
    return None


def _more_about(response: Any, said: str) -> tuple[str, str] | None:
    """(the user's question, the agent's answer) for more details of the first result (or of the
    one record) than the conversation said, or None when there is nothing more to tell."""
    entries = _first_entries(response)
    data = response.get("data", response) if isinstance(response, dict) else response
    record = (entries[0] if entries else None) if entries is not None else (data if isinstance(data, dict) else None)
    if record is None:
        return None
    fields = [(key, value) for key, value in _readable(_plain_fields(record, 12), _name_of(record))
              if _say_value(value) not in said and _spoken(key) not in said][:3]
    if fields:
        details = ", ".join(_field(key, value) for key, value in fields)
        if entries is not None:
            return "Could you tell me a bit more about the first option?", f"Of course: {details}."
        return "Could you tell me a bit more about it?", f"Of course: {details}."
    if entries is not None and len(entries) > 1 and "the second option" not in said:
        second = entries[1]
        name = _name_of(second)
        details = _details(second, 3, skip=name)
        text = f"{name} ({details})" if name and details else name or details or "no details"
        return "And what is the second option?", f"The second option is {text}."
    return None


def _leave_out(text: str, said: str) -> str:
    """The request without one of its dates, said the way a person leaves a date open: "from D1 to
    D2" becomes "until D2" without D1, "from D1" without D2; "on D" goes."""
    quoted = re.escape(said)
    for pattern, replacement in ((rf"\bfrom {quoted} to ", "until "), (rf" to {quoted}\b", ""),
                                 (rf",? (?:returning on|and back on|leaving on|on|for) {quoted}\b", "")):
        if re.search(pattern, text):
            return re.sub(pattern, replacement, text, count=1)
    return text.replace(said, "a date I will tell you")


def _plain_error(error: str) -> str:
    """An API error as an agent reports it: without the tool and exception names, its field names
    in words ("drop off date is not a calendar date: '2025-02-30'")."""
    text = re.sub(r"^[\w-]+: \w+(?:Error|Exception): ", "", error.splitlines()[0])[:160]
    return re.sub(r"\b[a-z]+(?:_[a-z]+)+\b", lambda match: match.group(0).replace("_", " "), text)


def _mentioned(query: str, iso: str) -> str | None:
    """How the query states a date: spelled out, or ISO."""
    for text in (spell_date(iso), iso):
        if text in query:
            return text
    return None


# ------------------------------------------------------------------------------------ the rules
def plan_for(scenario: Scenario, graph: FeedGraph, pools: ValuePools, phrases: PhraseBook,
             environment: Environment, tools: Sequence[Tool], seed: str, max_steps: int) -> ProposedDraft:
    domains = [scenario.domain] if isinstance(scenario.domain, str) else list(scenario.domain)
    request = DraftRequest(tuple(scenario.required_apis), frozenset(scenario.apis), frozenset(domains), seed, max_steps)
    try:
        return propose_draft(request, graph, pools, phrases, environment, tools, one_request=False)
    except PlanFailed as exc:
        raise ItemRejected("no_executable_plan", str(exc)) from None


def simulate(scenario: Scenario, plan: ProposedDraft, environment: Environment, seed: str,
             max_turns: int, switch_to: ProposedDraft | None = None,
             offered: Sequence[Tool] = ()) -> DraftedConversation:
    """Play `plan` as a conversation with the scenario's complexities (see the module doc).
    goal_switching needs `switch_to`, the plan of the goal switched to; goal_not_supported reads
    the `offered` tools to pick a request none of them serves."""
    unsupported = sorted(set(scenario.complexities) - OFFLINE_COMPLEXITIES)
    if unsupported:
        raise ItemRejected("offline_unsupported", f"the rule-based simulator cannot play {unsupported[0]}; "
                               "use an LLM (drop --offline / conversation.offline)")
    if "goal_switching" in scenario.complexities:
        if switch_to is None:
            raise ItemRejected("no_second_goal", "goal_switching needs a plan for the goal switched to")
        return _simulate_switch(scenario, plan, switch_to, environment, seed, max_turns)
    rng = random.Random(seed)
    complexities = set(scenario.complexities)
    agent = _Agent(environment, [])
    query = plan.query
    calls = [call for step in plan.calls for call in step]
    dates = [(call, name, iso) for call, name, iso in _literal_dates(calls) if _mentioned(query, iso)]
    turn_acts: list[str] = []
    opening = query

    # --- how the user opens, and what the agent asks before calling
    if complexities & {"ambiguous_goal", "implicit_goal"}:
        # no "next month": the scenario's dates may be a year after its today (hand-checked travel-chat-conv-0012)
        vague = ("I need some help planning a trip." if "ambiguous_goal" in complexities
                 else "My travel plans are a bit of a mess, nothing is sorted yet.")
        agent.say_user(vague)
        agent.say("Of course. What exactly would you like me to look up?", ["agent_seek_information"], [])
    held_back: tuple[str, str] | None = None  # (how the query said it, the parameter) for underfilled
    corrected: tuple[str, str] | None = None  # (wrong text, right text) for goal_correction
    failing: tuple[Call, str, str] | None = None
    if "underfilled_parameters" in complexities:
        if not dates:
            raise ItemRejected("no_value_to_hold_back", "the plan states no date the user could leave out")
        call, name, iso = dates[rng.randrange(len(dates))]
        said = _mentioned(query, iso) or iso
        opening = f"{_leave_out(opening, said)} I am not sure about the {_spoken(name)} yet."
        held_back = (said, name)
    if "goal_correction" in complexities:
        candidates = [item for item in dates if held_back is None or _mentioned(query, item[2]) != held_back[0]]
        if not candidates:
            raise ItemRejected("no_value_to_correct", "the plan states no date the user could get wrong")
        call, name, iso = candidates[rng.randrange(len(candidates))]
        said = _mentioned(query, iso) or iso
        wrong = spell_date((date.fromisoformat(iso) + timedelta(days=1)).isoformat())
        opening = opening.replace(said, wrong)
        corrected = (wrong, said)
    if "execution_exception" in complexities:
        candidates = [item for item in dates if (held_back is None or _mentioned(query, item[2]) != held_back[0])
                      and (corrected is None or _mentioned(query, item[2]) != corrected[1])]
        if not candidates:
            raise ItemRejected("no_value_to_fail", "the plan states no date the API could refuse")
        failing = candidates[rng.randrange(len(candidates))]
        opening = opening.replace(_mentioned(query, failing[2]) or failing[2], IMPOSSIBLE_DATE)
    if "overfilled_parameters" in complexities:
        extra = EXTRA_DETAILS[rng.randrange(len(EXTRA_DETAILS))]
        opening = f"{opening} {extra}"
    agent.say_user(opening)
    if held_back is not None:
        agent.say(f"Happy to help. Which {_spoken(held_back[1])} should I use?", ["agent_seek_information"], [])
        agent.say_user(f"Let's say {held_back[0]}.")
    if corrected is not None:
        agent.say(f"Just to check before I search: you said {corrected[0]}, is that right?",
                  ["agent_seek_information"], [])
        agent.say_user(f"Oh no, my mistake: I meant {corrected[1]}.")
    if "confirmation" in complexities:
        agent.say(f"Let me confirm before I start: {opening[:1].lower()}{opening[1:]} Shall I go ahead?",
                  ["agent_seek_information"], [])
        agent.say_user("Yes, please go ahead.")
    # failed_conversation: the goal calls are chosen to fail (the service is down), never executed
    goals = set(scenario.required_apis)
    down = ({call.label: SERVICE_DOWN for call in calls if call.name in goals}
            if "failed_conversation" in complexities else {})

    # --- the calls, step by step
    for step in plan.calls:
        if failing is not None and any(call is failing[0] for call in step):
            fail_call, fail_name, iso = failing
            results = agent.call_step(step, {fail_call.label: {fail_name: IMPOSSIBLE_DATE}}, expect_failure=True)
            errors = [response for _, response, ok in results if not ok]
            if not errors:
                raise ItemRejected("exception_not_raised", f"{fail_call.name} accepted {IMPOSSIBLE_DATE}")
            error_text = str(errors[0].get("error", "an error")) if isinstance(errors[0], dict) else "an error"
            agent.say(f"The service refused that request: {_plain_error(error_text)}. Which date did you mean "
                      f"instead of {IMPOSSIBLE_DATE}?", ["agent_inform_user", "agent_seek_information"],
                      ["agent_function_calling"])
            agent.say_user(f"Sorry, I meant {_mentioned(query, iso) or iso}.")
        if any(call.label in down for call in step):
            _play_failure(agent, step, down)
            return _close(agent, scenario, rng, max_turns, plan.query)
        agent.call_step(step)
        turn_acts = ["agent_function_calling"]
    last = plan.calls[-1][-1]
    result = agent.outputs.get(last.label)
    found = describe_result(result)
    if "goal_stacking" in complexities:
        answer = _stacked_answer(agent, calls, scenario.required_apis)
    else:
        answer = f"I found {found}."
    if "overfilled_parameters" in complexities:
        answer += " I could not take your other wishes into account: the services do not offer that choice."
    agent.say(answer, ["agent_inform_user"], turn_acts)
    said = answer

    # --- after the answer: a question about a detail, more of the first result while the
    # scenario wants more turns, then one goodbye (never the same goodbye twice)
    if "follow_up" in complexities:
        asked = _follow_up_field(result, said)
        if asked is None:
            raise ItemRejected("nothing_to_follow_up", f"{last.name}'s response has no plain field to ask about")
        key, value, in_list = asked
        if in_list:
            agent.say_user(f"What is the {_spoken(key)} of the first one?")
            reply = f"The {_spoken(key)} of the first one is {_say_value(value)}."
        else:
            agent.say_user(f"What is its {_spoken(key)}?")
            reply = f"Its {_spoken(key)} is {_say_value(value)}."
        agent.say(reply, ["agent_inform_user"], [])
        said += " " + reply
    if "goal_not_supported" in complexities:
        request = _unsupported_request(offered, rng)
        agent.say_user(request)
        names = [_spoken(tool.name) for tool in offered] or ["the services I was given"]
        listed = names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"
        agent.say(f"I am sorry, I cannot do that: I can only help with these services: {listed}.",
                  ["agent_reject_request"], [])
    while sum(1 for message in agent.messages if message["role"] == "user") < scenario.min_turns - 1:
        more = _more_about(result, said)
        if more is None:
            break
        agent.say_user(more[0])
        agent.say(more[1], ["agent_inform_user"], [])
        said += " " + more[1]
    user_text, agent_text = CLOSINGS[rng.randrange(len(CLOSINGS))] if found != NOTHING_FOUND else EMPTY_CLOSING
    agent.say_user(user_text)
    agent.say(agent_text, ["agent_other"], [])
    user_turns = sum(1 for message in agent.messages if message["role"] == "user")
    if user_turns > max_turns:
        raise ItemRejected("turn_cap", f"{user_turns} user turns, over the cap of {max_turns}")
    return DraftedConversation(agent.messages, agent.failed, plan.query, dict(agent.chosen))


def _close(agent: _Agent, scenario: Scenario, rng: random.Random, max_turns: int, query: str) -> DraftedConversation:
    """After a failure or a switch of goals: closing exchanges until the scenario's minimum of user
    turns (each goodbye once), then the turn cap."""
    closings = list(CLOSINGS)
    rng.shuffle(closings)
    while sum(1 for message in agent.messages if message["role"] == "user") < scenario.min_turns:
        if not closings:
            break
        user_text, agent_text = closings.pop()
        agent.say_user(user_text)
        agent.say(agent_text, ["agent_other"], [])
    user_turns = sum(1 for message in agent.messages if message["role"] == "user")
    if user_turns > max_turns:
        raise ItemRejected("turn_cap", f"{user_turns} user turns, over the cap of {max_turns}")
    return DraftedConversation(agent.messages, agent.failed, query, dict(agent.chosen))


def _play_failure(agent: _Agent, step: Sequence[Call], down: dict[str, str]) -> None:
    """failed_conversation: the goal step fails (chosen), the agent offers a retry, it fails again,
    the user gives up and the agent says the goal could not be reached."""
    results = agent.call_step(step, chosen=down)
    error = next(str(response.get("error")) for _, response, ok in results if not ok and isinstance(response, dict))
    agent.say(f"I am sorry, your request did not go through: {error[:1].lower()}{error[1:]} Shall I try once more?",
              ["agent_inform_user", "agent_seek_information"], ["agent_function_calling"])
    agent.say_user("Yes, please try once more.")
    agent.call_step(step, chosen=down)
    agent.say("It failed again, so I cannot complete this request right now. Please try again later.",
              ["agent_inform_user"], ["agent_function_calling"])
    agent.say_user("Never mind, I will sort it out another way.")
    agent.say("I am sorry I could not help with this one.", ["agent_other"], [])


def _stacked_answer(agent: _Agent, calls: Sequence[Call], goals: Sequence[str]) -> str:
    """One sentence per goal, from the response of that goal's call (its first: a later call of the
    same tool serves another request's chain, as "tell me about X, then rent a car at X")."""
    parts = []
    for number, goal in enumerate(goals):
        label = next((call.label for call in calls if call.name == goal), None)
        if label is None:
            raise ItemRejected("goal_not_planned", f"the plan has no call of the goal {goal}")
        parts.append(f"{('For your first request', 'For your second request', 'For your third request')[min(number, 2)]}, "
                     f"I found {describe_result(agent.outputs.get(label))}.")
    return " ".join(parts)


def _unsupported_request(offered: Sequence[Tool], rng: random.Random) -> str:
    """A request whose words no offered tool's name or description mentions."""
    texts = " ".join(f"{tool.name} {tool.description}" for tool in offered).lower()
    candidates = [text for text, words in UNSUPPORTED_REQUESTS if not any(word in texts for word in words)]
    if not candidates:
        raise ItemRejected("nothing_unsupported", "every unsupported request is served by an offered tool")
    return candidates[rng.randrange(len(candidates))]


def _simulate_switch(scenario: Scenario, first: ProposedDraft, second: ProposedDraft, environment: Environment,
                     seed: str, max_turns: int) -> DraftedConversation:
    """goal_switching: the first goal asked with a date left out; while the agent asks for it the
    user drops that goal for the second one, which the agent serves."""
    rng = random.Random(seed)
    agent = _Agent(environment, [])
    first_calls = [call for step in first.calls for call in step]
    dates = [(call, name, iso) for call, name, iso in _literal_dates(first_calls) if _mentioned(first.query, iso)]
    if not dates:
        raise ItemRejected("no_value_to_hold_back", "the first goal's plan states no date the user could leave out")
    _, name, iso = dates[rng.randrange(len(dates))]
    said = _mentioned(first.query, iso) or iso
    agent.say_user(f"{_leave_out(first.query, said)} I am not sure about the {_spoken(name)} yet.")
    agent.say(f"Happy to help. Which {_spoken(name)} should I use?", ["agent_seek_information"], [])
    agent.say_user(f"Actually, never mind that. {second.query}")
    for step in second.calls:
        agent.call_step(step)
    last = second.calls[-1][-1]
    agent.say(f"No problem. I found {describe_result(agent.outputs.get(last.label))}.",
              ["agent_inform_user"], ["agent_function_calling"])
    return _close(agent, scenario, rng, max_turns, f"{first.query} | {second.query}")
