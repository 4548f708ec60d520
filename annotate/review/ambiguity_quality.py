"""How good the ambiguity warnings are: precision and recall against ambiguities known to be real.

Two sources of truth:
- what disambiguation really removed in an annotated task (`removed_ambiguities`, draft vs gold):
  an argument picked from a response list of which the annotator deleted entries (when the
  entries give it different values), an argument the annotator re-pointed at another entry of the
  same list, and a tool the annotator dropped. Other fixes (a wrong field, a missing argument, a
  rewritten query) are corrections, not ambiguities, and are not counted;
- a hand-checked set of drafts (tests/data/ambiguity_checked.jsonl), where a person recorded the
  true ambiguities of each draft with a reason.

A warning is a true positive when its key (`var_2.dest_id`) is a true ambiguity, or, for an
overlapping-tools warning, when one of its tools was dropped. Pure: no I/O.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from annotate.tasks.ambiguity import OVERLAPPING_TOOLS, Ambiguity, picked_entries
from annotate.tasks.entries import Path
from fcbench.references import iter_references
from fcbench.sample import Sample, Tool, sample_from_dict

TARGET_PRECISION = 0.8
TARGET_RECALL = 0.9
TOOL_PREFIX = "tool:"


@dataclass(frozen=True)
class TrueAmbiguity:
    key: str  # `call.argument`, or `tool:NAME` for a dropped tool
    reason: str


def removed_ambiguities(draft: Sample, gold: Sample, deletions: Mapping[str, set[Path]],
                        dropped_tools: Sequence[str] = ()) -> list[TrueAmbiguity]:
    """The ambiguities an annotator removed from `draft` to make `gold`. `deletions` are the
    deleted entries' paths by draft call label (as `annotate.tasks.single.Correction` holds them)."""
    found: dict[str, str] = {}
    gold_arguments = {call.label: call.arguments for call in gold.all_calls()}
    draft_arguments = {call.label: call.arguments for call in draft.all_calls()}
    for key, picks in picked_entries(draft).items():
        label, argument = key.split(".", 1)
        for pick in picks:
            if pick.distinct_values < 2:
                continue  # every entry gives the same value: deleting some changes nothing here
            deleted = [path for path in deletions.get(pick.label, ()) if tuple(path[:-1]) == pick.list_path]
            if deleted:
                found.setdefault(key, f"{len(deleted)} entries of {pick.list_id} deleted")
            elif _repointed(draft_arguments[label].get(argument), gold_arguments.get(label, {}).get(argument),
                            pick.label, pick.list_path):
                found.setdefault(key, f"re-pointed at another entry of {pick.list_id}")
    for tool in dropped_tools:
        found[TOOL_PREFIX + tool] = "tool dropped"
    return [TrueAmbiguity(key, reason) for key, reason in found.items()]


def _repointed(before: Any, after: Any, label: str, list_path: Path) -> bool:
    """The gold reads another item of the same list than the draft did."""
    if after is None or before == after:
        return False
    def items(value: Any) -> set[Path]:
        return {reference.path[len(list_path):len(list_path) + 1] for reference in iter_references(value)
                if reference.label == label and tuple(reference.path[:len(list_path)]) == list_path
                and len(reference.path) > len(list_path)}
    was, now = items(before), items(after)
    return bool(was) and bool(now) and was != now


def is_hit(flag: Ambiguity, truth_keys: set[str]) -> bool:
    if flag.kind == OVERLAPPING_TOOLS:
        return any(TOOL_PREFIX + tool in truth_keys for tool in flag.tools)
    return flag.key in truth_keys


def _recalled(key: str, flags: Sequence[Ambiguity]) -> bool:
    if key.startswith(TOOL_PREFIX):
        return any(key[len(TOOL_PREFIX):] in flag.tools for flag in flags if flag.kind == OVERLAPPING_TOOLS)
    return any(flag.key == key for flag in flags)


@dataclass
class WarningQuality:
    samples: int = 0
    warnings: int = 0
    true_warnings: int = 0
    ambiguities: int = 0
    recalled: int = 0
    false_warnings: list[str] = field(default_factory=list)  # `sample: key`, for a person to look at
    missed: list[str] = field(default_factory=list)

    @property
    def precision(self) -> float | None:
        """Share of warnings that are real ambiguities (None: no warning raised)."""
        return self.true_warnings / self.warnings if self.warnings else None

    @property
    def recall(self) -> float | None:
        """Share of real ambiguities warned about (None: there were none)."""
        return self.recalled / self.ambiguities if self.ambiguities else None

    def add(self, sample_id: str, flags: Sequence[Ambiguity], truths: Iterable[TrueAmbiguity]) -> None:
        keys = {truth.key for truth in truths}
        self.samples += 1
        self.warnings += len(flags)
        self.ambiguities += len(keys)
        for flag in flags:
            if is_hit(flag, keys):
                self.true_warnings += 1
            else:
                self.false_warnings.append(f"{sample_id}: {flag.key}")
        for key in sorted(keys):
            if _recalled(key, flags):
                self.recalled += 1
            else:
                self.missed.append(f"{sample_id}: {key}")

    def meets_target(self) -> bool:
        precision = 1.0 if self.precision is None else self.precision
        recall = 1.0 if self.recall is None else self.recall
        return precision >= TARGET_PRECISION and recall >= TARGET_RECALL

    def as_dict(self) -> dict[str, Any]:
        def rounded(value: float | None) -> float | None:
            return None if value is None else round(value, 4)
        return {"samples": self.samples, "warnings": self.warnings, "true_warnings": self.true_warnings,
                "ambiguities": self.ambiguities, "recalled": self.recalled,
                "precision": rounded(self.precision), "recall": rounded(self.recall),
                "target": {"precision": TARGET_PRECISION, "recall": TARGET_RECALL},
                "false_warnings": self.false_warnings, "missed": self.missed}


# ------------------------------------------------------------------------------- the checked set
@dataclass(frozen=True)
class CheckedDraft:
    """One line of tests/data/ambiguity_checked.jsonl: a draft and its hand-found ambiguities."""

    sample: Sample
    pipeline: str
    split: str  # "hand_checked" (the 50) or "held_out"
    truths: tuple[TrueAmbiguity, ...]


def checked_draft(row: Mapping[str, Any], catalogs: Mapping[str, Mapping[str, Tool]]) -> CheckedDraft:
    """A line of the checked set as a sample: its tools are stored by name (the drafts' tools are
    exactly their pipeline's catalog entries), so they are put back from `catalogs[pipeline]`."""
    catalog = catalogs[row["pipeline"]]
    tools = [catalog[name].model_dump(mode="json", exclude_unset=True) for name in row["tool_names"]]
    sample = sample_from_dict({**row["draft"], "tools": tools})
    truths = tuple(TrueAmbiguity(item["key"], item["reason"]) for item in row["ambiguities"])
    return CheckedDraft(sample, str(row["pipeline"]), str(row.get("split", "hand_checked")), truths)


def baseline_warnings(sample: Sample) -> list[Ambiguity]:
    """The previous rule, as the baseline: a warning for every argument picked from a list in which
    several entries hold the field, whatever the query says and whether the values differ (the
    old panel even raised one per source entry; here it is counted once per (call, argument))."""
    flags = []
    for key, picks in picked_entries(sample).items():
        if any(pick.entries >= 2 for pick in picks):
            label, argument = key.split(".", 1)
            flags.append(Ambiguity("response_entries", key, call=label, argument=argument))
    return flags
