"""judge-bot against llama-cpp-python's server, llama.cpp's `llama-server` and Ollama, each
with its defaults (issue 27): every change of the trial ends parsed, not undetermined,
and no judge scored a prompt its server cut without a word.

The servers and the small model behind them are tests/support/fakes/local_servers.py
(its docstring says which bodies are reproduced and from what source); the trial, the
settings a user of the docs' local-model recipe sets and nothing more, is
tests/support/local_trial.py. Each server runs with its own defaults: llama-cpp-python
a 2,048-token context, `llama-server` 4,096 (and a newer build's context from the model,
32,768), Ollama `num_ctx` 4,096 on a laptop CPU. The engine is run as `judge-bot judge`
runs it, and the CLI itself once per server, as a subprocess.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from bot.judge.records import Verdict
from tests.support.fakes.local_servers import (
    SERVERS,
    LlamaServer,
    LocalServer,
    OllamaServer,
    SmallModel,
)
from tests.support.local_trial import CHANGES, document, settings, trial

IDS = [server.name for server in SERVERS]


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("JUDGE_") and name != "JUDGE_TEST_POSTGRES_URL":
            monkeypatch.delenv(name)


@pytest.mark.parametrize(
    "make",
    [*SERVERS, lambda: LlamaServer(context_tokens=32768)],
    ids=[*IDS, "llama-server-context-from-model"],
)
async def test_every_change_ends_parsed_with_the_servers_defaults(
    make: Callable[[], LocalServer],
) -> None:
    async with make() as server:
        result = await trial(server)
    assert Verdict.UNDETERMINED not in result.verdicts, result.summary()
    assert result.truncated == 0, "a judge scored a prompt its server cut without a word"


@pytest.mark.parametrize("make", SERVERS, ids=IDS)
async def test_answers_stay_short_with_the_bounded_schema(
    make: Callable[..., LocalServer],
) -> None:
    """A model that writes every string and list to its bound still ends by itself, a
    few hundred tokens in, under the default output limit (1,024)."""
    async with make(model=SmallModel(verbose=True)) as server:
        result = await trial(server, CHANGES[:1])
    assert result.cut == 0 and result.answers
    assert max(result.answers) <= 450


@pytest.mark.parametrize("make", SERVERS, ids=IDS)
async def test_the_long_change_reaches_its_judges_whole_or_in_parts(
    make: Callable[[], LocalServer],
) -> None:
    """What each judge read is in the record: nothing of the 26,000-character change is
    scored unseen."""
    async with make() as server:
        result = await trial(server, CHANGES[-1:])
    assert result.verdicts == [Verdict.ACCEPT], result.summary()
    assert result.truncated == 0


REPOSITORY = Path(__file__).resolve().parents[2]


def _env(server: LocalServer) -> dict[str, str]:
    """The recipe's settings and nothing else of judge-bot's; this tree's `bot` first."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("JUDGE_") and k not in ("DATABASE_URL", "GIT_JUDGE_SKIP")
    }
    return env | settings(server) | {"PYTHONPATH": str(REPOSITORY)}


async def _judge_cli(server: LocalServer, workdir: Path, *files: str) -> tuple[int, str, str]:
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bot",
        "judge",
        "--task-id",
        "trial-cli",
        "--description",
        "Write the weekly signal report",
        "--acceptance",
        "Names the cause and an action",
        "--json",
        "--database-url",
        f"sqlite:///{workdir / 'judge.sqlite3'}",
        *files,
        cwd=workdir,
        env=_env(server),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await proc.communicate()
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode()


@pytest.mark.parametrize("make", SERVERS, ids=IDS)
async def test_judge_bot_judge_against_the_server(
    make: Callable[[], LocalServer], tmp_path: Path
) -> None:
    """The command a user runs first: a long report judged, a verdict printed."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "long.md").write_text(document("good", 26000))
    async with make() as server:
        code, out, err = await _judge_cli(server, tmp_path, "docs/long.md")
    assert code == 0, err
    assert json.loads(out)["final_decision"] == "accept"
    assert "not judged" not in err
    assert server.chats and not any(c.truncated for c in server.calls)
    assert not any("authorization" in c.headers for c in server.calls)


async def test_a_server_cuts_what_does_not_fit_and_the_fake_shows_it() -> None:
    """The check above can fail: Ollama's cut is visible to the test (not to judge-bot)."""
    async with OllamaServer(context_tokens=1024) as server:
        result = await trial(server, [("good", 9000)], overrides={"context_tokens": 100_000})
    assert result.truncated >= 1
