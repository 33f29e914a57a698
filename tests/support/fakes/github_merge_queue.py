"""The fake GitHub: branches that require GitHub's merge queue, and the queue itself.

* `enable(repo, branch)` gives the branch a `merge_queue` rule (a repository ruleset), which
  `GET .../rules/branches/{branch}` lists (`repos/get-branch-rules`) beside any other rule
  the test adds with `add_rule`.
* `enqueuePullRequest` (GraphQL) puts an open, mergeable pull request whose head is
  `expectedHeadOid` at the back of its base branch's queue (the front with `jump`);
  `dequeuePullRequest` takes it out; `enablePullRequestAutoMerge` records the request in
  `auto_merge` (GitHub merges or queues it later; nothing here does);
  `disablePullRequestAutoMerge` removes it (a pull request without it is answered alike)
  and records the number in `auto_merge_disabled`.
* Refusals are GraphQL errors of type `UNPROCESSABLE` with a sentence starting "Pull request",
  as GitHub words them: the head moved, a draft, closed, conflicts, no merge queue, not in
  the queue, auto-merge not allowed (`allow_auto_merge`). `refuse_next` makes the next
  mutation fail with a sentence of the test's own.
* GitHub takes a pull request out of its queue when its head moves or it closes; `push`
  and closing through the other fakes do not, so a test that needs that says so
  (`drop`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from graphql import GraphQLError

from tests.support.fakes.github_http import FakeGitHubError, Handler, Incoming, Reply
from tests.support.fakes.github_model import Pull, Repo

if TYPE_CHECKING:
    from tests.support.fakes.github_server import FakeGitHub

MERGE_QUEUE_PARAMETERS = {
    "check_response_timeout_minutes": 60,
    "grouping_strategy": "ALLGREEN",
    "max_entries_to_build": 5,
    "max_entries_to_merge": 5,
    "merge_method": "SQUASH",
    "min_entries_to_merge": 1,
    "min_entries_to_merge_wait_minutes": 5,
}
# GitHub's estimate for each entry ahead, in seconds (a made-up CI of ten minutes).
SECONDS_PER_ENTRY = 600


@dataclass
class QueueEntry:
    number: int
    head_sha: str
    jump: bool
    enqueued_at: datetime
    enqueuer: str


@dataclass
class AutoMerge:
    number: int
    head_sha: str
    method: str


def unprocessable(message: str) -> GraphQLError:
    return GraphQLError(message, extensions={"type": "UNPROCESSABLE"})


@dataclass
class MergeQueueModel:
    fake: FakeGitHub
    queues: dict[tuple[str, str], list[QueueEntry]] = field(default_factory=dict)
    rules: dict[tuple[str, str], list[dict[str, Any]]] = field(default_factory=dict)
    auto_merge: list[AutoMerge] = field(default_factory=list)
    allow_auto_merge: bool = True
    dequeued: list[int] = field(default_factory=list)
    auto_merge_disabled: list[int] = field(default_factory=list)
    _refusals: list[str] = field(default_factory=list)

    def table(self) -> dict[str, Handler]:
        return {"repos/get-branch-rules": self._branch_rules}

    # -- builders ------------------------------------------------------------------------

    def enable(self, repo: Repo | str, branch: str) -> None:
        self.add_rule(repo, branch, {"type": "merge_queue", "parameters": MERGE_QUEUE_PARAMETERS})

    def disable(self, repo: Repo | str, branch: str) -> None:
        key = self._key(repo, branch)
        self.rules[key] = [r for r in self.rules.get(key, []) if r["type"] != "merge_queue"]

    def add_rule(self, repo: Repo | str, branch: str, rule: dict[str, Any]) -> None:
        full = self._repo(repo)
        self.rules.setdefault(self._key(full, branch), []).append(
            {
                **rule,
                "ruleset_source_type": "Repository",
                "ruleset_source": full.full_name,
                "ruleset_id": 42,
            }
        )

    def entries(self, repo: Repo | str, branch: str) -> list[int]:
        return [entry.number for entry in self.queues.get(self._key(repo, branch), [])]

    def drop(self, repo: Repo | str, number: int) -> None:
        """GitHub's own removal (a push, a failed group): no mutation, no record."""
        name = self._repo(repo).full_name.lower()
        for (full, _), queue in self.queues.items():
            if full == name:
                queue[:] = [entry for entry in queue if entry.number != number]

    def refuse_next(self, message: str) -> None:
        self._refusals.append(message)

    def has_queue(self, repo: Repo | str, branch: str) -> bool:
        return any(r["type"] == "merge_queue" for r in self.rules.get(self._key(repo, branch), []))

    # -- REST ----------------------------------------------------------------------------

    async def _branch_rules(self, incoming: Incoming) -> Reply:
        repo = self.fake.repos.get(f"{incoming.params['owner']}/{incoming.params['repo']}".lower())
        if repo is None or repo.installation_id != incoming.installation_id:
            raise FakeGitHubError(404, "Not Found")
        return Reply(200, list(self.rules.get(self._key(repo, incoming.params["branch"]), [])))

    # -- GraphQL -------------------------------------------------------------------------

    def pull_by_node(self, node_id: str, installation_id: int) -> tuple[Repo, Pull]:
        for repo in self.fake.repos.values():
            if repo.installation_id != installation_id:
                continue
            for pull in repo.pulls.values():
                if f"PR_{pull.id}" == node_id:
                    return repo, pull
        raise GraphQLError(
            f"Could not resolve to a node with the global id of '{node_id}'",
            extensions={"type": "NOT_FOUND"},
        )

    def _refused(self) -> None:
        if self._refusals:
            raise unprocessable(self._refusals.pop(0))

    def _check_open(self, repo: Repo, pull: Pull, expected: str | None) -> None:
        if pull.merged or repo.issues[pull.number].state != "open":
            raise unprocessable("Pull request is closed")
        if expected is not None and expected != pull.head_sha:
            raise unprocessable("Pull request head sha does not match the expected head oid")
        if pull.draft:
            raise unprocessable("Pull request is in draft state")
        if pull.conflict:
            raise unprocessable("Pull request is not mergeable: it has merge conflicts")

    def enqueue(
        self, node_id: str, installation_id: int, expected: str | None, jump: bool, login: str
    ) -> dict[str, Any]:
        repo, pull = self.pull_by_node(node_id, installation_id)
        self._refused()
        self._check_open(repo, pull, expected)
        if not self.has_queue(repo, pull.base_ref):
            raise unprocessable("Pull request's base branch does not have a merge queue enabled")
        queue = self.queues.setdefault(self._key(repo, pull.base_ref), [])
        current = next((e for e in queue if e.number == pull.number), None)
        if current is None:
            current = QueueEntry(pull.number, pull.head_sha, jump, self.fake.clock(), login)
            queue.insert(0 if jump else len(queue), current)
        return self.entry_json(repo, pull.base_ref, current)

    def dequeue(self, node_id: str, installation_id: int) -> dict[str, Any]:
        repo, pull = self.pull_by_node(node_id, installation_id)
        self._refused()
        queue = self.queues.get(self._key(repo, pull.base_ref), [])
        current = next((e for e in queue if e.number == pull.number), None)
        if current is None:
            raise unprocessable("Pull request is not in the merge queue")
        answer = self.entry_json(repo, pull.base_ref, current)
        queue.remove(current)
        self.dequeued.append(pull.number)
        return answer

    def enable_auto_merge(
        self, node_id: str, installation_id: int, expected: str | None, method: str
    ) -> int:
        repo, pull = self.pull_by_node(node_id, installation_id)
        self._refused()
        if not self.allow_auto_merge:
            raise unprocessable("Pull request Auto merge is not allowed for this repository")
        self._check_open(repo, pull, expected)
        self.auto_merge.append(AutoMerge(pull.number, pull.head_sha, method))
        return pull.number

    def disable_auto_merge(self, node_id: str, installation_id: int) -> int:
        _, pull = self.pull_by_node(node_id, installation_id)
        self._refused()
        self.auto_merge = [a for a in self.auto_merge if a.number != pull.number]
        self.auto_merge_disabled.append(pull.number)
        return pull.number

    def entry_of(self, repo: Repo, pull: Pull) -> dict[str, Any] | None:
        for entry in self.queues.get(self._key(repo, pull.base_ref), []):
            if entry.number == pull.number:
                return self.entry_json(repo, pull.base_ref, entry)
        return None

    def entry_json(self, repo: Repo, branch: str, entry: QueueEntry) -> dict[str, Any]:
        queue = self.queues.get(self._key(repo, branch), [])
        position = queue.index(entry) + 1 if entry in queue else 1
        return {
            "id": f"MQE_{repo.id}_{entry.number}",
            "position": position,
            "state": "QUEUED",
            "jump": entry.jump,
            "solo": False,
            "estimatedTimeToMerge": position * SECONDS_PER_ENTRY,
            "enqueuedAt": entry.enqueued_at.isoformat(),
        }

    # -- helpers -------------------------------------------------------------------------

    def _repo(self, repo: Repo | str) -> Repo:
        return repo if isinstance(repo, Repo) else self.fake.repo(repo)

    def _key(self, repo: Repo | str, branch: str) -> tuple[str, str]:
        return (self._repo(repo).full_name.lower(), branch)
