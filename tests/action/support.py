"""Running `judge-bot action` as a workflow step would: a real subprocess (or, for the
coverage of this process, the same command in a thread) with the runner's environment,
the event file GitHub writes, the fake GitHub and the fake LLM.

Event payloads are the webhook examples of tests/fixtures (built by flow_helpers and
validated against GitHub's webhook schemas) without their `installation`, which a
workflow's event does not need.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from bot.cli import main
from bot.judge.records import VerdictRecord
from tests.support.fakes.github_server import FakeGitHub
from tests.support.fakes.llm_server import FakeOpenAIServer
from tests.support.flow_helpers import DEEP, QUICK, REPO, TIEBREAKER

MAINTAINER = "maintainer"
# A hosted judge's endpoint (a public name): without its key it cannot judge. No test
# calls it: a run that lacks the key asks nobody.
HOSTED = "https://llm.example.com/v1"


@dataclass
class Step:
    """One workflow step's run: its exit status, what it printed and wrote."""

    status: int
    stdout: str
    stderr: str
    outputs: dict[str, str]
    summary: str
    records: list[VerdictRecord]
    cache_kept: bool = False


@dataclass
class Runner:
    """A workflow job's runner: its temp directory (the cached state lives there), the
    token the job gets, and the judges' settings the action passes."""

    fake: FakeGitHub
    llm: FakeOpenAIServer
    home: Path
    token: str
    judges: dict[str, str] = field(default_factory=dict)
    in_process: bool = False
    monkeypatch: pytest.MonkeyPatch | None = None
    runs: int = 0

    def environment(self, event_name: str, event_path: Path, **extra: str) -> dict[str, str]:
        self.runs += 1
        run = self.home / f"run-{self.runs}"
        run.mkdir(parents=True, exist_ok=True)
        inherited = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith(("JUDGE_", "GITHUB_", "RUNNER_", "LOG_"))
        }
        return {
            **inherited,
            "GITHUB_EVENT_NAME": event_name,
            "GITHUB_EVENT_PATH": str(event_path),
            "GITHUB_REPOSITORY": REPO,
            "GITHUB_API_URL": self.fake.base_url,
            "GITHUB_GRAPHQL_URL": self.fake.graphql_url,
            "GITHUB_TOKEN": self.token,
            "GITHUB_RUN_ID": str(1000 + self.runs),
            "GITHUB_RUN_ATTEMPT": "1",
            "GITHUB_STEP_SUMMARY": str(run / "summary.md"),
            "GITHUB_OUTPUT": str(run / "output.txt"),
            "RUNNER_TEMP": str(self.home / "temp"),
            "JUDGE_GITHUB_WRITE_INTERVAL": "0.001",
            **self.judges,
            **extra,
        }

    async def step(self, event_name: str, payload: Mapping[str, Any], **extra: str) -> Step:
        """Run `judge-bot action` for one event, as the action's step does."""
        event_path = self.home / f"event-{self.runs + 1}.json"
        event_path.write_text(json.dumps(payload), encoding="utf-8")
        env = self.environment(event_name, event_path, **extra)
        if self.in_process:
            status, stdout, stderr = await self._in_thread(env)
        else:
            status, stdout, stderr = await run_process(env, self.home)
        return read_step(env, status, stdout, stderr)

    async def _in_thread(self, env: dict[str, str]) -> tuple[int, str, str]:
        assert self.monkeypatch is not None
        for name in list(os.environ):
            if name.startswith(("JUDGE_", "GITHUB_", "RUNNER_", "LOG_")):
                self.monkeypatch.delenv(name)
        for name, value in env.items():
            self.monkeypatch.setenv(name, value)
        self.monkeypatch.chdir(self.home)
        status = await asyncio.to_thread(main, ["action"])
        return status, "", ""


PROCESS_SECONDS = 60


async def run_process(env: Mapping[str, str], cwd: Path, *args: str) -> tuple[int, str, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot",
        *(args or ("action",)),
        env=dict(env),
        cwd=cwd,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    async with asyncio.timeout(PROCESS_SECONDS):
        stdout, stderr = await process.communicate()
    assert process.returncode is not None
    return process.returncode, stdout.decode(), stderr.decode()


def read_step(env: Mapping[str, str], status: int, stdout: str, stderr: str) -> Step:
    outputs: dict[str, str] = {}
    output_file = Path(env["GITHUB_OUTPUT"] or "no-output")
    if output_file.is_file():
        for line in output_file.read_text(encoding="utf-8").splitlines():
            name, _, value = line.partition("=")
            outputs[name] = value
    summary_file = Path(env["GITHUB_STEP_SUMMARY"] or "no-summary")
    summary = summary_file.read_text(encoding="utf-8") if summary_file.is_file() else ""
    records: list[VerdictRecord] = []
    if "record-path" in outputs:
        text = Path(outputs["record-path"]).read_text(encoding="utf-8")
        records = [VerdictRecord.from_jsonl(line) for line in text.splitlines()]
    cache = Path(outputs.get("cache-path") or "no-cache")
    return Step(status, stdout, stderr, outputs, summary, records, cache.is_file())


def judges(llm: FakeOpenAIServer) -> dict[str, str]:
    """The judges' settings as the action's inputs pass them (the key from a secret)."""
    return {
        "JUDGE_LLM_BASE_URL": llm.base_url,
        "JUDGE_LLM_API_KEY": llm.api_key,
        "JUDGE_LLM_PROVIDER": "openai",
        "JUDGE_QUICK_MODEL": QUICK,
        "JUDGE_DEEP_MODEL": DEEP,
        "JUDGE_TIEBREAKER_MODEL": TIEBREAKER,
        "JUDGE_THROTTLE_PER_HOUR": "1000",
    }


def workflow_event(payload: dict[str, Any], *, fork: str | None = None) -> dict[str, Any]:
    """A webhook example as a workflow's event file holds it: no installation; the pull
    request's head in this repository, or in `fork`."""
    event: dict[str, Any] = json.loads(json.dumps(payload))
    event.pop("installation", None)
    pull = event.get("pull_request")
    if pull is not None:
        pull["base"]["repo"]["full_name"] = REPO
        pull["head"]["repo"]["full_name"] = fork or REPO
    return event
