"""Conversational pipelines (kind: conversation, CONFETTI-style), without a server: configuration,
scenario sampling to the declared distribution, the offline rule-based simulator against the
executable travel world, the stage2 answer checks (bad input sent back with its reason), the
per-conversation filter (re-execution in order, grounding turn by turn), the two turn-level sets
split by conversation, and the bundled travel-chat example built end to end from its Label Studio
export, converted to CONFETTI and compared with the published files."""

from __future__ import annotations

import json
import os
import stat
from collections import Counter
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from annotate.tasks.conversation import (ConversationAnswer, build_conversation, conversation_changes, conversation_qa,
                                         conversation_task, editable_turns, format_turns)
from annotate.tasks.problems import ProblemCode
from annotate.tasks.single import choices_result
from fcbench.catalog import load_tools_file
from fcbench.cli import app
from fcbench.errors import ConfigError
from fcbench.config import ConversationConfig, load_pipelines
from fcbench.checks.derivation import dates_spelled_in
from fcbench.conversation import (DIALOG_ACTS, agent_turns, calls_from_messages, conversation_stats,
                                  function_calling_samples,
                                  response_quality_samples, user_turns)
from fcbench.export.conversation import export_conversations
from fcbench.filter.conversation import filter_conversations
from fcbench.environments.python_env import PythonEnvironment
from fcbench.formats import read_samples
from fcbench.pipeline.run import run_stage
from fcbench.formats.parquet_rows import row_to_sample
from fcbench.sample import Sample
from fcbench.errors import ItemRejected
from generate.stage1.simulator import plan_for, simulate
from generate.stage1.graph_sampler import DEFAULT_PHRASES, PhraseBook, build_feed_graph
from generate.stage1.scenarios import complexity_plan, offered_tools, sample_scenarios
from generate.slots import load_value_pools

REPO = Path(__file__).resolve().parents[3]
TRAVEL = REPO / "datasets" / "travel"
CONFETTI = REPO.parent / "shared" / "external" / "confetti"
ALL_OFFLINE = {"underfilled_parameters": 0.25, "goal_correction": 0.125, "execution_exception": 0.125,
               "follow_up": 0.125, "overfilled_parameters": 0.125, "ambiguous_goal": 0.125, "implicit_goal": 0.125}


def write_pipeline(tmp_path: Path, scenarios: int = 16, complexities: dict[str, float] | None = None,
                   extra: str = "") -> object:
    shares = json.dumps(complexities or ALL_OFFLINE)
    (tmp_path / "pipelines.yaml").write_text(
        "pipelines:\n"
        "  chat:\n"
        "    kind: conversation\n"
        f"    dataset_dir: {tmp_path / 'chat'}\n"
        "    seed: 20250601\n"
        f"    tools: {TRAVEL / 'tools.json'}\n"
        f"    environment: {{kind: python, module: {TRAVEL / 'tools.py'}, workers: 1}}\n"
        f"    conversation: {{offline: true, scenarios: {scenarios}, complexities: {shares}, min_turns: 3, max_turns: 10,"
        f" value_pools: {TRAVEL / 'value_pools.json'}}}\n"
        "    stages:\n"
        "      filter: {grounding: reject, repeat: 2}\n"
        "      export: {split: template, ratios: {train: 0.5, test: 0.5}, formats: [parquet, fcbench, confetti]}\n"
        + extra, encoding="utf-8")
    return load_pipelines(tmp_path / "pipelines.yaml").get_pipeline("chat")


@pytest.fixture(scope="module")
def tools():
    return load_tools_file(TRAVEL / "tools.json")


@pytest.fixture(scope="module")
def environment(tools):
    with PythonEnvironment(TRAVEL / "tools.py", tools, workers=1, timeout=5) as env:
        yield env


