"""OpenAPI descriptions (Swagger 2.0, OpenAPI 3.0 and 3.1; JSON or YAML) -> canonical tools (pure
apart from `load_description`).

One tool per operation. Its `parameters` is one JSON Schema object merging the operation's path,
query, header and body parameters; `meta["openapi"]["locations"]` says where each argument goes in
the request (path / query / header / body / form), so the `http` environment sends exactly what the
description says. A JSON body whose schema is an object contributes its properties as arguments
(location `body`); any other body is one argument `body` (location `body_whole`).

`$ref`s are inlined (local refs; a ref to another file is resolved relative to the description).
A recursive ref is cut where it recurs (the schema says so in its description, and a note is
made); a ref that points nowhere is an error note naming the file and the JSON pointer of the
`$ref`, and the schema at that place becomes `{}`: the rest of the import goes on. `allOf` is
merged into one object schema; `oneOf`/`anyOf` are kept (their members resolved). Enums, formats,
defaults, descriptions and examples (as JSON Schema `examples`) are kept.

`returns` is the schema of the success response (the lowest 2xx code with a JSON schema).

Security: the schemes an operation requires (its own `security`, else the document's; resolved in
`components.securitySchemes` / `securityDefinitions`) are `meta["openapi"]["security"]`, one slot
`{"scheme", "type", "in", "name"}` each (an `apiKey` in its header, query parameter or cookie;
`http`, `oauth2` and `openIdConnect` in the `Authorization` header). A parameter that fills such a
slot, and any `Authorization` or `Cookie` header parameter, is NOT a tool argument: a model must
never be asked for a credential, and an argument is written into every draft and sample. The
environment's auth (`--auth-env`) fills it, and the environment redacts what it sends there from
everything it records (`fcbench.environments.redaction`).
"""

from __future__ import annotations

import copy
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator
from urllib.parse import urlparse

from fcbench.sample import Tool

HTTP_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
DESCRIPTION_SUFFIXES = (".json", ".yaml", ".yml")
# Keys of an OpenAPI schema that JSON Schema understands the same way (others are dropped or mapped).
_SCHEMA_KEYS = {
    "type", "format", "description", "enum", "default", "pattern", "minimum", "maximum", "exclusiveMinimum",
    "exclusiveMaximum", "minLength", "maxLength", "minItems", "maxItems", "uniqueItems", "multipleOf",
    "required", "title", "const", "minProperties", "maxProperties", "examples", "readOnly", "writeOnly",
}
_SCHEMA_CHILDREN = ("items", "additionalProperties", "not")
_SCHEMA_LISTS = ("oneOf", "anyOf")
_PARAMETER_LOCATIONS = ("path", "query", "header", "cookie", "formData", "body")
_NAME_CHARACTERS = re.compile(r"[^A-Za-z0-9_-]+")
MAX_NAME_LENGTH = 64  # OpenAI function names: ^[a-zA-Z0-9_-]{1,64}$


class DescriptionError(ValueError):
    """A file that is not an OpenAPI description at all (the import of the other files goes on)."""


@dataclass(frozen=True)
class ImportNote:
    """Something the import had to decide or could not do, with where it happened."""

    severity: str  # "error" (a broken $ref, a file that is not a description) or "note"
    file: str
    pointer: str  # JSON pointer in the file ("" for the whole file)
    message: str

    def describe(self) -> str:
        where = f"{self.file}#{self.pointer}" if self.pointer else self.file
        return f"{self.severity}: {where}: {self.message}"

    def as_dict(self) -> dict[str, str]:
        return {"severity": self.severity, "file": self.file, "pointer": self.pointer, "message": self.message}


@dataclass
class OpenAPIImport:
    tools: list[Tool] = field(default_factory=list)
    notes: list[ImportNote] = field(default_factory=list)
    files: list[str] = field(default_factory=list)
    servers: dict[str, str] = field(default_factory=dict)  # file stem -> its server URL

    @property
    def security_slots(self) -> list[dict[str, str]]:
        """Every security slot some operation requires, once each, in the order first met."""
        slots: dict[tuple[str, str], dict[str, str]] = {}
        for tool in self.tools:
            for slot in tool.meta["openapi"].get("security", []):
                slots.setdefault((slot["in"], slot["name"].lower()), slot)
        return list(slots.values())

    @property
    def errors(self) -> list[ImportNote]:
        return [note for note in self.notes if note.severity == "error"]


