"""STAGE stage1, coarse generation: drafts from the LLM or the graph sampler (`single`), and
conversations for `kind: conversation` pipelines (`conversation`)."""