@pytest.fixture(scope="module")
def drafted(tmp_path_factory):
    tmp_path = tmp_path_factory.mktemp("chat")
    pipeline = write_pipeline(tmp_path)
    summary = run_stage("stage1", pipeline, offline=True)
    drafts = [item for item in read_samples(pipeline.build_dir / "drafts.jsonl", "fcbench")]
    return pipeline, summary, drafts


# --------------------------------------------------------------------------------- configuration
def test_conversation_settings_are_checked_with_file_and_line(tmp_path):
    with pytest.raises(ConfigError, match=r"pipelines.yaml:\d+: pipelines.chat.conversation.complexities.goal_corection: "
                                          r"unknown conversation type 'goal_corection' \(did you mean 'goal_correction'\?\)"):
        write_pipeline(tmp_path, complexities={"underfilled_parameters": 0.5, "goal_corection": 0.5})
    with pytest.raises(ConfigError, match="shares must sum to 1"):
        write_pipeline(tmp_path, complexities={"underfilled_parameters": 0.5, "follow_up": 0.25})
    (tmp_path / "single.yaml").write_text(f"pipelines:\n  s:\n    dataset_dir: {tmp_path}\n    conversation: {{scenarios: 2}}\n")
    with pytest.raises(ConfigError, match="need `kind: conversation`"):
        load_pipelines(tmp_path / "single.yaml")


def test_complexities_follow_the_declared_distribution_exactly():
    plan = complexity_plan(16, ALL_OFFLINE, seed=3)
    assert Counter(plan) == {"underfilled_parameters": 4, "goal_correction": 2, "execution_exception": 2,
                             "follow_up": 2, "overfilled_parameters": 2, "ambiguous_goal": 2, "implicit_goal": 2}
    assert complexity_plan(7, {"follow_up": 0.5, "goal_correction": 0.5}, 1).count("follow_up") in (3, 4)
    assert len(complexity_plan(7, {"follow_up": 0.5, "goal_correction": 0.5}, 1)) == 7
    assert plan == complexity_plan(16, ALL_OFFLINE, seed=3) and plan != complexity_plan(16, ALL_OFFLINE, seed=4)


def test_scenarios_carry_apis_complexity_time_and_minimum_turns(tools):
    graph = build_feed_graph(tools, load_value_pools(TRAVEL / "value_pools.json"))
    settings = ConversationConfig(scenarios=8, complexities={"follow_up": 0.5, "underfilled_parameters": 0.5},
                                  reference_time="2025-06-01T09:00:00", min_turns=3)
    scenarios = sample_scenarios("chat", settings, graph, seed=5)
    assert len(scenarios) == 8 and all(len(s.complexities) == 1 for s in scenarios)
    for scenario in scenarios:
        assert scenario.required_apis and set(scenario.required_apis) <= {t.name for t in tools}
        assert not set(scenario.required_apis) & set(scenario.optional_apis)
        assert scenario.reference_time in scenario.description and "at least 3 turns" in scenario.description
        assert [t.name for t in offered_tools(scenario, tools)] == [t.name for t in tools if t.name in scenario.apis]


# --------------------------------------------------------------------------------- offline drafts
def test_offline_drafts_play_their_complexity_against_the_environment(drafted):
    pipeline, summary, drafts = drafted
    assert summary.counts["scenarios"] == 16
    assert summary.counts["drafts"] + summary.counts["rejected"] == 16 and summary.counts["drafts"] >= 12
    rejects = [json.loads(line) for line in (pipeline.build_dir / "drafts.rejects.jsonl").read_text().splitlines()]
    assert all(reject["reason"].startswith("stage1.") and reject["detail"] for reject in rejects)  # counted, with why
    for draft in drafts:
        assert isinstance(draft, Sample)
        complexity = draft.meta["conversation"]["scenario"]["complexities"][0]
        assert user_turns(draft.messages) >= 3
        for turn in agent_turns(draft.messages):
            assert turn.dialog_acts and set(turn.dialog_acts) <= set(DIALOG_ACTS)
            assert ("agent_function_calling" in turn.dialog_acts) == bool(turn.steps)
        if complexity == "underfilled_parameters":  # the agent asks before any call
            first_agent = next(m for m in draft.messages if m["role"] == "assistant")
            assert first_agent["dialog_acts"] == ["agent_seek_information"] and "tool_calls" not in first_agent
        if complexity == "execution_exception":  # the API's error is part of the conversation, then the call again
            (failed,) = draft.meta["conversation"]["failed_calls"]
            error = next(m for m in draft.messages if m.get("tool_call_id") == failed)
            assert "error" in json.loads(error["content"])
            assert sum(call.name == next(c.name for c in draft.all_calls() if c.label == failed)
                       for call in draft.all_calls()) == 2
    assert {d.meta["conversation"]["scenario"]["complexities"][0] for d in drafts} == set(ALL_OFFLINE)


