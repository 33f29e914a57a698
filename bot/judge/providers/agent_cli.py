"""Judges run through a local agent CLI instead of an HTTP API: `claude -p` and `opencode run`.

For local use and the pre-push hook, where a developer's CLI is already logged in. The
CLI is an agent, so each call shuts everything agentic off: no tools, no MCP servers, no
settings, hooks or slash commands, no saved session, and an empty temporary working
directory (the repository's CLAUDE.md or opencode.json would otherwise join the prompt,
and a judge must not read or run anything). The prompt travels on stdin, never in argv
(files under review can be large and would show in `ps`).

    claude       -p --output-format json --json-schema SCHEMA --tools "" --max-turns 2 ...
                 prints one envelope {"type": "result", "is_error", "result",
                 "structured_output", "usage"}; with a schema the answer is
                 `structured_output` (some versions leave it out and put the JSON in
                 `result`, which the parser reads as well). `--json-schema` answers through
                 a tool call, which uses a turn of its own: with one turn the CLI stops with
                 error_max_turns before answering. With no tools there is nothing else a
                 second turn could do.
    opencode     run --model M --format json
                 prints one JSON event per line; the answer is the `text` events, tokens
                 come with `step_finish`, failures as `error`. It has no schema switch, so
                 the schema goes into the prompt as instructions, and tools are denied
                 through OPENCODE_CONFIG_CONTENT.

Failures are the HTTP providers' (bot/judge/providers/http.py), so the engine fails open
the same way: the time limit kills the CLI's whole process group -> ProviderTimeout; a
missing or unrunnable command -> ProviderTransportError; output that is not the CLI's
envelope -> MalformedResponse; an envelope without text -> EmptyAnswer; a CLI that says it
failed (or exits non-zero without an envelope) -> ProviderCommandError. Either stream
printing more than an HTTP answer may take (`answer_limit` in providers/http.py) kills the
group as the time limit does -> MalformedResponse; opencode is held to it too, though it
takes its token limit from its own catalogue.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bot.credentials import redact
from bot.judge.providers.http import (
    Completion,
    MalformedResponse,
    OutputMode,
    ProviderCommandError,
    ProviderTimeout,
    ProviderTransportError,
    answer_limit,
    completion_of,
    with_instructions,
)

CLAUDE_CLI = "claude-cli"
OPENCODE_CLI = "opencode-cli"
CLI_PROVIDERS: dict[str, str] = {CLAUDE_CLI: "claude", OPENCODE_CLI: "opencode"}
"""Each CLI provider's name and the command it runs unless configured otherwise."""

_DETAIL_LIMIT = 300
_READ_SIZE = 64 * 1024
# Every tool denied, in both spellings opencode has accepted (`tools` before 1.1.1,
# `permission` since); `opencode run` also rejects any permission it would ask for.
_OPENCODE_LOCKDOWN = json.dumps(
    {"tools": {"*": False}, "permission": {"*": "deny"}}, separators=(",", ":")
)
# Set by Claude Code in the shells it runs; a `claude` started from one (a pre-push hook
# run by an agent) refuses to start while it is set.
_NESTED_SESSION_MARKERS = ("CLAUDECODE",)


@dataclass(frozen=True)
class Invocation:
    """One CLI run: its arguments, what it reads on stdin, and environment additions."""

    argv: tuple[str, ...]
    stdin: str
    env: Mapping[str, str]


@dataclass(frozen=True)
class CLIAnswer:
    text: str
    prompt_tokens: int
    completion_tokens: int


@dataclass(frozen=True)
class Finished:
    """What a CLI run left behind."""

    exit_code: int
    stdout: str
    stderr: str


def _turns(messages: Sequence[Mapping[str, str]]) -> str:
    return "\n\n".join(m.get("content", "") for m in messages)


def claude_invocation(
    command: str,
    model: str,
    messages: Sequence[Mapping[str, str]],
    schema: Mapping[str, Any] | None,
    max_tokens: int,
) -> Invocation:
    system = "\n\n".join(m.get("content", "") for m in messages if m.get("role") == "system")
    argv = [
        command,
        "-p",
        "--output-format",
        "json",
        "--model",
        model,
        "--tools",
        "",
        "--max-turns",
        "2",
        "--no-session-persistence",
        "--strict-mcp-config",
        "--mcp-config",
        '{"mcpServers":{}}',
        "--setting-sources",
        "",
        "--disable-slash-commands",
    ]
    if system:
        argv += ["--system-prompt", system]
    if schema is not None:
        argv += ["--json-schema", json.dumps(schema, sort_keys=True, separators=(",", ":"))]
    turns = [m for m in messages if m.get("role") != "system"]
    return Invocation(
        tuple(argv), _turns(turns), {"CLAUDE_CODE_MAX_OUTPUT_TOKENS": str(max_tokens)}
    )


