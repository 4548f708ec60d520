"""An LLM judge: one narrow question per item, rendered from a prompt file, answered through the
`LLMClient`, read by a strict parser. Any scorer that needs an LLM verdict uses it the same way.

- Every verdict is cached: the accepted answer is the client's `RequestCache` row (keyed on the
  model, the rendered prompt and the prompt file's hash), so scoring the same file again sends
  nothing. Identical questions in one run are asked once.
- An answer the parser cannot read is asked again once (`JUDGE_PARSE_ATTEMPTS`, as attempt 1 with
  its own cache row); when that one is unreadable too, the item gets a `JudgeError` with the
  reason and the raw text, never a guessed verdict, and both unusable answers are removed from the
  cache so that the next run asks again. (When the re-ask is readable, the unreadable first answer
  stays cached as attempt 0: a re-run then replays the same two rows and gives the same verdict
  without a request.) A request that failed for good (retries spent, a 4xx) is a `JudgeError` too.
- The judge runs at temperature 0 whatever the pipeline's sampling settings: a verdict should not
  depend on a draw.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Generic, Mapping, Sequence, TypeVar

from fcbench.config import LLMConfig
from fcbench.llm.cache import canonical_json
from fcbench.llm.client import ChatRequest, Completion, LLMClient, LLMRejection, RetryPolicy, json_object_answer
from fcbench.llm.prompts import PromptFile

JUDGE_PARSE_ATTEMPTS = 2  # the first answer and one re-ask
T = TypeVar("T")


@dataclass(frozen=True)
class JudgeError:
    """No usable verdict for one question: why, and the last text the judge wrote."""

    reason: str
    raw_text: str


def judge_llm_config(base: LLMConfig | None, model: str | None, base_url: str | None,
                     batch: bool = False) -> LLMConfig | None:
    """The judge's endpoint: a pipeline's llm block (key variable, concurrency, retries, prices,
    online or batch mode) with the model and endpoint given on the command line, as `evaluate`
    resolves them, and `batch` forcing the Batch API as `evaluate --batch` does; None when no
    model is named anywhere (no LLM configured: the caller grades offline)."""
    if base is None and model is None:
        return None
    update: dict[str, Any] = {"temperature": 0.0}
    if model is not None:
        update["model"] = model
    if base_url is not None:
        update["base_url"] = base_url
    if batch:
        update["mode"] = "batch"
    if base is None:
        return LLMConfig(model=model, base_url=base_url, temperature=0.0, mode="batch" if batch else "online")
    return base.model_copy(update=update)


def judge_client(config: LLMConfig, cache: Any, environ: Mapping[str, str] | None = None) -> LLMClient:
    """An `LLMClient` that re-asks an unreadable answer once, no more."""
    return LLMClient(config, cache, environ=environ,
                     retry=RetryPolicy(max_retries=config.max_retries, parse_attempts=JUDGE_PARSE_ATTEMPTS))


class LLMJudge(Generic[T]):
    """`await judge.ask_all(questions)`: one verdict (or `JudgeError`) per question, in order.

    A question is the mapping of `{{name}}` values the prompt file is rendered with; `read`
    turns the answer's JSON object into the verdict or raises `ParseError`.

    `answer_text`: for a published judge prompt that asks for another answer shape than a JSON
    object (CallNavi's GPT score: "[[0.85]]"), turns the answer text into the object `read` gets
    (or raises `ParseError`); the request then asks for no JSON response format."""

    def __init__(self, client: LLMClient, prompt: PromptFile, read: Callable[[dict[str, Any]], T],
                 answer_text: Callable[[str], dict[str, Any]] | None = None) -> None:
        self.client = client
        self.prompt = prompt
        self.read = read
        self.answer_text = answer_text

    def request(self, question: Mapping[str, str]) -> ChatRequest:
        response_format = None if self.answer_text is not None else {"type": "json_object"}
        return ChatRequest(messages=[{"role": "user", "content": self.prompt.render(**question)}],
                           response_format=response_format, prompt_hash=self.prompt.sha256)

    def _parse(self, completion: Completion) -> T:
        if self.answer_text is not None:
            return self.read(self.answer_text(completion.content or ""))
        return self.read(json_object_answer(completion))

    async def ask_all(self, questions: Sequence[Mapping[str, str]]) -> list[T | JudgeError]:
        unique: dict[str, int] = {}
        for question in questions:
            unique.setdefault(canonical_json(dict(question)), len(unique))
        requests = [self.request(json.loads(text)) for text in unique]
        outcomes = await self.client.complete_all(requests, self._parse)
        verdicts: list[T | JudgeError] = []
        for outcome in outcomes:
            if isinstance(outcome, LLMRejection):
                verdicts.append(JudgeError(outcome.reason, outcome.raw_text))
            else:
                verdicts.append(outcome.parsed)
        return [verdicts[unique[canonical_json(dict(question))]] for question in questions]


def load_prompt(path: Path) -> PromptFile:
    return PromptFile.load(path, path.parent)


JUDGE_CACHE_FILE = "judges.sqlite"


def default_judge_cache(build_dir: Path | None, environ: Mapping[str, str]) -> Path:
    """Where verdicts are cached when no file is given: the pipeline's build folder
    (`build/score/judges.sqlite`), else the user's cache folder ($XDG_CACHE_HOME or ~/.cache)."""
    if build_dir is not None:
        return build_dir / "score" / JUDGE_CACHE_FILE
    base = Path(environ["XDG_CACHE_HOME"]) if environ.get("XDG_CACHE_HOME") else Path.home() / ".cache"
    return base / "fcbench" / JUDGE_CACHE_FILE
