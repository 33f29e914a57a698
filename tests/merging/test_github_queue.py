"""GitHub's merge queue through GraphQL: each call against the fake GitHub (its queries
validated against GitHub's schema), GitHub's refusals read as outcomes, and the pure
pieces (rules cache, handed-over records, what a merge cost) as tables."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from gidgethub import BadGraphQLRequest

from bot.github.client import GitHubApp
from bot.merging.github_calls import Answer, MergeCalls
from bot.merging.github_handover import (
    GROUP_KEPT,
    GROUPS_NAMESPACE,
    HANDED_NAMESPACE,
    LEFT_KEPT,
    RULES_FRESH,
    BranchRules,
    HandedOver,
    HandoverState,
    cached_rules,
    forget_rules,
    groups_holding,
    has_merge_queue,
    leaves,
    list_handed_over,
    mark_left,
    mark_merged,
    prune,
    remember_group,
    requires_queue,
    uses_github_queue,
)
from bot.merging.github_queue import (
    Mutation,
    QueueAnswer,
    QueueOutcome,
    answer_of,
    dequeue_pull_request,
    enable_auto_merge,
    enqueue_pull_request,
    refusal_outcome,
)
from bot.merging.merge_metrics import costs
from bot.storage.base import Storage, StoredVerdict
from tests.support.fakes.github_server import FakeGitHub
from tests.support.flow_helpers import REPO, commit_files, open_pull

NOW = datetime(2026, 3, 1, 12, tzinfo=UTC)


def node_of(fake: FakeGitHub, number: int) -> str:
    return f"PR_{fake.repo(REPO).pulls[number].id}"


async def test_enqueue_dequeue_and_auto_merge_against_the_fake(
    fake_github: FakeGitHub, github_app: GitHubApp
) -> None:
    fake_github.merge_queue.enable(REPO, "main")
    client = await github_app.installation_client(1)
    first = open_pull(fake_github, commit_files(fake_github, {"a.md": "a\n"}, branch="a"))
    second_sha = commit_files(fake_github, {"b.md": "b\n"}, branch="b")
    second = open_pull(fake_github, second_sha, branch="b")
    first_sha = fake_github.repo(REPO).pulls[first].head_sha

    queued = await enqueue_pull_request(client, node_of(fake_github, first), first_sha)
    assert queued == QueueAnswer(QueueOutcome.QUEUED, position=1, eta_seconds=600)
    jumped = await enqueue_pull_request(client, node_of(fake_github, second), second_sha, jump=True)
    assert jumped.position == 1 and jumped.ok
    assert fake_github.merge_queue.entries(REPO, "main") == [second, first]
    again = await enqueue_pull_request(client, node_of(fake_github, first), first_sha)
    assert again.outcome is QueueOutcome.QUEUED and again.position == 2

    assert (await dequeue_pull_request(client, node_of(fake_github, first))).outcome is (
        QueueOutcome.DEQUEUED
    )
    gone = await dequeue_pull_request(client, node_of(fake_github, first))
    assert gone.outcome is QueueOutcome.NOT_QUEUED and gone.ok
    assert gone.message == "Pull request is not in the merge queue"

    moved = await enqueue_pull_request(client, node_of(fake_github, first), second_sha)
    assert moved.outcome is QueueOutcome.HEAD_CHANGED and not moved.ok

    enabled = await enable_auto_merge(client, node_of(fake_github, first), first_sha, "squash")
    assert enabled.outcome is QueueOutcome.AUTO_MERGE_ENABLED
    [auto] = fake_github.merge_queue.auto_merge
    assert (auto.number, auto.head_sha, auto.method) == (first, first_sha, "squash")
    fake_github.merge_queue.allow_auto_merge = False
    off = await enable_auto_merge(client, node_of(fake_github, first), first_sha, "merge")
    assert off.outcome is QueueOutcome.NO_MERGE_QUEUE

    unknown = await dequeue_pull_request(client, "PR_nope")
    assert unknown.outcome is QueueOutcome.REFUSED
    assert "Could not resolve to a node" in unknown.message


async def test_refusals_of_the_queue_itself(fake_github: FakeGitHub, github_app: GitHubApp) -> None:
    client = await github_app.installation_client(1)
    sha = commit_files(fake_github, {"a.md": "a\n"}, branch="a")
    number = open_pull(fake_github, sha, branch="a")
    no_queue = await enqueue_pull_request(client, node_of(fake_github, number), sha)
    assert no_queue.outcome is QueueOutcome.NO_MERGE_QUEUE
    fake_github.merge_queue.enable(REPO, "main")
    fake_github.repo(REPO).pulls[number].conflict = True
    conflict = await enqueue_pull_request(client, node_of(fake_github, number), sha)
    assert conflict.outcome is QueueOutcome.NOT_MERGEABLE
    fake_github.repo(REPO).pulls[number].draft = True
    draft = await enqueue_pull_request(client, node_of(fake_github, number), sha)
    assert draft == QueueAnswer(QueueOutcome.NOT_MERGEABLE, "Pull request is in draft state")
    fake_github.repo(REPO).issues[number].state = "closed"
    closed = await enqueue_pull_request(client, node_of(fake_github, number), sha)
    assert closed.message == "Pull request is closed"


async def test_a_refused_request_still_raises(
    fake_github: FakeGitHub, github_app: GitHubApp
) -> None:
    """GitHub refusing the request itself (401/4xx) is no answer about the queue."""
    client = await github_app.installation_client(1)
    fake_github.inject("graphql", status=403, body={"message": "Resource not accessible"})
    with pytest.raises(BadGraphQLRequest):
        await dequeue_pull_request(client, "PR_1")


@pytest.mark.parametrize(
    ("mutation", "kind", "message", "outcome"),
    [
        (
            Mutation.ENQUEUE,
            "UNPROCESSABLE",
            "Pull request head sha does not match the expected head oid",
            QueueOutcome.HEAD_CHANGED,
        ),
        (
            Mutation.AUTO_MERGE,
            "UNPROCESSABLE",
            "Expected head OID 123 is not the head",
            QueueOutcome.HEAD_CHANGED,
        ),
        (
            Mutation.DEQUEUE,
            "UNPROCESSABLE",
            "Pull request is not in the merge queue",
            QueueOutcome.NOT_QUEUED,
        ),
        (Mutation.DEQUEUE, None, "Pull request is not queued", QueueOutcome.NOT_QUEUED),
        (
            Mutation.ENQUEUE,
            "UNPROCESSABLE",
            "Pull request is already queued to merge in the merge queue",
            QueueOutcome.QUEUED,
        ),
        (
            Mutation.AUTO_MERGE,
            "UNPROCESSABLE",
            "Pull request Auto merge is not allowed for this repository",
            QueueOutcome.NO_MERGE_QUEUE,
        ),
        (
            Mutation.ENQUEUE,
            "UNPROCESSABLE",
            "The merge queue is disabled for this branch",
            QueueOutcome.NO_MERGE_QUEUE,
        ),
        (
            Mutation.ENQUEUE,
            "UNPROCESSABLE",
            "Base branch does not have a merge queue",
            QueueOutcome.NO_MERGE_QUEUE,
        ),
        (
            Mutation.ENQUEUE,
            "UNPROCESSABLE",
            "Pull request New changes require approval",
            QueueOutcome.NOT_MERGEABLE,
        ),
        (
            Mutation.ENQUEUE,
            "FORBIDDEN",
            "Resource not accessible by integration",
            QueueOutcome.REFUSED,
        ),
        (
            Mutation.DEQUEUE,
            "UNPROCESSABLE",
            "Pull request is already queued in the merge queue",
            QueueOutcome.NOT_MERGEABLE,
        ),
        (
            Mutation.AUTO_MERGE,
            "UNPROCESSABLE",
            "Pull request is in clean status",
            QueueOutcome.NOT_MERGEABLE,
        ),
        # Sentences that only share words with the ones above are refusals, said as such.
        (
            Mutation.ENQUEUE,
            "UNPROCESSABLE",
            "Pull request head sha is locked by another operation",
            QueueOutcome.NOT_MERGEABLE,
        ),
        (
            Mutation.ENQUEUE,
            "UNPROCESSABLE",
            "Pull request was already merged; the merge queue has nothing to do",
            QueueOutcome.NOT_MERGEABLE,
        ),
        (
            Mutation.DEQUEUE,
            "UNPROCESSABLE",
            "Pull request is locked: not in a state to leave the merge queue",
            QueueOutcome.NOT_MERGEABLE,
        ),
        (
            Mutation.DISABLE_AUTO_MERGE,
            "UNPROCESSABLE",
            "Pull request Auto merge is not enabled for this pull request",
            QueueOutcome.AUTO_MERGE_DISABLED,
        ),
        (
            Mutation.DISABLE_AUTO_MERGE,
            "UNPROCESSABLE",
            "Pull request is closed",
            QueueOutcome.NOT_MERGEABLE,
        ),
    ],
)
def test_refusal_outcome(
    mutation: Mutation, kind: str | None, message: str, outcome: QueueOutcome
) -> None:
    assert refusal_outcome(mutation, kind, message) is outcome


def test_answers_read_leniently() -> None:
    assert answer_of(Mutation.ENQUEUE, ["plain text error"], None) == QueueAnswer(
        QueueOutcome.REFUSED, "plain text error"
    )
    assert answer_of(Mutation.ENQUEUE, [{"type": 3}], None) == QueueAnswer(
        QueueOutcome.REFUSED, "no message"
    )
    github = {"type": "UNPROCESSABLE", "message": "Pull request is not mergeable"}
    assert answer_of(Mutation.ENQUEUE, [github], None).outcome is QueueOutcome.NOT_MERGEABLE
    odd_extensions = {"extensions": ["UNPROCESSABLE"], "message": "Pull request is a draft"}
    assert answer_of(Mutation.ENQUEUE, [odd_extensions], None).outcome is QueueOutcome.REFUSED
    long = {"type": "UNPROCESSABLE", "message": "Pull request\n" + "x " * 400}
    assert len(answer_of(Mutation.ENQUEUE, [long], None).message) == 300
    assert answer_of(Mutation.ENQUEUE, [], None) == QueueAnswer(QueueOutcome.QUEUED)
    odd = {"position": "1", "estimatedTimeToMerge": None}
    assert answer_of(Mutation.ENQUEUE, [], odd) == QueueAnswer(QueueOutcome.QUEUED)


def test_rules_and_the_405() -> None:
    assert has_merge_queue([{"type": "pull_request"}, {"type": "merge_queue"}])
    assert not has_merge_queue([{"type": "pull_request"}])
    fresh = BranchRules.of({"merge_queue": True, "checked_at": NOW.isoformat()})
    assert cached_rules(fresh, NOW + timedelta(minutes=1)) is True
    assert cached_rules(BranchRules(False, NOW), NOW) is False
    assert cached_rules(fresh, NOW + RULES_FRESH) is None
    assert cached_rules(fresh, NOW - timedelta(seconds=1)) is None  # a clock that went back
    assert cached_rules(None, NOW) is None
    assert BranchRules.of({"merge_queue": True}) is None
    assert BranchRules.of({"checked_at": "yesterday"}) is None
    assert requires_queue(Answer(405, "Changes must be made through the merge queue"))
    assert not requires_queue(Answer(405, "Pull Request is not mergeable"))
    assert not requires_queue(Answer(409, "merge queue"))


def record(**changes: Any) -> HandedOver:
    base = HandedOver(REPO.lower(), 5, "main", "a" * 40, "PR_5", "judge", NOW)
    return HandedOver(**{**base.__dict__, **changes})


def test_handed_over_rows_round_trip_and_bad_rows_are_ignored() -> None:
    left = record(state=HandoverState.LEFT, left_reason="closed", left_at=NOW, position=2)
    assert HandedOver.of(left.as_json()) == left
    assert HandedOver.of(record(eta_seconds=60, jump=True).as_json()) == record(
        eta_seconds=60, jump=True
    )
    assert HandedOver.of({"repository": REPO}) is None
    assert HandedOver.of({**record().as_json(), "enqueued_at": "soon"}) is None
    assert HandedOver.of({**record().as_json(), "state": "lost"}) is None
    partial = {**record().as_json(), "position": "2", "state": None, "left_at": 5}
    assert HandedOver.of(partial) == record()


def test_leaves() -> None:
    assert leaves(record(), None)
    assert leaves(record(), "b" * 40)
    assert not leaves(record(), "a" * 40)
    assert not leaves(record(state=HandoverState.LEFT), None)
    assert not leaves(None, None)


def stored(head: str | None, calls: Any) -> StoredVerdict:
    return StoredVerdict(1, f"{REPO}#5", REPO, head, "accept", NOW, {"calls": calls})


def test_costs_of_a_merged_pull_request() -> None:
    assert costs([]) == (0, 0)
    records = [
        stored("a" * 40, [{}, {}]),
        stored("a" * 40, []),  # the same head again: a cache hit, no CI run of its own
        stored("b" * 40, [{}]),
        stored(None, None),
    ]
    assert costs(records) == (2, 3)


async def test_prune_forgets_old_departures_and_stale_groups(storage: Storage) -> None:
    def record(number: int, repository: str = "octo/hello") -> HandedOver:
        return HandedOver(repository, number, "main", "a" * 40, f"PR_{number}", "me", NOW)

    now = NOW + timedelta(days=60)
    # Still queued (as `hand_over` keeps it): kept however old.
    await storage.kv_put(HANDED_NAMESPACE, "octo/hello#1", record(1).as_json())
    await mark_left(storage, record(2), "closed", now - LEFT_KEPT - timedelta(minutes=1))
    await mark_left(storage, record(3), "closed", now - timedelta(days=1))
    await mark_merged(storage, record(4), now - LEFT_KEPT - timedelta(days=1))
    await mark_left(storage, record(5, "octo/other"), "closed", NOW)  # another repository
    stale = now - GROUP_KEPT - timedelta(minutes=1)
    await remember_group(storage, "octo/hello", "1" * 40, [(1, "a" * 40)], stale)
    await remember_group(storage, "octo/hello", "2" * 40, [(3, "a" * 40)], now)
    # A row written before groups had a time: nothing else would remove it.
    await storage.kv_put(GROUPS_NAMESPACE, f"octo/hello@{'4' * 40}", {"head_sha": "4" * 40})
    assert await prune(storage, "Octo/Hello", now) == 4
    left = {(r.repository, r.pull_number) for r in await list_handed_over(storage)}
    assert left == {("octo/hello", 1), ("octo/hello", 3), ("octo/other", 5)}
    assert await groups_holding(storage, "octo/hello", 1, "a" * 40) == []
    assert await groups_holding(storage, "octo/hello", 3, "a" * 40) == ["2" * 40]


async def test_rules_and_group_rows_keep_their_json(
    storage: Storage, fake_github: FakeGitHub, github_app: GitHubApp
) -> None:
    """Rows as running installations hold them (`branch-rules`, `github-merge-groups`)
    are read, and rows written now have the same keys and values."""
    calls = MergeCalls(await github_app.installation_client(1), REPO)
    today = {"merge_queue": True, "checked_at": NOW.isoformat()}
    await storage.kv_put("branch-rules", f"{REPO.lower()}:main", today)
    assert await uses_github_queue(storage, calls, "main", NOW + timedelta(minutes=1))
    assert fake_github.count("repos/get-branch-rules") == 0
    await forget_rules(storage, REPO, "main", NOW)
    assert await storage.kv_get("branch-rules", f"{REPO.lower()}:main") == {
        "merge_queue": False,
        "checked_at": NOW.isoformat(),
    }

    group = {"head_sha": "1" * 40, "members": [[3, "a" * 40], [4, "b" * 40]], "at": NOW.isoformat()}
    await storage.kv_put(GROUPS_NAMESPACE, f"octo/hello@{'1' * 40}", group)
    assert await groups_holding(storage, "Octo/Hello", 4, "b" * 40) == ["1" * 40]
    assert await groups_holding(storage, "octo/hello", 4, "a" * 40) == []
    await remember_group(storage, "octo/hello", "2" * 40, [(3, "a" * 40), (4, "b" * 40)], NOW)
    assert await storage.kv_get(GROUPS_NAMESPACE, f"octo/hello@{'2' * 40}") == {
        **group,
        "head_sha": "2" * 40,
    }
    # Members of another shape never hold a pull request; the row is kept until it is old.
    odd = {"head_sha": "3" * 40, "members": [[3], "x", [3, 4]], "at": NOW.isoformat()}
    await storage.kv_put(GROUPS_NAMESPACE, f"octo/hello@{'3' * 40}", odd)
    assert await groups_holding(storage, "octo/hello", 3, "a" * 40) == ["1" * 40, "2" * 40]
    assert await prune(storage, "octo/hello", NOW) == 0
