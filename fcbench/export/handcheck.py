"""The hand-checked set: built samples read by a person, one verdict each, and the error rate of a
build measured on its held-out part (pure, apart from `read_handcheck`).

Each line of the file (`datasets/<build>/handcheck.jsonl` for the bundled builds) is
`{"build", "sample_id", "digest", "verdict": "ok"|"problem", "kind", "note", "split": "tuning"|"held_out"}`.
`digest` is what was read (`sample_digest` of the built sample): a rebuild that changes a
read sample makes its verdict stale (`stale_checks`), and it must be read again, never carried
over silently.
The split is a seeded hash of the sample id (`split_of`), so which samples are held out is decided
before anyone reads them; the held-out part is never used to tune a rule, and the error rate the
dataset card states is measured on it alone (problems / held-out samples of that build).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Mapping

from pydantic import BaseModel, ConfigDict

from fcbench.errors import UserError

HELD_OUT_SEED = "fcbench-gold-handcheck"
HOW_MEASURED = ("each sample read by hand as a careful annotator reads it: the query against the resolved path "
                "(references replaced by the values they read) and the picks recomputed over the responses; "
                "'problem' is any defect of issue 26's list (wrong gold, an ambiguous query, a broken query text); "
                "the held-out part is chosen by a seeded hash of the id before reading (about one id in three) "
                "and is never used to tune a rule")


class HandCheck(BaseModel):
    model_config = ConfigDict(extra="forbid")

    build: str
    sample_id: str
    digest: str  # sample_digest of the sample as it was read
    verdict: Literal["ok", "problem"]
    kind: str = ""
    note: str = ""
    split: Literal["tuning", "held_out"]


def split_of(sample_id: str) -> Literal["tuning", "held_out"]:
    """About one id in three is held out, by a seeded hash (no reader chooses)."""
    digest = hashlib.sha256(f"{HELD_OUT_SEED}:{sample_id}".encode()).digest()
    return "held_out" if digest[0] % 3 == 0 else "tuning"


@dataclass(frozen=True)
class HandCheckSummary:
    build: str
    checked: int  # every hand-checked sample of the build
    problems: int
    held_out: int
    held_out_problems: int
    source: str  # the file, as pipelines.yaml names it

    @property
    def error_rate(self) -> float | None:
        return self.held_out_problems / self.held_out if self.held_out else None

    def as_dict(self) -> dict[str, object]:
        return {"build": self.build, "checked": self.checked, "problems": self.problems, "held_out": self.held_out,
                "held_out_problems": self.held_out_problems, "error_rate": self.error_rate, "source": self.source,
                "how": HOW_MEASURED}


def summarize(checks: list[HandCheck], build: str, source: str) -> HandCheckSummary:
    mine = [check for check in checks if check.build == build]
    held = [check for check in mine if check.split == "held_out"]
    return HandCheckSummary(build, len(mine), sum(c.verdict == "problem" for c in mine), len(held),
                            sum(c.verdict == "problem" for c in held), source)


def parse_handcheck(text: str, where: str) -> list[HandCheck]:
    checks = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            check = HandCheck.model_validate(json.loads(line))
        except (json.JSONDecodeError, ValueError) as exc:
            raise UserError(f"{where}:{number}: not a hand-check line ({str(exc).splitlines()[0]})") from None
        if check.split != split_of(check.sample_id):
            raise UserError(f"{where}:{number}: {check.sample_id} is {split_of(check.sample_id)} by its hash, "
                            f"not {check.split}")
        checks.append(check)
    return checks


def sample_digest(sample: Mapping[str, Any]) -> str:
    """What a reader reads of a built sample (a validated.jsonl line): everything but where it
    came from (`provenance`) and the checks' notes on it (`meta`), in canonical JSON."""
    read = {key: value for key, value in sample.items() if key not in ("provenance", "meta")}
    text = json.dumps(read, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def stale_checks(checks: list[HandCheck], build: str, samples: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """The build's hand-checked ids whose sample is gone or is no longer what was read."""
    return [check.sample_id for check in checks if check.build == build
            and (check.sample_id not in samples or sample_digest(samples[check.sample_id]) != check.digest)]


def read_handcheck(path: Path, build: str, source: str) -> HandCheckSummary:
    if not path.is_file():
        raise UserError(f"{path}: no such hand-check file (stages.export.handcheck)")
    return summarize(parse_handcheck(path.read_text(encoding="utf-8"), str(source)), build, source)


__all__ = ["HOW_MEASURED", "HandCheck", "HandCheckSummary", "parse_handcheck", "read_handcheck", "sample_digest",
           "split_of", "stale_checks", "summarize"]
