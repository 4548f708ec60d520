"""Export: Parquet splits in Hugging Face layout read back by `datasets` and pandas with the declared
features, rows decoding to the very samples exported, byte-identical output per seed, template
groups never crossing splits, size-bounded shards, the dataset card, the copies in other formats,
and bad input lines going to the rejects with their reason."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
import yaml
from typer.testing import CliRunner

from conftest import REPO, read_all
from fcbench.cli import app
from fcbench.config import ExportConfig
from fcbench.export.card import features_yaml, read_front_matter
from fcbench.errors import UserError
from fcbench.export.single import ExportPaths, ExportSettings, export_samples
from fcbench.formats.parquet_rows import PARQUET_SCHEMA, row_to_sample, sample_to_row
from fcbench.formats import FormatOptions, read_samples, write_samples
from fcbench.jsonl import dumps_line
from fcbench.sample import Provenance, Sample, sample_to_dict
from fcbench.checks.validate import validate_record

SEEDS = REPO / "datasets" / "nestful-math" / "seeds.jsonl"
TRIPS = REPO / "datasets" / "complexfuncbench-example" / "trips.jsonl"
# What `build-dataset filter nestful-math` writes (build/ is not in git, so the test writes it).
FILTER_SUMMARY = {
    "input": "datasets/nestful-math/seeds.jsonl", "total": 86,
    "counts": {"passed": 84, "failed_format": 0, "failed_grounding": 0, "failed_execution": 1,
               "failed_reproduction": 1},
    "reasons": {"execution_error": 1, "answer_mismatch": 1}, "grounding_reported": 56,
    "outputs": {"validated": "build/validated.jsonl", "rejects": "build/validated.rejects.jsonl"},
}
RATIOS = {"train": 0.5, "test": 0.5}


@pytest.fixture(autouse=True)
def hf_offline(monkeypatch):
    """No network: `datasets` must never try the Hub (env for a first import, config if imported)."""
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    import datasets.config

    monkeypatch.setattr(datasets.config, "HF_DATASETS_OFFLINE", True)
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)


@pytest.fixture(scope="module")
def seeds() -> list[Sample]:
    return read_all(SEEDS, "fcbench")


@pytest.fixture(scope="module")
def trips() -> list[Sample]:
    return read_all(TRIPS, "complexfuncbench")


@pytest.fixture
def validated(tmp_path: Path, seeds: list[Sample], trips: list[Sample]) -> Path:
    """The 84 NESTful math samples and the 3 ComplexFuncBench trips as one validated file."""
    path = tmp_path / "input" / "validated.jsonl"
    path.parent.mkdir()
    write_samples(seeds + trips, path, "fcbench")
    return path


def _export(source: Path, build: Path, seed: int = 13, **config) -> dict:
    settings = ExportSettings(name="nestful-math", config=ExportConfig(**{"ratios": RATIOS, **config}), seed=seed,
                              description="Nested arithmetic.", license="Apache-2.0")
    export_samples(source, ExportPaths(build), settings)
    return json.loads((build / "export.summary.json").read_text(encoding="utf-8"))


def _card(build: Path) -> dict:
    return read_front_matter((build / "export" / "README.md").read_text(encoding="utf-8"))


def _parquet_rows(build: Path, split: str) -> list[dict]:
    rows = []
    for path in sorted((build / "export" / "data").glob(f"{split}-*.parquet")):
        rows += pq.read_table(path).to_pylist()
    return rows


def _all_files(folder: Path) -> dict[str, bytes]:
    return {str(path.relative_to(folder)): path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file()}


# ------------------------------------------------------------------------------------ rows (pure)
def test_every_real_sample_survives_sample_to_row_to_sample(seeds, trips):
    for sample in seeds + trips:
        row = sample_to_row(sample)
        back = row_to_sample(row)
        assert sample_to_dict(back) == sample_to_dict(sample)
        assert json.loads(row["calls"]) == sample_to_dict(sample)["calls"]
        assert row["difficulty"] == sample_to_dict(sample)["difficulty"]
        assert validate_record(sample_to_dict(back)) == []
    first = sample_to_row(seeds[0])
    assert first["id"] == "a5ae1249-7f33-4d40-8ad1-914a0623e3bd"
    assert first["domain"] == ["math"]
    assert first["difficulty"] == "nested"
    assert first["answer"] is not None and first["turns"] is None  # answer set, turns never set


def test_the_typed_columns_normalise_but_exact_fields_restores_the_original():
    base = {"id": "x", "messages": [{"role": "user", "content": "hi"}], "tools": [], "calls": []}
    cases = [
        {**base, "domain": ["bank"]},  # a one-element list, not the string "bank"
        {**base, "domain": None, "dialog_acts": None},  # explicit nulls, not absent fields
        {**base, "domain": ["bank", "travel"], "dialog_acts": ["inform"], "answer": None},
        {**base, "domain": "bank"},
    ]
    for case in cases:
        sample = Sample.model_validate(case)
        row = sample_to_row(sample)
        assert sample_to_dict(row_to_sample(row)) == sample_to_dict(sample)
    assert sample_to_row(Sample.model_validate(cases[0]))["exact_fields"] == '{"domain":["bank"]}'
    assert sample_to_row(Sample.model_validate(cases[3]))["exact_fields"] is None
    answered_null = sample_to_row(Sample.model_validate(cases[2]))
    assert answered_null["answer"] == "null"  # "the answer is null" is not "no answer recorded"


# --------------------------------------------------------------------------- read back: datasets, pandas
def test_export_reads_back_with_datasets_and_the_card_features(validated, tmp_path, seeds, trips):
    from datasets import Features, load_dataset

    build = tmp_path / "build"
    summary = _export(validated, build)
    assert summary["counts"] == {"exported": 87, "rejected": 0}
    card = _card(build)
    data_files = {entry["split"]: str(build / "export" / entry["path"])
                  for entry in card["configs"][0]["data_files"]}
    loaded = load_dataset("parquet", data_files=data_files, cache_dir=str(tmp_path / "hf-cache"))
    declared = Features._from_yaml_list(card["dataset_info"]["features"])
    originals = {s.id: sample_to_dict(s) for s in seeds + trips}
    seen = 0
    for split, dataset in loaded.items():
        assert dataset.features == declared
        assert dataset.num_rows == summary["splits"][split]["rows"]
        for row in dataset:
            record = sample_to_dict(row_to_sample(row))
            assert record == originals[record["id"]]
            assert validate_record(record) == []
            seen += 1
    assert seen == 87
    assert {s["name"]: s["num_examples"] for s in card["dataset_info"]["splits"]} == {
        split: info["rows"] for split, info in summary["splits"].items()}


def test_the_export_folder_loads_as_a_hugging_face_dataset_through_its_card(validated, tmp_path, caplog):
    """`load_dataset(<folder>)` reads README.md's configs and dataset_info, as the Hub does."""
    import datasets.utils.logging
    from datasets import load_dataset

    build = tmp_path / "build"
    summary = _export(validated, build)
    datasets.utils.logging.enable_propagation()
    try:
        loaded = load_dataset(str(build / "export"), cache_dir=str(tmp_path / "hf-cache"))
    finally:
        datasets.utils.logging.disable_propagation()
    assert {split: data.num_rows for split, data in loaded.items()} == {
        split: info["rows"] for split, info in summary["splits"].items()}
    # `datasets` warns "Ignoring part of dataset_info from the dataset card" on a malformed card.
    assert not [r for r in caplog.records if "dataset_info" in r.getMessage()]
    card_splits = {s["name"]: s for s in _card(build)["dataset_info"]["splits"]}
    for split, data in loaded.items():
        assert data.info.splits[split].num_examples == card_splits[split]["num_examples"]
        # our Arrow size, counted per batch, is within a few padding bytes of the one datasets counts
        assert abs(data.info.splits[split].num_bytes - card_splits[split]["num_bytes"]) < 1_000
    assert sample_to_dict(row_to_sample(loaded["test"][0]))["id"] == _parquet_rows(build, "test")[0]["id"]


