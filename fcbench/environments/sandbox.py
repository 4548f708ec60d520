"""What a tool worker may see and touch: its environment variables, its files, its processes.

Tool code is not trusted (a catalog's implementations, a model-facing benchmark's tools), so each
worker process of the python environment (`python_env.py`, and through it `ray_backend.py`) starts
with:

- A MINIMAL ENVIRONMENT: only the variables in `ALLOWED_VARIABLES` (PATH, the locale: LANG,
  LANGUAGE, LC_*, TZ; PYTHONHASHSEED; LD_LIBRARY_PATH, which the interpreter may need to start)
  and the ones a pipeline names in `environment.pass_env`, plus PYTHONPATH (the folder this fcbench
  is imported from, then the parent's PYTHONPATH) and HOME and TMPDIR set to the worker's private
  folder. Nothing else reaches a tool: not OPENAI_API_KEY, not an `--auth-env` token, not
  FCBENCH_LS_TOKEN, not AWS_*... (`worker_environment`).
- A PRIVATE WORKING FOLDER, created empty for the worker and removed with it (HOME and TMPDIR
  point there too; a killed command's workers empty theirs, and the next command sweeps them).
- FILES: where the kernel offers Landlock (Linux 5.13+, unprivileged), the worker confines itself
  before the tool module is imported: it may create, write, rename or delete files only under its
  private folder, the folders a pipeline lists in `environment.writable`, and /dev/null; reading
  stays allowed everywhere the user may read (`confine_writes`). Without Landlock only the private
  folder and the size cap below apply (the worker's hello says `filesystem_confined`). Every file
  a tool writes is capped at `max_file_mb` (RLIMIT_FSIZE; a larger write fails with EFBIG inside
  the tool, it does not kill the worker).
- ITS OWN PROCESS GROUP (a new session): what a tool starts (a subprocess, a shell) is in that
  group, and the whole group is killed when the worker is stopped or replaced, and by the worker
  itself when its parent goes away (the command ended or was killed).

What is NOT prevented: a tool still reads any file the user can read (absolute paths: ~/.ssh,
other projects; only HOME is moved); a child that leaves the group itself (setsid, a daemon's
double fork) outlives the command; CPU is bounded per call by the timeout, not otherwise; without
Landlock, a tool writes anywhere the user can (up to the size cap). The network is cut by the
worker (`worker.isolate_network`) only when it may create a network namespace (root or
CAP_SYS_ADMIN); `FCBENCH_NETWORK=off|on` tells tools which. Full isolation needs a container.
"""

from __future__ import annotations

import ctypes
import os
import resource
import shutil
import signal
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

# Variables a worker inherits from the command (names, or prefixes ending in "_" for families).
ALLOWED_VARIABLES = ("PATH", "LANG", "LANGUAGE", "TZ", "PYTHONHASHSEED", "LD_LIBRARY_PATH")
ALLOWED_PREFIXES = ("LC_",)
DEFAULT_MAX_FILE_MB = 256
PRIVATE_FOLDER_PREFIX = "fcbench-tool-"  # then the pid of the command that made it, "-", a random part


def fcbench_import_root() -> Path:
    """The folder this fcbench package is imported from: the worker must import the same code."""
    import fcbench

    return Path(fcbench.__file__).resolve().parent.parent


def worker_environment(parent: Mapping[str, str], home: Path, pass_env: Iterable[str] = ()) -> dict[str, str]:
    """The environment of a tool worker (pure): the allow-list, the named extras, PYTHONPATH, and
    HOME/TMPDIR in the worker's private folder."""
    allowed = set(ALLOWED_VARIABLES) | set(pass_env)
    environment = {name: value for name, value in parent.items()
                   if name in allowed or name.startswith(ALLOWED_PREFIXES)}
    python_path = [str(fcbench_import_root())]
    if parent.get("PYTHONPATH"):
        python_path.append(parent["PYTHONPATH"])
    environment["PYTHONPATH"] = os.pathsep.join(python_path)
    environment["HOME"] = environment["TMPDIR"] = str(home)
    return environment


