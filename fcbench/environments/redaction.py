"""Secrets never written: every value of a secret is replaced before anything is recorded.

The http environment sends secrets (the `--auth-env` token, a RapidAPI key, the value of any header,
query parameter or cookie an OpenAPI description declares as a security scheme). An API may echo
them back (a debugging endpoint, an error page quoting the request, a token-introspection answer),
and a response goes everywhere: into the recorded store (`recorded.json`, meant to be committed),
into drafts, candidates, validated samples and exports, into error messages and logs. So every
string of a response (keys too) and every error message is searched for each secret and for the
forms a server may echo it in (percent-encoded, form-encoded, JSON-escaped), and each occurrence is
replaced by `[redacted:NAME]` before the environment hands the outcome to anyone (pure).
"""

from __future__ import annotations

import json
import threading
import urllib.parse
from collections.abc import Mapping
from typing import Any

MIN_SECRET_LENGTH = 4  # a shorter "secret" (a 1-character value) would redact half of every answer


class SecretRedactor:
    """The secrets one environment sends, and their replacement everywhere they could come back."""

    def __init__(self) -> None:
        self._forms: dict[str, str] = {}  # a form a secret may be echoed in -> its placeholder
        self._ordered: list[tuple[str, str]] = []  # replaced whole on each add: readers need no lock
        self._lock = threading.Lock()  # the calls of a step add secrets from several threads

    def add(self, name: str, value: str | None) -> None:
        if not value or len(value) < MIN_SECRET_LENGTH:
            return
        placeholder = f"[redacted:{name}]"
        forms = {value, urllib.parse.quote(value, safe=""), urllib.parse.quote_plus(value),
                 json.dumps(value, ensure_ascii=False)[1:-1], json.dumps(value)[1:-1]}
        with self._lock:
            if all(form in self._forms for form in forms):
                return
            for form in forms:
                self._forms.setdefault(form, placeholder)
            # longest first: a form that contains another is replaced whole
            self._ordered = sorted(self._forms.items(), key=lambda item: -len(item[0]))

    def __bool__(self) -> bool:
        return bool(self._forms)

    def text(self, value: str) -> str:
        for form, placeholder in self._ordered:  # this list is never mutated, only replaced
            if form in value:
                value = value.replace(form, placeholder)
        return value

    def redact(self, value: Any) -> Any:
        """`value` with every secret replaced, at any depth (dict keys too); unchanged objects are
        returned as they are."""
        if not self._ordered:
            return value
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, Mapping):
            return {self.text(key) if isinstance(key, str) else key: self.redact(item) for key, item in value.items()}
        if isinstance(value, list):
            return [self.redact(item) for item in value]
        if isinstance(value, tuple):
            return tuple(self.redact(item) for item in value)
        return value

    def contains_secret(self, value: Any) -> bool:
        return self.redact(value) != value
