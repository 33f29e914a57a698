"""Loop prevention end to end: webhook -> judge -> breaker -> the fake GitHub; a person's
`/judge rerun` resets it. The model calls are counted at the fake LLM."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from bot.app import SERVICES
from bot.github.client import GitHubApp
from bot.merging.breaker import BreakerState
from bot.merging.breaker_flow import load_breaker
from bot.notify.notices import Notice, NoticeKind
from bot.notify.sender import Notifier
from bot.settings.notify import NotifySettings
from bot.storage.base import MergeStatus, Storage
from tests.support.fakes.github_server import FakeGitHub
from tests.support.fakes.llm_server import FakeOpenAIServer
from tests.support.flow_helpers import (
    ACCEPT,
    DEEP,
    QUICK,
    REJECT,
    REPO,
    Harness,
    comment_payload,
    commit_files,
    open_pull,
    pull_request_payload,
    rejected_pull,
    scores,
)
from tests.support.merge_helpers import (
    fast_settings,
    merge_harness,
    pr_event,
    until_status,
    wait_for,
)

pytestmark = pytest.mark.usefixtures("fake_github")
NEEDS_HUMAN = "judge:needs-human"


class RecordingNotifier(Notifier):
    """The real notifier's interface; what it would post is kept for the test."""

    def __init__(self, storage: Storage) -> None:
        settings = NotifySettings(notify_url="http://127.0.0.1:9/hook")
        super().__init__(settings, httpx.AsyncClient(), storage)
        self.posted: list[Notice] = []

    def post(self, notice: Notice) -> None:
        self.posted.append(notice)


@pytest.fixture
def make_bot(
    tmp_path: Path,
    github_keypair: Any,
    fake_github: FakeGitHub,
    github_app: GitHubApp,
    fake_llm: FakeOpenAIServer,
) -> Callable[..., Any]:
    def build(**settings: Any) -> Any:
        return merge_harness(
            tmp_path,
            github_keypair.private_pem,
            fake_github,
            github_app,
            fake_llm,
            fast_settings(**settings),
        )

    return build


def recorder(bot: Harness) -> RecordingNotifier:
    notifier = RecordingNotifier(bot.storage)
    bot.app[SERVICES].services.notifier = notifier
    return notifier


def model_calls(bot: Harness) -> int:
    return len(bot.llm.requests_for(QUICK)) + len(bot.llm.requests_for(DEEP))


async def push(bot: Harness, number: int, text: str) -> str:
    """A new commit on the pull request whose notes read `text`, and its synchronize."""
    old = bot.fake.repo(REPO).pulls[number].head_sha
    sha = bot.fake.merges.push(REPO, number, {"docs/notes.md": text})
    await bot.send("pull_request", pr_event(bot.fake, "synchronize", number, before=old))
    return sha


def reject_next(bot: Harness) -> None:
    bot.llm.script(QUICK, scores(*REJECT))
    bot.llm.script(DEEP, scores(*REJECT))


async def breaker_state(bot: Harness, number: int) -> BreakerState | None:
    return await load_breaker(bot.storage, REPO, number)


def labels(bot: Harness, number: int) -> list[str]:
    return list(bot.fake.repo(REPO).issues[number].labels)


async def rerun(bot: Harness, number: int) -> None:
    bot.fake.set_permission(REPO, "maintainer", "write")
    await bot.send("issue_comment", comment_payload(REPO, number, "/judge rerun", "maintainer"))


async def test_non_approve_breaker_trips_then_a_rerun_resets_it(make_bot: Any) -> None:
    async with make_bot(
        non_approve_circuit_breaker_retries=2,
        doom_loop_circuit_breaker_retries=0,
        awaiting_retry_cooldown_ms=0,
    ) as bot:
        notifier = recorder(bot)
        number, first = await rejected_pull(bot)
        assert NEEDS_HUMAN not in labels(bot, number)
        reject_next(bot)
        second = await push(bot, number, "# Notes\n\nstill thin\n")
        [run] = bot.check_runs(sha=second)
        assert "not judged" not in run.output["title"]
        assert "non-approve circuit breaker" in run.output["summary"]
        assert NEEDS_HUMAN in labels(bot, number)
        [comment] = [c for c in bot.comments(number) if "[Needs-Human]" in c]
        assert "2 consecutive judgments were not accept" in comment
        [notice] = notifier.posted
        assert notice.kind is NoticeKind.CIRCUIT_BREAKER
        assert notice.key == f"circuit-breaker:{REPO}#{number}:1"

        calls = model_calls(bot)
        third = await push(bot, number, "# Notes\n\nthird try\n")
        [held] = bot.check_runs(sha=third)
        assert held.conclusion == "neutral"
        assert "non-approve circuit breaker" in held.output["title"]
        assert "/judge rerun" in held.output["summary"]
        assert model_calls(bot) == calls

        bot.llm.script(QUICK, scores(*ACCEPT))
        await rerun(bot, number)
        assert NEEDS_HUMAN not in labels(bot, number)
        [judged] = bot.check_runs(sha=third)
        assert judged.conclusion == "success"
        assert model_calls(bot) == calls + 1
        assert first != second
        assert len(notifier.posted) == 1


