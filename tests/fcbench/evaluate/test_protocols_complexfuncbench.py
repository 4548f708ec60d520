"""`evaluate --protocol complexfuncbench` (the default for single-turn pipelines): the paper's decoding
settings, the paper's table, and ComplexFuncBench's own result file, on the bundled example with the
scripted model of test_evaluate.py whose scores were computed there by hand:
Cross-12 fails (2 of 5 calls), Hotels-7 succeeds after correcting itself (2 of 2), Car-Rental-3
stops before its only call (0 of 1): success 1/3, call accuracy 4/8.
"""

from __future__ import annotations

import json

from test_evaluate import MODEL, SLUG, ScriptedModel, evaluate_cli, example_samples, perfect, with_mistakes, write_pipelines

from fcbench.formats import read_samples, write_samples
from fcbench.llm.mock_server import MockLLMServer
from fcbench.sample import Sample


def _input(tmp_path):
    samples = example_samples()
    path = tmp_path / "trips.canonical.jsonl"
    write_samples(samples, path, "fcbench")
    return path, samples


def test_the_papers_settings_table_and_result_file(tmp_path):
    canonical, samples = _input(tmp_path)
    # the pipeline samples at 0.7 with 1,024 tokens; the protocol sends the paper's 0.0 and 2,048
    pipelines = write_pipelines(tmp_path).parent / "pipelines.yaml"
    pipelines.write_text(pipelines.read_text().replace("temperature: 0.0", "temperature: 0.7"), encoding="utf-8")
    model = ScriptedModel(samples, with_mistakes)
    with MockLLMServer(responder=model) as server:
        result = evaluate_cli(pipelines, server.base_url, "--input", str(canonical), "--protocol", "complexfuncbench")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    bodies = [body for _, body in model.requests]
    assert {(b["temperature"], b["max_tokens"]) for b in bodies} == {(0.0, 2048)}
    assert out["protocol"] == "complexfuncbench"
    assert out["choices"][0] == ("decoding: temperature 0.0, max_tokens 2048 (ComplexFuncBench's runners: temperature "
                                 "0.0, max_tokens 2048)")

    table = out["tables"][0]
    groups = list(dict.fromkeys(c["group"] for c in table["columns"]))
    assert groups == ["Hotels", "Car Rental", "Cross", "Overall"]  # the paper's order, its spelling of Car-Rental
    assert [c["name"] for c in table["columns"][:4]] == ["Success", "Call Acc.", "Completeness", "Correctness"]
    cells = dict(zip(((c["group"], c["name"]) for c in table["columns"]), table["rows"][0]["cells"]))
    assert cells[("Hotels", "Success")] == "100.00" and cells[("Hotels", "Call Acc.")] == "100.00"
    assert cells[("Car Rental", "Success")] == "0.00" and cells[("Car Rental", "Call Acc.")] == "0.00"
    assert cells[("Cross", "Call Acc.")] == "40.00"                      # 2 of 5
    assert cells[("Overall", "Success")] == "33.33"                      # 1 of 3
    assert cells[("Overall", "Call Acc.")] == "50.00"                    # 4 of 8
    scores_file = json.loads((tmp_path / "data" / "build" / "eval" / SLUG / "scores.json").read_text())
    assert scores_file["tables"] == out["tables"] and scores_file["protocol"] == "complexfuncbench"

    # ComplexFuncBench's own result file: one line per sample, evaluation.py's keys
    path = tmp_path / "data" / "build" / "eval" / SLUG / "complexfuncbench_result.jsonl"
    assert out["reference_files"] == {"complexfuncbench_result": str(path)}
    lines = {line["id"]: line for line in map(json.loads, path.read_text().splitlines())}
    assert list(lines) == ["Cross-12", "Hotels-7", "Car-Rental-3"]
    assert all(list(line) == ["id", "gen_convs", "message", "count_dict", "resp_eval"] for line in lines.values())
    hotels = lines["Hotels-7"]
    assert hotels["message"] == "Success."
    assert hotels["count_dict"] == {"success_turn_num": 2, "total_turn_num": 2, "correct_call_num": 2,
                                    "total_call_num": 2, "real_turn_num": 4}
    assert hotels["resp_eval"]["complete"]["score"] in (0, 1, 2)
    assert lines["Cross-12"]["message"]["error_type"] == "func_error"
    assert lines["Cross-12"]["count_dict"]["correct_call_num"] == 2 and lines["Cross-12"]["resp_eval"] is None
    assert lines["Car-Rental-3"]["message"]["error_type"] == "stop_early"
    assert lines["Car-Rental-3"]["gen_convs"][-1] == {"role": "assistant", "content": "I cannot look up car rentals."}
    # the conversation the model had reads as a ComplexFuncBench item with the published files' reader
    item = {"id": "Hotels-7", "conversations": hotels["gen_convs"],
            "functions": [tool.model_dump(exclude={"meta", "returns"}, exclude_none=True) for tool in samples[1].tools]}
    converted = tmp_path / "hotels_as_item.jsonl"
    converted.write_text(json.dumps(item) + "\n", encoding="utf-8")
    read = [s for s in read_samples(converted, "complexfuncbench")]
    assert isinstance(read[0], Sample), read
    assert [[c.name for c in step] for step in read[0].calls] == [["Search_Hotel_Destination"], ["Search_Hotels"],
                                                                  ["Search_Hotels"], ["Search_Hotels"]]


def test_command_line_settings_override_the_papers_and_say_so(tmp_path):
    canonical, samples = _input(tmp_path)
    pipelines = write_pipelines(tmp_path)
    model = ScriptedModel(samples, perfect)
    with MockLLMServer(responder=model) as server:
        result = evaluate_cli(pipelines, server.base_url, "--input", str(canonical), "--temperature", "0.3",
                              "--max-tokens", "512", "--limit", "1")
    assert result.exit_code == 0, result.output
    assert {(b["temperature"], b["max_tokens"]) for _, b in model.requests} == {(0.3, 512)}
    out = json.loads(result.stdout)
    assert out["choices"][0] == "decoding: temperature 0.3, max_tokens 512 (set on the command line)"
    assert out["tables"][0]["rows"][0]["model"] == MODEL
