"""The options many commands share are declared once (fcbench/cli/common.py) and mean the same
thing, with the same help, on every command that takes them."""

from __future__ import annotations

import ast
from pathlib import Path

from typer.main import get_command

from fcbench.cli import app

CLI = Path(__file__).resolve().parents[3] / "fcbench" / "cli"
SHARED = ("--file", "--json", "--from-export", "--send-back")
# a flag of the same name with another meaning on one command, declared there on purpose
OWN_MEANING = {("data.py", "--force"): "`new`: write over an existing datasets/NAME folder",
               ("scoring.py", "--batch"): "`score`: only the confetti judge's requests"}


def _declared_flags() -> list[tuple[str, str]]:
    found = []
    for path in sorted(CLI.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call) and ast.unparse(node.func) == "typer.Option":
                for argument in node.args:
                    if isinstance(argument, ast.Constant) and str(argument.value).startswith("--"):
                        found.append((path.name, argument.value))
    return found


def test_shared_options_are_declared_only_in_common():
    declared = _declared_flags()
    assert ("common.py", "--json") in declared  # the walk sees the declarations
    elsewhere = [(module, flag) for module, flag in declared
                 if module != "common.py" and flag in (*SHARED, "--force", "--batch") and (module, flag) not in OWN_MEANING]
    assert not elsewhere, f"declare these once in fcbench/cli/common.py: {elsewhere}"


def _commands(command, prefix=()):
    for name, sub in getattr(command, "commands", {}).items():
        yield from _commands(sub, (*prefix, name))
    if not getattr(command, "commands", None):
        yield " ".join(prefix), command


def test_every_command_shows_one_help_per_shared_option():
    helps: dict[str, set[str]] = {}
    users: dict[str, int] = {}
    for name, command in _commands(get_command(app)):
        for parameter in command.params:
            for flag in parameter.opts:
                if flag in SHARED:
                    helps.setdefault(flag, set()).add(parameter.help)
                    users[flag] = users.get(flag, 0) + 1
    assert users["--json"] >= 20 and users["--file"] >= 15  # many commands, one declaration
    assert all(len(texts) == 1 for texts in helps.values()), helps
