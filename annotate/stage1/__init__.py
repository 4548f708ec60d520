"""STAGE stage1's human step for `kind: conversation` pipelines: the sampled scenarios reviewed in
Label Studio before any conversation is drafted (`review`: `build-dataset scenarios push|pull`)."""
