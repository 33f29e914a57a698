"""`judge-bot judge` and `judge-bot verdicts export`, run as real processes against the
fake LLM server (and in-process where no server is needed)."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bot.cli.judge import _exclude_database, build_parser, main
from bot.cli.terminal import EXIT_STDOUT_CLOSED, guard_closed_stdout
from bot.judge.engine import append_record
from bot.judge.records import (
    Verdict,
    VerdictRecord,
)
from bot.storage.sqlite import SqliteStorage
from tests.support.fakes.llm_server import FakeOpenAIServer, Reply
from tests.support.verdict_builders import make_record

SECRET = "sk-test-SECRET-4242"
QUICK, DEEP, TIE = "gpt-5-nano", "kimi-k2.5", "llama-3.3-70b"
ACCEPT = {"scores": {"semantic": 4, "pragmatic": 5, "syntactic": 4}, "reasoning": "solid"}
IMPROVE = {
    "scores": {"semantic": 3, "pragmatic": 3, "syntactic": 3},
    "reasoning": "thin",
    "improvements": ["add the rollback plan"],
}
REJECT = {"scores": {"semantic": 1, "pragmatic": 2, "syntactic": 3}, "reasoning": "wrong"}
DOC = "# Signal\n\nLatency rose 20% after the cache change; roll back the TTL.\n"


def clean_env(**extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("JUDGE_") and k not in ("DATABASE_URL", "GIT_JUDGE_SKIP")
    }
    env.update(extra)
    return env


def llm_env(fake: FakeOpenAIServer, **extra: str) -> dict[str, str]:
    return clean_env(
        JUDGE_LLM_BASE_URL=fake.base_url,
        JUDGE_LLM_API_KEY=SECRET,
        JUDGE_QUICK_MODEL=QUICK,
        JUDGE_DEEP_MODEL=DEEP,
        JUDGE_TIEBREAKER_MODEL=TIE,
        JUDGE_QUICK_TIMEOUT="5",
        JUDGE_DEEP_TIMEOUT="5",
        JUDGE_TIEBREAKER_TIMEOUT="5",
        **extra,
    )


async def run_cli(cwd: Path, env: dict[str, str], *args: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot.judge.console",
        *args,
        cwd=cwd,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate()
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


JUDGE_ARGS = (
    "judge",
    "--task-id",
    "issue-42",
    "--description",
    "Weekly signal report",
    "--acceptance",
    "Names the cause and an action",
)


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    (tmp_path / "research").mkdir()
    (tmp_path / "research" / "signal.md").write_text(DOC)
    return tmp_path


async def test_accept_prints_table_and_stores_record(
    fake_llm: FakeOpenAIServer, workdir: Path
) -> None:
    fake_llm.api_key = SECRET
    fake_llm.script(QUICK, Reply.json(ACCEPT))
    code, out, err = await run_cli(workdir, llm_env(fake_llm), *JUDGE_ARGS, "research/signal.md")
    assert code == 0, err
    assert "verdict: ACCEPT (GO)" in out
    assert "quick" in out and QUICK in out and "semantic" in out
    assert SECRET not in out + err
    assert (workdir / "judge-bot.sqlite3").exists()

    code, exported, err = await run_cli(workdir, clean_env(), "verdicts", "export")
    assert code == 0, err
    (line,) = exported.splitlines()
    record = VerdictRecord.from_jsonl(line)
    assert record.task_id == "issue-42"
    assert record.final_decision is Verdict.ACCEPT
    assert "\n" not in line and ": " not in line  # compact JSONL


@pytest.mark.parametrize(
    ("script", "code", "verdict"),
    [
        ({QUICK: [REJECT], DEEP: [REJECT]}, 1, "reject"),
        ({QUICK: [IMPROVE], DEEP: [IMPROVE]}, 2, "escalate"),
        ({QUICK: [ACCEPT], DEEP: [IMPROVE]}, 2, "improve"),
        ({QUICK: [Reply.server_error()]}, 3, "undetermined"),
    ],
)
async def test_exit_codes_and_json(
    fake_llm: FakeOpenAIServer,
    workdir: Path,
    script: dict[str, list[Any]],
    code: int,
    verdict: str,
) -> None:
    fake_llm.api_key = SECRET
    for model, replies in script.items():
        fake_llm.script(model, *(r if isinstance(r, Reply) else Reply.json(r) for r in replies))
    args = [*JUDGE_ARGS, "--json", "--sensitive", "research/signal.md"]
    got, out, err = await run_cli(workdir, llm_env(fake_llm), *args)
    assert got == code, err
    record = json.loads(out)
    assert record["final_decision"] == verdict
    assert SECRET not in out + err


async def test_database_url_and_export_filters(fake_llm: FakeOpenAIServer, workdir: Path) -> None:
    fake_llm.api_key = SECRET
    fake_llm.default = Reply.json(ACCEPT)
    url = f"sqlite:///{workdir / 'custom.db'}"
    env = llm_env(fake_llm, DATABASE_URL=url)
    for task in ("t-1", "t-2"):
        args = list(JUDGE_ARGS)
        args[2] = task
        code, _, err = await run_cli(workdir, env, *args, "--no-cache", "research/signal.md")
        assert code == 0, err
    assert not (workdir / "judge-bot.sqlite3").exists()
    code, out, _ = await run_cli(workdir, env, "verdicts", "export", "--task-id", "t-2")
    assert [json.loads(line)["task_id"] for line in out.splitlines()] == ["t-2"]
    code, out, _ = await run_cli(
        workdir, env, "verdicts", "export", "--since", "2999-01-01T00:00:00+00:00"
    )
    assert code == 0 and out == ""
    code, _, err = await run_cli(workdir, env, "verdicts", "export", "--since", "yesterday")
    assert code == 2 and "ISO 8601" in err


def test_without_llm_only_mechanical_checks_run(
    workdir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in list(os.environ):
        if name.startswith("JUDGE_") or name == "DATABASE_URL":
            monkeypatch.delenv(name)
    monkeypatch.chdir(workdir)
    code = main([*JUDGE_ARGS, "research/signal.md"])
    out = capsys.readouterr().out
    assert code == 3
    assert "model tiers were NOT run" in out
    assert "verdict: UNDETERMINED" in out


def test_without_llm_hard_failure_still_rejects(
    workdir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in list(os.environ):
        if name.startswith("JUDGE_") or name == "DATABASE_URL":
            monkeypatch.delenv(name)
    monkeypatch.chdir(workdir)
    (workdir / "research" / "bad.md").write_text("<<<<<<< HEAD\na\n=======\nb\n>>>>>>> x\n")
    code = main([*JUDGE_ARGS, "--json", "research/bad.md"])
    record = json.loads(capsys.readouterr().out)
    assert code == 1
    assert record["final_decision"] == "reject"
    assert record["models_not_run"] is False  # decided before any model was needed
    assert record["mechanical_findings"][0]["kind"] == "conflict-marker"


def test_settings_error_is_reported_without_secrets(
    workdir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(workdir)
    monkeypatch.setenv("JUDGE_LLM_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("JUDGE_LLM_API_KEY", SECRET)
    monkeypatch.setenv("JUDGE_QUICK_MODEL", "gpt-5-nano")
    monkeypatch.setenv("JUDGE_DEEP_MODEL", "gpt-4o")
    code = main([*JUDGE_ARGS, "research/signal.md"])
    captured = capsys.readouterr()
    assert code == 3
    assert "share the model family 'openai'" in captured.err
    assert SECRET not in captured.err + captured.out


def test_missing_file(
    workdir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(workdir)
    monkeypatch.delenv("JUDGE_QUICK_MODEL", raising=False)
    code = main([*JUDGE_ARGS, "research/nope.md"])
    assert code == 3
    assert "cannot read research/nope.md" in capsys.readouterr().err


def test_parser_requires_task_fields() -> None:
    with pytest.raises(SystemExit) as info:
        build_parser().parse_args(["judge", "file.md"])
    assert info.value.code == 3
    args = build_parser().parse_args([*JUDGE_ARGS, "--rubric", "code", "a.py"])
    assert args.rubric == "code" and args.files == ["a.py"]


# ---- nothing judged is never "reject": every failure to judge exits 3 ------------------


async def run_cli_entry(cwd: Path, entry: str, *args: str) -> tuple[int, str, str]:
    """`python -m <entry> args` without any judge settings."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        entry,
        *args,
        cwd=cwd,
        env=clean_env(),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate()
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


