"""The JSON Schema of the canonical sample, generated from the typed models and shipped as a file.

Regenerate after changing `fcbench/sample.py`:  python -c "from fcbench.schema import write_schema; write_schema()"
"""

from __future__ import annotations

import json
from functools import lru_cache
from pathlib import Path
from typing import Any

SCHEMA_PATH = Path(__file__).with_name("sample.schema.json")


def generate_schema() -> dict[str, Any]:
    from fcbench.sample import Sample

    schema = Sample.model_json_schema()
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = "https://fcbench.invalid/schema/sample.schema.json"
    return schema


def render_schema() -> str:
    return json.dumps(generate_schema(), indent=2, sort_keys=True) + "\n"


@lru_cache(maxsize=1)
def load_schema() -> dict[str, Any]:
    return json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))


def write_schema() -> None:
    SCHEMA_PATH.write_text(render_schema(), encoding="utf-8")
