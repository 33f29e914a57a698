"""`judge-bot serve` as a user runs it: a database it cannot open is one line and exit 2."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bot.storage.base import describe_database


def serve(tmp_path: Path, database_url: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("APP_", "JUDGE_"))}
    env.update({"DATABASE_URL": database_url, "PORT": "0", "HOST": "127.0.0.1"})
    env.pop("PRIVATE_KEY", None)
    env.pop("WEBHOOK_SECRET", None)
    return subprocess.run(
        [sys.executable, "-m", "bot", "serve"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://judge:hunter2-not-shown@127.0.0.1:1/judge",
        "sqlite:////nonexistent-directory/judge-bot.sqlite3",
    ],
    ids=["postgres refused", "sqlite directory missing"],
)
def test_an_unreachable_database_is_one_line_and_exit_2(tmp_path: Path, url: str) -> None:
    result = serve(tmp_path, url)
    assert result.returncode == 2
    errors = [line for line in result.stderr.splitlines() if line.startswith("judge-bot:")]
    assert len(errors) == 1
    assert errors[0].startswith(f"judge-bot: cannot open the database {describe_database(url)}")
    assert "Traceback" not in result.stderr
    assert "hunter2" not in result.stderr + result.stdout


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://u:secret@db:5432/x", "postgresql://u@db:5432/x"),
        ("postgresql://:secret@db/x", "postgresql://db/x"),
        ("postgresql://db/x", "postgresql://db/x"),
        ("sqlite:///judge.sqlite3", "sqlite:///judge.sqlite3"),
        ("not a url", "not a url"),
    ],
)
def test_describe_database_never_shows_the_password(url: str, shown: str) -> None:
    assert describe_database(url) == shown
