"""The `build-dataset` command line (Typer), a thin layer over the stages and tools: one module per
command group, listed in `--help` in pipeline order.

- `build`: stage1, stage2, stage3, filter, export, report, run
- `data`: convert, validate, stats, lint-tools, execute, pipelines, new
- `scoring`: score, evaluate
- `servers`: studio, mock-llm

Conventions (fcbench.cli.common): every command has an example in its help; a user error is one
line on stderr and exit code 1 (no traceback); `--json` prints only JSON on stdout.
"""

from fcbench.cli import build, data, scoring, servers  # noqa: F401 (importing registers the commands, in this order)
from fcbench.cli.common import app

__all__ = ["app"]
