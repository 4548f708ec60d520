"""Your own API at full size: Blockfrost's Cardano API (datasets/blockfrost, a description nobody on
this project wrote) from `build-dataset new` to validated samples, with Prism as the live API.

In a fresh work folder (a copy of pipelines.yaml; nothing in the repository is written):
  1. new      `build-dataset new` on datasets/blockfrost/blockfrost.yaml, --auth-env from the
              description's apiKey scheme (Prism checks the `project_id` header is sent); then the
              curation a dataset author does (`curate`): the operations a chain follower asks for,
              identifier slots removed where an earlier answer gives the id (so paths chain), the
              dataset's phrases.txt;
  2. stage1   `stage1 --record` offline (graph sampler), every call sent to Prism and recorded;
  3. stage2   the drafts pushed to a real local Label Studio, annotated through its API the way
              the editor submits (datasets/amadeus/annotate_stage2.py's way) by the rules of
              `senior_verdict` for a share of the tasks, exported (`stage2 pull --save-export`'s
              file), then read by `run`'s stage2 (the pipeline's export_file);
  4. stage3   slot substitution, `--record`;
  5. filter   `--record`.
It prints each stage's wall time, the total, the samples per reject reason of every stage and the
validated count; the last line is the ratio total / 3600 s (the goal: under 1, i.e. under an hour
on 2 cores).

  .venv/bin/python bench/own_api_size.py [--queries 400] [--variants 3] [--share 1.0] [--keep DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
DESCRIPTION = REPO / "datasets" / "blockfrost" / "blockfrost.yaml"
PHRASES = REPO / "datasets" / "blockfrost" / "phrases.txt"
NAME = "blockfrost-size"
TOKEN_VARIABLE = "BLOCKFROST_PROJECT_ID"

# The operations kept: what someone following the chain asks for (CBOR dumps, IPFS pinning, health
# checks and the raw ledger utilities are left out: no one asks for a hex blob in a sentence).
KEEP = re.compile(r"^get_(blocks_latest(_txs)?|blocks_by_hash_or_number(_txs|_next|_previous)?|"
                  r"txs_by_hash(_utxos|_delegations|_withdrawals|_stakes)?|"
                  r"addresses_by_address(_transactions|_utxos|_total)?|"
                  r"accounts_by_stake_address(_rewards|_history|_delegations|_addresses)?|"
                  r"pools_(extended|retired)|pools_by_pool_id(_delegators|_blocks|_history|_relays|_updates)?|"
                  r"assets(_by_asset(_history|_transactions|_addresses)?)?|"
                  r"epochs_latest|epochs_by_number(_blocks|_stakes|_parameters)?|network)$")
# Identifiers an earlier answer gives: their example-seeded slots would stop every chain there
# (stage1 says so: "slot 'hash' ... fills 13 identifier argument(s)"), so the curation removes them.
CHAINED_SLOTS = ("hash", "tx_hash", "datum_hash", "script_hash", "gov_action_id", "cert_index", "policy_id")


# Start values: the slots `new` seeded from the description's examples give one or two values
# each; every value of the same field in the description's example answers is a real value of that
# kind (slot <- answer field, from tools whose endpoint starts with the prefix).
HARVEST = {"address": ("address", "/"), "stake_address": ("stake_address", "/"), "pool_id": ("pool_id", "/"),
           "asset": ("asset", "/assets"), "hash_or_number": ("hash", "/blocks"), "number": ("epoch", "/epochs")}
PREFIX = {"address": "addr", "stake_address": "stake", "pool_id": "pool"}  # Bech32 prefixes: a stake address is no payment address
# Answer fields that look like identifiers of another resource but are not what a user follows:
# a pool's Calidus key registration (`calidus_key.tx_hash`) is no transaction anyone asks about.
UNFOLLOWED_FIELDS = {"get_pools_by_pool_id": "calidus_key"}


def _harvest(tools: list[dict], field: str, prefix: str) -> list:
    found: list = []

    def walk(value, key=None):
        if isinstance(value, dict):
            for sub_key, sub in value.items():
                walk(sub, sub_key)
        elif isinstance(value, list):
            for item in value:
                walk(item, key)
        elif key == field and isinstance(value, (str, int)) and not isinstance(value, bool) and value not in found:
            found.append(value)

    for tool in tools:
        if tool["http"]["endpoint"].startswith(prefix):
            for example in (tool.get("returns") or {}).get("examples") or []:
                walk(example)
    return found


def curate(dataset: Path) -> dict[str, int]:
    tools = json.loads((dataset / "tools.json").read_text())
    kept = [tool for tool in tools if KEEP.match(tool["name"])]
    names = {tool["name"] for tool in kept}
    for tool in kept:
        hidden = UNFOLLOWED_FIELDS.get(tool["name"])
        if hidden and isinstance(tool.get("returns"), dict):
            (tool["returns"].get("properties") or {}).pop(hidden, None)
            for example in tool["returns"].get("examples") or []:
                if isinstance(example, dict):
                    example.pop(hidden, None)
    (dataset / "tools.json").write_text(json.dumps(kept, indent=2))
    pools = json.loads((dataset / "value_pools.json").read_text())
    for slot in CHAINED_SLOTS:
        pools["slots"].pop(slot, None)
    for name, slot in list(pools["slots"].items()):
        slot["used_by"] = [use for use in slot["used_by"] if use["tool"] in names]
        if not slot["used_by"]:
            del pools["slots"][name]
            continue
        # the description's own examples mix kinds (an `addr1...` payment address as a stake address)
        slot["values"] = [value for value in slot["values"] if str(value.get("value")).startswith(PREFIX.get(name, ""))]
        if name in HARVEST:
            for value in _harvest(tools, *HARVEST[name]):
                if {"value": value} not in slot["values"] and str(value).startswith(PREFIX.get(name, "")):
                    slot["values"].append({"value": value})
    (dataset / "value_pools.json").write_text(json.dumps(pools, indent=2))
    shutil.copy2(PHRASES, dataset / "phrases.txt")
    return {"tools": len(kept), "slots": len(pools["slots"])}


def configure(pipelines: Path, queries: int, variants: int) -> None:
    """The scaffolded entry's sizes set as a user edits them."""
    text = pipelines.read_text()
    head, entry = text.split(f"\n  {NAME}:\n", 1)
    entry = entry.replace("        queries: 20", f"        queries: {queries}")
    entry = entry.replace("      stage2:\n", f"      stage2:\n        select: {queries}\n")
    entry = entry.replace("        variants: 3", f"        variants: {variants}")
    pipelines.write_text(f"{head}\n  {NAME}:\n{entry}")