def opencode_invocation(
    command: str,
    model: str,
    messages: Sequence[Mapping[str, str]],
    schema: Mapping[str, Any] | None,
    max_tokens: int,
) -> Invocation:
    del max_tokens  # opencode takes the limit from its own model catalogue
    argv = (command, "run", "--model", model, "--format", "json")
    return Invocation(
        argv,
        _turns(with_instructions(messages, schema)),
        {"OPENCODE_CONFIG_CONTENT": _OPENCODE_LOCKDOWN},
    )


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _claude_envelope(stdout: str) -> dict[str, Any] | None:
    """The `result` envelope; older versions print a list of messages ending with it."""
    try:
        payload = json.loads(stdout)
    except (ValueError, RecursionError):
        return None
    if isinstance(payload, list):
        results = [p for p in payload if isinstance(p, dict) and p.get("type") == "result"]
        payload = results[-1] if results else None
    if isinstance(payload, dict) and payload.get("type") == "result":
        return payload
    return None


def read_claude_output(stdout: str, *, model: str) -> CLIAnswer:
    """The answer in `claude -p --output-format json` output (see the module docstring)."""
    envelope = _claude_envelope(stdout.strip())
    if envelope is None:
        raise MalformedResponse(
            f"{CLAUDE_CLI} printed no result envelope for model {model}",
            provider=CLAUDE_CLI,
            model=model,
        )
    structured = envelope.get("structured_output")
    result = envelope.get("result")
    if isinstance(structured, dict):
        text = json.dumps(structured)
    elif envelope.get("is_error") is True:
        subtype = envelope.get("subtype")
        reason = result if isinstance(result, str) and result else str(subtype or "error")
        raise ProviderCommandError(
            f"{CLAUDE_CLI} reported an error for model {model} ({subtype or 'is_error'})",
            provider=CLAUDE_CLI,
            model=model,
            exit_code=None,
            detail=redact(reason)[:_DETAIL_LIMIT],
        )
    else:
        text = result if isinstance(result, str) else ""
    usage = envelope.get("usage")
    counts = usage if isinstance(usage, dict) else {}
    prompt = sum(
        _count(counts.get(key))
        for key in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    )
    return CLIAnswer(text, prompt, _count(counts.get("output_tokens")))


def _events(stdout: str) -> list[dict[str, Any]]:
    events = []
    for line in stdout.splitlines():
        if not line.lstrip().startswith("{"):
            continue  # a stray log line between events: not an object, so not decoded
        try:
            event = json.loads(line)
        except (ValueError, RecursionError):
            continue  # a log line that only starts like an object
        if isinstance(event, dict) and isinstance(event.get("type"), str):
            events.append(event)
    return events


def _error_text(event: Mapping[str, Any]) -> str:
    error = event.get("error")
    if not isinstance(error, dict):
        return "error"
    data = error.get("data")
    if isinstance(data, dict) and isinstance(data.get("message"), str):
        return str(data["message"])
    return str(error.get("name") or "error")


def read_opencode_output(stdout: str, *, model: str) -> CLIAnswer:
    """The answer in `opencode run --format json` events (see the module docstring)."""
    events = _events(stdout)
    if not events:
        raise MalformedResponse(
            f"{OPENCODE_CLI} printed no JSON events for model {model}",
            provider=OPENCODE_CLI,
            model=model,
        )
    texts: list[str] = []
    errors: list[str] = []
    prompt = completion = 0
    for event in events:
        part = event.get("part")
        part = part if isinstance(part, dict) else {}
        if event["type"] == "text" and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif event["type"] == "step_finish" and isinstance(part.get("tokens"), dict):
            prompt += _count(part["tokens"].get("input"))
            completion += _count(part["tokens"].get("output"))
        elif event["type"] == "error":
            errors.append(_error_text(event))
    text = "\n".join(texts)
    if errors and not text.strip():
        raise ProviderCommandError(
            f"{OPENCODE_CLI} reported an error for model {model}",
            provider=OPENCODE_CLI,
            model=model,
            exit_code=None,
            detail=redact("; ".join(errors))[:_DETAIL_LIMIT],
        )
    return CLIAnswer(text, prompt, completion)