@pytest.mark.parametrize("entry", ["bot.judge.console", "bot.cli"])
@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["judge", "file.md"], "the following arguments are required"),
        ([*JUDGE_ARGS, "--rubric", "vibes", "a.md"], "invalid choice"),
        ([*JUDGE_ARGS, "--bogus", "a.md"], "unrecognized arguments: --bogus"),
        (list(JUDGE_ARGS), "the following arguments are required: FILE"),
    ],
    ids=["missing-task", "bad-rubric", "unknown-option", "no-files"],
)
async def test_judge_usage_errors_exit_undetermined(
    tmp_path: Path, entry: str, args: list[str], words: str
) -> None:
    """Through both entry points: this module (the hook's) and the `judge-bot` script."""
    code, _, err = await run_cli_entry(tmp_path, entry, *args)
    assert code == 3, err
    assert words in err


@pytest.mark.parametrize("entry", ["bot.judge.console", "bot.cli"])
async def test_judge_help_exits_zero_and_other_commands_keep_argparse_codes(
    tmp_path: Path, entry: str
) -> None:
    code, out, _ = await run_cli_entry(tmp_path, entry, "judge", "--help")
    assert code == 0 and "--task-id" in out
    code, _, err = await run_cli_entry(tmp_path, entry, "verdicts", "export", "--bogus")
    assert code == 2 and "unrecognized arguments" in err


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("bogus://x", "storage error: unsupported storage URL scheme 'bogus'"),
        ("sqlite:///", "storage error: sqlite URL names no database file"),
        ("sqlite:////proc/no-such-dir/x.db", "OperationalError: unable to open database file"),
        # nothing listens on port 9; the password must not be printed
        ("postgresql://judge:hunter2pw@127.0.0.1:9/x", "the judgment failed (ConnectionRefused"),
    ],
)
def test_storage_failures_exit_undetermined_with_one_line(
    workdir: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    url: str,
    words: str,
) -> None:
    for name in list(os.environ):
        if name.startswith("JUDGE_") or name == "DATABASE_URL":
            monkeypatch.delenv(name)
    monkeypatch.chdir(workdir)
    code = main([*JUDGE_ARGS, "--database-url", url, "research/signal.md"])
    captured = capsys.readouterr()
    assert code == 3
    assert captured.out == ""
    (line,) = captured.err.splitlines()
    assert words in line and "nothing was judged" in line
    assert "hunter2pw" not in line


