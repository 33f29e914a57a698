"""The judging counters end to end: a pull request judged through the real app (fake GitHub,
fake LLM) moves the verdict, model-call, token and refusal series that `GET /metrics` shows,
labelled with the mode the repository judged in and never with the repository."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from prometheus_client.parser import text_string_to_metric_families

from bot.github.client import GitHubApp
from tests.support.fakes.github_server import FakeGitHub
from tests.support.fakes.llm_server import FakeOpenAIServer
from tests.support.flow_helpers import (
    ACCEPT,
    DEEP,
    GOOD_DOC,
    IMPROVE,
    QUICK,
    REPO,
    Harness,
    commit_files,
    harness,
    open_pull,
    pull_request_payload,
    scores,
)

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


async def judge_pull(bot: Harness) -> None:
    sha = commit_files(bot.fake, {"docs/notes.md": GOOD_DOC})
    number = open_pull(bot.fake, sha)
    await bot.send("pull_request", pull_request_payload(bot.fake, "opened", number))
    [run] = bot.check_runs(sha=sha)
    assert run.status == "completed"


async def scraped(bot: Harness) -> tuple[str, Samples]:
    response = await bot.client.get("/metrics")
    assert response.status == 200
    text = await response.text()
    samples = {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }
    return text, samples


def value(samples: Samples, name: str, **labels: str) -> float | None:
    return samples.get((name, frozenset(labels.items())))


def set_mode(fake: FakeGitHub, mode: str) -> None:
    fake.add_commit(
        REPO, {".github/judge.yml": f"mode: {mode}\n"}, message="Configure", branch="main"
    )


async def test_an_advisory_quick_accept_is_counted(advisory_bot: Harness) -> None:
    advisory_bot.llm.script(QUICK, scores(*ACCEPT))
    await judge_pull(advisory_bot)
    text, samples = await scraped(advisory_bot)
    verdicts = {"decision": "accept", "mode": "advisory", "go_no_go": "GO"}
    assert value(samples, "judge_verdicts_total", **verdicts) == 1
    assert value(samples, "judge_model_calls_total", tier="quick", outcome="ok") == 1
    assert value(samples, "judge_model_attempts_total", tier="quick") == 1
    assert value(samples, "judge_model_call_seconds_count", tier="quick") == 1
    assert (value(samples, "judge_model_tokens_total", tier="quick", kind="input") or 0) > 0
    assert (value(samples, "judge_model_tokens_total", tier="quick", kind="output") or 0) > 0
    assert value(samples, "judge_verdict_cache_hits_total") == 0
    assert REPO not in text, "a repository is never a label"


async def test_a_blocking_improve_then_deep_accept_is_counted(blocking_bot: Harness) -> None:
    blocking_bot.llm.script(QUICK, scores(*IMPROVE))
    blocking_bot.llm.script(DEEP, scores(*ACCEPT))
    await judge_pull(blocking_bot)
    _, samples = await scraped(blocking_bot)
    verdicts = {"decision": "accept", "mode": "blocking", "go_no_go": "GO"}
    assert value(samples, "judge_verdicts_total", **verdicts) == 1
    assert value(samples, "judge_model_calls_total", tier="quick", outcome="ok") == 1
    assert value(samples, "judge_model_calls_total", tier="deep", outcome="ok") == 1


async def test_a_throttle_refusal_is_counted(
    tmp_path: Path,
    github_keypair: Any,
    fake_github: FakeGitHub,
    github_app: GitHubApp,
    fake_llm: FakeOpenAIServer,
) -> None:
    set_mode(fake_github, "blocking")
    async with harness(
        tmp_path,
        github_keypair.private_pem,
        fake_github,
        github_app,
        fake_llm,
        throttle_per_hour=0,
    ) as bot:
        await judge_pull(bot)
        _, samples = await scraped(bot)
    assert bot.llm.requests == []
    assert value(samples, "judge_refusals_total", reason="throttle") == 1
    verdicts = {"decision": "undetermined", "mode": "blocking", "go_no_go": "UNDETERMINED"}
    assert value(samples, "judge_verdicts_total", **verdicts) == 1
