"""GitHub's merge queue end to end: `merge_group` webhooks -> the `judge` run on the
group's head sha at the fake GitHub, with or without asking the model."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bot.github.client import GitHubApp
from bot.judging.run_handle import RUN_NAMESPACE
from bot.judging.state import STATE_NAMESPACE, load_state, state_key
from tests.support.fakes.github_server import FakeGitHub
from tests.support.fakes.llm_server import FakeOpenAIServer
from tests.support.flow_helpers import (
    ACCEPT,
    QUICK,
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
    accepted_pull,
    fast_settings,
    merge_group_event,
    merge_harness,
    queue_chain,
    queue_group,
)

pytestmark = pytest.mark.usefixtures("fake_github")


@pytest.fixture
async def bot(
    tmp_path: Path,
    github_keypair: Any,
    fake_github: FakeGitHub,
    github_app: GitHubApp,
    fake_llm: FakeOpenAIServer,
) -> AsyncIterator[Harness]:
    settings = fast_settings(merge_on_approve=False)
    async with merge_harness(
        tmp_path, github_keypair.private_pem, fake_github, github_app, fake_llm, settings
    ) as harness:
        yield harness


async def checks_requested(bot: Harness, number: int, head: str) -> None:
    await bot.send("merge_group", merge_group_event(bot.fake, "checks_requested", number, head))


async def test_a_group_of_accepted_pulls_passes_without_the_model(bot: Harness) -> None:
    number, sha = await accepted_pull(bot)
    asked = len(bot.llm.requests)
    # A file no judge watches may come with the merge; it needs no judgment.
    head = queue_group(bot.fake, number, {"src/build.txt": "generated\n"})
    await checks_requested(bot, number, head)
    [run] = bot.check_runs(sha=head)
    assert (run.name, run.status, run.conclusion) == ("judge", "completed", "success")
    assert f"- #{number}: **accept** at `{sha[:7]}`" in run.output["summary"]
    assert len(bot.llm.requests) == asked
    state = await load_state(bot.storage, state_key(REPO, head))
    assert state is not None and state.verdict == "accept"
    # GitHub redelivering the event makes no second run.
    await checks_requested(bot, number, head)
    assert len(bot.check_runs(sha=head)) == 1


async def test_a_watched_change_no_pull_brought_is_judged(bot: Harness) -> None:
    number, _ = await accepted_pull(bot)
    asked = len(bot.llm.requests)
    head = queue_group(bot.fake, number, {"docs/extra.md": "# Extra\n\nFrom the base.\n"})
    bot.llm.script(QUICK, scores(*ACCEPT))
    await checks_requested(bot, number, head)
    assert len(bot.llm.requests) == asked + 1
    assert "docs/extra.md" in bot.llm.requests[-1].user_text
    [run] = bot.check_runs(sha=head)
    assert run.conclusion == "success"


async def test_a_pull_rejected_at_its_head_fails_the_group_without_the_model(
    bot: Harness,
) -> None:
    """Judging the group again could overturn the reject with a fresh accept."""
    number, sha = await rejected_pull(bot)
    asked = len(bot.llm.requests)
    head = queue_group(bot.fake, number)
    await checks_requested(bot, number, head)
    assert len(bot.llm.requests) == asked
    [run] = bot.check_runs(sha=head)
    assert (run.status, run.conclusion) == ("completed", "failure")
    assert f"- #{number}: **reject** at `{sha[:7]}`" in run.output["summary"]
    state = await load_state(bot.storage, state_key(REPO, head))
    assert state is not None and state.verdict == "reject"


async def test_a_group_changing_no_watched_file_says_so(bot: Harness) -> None:
    sha = commit_files(bot.fake, {"src/tool.py": "print('hi')\n"})
    number = open_pull(bot.fake, sha)
    await bot.send("pull_request", pull_request_payload(bot.fake, "opened", number))
    head = queue_group(bot.fake, number)
    asked = len(bot.llm.requests)
    await checks_requested(bot, number, head)
    [run] = bot.check_runs(sha=head)
    assert run.conclusion == "neutral"
    assert "changes no watched file" in run.output["summary"]
    assert len(bot.llm.requests) == asked


async def test_an_invalid_config_is_reported_on_the_group(bot: Harness) -> None:
    bot.fake.add_commit(REPO, {".github/judge.yml": "paths: [\n"}, branch="main")
    number = open_pull(bot.fake, commit_files(bot.fake, {"docs/notes.md": "# Notes\n"}))
    head = queue_group(bot.fake, number)
    await checks_requested(bot, number, head)
    [run] = bot.check_runs(sha=head)
    assert run.conclusion == "neutral"
    assert "judge.yml" in run.output["summary"]


@pytest.mark.parametrize(("reason", "kept"), [("dequeued", False), ("merged", True)])
async def test_destroyed_forgets_a_group_that_was_not_merged(
    bot: Harness, reason: str, kept: bool
) -> None:
    number, _ = await accepted_pull(bot)
    head = queue_group(bot.fake, number)
    await checks_requested(bot, number, head)
    key = state_key(REPO, head)
    assert await bot.storage.kv_get(RUN_NAMESPACE, key) is not None
    event = merge_group_event(bot.fake, "destroyed", number, head, reason=reason)
    await bot.send("merge_group", event)
    assert (await bot.storage.kv_get(STATE_NAMESPACE, key) is not None) is kept
    assert (await bot.storage.kv_get(RUN_NAMESPACE, key) is not None) is kept


async def test_an_override_reject_after_the_group_passed_fails_it(bot: Harness) -> None:
    """A person put the pull request in GitHub's queue (the App handed nothing over) and
    its group passed on the accept: a maintainer's reject at that head fails the group's
    run, so GitHub's queue drops it instead of merging a rejected head."""
    number, sha = await accepted_pull(bot)
    head = queue_group(bot.fake, number)
    await checks_requested(bot, number, head)
    assert bot.check_runs(sha=head)[0].conclusion == "success"
    bot.fake.set_permission(REPO, "maintainer", "write")
    await bot.send(
        "issue_comment", comment_payload(REPO, number, "/judge override reject", "maintainer")
    )
    [run] = bot.check_runs(sha=head)
    assert (run.status, run.conclusion) == ("completed", "failure")
    assert f"merges #{number} at `{sha[:7]}`" in run.output["summary"]
    state = await load_state(bot.storage, state_key(REPO, head))
    assert state is not None and (state.verdict, state.conclusion) == ("reject", "failure")
    # Checks requested again for that group (a redelivery) keep it failed.
    await checks_requested(bot, number, head)
    assert bot.check_runs(sha=head)[0].conclusion == "failure"


