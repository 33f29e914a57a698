"""The CLI providers (`bot/judge/providers/agent_cli.py`) against stand-in executables: small
Python scripts that behave like `claude -p` and `opencode run` in each case (an answer, a
structured answer, an error envelope, garbage, a hang, a crash), and record what they
were given."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import textwrap
from pathlib import Path
from typing import Any

import httpx
import pytest

from bot.judge.providers import (
    EmptyAnswer,
    MalformedResponse,
    ProviderCommandError,
    ProviderTimeout,
    ProviderTransportError,
    make_provider,
)
from bot.judge.providers.agent_cli import (
    CLIProvider,
    claude_invocation,
    opencode_invocation,
    read_claude_output,
    read_opencode_output,
)
from bot.judge.providers.http import answer_limit
from tests.support.provider_helpers import MESSAGES, SCHEMA

# Every stand-in first records its arguments, stdin, working directory and the
# environment variables the provider sets or removes, next to itself.
_RECORD = """\
import json, os, sys, time
_record = {
    "argv": sys.argv[1:],
    "stdin": sys.stdin.read(),
    "cwd": os.getcwd(),
    "cwd_entries": os.listdir("."),
    "env": {k: os.environ.get(k) for k in (
        "CLAUDECODE", "CLAUDE_CODE_MAX_OUTPUT_TOKENS", "OPENCODE_CONFIG_CONTENT", "KEPT")},
}
with open(os.path.join(os.path.dirname(os.path.abspath(sys.argv[0])), "record.json"), "w") as f:
    json.dump(_record, f)
"""


def standin(tmp_path: Path, body: str, name: str = "claude") -> str:
    path = tmp_path / name
    path.write_text(f"#!{sys.executable}\n{_RECORD}{textwrap.dedent(body)}")
    path.chmod(0o755)
    return str(path)


def record(tmp_path: Path) -> dict[str, Any]:
    result: dict[str, Any] = json.loads((tmp_path / "record.json").read_text())
    return result


def _removed(path: str) -> bool:
    return not Path(path).exists()


def envelope(**fields: Any) -> str:
    base = {
        "type": "result",
        "subtype": "success",
        "is_error": False,
        "result": "",
        "usage": {"input_tokens": 11, "cache_read_input_tokens": 4, "output_tokens": 7},
    }
    return json.dumps({**base, **fields})


def prints(text: str, *, exit_code: int = 0, stderr: str = "") -> str:
    return f"sys.stdout.write({text!r})\nsys.stderr.write({stderr!r})\nsys.exit({exit_code})\n"


async def ask(command: str, kind: str = "claude-cli", **kw: Any) -> Any:
    provider = CLIProvider(kind, command)
    options: dict[str, Any] = {"time_limit": 20.0, "response_schema": SCHEMA, **kw}
    return await provider.complete(model="sonnet", messages=MESSAGES, **options)


# -- claude --------------------------------------------------------------------------


async def test_claude_structured_answer_no_tools_prompt_on_stdin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The structured answer decides; the prompt goes on stdin, the system prompt and
    schema as flags; nothing agentic is left on; it runs in an empty scratch directory."""
    monkeypatch.setenv("CLAUDECODE", "1")
    monkeypatch.setenv("KEPT", "yes")
    answer = {"semantic": 4}
    command = standin(tmp_path, prints(envelope(structured_output=answer, result="")))
    completion = await ask(command, max_tokens=4096)
    assert json.loads(completion.text) == answer
    assert (completion.provider, completion.model) == ("claude-cli", "sonnet")
    assert (completion.prompt_tokens, completion.completion_tokens) == (15, 7)
    seen = record(tmp_path)
    argv = seen["argv"]

    def after(flag: str) -> str:
        return str(argv[argv.index(flag) + 1])

    assert argv[0] == "-p" and after("--output-format") == "json"
    assert after("--model") == "sonnet"
    assert after("--tools") == "" and after("--max-turns") == "2"
    assert after("--mcp-config") == '{"mcpServers":{}}' and "--strict-mcp-config" in argv
    assert after("--setting-sources") == ""
    assert {"--no-session-persistence", "--disable-slash-commands"} <= set(argv)
    assert after("--system-prompt") == MESSAGES[0]["content"]
    assert json.loads(after("--json-schema")) == SCHEMA
    assert seen["stdin"] == MESSAGES[1]["content"]
    assert MESSAGES[1]["content"] not in " ".join(argv)
    assert seen["cwd_entries"] == [] and _removed(seen["cwd"])
    assert seen["env"] == {
        "CLAUDECODE": None,
        "CLAUDE_CODE_MAX_OUTPUT_TOKENS": "4096",
        "OPENCODE_CONFIG_CONTENT": None,
        "KEPT": "yes",
    }
    assert os.environ["CLAUDECODE"] == "1", "the marker is removed from the CLI's copy only"