async def test_non_ascii_api_key_is_undetermined_not_a_crash(
    fake_llm: FakeOpenAIServer, workdir: Path
) -> None:
    key = "sk-clé-secrète-4242"
    env = {**llm_env(fake_llm), "JUDGE_LLM_API_KEY": key}
    code, out, err = await run_cli(workdir, env, *JUDGE_ARGS, "research/signal.md")
    assert code == 3, err
    assert "verdict: UNDETERMINED" in out
    assert "transport error (UnicodeEncodeError)" in out
    assert "Traceback" not in err
    assert "clé" not in out + err and "secr" not in out + err
    assert fake_llm.requests == []


# ---- one loader: .env counts for the judge commands as for `serve` ----------------------------


def dotenv_for(fake: FakeOpenAIServer, **extra: str) -> str:
    values = {
        "JUDGE_LLM_BASE_URL": fake.base_url,
        "JUDGE_LLM_API_KEY": SECRET,
        "JUDGE_QUICK_MODEL": QUICK,
        "JUDGE_QUICK_TIMEOUT": "5",
        **extra,
    }
    return "".join(f"{name}={value}\n" for name, value in values.items())


async def test_judge_reads_its_settings_from_dotenv(
    fake_llm: FakeOpenAIServer, workdir: Path
) -> None:
    """The defect: following docs/configuration.md (.env) gave "undetermined" every time."""
    fake_llm.api_key = SECRET
    fake_llm.script(QUICK, Reply.json(ACCEPT))
    (workdir / ".env").write_text(dotenv_for(fake_llm))
    code, out, err = await run_cli(workdir, clean_env(), *JUDGE_ARGS, "research/signal.md")
    assert code == 0, out + err
    assert "verdict: ACCEPT (GO)" in out
    assert SECRET not in out + err


