"""The HTTP environment against a real local server (127.0.0.1), with the real NESTful v1 catalog."""

from __future__ import annotations

import json
import threading
import time
import urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from conftest import EXTERNAL, read_all
from fcbench.environments import ErrorReason, PlannedCall
from fcbench.environments.http_env import HttpEnvironment, endpoint_of, output_parser_path
from fcbench.environments.recorded import RecordedEnvironment, RecordedStore
from fcbench.environments.execution import execute_gold_path
from fcbench.sample import Tool

SECRET = "test-key-never-recorded"


class MockApi(BaseHTTPRequestHandler):
    """Answers like the RapidAPI endpoints the NESTful v1 gold paths call, plus failure routes."""

    def log_message(self, *args: object) -> None:  # keep test output clean
        pass

    def _answer(self, status: int, body: object) -> None:
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json" if not isinstance(body, str) else "text/plain")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        url = urllib.parse.urlsplit(self.path)
        query = dict(urllib.parse.parse_qsl(url.query))
        seen = {"host_header": self.headers.get("X-RapidAPI-Host"), "key_sent": self.headers.get("X-RapidAPI-Key") == SECRET}
        if url.path == "/api/v1/flights/searchAirport":
            code = query["query"][:4].upper()
            self._answer(200, {"status": True, "data": [{"skyId": code, "entityId": f"id-{code}", **seen}, {"skyId": "other"}]})
        elif url.path == "/api/v2/flights/searchFlightsComplete":
            itinerary = {"flightId": f"{query['originSkyId']}-{query['destinationSkyId']}", "date": query["date"], "query": query}
            self._answer(200, {"data": {"itineraries": [itinerary]}})
        elif url.path.startswith("/news/v1/"):
            self._answer(200, {"location": url.path.rsplit("/", 1)[1], "news": []})
        elif url.path.startswith("/items/"):
            self._answer(200, {"path": url.path, "query": query})
        elif url.path == "/boom":
            self._answer(500, {"message": "exploded"})
        elif url.path == "/slow":
            time.sleep(1.5)
            self._answer(200, {"late": True})
        elif url.path == "/text":
            self._answer(200, "plain words")
        else:
            self._answer(404, {"message": f"no route {url.path}"})

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self._answer(200, {"received": body})


@pytest.fixture(scope="module")
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), MockApi)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


@pytest.fixture(scope="module")
def v1_samples():
    return read_all(EXTERNAL / "nestful" / "v1" / "executable-data.json", "nestful")


@pytest.fixture(scope="module")
def v1_tools(v1_samples):
    return {tool.name: tool for tool in v1_samples[0].tools}


def local_tool(name: str, method: str, endpoint: str, **properties: dict) -> Tool:
    return Tool(
        name=name,
        parameters={"type": "object", "properties": properties},
        meta={"method": method, "endpoint": endpoint, "host": "api.example.test"},
    )


LOCAL_TOOLS = [
    local_tool("item_reviews", "GET", "/items/{item_id}/reviews", item_id={"type": "integer"}),
    local_tool("create_item", "POST", "/items"),
    local_tool("boom", "GET", "/boom"),
    local_tool("slow", "GET", "/slow"),
    local_tool("text", "GET", "/text"),
    local_tool("missing_route", "GET", "/nowhere"),
    Tool(name="no_endpoint"),
]


def test_endpoint_and_output_parser_from_the_v1_catalog(v1_tools):
    search = endpoint_of(v1_tools["SkyScrapperSearchAirport"])
    assert (search.method, search.host, search.endpoint) == ("GET", "sky-scrapper.p.rapidapi.com", "/api/v1/flights/searchAirport")
    assert endpoint_of(v1_tools["Coronavirus_Smartable_GetNews"]).path_parameters == ("location",)
    assert output_parser_path("result.data.itineraries[0].{param}") == ("data", "itineraries", 0)
    assert output_parser_path("result.Realtime Currency Exchange Rate.{param}") == ("Realtime Currency Exchange Rate",)
    assert output_parser_path("result[0].{param}") == (0,)
    assert output_parser_path("result.{}.{param}") is None  # not a plain path: answer kept whole


def test_a_v1_gold_path_runs_against_the_local_api(server, v1_samples, v1_tools, monkeypatch):
    monkeypatch.setenv("RAPIDAPI_KEY", SECRET)
    sample = v1_samples[0]
    assert [call.name for call in sample.all_calls()][:3] == ["SkyScrapperSearchAirport", "SkyScrapperSearchAirport", "SkyScrapperFlightSearch"]
    flights_only = sample.model_copy(update={"calls": sample.calls[:3]})
    with HttpEnvironment(v1_tools.values(), base_url=server, timeout=5) as environment:
        result = execute_gold_path(flights_only, environment)
    assert result.ok, result.failure
    new_york = result.sample.calls[0][0].response
    assert new_york == {"skyId": "NEW ", "entityId": "id-NEW ", "host_header": "sky-scrapper.p.rapidapi.com", "key_sent": True}
    flight_call = result.path.runs[2]
    # `$var1.skyId$` read the parsed output of the first call (output_parser result.data[0].{param})
    assert flight_call.arguments["originSkyId"] == "NEW " and flight_call.arguments["destinationSkyId"] == "LOND"
    assert result.answer["flightId"] == "NEW -LOND"
    assert result.answer["query"]["returnDate"] == "2024-08-18"


