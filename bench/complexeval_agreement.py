"""Agreement of fcbench's ComplexEval (compat and default modes) with the published ComplexFuncBench runner.

Not a unit test: the reference (THUDM/ComplexFuncBench, no licence file, not on PyPI) is neither a
dependency nor vendored. Its source is read at run time from a copy you fetched yourself: a clone,
or a bare git directory (the `fetch` tool gives `/work/.mirror/THUDM+ComplexFuncBench/repo`):

    git clone https://github.com/THUDM/ComplexFuncBench /tmp/ComplexFuncBench     # or any copy
    .venv/bin/python bench/complexeval_agreement.py --reference /tmp/ComplexFuncBench
        [--reference-python /tmp/cfb-ref-venv/bin/python] [--per-sample 150] [--seed 0] [--json]

(`--reference` defaults to $CFB_REFERENCE, else the fetch tool's mirror path.) The files the runner
needs (runner/base_runner.py, runner/gpt_runner.py, utils/compare_method.py, utils/utils.py,
utils/*.json, prompts/) are copied into a temporary folder for the run and deleted after it. A
throwaway virtualenv (`--reference-python`; created with numpy and scipy from PyPI when missing)
runs them. What cannot run offline is stood in for, in that folder only:
- `models/gpt.py`: the model under test replays the scripted trajectory; the LLM comparison layer
  (a paid GPT-4o call) answers "not equal" and is COUNTED;
- `utils/rapidapi.py`: the Booking API of the response layer (paid) fails as offline and is COUNTED;
- `FlagEmbedding` / `torch`: the BGE embedding that pairs non-identical calls is replaced by a
  deterministic hashed character-trigram embedding; fcbench's compat mode is given the same
  similarity, so both pair calls alike and what is compared is the protocol, not the embedding.

For each of the 3 samples of `datasets/complexfuncbench-example/trips.jsonl`, the script makes
`--per-sample` scripted trajectories (the gold path, then random perturbations: free look-ups
skipped or repeated, duplicate and extra calls, parallel calls split over turns or steps merged,
2.0 for 2, wrong values on and off the exact-match list, missing, extra and mistyped parameters,
unknown functions, undecodable arguments, early stops, calls after the end...), replays each
through the reference runner and through `fcbench.score.complexeval_compat` and the default mode,
and compares the success flag and the correct-call count. The LAST line is compat mode's agreement.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from fcbench.formats import read_samples  # noqa: E402
from fcbench.score.complexeval import (COMPLEXFUNCBENCH_OPTIONAL_FUNCTIONS, ComplexEvalOptions,  # noqa: E402
                                       score_trajectory)
from fcbench.score.complexeval_compat import CompatOptions, run_compat_trajectory  # noqa: E402

EXAMPLE = REPO / "datasets" / "complexfuncbench-example" / "trips.jsonl"
DEFAULT_MIRROR = "/work/.mirror/THUDM+ComplexFuncBench/repo"
REFERENCE_FILES = ["runner/base_runner.py", "runner/gpt_runner.py", "utils/compare_method.py", "utils/utils.py",
                   "utils/logger.py", "utils/exact_match_values.json", "utils/tool_info.json", "prompts/compare.py",
                   "prompts/prompts.py"]

# The stand-in embedding, shared by both sides (exec'd here, written into the reference's folder):
# unit-length hashed trigram counts, so the dot product is a cosine as with BGE's normalised output.
EMBEDDING_CODE = r'''
import json, zlib
import numpy as np

DIM = 256

def embed_text(text):
    try:
        text = json.dumps(json.loads(text), sort_keys=True, ensure_ascii=False)
    except ValueError:
        pass
    vector = np.zeros(DIM)
    for i in range(len(text) - 2):
        vector[zlib.crc32(text[i:i + 3].encode("utf-8")) % DIM] += 1.0
    norm = float(np.linalg.norm(vector))
    return vector / norm if norm else vector
'''

_STUB_FLAG = EMBEDDING_CODE + r'''
class FlagModel:
    def __init__(self, *args, **kwargs):
        pass

    def encode(self, texts):
        return np.array([embed_text(t) for t in texts])
'''

_STUB_TORCH = '''
class cuda:
    @staticmethod
    def empty_cache():
        pass
'''

_STUB_GPT = r'''
import json
from types import SimpleNamespace

PAID = {"llm_compare": 0}
SCRIPT = []


class GPTModel:
    """The LLM comparison layer (paid): counted, answers 'not equal'."""

    def __init__(self, model_name):
        self.model_name = model_name

    def __call__(self, prefix, prompt, **kwargs):
        PAID["llm_compare"] += 1
        return '{"is_equal": false, "reason": "offline stand-in"}'


def _sanitized(name):
    out = "".join(c if (c.isalnum() and c.isascii()) or c in "_-" else "-" for c in name)
    return out[:64]


class FunctionCallGPT:
    """The model under test: replays SCRIPT (lists of calls, then a text)."""

    def __init__(self, model_name):
        self.messages = []
        self.turn = 0

    def __call__(self, messages, tools=None, **kwargs):
        known = {t["function"]["name"] for t in tools or []}
        if self.turn >= len(SCRIPT):
            return SimpleNamespace(tool_calls=None, content=None)
        step = SCRIPT[self.turn]
        self.turn += 1
        if step is None or isinstance(step, str):
            return SimpleNamespace(tool_calls=None, content=step)
        if not step:
            return SimpleNamespace(tool_calls=[], content=None)
        calls = []
        for i, call in enumerate(step):
            arguments = call["arguments"]
            text = arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)
            name = _sanitized(call["name"])
            calls.append(SimpleNamespace(id=f"call_{self.turn}_{i}", function=SimpleNamespace(
                name=name if name in known else call["name"], arguments=text)))
        return SimpleNamespace(tool_calls=calls, content=None)
'''

_STUB_RAPIDAPI = '''
PAID = {"api_calls": 0}


class RapidAPICall:
    """The Booking API of the response layer (paid): counted, unreachable offline."""

    def __init__(self, tool, tool_info):
        pass

    def _call(self, call):
        PAID["api_calls"] += 1
        raise ConnectionError("offline")
'''

_DRIVER = r'''
import copy, json, sys, os
sys.path.insert(0, os.getcwd())
import models.gpt as gpt
import utils.rapidapi as rapidapi
from runner.gpt_runner import GPTRunner


class Quiet:
    def __getattr__(self, name):
        return lambda *a, **k: None


class Args:
    model_name = "scripted"


cases = json.load(open(sys.argv[1]))
out = []
for case in cases:
    gpt.SCRIPT[:] = case["turns"]
    before = (gpt.PAID["llm_compare"], rapidapi.PAID["api_calls"])
    try:
        runner = GPTRunner(Args(), Quiet())
        convs, message, turn_id, correct = runner.run(copy.deepcopy(case["item"]))
        error = None if message == "Success." else (message.get("error_type") if isinstance(message, dict)
                                                    else (message[0] or {}).get("error_type") if isinstance(message, list) and message else "unknown")
        out.append({"success": message == "Success.", "correct": correct, "error": error,
                    "llm": gpt.PAID["llm_compare"] - before[0], "api": rapidapi.PAID["api_calls"] - before[1]})
    except Exception as exc:
        out.append({"success": None, "correct": None, "error": "crash:" + type(exc).__name__,
                    "llm": gpt.PAID["llm_compare"] - before[0], "api": rapidapi.PAID["api_calls"] - before[1]})
json.dump(out, open(sys.argv[2], "w"))
'''


# ------------------------------------------------------------------------------------ the reference
def reference_source(reference: Path, into: Path) -> None:
    """Copy the runner's files from a clone or a bare git directory into `into`."""
    if (reference / "runner" / "base_runner.py").is_file():
        for name in REFERENCE_FILES:
            (into / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(reference / name, into / name)
        return
    archive = subprocess.run(["git", "--git-dir", str(reference), "archive", "HEAD", *REFERENCE_FILES],
                             check=True, capture_output=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)


def reference_python(path: str) -> str:
    if not Path(path).is_file():
        venv = Path(path).parents[1]
        print(f"creating the reference virtualenv {venv} (numpy, scipy)", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "numpy", "scipy"], check=True)
    return path