def test_offline_drafts_are_byte_identical_for_the_same_seed(drafted, tmp_path):
    pipeline, _, _ = drafted
    again = write_pipeline(tmp_path)
    run_stage("stage1", again, offline=True)
    assert (again.build_dir / "drafts.jsonl").read_bytes() == (pipeline.build_dir / "drafts.jsonl").read_bytes()
    assert (again.build_dir / "scenarios.jsonl").read_bytes() == (pipeline.build_dir / "scenarios.jsonl").read_bytes()


def test_a_simulator_past_the_turn_cap_is_rejected_and_goal_switching_is_not_faked(drafted, tools, environment):
    """The turn cap holds; a goal switch is never played without the plan of the goal switched to."""
    _, _, drafts = drafted
    pools = load_value_pools(TRAVEL / "value_pools.json")
    graph = build_feed_graph(tools, pools)
    phrases = PhraseBook.load(DEFAULT_PHRASES)
    scenarios = sample_scenarios("chat", ConversationConfig(scenarios=2, complexities={"follow_up": 1.0}), graph, seed=1)
    scenario = scenarios[0]
    offered = offered_tools(scenario, tools)
    plan = None
    for attempt in range(12):
        try:
            plan = plan_for(scenario, graph, pools, phrases, environment, offered, f"cap:{attempt}", 6)
            simulate(scenario, plan, environment, f"cap:{attempt}", max_turns=10)
            break
        except ItemRejected:
            plan = None
    assert plan is not None
    with pytest.raises(ItemRejected) as capped:
        simulate(scenario, plan, environment, "cap", max_turns=1)
    assert capped.value.reason == "turn_cap"
    switching = scenario.model_copy(update={"complexities": ["goal_switching"]})
    with pytest.raises(ItemRejected) as unsupported:
        simulate(switching, plan, environment, "x", max_turns=10)
    assert unsupported.value.reason == "no_second_goal"


# --------------------------------------------------------------------------------- stage2 answers
def _answer(draft: Sample, text: str | None = None, verdict: str | None = "accept",
            complexities: list[str] | None = None) -> ConversationAnswer:
    task = conversation_task(draft)
    result = [dict(region) for region in task["predictions"][0]["result"]]
    if text is not None:
        result[0] = {**result[0], "value": {"text": [text]}}
    if complexities is not None:
        result[1] = {**result[1], "value": {"choices": complexities}}
    if verdict:
        result.append(choices_result("verdict", "conversation", [verdict]))
    return ConversationAnswer.from_result(result)


def _codes(correction) -> set[str]:
    return {problem.code.value for problem in correction.problems}