# --------------------------------------------------------------------------------------- reading
def description_files(paths: Iterable[str | Path]) -> list[Path]:
    """The description files named, a folder standing for the JSON/YAML files directly in it."""
    found: list[Path] = []
    for path in map(Path, paths):
        if path.is_dir():
            found.extend(sorted(p for p in path.iterdir() if p.suffix.lower() in DESCRIPTION_SUFFIXES))
        else:
            found.append(path)
    return found


def load_description(path: Path) -> dict[str, Any]:
    """Parse a JSON or YAML description; `DescriptionError` when it is not one."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise DescriptionError(f"cannot read: {exc}") from None
    try:
        if path.suffix.lower() == ".json":
            document = json.loads(text)
        else:
            import yaml

            document = yaml.safe_load(text)
    except (ValueError, Exception) as exc:  # yaml.YAMLError and json.JSONDecodeError
        raise DescriptionError(f"not valid JSON/YAML: {str(exc).splitlines()[0]}") from None
    if not isinstance(document, dict) or not ("swagger" in document or "openapi" in document):
        raise DescriptionError("not an OpenAPI description (no 'swagger' or 'openapi' key)")
    if not isinstance(document.get("paths"), dict):
        raise DescriptionError("the description has no 'paths' object")
    return document


def import_openapi(paths: Iterable[str | Path]) -> OpenAPIImport:
    """Every operation of every description named; tool names made unique across files."""
    result = OpenAPIImport()
    for path in description_files(paths):
        result.files.append(str(path))
        try:
            document = load_description(path)
        except DescriptionError as exc:
            result.notes.append(ImportNote("error", str(path), "", str(exc)))
            continue
        converter = _Converter(document, path)
        result.tools.extend(converter.tools())
        result.notes.extend(converter.notes)
        result.servers[path.stem] = converter.server_url
    _make_names_unique(result.tools)
    return result


def _make_names_unique(tools: list[Tool]) -> None:
    """Three Amadeus files all call their operation `getAirTraffic`: a repeated name gets its
    file's name in front, so each tool stays callable."""
    counts: dict[str, int] = {}
    for tool in tools:
        counts[tool.name] = counts.get(tool.name, 0) + 1
    taken: set[str] = set()
    for tool in tools:
        if counts[tool.name] > 1:
            source = _NAME_CHARACTERS.sub("_", tool.meta["openapi"]["source"].split("_swagger")[0].split("_v")[0])
            tool.name = _clip(f"{source}_{tool.name}")
        base, number = tool.name, 2
        while tool.name in taken:
            tool.name = _clip(f"{base}_{number}")
            number += 1
        taken.add(tool.name)


def _clip(name: str) -> str:
    return name[:MAX_NAME_LENGTH]


def tool_name(operation_id: Any, method: str, path: str) -> str:
    """`operationId` made a valid function name, or one derived from method + path
    (`GET /reference-data/locations/{locationId}` -> `get_reference_data_locations_by_locationId`)."""
    if isinstance(operation_id, str) and operation_id.strip():
        name = _NAME_CHARACTERS.sub("_", operation_id.strip()).strip("_")
        if name:
            return _clip(name)
    parts = []
    for segment in path.strip("/").split("/"):
        if segment.startswith("{") and segment.endswith("}"):
            parts.append("by_" + _NAME_CHARACTERS.sub("_", segment[1:-1]))
        elif segment:
            parts.append(_NAME_CHARACTERS.sub("_", segment))
    return _clip("_".join([method.lower(), *parts]).strip("_") or method.lower())