def run_reference(cases: list[dict[str, Any]], reference: Path, python: str) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="cfb-reference-") as tmp:
        root = Path(tmp)
        reference_source(reference, root)
        (root / "models").mkdir(exist_ok=True)
        (root / "models" / "gpt.py").write_text(_STUB_GPT, encoding="utf-8")
        (root / "utils" / "rapidapi.py").write_text(_STUB_RAPIDAPI, encoding="utf-8")
        (root / "FlagEmbedding.py").write_text(_STUB_FLAG, encoding="utf-8")
        (root / "torch.py").write_text(_STUB_TORCH, encoding="utf-8")
        (root / "driver.py").write_text(_DRIVER, encoding="utf-8")
        (root / "cases.json").write_text(json.dumps(cases), encoding="utf-8")
        subprocess.run([python, "driver.py", "cases.json", "out.json"], cwd=root, check=True)
        return json.loads((root / "out.json").read_text(encoding="utf-8"))


# -------------------------------------------------------------------------------- trajectories
def gold_turns(item: dict[str, Any]) -> list[list[dict[str, Any]]]:
    return [copy.deepcopy(turn["function_call"]) for turn in item["conversations"] if "function_call" in turn]


FREE = {"Location_to_Lat_Long", "Search_Hotel_Destination", "Search_Attraction_Location", "Search_Car_Location",
        "Search_Flight_Location", "Taxi_Search_Location"}


