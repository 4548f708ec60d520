"""Leaves of nested arguments named by paths (`entities[0].name`), and plain names kept plain."""

from __future__ import annotations

import pytest

from fcbench.argument_paths import (get_argument, has_argument, is_argument_path, nest_arguments, parse_argument_path,
                                    with_argument)


def test_paths_and_plain_names():
    assert parse_argument_path("entities[0].observations[1]") == ("entities", 0, "observations", 1)
    assert parse_argument_path("names[0]") == ("names", 0)
    # an OpenAPI query parameter with brackets in its name is one plain name
    assert parse_argument_path("page[limit]") == ("page[limit]",) and not is_argument_path("page[limit]")
    assert parse_argument_path("departDate") == ("departDate",)


def test_get_and_set_by_path_leave_the_input_alone():
    arguments = {"entities": [{"name": "A", "observations": ["x"]}], "page[limit]": 5}
    assert get_argument(arguments, "entities[0].observations[0]") == "x"
    assert get_argument(arguments, "page[limit]") == 5
    assert not has_argument(arguments, "entities[1].name") and has_argument(arguments, "entities[0].name")
    with pytest.raises(KeyError):
        get_argument(arguments, "entities[0].name.first")
    changed = with_argument(arguments, "entities[0].observations[0]", "y")
    assert changed["entities"][0]["observations"] == ["y"] and arguments["entities"][0]["observations"] == ["x"]


def test_nest_builds_the_list_arguments_in_order():
    leaves = {"observations[0].entityName": "Alice", "observations[0].contents[0]": "$var_1.content$", "limit": 3}
    assert nest_arguments(leaves) == {"observations": [{"entityName": "Alice", "contents": ["$var_1.content$"]}],
                                      "limit": 3}