def test_export_reads_back_with_pandas(validated, tmp_path, seeds, trips):
    build = tmp_path / "build"
    summary = _export(validated, build)
    originals = {s.id: sample_to_dict(s) for s in seeds + trips}
    decoded = 0
    for info in summary["splits"].values():
        frame = pd.concat([pd.read_parquet(build / "export" / name) for name in info["files"]], ignore_index=True)
        assert len(frame) == info["rows"]
        assert list(frame.columns) == PARQUET_SCHEMA.names
        assert str(frame["n_calls"].dtype) == "int32"
        for record in frame.to_dict(orient="records"):
            assert sample_to_dict(row_to_sample(record)) == originals[record["id"]]
            decoded += 1
    assert decoded == 87
    cross = pd.read_parquet(build / "export" / "data")
    trip_row = cross[cross["id"] == "Cross-12"].iloc[0]
    assert list(trip_row["domain"]) == ["Cross"]
    assert (trip_row["n_steps"], trip_row["n_calls"]) == (4, 5)
    assert json.loads(trip_row["calls"])[0][0]["name"] == "Search_Flight_Location"


# ------------------------------------------------------------------------------------------- determinism
def test_same_input_and_seed_give_byte_identical_files(validated, tmp_path):
    first, second = tmp_path / "one", tmp_path / "two"
    _export(validated, first, formats=["parquet", "nestful", "bfcl"])
    _export(validated, second, formats=["parquet", "nestful", "bfcl"])
    files = _all_files(first / "export")
    assert files == _all_files(second / "export")
    assert "data/train-00000-of-00001.parquet" in files and "README.md" in files
    # Re-running into the same build folder replaces the export with the same bytes.
    _export(validated, first, formats=["parquet", "nestful", "bfcl"])
    assert _all_files(first / "export") == files
    assert b"created_by" not in files["README.md"]
    metadata = pq.read_metadata(first / "export" / "data" / "test-00000-of-00001.parquet").metadata
    assert set(metadata) == {b"ARROW:schema"}  # no timestamp or host in the key-value metadata


