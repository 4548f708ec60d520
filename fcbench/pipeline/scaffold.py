"""`build-dataset new NAME --openapi FILE_OR_DIR...` or `--python module.py`: scaffold a benchmark
over one's own API or one's own Python functions.

Writes `datasets/NAME/` (tools.json, value_pools.json, import_report.json) and appends a pipeline
entry to pipelines.yaml as text, so the file's comments and order stay exactly as they were. The
file is edited under its lock (`.pipelines.yaml.lock` beside it, fcbench.runtime.writer_lock) and
read again under it: `new` commands run at once each add their pipeline, one after the other.
- OpenAPI: the entry uses an `http` environment replayed from `datasets/NAME/recorded.json`;
  `--record` on a stage (or `run`) calls the server and fills that store.
- Python: the module is copied to `datasets/NAME/tools.py` and executed by the `python`
  environment (worker subprocesses with timeouts); its tools come from its typed signatures and
  docstrings (`fcbench.catalog.python_module`), checked before anything is written.
"""

from __future__ import annotations

import json
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fcbench.catalog.lint import count_by_code, lint_tools
from fcbench.catalog.openapi import OpenAPIImport, import_openapi
from fcbench.catalog.trim import MAX_CATALOG_MB, catalog_megabytes, trim_parameters, trim_returns
from fcbench.catalog.python_module import tools_from_python
from fcbench.config import PIPELINE_NAME_PATTERN, load_pipelines
from fcbench.errors import UserError
from fcbench.jsonl import write_json, write_text
from fcbench.runtime.writer_lock import file_lock_path, writer_lock
from fcbench.sample import Tool

EDIT_WAIT_S = 60.0  # how long `new` waits for another command editing pipelines.yaml
MAX_POOL_VALUES = 20
_CAMEL_WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])")


@dataclass
class ScaffoldResult:
    name: str
    dataset_dir: str
    tools: int
    files: int
    slots: int
    notes: list[dict[str, str]] = field(default_factory=list)
    lint: dict[str, int] = field(default_factory=dict)
    lint_findings: list[dict[str, Any]] = field(default_factory=list)
    pipelines_file: str = ""
    skipped: list[dict[str, str]] = field(default_factory=list)
    trimmed: list[dict[str, Any]] = field(default_factory=list)
    catalog_mb: float = 0.0
    auth: list[dict[str, str]] = field(default_factory=list)
    auth_hint: str = ""

    def as_dict(self) -> dict[str, Any]:
        return self.__dict__.copy()


def domain_of_source(stem: str) -> str:
    """A tool's domain from its description file's name: its first word (`HotelSearch_v3` -> hotel)."""
    words = _CAMEL_WORD.findall(stem.split("_")[0])
    return words[0].lower() if words else "general"


def catalog_record(tool: Tool) -> dict[str, Any]:
    """A tool as written in tools.json: an OpenAI-style spec plus `domain` and `http` (where each
    argument goes), which the catalog reader keeps and the http environment reads."""
    record: dict[str, Any] = {"name": tool.name, "description": tool.description, "parameters": tool.parameters}
    if tool.returns is not None:
        record["returns"] = tool.returns
    record["domain"] = domain_of_source(tool.meta["openapi"]["source"])  # edit freely: stage1 mixes domains by it
    record["http"] = {key: tool.meta[key] for key in ("method", "endpoint", "host", "openapi")}
    return record


