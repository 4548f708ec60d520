"""One registry class for every kind of named plug-in: metrics, formats, environments, stages.

A registry maps a name to an entry. Registration sits next to what it registers (a decorator on
the function, or one line naming a module to import lazily when an optional dependency is behind
it); lookup is by name, and an unknown name gets the same one-line error everywhere:
"unknown <kind> 'y', available: a, b, c". A name is never silently given to a second entry.
"""

from __future__ import annotations

import importlib
from typing import Callable, Generic, Iterator, TypeVar

from fcbench.errors import UserError

T = TypeVar("T")


class _Lazy:
    """An entry known by its import path (`module` or `module:attribute`), imported at first use."""

    def __init__(self, target: str) -> None:
        self.target = target

    def load(self) -> object:
        module, _, attribute = self.target.partition(":")
        loaded = importlib.import_module(module)
        return getattr(loaded, attribute) if attribute else loaded


class Registry(Generic[T]):
    """`Registry("metric")`: `register(name, entry)` (or `@registry.register(name)`), `get(name)`,
    `names()`; iterating yields the entries in registration order. `error` is the exception an
    unknown name raises (a UserError subclass: one line on stderr, exit 1)."""

    def __init__(self, kind: str, error: type[Exception] = UserError) -> None:
        self.kind = kind
        self.error = error
        self._entries: dict[str, T | _Lazy] = {}

    def register(self, name: str, entry: T | None = None) -> Callable[[T], T] | T:
        """Add `entry` under `name` (returned), or used as `@registry.register(name)`."""
        if entry is None:
            def decorate(value: T) -> T:
                self._add(name, value)
                return value

            return decorate
        self._add(name, entry)
        return entry

    def register_lazy(self, name: str, target: str) -> None:
        """Add an entry imported at first `get` (`"package.module"` or `"package.module:name"`)."""
        self._add(name, _Lazy(target))

    def _add(self, name: str, entry: T | _Lazy) -> None:
        known = self._entries.get(name)
        if known is not None and known is not entry and not _same_lazy(known, entry):
            raise ValueError(f"{self.kind} {name!r} is already registered")
        self._entries[name] = entry

    def get(self, name: str, where: str = "") -> T:
        """The entry registered under `name`; `where` prefixes the error ("pipeline 'x': ")."""
        if name not in self._entries:
            raise self.error(f"{where}unknown {self.kind} {name!r}, available: {', '.join(self._entries)}")
        entry = self._entries[name]
        if isinstance(entry, _Lazy):
            entry = self._entries[name] = entry.load()  # type: ignore[assignment]
        return entry  # type: ignore[return-value]

    def names(self) -> list[str]:
        return list(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[T]:
        return (self.get(name) for name in list(self._entries))

    def __len__(self) -> int:
        return len(self._entries)


def _same_lazy(known: object, entry: object) -> bool:
    return isinstance(known, _Lazy) and isinstance(entry, _Lazy) and known.target == entry.target