def test_a_different_seed_gives_a_different_ratio_split(validated, tmp_path):
    a = _export(validated, tmp_path / "a", seed=13)
    b = _export(validated, tmp_path / "b", seed=99)
    ids_a = {row["id"] for row in _parquet_rows(tmp_path / "a", "test")}
    ids_b = {row["id"] for row in _parquet_rows(tmp_path / "b", "test")}
    assert ids_a != ids_b
    assert a["splits"]["train"]["rows"] + a["splits"]["test"]["rows"] == 87
    assert b["splits"]["train"]["rows"] + b["splits"]["test"]["rows"] == 87


# ------------------------------------------------------------------------------------- template split
def test_template_split_never_puts_variants_of_one_template_in_two_splits(tmp_path, seeds):
    samples = []
    for template in seeds:
        samples.append(template)
        for k in range(3):
            variant = template.model_copy(deep=True)
            variant.id = f"{template.id}-v{k}"
            variant.provenance = Provenance(stage="stage3", parent_id=template.id, model="gpt-4o-mini",
                                            prompt_file="generate/prompts/rewrite.txt", prompt_hash="ab" * 32,
                                            annotator=f"junior{k}", seed=13)
            samples.append(variant)
    source = tmp_path / "validated.jsonl"
    write_samples(samples, source, "fcbench")
    summary = _export(source, tmp_path / "build", split="template")
    split_of_template: dict[str, set[str]] = defaultdict(set)
    for split in ("train", "test"):
        for row in _parquet_rows(tmp_path / "build", split):
            split_of_template[row["parent_id"] or row["id"]].add(split)
    assert len(split_of_template) == 84
    assert all(len(splits) == 1 for splits in split_of_template.values())
    assert summary["splits"]["train"]["rows"] % 4 == 0 and summary["splits"]["test"]["rows"] % 4 == 0
    card = (tmp_path / "build" / "export" / "README.md").read_text(encoding="utf-8")
    assert "| gpt-4o-mini | 252 |" in card
    assert "| `generate/prompts/rewrite.txt (abababababab)` | 252 |" in card  # not a plain word: literal
    assert "- Annotators: 3 distinct, 252 samples annotated" in card
    assert "- Templates: 84; variants generated from a template: 252." in card
    # the card's statistics: Table 3 columns and what makes samples hard, with the tokenizer named
    assert "| domain | samples | avg steps | avg calls | avg context tokens (cl100k_base) |" in card
    assert "| context tokens (cl100k_base) | samples |" in card
    assert "Tokens counted with the cl100k_base BPE tokenizer" in card


