"""Label Studio stages: push/pull, task <-> sample conversion, stage2 and junior filling."""
