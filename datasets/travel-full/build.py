"""How the committed files of the travel-full benchmark were made; deterministic: the same files give
the same bytes on every run.

  .venv/bin/python datasets/travel-full/build.py catalog       # tools.json and value_pools.json
  .venv/bin/python datasets/travel-full/build.py annotations   # annotations/stage2_export.json.gz
  .venv/bin/python datasets/travel-full/build.py shape         # Table-3 figures of a built validated.jsonl

`catalog`: the compact travel catalog (datasets/travel/tools.json) with the taxi tools in the
car-rental domain (ComplexFuncBench's five domains: Hotels, Flights, Car Rental, Attraction, Cross),
the answers' schemas of the tools whose full-size answers say more, and the four tools that exist only
in the full world (datasets/travel-full/tools.py); each new schema is read off a real answer.

`annotations`: runs stage1 of `travel-full` offline (the graph sampler), selects the drafts the way
`stage2 push` does, builds each Label Studio task with the code `stage2 push` uses
(`annotate.tasks.single.senior_task`), and writes the senior annotator's decisions as a Label Studio JSON
export (the shape `stage2 pull --from-export` reads). The decisions are rules a senior annotator
applied to every draft: say the query as a traveller would (party sizes, stays, currencies and times
implied), confirm where each argument value comes from (the provenance field), reject drafts whose
query does not mean exactly what the path does (fcbench/checks/provenance.py, gold_audit.py). Fixed ids and
timestamps stand where a server would put its own, so the file is byte-identical on every run; it is
gzip-compressed (the drafts carry their long responses).
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO))
EXPORT = HERE / "annotations" / "stage2_export.json.gz"
STAMP = "2026-11-25T09:00:00.000000Z"  # a fixed time: the file must not change from run to run

DOMAIN_OF = {"taxi": "car-rental"}
NEW_TOOLS: list[dict[str, Any]] = [
    {"name": "Get_Flight_Fare_Rules", "domain": "flights",
     "description": "Get the fare rules of a flight offer leg by leg (refunds, change fees, ticketing deadline). "
                    "Takes the booking_token returned by Get_Flight_Details.",
     "parameters": {"type": "object", "properties": {
         "booking_token": {"type": "string", "description": "The booking_token of an offer from Get_Flight_Details (data.booking_token)."}},
         "required": ["booking_token"]},
     "example": ("Get_Flight_Details", "booking_token")},
    {"name": "Get_Room_Booking_Conditions", "domain": "hotels",
     "description": "Get the cancellation, prepayment and breakfast conditions of one room rate. Takes the "
                    "block_id of a rate returned by Get_Room_List.",
     "parameters": {"type": "object", "properties": {
         "block_id": {"type": "string", "description": "The block_id of a rate from Get_Room_List (data.rooms[].rates[].block_id)."}},
         "required": ["block_id"]},
     "example": ("Get_Room_List", "block_id")},
    {"name": "Get_Car_Rental_Details", "domain": "car-rental",
     "description": "Get everything about one rental car offer: insurance, deposit, extras and desk details. "
                    "Takes the search_key of a result returned by Search_Car_Rentals.",
     "parameters": {"type": "object", "properties": {
         "search_key": {"type": "string", "description": "The search_key of a result from Search_Car_Rentals (data.search_results[].search_key)."}},
         "required": ["search_key"]},
     "example": ("Search_Car_Rentals", "search_key")},
    {"name": "Get_Attraction_Availability", "domain": "attractions",
     "description": "Start times and places left for one attraction product on a day. Takes the slug of a "
                    "product from Get_Attraction_Details.",
     "parameters": {"type": "object", "properties": {
         "slug": {"type": "string", "description": "The slug of a product from Get_Attraction_Details (data.slug)."},
         "date": {"type": "string", "format": "date", "pattern": "^\\d{4}-\\d{2}-\\d{2}$",
                  "description": "The day of the visit. Format: YYYY-MM-DD."},
         "currency_code": {"type": "string", "enum": ["USD", "EUR", "GBP", "AUD", "JPY", "SGD"], "default": "USD",
                           "description": "Currency of the prices in the response."}},
         "required": ["slug", "date"]},
     "example": ("Get_Attraction_Details", "slug")},
]
# Tools whose full answers hold more than the compact catalog's `returns` says.
ENRICHED = ("Search_Flights", "Get_Flight_Details", "Search_Hotels", "Search_Hotels_By_Coordinates", "Get_Room_List",
            "Search_Car_Rentals", "Search_Attractions", "Get_Attraction_Details")


def _world() -> Any:
    spec = importlib.util.spec_from_file_location("travel_full_tools", HERE / "tools.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def schema_of(value: Any) -> dict[str, Any]:
    """A JSON Schema describing a value (lists by the union of their items' keys)."""
    if isinstance(value, bool):
        return {"type": "boolean"}
    if isinstance(value, int):
        return {"type": "integer"}
    if isinstance(value, float):
        return {"type": "number"}
    if isinstance(value, str):
        return {"type": "string"}
    if isinstance(value, dict):
        return {"type": "object", "properties": {key: schema_of(item) for key, item in value.items()}}
    if isinstance(value, list):
        merged: dict[str, Any] = {}
        for item in value:
            merged = _merge(merged, schema_of(item))
        return {"type": "array", "items": merged or {}}
    return {}


def _merge(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    if not a:
        return b
    if a.get("type") == "object" and b.get("type") == "object":
        properties = dict(a["properties"])
        for key, sub in b["properties"].items():
            properties[key] = _merge(properties.get(key, {}), sub)
        return {"type": "object", "properties": properties}
    return a


def example_answers(world: Any) -> dict[str, Any]:
    """One real full-size answer of each tool whose schema is read off an answer."""
    tools = world.TOOLS
    dest = tools["Search_Hotel_Destination"]("Paris")["data"][0]
    hotels = tools["Search_Hotels"](dest["dest_id"], dest["search_type"], "2025-06-12", "2025-06-15")
    rooms = tools["Get_Room_List"](hotels["data"]["hotels"][0]["hotel_id"], "2025-06-12", "2025-06-15")
    flights = tools["Search_Flights"]("LON.CITY", "PAR.CITY", "2025-08-20", "2025-08-27")
    details = tools["Get_Flight_Details"](flights["data"]["flightOffers"][0]["token"])
    place = tools["Search_Car_Location"]("Heathrow")["data"][0]["coordinates"]
    cars = tools["Search_Car_Rentals"](place["latitude"], place["longitude"], place["latitude"], place["longitude"],
                                       "2025-08-20", "2025-08-23", "09:00", "09:00")
    attraction_dest = tools["Search_Attraction_Location"]("Rome")["data"]["destinations"][0]["id"]
    products = tools["Search_Attractions"](attraction_dest)
    slug = products["data"]["products"][0]["slug"]
    return {
        "Search_Flights": flights, "Get_Flight_Details": details, "Search_Hotels": hotels,
        "Search_Hotels_By_Coordinates": tools["Search_Hotels_By_Coordinates"](48.8584, 2.2945, "2025-06-12", "2025-06-15"),
        "Get_Room_List": rooms, "Search_Car_Rentals": cars, "Search_Attractions": products,
        "Get_Attraction_Details": tools["Get_Attraction_Details"](slug),
        "Get_Flight_Fare_Rules": tools["Get_Flight_Fare_Rules"](details["data"]["booking_token"]),
        "Get_Room_Booking_Conditions": tools["Get_Room_Booking_Conditions"](rooms["data"]["rooms"][0]["rates"][0]["block_id"]),
        "Get_Car_Rental_Details": tools["Get_Car_Rental_Details"](cars["data"]["search_results"][0]["search_key"]),
        "Get_Attraction_Availability": tools["Get_Attraction_Availability"](slug, "2025-08-20"),
    }


def write_catalog(out_dir: Path = HERE) -> None:
    from fcbench.jsonl import write_json

    compact = json.loads((REPO / "datasets" / "travel" / "tools.json").read_text(encoding="utf-8"))
    answers = example_answers(_world())
    catalog = []
    for tool in compact:
        tool = dict(tool)
        tool["domain"] = DOMAIN_OF.get(tool["domain"], tool["domain"])
        if tool["name"] in ENRICHED:
            tool["returns"] = schema_of(answers[tool["name"]])
        # the compact world lists 5 hotels and 5 cars; the full one every matching hotel and 8 cars
        # (datasets/travel/tools.py): what a model is told is what it gets
        tool["description"] = tool["description"].replace("Lists at most 5 hotels", "Lists every matching hotel") \
            .replace("Lists up to 5 cars", "Lists up to 8 cars")
        catalog.append(tool)
    for spec in NEW_TOOLS:
        tool = {key: value for key, value in spec.items() if key != "example"}
        catalog.append({**tool, "returns": schema_of(answers[spec["name"]])})
    write_json(out_dir / "tools.json", catalog, indent=1)
    pools = json.loads((REPO / "datasets" / "travel" / "value_pools.json").read_text(encoding="utf-8"))
    pools["description"] = "The travel value pools (datasets/travel/value_pools.json), the day slot also filling " \
                           "Get_Attraction_Availability. Written by datasets/travel-full/build.py catalog."
    pools["slots"]["day"]["used_by"].append({"tool": "Get_Attraction_Availability", "arguments": {"date": "date"}})
    write_json(out_dir / "value_pools.json", pools, indent=1)
    print(f"{len(catalog)} tools, value pools written")


CURRENCY_WORDS = {"USD": "US dollars", "EUR": "euros", "GBP": "pounds", "AUD": "Australian dollars", "JPY": "yen",
                  "SGD": "Singapore dollars"}
COUNT_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")
PARTY = {1: "just for me", 2: "for the two of us"}
_SPELLED = r"(?:January|February|March|April|May|June|July|August|September|October|November|December) \d{1,2}, \d{4}"


def implicit_query(query: str) -> str:
    """The query as a traveller says it: party sizes, stays, currencies and times implied, not
    written as the API wants them (ComplexFuncBench's parameter value reasoning)."""
    import re
    from datetime import datetime

    def party(match: re.Match[str]) -> str:
        count = int(match.group(1))
        return PARTY.get(count) or f"for a group of {COUNT_WORDS[count]}"

    def stay(match: re.Match[str]) -> str:
        start, end = (datetime.strptime(match.group(i), "%B %d, %Y") for i in (1, 2))
        nights = (end - start).days
        if nights == 7:
            return f"for a week starting {match.group(1)}"
        return f"for {COUNT_WORDS[nights]} nights from {match.group(1)}" if 1 < nights < len(COUNT_WORDS) else match.group(0)

    def time_of_day(match: re.Match[str]) -> str:
        hour, minute = int(match.group(1)), int(match.group(2))
        if hour == 12 and minute == 0:
            return "at noon"
        suffix = "am" if hour < 12 else "pm"
        return f"at {hour % 12 or 12}{'' if minute == 0 else f':{minute:02d}'} {suffix}"

    query = re.sub(r"\bfor (\d) adults?\b", party, query)
    query = re.sub(rf"\bfrom ({_SPELLED}) to ({_SPELLED})", stay, query)
    query = re.sub(r"\b(prices? in) (USD|EUR|GBP|AUD|JPY|SGD)\b", lambda m: f"{m.group(1)} {CURRENCY_WORDS[m.group(2)]}", query)
    return re.sub(r"\bat (\d{2}):(\d{2})\b", time_of_day, query)


def _decision(draft: Any) -> tuple[str, str | None, str, str]:
    """(verdict, rewritten query or None, notes, provenance text): a senior annotator's rules,
    applied to each draft: say the query as a traveller would, read where each value now comes
    from (the provenance field, as the form shows it), and reject what does not then mean exactly
    what the path does (a value no words state, a source whose words say another value, a rule of
    the gold audit)."""
    from annotate.tasks.provenance_text import format_provenance
    from annotate.tasks.single import with_query
    from fcbench.checks.gold_audit import gold_audit
    from fcbench.checks.provenance import check_provenance, infer_provenance

    def problems_of(sample: Any) -> tuple[list[str], Any]:
        inferred = infer_provenance(sample)
        found = [p.describe() for p in inferred.ungrounded]
        found += [p.describe() for p in check_provenance(sample, inferred.provenance)]
        found += [f"{p.reason}: {p.detail}" for p in gold_audit(sample, inferred.provenance)]
        return found, inferred.provenance

    problems, provenance = problems_of(draft)
    if problems:
        return "reject", None, "The draft does not mean what its path does: " + "; ".join(problems) + ".", ""
    query = implicit_query(draft.messages[-1]["content"])
    if query != draft.messages[-1]["content"]:
        rewritten = draft.model_copy(update={"messages": with_query(draft.messages, query)})
        rewritten_problems, rewritten_provenance = problems_of(rewritten)
        if not rewritten_problems:
            return "fix", query, "Query said as a traveller would.", format_provenance(rewritten_provenance)
    return "accept", None, "", format_provenance(provenance)


def write_annotations() -> None:
    from annotate.tasks.select import select_drafts
    from annotate.tasks.single import ToolCatalog, choices_result, senior_task, textarea_result
    from fcbench.config import load_pipelines
    from fcbench.stage import DRAFTS, pipeline_catalog
    from fcbench.formats import read_samples
    from fcbench.pipeline.run import run_stage
    from fcbench.sample import Sample

    pipeline = load_pipelines(REPO / "pipelines.yaml").get_pipeline("travel-full")
    run_stage("stage1", pipeline, offline=True, force=True)
    drafts = [item for item in read_samples(pipeline.build_dir / DRAFTS, "fcbench") if isinstance(item, Sample)]
    selected = select_drafts(drafts, pipeline.stages.stage2.select)
    catalog = ToolCatalog(pipeline_catalog(pipeline) or [])
    export = []
    for number, draft in enumerate(selected, start=1):
        task = senior_task(draft, model_version="graph-sampler", catalog=catalog)
        verdict, query, notes, provenance = _decision(draft)
        result = [textarea_result("query", "draft", query or task["data"]["query"]),
                  textarea_result("path_json", "draft", task["data"]["path_json"]),
                  choices_result("verdict", "draft", [verdict])]
        if provenance:  # the provenance field as the annotator leaves it (read back by stage2 pull)
            result.append(textarea_result("provenance", "draft", provenance))
        if notes:
            result.append(textarea_result("notes", "draft", notes))
        task_id = 900000 + number
        export.append({
            "id": task_id, "data": task["data"], "project": 1, "created_at": STAMP, "updated_at": STAMP,
            "predictions": [{**task["predictions"][0], "task": task_id}],
            "annotations": [{"id": 800000 + number, "completed_by": 1, "result": result, "was_cancelled": False,
                             "ground_truth": False, "created_at": STAMP, "updated_at": STAMP, "lead_time": 60.0,
                             "task": task_id, "project": 1}],
        })
    EXPORT.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(export, ensure_ascii=False, sort_keys=True, separators=(",", ":"))
    with open(EXPORT, "wb") as raw, gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as out:
        out.write(text.encode("utf-8"))
    verdicts = Counter(task["annotations"][0]["result"][2]["value"]["choices"][0] for task in export)
    print(f"{len(export)} tasks ({dict(verdicts)}) exported to {EXPORT} ({EXPORT.stat().st_size} bytes)")


def print_shape(path: Path = HERE / "build" / "validated.jsonl") -> None:
    """ComplexFuncBench's Table 3 for a build, with context length as characters / 4 (a rough token
    count; `build-dataset stats` counts tokens with a real tokenizer where available)."""
    from fcbench.references import iter_references
    from fcbench.resolve import walk_path

    per_domain: dict[str, list[int]] = {}
    lengths, longest = [], 0
    with open(path, encoding="utf-8") as lines:
        for line in lines:
            sample = json.loads(line)
            domain = sample["domain"] if isinstance(sample["domain"], str) else \
                (sample["domain"][0] if len(sample["domain"]) == 1 else "cross")
            calls = [call for step in sample["calls"] for call in step]
            row = per_domain.setdefault(domain, [0, 0, 0])
            row[0], row[1], row[2] = row[0] + 1, row[1] + len(sample["calls"]), row[2] + len(calls)
            lengths.append((len(json.dumps(sample["messages"])) + len(json.dumps(sample["tools"]))
                            + sum(len(json.dumps(call.get("response"))) for call in calls)) // 4)
            responses = {call["label"]: call.get("response") for call in calls}
            for call in calls:
                for value in call["arguments"].values():
                    for reference in iter_references(value):
                        try:
                            value = walk_path(responses[reference.label], reference.path)
                        except (KeyError, LookupError, TypeError):
                            continue
                    if isinstance(value, str):
                        longest = max(longest, len(value))
    total = sum(row[0] for row in per_domain.values())
    print(f"{'domain':<12} {'samples':>8} {'share':>6} {'avg steps':>9} {'avg calls':>9}")
    for domain, (count, steps, calls) in sorted(per_domain.items()) + [("all", [total, sum(r[1] for r in per_domain.values()),
                                                                                sum(r[2] for r in per_domain.values())])]:
        print(f"{domain:<12} {count:>8} {count / total:>6.1%} {steps / count:>9.2f} {calls / count:>9.2f}")
    lengths.sort()
    print(f"context (chars/4): > 32k {sum(n > 32_000 for n in lengths) / total:.1%}, median {lengths[total // 2]}, "
          f"max {lengths[-1]}; longest parameter value {longest} characters")


if __name__ == "__main__":
    {"catalog": write_catalog, "annotations": write_annotations, "shape": print_shape}[sys.argv[1] if len(sys.argv) > 1 else ""]()
