"""OpenAPI import on what real descriptions do (issue 27): unquoted YAML dates, descriptions split over
files with operation-level `$ref`s, long colliding names, credentials / protocol headers / read-only
fields that are no arguments, bodies the http environment cannot send, oversized schemas.

Real descriptions: the published Amadeus files (../shared/external/amadeus) and Blockfrost's
(datasets/blockfrost, MIT, from the npm package @blockfrost/openapi); small synthetic files only to
isolate one case."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from conftest import EXTERNAL
from fcbench.catalog.openapi import import_openapi
from fcbench.catalog.trim import KEEP_DEPTH, estimated_tokens, trim_parameters
from fcbench.cli import app
from fcbench.config import load_pipelines

AMADEUS = EXTERNAL / "amadeus"
REPO = Path(__file__).resolve().parents[3]
BLOCKFROST = REPO / "datasets" / "blockfrost" / "blockfrost.yaml"
MINIMAL_PIPELINES = "pipelines:\n  placeholder:\n    dataset_dir: datasets/placeholder\n    tools: datasets/placeholder/tools.json\n" \
    "    environment: {kind: recorded, responses: datasets/placeholder/recorded.json}\n"


def _pipelines(tmp_path: Path) -> Path:
    path = tmp_path / "pipelines.yaml"
    path.write_text((REPO / "pipelines.yaml").read_text())
    return path


def test_unquoted_yaml_dates_stay_strings_and_new_writes_the_dataset(tmp_path):
    (tmp_path / "api.yaml").write_text("""
