"""Every `build-dataset` command the README and docs/ show runs as printed from the repository root.

The commands of every fenced code block of README.md and docs/*.md run in order (README first,
then the pages as README links them), in a copy of the repository with `shared/` beside it, as
a reader would type them. OPENAI_BASE_URL points at the local mock LLM, whose answers no judge or
check can use: an unmarked command that quietly asks a model fails here. A block that needs what this test does not start (a Label Studio server, a model, your own
API) says so on the line before it, `<!-- needs: what (where it is tested) -->`: its commands are
not run, but their command path and every option they give must exist (`--help` of that command
parses). So a renamed option or command in a doc fails here, and no command is skipped silently.

Also here: the links between the pages resolve (file and heading), the README keeps the two
set-up commands CI and the brief name, and the reference lists exactly the configuration keys
`fcbench/config.py` declares.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import typing
from dataclasses import dataclass
from pathlib import Path

import click
from pydantic import BaseModel
from typer.main import get_command

from fcbench.cli import app
from fcbench.config import PipelineConfig
from fcbench.llm.mock_server import MockLLMServer

REPO = Path(__file__).resolve().parents[1]
PAGES = ["README.md", "docs/researcher.md", "docs/annotation.md", "docs/evaluator.md", "docs/reference.md"]
NEEDS = re.compile(r"^<!--\s*needs:\s*(\S.*?)\s*-->$")
SETUP_COMMANDS = [
    "python3 -m venv .venv && .venv/bin/pip install -q -e '.[test]' && .venv/bin/build-dataset run travel --offline",
    "bash .ci/run",
]


@dataclass(frozen=True)
class DocCommand:
    page: str
    line: int
    text: str  # as the reader types it, continuation lines joined, comment cut
    needs: str | None  # why it is not run here, from the marker before its block

    @property
    def words(self) -> list[str]:
        return shlex.split(self.text)


def fenced_blocks(page: str) -> list[tuple[int, str | None, list[str]]]:
    """(line of the opening fence, the needs marker before it or None, the block's lines)."""
    lines = (REPO / page).read_text(encoding="utf-8").split("\n")
    blocks, index = [], 0
    while index < len(lines):
        if lines[index].startswith("```"):
            end = next(i for i in range(index + 1, len(lines)) if lines[i].startswith("```"))
            marker = NEEDS.match(lines[index - 1].strip()) if index else None
            blocks.append((index + 1, marker.group(1) if marker else None, lines[index + 1:end]))
            index = end + 1
        else:
            index += 1
    return blocks


def doc_commands(pages: list[str] = PAGES) -> list[DocCommand]:
    found = []
    for page in pages:
        for fence_line, needs, block in fenced_blocks(page):
            joined = re.sub(r"\\\n\s*", " ", "\n".join(block))
            for offset, line in enumerate(joined.split("\n")):
                for part in line.split(" && "):  # `a && b`: both are commands the reader runs
                    words = shlex.split(part, comments=True)
                    if words[:1] == ["build-dataset"]:
                        found.append(DocCommand(page, fence_line + 1 + offset, shlex.join(words), needs))
    return found


def resolve(words: list[str]) -> tuple[list[click.Command], list[str]]:
    """The chain of click commands `build-dataset WORDS...` reaches, and the options it gives."""
    command: click.Command = get_command(app)
    chain, options = [command], []
    for word in words[1:]:
        if word.startswith("-"):
            options.append(word.split("=", 1)[0])
        elif hasattr(command, "list_commands") and word in command.list_commands(click.Context(command)):
            command = command.get_command(click.Context(command), word)
            chain.append(command)
    return chain, options


def test_every_doc_command_names_a_command_and_options_that_exist():
    commands = doc_commands()
    assert len(commands) >= 20 and {command.page for command in commands} >= set(PAGES[1:])
    runner_args = []
    for command in commands:
        chain, options = resolve(command.words)
        assert len(chain) >= 2 or command.words[1:] == ["--help"], f"{command.page}:{command.line}: no subcommand"
        known = {"--help"} | {opt for link in chain for param in link.params for opt in (*param.opts, *param.secondary_opts)}
        unknown = [option for option in options if option not in known]
        assert unknown == [], f"{command.page}:{command.line}: {command.text}: unknown options {unknown}"
        runner_args.append([link.name for link in chain[1:]])
    from typer.testing import CliRunner

    for path in {tuple(arguments) for arguments in runner_args}:
        shown = CliRunner().invoke(app, [*path, "--help"], env={"COLUMNS": "200"})
        assert shown.exit_code == 0 and "Usage" in shown.output, (path, shown.output[-400:])


def test_every_needs_marker_says_why_and_marks_commands():
    marked = [(page, line, needs, block) for page in PAGES for line, needs, block in fenced_blocks(page) if needs]
    assert marked, "the docs show Label Studio and model commands: they must be marked"
    for page, line, needs, block in marked:
        assert len(needs) > 10, f"{page}:{line}: say what the block needs and where it is tested"
        assert any(row.strip().startswith("build-dataset") for row in block), f"{page}:{line}: a marker without commands"


def _copy_repository(tmp_path: Path) -> Path:
    copy = tmp_path / "repo"
    ignored = shutil.ignore_patterns(".git", ".venv", ".venv-studio", ".prism", ".mcp", "build", "__pycache__",
                                     "*.egg-info", ".hypothesis", ".ruff_cache", ".pytest_cache", "node_modules")
    shutil.copytree(REPO, copy, ignore=ignored)
    (tmp_path / "shared").symlink_to(REPO.parent / "shared")
    return copy


def test_every_doc_command_runs_as_printed(tmp_path):
    copy = _copy_repository(tmp_path)
    home = tmp_path / "home"
    home.mkdir()
    runnable = [command for command in doc_commands() if command.needs is None]
    assert len(runnable) >= 15
    failures, ran = [], set()
    with MockLLMServer() as server:
        environ = {**os.environ, "HOME": str(home), "OPENAI_BASE_URL": server.base_url, "OPENAI_API_KEY": "sk-mock",
                   "COLUMNS": "200"}
        for command in runnable:
            if command.text in ran:  # shown twice (a guide and the reference): once is the proof
                continue
            ran.add(command.text)
            # `python -m fcbench.cli` from the copy: the copy's fcbench, as its own `build-dataset` would be
            done = subprocess.run([sys.executable, "-m", "fcbench.cli", *command.words[1:]], cwd=copy, env=environ,
                                  capture_output=True, text=True, timeout=600)
            if done.returncode != 0 or "Traceback" in done.stderr:
                failures.append(f"{command.page}:{command.line}: {command.text}\n  exit {done.returncode}: "
                                f"{done.stderr.strip()[-400:]}")
    assert failures == []
    assert (copy / "datasets/travel/build/export").is_dir()  # the stages the researcher's guide shows did build


def _slug(heading: str) -> str:
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", ""))
    return text.replace(" ", "-")


def test_links_between_the_pages_resolve():
    for page in PAGES:
        text = (REPO / page).read_text(encoding="utf-8")
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"https?:", target):
                continue
            path, _, anchor = target.partition("#")
            file = (REPO / page).parent / path if path else REPO / page
            assert file.exists(), f"{page}: link to {target}: no such file"
            if anchor:
                headings = {_slug(line.lstrip("#")) for line in file.read_text(encoding="utf-8").split("\n")
                            if line.startswith("#")}
                assert anchor in headings, f"{page}: link to {target}: no such heading"


