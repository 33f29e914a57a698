"""`.env.example`, copied to `.env` as the README says, starts the server in setup mode
and names only settings that exist."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from bot.settings import load_judge_config, load_settings
from tests.support.setting_names import all_setting_names

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
    judge = load_judge_config()
    assert judge.quick_model == "gpt-5-nano"
    assert judge.mode.value == "advisory"
