"""STAGE stage3, generalization: query variants of every gold template, arguments refilled."""
