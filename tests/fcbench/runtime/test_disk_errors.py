"""A full or read-only disk ends a command in one line naming the path, exit 1, and nothing is
lost: the previous outputs are intact and no partial file is placed.

Two ways of making a disk fail. Injected: the OSError a full (ENOSPC), read-only (EROFS) or
size-limited (EFBIG) disk raises, at the write layer every stage file goes through (fcbench.jsonl).
Real: a 4 MB tmpfs, mounted over the build folder in a private mount namespace (`unshare -rm`, so
nothing outside the test sees it, and root's disregard of file modes does not matter), filled up,
then mounted read-only.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from typer.testing import CliRunner

import fcbench.jsonl as jsonl
from conftest import REPO
from fcbench.cli import app
from fcbench.jsonl import dumps_line
from fcbench.sample import Call
from filter_cases import candidate_line, write_pipeline

runner = CliRunner()


def _candidates(count: int) -> list[str]:
    return [dumps_line(candidate_line(f"sum-{i}", f"Add {i} and {i + 1}.",
                                      [[Call(label="c1", name="add", arguments={"a": i, "b": i + 1})]],
                                      answer=2 * i + 1)) for i in range(count)]


def _tree(folder: Path) -> dict[str, str]:
    """Every file under `folder` with the SHA-256 of its bytes (hidden files too)."""
    return {str(path.relative_to(folder)): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(folder.rglob("*")) if path.is_file()}


@pytest.fixture
def built(tmp_path):
    """A toy pipeline filtered and exported once: the outputs a failing disk must not harm."""
    pipelines = write_pipeline(tmp_path, _candidates(30))
    for command in (["filter", "toy"], ["export", "toy"]):
        result = runner.invoke(app, [*command, "--file", str(pipelines)])
        assert result.exit_code == 0, result.output
    return pipelines, tmp_path / "toy" / "build"


@pytest.mark.parametrize("code, words", [(errno.ENOSPC, "no space left on the device"),
                                         (errno.EROFS, "the file system is read-only"),
                                         (errno.EFBIG, "file too large")])
def test_a_write_that_fails_is_one_line_naming_the_file_and_the_outputs_in_place_stay(built, monkeypatch, code, words):
    pipelines, build = built
    before = _tree(build)
    real_fsync = os.fsync

    def failing_fsync(fd: int) -> None:  # buffered writes fail late: at the flush to the disk
        raise OSError(code, os.strerror(code))

    monkeypatch.setattr(jsonl.os, "fsync", failing_fsync)
    try:
        result = runner.invoke(app, ["filter", "toy", "--file", str(pipelines), "--force"])
    finally:
        monkeypatch.setattr(jsonl.os, "fsync", real_fsync)
    assert result.exit_code == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in result.output, result.output
    assert lines[0].startswith(f"error: {build / 'validated.jsonl'}: cannot write: {words}")
    # the journal of decisions grows (that is how a re-run resumes); every output in place is as it was
    after = _tree(build)
    assert {name: digest for name, digest in after.items() if name != "filter.journal.jsonl"} == \
        {name: digest for name, digest in before.items() if name != "filter.journal.jsonl"}


def test_a_folder_that_cannot_be_created_is_one_line(built, monkeypatch):
    pipelines, build = built
    before = _tree(build)

    def read_only(*args, **kwargs):
        raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(build / "export.new"))

    monkeypatch.setattr(jsonl.tempfile, "mkstemp", read_only)
    result = runner.invoke(app, ["filter", "toy", "--file", str(pipelines), "--force"])
    assert result.exit_code == 1 and len(result.stderr.strip().splitlines()) == 1, result.output
    assert "the file system is read-only" in result.stderr and "Traceback" not in result.output
    assert {k: v for k, v in _tree(build).items() if k != "filter.journal.jsonl"} == \
        {k: v for k, v in before.items() if k != "filter.journal.jsonl"}


def test_a_device_is_never_replaced_by_an_output(tmp_path):
    """`-o /dev/full` (or any device, pipe or folder): refused before anything is written; a rename
    over it would have replaced the device itself."""
    source = tmp_path / "in.jsonl"
    source.write_text("\n".join(_candidates(2)) + "\n")
    for target in ("/dev/full", str(tmp_path)):
        result = runner.invoke(app, ["convert", str(source), "--from", "fcbench", "--to", "fcbench", "-o", target])
        assert result.exit_code == 1 and "is not a regular file" in result.stderr, result.output
    assert Path("/dev/full").is_char_device()
    assert [path.name for path in Path("/dev").glob(".full.*")] == []


# ----------------------------------------------------------------------------- a real small disk
_IN_NAMESPACE = textwrap.dedent("""\
    import json, os, subprocess, sys
    build, pipelines, out = sys.argv[1:4]
    run = lambda *args: subprocess.run(["mount", *args], check=True)
    cli = lambda *args: subprocess.run([sys.executable, "-m", "fcbench.cli", *args, "--file", pipelines],
                                       capture_output=True, text=True)
    report = {}
    run("-t", "tmpfs", "-o", "size=4m", "tmpfs", build)
    for stage in ("filter", "export"):
        done = cli(stage, "toy")
        report[stage] = [done.returncode, done.stderr]
    os.makedirs(out + "/before")
    subprocess.run(["cp", "-a", build + "/.", out + "/before"], check=True)
    # fill the disk, leaving a few kilobytes: room for the lock file, not for the outputs
    with open(build + "/filler", "wb") as filler:
        try:
            while True:
                free = os.statvfs(build).f_bavail * os.statvfs(build).f_frsize
                if free <= 8192:
                    break
                filler.write(b"\\0" * min(65536, free - 8192))
                filler.flush()
        except OSError:
            pass
    for stage in ("filter", "export"):
        done = cli(stage, "toy", "--force")
        report["full " + stage] = [done.returncode, done.stderr]
    os.remove(build + "/filler")
    os.makedirs(out + "/after_full")
    subprocess.run(["cp", "-a", build + "/.", out + "/after_full"], check=True)
    run("--bind", build, build)
    run("-o", "remount,bind,ro", build)
    done = cli("export", "toy", "--force")
    report["read-only export"] = [done.returncode, done.stderr]
    with open(out + "/report.json", "w") as handle:
        json.dump(report, handle)
    """)


def test_a_real_full_then_read_only_disk_loses_nothing(tmp_path):
    pipelines = write_pipeline(tmp_path, _candidates(400))
    build = tmp_path / "toy" / "build"
    build.mkdir(parents=True)
    out = tmp_path / "out"
    out.mkdir()
    script = tmp_path / "in_namespace.py"
    script.write_text(_IN_NAMESPACE)
    unshare = shutil.which("unshare")
    assert unshare, "util-linux unshare is needed to mount a small disk in a private namespace"
    done = subprocess.run([unshare, "-rm", sys.executable, str(script), str(build), str(pipelines), str(out)],
                          capture_output=True, text=True, timeout=600, cwd=REPO)
    assert done.returncode == 0, done.stderr
    report = json.loads((out / "report.json").read_text())
    assert report["filter"][0] == 0 and report["export"][0] == 0, report  # room enough at first
    for step in ("full filter", "full export", "read-only export"):
        code, stderr = report[step]
        lines = stderr.strip().splitlines()
        assert code == 1 and "Traceback" not in stderr, (step, stderr)
        assert lines[-1].startswith(f"error: {build}") and len([line for line in lines if "error" in line]) == 1, stderr
    assert "no space left on the device" in report["full filter"][1]
    assert "no space left on the device" in report["full export"][1]
    assert "read-only" in report["read-only export"][1]
    # everything that was in place before the disk filled up is still there, byte for byte, and
    # nothing half-written was left beside it (the journal of filter decisions aside: it only grows)
    before, after = _tree(out / "before"), _tree(out / "after_full")
    journal = "filter.journal.jsonl"
    assert {k: v for k, v in after.items() if k != journal} == {k: v for k, v in before.items() if k != journal}
    assert any(name.startswith("export/data/") for name in before)
