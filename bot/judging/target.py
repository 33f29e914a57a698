"""What to judge, read from webhook payloads. Pure: payload in, plain data out.

A `Target` is one head commit of one repository together with what the event already
told us (the pull request's author, title and body, or the pushed commits and files), so
the judging flow only asks GitHub for what the payload lacks.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from bot.gfm import short_sha
from bot.github.types import NULL_SHA, ChangedPath, CommitInfo, commit_from_push

SKIP_MARKERS = ("[skip judge]", "[judge skip]")
# GitHub stops listing commits in a push payload at 2048; beyond that, compare.
PUSH_COMMIT_LIMIT = 2048


def task_ref(repository: str, *, pull_number: int | None = None, sha: str | None = None) -> str:
    """`owner/repo#N` for a pull request, else the short sha of the judged commit."""
    if pull_number is not None:
        return f"{repository}#{pull_number}"
    if sha:
        return short_sha(sha)
    raise ValueError("a task needs a pull request number or a commit sha")


@dataclass(frozen=True)
class Target:
    repository: str
    installation_id: int
    head_sha: str
    default_branch: str
    task: str
    trigger: str
    pull_number: int | None = None
    pull_author: str | None = None
    title: str = ""
    body: str = ""
    labels: tuple[str, ...] = ()
    labeled_by: str | None = None
    sender: str | None = None
    """The account GitHub says caused the event (a push's pusher, the pull request's
    opener or the account that pushed to it): unlike a commit's author line, which the
    author types, GitHub vouches for it."""
    listed_files: int | None = None
    """How many files GitHub says the pull request changes (its `changed_files`)."""
    changed: tuple[ChangedPath, ...] | None = None
    commits: tuple[CommitInfo, ...] | None = None
    compare_base: str | None = None
    bypass_cache: bool = False
    force_deep: bool = False
    html_url: str | None = None
    """The repository's web page as the API gave it (github.com or a GitHub Enterprise
    Server host): every link people follow is built from it, never from a fixed host."""

    def rerun(self, trigger: str, *, force_deep: bool = False) -> Target:
        return replace(self, trigger=trigger, bypass_cache=True, force_deep=force_deep)

    def to_json(self) -> dict[str, Any]:
        """What must be kept to judge this target again later (rerun, rerequest)."""
        return {
            "repository": self.repository,
            "installation_id": self.installation_id,
            "head_sha": self.head_sha,
            "default_branch": self.default_branch,
            "task": self.task,
            "pull_number": self.pull_number,
            "pull_author": self.pull_author,
            "sender": self.sender,
            "listed_files": self.listed_files,
            "title": self.title,
            "body": self.body,
            "labels": list(self.labels),
            "compare_base": self.compare_base,
            "html_url": self.html_url,
            "changed": None
            if self.changed is None
            else [[c.path, c.status, c.patch, c.previous_path] for c in self.changed],
            "commits": None
            if self.commits is None
            else [
                [
                    c.sha,
                    c.message,
                    c.author_name,
                    c.author_login,
                    c.committer_name,
                    c.committer_login,
                ]
                for c in self.commits
            ],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any], trigger: str) -> Target:
        changed = data.get("changed")
        commits = data.get("commits")
        return cls(
            repository=str(data["repository"]),
            installation_id=int(data["installation_id"]),
            head_sha=str(data["head_sha"]),
            default_branch=str(data["default_branch"]),
            task=str(data["task"]),
            trigger=trigger,
            pull_number=data.get("pull_number"),
            pull_author=data.get("pull_author"),
            sender=data.get("sender"),
            listed_files=data.get("listed_files"),
            title=str(data.get("title") or ""),
            body=str(data.get("body") or ""),
            labels=tuple(data.get("labels") or ()),
            compare_base=data.get("compare_base"),
            html_url=data.get("html_url"),
            changed=None if changed is None else tuple(ChangedPath(*row) for row in changed),
            commits=None if commits is None else tuple(CommitInfo(*row) for row in commits),
        )


def target_from_pull_request(payload: Mapping[str, Any], installation_id: int) -> Target:
    pull = payload["pull_request"]
    repository = payload["repository"]
    labels = tuple(str(label["name"]) for label in pull.get("labels") or ())
    return Target(
        repository=str(repository["full_name"]),
        installation_id=installation_id,
        head_sha=str(pull["head"]["sha"]),
        default_branch=str(repository.get("default_branch") or "main"),
        task=task_ref(str(repository["full_name"]), pull_number=int(pull["number"])),
        trigger=f"pull_request.{payload.get('action')}",
        pull_number=int(pull["number"]),
        pull_author=str((pull.get("user") or {}).get("login") or "") or None,
        sender=_login(payload.get("sender")),
        listed_files=pull.get("changed_files")
        if isinstance(pull.get("changed_files"), int)
        else None,
        title=str(pull.get("title") or ""),
        body=str(pull.get("body") or ""),
        labels=labels,
        # Where a diff GitHub's file list left out is computed from (bot/judging/diffs.py).
        compare_base=str((pull.get("base") or {}).get("sha") or "") or None,
        html_url=_web_url(repository),
    )


# The merge queue's own branches (`judge-bot/queue/<base>/<n>`, bot/merging/queue_branch.py):
# pushes there are the queue building a batch, never an author's.
QUEUE_BRANCH_PREFIX = "judge-bot/queue/"
# Where the queue puts a batch together before its queue branch exists.
QUEUE_BUILD_PREFIX = "judge-bot/queue-build/"


def is_queue_branch(ref: str) -> bool:
    """Whether a branch (or `refs/heads/...` ref) is one of the merge queue's own."""
    name = ref.removeprefix("refs/heads/")
    return name.startswith((QUEUE_BRANCH_PREFIX, QUEUE_BUILD_PREFIX))


