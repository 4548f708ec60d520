"""Precision and recall of the "Likely ambiguous" warnings (annotate/tasks/ambiguity.py), side by side
with the previous rule (a warning for every argument picked from a list of several entries).

Measured on:
- tests/data/ambiguity_checked.jsonl: 50 stage1 drafts checked by hand (`hand_checked`) and 14
  more judged after the rules were revised (`held_out`), see tests/data/README.md;
- the bundled Label Studio exports (datasets/travel and datasets/amadeus annotations), pulled for
  real (`stage2 pull --from-export` into a temporary build dir): the warnings on each draft vs
  what disambiguation removed in its gold, as stage2.qa.json reports them.

    .venv/bin/python bench/ambiguity_warnings.py

The last line is the ratio of the new precision to the baseline's on the hand-checked set.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
CHECKED = REPO / "tests" / "data" / "ambiguity_checked.jsonl"


def checked_figures() -> dict[str, dict[str, object]]:
    from annotate.tasks.ambiguity import find_ambiguities
    from annotate.review.ambiguity_quality import WarningQuality, baseline_warnings, checked_draft
    from fcbench.catalog import load_tools_file

    catalogs = {name: {tool.name: tool for tool in load_tools_file(REPO / "datasets" / name / "tools.json")}
                for name in ("travel", "amadeus")}
    figures: dict[str, dict[str, WarningQuality]] = {}
    for line in CHECKED.read_text(encoding="utf-8").splitlines():
        checked = checked_draft(json.loads(line), catalogs)
        for rule, warn in (("new", find_ambiguities), ("baseline", baseline_warnings)):
            figures.setdefault(checked.split, {}).setdefault(rule, WarningQuality()).add(
                checked.sample.id, warn(checked.sample), checked.truths)
    return {split: {rule: quality.as_dict() for rule, quality in rules.items()} for split, rules in figures.items()}


def export_figures() -> dict[str, dict[str, object]]:
    from annotate.stage2.senior import Stage2Files, run_stage2_pull
    from fcbench.config import load_pipelines

    environments = {
        "travel": f"      kind: python\n      module: {REPO / 'datasets/travel/tools.py'}\n      timeout_s: 5\n",
        "amadeus": f"      kind: http\n      responses: {REPO / 'datasets/amadeus/recorded.json'}\n",
    }
    figures = {}
    for name, environment in environments.items():
        with tempfile.TemporaryDirectory(prefix=f"ambiguity-{name}-") as tmp:
            file = Path(tmp) / "pipelines.yaml"
            file.write_text(f"pipelines:\n  {name}:\n    dataset_dir: {Path(tmp) / 'dataset'}\n    seed: 1\n"
                            f"    tools: {REPO / 'datasets' / name / 'tools.json'}\n    environment:\n{environment}",
                            encoding="utf-8")
            pipeline = load_pipelines(file).get_pipeline(name)
            run_stage2_pull(pipeline, from_export=REPO / "datasets" / name / "annotations" / "stage2_export.json")
            qa = json.loads(Stage2Files.in_dir(pipeline.build_dir).qa.read_text(encoding="utf-8"))
            figures[name] = qa["summary"]["ambiguity_warnings"]
    return figures


def _line(label: str, figures: dict[str, object]) -> str:
    def shown(value: object) -> str:
        return "n/a" if value is None else f"{value:.3f}"
    return (f"{label:<28} warnings {figures['warnings']:>3}  true {figures['true_warnings']:>3}  "
            f"ambiguities {figures['ambiguities']:>3}  recalled {figures['recalled']:>3}  "
            f"precision {shown(figures['precision'])}  recall {shown(figures['recall'])}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--no-exports", action="store_true", help="skip pulling the bundled exports")
    args = parser.parse_args()
    checked = checked_figures()
    for split in ("hand_checked", "held_out"):
        for rule in ("new", "baseline"):
            print(_line(f"{split} ({rule})", checked[split][rule]))
    if not args.no_exports:
        for name, figures in export_figures().items():
            print(_line(f"export {name} (pull)", figures))
    new, old = checked["hand_checked"]["new"]["precision"], checked["hand_checked"]["baseline"]["precision"]
    print(f"precision new/baseline on the hand-checked set: {new:.3f}/{old:.3f} = {new / old:.1f}x")


if __name__ == "__main__":
    main()
