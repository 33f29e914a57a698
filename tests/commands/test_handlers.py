"""`/judge` commands and check-run buttons end to end, including the authorisation matrix."""

from __future__ import annotations

import pytest

from tests.commands.written import comment_now
from tests.support.flow_helpers import (
    ACCEPT,
    DEEP,
    GOOD_DOC,
    IMPROVE,
    QUICK,
    REJECT,
    REPO,
    Harness,
    click,
    commit_files,
    open_pull,
    pull_request_payload,
    rejected_pull,
    scores,
)

AUTHOR = "agent"


@pytest.fixture
def bot(blocking_bot: Harness) -> Harness:
    return blocking_bot


async def rejected_by_judges(bot: Harness) -> tuple[int, str]:
    number, sha = await rejected_pull(bot, author=AUTHOR, committer=AUTHOR)
    [run] = bot.check_runs(sha=sha)
    assert run.conclusion == "failure"
    return number, sha


@pytest.mark.parametrize(
    ("login", "permission", "user_type", "allowed"),
    [
        (AUTHOR, "admin", "User", False),
        ("reader", "read", "User", False),
        ("triager", "triage", "User", False),
        ("writer", "write", "User", True),
        ("maintainer", "maintain", "User", True),
        ("admin", "admin", "User", True),
        ("robot[bot]", "admin", "Bot", False),
        ("stranger", None, "User", False),
    ],
    ids=["author", "read", "triage", "write", "maintain", "admin", "bot", "non-collaborator"],
)
async def test_override_authorisation_matrix(
    bot: Harness, login: str, permission: str | None, user_type: str, allowed: bool
) -> None:
    number, sha = await rejected_by_judges(bot)
    if permission is not None:
        bot.fake.set_permission(REPO, login, permission)
    await bot.send(
        "issue_comment",
        comment_now(REPO, number, "/judge override accept", login, user_type=user_type),
    )
    [run] = bot.check_runs(sha=sha)
    replies = bot.comments(number)
    if allowed:
        assert run.conclusion == "success"
        assert "override" in run.output["title"]
        verdicts = await bot.storage.list_verdicts(head_sha=sha)
        assert verdicts[-1].record["human_override"] is True
        assert verdicts[-1].record["decided_by"] == login
        assert any("overrode" in reply for reply in replies)
    else:
        assert run.conclusion == "failure"
        if user_type == "Bot":
            assert replies == [], "the bot never answers bots"
        else:
            assert len(replies) == 1 and "did not run" in replies[0]


async def test_commit_author_cannot_override_even_with_write(bot: Harness) -> None:
    bot.llm.script(QUICK, scores(*REJECT))
    bot.llm.script(DEEP, scores(*REJECT))
    sha = commit_files(bot.fake, {"docs/notes.md": "# x\n"}, author="coder")
    number = open_pull(bot.fake, sha, author="someone-else")
    await bot.send("pull_request", pull_request_payload(bot.fake, "opened", number))
    bot.fake.set_permission(REPO, "coder", "write")
    await bot.send("issue_comment", comment_now(REPO, number, "/judge override accept", "coder"))
    [run] = bot.check_runs(sha=sha)
    assert run.conclusion == "failure"


async def test_override_reject_then_cancel_restores_the_judges(bot: Harness) -> None:
    bot.llm.script(QUICK, scores(*ACCEPT))
    sha = commit_files(bot.fake, {"docs/notes.md": GOOD_DOC}, author=AUTHOR)
    number = open_pull(bot.fake, sha, author=AUTHOR)
    await bot.send("pull_request", pull_request_payload(bot.fake, "opened", number))
    bot.fake.set_permission(REPO, "maintainer", "maintain")
    await bot.send(
        "issue_comment", comment_now(REPO, number, "/judge override reject", "maintainer")
    )
    [run] = bot.check_runs(sha=sha)
    assert run.conclusion == "failure"
    await bot.send(
        "issue_comment", comment_now(REPO, number, "/judge override cancel", "maintainer")
    )
    [run] = bot.check_runs(sha=sha)
    assert run.conclusion == "success"
    records = [v.record for v in await bot.storage.list_verdicts(head_sha=sha)]
    assert [r["human_override"] for r in records] == [None, True, False]


