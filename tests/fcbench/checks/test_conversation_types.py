"""The acceptance rule of each CONFETTI conversation type (fcbench/checks/conversation_types.py), on
small hand-written conversations: each type is found where the conversation shows it and missing,
with the reason, where it does not (the same words as a careful annotator would use)."""

from __future__ import annotations

from typing import Any

import pytest

from fcbench.checks.conversation_types import RULES, missing_types, type_missing
from fcbench.config import COMPLEXITIES
from fcbench.conversation import Scenario, conversation_sample, error_response, tool_call, tool_result
from fcbench.sample import Provenance, Sample, Tool

TOOLS = [
    Tool(name="Find_Place", description="Find a city by name.",
         parameters={"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]}),
    Tool(name="Search_Flights", description="Search flights between two cities on a date.",
         parameters={"type": "object", "properties": {"fromId": {"type": "string"}, "toId": {"type": "string"},
                                                      "departDate": {"type": "string"}},
                     "required": ["fromId", "toId", "departDate"]}),
    Tool(name="Search_Hotels", description="Search hotels of a city for a night.",
         parameters={"type": "object", "properties": {"city": {"type": "string"}, "checkin": {"type": "string"}},
                     "required": ["city", "checkin"]}),
]
FLIGHTS = ("Search_Flights", {"fromId": "PAR", "toId": "ROM", "departDate": "2026-07-05"},
           {"flights": [{"number": "AZ 317", "price": 129}]})
HOTELS = ("Search_Hotels", {"city": "Rome", "checkin": "2026-07-05"}, {"hotels": [{"name": "Hotel Roma", "price": 90}]})


def user(text: str) -> dict[str, Any]:
    return {"user": text}


def agent(text: str, acts: list[str], *calls: tuple, fail: dict[int, str] | None = None) -> dict[str, Any]:
    return {"agent": text, "acts": acts, "calls": list(calls), "fail": fail or {}}


def conversation(turns: list[dict[str, Any]], complexity: str, required: list[str]) -> Sample:
    """A conversation sample from user and agent turns; an agent turn's calls are one step each,
    `fail` (index -> error message) makes those calls fail as an author's chosen error."""
    messages: list[dict[str, Any]] = []
    failed: list[str] = []
    chosen: dict[str, str] = {}
    count = 0
    for turn in turns:
        if "user" in turn:
            messages.append({"role": "user", "content": turn["user"]})
            continue
        for index, (name, arguments, response) in enumerate(turn["calls"]):
            count += 1
            label = f"var_{count}"
            messages.append({"role": "assistant", "content": None, "tool_calls": [tool_call(label, name, arguments)]})
            if index in turn["fail"]:
                failed.append(label)
                chosen[label] = turn["fail"][index]
                response = error_response(turn["fail"][index])
            messages.append(tool_result(label, name, response))
        messages.append({"role": "assistant", "content": turn["agent"], "dialog_acts": turn["acts"]})
    scenario = Scenario(id="c", domain="travel", required_apis=required, complexities=[complexity],
                        reference_time="2026-06-01T09:00:00", min_turns=1)
    return conversation_sample("c", scenario, messages, TOOLS, Provenance(stage="test"), failed, chosen_errors=chosen)


CALL = ["agent_function_calling", "agent_inform_user"]
SEEK = ["agent_seek_information"]
REQUEST = "Find flights from PAR to ROM on July 5, 2026."


def test_every_type_has_a_rule():
    assert set(RULES) == set(COMPLEXITIES) and len(COMPLEXITIES) == 13


def test_follow_up_needs_a_question_answered_after_the_first_answer():
    shown = conversation([user(REQUEST), agent("AZ 317 for 129 EUR.", CALL, FLIGHTS), user("How much is it?"),
                          agent("It costs 129.", ["agent_inform_user"])], "follow_up", ["Search_Flights"])
    assert type_missing(shown, "follow_up") is None
    closed = conversation([user(REQUEST), agent("AZ 317 for 129 EUR.", CALL, FLIGHTS), user("Thanks, bye."),
                           agent("Bye!", ["agent_other"])], "follow_up", ["Search_Flights"])
    assert "no user turn after the first answer" in type_missing(closed, "follow_up")


def test_goal_correction_is_a_stated_value_replaced_by_the_user():
    checked = conversation([user("Find flights from PAR to ROM on July 6, 2026."),
                            agent("You said July 6, 2026, is that right?", SEEK), user("Oh no, I meant July 5, 2026."),
                            agent("AZ 317.", CALL, FLIGHTS)], "goal_correction", ["Search_Flights"])
    assert type_missing(checked, "goal_correction") is None
    first = ("Search_Flights", {"fromId": "PAR", "toId": "ROM", "departDate": "2026-07-06"}, {"flights": []})
    repeated = conversation([user("Find flights from PAR to ROM on July 6, 2026."), agent("No flight that day.", CALL, first),
                             user("Sorry, I meant July 5, 2026."), agent("AZ 317.", CALL, FLIGHTS)],
                            "goal_correction", ["Search_Flights"])
    assert type_missing(repeated, "goal_correction") is None
    asked = conversation([user("Find flights from PAR to ROM."), agent("Which day?", SEEK), user("July 5, 2026."),
                          agent("AZ 317.", CALL, FLIGHTS)], "goal_correction", ["Search_Flights"])
    assert "no value the user stated is replaced" in type_missing(asked, "goal_correction")  # that is underfilling


def test_goal_switching_drops_the_first_goal_for_the_last():
    required = ["Search_Flights", "Search_Hotels"]
    switched = conversation([user("Find flights from PAR to ROM."), agent("Which day?", SEEK),
                             user("Actually, never mind. Find hotels in Rome on July 5, 2026."),
                             agent("Hotel Roma.", CALL, HOTELS)], "goal_switching", required)
    assert type_missing(switched, "goal_switching") is None
    completed = conversation([user(REQUEST), agent("AZ 317.", CALL, FLIGHTS), user("Now hotels in Rome on July 5, 2026."),
                              agent("Hotel Roma.", CALL, HOTELS)], "goal_switching", required)
    assert "the first goal (Search_Flights) is completed" in type_missing(completed, "goal_switching")
    opening = conversation([user("Find hotels in Rome on July 5, 2026."), agent("Hotel Roma.", CALL, HOTELS)],
                           "goal_switching", required)
    assert "asked in the opening turn" in type_missing(opening, "goal_switching")
    one_goal = conversation([user(REQUEST), agent("AZ 317.", CALL, FLIGHTS)], "goal_switching", ["Search_Flights"])
    assert "needs two goals" in type_missing(one_goal, "goal_switching")


def test_goal_stacking_serves_two_goals_asked_together():
    required = ["Search_Flights", "Search_Hotels"]
    stacked = conversation([user(f"{REQUEST} Also, find hotels in Rome on July 5, 2026."),
                            agent("AZ 317, and Hotel Roma.", CALL, FLIGHTS, HOTELS)], "goal_stacking", required)
    assert type_missing(stacked, "goal_stacking") is None
    in_turn = conversation([user(REQUEST), agent("AZ 317.", CALL, FLIGHTS), user("Now hotels in Rome on July 5, 2026."),
                            agent("Hotel Roma.", CALL, HOTELS)], "goal_stacking", required)
    assert "asked only after the first was done" in type_missing(in_turn, "goal_stacking")
    single = conversation([user(REQUEST), agent("AZ 317.", CALL, FLIGHTS)], "goal_stacking", required)
    assert "fewer than two goals" in type_missing(single, "goal_stacking")


def test_ambiguous_and_implicit_goals_are_asked_about_before_any_call():
    asked = conversation([user("I need help with a trip."), agent("What should I look up?", SEEK), user(REQUEST),
                          agent("AZ 317.", CALL, FLIGHTS)], "ambiguous_goal", ["Search_Flights"])
    assert type_missing(asked, "ambiguous_goal") is None and type_missing(asked, "implicit_goal") is None
    direct = conversation([user(REQUEST), agent("AZ 317.", CALL, FLIGHTS)], "ambiguous_goal", ["Search_Flights"])
    assert "does not ask for clarification" in type_missing(direct, "ambiguous_goal")
    assert "does not infer or ask" in type_missing(direct, "implicit_goal")
    unreached = conversation([user("My week in Rome is a mess."), agent("Do you need a flight?", SEEK),
                              user("No, thanks."), agent("All right.", ["agent_other"])], "implicit_goal", ["Search_Flights"])
    assert "never reached" in type_missing(unreached, "implicit_goal")


def test_overfilled_and_underfilled_parameters():
    overfilled = conversation([user(f"{REQUEST} I am travelling with my old dog."), agent("AZ 317.", CALL, FLIGHTS)],
                              "overfilled_parameters", ["Search_Flights"])
    assert type_missing(overfilled, "overfilled_parameters") is None
    plain = conversation([user(REQUEST), agent("AZ 317.", CALL, FLIGHTS)], "overfilled_parameters", ["Search_Flights"])
    assert "no user turn gives details no call uses" in type_missing(plain, "overfilled_parameters")
    underfilled = conversation([user("Find flights from PAR to ROM."), agent("Which day?", SEEK),
                                user("July 5, 2026, please."), agent("AZ 317.", CALL, FLIGHTS)],
                               "underfilled_parameters", ["Search_Flights"])
    assert type_missing(underfilled, "underfilled_parameters") is None
    assert "no value a call uses is missing" in type_missing(plain, "underfilled_parameters")


def test_execution_exception_needs_a_failure_the_agent_handles():
    handled = conversation([user(REQUEST), agent("The service failed; shall I try again?", CALL + SEEK, FLIGHTS,
                                                 fail={0: "down"})], "execution_exception", ["Search_Flights"])
    assert type_missing(handled, "execution_exception") is None
    ignored = conversation([user(REQUEST), agent("", ["agent_function_calling"], FLIGHTS, fail={0: "down"}),
                            user("Hello?"), agent("Bye.", ["agent_other"])], "execution_exception", ["Search_Flights"])
    assert "does not handle it" in type_missing(ignored, "execution_exception")
    fine = conversation([user(REQUEST), agent("AZ 317.", CALL, FLIGHTS)], "execution_exception", ["Search_Flights"])
    assert type_missing(fine, "execution_exception") == "no call fails"


def test_confirmation_is_an_approved_proposal_with_the_calls_values():
    confirmed = conversation([user(REQUEST), agent("Shall I search flights from PAR to ROM on July 5, 2026?", SEEK),
                              user("Yes, go ahead."), agent("AZ 317.", CALL, FLIGHTS)], "confirmation", ["Search_Flights"])
    assert type_missing(confirmed, "confirmation") is None
    value_asked = conversation([user("Find flights from PAR to ROM."), agent("Which day?", SEEK), user("July 5, 2026."),
                                agent("AZ 317.", CALL, FLIGHTS)], "confirmation", ["Search_Flights"])
    assert "no agent turn asks the user to approve" in type_missing(value_asked, "confirmation")


def test_goal_not_supported_and_failed_conversation():
    rejected = conversation([user(REQUEST), agent("AZ 317.", CALL, FLIGHTS), user("Can you book me a dinner table?"),
                             agent("Sorry, I cannot book restaurants.", ["agent_reject_request"])],
                            "goal_not_supported", ["Search_Flights"])
    assert type_missing(rejected, "goal_not_supported") is None
    served = conversation([user(REQUEST), agent("AZ 317.", CALL, FLIGHTS)], "goal_not_supported", ["Search_Flights"])
    assert "no agent turn rejects a request" in type_missing(served, "goal_not_supported")
    failed = conversation([user(REQUEST), agent("The service is down; I cannot search flights now.", CALL, FLIGHTS,
                                                fail={0: "The service is down."})], "failed_conversation", ["Search_Flights"])
    assert type_missing(failed, "failed_conversation") is None
    assert "the goal is achieved: Search_Flights succeeds" == type_missing(served, "failed_conversation")
    untold = conversation([user(REQUEST), agent("", ["agent_function_calling"], FLIGHTS, fail={0: "down"}),
                           user("And?"), agent("Bye.", ["agent_other"])], "failed_conversation", ["Search_Flights"])
    assert "never told" in type_missing(untold, "failed_conversation")


def test_missing_types_reads_the_scenario_and_no_target_asks_nothing():
    plain = conversation([user(REQUEST), agent("AZ 317.", CALL, FLIGHTS)], "no_target", ["Search_Flights"])
    assert missing_types(plain) == []
    asked = plain.model_copy(deep=True)
    asked.meta["conversation"]["scenario"]["complexities"] = ["follow_up", "goal_not_supported"]
    assert [name for name, _ in missing_types(asked)] == ["follow_up", "goal_not_supported"]
    assert missing_types(plain, ["no_such_type"]) == [("no_such_type", "unknown conversation type 'no_such_type'")]


@pytest.mark.parametrize("complexity", sorted(set(COMPLEXITIES) - {"no_target"}))
def test_a_bare_request_shows_no_type_but_no_target(complexity):
    bare = conversation([user(REQUEST), agent("AZ 317.", CALL, FLIGHTS)], complexity, ["Search_Flights", "Search_Hotels"])
    assert type_missing(bare, complexity) is not None