def test_stage2_answer_bad_input_is_a_clear_reason_never_a_cut(drafted, environment):
    _, _, drafts = drafted
    draft = next(d for d in drafts if d.meta["conversation"]["scenario"]["complexities"] == ["underfilled_parameters"])
    env = lambda: environment  # noqa: E731
    accepted = build_conversation(draft, _answer(draft), env)
    assert accepted.problems == [] and accepted.sample is not None
    assert accepted.sample.messages == draft.messages  # responses re-executed give the draft's again
    turns = editable_turns(draft)
    assert _codes(build_conversation(draft, _answer(draft, "[]"), env)) == {"empty_conversation"}
    assert _codes(build_conversation(draft, _answer(draft, "[{\"user\": \"hi\""), env)) == {"bad_json"}
    unknown = json.loads(json.dumps(turns))
    calling = next(t for t in unknown if t.get("calls"))
    first = calling["calls"][0]
    calling["calls"][0] = [{**c, "name": "Book_Spaceship"} for c in first] if isinstance(first, list) \
        else {**first, "name": "Book_Spaceship"}
    problems = build_conversation(draft, _answer(draft, format_turns(unknown)), env).problems
    assert [p.code for p in problems][:1] == [ProblemCode.UNKNOWN_TOOL] and "Book_Spaceship" in problems[0].message
    no_acts = json.loads(json.dumps(turns))
    next(t for t in no_acts if "agent" in t)["acts"] = []
    assert "no_dialog_act" in _codes(build_conversation(draft, _answer(draft, format_turns(no_acts)), env))
    bad_args = json.loads(format_turns(turns).replace('"query": "', '"query": 7, "x": "', 1))
    assert "bad_arguments" in _codes(build_conversation(draft, _answer(draft, json.dumps(bad_args)), env))
    missing = build_conversation(draft, _answer(draft, complexities=["follow_up"]), env)
    assert _codes(missing) == {"complexity_missing"} and "underfilled_parameters" in missing.problems[0].message
    assert _codes(build_conversation(draft, _answer(draft, verdict="reject"), env)) == {"rejected_by_annotator"}
    assert _codes(build_conversation(draft, _answer(draft, verdict=None), env)) == {"no_verdict"}


def test_stage2_edits_re_execute_calls_and_a_failure_needs_the_exception_tag(drafted, environment):
    _, _, drafts = drafted
    draft = next(d for d in drafts if d.meta["conversation"]["scenario"]["complexities"] == ["execution_exception"])
    env = lambda: environment  # noqa: E731
    kept = build_conversation(draft, _answer(draft), env)
    assert kept.problems == [] and kept.sample.meta["conversation"]["failed_calls"] == draft.meta["conversation"]["failed_calls"]
    untagged = build_conversation(draft, _answer(draft, complexities=["execution_exception", "follow_up"]), env)
    assert untagged.problems == []  # ticking more complexities than required is fine
    edited_turns = editable_turns(draft)
    edited_turns[-1] = {"agent": "Bye, and safe travels!", "acts": ["agent_other", "agent_inform_user"]}
    edited = build_conversation(draft, _answer(draft, format_turns(edited_turns), verdict="fix"), env)
    assert edited.problems == [] and edited.sample.messages[-1]["dialog_acts"] == ["agent_other", "agent_inform_user"]
    changes = conversation_changes(draft, edited.sample)
    assert changes["agent_turns_edited"] == 1 and changes["dialog_acts_changed"] == 1 and changes["calls_changed"] == 0
    qa = conversation_qa([(draft, edited.sample, "fix", ["execution_exception"])])
    assert qa["summary"]["verdicts"] == {"fix": 1} and qa["summary"]["complexities_occurring"] == {"execution_exception": 1}
    other = next(d for d in drafts if d.meta["conversation"]["scenario"]["complexities"] == ["follow_up"])
    text = format_turns(editable_turns(other))
    calls = [c for t in editable_turns(other) if t.get("calls") for step in t["calls"]
             for c in (step if isinstance(step, list) else [step])]
    date_call = next((c for c in calls if any(isinstance(v, str) and len(v) == 10 and v[4] == "-" for v in c["arguments"].values())), None)
    if date_call is not None:
        iso = next(v for v in date_call["arguments"].values() if isinstance(v, str) and len(v) == 10 and v[4] == "-")
        broken = build_conversation(other, _answer(other, text.replace(iso, iso[:8] + "32")), env)
        assert {"bad_arguments", "execution_failed"} & _codes(broken)