async def test_a_maintainers_override_counts_as_the_pulls_accept(bot: Harness) -> None:
    number, sha = await rejected_pull(bot)
    bot.fake.set_permission(REPO, "maintainer", "write")
    await bot.send(
        "issue_comment", comment_payload(REPO, number, "/judge override accept", "maintainer")
    )
    head = queue_group(bot.fake, number)
    asked = len(bot.llm.requests)
    await checks_requested(bot, number, head)
    [run] = bot.check_runs(sha=head)
    assert run.conclusion == "success"
    assert f"- #{number}: **accept** at `{sha[:7]}`" in run.output["summary"]
    assert len(bot.llm.requests) == asked


async def test_a_pull_never_judged_is_judged_in_the_group(bot: Harness) -> None:
    number = open_pull(bot.fake, commit_files(bot.fake, {"docs/notes.md": "# Notes\n\nOk.\n"}))
    head = queue_group(bot.fake, number)
    bot.llm.script(QUICK, scores(*ACCEPT))
    await checks_requested(bot, number, head)
    assert len(bot.llm.requests) == 1
    assert bot.check_runs(sha=head)[0].conclusion == "success"


async def test_an_event_without_an_installation_is_ignored(bot: Harness) -> None:
    number, _ = await accepted_pull(bot)
    head = queue_group(bot.fake, number)
    event = merge_group_event(bot.fake, "checks_requested", number, head)
    del event["installation"]
    await bot.send("merge_group", event)
    assert bot.check_runs(sha=head) == []


async def three_pulls(bot: Harness, *, second_accepted: bool = True) -> list[tuple[int, str]]:
    """Three pull requests on their own branches, each changing its own file; the second
    one is never judged unless `second_accepted`."""
    made = []
    for index in range(3):
        files: dict[str, str | None] = {f"docs/part{index}.md": f"# Part {index}\n\nSourced.\n"}
        if index == 1 and not second_accepted:
            sha = commit_files(bot.fake, files, branch=f"part-{index}")
            made.append((open_pull(bot.fake, sha, branch=f"part-{index}"), sha))
        else:
            made.append(await accepted_pull(bot, files, branch=f"part-{index}"))
    return made


async def test_a_group_of_three_accepted_pulls_passes_without_the_model(bot: Harness) -> None:
    """GitHub merged three queued pull requests into one group: each one's accept at its
    head carries over, found along the group's merge commits, and no model is asked."""
    pulls = await three_pulls(bot)
    numbers = [number for number, _ in pulls]
    head = queue_chain(bot.fake, numbers)
    base = bot.fake.repo(REPO).branches["main"]
    asked = len(bot.llm.requests)
    event = merge_group_event(bot.fake, "checks_requested", numbers[-1], head, base_sha=base)
    await bot.send("merge_group", event)
    [run] = bot.check_runs(sha=head)
    assert (run.conclusion, run.output["title"]) == ("success", "accept · 3 pull requests accepted")
    listed = [f"- #{number}: **accept** at `{sha[:7]}`" for number, sha in pulls]
    assert [line for line in run.output["summary"].splitlines() if line.startswith("- #")] == listed
    assert len(bot.llm.requests) == asked
    assert bot.fake.count("repos/list-pull-requests-associated-with-commit") == 3