async def test_override_applies_to_the_head_sha_only(bot: Harness) -> None:
    number, sha = await rejected_by_judges(bot)
    bot.fake.set_permission(REPO, "maintainer", "write")
    await bot.send(
        "issue_comment", comment_now(REPO, number, "/judge override accept", "maintainer")
    )
    bot.llm.script(QUICK, scores(*REJECT))
    bot.llm.script(DEEP, scores(*REJECT))
    second = commit_files(bot.fake, {"docs/notes.md": "# Notes\n\nstill thin\n"}, author=AUTHOR)
    bot.fake.repo(REPO).pulls[number].head_sha = second
    await bot.send("pull_request", pull_request_payload(bot.fake, "synchronize", number))
    [old] = bot.check_runs(sha=sha)
    [new] = bot.check_runs(sha=second)
    assert (old.conclusion, new.conclusion) == ("success", "failure")


async def test_override_closes_the_disagreement_issue(bot: Harness) -> None:
    bot.llm.script(QUICK, scores(*IMPROVE))
    bot.llm.script(DEEP, scores(*IMPROVE))
    sha = commit_files(bot.fake, {"docs/notes.md": "# Notes\n"}, author=AUTHOR)
    number = open_pull(bot.fake, sha, author=AUTHOR)
    await bot.send("pull_request", pull_request_payload(bot.fake, "opened", number))
    [issue] = bot.issues()
    bot.fake.set_permission(REPO, "maintainer", "admin")
    # The command works on the disagreement issue itself, too.
    await bot.send(
        "issue_comment",
        comment_now(REPO, issue.number, "/judge override accept", "maintainer", on_pull=False),
    )
    assert bot.fake.repo(REPO).issues[issue.number].state == "closed"
    [run] = bot.check_runs(sha=sha)
    assert run.conclusion == "success"


async def test_rerun_command_rejudges_bypassing_the_cache(bot: Harness) -> None:
    number, sha = await rejected_by_judges(bot)
    calls = len(bot.llm.requests)
    bot.llm.script(QUICK, scores(*ACCEPT))
    bot.fake.set_permission(REPO, "maintainer", "write")
    await bot.send("issue_comment", comment_now(REPO, number, "/judge rerun", "maintainer"))
    assert len(bot.llm.requests) == calls + 1
    [run] = bot.check_runs(sha=sha)
    assert run.conclusion == "success"


async def test_help_and_unknown_commands_get_help(bot: Harness) -> None:
    number, _ = await rejected_by_judges(bot)
    await bot.send("issue_comment", comment_now(REPO, number, "/judge help", "anyone"))
    await bot.send("issue_comment", comment_now(REPO, number, "/judge frobnicate", "anyone"))
    replies = bot.comments(number)
    assert len(replies) == 2
    assert all("/judge override accept" in reply for reply in replies)
    assert "frobnicate" in replies[1]


async def test_edited_comments_and_plain_comments_are_ignored(bot: Harness) -> None:
    number, sha = await rejected_by_judges(bot)
    bot.fake.set_permission(REPO, "maintainer", "write")
    await bot.send(
        "issue_comment",
        comment_now(REPO, number, "/judge override accept", "maintainer", action="edited"),
    )
    await bot.send("issue_comment", comment_now(REPO, number, "looks good to me", "maintainer"))
    [run] = bot.check_runs(sha=sha)
    assert run.conclusion == "failure"
    assert bot.comments(number) == []


async def test_accept_button_is_authorised_like_the_command(bot: Harness) -> None:
    number, sha = await rejected_by_judges(bot)
    [run] = bot.check_runs(sha=sha)
    await click(bot, run.id, sha, "override-accept", AUTHOR, number)
    assert bot.check_runs(sha=sha)[0].conclusion == "failure"
    bot.fake.set_permission(REPO, "maintainer", "write")
    await click(bot, run.id, sha, "override-accept", "maintainer", number)
    assert bot.check_runs(sha=sha)[0].conclusion == "success"


async def test_rejudge_button_runs_the_deep_tier(bot: Harness) -> None:
    number, sha = await rejected_by_judges(bot)
    [run] = bot.check_runs(sha=sha)
    bot.fake.set_permission(REPO, "maintainer", "write")
    bot.llm.script(QUICK, scores(*ACCEPT))
    bot.llm.script(DEEP, scores(*ACCEPT))
    before = len(bot.llm.requests_for(DEEP))
    await click(bot, run.id, sha, "rejudge-deep", "maintainer", number)
    assert len(bot.llm.requests_for(DEEP)) == before + 1
    assert bot.check_runs(sha=sha)[0].conclusion == "success"
