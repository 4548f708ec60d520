"""Argument references to earlier call outputs: parsing and discovery (pure, no I/O).

A reference is a string argument of the form ``$label.path$`` where ``path`` walks into the
earlier output with dict keys and list indexes (``$var_2.hotels[0].id$``), or ``$label$`` for the
whole output. NESTful v1 writes labels without an underscore (``$var1.skyId$``); both spellings
are just labels here. A reference may appear anywhere inside an argument value (in lists and
dicts too), which is why discovery walks the whole value.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterator

# A whole-string reference: `$label$` or `$label.path$`. The label may itself start with `$`
# in NESTful v2 spellings (`$var_1`), which the adapters strip before the sample is built.
_REFERENCE = re.compile(r"^\$(?P<label>[A-Za-z_][A-Za-z0-9_\-]*)(?P<path>(?:\.[^.\[\]$]+|\[-?\d+\])*)\$$")
_PATH_PART = re.compile(r"\.(?P<key>[^.\[\]$]+)|\[(?P<index>-?\d+)\]")


@dataclass(frozen=True)
class Reference:
    """A parsed `$label.path$`: the label of the call it reads and the keys/indexes to walk."""

    text: str
    label: str
    path: tuple[str | int, ...]


def parse_reference(value: Any) -> Reference | None:
    """Return the reference a string spells, or None when the value is a plain literal."""
    if not isinstance(value, str) or len(value) < 3 or value[0] != "$" or value[-1] != "$":
        return None
    match = _REFERENCE.match(value)
    if match is None:
        return None
    path: list[str | int] = []
    for part in _PATH_PART.finditer(match.group("path")):
        path.append(part.group("key") if part.group("key") is not None else int(part.group("index")))
    return Reference(text=value, label=match.group("label"), path=tuple(path))


def is_reference(value: Any) -> bool:
    """Whether a value is a whole `$label.path$` reference (its type is known only once resolved)."""
    return parse_reference(value) is not None


def iter_references(value: Any) -> Iterator[Reference]:
    """Yield every reference found anywhere inside an argument value (nested lists and dicts)."""
    reference = parse_reference(value)
    if reference is not None:
        yield reference
    elif isinstance(value, dict):
        for item in value.values():
            yield from iter_references(item)
    elif isinstance(value, list):
        for item in value:
            yield from iter_references(item)


def format_reference(label: str, path: tuple[str | int, ...] = ()) -> str:
    """Spell a reference back: the inverse of `parse_reference`."""
    text = label
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else f".{part}"
    return f"${text}$"
