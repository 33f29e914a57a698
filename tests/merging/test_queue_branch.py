"""Queue branches against the fake GitHub (every request and answer checked against
GitHub's REST description): a batch built by merging its members' judged heads in order,
a conflict naming its member, a branch left by a crashed worker reset, the base moved only
by a fast forward, and what the base's protection allows (`BaseFacts`)."""

from __future__ import annotations

from typing import Any

import pytest
from gidgethub import BadRequest

from bot.github.client import GitHubApp
from bot.judging.target import is_queue_branch
from bot.merging.batching import LandWay
from bot.merging.queue_branch import (
    BaseFacts,
    Built,
    Conflict,
    QueueBranchCalls,
    branch_name,
    build_name,
)
from tests.support.fakes.github_server import FakeGitHub

REPO = "octo/hello"


async def calls_for(github_app: GitHubApp) -> QueueBranchCalls:
    return QueueBranchCalls(await github_app.installation_client(1), REPO)


def topic(fake: FakeGitHub, name: str, files: dict[str, str | None]) -> str:
    return fake.add_commit(REPO, files, branch=name, message=f"{name} work", author="agent")


def files_at(fake: FakeGitHub, sha: str) -> dict[str, bytes]:
    repo = fake.repo(REPO)
    return {path: repo.blobs[blob] for path, blob in repo.files_at(sha).items()}


async def test_a_batch_merges_its_members_in_order_on_the_base(
    fake_github: FakeGitHub, github_app: GitHubApp
) -> None:
    base = fake_github.add_commit(REPO, {"README.md": "hello\n"}, branch="main")
    one = topic(fake_github, "one", {"docs/a.md": "A\n"})
    two = topic(fake_github, "two", {"docs/b.md": "B\n"})
    calls = await calls_for(github_app)
    built = await calls.build("main", 1, base, [(11, one), (12, two)])
    assert isinstance(built, Built)
    repo = fake_github.repo(REPO)
    assert repo.branches[branch_name("main", 1)] == built.tip
    assert files_at(fake_github, built.tip) == {
        "README.md": b"hello\n",
        "docs/a.md": b"A\n",
        "docs/b.md": b"B\n",
    }
    tip = repo.commits[built.tip]
    assert tip.parents[1] == two and "#12" in tip.message
    assert repo.branches["main"] == base  # the base waits for the checks
    # The queue branch appeared at the finished batch only: CI runs on it once.
    assert fake_github.merges.created_refs == [build_name("main", 1), branch_name("main", 1)]
    assert fake_github.merges.deleted_branches == [build_name("main", 1)]


async def test_a_member_already_in_the_branch_adds_nothing(
    fake_github: FakeGitHub, github_app: GitHubApp
) -> None:
    base = fake_github.add_commit(REPO, {"README.md": "hello\n"}, branch="main")
    calls = await calls_for(github_app)
    built = await calls.build("main", 2, base, [(11, base)])
    assert built == Built(base)


async def test_a_conflict_names_the_member(fake_github: FakeGitHub, github_app: GitHubApp) -> None:
    base = fake_github.add_commit(REPO, {"README.md": "hello\n"}, branch="main")
    one = topic(fake_github, "one", {"README.md": "one\n"})
    two = topic(fake_github, "two", {"README.md": "two\n"})
    calls = await calls_for(github_app)
    built = await calls.build("main", 3, base, [(11, one), (12, two)])
    assert built == Conflict(12, "Merge conflict")
    assert branch_name("main", 3) not in fake_github.repo(REPO).branches
    assert build_name("main", 3) not in fake_github.repo(REPO).branches


async def test_a_branch_left_by_a_crashed_worker_is_reset(
    fake_github: FakeGitHub, github_app: GitHubApp
) -> None:
    base = fake_github.add_commit(REPO, {"README.md": "hello\n"}, branch="main")
    one = topic(fake_github, "one", {"docs/a.md": "A\n"})
    calls = await calls_for(github_app)
    first = await calls.build("main", 4, base, [(11, one)])
    assert isinstance(first, Built)
    # A worker that died while building left its scratch branch too.
    fake_github.repo(REPO).branches[build_name("main", 4)] = first.tip
    again = await calls.build("main", 4, base, [(11, one)])
    assert isinstance(again, Built)
    assert fake_github.merges.moved_refs == [
        (build_name("main", 4), base),
        (branch_name("main", 4), again.tip),
    ]
    assert files_at(fake_github, again.tip) == files_at(fake_github, first.tip)
    assert build_name("main", 4) not in fake_github.repo(REPO).branches


async def test_the_base_moves_only_forward_to_the_tested_tip(
    fake_github: FakeGitHub, github_app: GitHubApp
) -> None:
    base = fake_github.add_commit(REPO, {"README.md": "hello\n"}, branch="main")
    one = topic(fake_github, "one", {"docs/a.md": "A\n"})
    calls = await calls_for(github_app)
    built = await calls.build("main", 5, base, [(11, one)])
    assert isinstance(built, Built)
    # Someone merged meanwhile: the tested tip is no fast forward of the base any more.
    fake_github.add_commit(REPO, {"docs/other.md": "O\n"}, branch="main")
    refused = await calls.move_base("main", built.tip)
    assert (refused.status, refused.message) == (422, "Update is not a fast forward")
    rebuilt = await calls.build("main", 5, fake_github.repo(REPO).branches["main"], [(11, one)])
    assert isinstance(rebuilt, Built)
    moved = await calls.move_base("main", rebuilt.tip)
    assert moved.status == 200
    assert fake_github.repo(REPO).branches["main"] == rebuilt.tip
    deleted = await calls.delete("main", 5)
    assert deleted.status == 204
    assert branch_name("main", 5) not in fake_github.repo(REPO).branches


