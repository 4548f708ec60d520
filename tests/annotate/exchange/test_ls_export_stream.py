"""Label Studio exports read as a stream, drafts read back by offset, and a push that streams its
tasks in imports bounded by bytes (the 1,000 long-response task size: bench/studio_long.py)."""

from __future__ import annotations

import gzip
import io
import json
from typing import Any, Iterator

import pytest

from annotate.studio.label_configs import SENIOR
from annotate.exchange.export_stream import ExportTasks, iter_json_array
from annotate.exchange.push import list_tasks, push_tasks
from annotate.tasks.select import select_drafts, select_summaries
from annotate.stage2.senior import index_drafts
from annotate.tasks.single import senior_task
from fcbench.errors import UserError
from fcbench.sample import sample_to_dict
from ls_fixtures import drafts, studio, travel_environment, travel_tools  # noqa: F401 (pytest fixtures)
from ls_helpers import write_drafts, write_pipeline

TASKS = [{"id": 1, "data": {"text": "é\n" * 40, "n": [1, 2.5, None, True]}, "annotations": []},
         {"id": 2, "data": {"nested": {"deep": ["x" * 300]}}, "annotations": [{"result": []}]},
         {"id": 3, "data": {}}, 12345, "text"]


@pytest.mark.parametrize("indent", [None, 2])
@pytest.mark.parametrize("chunk", [1, 7, 64, 1 << 20])
def test_items_come_out_whole_whatever_the_chunk_boundaries(indent, chunk) -> None:
    text = json.dumps(TASKS, indent=indent, ensure_ascii=False)
    assert list(iter_json_array(io.StringIO(text), chunk)) == TASKS
    assert list(iter_json_array(io.StringIO(" [ ] "), chunk)) == []


def test_an_export_file_is_read_again_gzipped_or_not(tmp_path) -> None:
    plain, packed = tmp_path / "export.json", tmp_path / "export.json.gz"
    plain.write_text(json.dumps(TASKS, indent=1), encoding="utf-8")
    packed.write_bytes(gzip.compress(plain.read_bytes()))
    for path in (plain, packed):
        tasks = ExportTasks(path)
        assert list(tasks) == TASKS and list(tasks) == TASKS  # a second pass reads the file again


def test_a_broken_export_names_its_line_and_a_non_list_is_refused_when_opened(tmp_path) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('[\n{"id": 1},\n{"id": 2,}\n]', encoding="utf-8")
    tasks = ExportTasks(broken)
    with pytest.raises(UserError, match=r"broken.json: not a Label Studio JSON export \(.* at line 3\)"):
        list(tasks)
    single = tmp_path / "single.json"
    single.write_text('{"id": 1}', encoding="utf-8")
    with pytest.raises(UserError, match=r"expected a list of tasks"):
        ExportTasks(single)
    no_ids = tmp_path / "no_ids.json"
    no_ids.write_text('[{"data": {}}]', encoding="utf-8")
    with pytest.raises(UserError, match=r"no task has an 'id'"):
        list(ExportTasks(no_ids))


def test_the_drafts_index_selects_and_loads_what_the_drafts_list_does(drafts, tmp_path) -> None:
    pipeline = write_pipeline(tmp_path)
    samples = list(drafts.values())
    path = write_drafts(pipeline, samples)
    index = index_drafts(path, "test drafts")
    assert index.longest == max(len(sample.all_calls()) for sample in samples)
    picked = select_summaries(index.summaries, 3)
    assert [summary.id for summary in picked] == [sample.id for sample in select_drafts(samples, 3)]
    assert ([sample_to_dict(index.load(summary)) for summary in picked]
            == [sample_to_dict(sample) for sample in select_drafts(samples, 3)])


def test_a_push_streams_its_tasks_into_imports_bounded_by_bytes(studio, drafts, tmp_path) -> None:
    tasks = [senior_task(sample) for sample in drafts.values()]
    largest = max(len(json.dumps(task, ensure_ascii=False).encode("utf-8")) for task in tasks)
    sent: list[list[str]] = []
    real_import = studio.client.projects.import_tasks

    def counted_import(**kwargs: Any) -> Any:
        sent.append([task["data"]["sample_id"] for task in kwargs["request"]])
        return real_import(**kwargs)

    def stream() -> Iterator[dict[str, Any]]:  # read once: a push never needs the tasks as a list
        yield from tasks

    studio.client.projects.import_tasks = counted_import
    try:
        summary = push_tasks(studio.connection, studio.client, f"stream {tmp_path.name}", SENIOR, stream(), "draft",
                             batch_bytes=largest)
    finally:
        studio.client.projects.import_tasks = real_import
    ids = [task["data"]["sample_id"] for task in tasks]
    assert summary.counts["create"] == len(tasks) and sent == [[sample_id] for sample_id in ids]  # one task a request
    pushed = sorted(list_tasks(studio.client, summary.project_id, keep_data=False, page_size=2), key=lambda t: t.id)
    assert [task.sample_id for task in pushed] == ids and all(task.data == {} for task in pushed)
    again = push_tasks(studio.connection, studio.client, f"stream {tmp_path.name}", SENIOR, stream(), "draft")
    assert again.counts["skip"] == len(tasks) and again.counts["create"] == 0
