"""Dataset statistics (pure, over samples): the tables benchmark papers publish.

Per domain: samples, average steps and calls (ComplexFuncBench, Table 3), with an overall row;
the derived difficulty split (none/single/multiple/nested); the published difficulty labels where a
format carries one (CallNavi easy/medium/hard); and the nesting-depth and dependency-count
distributions (NESTful's analysis); and what makes samples hard (fcbench.stats.hardness): tokens of
context per sample (cl100k_base, fcbench.stats.tokens) with a histogram, the longest parameter value, the
share of samples whose arguments need values found in responses, and constraints per query. Items
a reader rejected are counted, never left out. Memory grows with the number of samples by a few
numbers each, never by their size, so a file of any size is measured in one streamed pass.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable

from fcbench.formats import Rejected
from fcbench.stats.hardness import CONSTRAINT_KINDS, SampleHardness, measure_hardness
from fcbench.sample import Difficulty, PathShape, Sample, path_shape
from fcbench.stats.tokens import ENCODING

OVERALL = "all"
CROSS_DOMAIN = "cross-domain"  # a sample spanning several domains (ComplexFuncBench's "Cross")
NO_DOMAIN = "(none)"
# Published labels are shown easiest first; labels outside this list follow alphabetically.
_LABEL_ORDER = ["easy", "medium", "hard"]
# Context-length histogram: fixed bucket edges (tokens), so tables of different datasets line up;
# 32k and 128k are the context windows long-context benchmarks are measured against.
CONTEXT_BUCKETS = (1_000, 4_000, 8_000, 16_000, 32_000, 64_000, 128_000)
LONG_CONTEXT = 32_000  # the share of samples above this many tokens is reported on its own


def _bucket_label(low: int, high: int | None) -> str:
    def k(n: int) -> str:
        return f"{n // 1000}k"
    if low == 0:
        return f"<{k(high)}"
    return f"{k(low)}-{k(high)}" if high is not None else f">={k(low)}"


BUCKET_LABELS = tuple(_bucket_label(low, high) for low, high in
                      zip((0, *CONTEXT_BUCKETS), (*CONTEXT_BUCKETS, None)))


def context_bucket(tokens: int) -> str:
    """The histogram bucket a context length falls in."""
    for index, edge in enumerate(CONTEXT_BUCKETS):
        if tokens < edge:
            return BUCKET_LABELS[index]
    return BUCKET_LABELS[-1]


@dataclass(frozen=True)
class DomainRow:
    """ComplexFuncBench's Table 3 row (samples, avg steps, avg calls) and what makes it hard."""

    domain: str
    samples: int
    avg_steps: float
    avg_calls: float
    avg_context_tokens: float = 0.0
    max_context_tokens: int = 0
    longest_value: int = 0  # characters of the longest argument value
    needs_response_share: float = 0.0  # samples with an argument value found in a response
    avg_constraints: float = 0.0  # constraints per query (fcbench.stats.hardness rules)

    def as_dict(self) -> dict[str, Any]:
        return {"domain": self.domain, "samples": self.samples,
                "avg_steps": round(self.avg_steps, 4), "avg_calls": round(self.avg_calls, 4),
                "avg_context_tokens": round(self.avg_context_tokens, 1), "max_context_tokens": self.max_context_tokens,
                "longest_value": self.longest_value, "needs_response_share": round(self.needs_response_share, 4),
                "avg_constraints": round(self.avg_constraints, 4)}


@dataclass
class DatasetStats:
    samples: int = 0
    rejected: int = 0
    reject_reasons: dict[str, int] = field(default_factory=dict)
    domains: list[DomainRow] = field(default_factory=list)  # one per domain, then the overall row
    difficulty: dict[str, int] = field(default_factory=dict)  # derived from the gold path
    published_difficulty: dict[str, int] = field(default_factory=dict)  # as the source labelled it
    nesting_depth: dict[int, int] = field(default_factory=dict)
    dependencies: dict[int, int] = field(default_factory=dict)
    # NESTful's measures: calls per sample (sequence length) and calls reading an earlier output
    sequence_length: dict[int, int] = field(default_factory=dict)
    nested_calls: dict[int, int] = field(default_factory=dict)
    # CallNavi's table: per domain, samples by difficulty derived from the gold path, named as
    # CallNavi names them (easy = one call, medium = several independent calls, hard = a call
    # reads an earlier output), beside the published label when the source had one
    difficulty_by_domain: dict[str, dict[str, int]] = field(default_factory=dict)
    published_difficulty_by_domain: dict[str, dict[str, int]] = field(default_factory=dict)
    encoding: str = ENCODING  # the tokenizer every token count is made with
    context_histogram: dict[str, int] = field(default_factory=dict)  # bucket label -> samples
    long_context_share: float = 0.0  # samples over LONG_CONTEXT tokens
    constraint_kinds: dict[str, int] = field(default_factory=dict)  # kind -> constraints found
    queries_with_constraints: int = 0

    def as_dict(self) -> dict[str, Any]:
        # JSON object keys are strings; the distributions keep numeric order.
        return {
            "samples": self.samples,
            "rejected": self.rejected,
            "reject_reasons": self.reject_reasons,
            "domains": [row.as_dict() for row in self.domains],
            "difficulty": self.difficulty,
            "published_difficulty": self.published_difficulty,
            "nesting_depth": {str(depth): n for depth, n in self.nesting_depth.items()},
            "dependencies": {str(count): n for count, n in self.dependencies.items()},
            "sequence_length": {str(count): n for count, n in self.sequence_length.items()},
            "nested_calls": {str(count): n for count, n in self.nested_calls.items()},
            "difficulty_by_domain": self.difficulty_by_domain,
            "published_difficulty_by_domain": self.published_difficulty_by_domain,
            "tokenizer": self.encoding,
            "context_histogram": self.context_histogram,
            "long_context_share": round(self.long_context_share, 4),
            "long_context_tokens": LONG_CONTEXT,
            "constraint_kinds": self.constraint_kinds,
            "queries_with_constraints": self.queries_with_constraints,
        }


