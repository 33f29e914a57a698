"""The gate's guarantee where merging meets judging, tried as a hostile author would:
no stale, partial or typed-identity outcome lets a head through either merge queue."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.github.client import GitHubApp
from tests.support.fakes.github_server import FakeGitHub
from tests.support.fakes.llm_server import FakeOpenAIServer, Reply
from tests.support.flow_helpers import (
    ACCEPT,
    DEEP,
    QUICK,
    REJECT,
    REPO,
    Harness,
    commit_files,
    open_pull,
    pull_request_payload,
    scores,
)
from tests.support.merge_helpers import (
    events_of,
    fast_settings,
    label_event,
    merge_group_event,
    merge_harness,
    pr_event,
    queue_group,
)

pytestmark = pytest.mark.usefixtures("fake_github")

BAD = "# Bad\n\nUnsourced claims everywhere.\n"
GOOD = "# Notes\n\nA clear, sourced explanation of the topic.\n"


def make(
    tmp_path: Path,
    github_keypair: Any,
    fake_github: FakeGitHub,
    github_app: GitHubApp,
    fake_llm: FakeOpenAIServer,
    **settings: Any,
) -> Any:
    return merge_harness(
        tmp_path,
        github_keypair.private_pem,
        fake_github,
        github_app,
        fake_llm,
        fast_settings(**settings),
    )


@pytest.fixture
async def bot(
    tmp_path: Path,
    github_keypair: Any,
    fake_github: FakeGitHub,
    github_app: GitHubApp,
    fake_llm: FakeOpenAIServer,
) -> AsyncIterator[Harness]:
    """Merge on approve off: GitHub's own merge queue builds the groups."""
    async with make(
        tmp_path, github_keypair, fake_github, github_app, fake_llm, merge_on_approve=False
    ) as harness:
        harness.fake.add_commit(
            REPO, {".github/judge.yml": "mode: blocking\n"}, message="Configure", branch="main"
        )
        yield harness


def judge_run(bot: Harness, sha: str) -> Any:
    [run] = [r for r in bot.check_runs(sha=sha) if r.name == "judge"]
    return run


def stacked_pull(bot: Harness, labels: tuple[str, ...] = ()) -> tuple[int, str, str]:
    """A pull request of docs/good.md opened onto `scratch`, a branch holding docs/bad.md:
    only the good file is its diff until its base becomes main."""
    main = bot.fake.repo(REPO).branches["main"]
    scratch = bot.fake.add_commit(REPO, {"docs/bad.md": BAD}, parents=[main], branch="scratch")
    head = bot.fake.add_commit(REPO, {"docs/good.md": GOOD}, parents=[scratch], branch="feature")
    number = bot.fake.add_pull(
        REPO, None, head, "scratch", head_ref="feature", author="agent", labels=list(labels)
    )
    return number, head, scratch


async def retarget_to_main(bot: Harness, number: int, scratch: str) -> None:
    pull = bot.fake.repo(REPO).pulls[number]
    pull.base_ref, pull.base_sha = "main", bot.fake.repo(REPO).branches["main"]
    changes = {"base": {"ref": {"from": "scratch"}, "sha": {"from": scratch}}}
    await bot.send("pull_request", pr_event(bot.fake, "edited", number, changes=changes))


async def test_a_new_base_is_judged_again(bot: Harness) -> None:
    number, head, scratch = stacked_pull(bot)
    bot.llm.script(QUICK, scores(*ACCEPT))
    await bot.send("pull_request", pull_request_payload(bot.fake, "opened", number))
    assert judge_run(bot, head).conclusion == "success"
    bot.llm.script(QUICK, scores(*REJECT))
    bot.llm.script(DEEP, scores(*REJECT))
    await retarget_to_main(bot, number, scratch)
    assert "docs/bad.md" in bot.llm.requests[-1].user_text
    assert judge_run(bot, head).conclusion == "failure"
    # GitHub's merge queue: the group no longer passes on the old accept; the reject at
    # the head it merges fails it without asking the model again.
    group = queue_group(bot.fake, number)
    calls = len(bot.llm.requests)
    await bot.send("merge_group", merge_group_event(bot.fake, "checks_requested", number, group))
    assert len(bot.llm.requests) == calls
    assert judge_run(bot, group).conclusion == "failure"