async def test_database_url_in_dotenv_is_used_by_judge_and_export(
    fake_llm: FakeOpenAIServer, workdir: Path
) -> None:
    """`serve`, `judge` and `verdicts export` open one database: DATABASE_URL from .env."""
    fake_llm.api_key = SECRET
    fake_llm.default = Reply.json(ACCEPT)
    (workdir / ".env").write_text(dotenv_for(fake_llm, DATABASE_URL="sqlite:///shared.db"))
    code, out, err = await run_cli(workdir, clean_env(), *JUDGE_ARGS, "research/signal.md")
    assert code == 0, out + err
    assert "record appended to sqlite:///shared.db" in out
    assert (workdir / "shared.db").exists()
    assert not (workdir / "judge-bot.sqlite3").exists()
    code, exported, err = await run_cli(workdir, clean_env(), "verdicts", "export")
    assert code == 0, err
    assert [json.loads(line)["task_id"] for line in exported.splitlines()] == ["issue-42"]


async def test_a_bad_database_url_in_dotenv_is_one_line(workdir: Path) -> None:
    (workdir / ".env").write_text("DATABASE_URL=mysql://root:hunter2pw@db/x\n")
    code, out, err = await run_cli(workdir, clean_env(), "verdicts", "export")
    assert (code, out) == (2, "")
    assert err == (
        "judge-bot: configuration error: DATABASE_URL: must start with sqlite:///, "
        "postgresql:// or postgres://\n"
    )
    code, out, err = await run_cli(workdir, clean_env(), *JUDGE_ARGS, "research/signal.md")
    assert (code, out) == (3, "")
    assert "DATABASE_URL" in err and "nothing was judged" in err and "hunter2pw" not in err


async def test_export_of_an_unreadable_database_is_one_line(workdir: Path) -> None:
    url = "sqlite:////proc/no-such-dir/x.db"
    code, out, err = await run_cli(
        workdir, clean_env(), "verdicts", "export", "--database-url", url
    )
    assert (code, out) == (2, "")
    (line,) = err.splitlines()
    assert line.startswith(f"judge-bot: cannot read the database {url} (OperationalError")


# ---- a reader that stops early (| head) ----------------------------------------------------------


async def store_records(database: Path, count: int) -> None:
    store = SqliteStorage(str(database))
    await store.open()
    try:
        for n in range(count):
            # long enough that the records overflow a pipe's buffer many times over
            await append_record(store, make_record(task_id=f"t-{n}", reasoning="r" * 4000))
    finally:
        await store.close()


def no_traceback(stderr: str) -> None:
    assert "Traceback" not in stderr and "Exception ignored" not in stderr, stderr


