"""Split assignment: seeded and stable per id, proportional to the ratios, template groups kept whole,
domain names made valid split names."""

from __future__ import annotations

from collections import Counter

import pytest
from pydantic import ValidationError

from conftest import REPO, read_all
from fcbench.config import ExportConfig
from fcbench.sample import Provenance, Sample
from fcbench.export.splits import (assign_split, domain_split_name, is_valid_split_name, split_for_key, template_key,
                            unit_hash)

SEEDS = REPO / "datasets" / "nestful-math" / "seeds.jsonl"
RATIOS = {"train": 0.5, "test": 0.5}


@pytest.fixture(scope="module")
def seeds() -> list[Sample]:
    return read_all(SEEDS, "fcbench")


def _sample(sample_id: str, domain=None, parent_id: str | None = None) -> Sample:
    return Sample(id=sample_id, domain=domain, messages=[{"role": "user", "content": "q"}], tools=[], calls=[],
                  provenance=Provenance(parent_id=parent_id))


def test_the_hash_point_is_fixed_across_runs_and_machines():
    # sha256-based, not Python's salted hash(): these values hold in every process.
    assert unit_hash(13, "a5ae1249-7f33-4d40-8ad1-914a0623e3bd") == unit_hash(13, "a5ae1249-7f33-4d40-8ad1-914a0623e3bd")
    assert 0.0 <= unit_hash(0, "x") < 1.0
    assert unit_hash(0, "x") != unit_hash(1, "x")


def test_ratio_split_of_the_84_real_samples_depends_on_the_seed(seeds):
    by_seed_13 = [assign_split(s, "ratio", 13, RATIOS) for s in seeds]
    again = [assign_split(s, "ratio", 13, RATIOS) for s in seeds]
    by_seed_14 = [assign_split(s, "ratio", 14, RATIOS) for s in seeds]
    assert by_seed_13 == again
    assert by_seed_13 != by_seed_14
    assert set(by_seed_13) == {"train", "test"}
    moved = sum(a != b for a, b in zip(by_seed_13, by_seed_14))
    assert 20 <= moved <= 64  # about half move when the seed changes


def test_adding_samples_never_moves_the_existing_ones(seeds):
    before = {s.id: assign_split(s, "ratio", 7, RATIOS) for s in seeds[:40]}
    after = {s.id: assign_split(s, "ratio", 7, RATIOS) for s in seeds}
    assert all(after[sample_id] == split for sample_id, split in before.items())


def test_ratios_are_respected_over_many_ids_and_a_zero_ratio_gets_nothing():
    ratios = {"train": 0.8, "validation": 0.0, "test": 0.2}
    counts = Counter(split_for_key(f"item-{i}", 42, ratios) for i in range(20_000))
    assert counts["validation"] == 0
    assert abs(counts["train"] / 20_000 - 0.8) < 0.015
    assert counts["train"] + counts["test"] == 20_000


def test_template_split_keeps_every_variant_with_its_template(seeds):
    samples = []
    for template in seeds:
        samples.append(template)
        samples += [_sample(f"{template.id}-v{k}", parent_id=template.id) for k in range(3)]
    split_of = {s.id: assign_split(s, "template", 5, RATIOS) for s in samples}
    for sample in samples:
        assert split_of[sample.id] == split_of[template_key(sample)]
    assert set(split_of.values()) == {"train", "test"}
    assert template_key(seeds[0]) == seeds[0].id  # a template is its own group


def test_domain_split_names_are_valid_hugging_face_split_names():
    assert assign_split(_sample("a", "math"), "domain", 0, {}) == "math"
    assert domain_split_name(_sample("b", ["hotels", "flights"])) == "cross_domain"
    assert domain_split_name(_sample("c", "car-rental")) == "car_rental"
    assert domain_split_name(_sample("d")) == "none"
    assert domain_split_name(_sample("e", ["bank"])) == "bank"
    for name in ("math", "cross_domain", "train.hard"):
        assert is_valid_split_name(name)
    for name in ("car-rental", "(none)", "", "a b"):
        assert not is_valid_split_name(name)


def test_export_config_refuses_split_names_hugging_face_refuses():
    with pytest.raises(ValidationError, match="split names may hold only"):
        ExportConfig(ratios={"train-set": 1.0})
    with pytest.raises(ValidationError, match="must sum to 1"):
        ExportConfig(split="template", ratios={"train": 0.5, "test": 0.2})
    assert ExportConfig(split="domain", ratios={"test": 0.3}).split == "domain"  # ratios unused by domain


def test_empty_or_all_zero_ratios_are_an_error():
    with pytest.raises(ValueError):
        split_for_key("x", 0, {})
    with pytest.raises(ValueError):
        split_for_key("x", 0, {"test": 0.0})

