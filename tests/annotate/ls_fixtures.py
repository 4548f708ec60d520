"""Fixtures for the Label Studio stages: real drafts over the travel world, and a real server.

Imported by name into each test module (`from ls_fixtures import drafts`), not a conftest.py: the
top-level tests import `from conftest import ...`, and a second rootless conftest.py would take
that module name.

Drafts are built the way stage1 builds them: a query and a path over datasets/travel's tools,
executed by the python environment so every call carries the response the tools really give.
The server fixture starts Label Studio with the project's own `annotate.studio.server` code (session
scoped: a fresh database takes about half a minute) and never skips: CI installs it with
annotate/studio/install_studio.sh.
"""

from __future__ import annotations

from typing import Iterator

import pytest

from annotate.studio.client import Connection, open_client
from annotate.studio.server import StudioConfig, free_port, read_credentials, start, stop
from fcbench.catalog import load_tools_file
from fcbench.environments.python_env import PythonEnvironment
from fcbench.environments.execution import execute_gold_paths
from fcbench.sample import Sample
from ls_helpers import TRAVEL, draft_paths


@pytest.fixture(scope="session")
def travel_tools():
    return load_tools_file(TRAVEL / "tools.json")


@pytest.fixture(scope="session")
def travel_environment(travel_tools) -> Iterator[PythonEnvironment]:
    with PythonEnvironment(TRAVEL / "tools.py", travel_tools, workers=1, timeout=5) as environment:
        yield environment


@pytest.fixture(scope="session")
def drafts(travel_tools, travel_environment) -> dict[str, Sample]:
    """The test drafts with every call executed (responses from the real travel tools)."""
    plain = [Sample(id=sample_id, domain="hotels" if "hotel" in sample_id else "flights",
                    messages=[{"role": "user", "content": query}], tools=travel_tools, calls=steps)
             for sample_id, (query, steps) in draft_paths().items()]
    results = execute_gold_paths(plain, travel_environment)
    executed = {}
    for result in results:
        assert result.ok, result.failure
        sample = result.sample
        sample.provenance = sample.provenance.model_copy(update={"stage": "stage1", "model": "gpt-4o-mini"})
        executed[sample.id] = sample
    return executed


# ------------------------------------------------------------------------------------------ server
class Studio:
    """A running server for the tests: its config, connection and an SDK client."""

    def __init__(self, config: StudioConfig) -> None:
        self.config = config
        self.connection = Connection(config.url, read_credentials(config).token)
        self.client = open_client(self.connection)


_RUNNING: list[Studio] = []  # the one server of the test session (see `studio`)


@pytest.fixture(scope="session")
def studio(tmp_path_factory) -> Iterator[Studio]:
    """One server for the whole session. Each module imports this fixture by name, and pytest keeps
    a session fixture per module that defines it: without this cache every module would start its
    own server (half a minute to two minutes each on a loaded machine)."""
    if _RUNNING:
        yield _RUNNING[0]
        return
    config = StudioConfig(root=tmp_path_factory.mktemp("studio"), port=free_port())
    start(config)
    _RUNNING.append(Studio(config))
    try:
        yield _RUNNING[0]
    finally:
        _RUNNING.clear()
        stop(config)
