"""Calls whose outcome an author chose: CONFETTI's authors decide whether each simulated call
succeeds or fails, and fcbench lets them (the stage2 conversation form, the scenario's
failed_conversation). A call chosen to fail is never executed: it answers `{"error": message}`,
which the conversation records (`meta.conversation.chosen_errors`), and every later execution of
the conversation (the filter, a re-pull) answers it the same way, so the choice is reproduced
exactly and the environment's state is what it would be had the call failed (nothing changed).
"""

from __future__ import annotations

from typing import Any, Mapping, Sequence

from fcbench.conversation import error_response
from fcbench.environments import CallOutcome, ErrorReason


def chosen_failure(message: str) -> CallOutcome:
    """The outcome of a call an author chose to fail."""
    return CallOutcome.failure(ErrorReason.TOOL_ERROR, message, error_response(message))


def call_step_with_chosen_errors(environment: Any, step: Sequence[tuple[str, Mapping[str, Any]]],
                                 chosen: Sequence[str | None]) -> list[CallOutcome]:
    """The outcomes of one step of parallel calls: a call with a chosen error message (same
    position in `chosen`) fails with it unexecuted; the others go to the environment together."""
    executed = [index for index, message in enumerate(chosen) if message is None]
    outcomes = environment.call_step([step[index] for index in executed]) if executed else []
    results: list[CallOutcome] = []
    ran = iter(outcomes)
    for message in chosen:
        results.append(next(ran) if message is None else chosen_failure(message))
    return results