def make_private_folder() -> Path:
    """A new empty folder for one worker, named after this command's pid (see `sweep_stale_folders`)."""
    sweep_stale_folders()
    return Path(tempfile.mkdtemp(prefix=f"{PRIVATE_FOLDER_PREFIX}{os.getpid()}-"))


def sweep_stale_folders() -> None:
    """Remove the private folders of commands that are gone. A worker empties its folder when its
    command is killed, but cannot remove the folder itself (its write confinement covers what is
    beneath the folder, not the folder in /tmp); the next command that starts workers does."""
    for folder in Path(tempfile.gettempdir()).glob(f"{PRIVATE_FOLDER_PREFIX}*-*"):
        owner = folder.name[len(PRIVATE_FOLDER_PREFIX):].split("-", 1)[0]
        if owner.isdigit() and not _alive(int(owner)):
            shutil.rmtree(folder, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def cap_file_size(limit_bytes: int) -> bool:
    """Cap the size of every file this process (and its children) writes. SIGXFSZ is ignored so a
    write past the cap fails with EFBIG (an OSError the tool sees) instead of killing the worker."""
    try:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit_bytes, limit_bytes))
        return True
    except (ValueError, OSError):
        return False


def kill_process_group(pgid: int) -> None:
    """SIGKILL every process of a group (the worker's own: it is the leader of a new session)."""
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def kill_own_group_if_leader() -> None:
    """The worker's last act: kill what its tools started. Only a group leader does it, so a worker
    started by hand inside someone else's group never kills that group."""
    if os.getpgrp() == os.getpid():
        kill_process_group(os.getpgrp())


# ----------------------------------------------------------------------------------------- Landlock
# <linux/landlock.h>: syscall numbers (the same on every architecture) and filesystem rights.
_SYS_CREATE_RULESET, _SYS_ADD_RULE, _SYS_RESTRICT_SELF = 444, 445, 446
_CREATE_RULESET_VERSION = 1
_RULE_PATH_BENEATH = 1
_PR_SET_NO_NEW_PRIVS = 38
_WRITE_FILE = 1 << 1
_WRITE_RIGHTS_V1 = (_WRITE_FILE | 1 << 4 | 1 << 5 | 1 << 6 | 1 << 7 | 1 << 8 | 1 << 9 | 1 << 10 | 1 << 11
                    | 1 << 12)  # write, remove dir/file, make char/dir/reg/sock/fifo/block/sym
_REFER = 1 << 13  # ABI 2: link or rename into another folder
_TRUNCATE = 1 << 14  # ABI 3


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64)]


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


def landlock_abi() -> int:
    """The kernel's Landlock ABI version, 0 when there is none (old kernel, disabled, not Linux)."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        version = libc.syscall(_SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))
    except (OSError, AttributeError):
        return 0
    return max(0, int(version))


def confine_writes(writable: Sequence[str | Path]) -> bool:
    """Let this process (and every process it starts) create, write, rename or delete files only
    under `writable` and /dev/null; reads are not restricted. Irreversible. False when the kernel
    has no Landlock (nothing is restricted then)."""
    abi = landlock_abi()
    if abi < 1:
        return False
    handled = _WRITE_RIGHTS_V1 | (_REFER if abi >= 2 else 0) | (_TRUNCATE if abi >= 3 else 0)
    file_rights = _WRITE_FILE | (_TRUNCATE if abi >= 3 else 0)  # rights a rule on a single file may hold
    libc = ctypes.CDLL(None, use_errno=True)
    attr = _RulesetAttr(handled)
    ruleset = libc.syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)),
                           ctypes.c_uint32(0))
    if ruleset < 0:
        return False
    try:
        rules = [(str(path), handled) for path in writable] + [(os.devnull, file_rights)]
        for path, rights in rules:
            try:
                fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
            except OSError:
                continue  # a folder that does not exist cannot be written under anyway
            try:
                rule = _PathBeneathAttr(rights if os.path.isdir(path) else rights & file_rights, fd)
                if libc.syscall(_SYS_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(_RULE_PATH_BENEATH),
                                ctypes.byref(rule), ctypes.c_uint32(0)) != 0:
                    return False
            finally:
                os.close(fd)
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            return False
        return libc.syscall(_SYS_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)) == 0
    finally:
        os.close(ruleset)