async def test_a_protected_base_refuses_the_move(
    fake_github: FakeGitHub, github_app: GitHubApp
) -> None:
    base = fake_github.add_commit(REPO, {"README.md": "hello\n"}, branch="main")
    one = topic(fake_github, "one", {"docs/a.md": "A\n"})
    calls = await calls_for(github_app)
    built = await calls.build("main", 6, base, [(11, one)])
    assert isinstance(built, Built)
    fake_github.merges.refused_pushes[(REPO, "main")] = "Protected branch update failed"
    refused = await calls.move_base("main", built.tip)
    assert (refused.status, refused.message) == (422, "Protected branch update failed")
    assert fake_github.repo(REPO).branches["main"] == base


async def test_base_facts_of_the_fakes_unprotected_branch(
    fake_github: FakeGitHub, github_app: GitHubApp
) -> None:
    base = fake_github.add_commit(REPO, {"README.md": "hello\n"}, branch="main")
    facts = await (await calls_for(github_app)).base_facts("main")
    assert facts == BaseFacts(base, (), strict=False, reviews_required=False, restricted=False)
    assert facts.way is LandWay.MOVE_BASE


def protected(**protection: Any) -> dict[str, Any]:
    return {"commit": {"sha": "b" * 40}, "protection": protection}


@pytest.mark.parametrize(
    ("branch", "checks", "strict", "way"),
    [
        ({"commit": {"sha": "b" * 40}}, (), False, LandWay.MOVE_BASE),
        (
            protected(
                required_status_checks={
                    "contexts": ["ci", "lint"],
                    "checks": [{"context": "ci", "app_id": 15368}],
                    "strict": True,
                }
            ),
            ("ci", "lint"),
            True,
            LandWay.MOVE_BASE,
        ),
        (
            protected(
                required_status_checks={"contexts": ["ci"], "checks": [], "strict": False},
                required_pull_request_reviews={"required_approving_review_count": 1},
            ),
            ("ci",),
            False,
            LandWay.MERGE_IN_ORDER,
        ),
        (
            protected(
                required_status_checks={"contexts": ["ci"], "checks": [], "strict": True},
                restrictions={"users": [], "teams": [], "apps": []},
            ),
            ("ci",),
            True,
            LandWay.ONE_AT_A_TIME,
        ),
        (
            protected(
                required_status_checks={
                    "enforcement_level": "off",
                    "contexts": ["ci"],
                    "checks": [],
                    "strict": True,
                }
            ),
            (),
            False,
            LandWay.MOVE_BASE,
        ),
    ],
    ids=["unprotected", "checks, strict", "reviews", "strict, restricted", "checks off"],
)
def test_base_facts_read_the_protection(
    branch: dict[str, Any], checks: tuple[str, ...], strict: bool, way: LandWay
) -> None:
    facts = BaseFacts.of(branch)
    assert facts.head == "b" * 40
    assert (facts.required_checks, facts.strict, facts.way) == (checks, strict, way)


def test_queue_branches_are_recognised() -> None:
    assert branch_name("release/1.x", 3) == "judge-bot/queue/release/1.x/3"
    assert is_queue_branch("refs/heads/judge-bot/queue/main/1")
    assert is_queue_branch("judge-bot/queue/main/1")
    assert is_queue_branch("refs/heads/judge-bot/queue-build/main/1")
    assert not is_queue_branch("main")


async def test_other_refusals_raise_as_every_call_does(
    fake_github: FakeGitHub, github_app: GitHubApp
) -> None:
    base = fake_github.add_commit(REPO, {"README.md": "hello\n"}, branch="main")
    client = await github_app.installation_client(1)
    elsewhere = QueueBranchCalls(client, "octo/missing")
    with pytest.raises(BadRequest):
        await elsewhere.build("main", 7, base, [])
    with pytest.raises(BadRequest):
        await elsewhere.move_base("main", base)
    calls = await calls_for(github_app)
    with pytest.raises(BadRequest):
        await calls.build("main", 8, base, [(11, "f" * 40)])


async def test_a_queue_branch_that_cannot_be_reset_stops_the_build(
    fake_github: FakeGitHub, github_app: GitHubApp
) -> None:
    base = fake_github.add_commit(REPO, {"README.md": "hello\n"}, branch="main")
    calls = await calls_for(github_app)
    assert isinstance(await calls.build("main", 9, base, []), Built)
    name = branch_name("main", 9)
    fake_github.merges.refused_pushes[(REPO, name)] = "Protected branch update failed"
    with pytest.raises(RuntimeError, match="could not be reset: Protected branch update failed"):
        await calls.build("main", 9, base, [])
