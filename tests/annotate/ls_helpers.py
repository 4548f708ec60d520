"""Helpers shared by the Label Studio stage tests (plain functions; fixtures are in conftest.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fcbench.config import PipelineConfig, load_pipelines
from fcbench.sample import Call, Sample

REPO = Path(__file__).resolve().parents[2]
TRAVEL = REPO / "datasets" / "travel"
DATES = {"arrival_date": "2025-03-01", "departure_date": "2025-03-03"}


def call(label: str, name: str, **arguments: Any) -> Call:
    return Call(label=label, name=name, arguments=arguments)


def draft_paths() -> dict[str, tuple[str, list[list[Call]]]]:
    """id -> (query, path) of the test drafts: one of each path shape, and one with a wrong value."""
    return {
        "hotels-paris": ("Find me a hotel in Paris from 2025-03-01 to 2025-03-03.", [
            [call("var_1", "Search_Hotel_Destination", query="Paris")],
            [call("var_2", "Search_Hotels", dest_id="$var_1.data[0].dest_id$",
                  search_type="$var_1.data[0].search_type$", **DATES)],
        ]),
        "airports-sydney": ("Which airports serve Sydney?", [
            [call("var_1", "Search_Flight_Location", query="Sydney")],
        ]),
        "two-cities": ("Look up the flight locations of Sydney and Tokyo.", [
            [call("var_1", "Search_Flight_Location", query="Sydney"),
             call("var_2", "Search_Flight_Location", query="Tokyo")],
        ]),
        "hotels-rome-wrong": ("Find a hotel in Rome from 2025-03-01 to 2025-03-03.", [
            [call("var_1", "Search_Hotel_Destination", query="Paris")],  # the draft's error: Paris, not Rome
            [call("var_2", "Search_Hotels", dest_id="$var_1.data[0].dest_id$",
                  search_type="$var_1.data[0].search_type$", **DATES)],
        ]),
    }


def write_pipeline(tmp_path: Path, name: str = "annot", with_environment: bool = True) -> PipelineConfig:
    """A pipelines.yaml of its own (absolute paths) whose dataset_dir is under tmp_path."""
    environment = (f"    environment:\n      kind: python\n      module: {TRAVEL / 'tools.py'}\n      timeout_s: 5\n"
                   f"      workers: 1\n" if with_environment else "")
    text = (f"pipelines:\n  {name}:\n    dataset_dir: {tmp_path / 'dataset'}\n    seed: 3\n"
            f"    tools: {TRAVEL / 'tools.json'}\n{environment}"
            f"    stages:\n      stage2:\n        select: 10\n        project_title: {name} stage2 {tmp_path.name}\n")
    path = tmp_path / "pipelines.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return load_pipelines(path).get_pipeline(name)


def write_drafts(pipeline: PipelineConfig, samples: list[Sample]) -> Path:
    from fcbench.jsonl import write_json_lines
    from fcbench.sample import sample_to_dict

    path = pipeline.build_dir / "drafts.jsonl"
    write_json_lines(path, [sample_to_dict(sample.model_copy(deep=True)) for sample in samples])
    return path


def read_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


