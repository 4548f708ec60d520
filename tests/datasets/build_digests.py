"""The bundled builds as digests: every file a pipeline's `run --offline` writes under its build
folder, by SHA-256, built in a clean copy of the repository (the files git tracks, nothing built).

A change that means to change what a bundled build writes re-records the list, and the diff of
tests/data/build_digests.json shows which files moved; a refactor leaves it unchanged
(tests/datasets/test_build_digests.py). Summaries name absolute paths: the copy's root is written
as `<root>` before hashing, so the list does not depend on where the copy was made.

  .venv/bin/python tests/datasets/build_digests.py --record          # travel, amadeus, travel-chat, travel-chat-all, nestful-math, workspace
  .venv/bin/python tests/datasets/build_digests.py --record --full   # and travel-full (minutes)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DIGESTS = REPO / "tests" / "data" / "build_digests.json"
FAST = ("travel", "amadeus", "travel-chat", "travel-chat-all", "nestful-math", "workspace")
FULL = ("travel-full",)


def clean_copy(target: Path) -> Path:
    """What a fresh clone holds: every tracked file, nothing built."""
    listed = subprocess.run(["git", "-C", str(REPO), "ls-files", "-z"], capture_output=True, check=True).stdout
    for name in filter(None, listed.decode().split("\0")):
        source = REPO / name
        if not source.is_file():  # deleted in the working tree but not yet in the index
            continue
        (target / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target / name)
    return target


def build(root: Path, pipeline: str, timeout: float = 1800) -> None:
    result = subprocess.run([sys.executable, "-m", "fcbench.cli", "run", pipeline, "--offline", "--json"], cwd=root,
                            capture_output=True, text=True, timeout=timeout)
    if result.returncode != 0:
        raise RuntimeError(f"run {pipeline} --offline failed: {result.stderr[-2000:]}")


def build_dir_of(root: Path, pipeline: str) -> Path:
    from fcbench.config import load_pipelines

    return load_pipelines(root / "pipelines.yaml").get_pipeline(pipeline).build_dir


def digests(root: Path, pipeline: str) -> dict[str, str]:
    """Relative path -> SHA-256 of every file the build wrote, the copy's root written as <root>."""
    build_dir = build_dir_of(root, pipeline)
    marker = str(root.resolve()).encode()
    found = {}
    for path in sorted(build_dir.rglob("*")):
        if path.is_file():
            found[path.relative_to(root).as_posix()] = hashlib.sha256(path.read_bytes().replace(marker, b"<root>")).hexdigest()
    return found


def build_and_digest(pipelines: tuple[str, ...], workdir: Path) -> dict[str, dict[str, str]]:
    root = clean_copy(workdir / "clone")
    out = {}
    for pipeline in pipelines:
        build(root, pipeline)
        out[pipeline] = digests(root, pipeline)
    return out


def stale_handchecks(root: Path, pipelines: tuple[str, ...]) -> dict[str, list[str]]:
    """pipeline -> hand-checked ids whose sample, as built in `root`, is not the one that was read
    (the pipelines whose dataset folder has a handcheck.jsonl)."""
    from fcbench.export.handcheck import parse_handcheck, stale_checks

    stale = {}
    for pipeline in pipelines:
        path = root / "datasets" / pipeline / "handcheck.jsonl"
        validated = build_dir_of(root, pipeline) / "validated.jsonl"
        if not path.is_file() or not validated.is_file():
            continue
        samples = {row["id"]: row for row in map(json.loads, validated.read_text(encoding="utf-8").splitlines())}
        ids = stale_checks(parse_handcheck(path.read_text(encoding="utf-8"), str(path)), pipeline, samples)
        if ids:
            stale[pipeline] = ids
    return stale


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--record", action="store_true", help="write tests/data/build_digests.json")
    parser.add_argument("--full", action="store_true", help="travel-full too (minutes)")
    args = parser.parse_args()
    pipelines = FAST + (FULL if args.full else ())
    with tempfile.TemporaryDirectory() as workdir:
        found = build_and_digest(pipelines, Path(workdir))
        stale = stale_handchecks(Path(workdir) / "clone", pipelines)
    recorded = json.loads(DIGESTS.read_text()) if DIGESTS.is_file() else {}
    for pipeline, files in found.items():
        before = recorded.get(pipeline, {})
        changed = sorted(name for name in files.keys() | before.keys() if files.get(name) != before.get(name))
        print(f"{pipeline}: {len(files)} files, {len(changed)} differ from the recorded list"
              + "".join(f"\n  {name}" for name in changed))
    for pipeline, ids in stale.items():
        print(f"{pipeline}: {len(ids)} hand-checked samples changed since they were read (read them again and "
              f"update datasets/{pipeline}/handcheck.jsonl): {', '.join(ids[:20])}")
    if args.record and stale:
        raise SystemExit("not recorded: hand-checked samples changed (above)")
    if args.record:
        DIGESTS.write_text(json.dumps({**recorded, **found}, indent=1, sort_keys=True) + "\n")
        print(f"wrote {DIGESTS.relative_to(REPO)}")


if __name__ == "__main__":
    main()