def _any_call(turns, rng, predicate=lambda c: True):
    places = [(t, i) for t, turn in enumerate(turns) for i, c in enumerate(turn)
              if isinstance(c["arguments"], dict) and predicate(c)]
    return rng.choice(places) if places else None


def skip_free(turns, item, rng):
    kept = [[c for c in turn if c["name"] not in FREE or rng.random() < 0.3] for turn in turns]
    return [turn for turn in kept if turn]


def repeat_free(turns, item, rng):
    place = _any_call(turns, rng, lambda c: c["name"] in FREE)
    if place is None:
        return None
    t, i = place
    target = rng.randrange(t, len(turns))
    turns[target].append(copy.deepcopy(turns[t][i]))
    return turns


def duplicate_call(turns, item, rng):
    t = rng.randrange(len(turns))
    turns[t].append(copy.deepcopy(rng.choice(turns[t])))
    return turns


def split_parallel(turns, item, rng):
    out = []
    for turn in turns:
        out.extend([call] for call in turn)
    return out if len(out) > len(turns) else None


def merge_steps(turns, item, rng):
    if len(turns) < 2:
        return None
    t = rng.randrange(len(turns) - 1)
    return turns[:t] + [turns[t] + turns[t + 1]] + turns[t + 2:]


def int_to_float(turns, item, rng):
    place = _any_call(turns, rng, lambda c: any(type(v) is int for v in c["arguments"].values()))
    if place is None:
        return None
    call = turns[place[0]][place[1]]
    key = rng.choice([k for k, v in call["arguments"].items() if type(v) is int])
    call["arguments"][key] = float(call["arguments"][key])
    return turns


def wrong_value(turns, item, rng):
    place = _any_call(turns, rng, lambda c: bool(c["arguments"]))
    if place is None:
        return None
    call = turns[place[0]][place[1]]
    key = rng.choice(sorted(call["arguments"]))
    value = call["arguments"][key]
    if isinstance(value, bool):
        call["arguments"][key] = not value
    elif isinstance(value, (int, float)):
        call["arguments"][key] = value + rng.choice([1, 0.5])
    elif isinstance(value, str):
        call["arguments"][key] = rng.choice([value.upper(), value + " x", value.lower(), " " + value])
    else:
        return None
    return turns


def drop_param(turns, item, rng):
    place = _any_call(turns, rng, lambda c: bool(c["arguments"]))
    if place is None:
        return None
    call = turns[place[0]][place[1]]
    del call["arguments"][rng.choice(sorted(call["arguments"]))]
    return turns


def extra_param(turns, item, rng):
    place = _any_call(turns, rng)
    if place is None:
        return None
    call = turns[place[0]][place[1]]
    schema = next(f for f in item["functions"] if f["name"] == call["name"])["parameters"]["properties"]
    unused = sorted(set(schema) - set(call["arguments"]))
    if unused and rng.random() < 0.6:
        key = rng.choice(unused)
        kind = schema[key].get("type")
        call["arguments"][key] = {"string": "x", "number": 1, "integer": 1, "boolean": True, "array": []}.get(kind, 1)
    else:
        call["arguments"]["bogus"] = 1
    return turns


