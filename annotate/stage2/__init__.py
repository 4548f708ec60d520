"""STAGE stage2, senior annotation in Label Studio: drafts pushed, gold templates pulled (`senior`;
`kind: conversation` in `conversation`)."""