def test_domain_split_gives_one_loadable_split_per_domain(validated, tmp_path):
    from datasets import load_dataset

    build = tmp_path / "build"
    summary = _export(validated, build, split="domain")
    assert {split: info["rows"] for split, info in summary["splits"].items()} == {
        "Car_Rental": 1, "Cross": 1, "Hotels": 1, "math": 84}
    card = _card(build)
    data_files = {e["split"]: str(build / "export" / e["path"]) for e in card["configs"][0]["data_files"]}
    loaded = load_dataset("parquet", data_files=data_files, cache_dir=str(tmp_path / "hf-cache"))
    assert loaded["Car_Rental"][0]["id"] == "Car-Rental-3"
    assert "One split per domain" in (build / "export" / "README.md").read_text()


# ------------------------------------------------------------------------------------------- shards
def test_a_small_shard_size_gives_several_shards_with_one_schema(validated, tmp_path, seeds, trips):
    summary = _export(validated, tmp_path / "build", ratios={"test": 1.0}, shard_bytes=60_000)
    files = summary["splits"]["test"]["files"]
    count = len(files)
    assert count >= 3
    assert files == [f"data/test-{i:05d}-of-{count:05d}.parquet" for i in range(count)]
    on_disk = sorted(p.name for p in (tmp_path / "build" / "export" / "data").iterdir())
    assert on_disk == [Path(f).name for f in files]  # no partial file left behind
    ids = []
    for name in files:
        schema = pq.read_schema(tmp_path / "build" / "export" / name)
        assert schema.remove_metadata().equals(PARQUET_SCHEMA)
        ids += pq.read_table(tmp_path / "build" / "export" / name, columns=["id"]).column("id").to_pylist()
    assert ids == [s.id for s in seeds + trips]  # input order, split across shards
    card = _card(tmp_path / "build")
    assert card["configs"][0]["data_files"] == [{"split": "test", "path": "data/test-*"}]


def test_shard_rows_also_bounds_a_shard(validated, tmp_path):
    summary = _export(validated, tmp_path / "build", ratios={"test": 1.0}, shard_rows=10)
    assert summary["splits"]["test"]["shards"] == 9  # 87 rows, 10 a shard
    last = tmp_path / "build" / "export" / "data" / "test-00008-of-00009.parquet"
    assert pq.read_metadata(last).num_rows == 7


def test_rerun_with_fewer_shards_leaves_no_stale_shard(validated, tmp_path):
    _export(validated, tmp_path / "build", ratios={"test": 1.0}, shard_rows=10)
    _export(validated, tmp_path / "build", ratios={"test": 1.0})
    assert [p.name for p in (tmp_path / "build" / "export" / "data").iterdir()] == ["test-00000-of-00001.parquet"]