def test_path_parameters_placeholders_query_and_body(server, v1_tools):
    with HttpEnvironment([*LOCAL_TOOLS, v1_tools["Coronavirus_Smartable_GetNews"]], base_url=server) as environment:
        news = environment.call("Coronavirus_Smartable_GetNews", {"location": "US-CA"})
        assert news.ok and news.response == {"location": "US-CA", "news": []}  # appended: /news/v1/US-CA
        reviews = environment.call("item_reviews", {"item_id": 7, "sort": "new", "tags": ["a", "b"], "open": True})
        assert reviews.response == {"path": "/items/7/reviews", "query": {"sort": "new", "tags": "a,b", "open": "true"}}
        created = environment.call("create_item", {"name": "lamp", "price": 9.5})
        assert created.response == {"received": {"name": "lamp", "price": 9.5}}
        assert environment.call("text", {}).response == "plain words"


def test_errors_have_reasons(server):
    with HttpEnvironment(LOCAL_TOOLS, base_url=server, timeout=0.5) as environment:
        boom = environment.call("boom", {})
        assert boom.reason is ErrorReason.HTTP_STATUS and "500" in boom.error
        assert boom.response == {"message": "exploded"}
        assert environment.call("missing_route", {}).reason is ErrorReason.HTTP_STATUS
        assert environment.call("slow", {}).reason is ErrorReason.TIMEOUT
        assert environment.call("no_endpoint", {}).reason is ErrorReason.UNKNOWN_TOOL
        assert environment.call("not_in_catalog", {}).reason is ErrorReason.UNKNOWN_TOOL
    with HttpEnvironment(LOCAL_TOOLS, base_url="http://127.0.0.1:9", timeout=2) as unreachable:
        assert unreachable.call("boom", {}).reason is ErrorReason.NETWORK


def test_an_answer_not_in_the_catalog_shape(server, v1_tools):
    tool = v1_tools["SkyScrapperSearchAirport"].model_copy(update={"meta": {**v1_tools["SkyScrapperSearchAirport"].meta, "endpoint": "/text"}})
    with HttpEnvironment([tool], base_url=server) as environment:
        outcome = environment.call("SkyScrapperSearchAirport", {"query": "Rome"})
    assert outcome.reason is ErrorReason.UNEXPECTED_RESPONSE and outcome.response == "plain words"


def test_record_live_answers_then_replay_offline(tmp_path: Path, v1_tools, monkeypatch):
    monkeypatch.setenv("RAPIDAPI_KEY", SECRET)
    recording = tmp_path / "recorded.json"
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), MockApi)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    base_url = f"http://127.0.0.1:{httpd.server_address[1]}"
    path = [
        [PlannedCall("var1", "SkyScrapperSearchAirport", {"query": "New York"}), PlannedCall("var2", "SkyScrapperSearchAirport", {"query": "London"})],
        [PlannedCall("var3", "SkyScrapperFlightSearch", {"originSkyId": "$var1.skyId$", "destinationSkyId": "$var2.skyId$", "originEntityId": "$var1.entityId$", "destinationEntityId": "$var2.entityId$", "date": "2024-08-15"})],
    ]
    with HttpEnvironment(v1_tools.values(), base_url=base_url, record_path=recording) as live:
        (live_run,) = live.run_paths([path])
    httpd.shutdown()
    httpd.server_close()
    assert live_run.ok
    text = recording.read_text()
    assert SECRET not in text  # the key went in a header, never into the recording
    replay = RecordedEnvironment(RecordedStore.load(recording, v1_tools.values()))
    (replayed,) = replay.run_paths([path])
    assert replayed.ok and replay.misses == 0
    assert [run.outcome.response for run in replayed.runs] == [run.outcome.response for run in live_run.runs]


def test_the_rapidapi_key_goes_only_to_rapidapi_hosts_and_never_follows_a_redirect(server, monkeypatch):
    from fcbench.environments.http_env import HttpEnvironment, _is_rapidapi_host

    assert _is_rapidapi_host("sky-scrapper.p.rapidapi.com") and _is_rapidapi_host("rapidapi.com")
    assert not _is_rapidapi_host("evilrapidapi.com") and not _is_rapidapi_host("rapidapi.com.evil.example")
    monkeypatch.setenv("RAPIDAPI_KEY", SECRET)
    tools = [Tool(name=f"search_{n}", meta={"method": "GET", "endpoint": "/api/v1/flights/searchAirport", "host": host})
             for n, host in (("rapid", "api.rapidapi.com"), ("evil", "evilrapidapi.com"))]
    with HttpEnvironment(tools, base_url=server) as environment:
        assert environment._client.follow_redirects is False  # no header ever reaches a redirect target
        rapid = environment.call("search_rapid", {"query": "Rome"}).response["data"][0]
        evil = environment.call("search_evil", {"query": "Rome"}).response["data"][0]
    assert rapid["key_sent"] is True and rapid["host_header"] == "api.rapidapi.com"
    assert evil["key_sent"] is False and evil["host_header"] is None