def wrong_type(turns, item, rng):
    place = _any_call(turns, rng, lambda c: any(isinstance(v, (int, float)) and not isinstance(v, bool)
                                                for v in c["arguments"].values()))
    if place is None:
        return None
    t, i = place
    bad = copy.deepcopy(turns[t][i])
    key = rng.choice([k for k, v in bad["arguments"].items() if isinstance(v, (int, float)) and not isinstance(v, bool)])
    bad["arguments"][key] = str(bad["arguments"][key])
    if rng.random() < 0.5:  # corrected at the next turn
        return turns[:t] + [turns[t][:i] + [bad] + turns[t][i + 1:]] + turns[t:]
    turns[t][i] = bad
    return turns


def other_function(turns, item, rng):
    place = _any_call(turns, rng)
    if place is None:
        return None
    call = turns[place[0]][place[1]]
    names = [f["name"] for f in item["functions"] if f["name"] != call["name"]]
    call["name"] = rng.choice(names + [call["name"] + "_v2"])
    return turns


def undecodable(turns, item, rng):
    place = _any_call(turns, rng)
    if place is None:
        return None
    call = turns[place[0]][place[1]]
    call["arguments"] = json.dumps(call["arguments"])[:-3]
    return turns


def stop_early(turns, item, rng):
    return turns[:rng.randrange(len(turns))] or None


def call_after_end(turns, item, rng):
    return turns + [[copy.deepcopy(rng.choice(turns[-1]))]]


def extra_unrelated(turns, item, rng):
    t = rng.randrange(len(turns))
    turns[t].append({"name": rng.choice([f["name"] for f in item["functions"]]), "arguments": {"query": "Paris"}})
    return turns


def shuffle_parallel(turns, item, rng):
    for turn in turns:
        rng.shuffle(turn)
    return turns


PERTURBATIONS = {f.__name__: f for f in (
    skip_free, repeat_free, duplicate_call, split_parallel, merge_steps, int_to_float, wrong_value, drop_param,
    extra_param, wrong_type, other_function, undecodable, stop_early, call_after_end, extra_unrelated,
    shuffle_parallel)}


def make_cases(per_sample: int, seed: int) -> list[dict[str, Any]]:
    rng = random.Random(seed)
    items = [json.loads(line) for line in EXAMPLE.read_text(encoding="utf-8").splitlines() if line.strip()]
    cases = []
    for item in items:
        cases.append({"item": item, "kind": "gold", "turns": gold_turns(item) + ["Here is what I found."]})
        made = 0
        while made < per_sample:
            kinds = rng.sample(sorted(PERTURBATIONS), rng.choice([1, 1, 2]))
            turns = gold_turns(item)
            for kind in kinds:
                turns = PERTURBATIONS[kind](turns, item, rng) if turns else None
            if not turns:
                continue
            ending = rng.choice(["Here is what I found."] * 8 + [None, ""])
            cases.append({"item": item, "kind": "+".join(kinds), "turns": turns + [ending]})
            made += 1
    return cases