# ------------------------------------------------------------------------------------ the filter
def test_filter_regrounds_turn_by_turn_and_re_executes_in_order(drafted, environment, tmp_path):
    pipeline, _, drafts = drafted
    good = drafts[0]
    # a value the user only states AFTER the call: ungrounded at that turn
    late = good.model_copy(deep=True, update={"id": "late"})
    first_call_index = next(i for i, m in enumerate(late.messages) if m.get("tool_calls"))
    argument_values = [v for c in late.all_calls()[:1] for v in c.arguments.values() if isinstance(v, str)]
    for message in late.messages[:first_call_index]:
        if message["role"] == "user":
            for value in argument_values:
                message["content"] = message["content"].replace(value, "somewhere")
    late.messages.append({"role": "user", "content": " ".join(argument_values)})
    late.messages.append({"role": "assistant", "content": "Noted.", "dialog_acts": ["agent_other"]})
    # a recorded response that the API does not give
    tampered = good.model_copy(deep=True, update={"id": "tampered"})
    tool_message = [m for m in tampered.messages if m["role"] == "tool"][-1]  # no later call reads it
    tool_message["content"] = json.dumps({"data": []})
    tampered.calls = calls_from_messages(tampered.messages)
    late.calls = calls_from_messages(late.messages)
    # the goal correction's call made with the date the user took back
    corrected = next(d for d in drafts if d.meta["conversation"]["scenario"]["complexities"] == ["goal_correction"])
    taken_back = corrected.model_copy(deep=True, update={"id": "taken_back"})
    question = next(m["content"] for m in taken_back.messages if m["role"] == "assistant" and "you said" in (m["content"] or ""))
    answer = taken_back.messages[taken_back.messages.index(next(m for m in taken_back.messages if m.get("content") == question)) + 1]
    (wrong,), (right,) = dates_spelled_in(question), dates_spelled_in(answer["content"])
    for message in taken_back.messages:
        for call in message.get("tool_calls") or []:
            call["function"]["arguments"] = call["function"]["arguments"].replace(f'"{right}"', f'"{wrong}"')
    taken_back.calls = calls_from_messages(taken_back.messages)
    assert json.dumps(taken_back.messages) != json.dumps(corrected.messages)
    summary = filter_conversations([good, late, tampered, taken_back], environment, pipeline.stages.filter, tmp_path, "test")
    assert summary.counts["passed"] == 1
    rejects = {json.loads(line)["id"]: json.loads(line) for line in (tmp_path / "validated.rejects.jsonl").read_text().splitlines()}
    assert rejects["late"]["reason"] == "turn.stated_later"  # the value is said, but only after the call
    assert "the user states it only after the call" in rejects["late"]["detail"]
    assert rejects["taken_back"]["reason"] == "turn.superseded"  # the call uses the date the user corrected
    assert rejects["tampered"]["reason"] == "reproduction.response_mismatch"
    assert [json.loads(line)["id"] for line in (tmp_path / "validated.jsonl").read_text().splitlines()] == [good.id]


def test_turn_level_cut_gives_both_confetti_sets(drafted):
    _, _, drafts = drafted
    conversation = drafts[0]
    calls = function_calling_samples(conversation)
    acts = response_quality_samples(conversation)
    assert len(calls) == sum(1 for m in conversation.messages if m.get("tool_calls"))
    assert len(acts) == len(agent_turns(conversation.messages))
    for sample in calls:
        cut = len(sample.messages)
        assert conversation.messages[cut].get("tool_calls")  # the history stops right before the calling turn
        assert [c.label for c in sample.calls[0]] == [c["id"] for c in conversation.messages[cut]["tool_calls"]]
        assert all("dialog_acts" not in m for m in sample.messages)
    assert [s.dialog_acts for s in acts] == [t.dialog_acts for t in agent_turns(conversation.messages)]
    stats = conversation_stats(drafts)
    assert stats["conversations"] == len(drafts) and stats["user_turns"] == sum(user_turns(d.messages) for d in drafts)
    assert sum(stats["dialog_acts"].values()) >= stats["agent_turns"]


