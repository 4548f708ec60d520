"""What every command group of the `build-dataset` command line shares: the Typer app, the
one-line user-error convention, JSON printing and loading a pipeline with its flags.

Conventions: every command has an example in its help; a user error is one line on stderr and
exit code 1 (no traceback); `--json` prints only JSON on stdout. Commands are thin: they parse
options, call the module that owns the concept, and print.
"""

from __future__ import annotations

import functools
import json
import sys
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Annotated, Any, Callable, Optional

import click
import typer
from typer.core import TyperGroup
from rich.console import Console
from rich.table import Table

from fcbench.errors import UserError

# `--help` lists commands in this order (pipeline order, then data, scoring, servers); Typer would
# put command groups (stage2, stage3, studio) after plain commands.
COMMAND_ORDER = ["stage1", "stage2", "stage3", "filter", "export", "report", "run",
                 "convert", "validate", "stats", "lint-tools", "execute", "pipelines", "new",
                 "score", "evaluate", "studio", "mock-llm"]


class _PipelineOrder(TyperGroup):
    def list_commands(self, ctx: click.Context) -> list[str]:
        names = super().list_commands(ctx)
        return sorted(names, key=lambda name: COMMAND_ORDER.index(name) if name in COMMAND_ORDER else len(COMMAND_ORDER))


TOP_LEVEL_EXAMPLES = """Examples:

  build-dataset run travel --offline   (every automatic stage on the bundled example)

  build-dataset pipelines --check   (check every declared pipeline before running anything)

  build-dataset convert ../shared/external/nestful/toy_data.jsonl --from nestful --to fcbench -o toy.jsonl

  build-dataset score --metric nestful --predictions ../shared/external/nestful/predictions/nestful_3-qwen3-8b-8bit-icl.jsonl"""

app = typer.Typer(
    name="build-dataset",
    help="Build function-calling benchmarks stage by stage, convert published formats, and score models.",
    epilog=TOP_LEVEL_EXAMPLES,
    cls=_PipelineOrder,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    rich_markup_mode="rich",
)
console = Console()

# Whether `--max-bad-share` was given on this command line: then it wins over a pipeline's
# `max_bad_line_share` (fcbench.jsonl's bad-line policy).
_bad_share_given = False
_memory_ceiling_given = False


@app.callback()
def _root(max_bad_share: float = typer.Option(
        None, "--max-bad-share", min=0.0, max=1.0,
        help="Every reader skips and reports a bad line (file:line); a file with a larger share of bad lines than "
             "this is refused as a whole (default: the pipeline's max_bad_line_share, else 0.5; 1 never refuses). "
             "Give it before the command: build-dataset --max-bad-share 1 convert ..."),
          memory_ceiling_mb: int = typer.Option(
        None, "--memory-ceiling-mb", min=256, max=1_048_576,
        help="A stage whose resident memory passes this many MB stops with exit 1, replacing no output "
             "(default: the pipeline's memory_ceiling_mb, else 2048). Give it before the command.")) -> None:
    from fcbench.jsonl import DEFAULT_MAX_BAD_SHARE, set_bad_line_policy
    from fcbench.runtime.memory import DEFAULT_CEILING_MB, set_memory_ceiling

    global _bad_share_given, _memory_ceiling_given
    _bad_share_given = max_bad_share is not None
    set_bad_line_policy(DEFAULT_MAX_BAD_SHARE if max_bad_share is None else max_bad_share)
    _memory_ceiling_given = memory_ceiling_mb is not None
    set_memory_ceiling(DEFAULT_CEILING_MB if memory_ceiling_mb is None else memory_ceiling_mb)


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


FORCE_HELP = ("Replace the stage's output even when the new result has no samples or fewer than min_output_share "
              "of the previous one (otherwise the previous output is kept and the new one written beside it).")
BATCH_HELP = "Send this stage's LLM requests through the OpenAI Batch API (llm.mode: batch): half the price, answers within 24 h."


