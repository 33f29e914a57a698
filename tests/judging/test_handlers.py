"""Pushes and pull requests end to end: webhook -> store -> worker -> fake GitHub + fake LLM.

Every GitHub request and response is validated by the fake against GitHub's REST
description (the fixture fails the test otherwise), and every payload against the
webhook schemas.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.fakes.github_server import FakeGitHub
from tests.support.fakes.llm_server import Reply
from tests.support.flow_helpers import (
    ACCEPT,
    DEEP,
    GOOD_DOC,
    IMPROVE,
    QUICK,
    REJECT,
    REPO,
    TIEBREAKER,
    Harness,
    commit_files,
    open_pull,
    pull_request_payload,
    push_payload,
    scores,
)

pytestmark = pytest.mark.usefixtures("fake_github")


@pytest.fixture
def bot(advisory_bot: Harness) -> Harness:
    return advisory_bot


def set_config(fake: FakeGitHub, text: str) -> None:
    fake.add_commit(REPO, {".github/judge.yml": text}, message="Configure judge", branch="main")


async def open_and_judge(bot: Harness, files: dict[str, str | None], **pull: Any) -> str:
    sha = commit_files(bot.fake, files)
    number = open_pull(bot.fake, sha, **pull)
    await bot.send("pull_request", pull_request_payload(bot.fake, "opened", number))
    return sha


# -- verdict classes and modes ----------------------------------------------------------


async def test_accepted_pull_request_gets_one_successful_check(bot: Harness) -> None:
    bot.llm.script(QUICK, scores(*ACCEPT, reasoning="clear and sourced"))
    sha = await open_and_judge(bot, {"docs/notes.md": GOOD_DOC})
    [run] = bot.check_runs(sha=sha)
    assert (run.name, run.status, run.conclusion) == ("judge", "completed", "success")
    assert "accept" in run.output["title"]
    assert "docs/notes.md" in run.output["summary"]
    assert len(bot.llm.requests) == 1, "a quick accept needs no other tier"


@pytest.mark.parametrize(
    ("mode", "quick", "deep", "expected"),
    [
        ("advisory", REJECT, REJECT, "neutral"),
        ("blocking", REJECT, REJECT, "failure"),
        ("advisory", IMPROVE, IMPROVE, "neutral"),
        ("blocking", IMPROVE, IMPROVE, "action_required"),
        ("blocking", IMPROVE, ACCEPT, "success"),
    ],
    ids=[
        "advisory-reject",
        "blocking-reject",
        "advisory-escalate",
        "blocking-escalate",
        "blocking-deep-accept",
    ],
)
async def test_conclusion_follows_verdict_and_mode(
    bot: Harness,
    mode: str,
    quick: tuple[int, int, int],
    deep: tuple[int, int, int],
    expected: str,
) -> None:
    set_config(bot.fake, f"mode: {mode}\n")
    bot.llm.script(QUICK, scores(*quick, improvements=["docs/notes.md:3: cite a source"]))
    bot.llm.script(DEEP, scores(*deep, improvements=["add a summary"]))
    bot.llm.script(TIEBREAKER, scores(*deep))
    sha = await open_and_judge(bot, {"docs/notes.md": "# Notes\n\nthin\n"})
    [run] = bot.check_runs(sha=sha)
    assert run.conclusion == expected


async def test_provider_outage_is_neutral_even_in_blocking_mode(bot: Harness) -> None:
    set_config(bot.fake, "mode: blocking\n")
    bot.llm.script(QUICK, Reply.server_error(), Reply.server_error())
    sha = await open_and_judge(bot, {"docs/notes.md": GOOD_DOC})
    [run] = bot.check_runs(sha=sha)
    assert run.conclusion == "neutral"
    assert "undetermined" in run.output["title"]


async def test_mechanical_hard_failure_rejects_without_a_model_call(bot: Harness) -> None:
    set_config(bot.fake, "mode: blocking\n")
    conflicted = "# Notes\n<<<<<<< HEAD\nmine\n=======\ntheirs\n>>>>>>> branch\n"
    sha = await open_and_judge(bot, {"docs/notes.md": conflicted})
    [run] = bot.check_runs(sha=sha)
    assert run.conclusion == "failure"
    assert bot.llm.requests == []
    annotations = run.output.get("annotations") or []
    assert any(a["path"] == "docs/notes.md" for a in annotations)


# -- what is judged -----------------------------------------------------------------------


async def test_draft_is_skipped_until_ready(bot: Harness) -> None:
    bot.llm.script(QUICK, scores(*ACCEPT))
    sha = commit_files(bot.fake, {"docs/notes.md": GOOD_DOC})
    number = open_pull(bot.fake, sha, draft=True)
    await bot.send("pull_request", pull_request_payload(bot.fake, "opened", number))
    assert bot.check_runs(sha=sha) == []
    bot.fake.repo(REPO).pulls[number].draft = False
    await bot.send("pull_request", pull_request_payload(bot.fake, "ready_for_review", number))
    [run] = bot.check_runs(sha=sha)
    assert run.conclusion == "success"


async def test_pull_request_without_watched_files_is_neutral(bot: Harness) -> None:
    sha = await open_and_judge(bot, {"src/app.py": "print('hi')\n"})
    [run] = bot.check_runs(sha=sha)
    assert run.conclusion == "neutral"
    assert "nothing to judge" in run.output["title"]
    assert bot.llm.requests == []


async def test_push_without_watched_files_makes_no_check_run(bot: Harness) -> None:
    before = bot.fake.repo(REPO).branches["main"]
    sha = commit_files(bot.fake, {"src/app.py": "x = 1\n"})
    payload = push_payload(
        REPO, before=before, after=sha, commits=[{"id": sha, "added": ["src/app.py"]}]
    )
    await bot.send("push", payload)
    assert bot.check_runs(sha=sha) == []


async def test_push_with_watched_files_is_judged(bot: Harness) -> None:
    bot.llm.script(QUICK, scores(*ACCEPT))
    before = bot.fake.repo(REPO).branches["main"]
    sha = commit_files(bot.fake, {"research/topic.md": GOOD_DOC})
    payload = push_payload(
        REPO, before=before, after=sha, commits=[{"id": sha, "added": ["research/topic.md"]}]
    )
    await bot.send("push", payload)
    [run] = bot.check_runs(sha=sha)
    assert run.conclusion == "success"


async def test_branch_deletion_is_ignored(bot: Harness) -> None:
    before = bot.fake.repo(REPO).branches["main"]
    payload = push_payload(REPO, before=before, after="0" * 40, commits=[])
    payload["deleted"] = True
    await bot.send("push", payload)
    assert bot.check_runs() == []


async def test_same_sha_by_pull_request_then_push_gets_one_check_run(bot: Harness) -> None:
    """The push of a sha a pull request already judges adds nothing."""
    bot.llm.script(QUICK, scores(*ACCEPT), scores(*ACCEPT))
    before = bot.fake.repo(REPO).branches["main"]
    sha = commit_files(bot.fake, {"docs/notes.md": GOOD_DOC})
    number = open_pull(bot.fake, sha)
    await bot.send("pull_request", pull_request_payload(bot.fake, "opened", number))
    await bot.send(
        "push",
        push_payload(
            REPO, before=before, after=sha, commits=[{"id": sha, "added": ["docs/notes.md"]}]
        ),
    )
    assert len(bot.check_runs(sha=sha)) == 1
    assert len(bot.llm.requests) == 1


async def test_pull_request_takes_over_a_sha_its_push_judged(bot: Harness) -> None:
    """The pull request's view (all its files, its labels) replaces the push's, on the same
    run: here the push judged one good file, the pull request also has a bad one."""
    set_config(bot.fake, "mode: blocking\n")
    first = commit_files(bot.fake, {"docs/bad.md": "# Bad\n\nthin\n"})
    before = first
    second = commit_files(bot.fake, {"docs/good.md": GOOD_DOC})
    number = open_pull(bot.fake, second)
    bot.llm.script(QUICK, scores(*ACCEPT), scores(*REJECT))
    bot.llm.script(DEEP, scores(*REJECT))
    await bot.send(
        "push",
        push_payload(
            REPO,
            before=before,
            after=second,
            commits=[{"id": second, "added": ["docs/good.md"]}],
        ),
    )
    [run] = bot.check_runs(sha=second)
    assert run.conclusion == "success"
    await bot.send("pull_request", pull_request_payload(bot.fake, "opened", number))
    [run] = bot.check_runs(sha=second)
    assert run.conclusion == "failure"
    assert "docs/bad.md" in run.output["summary"]


async def test_invalid_config_gives_neutral_check_naming_the_line(bot: Harness) -> None:
    set_config(bot.fake, "mode: blocking\npaths:\n  include: 5\n")
    sha = await open_and_judge(bot, {"docs/notes.md": GOOD_DOC})
    [run] = bot.check_runs(sha=sha)
    assert run.conclusion == "neutral"
    assert "line 3" in run.output["summary"]
    assert "paths.include" in run.output["summary"]
    assert bot.llm.requests == []


async def test_config_is_read_from_the_default_branch_not_the_change(bot: Harness) -> None:
    """A pull request cannot switch its own judge to advisory."""
    set_config(bot.fake, "mode: blocking\n")
    bot.llm.script(QUICK, scores(*REJECT))
    bot.llm.script(DEEP, scores(*REJECT))
    sha = await open_and_judge(
        bot, {"docs/notes.md": "# x\n", ".github/judge.yml": "mode: advisory\n"}
    )
    [run] = bot.check_runs(sha=sha)
    assert run.conclusion == "failure"


async def test_skip_label_bypasses(bot: Harness) -> None:
    sha = await open_and_judge(bot, {"docs/notes.md": GOOD_DOC}, labels=("judge-skip",))
    [run] = bot.check_runs(sha=sha)
    assert run.conclusion == "neutral"
    assert "skipped" in run.output["title"]
    assert bot.llm.requests == []


async def test_skip_marker_in_head_commit_bypasses(bot: Harness) -> None:
    sha = commit_files(bot.fake, {"docs/notes.md": GOOD_DOC}, message="WIP [skip judge]")
    number = open_pull(bot.fake, sha)
    await bot.send("pull_request", pull_request_payload(bot.fake, "opened", number))
    [run] = bot.check_runs(sha=sha)
    assert "skip judge" in run.output["title"]
    assert bot.llm.requests == []


async def test_rerequested_check_run_rejudges_on_the_same_run(bot: Harness) -> None:
    from tests.support.flow_helpers import check_run_payload

    bot.llm.script(QUICK, scores(*ACCEPT), scores(*ACCEPT))
    sha = await open_and_judge(bot, {"docs/notes.md": GOOD_DOC})
    [run] = bot.check_runs(sha=sha)
    bot.fake.set_permission(REPO, "maintainer", "write")
    await bot.send("check_run", check_run_payload(REPO, run.id, sha, "rerequested"))
    assert len(bot.check_runs(sha=sha)) == 1
    assert len(bot.llm.requests) == 2, "a re-request bypasses the verdict cache"


async def test_authors_rerequest_is_refused(bot: Harness) -> None:
    """The author cannot re-roll the judges with GitHub's Re-run button."""
    from tests.support.flow_helpers import check_run_payload

    bot.llm.script(QUICK, scores(*REJECT), scores(*ACCEPT))
    bot.llm.script(DEEP, scores(*REJECT))
    sha = commit_files(bot.fake, {"docs/notes.md": "# x\n"}, author="agent")
    number = open_pull(bot.fake, sha, author="agent")
    await bot.send("pull_request", pull_request_payload(bot.fake, "opened", number))
    [run] = bot.check_runs(sha=sha)
    bot.fake.set_permission(REPO, "agent", "admin")
    calls = len(bot.llm.requests)
    await bot.send(
        "check_run",
        check_run_payload(REPO, run.id, sha, "rerequested", sender="agent", pull_number=number),
    )
    assert len(bot.llm.requests) == calls
    assert any("did not run" in c for c in bot.comments(number))