# --------------------------------------------------------------------------------------------- card
def test_card_front_matter_parses_and_matches_the_parquet_schema(validated, tmp_path):
    from datasets import Features

    build = tmp_path / "build"
    build.mkdir()
    (build / "filter.summary.json").write_text(json.dumps(FILTER_SUMMARY), encoding="utf-8")
    (build / "stage3.summary.json").write_text("{broken", encoding="utf-8")  # skipped, not fatal
    _export(validated, build)
    text = (build / "export" / "README.md").read_text(encoding="utf-8")
    assert text.startswith("---\n")
    card = yaml.safe_load(text.split("---\n")[1])
    schema = pq.read_schema(build / "export" / "data" / "train-00000-of-00001.parquet")
    assert card["dataset_info"]["features"] == features_yaml(schema)
    assert card["dataset_info"]["features"] == Features.from_arrow_schema(schema)._to_yaml_list()
    assert card["license"] == "apache-2.0"
    assert card["size_categories"] == ["n<1K"]
    assert card["task_categories"] == ["text-generation"]
    assert "function-calling" in card["tags"]
    assert [entry["split"] for entry in card["configs"][0]["data_files"]] == ["train", "test"]
    # Construction, statistics and limitations come from the run's own records.
    assert "| filter | 86 | passed 84, failed format 0, failed grounding 0, failed execution 1, " \
           "failed reproduction 1 |" in text
    assert "| stage3 |" not in text
    assert "| answer_mismatch | 1 |" in text and "| execution_error | 1 |" in text
    assert "| nestful | 84 |" in text and "| complexfuncbench | 3 |" in text
    assert "| math | 84 | 4.99 | 4.99 |" in text
    assert "| nested | " in text
    assert "56 samples kept by the filter have argument values not found" in text


# ------------------------------------------------------------------------------------ other formats
def test_copies_in_other_formats_are_written_with_counted_warnings(tmp_path, seeds):
    source = tmp_path / "validated.jsonl"
    write_samples(seeds, source, "fcbench")
    formats = ["parquet", "fcbench", "nestful", "bfcl", "callnavi", "complexfuncbench", "confetti"]
    summary = _export(source, tmp_path / "build", ratios={"test": 1.0}, formats=formats)
    export = tmp_path / "build" / "export"
    assert set(summary["formats"]) == set(formats) - {"parquet"}
    assert summary["formats"]["bfcl"]["files"] == ["bfcl/possible_answer/test.json", "bfcl/test.json"]
    assert summary["formats"]["callnavi"]["files"] == ["callnavi/APISchema/test.json", "callnavi/Questions/test.json"]
    assert "bfcl/test: 84 samples whose answer was not written (BFCL has no final answer)" in summary["warnings"]
    assert "callnavi/test: CallNavi cannot store a final answer: 84 answers dropped" in summary["warnings"]
    assert summary["formats"]["fcbench"]["warnings"] == [] and summary["formats"]["nestful"]["warnings"] == []
    # NESTful and canonical copies hold everything: read back, they are the exported samples.
    originals = [sample_to_dict(s) for s in seeds]
    assert [sample_to_dict(s) for s in read_all(export / "fcbench" / "test.jsonl", "fcbench")] == originals
    assert (export / "fcbench" / "test.jsonl").read_bytes() == source.read_bytes()  # what the canonical writer writes
    nestful_copy = [sample_to_dict(s) for s in read_all(export / "nestful" / "test.jsonl", "nestful")]
    for record in nestful_copy + originals:
        record["provenance"].pop("source_file")  # the reader records the file it read
    assert nestful_copy == originals
    bfcl_copy = list(read_samples(export / "bfcl" / "test.json", "bfcl",
                                  FormatOptions(answers=export / "bfcl" / "possible_answer" / "test.json")))
    assert len(bfcl_copy) == 84 and all(isinstance(s, Sample) and s.calls for s in bfcl_copy)
    assert "CallNavi cannot store a final answer: 84 answers dropped" in (export / "README.md").read_text()


def test_an_unknown_format_is_a_user_error(validated, tmp_path):
    with pytest.raises(UserError, match="unknown format 'csv'"):
        _export(validated, tmp_path / "build", formats=["parquet", "csv"])


