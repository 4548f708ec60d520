"""Tools for the filter-stage tests: one well-behaved tool and one of each kind of trouble."""

import os
import time


def add(a: int, b: int) -> dict:
    return {"result": a + b}


def lookup(city: str) -> dict:
    return {"data": [{"id": f"{city[:3].upper()}.CITY", "name": city}, {"id": f"{city[:3].upper()}.AIRPORT", "name": city}]}


def boom(a: int) -> dict:
    raise RuntimeError("the tool failed on purpose")


def ticket() -> dict:
    # a fresh random ticket on every call, whatever the seed: a second run answers differently
    return {"number": os.urandom(8).hex()}


def slow_add(a: int, b: int) -> dict:
    time.sleep(0.25)
    return {"result": a + b}
