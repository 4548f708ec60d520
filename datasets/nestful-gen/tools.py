"""NESTful-style math tools as a typed, documented Python module (the `nestful-gen` pipeline).

The pipeline reads its tool catalog from this file's source (`tools: .../tools.py`, through
`fcbench.catalog.python_module`): each public function's type hints give the JSON Schema and its
docstring the descriptions, as `build-dataset new --python` does. The names and the `arg_0`,
`arg_1`, ... parameters are those of NESTful's published math specs, so the published seeds' call
structures (`datasets/nestful-math/seeds.jsonl`) apply to these functions; every function answers
`{"result": value}`, read by later calls as `$var_k.result$`.

Written for fcbench. Errors (division by zero, the square root of a negative number, the factorial
of a fraction) raise, and the environment reports a tool error.
"""

from __future__ import annotations

import math
from typing import TypedDict

Number = int | float


class Result(TypedDict):
    """What every tool answers.

    Args:
        result: the computed value
    """

    result: Number


def _whole(value: Number, name: str) -> int:
    if isinstance(value, float):
        if not value.is_integer():
            raise ValueError(f"{name} must be a whole number, got {value}")
        return int(value)
    return value


# --- arithmetic -------------------------------------------------------------------------------
def add(arg_0: Number, arg_1: Number) -> Result:
    """Add two numbers together.

    Args:
        arg_0: The first number
        arg_1: The second number
    """
    return {"result": arg_0 + arg_1}


def subtract(arg_0: Number, arg_1: Number) -> Result:
    """Subtract the second number from the first.

    Args:
        arg_0: The number to subtract from
        arg_1: The number to subtract
    """
    return {"result": arg_0 - arg_1}


def multiply(arg_0: Number, arg_1: Number) -> Result:
    """Multiply two numbers.

    Args:
        arg_0: The first number
        arg_1: The second number
    """
    return {"result": arg_0 * arg_1}


def divide(arg_0: Number, arg_1: Number) -> Result:
    """Divide the first number by the second.

    Args:
        arg_0: The dividend
        arg_1: The divisor
    """
    return {"result": arg_0 / arg_1}


def inverse(arg_0: Number) -> Result:
    """Return the reciprocal of a number (1 divided by it).

    Args:
        arg_0: The number to invert
    """
    return {"result": 1 / arg_0}


def negate(arg_0: Number) -> Result:
    """Return the negation of a number.

    Args:
        arg_0: The number to negate
    """
    return {"result": -arg_0}


def power(arg_0: Number, arg_1: Number) -> Result:
    """Raise a number to a power.

    Args:
        arg_0: The base
        arg_1: The exponent
    """
    return {"result": arg_0**arg_1}


def sqrt(arg_0: Number) -> Result:
    """Calculate the square root of a non-negative number.

    Args:
        arg_0: The number
    """
    return {"result": math.sqrt(arg_0)}


def remainder(arg_0: Number, arg_1: Number) -> Result:
    """Calculate the remainder of the first number divided by the second.

    Args:
        arg_0: The dividend
        arg_1: The divisor
    """
    return {"result": arg_0 % arg_1}


def floor(arg_0: Number) -> Result:
    """Round a number down to the nearest whole number.

    Args:
        arg_0: The number
    """
    return {"result": math.floor(arg_0)}


# --- whole numbers ----------------------------------------------------------------------------
def factorial(arg_0: int) -> Result:
    """Calculate the factorial of a non-negative whole number.

    Args:
        arg_0: The number
    """
    return {"result": math.factorial(_whole(arg_0, "arg_0"))}


def gcd(arg_0: int, arg_1: int) -> Result:
    """Calculate the greatest common divisor of two whole numbers.

    Args:
        arg_0: The first number
        arg_1: The second number
    """
    return {"result": math.gcd(_whole(arg_0, "arg_0"), _whole(arg_1, "arg_1"))}


def lcm(arg_0: int, arg_1: int) -> Result:
    """Calculate the least common multiple of two whole numbers.

    Args:
        arg_0: The first number
        arg_1: The second number
    """
    return {"result": math.lcm(_whole(arg_0, "arg_0"), _whole(arg_1, "arg_1"))}


def choose(arg_0: int, arg_1: int) -> Result:
    """Count the ways to choose items from a set, without order and without repetition.

    Args:
        arg_0: The number of items in the set
        arg_1: The number of items chosen
    """
    return {"result": math.comb(_whole(arg_0, "arg_0"), _whole(arg_1, "arg_1"))}


def permutation(arg_0: int, arg_1: int) -> Result:
    """Count the ordered arrangements of some items taken from a set.

    Args:
        arg_0: The number of items in the set
        arg_1: The number of items arranged
    """
    return {"result": math.perm(_whole(arg_0, "arg_0"), _whole(arg_1, "arg_1"))}


# --- geometry ---------------------------------------------------------------------------------
def circle_area(arg_0: Number) -> Result:
    """Calculate the area of a circle from its radius.

    Args:
        arg_0: The radius
    """
    return {"result": math.pi * arg_0**2}


def rectangle_area(arg_0: Number, arg_1: Number) -> Result:
    """Calculate the area of a rectangle.

    Args:
        arg_0: The length
        arg_1: The width
    """
    return {"result": arg_0 * arg_1}


def rectangle_perimeter(arg_0: Number, arg_1: Number) -> Result:
    """Calculate the perimeter of a rectangle.

    Args:
        arg_0: The length
        arg_1: The width
    """
    return {"result": 2 * (arg_0 + arg_1)}


def triangle_area(arg_0: Number, arg_1: Number) -> Result:
    """Calculate the area of a triangle from its base and height.

    Args:
        arg_0: The base
        arg_1: The height
    """
    return {"result": arg_0 * arg_1 / 2}


def volume_cube(arg_0: Number) -> Result:
    """Calculate the volume of a cube from its edge length.

    Args:
        arg_0: The edge length
    """
    return {"result": arg_0**3}


def square_area(arg_0: Number) -> Result:
    """Calculate the area of a square from its side length.

    Args:
        arg_0: The side length
    """
    return {"result": arg_0**2}
