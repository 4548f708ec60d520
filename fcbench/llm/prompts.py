"""A prompt kept as a file: its text, hash and the path shown in provenance."""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class PromptFile:
    path: Path
    text: str
    sha256: str
    shown_as: str  # as recorded in provenance: relative to the pipelines file when inside it

    @classmethod
    def load(cls, path: Path, base: Path) -> "PromptFile":
        data = path.read_bytes()
        try:
            shown = os.path.relpath(path, base)
        except ValueError:  # another drive (Windows)
            shown = str(path)
        return cls(path, data.decode("utf-8"), hashlib.sha256(data).hexdigest(), shown if not shown.startswith("..") else str(path))

    def render(self, **values: str) -> str:
        """`{{name}}` markers replaced (prompt texts hold JSON braces, so no str.format)."""
        text = self.text
        for name, value in values.items():
            text = text.replace("{{" + name + "}}", value)
        return text