def head_one_line(cwd: Path, *args: str) -> tuple[bytes, str, int]:
    """`judge-bot ARGS | head -n 1`: read one line, close the pipe, wait."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "bot", *args],
        cwd=cwd,
        env=clean_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()  # head has what it wanted
    stderr = proc.stderr.read().decode()
    proc.stderr.close()
    return first, stderr, proc.wait(60)


async def test_export_piped_into_head_stops_quietly(workdir: Path) -> None:
    """With a real pipe the reader closes after one line, as `head -n 1` does."""
    await store_records(workdir / "judge-bot.sqlite3", 100)
    first, stderr, code = await asyncio.to_thread(head_one_line, workdir, "verdicts", "export")
    assert json.loads(first)["task_id"] == "t-0"
    no_traceback(stderr)
    assert (stderr, code) == ("", 141)


def into_closed_pipe(cwd: Path, env: dict[str, str], *args: str) -> tuple[int, str]:
    """The command writing to a pipe whose reader is gone before the first write."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        result = subprocess.run(
            [sys.executable, "-m", "bot.judge.console", *args],
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
    return result.returncode, result.stderr


async def test_export_into_a_closed_pipe_is_quiet(workdir: Path) -> None:
    await store_records(workdir / "judge-bot.sqlite3", 1)
    code, err = await asyncio.to_thread(
        into_closed_pipe, workdir, clean_env(), "verdicts", "export"
    )
    assert (code, err) == (141, "")


async def test_judge_into_a_closed_pipe_keeps_its_verdict(
    fake_llm: FakeOpenAIServer, workdir: Path
) -> None:
    """The exit status is the verdict's, the record stored, whoever stopped reading."""
    fake_llm.api_key = SECRET
    fake_llm.default = Reply.json(REJECT)
    for args in ([*JUDGE_ARGS, "--json"], list(JUDGE_ARGS)):
        code, err = await asyncio.to_thread(
            into_closed_pipe, workdir, llm_env(fake_llm), *args, "--no-cache", "research/signal.md"
        )
        no_traceback(err)
        assert code == 1, err
    code, exported, _ = await run_cli(workdir, clean_env(), "verdicts", "export")
    assert len(exported.splitlines()) == 2


def test_the_guard_turns_a_closed_stdout_into_its_status() -> None:
    def reader_gone() -> int:
        raise BrokenPipeError(32, "Broken pipe")

    assert guard_closed_stdout(reader_gone) == EXIT_STDOUT_CLOSED == 141
    assert guard_closed_stdout(lambda: 2) == 2


# ---- the same, in-process ---------------------------------------------------------------------


