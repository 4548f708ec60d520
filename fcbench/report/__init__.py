"""STAGE report: the QA report of a build, one self-contained HTML page and the same numbers as JSON."""