async def test_a_group_whose_middle_pull_was_never_judged_is_judged_whole(bot: Harness) -> None:
    pulls = await three_pulls(bot, second_accepted=False)
    numbers = [number for number, _ in pulls]
    head = queue_chain(bot.fake, numbers)
    base = bot.fake.repo(REPO).branches["main"]
    asked = len(bot.llm.requests)
    bot.llm.script(QUICK, scores(*ACCEPT))
    event = merge_group_event(bot.fake, "checks_requested", numbers[-1], head, base_sha=base)
    await bot.send("merge_group", event)
    assert len(bot.llm.requests) == asked + 1
    judged = bot.llm.requests[-1].user_text
    assert all(f"docs/part{index}.md" in judged for index in range(3))
    [run] = bot.check_runs(sha=head)
    assert run.conclusion == "success"
    assert "pull requests accepted" not in run.output["title"]


async def test_a_group_on_the_group_before_it_carries_only_its_own_pull(bot: Harness) -> None:
    """GitHub's `base_sha` is the group's parent commit: when that is the group before it,
    this group adds only the newest pull request."""
    pulls = await three_pulls(bot, second_accepted=False)
    numbers = [number for number, _ in pulls]
    head = queue_chain(bot.fake, numbers)
    parent = bot.fake.repo(REPO).commits[head].parents[0]
    asked = len(bot.llm.requests)
    event = merge_group_event(bot.fake, "checks_requested", numbers[-1], head, base_sha=parent)
    await bot.send("merge_group", event)
    [run] = bot.check_runs(sha=head)
    assert run.conclusion == "success"
    assert [line for line in run.output["summary"].splitlines() if line.startswith("- #")] == [
        f"- #{numbers[-1]}: **accept** at `{pulls[-1][1][:7]}`"
    ]
    assert len(bot.llm.requests) == asked


async def test_a_group_pull_closed_since_is_not_carried(bot: Harness) -> None:
    """GitHub names no open pull request with the first merge's head: that pull request's
    accept cannot count, so the group's change is judged."""
    pulls = await three_pulls(bot)
    numbers = [number for number, _ in pulls]
    head = queue_chain(bot.fake, numbers)
    bot.fake.repo(REPO).issues[numbers[0]].state = "closed"
    base = bot.fake.repo(REPO).branches["main"]
    asked = len(bot.llm.requests)
    bot.llm.script(QUICK, scores(*ACCEPT))
    event = merge_group_event(bot.fake, "checks_requested", numbers[-1], head, base_sha=base)
    await bot.send("merge_group", event)
    assert len(bot.llm.requests) == asked + 1
    assert "docs/part0.md" in bot.llm.requests[-1].user_text


async def test_a_squash_queue_group_whose_earlier_pulls_cannot_be_told_is_judged(
    bot: Harness,
) -> None:
    """Single-parent group commits name no pull request head: only the ref's pull request
    is known, the others' files are content no known accept covers, so the judges read it."""
    pulls = await three_pulls(bot)
    numbers = [number for number, _ in pulls]
    head = queue_chain(bot.fake, numbers, merge_commits=False)
    base = bot.fake.repo(REPO).branches["main"]
    asked = len(bot.llm.requests)
    bot.llm.script(QUICK, scores(*ACCEPT))
    event = merge_group_event(bot.fake, "checks_requested", numbers[-1], head, base_sha=base)
    await bot.send("merge_group", event)
    assert len(bot.llm.requests) == asked + 1
    assert bot.check_runs(sha=head)[0].conclusion == "success"


async def test_two_pulls_changing_one_file_merge_into_content_no_judge_read(
    bot: Harness,
) -> None:
    """Both accepted, but the group's file is neither one's: judged."""
    first, _ = await accepted_pull(bot, {"docs/shared.md": "# Shared\n\nOne.\n"}, branch="one")
    second, _ = await accepted_pull(bot, {"docs/shared.md": "# Shared\n\nTwo.\n"}, branch="two")
    head = queue_chain(bot.fake, [first, second], {"docs/shared.md": "# Shared\n\nOne. Two.\n"})
    base = bot.fake.repo(REPO).branches["main"]
    asked = len(bot.llm.requests)
    bot.llm.script(QUICK, scores(*ACCEPT))
    event = merge_group_event(bot.fake, "checks_requested", second, head, base_sha=base)
    await bot.send("merge_group", event)
    assert len(bot.llm.requests) == asked + 1
    assert "One. Two." in bot.llm.requests[-1].user_text