# The arguments and options many commands share, each declared once and used as
# `file: PipelinesFileOption = PIPELINES_FILE`: a flag means the same thing, with the same help,
# on every command.
PIPELINES_FILE = Path("pipelines.yaml")
PipelineArgument = Annotated[str, typer.Argument(help="A pipeline declared in pipelines.yaml.")]
PipelinesFileOption = Annotated[Path, typer.Option("--file", help="The pipelines file.")]
JsonOption = Annotated[bool, typer.Option("--json", help="Print the result as JSON on stdout, and nothing else there.")]
ForceOption = Annotated[bool, typer.Option("--force", help=FORCE_HELP)]
BatchOption = Annotated[bool, typer.Option("--batch", help=BATCH_HELP)]
FromExportOption = Annotated[Optional[Path], typer.Option(
    "--from-export", help="Read a Label Studio JSON export file instead of the server (no server needed).")]
SendBackOption = Annotated[bool, typer.Option(
    "--send-back", help="Show each failing task's problems to its annotators on the labeling page (needs the server).")]


def _load_pipeline(name: str, file: Path, record: bool = False, batch: bool = False):
    from fcbench.config import load_pipelines

    pipeline = load_pipelines(file).get_pipeline(name)
    if not _bad_share_given:
        from fcbench.jsonl import set_bad_line_policy

        set_bad_line_policy(pipeline.max_bad_line_share)
    if not _memory_ceiling_given:
        from fcbench.runtime.memory import set_memory_ceiling

        set_memory_ceiling(pipeline.memory_ceiling_mb)
    if batch:
        if pipeline.llm is None:
            raise UserError(f"pipeline {name!r}: --batch needs an `llm:` block in {file}")
        pipeline.llm.mode = "batch"
    if record:
        from fcbench.environments.from_config import with_recording

        with_recording(pipeline)
    return pipeline


RECORD_HELP = ("http environment: call the server (base_url) and record every response into the store; "
               "only calls not recorded yet are sent. Default: replay from the store, offline.")


CONNECTION_HELP = ("The server is the local studio (build-dataset studio start), or FCBENCH_LS_URL with the token in "
                   "FCBENCH_LS_TOKEN or a 0600 file named by FCBENCH_LS_TOKEN_FILE.")


def _count_table(title: str, header: str, counts: dict[Any, int]) -> Table:
    table = Table(title=title)
    table.add_column(header)
    table.add_column("samples", justify="right")
    for key, count in counts.items():
        table.add_row(str(key), str(count))
    return table


TOP_REASONS = 3


def most_common_reasons(reasons: Mapping[str, int] | Iterable[str], top: int = TOP_REASONS) -> list[tuple[str, int]]:
    """The `top` most common reasons with their counts (ties in name order, so the output is stable)."""
    counts = Counter(reasons) if not isinstance(reasons, Mapping) else Counter(dict(reasons))
    return sorted(counts.items(), key=lambda item: (-item[1], item[0]))[:top]


def first_details(rejects_file: str | Path | None, reasons: Iterable[str]) -> dict[str, str]:
    """The first `detail` a rejects file gives for each of `reasons` (a stage's summary counts
    reasons by code; the file says what happened), read line by line and only until all are found."""
    from fcbench.jsonl import iter_json_lines

    wanted, found = set(reasons), {}
    if not rejects_file or not Path(rejects_file).is_file():
        return found
    for line in iter_json_lines(rejects_file):
        value = line.value if isinstance(line.value, dict) else {}
        reason, detail = value.get("reason"), value.get("detail")
        if reason in wanted and reason not in found and isinstance(detail, str) and detail:
            found[reason] = detail
            if len(found) == len(wanted):
                break
    return found


def exit_if_nothing_kept(total: int, kept: int, what: str, outcome: str,
                         reasons: Mapping[str, int] | Iterable[str] = (),
                         details: Mapping[str, str] | None = None) -> None:
    """A command whose every item was rejected or failed exits 1 (after printing its results): a
    run that produced nothing usable must not look like a success to a script. It says why on
    stderr: the most common reasons with their counts (and an example of each when the reason is a
    code), since "every item was rejected" alone sends the user to the rejects file for a sentence
    like "looks like nestful: use --from nestful"."""
    if total > 0 and kept == 0:
        top = most_common_reasons(reasons)
        lines = [f"error: every {what} ({total}) {outcome}" + ("; the most common reasons:" if top else "")]
        for reason, count in top:
            example = (details or {}).get(reason)
            lines.append(f"  {count:>6}  {reason}" + (f": {example}" if example and example not in reason else ""))
        print("\n".join(lines), file=sys.stderr)
        raise typer.Exit(1)
