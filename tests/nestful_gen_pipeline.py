"""The bundled `nestful-gen` pipeline of pipelines.yaml, rewritten to build into a temporary folder
(shared by tests/generate/stage1/test_from_seeds.py and tests/datasets/test_nestful_gen.py)."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def nestful_gen_pipelines_file(tmp_path: Path, *, queries: int | None = None, llm_url: str | None = None) -> Path:
    text = (REPO / "pipelines.yaml").read_text(encoding="utf-8")
    start = text.index("  nestful-gen:")
    end = text.index("\n\n  ", start)  # the entry ends at the blank line before the next pipeline
    entry = text[start:end]
    entry = (entry.replace("datasets/", f"{REPO}/datasets/")
             .replace(f"dataset_dir: {REPO}/datasets/nestful-gen", f"dataset_dir: {tmp_path}/nestful-gen")
             .replace(f"input: {REPO}/datasets/nestful-gen/build", f"input: {tmp_path}/nestful-gen/build"))
    if queries is not None:
        entry = entry.replace("queries: 60", f"queries: {queries}")
    if llm_url:
        entry = entry.replace("offline: true ", "offline: false").replace(
            "    environment:", f"    llm: {{model: mock-model, base_url: '{llm_url}', seed: 0, max_retries: 0}}\n"
                               "    environment:")
    path = tmp_path / "pipelines.yaml"
    path.write_text("pipelines:\n" + entry + "\n", encoding="utf-8")
    return path
