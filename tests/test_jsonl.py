import os
import stat

from fcbench.jsonl import iter_json_lines, write_json, write_json_lines


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