async def test_claude_result_text_when_no_structured_output(tmp_path: Path) -> None:
    """Some versions put the JSON in `result` instead; the text is passed on for the
    parser, which reads fences and prose."""
    text = 'Here:\n```json\n{"semantic": 3}\n```'
    command = standin(tmp_path, prints(envelope(result=text)))
    assert (await ask(command)).text == text


async def test_claude_list_output_ends_with_the_result(tmp_path: Path) -> None:
    messages = [{"type": "system", "subtype": "init"}, json.loads(envelope(result="{}"))]
    command = standin(tmp_path, prints(json.dumps(messages)))
    assert (await ask(command)).text == "{}"


async def test_claude_error_envelope_fails_with_its_reason(tmp_path: Path) -> None:
    body = envelope(is_error=True, subtype="error_during_execution", result="Not logged in")
    command = standin(tmp_path, prints(body, exit_code=1))
    with pytest.raises(ProviderCommandError) as caught:
        await ask(command)
    assert caught.value.detail == "Not logged in"
    assert "error_during_execution" in str(caught.value)


async def test_claude_out_of_turns_names_the_subtype(tmp_path: Path) -> None:
    command = standin(tmp_path, prints(envelope(is_error=True, subtype="error_max_turns")))
    with pytest.raises(ProviderCommandError) as caught:
        await ask(command)
    assert caught.value.detail == "error_max_turns"


@pytest.mark.parametrize(
    "stdout",
    ["", "not json", "[1, 2]", '{"type": "assistant"}', "[[[" * 2000],
    ids=["nothing", "prose", "list-without-result", "not-a-result", "deep"],
)
async def test_claude_malformed_output(tmp_path: Path, stdout: str) -> None:
    command = standin(tmp_path, prints(stdout))
    with pytest.raises(MalformedResponse):
        await ask(command)


async def test_claude_empty_result_is_an_empty_answer(tmp_path: Path) -> None:
    command = standin(tmp_path, prints(envelope(result="  ", usage="n/a")))
    with pytest.raises(EmptyAnswer):
        await ask(command)


async def test_a_crash_without_envelope_keeps_stderr_redacted(tmp_path: Path) -> None:
    """A non-zero exit with no envelope: the stderr tail is kept, credentials redacted."""
    leak = "ghp_" + "a" * 36
    command = standin(tmp_path, prints("", exit_code=3, stderr=f"boom with {leak}\n"))
    with pytest.raises(ProviderCommandError) as caught:
        await ask(command)
    assert caught.value.exit_code == 3
    assert "boom" in caught.value.detail and leak not in caught.value.detail


async def test_missing_binary_is_a_transport_error(tmp_path: Path) -> None:
    with pytest.raises(ProviderTransportError) as caught:
        await ask(str(tmp_path / "no-such-claude"))
    assert caught.value.cause == "FileNotFoundError"


async def test_not_executable_is_a_transport_error(tmp_path: Path) -> None:
    path = tmp_path / "claude"
    path.write_text("#!/bin/sh\n")
    with pytest.raises(ProviderTransportError) as caught:
        await ask(str(path))
    assert caught.value.cause == "PermissionError"


