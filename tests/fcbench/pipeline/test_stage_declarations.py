"""One declaration per stage and kind, read by `run` and by `pipelines --check`; every stage
returns the one result type, `StageSummary`, itself."""

from __future__ import annotations

import importlib
import inspect

import pytest

from fcbench.errors import UserError
from fcbench.pipeline.run import CONVERSATION_STAGES, SINGLE_STAGES
from fcbench.registry import Registry


@pytest.mark.parametrize("registry", [SINGLE_STAGES, CONVERSATION_STAGES], ids=["single", "conversation"])
def test_every_declared_stage_runs_a_function_returning_a_stage_summary(registry):
    assert isinstance(registry, Registry)
    for stage in registry:
        module, _, function = stage.run.partition(":")
        run = getattr(importlib.import_module(module), function)
        assert list(inspect.signature(run).parameters)[:2] == ["ctx", "settings"], stage.run
        assert inspect.signature(run).return_annotation == "StageSummary", stage.run


def test_no_two_stages_of_run_write_the_same_file():
    for registry in (SINGLE_STAGES, CONVERSATION_STAGES):
        automatic = [stage for stage in registry if not stage.on_demand]
        written = [name for stage in automatic for name in stage.writes]
        assert len(written) == len(set(written))


def test_an_unknown_stage_gets_the_registrys_one_line(tmp_path):
    from fcbench.config import PipelineConfig
    from fcbench.pipeline.run import run_stage

    pipeline = PipelineConfig.model_validate({"dataset_dir": str(tmp_path)})
    with pytest.raises(UserError, match="unknown stage 'stage4', available: stage1, stage2, stage3, filter, export"):
        run_stage("stage4", pipeline)
