"""The `build-dataset` command line (Typer).

Conventions: every command has an example in its help; a user error is one line on stderr and
exit code 1 (no traceback); `--json` prints only JSON on stdout. Commands are thin: they parse
options, call the module that owns the concept, and print.
"""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path
from typing import Any, Callable, Optional

import typer
from pydantic import ValidationError
from rich.console import Console
from rich.table import Table

from fcbench.errors import UserError

app = typer.Typer(
    name="build-dataset",
    help="Build function-calling benchmarks stage by stage, convert published formats, and score models.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode="rich",
)
console = Console()


def _fail(message: str) -> None:
    print(f"error: {message}", file=sys.stderr)
    raise typer.Exit(1)


def user_errors(func: Callable[..., Any]) -> Callable[..., Any]:
    """Turn the errors a user can cause into one stderr line and exit 1."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except UserError as exc:
            _fail(str(exc))
        except FileNotFoundError as exc:
            _fail(f"{exc.filename}: no such file")
        except IsADirectoryError as exc:
            _fail(f"{exc.filename}: is a directory, expected a file")
        except UnicodeDecodeError:
            _fail("input is not UTF-8 text")

    return wrapper


def print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, ensure_ascii=False, indent=2) + "\n")


# --------------------------------------------------------------------------------------------- validate
@app.command(epilog="Example:  build-dataset validate datasets/travel/build/drafts.jsonl")
@user_errors
def validate(
    file: Path = typer.Argument(..., help="A canonical fcbench JSONL file."),
    as_json: bool = typer.Option(False, "--json", help="Print the problems as JSON."),
) -> None:
    """Check every line of a canonical JSONL file against the sample schema and its cross-field
    rules; print each problem as FILE:LINE: field: message and exit 1 if there is any."""
    from fcbench.validate import validate_file

    if not file.is_file():
        raise UserError(f"{file}: no such file")
    problems = list(validate_file(file))
    if as_json:
        print_json({"file": str(file), "ok": not problems,
                    "problems": [{"line": p.line_no, "field": p.field, "message": p.message} for p in problems]})
    else:
        for problem in problems:
            print(problem.render(file))
        if not problems:
            print(f"{file}: all lines valid")
    if problems:
        raise typer.Exit(1)


# --------------------------------------------------------------------------------------------- convert
@app.command(
    epilog=(
        "Examples:\n\n"
        "  build-dataset convert BFCL_v4_simple_python.json --from bfcl "
        "--answers possible_answer_BFCL_v4_simple_python.json --to fcbench -o simple.jsonl\n\n"
        "  build-dataset convert simple.jsonl --from fcbench --to bfcl -o q.json --answers-out a.json"
    )
)
@user_errors
def convert(
    input_file: Path = typer.Argument(..., metavar="IN", help="The file to convert."),
    from_format: str = typer.Option(..., "--from", help="fcbench, complexfuncbench, nestful, callnavi, bfcl, confetti."),
    to_format: str = typer.Option(..., "--to", help="Same choices as --from."),
    output: Path = typer.Option(..., "-o", "--output", help="Where to write the converted file."),
    answers: Optional[Path] = typer.Option(None, "--answers", help="BFCL possible-answer file to read."),
    answers_out: Optional[Path] = typer.Option(None, "--answers-out", help="BFCL possible-answer file to write."),
    tools: Optional[Path] = typer.Option(None, "--tools", help="NESTful v1 spec or CallNavi APISchema file to read."),
    tools_out: Optional[Path] = typer.Option(None, "--tools-out", help="NESTful v1 spec file to write."),
    nestful_version: Optional[str] = typer.Option(None, "--nestful-version", help="v1 or v2 when writing NESTful."),
    as_json: bool = typer.Option(False, "--json", help="Print a JSON summary."),
) -> None:
    """Convert a benchmark file between formats, through the canonical sample. Items that cannot
    be converted go to OUT.rejects.jsonl with their reason; what the target format cannot express
    is reported as one warning line with a count."""
    from fcbench.convert import convert_file
    from fcbench.formats import FormatOptions

    options = FormatOptions(answers=answers, answers_out=answers_out, tools=tools, tools_out=tools_out,
                            nestful_version=nestful_version)
    result = convert_file(input_file, from_format, to_format, output, options)
    if as_json:
        print_json(result.as_dict())
        return
    for warning in result.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    print(f"{result.converted} converted, {result.rejected} rejected -> {output}")
    if result.rejected:
        print(f"rejects with reasons: {result.rejects_file}")