@pytest.fixture
def quiet_env(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in list(os.environ):
        if name.startswith("JUDGE_") or name == "DATABASE_URL":
            monkeypatch.delenv(name)
    monkeypatch.chdir(workdir)
    return workdir


async def test_export_in_process(quiet_env: Path, capsys: pytest.CaptureFixture[str]) -> None:
    await store_records(quiet_env / "judge-bot.sqlite3", 2)
    assert await asyncio.to_thread(main, ["verdicts", "export", "--task-id", "t-1"]) == 0
    (line,) = capsys.readouterr().out.splitlines()
    assert json.loads(line)["task_id"] == "t-1"


@pytest.mark.parametrize(
    ("args", "dotenv", "line"),
    [
        ([], "DATABASE_URL=mysql://x\n", "judge-bot: configuration error: DATABASE_URL: must"),
        (["--since", "2026-01-01T09:00"], "", "judge-bot: --since needs a timezone"),
        (["--database-url", "bogus://x"], "", "judge-bot: unsupported storage URL scheme"),
        (
            ["--database-url", "sqlite:////proc/no-such-dir/x.db"],
            "",
            "judge-bot: cannot read the database sqlite:////proc/no-such-dir/x.db (Operational",
        ),
    ],
)
def test_export_failures_in_process(
    quiet_env: Path,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    dotenv: str,
    line: str,
) -> None:
    if dotenv:
        (quiet_env / ".env").write_text(dotenv)
    assert main(["verdicts", "export", *args]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    (err,) = captured.err.splitlines()
    assert err.startswith(line)


def test_judge_with_a_bad_dotenv_in_process(
    quiet_env: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (quiet_env / ".env").write_text(f"JUDGE_QUICK_TIMEOUT=soon\nJUDGE_LLM_API_KEY={SECRET}\n")
    assert main([*JUDGE_ARGS, "research/signal.md"]) == 3
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == (
        "judge-bot: configuration error: JUDGE_QUICK_TIMEOUT: Input should be a valid number, "
        "unable to parse string as a number; nothing was judged\n"
    )


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (
            None,
            "# judge-bot's records (judge-bot install-hook)\n/judge-bot.sqlite3\n"
            "/judge-bot.sqlite3-*\n",
        ),
        (
            "*.log",
            "*.log\n# judge-bot's records (judge-bot install-hook)\n/judge-bot.sqlite3\n"
            "/judge-bot.sqlite3-*\n",
        ),
        (
            "/judge-bot.sqlite3\n/judge-bot.sqlite3-*\n",
            "/judge-bot.sqlite3\n/judge-bot.sqlite3-*\n",
        ),
    ],
    ids=["no file", "no final newline", "already there"],
)
def test_exclude_database(tmp_path: Path, before: str | None, after: str) -> None:
    exclude = tmp_path / "info" / "exclude"
    if before is not None:
        exclude.parent.mkdir()
        exclude.write_text(before)
    assert _exclude_database(exclude) == (before != after)
    assert exclude.read_text() == after


# -- local trials are not throttled (issue 27, defect 7) ---------------------------------


def test_only_local_endpoints_lift_the_spend_limits() -> None:
    from bot.cli.judge import NO_LIMIT, cli_limits
    from bot.judge.settings import JudgeSettings

    local = JudgeSettings(
        _env_file=None, llm_base_url="http://127.0.0.1:11434/v1", quick_model="qwen2.5"
    )
    lifted = cli_limits(local)
    assert (lifted.throttle_per_hour, lifted.daily_call_budget) == (NO_LIMIT, None)
    chosen = JudgeSettings(
        _env_file=None,
        llm_base_url="http://localhost:8080/v1",
        quick_model="qwen2.5",
        throttle_per_hour=2,
    )
    assert cli_limits(chosen).throttle_per_hour == 2, "a limit the user set stays"
    hosted = JudgeSettings(_env_file=None, llm_api_key="sk-x", quick_model="gpt-5-nano")
    assert cli_limits(hosted) == hosted
    mixed = JudgeSettings(
        _env_file=None,
        llm_base_url="http://127.0.0.1:11434/v1",
        quick_model="qwen2.5",
        deep_model="gpt-5",
        deep_base_url="https://api.openai.com/v1",
        deep_api_key="sk-x",
    )
    assert cli_limits(mixed) == mixed
    assert cli_limits(JudgeSettings(_env_file=None)).throttle_per_hour == 20


async def test_a_local_trial_is_not_throttled_and_a_refusal_says_so_on_stderr(
    fake_llm: FakeOpenAIServer, workdir: Path
) -> None:
    fake_llm.api_key = SECRET
    fake_llm.default = Reply.json(ACCEPT)
    args = [*JUDGE_ARGS, "--json", "research/signal.md"]
    code, out, err = await run_cli(workdir, llm_env(fake_llm), *args)
    assert code == 0, err
    # A throttle the user chose still refuses, and says why on stderr even with --json.
    refused = llm_env(fake_llm, JUDGE_THROTTLE_PER_HOUR="0")
    code, out, err = await run_cli(workdir, refused, *args, "--no-cache")
    assert json.loads(out)["final_decision"] == "undetermined"
    assert "judge-bot: not judged: throttled" in err
