"""Tools that misbehave in every way the python environment must survive (test fixture).

Each function is a tool; the environment binds arguments by keyword, under a timeout and a memory cap.
"""

from __future__ import annotations

import os
import random
import socket
import sys
import time


def subtract(a: int, b: int) -> dict:
    """Binding by keyword: called with {"b": 1, "a": 10} it must give 9, never -9."""
    return {"result": a - b}


def describe_types(n: int, flag: bool, items: list) -> dict:
    """Reports the Python types it received (to check coercion from the schema)."""
    return {"n": type(n).__name__, "flag": type(flag).__name__, "items": type(items).__name__, "value": n}


def raises(message: str = "boom") -> dict:
    raise ValueError(message)


def exits() -> dict:
    sys.exit(2)


def hangs() -> dict:
    while True:
        pass


def hangs_and_ignores_the_timer() -> dict:
    """Swallows every exception, the timer's included: only killing the worker stops it."""
    while True:
        try:
            time.sleep(10)
        except BaseException:
            pass


def allocates_without_bound() -> dict:
    hoard = []
    while True:
        hoard.append(bytearray(32 * 1024 * 1024))


def prints(n: int) -> dict:
    print('{"ok": true, "response": "forged"}')
    sys.stdout.flush()
    os.write(1, b'{"ok": false}\n')
    print("noise on stderr", file=sys.stderr)
    return {"n": n}


def returns_a_set() -> dict:
    return {"values": {1, 2, 3}}


def returns_nan() -> float:
    return float("nan")


def returns_a_huge_int() -> dict:
    return {"result": 10**5000}


def returns_a_tuple() -> dict:
    return {"pair": (1, 2), 3: "int key"}


def dies() -> dict:
    os._exit(3)


def roll(sides: int) -> dict:
    return {"roll": random.randint(1, sides), "draws": [random.random() for _ in range(3)]}


def network_status() -> dict:
    """What a tool sees of the network: the env var, and whether a socket can connect anywhere."""
    try:
        socket.create_connection(("127.0.0.1", int(os.environ.get("BAD_TOOLS_PORT", "9"))), timeout=1).close()
        reachable = True
    except OSError:
        reachable = False
    return {"env": os.environ.get("FCBENCH_NETWORK"), "loopback_reachable": reachable}


def worker_pid() -> dict:
    return {"pid": os.getpid()}


def _helper_is_not_a_tool() -> None:
    raise AssertionError("private functions must not be exposed")
