"""Every example printed by `build-dataset ... --help` runs as printed from the repository root.

The examples run, in the order `--help` prints them, in a copy of the repository (with `shared/`
beside it, as on a developer's machine), so the ones that write build files do not touch this
checkout. `evaluate` examples reach a model through OPENAI_BASE_URL, set to a local mock server
as a user would export it. The few examples that need a server this test does not start are named
below with the reason; the test fails if an example is neither run nor named (so a new example
cannot be skipped silently), and if a named one no longer exists.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from typer.main import get_command

from fcbench.cli import app
from fcbench.llm.mock_server import MockLLMServer

REPO = Path(__file__).resolve().parents[3]
BUILD_DATASET = Path(sys.executable).parent / "build-dataset"

NOT_RUN = {
    "build-dataset studio start --port 8089": "starts Label Studio (tests/annotate/studio/test_ls_server.py starts it for real)",
    "build-dataset studio start --database postgresql --dir /srv/fcbench-studio": "starts Label Studio on PostgreSQL "
    "(tests/annotate/studio/test_ls_team.py)",
    "build-dataset studio webhook travel": "needs a running Label Studio (tests/annotate/test_ls_webhook.py)",
    "build-dataset studio start --webhook travel": "starts Label Studio and the receiver (test_ls_webhook.py)",
    "build-dataset stage2 push travel": "needs a running Label Studio (tests/annotate/studio/test_ls_server.py)",
    "build-dataset stage2 push travel --annotators 5 --overlap 2": "needs a running Label Studio (test_ls_team.py)",
    "build-dataset stage2 pull travel --send-back": "needs a running Label Studio (tests/annotate/studio/test_ls_server.py)",
    "build-dataset scenarios push travel-chat-all": "needs a running Label Studio "
    "(tests/annotate/stage1/test_ls_scenario_review.py)",
    "build-dataset scenarios pull travel-chat-all --send-back": "needs a running Label Studio "
    "(tests/annotate/stage1/test_ls_scenario_review.py)",
    "build-dataset stage3 push travel --annotators": "needs a running Label Studio (tests/annotate/studio/test_ls_server.py)",
    "build-dataset stage3 pull travel --annotators --send-back": "needs a running Label Studio (test_ls_server.py)",
    "build-dataset mock-llm --port 8765 --latency-ms 200": "serves until stopped (tests/fcbench/llm/test_mock_server.py)",
    "build-dataset mock-llm --script tests/data/mock_replies.jsonl": "serves until stopped (test_mock_server.py)",
    "build-dataset evaluate travel --model Qwen/Qwen2.5-7B-Instruct --base-url http://127.0.0.1:8000/v1 --limit 50 "
    "--json": "names a vLLM server on port 8000 (the other evaluate examples run against the mock)",
    "build-dataset score --metric confetti --gold ../shared/external/confetti/possible_answer_BFCL_v2_dialogacts.json "
    "--from confetti --predictions tests/data/predictions/confetti_dialogacts_responses.jsonl --llm-model gpt-4o-mini":
    "needs a judge model that answers the prompts (this test's mock echoes them, every verdict unreadable: exit 1); "
    "tests/fcbench/evaluate/test_confetti_judges.py runs the same command against the mock with scripted verdicts",
}


def help_examples() -> list[str]:
    """Every `build-dataset ...` line of every command's help epilog, comments in parentheses cut."""
    found: list[str] = []

    def walk(command) -> None:
        for line in (command.epilog or "").split("\n"):
            text = re.sub(r"^Examples?:\s*", "", line.strip())
            if text.startswith("build-dataset "):
                found.append(re.split(r"\s{2,}\(", text)[0].strip())
        if hasattr(command, "list_commands"):
            import click

            context = click.Context(command)
            for name in command.list_commands(context):
                walk(command.get_command(context, name))

    walk(get_command(app))
    return found


def _copy_repository(tmp_path: Path) -> Path:
    copy = tmp_path / "repo"
    ignored = shutil.ignore_patterns(".git", ".venv", ".venv-studio", ".prism", "build", "__pycache__", "*.egg-info",
                                     ".hypothesis", ".ruff_cache", ".pytest_cache", "node_modules")
    shutil.copytree(REPO, copy, ignore=ignored)
    (tmp_path / "shared").symlink_to(REPO.parent / "shared")
    return copy


def test_every_help_example_is_run_or_named_with_its_reason():
    examples = help_examples()
    assert len(examples) >= 30
    assert set(NOT_RUN) <= set(examples), "a named example is no longer printed by --help"


def test_every_help_example_runs_as_printed(tmp_path):
    copy = _copy_repository(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    failures, ran = [], 0
    with MockLLMServer() as server:
        environ = {**os.environ, "HOME": str(home), "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-mock",
                   "COLUMNS": "200"}
        for example in help_examples():
            if example in NOT_RUN:
                continue
            arguments = shlex.split(example)[1:]  # as a shell reads it (`new --describe "A retail bank ..."`)
            done = subprocess.run([str(BUILD_DATASET), *arguments], cwd=copy, env=environ, capture_output=True,
                                  text=True, timeout=600)
            ran += 1
            if done.returncode != 0 or "Traceback" in done.stderr:
                failures.append(f"{example}\n  exit {done.returncode}: {done.stderr.strip()[-400:]}")
    assert failures == []
    assert ran >= 25 and server.stats.as_dict()["chat_requests"] > 0  # the evaluate examples did reach the mock