openapi: 3.0.3
servers: [{url: "http://api.example.test"}]
paths:
  /bookings:
    get:
      operationId: listBookings
      parameters:
        - {name: since, in: query, schema: {type: string, format: date, example: 2024-05-01}}
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema: {type: object, properties: {created: {type: string, format: date-time, example: 2024-05-01T10:00:00Z}}}
""")
    tool = import_openapi([tmp_path / "api.yaml"]).tools[0]
    assert tool.parameters["properties"]["since"]["examples"] == ["2024-05-01"]
    assert tool.returns["properties"]["created"]["examples"] == ["2024-05-01T10:00:00Z"]
    result = CliRunner().invoke(app, ["new", "dated", "--openapi", str(tmp_path / "api.yaml"), "--file",
                                      str(_pipelines(tmp_path))])
    assert result.exit_code == 0, result.output
    pools = json.loads((tmp_path / "datasets" / "dated" / "value_pools.json").read_text())
    assert pools["slots"]["since"]["values"] == [{"value": "2024-05-01"}]


def test_a_failed_write_leaves_no_half_dataset_folder(tmp_path, monkeypatch):
    import fcbench.pipeline.scaffold as scaffold

    def broken(path, value, indent=None):
        raise TypeError("Object of type date is not JSON serializable")

    monkeypatch.setattr(scaffold, "write_json", broken)
    pipelines = _pipelines(tmp_path)
    before = pipelines.read_text()
    with pytest.raises(TypeError):
        scaffold.scaffold_dataset("broken", [BLOCKFROST], pipelines)
    assert not (tmp_path / "datasets" / "broken").exists() and pipelines.read_text() == before


def _split_over_files(source: Path, folder: Path) -> Path:
    """A real Amadeus description as three files: main (operations by $ref), ops.json (the
    operations, refs into defs.json) and defs.json (the definitions, whose own refs are local)."""
    document = json.loads(source.read_text())
    defs = {"definitions": document.pop("definitions", {})}
    operations: dict[str, object] = {}

    def retarget(node, back: str = "", defs_file: str = "defs.json"):
        """Definitions now live in defs.json; any other local ref of an operation points back at
        the main file (`../Main.json#/parameters/...`), as it now sits in parts/ops.json."""
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#/definitions/"):
                node["$ref"] = defs_file + ref
            elif isinstance(ref, str) and ref.startswith("#/") and back:
                node["$ref"] = back + ref
            for value in node.values():
                retarget(value, back, defs_file)
        elif isinstance(node, list):
            for value in node:
                retarget(value, back, defs_file)

    for path, item in document["paths"].items():
        for method in list(item):
            if method in ("get", "post", "put", "delete", "patch"):
                key = f"{method}_{len(operations)}"
                operation = copy.deepcopy(item[method])
                retarget(operation, f"../{source.name}")
                operations[key] = operation
                item[method] = {"$ref": f"parts/ops.json#/{key}"}
    retarget(document, "", "parts/defs.json")
    (folder / "parts").mkdir()
    (folder / "parts" / "ops.json").write_text(json.dumps(operations))
    (folder / "parts" / "defs.json").write_text(json.dumps(defs))  # its refs are local to itself
    main = folder / source.name
    main.write_text(json.dumps(document))
    return main


@pytest.mark.parametrize("name", ["HotelSearch_v3_swagger_specification.json", "FlightCreateOrders_v1_swagger_specification.json",
                                  "TransferBook_v1_swagger_specification.json"])
def test_a_description_split_over_files_imports_as_the_single_file(tmp_path, name):
    single = import_openapi([AMADEUS / name])
    split = import_openapi([_split_over_files(AMADEUS / name, tmp_path)])
    assert not split.errors, [note.describe() for note in split.errors]
    assert [t.name for t in split.tools] == [t.name for t in single.tools]
    for left, right in zip(single.tools, split.tools):
        assert left.parameters == right.parameters and left.parameters["properties"]  # refs followed
        assert left.returns == right.returns


def test_long_names_that_collide_when_clipped_get_numbered(tmp_path):
    stem = "get_" + "very_long_resource_name_" * 3
    paths = {f"/{stem}{suffix}": {"get": {"operationId": f"{stem}{suffix}", "responses": {"204": {"description": "ok"}}}}
             for suffix in ("alpha", "beta", "gamma")}
    (tmp_path / "long.json").write_text(json.dumps({"openapi": "3.0.3", "paths": paths}))
    names = [tool.name for tool in import_openapi([tmp_path / "long.json"]).tools]
    assert len(set(names)) == 3 and all(len(name) <= 64 for name in names)
    assert names[1].endswith("_2") and names[2].endswith("_3")


def test_blockfrost_credentials_drive_auth_and_binary_bodies_are_listed(tmp_path):
    pipelines = _pipelines(tmp_path)
    result = CliRunner().invoke(app, ["new", "bf", "--openapi", str(BLOCKFROST), "--file", str(pipelines),
                                      "--auth-env", "BLOCKFROST_PROJECT_ID", "--json"])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.stdout)
    environment = load_pipelines(pipelines).get_pipeline("bf").environment
    # the description's apiKey scheme: the token goes in the `project_id` header, bare
    assert (environment.auth_env, environment.auth_header, environment.auth_scheme) == \
        ("BLOCKFROST_PROJECT_ID", "project_id", "")
    skipped = {entry["tool"]: entry["reason"] for entry in summary["skipped"]}
    assert skipped == {"ipfs_add": "a multipart/form-data body", "post_tx_submit": "a application/cbor body",
                       "post_utils_txs_evaluate": "a application/cbor body"}
    tools = json.loads((tmp_path / "datasets" / "bf" / "tools.json").read_text())
    assert len(tools) == 126 and not any("project_id" in tool["parameters"]["properties"] for tool in tools)
    report = json.loads((tmp_path / "datasets" / "bf" / "import_report.json").read_text())
    assert report["skipped"] == summary["skipped"] and report["auth"]["schemes"][0]["name"] == "project_id"
    without = CliRunner().invoke(app, ["new", "bf2", "--openapi", str(BLOCKFROST), "--file", str(pipelines)])
    assert "pass --auth-env NAME" in without.output and "project_id" in without.output


def test_protocol_headers_credentials_and_read_only_fields_are_not_arguments(tmp_path):
    (tmp_path / "pay.yaml").write_text("""
