"""Label Studio push and pull of N stage2 tasks on one database kind (used by bench/scale.py).

A fresh studio (server + database: SQLite, or the studio's own PostgreSQL) in a temp folder; push:
`annotate.exchange.push.push_tasks` of N senior tasks over the travel drafts of bench/label_studio.py; pull:
the same N tasks imported with an accepting annotation each (as the editor saves it), then
`export_snapshot` + `process_tasks` + the stage2 output files. Server start-up is not timed."""

from __future__ import annotations

import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "bench"))

from label_studio import TRAVEL, annotated, travel_drafts  # noqa: E402

from annotate.studio.client import Connection, open_client  # noqa: E402
from annotate.studio.label_configs import SENIOR, validated_config  # noqa: E402
from annotate.exchange.pull import export_snapshot, process_tasks, senior_builder  # noqa: E402
from annotate.exchange.push import IMPORT_BATCH, push_tasks  # noqa: E402
from annotate.stage2.senior import Stage2Files, write_pull_outputs  # noqa: E402
from annotate.studio.server import StudioConfig, free_port, read_credentials, start, stop  # noqa: E402
from annotate.tasks.single import STAGE2_KIND, ToolCatalog, senior_task  # noqa: E402
from fcbench.catalog import load_tools_file  # noqa: E402


def measure_push_pull(count: int, database: str) -> tuple[float, float]:
    scratch = Path(tempfile.mkdtemp(prefix=f"fcbench-scale-{database}-"))  # reachable by user postgres
    config = StudioConfig(root=scratch, port=free_port(), database=database)  # type: ignore[arg-type]
    started = time.perf_counter()
    start(config)
    print(f"  ({database}: server started in {time.perf_counter() - started:.0f} s)", flush=True)
    try:
        connection = Connection(config.url, read_credentials(config).token)
        client = open_client(connection)
        catalog = ToolCatalog(load_tools_file(TRAVEL / "tools.json"))
        tasks = [senior_task(draft, catalog=catalog) for draft in travel_drafts(count)]
        began = time.perf_counter()
        summary = push_tasks(connection, client, "scale push", SENIOR, tasks, "draft")
        push_s = time.perf_counter() - began
        assert summary.counts["create"] == count, summary.counts
        project = client.projects.create(title="scale pull", label_config=validated_config(SENIOR, client))
        annotated_tasks = [annotated(task) for task in tasks]
        for first in range(0, count, IMPORT_BATCH):
            client.projects.import_tasks(id=project.id, request=annotated_tasks[first:first + IMPORT_BATCH])
        began = time.perf_counter()
        outcomes = process_tasks(export_snapshot(connection, client, project.id), STAGE2_KIND, senior_builder,
                                 lambda: None, catalog=catalog)
        write_pull_outputs(Stage2Files.in_dir(scratch / "pulled"), outcomes, "bench")
        pull_s = time.perf_counter() - began
        assert sum(outcome.status == "gold" for outcome in outcomes) == count
        return push_s, pull_s
    finally:
        stop(config)
        shutil.rmtree(scratch, ignore_errors=True)
