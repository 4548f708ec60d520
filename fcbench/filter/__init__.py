"""STAGE filter: candidates -> validated + rejects (single-call-path samples in `single`,
`kind: conversation` pipelines in `conversation`)."""
