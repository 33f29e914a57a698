"""Review mode end to end: webhook -> judge -> the outcome as a pull-request review at
the fake GitHub (validated against GitHub's REST description)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bot.github.client import GitHubApp
from tests.support.fakes.github_server import FakeGitHub
from tests.support.fakes.llm_server import FakeOpenAIServer
from tests.support.flow_helpers import (
    ACCEPT,
    DEEP,
    IMPROVE,
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
from tests.support.merge_helpers import accepted_pull, fast_settings, merge_harness, pr_event

pytestmark = pytest.mark.usefixtures("fake_github")
APP = "judge-bot[bot]"


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
            fast_settings(merge_on_approve=False, **settings),
        )

    return build


def reviews(bot: Harness, number: int) -> list[Any]:
    return [r for r in bot.fake.repo(REPO).pulls[number].reviews if r.login == APP]


async def test_accept_approves_the_judged_commit(make_bot: Any) -> None:
    async with make_bot(review=True) as bot:
        number, sha = await accepted_pull(bot)
        [review] = reviews(bot, number)
        assert (review.state, review.commit_id) == ("APPROVED", sha)
        assert f"**accept** at `{sha[:7]}`" in review.body
        # The same outcome met again (GitHub's Re-run by nobody authorised is refused;
        # a redelivered event finds the sha judged) submits nothing more.
        await bot.send("pull_request", pull_request_payload(bot.fake, "reopened", number))
        assert len(reviews(bot, number)) == 1


async def test_reject_requests_changes_with_the_improvements(make_bot: Any) -> None:
    async with make_bot(review=True) as bot:
        bot.llm.script(QUICK, scores(*REJECT, improvements=["Cite a source for each claim"]))
        bot.llm.script(DEEP, scores(*REJECT, improvements=["Cite a source for each claim"]))
        sha = commit_files(bot.fake, {"docs/notes.md": "# Notes\n\nthin\n"})
        number = open_pull(bot.fake, sha)
        await bot.send("pull_request", pull_request_payload(bot.fake, "opened", number))
        [review] = reviews(bot, number)
        assert review.state == "CHANGES_REQUESTED"
        assert "- Cite a source for each claim" in review.body
        assert review.body.count("Cite a source") == 1


async def test_escalate_comments_and_an_override_approves(make_bot: Any) -> None:
    async with make_bot(review=True) as bot:
        bot.llm.script(QUICK, scores(*IMPROVE), scores(*IMPROVE))
        bot.llm.script(DEEP, scores(*IMPROVE), scores(*IMPROVE))
        sha = commit_files(bot.fake, {"docs/notes.md": "# Notes\n\nmaybe\n"})
        number = open_pull(bot.fake, sha)
        await bot.send("pull_request", pull_request_payload(bot.fake, "opened", number))
        assert len(bot.issues()) == 1  # the judges disagree: escalated
        [review] = reviews(bot, number)
        assert review.state == "COMMENTED"
        assert "a person decides" in review.body
        bot.fake.set_permission(REPO, "maintainer", "write")
        await bot.send(
            "issue_comment",
            comment_payload(REPO, number, "/judge override accept", "maintainer"),
        )
        last = reviews(bot, number)[-1]
        assert last.state == "APPROVED"
        assert "decided by @maintainer" in last.body


async def test_repository_config_turns_it_on_and_neutral_outcomes_never_review(
    make_bot: Any,
) -> None:
    async with make_bot(review=False) as bot:
        bot.fake.add_commit(REPO, {".github/judge.yml": "review: true\n"}, branch="main")
        number, _ = await rejected_pull(bot)
        [review] = reviews(bot, number)
        assert review.state == "CHANGES_REQUESTED"
        sha = commit_files(bot.fake, {"docs/other.md": "# Other\n\nSourced.\n"}, branch="b2")
        second = open_pull(bot.fake, sha, branch="b2", labels=("judge-skip",))
        await bot.send("pull_request", pull_request_payload(bot.fake, "opened", second))
        assert bot.check_runs(sha=sha)[0].conclusion == "neutral"
        assert reviews(bot, second) == []


async def test_the_apps_own_pull_request_is_not_reviewed(make_bot: Any) -> None:
    async with make_bot(review=True) as bot:
        number, _ = await accepted_pull(bot, author=APP)
        assert reviews(bot, number) == []
        assert bot.check_runs()[0].conclusion == "success"


async def test_a_failed_submission_is_retried_with_the_delivery(make_bot: Any) -> None:
    async with make_bot(review=True) as bot:
        bot.fake.inject("pulls/create-review", status=403, times=1)
        number, sha = await accepted_pull(bot)
        [review] = reviews(bot, number)
        assert (review.state, review.commit_id) == ("APPROVED", sha)


async def test_a_new_verdict_dismisses_the_apps_earlier_review(make_bot: Any) -> None:
    async with make_bot(review=True) as bot:
        number, old = await rejected_pull(bot)
        bot.fake.merges.add_review(REPO, number, "maintainer", "CHANGES_REQUESTED")
        bot.llm.script(QUICK, scores(*ACCEPT))
        new = bot.fake.merges.push(REPO, number, {"docs/notes.md": "# Notes\n\nSourced.\n"})
        await bot.send("pull_request", pr_event(bot.fake, "synchronize", number, before=old))
        rejected, approved = reviews(bot, number)
        assert (rejected.state, rejected.commit_id) == ("DISMISSED", old)
        assert rejected.dismissal == f"Replaced by judge-bot's newer verdict accept at {new[:7]}."
        assert (approved.state, approved.commit_id) == ("APPROVED", new)
        # A person's review is theirs to keep.
        [person] = [r for r in bot.fake.repo(REPO).pulls[number].reviews if r.login != APP]
        assert person.state == "CHANGES_REQUESTED"


async def test_an_escalation_leaves_the_earlier_verdict_standing(make_bot: Any) -> None:
    async with make_bot(review=True) as bot:
        number, old = await rejected_pull(bot)
        bot.llm.script(QUICK, scores(*IMPROVE))
        bot.llm.script(DEEP, scores(*IMPROVE))
        bot.fake.merges.push(REPO, number, {"docs/notes.md": "# Notes\n\nmaybe\n"})
        await bot.send("pull_request", pr_event(bot.fake, "synchronize", number, before=old))
        assert [r.state for r in reviews(bot, number)] == ["CHANGES_REQUESTED", "COMMENTED"]


async def test_a_refused_dismissal_still_leaves_the_new_review(make_bot: Any) -> None:
    async with make_bot(review=True) as bot:
        number, old = await rejected_pull(bot)
        bot.fake.inject("pulls/dismiss-review", status=422, times=1)
        bot.llm.script(QUICK, scores(*ACCEPT))
        bot.fake.merges.push(REPO, number, {"docs/notes.md": "# Notes\n\nSourced.\n"})
        await bot.send("pull_request", pr_event(bot.fake, "synchronize", number, before=old))
        assert [r.state for r in reviews(bot, number)] == ["CHANGES_REQUESTED", "APPROVED"]
