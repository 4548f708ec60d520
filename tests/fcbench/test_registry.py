"""The one registry class behind metrics, formats, environments and stages."""

from __future__ import annotations

import pytest

from fcbench.errors import UserError
from fcbench.registry import Registry


def test_register_get_and_one_error_text():
    things: Registry[int] = Registry("thing")
    things.register("one", 1)

    @things.register("double")
    def double(x):
        return 2 * x

    assert things.get("one") == 1 and things.get("double") is double
    assert things.names() == ["one", "double"] and "one" in things and len(things) == 2
    with pytest.raises(UserError) as unknown:
        things.get("three", where="pipeline 'p': ")
    assert str(unknown.value) == "pipeline 'p': unknown thing 'three', available: one, double"


def test_a_name_is_never_given_to_a_second_entry():
    things: Registry[int] = Registry("thing")
    things.register("one", 1)
    assert things.register("one", 1) == 1  # the same entry again is no collision
    with pytest.raises(ValueError, match="thing 'one' is already registered"):
        things.register("one", 2)


def test_lazy_entries_are_imported_at_first_use_and_errors_are_the_registrys():
    class Missing(UserError):
        pass

    modules: Registry[object] = Registry("module", error=Missing)
    modules.register_lazy("json", "json")
    modules.register_lazy("dumps", "json:dumps")
    modules.register_lazy("json", "json")  # the same target again is the same entry
    import json

    assert modules.get("json") is json and modules.get("dumps") is json.dumps
    with pytest.raises(Missing, match="unknown module 'yaml', available: json, dumps"):
        modules.get("yaml")


def test_formats_environments_and_metrics_are_registries_of_this_class():
    from fcbench.environments.from_config import ENVIRONMENTS
    from fcbench.formats import FORMATS, FormatError, adapter
    from fcbench.score import METRICS

    assert all(isinstance(registry, Registry) for registry in (FORMATS, ENVIRONMENTS, METRICS))
    assert adapter("nestful").__name__ == "fcbench.formats.nestful"
    with pytest.raises(FormatError, match="unknown format 'csv', available: fcbench, complexfuncbench, nestful"):
        adapter("csv")
    assert ENVIRONMENTS.names() == ["python", "recorded", "http", "simulated"]


def test_an_unknown_environment_kind_names_the_pipeline(tmp_path):
    from fcbench.config import PipelineConfig
    from fcbench.environments.from_config import open_environment

    pipeline = PipelineConfig.model_validate({"dataset_dir": str(tmp_path), "environment": {"kind": "python", "module": "x.py"}})
    pipeline.environment.kind = "quantum"  # past the config's own check: the registry still says it once
    with pytest.raises(UserError, match=r"unknown environment kind 'quantum', available: python, recorded"):
        open_environment(pipeline, [])
