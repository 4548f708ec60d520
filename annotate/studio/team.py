"""A team of annotators: accounts, who annotates which task, and what to do when they disagree.

`stage2 push --annotators N --overlap K` creates N annotator accounts through the API, gives them
passwords (so they can log in to the labeling UI) and API tokens, and assigns each task to K of
them. Label Studio's open-source edition has no per-project membership (every user sees every
project), so the assignment is recorded in the task data (`assigned_annotators`, `overlap`): the
Data Manager shows it as a column annotators filter on, and `pull` reads it back.

Accounts: `annotator-01@fcbench.example.com` ... ; their passwords and tokens go to the studio's
credentials file (0600), never to a log, a summary or an export. A password can only be set by
the server's own program (`label-studio shell`, run with the studio's environment: the API makes
users that cannot log in), so a team needs the local studio, not a remote FCBENCH_LS_URL.

Assignment: for each sample id, the K annotators with the smallest hash of (pipeline seed,
sample id, annotator): deterministic from the seed, independent of the order tasks are pushed
in, and close to even over the team.
"""

from __future__ import annotations

import hashlib
import json
import secrets
import subprocess
from dataclasses import dataclass, field
from typing import Any, Sequence

from annotate.studio.server import (StudioConfig, StudioError, find_studio_binary, read_credentials, read_private_json,
                             read_state, server_environment, studio_database, write_private_json)
from fcbench.errors import UserError

ANNOTATOR_EMAIL = "annotator-{index:02d}@fcbench.example.com"
ASSIGNED_FIELD = "assigned_annotators"
ASSIGNED_IDS_FIELD = "assigned_annotator_ids"  # their Label Studio user ids, in the same order
OVERLAP_FIELD = "overlap"
SHELL_TIMEOUT_S = 300
_MARKER = "FCBENCH_TEAM_TOKENS "

# Run inside `label-studio shell` (Django): set each new annotator's password and return the API
# token. Passwords arrive in the child's environment, never on a command line.
_SHELL_SCRIPT = """
import json, os
from users.models import User
from rest_framework.authtoken.models import Token
passwords = json.loads(os.environ.pop("FCBENCH_TEAM_PASSWORDS"))
tokens = {}
for email, password in passwords.items():
    user = User.objects.get(email=email)
    user.set_password(password)
    user.save()
    tokens[email] = Token.objects.get_or_create(user=user)[0].key
print("FCBENCH_TEAM_TOKENS " + json.dumps(tokens))
"""


@dataclass(frozen=True)
class Annotator:
    email: str
    user_id: int
    password: str = field(repr=False)
    token: str = field(repr=False)


def annotator_emails(count: int) -> list[str]:
    return [ANNOTATOR_EMAIL.format(index=index) for index in range(1, count + 1)]


def assign_tasks(sample_ids: Sequence[str], emails: Sequence[str], overlap: int, seed: int) -> dict[str, list[str]]:
    """sample id -> the `overlap` annotators who annotate it (pure)."""
    if not emails:
        raise UserError("--annotators must be at least 1")
    if not 1 <= overlap <= len(emails):
        raise UserError(f"--overlap must be between 1 and --annotators ({len(emails)}), not {overlap}")

    def rank(sample_id: str, email: str) -> bytes:
        return hashlib.blake2b(f"{seed}:{sample_id}:{email}".encode(), digest_size=8).digest()

    return {sample_id: sorted(emails, key=lambda email: rank(sample_id, email))[:overlap] for sample_id in sample_ids}


def assign_in_tasks(tasks: Sequence[dict[str, Any]], emails: Sequence[str], overlap: int, seed: int,
                    user_ids: dict[str, int] | None = None) -> dict[str, int]:
    """Write each task's assignment into its data; tasks per annotator."""
    load = {email: 0 for email in emails}
    for task in tasks:
        for email in assign_in_task(task, emails, overlap, seed, user_ids):
            load[email] += 1
    return load


