"""One error per meaning: every exception class of the project is defined once, and the errors
that several layers raise (a bad configuration, an unreadable item, a rejected item, a judge
without a verdict) live in fcbench/errors.py."""

from __future__ import annotations

import ast
from collections import defaultdict
from functools import lru_cache
from pathlib import Path

import pytest

from fcbench.errors import ConfigError, ItemError, ItemRejected, JudgeError, UserError

REPO = Path(__file__).resolve().parents[2]


@lru_cache(maxsize=1)  # one walk of the tree for every test below
def _exception_classes() -> dict[str, list[str]]:
    """Class name -> where it is defined, for every class deriving from an exception."""
    found: dict[str, list[str]] = defaultdict(list)
    for package in ("fcbench", "generate", "annotate"):
        for path in sorted((REPO / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if not isinstance(node, ast.ClassDef):
                    continue
                bases = [ast.unparse(base) for base in node.bases]
                if any(base.endswith(("Error", "Exception", "Exit")) or base.split(".")[-1] in _KNOWN
                       for base in bases):
                    found[node.name].append(path.relative_to(REPO).as_posix())
    return found


_KNOWN = {"UserError", "ConfigError", "ItemError", "ItemRejected", "JudgeError", "StudioError", "BaseException"}


def test_no_exception_class_is_defined_twice():
    classes = _exception_classes()
    assert "JudgeError" in classes and "ConfigError" in classes  # the walk sees the classes
    twice = {name: where for name, where in classes.items() if len(where) > 1}
    assert not twice, f"exception classes defined more than once: {twice}"


@pytest.mark.parametrize("name", ["ConfigError", "ItemError", "ItemRejected", "JudgeError", "UserError"])
def test_the_shared_errors_live_in_fcbench_errors(name):
    assert _exception_classes()[name] == ["fcbench/errors.py"]


def test_a_config_error_lists_every_problem_and_is_a_user_error():
    many = ConfigError(["pipelines.yaml:3: bad seed", "pipelines.yaml:9: unknown key"])
    assert isinstance(many, UserError) and many.problems[1].endswith("unknown key")
    assert str(many) == "pipelines.yaml:3: bad seed (and 1 more problems)"
    one = ConfigError("senior.xml: no such control")
    assert one.problems == ["senior.xml: no such control"] and str(one) == "senior.xml: no such control"


def test_item_errors_carry_their_reason():
    assert isinstance(ItemError("bad"), ValueError)
    rejected = ItemRejected("stage1.no_calls", "the model answered without calling a tool", "{}")
    assert (rejected.reason, rejected.raw_text, str(rejected)) == (
        "stage1.no_calls", "{}", "stage1.no_calls: the model answered without calling a tool")
    judged = JudgeError("unparseable", "maybe?")
    assert (judged.reason, judged.raw_text, str(judged)) == ("unparseable", "maybe?", "unparseable")
