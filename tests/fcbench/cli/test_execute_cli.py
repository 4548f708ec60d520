"""`build-dataset execute`: per sample, in input order, did the gold path run and reproduce?"""

from __future__ import annotations

import json

from typer.testing import CliRunner

from conftest import EXTERNAL, REPO
from fcbench.cli import app

MATH_TOOLS = REPO / "datasets" / "nestful-math" / "tools.py"


def test_nestful_predictions_file_math_samples_reproduce_and_code_samples_fail_clearly():
    source = EXTERNAL / "nestful" / "predictions" / "nestful_0-qwen3-8b-8bit.jsonl"
    result = CliRunner().invoke(app, ["execute", str(source), "--from", "nestful", "--tools-module", str(MATH_TOOLS),
                                      "--round-to-gold", "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    ids = [json.loads(line)["sample_id"] for line in source.read_text().splitlines()]
    assert [item["id"] for item in out["items"]] == ids  # input order
    assert set(out["items"][0]) == {"id", "ok", "reproduces", "answer", "error"}
    ran = [item for item in out["items"] if item["ok"]]
    failed = [item for item in out["items"] if not item["ok"]]
    assert len(ran) == 7 and all(item["reproduces"] for item in ran)
    # the 3 code samples need NESTful's py_code_file tools, which the math module does not have
    assert len(failed) == 3 and all("unknown_tool" in item["error"] for item in failed)
    assert out["summary"]["ran"] == 7 and out["summary"]["does_not_reproduce"] == 3


def test_missing_tools_module_is_one_line_and_exit_1(tmp_path):
    source = EXTERNAL / "nestful" / "toy_data.jsonl"
    result = CliRunner().invoke(app, ["execute", str(source), "--from", "nestful", "--tools-module", str(tmp_path / "no.py")])
    assert result.exit_code == 1
    assert "no such tools module" in result.output and "Traceback" not in result.output
