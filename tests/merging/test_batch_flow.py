"""Batches in the App's own queue end to end: webhooks -> judge -> queue -> the batch
worker -> the fake GitHub (queue branches, required checks, the base moved to the tested
commit), on SQLite and PostgreSQL.

A small CI stands in for the repository's: it reports the required check `ci` on every
queue branch tip, failing a tree that holds `docs/bad.md`, and sends GitHub's `status` webhook.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from bot.app import METRICS
from bot.github.client import GitHubApp, RetryPolicy
from bot.judging.target import QUEUE_BRANCH_PREFIX
from bot.storage.base import BatchState, MergeStatus
from tests.support.fakes.github_server import FakeGitHub
from tests.support.fakes.llm_server import FakeOpenAIServer
from tests.support.flow_helpers import (
    ACCEPT,
    QUICK,
    REPO,
    Harness,
    commit_files,
    open_pull,
    pull_request_payload,
    push_payload,
    scores,
)
from tests.support.merge_helpers import (
    fast_settings,
    merge_harness,
    status_event,
    until_comment,
    until_status,
    wait_for,
)
from tests.support.storage_fixtures import StorageBackend

pytestmark = pytest.mark.usefixtures("fake_github")

CI = "ci"
BAD = "docs/bad.md"


class FakeCI:
    """Reports `ci` on each new queue branch tip: failure when its tree holds `docs/bad.md`."""

    def __init__(self, bots: list[Harness]) -> None:
        self.bots = bots
        self.fake = bots[0].fake
        self.tested: dict[str, str] = {}
        self.paused = False

    def runs(self) -> int:
        return len(self.tested)

    async def tick(self) -> None:
        repo = self.fake.repo(REPO)
        for name, sha in list(repo.branches.items()):
            if not name.startswith(QUEUE_BRANCH_PREFIX) or sha in self.tested or self.paused:
                continue
            state = "failure" if repo.entry_at(sha, BAD) is not None else "success"
            self.tested[sha] = state
            self.fake.add_status(REPO, sha, CI, state, target_url=f"https://ci.example/{sha[:7]}")
            bot = self.bots[len(self.tested) % len(self.bots)]
            await bot.send("status", status_event(self.fake, sha, state))

    async def run(self) -> None:
        while True:
            await self.tick()
            await asyncio.sleep(0.02)


@contextlib.asynccontextmanager
async def ci_running(bots: list[Harness]) -> AsyncIterator[FakeCI]:
    ci = FakeCI(bots)
    task = asyncio.create_task(ci.run())
    try:
        yield ci
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def configure(
    fake: FakeGitHub, batch_size: int, parallel_checks: int = 1, *, delete_branch: bool = False
) -> None:
    text = f"merge:\n  batch_size: {batch_size}\n  parallel_checks: {parallel_checks}\n"
    text += f"  delete_branch: {str(delete_branch).lower()}\n"
    fake.add_commit(REPO, {".github/judge.yml": text}, message="Configure", branch="main")
    fake.require_checks(REPO, "main", CI)


async def accepted(bot: Harness, index: int, files: dict[str, str | None]) -> int:
    bot.llm.script(QUICK, scores(*ACCEPT))
    branch = f"topic-{index}"
    sha = commit_files(bot.fake, files, branch=branch)
    number = open_pull(bot.fake, sha, branch=branch)
    await bot.send("pull_request", pull_request_payload(bot.fake, "opened", number))
    return number


async def queued_while_held(
    bot: Harness, files: list[dict[str, str | None]], *, then: Callable[[], None] = lambda: None
) -> list[int]:
    """Pull requests accepted while the worker waits on GitHub (`repos/get-branch` held),
    so its next step finds them all queued; `then` runs before the worker goes on."""
    bot.fake.hold("repos/get-branch")
    numbers = [await accepted(bot, index, changed) for index, changed in enumerate(files)]
    await wait_for(bot.fake.held.is_set, what="the worker at GitHub")

    async def all_queued() -> bool:
        queue = await bot.storage.merge_queue(REPO.lower(), "main")
        return len(queue) == len(numbers)

    await wait_for(all_queued, what="every pull request queued")
    then()
    bot.fake.release()
    return numbers


def metric(bot: Harness, name: str) -> float:
    return bot.app[METRICS].registry.get_sample_value(name) or 0.0


def model_calls(bot: Harness) -> int:
    return len(bot.llm.requests)


@pytest.fixture
def harness(
    tmp_path: Path,
    github_keypair: Any,
    fake_github: FakeGitHub,
    github_app: GitHubApp,
    fake_llm: FakeOpenAIServer,
    storage_backend: StorageBackend,
) -> Callable[[str], contextlib.AbstractAsyncContextManager[Harness]]:
    settings = fast_settings(merge_queue_claim_ttl_ms=30_000)

    def start(name: str) -> contextlib.AbstractAsyncContextManager[Harness]:
        return merge_harness(
            tmp_path / name,
            github_keypair.private_pem,
            fake_github,
            github_app,
            fake_llm,
            settings,
            storage=storage_backend.new(),
        )

    return start


async def test_three_independent_pull_requests_land_with_one_ci_run_and_no_model_call(
    harness: Callable[[str], contextlib.AbstractAsyncContextManager[Harness]],
) -> None:
    async with harness("a") as bot, ci_running([bot]) as ci:
        configure(bot.fake, batch_size=3, delete_branch=True)
        files: list[dict[str, str | None]] = [
            {f"docs/n{i}.md": f"# N{i}\n\nSourced.\n"} for i in range(3)
        ]
        numbers = await queued_while_held(bot, files)
        judged = model_calls(bot)
        for number in numbers:
            await until_status(bot, number, MergeStatus.MERGED)
        repo = bot.fake.repo(REPO)
        assert len(ci.tested) == 1, (ci.tested, bot.fake.merges.created_refs)
        [tip] = ci.tested
        assert ci.tested == {tip: "success"}
        assert repo.branches["main"] == tip
        assert bot.fake.merges.created_refs == [
            "judge-bot/queue-build/main/1",
            "judge-bot/queue/main/1",
        ]
        assert "judge-bot/queue/main/1" in bot.fake.merges.deleted_branches
        assert bot.fake.merges.merged == []  # the base moved; no pull request merged alone
        assert all(repo.entry_at(tip, f"docs/n{i}.md") is not None for i in range(3))
        assert model_calls(bot) == judged
        [run] = bot.check_runs(sha=tip)
        assert (run.name, run.conclusion) == ("judge", "success")
        comment = await until_comment(bot, numbers[1], "with the merge queue's batch 1")
        assert f"#{numbers[0]}, #{numbers[1]}, #{numbers[2]}" in comment
        assert "The branch `topic-1` was deleted." in comment
        await until_comment(bot, numbers[0], "with the merge queue's batch 1")
        assert {"topic-0", "topic-1", "topic-2"} <= set(bot.fake.merges.deleted_branches)
        assert await bot.storage.merge_batches(REPO.lower(), "main") == []
        assert metric(bot, "judge_merge_queue_batches_total") == 1
        assert metric(bot, "judge_merge_queue_batch_failures_total") == 0


async def test_a_failing_batch_splits_and_the_culprit_leaves_with_a_comment(
    harness: Callable[[str], contextlib.AbstractAsyncContextManager[Harness]],
) -> None:
    async with harness("a") as bot, ci_running([bot]) as ci:
        configure(bot.fake, batch_size=4)
        files: list[dict[str, str | None]] = [
            {"docs/a.md": "# A\n"},
            {BAD: "# Breaks the build\n"},
            {"docs/c.md": "# C\n"},
            {"docs/d.md": "# D\n"},
        ]
        numbers = await queued_while_held(bot, files)
        culprit = numbers[1]
        await until_status(bot, culprit, MergeStatus.DROPPED)
        for number in (numbers[0], *numbers[2:]):
            await until_status(bot, number, MergeStatus.MERGED)
        comment = await until_comment(bot, culprit, "Left the merge queue")
        assert "the `ci` check failed" in comment and "https://ci.example/" in comment
        repo = bot.fake.repo(REPO)
        assert repo.entry_at(repo.branches["main"], BAD) is None
        # Every tree the base reached is one CI tested green.
        moves = [sha for name, sha in bot.fake.merges.moved_refs if name == "main"]
        assert moves and all(ci.tested.get(sha) == "success" for sha in moves)
        assert list(ci.tested.values()).count("failure") >= 2  # the batch, then its half
        assert metric(bot, "judge_merge_queue_batch_failures_total") >= 2
        assert metric(bot, "judge_merge_queue_batch_splits_total") >= 2


async def test_a_push_to_the_base_invalidates_the_batch_being_tested(
    harness: Callable[[str], contextlib.AbstractAsyncContextManager[Harness]],
) -> None:
    async with harness("a") as bot, ci_running([bot]) as ci:
        configure(bot.fake, batch_size=2)
        ci.paused = True
        files: list[dict[str, str | None]] = [{"docs/a.md": "# A\n"}, {"docs/b.md": "# B\n"}]
        numbers = await queued_while_held(bot, files)

        async def testing() -> bool:
            batches = await bot.storage.merge_batches(REPO.lower(), "main")
            return bool(batches) and batches[0].state is BatchState.TESTING

        await wait_for(testing, what="a batch under test")
        [first] = await bot.storage.merge_batches(REPO.lower(), "main")
        before = bot.fake.repo(REPO).branches["main"]
        person = bot.fake.add_commit(REPO, {"docs/z.md": "# Z\n"}, message="Hotfix", branch="main")
        push = push_payload(
            REPO,
            before=before,
            after=person,
            ref="refs/heads/main",
            commits=[{"id": person, "added": ["docs/z.md"]}],
            sender="maintainer",
        )
        bot.llm.script(QUICK, scores(*ACCEPT))
        await bot.send("push", push)

        async def rebuilt() -> bool:
            batches = await bot.storage.merge_batches(REPO.lower(), "main")
            return bool(batches) and batches[0].id != first.id and batches[0].tip != ""

        await wait_for(rebuilt, what="the batch rebuilt on the new base")
        [second] = await bot.storage.merge_batches(REPO.lower(), "main")
        assert second.built_on == person
        ci.paused = False
        for number in numbers:
            await until_status(bot, number, MergeStatus.MERGED)
        repo = bot.fake.repo(REPO)
        assert repo.branches["main"] == second.tip
        assert first.tip not in ci.tested  # never tested, never landed


async def test_two_replicas_never_both_act_for_a_queue(
    harness: Callable[[str], contextlib.AbstractAsyncContextManager[Harness]],
) -> None:
    async with harness("a") as one, harness("b") as two, ci_running([one, two]) as ci:
        configure(one.fake, batch_size=2)
        numbers = []
        for index in range(6):
            replica = one if index % 2 else two
            numbers.append(await accepted(replica, index, {f"docs/r{index}.md": f"# R{index}\n"}))
        for number in numbers:
            await until_status(one, number, MergeStatus.MERGED, within=40)
        moves = [sha for name, sha in one.fake.merges.moved_refs if name == "main"]
        assert moves and len(moves) == len(set(moves))
        assert one.fake.merges.merged == []  # every one landed with a tested batch
        created = one.fake.merges.created_refs
        assert len(created) == len(set(created))
        assert all(ci.tested[sha] == "success" for sha in moves)
        for number in numbers:
            events = await one.storage.list_merge_events(REPO.lower(), number)
            assert [e.to_status for e in events].count(MergeStatus.MERGED) == 1


async def test_a_file_two_pull_requests_share_is_all_the_judges_read_again(
    harness: Callable[[str], contextlib.AbstractAsyncContextManager[Harness]],
) -> None:
    async with harness("a") as bot, ci_running([bot]) as ci:
        configure(bot.fake, batch_size=2)
        shared = "# Shared\n\nThe same words from both.\n"
        files: list[dict[str, str | None]] = [
            {"docs/own0.md": "# Own 0\n", "docs/shared.md": shared},
            {"docs/own1.md": "# Own 1\n", "docs/shared.md": shared},
        ]
        judged: list[int] = []

        def the_judges_accept() -> None:
            judged.append(model_calls(bot))
            bot.llm.script(QUICK, scores(*ACCEPT))

        numbers = await queued_while_held(bot, files, then=the_judges_accept)
        for number in numbers:
            await until_status(bot, number, MergeStatus.MERGED)
        [tip] = ci.tested
        [run] = bot.check_runs(sha=tip)
        assert (run.name, run.conclusion) == ("judge", "success")
        asked = bot.llm.requests[judged[0] :]
        assert len(asked) == 1
        prompt = json.dumps(asked[0].body)
        assert "docs/shared.md" in prompt
        assert "docs/own0.md" not in prompt and "docs/own1.md" not in prompt


REVIEWS = {
    "required_pull_request_reviews": {
        "url": f"https://api.github.com/repos/{REPO}/branches/main/protection/reviews",
        "dismiss_stale_reviews": False,
        "require_code_owner_reviews": False,
        "required_approving_review_count": 1,
    }
}


async def test_where_the_app_may_not_move_the_base_the_batch_lands_as_merges_in_order(
    harness: Callable[[str], contextlib.AbstractAsyncContextManager[Harness]],
) -> None:
    async with harness("a") as bot, ci_running([bot]) as ci:
        configure(bot.fake, batch_size=2)
        bot.fake.repo(REPO).branch_protection["main"] = dict(REVIEWS)
        files: list[dict[str, str | None]] = [{"docs/a.md": "# A\n"}, {"docs/b.md": "# B\n"}]
        numbers = await queued_while_held(bot, files)
        for number in numbers:
            await until_status(bot, number, MergeStatus.MERGED)
        heads = [bot.fake.repo(REPO).pulls[number].head_sha for number in numbers]
        assert bot.fake.merges.merged == [
            (n, sha, "merge") for n, sha in zip(numbers, heads, strict=True)
        ]
        assert [name for name, _ in bot.fake.merges.moved_refs if name == "main"] == []
        [tip] = ci.tested
        repo = bot.fake.repo(REPO)
        main = repo.branches["main"]
        assert {p: repo.entry_at(main, p) for p in ("docs/a.md", "docs/b.md")} == {
            p: repo.entry_at(tip, p) for p in ("docs/a.md", "docs/b.md")
        }
        await until_comment(bot, numbers[0], "with the merge queue's batch 1")


async def test_a_strict_branch_the_app_may_not_push_to_stays_one_at_a_time(
    harness: Callable[[str], contextlib.AbstractAsyncContextManager[Harness]],
) -> None:
    async with harness("a") as bot, ci_running([bot]) as ci:
        configure(bot.fake, batch_size=3)
        bot.fake.repo(REPO).branch_protection["main"] = {**REVIEWS, "strict": True}
        files: list[dict[str, str | None]] = [{"docs/a.md": "# A\n"}, {"docs/b.md": "# B\n"}]
        numbers = await queued_while_held(bot, files)
        await until_status(bot, numbers[0], MergeStatus.MERGED)
        assert bot.fake.merges.merged[0][0] == numbers[0]
        assert bot.fake.merges.created_refs == [] and ci.tested == {}
        assert await bot.storage.merge_batches(REPO.lower(), "main") == []


async def test_a_member_that_conflicts_leaves_and_the_rest_land(
    harness: Callable[[str], contextlib.AbstractAsyncContextManager[Harness]],
) -> None:
    async with harness("a") as bot, ci_running([bot]):
        configure(bot.fake, batch_size=2)
        files: list[dict[str, str | None]] = [
            {"docs/same.md": "# One way\n"},
            {"docs/same.md": "# The other way\n"},
        ]
        numbers = await queued_while_held(bot, files)
        await until_status(bot, numbers[1], MergeStatus.DROPPED)
        await until_status(bot, numbers[0], MergeStatus.MERGED)
        comment = await until_comment(bot, numbers[1], "Left the merge queue")
        assert "conflicts with `main`" in comment


async def test_a_member_pushed_to_before_its_batch_is_built_leaves(
    harness: Callable[[str], contextlib.AbstractAsyncContextManager[Harness]],
) -> None:
    async with harness("a") as bot, ci_running([bot]):
        configure(bot.fake, batch_size=2)
        files: list[dict[str, str | None]] = [{"docs/a.md": "# A\n"}, {"docs/b.md": "# B\n"}]
        bot.fake.hold("repos/get-branch")
        numbers = [await accepted(bot, i, changed) for i, changed in enumerate(files)]
        await wait_for(bot.fake.held.is_set, what="the worker at GitHub")
        # A push GitHub has not told the App about yet.
        bot.fake.merges.push(REPO, numbers[1], {"docs/b.md": "# B, again\n"})
        bot.fake.release()
        await until_status(bot, numbers[1], MergeStatus.DROPPED)
        await until_status(bot, numbers[0], MergeStatus.MERGED)
        comment = await until_comment(bot, numbers[1], "Left the merge queue")
        assert "new commits after the judged one" in comment


async def test_a_refused_move_of_the_base_lands_the_batch_as_merges_in_order(
    harness: Callable[[str], contextlib.AbstractAsyncContextManager[Harness]],
) -> None:
    async with harness("a") as bot, ci_running([bot]):
        configure(bot.fake, batch_size=2)
        # A rule the branch's protection does not show (a ruleset, say) refuses the push.
        refusal = "Protected branch update failed"
        bot.fake.merges.refused_pushes[(REPO.lower(), "main")] = refusal
        files: list[dict[str, str | None]] = [{"docs/a.md": "# A\n"}, {"docs/b.md": "# B\n"}]
        numbers = await queued_while_held(bot, files)
        for number in numbers:
            await until_status(bot, number, MergeStatus.MERGED)
        assert [number for number, _, _ in bot.fake.merges.merged] == numbers
        assert "main" not in [name for name, _ in bot.fake.merges.moved_refs]


async def test_a_member_github_refuses_to_merge_leaves_instead_of_looping(
    harness: Callable[[str], contextlib.AbstractAsyncContextManager[Harness]],
) -> None:
    async with harness("a") as bot, ci_running([bot]):
        configure(bot.fake, batch_size=2)
        bot.fake.repo(REPO).branch_protection["main"] = dict(REVIEWS)
        files: list[dict[str, str | None]] = [{"docs/a.md": "# A\n"}, {"docs/b.md": "# B\n"}]

        def second_blocked() -> None:
            bot.fake.repo(REPO).pulls[numbers_so_far[-1]].checks_pending = True

        numbers_so_far: list[int] = []
        bot.fake.hold("repos/get-branch")
        for index, changed in enumerate(files):
            numbers_so_far.append(await accepted(bot, index, changed))
        await wait_for(bot.fake.held.is_set, what="the worker at GitHub")
        second_blocked()
        bot.fake.release()
        first, second = numbers_so_far
        await until_status(bot, second, MergeStatus.DROPPED)
        await until_status(bot, first, MergeStatus.MERGED)
        comment = await until_comment(bot, second, "Left the merge queue")
        assert "GitHub refused to merge it (405)" in comment


async def test_batches_in_flight_end_when_the_protection_stops_allowing_them(
    harness: Callable[[str], contextlib.AbstractAsyncContextManager[Harness]],
) -> None:
    async with harness("a") as bot, ci_running([bot]) as ci:
        configure(bot.fake, batch_size=2)
        ci.paused = True
        files: list[dict[str, str | None]] = [{"docs/a.md": "# A\n"}, {"docs/b.md": "# B\n"}]
        numbers = await queued_while_held(bot, files)

        async def testing() -> bool:
            return bool(await bot.storage.merge_batches(REPO.lower(), "main"))

        await wait_for(testing, what="a batch under test")
        bot.fake.repo(REPO).branch_protection["main"] = {**REVIEWS, "strict": True}

        async def ended() -> bool:
            return not await bot.storage.merge_batches(REPO.lower(), "main")

        await wait_for(ended, what="the batch discarded")
        await until_status(bot, numbers[0], MergeStatus.MERGED)
        assert bot.fake.merges.merged[0][0] == numbers[0]  # one at a time, by PUT merge
        assert "judge-bot/queue/main/1" in bot.fake.merges.deleted_branches


async def test_a_worker_stuck_while_building_leaves_the_queue_to_the_next_one(
    tmp_path: Path,
    github_keypair: Any,
    fake_github: FakeGitHub,
    github_app: GitHubApp,
    fake_llm: FakeOpenAIServer,
    storage_backend: StorageBackend,
    github_session: aiohttp.ClientSession,
) -> None:
    settings = fast_settings(merge_queue_claim_ttl_ms=1_000)
    pem = github_keypair.private_pem

    def replica(name: str) -> contextlib.AbstractAsyncContextManager[Harness]:
        # A process of its own: its own client (the App paces writes per process).
        app = GitHubApp(
            app_id=github_app.app_id,
            private_key=pem,
            session=github_session,
            api_url=fake_github.base_url,
            graphql_url=fake_github.graphql_url,
            policy=RetryPolicy(write_interval=0.001, backoff_base=0.001, backoff_cap=0.01),
        )
        store = storage_backend.new()
        return merge_harness(
            tmp_path / name, pem, fake_github, app, fake_llm, settings, storage=store
        )

    async with replica("a") as stuck:
        configure(fake_github, batch_size=2)
        fake_github.hold("git/create-ref")  # the batch's first branch is not made yet
        number = await accepted(stuck, 0, {"docs/a.md": "# A\n"})
        await wait_for(fake_github.held.is_set, what="a worker stuck building")
        [building] = await stuck.storage.merge_batches(REPO.lower(), "main")
        assert building.state is BatchState.BUILDING
        async with replica("b") as next_one, ci_running([next_one]) as ci:
            await until_status(next_one, number, MergeStatus.MERGED)
            [tip] = ci.tested
            assert fake_github.repo(REPO).branches["main"] == tip
            fake_github.release()

            def cleaned() -> bool:
                branches = fake_github.repo(REPO).branches
                return not any(name.startswith("judge-bot/") for name in branches)

            # The stuck worker comes back, builds its batch, finds the queue no longer its
            # own, and leaves no branch behind.
            def built_late() -> bool:
                return "judge-bot/queue/main/1" in fake_github.merges.created_refs

            await wait_for(built_late, what="the stuck worker's batch built")
            await wait_for(cleaned, what="no queue branch left")
            assert fake_github.repo(REPO).branches["main"] == tip
        events = await stuck.storage.list_merge_events(REPO.lower(), number)
        assert [e.to_status for e in events].count(MergeStatus.MERGED) == 1


async def test_a_shared_file_the_combination_leaves_as_the_base_has_it_is_not_read_again(
    harness: Callable[[str], contextlib.AbstractAsyncContextManager[Harness]],
) -> None:
    async with harness("a") as bot, ci_running([bot]) as ci:
        configure(bot.fake, batch_size=2)
        words = "# Shared\n\nThe same words on both sides.\n"
        files: list[dict[str, str | None]] = [
            {"docs/own0.md": "# Own 0\n"},
            {"docs/own1.md": "# Own 1\n", "docs/shared.md": words},
        ]
        judged: list[int] = []

        def the_base_takes_the_same_words() -> None:
            judged.append(model_calls(bot))
            bot.fake.add_commit(REPO, {"docs/shared.md": words}, message="Same", branch="main")

        numbers = await queued_while_held(bot, files, then=the_base_takes_the_same_words)
        for number in numbers:
            await until_status(bot, number, MergeStatus.MERGED)
        [tip] = ci.tested
        [run] = bot.check_runs(sha=tip)
        assert (run.name, run.conclusion) == ("judge", "success")
        assert model_calls(bot) == judged[0]
