"""The recorded environment: responses annotated in samples, replayed by canonical call."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import EXTERNAL, REPO, read_all
from fcbench.answers import NESTFUL_COMPARISON
from fcbench.environments import ErrorReason, canonical_call_key
from fcbench.environments.python_env import PythonEnvironment
from fcbench.environments.recorded import UNKNOWN_CALL_RESPONSE, RecordedEnvironment, RecordedStore
from fcbench.environments.execution import execute_gold_paths
from fcbench.sample import Call, Sample, Tool

HOTEL_TOOLS = [
    Tool(
        name="search_hotels",
        parameters={
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "adults": {"type": "integer", "default": 1},
                "max_price": {"type": "number"},
            },
            "required": ["city"],
        },
    ),
    Tool(name="get_rooms", parameters={"type": "object", "properties": {"hotel_id": {"type": "integer"}}}),
]


def hotel_sample() -> Sample:
    return Sample(
        id="hotel-1",
        messages=[{"role": "user", "content": "Rooms in the cheapest hotel in Paris?"}],
        tools=HOTEL_TOOLS,
        calls=[
            [Call(label="var_1", name="search_hotels", arguments={"city": "Paris", "max_price": 200.0}, response={"hotels": [{"id": 17}, {"id": 42}]})],
            [Call(label="var_2", name="get_rooms", arguments={"hotel_id": "$var_1.hotels[0].id$"}, response=None)],
            [Call(label="var_3", name="get_rooms", arguments={"hotel_id": 99})],  # no response recorded
        ],
    )


@pytest.fixture
def environment() -> RecordedEnvironment:
    return RecordedEnvironment.from_samples([hotel_sample()])


def test_only_calls_with_a_response_are_recorded(environment):
    assert len(environment.store) == 2
    assert environment.call("get_rooms", {"hotel_id": 99}).reason is ErrorReason.NOT_RECORDED
    null_answer = environment.call("get_rooms", {"hotel_id": 17})  # the reference resolved when recording
    assert null_answer.ok and null_answer.response is None


def test_numbers_key_order_and_defaults_do_not_change_the_call(environment):
    expected = {"hotels": [{"id": 17}, {"id": 42}]}
    assert environment.call("search_hotels", {"city": "Paris", "max_price": 200.0}).response == expected
    assert environment.call("search_hotels", {"max_price": 200, "city": "Paris"}).response == expected
    assert environment.call("search_hotels", {"city": "Paris", "max_price": 200, "adults": 1}).response == expected
    assert environment.call("search_hotels", {"city": "Paris", "max_price": "200"}).response == expected  # coerced
    assert environment.call("get_rooms", {"hotel_id": 17.0}).ok


def test_an_unknown_call_gets_the_fixed_error_answer(environment):
    for arguments in ({"city": "Paris", "max_price": 200, "adults": 2}, {"city": "paris", "max_price": 200}):
        outcome = environment.call("search_hotels", arguments)
        assert not outcome.ok and outcome.reason is ErrorReason.NOT_RECORDED
        assert outcome.response == UNKNOWN_CALL_RESPONSE
    assert environment.misses == 2


def test_canonical_key_spells_one_call_one_way():
    schema = HOTEL_TOOLS[0].parameters
    key = canonical_call_key("search_hotels", {"max_price": 200, "city": "Paris"}, schema)
    assert key == 'search_hotels:{"adults":1,"city":"Paris","max_price":200}'
    assert canonical_call_key("f", {"flag": True}) != canonical_call_key("f", {"flag": 1})  # bool is not 1


def test_conflicting_responses_keep_the_first_and_are_counted():
    store = RecordedStore(HOTEL_TOOLS)
    assert store.add("get_rooms", {"hotel_id": 1}, {"rooms": 3})
    assert store.add("get_rooms", {"hotel_id": 1.0}, {"rooms": 3})  # same answer again: fine
    assert not store.add("get_rooms", {"hotel_id": 1}, {"rooms": 4})
    assert store.conflicts == 1
    assert store.lookup("get_rooms", {"hotel_id": 1}).response == {"rooms": 3}


def test_an_unresolvable_reference_is_skipped_and_counted():
    sample = hotel_sample()
    sample.calls[1][0].arguments = {"hotel_id": "$var_1.hotels[5].id$"}
    store = RecordedStore.from_samples([sample])
    assert len(store) == 1 and store.unresolved == 1


def test_save_and_load_round_trip(tmp_path: Path, environment):
    path = tmp_path / "recorded.json"
    environment.store.save(path)
    loaded = RecordedStore.load(path, HOTEL_TOOLS)
    assert len(loaded) == 2
    assert RecordedEnvironment(loaded).call("search_hotels", {"city": "Paris", "max_price": 200}).ok
    again = tmp_path / "again.json"
    loaded.save(again)
    assert again.read_bytes() == path.read_bytes()  # same recording, same bytes
    (tmp_path / "other.json").write_text(json.dumps({"calls": []}))
    with pytest.raises(ValueError, match="not a recorded-calls file"):
        RecordedStore.load(tmp_path / "other.json")


def test_nestful_math_paths_replay_from_a_recording(tmp_path: Path):
    """Execute the real NESTful math gold paths once, record the responses, replay them offline."""
    samples = [s for s in read_all(EXTERNAL / "nestful" / "predictions" / "nestful_0-qwen3-8b-8bit-cot.jsonl", "nestful") if s.domain == "math"]
    assert len(samples) == 79
    tools = {tool.name: tool for sample in samples for tool in sample.tools}
    with PythonEnvironment(REPO / "datasets" / "nestful-math" / "tools.py", tools.values(), workers=2) as live:
        executed = [result.sample for result in execute_gold_paths(samples, live)]
    store = RecordedStore.from_samples(executed)
    n_calls = sum(len(sample.all_calls()) for sample in samples)
    assert n_calls == 387 and 0 < len(store) <= n_calls and store.conflicts == 0
    store.save(tmp_path / "nestful-math.json")
    replay = RecordedEnvironment(RecordedStore.load(tmp_path / "nestful-math.json", tools.values()))
    results = execute_gold_paths(samples, replay)  # the input samples, without responses
    assert all(result.ok for result in results)
    assert all(result.matches_gold(NESTFUL_COMPARISON) for result in results)
    assert replay.misses == 0


def test_a_store_on_disk_answers_as_the_one_in_memory(tmp_path: Path):
    """DiskCalls (evaluate's store of every response of its split) keeps the store's behaviour:
    first response kept, conflicts counted, values exact, the same saved bytes."""
    from fcbench.environments.recorded import DiskCalls

    calls = DiskCalls()
    on_disk, in_memory = RecordedStore(HOTEL_TOOLS, calls=calls), RecordedStore(HOTEL_TOOLS)
    for store in (on_disk, in_memory):
        store.add_samples([hotel_sample()])
        assert store.add("get_rooms", {"hotel_id": 7}, {"rooms": 3, "price": 0.1 + 0.2, "big": 10**30})
        assert not store.add("get_rooms", {"hotel_id": 7.0}, {"rooms": 4})
    assert (len(on_disk), on_disk.conflicts) == (len(in_memory), in_memory.conflicts) == (3, 1)
    assert on_disk.lookup("get_rooms", {"hotel_id": 7}).response == {"rooms": 3, "price": 0.1 + 0.2, "big": 10**30}
    assert on_disk.lookup("get_rooms", {"hotel_id": 8}) is None
    on_disk.save(tmp_path / "disk.json")
    in_memory.save(tmp_path / "memory.json")
    assert (tmp_path / "disk.json").read_bytes() == (tmp_path / "memory.json").read_bytes()
    del calls[next(iter(calls))]
    assert len(calls) == 2
    calls.close()
