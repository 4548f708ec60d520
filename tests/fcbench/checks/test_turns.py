"""Each call of a conversation against what the user had said when it was made: a value said only
later, a value the user took back before the call, a value said nowhere; a right conversation has
no problem."""

from __future__ import annotations

from fcbench.checks.turns import STATED_LATER, SUPERSEDED, UNGROUNDED, dates_in, taken_back, turn_problems
from fcbench.conversation import calls_from_messages, tool_call, tool_result
from fcbench.sample import Sample, Tool

FLIGHTS = Tool(name="Search_Flights", description="Search flights.", parameters={
    "type": "object", "required": ["fromId", "departDate"],
    "properties": {"fromId": {"type": "string"}, "departDate": {"type": "string"}, "returnDate": {"type": "string"}}})


def conversation(*turns: dict) -> Sample:
    messages = list(turns)
    return Sample(id="c", messages=messages, tools=[FLIGHTS], calls=calls_from_messages(messages))


def user(text: str) -> dict:
    return {"role": "user", "content": text}


def agent(text: str) -> dict:
    return {"role": "assistant", "content": text, "dialog_acts": ["agent_seek_information"]}


def search(label: str, **arguments) -> list[dict]:
    return [{"role": "assistant", "content": None, "tool_calls": [tool_call(label, "Search_Flights", arguments)]},
            tool_result(label, "Search_Flights", {"data": []})]


def test_a_right_conversation_has_no_problem() -> None:
    sample = conversation(user("Flights from PAR on July 1, 2026, back on July 6, 2026."),
                          agent("You said July 6, 2026, is that right?"),
                          user("Oh no, I meant July 5, 2026."),
                          *search("var_1", fromId="PAR", departDate="2026-07-01", returnDate="2026-07-05"))
    assert turn_problems(sample) == []


def test_a_value_the_user_states_only_later_is_stated_later() -> None:
    """The brief's case: the call uses the date the user gives only after it."""
    sample = conversation(user("Flights from PAR, I will tell you the day."),
                          *search("var_1", fromId="PAR", departDate="2026-07-01"),
                          user("It is July 1, 2026."))
    (problem,) = turn_problems(sample)
    assert (problem.reason, problem.label, problem.parameter, problem.value, problem.user_turns) == \
        (STATED_LATER, "var_1", "departDate", "2026-07-01", 1)
    assert problem.describe() == 'var_1.departDate="2026-07-01" after user turn 1: the user states it only after the call'


def test_a_value_the_user_took_back_is_superseded() -> None:
    sample = conversation(user("Flights from PAR on July 1, 2026, back on July 6, 2026."),
                          agent("Just to check: you said July 6, 2026, is that right?"),
                          user("Oh no, my mistake: I meant July 5, 2026."),
                          *search("var_1", fromId="PAR", departDate="2026-07-01", returnDate="2026-07-06"))
    (problem,) = turn_problems(sample)
    assert (problem.reason, problem.parameter, problem.value) == (SUPERSEDED, "returnDate", "2026-07-06")


def test_an_impossible_date_taken_back_after_the_error_is_superseded_but_the_failing_call_is_not() -> None:
    sample = conversation(user("Flights from PAR on 2025-02-30."),
                          *search("var_1", fromId="PAR", departDate="2025-02-30"),
                          agent("The service refused 2025-02-30. Which date did you mean?"),
                          user("Sorry, I meant July 1, 2026."),
                          *search("var_2", fromId="PAR", departDate="2025-02-30"))
    assert [(p.reason, p.label) for p in turn_problems(sample)] == [(SUPERSEDED, "var_2")]
    assert taken_back(sample.messages) == [(4, {"2025-02-30"})]  # the user turn that corrects
    assert dates_in("on 2025-02-30 or July 1, 2026") == {"2025-02-30", "2026-07-01"}


def test_a_value_said_nowhere_is_ungrounded() -> None:
    sample = conversation(user("Flights from PAR on July 1, 2026."), *search("var_1", fromId="LON", departDate="2026-07-01"))
    assert [(p.reason, p.value) for p in turn_problems(sample)] == [(UNGROUNDED, "LON")]
