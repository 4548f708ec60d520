"""Executable NESTful math tools (the `basic_functions` every NESTful math sample offers).

Written for fcbench from the tool specs in the published NESTful files (names, parameter order and
descriptions): each function takes the spec's keyword parameters `arg_0`, `arg_1`, ... and returns
`{"result": value}`, the output shape the specs declare and the gold paths read (`$var_1.result$`).

Plain Python semantics on purpose: `divide` is true division, an error (division by zero, the
square root of a negative number) raises and the environment reports it as a tool error.
Parameters typed "int" in the specs (`factorial`, `choose`, `permutation`) reach these functions as
ints when the value is integral, because the environment coerces arguments from the schema.
"""

from __future__ import annotations

import math
from typing import Sequence

Number = int | float


def _result(value: Number) -> dict[str, Number]:
    return {"result": value}


def add(arg_0: Number, arg_1: Number) -> dict[str, Number]:
    return _result(arg_0 + arg_1)


def subtract(arg_0: Number, arg_1: Number) -> dict[str, Number]:
    return _result(arg_0 - arg_1)


def multiply(arg_0: Number, arg_1: Number) -> dict[str, Number]:
    return _result(arg_0 * arg_1)


def divide(arg_0: Number, arg_1: Number) -> dict[str, Number]:
    return _result(arg_0 / arg_1)


def inverse(arg_0: Number) -> dict[str, Number]:
    return _result(1 / arg_0)


def negate(arg_0: Number) -> dict[str, Number]:
    return _result(-arg_0)


def power(arg_0: Number, arg_1: Number) -> dict[str, Number]:
    return _result(arg_0**arg_1)


def sqrt(arg_0: Number) -> dict[str, Number]:
    return _result(math.sqrt(arg_0))


def log(arg_0: Number, arg_1: Number = math.e) -> dict[str, Number]:
    """Logarithm of arg_0 in base arg_1 (natural logarithm when the base is left out)."""
    return _result(math.log(arg_0, arg_1))


def floor(arg_0: Number) -> dict[str, Number]:
    return _result(math.floor(arg_0))


def remainder(arg_0: Number, arg_1: Number) -> dict[str, Number]:
    return _result(arg_0 % arg_1)


def reminder(arg_0: Number, arg_1: Number) -> dict[str, Number]:
    """Same as `remainder`: the published catalog carries both spellings as separate tools."""
    return remainder(arg_0, arg_1)


def _whole(value: Number, what: str) -> int:
    if isinstance(value, float):
        if not value.is_integer():
            raise ValueError(f"{what} must be a whole number, got {value}")
        return int(value)
    return value


def gcd(arg_0: Number, arg_1: Number) -> dict[str, Number]:
    return _result(math.gcd(_whole(arg_0, "arg_0"), _whole(arg_1, "arg_1")))


def lcm(arg_0: Number, arg_1: Number) -> dict[str, Number]:
    return _result(math.lcm(_whole(arg_0, "arg_0"), _whole(arg_1, "arg_1")))


def factorial(arg_0: int) -> dict[str, Number]:
    return _result(math.factorial(_whole(arg_0, "arg_0")))


def choose(arg_0: int, arg_1: int) -> dict[str, Number]:
    return _result(math.comb(_whole(arg_0, "arg_0"), _whole(arg_1, "arg_1")))


def permutation(arg_0: int, arg_1: int) -> dict[str, Number]:
    return _result(math.perm(_whole(arg_0, "arg_0"), _whole(arg_1, "arg_1")))


def max_number(arg_0: Sequence[Number]) -> dict[str, Number]:
    return _result(max(arg_0))


def min_number(arg_0: Sequence[Number]) -> dict[str, Number]:
    return _result(min(arg_0))


def speed(arg_0: Number, arg_1: Number) -> dict[str, Number]:
    """Distance arg_0 covered in time arg_1."""
    return _result(arg_0 / arg_1)


def negate_prob(arg_0: Number) -> dict[str, Number]:
    """Probability that an event of probability arg_0 does not happen."""
    return _result(1 - arg_0)


# --- plane geometry ------------------------------------------------------------------------------


def circle_area(arg_0: Number) -> dict[str, Number]:
    return _result(math.pi * arg_0**2)


def circumface(arg_0: Number) -> dict[str, Number]:
    """Circumference of a circle of radius arg_0 (the catalog's spelling of the name)."""
    return _result(2 * math.pi * arg_0)


def square_area(arg_0: Number) -> dict[str, Number]:
    return _result(arg_0**2)


def square_perimeter(arg_0: Number) -> dict[str, Number]:
    return _result(4 * arg_0)


def square_edge_by_area(arg_0: Number) -> dict[str, Number]:
    return _result(math.sqrt(arg_0))


def square_edge_by_perimeter(arg_0: Number) -> dict[str, Number]:
    return _result(arg_0 / 4)


def rectangle_area(arg_0: Number, arg_1: Number) -> dict[str, Number]:
    return _result(arg_0 * arg_1)


def rectangle_perimeter(arg_0: Number, arg_1: Number) -> dict[str, Number]:
    return _result(2 * (arg_0 + arg_1))


def diagonal(arg_0: Number, arg_1: Number) -> dict[str, Number]:
    """Diagonal of a rectangle of length arg_0 and width arg_1."""
    return _result(math.hypot(arg_0, arg_1))


def triangle_area(arg_0: Number, arg_1: Number) -> dict[str, Number]:
    """Area of a triangle of base arg_0 and height arg_1."""
    return _result(arg_0 * arg_1 / 2)


def rhombus_area(arg_0: Number, arg_1: Number) -> dict[str, Number]:
    """Area of a rhombus from its two diagonals."""
    return _result(arg_0 * arg_1 / 2)


# --- solids -----------------------------------------------------------------------------------


def volume_cube(arg_0: Number) -> dict[str, Number]:
    return _result(arg_0**3)


def surface_cube(arg_0: Number) -> dict[str, Number]:
    return _result(6 * arg_0**2)


def cube_edge_by_volume(arg_0: Number) -> dict[str, Number]:
    edge = math.cbrt(arg_0)
    whole = round(edge)
    # libm's cube root can miss a perfect cube by one ulp (cbrt(27) = 3.0000000000000004)
    return _result(float(whole) if whole**3 == arg_0 else edge)


def volume_sphere(arg_0: Number) -> dict[str, Number]:
    return _result(4 / 3 * math.pi * arg_0**3)


def surface_sphere(arg_0: Number) -> dict[str, Number]:
    return _result(4 * math.pi * arg_0**2)


def volume_cylinder(arg_0: Number, arg_1: Number) -> dict[str, Number]:
    """Volume of a cylinder of base radius arg_0 and height arg_1."""
    return _result(math.pi * arg_0**2 * arg_1)


def surface_cylinder(arg_0: Number, arg_1: Number) -> dict[str, Number]:
    """Total surface (two discs and the side) of a cylinder of radius arg_0 and height arg_1."""
    return _result(2 * math.pi * arg_0 * (arg_0 + arg_1))


def volume_cone(arg_0: Number, arg_1: Number) -> dict[str, Number]:
    """Volume of a cone of base radius arg_0 and height arg_1."""
    return _result(math.pi * arg_0**2 * arg_1 / 3)