def _environment(additions: Mapping[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _NESTED_SESSION_MARKERS}
    env.update(additions)
    return env


def _kill_group(process: asyncio.subprocess.Process) -> None:
    # The CLI runs in its own session, so its group id is its pid; killing the group also
    # stops what it started (opencode's server, node helpers).
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(process.pid, signal.SIGKILL)


async def _feed(process: asyncio.subprocess.Process, data: bytes) -> None:
    assert process.stdin is not None
    try:
        process.stdin.write(data)
        await process.stdin.drain()
    except (BrokenPipeError, ConnectionResetError):
        pass  # the CLI exited or closed stdin without reading it all; its output decides
    finally:
        process.stdin.close()


async def _drain(
    process: asyncio.subprocess.Process, stream: asyncio.StreamReader, limit: int
) -> bytes | None:
    """What the CLI printed on `stream`; None once that passed `limit` bytes, when its
    group is killed at once (which also ends the other stream)."""
    chunks: list[bytes] = []
    size = 0
    while chunk := await stream.read(_READ_SIZE):
        size += len(chunk)
        if size > limit:
            _kill_group(process)
            return None
        chunks.append(chunk)
    return b"".join(chunks)


async def _exchange(
    process: asyncio.subprocess.Process, stdin: bytes, limit: int
) -> tuple[bytes | None, bytes | None]:
    """Stdout and stderr (each None if it passed `limit` bytes), once the CLI has exited."""
    assert process.stdout is not None and process.stderr is not None
    _, stdout, stderr = await asyncio.gather(
        _feed(process, stdin),
        _drain(process, process.stdout, limit),
        _drain(process, process.stderr, limit),
    )
    await process.wait()
    return stdout, stderr


async def run_cli(
    invocation: Invocation,
    *,
    time_limit: float,
    provider: str,
    model: str,
    output_limit: int,
) -> Finished:
    """Run the CLI in an empty temporary directory; kill it (and its children) when it
    outlives `time_limit`, prints more than `output_limit` bytes on stdout or on stderr,
    or the caller is cancelled."""
    name = os.path.basename(invocation.argv[0]) or invocation.argv[0]
    with tempfile.TemporaryDirectory(prefix="judge-cli-") as workdir:
        try:
            process = await asyncio.create_subprocess_exec(
                *invocation.argv,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                cwd=workdir,
                env=_environment(invocation.env),
                start_new_session=True,
            )
        except OSError as exc:
            raise ProviderTransportError(
                f"{provider} could not start {name!r} for model {model}: {type(exc).__name__}",
                provider=provider,
                model=model,
                cause=type(exc).__name__,
            ) from None
        try:
            stdout, stderr = await asyncio.wait_for(
                _exchange(process, invocation.stdin.encode("utf-8"), output_limit),
                timeout=time_limit,
            )
        except TimeoutError:
            raise ProviderTimeout(
                f"{provider} call to model {model} timed out after {time_limit:g}s",
                provider=provider,
                model=model,
            ) from None
        finally:
            _kill_group(process)
            await process.wait()
    if stdout is None or stderr is None:
        raise MalformedResponse(
            f"{provider} printed more than {output_limit} bytes on "
            f"{'stdout' if stdout is None else 'stderr'} for model {model}",
            provider=provider,
            model=model,
        )
    return Finished(
        process.returncode if process.returncode is not None else -1,
        stdout.decode("utf-8", errors="replace"),
        stderr.decode("utf-8", errors="replace"),
    )


_FORMATS = {
    CLAUDE_CLI: (claude_invocation, read_claude_output),
    OPENCODE_CLI: (opencode_invocation, read_opencode_output),
}


class CLIProvider:
    """A judge behind a local CLI; `base_url` is the command (it names the seat in the
    verdict cache's key as an endpoint would)."""

    def __init__(self, kind: str, command: str) -> None:
        if kind not in _FORMATS:
            raise ValueError(f"unknown CLI provider {kind!r}")
        self.kind = kind
        self.base_url = command

    def __repr__(self) -> str:
        return f"CLIProvider(kind={self.kind!r}, command={self.base_url!r})"

    async def complete(
        self,
        *,
        model: str,
        messages: Sequence[Mapping[str, str]],
        time_limit: float,
        response_schema: Mapping[str, Any] | None = None,
        schema_name: str = "verdict",
        max_tokens: int = 1024,
        output_mode: OutputMode | None = None,
        temperature: float = 0.0,
    ) -> Completion:
        # Neither CLI names its schema, takes a format or a temperature.
        del schema_name, output_mode, temperature
        build, read = _FORMATS[self.kind]
        invocation = build(self.base_url, model, messages, response_schema, max_tokens)
        started = time.perf_counter()
        finished = await run_cli(
            invocation,
            time_limit=time_limit,
            provider=self.kind,
            model=model,
            output_limit=answer_limit(max_tokens),
        )
        latency_ms = (time.perf_counter() - started) * 1000.0
        try:
            # In a thread: opencode's events are decoded a line at a time, in Python, and
            # a stream of tiny lines up to the output limit takes a few hundred ms.
            answer = await asyncio.to_thread(read, finished.stdout, model=model)
        except MalformedResponse:
            if finished.exit_code == 0:
                raise
            raise ProviderCommandError(
                f"{self.kind} exited with status {finished.exit_code} for model {model}",
                provider=self.kind,
                model=model,
                exit_code=finished.exit_code,
                detail=redact(finished.stderr.strip())[-_DETAIL_LIMIT:],
            ) from None
        usage = {"usage": {"in": answer.prompt_tokens, "out": answer.completion_tokens}}
        return completion_of(self.kind, model, answer.text, usage, latency_ms, ("in", "out"))
