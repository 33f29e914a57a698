"""Settings: Probot's names, clear one-line errors that name the variable, never the value,
and one loader (environment over `.env`) for the server's and the judge's settings alike."""

from __future__ import annotations

import base64
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import bot.settings as settings_module
from bot.judge.records import Tier
from bot.settings import LogFormat, SettingsError, derive_graphql_url, load_settings

SECRET_VALUE = "super-secret-webhook-value-42"
PROBOT_NAMES = (
    "APP_ID",
    "PRIVATE_KEY",
    "PRIVATE_KEY_PATH",
    "WEBHOOK_SECRET",
    "WEBHOOK_PATH",
    "HOST",
    "PORT",
    "LOG_LEVEL",
    "LOG_FORMAT",
    "LOG_LEVEL_IN_STRING",
    "LOG_MESSAGE_KEY",
    "GITHUB_API_URL",
    "GITHUB_GRAPHQL_URL",
    "GHE_HOST",
    "GHE_PROTOCOL",
    "REDIS_URL",
    "SENTRY_DSN",
    "GH_ORG",
    "BASE_URL",
    "WEBHOOK_PROXY_URL",
    "GITHUB_CLIENT_ID",
    "GITHUB_CLIENT_SECRET",
    "DATABASE_URL",
)


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Settings read the process environment and ./.env: isolate both."""
    for name in PROBOT_NAMES:
        monkeypatch.delenv(name, raising=False)
    for name in list(os.environ):
        if name.startswith("JUDGE_") and name != "JUDGE_TEST_POSTGRES_URL":
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, timeout=30)


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


def test_kpi_gauges_refresh_every_five_minutes_unless_turned_off() -> None:
    assert load_settings().kpi_refresh_seconds == 300.0
    assert load_settings(JUDGE_KPI_REFRESH_SECONDS="0").kpi_refresh_seconds == 0.0


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
        ({"JUDGE_KPI_REFRESH_SECONDS": "-1"}, "JUDGE_KPI_REFRESH_SECONDS"),
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


# ---- one loader: the judge's settings and DATABASE_URL read .env as the server's do --------

JUDGE_DOTENV = (
    "JUDGE_LLM_BASE_URL=http://127.0.0.1:9/v1\n"
    "JUDGE_LLM_API_KEY=sk-from-dotenv-0000\n"
    "JUDGE_QUICK_MODEL=gpt-5-nano\n"
    "JUDGE_MODE=blocking\n"
)


def test_judge_settings_in_dotenv_are_read(tmp_path: Path) -> None:
    """The defect: JUDGE_* in .env were ignored, so every change came out undetermined."""
    (tmp_path / ".env").write_text(JUDGE_DOTENV)
    judge_settings = settings_module.load_judge_settings()
    assert judge_settings.llm_configured
    assert judge_settings.tiers()[Tier.QUICK].model == "gpt-5-nano"
    assert judge_settings.mode == "blocking"


def test_the_environment_wins_over_dotenv_for_judge_settings(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / ".env").write_text(JUDGE_DOTENV)
    monkeypatch.setenv("JUDGE_MODE", "advisory")
    assert settings_module.load_judge_settings().mode == "advisory"


def test_a_bad_judge_setting_in_dotenv_names_the_variable(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("JUDGE_QUICK_TIMEOUT=soon\nJUDGE_LLM_API_KEY=sk-hidden-1234\n")
    with pytest.raises(SettingsError) as raised:
        settings_module.load_judge_settings()
    assert str(raised.value).startswith("JUDGE_QUICK_TIMEOUT: ")
    assert "soon" not in str(raised.value) and "sk-hidden" not in str(raised.value)


def test_database_url_in_dotenv_is_the_commands_database_too(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("DATABASE_URL=sqlite:///from-dotenv.db\n")
    assert load_settings().database_url == "sqlite:///from-dotenv.db"
    assert settings_module.load_database_url() == "sqlite:///from-dotenv.db"


def test_default_database_is_at_the_top_of_the_work_tree(tmp_path: Path) -> None:
    """Outside a repository: the working directory. Inside: the work tree's top, wherever
    in it the command runs, which is where git runs the pre-push hook."""
    assert settings_module.load_database_url() == "sqlite:///judge-bot.sqlite3"
    assert load_settings().database_url == "sqlite:///judge-bot.sqlite3"
    git(tmp_path, "init", "-q")
    deep = tmp_path / "docs" / "notes"
    deep.mkdir(parents=True)
    top = Path(
        subprocess.check_output(
            ["git", "rev-parse", "--show-toplevel"], cwd=deep, text=True
        ).strip()
    )
    expected = f"sqlite:///{top / 'judge-bot.sqlite3'}"
    assert settings_module.default_database_url(deep) == expected
    assert settings_module.default_database_url(tmp_path) == expected


def test_judge_env_file_names_the_one_file_for_every_setting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / ".env").write_text("PORT=1111\n")
    conf = tmp_path / "conf"
    conf.mkdir()
    (conf / "judge.env").write_text(JUDGE_DOTENV + "PORT=2222\nDATABASE_URL=sqlite:///x.db\n")
    monkeypatch.setenv("JUDGE_ENV_FILE", "conf/judge.env")
    assert load_settings().port == 2222
    assert settings_module.load_judge_settings().llm_configured
    assert settings_module.load_database_url() == "sqlite:///x.db"
    monkeypatch.setenv("JUDGE_ENV_FILE", "")
    assert load_settings().port == 3000, "empty: no file at all"


def test_a_missing_judge_env_file_is_refused_without_its_value(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("JUDGE_ENV_FILE", "secret-place/judge.env")
    with pytest.raises(SettingsError) as raised:
        load_settings()
    assert str(raised.value) == "JUDGE_ENV_FILE: no such file"


def test_a_dotenv_tracked_by_git_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A committed .env could send the user's key (from the environment) to its author's
    host; naming it in JUDGE_ENV_FILE reads it anyway."""
    git(tmp_path, "init", "-q")
    (tmp_path / ".env").write_text("JUDGE_LLM_BASE_URL=https://attacker.example/v1\n")
    git(tmp_path, "add", ".env")
    with pytest.raises(SettingsError) as raised:
        settings_module.load_judge_settings()
    message = str(raised.value)
    assert message.startswith(".env: git tracks this file") and "JUDGE_ENV_FILE" in message
    assert "attacker" not in message
    monkeypatch.setenv("JUDGE_ENV_FILE", ".env")
    assert settings_module.load_judge_settings().llm_base_url == "https://attacker.example/v1"