# ------------------------------------------------------------------------------ the bundled example
def _types(record: dict) -> dict:
    return {key: type(value).__name__ for key, value in record.items()}


def test_bundled_travel_chat_builds_offline_into_both_confetti_sets(tmp_path):
    config = load_pipelines(REPO / "pipelines.yaml").get_pipeline("travel-chat")
    text = (REPO / "pipelines.yaml").read_text().replace("dataset_dir: datasets/travel-chat",
                                                         f"dataset_dir: {tmp_path / 'travel-chat'}")
    text = text.replace("datasets/", f"{REPO}/datasets/")
    (tmp_path / "pipelines.yaml").write_text(text)
    assert config.kind == "conversation"
    result = CliRunner().invoke(app, ["run", "travel-chat", "--offline", "--json", "--file", str(tmp_path / "pipelines.yaml")])
    assert result.exit_code == 0, result.output
    stages = json.loads(result.stdout)["stages"]
    assert stages["stage2"]["counts"]["gold"] >= 10 and stages["stage2"]["reasons"] == {
        "bad_arguments": 1, "rejected_by_annotator": 1}  # the annotator's slip is a reject, not lost
    build = tmp_path / "travel-chat" / "build"
    gold = stages["filter"]["counts"]["passed"]
    assert gold == stages["stage2"]["counts"]["gold"]
    export = build / "export"
    by_split: dict[str, set[str]] = {}
    for set_name in ("function_calling", "response_quality"):
        for shard in sorted((export / set_name).glob("*.parquet")):
            split = shard.name.split("-")[0]
            for row in pq.read_table(shard).to_pylist():
                sample = row_to_sample(row)
                conversation = sample.meta["conversation"]["conversation_id"]
                by_split.setdefault(split, set()).add(conversation)
                if set_name == "response_quality":
                    assert sample.dialog_acts
    assert set(by_split) == {"train", "test"} and not by_split["train"] & by_split["test"]  # never across
    # the one Parquet writer (fcbench.export.parquet): the export folder as a plain mkdir makes it
    # (not mkdtemp's 0700), and shards cut at `shard_bytes` as the single export cuts them
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(export.stat().st_mode) == 0o777 & ~umask
    small = load_pipelines(tmp_path / "pipelines.yaml").get_pipeline("travel-chat")
    small.stages.export.shard_bytes = 5_000
    resharded = export_conversations(build / "validated.jsonl", tmp_path / "resharded", small)
    shards = sorted((tmp_path / "resharded" / "export" / "function_calling").glob("test-*.parquet"))
    assert len(shards) == resharded.splits["test"]["function_calling"]["shards"] > 1
    assert shards[0].name == f"test-00000-of-{len(shards):05d}.parquet"
    assert sum(pq.read_metadata(shard).num_rows for shard in shards) == sum(
        pq.read_metadata(shard).num_rows for shard in (export / "function_calling").glob("test-*.parquet"))
    card = (export / "README.md").read_text()
    for figure in ("| conversations |", "| user turns |", "avg. turns per conversation", "avg. calls per calling turn",
                   "avg. APIs available per turn", "`agent_seek_information`", "config_name: response_quality"):
        assert figure in card
    report = json.loads((build / "report.json").read_text())
    assert report["conversations"]["overall"]["conversations"] == gold  # the report shows Table 2/3 too
    assert "Conversations (CONFETTI Table 2/3)" in (build / "report.html").read_text()
    # a much smaller export does not replace the one in place without --force
    one = tmp_path / "one.jsonl"
    one.write_text((build / "validated.jsonl").read_text().splitlines()[0] + "\n")
    smaller = CliRunner().invoke(app, ["export", "travel-chat", "--input", str(one), "--file", str(tmp_path / "pipelines.yaml")])
    assert smaller.exit_code == 1 and "kept the previous output" in smaller.output
    assert json.loads((export / "statistics.json").read_text())["overall"]["conversations"] == gold
    assert json.loads((build / "export.new" / "statistics.json").read_text())["overall"]["conversations"] == 1
    # annotations made on other drafts (another stage1 run) are refused, unless --allow-stale
    drafts_file = build / "drafts.jsonl"
    lines = drafts_file.read_text().splitlines()
    changed = json.loads(lines[0])
    changed["messages"][0]["content"] += " Please hurry."
    drafts_file.write_text("\n".join([json.dumps(changed), *lines[1:]]) + "\n")
    export_file = REPO / "datasets" / "travel-chat" / "annotations" / "stage2_export.json"
    stale = CliRunner().invoke(app, ["stage2", "pull", "travel-chat", "--from-export", str(export_file), "--json",
                                     "--file", str(tmp_path / "pipelines.yaml")])
    assert stale.exit_code == 0, stale.output
    pulled = json.loads(stale.stdout)
    assert pulled["reasons"]["stale_draft"] == 1 and pulled["counts"]["gold"] == gold - 1
    assert any(changed["id"] == failure["id"] for failure in pulled["failures"])
    # convert --to confetti writes the published shape: same keys and value types as the real files
    published = {kind: json.loads((CONFETTI / f"possible_answer_BFCL_v2_{kind}.json").read_text().splitlines()[0])
                 for kind in ("conversationsclean", "dialogacts")}
    for set_name, kind in (("function_calling", "conversationsclean"), ("response_quality", "dialogacts")):
        out = tmp_path / f"{set_name}.json"
        converted = CliRunner().invoke(app, ["convert", str(export / "fcbench" / set_name / "test.jsonl"), "--from",
                                             "fcbench", "--to", "confetti", "-o", str(out)])
        assert converted.exit_code == 0, converted.output
        records = [json.loads(line) for line in out.read_text().splitlines()]
        assert records and all(_types(record) == _types(published[kind]) for record in records)
        if kind == "dialogacts":
            assert {act for r in records for act in r["ground_truth"]} <= set(DIALOG_ACTS)
            assert all(isinstance(item, str) for r in records for item in r["ground_truth_content"])
        else:
            assert all(isinstance(args, dict) and all(isinstance(v, list) for v in args.values())
                       for r in records for call in r["ground_truth"] for args in call.values())


