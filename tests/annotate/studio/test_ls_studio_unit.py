"""Studio lifecycle pieces that need no running server: secrets on disk, ports, the environment."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path

import pytest

from fcbench.errors import UserError

from annotate.studio.client import read_token_file, resolve_connection
from annotate.studio.server import (Credentials, StudioConfig, StudioError, load_or_create_credentials, port_is_free,
                             server_environment, start, status, stop, studio_database,
                             write_private_json)


def test_credentials_are_created_once_with_mode_0600_and_never_shown(tmp_path: Path) -> None:
    config = StudioConfig(root=tmp_path / "studio", port=1)
    first = load_or_create_credentials(config)
    assert config.credentials_file.stat().st_mode & 0o777 == 0o600
    assert load_or_create_credentials(config) == first
    assert len(first.token) == 40 and first.token not in repr(first) and first.password not in repr(first)


def test_secrets_readable_by_others_are_refused(tmp_path: Path) -> None:
    config = StudioConfig(root=tmp_path, port=1)
    write_private_json(config.credentials_file, {"username": "u", "password": "p", "token": "t" * 40})
    config.credentials_file.chmod(0o644)
    with pytest.raises(UserError, match="permissions 644 are too open; run chmod 600"):
        load_or_create_credentials(config)
    token_file = tmp_path / "token"
    token_file.write_text("abc\n")
    token_file.chmod(0o640)
    with pytest.raises(StudioError, match="too open for a token"):
        read_token_file(token_file)
    token_file.chmod(0o600)
    assert read_token_file(token_file) == "abc"


def test_connection_from_the_environment_hides_the_token(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("FCBENCH_LS_URL", "http://127.0.0.1:9/")
    monkeypatch.setenv("FCBENCH_LS_TOKEN", "s3cret-token")
    connection = resolve_connection(StudioConfig(root=tmp_path))
    assert connection.url == "http://127.0.0.1:9" and connection.token == "s3cret-token"
    assert "s3cret" not in repr(connection)


def test_no_studio_and_no_url_is_one_clear_error(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("FCBENCH_LS_URL", raising=False)
    with pytest.raises(StudioError, match="no Label Studio URL: set FCBENCH_LS_URL or run build-dataset studio start"):
        resolve_connection(StudioConfig(root=tmp_path))


def test_server_environment_is_loopback_quiet_and_closed(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("PORT", "9999")
    monkeypatch.setenv("USERNAME", "someone")
    monkeypatch.setenv("LABEL_STUDIO_HOST", "http://0.0.0.0")
    config = StudioConfig(root=tmp_path, port=1)
    env = server_environment(config, Credentials("a@example.com", "pw", "t" * 40))
    assert "PORT" not in env and "USERNAME" not in env and "LABEL_STUDIO_HOST" not in env
    assert env["LATEST_VERSION_CHECK"] == "false" and env["COLLECT_ANALYTICS"] == "false"
    assert env["LABEL_STUDIO_DISABLE_SIGNUP_WITHOUT_LINK"] == "true"
    assert env["LABEL_STUDIO_ENABLE_LEGACY_API_TOKEN"] == "true"
    assert env["HOME"] == str(tmp_path / "home") and env["LABEL_STUDIO_BASE_DATA_DIR"] == str(tmp_path / "data")
    assert "DJANGO_DB" not in env


def test_postgresql_needs_its_variables(tmp_path: Path, monkeypatch) -> None:
    for name in ("POSTGRE_NAME", "POSTGRE_USER", "POSTGRE_PASSWORD", "POSTGRE_HOST", "POSTGRE_PORT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("POSTGRE_HOST", "db.internal")
    config = StudioConfig(root=tmp_path, port=1, database="postgresql")
    with pytest.raises(StudioError, match="database postgresql needs POSTGRE_NAME, POSTGRE_USER, POSTGRE_PASSWORD, "
                                          "POSTGRE_PORT in the environment"):
        studio_database(config)


def test_an_external_database_url_reaches_label_studio_as_its_variables(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("FCBENCH_STUDIO_DATABASE_URL", "postgresql://ann%40team:s%3Acret@db.internal:6543/ls")
    monkeypatch.setenv("POSTGRE_NAME", "ignored")
    config = StudioConfig(root=tmp_path, port=1, database="postgresql")
    database = studio_database(config)
    assert not database.managed and "s:cret" not in repr(database) and "s:cret" not in database.describe()
    env = server_environment(config, Credentials("a@example.com", "pw", "t"), database)
    assert (env["DJANGO_DB"], env["POSTGRE_NAME"], env["POSTGRE_USER"], env["POSTGRE_PASSWORD"],
            env["POSTGRE_HOST"], env["POSTGRE_PORT"]) == ("default", "ls", "ann@team", "s:cret", "db.internal", "6543")
    assert "FCBENCH_STUDIO_DATABASE_URL" not in env  # the server gets its own variables, not the URL
    monkeypatch.setenv("FCBENCH_STUDIO_DATABASE_URL", "mysql://x@y/z")
    with pytest.raises(UserError, match="must look like postgresql://"):
        studio_database(config)


def test_a_busy_port_is_refused_before_anything_starts(tmp_path: Path) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen()
        port = listener.getsockname()[1]
        assert not port_is_free(port)
        config = StudioConfig(root=tmp_path / "studio", port=port, binary=Path("/bin/false"))
        with pytest.raises(StudioError, match=f"port {port} on 127.0.0.1 is busy"):
            start(config)
    assert not config.root.exists()


def test_status_and_stop_without_a_server(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.delenv("FCBENCH_LS_URL", raising=False)
    config = StudioConfig(root=tmp_path, port=1)
    assert not status(config).running and stop(config) is False
    config.state_file.write_text('{"pid": 999999, "port": 8123, "url": "http://127.0.0.1:8123"}')
    assert status(config).running is False
    assert stop(config) is False
    assert json.loads(config.state_file.read_text()) == {"pid": None, "port": 8123, "url": "http://127.0.0.1:8123"}
    assert not status(config).running
    with pytest.raises(StudioError, match="is stopped: run build-dataset studio start"):
        resolve_connection(config)


def test_a_server_that_exits_at_once_is_reported_with_its_log(tmp_path: Path) -> None:
    fake = tmp_path / "label-studio"
    fake.write_text("#!/bin/sh\necho 'cannot open database' >&2\nexit 3\n")
    fake.chmod(0o755)
    config = StudioConfig(root=tmp_path / "studio", port=_free(), binary=fake)
    with pytest.raises(StudioError, match="did not become healthy .* cannot open database"):
        start(config, timeout=20)
    assert not config.state_file.exists()
    assert oct(config.root.stat().st_mode & 0o777) == oct(0o700)
    assert os.access(config.log_file, os.R_OK)


def _free() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_the_server_accepts_loopback_webhooks_and_start_prints_who_to_log_in_as(tmp_path: Path, capsys) -> None:
    from annotate.studio.server import StudioStatus
    from fcbench.cli.servers import _print_studio_status

    config = StudioConfig(root=tmp_path, port=18089)
    credentials = load_or_create_credentials(config)
    assert server_environment(config, credentials)["SSRF_PROTECTION_ENABLED"] == "false"  # the receiver is on loopback
    _print_studio_status(StudioStatus(True, True, config.url, 4242, tmp_path), False, config)
    printed = capsys.readouterr().out
    assert f"log in at {config.url}/user/login/ as {credentials.username}" in printed
    assert str(config.credentials_file) in printed
    assert credentials.password not in printed and credentials.token not in printed
