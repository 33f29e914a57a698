"""`.env.example`, copied to `.env` as the README says, starts the server in setup mode,
names only settings that exist, and keeps each documented layout on its own database."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from bot.settings import Settings, load_judge_settings, load_settings
from bot.storage import storage_from_url
from bot.storage.sqlite import SqliteStorage
from tests.support.setting_names import all_setting_names
from tests.test_deploy_files import DATA_URL, compose_app_environment, image_env

EXAMPLE = Path(__file__).resolve().parent.parent / ".env.example"
ASSIGNMENT = re.compile(r"^#?\s*([A-Z][A-Z0-9_]*)=")


def known_names() -> set[str]:
    return all_setting_names()


def test_every_name_in_the_example_is_a_setting() -> None:
    names = {
        m.group(1) for line in EXAMPLE.read_text().splitlines() if (m := ASSIGNMENT.match(line))
    }
    assert names, "the example sets something"
    assert names <= known_names(), names - known_names()


def test_the_example_as_is_starts_in_setup_mode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in known_names():
        monkeypatch.delenv(name, raising=False)
    env = tmp_path / ".env"
    env.write_text(EXAMPLE.read_text())
    monkeypatch.setenv("JUDGE_ENV_FILE", str(env))
    settings = load_settings()
    assert not settings.configured
    assert settings.port == 3000
    judge = load_judge_settings()
    assert judge.quick_model == "gpt-5-nano"
    assert judge.mode.value == "advisory"


def docker_env_file(text: str) -> dict[str, str]:
    """`docker run --env-file`'s reading: `NAME=value` lines, the value as written (quotes
    and all), lines starting with `#` and blank ones skipped. A bare `NAME` (taken from the
    caller's environment) sets nothing here."""
    values: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.lstrip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        name, _, value = line.partition("=")
        values[name] = value
    return values


def test_docker_reads_env_files_as_written() -> None:
    text = '# A=1\n  B=two words\nC="quoted"\nD\n\nE=x=y\n'
    assert docker_env_file(text) == {"B": "two words", "C": '"quoted"', "E": "x=y"}


def test_every_documented_way_to_start_keeps_its_own_database(tmp_path: Path) -> None:
    """The example copied to `.env` and used as docs/deploy.md says: `judge-bot serve` (its
    default, SQLite in the work tree), `docker run --env-file .env` (the image's SQLite on
    /data: the example must not replace it with a path the container cannot write, or it
    exits 2) and Compose (PostgreSQL, from compose.yaml)."""
    example = docker_env_file(EXAMPLE.read_text())
    assert "DATABASE_URL" not in example, "serve: no DATABASE_URL means the default database"

    container: dict[str, Any] = {**image_env(), **example}
    assert container["DATABASE_URL"] == DATA_URL
    settings = Settings(_env_file=None, **container)
    assert isinstance(storage_from_url(settings.database_url), SqliteStorage)

    composed = compose_app_environment({**example, "POSTGRES_PASSWORD": "pw"})
    assert composed["DATABASE_URL"].startswith("postgresql://judge:pw@postgres:5432/")
