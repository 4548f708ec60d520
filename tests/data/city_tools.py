"""Toy city tools."""
from typing import Literal, TypedDict


class City(TypedDict):
    """A city.

    Args:
        city_id: the city's identifier
        name: the city's name
    """
    city_id: str
    name: str


class Forecast(TypedDict):
    """A forecast.

    Args:
        temperature: degrees in the unit asked for
    """
    temperature: float


def find_city(name: Literal["Paris", "Lyon", "Nice"]) -> City:
    """Find a city by its name.

    Args:
        name: the city's name
    """
    return {"city_id": "c-" + name.lower(), "name": name}


def weather(city_id: str, unit: Literal["C", "F"] = "C") -> Forecast:
    """Tomorrow's temperature in a city.

    Args:
        city_id: the city's identifier (from find_city)
        unit: C or F
    """
    base = {"c-paris": 18.0, "c-lyon": 21.0, "c-nice": 24.0}[city_id]
    return {"temperature": base if unit == "C" else base * 9 / 5 + 32}