# CallNavi's labels for fcbench's derived difficulty (builders notes §2.2: easy = exactly one call,
# medium = several calls whose inputs all come from the question, hard = a later call needs an
# earlier call's output); a sample without calls counts as none
CALLNAVI_LEVELS = ("easy", "medium", "hard", "none")
CALLNAVI_DIFFICULTY = {"single": "easy", "multiple": "medium", "nested": "hard", "none": "none"}


def domain_key(sample: Sample) -> str:
    """The row a sample counts in: its domain, or `cross-domain` when it spans several."""
    domain = sample.domain
    if isinstance(domain, list):
        distinct = list(dict.fromkeys(domain))
        if len(distinct) > 1:
            return CROSS_DOMAIN
        domain = distinct[0] if distinct else None
    return domain or NO_DOMAIN


def published_difficulty(sample: Sample) -> str | None:
    """The difficulty label the source format gave the item, kept under `meta[<format>]`."""
    for format_meta in sample.meta.values():
        if isinstance(format_meta, dict) and isinstance(format_meta.get("difficulty"), str):
            return format_meta["difficulty"]
    return None


def _label_sort_key(label: str) -> tuple[int, str]:
    return (_LABEL_ORDER.index(label) if label in _LABEL_ORDER else len(_LABEL_ORDER), label)


@dataclass(frozen=True)
class _Measured:
    """The few numbers kept per sample (never the sample itself)."""

    n_steps: int
    n_calls: int
    context_tokens: int
    longest_value: int
    needs_response_values: bool
    constraints: int


@dataclass(frozen=True)
class SampleFigures:
    """What the statistics keep of one sample: a few numbers and labels (picklable, so worker
    processes can measure samples and the figures be summed up in input order elsewhere)."""

    domain: str
    difficulty: str  # derived from the gold path
    nesting_depth: int
    n_dependencies: int
    measured: _Measured
    constraint_kinds: tuple[str, ...]
    published_label: str | None
    n_calls: int = 0  # NESTful's sequence length
    n_nested_calls: int = 0  # calls reading an earlier call's output


def sample_figures(sample: Sample, shape: PathShape | None = None) -> SampleFigures:
    """Measure one sample (its token counts are the expensive part; `shape`: its path_shape when
    the caller has it already)."""
    shape = shape or path_shape(sample)
    hardness = measure_hardness(sample)
    return SampleFigures(domain_key(sample), shape.difficulty.value, shape.nesting_depth, shape.n_dependencies,
                         _measured(shape, hardness), tuple(constraint.kind for constraint in hardness.constraints),
                         published_difficulty(sample), shape.n_calls, shape.n_nested_calls)


def _measured(shape: PathShape, hardness: SampleHardness) -> _Measured:
    return _Measured(shape.n_steps, shape.n_calls, hardness.context_tokens, hardness.longest_value,
                     hardness.needs_response_values, len(hardness.constraints))


def _domain_row(domain: str, rows: list[_Measured]) -> DomainRow:
    count = len(rows)
    if not count:
        return DomainRow(domain, 0, 0.0, 0.0)
    return DomainRow(
        domain=domain,
        samples=count,
        avg_steps=sum(r.n_steps for r in rows) / count,
        avg_calls=sum(r.n_calls for r in rows) / count,
        avg_context_tokens=sum(r.context_tokens for r in rows) / count,
        max_context_tokens=max(r.context_tokens for r in rows),
        longest_value=max(r.longest_value for r in rows),
        needs_response_share=sum(r.needs_response_values for r in rows) / count,
        avg_constraints=sum(r.constraints for r in rows) / count,
    )


def _sorted_counts(counter: Counter[Any]) -> dict[Any, int]:
    return {key: counter[key] for key in sorted(counter)}