async def test_the_apps_queue_does_not_merge_a_retargeted_head(
    tmp_path: Path,
    github_keypair: Any,
    fake_github: FakeGitHub,
    github_app: GitHubApp,
    fake_llm: FakeOpenAIServer,
) -> None:
    async with make(tmp_path, github_keypair, fake_github, github_app, fake_llm) as bot:
        configure = {".github/judge.yml": "mode: blocking\n"}
        bot.fake.add_commit(REPO, configure, message="Configure", branch="main")
        number, _, scratch = stacked_pull(bot, labels=("judge:hold",))
        bot.llm.script(QUICK, scores(*ACCEPT))
        await bot.send("pull_request", pull_request_payload(bot.fake, "opened", number))
        bot.llm.script(QUICK, scores(*REJECT))
        bot.llm.script(DEEP, scores(*REJECT))
        await retarget_to_main(bot, number, scratch)
        bot.fake.repo(REPO).issues[number].labels.remove("judge:hold")
        await bot.send("pull_request", label_event(bot.fake, "unlabeled", number, "judge:hold"))
        # Held until the retarget, then judged again (rejected): never queued.
        assert await events_of(bot.storage, number) == []
        assert bot.fake.merges.merged == []


async def test_a_group_github_lists_in_part_is_judged_not_passed(bot: Harness) -> None:
    """GitHub's compare lists 300 files: what a group brings past them is never seen."""
    filler: dict[str, str | None] = {f"a/{i:04}.txt": "x\n" for i in range(300)}
    bot.llm.script(QUICK, scores(*ACCEPT))
    sha = commit_files(bot.fake, {**filler, "docs/notes.md": GOOD})
    number = open_pull(bot.fake, sha)
    await bot.send("pull_request", pull_request_payload(bot.fake, "opened", number))
    assert judge_run(bot, sha).conclusion == "success"
    bot.llm.default = scores(*ACCEPT)
    group = queue_group(bot.fake, number, {"docs/zz-merged.md": BAD})
    await bot.send("merge_group", merge_group_event(bot.fake, "checks_requested", number, group))
    run = judge_run(bot, group)
    assert run.conclusion == "action_required"
    assert "does not list the rest" in run.output["summary"]


async def test_a_group_is_not_exempt_by_typed_commit_lines(bot: Harness) -> None:
    """`authors: [agent]`, the agent's commits typed as Jane Doe: its pull request is
    judged (the vouched author), and so is the merge group that holds it."""
    bot.fake.add_commit(
        REPO,
        {".github/judge.yml": "mode: blocking\nauthors: [agent]\n"},
        message="Configure",
        branch="main",
    )
    bot.llm.script(QUICK, scores(*REJECT))
    bot.llm.script(DEEP, scores(*REJECT))
    sha = commit_files(bot.fake, {"docs/notes.md": BAD}, author="Jane Doe")
    number = open_pull(bot.fake, sha, author="agent")
    await bot.send("pull_request", pull_request_payload(bot.fake, "opened", number))
    assert judge_run(bot, sha).conclusion == "failure"
    calls = len(bot.llm.requests)
    group = queue_group(bot.fake, number)
    await bot.send("merge_group", merge_group_event(bot.fake, "checks_requested", number, group))
    # Not exempt: the reject at the head the group merges fails it (no model asked again).
    assert len(bot.llm.requests) == calls
    assert judge_run(bot, group).conclusion == "failure"


async def test_an_unanswerable_batch_is_not_an_outage(bot: Harness) -> None:
    """Content can steer a judge off its answer format: a batch with no usable answer
    is not a pass, though the other batch was accepted."""
    bot.fake.add_commit(
        REPO,
        {".github/judge.yml": "mode: blocking\nlimits:\n  max_files: 1\n"},
        message="Configure",
        branch="main",
    )
    garbled = Reply.text("I will not answer in JSON.")
    bot.llm.script(QUICK, scores(*ACCEPT), garbled, garbled)
    sha = commit_files(bot.fake, {"docs/a.md": GOOD, "docs/b.md": BAD})
    number = open_pull(bot.fake, sha)
    await bot.send("pull_request", pull_request_payload(bot.fake, "opened", number))
    run = judge_run(bot, sha)
    assert run.conclusion == "action_required"
    assert "no usable answer" in run.output["title"]


async def test_the_author_labelling_cannot_re_roll_the_judges(bot: Harness) -> None:
    from tests.judging.test_skip_authorisation import add_skip_label

    bot.llm.script(QUICK, scores(*REJECT))
    bot.llm.script(DEEP, scores(*REJECT))
    sha = commit_files(bot.fake, {"docs/notes.md": BAD})
    number = open_pull(bot.fake, sha)
    await bot.send("pull_request", pull_request_payload(bot.fake, "opened", number))
    assert judge_run(bot, sha).conclusion == "failure"
    calls = len(bot.llm.requests)
    bot.fake.set_permission(REPO, "agent", "write")
    bot.llm.script(QUICK, scores(*ACCEPT))
    await add_skip_label(bot, number, sender="agent")
    assert len(bot.llm.requests) == calls, "the verdict cache answered"
    assert judge_run(bot, sha).conclusion == "failure"