# -- disagreement issues ------------------------------------------------------------------


async def test_escalation_opens_one_issue_and_comments_on_the_second(bot: Harness) -> None:
    bot.llm.script(QUICK, scores(*IMPROVE), scores(*IMPROVE))
    bot.llm.script(DEEP, scores(*IMPROVE), scores(*IMPROVE))
    sha = commit_files(bot.fake, {"docs/notes.md": "# Notes\n\nfirst\n"})
    number = open_pull(bot.fake, sha)
    await bot.send("pull_request", pull_request_payload(bot.fake, "opened", number))
    [issue] = bot.issues()
    assert issue.title == f"[JUDGE-DISAGREEMENT] Review needed: {REPO}#{number}"
    assert "judge-disagreement" in issue.labels
    second = commit_files(bot.fake, {"docs/notes.md": "# Notes\n\nsecond\n"})
    bot.fake.repo(REPO).pulls[number].head_sha = second
    await bot.send("pull_request", pull_request_payload(bot.fake, "synchronize", number))
    assert len(bot.issues()) == 1
    assert len(bot.comments(issue.number)) == 1
    [run] = bot.check_runs(sha=second)
    assert f"/issues/{issue.number}" in run.output["summary"]


async def test_later_accept_closes_the_issue(bot: Harness) -> None:
    bot.llm.script(QUICK, scores(*IMPROVE), scores(*ACCEPT))
    bot.llm.script(DEEP, scores(*IMPROVE))
    sha = commit_files(bot.fake, {"docs/notes.md": "# Notes\n\nfirst\n"})
    number = open_pull(bot.fake, sha)
    await bot.send("pull_request", pull_request_payload(bot.fake, "opened", number))
    [issue] = bot.issues()
    second = commit_files(bot.fake, {"docs/notes.md": GOOD_DOC})
    bot.fake.repo(REPO).pulls[number].head_sha = second
    await bot.send("pull_request", pull_request_payload(bot.fake, "synchronize", number))
    assert bot.fake.repo(REPO).issues[issue.number].state == "closed"


async def test_repository_models_replace_the_installation_models(bot: Harness) -> None:
    set_config(bot.fake, "models:\n  quick: mistral-large\n")
    bot.llm.script("mistral-large", scores(*ACCEPT))
    sha = await open_and_judge(bot, {"docs/notes.md": GOOD_DOC})
    [run] = bot.check_runs(sha=sha)
    assert run.conclusion == "success"
    assert [r.model for r in bot.llm.requests] == ["mistral-large"]


async def test_repository_models_of_one_family_are_a_config_error(bot: Harness) -> None:
    set_config(bot.fake, f"models:\n  quick: {DEEP}\n")
    sha = await open_and_judge(bot, {"docs/notes.md": GOOD_DOC})
    [run] = bot.check_runs(sha=sha)
    assert run.conclusion == "neutral"
    assert "models" in run.output["title"]
    assert bot.llm.requests == []