def test_a_broken_export_is_rejected_task_by_task_never_crashing_the_pull(drafted, environment):
    from annotate.stage2.conversation import process_conversation_tasks

    _, _, drafts = drafted
    task = conversation_task(drafts[0])
    good = {"id": 1, "data": task["data"], "annotations": [{"id": 10, "completed_by": 1, "was_cancelled": False,
            "result": task["predictions"][0]["result"] + [choices_result("verdict", "conversation", ["accept"])]}]}
    skipped = {"id": 2, "data": task["data"], "annotations": [{"id": 11, "completed_by": 1, "was_cancelled": True,
                                                               "result": []}]}
    empty = {"id": 3, "data": task["data"], "annotations": [{"id": 12, "completed_by": 1, "result": []}]}
    no_draft = {"id": 4, "data": {**task["data"], "draft": "gone"}, "annotations": good["annotations"]}
    tasks = [good, skipped, empty, no_draft, {"data": task["data"]}, "not a task", {"id": 5, "data": {"kind": "other"}}]
    outcomes = process_conversation_tasks(tasks, lambda: environment)
    assert [(o.task_id, o.status) for o in outcomes] == [(1, "gold"), (2, "cancelled"), (3, "rejected"),
                                                         (4, "rejected"), (-5, "rejected"), (-6, "rejected")]
    assert [o.problems[0].code.value for o in outcomes[1:]] == ["cancelled", "empty_submission", "missing_draft",
                                                                "malformed_task", "malformed_task"]