def target_from_push(payload: Mapping[str, Any], installation_id: int) -> Target | None:
    """None for what is never judged: branch deletions and tag pushes."""
    if payload.get("deleted") or payload.get("after") in (None, NULL_SHA):
        return None
    ref = str(payload.get("ref", ""))
    if not ref.startswith("refs/heads/"):
        return None
    repository = payload["repository"]
    raw_commits = [c for c in payload.get("commits") or () if isinstance(c, dict)]
    commits = tuple(commit_from_push(c) for c in raw_commits)
    head = payload.get("head_commit")
    if not commits and isinstance(head, dict):
        commits = (commit_from_push(head),)
    lists_complete = len(raw_commits) < PUSH_COMMIT_LIMIT and all(
        all(key in c for key in ("added", "modified", "removed")) for c in raw_commits
    )
    before = str(payload.get("before") or NULL_SHA)
    changed = changed_in_push(raw_commits) if lists_complete and raw_commits else None
    after = str(payload["after"])
    return Target(
        repository=str(repository["full_name"]),
        installation_id=installation_id,
        head_sha=after,
        default_branch=str(
            repository.get("default_branch") or repository.get("master_branch") or "main"
        ),
        task=task_ref(str(repository["full_name"]), sha=after),
        trigger="push",
        sender=_login(payload.get("sender")),
        title=(commits[-1].message.splitlines() or [""])[0] if commits else "",
        body=commits[-1].message if commits else "",
        changed=changed,
        commits=commits,
        compare_base=None if before == NULL_SHA else before,
        html_url=_web_url(repository),
    )


def _login(user: Any) -> str | None:
    login = user.get("login") if isinstance(user, Mapping) else None
    return login if isinstance(login, str) and login else None


def vouched_people(target: Target) -> list[str]:
    """The accounts GitHub vouches for behind this change: the pull request's author and
    the event's sender (for a push, the pusher)."""
    return list(dict.fromkeys(p for p in (target.pull_author, target.sender) if p))


def _web_url(repository: Mapping[str, Any]) -> str | None:
    url = repository.get("html_url")
    return str(url).rstrip("/") if isinstance(url, str) and url else None


def changed_in_push(commits: Sequence[Mapping[str, Any]]) -> tuple[ChangedPath, ...]:
    """The net effect of the pushed commits, in order: the last action on a path wins, and a
    path added then modified stays `added`."""
    status: dict[str, str] = {}
    for commit in commits:
        for path in commit.get("added") or ():
            status[str(path)] = "added"
        for path in commit.get("modified") or ():
            status[str(path)] = "added" if status.get(str(path)) == "added" else "modified"
        for path in commit.get("removed") or ():
            status[str(path)] = "removed"
    return tuple(ChangedPath(path, state) for path, state in sorted(status.items()))


def people_of(commits: Iterable[CommitInfo]) -> list[str]:
    seen: dict[str, str] = {}
    for commit in commits:
        for person in commit.people:
            seen.setdefault(person.lower(), person)
    return sorted(seen.values(), key=str.lower)
