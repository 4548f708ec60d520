"""The http environment against real Prism servers (`prism mock`) serving Amadeus descriptions:
record, then replay offline with Prism stopped; a killed recording re-run sends only what is
missing; the auth token reaches no file."""

from __future__ import annotations

import json

import pytest

from conftest import EXTERNAL
from fcbench.catalog.openapi import import_openapi
from fcbench.environments import ErrorReason, PlannedCall
from fcbench.environments.http_env import HttpEnvironment
from fcbench.environments.recorded import RecordedEnvironment, journal_path, load_store_and_journal
from fcbench.environments.prism import start_prism

AMADEUS = EXTERNAL / "amadeus"
FILES = [AMADEUS / "HotelList_v1_swagger_specification.json", AMADEUS / "ToursandActivities_v1_swagger_specification.json",
         AMADEUS / "TransferSearch_v1_swagger_specification.json"]
TOKEN = "tok-h12-secret-0b7c1e"



@pytest.fixture(scope="module")
def prism(tmp_path_factory):
    with start_prism(FILES, tmp_path_factory.mktemp("prism-logs")) as servers:
        yield servers


@pytest.fixture(scope="module")
def tools():
    return import_openapi(FILES).tools


PATH = [
    [PlannedCall("var_1", "ListActivities", {"latitude": 41.397158, "longitude": 2.160873, "radius": 1}),
     PlannedCall("var_2", "get-shopping-hotels-by-city", {"cityCode": "BCN", "radius": 5, "ratings": ["4", "5"]})],
    [PlannedCall("var_3", "GETActivity", {"activityId": "$var_1.data[0].id$"})],
]


def test_record_from_prism_then_replay_offline(prism, tools, tmp_path, monkeypatch):
    monkeypatch.setenv("AMADEUS_TEST_TOKEN", TOKEN)
    store = tmp_path / "recorded.json"
    with HttpEnvironment(tools, base_urls=prism.base_urls, record_path=store, auth_env="AMADEUS_TEST_TOKEN") as live:
        (run,) = live.run_paths([PATH])
        transfer = live.call("getTransferOffers", {"startLocationCode": "CDG", "endAddressLine": "Avenue Anatole France, 5",
                                                   "endCityName": "Paris", "endCountryCode": "FR",
                                                   "startDateTime": "2026-11-10T10:30:00", "passengers": 2})
    assert run.ok, [r.outcome.error for r in run.runs]
    activity = run.runs[2].outcome.response
    listed = run.runs[0].outcome.response
    assert run.runs[2].arguments == {"activityId": listed["data"][0]["id"]}  # the nested reference was resolved
    assert activity["data"]["id"] and activity["data"]["geoCode"]["latitude"]  # a real published example shape
    assert transfer.ok and transfer.response["data"][0]["id"]  # a POST with a JSON body Prism validated
    assert not journal_path(store).exists() and store.is_file()
    everything = "".join(p.read_text(errors="replace") for p in tmp_path.rglob("*") if p.is_file())
    assert TOKEN not in everything

    replay = RecordedEnvironment(load_store_and_journal(store, tools))
    (replayed,) = replay.run_paths([PATH])
    assert replayed.ok and [r.outcome.response for r in replayed.runs] == [r.outcome.response for r in run.runs]
    missing = replay.call("get-shopping-hotels-by-city", {"cityCode": "NYC"})
    assert not missing.ok and missing.reason is ErrorReason.NOT_RECORDED


def test_a_killed_recording_keeps_what_it_got_and_a_rerun_sends_only_the_rest(prism, tools, tmp_path):
    store = tmp_path / "recorded.json"
    first = HttpEnvironment(tools, base_urls=prism.base_urls, record_path=store)
    assert first.call("get-shopping-hotels-by-city", {"cityCode": "PAR"}).ok
    assert first.call("ListActivities", {"latitude": 48.85, "longitude": 2.35}).ok
    first._client.close()  # killed: close() never runs, the store file was never written
    assert not store.exists() and len(journal_path(store).read_text().splitlines()) == 2
    with HttpEnvironment(tools, base_urls=prism.base_urls, record_path=store) as again:
        for arguments in ({"cityCode": "PAR"}, {"cityCode": "LON"}):
            assert again.call("get-shopping-hotels-by-city", arguments).ok
        assert again.call("ListActivities", {"latitude": 48.85, "longitude": 2.35}).ok
        assert (again.sent, again.from_store) == (1, 2)
    assert len(load_store_and_journal(store, tools)) == 3 and not journal_path(store).exists()


def test_prism_rejects_a_call_the_description_forbids_and_the_run_goes_on(prism, tools, tmp_path):
    with HttpEnvironment(tools, base_urls=prism.base_urls, record_path=tmp_path / "r.json", retries=0) as live:
        bad = live.call("get-shopping-hotels-by-city", {"radius": 5})  # cityCode is required
        good = live.call("get-shopping-hotels-by-city", {"cityCode": "PAR"})
    assert bad.reason is ErrorReason.HTTP_STATUS and "get-shopping-hotels-by-city (GET http://127.0.0.1" in bad.error
    assert good.ok
    assert len(load_store_and_journal(tmp_path / "r.json", tools)) == 1  # only the good answer was recorded


def test_new_then_record_then_replay_through_the_cli_and_the_token_is_nowhere(tmp_path, monkeypatch):
    """The README's path for one's own API: `new` with --base-url and --auth-env, `stage1 --record`
    against the server (Prism here), then the same stage replayed offline with the server gone."""
    from typer.testing import CliRunner

    from fcbench.cli import app

    tours = AMADEUS / "ToursandActivities_v1_swagger_specification.json"
    (tmp_path / "pipelines.yaml").write_text("# my benchmarks\npipelines:\n  other:\n    dataset_dir: other  # kept\n")
    pipelines = str(tmp_path / "pipelines.yaml")
    monkeypatch.setenv("TOURS_TOKEN", TOKEN)
    runner = CliRunner()
    with start_prism([tours], tmp_path / "logs") as servers:
        created = runner.invoke(app, ["new", "tours", "--openapi", str(tours), "--base-url", servers.base_urls[tours.stem],
                                      "--auth-env", "TOURS_TOKEN", "--file", pipelines])
        assert created.exit_code == 0, created.output
        recorded = runner.invoke(app, ["stage1", "tours", "--record", "--file", pipelines, "--json"])
        assert recorded.exit_code == 0, recorded.output
    assert json.loads(recorded.stdout)["counts"]["drafts"] > 0
    drafts = (tmp_path / "datasets" / "tours" / "build" / "drafts.jsonl").read_text()
    assert "$var_1.data[" in drafts  # activityId read from a listed activity
    replayed = runner.invoke(app, ["stage1", "tours", "--file", pipelines, "--json"])  # Prism is stopped
    assert replayed.exit_code == 0, replayed.output
    assert (tmp_path / "datasets" / "tours" / "build" / "drafts.jsonl").read_text() == drafts
    assert (tmp_path / "pipelines.yaml").read_text().startswith("# my benchmarks\npipelines:\n  other:\n    dataset_dir: other  # kept\n")
    leaked = [p for p in tmp_path.rglob("*") if p.is_file() and TOKEN in p.read_text(errors="replace")]
    assert leaked == []  # not in the store, the drafts, the summaries, the pipelines file or Prism's logs
    assert TOKEN not in recorded.output + replayed.output
