"""The fake GitHub: merging pull requests (merge, update-branch, reviews), as GitHub does.

* Reviews: listed, and submitted by the App (`APPROVE`, `REQUEST_CHANGES`, `COMMENT`);
  dismissed (state `DISMISSED`), 422 for one that is not APPROVED / CHANGES_REQUESTED.

* `mergeable` is null for `unknown_reads` reads after a push (GitHub computes it in the
  background), then true (`clean`), `blocked` while a required check or review is
  missing (`checks_pending`), `behind` when the base requires an up-to-date branch
  (`strict`) and moved on, `dirty` on a conflict.
* `PUT .../merge` answers 409 "Head branch was modified" when `sha` is not the head,
  405 "Pull Request is not mergeable" when GitHub would not merge now (the rule
  violation "Changes must be made through the merge queue" on a branch whose rules hold
  `merge_queue`: `fake.merge_queue.enable`); a merge makes a
  commit on the base branch (merge, squash or rebase) and closes the pull request.
* `PUT .../update-branch` answers 422 unless `expected_head_sha` is the head, else 202
  and moves the head to a new merge commit of the base into it (recorded in `updates`,
  so tests can send the `synchronize` webhook GitHub would).
* `POST .../git/refs` creates a branch (422 when it exists); `PATCH .../git/refs/heads/<b>`
  moves it, a fast forward unless `force` (422 otherwise, and for a branch in
  `refused_pushes`, as a protected branch answers); `POST .../merges` merges a commit into
  a branch (201 a merge commit, 204 already there, 409 a file both sides changed).
* `DELETE .../git/refs/heads/<branch>` removes the branch (recorded in `deleted_branches`);
  422 "Reference does not exist" for a branch already gone, 422 for the default branch.
* `GET .../commits/{sha}/pulls`: the pull requests whose commits include `sha` (open and
  merged while it is not on the default branch, else the merged ones), as GitHub lists them.
* `merge_delay`: seconds each merge takes (0: none); `max_merges_in_flight` is the most
  merge requests GitHub was ever working on at once, for tests that check there is one.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tests.support.fakes.github_http import FakeGitHubError, Handler, Incoming, Reply
from tests.support.fakes.github_model import Pull, Repo, Review

if TYPE_CHECKING:
    from tests.support.fakes.github_server import FakeGitHub
    from tests.support.fakes.github_shapes import Shapes

NOT_MERGEABLE = "Pull Request is not mergeable"
MERGE_QUEUE_REQUIRED = (
    "Repository rule violations found\n\nChanges must be made through the merge queue"
)
NO_REFERENCE = "Reference does not exist"
# `pull-request-simple` (list endpoints) lacks these fields of a full pull request.
_FULL_ONLY = (
    "merged",
    "mergeable",
    "rebaseable",
    "mergeable_state",
    "merged_by",
    "comments",
    "review_comments",
    "maintainer_can_modify",
    "commits",
    "additions",
    "deletions",
    "changed_files",
)
HEAD_MODIFIED = "Head branch was modified. Review and try the merge again."


@dataclass(frozen=True)
class BranchUpdate:
    number: int
    before: str
    after: str


class MergeHandlers:
    def __init__(self, fake: FakeGitHub, shapes: Shapes) -> None:
        self.fake = fake
        self.shapes = shapes
        self.updates: list[BranchUpdate] = []
        self.merged: list[tuple[int, str, str]] = []
        """(pull number, merged head sha, merge method) per successful merge."""
        self.unknown_reads_after_push = 0
        self.deleted_branches: list[str] = []
        self.merge_delay = 0.0
        self.merges_in_flight = 0
        self.max_merges_in_flight = 0
        self.created_refs: list[str] = []
        self.moved_refs: list[tuple[str, str]] = []
        """(branch, sha) per `PATCH .../git/refs` that moved a branch."""
        self.refused_pushes: dict[tuple[str, str], str] = {}
        """(repository, branch) -> the message GitHub refuses a push to it with."""

    def table(self) -> dict[str, Handler]:
        return {
            "git/delete-ref": self._delete_ref,
            "git/create-ref": self._create_ref,
            "git/update-ref": self._update_ref,
            "repos/merge": self._merge_branches,
            "repos/list-pull-requests-associated-with-commit": self._pulls_with_commit,
            "pulls/merge": self._merge,
            "pulls/update-branch": self._update_branch,
            "pulls/list-reviews": self._list_reviews,
            "pulls/create-review": self._create_review,
            "pulls/dismiss-review": self._dismiss_review,
        }

    # -- state, as GitHub computes it ---------------------------------------------------

    def mergeability(self, repo: Repo, pull: Pull) -> tuple[bool | None, str]:
        """(`mergeable`, `mergeable_state`) for one read of the pull request."""
        if pull.merged:
            return None, "unknown"
        if pull.unknown_reads > 0:
            pull.unknown_reads -= 1
            return None, "unknown"
        if pull.conflict:
            return False, "dirty"
        if pull.draft:
            return True, "draft"
        if pull.strict and self.behind(repo, pull):
            return True, "behind"
        if pull.checks_pending:
            return True, "blocked"
        return True, "clean"

    def behind(self, repo: Repo, pull: Pull) -> bool:
        return repo.branches[pull.base_ref] not in repo.ancestors(pull.head_sha)

    # -- builders ---------------------------------------------------------------------

    def add_review(
        self, repo: Repo | str, number: int, login: str, state: str = "APPROVED"
    ) -> None:
        """A review of the pull request's current head."""
        repo = self.fake.repo(repo) if isinstance(repo, str) else repo
        pull = repo.pulls[number]
        review = Review(self.fake._new_id(), login, state, pull.head_sha, self.fake.clock())
        pull.reviews.append(review)

    def push(self, repo: Repo | str, number: int, files: dict[str, str | None]) -> str:
        """A new commit on the pull request's branch; GitHub recomputes `mergeable`."""
        repo = self.fake.repo(repo) if isinstance(repo, str) else repo
        pull = repo.pulls[number]
        sha = self.fake.add_commit(
            repo, files, message="More work", parents=[pull.head_sha], branch=pull.head_ref
        )
        pull.head_sha = sha
        pull.unknown_reads = self.unknown_reads_after_push
        return sha

    def pull_changes(self, repo: Repo, number: int) -> dict[str, str | None]:
        """What the pull request changes since it parted from its base (a merge's diff)."""
        pull = repo.pulls[number]
        fork_point = repo.merge_base(repo.branches[pull.base_ref], pull.head_sha)
        return self._changes(repo, fork_point, pull.head_sha)

    # -- operations -------------------------------------------------------------------

    def _pull_for(self, incoming: Incoming) -> tuple[Repo, Pull]:
        repo = self.fake.repos.get(f"{incoming.params['owner']}/{incoming.params['repo']}".lower())
        if repo is None or repo.installation_id != incoming.installation_id:
            raise FakeGitHubError(404, "Not Found")
        pull = repo.pulls.get(int(incoming.params["pull_number"]))
        if pull is None:
            raise FakeGitHubError(404, "Not Found")
        return repo, pull

    def _base_changes(self, repo: Repo, pull: Pull) -> dict[str, str | None]:
        """What the base branch changed since it and the head parted."""
        base_head = repo.branches[pull.base_ref]
        fork_point = repo.merge_base(base_head, pull.head_sha)
        return self._changes(repo, fork_point, base_head)

    def _changes(self, repo: Repo, before: str | None, after: str) -> dict[str, str | None]:
        old = repo.files_at(before) if before is not None else {}
        new = repo.files_at(after)
        changed: dict[str, str | None] = {}
        for path in old.keys() | new.keys():
            if old.get(path) != new.get(path):
                blob = new.get(path)
                changed[path] = None if blob is None else repo.blobs[blob].decode()
        return changed

    def _refusal(self, repo: Repo, pull: Pull) -> str | None:
        if pull.merged or repo.issues[pull.number].state != "open" or pull.draft:
            return NOT_MERGEABLE
        if pull.conflict:
            return NOT_MERGEABLE
        if self.fake.merge_queue.has_queue(repo, pull.base_ref):
            return MERGE_QUEUE_REQUIRED
        if pull.strict and self.behind(repo, pull):
            return "Head branch is not up to date with the base branch."
        if pull.checks_pending:
            return 'Required status check "ci" is expected.'
        return None

    async def _merge(self, incoming: Incoming) -> Reply:
        self.merges_in_flight += 1
        self.max_merges_in_flight = max(self.max_merges_in_flight, self.merges_in_flight)
        try:
            if self.merge_delay:
                await asyncio.sleep(self.merge_delay)
            return self._merge_now(incoming)
        finally:
            self.merges_in_flight -= 1

    def _merge_now(self, incoming: Incoming) -> Reply:
        repo, pull = self._pull_for(incoming)
        fields = incoming.json or {}
        sha = fields.get("sha")
        if sha is not None and sha != pull.head_sha and not pull.merged:
            raise FakeGitHubError(409, HEAD_MODIFIED)
        refusal = self._refusal(repo, pull)
        if refusal is not None:
            raise FakeGitHubError(405, refusal)
        method = str(fields.get("merge_method") or "merge")
        if method not in repo.merge_methods:
            raise FakeGitHubError(
                405, f"{method.title()} merges are not allowed on this repository."
            )
        base_head = repo.branches[pull.base_ref]
        fork_point = repo.merge_base(base_head, pull.head_sha)
        changes = self._changes(repo, fork_point, pull.head_sha)
        parents = [base_head, pull.head_sha] if method == "merge" else [base_head]
        issue = repo.issues[pull.number]
        commit = self.fake.add_commit(
            repo,
            changes,
            message=f"{issue.title} (#{pull.number})",
            author="web-flow",
            parents=parents,
            branch=pull.base_ref,
        )
        now = self.fake.clock()
        pull.merged = True
        pull.merged_at = now
        pull.merge_commit_sha = commit
        issue.state = "closed"
        issue.closed_at = now
        self.merged.append((pull.number, pull.head_sha, method))
        return Reply(
            200, {"sha": commit, "merged": True, "message": "Pull Request successfully merged"}
        )

    async def _update_branch(self, incoming: Incoming) -> Reply:
        repo, pull = self._pull_for(incoming)
        expected = (incoming.json or {}).get("expected_head_sha")
        if expected is not None and expected != pull.head_sha:
            raise FakeGitHubError(422, "expected head sha didn't match current head ref.")
        if pull.conflict:
            raise FakeGitHubError(422, "merge conflict between base and head")
        before = pull.head_sha
        after = self.fake.add_commit(
            repo,
            self._base_changes(repo, pull),
            message=f"Merge branch '{pull.base_ref}' into {pull.head_ref}",
            author="web-flow",
            parents=[pull.head_sha, repo.branches[pull.base_ref]],
            branch=pull.head_ref,
        )
        pull.head_sha = after
        pull.unknown_reads = self.unknown_reads_after_push
        self.updates.append(BranchUpdate(pull.number, before, after))
        url = f"https://github.com/{repo.full_name}/pull/{pull.number}"
        return Reply(202, {"message": "Updating pull request branch.", "url": url})

    async def _list_reviews(self, incoming: Incoming) -> Reply:
        repo, pull = self._pull_for(incoming)
        items = [self.shapes.review_json(repo, pull, review) for review in pull.reviews]
        return Reply(200, items)

    async def _create_review(self, incoming: Incoming) -> Reply:
        """A submitted review by the App (pending reviews and inline comments are not
        modelled); 422 on the App's own pull request, as GitHub refuses self-review."""
        repo, pull = self._pull_for(incoming)
        fields = incoming.json or {}
        event = fields.get("event")
        states = {
            "APPROVE": "APPROVED",
            "REQUEST_CHANGES": "CHANGES_REQUESTED",
            "COMMENT": "COMMENTED",
        }
        if event not in states:
            raise FakeGitHubError(422, "Unprocessable Entity: a pending review is not modelled")
        login = f"{self.fake.app_slug}[bot]"
        if repo.issues[pull.number].author == login:
            raise FakeGitHubError(422, "Can not approve your own pull request")
        commit = str(fields.get("commit_id") or pull.head_sha)
        review = Review(
            self.fake._new_id(),
            login,
            states[event],
            commit,
            self.fake.clock(),
            fields.get("body") or "",
        )
        pull.reviews.append(review)
        return Reply(200, self.shapes.review_json(repo, pull, review))

    async def _dismiss_review(self, incoming: Incoming) -> Reply:
        repo, pull = self._pull_for(incoming)
        wanted = int(incoming.params["review_id"])
        review = next((r for r in pull.reviews if r.id == wanted), None)
        if review is None:
            raise FakeGitHubError(404, "Not Found")
        if review.state not in ("APPROVED", "CHANGES_REQUESTED"):
            raise FakeGitHubError(422, "Can not dismiss a commented pull request review")
        review.state = "DISMISSED"
        review.dismissal = str((incoming.json or {}).get("message") or "")
        return Reply(200, self.shapes.review_json(repo, pull, review))

    def _repo_for(self, incoming: Incoming) -> Repo:
        repo = self.fake.repos.get(f"{incoming.params['owner']}/{incoming.params['repo']}".lower())
        if repo is None or repo.installation_id != incoming.installation_id:
            raise FakeGitHubError(404, "Not Found")
        return repo

    async def _delete_ref(self, incoming: Incoming) -> Reply:
        repo = self._repo_for(incoming)
        kind, _, name = incoming.params["ref"].partition("/")
        if kind != "heads" or name not in repo.branches:
            raise FakeGitHubError(422, NO_REFERENCE)
        if name == repo.default_branch:
            raise FakeGitHubError(422, "Cannot delete the default branch")
        del repo.branches[name]
        self.deleted_branches.append(name)
        return Reply(204)

    def _ref_json(self, repo: Repo, name: str) -> dict[str, Any]:
        api = f"{self.fake.base_url}/repos/{repo.full_name}"
        sha = repo.branches[name]
        return {
            "ref": f"refs/heads/{name}",
            "node_id": f"REF_{repo.id}_{name}",
            "url": f"{api}/git/refs/heads/{name}",
            "object": {"type": "commit", "sha": sha, "url": f"{api}/git/commits/{sha}"},
        }

    async def _create_ref(self, incoming: Incoming) -> Reply:
        repo = self._repo_for(incoming)
        fields = incoming.json or {}
        ref, sha = str(fields.get("ref") or ""), str(fields.get("sha") or "")
        if not ref.startswith("refs/heads/"):
            raise FakeGitHubError(422, "Reference name must start with 'refs/'")
        name = ref.removeprefix("refs/heads/")
        if name in repo.branches:
            raise FakeGitHubError(422, "Reference already exists")
        if sha not in repo.commits:
            raise FakeGitHubError(422, "Object does not exist")
        repo.branches[name] = sha
        self.created_refs.append(name)
        return Reply(201, self._ref_json(repo, name))

    async def _update_ref(self, incoming: Incoming) -> Reply:
        """A fast forward, or any move with `force`; a branch in `refused_pushes` answers
        422 with its message, as a protected branch does."""
        repo = self._repo_for(incoming)
        kind, _, name = incoming.params["ref"].partition("/")
        if kind != "heads" or name not in repo.branches:
            raise FakeGitHubError(422, NO_REFERENCE)
        fields = incoming.json or {}
        sha = str(fields.get("sha") or "")
        if sha not in repo.commits:
            raise FakeGitHubError(422, "Object does not exist")
        refused = self.refused_pushes.get((repo.full_name.lower(), name))
        if refused is not None:
            raise FakeGitHubError(422, refused)
        if not fields.get("force") and repo.branches[name] not in repo.ancestors(sha):
            raise FakeGitHubError(422, "Update is not a fast forward")
        repo.branches[name] = sha
        self.moved_refs.append((name, sha))
        return Reply(200, self._ref_json(repo, name))

    async def _merge_branches(self, incoming: Incoming) -> Reply:
        """`POST .../merges`: a merge commit of `head` into the branch `base`, 204 when the
        branch holds it already, 409 when both sides changed a file differently."""
        repo = self._repo_for(incoming)
        fields = incoming.json or {}
        base, head = str(fields.get("base") or ""), str(fields.get("head") or "")
        if base not in repo.branches:
            raise FakeGitHubError(404, "Base does not exist")
        head_sha = repo.resolve(head)
        if head_sha is None:
            raise FakeGitHubError(404, "Head does not exist")
        base_head = repo.branches[base]
        if head_sha in repo.ancestors(base_head):
            return Reply(204)
        fork_point = repo.merge_base(base_head, head_sha)
        theirs = self._changes(repo, fork_point, head_sha)
        ours = self._changes(repo, fork_point, base_head)
        if any(path in ours and ours[path] != theirs[path] for path in theirs):
            raise FakeGitHubError(409, "Merge conflict")
        message = str(fields.get("commit_message") or f"Merge {head} into {base}")
        commit = self.fake.add_commit(
            repo, theirs, message=message, author="web-flow", parents=[base_head, head_sha]
        )
        repo.branches[base] = commit
        return Reply(201, self.shapes.commit_json(repo, commit))

    async def _pulls_with_commit(self, incoming: Incoming) -> Reply:
        repo = self._repo_for(incoming)
        sha = repo.resolve(incoming.params["commit_sha"])
        if sha is None:
            raise FakeGitHubError(422, f"No commit found for SHA: {incoming.params['commit_sha']}")
        on_default = sha in repo.ancestors(repo.branches[repo.default_branch])
        found = []
        for pull in repo.pulls.values():
            if sha not in repo.commits_between(pull.base_sha, pull.head_sha):
                continue
            still_open = repo.issues[pull.number].state == "open"
            if pull.merged or (still_open and not on_default):
                found.append(self._simple_pull(repo, pull))
        return Reply(200, found)

    def _simple_pull(self, repo: Repo, pull: Pull) -> dict[str, Any]:
        """A `pull-request-simple`; reading it does not use up a null `mergeable` read."""
        unknown = pull.unknown_reads
        data = self.shapes.pull_json(repo, pull)
        pull.unknown_reads = unknown
        for key in _FULL_ONLY:
            data.pop(key, None)
        return data
