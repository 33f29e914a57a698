"""Settings: Probot's names, clear one-line errors that name the variable, never the value."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bot.settings import LogFormat, SettingsError, derive_graphql_url, load_settings

SECRET_VALUE = "super-secret-webhook-value-42"


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Settings read the process environment and ./.env: isolate both."""
    for name in (
        "APP_ID",
        "PRIVATE_KEY",
        "PRIVATE_KEY_PATH",
        "WEBHOOK_SECRET",
        "WEBHOOK_PATH",
        "HOST",
        "PORT",
        "LOG_LEVEL",
        "LOG_FORMAT",
        "GITHUB_API_URL",
        "GITHUB_GRAPHQL_URL",
        "DATABASE_URL",
        "JUDGE_LEASE_SECONDS",
        "JUDGE_MAX_RUN_SECONDS",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(tmp_path)


def test_defaults_follow_probot() -> None:
    settings = load_settings()
    assert settings.webhook_path == "/api/github/webhooks"
    assert (settings.host, settings.port) == ("0.0.0.0", 3000)
    assert settings.log_format is LogFormat.JSON
    assert settings.github_api_url == "https://api.github.com"
    assert settings.graphql_url == "https://api.github.com/graphql"
    assert settings.database_url == "sqlite:///judge-bot.sqlite3"
    assert not settings.configured


@pytest.mark.parametrize(
    ("api", "graphql"),
    [
        ("https://api.github.com", "https://api.github.com/graphql"),
        ("https://ghe.example.com/api/v3", "https://ghe.example.com/api/graphql"),
        ("https://ghe.example.com/api/v3/", "https://ghe.example.com/api/graphql"),
        ("http://127.0.0.1:9999", "http://127.0.0.1:9999/graphql"),
    ],
)
def test_graphql_url_is_derived(api: str, graphql: str) -> None:
    assert derive_graphql_url(api) == graphql
    assert load_settings(GITHUB_API_URL=api).graphql_url == graphql


def test_delivery_lease_defaults_recover_a_crash_within_half_a_minute() -> None:
    """A crashed process's delivery waits out at most the lease (renewed by a heartbeat while
    its handler runs); a handler is stopped only after the far longer maximum run time."""
    settings = load_settings()
    assert settings.lease_seconds == 30.0
    assert settings.max_run_seconds == 3600.0


def test_delivery_lease_settings_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUDGE_LEASE_SECONDS", "3")
    monkeypatch.setenv("JUDGE_MAX_RUN_SECONDS", "900")
    settings = load_settings()
    assert (settings.lease_seconds, settings.max_run_seconds) == (3.0, 900.0)


def test_explicit_graphql_url_wins() -> None:
    settings = load_settings(GITHUB_GRAPHQL_URL="https://gql.example.com/graphql")
    assert settings.graphql_url == "https://gql.example.com/graphql"


def test_environment_and_dotenv(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("PORT=4567\nLOG_FORMAT=pretty\n")
    monkeypatch.setenv("PORT", "8080")
    settings = load_settings()
    assert settings.port == 8080, "the real environment wins over .env"
    assert settings.log_format is LogFormat.PRETTY


def test_complete_credentials(github_keypair: Any, tmp_path: Path) -> None:
    key_file = tmp_path / "app.pem"
    key_file.write_text(github_keypair.private_pem)
    settings = load_settings(APP_ID="42", PRIVATE_KEY_PATH=str(key_file), WEBHOOK_SECRET="s3cret!!")
    assert settings.configured
    assert settings.private_key_pem() == github_keypair.private_pem


def test_private_key_with_escaped_newlines(github_keypair: Any) -> None:
    escaped = github_keypair.private_pem.replace("\n", "\\n")
    settings = load_settings(APP_ID="42", PRIVATE_KEY=escaped, WEBHOOK_SECRET="s3cret!!")
    assert settings.private_key_pem() == github_keypair.private_pem


@pytest.mark.parametrize(
    ("overrides", "names"),
    [
        ({"PORT": "eighty"}, "PORT"),
        ({"PORT": "70000"}, "PORT"),
        ({"LOG_FORMAT": "xml"}, "LOG_FORMAT"),
        ({"LOG_LEVEL": "LOUD"}, "LOG_LEVEL"),
        ({"WEBHOOK_PATH": "hooks"}, "WEBHOOK_PATH"),
        ({"GITHUB_API_URL": "api.github.com"}, "GITHUB_API_URL"),
        ({"DATABASE_URL": "mysql://x"}, "DATABASE_URL"),
        ({"JUDGE_LEASE_SECONDS": "0"}, "JUDGE_LEASE_SECONDS"),
        ({"JUDGE_MAX_RUN_SECONDS": "-1"}, "JUDGE_MAX_RUN_SECONDS"),
        ({"JUDGE_MAX_RUN_SECONDS": "soon"}, "JUDGE_MAX_RUN_SECONDS"),
        ({"APP_ID": "abc", "PRIVATE_KEY": "k", "WEBHOOK_SECRET": "s"}, "APP_ID"),
        ({"APP_ID": "1", "WEBHOOK_SECRET": SECRET_VALUE}, "PRIVATE_KEY"),
        ({"APP_ID": "1", "PRIVATE_KEY": "not a key"}, "WEBHOOK_SECRET"),
        (
            {"APP_ID": "1", "PRIVATE_KEY": "not a key", "WEBHOOK_SECRET": SECRET_VALUE},
            "PRIVATE_KEY",
        ),
        (
            {"APP_ID": "1", "PRIVATE_KEY_PATH": "/nonexistent.pem", "WEBHOOK_SECRET": SECRET_VALUE},
            "PRIVATE_KEY_PATH",
        ),
    ],
)
def test_bad_settings_name_the_variable(overrides: dict[str, str], names: str) -> None:
    with pytest.raises(SettingsError) as raised:
        load_settings(**overrides)
    message = str(raised.value)
    assert names in message
    assert "\n" not in message
    assert SECRET_VALUE not in message
    assert "not a key" not in message


def test_serve_exits_nonzero_with_one_clear_line(tmp_path: Path) -> None:
    """The real command: a malformed setting stops start-up with one line on stderr."""
    env = {"PATH": "/usr/bin:/bin", "PORT": "not-a-port", "HOME": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, "-m", "bot", "serve"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1
    assert "PORT" in lines[0]