# -------------------------------------------------------------------------------------------- rejects
def test_bad_lines_go_to_the_export_rejects_with_their_reason(tmp_path, seeds):
    lines = [dumps_line(sample_to_dict(s)) for s in seeds[:10]]
    lines.insert(3, '{"id": "broken", "messages": [')
    lines.insert(5, json.dumps({"id": "no-messages", "tools": [], "calls": []}))
    lines.append(lines[0])  # the first sample again
    source = tmp_path / "validated.jsonl"
    source.write_text("\n".join(lines) + "\n", encoding="utf-8")
    summary = _export(source, tmp_path / "build", ratios={"test": 1.0})
    assert summary["total"] == 13
    assert summary["counts"] == {"exported": 10, "rejected": 3}
    assert summary["reasons"] == {"not_json": 1, "invalid_sample": 1, "duplicate_id": 1}
    rejects = [json.loads(line) for line in (tmp_path / "build" / "export.rejects.jsonl").read_text().splitlines()]
    assert [(r["id"], r["reason"], r["source"]) for r in rejects] == [
        (None, "not_json", f"{source}:4"),
        ("no-messages", "invalid_sample", f"{source}:6"),
        (seeds[0].id, "duplicate_id", f"{source}:13"),
    ]
    assert rejects[1]["detail"] == "messages: Field required"
    card = (tmp_path / "build" / "export" / "README.md").read_text()
    assert "| duplicate_id | 1 |" in card


def test_nothing_exportable_is_a_user_error_with_the_rejects_kept(tmp_path):
    source = tmp_path / "validated.jsonl"
    source.write_text("not json\n", encoding="utf-8")
    from fcbench.jsonl import bad_line_policy

    with bad_line_policy(1.0), pytest.raises(UserError, match="no sample could be exported"):
        _export(source, tmp_path / "build")  # (the default policy refuses a file of only bad lines whole)
    assert json.loads((tmp_path / "build" / "export.rejects.jsonl").read_text())["reason"] == "not_json"
    assert not (tmp_path / "build" / "export").exists()


# ------------------------------------------------------------------------------------------------ CLI
def _pipelines_file(tmp_path: Path, formats: str = "[parquet, nestful]") -> Path:
    path = tmp_path / "pipelines.yaml"
    path.write_text(f"""pipelines:
  math:
    dataset_dir: ds
    seed: 13
    license: Apache-2.0
    stages:
      export:
        split: ratio
        ratios: {{train: 0.5, test: 0.5}}
        formats: {formats}
""", encoding="utf-8")
    return path


