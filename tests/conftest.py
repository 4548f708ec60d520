"""Shared test fixtures: where the published files live, and the canonical round trip; and the
`integration` marker, put on every test that starts something (see `pytest_collection_modifyitems`)."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from fcbench.formats import FormatOptions, Rejected, read_samples, write_samples
from fcbench.sample import Sample

REPO = Path(__file__).resolve().parents[1]
# CI clones the repository with shared/ beside it; a developer's checkout has the same layout.
EXTERNAL = REPO.parent / "shared" / "external"
TEST_DATA = REPO / "tests" / "data"


@pytest.fixture(autouse=True)
def _memory_ceiling_restored():
    """A test that sets the memory ceiling (fcbench.runtime.memory) leaves the default to the next one."""
    from fcbench.runtime.memory import memory_ceiling_mb, set_memory_ceiling

    before = memory_ceiling_mb()
    yield
    set_memory_ceiling(before)


@pytest.fixture
def external() -> Path:
    assert EXTERNAL.is_dir(), f"published files expected at {EXTERNAL}"
    return EXTERNAL


def read_all(path: Path, fmt: str, options: FormatOptions = FormatOptions()) -> list[Sample]:
    """Read a file and fail the test on any rejected item (published files must import whole)."""
    items = list(read_samples(path, fmt, options))
    rejected = [item for item in items if isinstance(item, Rejected)]
    assert not rejected, f"{len(rejected)} rejected, first: {rejected[0]}"
    return items


def through_canonical(samples: list[Sample], tmp_path: Path) -> list[Sample]:
    """Write samples as canonical JSONL and read them back, proving the canonical file keeps all."""
    canonical = tmp_path / "canonical.jsonl"
    write_samples(samples, canonical, "fcbench")
    return read_all(canonical, "fcbench")


# ------------------------------------------------------------------------------------ integration
# A test is an integration test when it, or a fixture it uses, starts something: a server (Label
# Studio, PostgreSQL, the mock LLM, Prism, an HTTP stub), a browser, Ray, or a subprocess (a
# pipeline build, a killed run, worker processes). `pytest -m "not integration"` is then the
# pure-logic inner loop. Read from the code, so a new test is marked without anyone remembering to.
STARTS_SOMETHING = re.compile(
    r"\b(subprocess|Popen|MockLLMServer|start_prism|RayEnvironment|ray\.init|PythonEnvironment|HttpEnvironment|"
    r"open_environment|environment_for|sync_playwright|chromium|start_postgres|StudioConfig|HTTPServer|"
    r"ThreadingHTTPServer|serve_forever|run_pipeline|CliRunner|build_and_digest)\b")
# fixtures that start a server or a worker pool (by name: their code lives in other modules)
STARTING_FIXTURES = {"studio", "drafts", "travel_environment", "scripted", "prism", "postgres", "browser", "page"}


def _names(code) -> set[str]:
    names = set(code.co_names)
    for constant in code.co_consts:
        if inspect.iscode(constant):
            names |= _names(constant)
    return names


def _starts_something(function, seen: set) -> bool:
    """Whether `function`, or a function or class of the tests it calls, starts something."""
    function = inspect.unwrap(function) if callable(function) else function
    if function is None or function in seen:
        return False
    seen.add(function)
    try:
        source = inspect.getsource(function)
    except (OSError, TypeError):
        return False
    if STARTS_SOMETHING.search(source):
        return True
    code = getattr(function, "__code__", None)
    if code is None:
        return False
    scope = getattr(function, "__globals__", {})
    for name in _names(code):
        called = scope.get(name)
        if (inspect.isfunction(called) or inspect.isclass(called)) and "tests" in Path(
                getattr(inspect.getmodule(called), "__file__", "") or "").parts:
            if _starts_something(called, seen):
                return True
    return False


def pytest_collection_modifyitems(config, items):
    for item in items:
        fixtures = item._fixtureinfo.name2fixturedefs if hasattr(item, "_fixtureinfo") else {}
        seen: set = set()
        starting = (any(name in STARTING_FIXTURES for name in fixtures)
                    or _starts_something(getattr(item, "function", None), seen)
                    or any(_starts_something(definition.func, seen)
                           for definitions in fixtures.values() for definition in definitions))
        if starting:
            item.add_marker("integration")
