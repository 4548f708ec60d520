"""`evaluate` streams: its memory does not grow with the number of samples (each is read, run and
scored on its own), and the memory ceiling (fcbench.runtime.memory) stops it with exit 1, replacing no
output. Against the local mock server over real HTTP."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

from typer.testing import CliRunner

from fcbench.cli import app
from fcbench.config import LLMConfig
from fcbench.evaluate.runner import evaluate
from fcbench.formats import read_samples, write_samples
from fcbench.llm.mock_server import MockLLMServer
from fcbench.runtime.memory import resident_mb
from fcbench.sample import Sample

REPO = Path(__file__).resolve().parents[3]
EXAMPLE = REPO / "datasets" / "complexfuncbench-example" / "trips.jsonl"
PADDING = 400_000  # characters of recorded response per sample: a long-context sample
runner = CliRunner()


def _example() -> list[Sample]:
    return [item for item in read_samples(EXAMPLE, "complexfuncbench") if isinstance(item, Sample)]


def _long_samples(count: int) -> list[Sample]:
    """`count` distinct samples, each carrying PADDING characters in a recorded response."""
    samples = []
    for index in range(count):
        base = _example()[index % 3]
        calls = [list(step) for step in base.calls]
        first = calls[0][0]
        calls[0][0] = first.model_copy(update={"response": {"data": first.response, "notes": f"{index}" * PADDING}})
        samples.append(base.model_copy(update={"id": f"{base.id}-{index}", "calls": calls}))
    return samples


def _final_text(body, call_index):
    return {"content": "Here is what I found."}


def _peak_traced_bytes(tmp_path: Path, count: int, base_url: str) -> int:
    canonical = tmp_path / f"long-{count}.jsonl"
    write_samples(_long_samples(count), canonical, "fcbench")
    config = LLMConfig(model="m", base_url=base_url, max_retries=0, concurrency=2)
    tracemalloc.start()
    try:
        result = evaluate(config, tmp_path / f"build-{count}", input_file=canonical, environ={})
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert result.samples == count and result.scores["n"] == count
    return peak


def test_evaluate_memory_does_not_grow_with_the_number_of_samples(tmp_path):
    with MockLLMServer(responder=_final_text) as server:
        small = _peak_traced_bytes(tmp_path, 6, server.base_url)
        large = _peak_traced_bytes(tmp_path, 30, server.base_url)
    # holding the 24 more samples would take at least 24 x PADDING bytes (9.6 MB); streamed, the
    # peak is a few samples' worth whatever their number
    assert large - small < 24 * PADDING / 4, (small, large)


def _pipelines(root: Path) -> Path:
    path = root / "pipelines.yaml"
    path.write_text("pipelines:\n  bench:\n    dataset_dir: data\n    seed: 1\n"
                    "    llm: {model: generator, concurrency: 2, max_retries: 0}\n", encoding="utf-8")
    return path


def test_the_memory_ceiling_stops_evaluate_with_exit_1_and_replaces_nothing(tmp_path):
    pipelines = _pipelines(tmp_path)
    canonical = tmp_path / "trips.jsonl"
    write_samples(_example(), canonical, "fcbench")
    eval_dir = tmp_path / "data" / "build" / "eval" / "m"

    def run(*extra: str, model: str = "m", ceiling: tuple[str, ...] = ()):
        return runner.invoke(app, [*ceiling, "evaluate", "bench", "--file", str(pipelines), "--model", model,
                                   "--base-url", server.base_url, "--input", str(canonical), "--json", *extra])

    with MockLLMServer(responder=_final_text) as server:
        assert run().exit_code == 0
        before = {path.name: path.read_bytes() for path in eval_dir.iterdir() if path.suffix != ".sqlite"}
        assert set(before) == {"trajectories.jsonl", "scores.json", "evaluate.rejects.jsonl", "complexfuncbench_result.jsonl"}
        # this test process may be smaller than the lowest ceiling allowed: make it surely larger
        ballast = b"\x01" * (max(0, 300 - int(resident_mb())) * 2**20)
        low = ("--memory-ceiling-mb", "256")
        stopped = run("--limit", "1", ceiling=low)  # finished, it would rewrite every file with one sample
        fresh = run(model="other", ceiling=low)
        del ballast
        assert stopped.exit_code == 1 and "over the memory ceiling of 256 MB" in stopped.stderr
        assert stopped.stderr.startswith("error: evaluate m") and "no output replaced" in stopped.stderr
        assert {path.name: path.read_bytes() for path in eval_dir.iterdir() if path.suffix != ".sqlite"} == before
        assert fresh.exit_code == 1 and not (eval_dir.parent / "other").exists()  # nothing left behind either
        again = run("--limit", "1")  # the default ceiling lets it finish, and that does replace them
    assert again.exit_code == 0
    assert (eval_dir / "trajectories.jsonl").read_bytes() != before["trajectories.jsonl"]
    assert len((eval_dir / "trajectories.jsonl").read_text().splitlines()) == 1
