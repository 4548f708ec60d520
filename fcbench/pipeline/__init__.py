"""Above the stages: running a declared pipeline's stages (`run`), checking its whole chain before
anything runs (`check`), and scaffolding a new one (`scaffold`)."""
