"""`build-dataset run amadeus --offline` from a clean copy of the repository: no Prism, no network,
every call answered from the committed recorded store; the export holds nested multi-step samples
over the published Amadeus shapes."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[3]
TRACKED = ["pyproject.toml", "pipelines.yaml", "label_config", "datasets/amadeus"]


def clean_copy(target: Path) -> Path:
    """The files git tracks for the pipeline (nothing built), as a fresh clone has them."""
    listed = subprocess.run(["git", "-C", str(REPO), "ls-files", *TRACKED], capture_output=True, text=True, check=True)
    for name in listed.stdout.split():
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / name, target / name)
    return target


def test_run_amadeus_offline_from_a_clean_copy(tmp_path):
    root = clean_copy(tmp_path / "clone")
    assert not (root / "datasets" / "amadeus" / "build").exists()
    result = subprocess.run([sys.executable, "-c", "from fcbench.cli import app; app()", "run", "amadeus", "--offline",
                             "--json"], cwd=root, capture_output=True, text=True, timeout=600,
                            env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "NO_PROXY": "*",
                                 "HTTP_PROXY": "http://127.0.0.1:9", "HTTPS_PROXY": "http://127.0.0.1:9"})
    assert result.returncode == 0, result.stderr[-2000:]
    run = json.loads(result.stdout)
    # stage1 replayed from the store drafts exactly what the annotators saw in Label Studio
    from annotate.tasks.single import content_hash

    drafts = {json.loads(line)["id"]: json.loads(line) for line in
              (root / "datasets" / "amadeus" / "build" / "drafts.jsonl").read_text().splitlines()}
    export = json.loads((root / "datasets" / "amadeus" / "annotations" / "stage2_export.json").read_text())
    for draft in drafts.values():  # stage1 writes the phrase file's path relative to the repository it runs from
        draft["provenance"]["prompt_file"] = "datasets/amadeus/phrases.txt"
    assert all(content_hash(drafts[task["data"]["sample_id"]]) == task["data"]["draft_hash"] for task in export)
    assert run["stages"]["stage2"]["counts"]["gold"] >= 10  # the annotators' work, from the bundled export
    assert run["stages"]["filter"]["counts"]["passed"] >= 20 and not run["stages"]["filter"]["reasons"]
    rows = pd.read_parquet(root / "datasets" / "amadeus" / "build" / "export" / "data")
    assert len(rows) == run["stages"]["export"]["exported"]
    samples = [json.loads(line) for line in
               (root / "datasets" / "amadeus" / "build" / "export" / "fcbench" / "test.jsonl").read_text().splitlines()]
    assert all(sample["difficulty"] == "nested" and len(sample["calls"]) >= 2 for sample in samples)
    domains = {d for sample in samples for d in ([sample["domain"]] if isinstance(sample["domain"], str) else sample["domain"])}
    assert {"flights", "hotels", "activities"} <= domains
    references = {ref for sample in samples for step in sample["calls"] for call in step
                  for ref in re.findall(r"\$var_\d+\.[^$]+\$", json.dumps(call["arguments"]))}
    # links read through nested lists and objects of the real answers
    assert any(re.search(r"\.data\[\d\]\.geoCode\.latitude\$", ref) for ref in references)
    assert any(re.search(r"\.data\[\d\]\.id\$", ref) for ref in references)  # a location, a point of interest
    assert any(re.search(r"\.data\[\d\]\.offers\[\d\]\.id\$", ref) for ref in references)  # an offer priced
    assert any(re.search(r"\.data\[\d\]\.hotelId\$", ref) for ref in references)
    hotel_lists = [call["arguments"]["hotelIds"] for sample in samples for step in sample["calls"] for call in step
                   if call["name"] in ("getMultiHotelOffers", "getSentimentsByHotelIds")]
    assert hotel_lists and all(isinstance(value, list) for value in hotel_lists)  # a list parameter fed one id
    for sample in samples:  # every response is a recorded Amadeus example shape
        for step in sample["calls"]:
            for call in step:
                assert isinstance(call["response"], dict) and ("data" in call["response"] or "meta" in call["response"])


def test_a_call_missing_from_the_store_is_a_not_recorded_reject_and_the_rest_pass(tmp_path):
    root = clean_copy(tmp_path / "clone")
    store_path = root / "datasets" / "amadeus" / "recorded.json"
    store = json.loads(store_path.read_text())
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    command = [sys.executable, "-c", "from fcbench.cli import app; app()"]
    first = subprocess.run([*command, "run", "amadeus", "--offline", "--json"], cwd=root, capture_output=True, text=True,
                           timeout=600, env=env)
    assert first.returncode == 0, first.stderr[-2000:]
    passed = json.loads(first.stdout)["stages"]["filter"]["counts"]["passed"]
    activity_calls = [call for call in store["calls"] if call["name"] == "GETActivity"]
    store["calls"] = [call for call in store["calls"] if call["name"] != "GETActivity"]  # never recorded
    store_path.write_text(json.dumps(store))
    again = subprocess.run([*command, "filter", "amadeus", "--json"], cwd=root, capture_output=True, text=True,
                           timeout=600, env=env)
    assert again.returncode == 0, again.stderr[-2000:]
    summary = json.loads(again.stdout)
    assert activity_calls and summary["reasons"] == {"execution.not_recorded": summary["counts"]["failed_execution"]}
    assert 0 < summary["counts"]["failed_execution"] < passed
    assert summary["counts"]["passed"] + summary["counts"]["failed_execution"] == passed
    rejects = (root / "datasets" / "amadeus" / "build" / "validated.rejects.jsonl").read_text()
    assert "GETActivity" in rejects
