"""`stage2 pull --from-export` on the bundled Label Studio export of annotated travel drafts.

datasets/travel/annotations/stage2_export.json is a real snapshot export (Label Studio 1.23.2) of
six stage2 tasks made from datasets/travel drafts and annotated through the API by two senior
annotators (datasets/travel/annotate_stage2.py): one accepted by both, one query rewritten, one
argument added with four ambiguous entries deleted, one with broken path JSON, one skipped, one not
annotated yet. No server is needed to pull it. Task and user ids are the server's own.
"""

from __future__ import annotations

import json

from typer.testing import CliRunner

from annotate.stage2.senior import Stage2Files, run_stage2_pull
from fcbench.cli import app
from fcbench.config import load_pipelines
from ls_helpers import REPO, read_lines, write_pipeline

EXPORT = REPO / "datasets" / "travel" / "annotations" / "stage2_export.json"


def test_bundled_export_pulls_into_checked_templates(tmp_path) -> None:
    pipeline = write_pipeline(tmp_path, name="travel")
    report = run_stage2_pull(pipeline, from_export=EXPORT)
    assert report.counts == {"tasks": 6, "gold": 3, "rejected": 1, "cancelled": 1, "pending": 1,
                             "templates_written": 3, "kept_from_previous_pull": 0}
    assert report.reasons == {"bad_json": 1, "cancelled": 1}
    assert report.failures[0]["id"] == "travel-draft-0002"
    assert report.failures[0]["problems"] == [
        "the path JSON is not valid JSON: Expecting property name enclosed in double quotes at line 3 column 76"]
    files = Stage2Files.in_dir(pipeline.build_dir)
    templates = {row["id"]: row for row in read_lines(files.templates)}
    in_task_order = [task["data"]["sample_id"] for task in sorted(json.loads(EXPORT.read_text()), key=lambda t: t["id"])]
    assert list(templates) == [sid for sid in in_task_order if sid in {"travel-draft-0013", "travel-draft-0009",
                                                                       "travel-draft-0030"}]  # in task order
    taxi = templates["travel-draft-0013"]
    assert taxi["messages"][-1]["content"].startswith("Find taxi offers from Central Park to LaGuardia")
    rooms = templates["travel-draft-0030"]
    assert rooms["calls"][2][0]["arguments"]["currency_code"] == "GBP"
    assert rooms["calls"][2][0]["response"]["data"]["currency"] == "GBP"  # executed by the travel tools
    assert [entry["dest_id"] for entry in rooms["calls"][0][0]["response"]["data"]] == ["-2004001"]
    assert rooms["meta"]["label_studio"]["notes"] == "Rooms in GBP like the hotels (drafted so); only the city matches 'Paris'."
    exported = {task["data"]["sample_id"]: task for task in json.loads(EXPORT.read_text())}
    assert rooms["provenance"]["stage"] == "stage2" \
        and rooms["provenance"]["label_studio_task_id"] == exported["travel-draft-0030"]["id"]
    qa = json.loads(files.qa.read_text())
    assert qa["summary"]["queries_rewritten"] == 1 and qa["summary"]["entries_deleted"] == 4
    assert qa["summary"]["samples_by_error_type"]["ambiguous_response"] == 1
    # the warnings vs what disambiguation removed: the Paris destinations deleted made dest_id and
    # search_type unambiguous, and those are exactly the two warnings (the rooms' hotel is "the second")
    warnings = qa["summary"]["ambiguity_warnings"]
    assert {key: warnings[key] for key in ("warnings", "true_warnings", "ambiguities", "recalled")} == \
        {"warnings": 2, "true_warnings": 2, "ambiguities": 2, "recalled": 2}
    assert warnings["precision"] == 1.0 and warnings["recall"] == 1.0
    rooms_qa = next(row for row in qa["samples"] if row["id"] == "travel-draft-0030")
    assert rooms_qa["ambiguity_warnings"] == ["var_2.dest_id", "var_2.search_type"]
    assert rooms_qa["ambiguities_removed"] == [{"key": "var_2.dest_id", "reason": "4 entries of var_1.data deleted"},
                                               {"key": "var_2.search_type", "reason": "4 entries of var_1.data deleted"}]
    seniors = [f"user {annotation['completed_by']}" for annotation in reversed(exported["travel-draft-0009"]["annotations"])]
    assert len(set(seniors)) == 2
    assert qa["agreements"] == [{"label_studio_task_id": exported["travel-draft-0009"]["id"], "id": "travel-draft-0009",
                                 "annotators": seniors, "call_agreement": 1.0, "exact_path": True, "same_query": True}]
    rejects = read_lines(files.rejects)
    assert [(row["id"], row["reason"]) for row in rejects] == [("travel-draft-0002", "bad_json"),
                                                              ("travel-draft-0019", "cancelled")]