openapi: 3.0.3
paths:
  /payments:
    post:
      operationId: createPayment
      parameters:
        - {name: Accept, in: header, required: true, schema: {type: string, enum: [application/json]}}
        - {name: Content-Type, in: header, required: true, schema: {type: string}}
        - {name: token, in: query, required: true, schema: {type: string}}
        - {name: X-Api-Key, in: header, schema: {type: string}}
        - {name: X-Trace-Tenant, in: header, schema: {type: string}}
      requestBody:
        required: true
        content:
          application/json:
            schema:
              type: object
              required: [amount, status]
              properties:
                amount: {type: number}
                status: {type: string, readOnly: true, enum: [pending, failed, paid]}
                payer: {type: object, properties: {name: {type: string}, id: {type: string, readOnly: true}}}
      responses:
        "201": {description: created}
""")
    imported = import_openapi([tmp_path / "pay.yaml"])
    tool = imported.tools[0]
    assert set(tool.parameters["properties"]) == {"X-Trace-Tenant", "amount", "payer"}
    assert tool.parameters["required"] == ["amount"]
    assert set(tool.parameters["properties"]["payer"]["properties"]) == {"name"}
    messages = " | ".join(note.message for note in imported.notes)
    assert "protocol header 'Accept'" in messages and "credential 'token'" in messages and "read-only" in messages


def test_amadeus_read_only_response_fields_are_no_booking_arguments():
    tools = {tool.name: tool for tool in import_openapi([AMADEUS / "FlightCreateOrders_v1_swagger_specification.json"]).tools}
    order = tools["createFligtOrders"]

    def read_only_anywhere(schema) -> bool:
        if isinstance(schema, dict):
            return schema.get("readOnly") is True or any(read_only_anywhere(v) for v in schema.values())
        return isinstance(schema, list) and any(read_only_anywhere(v) for v in schema)

    assert order.parameters["properties"] and not read_only_anywhere(order.parameters)


def test_oversized_parameters_are_trimmed_by_the_rule_and_required_arguments_stay():
    tools = {tool.name: tool for tool in import_openapi([AMADEUS / "FlightCreateOrders_v1_swagger_specification.json"]).tools}
    parameters = copy.deepcopy(tools["createFligtOrders"].parameters)
    before = estimated_tokens(parameters)
    record = trim_parameters("createFligtOrders", parameters, limit=before // 4)
    assert record is not None and record.tokens_before == before and record.tokens_after < before
    assert record.steps[0] == "examples below the arguments dropped"
    assert set(tools["createFligtOrders"].parameters.get("required") or []) <= set(parameters["properties"])
    assert trim_parameters("createFligtOrders", parameters, limit=10 * before) is None  # under the limit: untouched

    def depth(schema, level=0) -> int:
        children = [*(schema.get("properties") or {}).values()] + [schema[k] for k in ("items",) if isinstance(schema.get(k), dict)]
        return max([level] + [depth(child, level + 1) for child in children])

    if "nesting deeper than" in " ".join(record.steps):
        assert all(depth(sub) <= KEEP_DEPTH for sub in parameters["properties"].values())


def test_new_reports_trimmed_tools(tmp_path, monkeypatch):
    import fcbench.catalog.trim as trim

    monkeypatch.setattr(trim.trim_parameters, "__defaults__", (600,))
    pipelines = _pipelines(tmp_path)
    result = CliRunner().invoke(app, ["new", "orders", "--openapi", str(AMADEUS / "FlightCreateOrders_v1_swagger_specification.json"),
                                      "--file", str(pipelines), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "datasets" / "orders" / "import_report.json").read_text())
    trimmed = {entry["tool"]: entry for entry in report["trimmed"]["tools"] if entry["part"] == "parameters"}
    assert "createFligtOrders" in trimmed and trimmed["createFligtOrders"]["tokens_after"] < trimmed["createFligtOrders"]["tokens_before"]
    tools = {tool["name"]: tool for tool in json.loads((tmp_path / "datasets" / "orders" / "tools.json").read_text())}
    assert estimated_tokens(tools["createFligtOrders"]["parameters"]) == trimmed["createFligtOrders"]["tokens_after"]
