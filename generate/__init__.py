"""LLM stages: stage1 coarse generation and stage3 generalization (see DESIGN.md)."""