def _gone(pid: int) -> bool:
    """Whether `pid` has exited (reaped, or a zombie nobody reaped yet)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")


async def _until_gone(pid: int) -> bool:
    for _ in range(200):
        if _gone(pid):
            return True
        await asyncio.sleep(0.05)
    return False


async def test_timeout_kills_the_cli_and_what_it_started(tmp_path: Path) -> None:
    """A hung CLI is killed with its children (its whole process group) at the limit."""
    body = f"""
    import subprocess
    child = subprocess.Popen([{sys.executable!r}, "-c", "import time; time.sleep(60)"])
    with open({str(tmp_path / "pids")!r}, "w") as f:
        f.write(f"{{os.getpid()}} {{child.pid}}")
    time.sleep(60)
    """
    command = standin(tmp_path, body)
    with pytest.raises(ProviderTimeout):
        await ask(command, time_limit=1.0)
    parent, child = (int(p) for p in (tmp_path / "pids").read_text().split())
    assert await _until_gone(parent)
    assert await _until_gone(child)


async def test_cancellation_kills_the_cli(tmp_path: Path) -> None:
    """The engine's own time limit cancels the call; the CLI must not outlive it."""
    body = f"""
    with open({str(tmp_path / "pids")!r}, "w") as f:
        f.write(str(os.getpid()))
    time.sleep(60)
    """
    command = standin(tmp_path, body)
    task = asyncio.create_task(ask(command))
    while not (tmp_path / "pids").exists():
        await asyncio.sleep(0.02)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await _until_gone(int((tmp_path / "pids").read_text()))


@pytest.mark.parametrize("stream", ["stdout", "stderr"])
async def test_a_cli_printing_past_the_limit_is_killed_and_refused(
    tmp_path: Path, stream: str
) -> None:
    """A CLI (and a child it started) that prints far more than any answer and keeps
    its output open: killed at the limit, not at the time limit, and refused."""
    limit = answer_limit(1024)
    body = f"""
    import subprocess
    child = subprocess.Popen([{sys.executable!r}, "-c", "import time; time.sleep(60)"])
    with open({str(tmp_path / "pids")!r}, "w") as f:
        f.write(f"{{os.getpid()}} {{child.pid}}")
    for _ in range({16 * limit // 4096}):
        sys.{stream}.write("x" * 4096)
    sys.{stream}.flush()
    time.sleep(60)
    """
    command = standin(tmp_path, body)
    # The time limit only has to outlast the writing on a loaded machine: the refusal
    # asserted below comes from the output limit, well before the stand-in's sleep ends.
    with pytest.raises(MalformedResponse) as caught:
        await ask(command, time_limit=45.0)
    assert f"printed more than {limit} bytes on {stream}" in str(caught.value)
    parent, child = (int(p) for p in (tmp_path / "pids").read_text().split())
    assert await _until_gone(parent)
    assert await _until_gone(child)


async def test_the_limit_follows_the_output_token_limit(tmp_path: Path) -> None:
    """An envelope past the default limit is read whole when the tier allows the tokens."""
    text = "{}" + " " * (2 * answer_limit(1024))
    command = standin(tmp_path, prints(envelope(result=text)))
    completion = await ask(command, max_tokens=8 * 1024)
    assert completion.text == text


# -- opencode ------------------------------------------------------------------------


def events(*items: dict[str, Any], noise: str = "") -> str:
    lines = [json.dumps({"timestamp": 1, "sessionID": "s", **item}) for item in items]
    return "\n".join([noise, *lines]) + "\n"


TEXT = {"type": "text", "part": {"type": "text", "text": '{"semantic": 5}'}}
FINISH = {
    "type": "step_finish",
    "part": {"type": "step-finish", "tokens": {"input": 30, "output": 9, "reasoning": 50}},
}


