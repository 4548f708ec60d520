"""Verdicts on annotations (pure): checks of an annotated gold candidate, live checks, QA, agreement."""
