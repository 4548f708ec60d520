"""fcbench: build and score function-calling benchmarks for LLMs."""

__version__ = "0.1.0"
