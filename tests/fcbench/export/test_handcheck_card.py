"""The card's measured error rate (fcbench.export.handcheck): held out by a seeded hash, the rate
from the held-out lines of the build only, a line whose split disagrees with its hash refused."""

from __future__ import annotations

import json

import pytest

from fcbench.errors import UserError
from fcbench.export.card import handcheck_lines
from fcbench.export.handcheck import parse_handcheck, sample_digest, split_of, stale_checks, summarize


def _line(build: str, sid: str, verdict: str = "ok") -> str:
    return json.dumps({"build": build, "sample_id": sid, "digest": "0" * 16, "verdict": verdict, "kind": "wrong_gold" if verdict == "problem"
                       else "", "note": "read", "split": split_of(sid)})


def test_the_rate_is_measured_on_the_held_out_lines_of_one_build() -> None:
    ids = [f"b-{n}" for n in range(40)]
    held = [sid for sid in ids if split_of(sid) == "held_out"]
    tuning = [sid for sid in ids if split_of(sid) == "tuning"]
    assert held and tuning and split_of(ids[0]) == split_of(ids[0])  # deterministic
    text = "\n".join([_line("b", held[0], "problem"), *(_line("b", s) for s in held[1:]),
                      _line("b", tuning[0], "problem"), *(_line("b", s) for s in tuning[1:]), _line("other", "x-1", "problem")])
    summary = summarize(parse_handcheck(text, "f"), "b", "f")
    assert (summary.checked, summary.problems, summary.held_out, summary.held_out_problems) == (40, 2, len(held), 1)
    assert summary.error_rate == 1 / len(held)
    card = "\n".join(handcheck_lines(summary))
    assert f"**1 of {len(held)} held-out samples ({100 / len(held):.1f} %) have a problem**" in card


def test_a_split_the_hash_did_not_choose_is_refused() -> None:
    sid = next(f"s-{n}" for n in range(100) if split_of(f"s-{n}") == "tuning")
    line = json.dumps({"build": "b", "sample_id": sid, "digest": "0" * 16, "verdict": "ok", "split": "held_out"})
    with pytest.raises(UserError, match="tuning"):
        parse_handcheck(line, "f")
    with pytest.raises(UserError, match="f:1"):
        parse_handcheck('{"build": "b"}', "f")


def test_a_verdict_on_a_sample_that_changed_since_it_was_read_is_stale() -> None:
    sample = {"id": "b-1", "messages": [{"role": "user", "content": "Hotels in Paris for a week"}],
              "calls": [[{"label": "var_1", "name": "Search_Hotels", "arguments": {"departure_date": "2025-06-19"}}]],
              "provenance": {"seed": 1}, "meta": {"audit": []}}
    line = json.dumps({"build": "b", "sample_id": "b-1", "digest": sample_digest(sample), "verdict": "ok", "note": "read",
                       "split": split_of("b-1")})
    checks = parse_handcheck(line, "f")
    assert stale_checks(checks, "b", {"b-1": sample}) == []
    # where it came from and the checks' notes are not what was read: the verdict holds
    assert stale_checks(checks, "b", {"b-1": {**sample, "provenance": {"seed": 2}, "meta": {}}}) == []
    # the gold changed (a rebuild made the stay 3 nights), or the sample is gone: read it again
    changed = json.loads(json.dumps(sample))
    changed["calls"][0][0]["arguments"]["departure_date"] = "2025-06-15"
    assert stale_checks(checks, "b", {"b-1": changed}) == ["b-1"]
    assert stale_checks(checks, "b", {}) == ["b-1"]
    assert stale_checks(checks, "other", {}) == []
