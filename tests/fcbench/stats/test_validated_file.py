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
    """Cached or measured in the export's second process, the card's figures are the same."""
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
