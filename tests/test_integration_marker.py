"""The `integration` marker is read from the code (tests/conftest.py): a test that starts a server,
a browser, Ray or a subprocess, itself or through a helper or fixture of the tests, is marked; a
pure one is not, so `pytest -m "not integration"` is the fast inner loop."""

from __future__ import annotations

import subprocess

from conftest import _starts_something


def _pure_logic():
    return sorted({3, 1, 2})


def _starts_a_process():
    return subprocess.run(["true"], check=True)


def _calls_a_helper_that_starts_one():
    return _starts_a_process()


def test_what_starts_something_is_told_from_what_does_not(request):
    helpers = globals()  # looked up by name: naming them here would make this test call them
    assert not _starts_something(helpers["_pure_logic"], set())
    assert _starts_something(helpers["_starts_a_process"], set())
    assert _starts_something(helpers["_calls_a_helper_that_starts_one"], set())
    assert request.node.get_closest_marker("integration") is None  # this test itself starts nothing


def test_a_test_using_a_starting_helper_is_marked(request):
    _calls_a_helper_that_starts_one()
    assert request.node.get_closest_marker("integration") is not None
