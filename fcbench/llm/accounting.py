"""Per-run accounting of LLM requests: what was sent, replayed, retried, rejected, and what it cost.

Only requests actually sent in this run are paid for; answers replayed from the cache are counted
apart (their tokens were paid by an earlier run). Prices are USD per million tokens (pipelines.yaml
`llm.prices`); answers received through the Batch API are priced at `batch_discount` of that.
Answers from fcbench's own mock server (marked by its `system_fingerprint`) cost nothing: a dry run
is never billed.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Mapping

from fcbench.config import PricesConfig


MOCK_FINGERPRINT = "fcbench-mock"  # fcbench.llm.mock_server marks its completions with it


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    unbilled: bool = False  # answered by the local mock server

    @classmethod
    def from_completion(cls, body: Mapping[str, Any]) -> Usage:
        """The `usage` of a chat completion body; an endpoint that reports none counts as zero."""
        usage = body.get("usage") or {}
        return cls(int(usage.get("prompt_tokens") or 0), int(usage.get("completion_tokens") or 0),
                   body.get("system_fingerprint") == MOCK_FINGERPRINT)


def cost_usd(usage: Usage, prices: PricesConfig) -> float:
    return (usage.prompt_tokens * prices.input_per_million
            + usage.completion_tokens * prices.output_per_million) / 1_000_000


@dataclass
class RunAccounting:
    """Counters for one run; `as_dict()` is the run summary (no key, no URL credentials)."""

    prices: PricesConfig = field(default_factory=PricesConfig)
    requests_sent: int = 0  # HTTP requests, including failed ones and retries
    answers_received: int = 0  # well-formed completions received over HTTP
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cached_prompt_tokens: int = 0
    cached_completion_tokens: int = 0
    batch_prompt_tokens: int = 0  # of which received through the Batch API
    batch_completion_tokens: int = 0
    unbilled_answers: int = 0  # answers from the local mock server (their tokens are not priced)
    unbilled_prompt_tokens: int = 0
    unbilled_completion_tokens: int = 0
    unbilled_cached_tokens: Usage = field(default_factory=Usage)
    completed: int = 0  # requests that ended with a parsed reply
    retries: Counter[str] = field(default_factory=Counter)  # reason -> count
    rejections: Counter[str] = field(default_factory=Counter)  # reason -> count

    def add_received(self, usage: Usage, *, batch: bool = False) -> None:
        self.answers_received += 1
        self.prompt_tokens += usage.prompt_tokens
        self.completion_tokens += usage.completion_tokens
        if usage.unbilled:
            self.unbilled_answers += 1
            self.unbilled_prompt_tokens += usage.prompt_tokens
            self.unbilled_completion_tokens += usage.completion_tokens
        elif batch:
            self.batch_prompt_tokens += usage.prompt_tokens
            self.batch_completion_tokens += usage.completion_tokens

    def add_cached(self, usage: Usage) -> None:
        self.cache_hits += 1
        self.cached_prompt_tokens += usage.prompt_tokens
        self.cached_completion_tokens += usage.completion_tokens
        if usage.unbilled:
            self.unbilled_cached_tokens = Usage(self.unbilled_cached_tokens.prompt_tokens + usage.prompt_tokens,
                                                self.unbilled_cached_tokens.completion_tokens + usage.completion_tokens)

    @property
    def cost_usd(self) -> float:
        online = Usage(self.prompt_tokens - self.batch_prompt_tokens - self.unbilled_prompt_tokens,
                       self.completion_tokens - self.batch_completion_tokens - self.unbilled_completion_tokens)
        batch = Usage(self.batch_prompt_tokens, self.batch_completion_tokens)
        return cost_usd(online, self.prices) + self.prices.batch_discount * cost_usd(batch, self.prices)

    @property
    def saved_usd(self) -> float:
        """What the cache hits would have cost if sent again."""
        return cost_usd(Usage(self.cached_prompt_tokens - self.unbilled_cached_tokens.prompt_tokens,
                              self.cached_completion_tokens - self.unbilled_cached_tokens.completion_tokens), self.prices)

    def as_dict(self) -> dict[str, Any]:
        return {
            "requests_sent": self.requests_sent,
            "answers_received": self.answers_received,
            "cache_hits": self.cache_hits,
            "completed": self.completed,
            "rejected": sum(self.rejections.values()),
            "retries": dict(sorted(self.retries.items())),
            "rejections": dict(sorted(self.rejections.items())),
            "tokens": {"prompt": self.prompt_tokens, "completion": self.completion_tokens,
                       "cached_prompt": self.cached_prompt_tokens, "cached_completion": self.cached_completion_tokens},
            "cost_usd": round(self.cost_usd, 6),
            **({"batch_tokens": {"prompt": self.batch_prompt_tokens, "completion": self.batch_completion_tokens},
                "batch_price": f"{self.prices.batch_discount:g} x online"}
               if self.batch_prompt_tokens or self.batch_completion_tokens else {}),
            **({"unbilled_answers": self.unbilled_answers,
                "unbilled_because": "answered by fcbench's local mock server"} if self.unbilled_answers else {}),
            "saved_by_cache_usd": round(self.saved_usd, 6),
        }
