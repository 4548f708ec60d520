"""A problem found in an annotation: a machine-readable code (counted in summaries) and the exact
message an annotator reads when the task is sent back."""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum


class ProblemCode(str, Enum):
    CANCELLED = "cancelled"  # the annotator skipped the task
    EMPTY_SUBMISSION = "empty_submission"  # submitted with nothing filled in
    REJECTED_BY_ANNOTATOR = "rejected_by_annotator"  # verdict "reject" / "cannot_fill": a decision, not an error
    NO_VERDICT = "no_verdict"
    EMPTY_QUERY = "empty_query"
    BAD_JSON = "bad_json"  # a JSON text field does not parse
    BAD_SHAPE = "bad_shape"  # it parses but is not the expected structure
    DUPLICATE_LABEL = "duplicate_label"
    UNKNOWN_TOOL = "unknown_tool"
    DROPPED_TOOL = "dropped_tool"  # the path calls a tool the annotator dropped
    UNKNOWN_ENTRY = "unknown_entry"  # a ticked response entry that is not in the draft
    BAD_REFERENCE = "bad_reference"
    BAD_ARGUMENTS = "bad_arguments"  # the arguments do not fit the tool's schema
    EXECUTION_FAILED = "execution_failed"
    NO_RESPONSE = "no_response"  # a changed call and no environment to execute it
    INCONSISTENT_RESPONSE = "inconsistent_response"  # a kept response no longer matches its inputs
    PATH_CHANGED = "path_changed"  # junior filling: calls added, removed or renamed on a fixed path
    MISSING_DRAFT = "missing_draft"  # the task's data lacks the draft (not pushed by fcbench)
    MALFORMED_TASK = "malformed_task"  # the task itself (not the annotation) is broken in the export
    STALE_DRAFT = "stale_draft"  # the task's draft is not the current drafts.jsonl's (another stage1 run)
    BAD_FORM = "bad_form"  # a call form that cannot be read (no label, bad step number, a value not of its type)
    CONFLICTING_EDITS = "conflicting_edits"  # the forms and the raw JSON were both changed and disagree
    # conversations (annotate/tasks/conversation.py)
    EMPTY_CONVERSATION = "empty_conversation"  # every turn deleted, or no user turn
    NO_DIALOG_ACT = "no_dialog_act"  # an agent turn tagged with no dialog act
    UNKNOWN_DIALOG_ACT = "unknown_dialog_act"
    DIALOG_ACT_MISMATCH = "dialog_act_mismatch"  # calls without agent_function_calling, or the reverse
    COMPLEXITY_MISSING = "complexity_missing"  # a complexity the scenario requires does not occur
    TOO_FEW_TURNS = "too_few_turns"  # fewer user turns than the scenario's minimum
    TYPE_MISSING = "type_missing"  # the conversation fails the acceptance rule of a type its scenario requires
    CALL_ERROR_MISMATCH = "call_error_mismatch"  # a call ticked to fail is not the call it was when pushed
    # scenario review (annotate/tasks/scenario_review.py)
    BAD_SCENARIO = "bad_scenario"  # an edited scenario that cannot be played (unknown API, no type, bad time)
    STALE_SCENARIO = "stale_scenario"  # the reviewed scenario is not the one stage1 samples now


# Codes that are the annotator's own decision or a skip: never sent back, never "fixed".
NOT_ERRORS = frozenset({ProblemCode.CANCELLED, ProblemCode.REJECTED_BY_ANNOTATOR, ProblemCode.MISSING_DRAFT,
                        ProblemCode.MALFORMED_TASK, ProblemCode.STALE_DRAFT, ProblemCode.STALE_SCENARIO})


@dataclass(frozen=True)
class Problem:
    code: ProblemCode
    message: str

    def __str__(self) -> str:
        return self.message

    def as_dict(self) -> dict[str, str]:
        return {"code": self.code.value, "message": self.message}
