"""Label Studio on PostgreSQL with a team: the stage2 round trip on a real PostgreSQL server (the
studio's own, initialised and started by annotate.studio.postgres), annotator accounts that can log in,
tasks assigned to K of N, agreement measured, disagreements queued for adjudication, a database
restarted under a pull, and 5 annotators working at once losing nothing.

One server for the module (a fresh database spends ~20 s on migrations)."""

from __future__ import annotations

import json
import shutil
import tempfile
import threading
from pathlib import Path
from typing import Any, Iterator

import httpx
import pytest

from annotate.review.agreement import cohen_kappa, krippendorff_alpha_nominal
from annotate.studio.client import Connection, ServerError, open_client
from annotate.studio.postgres import ManagedPostgres
from annotate.exchange.pull import export_snapshot
from annotate.exchange.push import find_project, list_tasks
from annotate.stage2.senior import Stage2Files, project_title, run_stage2_pull, run_stage2_push
from annotate.studio.server import StudioConfig, free_port, read_credentials, read_state, start, stop
from annotate.tasks.single import choices_result, textarea_result
from annotate.studio.team import assign_tasks, stored_annotators
from ls_fixtures import drafts, travel_environment, travel_tools  # noqa: F401 (pytest fixtures)
from ls_helpers import read_lines, write_drafts, write_pipeline


class PgStudio:
    def __init__(self, config: StudioConfig) -> None:
        self.config = config
        self.connection = Connection(config.url, read_credentials(config).token)
        self.client = open_client(self.connection)
        self.postgres = ManagedPostgres(config.root)


def _sql(postgres: ManagedPostgres, query: str) -> str:
    return postgres.query(query)


@pytest.fixture(scope="module")
def pg_studio() -> Iterator[PgStudio]:
    # not under pytest's 0700 temp root: as root, PostgreSQL runs as user postgres, which must reach it
    root = Path(tempfile.mkdtemp(prefix="fcbench-pgstudio-"))
    config = StudioConfig(root=root, port=free_port(), database="postgresql")
    start(config)
    try:
        yield PgStudio(config)
    finally:
        stop(config)
        assert not ManagedPostgres(config.root).running()  # the studio's database stops with it
        shutil.rmtree(root, ignore_errors=True)


def _tasks(studio: PgStudio, title: str) -> dict[str, Any]:
    project = find_project(studio.client, title)
    return {task.sample_id: task for task in list_tasks(studio.client, int(project.id))}


def _annotate(client: Any, studio: PgStudio, task: Any, verdict: str, path_json: str | None = None) -> Any:
    """An annotation as the editor makes one, sent with the annotator's own token."""
    regions = [dict(region) for region in studio.client.predictions.list(task=task.id)[0].result]
    if path_json is not None:
        regions = [region for region in regions if region["from_name"] != "path_json"]
        regions.append(textarea_result("path_json", "draft", path_json))
    regions.append(choices_result("verdict", regions[0]["to_name"], [verdict]))
    return client.annotations.create(id=task.id, result=regions, lead_time=3.0)


def _client_of(studio: PgStudio, email: str) -> Any:
    return open_client(Connection(studio.config.url, stored_annotators(studio.config)[email].token))


def _can_log_in(url: str, email: str, password: str) -> bool:
    with httpx.Client(base_url=url, follow_redirects=True, timeout=30) as browser:
        browser.get("/user/login/")
        response = browser.post("/user/login/", data={"email": email, "password": password,
                                                      "csrfmiddlewaretoken": browser.cookies.get("csrftoken", "")},
                                headers={"Referer": f"{url}/user/login/"})
        response.raise_for_status()
        whoami = browser.get("/api/current-user/whoami")
        return whoami.status_code == 200 and whoami.json().get("email") == email


