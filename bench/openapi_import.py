"""Import of a description split over many files, at ~700 operations, against the same operations
in single files, in one run.

The 40 published Amadeus descriptions (../shared/external/amadeus, 54 operations) are copied
`--copies` times (13: 702 operations) under new path prefixes and operationIds, and each copy of
each description is written twice: (a) as one file, (b) split the way large APIs ship: a main file
whose operations are `$ref`s into `parts/ops.json`, whose definitions live in `parts/defs.json`
(refs inside each file local to it, refs between files relative to the file holding them). Both are
imported with `fcbench.catalog.openapi.import_openapi`, alternated `--rounds` times, best kept. The
tools must be identical (checked).

  .venv/bin/python bench/openapi_import.py [--copies 13] [--rounds 3]

The last line is the ratio multi-file / single-file import time (goal: close to 1; the multi-file
import finished in seconds, not in an endless loop).
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
AMADEUS = REPO.parent / "shared" / "external" / "amadeus"
METHODS = ("get", "post", "put", "delete", "patch")


def _retarget(node, definitions_file: str, back: str) -> None:
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/definitions/"):
            node["$ref"] = definitions_file + ref
        elif isinstance(ref, str) and ref.startswith("#/") and back:
            node["$ref"] = back + ref
        for value in node.values():
            _retarget(value, definitions_file, back)
    elif isinstance(node, list):
        for value in node:
            _retarget(value, definitions_file, back)


def write_copies(folder: Path, copies: int) -> tuple[Path, Path]:
    single, split = folder / "single", folder / "split"
    single.mkdir()
    split.mkdir()
    for source in sorted(AMADEUS.glob("*.json")):
        original = json.loads(source.read_text())
        for number in range(copies):
            document = copy.deepcopy(original)
            document["paths"] = {f"/c{number}{path}": item for path, item in document["paths"].items()}
            for item in document["paths"].values():
                for method in METHODS:
                    if isinstance(item.get(method), dict) and item[method].get("operationId"):
                        item[method]["operationId"] = f"{item[method]['operationId']}_c{number}"
            stem = f"{source.stem}_c{number}"
            (single / f"{stem}.json").write_text(json.dumps(document))
            parts = split / f"{stem}_parts"
            parts.mkdir()
            defs = {"definitions": document.pop("definitions", {})}
            operations = {}
            for item in document["paths"].values():
                for method in METHODS:
                    if isinstance(item.get(method), dict):
                        key = f"op{len(operations)}"
                        operation = item[method]
                        _retarget(operation, "defs.json", f"../{stem}.json")
                        operations[key] = operation
                        item[method] = {"$ref": f"{parts.name}/ops.json#/{key}"}
            _retarget(document, f"{parts.name}/defs.json", "")
            (parts / "ops.json").write_text(json.dumps(operations))
            (parts / "defs.json").write_text(json.dumps(defs))
            (split / f"{stem}.json").write_text(json.dumps(document))
    return single, split


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--copies", type=int, default=13)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    from fcbench.catalog.openapi import import_openapi

    with tempfile.TemporaryDirectory(prefix="openapi-import-") as folder:
        single, split = write_copies(Path(folder), args.copies)
        best = {"single": float("inf"), "split": float("inf")}
        results = {}
        for _ in range(args.rounds):
            for name, path in (("single", single), ("split", split)):
                started = time.perf_counter()
                results[name] = import_openapi([path])
                best[name] = min(best[name], time.perf_counter() - started)
        one, many = results["single"], results["split"]
        assert not many.errors, [note.describe() for note in many.errors[:3]]
        assert [(t.name, t.parameters, t.returns) for t in one.tools] == [(t.name, t.parameters, t.returns) for t in many.tools]
        files = sum(1 for _ in split.rglob("*.json"))
        print(f"{len(many.tools)} operations; single files: {len(one.files)} files, best {best['single']:.2f} s; "
              f"split: {files} files ({len(many.files)} main), best {best['split']:.2f} s; tools identical")
        print(f"multi-file/single-file import time: {best['split'] / best['single']:.2f}")


if __name__ == "__main__":
    main()
