"""Constraint picks end to end on the travel world: stage1's graph sampler phrases "the cheapest ..."
for an entry only the responses decide, and stage3's variants read the entry the constraint picks in
their own responses (moved references), or are rejected when it picks none."""

from __future__ import annotations

import shutil
from pathlib import Path

from fcbench.config import load_pipelines
from fcbench.checks.constraints import parse_path, pick_problems
from fcbench.jsonl import write_json_lines
from fcbench.references import iter_references
from fcbench.sample import sample_to_dict
from generate.stage1.single import run_stage1
from generate.stage3.single import run_stage3

REPO = Path(__file__).resolve().parents[2]
TRAVEL = REPO / "datasets" / "travel"


def _pipeline(tmp_path: Path):
    dataset = tmp_path / "travel-picks"
    dataset.mkdir()
    shutil.copy(REPO / "datasets" / "travel-full" / "pick_rules.json", dataset / "pick_rules.json")
    (tmp_path / "pipelines.yaml").write_text(
        "pipelines:\n  picks:\n"
        f"    dataset_dir: {dataset}\n    seed: 5\n"
        f"    tools: {TRAVEL / 'tools.json'}\n"
        f"    environment: {{kind: python, module: {TRAVEL / 'tools.py'}, workers: 1}}\n"
        "    stages:\n"
        "      stage1: {offline: true, queries: 12, tool_subset_sizes: [4], max_steps: 6}\n"
        f"      stage3: {{variants: 3, fill: slots, value_pools: {TRAVEL / 'value_pools.json'}}}\n"
        "      filter: {grounding: reject}\n", encoding="utf-8")
    return load_pipelines(tmp_path / "pipelines.yaml").get_pipeline("picks")


def _read_index(sample, record) -> set[int]:
    reader = next(call for call in sample.all_calls() if call.label == record["reader"])
    cut = len(parse_path(record["list"]))
    return {ref.path[cut] for ref in iter_references(reader.arguments) if ref.label == record["source"]}


def test_constraints_are_phrased_kept_unique_and_followed_by_the_variants(tmp_path):
    pipeline = _pipeline(tmp_path)
    drafts = run_stage1(pipeline, offline=True).drafts
    picked = [draft for draft in drafts if draft.meta.get("picks")]
    assert picked, "the sampler never used a pick rule"
    for draft in picked:
        assert pick_problems(draft) == []
        for record in draft.meta["picks"]:
            assert record["text"] in draft.messages[-1]["content"]
    templates = tmp_path / "templates.jsonl"
    write_json_lines(templates, (sample_to_dict(draft) for draft in picked))
    result = run_stage3(pipeline, offline=True, from_file=templates)
    with_picks = [candidate for candidate in result.candidates if candidate.meta.get("picks")]
    assert with_picks
    assert all(pick_problems(candidate) == [] for candidate in with_picks)
    by_id = {draft.id: draft for draft in picked}
    moved = [c for c in with_picks for record in c.meta["picks"]
             if _read_index(c, record) != _read_index(by_id[c.provenance.parent_id], record)]
    assert moved, "no variant needed another entry than its template: the re-pointing was never exercised"
