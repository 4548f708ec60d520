"""Does the gold audit catch wrong gold? Seeded corruptions of correct samples, measured.

Takes the validated samples of the bundled builds (`travel`, `travel-full`: built offline first when
their validated.jsonl is missing), and for each kind of wrong gold the issue lists makes one
corrupted copy of as many samples as the kind applies to (capped by `--per-kind`), with the
pipeline's seed:

- `date_off_by_one`:    a date argument one day later or earlier;
- `duration_changed`:   the end of a date pair (a stay, a return flight, a car rental) 1-3 days off;
- `wrong_entry`:        a reference chosen by a constraint ("the cheapest hotel rated above 8") moved
                        to another entry of the same list;
- `call_dropped`:       a call nobody reads removed;
- `call_added`:         a call added: the same call again, or a call reading another entry;
- `sibling_reference`:  a reference chosen by an ordinal or a name moved to its neighbouring entry;
- `swapped_argument`:   two arguments of one call of the same type swapped (dates, places, times).

Each corrupted sample is executed again (its responses are then what the tools answer for the wrong
path, as a defective build would have them) and judged by the filter's checks that need no LLM:
`static_verdict` (format, grounding at the provenance's words) then `audit_verdict` (the gold audit).
A path the tools refuse is counted as caught by execution. The clean samples go through the same
checks: a reject there is a false reject. Two modes: `recorded` keeps the sample's provenance map
(as stage3 writes it), `inferred` removes it (the filter infers one, as for a file from elsewhere).

  .venv/bin/python bench/gold_audit.py                      # travel and travel-full, both modes
  .venv/bin/python bench/gold_audit.py --pipelines travel --per-kind 50

The last line: the lowest recall over kind x pipeline and the highest false-reject rate, as built
(the recorded mode: what the filter sees for every sample the pipeline made); the inferred mode's
figures are printed beside them (what the rules alone catch in a sample without its map).
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from fcbench.checks.provenance import PROVENANCE_META  # noqa: E402
from fcbench.checks.verdicts import audit_verdict, static_verdict  # noqa: E402
from fcbench.config import load_pipelines  # noqa: E402
from fcbench.environments.execution import execute_gold_paths  # noqa: E402
from fcbench.environments.from_config import open_environment  # noqa: E402
from fcbench.references import format_reference, iter_references, parse_reference  # noqa: E402
from fcbench.resolve import walk_path  # noqa: E402
from fcbench.sample import Call, Sample  # noqa: E402

KINDS = ("date_off_by_one", "duration_changed", "wrong_entry", "call_dropped", "call_added", "sibling_reference",
         "swapped_argument")
MODES = ("recorded", "inferred")
GOAL_RECALL, GOAL_FALSE_REJECTS = 0.95, 0.01


# ------------------------------------------------------------------------------- corruptions
def _calls(sample: Sample) -> list[Call]:
    return sample.all_calls()


def _with_argument(sample: Sample, label: str, name: str, value: Any) -> Sample:
    steps = [[c.model_copy(update={"arguments": {**c.arguments, name: value}}) if c.label == label else c for c in step]
             for step in sample.calls]
    return sample.model_copy(update={"calls": steps})


def _iso(value: Any) -> bool:
    if not isinstance(value, str) or len(value) != 10:
        return False
    try:
        date.fromisoformat(value)
    except ValueError:
        return False
    return True


def _shift(value: str, days: int) -> str:
    return (date.fromisoformat(value) + timedelta(days=days)).isoformat()


def date_off_by_one(sample: Sample, rng: random.Random) -> Sample | None:
    sites = [(c.label, n, v) for c in _calls(sample) for n, v in c.arguments.items() if _iso(v)]
    if not sites:
        return None
    label, name, value = rng.choice(sites)
    return _with_argument(sample, label, name, _shift(value, rng.choice((-1, 1))))


def duration_changed(sample: Sample, rng: random.Random) -> Sample | None:
    pairs = []
    for c in _calls(sample):
        dates = sorted(((v, n) for n, v in c.arguments.items() if _iso(v)))
        if len(dates) == 2 and dates[0][0] < dates[1][0]:
            pairs.append((c.label, dates[1][1], dates[1][0]))
    if not pairs:
        return None
    label, name, value = rng.choice(pairs)
    return _with_argument(sample, label, name, _shift(value, rng.choice((-3, -2, -1, 1, 2, 3))))


def _list_references(sample: Sample, chooser: Callable[[Sample, Call, Any], bool]) -> list[tuple[Call, str, Any, int]]:
    """(call, argument, reference, position of the list index) of references with a list index."""
    found = []
    for c in _calls(sample):
        for name, value in c.arguments.items():
            reference = parse_reference(value)
            if reference is None:
                continue
            for position, part in enumerate(reference.path):
                if isinstance(part, int) and chooser(sample, c, reference):
                    found.append((c, name, reference, position))
                    break
    return found


def _list_size(sample: Sample, reference: Any, position: int) -> int:
    source = next((c for c in _calls(sample) if c.label == reference.label), None)
    if source is None or "response" not in source.model_fields_set:
        return 0
    try:
        entries = walk_path(source.response, reference.path[:position])
    except (LookupError, TypeError):
        return 0
    return len(entries) if isinstance(entries, list) else 0


def _picked(sample: Sample, call: Call, reference: Any) -> bool:
    return any(r.get("reader") == call.label and r.get("source") == reference.label for r in sample.meta.get("picks") or [])


def _moved_reference(sample: Sample, rng: random.Random, chooser, step: int | None) -> Sample | None:
    options = [(c, n, r, p) for c, n, r, p in _list_references(sample, chooser) if _list_size(sample, r, p) > 1]
    if not options:
        return None
    call, name, reference, position = rng.choice(options)
    size = _list_size(sample, reference, position)
    index = reference.path[position]
    if step is None:
        new_index = rng.choice([i for i in range(size) if i != index])
    else:
        new_index = index + step if index + step < size else index - step
    path = reference.path[:position] + (new_index,) + reference.path[position + 1:]
    # every argument of the call reading that entry moves with it (latitude and longitude together)
    steps = []
    for s in sample.calls:
        row = []
        for c in s:
            if c.label == call.label:
                arguments = {}
                for n, v in c.arguments.items():
                    r = parse_reference(v)
                    if r is not None and r.label == reference.label and r.path[:position + 1] == reference.path[:position + 1]:
                        v = format_reference(r.label, path[:position + 1] + r.path[position + 1:])
                    arguments[n] = v
                c = c.model_copy(update={"arguments": arguments})
            row.append(c)
        steps.append(row)
    return sample.model_copy(update={"calls": steps})


def wrong_entry(sample: Sample, rng: random.Random) -> Sample | None:
    return _moved_reference(sample, rng, _picked, None)


def sibling_reference(sample: Sample, rng: random.Random) -> Sample | None:
    return _moved_reference(sample, rng, lambda s, c, r: not _picked(s, c, r), 1)


def call_dropped(sample: Sample, rng: random.Random) -> Sample | None:
    read = {ref.label for c in _calls(sample) for ref in iter_references(c.arguments)}
    leaves = [c.label for c in _calls(sample) if c.label not in read]
    if len(_calls(sample)) < 2 or not leaves:
        return None
    gone = rng.choice(leaves)
    steps = [[c for c in step if c.label != gone] for step in sample.calls]
    return sample.model_copy(update={"calls": [step for step in steps if step]})


def call_added(sample: Sample, rng: random.Random) -> Sample | None:
    calls = _calls(sample)
    labels = {c.label for c in calls}
    label = next(f"var_{n}" for n in range(len(calls) + 1, len(calls) + 100) if f"var_{n}" not in labels)
    if rng.random() < 0.5:  # the same call again, as its own last step
        copy = rng.choice(calls)
        added = Call(label=label, name=copy.name, arguments=dict(copy.arguments))
    else:  # a call reading another entry than the one asked for
        options = [(c, r, p) for c, _, r, p in _list_references(sample, lambda s, c, r: True) if _list_size(sample, r, p) > 1]
        if not options:
            copy = rng.choice(calls)
            added = Call(label=label, name=copy.name, arguments=dict(copy.arguments))
        else:
            reader, reference, position = rng.choice(options)
            index = reference.path[position]
            size = _list_size(sample, reference, position)
            new_index = rng.choice([i for i in range(size) if i != index])
            arguments = {}
            for n, v in reader.arguments.items():
                r = parse_reference(v)
                if r is not None and r.label == reference.label and r.path[:position + 1] == reference.path[:position + 1]:
                    v = format_reference(r.label, r.path[:position] + (new_index,) + r.path[position + 1:])
                arguments[n] = v
            added = Call(label=label, name=reader.name, arguments=arguments)
    return sample.model_copy(update={"calls": [*sample.calls, [added]]})


def swapped_argument(sample: Sample, rng: random.Random) -> Sample | None:
    options = []
    for c in _calls(sample):
        names = list(c.arguments)
        for i, a in enumerate(names):
            for b in names[i + 1:]:
                va, vb = c.arguments[a], c.arguments[b]
                if va == vb or type(va) is not type(vb) or isinstance(va, (dict, list, bool)) or va is None:
                    continue
                same_kind = (_iso(va) and _iso(vb)) or (parse_reference(va) and parse_reference(vb)) or \
                    (isinstance(va, str) and ":" in va and ":" in vb and not parse_reference(va))
                if same_kind:
                    options.append((c.label, a, b, va, vb))
    if not options:
        return None
    label, a, b, va, vb = rng.choice(options)
    return _with_argument(_with_argument(sample, label, a, vb), label, b, va)


CORRUPT = {"date_off_by_one": date_off_by_one, "duration_changed": duration_changed, "wrong_entry": wrong_entry,
           "call_dropped": call_dropped, "call_added": call_added, "sibling_reference": sibling_reference,
           "swapped_argument": swapped_argument}


# ---------------------------------------------------------------------------------- judging
@dataclass
class Tally:
    tried: int = 0
    caught: int = 0
    by: Counter = field(default_factory=Counter)

    @property
    def recall(self) -> float:
        return self.caught / self.tried if self.tried else float("nan")


def without_provenance(sample: Sample) -> Sample:
    return sample.model_copy(update={"meta": {k: v for k, v in sample.meta.items() if k not in (PROVENANCE_META, "grounding")}})


def judge(samples: list[Sample], environment: Any, settings: Any) -> list[str | None]:
    """The reject reason of each sample (None: kept) by the filter's LLM-free checks."""
    runs = execute_gold_paths(samples, environment)
    reasons: list[str | None] = []
    for sample, run in zip(samples, runs):
        if not run.ok:
            reasons.append("execution")
            continue
        verdict = static_verdict(run.sample, settings)
        if verdict.kept:
            verdict = audit_verdict(run.sample, verdict, settings)
        reasons.append(None if verdict.kept else verdict.reason)
    return reasons


