"""Secrets never written, against an API on 127.0.0.1 that echoes every request back (headers,
query, cookies, path): the `--auth-env` token and every credential an OpenAPI description declares
as a security scheme are redacted from what the http environment returns and records, and no
path argument can change the request's path. End to end: `new`, `stage1 --record`, `filter
--record` and `export` on the echoing API, then every file written is searched for the token."""

from __future__ import annotations

import json
import threading
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml
from typer.testing import CliRunner

from fcbench.catalog.openapi import import_openapi
from fcbench.cli import app
from fcbench.environments import ErrorReason
from fcbench.environments.http_env import HttpEnvironment
from fcbench.environments.recorded import STORE_FORMAT, load_store_and_journal

TOKEN = "tok-echoed-9f3a61c2e7"
KEY = "key-query-4b1d0e55aa"
runner = CliRunner()


class EchoApi(BaseHTTPRequestHandler):
    """Answers every request with what it received; remembers the paths it was asked for."""

    seen: list[str] = []

    def log_message(self, *args: object) -> None:
        pass

    def do_GET(self) -> None:
        url = urllib.parse.urlsplit(self.path)
        type(self).seen.append(url.path)
        echo = {"path": url.path, "query": dict(urllib.parse.parse_qsl(url.query)), "headers": dict(self.headers)}
        if url.path == "/api/v1/cities":
            body: object = {"data": [{"cityId": "MEL", "name": "Melbourne"}, {"cityId": "SYD", "name": "Sydney"}],
                            "echo": echo}
        elif url.path.startswith("/api/v1/weather/"):
            body = {"city": urllib.parse.unquote(url.path.rsplit("/", 1)[1]), "forecast": "sunny", "echo": echo}
        elif url.path == "/api/v1/fail":
            self._send(500, {"error": f"bad request with {self.headers.get('Authorization')}"})
            return
        else:  # anything else, the API's root included, must never be reached by a tool's call
            body = {"root": True, "admin": "the whole API", "echo": echo}
        self._send(200, body)

    def _send(self, status: int, body: object) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


@pytest.fixture
def api():
    EchoApi.seen = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), EchoApi)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/api/v1"
    server.shutdown()
    server.server_close()


def description(path: Path) -> Path:
    """An OpenAPI 3 description of the echoing API with three security schemes."""
    city = {"name": "cityId", "in": "path", "required": True, "schema": {"type": "string"}}  # fed by listCities
    ok = {"200": {"description": "ok", "content": {"application/json": {"schema": {"type": "object"}}}}}
    city_list = {"type": "object", "properties": {"data": {"type": "array", "items": {
        "type": "object", "properties": {"cityId": {"type": "string"}, "name": {"type": "string"}}}}},
        "example": {"data": [{"cityId": "MEL", "name": "Melbourne"}]}}
    listed = {"200": {"description": "ok", "content": {"application/json": {"schema": city_list}}}}
    forecast = {"200": {"description": "ok", "content": {"application/json": {"schema": {
        "type": "object", "properties": {"city": {"type": "string"}, "forecast": {"type": "string"}}}}}}}
    document = {
        "openapi": "3.0.0",
        "info": {"title": "Weather", "version": "1"},
        "servers": [{"url": "https://weather.example.com/api/v1"}],
        "security": [{"bearer": []}],
        "components": {"securitySchemes": {
            "bearer": {"type": "http", "scheme": "bearer"},
            "headerKey": {"type": "apiKey", "in": "header", "name": "X-API-Key"},
            "queryKey": {"type": "apiKey", "in": "query", "name": "api_key"}}},
        "paths": {
            "/cities": {"get": {"operationId": "listCities", "summary": "List the cities with a forecast.",
                                "parameters": [{"name": "country", "in": "query", "schema": {"type": "string"},
                                                "example": "AU"},
                                               {"name": "Authorization", "in": "header", "schema": {"type": "string"}}],
                                "responses": listed}},
            "/weather/{cityId}": {"get": {"operationId": "getWeather", "summary": "The forecast of a city.",
                                          "parameters": [city], "responses": forecast}},
            "/forecast": {"get": {"operationId": "getForecast", "summary": "A forecast by key.",
                                  "security": [{"queryKey": []}, {"headerKey": []}],
                                  "parameters": [{"name": "api_key", "in": "query", "schema": {"type": "string"}},
                                                 {"name": "X-API-Key", "in": "header", "schema": {"type": "string"}},
                                                 {"name": "day", "in": "query", "schema": {"type": "string"},
                                                  "example": "monday"}],
                                  "responses": ok}},
            "/fail": {"get": {"operationId": "failLoudly", "summary": "Fails, quoting the request.",
                              "responses": ok}},
        },
    }
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def test_credential_parameters_are_never_tool_arguments(tmp_path):
    imported = import_openapi([description(tmp_path / "weather.yaml")])
    tools = {tool.name: tool for tool in imported.tools}
    assert set(tools["listCities"].parameters["properties"]) == {"country"}
    assert set(tools["getForecast"].parameters["properties"]) == {"day"}  # api_key and X-API-Key left out
    assert tools["getForecast"].meta["openapi"]["security"] == [
        {"scheme": "queryKey", "type": "apiKey", "in": "query", "name": "api_key"},
        {"scheme": "headerKey", "type": "apiKey", "in": "header", "name": "X-API-Key"}]
    assert tools["getWeather"].meta["openapi"]["security"] == [
        {"scheme": "bearer", "type": "http", "in": "header", "name": "Authorization", "http_scheme": "bearer"}]
    assert any("is a credential" in note.message for note in imported.notes)


