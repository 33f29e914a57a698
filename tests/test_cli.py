"""`judge-bot` as a user runs it: a database it cannot open is one line and exit 2; the
start-up lines say what was configured (never a key); every flag is explained, here and in
docs/judging.md; a reader that stops early (`| head`) gets no traceback."""

from __future__ import annotations

import argparse
import json
import logging
import os
import runpy
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiohttp import web

from bot import cli
from bot.storage.base import StorageUnavailable, describe_database

ROOT = Path(__file__).resolve().parents[1]


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


# ---- what `serve` says at start -------------------------------------------------------------


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[list[dict[str, Any]]]:
    """`serve` in-process up to the point it would listen; yields its JSON log lines."""
    for name in list(os.environ):
        if name.startswith(("JUDGE_", "APP_", "GHE_")) or name in ("PRIVATE_KEY", "DATABASE_URL"):
            monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LOG_FORMAT", "json")
    monkeypatch.setenv("LOG_LEVEL", "info")
    monkeypatch.setenv("PORT", "0")  # serve binds for real: never clash with a busy port
    monkeypatch.setattr(web, "run_app", lambda *args, **kwargs: None)
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    lines: list[dict[str, Any]] = []
    try:
        yield lines
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)


def serve_lines(capsys: pytest.CaptureFixture[str], lines: list[dict[str, Any]]) -> str:
    assert cli.main(["serve"]) == 0
    err = capsys.readouterr().err
    lines.extend(json.loads(line) for line in err.splitlines())
    return err


def test_setup_mode_points_to_the_registration_button_the_readme_names(
    started: list[dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    serve_lines(capsys, started)
    (hint,) = [line["message"] for line in started if line["level"] == "warning"]
    assert 'press "Register the GitHub App"' in hint and "BASE_URL" in hint
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert "press **Register the GitHub App**" in readme and "`BASE_URL`" in readme


def test_serve_logs_the_judge_tiers_once_and_never_a_key(
    started: list[dict[str, Any]],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    key = "sk-tiers-" + "Qm4Xr8Lt2Pv6Nc1Bd9Zw"
    monkeypatch.setenv("JUDGE_LLM_API_KEY", key)
    (tmp_path / ".env").write_text(
        "JUDGE_LLM_BASE_URL=https://llm.example.com/v1\n"
        "JUDGE_QUICK_MODEL=gpt-5-nano\n"
        "JUDGE_DEEP_MODEL=kimi-k2.5\n"
    )
    err = serve_lines(capsys, started)
    (tiers,) = [line["message"] for line in started if line["message"].startswith("judge tiers")]
    assert tiers == (
        "judge tiers: quick gpt-5-nano (family openai, openai at llm.example.com); "
        "deep kimi-k2.5 (family moonshot, openai at llm.example.com)"
    )
    assert key not in err and key[:12] not in err


def test_serve_says_when_no_judge_is_configured(
    started: list[dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    serve_lines(capsys, started)
    messages = [line["message"] for line in started]
    assert "judge tiers: none configured: mechanical checks only" in messages
    assert any("database sqlite:///judge-bot.sqlite3" in message for message in messages)


def test_serve_in_process_stops_on_a_bad_setting_or_database(
    started: list[dict[str, Any]],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("LOG_LEVEL", "loud")
    assert cli.main(["serve"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line.startswith("judge-bot: configuration error: LOG_LEVEL: must be one of trace")
    monkeypatch.setenv("LOG_LEVEL", "warn")

    def unavailable(*args: object, **kwargs: object) -> None:
        raise StorageUnavailable("OperationalError: unable to open database file")

    monkeypatch.setattr(web, "run_app", unavailable)
    assert cli.main(["serve"]) == 2
    assert capsys.readouterr().err.endswith(
        "judge-bot: cannot open the database sqlite:///judge-bot.sqlite3 (DATABASE_URL): "
        "OperationalError: unable to open database file\n"
    )


def test_no_command_prints_help_and_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main([]) == 2
    assert "serve" in capsys.readouterr().err


# ---- every flag explained --------------------------------------------------------------------


def commands(
    parser: argparse.ArgumentParser, name: str = "judge-bot"
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    yield name, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub, subparser in action.choices.items():
                yield from commands(subparser, f"{name} {sub}")


def flags(parser: argparse.ArgumentParser) -> Iterator[argparse.Action]:
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction | argparse._HelpAction):
            yield action


def test_every_flag_has_help() -> None:
    missing = [
        f"{name} {action.option_strings or action.dest}"
        for name, parser in commands(cli.build_parser())
        for action in flags(parser)
        if not action.help or action.help == argparse.SUPPRESS
    ]
    assert missing == []


def test_judge_help_lists_the_exit_codes() -> None:
    judge = dict(commands(cli.build_parser()))["judge-bot judge"]
    text = judge.format_help()
    assert "exit status:" in text
    for code, meaning in [("0", "accept"), ("1", "reject"), ("2", "human"), ("3", "undetermined")]:
        assert f"  {code}  {meaning}" in text


def doc_section(docs: str, command: str) -> str:
    """The text under the heading "### `COMMAND`", up to the next heading."""
    heading = f"### `{command}`\n"
    assert heading in docs, f"docs/judging.md has no section {heading.strip()}"
    rest = docs.split(heading, 1)[1]
    return rest.split("\n#", 1)[0]


def test_docs_list_every_flag_of_every_command() -> None:
    docs = (ROOT / "docs" / "judging.md").read_text()
    missing = [
        f"{name} {option}"
        for name, parser in commands(cli.build_parser())
        for action in flags(parser)
        for option in action.option_strings
        if option.startswith("--") and f"`{option}" not in doc_section(docs, name)
    ]
    assert missing == []


# ---- a reader that stops early ------------------------------------------------------------------


def into_closed_pipe(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`judge-bot ARGS` writing to a pipe whose reader is already gone: its first write
    fails, as `| head` makes a later one fail."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    env = {k: v for k, v in os.environ.items() if not k.startswith("JUDGE_")}
    env.pop("DATABASE_URL", None)
    try:
        return subprocess.run(
            [sys.executable, "-m", "bot", *args],
            cwd=cwd,
            env=env,
            stdout=write_end,
            stderr=subprocess.PIPE,
            text=True,
            timeout=60,
            check=False,
        )
    finally:
        os.close(write_end)


@pytest.mark.parametrize(
    "args",
    [["--help"], ["judge", "--help"]],
    ids=" ".join,
)
def test_help_into_a_closed_pipe_is_quiet(tmp_path: Path, args: list[str]) -> None:
    result = into_closed_pipe(tmp_path, *args)
    assert result.stderr == ""
    assert result.returncode in (0, 141)


@pytest.mark.parametrize(
    ("module", "argv", "printed"),
    [
        ("bot", ["--version"], "judge-bot "),
        ("bot.cli", ["--version"], "judge-bot "),
        # the module every installed pre-push hook runs
        ("bot.judge.console", ["judge", "--help"], "--task-id"),
    ],
)
def test_each_module_entry_point_runs_the_cli(
    module: str, argv: list[str], printed: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """In process (runpy), as `python -m MODULE` would run it; the subprocess tests show the
    same through a real interpreter."""
    saved = sys.argv
    sys.argv = [module, *argv]
    try:
        with pytest.raises(SystemExit) as stopped:
            runpy.run_module(module, run_name="__main__", alter_sys=True)
    finally:
        sys.argv = saved
    assert stopped.value.code == 0
    assert printed in capsys.readouterr().out