def measure(pipeline_name: str, per_kind: int, seed: int) -> tuple[dict[tuple[str, str], Tally], dict[str, Tally]]:
    pipeline = load_pipelines(REPO / "pipelines.yaml").get_pipeline(pipeline_name)
    validated = pipeline.build_dir / "validated.jsonl"
    if not validated.is_file():
        subprocess.run([sys.executable, "-m", "fcbench.cli", "run", pipeline_name, "--offline"], cwd=REPO, check=True,
                       stdout=subprocess.DEVNULL)
    clean = [Sample.model_validate(json.loads(line)) for line in validated.read_text(encoding="utf-8").splitlines()
             if line.strip()]
    settings = pipeline.stages.filter.model_copy(update={"grounding": "reject", "gold_audit": "reject"})
    results: dict[tuple[str, str], Tally] = {}
    false: dict[str, Tally] = {}
    with open_environment(pipeline, iter(clean)) as environment:
        for mode in MODES:
            prepared = clean if mode == "recorded" else [without_provenance(s) for s in clean]
            verdicts = judge(prepared, environment, settings)
            false[mode] = Tally(len(prepared), sum(v is not None for v in verdicts),
                                Counter(v for v in verdicts if v is not None))
            for kind in KINDS:
                rng = random.Random(f"{seed}:{pipeline_name}:{kind}")
                order = list(range(len(prepared)))
                rng.shuffle(order)
                corrupted = []
                for index in order:
                    made = CORRUPT[kind](prepared[index], random.Random(f"{seed}:{kind}:{prepared[index].id}"))
                    if made is not None and made.calls != prepared[index].calls:
                        corrupted.append(made)
                    if len(corrupted) >= per_kind:
                        break
                verdicts = judge(corrupted, environment, settings)
                results[(mode, kind)] = Tally(len(corrupted), sum(v is not None for v in verdicts),
                                              Counter(v for v in verdicts if v is not None))
    return results, false


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pipelines", nargs="+", default=["travel", "amadeus", "travel-full"])
    parser.add_argument("--per-kind", type=int, default=200, help="corrupted samples per kind, pipeline and mode")
    parser.add_argument("--seed", type=int, default=26)
    parser.add_argument("--json", type=Path, help="also write every figure to this file")
    args = parser.parse_args()
    worst_recall, worst_false = 1.0, 0.0
    report: dict[str, Any] = {}
    for name in args.pipelines:
        results, false = measure(name, args.per_kind, args.seed)
        print(f"\n{name}")
        print(f"{'kind':<20} " + " ".join(f"{mode + ' recall':>18}" for mode in MODES) + "   caught by (recorded)")
        for kind in KINDS:
            cells = []
            for mode in MODES:
                tally = results[(mode, kind)]
                cells.append(f"{tally.caught:>5}/{tally.tried:<5} {tally.recall:>6.3f}" if tally.tried else f"{'n/a':>18}")
                if tally.tried and mode == "recorded":
                    worst_recall = min(worst_recall, tally.recall)
            top = ", ".join(f"{reason} {n}" for reason, n in results[("recorded", kind)].by.most_common(3))
            print(f"{kind:<20} " + " ".join(f"{c:>18}" for c in cells) + f"   {top}")
        for mode in MODES:
            tally = false[mode]
            rate = tally.caught / tally.tried if tally.tried else 0.0
            if mode == "recorded":
                worst_false = max(worst_false, rate)
            print(f"false rejects ({mode}): {tally.caught}/{tally.tried} = {rate:.4f}"
                  + (f"  ({', '.join(f'{r} {n}' for r, n in tally.by.most_common(5))})" if tally.caught else ""))
        report[name] = {"recall": {f"{m}:{k}": [t.caught, t.tried] for (m, k), t in results.items()},
                        "false_rejects": {m: [t.caught, t.tried, dict(t.by)] for m, t in false.items()}}
    if args.json:
        args.json.write_text(json.dumps(report, indent=1, sort_keys=True), encoding="utf-8")
    met = worst_recall >= GOAL_RECALL and worst_false <= GOAL_FALSE_REJECTS
    print(f"as built (recorded provenance): lowest recall {worst_recall:.3f} (goal >= {GOAL_RECALL}), highest "
          f"false-reject rate {worst_false:.4f} (goal <= {GOAL_FALSE_REJECTS}): {'goals met' if met else 'goals NOT met'}")


if __name__ == "__main__":
    main()