async def test_opencode_answer_tokens_and_lockdown(tmp_path: Path) -> None:
    """The text events are the answer, step_finish the tokens; the schema travels as
    instructions in the prompt on stdin, and every tool is denied."""
    out = events({"type": "step_start", "part": {}}, TEXT, FINISH, noise="INFO starting")
    command = standin(tmp_path, prints(out), name="opencode")
    completion = await ask(command, kind="opencode-cli")
    assert json.loads(completion.text) == {"semantic": 5}
    assert (completion.prompt_tokens, completion.completion_tokens) == (30, 9)
    seen = record(tmp_path)
    assert seen["argv"] == ["run", "--model", "sonnet", "--format", "json"]
    assert MESSAGES[0]["content"] in seen["stdin"] and MESSAGES[1]["content"] in seen["stdin"]
    assert '"required": ["semantic"]' in seen["stdin"]
    lockdown = json.loads(seen["env"]["OPENCODE_CONFIG_CONTENT"])
    assert lockdown == {"tools": {"*": False}, "permission": {"*": "deny"}}


async def test_opencode_error_event_without_text(tmp_path: Path) -> None:
    error = {
        "type": "error",
        "error": {"name": "ProviderModelNotFoundError", "data": {"message": "no model sonnet"}},
    }
    command = standin(tmp_path, prints(events(error)), name="opencode")
    with pytest.raises(ProviderCommandError) as caught:
        await ask(command, kind="opencode-cli")
    assert caught.value.detail == "no model sonnet"


@pytest.mark.parametrize(
    ("error", "detail"),
    [({"name": "APIError"}, "APIError"), ("text", "error"), ({}, "error")],
)
def test_opencode_error_texts(error: Any, detail: str) -> None:
    with pytest.raises(ProviderCommandError) as caught:
        read_opencode_output(events({"type": "error", "error": error}), model="m")
    assert caught.value.detail == detail


def test_opencode_text_wins_over_a_later_error_and_odd_events_are_skipped() -> None:
    out = events(
        TEXT,
        {"type": "text", "part": "not a part"},
        {"type": "step_finish", "part": {"tokens": "none"}},
        {"type": "error", "error": {"name": "Late"}},
    )
    answer = read_opencode_output(out + "[1]\n" + '{"no": "type"}\n', model="m")
    assert answer.text == '{"semantic": 5}' and answer.prompt_tokens == 0


async def test_opencode_garbage_exit_zero_is_malformed(tmp_path: Path) -> None:
    command = standin(tmp_path, prints("Error: something\n"), name="opencode")
    with pytest.raises(MalformedResponse):
        await ask(command, kind="opencode-cli")


async def test_opencode_no_text_is_an_empty_answer(tmp_path: Path) -> None:
    command = standin(tmp_path, prints(events(FINISH)), name="opencode")
    with pytest.raises(EmptyAnswer):
        await ask(command, kind="opencode-cli")


# -- the pieces -------------------------------------------------------------------------


def test_invocations_without_schema_or_system() -> None:
    user_only = [{"role": "user", "content": "hi"}]
    claude = claude_invocation("claude", "opus", user_only, None, 1024)
    assert "--json-schema" not in claude.argv and "--system-prompt" not in claude.argv
    assert claude.stdin == "hi"
    opencode = opencode_invocation("opencode", "opencode/gpt-5-nano", user_only, None, 1024)
    assert opencode.stdin == "hi"


def test_claude_usage_ignores_non_numbers() -> None:
    out = envelope(result="{}", usage={"input_tokens": True, "output_tokens": "7"})
    answer = read_claude_output(out, model="m")
    assert (answer.prompt_tokens, answer.completion_tokens) == (0, 0)


def test_claude_error_without_subtype() -> None:
    with pytest.raises(ProviderCommandError) as caught:
        read_claude_output(json.dumps({"type": "result", "is_error": True}), model="m")
    assert caught.value.detail == "error" and "is_error" in str(caught.value)


async def test_factory_builds_cli_providers(http: httpx.AsyncClient) -> None:
    provider = make_provider("opencode-cli", http, "/opt/bin/opencode", "")
    assert isinstance(provider, CLIProvider)
    assert (provider.kind, provider.base_url) == ("opencode-cli", "/opt/bin/opencode")
    assert "opencode" in repr(provider)
    with pytest.raises(ValueError, match="unknown CLI provider"):
        CLIProvider("gemini-cli", "gemini")
