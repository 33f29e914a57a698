"""`judge-bot doctor` as a user runs it: a real process against the fake LLM server (all
well, a server that refuses `json_schema`, a 500 with a message) and a port nobody listens
on; then the same command in this process, where coverage measures it, with settings that
are wrong or configure nothing too. Exit 0 all answered, 1 one did not, 2 nothing probed;
the key is never printed."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from bot import cli
from tests.support.fakes.llm_server import FakeOpenAIServer, Reply, llama_cpp_python
from tests.support.server_process import free_port

KEY = "sk-doctor-SECRET-0042"
ACCEPT = {"scores": {"semantic": 4, "pragmatic": 4, "syntactic": 5}, "reasoning": "clear"}
QUICK, DEEP = "gpt-5-nano", "kimi-k2.5"


def environment(base_url: str | None, **extra: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("JUDGE_") and k not in ("DATABASE_URL", "ENV_FILE")
    }
    if base_url is not None:
        env.update(
            JUDGE_LLM_BASE_URL=base_url,
            JUDGE_LLM_API_KEY=KEY,
            JUDGE_QUICK_MODEL=QUICK,
            JUDGE_DEEP_MODEL=DEEP,
            JUDGE_QUICK_TIMEOUT="5",
            JUDGE_DEEP_TIMEOUT="5",
        )
    env.update(extra)
    return env


async def doctor(tmp_path: Path, env: dict[str, str], *args: str) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot",
        "doctor",
        *args,
        cwd=tmp_path,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate()
    assert process.returncode is not None
    return process.returncode, out.decode(), err.decode()


@pytest.fixture
def llm(fake_llm: FakeOpenAIServer) -> FakeOpenAIServer:
    fake_llm.api_key = KEY
    fake_llm.default = Reply.json(ACCEPT)
    return fake_llm


async def test_every_tier_answers_exit_0_with_a_table(
    llm: FakeOpenAIServer, tmp_path: Path
) -> None:
    code, out, err = await doctor(tmp_path, environment(llm.base_url))
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].split() == [
        "seat",
        "model",
        "provider",
        "host",
        "result",
        "format",
        "context",
        "latency",
        "why",
    ]
    assert lines[1].split()[:6] == [
        "quick",
        QUICK,
        "openai",
        llm.origin[7:],
        "answered",
        "json_schema",
    ]
    assert lines[2].split()[:2] == ["deep", DEEP]
    assert lines[-1] == "all 2 judges answered a judgment"
    assert any(line.startswith("measured at ") for line in lines)
    assert len(llm.requests) == 2 and KEY not in out


async def test_json_for_machines(llm: FakeOpenAIServer, tmp_path: Path) -> None:
    code, out, err = await doctor(tmp_path, environment(llm.base_url), "--json")
    assert (code, err) == (0, "")
    report = json.loads(out)
    assert report["ok"] is True and report["warnings"] == []
    assert [(t["seat"], t["outcome"], t["response_format"]) for t in report["tiers"]] == [
        ("quick", "answered", "json_schema"),
        ("deep", "answered", "json_schema"),
    ]
    assert report["tiers"][0]["latency_ms"] > 0


async def test_a_server_that_refuses_json_schema_still_works_in_json_object(
    llm: FakeOpenAIServer, tmp_path: Path
) -> None:
    llm.behaviour = llama_cpp_python(context_tokens=8192)
    code, out, _ = await doctor(tmp_path, environment(llm.base_url), "--json")
    assert code == 0
    assert [t["response_format"] for t in json.loads(out)["tiers"]] == ["json_object"] * 2


async def test_a_500_with_a_message_exits_1_and_shows_it_without_the_key(
    llm: FakeOpenAIServer, tmp_path: Path
) -> None:
    llm.script(DEEP, Reply.http(500, f"upstream said: key {KEY} is over quota"))
    code, out, err = await doctor(tmp_path, environment(llm.base_url))
    assert code == 1 and err == ""
    deep = next(line for line in out.splitlines() if line.startswith("deep"))
    assert (
        "refused" in deep and "HTTP 500 from openai: upstream said: key *** is over quota" in deep
    )
    assert out.splitlines()[-1] == (
        f"1 of 2 judges did not answer a judgment: deep {DEEP} (refused)"
    )
    assert KEY not in out + err


async def test_a_refused_connection_exits_1_and_json_says_why_on_stderr_too(
    tmp_path: Path,
) -> None:
    env = environment(f"http://127.0.0.1:{free_port()}/v1")
    code, out, err = await doctor(tmp_path, env, "--json")
    assert code == 1
    tiers = json.loads(out)["tiers"]
    assert [(t["outcome"], t["message"], t["reachable"]) for t in tiers] == [
        ("unreachable", "connection refused", False)
    ] * 2
    assert err == (
        f"judge-bot: 2 of 2 judges did not answer a judgment: quick {QUICK} (unreachable), "
        f"deep {DEEP} (unreachable)\n"
    )


def test_the_help_states_the_exit_statuses(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["doctor", "--help"])
    assert exited.value.code == 0
    text = capsys.readouterr().out
    assert "--json" in text
    for status in ("0  every configured tier", "1  at least one did not", "2  the JUDGE_*"):
        assert status in text


# ---- the same command in this process (coverage measures it here) ---------------------------


@pytest.fixture
def settings_from(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    """Point the settings loader at `environment(...)`: no `.env`, no JUDGE_* but these."""
    monkeypatch.chdir(tmp_path)

    def use(env: dict[str, str]) -> None:
        for name in list(os.environ):
            if name.startswith("JUDGE_") or name == "ENV_FILE":
                monkeypatch.delenv(name)
        for name, value in env.items():
            if name.startswith("JUDGE_"):
                monkeypatch.setenv(name, value)

    return use


@pytest.mark.parametrize(
    ("env", "args", "code", "said"),
    [
        ("working", (), 0, ""),
        ("working", ("--json",), 0, ""),
        ("refused", ("--json",), 1, "judge-bot: 2 of 2 judges did not answer a judgment"),
        ("refused", (), 1, ""),
        ("invalid", (), 2, "judge-bot: configuration error: "),
        ("empty", (), 2, "judge-bot: no judge tier is configured"),
    ],
)
async def test_in_process(
    llm: FakeOpenAIServer,
    settings_from: Any,
    capsys: pytest.CaptureFixture[str],
    env: str,
    args: tuple[str, ...],
    code: int,
    said: str,
) -> None:
    settings_from(
        {
            "working": environment(llm.base_url),
            "refused": environment(f"http://127.0.0.1:{free_port()}/v1"),
            "invalid": environment(llm.base_url, JUDGE_DEEP_TIMEOUT="0"),
            "empty": environment(None),
        }[env]
    )
    assert await asyncio.to_thread(cli.main, ["doctor", *args]) == code
    out, err = capsys.readouterr()
    assert err.startswith(said) and (said or err == "")
    assert KEY not in out + err
    if code == 2:
        assert out == "" and llm.requests == []
        assert "nothing was probed" in err
    elif args:
        assert json.loads(out)["ok"] is (code == 0)
    else:
        assert out.splitlines()[0].startswith("seat") and "judge" in out.splitlines()[-1]