# ------------------------------------------------------------------------------------ conversion
class _Converter:
    def __init__(self, document: dict[str, Any], path: Path) -> None:
        self.document = document
        self.path = path
        self.file = str(path)
        self.notes: list[ImportNote] = []
        self.swagger2 = str(document.get("swagger", "")).startswith("2")
        self.server_url, self.base_path, self.host = self._server()
        self._external: dict[Path, Any] = {}

    # ---- where the API lives
    def _server(self) -> tuple[str, str, str]:
        if self.swagger2:
            host = str(self.document.get("host") or "")
            base_path = str(self.document.get("basePath") or "").rstrip("/")
            scheme = (self.document.get("schemes") or ["https"])[0]
            return (f"{scheme}://{host}{base_path}" if host else base_path), base_path, host
        servers = self.document.get("servers") or []
        url = str(servers[0].get("url", "")) if servers and isinstance(servers[0], dict) else ""
        parsed = urlparse(url)
        return url, parsed.path.rstrip("/"), parsed.netloc

    # ---- refs
    def note(self, severity: str, pointer: str, message: str) -> None:
        self.notes.append(ImportNote(severity, self.file, pointer, message))

    def _target(self, ref: str, pointer: str) -> tuple[bool, Any]:
        file_part, _, fragment = ref.partition("#")
        document = self.document
        if file_part:
            target_file = (self.path.parent / file_part).resolve()
            if target_file not in self._external:
                try:
                    self._external[target_file] = load_description_any(target_file)
                except DescriptionError as exc:
                    self.note("error", pointer, f"$ref {ref!r}: {exc}")
                    return False, None
            document = self._external[target_file]
        node: Any = document
        for raw in fragment.lstrip("/").split("/") if fragment.strip("/") else []:
            part = raw.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and part in node:
                node = node[part]
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                self.note("error", pointer, f"broken $ref {ref!r}: nothing at that JSON pointer")
                return False, None
        return True, node

    def deref(self, node: Any, pointer: str) -> Any:
        """A parameter / response / request body object with its own `$ref` followed (chains too)."""
        seen: set[str] = set()
        while isinstance(node, dict) and isinstance(node.get("$ref"), str):
            ref = node["$ref"]
            if ref in seen:
                self.note("note", pointer, f"circular $ref {ref!r} cut")
                return {}
            seen.add(ref)
            ok, node = self._target(ref, pointer)
            if not ok:
                return {}
        return node

    def schema(self, node: Any, pointer: str, stack: tuple[str, ...] = ()) -> dict[str, Any]:
        """An OpenAPI schema as plain JSON Schema: refs inlined, allOf merged, OpenAPI-only keys mapped."""
        if not isinstance(node, dict):
            return {}
        if isinstance(node.get("$ref"), str):
            ref = node["$ref"]
            if ref in stack:
                name = ref.rsplit("/", 1)[-1]
                self.note("note", pointer, f"recursive $ref {ref!r} cut at this depth")
                return {"type": "object", "description": f"(recursive {name}: cut here)"}
            ok, target = self._target(ref, pointer)
            if not ok:
                return {}
            extra = {key: value for key, value in node.items() if key != "$ref"}  # 3.1 allows siblings
            resolved = self.schema(target, pointer, stack + (ref,))
            return {**resolved, **self.schema(extra, pointer, stack)} if extra else resolved
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in _SCHEMA_KEYS:
                out[key] = copy.deepcopy(value)
        if "example" in node and "examples" not in out:
            out["examples"] = [copy.deepcopy(node["example"])]
        elif "examples" in out and not isinstance(out["examples"], list):
            out.pop("examples")  # OpenAPI's map of named examples is not JSON Schema's list
        if isinstance(node.get("properties"), dict):
            out["properties"] = {name: self.schema(sub, f"{pointer}/properties/{_escape(name)}", stack)
                                 for name, sub in node["properties"].items()}
        for key in _SCHEMA_CHILDREN:
            if isinstance(node.get(key), dict):
                out[key] = self.schema(node[key], f"{pointer}/{key}", stack)
            elif key == "additionalProperties" and isinstance(node.get(key), bool):
                out[key] = node[key]
        for key in _SCHEMA_LISTS:
            if isinstance(node.get(key), list):
                out[key] = [self.schema(sub, f"{pointer}/{key}/{i}", stack) for i, sub in enumerate(node[key])]
        if isinstance(node.get("allOf"), list):
            for index, part in enumerate(node["allOf"]):
                _merge_into(out, self.schema(part, f"{pointer}/allOf/{index}", stack))
            if "properties" in out and "type" not in out:
                out["type"] = "object"
        if node.get("nullable") is True or node.get("x-nullable") is True:
            kind = out.get("type")
            if isinstance(kind, str):
                out["type"] = [kind, "null"]
        if "required" in out and not isinstance(out["required"], list):
            out.pop("required")  # Swagger 2's `required: true` on a schema property is not JSON Schema
        return out

    # ---- operations
    def tools(self) -> Iterator[Tool]:
        for path, item in self.document["paths"].items():
            item_pointer = f"/paths/{_escape(path)}"
            item = self.deref(item, item_pointer)
            if not isinstance(item, dict):
                continue
            shared = item.get("parameters") or []
            for method in HTTP_METHODS:
                operation = item.get(method)
                if isinstance(operation, dict):
                    yield self.tool(path, method, operation, shared, f"{item_pointer}/{method}")

    def tool(self, path: str, method: str, operation: dict[str, Any], shared: list[Any], pointer: str) -> Tool:
        name = tool_name(operation.get("operationId"), method, path)
        if not operation.get("operationId"):
            self.note("note", pointer, f"no operationId: tool named {name!r} from method and path")
        properties: dict[str, Any] = {}
        required: list[str] = []
        locations: dict[str, str] = {}
        wire_names: dict[str, str] = {}
        self._styles: dict[str, str] = {}
        parameters = self._operation_parameters(shared, operation.get("parameters") or [], pointer)
        security = self._security_slots(operation, pointer)
        for parameter, where in parameters:
            if self._is_credential(parameter, security):
                self.note("note", where, f"{parameter['in']} parameter {parameter['name']!r} is a credential: left to "
                                         "the environment's auth (--auth-env), never a tool argument")
                continue
            self._add_parameter(parameter, where, properties, required, locations, wire_names)
        if not self.swagger2 and operation.get("requestBody") is not None:
            self._add_request_body(operation["requestBody"], f"{pointer}/requestBody", properties, required,
                                   locations, wire_names)
        if not properties:
            self.note("note", pointer, "the operation takes no parameters")
        returns, status = self._success_schema(operation.get("responses") or {}, f"{pointer}/responses")
        if returns is None:
            self.note("note", pointer, "no success (2xx) response with a schema: the tool has no `returns`")
        description = " ".join(str(part).strip() for part in (operation.get("summary"), operation.get("description"))
                               if part and str(part).strip())
        tags = operation.get("tags") or []
        meta: dict[str, Any] = {
            "method": method.upper(),
            "endpoint": path,  # relative to the server URL (which holds any base path)
            "host": self.host,
            "openapi": {
                "source": self.path.stem,
                "operation_id": operation.get("operationId"),
                "path": path,
                "server": self.server_url,
                "locations": locations,
                "success_status": status,
            },
        }
        if wire_names:
            meta["openapi"]["wire_names"] = wire_names
        if self._styles:
            meta["openapi"]["array_styles"] = self._styles
        produces = self._produces(operation, status)
        if produces:
            meta["openapi"]["produces"] = produces
        if tags:
            meta["openapi"]["tags"] = list(tags)
        if security:
            meta["openapi"]["security"] = security
        schema: dict[str, Any] = {"type": "object", "properties": properties}
        if required:
            schema["required"] = required
        return Tool(name=name, description=_squash(description), parameters=schema, returns=returns, meta=meta)

    # ---- credentials
    def _security_slots(self, operation: dict[str, Any], pointer: str) -> list[dict[str, str]]:
        """Where the credentials of the schemes this operation requires go (see the module doc)."""
        requirements = operation.get("security", self.document.get("security")) or []
        if self.swagger2:
            schemes = self.document.get("securityDefinitions") or {}
        else:
            schemes = (self.document.get("components") or {}).get("securitySchemes") or {}
        slots: list[dict[str, str]] = []
        for requirement in requirements if isinstance(requirements, list) else []:
            for scheme_name in requirement if isinstance(requirement, dict) else []:
                scheme = self.deref(schemes.get(scheme_name), f"{pointer}/security")
                if not isinstance(scheme, dict):
                    self.note("note", f"{pointer}/security", f"security scheme {scheme_name!r} is not defined")
                    continue
                kind = str(scheme.get("type", ""))
                if kind == "apiKey" and scheme.get("in") in ("header", "query", "cookie") and scheme.get("name"):
                    slot = {"scheme": scheme_name, "type": kind, "in": scheme["in"], "name": str(scheme["name"])}
                elif kind in ("http", "basic", "oauth2", "openIdConnect"):
                    slot = {"scheme": scheme_name, "type": kind, "in": "header", "name": "Authorization"}
                    if kind in ("http", "basic"):
                        slot["http_scheme"] = str(scheme.get("scheme", "basic")).lower() if kind == "http" else "basic"
                else:
                    continue
                if slot not in slots:
                    slots.append(slot)
        return slots

    @staticmethod
    def _is_credential(parameter: dict[str, Any], security: list[dict[str, str]]) -> bool:
        where, name = parameter.get("in"), str(parameter.get("name", ""))
        if where == "header" and name.lower() in ("authorization", "cookie", "proxy-authorization"):
            return True
        return any(slot["in"] == where and (slot["name"].lower() == name.lower() if where == "header"
                                            else slot["name"] == name) for slot in security)

    def _operation_parameters(self, shared: list[Any], own: list[Any], pointer: str) -> list[tuple[dict[str, Any], str]]:
        """Path-level then operation-level parameters; an operation's parameter overrides a shared
        one with the same name and location."""
        merged: dict[tuple[str, str], tuple[dict[str, Any], str]] = {}
        for source, items in (("", shared), (pointer, own)):
            base = source or pointer.rsplit("/", 1)[0]
            for index, raw in enumerate(items):
                where = f"{base}/parameters/{index}"
                parameter = self.deref(raw, where)
                if not isinstance(parameter, dict) or "name" not in parameter or parameter.get("in") not in _PARAMETER_LOCATIONS:
                    if parameter:
                        self.note("note", where, "parameter without a name or a known location: skipped")
                    continue
                merged[(parameter["name"], parameter["in"])] = (parameter, where)
        return list(merged.values())

    def _add_parameter(self, parameter: dict[str, Any], where: str, properties: dict[str, Any], required: list[str],
                       locations: dict[str, str], wire_names: dict[str, str]) -> None:
        location = parameter["in"]
        if location == "body":  # Swagger 2
            schema = self.schema(parameter.get("schema"), f"{where}/schema")
            if parameter.get("description") and "description" not in schema:
                schema["description"] = parameter["description"]
            self._add_body_schema(schema, bool(parameter.get("required")), properties, required, locations,
                                  wire_names, where)
            return
        if "schema" in parameter or "content" in parameter:  # OpenAPI 3
            raw = parameter.get("schema")
            if raw is None:
                content = parameter.get("content") or {}
                raw = next((media.get("schema") for media in content.values() if isinstance(media, dict)), {})
            schema = self.schema(raw, f"{where}/schema")
        else:  # Swagger 2: the schema keys sit on the parameter itself
            schema = self.schema({key: value for key, value in parameter.items()
                                  if key not in ("name", "in", "required", "description", "collectionFormat")}, where)
        if parameter.get("description"):
            schema["description"] = str(parameter["description"]).strip()
        if "example" in parameter and "examples" not in schema:
            schema["examples"] = [parameter["example"]]
        name = self._free_name(parameter["name"], location, properties, wire_names)
        properties[name] = schema
        locations[name] = "form" if location == "formData" else location
        if location == "query" and schema.get("type") == "array":
            self._styles[name] = self._array_style(parameter)
        if parameter.get("required") or location == "path":
            required.append(name)

    def _produces(self, operation: dict[str, Any], status: str | None) -> list[str]:
        """The media types the success response comes in (sent as `Accept`)."""
        if self.swagger2:
            return [str(m) for m in operation.get("produces") or self.document.get("produces") or []]
        response = self.deref((operation.get("responses") or {}).get(status or "", {}), "")
        return [str(m) for m in (response.get("content") or {})] if isinstance(response, dict) else []

    def _array_style(self, parameter: dict[str, Any]) -> str:
        """How a query array is written: Swagger 2 `collectionFormat` (default csv), OpenAPI 3
        `style` + `explode` (default form + explode: one `name=value` per item)."""
        if self.swagger2:
            return str(parameter.get("collectionFormat") or "csv")
        style = parameter.get("style", "form")
        if style == "spaceDelimited":
            return "ssv"
        if style == "pipeDelimited":
            return "pipes"
        return "multi" if parameter.get("explode", True) else "csv"

    def _add_request_body(self, body: Any, pointer: str, properties: dict[str, Any], required: list[str],
                          locations: dict[str, str], wire_names: dict[str, str]) -> None:
        body = self.deref(body, pointer)
        if not isinstance(body, dict):
            return
        content = body.get("content") or {}
        media = next((m for m in content if "json" in m.lower()), None)
        form = next((m for m in content if m.lower() == "application/x-www-form-urlencoded"), None)
        chosen = media or form or next(iter(content), None)
        if chosen is None:
            return
        schema = self.schema((content[chosen] or {}).get("schema"), f"{pointer}/content/{_escape(chosen)}/schema")
        if body.get("description") and "description" not in schema:
            schema["description"] = str(body["description"]).strip()
        if chosen == form:
            for name, sub in (schema.get("properties") or {}).items():
                free = self._free_name(name, "form", properties, wire_names)
                properties[free] = sub
                locations[free] = "form"
                if name in (schema.get("required") or []):
                    required.append(free)
            return
        self._add_body_schema(schema, bool(body.get("required")), properties, required, locations, wire_names, pointer)

    def _add_body_schema(self, schema: dict[str, Any], body_required: bool, properties: dict[str, Any],
                         required: list[str], locations: dict[str, str], wire_names: dict[str, str], where: str) -> None:
        fields = schema.get("properties")
        if isinstance(fields, dict) and fields and not (schema.get("oneOf") or schema.get("anyOf")):
            for name, sub in fields.items():
                free = self._free_name(name, "body", properties, wire_names)
                properties[free] = sub
                locations[free] = "body"
                if name in (schema.get("required") or []):
                    required.append(free)
            return
        name = self._free_name("body", "body_whole", properties, wire_names)
        properties[name] = schema
        locations[name] = "body_whole"
        if body_required:
            required.append(name)

    def _free_name(self, name: str, location: str, properties: dict[str, Any], wire_names: dict[str, str]) -> str:
        """The argument name for a request field: its own, or `<location>_<name>` when another
        location already uses it (a path `id` and a body `id`); the wire name is kept."""
        if name not in properties:
            return name
        free = f"{location}_{name}"
        wire_names[free] = name
        return free

    def _success_schema(self, responses: dict[str, Any], pointer: str) -> tuple[dict[str, Any] | None, str | None]:
        codes = sorted(str(code) for code in responses if str(code).startswith("2"))
        for code in codes:
            where = f"{pointer}/{code}"
            response = self.deref(responses[code] if code in responses else responses[int(code)], where)
            if not isinstance(response, dict):
                continue
            if self.swagger2:
                if response.get("schema") is not None:
                    schema = self.schema(response["schema"], f"{where}/schema")
                    examples = [v for m, v in (response.get("examples") or {}).items() if "json" in str(m).lower()]
                    return _with_examples(schema, examples), code
                continue
            content = response.get("content") or {}
            media = next((m for m in content if "json" in m.lower()), None)
            if media and isinstance(content[media], dict) and content[media].get("schema") is not None:
                body = content[media]
                schema = self.schema(body["schema"], f"{where}/content/{_escape(media)}/schema")
                examples = [body["example"]] if "example" in body else []
                for named in (body.get("examples") or {}).values():
                    named = self.deref(named, where)
                    if isinstance(named, dict) and "value" in named:
                        examples.append(named["value"])
                return _with_examples(schema, examples), code
        return None, (codes[0] if codes else None)


