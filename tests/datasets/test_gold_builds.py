"""The bundled `travel` and `amadeus` builds, from a clean copy, pass the gold audit with no
violation: every validated sample's values are at the words its provenance names, no audit rule
finds a problem, and the card and the QA report say where the values come from and what the audit
checked. (`travel-full`, minutes to build, is audited by bench/gold_audit.py over its build: 0
false rejects, figures in bench/README.md; its bytes are pinned by the --full build digests.)"""

from __future__ import annotations

import json

import pytest

from build_digests import build, build_dir_of, clean_copy
from fcbench.checks.gold_audit import gold_audit
from fcbench.checks.provenance import check_provenance, recorded_provenance
from fcbench.sample import Sample


# floors under the builds' sizes (travel 27; amadeus 37 since the one-route sampler dropped distractors)
@pytest.mark.parametrize("pipeline,at_least", [("travel", 27), ("amadeus", 35)])
def test_the_bundled_build_has_no_wrong_gold(tmp_path, pipeline, at_least):
    root = clean_copy(tmp_path / "repo")
    build(root, pipeline)
    build_dir = build_dir_of(root, pipeline)
    samples = [Sample.model_validate(json.loads(line)) for line in (build_dir / "validated.jsonl").read_text().splitlines()]
    assert len(samples) >= at_least
    for sample in samples:
        provenance = recorded_provenance(sample)
        assert provenance is not None, sample.id
        assert check_provenance(sample, provenance) == [], sample.id
        assert gold_audit(sample, provenance) == [], sample.id
    summary = json.loads((build_dir / "filter.summary.json").read_text())
    assert summary["gold_audit"]["mode"] == "reject" and summary["gold_audit"]["judge"] is None
    assert summary["provenance"]["samples"] == len(samples) == summary["provenance"]["recorded"]
    kinds = summary["provenance"]["values_by_kind"]
    assert kinds["slot"] > 0 and kinds["reference"] > 0
    if pipeline == "travel":
        assert kinds["derived:date.spelled"] > 0
    assert sum(kinds.values()) == summary["provenance"]["values"] == sum(
        len(call.arguments) for sample in samples for call in sample.all_calls())
    card = (build_dir / "export" / "README.md").read_text()
    assert "### Gold audit" in card and "| source | values |" in card
    report = json.loads((build_dir / "report.json").read_text())
    assert report["gold"]["provenance"]["values_by_kind"] == kinds
    assert "Where the kept values come from" in (build_dir / "report.html").read_text()
