"""Tools that try what untrusted tool code would: read the environment, write outside their
folder, write a huge file, and start a process that outlives the call (test fixture)."""

import os
import subprocess
import sys
import tempfile
import time


def read_environment() -> dict:
    """Every environment variable the tool can see."""
    return {"variables": dict(os.environ)}


def where_am_i() -> dict:
    return {"cwd": os.getcwd(), "home": os.path.expanduser("~"), "tmp": tempfile.gettempdir(),
            "process_group": os.getpgrp(), "pid": os.getpid()}


def write_file(path: str, size: int = 10) -> dict:
    """Writes `size` bytes at `path` (relative: in the working folder); the error if refused."""
    try:
        with open(path, "wb") as handle:
            handle.write(b"x" * size)
    except OSError as exc:
        return {"written": False, "error": type(exc).__name__, "errno": exc.errno}
    return {"written": True, "where": os.path.abspath(path)}


def spawn_sleeper(marker: str) -> dict:
    """Starts a child that sleeps for ten minutes (its command line carries `marker`), notes its pid
    in a file of the working folder, and returns."""
    child = subprocess.Popen([sys.executable, "-c", "import time, sys; time.sleep(600)", marker],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with open("sleeper.pid", "w") as note:
        note.write(str(child.pid))
    return {"pid": child.pid}


def linger(seconds: float) -> dict:
    time.sleep(seconds)
    return {"slept": seconds}


def hang_ignoring_the_timer() -> dict:
    """Swallows the worker's timeout: only killing the worker stops it."""
    while True:
        try:
            time.sleep(10)
        except BaseException:
            pass
