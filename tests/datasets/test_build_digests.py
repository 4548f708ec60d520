"""Every bundled build writes exactly the recorded bytes (tests/data/build_digests.json), built from a
clean copy of the repository: a refactor changes no output; a change meant to change outputs
re-records the list (`python tests/datasets/build_digests.py --record [--full]`), and the diff of the
list shows which files moved."""

from __future__ import annotations

import json

from build_digests import DIGESTS, FAST, build_and_digest


def test_the_fast_bundled_builds_write_the_recorded_bytes(tmp_path):
    recorded = json.loads(DIGESTS.read_text())
    found = build_and_digest(FAST, tmp_path)
    for pipeline in FAST:
        expected, got = recorded[pipeline], found[pipeline]
        differ = sorted(name for name in expected.keys() | got.keys() if expected.get(name) != got.get(name))
        assert not differ, (f"{pipeline}: {len(differ)} build files differ from tests/data/build_digests.json "
                            f"(re-record with `python tests/datasets/build_digests.py --record` if the change is "
                            f"meant): {differ[:10]}")