def test_an_echoed_token_is_redacted_from_the_response_the_error_and_the_recording(api, tmp_path, monkeypatch):
    monkeypatch.setenv("MY_API_TOKEN", TOKEN)
    tools = import_openapi([description(tmp_path / "weather.yaml")]).tools
    store = tmp_path / "recorded.json"
    with HttpEnvironment(tools, base_url=api, auth_env="MY_API_TOKEN", record_path=store) as environment:
        weather = environment.call("getWeather", {"cityId": "MEL"})
        failed = environment.call("failLoudly", {})
    assert weather.ok and weather.response["echo"]["headers"]["Authorization"] == "[redacted:MY_API_TOKEN]"
    assert TOKEN not in json.dumps(weather.response)
    assert not failed.ok and TOKEN not in json.dumps(failed.response) + str(failed.error)
    assert "[redacted:MY_API_TOKEN]" in failed.response["error"]
    recorded = load_store_and_journal(store, tools)
    assert TOKEN not in store.read_text() and recorded.lookup("getWeather", {"cityId": "MEL"}) is not None


def test_a_key_sent_as_a_query_parameter_is_redacted_too(api, tmp_path, monkeypatch):
    monkeypatch.setenv("MY_KEY", KEY)
    tools = import_openapi([description(tmp_path / "weather.yaml")]).tools
    with HttpEnvironment(tools, base_url=api, auth_env="MY_KEY", auth_header="api_key", auth_scheme="",
                         auth_in="query") as environment:
        forecast = environment.call("getForecast", {"day": "monday"})
    assert forecast.response["echo"]["query"] == {"day": "monday", "api_key": "[redacted:MY_KEY]"}
    assert KEY not in json.dumps(forecast.response)


@pytest.mark.parametrize(("value", "sent"), [("MEL", "/api/v1/weather/MEL"), ("a/b", "/api/v1/weather/a%2Fb"),
                                             ("x.y", "/api/v1/weather/x%2Ey"), ("..%2F", "/api/v1/weather/%2E%2E%252F")])
def test_a_path_argument_is_one_encoded_segment(api, tmp_path, value, sent):
    tools = import_openapi([description(tmp_path / "weather.yaml")]).tools
    with HttpEnvironment(tools, base_url=api) as environment:
        outcome = environment.call("getWeather", {"cityId": value})
    assert outcome.ok and EchoApi.seen == [sent]
    assert outcome.response["city"] == urllib.parse.unquote(sent.rsplit("/", 1)[1])


@pytest.mark.parametrize("value", ["..", ".", ""])
def test_a_path_argument_that_would_climb_is_refused_and_never_sent(api, tmp_path, monkeypatch, value):
    monkeypatch.setenv("MY_API_TOKEN", TOKEN)
    tools = import_openapi([description(tmp_path / "weather.yaml")]).tools
    with HttpEnvironment(tools, base_url=api, auth_env="MY_API_TOKEN") as environment:
        outcome = environment.call("getWeather", {"cityId": value})
    assert not outcome.ok and outcome.reason is ErrorReason.UNSAFE_ARGUMENT
    assert f"path parameter cityId={value!r} would change the request's path" in outcome.error
    assert EchoApi.seen == []  # GET /api/v1 (or /api/v1/weather/) was never asked, token or not