def test_readme_is_short_and_keeps_the_two_setup_commands():
    lines = (REPO / "README.md").read_text(encoding="utf-8").split("\n")
    assert len(lines) <= 130
    first_block = fenced_blocks("README.md")[0][2]
    assert first_block == SETUP_COMMANDS
    assert (REPO / ".ci/run").is_file()


def _config_keys(model: type[BaseModel], prefix: str = "") -> set[str]:
    keys = set()
    for name, field in model.model_fields.items():
        kinds = (field.annotation, *typing.get_args(field.annotation))
        nested = [kind for kind in kinds if isinstance(kind, type) and issubclass(kind, BaseModel)]
        by_name = [value for kind in kinds if typing.get_origin(kind) is dict
                   for value in typing.get_args(kind)[1:] if isinstance(value, type) and issubclass(value, BaseModel)]
        if by_name:  # a mapping of names to blocks (environment.servers): NAME stands for any name
            keys |= _config_keys(by_name[0], f"{prefix}{name}.NAME.")
        elif nested and name != "judge":  # judge: the llm block again
            keys |= _config_keys(nested[0], f"{prefix}{name}.")
        else:
            keys.add(prefix + name)
    return keys


def test_the_reference_lists_every_configuration_key():
    text = (REPO / "docs/reference.md").read_text(encoding="utf-8")
    section = text.split("## Configuration keys", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"^\| `([\w.]+)` \|", section, re.M))
    declared = _config_keys(PipelineConfig) - {"judge"}  # judge: an llm block, said once above the table
    assert listed == declared, f"missing: {sorted(declared - listed)}, not in fcbench/config.py: {sorted(listed - declared)}"