def value_pools(tools: list[Tool]) -> dict[str, Any]:
    """One slot per argument name that has enum values or examples, filling that argument in every
    tool that takes it (a `cityCode` example serves all city-code arguments). An identifier
    argument with an example also takes the values its name (or, for a list, its singular) has in
    the published example answers (`hotelIds` <- every `hotelId`): ids the API really issues."""
    answered = _example_answer_values(tools)
    slots: dict[str, dict[str, Any]] = {}
    for tool in tools:
        for name, schema in (tool.parameters.get("properties") or {}).items():
            if not isinstance(schema, dict):
                continue
            listed = schema.get("type") == "array" and isinstance(schema.get("items"), dict)
            source = schema["items"] if listed else schema
            harvested = answered.get(name[:-1] if listed and name.endswith("s") else name, []) \
                if re.search(r"(Id|_id|Ids|_ids)$", name) else []
            values = [v for v in [*schema.get("examples", []), *source.get("examples", []), *source.get("enum", [])]
                      if v is not None and not isinstance(v, dict)]
            # only where the description itself gives an example: an argument without one stays
            # free for the graph sampler to feed from an earlier answer
            values += [v for v in harvested if values and v not in values and not isinstance(v, dict)]
            # a list parameter takes a one-entry list; an example list is kept as given
            values = [v if isinstance(v, list) else [v] for v in values] if listed else \
                [v for v in values if not isinstance(v, list)]
            if not values:
                continue
            slot = slots.setdefault(name, {"description": f"values of `{name}` from the descriptions' enums and examples",
                                           "used_by": [], "values": []})
            for value in values:
                if {"value": value} not in slot["values"] and len(slot["values"]) < MAX_POOL_VALUES:
                    slot["values"].append({"value": value})
            if not any(use["tool"] == tool.name for use in slot["used_by"]):
                slot["used_by"].append({"tool": tool.name, "arguments": {name: "value"}})
    return {"description": "Slot values seeded by `build-dataset new` from the OpenAPI enums and examples; edit freely.",
            "slots": dict(sorted(slots.items()))}


def _example_answer_values(tools: list[Tool]) -> dict[str, list[Any]]:
    """Scalar values by field name across every tool's example answers (`returns.examples`)."""
    found: dict[str, list[Any]] = {}

    def walk(value: Any, key: str | None) -> None:
        if isinstance(value, dict):
            for sub_key, sub in value.items():
                walk(sub, sub_key)
        elif isinstance(value, list):
            for item in value:
                walk(item, key)
        elif key is not None and isinstance(value, (str, int)) and not isinstance(value, bool):
            bucket = found.setdefault(key, [])
            if value not in bucket:
                bucket.append(value)

    for tool in tools:
        for example in (tool.returns or {}).get("examples", []) if isinstance(tool.returns, dict) else []:
            walk(example, None)
    return found


def pipeline_entry(name: str, dataset_dir: str, imported: OpenAPIImport, base_url: str | None,
                   auth_env: str | None, domains: list[str]) -> str:
    """The YAML text of the new pipeline (indented for the `pipelines:` mapping)."""
    lines = [
        "",
        f"  {name}:",
        "    description: >-",
        f"      Imported by `build-dataset new` from {len(imported.files)} OpenAPI description(s), one tool per",
        "      operation; calls are replayed from the recorded store (`--record` refreshes it from the server).",
        f"    dataset_dir: {dataset_dir}",
        "    seed: 0",
        f"    domains: [{', '.join(json.dumps(domain) for domain in domains)}]",
        f"    tools: {dataset_dir}/tools.json",
        "    environment:",
        "      kind: http                 # replayed offline from `responses`; --record calls the server",
        f"      responses: {dataset_dir}/recorded.json",
    ]
    if base_url:
        lines.append(f"      base_url: {json.dumps(base_url)}   # replaces the descriptions' server URLs")
    if auth_env:
        lines.append(f"      auth_env: {auth_env}   # the token is read from this variable, sent, never written")
        lines += auth_lines(imported.security_slots)
    lines += [
        "    stages:",
        "      stage1:",
        "        offline: true            # graph sampler over the recorded responses",
        "        queries: 20",
        "      stage2:",
        f"        export_file: {dataset_dir}/annotations/stage2_export.json.gz   # `stage2 pull {name} --save-export` this file; `run` reads it",
        *generation_tail(dataset_dir),
    ]
    return "\n".join(lines) + "\n"


