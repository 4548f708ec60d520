"""The generic LLM judge helper: how its endpoint is resolved and how strictly an answer is read
(the cached, re-asked-once behaviour is exercised over HTTP in tests/fcbench/evaluate/test_confetti_judges.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fcbench.config import LLMConfig
from fcbench.llm.client import Completion, ParseError
from fcbench.llm.client import json_object_answer as json_answer
from fcbench.llm.judge import default_judge_cache, judge_llm_config


def completion(text: str | None) -> Completion:
    return Completion(content=text, tool_calls=[], finish_reason="stop", body={})


def test_no_model_anywhere_means_no_llm_and_the_judge_always_runs_at_temperature_0() -> None:
    assert judge_llm_config(None, None, "http://127.0.0.1:1/v1") is None
    alone = judge_llm_config(None, "m", None)
    assert alone is not None and alone.model == "m" and alone.temperature == 0.0 and alone.base_url is None
    pipeline = LLMConfig(model="gen", temperature=0.7, api_key_env="MY_KEY", concurrency=9, mode="batch")
    from_pipeline = judge_llm_config(pipeline, None, None)
    assert (from_pipeline.model, from_pipeline.temperature, from_pipeline.api_key_env, from_pipeline.concurrency,
            from_pipeline.mode) == ("gen", 0.0, "MY_KEY", 9, "batch")
    assert judge_llm_config(None, "m", None, batch=True).mode == "batch"
    overridden = judge_llm_config(pipeline, "judge", "http://127.0.0.1:2/v1")
    assert (overridden.model, overridden.base_url) == ("judge", "http://127.0.0.1:2/v1")
    assert pipeline.temperature == 0.7  # the pipeline's own block is left as it was


def test_an_answer_is_a_json_object_or_a_parse_error() -> None:
    assert json_answer(completion('{"verdict": "grounded"}')) == {"verdict": "grounded"}
    assert json_answer(completion('```json\n{"a": 1}\n```')) == {"a": 1}
    for text in (None, "", "grounded", "[1, 2]", '{"verdict": '):
        with pytest.raises(ParseError):
            json_answer(completion(text))


def test_the_default_cache_is_the_pipelines_build_folder_else_the_users_cache(tmp_path: Path) -> None:
    assert default_judge_cache(tmp_path / "build", {}) == tmp_path / "build" / "score" / "judges.sqlite"
    assert default_judge_cache(None, {"XDG_CACHE_HOME": str(tmp_path)}) == tmp_path / "fcbench" / "judges.sqlite"
