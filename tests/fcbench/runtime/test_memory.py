"""Every stage's memory ceiling: a stage whose resident memory passes it stops with exit 1 and
replaces no output (fcbench.runtime.memory, checked by fcbench.runtime.progress.StageProgress as items are counted)."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from fcbench.cli import app
from fcbench.runtime.memory import MemoryCeilingExceeded, resident_mb, set_memory_ceiling
from fcbench.runtime.progress import StageProgress
from filter_cases import one_of_each_failure, write_pipeline

runner = CliRunner()


def test_resident_memory_is_measured_for_real():
    before = resident_mb()
    ballast = b"\x01" * (64 * 2**20)  # written pages: they are resident
    assert resident_mb() >= before + 60
    del ballast


def test_progress_stops_a_stage_over_the_ceiling_and_names_where_it_was():
    set_memory_ceiling(int(resident_mb()) + 10_000)
    with StageProgress("stage3 templates", 40) as progress:
        progress.advance(5)  # well under: goes on
    set_memory_ceiling(int(resident_mb()) // 2)
    with pytest.raises(MemoryCeilingExceeded) as stopped:
        with StageProgress("stage3 templates", 40) as progress:
            progress.advance(5)
    message = str(stopped.value)
    assert message.startswith("stage3 templates: ") and "after 5 of 40 items" in message
    assert "memory_ceiling_mb" in message and "no output replaced" in message


def test_the_cli_ceiling_stops_the_filter_and_keeps_its_previous_output(tmp_path):
    pipelines = write_pipeline(tmp_path, one_of_each_failure()[:2])
    assert runner.invoke(app, ["filter", "toy", "--file", str(pipelines)]).exit_code == 0
    validated = tmp_path / "toy" / "build" / "validated.jsonl"
    good = validated.read_bytes()
    # this test process may be smaller than the lowest ceiling allowed: make it surely larger
    one = tmp_path / "one.jsonl"
    one.write_text(good.decode().splitlines()[0] + "\n")  # with --force this would replace the two samples
    ballast = b"\x01" * (max(0, 300 - int(resident_mb())) * 2**20)
    result = runner.invoke(app, ["--memory-ceiling-mb", "256", "filter", "toy", "--file", str(pipelines),
                                 "--input", str(one), "--force"])
    del ballast
    assert result.exit_code == 1 and "over the memory ceiling of 256 MB" in result.stderr
    assert validated.read_bytes() == good  # a stopped stage replaces nothing
    again = runner.invoke(app, ["filter", "toy", "--file", str(pipelines), "--input", str(one), "--force"])
    assert again.exit_code == 0 and len(validated.read_text().splitlines()) == 1  # the default ceiling lets it finish


def test_a_ceiling_out_of_bounds_is_refused_with_its_line(tmp_path):
    pipelines = tmp_path / "pipelines.yaml"
    pipelines.write_text("pipelines:\n  toy:\n    dataset_dir: toy\n    memory_ceiling_mb: 100\n")
    result = runner.invoke(app, ["pipelines", "--file", str(pipelines)])
    assert result.exit_code == 1 and "pipelines.yaml:4" in result.stderr and "memory_ceiling_mb" in result.stderr
    refused = runner.invoke(app, ["--memory-ceiling-mb", "10", "pipelines", "--file", str(pipelines)])
    assert refused.exit_code == 2  # a usage error, before anything runs