def auth_hint(slots: list[dict[str, str]], auth_env: str | None) -> str:
    """What the user should know about the API's credentials ("" when it declares none)."""
    if not slots:
        return ""
    slot = slots[0]
    where = f"the {slot['in']} {slot['name']!r} (security scheme {slot['scheme']!r})"
    if not auth_env:
        return f"the API requires a credential: pass --auth-env NAME (the variable holding it) to send it in {where}"
    return f"credential from ${auth_env} sent in {where}"


def trim_records(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Each record's parameters and returns trimmed by the rule of `fcbench.catalog.trim`; what was done."""
    done: list[dict[str, Any]] = []
    for record in records:
        for trimmed in (trim_parameters(record["name"], record["parameters"]),
                        trim_returns(record["name"], record["returns"]) if isinstance(record.get("returns"), dict) else None):
            if trimmed is not None:
                done.append(trimmed.as_dict())
    return done


def auth_lines(slots: list[dict[str, str]]) -> list[str]:
    """Where the token goes, from the first security scheme the descriptions declare (default,
    no scheme declared: `Authorization: Bearer <token>`)."""
    if not slots:
        return []
    slot = slots[0]
    why = f"   # security scheme {slot['scheme']!r} of the description"
    if slot["type"] == "apiKey":
        lines = [f"      auth_header: {json.dumps(slot['name'])}{why}", "      auth_scheme: \"\"   # the bare key"]
        if slot["in"] != "header":
            lines.append(f"      auth_in: {slot['in']}")
        return lines
    if slot.get("http_scheme") == "basic":
        return [f"      auth_scheme: Basic{why} (the variable holds base64 of user:password)"]
    return []


def _new_target(name: str, pipelines_file: Path, force: bool) -> tuple[str, Path]:
    """(dataset_dir as written in the file, its absolute folder), refused when taken."""
    if not re.match(PIPELINE_NAME_PATTERN, name):
        raise UserError(f"{name!r}: a pipeline name is lower-case letters, digits, '-' and '_'")
    config = load_pipelines(pipelines_file)
    if name in config.pipelines:
        raise UserError(f"{pipelines_file}: a pipeline named {name!r} is already declared")
    dataset_dir = f"datasets/{name}"
    target = pipelines_file.resolve().parent / dataset_dir
    # a folder holding only build/ (the request cache of a `--describe` that failed) is no benchmark yet
    if target.exists() and any(entry.name != "build" for entry in target.iterdir()) and not force:
        raise UserError(f"{target}: already exists (use --force to write over it)")
    return dataset_dir, target


def scaffold_dataset(name: str, openapi: list[Path], pipelines_file: Path, *, base_url: str | None = None,
                     auth_env: str | None = None, force: bool = False) -> ScaffoldResult:
    if auth_env and not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", auth_env):
        raise UserError(f"--auth-env takes the NAME of an environment variable, not a value: {auth_env!r}")
    for path in openapi:
        if not path.exists():
            raise UserError(f"{path}: no such file or folder")
    _check_free(pipelines_file, name, force)  # before the import (which takes a while): fail fast
    root = pipelines_file.resolve().parent
    dataset_dir = f"datasets/{name}"
    target = root / dataset_dir
    imported = import_openapi(openapi)
    if not imported.tools:
        problems = "; ".join(note.describe() for note in imported.errors[:3])
        raise UserError(f"no operation imported from {', '.join(map(str, openapi))}" + (f": {problems}" if problems else ""))
    records = [catalog_record(tool) for tool in imported.tools]
    pools = value_pools(imported.tools)  # from the full schemas: an example trimmed away still seeds a pool
    trimmed = trim_records(records)
    megabytes = catalog_megabytes(records)
    findings = lint_tools(imported.tools)
    domains = list(dict.fromkeys(record["domain"] for record in records))
    entry = pipeline_entry(name, dataset_dir, imported, base_url, auth_env, domains)
    hint = auth_hint(imported.security_slots, auth_env)
    report = {
        "files": imported.files,
        "tools": len(records),
        "auth": {"schemes": [scheme.as_dict() for scheme in imported.auth], "hint": hint},
        "skipped": imported.skipped,
        "trimmed": {"rule": "fcbench/catalog/trim.py (docs/researcher.md: Bring your own API)", "tools": trimmed},
        "catalog_mb": round(megabytes, 2),
        "catalog_over_limit": megabytes > MAX_CATALOG_MB,
        "notes": [note.as_dict() for note in imported.notes],
        "lint": {"counts": count_by_code(findings), "findings": [finding.as_dict() for finding in findings]},
    }
    # Another `new` may be editing the file right now: under its lock, read it again, check the name
    # is still free and append to what is there now (reading before the lock and writing after it
    # would drop the other command's pipeline).
    with writer_lock(file_lock_path(pipelines_file), f"{pipelines_file}", wait_s=EDIT_WAIT_S):
        _check_free(pipelines_file, name, force)
        new_text = _appended(pipelines_file, name, entry)  # checked before anything is written
        created = not target.exists()
        try:
            target.mkdir(parents=True, exist_ok=True)
            write_json(target / "tools.json", records, indent=2)
            write_json(target / "value_pools.json", pools, indent=2)
            write_json(target / "import_report.json", report, indent=2)
        except BaseException:
            if created:  # no half-written dataset folder left behind
                shutil.rmtree(target, ignore_errors=True)
            raise
        write_text(pipelines_file, new_text)
    return ScaffoldResult(name, dataset_dir, len(records), len(imported.files), len(pools["slots"]),
                          [note.as_dict() for note in imported.notes], count_by_code(findings),
                          [finding.as_dict() for finding in findings], str(pipelines_file), imported.skipped,
                          trimmed, round(megabytes, 2), [scheme.as_dict() for scheme in imported.auth], hint)


def _check_undeclared(pipelines_file: Path, name: str) -> None:
    if name in load_pipelines(pipelines_file).pipelines:
        raise UserError(f"{pipelines_file}: a pipeline named {name!r} is already declared")


def _check_free(pipelines_file: Path, name: str, force: bool) -> None:
    """The name is not declared yet and its dataset folder is empty (or --force)."""
    _check_undeclared(pipelines_file, name)
    target = pipelines_file.resolve().parent / "datasets" / name
    if target.exists() and any(target.iterdir()) and not force:
        raise UserError(f"{target}: already exists (use --force to write over it)")


# ------------------------------------------------------------------------------ from Python
def python_value_pools(tools: list[Tool]) -> dict[str, Any]:
    """One slot per parameter name with `enum` values or a literal default (the values a function
    itself names); the offline graph sampler draws start arguments from these. Parameters without
    any are left for the user to fill (or for an earlier call's output to feed)."""
    slots: dict[str, dict[str, Any]] = {}
    for tool in tools:
        for name, schema in (tool.parameters.get("properties") or {}).items():
            values = [*schema.get("enum", []), *([schema["default"]] if "default" in schema else [])]
            values = [value for value in values if value is not None]
            if not values:
                continue
            slot = slots.setdefault(name, {"description": f"values of `{name}` from the functions' Literal types "
                                                          f"and defaults", "used_by": [], "values": []})
            for value in values:
                if {"value": value} not in slot["values"] and len(slot["values"]) < MAX_POOL_VALUES:
                    slot["values"].append({"value": value})
            slot["used_by"].append({"tool": tool.name, "arguments": {name: "value"}})
    return {"description": "Slot values seeded by `build-dataset new --python` from Literal types and defaults; "
                           "add the values users would state for the other parameters.",
            "slots": dict(sorted(slots.items()))}


def python_pipeline_entry(name: str, dataset_dir: str, module: str, tools: int) -> str:
    """The YAML text of a pipeline over a Python module (indented for the `pipelines:` mapping)."""
    return "\n".join([
        "",
        f"  {name}:",
        "    description: >-",
        f"      Imported by `build-dataset new --python` from {module}: {tools} tools from its typed",
        "      signatures and docstrings, executed in worker subprocesses.",
        f"    dataset_dir: {dataset_dir}",
        "    seed: 0",
        f"    domains: [{json.dumps(name)}]",
        f"    tools: {dataset_dir}/tools.json",
        "    environment:",
        "      kind: python               # the module's functions, each call in a worker with a timeout",
        f"      module: {dataset_dir}/tools.py",
        "      timeout_s: 5",
        "    stages:",
        "      stage1:",
        "        offline: true            # graph sampler: start values from value_pools.json",
        "        queries: 20",
        *generation_tail(dataset_dir),
    ]) + "\n"


def scaffold_python_dataset(name: str, module: Path, pipelines_file: Path, *, force: bool = False) -> ScaffoldResult:
    """`new NAME --python module.py`: every check (the module parses, each public function is typed)
    happens before anything is written."""
    if not module.is_file():
        raise UserError(f"{module}: no such file")
    dataset_dir, target = _new_target(name, pipelines_file, force)
    imported = tools_from_python(module)
    records = [{"name": tool.name, "description": tool.description, "parameters": tool.parameters,
                "returns": tool.returns, "domain": name} for tool in imported.tools]
    pools = python_value_pools(imported.tools)
    findings = lint_tools(imported.tools)
    entry = python_pipeline_entry(name, dataset_dir, module.name, len(records))
    _appended(pipelines_file, name, entry)  # checked before anything is written
    target.mkdir(parents=True, exist_ok=True)
    write_text(target / "tools.py", module.read_text(encoding="utf-8"))
    write_json(target / "tools.json", records, indent=2)
    write_json(target / "value_pools.json", pools, indent=2)
    write_json(target / "import_report.json", {
        "files": [str(module)], "tools": len(records), "notes": [],
        "lint": {"counts": count_by_code(findings), "findings": [finding.as_dict() for finding in findings]},
    }, indent=2)
    with writer_lock(file_lock_path(pipelines_file), f"{pipelines_file}", wait_s=EDIT_WAIT_S):  # another `new` may be adding one
        _check_undeclared(pipelines_file, name)
        write_text(pipelines_file, _appended(pipelines_file, name, entry))
    return ScaffoldResult(name, dataset_dir, len(records), 1, len(pools["slots"]), [], count_by_code(findings),
                          [finding.as_dict() for finding in findings], str(pipelines_file))


def generation_tail(dataset_dir: str) -> list[str]:
    """The stage3, filter and export settings every scaffolded pipeline starts with (one text)."""
    return [
        "      stage3:",
        "        variants: 3",
        "        fill: slots",
        f"        value_pools: {dataset_dir}/value_pools.json",
        "      filter:",
        "        grounding: reject",
        "      export:",
        "        split: ratio",
        "        ratios: {test: 1.0}",
        "        formats: [parquet, fcbench]",
    ]


def _appended(pipelines_file: Path, name: str, entry: str) -> str:
    """Append the entry as text (comments and order untouched); the `pipelines:` mapping must be
    the file's last top-level key for that, which is checked, and the result is validated before
    it replaces the file."""
    text = pipelines_file.read_text(encoding="utf-8")
    top_level = [line.split(":", 1)[0] for line in text.splitlines() if re.match(r"^[A-Za-z_][\w-]*\s*:", line)]
    if not top_level or top_level[-1] != "pipelines":
        raise UserError(f"{pipelines_file}: `pipelines:` must be the last top-level key to append {name!r}")
    new_text = text.rstrip("\n") + "\n" + entry
    # beside the file, so relative paths in it resolve as they will (validated under the lock:
    # one command at a time uses this name)
    candidate = pipelines_file.with_name(f".{pipelines_file.name}.new.tmp")
    write_text(candidate, new_text)
    try:
        load_pipelines(candidate).get_pipeline(name)
    finally:
        candidate.unlink(missing_ok=True)
    return new_text


# ----------------------------------------------------------------------- from a description (LLM)
DESCRIBE_PROMPT = Path(__file__).resolve().parents[1] / "prompts" / "describe_catalog.txt"
# answers to DESCRIBE_PROMPT kept for the offline path: `new --describe TEXT --offline` reads the
# one recorded for exactly TEXT and exactly this prompt, and goes through the same parse and lint
RECORDED_DESCRIBE_ANSWERS = DESCRIBE_PROMPT.with_name("describe_catalog.recorded.jsonl")
DEFAULT_DESCRIBE_MODEL = "gpt-4o-mini"


def parse_described_catalog(content: str) -> list[Tool]:
    """The model's `{"tools": [OpenAI function specs]}` as tools; ValueError saying what is wrong."""
    from fcbench.catalog import ToolsShape, tools_from_document

    text = content.strip()
    if text.startswith("```"):  # a fenced block is still the JSON asked for
        text = text.strip("`").removeprefix("json").strip()
    try:
        document = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not JSON ({exc.msg})") from None
    specs = document.get("tools") if isinstance(document, dict) else None
    if not isinstance(specs, list) or not specs or not all(isinstance(s, dict) and s.get("name") for s in specs):
        raise ValueError('expected {"tools": [{"name", "description", "parameters", "returns"}, ...]}')
    try:
        tools = tools_from_document(specs, ToolsShape.OPENAI)
    except (AttributeError, KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"a tool spec could not be read: {exc}") from None
    names = [tool.name for tool in tools]
    if len(set(names)) != len(names):
        raise ValueError(f"two tools share a name: {next(n for n in names if names.count(n) > 1)!r}")
    return tools


def recorded_describe_answer(description: str, prompt_sha256: str) -> str:
    from fcbench.jsonl import iter_json_lines

    for line in iter_json_lines(RECORDED_DESCRIBE_ANSWERS):
        record = line.value if line.error is None else None
        if isinstance(record, dict) and record.get("description") == description.strip() \
                and record.get("prompt_sha256") == prompt_sha256:
            return str(record["content"])
    raise UserError("--offline: no recorded answer for this description and prompt "
                    f"({RECORDED_DESCRIBE_ANSWERS.name} holds the bundled ones); run it with an LLM (--llm-model, --base-url)")


def ask_for_catalog(description: str, llm: Any, cache_path: Path) -> tuple[str, dict[str, Any]]:
    """The model's answer (through the request cache: asked once per description, prompt and
    model), re-asked while it does not parse; UserError when it never does."""
    import asyncio

    from fcbench.llm.cache import RequestCache
    from fcbench.llm.client import ChatRequest, LLMClient, LLMRejection, ParseError
    from fcbench.llm.prompts import PromptFile

    prompt = PromptFile.load(DESCRIBE_PROMPT, DESCRIBE_PROMPT.parent)

    def parse(completion: Any) -> str:
        try:
            parse_described_catalog(completion.content or "")
        except ValueError as exc:
            raise ParseError(str(exc)) from None
        return completion.content or ""

    async def ask() -> tuple[Any, dict[str, Any]]:
        cache = RequestCache(cache_path)
        try:
            async with LLMClient(llm, cache) as client:
                request = ChatRequest(messages=[{"role": "user", "content": prompt.render(description=description.strip())}],
                                      response_format={"type": "json_object"}, prompt_hash=prompt.sha256)
                return await client.complete(request, parse), client.summary()
        finally:
            cache.close()

    outcome, summary = asyncio.run(ask())
    if isinstance(outcome, LLMRejection):
        raise UserError(f"the LLM wrote no usable catalog: {outcome.reason}")
    return outcome.parsed, summary


def described_pipeline_entry(name: str, dataset_dir: str, tools: int, model: str, base_url: str | None) -> str:
    lines = [
        "",
        f"  {name}:",
        "    description: >-",
        f"      Catalog of {tools} tools written by an LLM from a description (`build-dataset new --describe`,",
        f"      {dataset_dir}/import_report.json); no implementation: the LLM simulates every answer.",
        f"    dataset_dir: {dataset_dir}",
        "    seed: 0",
        f"    domains: [{json.dumps(name)}]",
        f"    tools: {dataset_dir}/tools.json",
        f"    llm: {{model: {json.dumps(model)}" + (f", base_url: {json.dumps(base_url)}" if base_url else "") + "}",
        "    environment:",
        "      kind: simulated            # the LLM answers each call from the tool's description and returns",
        "    stages:",
        "      stage1:",
        "        queries: 20",
        "        candidates: catalog      # CallNavi-style: every tool is a candidate of every question",
        "      filter:",
        f"        input: {dataset_dir}/build/drafts.jsonl",
        "        grounding: reject",
        "      export:",
        "        split: ratio",
        "        ratios: {test: 1.0}",
        "        formats: [parquet, fcbench, callnavi]",
    ]
    return "\n".join(lines) + "\n"


def scaffold_described_dataset(name: str, description: str, pipelines_file: Path, *, offline: bool = False,
                               model: str = DEFAULT_DESCRIBE_MODEL, base_url: str | None = None,
                               force: bool = False) -> ScaffoldResult:
    """`new NAME --describe TEXT`: the LLM writes the catalog (cached; `offline`: the bundled recorded
    answer), `lint-tools` reviews it (an error finding refuses it), then the folder and the entry."""
    from fcbench.catalog.lint import has_errors
    from fcbench.config import LLMConfig
    from fcbench.llm.cache import LLM_CACHE_FILE
    from fcbench.llm.prompts import PromptFile

    if not description.strip():
        raise UserError("--describe: the description is empty")
    dataset_dir, target = _new_target(name, pipelines_file, force)
    prompt = PromptFile.load(DESCRIBE_PROMPT, DESCRIBE_PROMPT.parent)
    if offline:
        content, llm_summary = recorded_describe_answer(description, prompt.sha256), None
        source = f"recorded answer ({RECORDED_DESCRIBE_ANSWERS.name})"
    else:
        llm = LLMConfig(model=model, base_url=base_url, temperature=0.0, seed=0, max_tokens=4096)
        content, llm_summary = ask_for_catalog(description, llm, target / "build" / LLM_CACHE_FILE)
        source = f"LLM {model}"
    try:
        tools = parse_described_catalog(content)
    except ValueError as exc:
        raise UserError(f"the catalog answer could not be read: {exc}") from None
    findings = lint_tools(tools)
    if has_errors(findings):
        first = next(f for f in findings if f.severity.value == "error")
        raise UserError(f"lint-tools refuses the written catalog: {first.tool}"
                        f"{'.' + first.parameter if first.parameter else ''}: {first.message}")
    records = [{"name": tool.name, "description": tool.description, "parameters": tool.parameters,
                **({"returns": tool.returns} if tool.returns is not None else {}), "domain": name} for tool in tools]
    entry = described_pipeline_entry(name, dataset_dir, len(records), model, base_url)
    _appended(pipelines_file, name, entry)  # checked before anything is written
    target.mkdir(parents=True, exist_ok=True)
    write_json(target / "tools.json", records, indent=2)
    write_json(target / "import_report.json", {
        "description": description.strip(), "source": source, "prompt": prompt.shown_as, "prompt_sha256": prompt.sha256,
        "tools": len(records), "llm": llm_summary,
        "lint": {"counts": count_by_code(findings), "findings": [finding.as_dict() for finding in findings]},
    }, indent=2)
    with writer_lock(file_lock_path(pipelines_file), f"{pipelines_file}", wait_s=EDIT_WAIT_S):  # another `new` may be adding one
        _check_undeclared(pipelines_file, name)
        write_text(pipelines_file, _appended(pipelines_file, name, entry))
    return ScaffoldResult(name, dataset_dir, len(records), 0, 0, [], count_by_code(findings),
                          [finding.as_dict() for finding in findings], str(pipelines_file))