def load_description_any(path: Path) -> Any:
    """A file a `$ref` points into (any JSON/YAML document, not necessarily a whole description)."""
    try:
        text = path.read_text(encoding="utf-8")
        if path.suffix.lower() == ".json":
            return json.loads(text)
        import yaml

        return yaml.safe_load(text)
    except Exception as exc:  # unreadable or unparsable: one note, the import goes on
        raise DescriptionError(f"cannot read {path}: {str(exc).splitlines()[0] if str(exc) else exc}") from None


def _with_examples(schema: dict[str, Any], examples: list[Any]) -> dict[str, Any]:
    """The published example responses join the schema's own examples: they are real shapes that
    a schema sometimes contradicts (HotelSearch's `data` is an object in the schema, a list in
    every example and answer)."""
    if examples:
        schema["examples"] = [*schema.get("examples", []), *(copy.deepcopy(e) for e in examples
                                                             if e not in schema.get("examples", []))]
    return schema


def _merge_into(target: dict[str, Any], part: dict[str, Any]) -> None:
    """allOf: properties and required lists are united; other keys keep the first value seen."""
    for key, value in part.items():
        if key == "properties":
            target.setdefault("properties", {}).update(value)
        elif key == "required":
            target["required"] = list(dict.fromkeys([*target.get("required", []), *value]))
        elif key not in target:
            target[key] = value


def _escape(part: str) -> str:
    return part.replace("~", "~0").replace("/", "~1")


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()
