"""One judge mechanism: every LLM judgement of fcbench (the filter's semantic check, ComplexEval's
judges, CONFETTI's classifier and validity judge) is an `LLMJudge` (render -> ask -> read ->
JudgeError; cached; fail closed), asked concurrently or, from synchronous code, through the one
`JudgeSession`; no judge keeps a loop, a thread or a request path of its own."""

from __future__ import annotations

import ast
import asyncio
import json
from pathlib import Path

import pytest

from fcbench.config import LLMConfig
from fcbench.errors import JudgeError
from fcbench.llm.client import ParseError
from fcbench.llm.judge import JudgeSession
from fcbench.llm.mock_server import MockLLMServer, last_user_text

REPO = Path(__file__).resolve().parents[3]
JUDGES = ("fcbench/checks/semantic.py", "fcbench/evaluate/judges_complexeval.py", "fcbench/evaluate/judges_confetti.py")


@pytest.mark.parametrize("module", JUDGES)
def test_every_judge_asks_through_llm_judge_and_keeps_no_loop_or_thread(module):
    tree = ast.parse((REPO / module).read_text())
    names = {node.id for node in ast.walk(tree) if isinstance(node, ast.Name)}
    attributes = {node.attr for node in ast.walk(tree) if isinstance(node, ast.Attribute)}
    assert names & {"LLMJudge", "JudgeSession"}, module
    private = {"Thread", "new_event_loop", "run_coroutine_threadsafe", "complete", "ChatRequest"} & (names | attributes)
    assert not private, f"{module} asks by itself: {private}"


def _read_verdict(answer):
    if answer.get("verdict") not in ("yes", "no"):
        raise ParseError('expected {"verdict": "yes" or "no"}')
    return answer["verdict"] == "yes"


def test_a_verdict_is_asked_once_cached_and_an_unreadable_one_fails_closed(tmp_path):
    prompt = tmp_path / "judge.txt"
    prompt.write_text("Is {{thing}} a fruit? Answer as JSON.")
    asked: list[str] = []

    def responder(body, call_index):
        text = last_user_text(body["messages"])
        asked.append(text)
        if "stone" in text:
            return {"content": "I am not sure"}  # never the JSON asked for
        return {"content": json.dumps({"verdict": "yes" if "apple" in text else "no"})}

    with MockLLMServer(responder=responder) as server:
        config = LLMConfig(model="judge", base_url=server.base_url, max_retries=0)
        with JudgeSession(config, tmp_path / "judges.sqlite", environ={}) as session:
            judge = session.judge(prompt, _read_verdict)

            async def inside_a_running_loop():  # as `evaluate` calls a scorer: the session still answers
                return session.ask(judge, {"thing": "an apple"})

            assert asyncio.run(inside_a_running_loop()) is True
            verdicts = session.ask_all(judge, [{"thing": "an apple"}, {"thing": "a stone"}, {"thing": "a chair"}])
            assert verdicts[0] is True and verdicts[2] is False
            assert isinstance(verdicts[1], JudgeError) and verdicts[1].raw_text == "I am not sure"
            assert session.ask(judge, {"thing": "a stone"}).reason == verdicts[1].reason  # remembered: not asked again
        assert sorted(text.split("Is ")[1].split(" a fruit")[0] for text in asked) == ["a chair", "a stone", "a stone", "an apple"]  # the retry of the unreadable one may come after the others
        # a new session on the same cache pays nothing for the readable verdicts; the unreadable one is asked again
        asked.clear()
        with JudgeSession(config, tmp_path / "judges.sqlite", environ={}) as session:
            judge = session.judge(prompt, _read_verdict)
            assert session.ask_all(judge, [{"thing": "an apple"}, {"thing": "a chair"}]) == [True, False]
            assert isinstance(session.ask(judge, {"thing": "a stone"}), JudgeError)
        assert all("a stone" in text for text in asked) and len(asked) == 2


def test_a_judge_reads_either_the_json_object_or_the_completion(tmp_path):
    from fcbench.llm.judge import LLMJudge, load_prompt

    prompt = tmp_path / "p.txt"
    prompt.write_text("{{x}}")
    with pytest.raises(ValueError, match="`read`.*or `parse`"):
        LLMJudge(None, load_prompt(prompt))
    with pytest.raises(ValueError):
        LLMJudge(None, load_prompt(prompt), _read_verdict, parse=lambda completion: completion)
