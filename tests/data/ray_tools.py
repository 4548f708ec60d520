"""Tools for the Ray backend tests: arithmetic, a seeded random draw, one failure, and a tool that
kills the Ray worker process driving it (once, the first time it runs: a marker file says so)."""

import os
import random
import signal
import time


def add(a: int, b: int) -> dict:
    return {"result": a + b}


def noisy(a: int) -> dict:
    # seeded per call by the worker: the same call gives the same draw on any backend
    return {"result": a + random.randint(0, 1000)}


def boom(a: int) -> dict:
    raise RuntimeError("the tool failed on purpose")


def kill_ray_worker_once(a: int, marker: str) -> dict:
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return {"result": a}
    # the parent of this worker subprocess is the Ray worker process running the batch
    os.kill(os.getppid(), signal.SIGKILL)
    time.sleep(2)
    return {"result": a}