# ---- Probot's settings: honoured, or refused in one line ------------------------------------


@pytest.mark.parametrize(
    ("given", "level"),
    [
        ("trace", "DEBUG"),
        ("debug", "DEBUG"),
        ("Info", "INFO"),
        ("warn", "WARNING"),
        ("WARNING", "WARNING"),
        ("error", "ERROR"),
        ("FATAL", "CRITICAL"),
        ("critical", "CRITICAL"),
        ("silent", "SILENT"),
    ],
)
def test_probot_log_levels(given: str, level: str) -> None:
    assert load_settings(LOG_LEVEL=given).log_level == level


@pytest.mark.parametrize(
    ("values", "api", "graphql"),
    [
        (
            {"GHE_HOST": "ghe.example.com"},
            "https://ghe.example.com/api/v3",
            "https://ghe.example.com/api/graphql",
        ),
        (
            {"GHE_HOST": "ghe.example.com:8443/", "GHE_PROTOCOL": "HTTP"},
            "http://ghe.example.com:8443/api/v3",
            "http://ghe.example.com:8443/api/graphql",
        ),
        (
            {"GHE_HOST": "ghe.example.com", "GITHUB_API_URL": "https://ghe.example.com/api/v3"},
            "https://ghe.example.com/api/v3",
            "https://ghe.example.com/api/graphql",
        ),
        (
            {"GHE_HOST": "ghe.example.com", "GITHUB_GRAPHQL_URL": "https://gql.example.com/q"},
            "https://ghe.example.com/api/v3",
            "https://gql.example.com/q",
        ),
        ({"GHE_HOST": ""}, "https://api.github.com", "https://api.github.com/graphql"),
    ],
)
def test_ghe_host_as_probot_reads_it(values: dict[str, str], api: str, graphql: str) -> None:
    settings = load_settings(**values)
    assert (settings.github_api_url, settings.graphql_url) == (api, graphql)