def assign_in_task(task: dict[str, Any], emails: Sequence[str], overlap: int, seed: int,
                   user_ids: dict[str, int] | None = None) -> list[str]:
    """Write one task's assignment into its data (a task's annotators depend on its sample id
    alone, so a push can assign tasks as it streams them); the annotators chosen."""
    sample_id = task["data"]["sample_id"]
    chosen = assign_tasks([sample_id], emails, overlap, seed)[sample_id]
    task["data"][ASSIGNED_FIELD] = chosen
    task["data"][OVERLAP_FIELD] = overlap
    if user_ids:
        task["data"][ASSIGNED_IDS_FIELD] = [user_ids[email] for email in chosen]
    return chosen


# ------------------------------------------------------------------------------------------ accounts
def stored_annotators(studio: StudioConfig) -> dict[str, Annotator]:
    if not studio.credentials_file.exists():
        return {}
    data = read_private_json(studio.credentials_file)
    return {email: Annotator(email, int(item["user_id"]), item["password"], item["token"])
            for email, item in (data.get("annotators") or {}).items()}


def ensure_annotators(studio: StudioConfig, url: str, client: Any, count: int) -> list[Annotator]:
    """The first `count` annotator accounts, created through the API when missing, each with a
    password and a token kept in the studio's credentials file."""
    state = read_state(studio) or {}
    if str(state.get("url", "")).rstrip("/") != url.rstrip("/"):
        raise UserError("--annotators needs the local studio (build-dataset studio start): passwords are set "
                        "with its own label-studio program, which a remote FCBENCH_LS_URL does not offer")
    emails = annotator_emails(count)
    users = {user.email: int(user.id) for user in client.users.list()}
    for index, email in enumerate(emails, start=1):
        if email not in users:
            user = client.users.create(email=email, username=email, first_name="Annotator", last_name=f"{index:02d}")
            users[email] = int(user.id)
    stored = stored_annotators(studio)
    missing = [email for email in emails if email not in stored or stored[email].user_id != users[email]]
    if missing:
        passwords = {email: secrets.token_urlsafe(15) for email in missing}
        tokens = _set_passwords(studio, passwords)
        for email in missing:
            stored[email] = Annotator(email, users[email], passwords[email], tokens[email])
        _save_annotators(studio, stored)
    return [stored[email] for email in emails]


def _set_passwords(studio: StudioConfig, passwords: dict[str, str]) -> dict[str, str]:
    state = read_state(studio) or {}
    config = StudioConfig(root=studio.root, port=int(state.get("port") or studio.port),
                          database="postgresql" if str(state.get("database", "sqlite")).startswith("postgres")
                          else "sqlite", binary=studio.binary)
    env = server_environment(config, read_credentials(config), studio_database(config))
    env["FCBENCH_TEAM_PASSWORDS"] = json.dumps(passwords)
    binary = config.binary or find_studio_binary()
    try:
        # one line for the interactive console (a block followed by a statement is a syntax error there)
        result = subprocess.run([str(binary), "shell"], input=f"exec({_SHELL_SCRIPT!r})\n", env=env, cwd=config.root,
                                capture_output=True, text=True, timeout=SHELL_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        raise StudioError(f"setting annotator passwords did not finish within {SHELL_TIMEOUT_S} s") from None
    for line in result.stdout.splitlines():
        position = line.find(_MARKER)
        if position >= 0:
            return json.loads(line[position + len(_MARKER):])
    # the output holds no secret (the passwords never appear in it); show its end
    tail = " | ".join((result.stderr or result.stdout).strip().splitlines()[-3:])
    raise StudioError(f"setting annotator passwords failed (label-studio shell exited {result.returncode}): {tail}")


def _save_annotators(studio: StudioConfig, annotators: dict[str, Annotator]) -> None:
    data = read_private_json(studio.credentials_file)
    data["annotators"] = {email: {"user_id": item.user_id, "password": item.password, "token": item.token}
                          for email, item in sorted(annotators.items())}
    write_private_json(studio.credentials_file, data)


__all__ = ["ASSIGNED_FIELD", "ASSIGNED_IDS_FIELD", "OVERLAP_FIELD", "Annotator", "annotator_emails", "assign_in_task", "assign_in_tasks", "assign_tasks",
           "ensure_annotators", "stored_annotators"]