def test_bundled_export_through_the_cli(tmp_path) -> None:
    write_pipeline(tmp_path, name="travel")
    result = CliRunner().invoke(app, ["stage2", "pull", "travel", "--file", str(tmp_path / "pipelines.yaml"),
                                      "--from-export", str(EXPORT), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["counts"]["gold"] == 3 and report["source"] == str(EXPORT)


def test_a_file_that_is_not_an_export_is_one_clear_error(tmp_path) -> None:
    write_pipeline(tmp_path, name="travel")
    bad = tmp_path / "tasks.json"
    bad.write_text('{"tasks": []}')
    result = CliRunner().invoke(app, ["stage2", "pull", "travel", "--file", str(tmp_path / "pipelines.yaml"),
                                      "--from-export", str(bad)])
    assert result.exit_code == 1
    assert result.stderr.strip() == f"error: {bad}: not a Label Studio JSON export (expected a list of tasks)"


def test_malformed_tasks_in_an_export_are_rejected_by_id_and_the_good_ones_kept(tmp_path) -> None:
    """Issue: one malformed task crashed `stage2 pull` (AttributeError) or had the export refused whole."""
    tasks = json.loads(EXPORT.read_text())
    broken = [dict(tasks[0], id=99990, annotations="not a list"), {"id": 99991}, dict(tasks[1], id=99992, data="x"),
              "not a task"]
    export = tmp_path / "export.json"
    export.write_text(json.dumps(tasks + broken))
    pipeline = write_pipeline(tmp_path, name="travel")
    report = run_stage2_pull(pipeline, from_export=export)
    assert report.counts["gold"] == 3  # as from the export without the broken tasks
    assert report.reasons["malformed_task"] == 4
    rejects = read_lines(Stage2Files.in_dir(pipeline.build_dir).rejects)
    malformed = [row for row in rejects if row["reason"] == "malformed_task"]
    assert [row["label_studio_task_id"] for row in malformed] == [99990, 99991, 99992, -10]
    assert "entry 10 of the export is malformed" in malformed[-1]["problems"][0]["message"]


def test_annotations_of_other_drafts_are_refused_as_stale_unless_allowed(tmp_path) -> None:
    """Issue: a run whose stage1 drafted with the LLM still took 3 templates from the bundled export,
    whose annotations belong to other drafts."""
    from annotate.tasks.single import draft_of
    from fcbench.sample import sample_to_dict

    pipeline = write_pipeline(tmp_path, name="travel")
    drafts = Stage2Files.in_dir(pipeline.build_dir).drafts
    drafts.parent.mkdir(parents=True, exist_ok=True)
    # the drafts the export's tasks were made from, then another stage1 run's version of them
    from annotate.exchange.shared import annotation_catalog

    catalog = annotation_catalog(pipeline)  # the tasks carry the catalog's tools by hash
    lines = [sample_to_dict(draft_of(task["data"], catalog)) for task in json.loads(EXPORT.read_text())]
    for line in lines:
        if line["id"] == "travel-draft-0013":
            line["messages"][-1]["content"] += " (asked again by another stage1 run)"
    drafts.write_text("".join(json.dumps(line) + "\n" for line in lines if line["id"] != "travel-draft-0030"))
    report = run_stage2_pull(pipeline, from_export=EXPORT)
    assert report.counts["gold"] == 1 and report.reasons["stale_draft"] == 2
    stale = {row["id"]: row["problems"][0] for row in read_lines(Stage2Files.in_dir(pipeline.build_dir).rejects)
             if row["reason"] == "stale_draft"}
    assert set(stale) == {"travel-draft-0013", "travel-draft-0030"}
    assert report.counts == {**report.counts, "templates_written": 1}
    allowed = run_stage2_pull(pipeline, from_export=EXPORT, allow_stale=True)
    assert allowed.counts["gold"] == 3


def _amadeus_pipeline(tmp_path):
    """The amadeus pipeline answering from its recorded responses, built in tmp_path."""
    file = tmp_path / "pipelines.yaml"
    file.write_text(f"pipelines:\n  amadeus:\n    dataset_dir: {tmp_path / 'dataset'}\n    seed: 1\n"
                    f"    tools: {REPO / 'datasets/amadeus/tools.json'}\n    environment:\n      kind: http\n"
                    f"      responses: {REPO / 'datasets/amadeus/recorded.json'}\n", encoding="utf-8")
    return load_pipelines(file).get_pipeline("amadeus")


def test_the_amadeus_export_raises_no_warning_on_drafts_accepted_without_disambiguation(tmp_path) -> None:
    """Issue 15: the old panel raised 2-11 warnings on each amadeus draft although every pick is
    named in the query ("the second location", "the first hotel in MAD"); the annotators deleted
    no entry, and neither the push nor the pull raises one."""
    pipeline = _amadeus_pipeline(tmp_path)
    export = REPO / "datasets" / "amadeus" / "annotations" / "stage2_export.json"
    shown_at_push = sum(len(task["data"]["ambiguity"]) for task in json.loads(export.read_text()))
    report = run_stage2_pull(pipeline, from_export=export)
    assert report.counts["gold"] == 16
    warnings = json.loads(Stage2Files.in_dir(pipeline.build_dir).qa.read_text())["summary"]["ambiguity_warnings"]
    assert shown_at_push == 0  # what the export's tasks carried, made by the current rule
    assert (warnings["samples"], warnings["warnings"], warnings["ambiguities"]) == (16, 0, 0)
    assert warnings["precision"] is None and warnings["recall"] is None  # nothing raised, nothing to find


def test_tasks_carrying_tools_by_catalog_hash_are_checked_for_staleness_too(tmp_path) -> None:
    """The amadeus tasks carry their tools as hashes into the pipeline's catalog: the stale-draft
    check must unpack them with that catalog (it used to give up and let every annotation through)."""
    from annotate.exchange.shared import annotation_catalog
    from annotate.tasks.single import draft_of
    from fcbench.sample import sample_to_dict

    pipeline = _amadeus_pipeline(tmp_path)
    export = REPO / "datasets" / "amadeus" / "annotations" / "stage2_export.json"
    tasks = json.loads(export.read_text())
    catalog = annotation_catalog(pipeline)
    lines = [sample_to_dict(draft_of(task["data"], catalog)) for task in tasks]
    changed = lines[1]["id"]
    lines[1]["messages"][-1]["content"] += " (asked again by another stage1 run)"
    drafts = Stage2Files.in_dir(pipeline.build_dir).drafts
    drafts.parent.mkdir(parents=True, exist_ok=True)
    drafts.write_text("".join(json.dumps(line) + "\n" for line in lines))
    report = run_stage2_pull(pipeline, from_export=export)
    assert report.reasons.get("stale_draft") == 1 and report.counts["gold"] == 15
    stale = [row for row in read_lines(Stage2Files.in_dir(pipeline.build_dir).rejects) if row["reason"] == "stale_draft"]
    assert [row["id"] for row in stale] == [changed]
