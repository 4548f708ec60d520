"""User-facing errors: shown as one line on stderr with exit code 1, never as a traceback."""


class UserError(Exception):
    """Something the user can fix (a wrong path, a bad option, a malformed file)."""
