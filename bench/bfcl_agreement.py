"""Agreement of fcbench's BFCL AST checker with the leaderboard's own checker.

Not a unit test: the reference (the `bfcl-eval` package) is not a dependency of fcbench. Install it
in a throwaway virtualenv, without its dependencies (only the AST checker is used):

    python -m venv /tmp/bfclvenv
    /tmp/bfclvenv/bin/pip install --no-deps bfcl-eval

then run, from the repository root:

    .venv/bin/python bench/bfcl_agreement.py [--reference-python /tmp/bfclvenv/bin/python]
                                             [--per-item 6] [--seed 0] [--json]

The reference's model-registry module imports every provider SDK; the driver stands in for it with a
minimal module (no model renames function names), the rest of the reference runs unchanged.

For every item of the published single-turn BFCL files with possible answers, the script makes
several perturbed predictions (gold candidates, other candidates, case and spacing, int <-> float,
bool for int, strings for numbers, omitted/extra/missing parameters, renamed functions, wrong
counts, shuffled parallel calls, wrong values...), grades each with fcbench in compat mode and in
default mode, and with the reference, and compares (valid, error_type).

Last figures (bfcl-eval 2026.3.23, BFCL v4 files at 6ea5797, 2 351 items):
- seed 1, 12 per item: 20 558 predictions, reference accepts 31.9%; compat mode agrees on
  100% of verdicts and error types; default mode on 99.97% (6 differences, all documented fixes:
  ints in float lists, complete pairing in parallel items such as parallel_178);
- seeds 0, 2, 5 (8-10 per item, 14-17.5k predictions): compat 100% / 100% each time.
Checker time for 20k predictions: reference 0.85 s, compat 0.40 s, default 0.81 s (2 cores).
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from fcbench.formats.bfcl import AST_CATEGORIES  # noqa: E402
from fcbench.score.bfcl import check_bfcl, first_candidate_prediction  # noqa: E402

BFCL = REPO.parent / "shared" / "external" / "bfcl"
CATEGORIES = list(AST_CATEGORIES)

# Runs inside the reference virtualenv: reads cases, writes the reference's verdicts.
_REFERENCE_DRIVER = r'''
import json, sys, time, types

class _ModelConfig:
    underscore_to_dot = False

class _Registry(dict):
    def __missing__(self, key):
        return _ModelConfig()

stub = types.ModuleType("bfcl_eval.constants.model_config")
stub.MODEL_CONFIG_MAPPING = _Registry()
sys.modules["bfcl_eval.constants.model_config"] = stub

from bfcl_eval.constants.enums import Language
from bfcl_eval.eval_checker.ast_eval.ast_checker import ast_checker

cases = json.load(open(sys.argv[1]))
out = []
start = time.perf_counter()
for case in cases:
    try:
        r = ast_checker(case["functions"], case["prediction"], case["gold"], Language.PYTHON,
                        case["category"], "stub-model")
        out.append([bool(r["valid"]), None if r["valid"] else r.get("error_type")])
    except Exception as exc:  # the reference crashes on some inputs: record it
        out.append([None, "crash:" + type(exc).__name__])
elapsed = time.perf_counter() - start
json.dump({"verdicts": out, "seconds": elapsed}, open(sys.argv[2], "w"))
'''


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def load_items() -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    items = []
    for category in CATEGORIES:
        questions = _lines(BFCL / f"BFCL_v4_{category}.json")
        answers = _lines(BFCL / f"possible_answer_BFCL_v4_{category}.json")
        items.extend((category, q, a) for q, a in zip(questions, answers))
    return items


# ------------------------------------------------------------------------------------------------
# Perturbations: each takes (prediction, question, answer, rng) and returns a new prediction or None


def _random_candidates(pred, question, answer, rng):
    """Any candidate of each argument ("" = leave it out)."""
    out = []
    for gold in answer["ground_truth"]:
        name, by_arg = next(iter(gold.items()))
        args = {}
        for arg, candidates in by_arg.items():
            if not candidates:
                continue
            choice = rng.choice(candidates)
            if choice != "":
                args[arg] = choice
        out.append({name: args})
    return out


def _arguments(pred, rng):
    calls = [c for c in pred if next(iter(c.values()))]
    if not calls:
        return None, None
    call = rng.choice(calls)
    name = next(iter(call))
    return call[name], rng.choice(sorted(call[name]))


def _mutate_value(pred, rng, change):
    pred = copy.deepcopy(pred)
    arguments, param = _arguments(pred, rng)
    if arguments is None:
        return None
    new = change(arguments[param], rng)
    if new is _SKIP:
        return None
    arguments[param] = new
    return pred


_SKIP = object()


def _case_and_space(value, rng):
    if isinstance(value, str):
        return rng.choice([value.upper(), value.lower(), f" {value} ", value.replace(" ", ""), value.title()])
    if isinstance(value, list) and value and isinstance(value[0], str):
        return [v.upper() for v in value]
    if isinstance(value, dict):
        return {k: (v.upper() if isinstance(v, str) else v) for k, v in value.items()}
    return _SKIP


def _int_float_swap(value, rng):
    if type(value) is float and value.is_integer():
        return int(value)
    if type(value) is int:
        return float(value)
    if isinstance(value, list) and value and all(type(v) in (int, float) for v in value):
        return [int(v) if type(v) is float and v.is_integer() else float(v) for v in value]
    return _SKIP


def _bool_for_int(value, rng):
    if type(value) is int and value in (0, 1):
        return bool(value)
    if isinstance(value, list) and value and all(type(v) is int and v in (0, 1) for v in value):
        return [bool(v) for v in value]
    return _SKIP


def _string_for_number(value, rng):
    return str(value) if type(value) in (int, float) else _SKIP


def _wrong_value(value, rng):
    if isinstance(value, str):
        return value + " extra"
    if type(value) in (int, float):
        return value + 1
    if type(value) is bool:
        return not value
    if isinstance(value, list):
        return value[:-1] if value else ["x"]
    if isinstance(value, dict) and value:
        key = rng.choice(sorted(value))
        return {k: v for k, v in value.items() if k != key}
    return _SKIP


def _reverse_list(value, rng):
    return value[::-1] if isinstance(value, list) and len(value) > 1 and value != value[::-1] else _SKIP


def _drop_argument(pred, question, answer, rng):
    pred = copy.deepcopy(pred)
    arguments, param = _arguments(pred, rng)
    if arguments is None:
        return None
    del arguments[param]
    return pred


def _extra_argument(pred, question, answer, rng):
    pred = copy.deepcopy(pred)
    if not pred:
        return None
    call = rng.choice(pred)
    name = next(iter(call))
    docs = {d["name"]: d for d in question["function"]}
    known = sorted(set(docs[name]["parameters"]["properties"]) - set(call[name])) if name in docs else []
    param = rng.choice(known) if known and rng.random() < 0.5 else "unknown_param"
    call[name][param] = rng.choice([1, "x", True, 2.5])
    return pred


def _rename(pred, question, answer, rng):
    pred = copy.deepcopy(pred)
    if not pred:
        return None
    index = rng.randrange(len(pred))
    name, args = next(iter(pred[index].items()))
    others = [d["name"] for d in question["function"] if d["name"] != name]
    pred[index] = {(rng.choice(others) if others and rng.random() < 0.5 else name + "_x"): args}
    return pred


def _duplicate_call(pred, question, answer, rng):
    return pred + [copy.deepcopy(rng.choice(pred))] if pred else None


def _drop_call(pred, question, answer, rng):
    return pred[:-1] if pred else None


def _shuffle(pred, question, answer, rng):
    if len(pred) < 2:
        return None
    shuffled = copy.deepcopy(pred)
    rng.shuffle(shuffled)
    return shuffled


def _value_change(change):
    return lambda pred, question, answer, rng: _mutate_value(pred, rng, change)


PERTURBATIONS = {
    "other_candidates": _random_candidates,
    "case_space": _value_change(_case_and_space),
    "int_float_swap": _value_change(_int_float_swap),
    "bool_for_int": _value_change(_bool_for_int),
    "string_for_number": _value_change(_string_for_number),
    "wrong_value": _value_change(_wrong_value),
    "reversed_list": _value_change(_reverse_list),
    "drop_argument": _drop_argument,
    "extra_argument": _extra_argument,
    "rename": _rename,
    "duplicate_call": _duplicate_call,
    "drop_call": _drop_call,
    "shuffle": _shuffle,
}


def make_cases(per_item: int, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    cases = []
    kinds = sorted(PERTURBATIONS)
    for category, question, answer in load_items():
        gold = first_candidate_prediction(answer, question)
        cases.append(_case(category, question, answer, gold, "gold"))
        for _ in range(per_item):
            kind = rng.choice(kinds)
            base = gold if rng.random() < 0.7 else _random_candidates(gold, question, answer, rng)
            prediction = PERTURBATIONS[kind](base, question, answer, rng)
            if prediction is not None:
                cases.append(_case(category, question, answer, prediction, kind))
    return cases


def _case(category, question, answer, prediction, kind) -> dict[str, Any]:
    return {
        "id": question["id"],
        "kind": kind,
        "category": category,
        "functions": question["function"],
        "gold": answer["ground_truth"],
        "prediction": prediction,
    }


# ------------------------------------------------------------------------------------------------


def ours(cases: list[dict[str, Any]], compat: bool) -> tuple[list[list[Any]], float]:
    verdicts = []
    start = time.perf_counter()
    for case in cases:
        question = {"id": case["id"], "function": case["functions"]}
        answer = {"ground_truth": case["gold"]}
        try:
            v = check_bfcl(question, answer, case["prediction"], case["category"], compat)
            verdicts.append([v.valid, v.error_type])
        except ValueError as exc:
            verdicts.append([None, "crash:" + type(exc).__name__])
    return verdicts, time.perf_counter() - start


def reference(cases: list[dict[str, Any]], python: str) -> tuple[list[list[Any]], float]:
    with tempfile.TemporaryDirectory() as tmp:
        cases_path, out_path, driver = Path(tmp) / "cases.json", Path(tmp) / "out.json", Path(tmp) / "driver.py"
        cases_path.write_text(json.dumps(cases), encoding="utf-8")
        driver.write_text(_REFERENCE_DRIVER, encoding="utf-8")
        subprocess.run([python, str(driver), str(cases_path), str(out_path)], check=True)
        result = json.loads(out_path.read_text(encoding="utf-8"))
    return result["verdicts"], result["seconds"]


def compare(cases, mine, theirs) -> dict[str, Any]:
    same_verdict = sum(m[0] == t[0] for m, t in zip(mine, theirs))
    same_type = sum(m == t for m, t in zip(mine, theirs))
    differences = Counter(
        (case["kind"], f"ours={m[0]}/{m[1]}", f"ref={t[0]}/{t[1]}")
        for case, m, t in zip(cases, mine, theirs)
        if m != t
    )
    return {
        "valid_agreement": same_verdict / len(cases),
        "valid_and_error_type_agreement": same_type / len(cases),
        "differences": [[*key, n] for key, n in differences.most_common(15)],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference-python", default="/tmp/bfclvenv/bin/python")
    parser.add_argument("--per-item", type=int, default=6)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="print machine-readable results only")
    args = parser.parse_args()

    cases = make_cases(args.per_item, args.seed)
    theirs, ref_seconds = reference(cases, args.reference_python)
    compat, compat_seconds = ours(cases, compat=True)
    default, default_seconds = ours(cases, compat=False)
    report = {
        "cases": len(cases),
        "cases_by_kind": dict(Counter(c["kind"] for c in cases)),
        "reference_valid_share": sum(bool(t[0]) for t in theirs) / len(cases),
        "compat": compare(cases, compat, theirs),
        "default": compare(cases, default, theirs),
        "seconds": {"reference": ref_seconds, "compat": compat_seconds, "default": default_seconds},
    }
    if args.json:
        print(json.dumps(report))
        return
    print(f"{report['cases']} predictions over {len(load_items())} items; reference accepts "
          f"{report['reference_valid_share']:.1%}")
    for mode in ("compat", "default"):
        r = report[mode]
        print(f"{mode:8s} valid agreement {r['valid_agreement']:.4%}, valid+error_type "
              f"{r['valid_and_error_type_agreement']:.4%}")
        for kind, mine, ref, n in r["differences"]:
            print(f"    {n:5d}  {kind:18s} {mine:60s} {ref}")
    s = report["seconds"]
    print(f"checker time: reference {s['reference']:.2f}s, compat {s['compat']:.2f}s, default {s['default']:.2f}s")
    print(f"compat time per prediction / reference time per prediction: {s['compat'] / s['reference']:.2f}")


if __name__ == "__main__":
    main()
