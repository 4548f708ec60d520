"""OpenAPI import: the 40 published Amadeus descriptions, and the bad inputs the issue names."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from conftest import EXTERNAL
from fcbench.catalog.openapi import import_openapi, tool_name
from fcbench.cli import app
from fcbench.config import load_pipelines

AMADEUS = EXTERNAL / "amadeus"
REPO = Path(__file__).resolve().parents[3]


def test_all_amadeus_descriptions_import_without_error():
    result = import_openapi([AMADEUS])
    assert len(result.files) == 40 and not result.errors
    tools = {tool.name: tool for tool in result.tools}
    assert len(tools) == 54  # one tool per operation, names unique
    assert {"FlightBusiestTravelingPeriod_getAirTraffic", "FlightMostBookedDestinations_getAirTraffic"} <= set(tools)
    offers = tools["getMultiHotelOffers"]  # Swagger 2.0 query parameters
    assert offers.meta["openapi"]["locations"]["hotelIds"] == "query"
    assert offers.parameters["properties"]["hotelIds"]["type"] == "array" and "hotelIds" in offers.parameters["required"]
    data = offers.returns["properties"]["data"]  # returns from the 200 schema, $refs inlined
    assert data["title"] == "HotelOffers" and data["properties"]["offers"]["type"] == "array"
    assert isinstance(offers.returns["examples"][0]["data"], list)  # the published example (a list, unlike the schema)
    price = tools["quoteAirOffers"]  # a Swagger 2.0 body: its properties are arguments
    assert price.meta["openapi"]["locations"] == {"data": "body", "include": "query", "forceClass": "query"}
    # a protocol header is no argument; its one value (the default) is sent by the environment
    assert price.meta["openapi"]["fixed_headers"] == {"X-HTTP-Method-Override": "GET"}
    by_city = tools["get-shopping-hotels-by-city"]  # OpenAPI 3.0
    assert by_city.meta["openapi"]["server"] == "https://test.api.amadeus.com/v1"
    assert by_city.parameters["properties"]["radiusUnit"]["enum"] == ["KM", "MILE"]
    assert tools["cancelFlightOrder"].returns is None  # 204 without a schema, noted
    assert any("no success" in n.message and "delete" in n.pointer for n in result.notes)
    assert tools["oauth2Token"].meta["openapi"]["locations"]["grant_type"] == "form"


def test_broken_and_recursive_refs_allof_oneof_and_missing_operation_ids(tmp_path):
    (tmp_path / "api.yaml").write_text("""
openapi: 3.1.0
servers: [{url: "http://api.example.test/base"}]
paths:
  /nodes/{nodeId}:
    get:
      parameters:
        - {name: nodeId, in: path, required: true, schema: {type: string, example: n-1}}
        - {name: depth, in: query, schema: {$ref: "#/components/schemas/Nope"}}
      responses:
        "200":
          content:
            application/json: {schema: {$ref: "#/components/schemas/Node"}}
  /pets:
    post:
      operationId: addPet
      requestBody:
        content:
          application/json:
            schema:
              allOf:
                - {$ref: "#/components/schemas/Named"}
                - {type: object, required: [kind], properties: {kind: {oneOf: [{type: string}, {type: integer}]}}}
      responses: {"500": {description: boom}}
components:
  schemas:
    Node: {type: object, properties: {id: {type: string}, children: {type: array, items: {$ref: "#/components/schemas/Node"}}}}
    Named: {type: object, required: [name], properties: {name: {type: string, nullable: true, default: rex}}}
""")
    (tmp_path / "not_api.json").write_text('{"hello": 1}')
    result = import_openapi([tmp_path])
    tools = {tool.name: tool for tool in result.tools}
    assert set(tools) == {"get_nodes_by_nodeId", "addPet"}
    broken = [n for n in result.errors if "Nope" in n.message]
    assert broken and broken[0].file.endswith("api.yaml")
    assert broken[0].pointer == "/paths/~1nodes~1{nodeId}/get/parameters/1/schema"
    assert any(n.file.endswith("not_api.json") and "not an OpenAPI description" in n.message for n in result.errors)
    node = tools["get_nodes_by_nodeId"]
    assert node.parameters["required"] == ["nodeId"] and node.parameters["properties"]["nodeId"]["examples"] == ["n-1"]
    cut = node.returns["properties"]["children"]["items"]  # Node inside Node: cut at the first recurrence
    assert cut["description"].startswith("(recursive Node")
    pet = tools["addPet"]
    assert pet.parameters["required"] == ["name", "kind"]
    assert pet.parameters["properties"]["kind"] == {"oneOf": [{"type": "string"}, {"type": "integer"}]}
    assert pet.parameters["properties"]["name"]["default"] == "rex"
    assert pet.returns is None and pet.meta["openapi"]["locations"] == {"name": "body", "kind": "body"}
    assert tool_name(None, "get", "/a-b/{x}") == "get_a-b_by_x"


def test_new_scaffolds_and_appends_with_comments_kept(tmp_path):
    pipelines = tmp_path / "pipelines.yaml"
    original = (REPO / "pipelines.yaml").read_text()
    pipelines.write_text(original)
    result = CliRunner().invoke(app, ["new", "amadeus-all", "--openapi", str(AMADEUS), "--file", str(pipelines),
                                      "--base-url", "http://127.0.0.1:4010", "--auth-env", "AMADEUS_TOKEN", "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    assert summary["tools"] == 54 and summary["lint"]["overlapping-tools"] >= 1  # findings reported
    text = pipelines.read_text()
    assert text.startswith(original.rstrip("\n"))  # every comment and the order untouched
    pipeline = load_pipelines(pipelines).get_pipeline("amadeus-all")
    assert pipeline.environment.kind == "http" and pipeline.environment.auth_env == "AMADEUS_TOKEN"
    folder = tmp_path / "datasets" / "amadeus-all"
    pools = json.loads((folder / "value_pools.json").read_text())
    assert {"value": "PAR"} in pools["slots"]["cityCode"]["values"]
    report = json.loads((folder / "import_report.json").read_text())
    assert report["tools"] == 54 and report["lint"]["findings"]
    again = CliRunner().invoke(app, ["new", "amadeus-all", "--openapi", str(AMADEUS), "--file", str(pipelines)])
    assert again.exit_code == 1 and "already declared" in again.stderr
