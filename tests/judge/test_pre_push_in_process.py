"""`judge-bot install-hook` and `judge-bot pre-push` run in this process (the other hook
tests run them as git does, in a subprocess): a real temporary git repository, the real
parser, the real storage; no model is configured, so only the mechanical checks judge."""

from __future__ import annotations

import io
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from bot.cli.judge import main

ZERO = "0" * 40


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *args], cwd=repo, capture_output=True, text=True, check=True, timeout=60
    )
    return done.stdout.strip()


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    for name in list(os.environ):
        if name.startswith(("JUDGE_", "GIT_")) or name in ("DATABASE_URL",):
            monkeypatch.delenv(name)
    work = tmp_path / "work"
    work.mkdir()
    git(work, "init", "-q", "-b", "main")
    git(work, "config", "user.email", "agent@example.com")
    git(work, "config", "user.name", "agent")
    monkeypatch.chdir(work)
    yield work


def commit(repo: Path, files: dict[str, str], message: str = "Add notes") -> str:
    for name, text in files.items():
        path = repo / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        git(repo, "add", name)
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def push_line(sha: str) -> str:
    return f"refs/heads/main {sha} refs/heads/main {ZERO}\n"


def pre_push(
    monkeypatch: pytest.MonkeyPatch, stdin: str, capsys: pytest.CaptureFixture[str]
) -> tuple[int, str]:
    monkeypatch.setattr("sys.stdin", io.StringIO(stdin))
    code = main(["pre-push", "origin", "git@example.com:octo/notes.git"])
    return code, capsys.readouterr().err


def test_install_hook_keeps_the_settings_out_of_git(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["install-hook"]) == 0
    exclude = (repo / ".git" / "info" / "exclude").read_text(encoding="utf-8")
    assert "/.env" in exclude
    assert (repo / ".git" / "hooks" / "pre-push").is_file()
    # Installing again adds nothing twice.
    assert main(["install-hook", "--force"]) == 0
    again = (repo / ".git" / "info" / "exclude").read_text(encoding="utf-8")
    assert again.count("/.env\n") == 1
    capsys.readouterr()


def test_install_hook_warns_when_the_settings_are_tracked(
    repo: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    commit(repo, {".env": "JUDGE_MODE=advisory\n"}, "Oops")
    assert main(["install-hook"]) == 0
    assert "git rm --cached .env" in capsys.readouterr().err


def test_a_push_with_nothing_watched_says_so(
    repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    sha = commit(repo, {"src/app.py": "x = 1\n"})
    code, said = pre_push(monkeypatch, push_line(sha), capsys)
    assert code == 0
    assert "[judge] nothing to judge" in said


def test_a_watched_change_is_judged_by_the_mechanical_checks(
    repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    sha = commit(repo, {"docs/notes.md": "# Notes\n\n<<<<<<< HEAD\nmine\n=======\n"})
    monkeypatch.setenv("JUDGE_MODE", "blocking")
    code, said = pre_push(monkeypatch, push_line(sha), capsys)
    assert "[judge] NO-GO refs/heads/main" in said
    assert code == 10, "a hard mechanical finding blocks in blocking mode"


@pytest.mark.parametrize(("mode", "code"), [("advisory", 0), ("blocking", 10)])
def test_unreadable_settings_are_said_and_block_only_in_blocking_mode(
    repo: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    mode: str,
    code: int,
) -> None:
    commit(repo, {".env": f"JUDGE_MODE={mode}\n"}, "Settings, committed by mistake")
    sha = commit(repo, {"docs/notes.md": "# Notes\n"})
    status, said = pre_push(monkeypatch, push_line(sha), capsys)
    assert status == code
    assert "cannot read the judge's configuration" in said


def test_a_named_settings_file_that_is_missing_is_unreadable(
    repo: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    sha = commit(repo, {"docs/notes.md": "# Notes\n"})
    monkeypatch.setenv("JUDGE_ENV_FILE", "missing.env")
    monkeypatch.setenv("JUDGE_MODE", "blocking")
    status, said = pre_push(monkeypatch, push_line(sha), capsys)
    assert status == 10
    assert "BLOCKED" in said
