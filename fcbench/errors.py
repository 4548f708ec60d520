"""The errors that mean the same thing wherever they are raised, each defined once.

`UserError` and its subclasses are shown as one line on stderr with exit code 1, never as a
traceback. `ItemError` and `JudgeError` are per item: the run goes on, and the item is rejected
(or its verdict recorded as a judge error) with the message as its reason.
"""

from __future__ import annotations


class UserError(Exception):
    """Something the user can fix (a wrong path, a bad option, a malformed file)."""


class ConfigError(UserError):
    """A configuration file that must not be used (pipelines.yaml, a Label Studio label config);
    `problems` holds every problem found, the message the first."""

    def __init__(self, problems: list[str] | str) -> None:
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        more = f" (and {len(self.problems) - 1} more problems)" if len(self.problems) > 1 else ""
        super().__init__(self.problems[0] + more)


class ItemError(ValueError):
    """One input item that cannot become a sample: it becomes a `Rejected` with this message as
    its reason, and the file goes on (every format adapter)."""


class JudgeError(Exception):
    """No usable verdict from an LLM judge for one question: why, and the last text it wrote.
    Raised by a match layer or returned in place of a verdict (`fcbench.llm.judge.LLMJudge`);
    either way the item is decided as a judge error, never guessed."""

    def __init__(self, reason: str, raw_text: str = "") -> None:
        super().__init__(reason)
        self.reason = reason
        self.raw_text = raw_text


class ItemRejected(Exception):
    """One item a stage cannot produce as asked (a draft, a variant, a simulated conversation):
    `reason` is the reject reason counted in the stage's summary, `detail` says why, `raw_text`
    keeps what the model wrote when there is one. The stage writes it to its rejects file and goes on."""

    def __init__(self, reason: str, detail: str, raw_text: str | None = None) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail
        self.raw_text = raw_text
