"""The README's path for your own API (issue 27): the scaffold names the export `run` reads and
`stage2 pull --save-export` writes; stage1 says which value-pool slots stop chains (on Blockfrost's
real description); stage3 says why it kept nothing; the filter refuses an empty input."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

from typer.testing import CliRunner

from filter_cases import write_pipeline
from fcbench.catalog.openapi import import_openapi
from fcbench.cli import app
from fcbench.config import load_pipelines
from fcbench.pipeline.scaffold import scaffold_dataset, value_pools
from generate.slots import load_value_pools, value_pools_from_dict
from generate.stage1.graph_sampler import build_feed_graph, pool_advice
from generate.stage3.single import nothing_kept_advice

REPO = Path(__file__).resolve().parents[3]
BLOCKFROST = REPO / "datasets" / "blockfrost" / "blockfrost.yaml"
AMADEUS_EXPORT = REPO / "datasets" / "amadeus" / "annotations" / "stage2_export.json"


def test_the_scaffold_names_the_export_run_reads(tmp_path):
    pipelines = tmp_path / "pipelines.yaml"
    pipelines.write_text((REPO / "pipelines.yaml").read_text())
    scaffold_dataset("bf", [BLOCKFROST], pipelines, auth_env="BF_TOKEN")
    pipeline = load_pipelines(pipelines).get_pipeline("bf")
    assert pipeline.stages.stage2.export_file == "datasets/bf/annotations/stage2_export.json.gz"
    # before anyone annotated, `run` says which command writes that file
    from fcbench.errors import UserError
    from fcbench.stage import annotation_export, existing_file

    try:
        existing_file(annotation_export(pipeline), "after stage2 push and the annotators' work, "
                      "`build-dataset stage2 pull NAME --save-export FILE` saves the server's export there")
    except UserError as exc:
        assert "stage2_export.json.gz" in str(exc) and "--save-export" in str(exc)
    else:
        raise AssertionError("a missing export must be a UserError")


def test_save_export_keeps_the_same_tasks_gzipped_without_a_time_stamp(tmp_path):
    from annotate.exchange.export_stream import ExportTasks
    from annotate.stage2.senior import keep_export

    kept = tmp_path / "a" / "stage2_export.json.gz"
    keep_export(AMADEUS_EXPORT, kept)
    again = tmp_path / "b" / "stage2_export.json.gz"
    keep_export(AMADEUS_EXPORT, again)
    assert kept.read_bytes() == again.read_bytes()  # no time stamp: the same bytes each time
    assert json.loads(gzip.decompress(kept.read_bytes())) == json.loads(AMADEUS_EXPORT.read_text())
    assert len(list(ExportTasks(kept))) == len(json.loads(AMADEUS_EXPORT.read_text()))


def test_stage1_names_the_slots_that_stop_blockfrost_chains():
    tools = import_openapi([BLOCKFROST]).tools
    pools = value_pools_from_dict(value_pools(tools))
    advice = pool_advice(build_feed_graph(tools, pools), pools, "datasets/bf/value_pools.json")
    hashes = next(line for line in advice if line.startswith("slot 'hash' "))
    assert "get_txs_by_hash.hash" in hashes and "datasets/bf/value_pools.json" in hashes and "used_by" in hashes
    assert any("can be on no path" in line and "IPFS_path" in line for line in advice)
    # with the slot gone, transactions are read from an earlier answer: no advice about it
    data = value_pools(tools)
    del data["slots"]["hash"]
    relieved = value_pools_from_dict(data)
    assert not any(line.startswith("slot 'hash' ") for line in pool_advice(build_feed_graph(tools, relieved), relieved, "x"))


def test_stage3_says_why_nothing_was_kept_when_slots_have_one_value():
    pools = load_value_pools(REPO / "datasets" / "amadeus" / "value_pools.json")
    summary = {"counts": {"templates": 4, "candidates": 0, "rejected": 12},
               "reasons": {"stage3.duplicate_query": 9, "stage3.duplicate_arguments": 3}}
    advice = nothing_kept_advice(summary, pools, "datasets/amadeus/value_pools.json")
    assert len(advice) == 1 and "have one value" in advice[0] and "countryCode" in advice[0]
    assert nothing_kept_advice({**summary, "counts": {"candidates": 2}}, pools, "x") == []  # something kept
    other = {**summary, "reasons": {"execution.http_error": 12}}
    assert nothing_kept_advice(other, pools, "x") == []  # not a matter of slot values


def test_the_filter_refuses_an_empty_input(tmp_path):
    pipelines = write_pipeline(tmp_path, [])
    result = CliRunner().invoke(app, ["filter", "toy", "--file", str(pipelines)])
    assert result.exit_code == 1
    assert "the filter's input is empty" in result.stderr and "Traceback" not in result.output
    assert not (tmp_path / "toy" / "build" / "validated.jsonl").exists()