class StatsTally:
    """Statistics summed up from samples' figures and rejects given in input order: the order
    fixes every sum (floating point) and tie, so figures measured anywhere (one process or many)
    give the same statistics, byte for byte."""

    def __init__(self) -> None:
        self.by_domain: dict[str, list[_Measured]] = {}
        self.all_rows: list[_Measured] = []
        self.difficulties: Counter[str] = Counter()
        self.depths: Counter[int] = Counter()
        self.dependencies: Counter[int] = Counter()
        self.reject_reasons: Counter[str] = Counter()
        self.labels: Counter[str] = Counter()
        self.constraint_kinds: Counter[str] = Counter()
        self.with_constraints = 0
        self.sequence_lengths: Counter[int] = Counter()
        self.nested_calls: Counter[int] = Counter()
        self.by_domain_difficulty: dict[str, Counter[str]] = {}  # CallNavi's easy/medium/hard per domain
        self.by_domain_label: dict[str, Counter[str]] = {}

    def add_reject(self, reason: str) -> None:
        self.reject_reasons[reason] += 1

    def add(self, figures: SampleFigures) -> None:
        self.all_rows.append(figures.measured)
        self.by_domain.setdefault(figures.domain, []).append(figures.measured)
        self.difficulties[figures.difficulty] += 1
        self.depths[figures.nesting_depth] += 1
        self.dependencies[figures.n_dependencies] += 1
        self.constraint_kinds.update(figures.constraint_kinds)
        self.with_constraints += bool(figures.constraint_kinds)
        self.sequence_lengths[figures.n_calls] += 1
        self.nested_calls[figures.n_nested_calls] += 1
        self.by_domain_difficulty.setdefault(figures.domain, Counter())[CALLNAVI_DIFFICULTY[figures.difficulty]] += 1
        if figures.published_label is not None:
            self.labels[figures.published_label] += 1
            self.by_domain_label.setdefault(figures.domain, Counter())[figures.published_label] += 1

    def result(self) -> DatasetStats:
        rows = [_domain_row(domain, self.by_domain[domain]) for domain in sorted(self.by_domain)]
        histogram = Counter(context_bucket(row.context_tokens) for row in self.all_rows)
        return DatasetStats(
            samples=len(self.all_rows),
            rejected=sum(self.reject_reasons.values()),
            reject_reasons=dict(self.reject_reasons.most_common()),
            domains=rows + [_domain_row(OVERALL, self.all_rows)],
            # Every derived class is listed, even at 0, so tables from different datasets line up.
            difficulty={level.value: self.difficulties[level.value] for level in Difficulty},
            published_difficulty={label: self.labels[label] for label in sorted(self.labels, key=_label_sort_key)},
            nesting_depth=_sorted_counts(self.depths),
            dependencies=_sorted_counts(self.dependencies),
            sequence_length=_sorted_counts(self.sequence_lengths),
            nested_calls=_sorted_counts(self.nested_calls),
            difficulty_by_domain={domain: {level: counts[level] for level in CALLNAVI_LEVELS}
                                  for domain, counts in sorted(self.by_domain_difficulty.items())},
            published_difficulty_by_domain={domain: {label: counts[label] for label in sorted(self.labels, key=_label_sort_key)}
                                            for domain, counts in sorted(self.by_domain_label.items())},
            context_histogram={label: histogram[label] for label in BUCKET_LABELS},
            long_context_share=(sum(row.context_tokens > LONG_CONTEXT for row in self.all_rows) / len(self.all_rows)
                                if self.all_rows else 0.0),
            constraint_kinds={kind: self.constraint_kinds[kind] for kind in CONSTRAINT_KINDS},
            queries_with_constraints=self.with_constraints,
        )


def compute_stats(items: Iterable[Sample | Rejected]) -> DatasetStats:
    """Statistics over what a reader yielded: samples are measured, rejects counted by reason."""
    tally = StatsTally()
    for item in items:
        if isinstance(item, Rejected):
            tally.add_reject(item.reason)
        else:
            tally.add(sample_figures(item))
    return tally.result()


# ------------------------------------------------------------------------ one table for every output
# `stats`, the dataset card and the QA report print the same table: ComplexFuncBench's Table 3
# columns first, then what makes the samples hard.
TABLE_COLUMNS = ("domain", "samples", "avg steps", "avg calls", f"avg context tokens ({ENCODING})",
                 "max context tokens", "longest value (chars)", "args from responses", "constraints / query")


def table_rows(stats: DatasetStats) -> list[list[str]]:
    return [[row.domain, f"{row.samples:,}", f"{row.avg_steps:.2f}", f"{row.avg_calls:.2f}",
             f"{row.avg_context_tokens:,.0f}", f"{row.max_context_tokens:,}", f"{row.longest_value:,}",
             f"{row.needs_response_share:.0%}", f"{row.avg_constraints:.2f}"] for row in stats.domains]


def hardness_lines(stats: DatasetStats) -> list[str]:
    """The dataset-wide figures beside the table, one sentence each."""
    kinds = ", ".join(f"{n} {kind.replace('_', ' ')}" for kind, n in stats.constraint_kinds.items())
    return [f"Tokens counted with the {stats.encoding} BPE tokenizer over the context a model sees: messages, "
            f"tool specs and the gold path's responses.",
            f"Samples over {LONG_CONTEXT // 1000}k tokens of context: {stats.long_context_share:.0%}.",
            f"Queries with at least one constraint: {stats.queries_with_constraints} of {stats.samples} "
            f"({kinds}; rule-based detector, fcbench/stats/hardness.py)."]
