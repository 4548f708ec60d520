"""The kinds of error a drafted sample can have: one vocabulary for the annotator's flags (label
configs), the QA classification of draft-vs-gold diffs, and the reports.

The call-level kinds reuse ComplexEval's names (`fcbench.score.matching.MatchDecision.error_type`),
so what annotators fix in drafts and what the scorer counts in model outputs read the same; the
others are ComplexFuncBench's annotation steps (query rewriting, shortest path, disambiguation).
"""

from __future__ import annotations

from enum import Enum


class DraftError(str, Enum):
    QUERY_REWRITTEN = "query_rewritten"  # the query was unclear, ambiguous or did not match the path
    FUNC_ERROR = "func_error"  # a call used the wrong function
    CALL_MISSING = "call_missing"  # the path lacked a call the query needs
    CALL_REDUNDANT = "call_redundant"  # the path had a call the shortest path does not need
    ORDER_ERROR = "order_error"  # calls ran in the wrong order (or in the wrong step)
    PARAM_MISSING = "param_missing"  # a call lacked an argument
    PARAM_HALLUCINATION = "param_hallucination"  # a call had an argument it should not have
    VALUE_ERROR = "value_error"  # an argument had the wrong value
    AMBIGUOUS_RESPONSE = "ambiguous_response"  # several response entries fit: entries deleted
    OVERLAPPING_TOOLS = "overlapping_tools"  # tools a model cannot tell apart: tools dropped


DESCRIPTIONS: dict[DraftError, str] = {
    DraftError.QUERY_REWRITTEN: "query unclear or does not match the path",
    DraftError.FUNC_ERROR: "wrong function called",
    DraftError.CALL_MISSING: "a needed call is missing",
    DraftError.CALL_REDUNDANT: "a call is not needed (not the shortest path)",
    DraftError.ORDER_ERROR: "calls in the wrong order",
    DraftError.PARAM_MISSING: "an argument is missing",
    DraftError.PARAM_HALLUCINATION: "an argument should not be there",
    DraftError.VALUE_ERROR: "an argument has a wrong value",
    DraftError.AMBIGUOUS_RESPONSE: "several response entries fit the query",
    DraftError.OVERLAPPING_TOOLS: "two tools do the same thing",
}
