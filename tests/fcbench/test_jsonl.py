import os
import stat
from pathlib import Path

import pytest

from fcbench.jsonl import (JsonListSpool, TooManyBadLines, bad_line_policy, iter_json_lines, write_json,
                           write_json_lines, write_json_with_list)


def test_atomic_writes_leave_readable_files_and_no_temporaries(tmp_path):
    write_json_lines(tmp_path / "a.jsonl", [{"x": 1}, {"y": "é"}])
    write_json(tmp_path / "b.json", {"z": 2})
    for name in ("a.jsonl", "b.json"):
        mode = stat.S_IMODE(os.stat(tmp_path / name).st_mode)
        assert mode & stat.S_IRGRP and mode & stat.S_IROTH, oct(mode)  # not mkstemp's 0600
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.jsonl", "b.json"]
    assert [line.value for line in iter_json_lines(tmp_path / "a.jsonl")] == [{"x": 1}, {"y": "é"}]


def test_a_broken_line_is_reported_with_its_number(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text('{"ok": 1}\n\n{"broken": \n{"ok": 2}\n')
    lines = list(iter_json_lines(path))
    assert [(line.line_no, line.error is None) for line in lines] == [(1, True), (3, False), (4, True)]


# ------------------------------------------------------------------------------ hostile lines
def _hostile_file(tmp_path):
    """Good samples (the first behind a byte-order mark) around one hostile line of each kind."""
    import json
    from pathlib import Path

    seeds = Path(__file__).resolve().parents[2] / "datasets" / "nestful-math" / "seeds.jsonl"
    good = seeds.read_bytes().splitlines()[:3]
    sample = json.loads(good[0])
    bad = {
        "nan": b'{"id": "x", "answer": NaN}',
        "overflow": b'{"id": "x", "answer": 1e400}',
        "surrogate": b'{"id": "x\\ud800"}',
        "deep": b"[" * 10_000 + b"]" * 10_000,
        "nul": b'{"id": "x\x00"}',
        "latin1": json.dumps({**sample, "id": "caf\u00e9"}, ensure_ascii=False).encode("latin-1"),
        "long int": b'{"id": "x", "answer": 1' + b"0" * 5000 + b"}",
    }
    lines = [b"\xef\xbb\xbf" + good[0]] + list(bad.values()) + good[1:]
    path = tmp_path / "hostile.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path, list(bad), [json.loads(line)["id"] for line in good]


def test_each_hostile_line_is_a_reject_naming_its_line_and_the_good_lines_are_kept(tmp_path):
    path, kinds, _ = _hostile_file(tmp_path)
    with bad_line_policy(1.0):  # 7 of its 10 lines are bad: read them all anyway
        lines = list(iter_json_lines(path))
    assert [line.line_no for line in lines] == list(range(1, 11))
    assert lines[0].error is None and lines[8].error is None and lines[9].error is None  # BOM line kept
    errors = {kind: lines[n].error for n, kind in enumerate(kinds, start=1)}
    assert "NaN" in errors["nan"] and "out of range" in errors["overflow"]
    assert "lone surrogate" in errors["surrogate"] and "nested deeper" in errors["deep"]
    assert "NUL byte" in errors["nul"] and "not UTF-8" in errors["latin1"]
    assert "more than 4300 digits" in errors["long int"]


def test_convert_keeps_the_good_samples_and_lists_every_hostile_line_in_its_rejects(tmp_path):
    import json
    import subprocess
    import sys

    path, kinds, good_ids = _hostile_file(tmp_path)
    out = tmp_path / "out.jsonl"
    from pathlib import Path

    build_dataset = str(Path(sys.executable).parent / "build-dataset")
    done = subprocess.run([build_dataset, "--max-bad-share", "1", "convert", str(path), "--from", "fcbench",
                           "--to", "fcbench", "-o", str(out)], capture_output=True, text=True)
    assert "Traceback" not in done.stderr
    assert [json.loads(line)["id"] for line in out.read_text().splitlines()] == good_ids
    rejects = [json.loads(line) for line in (tmp_path / "out.jsonl.rejects.jsonl").read_text().splitlines()]
    assert [r["source"] for r in rejects] == [f"{path}:{n}" for n in range(2, 2 + len(kinds))]


def test_a_file_mostly_of_bad_lines_is_refused_whole_naming_the_share_and_the_first_bad_line(tmp_path):
    path, _, _ = _hostile_file(tmp_path)  # 7 bad lines of 10: over the default 50 %
    with pytest.raises(TooManyBadLines) as refused:
        list(iter_json_lines(path))
    assert str(refused.value).startswith(f"{path}: 7 of 10 lines are unreadable (70%), more than the 50% allowed; "
                                         f"first: line 2: NaN is not a JSON number")
    with bad_line_policy(0.75):
        assert sum(line.error is not None for line in iter_json_lines(path)) == 7
    few = tmp_path / "few.jsonl"
    few.write_text('{"a": 1}\n{"b": \n{"c": 3}\n')  # 1 bad of 3: read, the bad one reported
    assert [line.error is None for line in iter_json_lines(few)] == [True, False, True]


def test_the_bad_line_share_comes_from_the_command_line_else_the_pipeline(tmp_path):
    import json
    import textwrap

    from typer.testing import CliRunner

    from fcbench.cli import app

    path, _, good_ids = _hostile_file(tmp_path)
    out = tmp_path / "out.jsonl"
    runner = CliRunner()
    refused = runner.invoke(app, ["convert", str(path), "--from", "fcbench", "--to", "fcbench", "-o", str(out)])
    assert refused.exit_code == 1 and "7 of 10 lines are unreadable" in refused.output and not out.exists()
    read = runner.invoke(app, ["--max-bad-share", "0.7", "convert", str(path), "--from", "fcbench", "--to", "fcbench",
                               "-o", str(out)])
    assert read.exit_code == 0, read.output
    assert [json.loads(line)["id"] for line in out.read_text().splitlines()] == good_ids
    # a pipeline's stages read with its max_bad_line_share; the command line's option wins over it
    tools = Path(__file__).resolve().parents[2] / "datasets" / "nestful-math" / "tools.py"
    (tmp_path / "pipelines.yaml").write_text(textwrap.dedent(f"""\
        pipelines:
          m:
            dataset_dir: .
            max_bad_line_share: 0.8
            environment: {{kind: python, module: {tools}, timeout_s: 5, workers: 1}}
            stages:
              filter: {{grounding: report, gold_audit: report, tolerance: {{mode: round_to_gold}}}}
        """))
    filtered = runner.invoke(app, ["filter", "m", "--file", str(tmp_path / "pipelines.yaml"), "--input", str(path), "--json"])
    assert filtered.exit_code == 0, filtered.output
    assert json.loads(filtered.stdout)["counts"]["passed"] == len(good_ids)
    strict = runner.invoke(app, ["--max-bad-share", "0.5", "filter", "m", "--file", str(tmp_path / "pipelines.yaml"),
                                 "--input", str(path), "--force"])
    assert strict.exit_code == 1 and "more than the 50% allowed" in strict.output


def test_a_published_file_read_as_fcbench_says_which_format_it_looks_like():
    from pathlib import Path

    from fcbench.formats import Rejected, read_samples

    external = Path(__file__).resolve().parents[3] / "shared" / "external"
    for path, fmt in ((external / "nestful" / "toy_data.jsonl", "nestful"),
                      (external / "bfcl" / "BFCL_v4_simple_python.json", "bfcl"),
                      (external / "confetti" / "possible_answer_BFCL_v2_dialogacts.json", "confetti")):
        first = next(iter(read_samples(path, "fcbench")))
        assert isinstance(first, Rejected) and first.reason.endswith(f"looks like {fmt}: use --from {fmt}"), first.reason


def test_temporary_files_of_a_killed_run_are_removed_by_the_next_write(tmp_path):
    stale = tmp_path / ".candidates.jsonl.x7f3k2.tmp"  # what a kill -9 mid-write leaves
    stale.write_text('{"half": ')
    other = tmp_path / ".drafts.jsonl.abc.tmp"  # another file's: not this write's business
    other.write_text("")
    write_json_lines(tmp_path / "candidates.jsonl", [{"x": 1}])
    assert not stale.exists() and other.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == [".drafts.jsonl.abc.tmp", "candidates.jsonl"]


def test_a_killed_export_leaves_nothing_behind_after_the_next_export(tmp_path):
    import subprocess
    import sys
    from pathlib import Path

    build = tmp_path / "build"
    leftover = build / ".export.q1w2e3" / "data"
    leftover.mkdir(parents=True)
    (leftover / ".test-00000.parquet.partial").write_bytes(b"PAR1")
    seeds = Path(__file__).resolve().parents[2] / "datasets" / "nestful-math" / "seeds.jsonl"
    (tmp_path / "pipelines.yaml").write_text(
        "pipelines:\n  m:\n    dataset_dir: .\n    stages:\n      export: {formats: [parquet]}\n")
    done = subprocess.run([str(Path(sys.executable).parent / "build-dataset"), "export", "m", "--file",
                           str(tmp_path / "pipelines.yaml"), "--input", str(seeds)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert sorted(p.name for p in build.iterdir() if p.name.startswith(".")) == []
    assert (build / "export" / "data").is_dir()


def test_progress_is_quiet_for_short_runs_and_logs_plain_lines_off_a_terminal():
    import io

    from fcbench.runtime.progress import StageProgress

    stream = io.StringIO()  # not a terminal
    with StageProgress("filter", 10, stream=stream) as quick:
        quick.advance(10)
    assert stream.getvalue() == ""  # under quiet_s: nothing printed
    with StageProgress("filter", 1000, stream=stream, quiet_s=0, log_every_s=0) as slow:
        slow.advance(250)
    assert stream.getvalue().startswith("filter: 250/1,000 (25%), ") and "s left" in stream.getvalue()


def test_a_progress_total_counts_lines_without_parsing_them(tmp_path):
    from fcbench.runtime.progress import lines_in

    path = tmp_path / "lines.jsonl"
    for text, lines in (("", 0), ("{}\n", 1), ("{}\n{}", 2), ("{}\n" * 300_000, 300_000)):  # past one 1 MiB chunk
        path.write_text(text)
        assert lines_in(path) == lines, text[:10]


def test_depth_limit_is_exact_at_the_boundary():
    from fcbench.jsonl import MAX_DEPTH, parse_json_line

    def nested(levels: int, inner: str) -> bytes:
        return ("[" * levels + inner + "]" * levels).encode()

    assert parse_json_line(nested(MAX_DEPTH - 1, "1")) is not None  # the scalar is at depth MAX_DEPTH
    parse_json_line(nested(MAX_DEPTH, ""))  # an empty list at depth MAX_DEPTH is within the limit
    for levels, inner in ((MAX_DEPTH, "1"), (MAX_DEPTH + 1, ""), (MAX_DEPTH - 1, '{"a": 1}')):
        try:
            parse_json_line(nested(levels, inner))
        except ValueError as exc:
            assert "nested deeper" in str(exc)
        else:
            raise AssertionError(f"{levels} levels around {inner!r} should be too deep")


@pytest.mark.parametrize("items", [[], [{}], [{"id": "a", "calls": [{"arguments": {"x": [1.5, None, True]}}], "e": {},
                                             "text": "line\nbreak \u00e9"}, [], 3, "s", {"nested": {"deep": [[]]}}]])
def test_a_spooled_list_gives_the_bytes_of_one_json_dump(tmp_path, items):
    """scores.json's items are spooled to disk while the summary before them is counted; the file
    must be the same bytes as json.dumps of the whole document (indent 2)."""
    document = {"note": "é", "summary": {"n": 2, "by": {}}, "items": None, "after": {"samples": ["x"]}}
    with JsonListSpool(tmp_path) as spool:
        for item in items:
            spool.append(item)
        write_json_with_list(tmp_path / "streamed.json", document, "items", spool)
    write_json(tmp_path / "whole.json", {**document, "items": items}, indent=2)
    assert (tmp_path / "streamed.json").read_bytes() == (tmp_path / "whole.json").read_bytes()
    assert sorted(path.name for path in tmp_path.iterdir()) == ["streamed.json", "whole.json"]  # the spool has no name
