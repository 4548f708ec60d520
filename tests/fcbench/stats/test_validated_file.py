"""The validated file's statistics are measured once per content: the filter measures what it
writes, and the export's card reads the same figures from the cache (fcbench.stats.validated_file)."""

from __future__ import annotations

import json
from pathlib import Path

from fcbench.stats.validated_file import cached_stats, file_stats, measure_file, stats_from_json, stats_to_json

REPO = Path(__file__).resolve().parents[3]
SEEDS = REPO / "datasets" / "nestful-math" / "seeds.jsonl"


def test_cached_figures_are_the_measured_figures_and_a_changed_file_is_measured_again(tmp_path, monkeypatch):
    monkeypatch.setenv("FCBENCH_STATS_CACHE", str(tmp_path / "cache"))
    source = tmp_path / "validated.jsonl"
    lines = SEEDS.read_text().splitlines()
    source.write_text("\n".join(lines[:30]) + "\nnot json\n")
    assert cached_stats(source) is None  # never measured
    measured = file_stats(source)
    assert measured.samples == 30 and measured.rejected == 1 and measured.nesting_depth  # int-keyed counts
    assert stats_from_json(json.loads(json.dumps(stats_to_json(measured)))) == measured  # exact round trip
    assert cached_stats(source) == measured == measure_file(source)
    assert len(list((tmp_path / "cache").glob("*.json"))) == 1

    source.write_text("\n".join(lines[:20]) + "\n")  # other content: other figures, never the old ones
    assert cached_stats(source) is None
    assert file_stats(source).samples == 20