def test_team_round_trip_on_postgresql(pg_studio, drafts, tmp_path) -> None:
    assert str(read_state(pg_studio.config)["database"]).startswith("postgresql://fcbench@127.0.0.1:")
    pipeline = write_pipeline(tmp_path)
    write_drafts(pipeline, list(drafts.values()))
    summary = run_stage2_push(pipeline, pg_studio.connection, annotators=3, overlap=2, studio=pg_studio.config)
    assert summary.counts["create"] == 4
    assert summary.team["annotators"] == 3 and sum(summary.team["tasks_per_annotator"].values()) == 8
    assert _sql(pg_studio.postgres, "SELECT count(*) FROM task") == "4"  # Label Studio really writes to PostgreSQL

    team = stored_annotators(pg_studio.config)
    assert len(team) == 3
    text = json.dumps(summary.as_dict())
    assert not any(member.password in text or member.token in text for member in team.values())  # secrets stay put
    first = next(iter(team.values()))
    assert _can_log_in(pg_studio.config.url, first.email, first.password)

    tasks = _tasks(pg_studio, project_title(pipeline))
    assigned = {sample_id: task.data["assigned_annotators"] for sample_id, task in tasks.items()}
    assert assigned == assign_tasks(list(tasks), sorted(team), 2, pipeline.seed)  # deterministic from the seed
    rome_fixed = tasks["hotels-rome-wrong"].data["path_json"].replace('"Paris"', '"Rome"')
    for sample_id, task in tasks.items():
        a, b = assigned[sample_id]
        if sample_id == "airports-sydney":  # both accept the same path: agreement, gold
            _annotate(_client_of(pg_studio, a), pg_studio, task, "accept")
            _annotate(_client_of(pg_studio, b), pg_studio, task, "accept")
        elif sample_id == "hotels-rome-wrong":  # one fixes Paris -> Rome, the other accepts: paths differ
            _annotate(_client_of(pg_studio, a), pg_studio, task, "fix", rome_fixed)
            _annotate(_client_of(pg_studio, b), pg_studio, task, "accept")
        elif sample_id == "two-cities":  # accept vs reject: decisions differ
            _annotate(_client_of(pg_studio, a), pg_studio, task, "accept")
            _annotate(_client_of(pg_studio, b), pg_studio, task, "reject")
        else:  # one of two submitted: waits for the second
            _annotate(_client_of(pg_studio, a), pg_studio, task, "accept")

    report = run_stage2_pull(pipeline, connection=pg_studio.connection)
    files = Stage2Files.in_dir(pipeline.build_dir)
    assert (report.counts["gold"], report.counts["adjudication"], report.counts["pending"]) == (1, 2, 1)
    queue = {row["id"]: row for row in read_lines(files.adjudication)}
    assert {key: row["reason"] for key, row in queue.items()} == {"hotels-rome-wrong": "paths_differ",
                                                                 "two-cities": "decisions_differ"}
    rome_paths = [entry["calls"][0][0]["arguments"]["query"] for entry in queue["hotels-rome-wrong"]["annotations"].values()]
    assert sorted(rome_paths) == ["Paris", "Rome"]  # both versions kept for the adjudicator, none picked
    agreement = json.loads(files.summary.read_text())["team_agreement"]
    assert agreement == json.loads(files.qa.read_text())["summary"]["team_agreement"]
    decisions = [["accept", "accept"], ["accept", "accept"], ["accept", "reject"]]
    assert agreement["units"] == 3 and agreement["disputed"] == 2
    assert agreement["krippendorff_alpha_decision"] == round(krippendorff_alpha_nominal(decisions), 4)
    assert agreement["cohen_kappa_decision"] == round(cohen_kappa([tuple(pair) for pair in decisions]), 4)
    assert agreement["exact_path_match"] == 0.5 and agreement["path_pairs"] == 2
    assert [row["id"] for row in read_lines(files.templates)] == ["airports-sydney"]
    # a downloaded export names annotators by user id only: the assignment still matches them
    export = tmp_path / "export.json"
    project_id = int(find_project(pg_studio.client, project_title(pipeline)).id)
    export.write_text(json.dumps(export_snapshot(pg_studio.connection, pg_studio.client, project_id)))
    from_file = run_stage2_pull(pipeline, from_export=export)
    assert from_file.counts == report.counts and from_file.qa["summary"]["team_agreement"] == agreement

    # an adjudicator (anyone outside the assignment: here the admin) settles the Rome task
    _annotate(pg_studio.client, pg_studio, tasks["hotels-rome-wrong"], "fix", rome_fixed)
    report = run_stage2_pull(pipeline, connection=pg_studio.connection)
    assert (report.counts["gold"], report.counts["adjudication"]) == (2, 1)
    rome = {row["id"]: row for row in read_lines(files.templates)}["hotels-rome-wrong"]
    assert rome["calls"][0][0]["arguments"] == {"query": "Rome"}
    assert rome["provenance"]["annotator"] == read_credentials(pg_studio.config).username

    # PostgreSQL restarted under a pull: the pull reports it and leaves the files; a re-run converges
    before = {name: path.read_bytes() for name, path in vars(files).items() if path.exists()}
    pg_studio.postgres.stop()
    try:
        with pytest.raises(ServerError, match="Label Studio at .* (refused a request|stopped answering)"):
            run_stage2_pull(pipeline, connection=pg_studio.connection)
        assert {name: path.read_bytes() for name, path in vars(files).items() if path.exists()} == before
    finally:
        pg_studio.postgres.start()
    for attempt in range(3):  # Django may hold a dead connection for one request
        try:
            run_stage2_pull(pipeline, connection=pg_studio.connection)
            break
        except ServerError:
            if attempt == 2:
                raise
    assert {name: path.read_bytes() for name, path in vars(files).items() if path.exists()} == before


TASKS = 100  # 20 per annotator, all five saving at once (the 500-task figures are bench/studio_scale.py's)


def test_five_annotators_at_once_lose_nothing(pg_studio, drafts, tmp_path) -> None:
    pipeline = write_pipeline(tmp_path, name="crowd")
    base = [draft for name, draft in drafts.items() if name != "hotels-rome-wrong"]  # wrong gold is refused at pull
    many = [base[i % len(base)].model_copy(update={"id": f"{base[i % len(base)].id}-{i:03d}"}) for i in range(TASKS)]
    write_drafts(pipeline, many)
    pipeline.stages.stage2.select = TASKS
    run_stage2_push(pipeline, pg_studio.connection, annotators=5, overlap=1, studio=pg_studio.config)
    tasks = list(_tasks(pg_studio, project_title(pipeline)).values())
    assert len(tasks) == TASKS
    by_annotator: dict[str, list[Any]] = {}
    for task in tasks:
        by_annotator.setdefault(task.data["assigned_annotators"][0], []).append(task)
    assert len(by_annotator) == 5

    created: dict[str, list[int]] = {}
    errors: list[BaseException] = []

    def work(email: str, mine: list[Any]) -> None:
        client = _client_of(pg_studio, email)
        try:
            created[email] = [int(_annotate(client, pg_studio, task, "accept").id) for task in mine]
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=item) for item in by_annotator.items()]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors, errors[0]

    report = run_stage2_pull(pipeline, connection=pg_studio.connection)
    assert report.counts["gold"] == TASKS and report.counts["tasks"] == TASKS
    templates = read_lines(Stage2Files.in_dir(pipeline.build_dir).templates)
    pulled = [row["meta"]["label_studio"]["annotation_id"] for row in templates]
    assert sorted(pulled) == sorted(annotation for ids in created.values() for annotation in ids)  # each once
    annotators = {row["provenance"]["annotator"] for row in templates}
    assert annotators == set(by_annotator)
