"""Dataset statistics (pure, over samples): the tables benchmark papers publish.

Per domain: samples, average steps and calls (ComplexFuncBench, Table 3), with an overall row;
the derived difficulty split (none/single/multiple/nested); the published difficulty labels where a
format carries one (CallNavi easy/medium/hard); and the nesting-depth and dependency-count
distributions (NESTful's analysis). Items a reader rejected are counted, never left out.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Iterable

from fcbench.formats import Rejected
from fcbench.sample import Difficulty, PathShape, Sample, path_shape

OVERALL = "all"
CROSS_DOMAIN = "cross-domain"  # a sample spanning several domains (ComplexFuncBench's "Cross")
NO_DOMAIN = "(none)"
# Published labels are shown easiest first; labels outside this list follow alphabetically.
_LABEL_ORDER = ["easy", "medium", "hard"]


@dataclass(frozen=True)
class DomainRow:
    domain: str
    samples: int
    avg_steps: float
    avg_calls: float

    def as_dict(self) -> dict[str, Any]:
        return {"domain": self.domain, "samples": self.samples,
                "avg_steps": round(self.avg_steps, 4), "avg_calls": round(self.avg_calls, 4)}


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
        }


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


def _domain_row(domain: str, shapes: list[PathShape]) -> DomainRow:
    count = len(shapes)
    return DomainRow(
        domain=domain,
        samples=count,
        avg_steps=sum(s.n_steps for s in shapes) / count if count else 0.0,
        avg_calls=sum(s.n_calls for s in shapes) / count if count else 0.0,
    )


def _sorted_counts(counter: Counter[Any]) -> dict[Any, int]:
    return {key: counter[key] for key in sorted(counter)}


def compute_stats(items: Iterable[Sample | Rejected]) -> DatasetStats:
    """Statistics over what a reader yielded: samples are measured, rejects counted by reason."""
    shapes_by_domain: dict[str, list[PathShape]] = {}
    all_shapes: list[PathShape] = []
    reject_reasons: Counter[str] = Counter()
    labels: Counter[str] = Counter()
    for item in items:
        if isinstance(item, Rejected):
            reject_reasons[item.reason] += 1
            continue
        shape = path_shape(item)
        all_shapes.append(shape)
        shapes_by_domain.setdefault(domain_key(item), []).append(shape)
        label = published_difficulty(item)
        if label is not None:
            labels[label] += 1
    derived = Counter(shape.difficulty.value for shape in all_shapes)
    rows = [_domain_row(domain, shapes_by_domain[domain]) for domain in sorted(shapes_by_domain)]
    return DatasetStats(
        samples=len(all_shapes),
        rejected=sum(reject_reasons.values()),
        reject_reasons=dict(reject_reasons.most_common()),
        domains=rows + [_domain_row(OVERALL, all_shapes)],
        # Every derived class is listed, even at 0, so tables from different datasets line up.
        difficulty={level.value: derived[level.value] for level in Difficulty},
        published_difficulty={label: labels[label] for label in sorted(labels, key=_label_sort_key)},
        nesting_depth=_sorted_counts(Counter(shape.nesting_depth for shape in all_shapes)),
        dependencies=_sorted_counts(Counter(shape.n_dependencies for shape in all_shapes)),
    )