def test_ghe_host_from_dotenv(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text("GHE_HOST=ghe.example.com\n")
    assert load_settings().github_api_url == "https://ghe.example.com/api/v3"


@pytest.mark.parametrize(
    ("values", "names"),
    [
        (
            {"GHE_HOST": "ghe.example.com", "GITHUB_API_URL": "https://api.github.com"},
            ("GHE_HOST", "GITHUB_API_URL"),
        ),
        ({"GHE_PROTOCOL": "https"}, ("GHE_PROTOCOL", "GHE_HOST")),
        ({"GHE_HOST": "https://ghe.example.com"}, ("GHE_HOST",)),
        ({"GHE_HOST": "ghe.example.com/api/v3"}, ("GHE_HOST",)),
        ({"GHE_HOST": "ghe.example.com", "GHE_PROTOCOL": "ftp"}, ("GHE_PROTOCOL",)),
        ({"REDIS_URL": f"redis://:{SECRET_VALUE}@cache:6379"}, ("REDIS_URL",)),
        ({"SENTRY_DSN": f"https://{SECRET_VALUE}@sentry.example/1"}, ("SENTRY_DSN",)),
        ({"BASE_URL": "judge.example.com"}, ("BASE_URL",)),
        ({"WEBHOOK_PROXY_URL": "smee.io/abc"}, ("WEBHOOK_PROXY_URL",)),
        ({"LOG_MESSAGE_KEY": "level"}, ("LOG_MESSAGE_KEY",)),
        ({"LOG_LEVEL_IN_STRING": "perhaps"}, ("LOG_LEVEL_IN_STRING",)),
    ],
)
def test_probot_settings_that_cannot_be_honoured_or_are_malformed_are_refused(
    values: dict[str, str], names: tuple[str, ...]
) -> None:
    with pytest.raises(SettingsError) as raised:
        load_settings(**values)
    message = str(raised.value)
    assert all(name in message for name in names), message
    assert "\n" not in message and SECRET_VALUE not in message


def test_blank_probot_settings_mean_unset() -> None:
    """Probot's own defaults are empty strings; a .env copied from Probot keeps them."""
    settings = load_settings(REDIS_URL="", SENTRY_DSN=" ", GH_ORG="", GHE_PROTOCOL="")
    assert settings.github_api_url == "https://api.github.com"


def test_gh_org_is_read_in_setup_mode_and_harmless_once_registered(
    github_keypair: Any,
) -> None:
    """Probot reads GH_ORG only to register the App; once it is registered it is unused."""
    assert load_settings(GH_ORG="acme").gh_org == "acme"
    settings = load_settings(
        APP_ID="42",
        PRIVATE_KEY=github_keypair.private_pem,
        WEBHOOK_SECRET="s3cret!!",
        GH_ORG="acme",
    )
    assert settings.configured


def test_private_key_base64_encoded_as_probot_accepts(github_keypair: Any) -> None:
    encoded = base64.b64encode(github_keypair.private_pem.encode()).decode()
    settings = load_settings(APP_ID="42", PRIVATE_KEY=encoded, WEBHOOK_SECRET="s3cret!!")
    assert settings.private_key_pem() == github_keypair.private_pem


def test_log_line_settings() -> None:
    settings = load_settings(LOG_LEVEL_IN_STRING="false", LOG_MESSAGE_KEY="msg")
    assert (settings.log_level_in_string, settings.log_message_key) == (False, "msg")
    default = load_settings()
    assert (default.log_level_in_string, default.log_message_key) == (True, "message")


def test_serve_refuses_an_unsupported_probot_setting_from_dotenv(tmp_path: Path) -> None:
    (tmp_path / ".env").write_text(f"REDIS_URL=redis://:{SECRET_VALUE}@cache:6379\n")
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path)}
    result = subprocess.run(
        [sys.executable, "-m", "bot", "serve"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("judge-bot: configuration error: REDIS_URL: not supported")
    assert SECRET_VALUE not in result.stderr