def test_an_unreadable_cache_entry_is_measured_again_and_off_keeps_nothing(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    monkeypatch.setenv("FCBENCH_STATS_CACHE", str(cache))
    source = tmp_path / "validated.jsonl"
    source.write_text("\n".join(SEEDS.read_text().splitlines()[:10]) + "\n")
    file_stats(source)
    (entry,) = cache.glob("*.json")
    entry.write_text('{"samples": "broken"')
    assert cached_stats(source) is None and file_stats(source).samples == 10
    monkeypatch.setenv("FCBENCH_STATS_CACHE", "off")
    assert cached_stats(source) is None and file_stats(source).samples == 10


def test_the_export_card_reads_the_figures_the_filter_measured(tmp_path, monkeypatch):
    """Cached or measured by the export's workers, the card's figures are the same."""
    from fcbench.config import ExportConfig
    from fcbench.export.single import ExportPaths, ExportSettings, export_samples

    monkeypatch.setenv("FCBENCH_STATS_CACHE", str(tmp_path / "cache"))
    source = tmp_path / "validated.jsonl"
    source.write_text(SEEDS.read_text())
    settings = ExportSettings(name="m", config=ExportConfig(split="template", ratios={"test": 1.0}), seed=1)
    export_samples(source, ExportPaths(tmp_path / "measured"), settings)  # measured beside, then remembered
    cached_card = (tmp_path / "measured" / "export" / "README.md").read_text()
    assert cached_stats(source) is not None
    export_samples(source, ExportPaths(tmp_path / "cached"), settings)  # read from the cache
    assert (tmp_path / "cached" / "export" / "README.md").read_text() == cached_card


def test_figures_measured_on_every_core_are_the_figures_of_one_process_byte_for_byte(tmp_path, monkeypatch):
    """Worker processes read byte ranges of the file and measure their samples; summed up in input
    order, the statistics are those of one process reading line by line: every sample, every
    reject and its reason, every sum. Many ranges, with rejects and repeated ids across them."""
    from conftest import read_all
    from fcbench.formats import Rejected
    from fcbench.jsonl import dumps_line
    from fcbench.stats import validated_file
    from fcbench.stats.tables import compute_stats
    from fcbench.stats.validated_file import read_validated

    monkeypatch.setenv("FCBENCH_STATS_CACHE", "off")
    monkeypatch.setattr(validated_file, "CHUNK_BYTES", 64 * 1024)  # many ranges from a small file
    source = _mixed_file(tmp_path, read_all(REPO / "datasets" / "complexfuncbench-example" / "trips.jsonl",
                                            "complexfuncbench"), dumps_line)
    assert source.stat().st_size > 8 * validated_file.CHUNK_BYTES
    one = compute_stats(Rejected(f"x:{item.line_no}", item.reason) if hasattr(item, "reason") else item
                        for item in read_validated(source))
    parallel = measure_file(source, workers=3)
    alone = measure_file(source, workers=1)
    assert parallel.samples == 6 * 84 + 3 and parallel.reject_reasons == {
        "not_json": 6, "invalid_sample": 6, "duplicate_id": 6}
    for other in (parallel, alone):
        assert json.dumps(stats_to_json(other)) == json.dumps(stats_to_json(one))
    # and every line comes back as read_validated gives it: same numbers, same rejects, same order
    lines = list(validated_file.read_validated_parallel(source, lambda sample: sample.id, workers=3))
    expected = [(item.line_no, item.reason) if hasattr(item, "reason") else item.id for item in read_validated(source)]
    assert [(line.line_no, line.reject.reason) if line.reject else line.made for line in lines] == expected


def _mixed_file(tmp_path, trips, dumps_line):
    seeds = SEEDS.read_text().splitlines()
    lines: list[str] = []
    for copy in range(6):  # six copies of the seeds, with other ids each time
        for line in seeds:
            record = json.loads(line)
            record["id"] = f"{record['id']}-{copy}"
            record["domain"] = ["math", "arithmetic", ["math", "logic"]][copy % 3]
            lines.append(dumps_line(record))
        lines.append("not json")
        lines.append('{"id": "no-messages"}')
        lines.append(lines[-3 - copy])  # a repeated id (its first line came earlier)
        lines.append("")  # a blank line numbers on
    lines += [dumps_line(json.loads(trip.model_dump_json(exclude_unset=True))) for trip in trips]
    source = tmp_path / "validated.jsonl"
    source.write_text("\ufeff" + "\n".join(lines) + "\n", encoding="utf-8")  # a byte-order mark too
    return source


def die_in_a_worker_once(sample):
    """`make` for the test below: the first worker to measure a sample is killed doing it."""
    import os
    import signal

    from fcbench.stats.tables import sample_figures

    marker = Path(os.environ["FCBENCH_TEST_DIE_MARKER"])
    if os.getpid() != int(os.environ["FCBENCH_TEST_READER_PID"]) and not marker.exists():
        marker.write_text("died")
        os.kill(os.getpid(), signal.SIGKILL)
    return sample_figures(sample)


def test_a_worker_that_dies_costs_time_not_figures(tmp_path, monkeypatch):
    """A worker killed mid-task: its range, and every one after, is read by the reader instead;
    the figures do not change."""
    import os

    from fcbench.stats import validated_file
    from fcbench.stats.tables import StatsTally

    monkeypatch.setenv("FCBENCH_STATS_CACHE", "off")
    monkeypatch.setattr(validated_file, "CHUNK_BYTES", 32 * 1024)
    monkeypatch.setenv("FCBENCH_TEST_DIE_MARKER", str(tmp_path / "died"))
    monkeypatch.setenv("FCBENCH_TEST_READER_PID", str(os.getpid()))
    source = tmp_path / "validated.jsonl"
    source.write_text(SEEDS.read_text())
    expected = measure_file(source, workers=1)
    tally = StatsTally()
    for line in validated_file.read_validated_parallel(source, die_in_a_worker_once, workers=2):
        tally.add_reject(line.reject.reason) if line.reject else tally.add(line.made)
    assert (tmp_path / "died").exists()  # a worker was killed
    assert json.dumps(stats_to_json(tally.result())) == json.dumps(stats_to_json(expected))
