"""All 13 CONFETTI conversation types drafted offline against the executable travel world: each
draft shows its type by the type's acceptance rule and by the shape a careful reader expects (the
switched-from goal never called, both stacked goals served, the approval before the calls, the
rejected request, the outage the author chose); the author's chosen errors are recorded,
never executed, reproduced by the filter, and edited in the stage2 answer; a type that does not
occur is a counted reject in stage1, stage2 and the filter; the same seed gives the same bytes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from annotate.tasks.conversation import (ConversationAnswer, build_conversation, call_options, conversation_task,
                                         editable_turns, format_turns)
from annotate.tasks.single import choices_result
from fcbench.catalog import load_tools_file
from fcbench.checks.conversation_types import missing_types
from fcbench.config import COMPLEXITIES, load_pipelines
from fcbench.conversation import (DEFAULT_SIMULATED_ERROR, agent_turns, chosen_errors_of, error_response, scenario_of,
                                  user_turns)
from fcbench.environments.python_env import PythonEnvironment
from fcbench.filter.conversation import filter_conversations
from fcbench.formats import read_samples
from fcbench.pipeline.run import run_stage
from fcbench.sample import Sample
from generate.stage1.simulator import SERVICE_DOWN

REPO = Path(__file__).resolve().parents[3]
TRAVEL = REPO / "datasets" / "travel"


def write_pipeline(tmp_path: Path, name: str = "chat", types: list[str] | None = None, scenarios: int = 26) -> object:
    listed = ", ".join(types or COMPLEXITIES)
    (tmp_path / "pipelines.yaml").write_text(
        "pipelines:\n"
        f"  {name}:\n"
        "    kind: conversation\n"
        f"    dataset_dir: {tmp_path / name}\n"
        "    seed: 7\n"
        f"    tools: {TRAVEL / 'tools.json'}\n"
        f"    environment: {{kind: python, module: {TRAVEL / 'tools.py'}, workers: 1}}\n"
        "    conversation:\n"
        f"      offline: true\n      scenarios: {scenarios}\n      min_turns: 2\n      max_turns: 10\n"
        f"      value_pools: {TRAVEL / 'value_pools.json'}\n"
        f"      complexities: [{listed}]\n"
        "    stages:\n"
        "      filter: {grounding: reject, repeat: 2}\n", encoding="utf-8")
    return load_pipelines(tmp_path / "pipelines.yaml").get_pipeline(name)


@pytest.fixture(scope="module")
def drafted(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("all-types")
    pipeline = write_pipeline(tmp_path)
    summary = run_stage("stage1", pipeline, offline=True)
    drafts = [item for item in read_samples(pipeline.build_dir / "drafts.jsonl", "fcbench") if isinstance(item, Sample)]
    return pipeline, summary, drafts


@pytest.fixture(scope="module")
def environment():
    with PythonEnvironment(TRAVEL / "tools.py", load_tools_file(TRAVEL / "tools.json"), workers=1, timeout=5) as env:
        yield env


def _of(drafts: list[Sample], complexity: str) -> list[Sample]:
    return [draft for draft in drafts if scenario_of(draft).complexities == [complexity]]


def _calls(draft: Sample) -> list:
    return draft.all_calls()


def test_every_type_is_drafted_offline_and_passes_its_rule(drafted):
    pipeline, summary, drafts = drafted
    assert summary.counts["scenarios"] == 26 and summary.counts["drafts"] + summary.counts["rejected"] == 26
    assert {complexity for draft in drafts for complexity in scenario_of(draft).complexities} == set(COMPLEXITIES)
    rejects = [json.loads(line) for line in (pipeline.build_dir / "drafts.rejects.jsonl").read_text().splitlines()]
    assert not [reject for reject in rejects if reject["reason"] == "stage1.offline_unsupported"]
    for draft in drafts:
        assert missing_types(draft) == [], draft.id
        assert user_turns(draft.messages) >= 2
        for turn in agent_turns(draft.messages):
            assert ("agent_function_calling" in turn.dialog_acts) == bool(turn.steps)


def test_switching_stacking_confirmation_and_rejection_have_their_shape(drafted):
    _, _, drafts = drafted
    for draft in _of(drafts, "goal_switching"):
        dropped, new = scenario_of(draft).required_apis
        names = [call.name for call in _calls(draft)]
        assert dropped not in names and new in names  # the first goal is never served
        users = [m["content"] for m in draft.messages if m["role"] == "user"]
        assert "I am not sure about the" in users[0] and users[1].startswith("Actually, never mind that.")
    for draft in _of(drafts, "goal_stacking"):
        goals = scenario_of(draft).required_apis
        assert len(goals) == 2 and set(goals) <= {call.name for call in _calls(draft)}
        assert user_turns(draft.messages[:next(i for i, m in enumerate(draft.messages) if m.get("tool_calls"))]) == 1
    for draft in _of(drafts, "confirmation"):
        first, approval = [m for m in draft.messages if m["role"] == "assistant"][0], draft.messages[2]
        assert first["dialog_acts"] == ["agent_seek_information"] and "Shall I go ahead?" in first["content"]
        assert approval == {"role": "user", "content": "Yes, please go ahead."} and draft.messages[3].get("tool_calls")
    for draft in _of(drafts, "goal_not_supported"):
        rejecting = [turn for turn in agent_turns(draft.messages) if "agent_reject_request" in turn.dialog_acts]
        assert len(rejecting) == 1 and not rejecting[0].steps
        asked = draft.messages[rejecting[0].start - 1]["content"]
        assert asked.startswith(("Could you also", "Can you also"))
        assert not any(word in tool.description.lower() for tool in draft.tools
                       for word in ("restaurant", "insurance", "weather", "visa") if word in asked.lower())


def test_failed_conversations_record_the_authors_chosen_errors_never_executed(drafted):
    _, _, drafts = drafted
    failed = _of(drafts, "failed_conversation")
    assert failed
    for draft in failed:
        goal = scenario_of(draft).required_apis[0]
        chosen = chosen_errors_of(draft)
        goal_calls = [call for call in _calls(draft) if call.name == goal]
        assert len(goal_calls) == 2 and set(chosen) == {call.label for call in goal_calls}  # the try and the retry
        assert all(call.response == error_response(SERVICE_DOWN) for call in goal_calls)
        assert set(chosen) <= set(draft.meta["conversation"]["failed_calls"])
        assert draft.messages[-1]["dialog_acts"] == ["agent_other"]
    others = [draft for draft in drafts if scenario_of(draft).complexities != ["failed_conversation"]]
    assert all("chosen_errors" not in draft.meta["conversation"] for draft in others)  # only where an author chose


def test_the_same_seed_gives_the_same_bytes(drafted, tmp_path):
    pipeline, _, _ = drafted
    again = write_pipeline(tmp_path)
    run_stage("stage1", again, offline=True)
    for name in ("scenarios.jsonl", "drafts.jsonl", "drafts.rejects.jsonl"):
        assert (again.build_dir / name).read_bytes() == (pipeline.build_dir / name).read_bytes()


def test_the_filter_reproduces_chosen_errors_and_rejects_a_missing_type(drafted, environment, tmp_path):
    pipeline, _, drafts = drafted
    summary = filter_conversations(drafts, environment, pipeline.stages.filter, tmp_path / "ok", "drafts")
    assert summary.counts["passed"] == len(drafts) and summary.reasons == {}
    failed = _of(drafts, "failed_conversation")[0]
    label = next(iter(chosen_errors_of(failed)))
    # the recorded response is not the chosen error: re-execution cannot reproduce it
    tampered = failed.model_copy(deep=True, update={"id": "tampered"})
    for message in tampered.messages:
        if message.get("tool_call_id") == label:
            message["content"] = json.dumps(error_response("another message"))
    tampered.calls = [[call.model_copy(update={"response": error_response("another message")}) if call.label == label
                       else call for call in step] for step in tampered.calls]
    # a goal_not_supported conversation whose reject turn is gone: its type no longer occurs
    rejecting = _of(drafts, "goal_not_supported")[0]
    end = next(turn for turn in agent_turns(rejecting.messages) if "agent_reject_request" in turn.dialog_acts).start
    cut = rejecting.model_copy(deep=True, update={"id": "cut", "messages": rejecting.messages[:end - 1]})
    summary = filter_conversations([tampered, cut], environment, pipeline.stages.filter, tmp_path / "bad", "bad")
    assert summary.reasons == {"reproduction.chosen_error": 1, "type_missing.goal_not_supported": 1}
    assert summary.counts["failed_type"] == 1 and summary.counts["failed_reproduction"] == 1
    rows = [json.loads(line) for line in (tmp_path / "bad" / "validated.rejects.jsonl").read_text().splitlines()]
    assert "no agent turn rejects a request" in next(row for row in rows if row["id"] == "cut")["detail"]


def _answer(draft: Sample, text: str | None = None, ticked: list[str] | None = None) -> ConversationAnswer:
    task = conversation_task(draft)
    result = [dict(region) for region in task["predictions"][0]["result"] if region["from_name"] != "call_errors"
              or ticked is None]
    if text is not None:
        result[0] = {**result[0], "value": {"text": [text]}}
    if ticked:
        result.append(choices_result("call_errors", "conversation", ticked))
    result.append(choices_result("verdict", "conversation", ["fix" if text or ticked else "accept"]))
    return ConversationAnswer.from_result(result)


def test_stage2_authors_choose_success_or_error_per_call(drafted, environment):
    _, _, drafts = drafted
    env = lambda: environment  # noqa: E731
    failed = _of(drafts, "failed_conversation")[0]
    task = conversation_task(failed)
    labels = [option["value"] for option in task["data"]["call_options"]]
    assert labels == [call.label for call in _calls(failed)] == [o["value"] for o in call_options(failed)]
    ticked = next(region for region in task["predictions"][0]["result"] if region["from_name"] == "call_errors")
    assert ticked["value"]["choices"] == list(chosen_errors_of(failed))  # the draft's choice, pre-ticked
    assert '"error": "' + SERVICE_DOWN in format_turns(editable_turns(failed))
    kept = build_conversation(failed, _answer(failed), env)
    assert kept.problems == [] and chosen_errors_of(kept.sample) == chosen_errors_of(failed)
    # the author unticks nothing but writes their own message in the JSON
    own = format_turns(editable_turns(failed)).replace(SERVICE_DOWN, "The flight search is down for maintenance.", 1)
    written = build_conversation(failed, _answer(failed, own), env)
    first = next(iter(chosen_errors_of(failed)))
    assert written.problems == [] and chosen_errors_of(written.sample)[first] == "The flight search is down for maintenance."
    # a success turned into an error by the tick alone: not executed, the default message answers
    plain = _of(drafts, "no_target")[0]
    last = _calls(plain)[-1].label
    chosen = build_conversation(plain, _answer(plain, ticked=[last]), env)
    assert chosen.problems == [] and chosen_errors_of(chosen.sample) == {last: DEFAULT_SIMULATED_ERROR}
    answered = next(call for call in chosen.sample.all_calls() if call.label == last)
    assert answered.response == error_response(DEFAULT_SIMULATED_ERROR)
    # a tick whose call is now another tool's, and an error that is not text: sent back with the reason
    turns = editable_turns(plain)
    calling = next(turn for turn in turns if turn.get("calls"))
    calling["calls"] = calling["calls"][:-1]  # the goal call deleted: var_N is no longer there
    mismatch = build_conversation(plain, _answer(plain, format_turns(turns), ticked=[last]), env)
    assert [problem.code.value for problem in mismatch.problems] == ["call_error_mismatch"]
    assert f"{last} is ticked to fail, but the conversation has" in mismatch.problems[0].message
    bad = format_turns(editable_turns(failed)).replace(f'"error": "{SERVICE_DOWN}"', '"error": 503', 1)
    assert "'error' must be the error message" in str(build_conversation(failed, _answer(failed, bad), env).problems)
    # the pull checks the type too: a goal_not_supported whose refusal is turned into an answer is sent back
    rejecting = _of(drafts, "goal_not_supported")[0]
    accepted = format_turns(editable_turns(rejecting)).replace('"acts": ["agent_reject_request"]',
                                                               '"acts": ["agent_inform_user"]')
    unshown = build_conversation(rejecting, _answer(rejecting, accepted), env)
    assert [problem.code.value for problem in unshown.problems] == ["type_missing"]
    assert "requires goal_not_supported" in unshown.problems[0].message


def test_a_type_the_draft_does_not_show_is_a_counted_stage1_reject(drafted, tmp_path, monkeypatch):
    from generate.stage1 import simulator

    # a rule-based agent that forgets to reject: the goal_not_supported drafts lose their type
    monkeypatch.setattr(simulator, "UNSUPPORTED_REQUESTS", [("Could you also find me a cheaper option?", ("zzz",))])
    original = simulator._Agent.say

    def say(self, text, acts, turn_acts):
        acts = ["agent_inform_user" if act == "agent_reject_request" else act for act in acts]
        return original(self, text, acts, turn_acts)

    monkeypatch.setattr(simulator._Agent, "say", say)
    pipeline = write_pipeline(tmp_path, types=["goal_not_supported", "no_target"], scenarios=4)
    summary = run_stage("stage1", pipeline, offline=True)
    assert summary.reasons.get("stage1.type_missing.goal_not_supported") == 2
    rejects = [json.loads(line) for line in (pipeline.build_dir / "drafts.rejects.jsonl").read_text().splitlines()]
    missing = [row for row in rejects if row["reason"] == "stage1.type_missing.goal_not_supported"]
    assert all("no agent turn rejects a request" in row["detail"] and row["sample"] for row in missing)


def test_stage1_drafts_only_reviewed_scenarios_and_refuses_stale_reviews(tmp_path):
    from fcbench.conversation import ReviewedScenario, Scenario, ScenarioReview, scenario_hash

    pipeline = write_pipeline(tmp_path, types=["no_target"], scenarios=4)
    text = (tmp_path / "pipelines.yaml").read_text().replace("      min_turns: 2\n",
                                                             "      min_turns: 2\n      review: {enabled: true}\n")
    (tmp_path / "pipelines.yaml").write_text(text)
    pipeline = load_pipelines(tmp_path / "pipelines.yaml").get_pipeline("chat")
    waiting = run_stage("stage1", pipeline, offline=True)
    assert waiting.counts == {"scenarios": 4, "awaiting_review": 4, "drafts": 0, "rejected": 0}
    sampled = [Scenario.model_validate(json.loads(line)) for line in
               (pipeline.build_dir / "scenarios.jsonl").read_text().splitlines()]
    decisions = [("accept", scenario_hash(sampled[0])), ("edit", "0" * 64), ("reject", scenario_hash(sampled[2]))]
    reviewed = [ReviewedScenario(scenario=scenario, review=ScenarioReview(verdict=verdict, sampled_hash=digest,
                                                                          notes="too vague" if verdict == "reject" else ""))
                for scenario, (verdict, digest) in zip(sampled, decisions)]
    (pipeline.build_dir / "scenarios.reviewed.jsonl").write_text(
        "".join(json.dumps(item.model_dump(mode="json")) + "\n" for item in reviewed))
    summary = run_stage("stage1", pipeline, offline=True)
    assert summary.counts["reviewed"] == 1 and summary.counts["awaiting_review"] == 1
    assert summary.reasons == {"stage1.rejected_in_review": 1, "stage1.stale_review": 1}
    drafts = [draft.id for draft in read_samples(pipeline.build_dir / "drafts.jsonl", "fcbench")]
    assert drafts == [sampled[0].id]
    rows = {json.loads(line)["reason"]: json.loads(line) for line in
            (pipeline.build_dir / "drafts.rejects.jsonl").read_text().splitlines()}
    assert rows["stage1.rejected_in_review"]["detail"] == "too vague"
    assert rows["stage1.stale_review"]["id"] == sampled[1].id