def test_cli_export_prints_the_summary_as_json(tmp_path, seeds):
    pipelines = _pipelines_file(tmp_path)
    write_samples(seeds, tmp_path / "ds" / "build" / "validated.jsonl", "fcbench")
    result = CliRunner().invoke(app, ["export", "math", "--file", str(pipelines), "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["counts"] == {"exported": 84, "rejected": 0}
    assert (tmp_path / "ds" / "build" / "export" / "nestful" / "train.jsonl").is_file()
    assert summary == json.loads((tmp_path / "ds" / "build" / "export.summary.json").read_text())


def test_cli_export_without_validated_file_is_one_line_error(tmp_path):
    pipelines = _pipelines_file(tmp_path)
    result = CliRunner().invoke(app, ["export", "math", "--file", str(pipelines)])
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1 and "validated.jsonl: no such file" in result.stderr


def test_export_folder_is_readable_by_others_not_mkdtemp_private(tmp_path):
    import stat as stat_module

    from fcbench.config import load_pipelines

    pipelines = tmp_path / "pipelines.yaml"
    (tmp_path / "ds" / "build").mkdir(parents=True)
    (tmp_path / "ds" / "build" / "validated.jsonl").write_text((REPO / "datasets" / "nestful-math" / "seeds.jsonl").read_text())
    pipelines.write_text("pipelines:\n  p:\n    dataset_dir: ds\n    seed: 1\n")
    from fcbench.export.single import run_export_stage

    summary = run_export_stage(load_pipelines(pipelines).get_pipeline("p"))
    mode = stat_module.S_IMODE((Path(summary.outputs["export"])).stat().st_mode)
    assert mode & stat_module.S_IROTH and mode & stat_module.S_IXOTH, oct(mode)


def test_the_statistics_workers_end_when_a_killed_export_does(tmp_path):
    """A forked pool worker holds both ends of its task pipe: after a kill -9 of the export it
    would wait for a next task forever (one leftover process per killed export, seen after the
    kill tests). Each worker measuring the card's statistics watches its parent and ends with it."""
    import os
    import signal
    import subprocess
    import sys
    import time

    source = tmp_path / "validated.jsonl"
    seeds = Path(__file__).resolve().parents[3] / "datasets" / "nestful-math" / "seeds.jsonl"
    source.write_text(seeds.read_text())
    script = (
        "import os, signal, sys\n"
        "from pathlib import Path\n"
        "from fcbench.stats.tables import sample_figures\n"
        "from fcbench.stats.validated_file import read_validated_parallel\n"
        "lines = read_validated_parallel(Path(sys.argv[1]), sample_figures, workers=2)\n"
        "next(lines)\n"  # the file is one range: read, the workers are idle now, waiting for more
        "def status(pid):\n"  # a process may end between the listing and the read (a busy machine)
        "    try:\n"
        "        return open(f'/proc/{pid}/status').read()\n"
        "    except OSError:\n"
        "        return ''\n"
        "children = [int(pid) for pid in os.listdir('/proc') if pid.isdigit() and\n"
        "            f'PPid:\\t{os.getpid()}\\n' in status(pid)]\n"
        "Path(sys.argv[2]).write_text(' '.join(map(str, children)))\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n")
    pid_file = tmp_path / "worker.pid"  # (not stdout: a leftover worker would hold that pipe open)
    done = subprocess.run([sys.executable, "-c", script, str(source), str(pid_file)], stdin=subprocess.DEVNULL,
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                          cwd=Path(__file__).resolve().parents[3], timeout=120,
                          env={**os.environ, "FCBENCH_STATS_CACHE": "off"})  # measured for real, in the process
    assert done.returncode == -signal.SIGKILL
    workers = [int(pid) for pid in pid_file.read_text().split()]
    assert len(workers) == 2
    deadline = time.monotonic() + 60
    alive = set(workers)
    while alive and time.monotonic() < deadline:
        for worker in list(alive):
            try:
                os.kill(worker, 0)
            except ProcessLookupError:
                alive.discard(worker)
        time.sleep(0.1)
    for worker in alive:
        os.kill(worker, signal.SIGKILL)
    assert not alive, f"statistics workers {sorted(alive)} outlived their killed export"


def test_an_export_read_on_every_core_is_byte_identical_to_one_read_in_one_process(validated, tmp_path, monkeypatch):
    """Rows, shards, card (its statistics measured, no cache) and copies: the same bytes whether
    worker processes read the file in many ranges or this process reads it alone."""
    from fcbench.stats import validated_file

    monkeypatch.setenv("FCBENCH_STATS_CACHE", "off")
    monkeypatch.setattr(validated_file, "CHUNK_BYTES", 16 * 1024)  # many ranges from 87 samples

    def files(build: Path) -> dict[str, bytes]:
        return {str(path.relative_to(build)): path.read_bytes() for path in sorted(build.rglob("*")) if path.is_file()
                and path.name != "export.summary.json"}

    _export(validated, tmp_path / "parallel", formats=["parquet", "fcbench", "bfcl"])
    monkeypatch.setattr(validated_file, "default_workers", lambda: 1)
    _export(validated, tmp_path / "alone", formats=["parquet", "fcbench", "bfcl"])
    parallel, alone = files(tmp_path / "parallel"), files(tmp_path / "alone")
    assert parallel == alone and any(name.startswith("export/data/") for name in parallel)
    summaries = [json.loads((tmp_path / run / "export.summary.json").read_text()) for run in ("parallel", "alone")]
    for summary in summaries:  # the summaries name their own folders; the rest is the same
        summary.pop("outputs")
    assert summaries[0] == summaries[1]