async def test_doom_loop_trips_on_the_same_content_without_a_model_call(make_bot: Any) -> None:
    async with make_bot(
        non_approve_circuit_breaker_retries=0,
        doom_loop_circuit_breaker_retries=2,
        awaiting_retry_cooldown_ms=0,
    ) as bot:
        number, _ = await rejected_pull(bot)
        calls = model_calls(bot)
        reject_next(bot)
        other = await push(bot, number, "# Notes\n\nsomething else, still thin\n")
        assert model_calls(bot) > calls
        assert NEEDS_HUMAN not in labels(bot, number)
        calls = model_calls(bot)
        again = await push(bot, number, "# Notes\n\nthin\n")  # the first content, back
        assert model_calls(bot) == calls  # no model call for a repeat
        [run] = bot.check_runs(sha=again)
        assert "doom-loop circuit breaker" in run.output["summary"]
        assert NEEDS_HUMAN in labels(bot, number)
        assert other != again
        held = await push(bot, number, "# Notes\n\nnew\n")
        [neutral] = bot.check_runs(sha=held)
        assert neutral.conclusion == "neutral"
        assert model_calls(bot) == calls

        # Someone took the label off already; the rerun resets all the same, and a
        # second rerun finds nothing to reset.
        bot.fake.repo(REPO).issues[number].labels.remove(NEEDS_HUMAN)
        reject_next(bot)
        await rerun(bot, number)
        assert "not judged" not in bot.check_runs(sha=held)[0].output["title"]
        assert await breaker_state(bot, number) is not None  # the rerun's own reject
        reject_next(bot)
        await rerun(bot, number)
        assert NEEDS_HUMAN not in labels(bot, number)


async def test_same_content_within_the_cooldown_is_not_judged_again(make_bot: Any) -> None:
    async with make_bot(
        non_approve_circuit_breaker_retries=0,
        doom_loop_circuit_breaker_retries=0,
        awaiting_retry_cooldown_ms=600_000,
    ) as bot:
        number, _ = await rejected_pull(bot)
        calls = model_calls(bot)
        same = await push(bot, number, "# Notes\n\nthin\n")
        [run] = bot.check_runs(sha=same)
        assert run.conclusion == "neutral"
        assert "cooling down" in run.output["title"]
        assert model_calls(bot) == calls
        reject_next(bot)
        fresh = await push(bot, number, "# Notes\n\nrewritten\n")
        [judged] = bot.check_runs(sha=fresh)
        assert "not judged" not in judged.output["title"]
        assert model_calls(bot) > calls


async def test_a_held_loop_is_not_a_pass_in_blocking_mode(make_bot: Any) -> None:
    """Re-pushing rejected content within the cooldown saves the model calls; in blocking
    mode the held run asks for a maintainer instead of passing the required check."""
    async with make_bot(
        non_approve_circuit_breaker_retries=0,
        doom_loop_circuit_breaker_retries=0,
        awaiting_retry_cooldown_ms=600_000,
    ) as bot:
        bot.fake.add_commit(
            REPO, {".github/judge.yml": "mode: blocking\n"}, message="Configure", branch="main"
        )
        number, _ = await rejected_pull(bot)
        calls = model_calls(bot)
        same = await push(bot, number, "# Notes\n\nthin\n")
        [run] = bot.check_runs(sha=same)
        assert run.conclusion == "action_required"
        assert "cooling down" in run.output["title"]
        assert "comment `/judge rerun` to judge it anyway" in run.output["summary"]
        assert model_calls(bot) == calls


async def test_without_requeue_a_push_after_a_reject_waits_for_a_person(make_bot: Any) -> None:
    async with make_bot(requeue_on_non_approve=False, awaiting_retry_cooldown_ms=0) as bot:
        number, _ = await rejected_pull(bot)
        sha = await push(bot, number, "# Notes\n\nrewritten\n")
        [run] = bot.check_runs(sha=sha)
        assert run.conclusion == "neutral"
        assert "waiting for /judge rerun" in run.output["title"]
        bot.llm.script(QUICK, scores(*ACCEPT))
        await rerun(bot, number)
        [judged] = bot.check_runs(sha=sha)
        assert judged.conclusion == "success"


async def test_merge_escalation_posts_one_notice(make_bot: Any) -> None:
    async with make_bot() as bot:
        notifier = recorder(bot)
        sha = commit_files(bot.fake, {"docs/notes.md": "# Notes\n\nSourced.\n"})
        number = open_pull(bot.fake, sha)
        bot.fake.repo(REPO).pulls[number].conflict = True
        bot.llm.script(QUICK, scores(*ACCEPT))
        await bot.send("pull_request", pull_request_payload(bot.fake, "opened", number))
        await until_status(bot, number, MergeStatus.ESCALATED)

        def escalations() -> list[Notice]:
            return [n for n in notifier.posted if n.kind is NoticeKind.MERGE_ESCALATION]

        await wait_for(escalations, what="the escalation notice")  # told after settling
        [notice] = escalations()
        assert notice.key == f"merge-escalation:{REPO.lower()}#{number}:{sha}"


async def test_rerun_of_an_accepted_pull_request_has_nothing_to_reset(make_bot: Any) -> None:
    async with make_bot(merge_on_approve=False) as bot:
        sha = commit_files(bot.fake, {"docs/notes.md": "# Notes\n\nSourced.\n"})
        number = open_pull(bot.fake, sha)
        bot.llm.script(QUICK, scores(*ACCEPT), scores(*ACCEPT))
        await bot.send("pull_request", pull_request_payload(bot.fake, "opened", number))
        assert await breaker_state(bot, number) is None
        await rerun(bot, number)
        [run] = bot.check_runs(sha=sha)
        assert run.conclusion == "success"
        assert NEEDS_HUMAN not in labels(bot, number)