def _grep(root: Path, secret: str) -> list[str]:
    return [str(path.relative_to(root)) for path in root.rglob("*")
            if path.is_file() and secret.encode() in path.read_bytes()]


def test_new_record_filter_export_with_an_echoing_api_write_the_token_nowhere(api, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("MY_API_TOKEN", TOKEN)
    (tmp_path / "pipelines.yaml").write_text("pipelines:\n  other:\n    dataset_dir: other\n")
    spec = description(tmp_path / "weather.yaml")
    created = runner.invoke(app, ["new", "weather", "--openapi", str(spec), "--base-url", api, "--auth-env",
                                  "MY_API_TOKEN", "--file", "pipelines.yaml"])
    assert created.exit_code == 0, created.output
    drafted = runner.invoke(app, ["stage1", "weather", "--record", "--file", "pipelines.yaml", "--json"])
    assert drafted.exit_code == 0, drafted.output
    build = tmp_path / "datasets" / "weather" / "build"
    assert "[redacted:MY_API_TOKEN]" in (build / "drafts.jsonl").read_text()  # the echo was drafted, redacted
    # candidates a user might filter: one asks for a city, one tries to climb out of /weather/
    tools = import_openapi([spec]).tools
    candidates = tmp_path / "candidates.jsonl"
    candidates.write_text("".join(json.dumps(line) + "\n" for line in [
        {"id": "melbourne", "messages": [{"role": "user", "content": "What is the weather in MEL?"}],
         "tools": [tool.model_dump(exclude_none=True) for tool in tools if tool.name == "getWeather"],
         "calls": [[{"label": "var_1", "name": "getWeather", "arguments": {"cityId": "MEL"}}]]},
        {"id": "climbing", "messages": [{"role": "user", "content": "What is the weather in .. ?"}],
         "tools": [tool.model_dump(exclude_none=True) for tool in tools if tool.name == "getWeather"],
         "calls": [[{"label": "var_1", "name": "getWeather", "arguments": {"cityId": ".."}}]]}]))
    config = yaml.safe_load((tmp_path / "pipelines.yaml").read_text())
    stages = config["pipelines"]["weather"]["stages"]
    stages["filter"] = {"input": str(candidates), "grounding": "report"}
    (tmp_path / "pipelines.yaml").write_text(yaml.safe_dump(config, sort_keys=False))
    filtered = runner.invoke(app, ["filter", "weather", "--record", "--file", "pipelines.yaml", "--json"])
    assert filtered.exit_code == 0, filtered.output
    rejects = [json.loads(line) for line in (build / "validated.rejects.jsonl").read_text().splitlines()]
    assert [(r["id"], r["reason"]) for r in rejects] == [("climbing", "execution.unsafe_argument")]
    assert "[redacted:MY_API_TOKEN]" in (build / "validated.jsonl").read_text()
    exported = runner.invoke(app, ["export", "weather", "--file", "pipelines.yaml"])
    assert exported.exit_code == 0, exported.output
    assert "/api/v1" not in EchoApi.seen and "/api/v1/" not in EchoApi.seen
    assert _grep(tmp_path, TOKEN) == []  # recorded store, drafts, validated, rejects, summaries, export
    outputs = created.output + drafted.output + filtered.output + exported.output
    assert TOKEN not in outputs


def test_a_store_recorded_before_redaction_is_cleaned_by_the_next_recording(api, tmp_path, monkeypatch):
    monkeypatch.setenv("MY_API_TOKEN", TOKEN)
    tools = import_openapi([description(tmp_path / "weather.yaml")]).tools
    store = tmp_path / "recorded.json"
    store.write_text(json.dumps({"format": STORE_FORMAT, "calls": [  # as the token landed there before
        {"name": "getWeather", "arguments": {"cityId": "SYD"},
         "response": {"city": "SYD", "echo": {"headers": {"Authorization": f"Bearer {TOKEN}"}}}}]}))
    with HttpEnvironment(tools, base_url=api, auth_env="MY_API_TOKEN", record_path=store) as environment:
        replayed = environment.call("getWeather", {"cityId": "SYD"})  # answered from the store, not sent
    assert EchoApi.seen == [] and TOKEN not in json.dumps(replayed.response)
    assert TOKEN not in store.read_text() and "[redacted:MY_API_TOKEN]" in store.read_text()
