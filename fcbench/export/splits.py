"""Which split a sample belongs to (pure): by seeded ratio, by domain, or by template.

Ratio and template splits hash (seed, key) to a point in [0, 1) and walk the cumulative ratios,
so a sample's split depends only on its own key and the seed: adding or removing other samples
never moves it, and the same seed always gives the same assignment. Template splits hash the
template's id (`provenance.parent_id`, or the sample's own id for a template itself) so all the
variants of one template land in the same split: a model never trains on a rewrite of a test item.
"""

from __future__ import annotations

import hashlib
import re
from typing import Literal, Mapping

from fcbench.sample import Sample
from fcbench.stats.tables import domain_key

SplitRule = Literal["ratio", "domain", "template"]

# Hugging Face split names are word characters, optionally dotted (`datasets.splits` enforces it).
SPLIT_NAME_PATTERN = re.compile(r"^\w+(\.\w+)*$")
_NOT_WORD = re.compile(r"\W+")
_HASH_SCALE = float(1 << 64)


def is_valid_split_name(name: str) -> bool:
    return bool(SPLIT_NAME_PATTERN.match(name))


def unit_hash(seed: int, key: str) -> float:
    """A stable point in [0, 1) for (seed, key); sha256 rather than `hash()`, which Python salts
    per process, so the assignment is the same on every machine and every run."""
    digest = hashlib.sha256(f"{seed}\x00{key}".encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") / _HASH_SCALE


def split_for_key(key: str, seed: int, ratios: Mapping[str, float]) -> str:
    """The split whose cumulative-ratio interval holds the key's hash point (declared order)."""
    if not ratios:
        raise ValueError("no split ratios given")
    point = unit_hash(seed, key)
    cumulative = 0.0
    last_nonzero = None
    for name, ratio in ratios.items():
        if ratio <= 0:
            continue
        last_nonzero = name
        cumulative += ratio
        if point < cumulative:
            return name
    if last_nonzero is None:
        raise ValueError("every split ratio is 0")
    return last_nonzero  # ratios summing to 1 - epsilon: the rounding gap goes to the last split


def template_key(sample: Sample) -> str:
    """The template a sample was generated from; a template (no parent) is its own group."""
    return sample.provenance.parent_id or sample.id


def domain_split_name(sample: Sample) -> str:
    """The sample's domain as a valid split name (`cross-domain` -> `cross_domain`, no domain ->
    `none`), since Hugging Face refuses split names with dashes or spaces."""
    cleaned = _NOT_WORD.sub("_", domain_key(sample)).strip("_")
    return cleaned or "none"


def assign_split(sample: Sample, rule: SplitRule, seed: int, ratios: Mapping[str, float]) -> str:
    if rule == "ratio":
        return split_for_key(sample.id, seed, ratios)
    if rule == "template":
        return split_for_key(template_key(sample), seed, ratios)
    if rule == "domain":
        return domain_split_name(sample)
    raise ValueError(f"unknown split rule {rule!r}")
