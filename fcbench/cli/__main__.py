"""`python -m fcbench.cli`: the same command line as `build-dataset` (background processes such as
the webhook receiver are started this way, with the interpreter that started them)."""

from fcbench.cli import app

app()