# ------------------------------------------------------------------------------------------ ours
def ours(cases: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    namespace: dict[str, Any] = {}
    exec(EMBEDDING_CODE, namespace)  # noqa: S102 - our own constant code above, the same the reference gets
    embed = namespace["embed_text"]

    def similarity(predicted, golden):
        return float(embed(json.dumps(predicted, ensure_ascii=False)) @ embed(json.dumps(golden, ensure_ascii=False)))

    options = CompatOptions(similarity=similarity)
    # default mode as `score --metric complexeval --from complexfuncbench` runs it (free look-ups optional)
    default_options = ComplexEvalOptions(optional_functions=COMPLEXFUNCBENCH_OPTIONAL_FUNCTIONS)
    samples = {s.id: s for s in read_samples(EXAMPLE, "complexfuncbench")}
    compat, default = [], []
    for case in cases:
        sample = samples[case["item"]["id"]]
        verdict = run_compat_trajectory(sample, case["turns"], options)
        crashed = verdict.crash is not None
        compat.append({"success": None if crashed else verdict.success, "correct": None if crashed else verdict.n_correct_calls,
                       "error": "crash" if crashed else verdict.error_type, "paid": verdict.paid_layer_pairs})
        mine = score_trajectory(sample, case["turns"], default_options)
        default.append({"success": mine.success, "correct": mine.n_correct_calls, "error": mine.error_type})
    return compat, default


def compare(cases, mine, theirs, decidable) -> dict[str, Any]:
    def agree(m, t):
        crashed = t["success"] is None
        return (m["success"] is None) == crashed and (crashed or (m["success"] == t["success"] and m["correct"] == t["correct"]))

    agreeing = [agree(m, t) for m, t in zip(mine, theirs)]
    offline = [a for a, d in zip(agreeing, decidable) if d]
    differences = Counter(
        (case["kind"], f"ours={m['success']}/{m['correct']}/{m['error']}",
         f"ref={t['success']}/{t['correct']}/{t['error']}")
        for case, m, t, a in zip(cases, mine, theirs, agreeing) if not a)
    return {
        "agreement": sum(agreeing) / len(cases),
        "agreement_decidable_offline": sum(offline) / len(offline) if offline else 1.0,
        "success_agreement": sum(m["success"] == t["success"] for m, t in zip(mine, theirs)) / len(cases),
        "differences": [[*key, n] for key, n in differences.most_common(12)],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reference", default=os.environ.get("CFB_REFERENCE", DEFAULT_MIRROR),
                        help="a clone of THUDM/ComplexFuncBench or its bare git directory")
    parser.add_argument("--reference-python", default="/tmp/cfb-ref-venv/bin/python")
    parser.add_argument("--per-sample", type=int, default=150)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", action="store_true", help="print machine-readable results only")
    args = parser.parse_args()
    reference = Path(args.reference)
    if not reference.exists():
        sys.exit(f"{reference}: no copy of THUDM/ComplexFuncBench (see --help)")

    cases = make_cases(args.per_sample, args.seed)
    theirs = run_reference(cases, reference, reference_python(args.reference_python))
    compat, default = ours(cases)
    decidable = [t["llm"] == 0 and t["api"] == 0 for t in theirs]
    report = {
        "trajectories": len(cases),
        "reference_success_share": sum(bool(t["success"]) for t in theirs) / len(cases),
        "reference_crashes": sum(t["success"] is None for t in theirs),
        "reached_paid_layers": len(cases) - sum(decidable),
        "paid_calls": {"llm": sum(t["llm"] for t in theirs), "api": sum(t["api"] for t in theirs),
                       "compat_pairs": sum(m["paid"] for m in compat)},
        "correct_exceeds_gold": sum(1 for c, t in zip(cases, theirs) if t["correct"] is not None and t["correct"] >
                                    sum(len(turn) for turn in gold_turns(c["item"]))),
        "compat": compare(cases, compat, theirs, decidable),
        "default": compare(cases, default, theirs, decidable),
    }
    if args.json:
        print(json.dumps(report))
        return
    print(f"{report['trajectories']} scripted trajectories over 3 samples; reference succeeds on "
          f"{report['reference_success_share']:.1%}, crashes on {report['reference_crashes']}, reaches its paid "
          f"layers on {report['reached_paid_layers']} (LLM {report['paid_calls']['llm']}, API "
          f"{report['paid_calls']['api']} calls stubbed; compat counted {report['paid_calls']['compat_pairs']} pairs); "
          f"correct calls > gold calls on {report['correct_exceeds_gold']}")
    for mode in ("default", "compat"):
        r = report[mode]
        print(f"{mode:8s} success+correct-calls agreement {r['agreement']:.2%} (decidable offline: "
              f"{r['agreement_decidable_offline']:.2%}), success flag alone {r['success_agreement']:.2%}")
        for kind, mine, ref, n in r["differences"]:
            print(f"    {n:4d}  {kind:28s} {mine:40s} {ref}")
    c = report["compat"]
    print(f"compat agreement with the reference (success flag and correct-call count): {c['agreement']:.2%} "
          f"of {report['trajectories']} trajectories")


if __name__ == "__main__":
    main()
