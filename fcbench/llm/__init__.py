"""The LLM layer shared by the generation stages, the filter's semantic check and evaluation: the
openai-SDK client with its request cache and accounting, prompt files, and a local OpenAI-compatible
mock server for tests and dry runs."""
