"""Tools for the filter-stage tests: one well-behaved tool and one of each kind of trouble."""

import itertools
import time

_calls = itertools.count()


def add(a: int, b: int) -> dict:
    return {"result": a + b}


def lookup(city: str) -> dict:
    return {"data": [{"id": f"{city[:3].upper()}.CITY", "name": city}, {"id": f"{city[:3].upper()}.AIRPORT", "name": city}]}


def boom(a: int) -> dict:
    raise RuntimeError("the tool failed on purpose")


def ticket() -> dict:
    # state kept in the worker between calls: a second run of the same path answers differently
    return {"number": next(_calls)}


def slow_add(a: int, b: int) -> dict:
    time.sleep(0.25)
    return {"result": a + b}