def senior_verdict(task_data: dict) -> tuple[str, str]:
    """The rules a senior annotator applies to a Blockfrost draft (verdict, note). Accept by default:
    the query writer asks in the dataset's phrases and every call was executed against the API.
    Reject a path that asks the same operation twice with the same arguments (a repeat no one asks)."""
    draft = json.loads(task_data.get("draft") or "{}") if isinstance(task_data.get("draft"), str) else task_data.get("draft") or {}
    calls = [(call.get("name"), json.dumps(call.get("arguments"), sort_keys=True))
             for step in draft.get("calls") or [] for call in step]
    if len(calls) != len(set(calls)):
        return "reject", "the same call twice"
    return "accept", ""


def annotate(pipeline, share: float, export_file: Path) -> dict[str, int]:
    from annotate.exchange.pull import export_snapshot
    from annotate.exchange.push import find_project, list_tasks
    from annotate.stage2.senior import keep_export, project_title, run_stage2_push
    from annotate.studio.client import Connection, open_client
    from annotate.studio.server import StudioConfig, free_port, read_credentials, start, stop
    from annotate.tasks.single import choices_result, textarea_result
    from fcbench.jsonl import write_json

    config = StudioConfig(root=Path(tempfile.mkdtemp(prefix="own-api-studio-")), port=free_port())
    start(config)
    verdicts: Counter[str] = Counter()
    try:
        connection = Connection(config.url, read_credentials(config).token)
        client = open_client(connection)
        run_stage2_push(pipeline, connection)
        project = find_project(client, project_title(pipeline))
        tasks = list_tasks(client, int(project.id))
        for task in tasks[:round(len(tasks) * share)]:
            full = client.tasks.get(id=task.id)
            verdict, note = senior_verdict(full.data or {})
            prediction = client.predictions.list(task=task.id)[0]
            result = [dict(region) for region in prediction.result]
            result.append(choices_result("verdict", result[0]["to_name"], [verdict]))
            if note:
                result.append(textarea_result("notes", result[0]["to_name"], note))
            client.annotations.create(id=task.id, result=result, lead_time=30.0)
            verdicts[verdict] += 1
        verdicts["not annotated"] = len(tasks) - sum(verdicts.values())
        snapshot = config.root / "export.json"
        write_json(snapshot, export_snapshot(connection, client, int(project.id)))
        keep_export(snapshot, export_file)  # what `stage2 pull --save-export FILE` writes
    finally:
        stop(config)
        shutil.rmtree(config.root, ignore_errors=True)
    return dict(verdicts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=400)
    parser.add_argument("--variants", type=int, default=3)
    parser.add_argument("--share", type=float, default=1.0, help="share of the stage2 tasks annotated")
    parser.add_argument("--keep", type=Path, default=None, help="work in this folder and keep it")
    args = parser.parse_args()

    from fcbench.config import load_pipelines
    from fcbench.environments.prism import start_prism
    from fcbench.pipeline.run import run_stage
    from fcbench.pipeline.scaffold import scaffold_dataset

    work = args.keep or Path(tempfile.mkdtemp(prefix="own-api-size-"))
    work.mkdir(parents=True, exist_ok=True)
    shutil.copy2(REPO / "pipelines.yaml", work / "pipelines.yaml")
    if not (work / "label_config").exists():
        (work / "label_config").symlink_to(REPO / "label_config")
    os.environ.setdefault(TOKEN_VARIABLE, "bench-project-id")  # Prism checks the header is there
    times: dict[str, float] = {}
    rejects: dict[str, dict[str, int]] = {}
    counts: dict[str, dict[str, int]] = {}
    started = time.monotonic()
    with start_prism([DESCRIPTION], work / "prism-logs") as servers:
        clock = time.monotonic()
        result = scaffold_dataset(NAME, [DESCRIPTION], work / "pipelines.yaml", base_url=servers.base_urls["blockfrost"],
                                  auth_env=TOKEN_VARIABLE)
        curated = curate(work / result.dataset_dir)
        configure(work / "pipelines.yaml", args.queries, args.variants)
        times["new"] = time.monotonic() - clock
        print(f"new: {result.tools} tools imported, {len(result.skipped)} skipped; curated to {curated}", flush=True)
        pipeline = load_pipelines(work / "pipelines.yaml").get_pipeline(NAME)
        pipeline.environment.record = True
        for stage in ("stage1", "stage2", "stage3", "filter"):
            clock = time.monotonic()
            if stage == "stage2":
                export_file = pipeline.resolve(pipeline.stages.stage2.export_file)
                verdicts = annotate(pipeline, args.share, export_file)
                print(f"stage2 annotation: {verdicts}", flush=True)
            summary = run_stage(stage, pipeline, offline=True).as_dict()
            times[stage] = time.monotonic() - clock
            counts[stage] = summary.get("counts") or {}
            rejects[stage] = summary.get("reasons") or {}
            print(f"{stage}: {times[stage]:.1f} s, counts {counts[stage]}", flush=True)
    total = time.monotonic() - started
    print("\nwall time per stage (s): " + ", ".join(f"{stage} {seconds:.1f}" for stage, seconds in times.items())
          + f"; total {total:.1f} (Prism and Label Studio start-up included)")
    for stage, reasons in rejects.items():
        if reasons:
            print(f"rejects {stage}: " + ", ".join(f"{reason} {count}" for reason, count in sorted(reasons.items())))
    validated = counts.get("filter", {}).get("passed", 0)
    print(f"validated samples: {validated} (goal >= 1000); work folder: {work}")
    if args.keep is None:
        shutil.rmtree(work, ignore_errors=True)
    print(f"total/3600 s: {total / 3600:.3f}")


if __name__ == "__main__":
    main()
