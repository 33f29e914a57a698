"""In-memory state of the fake GitHub: repositories with real git object ids, pulls, issues, checks.

Blob, tree and commit ids are computed the way git computes them, so a sha the bot reads from one
endpoint is the sha another endpoint expects.
"""

from __future__ import annotations

import difflib
import hashlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

BINARY_SNIFF = 8000  # git's own heuristic: a NUL byte in the first 8000 bytes means binary


def git_sha(kind: str, payload: bytes) -> str:
    return hashlib.sha1(
        f"{kind} {len(payload)}\0".encode() + payload, usedforsecurity=False
    ).hexdigest()


def is_binary(data: bytes) -> bool:
    return b"\0" in data[:BINARY_SNIFF]


@dataclass(frozen=True)
class TreeEntry:
    name: str
    mode: str  # "100644" file, "040000" tree
    kind: str  # "blob" | "tree"
    sha: str


@dataclass(frozen=True)
class Commit:
    sha: str
    tree: str
    parents: tuple[str, ...]
    message: str
    author: str
    date: datetime


@dataclass
class Issue:
    number: int
    id: int
    title: str
    body: str | None
    author: str
    state: str = "open"
    state_reason: str | None = None
    labels: list[str] = field(default_factory=list)
    created_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    updated_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    closed_at: datetime | None = None
    is_pull: bool = False


@dataclass(frozen=True)
class ReviewComment:
    """An inline comment of a review, on one path."""

    path: str
    body: str


@dataclass
class Review:
    id: int
    login: str
    state: str
    commit_id: str
    submitted_at: datetime
    body: str = ""
    dismissal: str = ""
    """The message a dismissal gave (GitHub shows it on the timeline, not in the review)."""
    comments: list[ReviewComment] = field(default_factory=list)


@dataclass
class Pull:
    """`unknown_reads`: how many more reads answer `mergeable: null` (GitHub computes it
    after a push); `checks_pending`: a required check or review is missing (blocked);
    `strict`: the base branch requires it to be up to date; `conflict`: dirty."""

    number: int
    id: int
    head_sha: str
    head_ref: str
    base_ref: str
    base_sha: str
    draft: bool = False
    merged: bool = False
    unknown_reads: int = 0
    checks_pending: bool = False
    strict: bool = False
    conflict: bool = False
    merge_commit_sha: str | None = None
    merged_at: datetime | None = None
    reviews: list[Review] = field(default_factory=list)


@dataclass
class Comment:
    id: int
    issue_number: int
    body: str
    author: str
    created_at: datetime
    updated_at: datetime


@dataclass
class Label:
    id: int
    name: str
    color: str = "ededed"
    description: str | None = None


@dataclass
class CheckRun:
    id: int
    head_sha: str
    name: str
    status: str
    conclusion: str | None
    started_at: datetime | None
    completed_at: datetime | None
    details_url: str | None
    external_id: str | None
    output: dict[str, Any]
    check_suite_id: int
    app_id: int
    app_slug: str | None = None
    """Another app's slug (a CI system); None for the App under test."""


@dataclass
class CommitStatus:
    """One commit status, as `POST /repos/{owner}/{repo}/statuses/{sha}` creates it."""

    id: int
    sha: str
    context: str
    state: str  # error | failure | pending | success
    description: str | None
    target_url: str | None
    creator: str
    created_at: datetime


@dataclass
class Repo:
    id: int
    owner: str
    name: str
    default_branch: str
    private: bool
    installation_id: int
    branches: dict[str, str] = field(default_factory=dict)
    commits: dict[str, Commit] = field(default_factory=dict)
    trees: dict[str, tuple[TreeEntry, ...]] = field(default_factory=dict)
    blobs: dict[str, bytes] = field(default_factory=dict)
    issues: dict[int, Issue] = field(default_factory=dict)
    pulls: dict[int, Pull] = field(default_factory=dict)
    comments: dict[int, Comment] = field(default_factory=dict)
    labels: dict[str, Label] = field(default_factory=dict)
    check_runs: dict[int, CheckRun] = field(default_factory=dict)
    statuses: list[CommitStatus] = field(default_factory=list)
    required_checks: dict[str, tuple[str, ...]] = field(default_factory=dict)
    """Branch -> the check and status names its protection requires."""
    branch_protection: dict[str, dict[str, Any]] = field(default_factory=dict)
    """Branch -> more of its protection as `GET .../branches/{branch}` shows it
    (`required_pull_request_reviews`, `restrictions`, `strict` for the required checks)."""
    permissions: dict[str, str] = field(default_factory=dict)
    merge_methods: tuple[str, ...] = ("merge", "squash", "rebase")

    @property
    def full_name(self) -> str:
        return f"{self.owner}/{self.name}"

    def can_push(self, login: str) -> bool:
        return login == self.owner or self.permissions.get(login) in {"admin", "maintain", "write"}

    def latest_statuses(self, sha: str) -> list[CommitStatus]:
        """The newest status of each context on a commit, as GitHub combines them."""
        latest: dict[str, CommitStatus] = {}
        for status in self.statuses:
            if status.sha == sha:
                latest[status.context] = status
        return sorted(latest.values(), key=lambda s: s.id, reverse=True)

    def latest_check_runs(self, sha: str) -> list[CheckRun]:
        """The newest run of each name and app on a commit (GitHub's `filter=latest`)."""
        latest: dict[tuple[str, int], CheckRun] = {}
        for run in sorted(self.check_runs.values(), key=lambda r: r.id):
            if run.head_sha == sha:
                latest[(run.name, run.app_id)] = run
        return sorted(latest.values(), key=lambda r: r.id, reverse=True)

    def next_issue_number(self) -> int:
        return max(self.issues, default=0) + 1

    # -- git objects -------------------------------------------------------------------------

    def store_blob(self, data: bytes) -> str:
        sha = git_sha("blob", data)
        self.blobs[sha] = data
        return sha

    def store_tree(self, files: Mapping[str, bytes]) -> str:
        """Write nested trees for a flat {path: content} map and return the root tree id."""
        here: dict[str, bytes] = {}
        below: dict[str, dict[str, bytes]] = {}
        for path, data in files.items():
            head, _, rest = path.partition("/")
            if rest:
                below.setdefault(head, {})[rest] = data
            else:
                here[head] = data
        entries = [TreeEntry(n, "100644", "blob", self.store_blob(d)) for n, d in here.items()]
        entries += [
            TreeEntry(n, "040000", "tree", self.store_tree(sub)) for n, sub in below.items()
        ]
        # git orders tree entries by name, with directories compared as if they ended in "/".
        entries.sort(key=lambda e: e.name + ("/" if e.kind == "tree" else ""))
        payload = b"".join(
            f"{'40000' if e.kind == 'tree' else e.mode} {e.name}".encode()
            + b"\0"
            + bytes.fromhex(e.sha)
            for e in entries
        )
        sha = git_sha("tree", payload)
        self.trees[sha] = tuple(entries)
        return sha

    def store_commit(
        self, tree: str, parents: tuple[str, ...], message: str, author: str, date: datetime
    ) -> str:
        stamp = f"{author} <{author}@users.noreply.github.com> {int(date.timestamp())} +0000"
        lines = [f"tree {tree}", *(f"parent {p}" for p in parents)]
        lines += [f"author {stamp}", f"committer {stamp}", "", message]
        sha = git_sha("commit", "\n".join(lines).encode() + b"\n")
        self.commits[sha] = Commit(sha, tree, parents, message, author, date)
        return sha

    def walk_tree(self, tree_sha: str, prefix: str = "") -> Iterator[tuple[str, TreeEntry]]:
        """Every entry below a tree, depth first, with its full path."""
        for entry in self.trees[tree_sha]:
            path = prefix + entry.name
            yield path, entry
            if entry.kind == "tree":
                yield from self.walk_tree(entry.sha, path + "/")

    def files_at(self, commit_sha: str) -> dict[str, str]:
        """{path: blob sha} of every file in a commit."""
        tree = self.commits[commit_sha].tree
        return {p: e.sha for p, e in self.walk_tree(tree) if e.kind == "blob"}

    def entry_at(self, commit_sha: str, path: str) -> TreeEntry | None:
        tree: str | None = self.commits[commit_sha].tree
        entry: TreeEntry | None = None
        for part in path.strip("/").split("/"):
            if tree is None:
                return None
            entry = next((e for e in self.trees[tree] if e.name == part), None)
            if entry is None:
                return None
            tree = entry.sha if entry.kind == "tree" else None
        return entry

    def resolve(self, ref: str) -> str | None:
        """A branch name, `refs/heads/...`, full sha or unique sha prefix to a commit sha."""
        name = ref.removeprefix("refs/heads/")
        if name in self.branches:
            return self.branches[name]
        if ref in self.commits:
            return ref
        if len(ref) >= 4:
            found = [sha for sha in self.commits if sha.startswith(ref)]
            if len(found) == 1:
                return found[0]
        return None

    def ancestors(self, sha: str) -> list[str]:
        """The commit and every ancestor, nearest first."""
        seen: list[str] = []
        queue = [sha]
        while queue:
            current = queue.pop(0)
            if current in seen:
                continue
            seen.append(current)
            queue.extend(self.commits[current].parents)
        return seen

    def merge_base(self, base: str, head: str) -> str | None:
        head_line = set(self.ancestors(head))
        return next((sha for sha in self.ancestors(base) if sha in head_line), None)

    def commits_between(self, base: str, head: str) -> list[str]:
        """Commits reachable from head but not from base, oldest first."""
        excluded = set(self.ancestors(base))
        return [sha for sha in reversed(self.ancestors(head)) if sha not in excluded]

    def diff(self, base: str | None, head: str) -> list[FileChange]:
        before = self.files_at(base) if base is not None else {}
        after = self.files_at(head)
        changes: list[FileChange] = []
        for path in sorted(before.keys() | after.keys()):
            old, new = before.get(path), after.get(path)
            if old == new:
                continue
            status = "added" if old is None else "removed" if new is None else "modified"
            changes.append(
                FileChange.build(
                    path,
                    status,
                    self.blobs[old] if old else b"",
                    self.blobs[new] if new else b"",
                    new or old or "",
                )
            )
        return changes


@dataclass(frozen=True)
class FileChange:
    path: str
    status: str
    sha: str
    additions: int
    deletions: int
    patch: str | None

    @classmethod
    def build(cls, path: str, status: str, old: bytes, new: bytes, sha: str) -> FileChange:
        if is_binary(old) or is_binary(new):
            return cls(path, status, sha, 0, 0, None)
        old_lines = old.decode("utf-8", "replace").splitlines()
        new_lines = new.decode("utf-8", "replace").splitlines()
        body = list(difflib.unified_diff(old_lines, new_lines, lineterm="", n=3))[2:]
        additions = sum(1 for line in body if line.startswith("+"))
        deletions = sum(1 for line in body if line.startswith("-"))
        return cls(path, status, sha, additions, deletions, "\n".join(body))

    def unified(self) -> str:
        """This change as a `git diff` section."""
        old = "/dev/null" if self.status == "added" else f"a/{self.path}"
        new = "/dev/null" if self.status == "removed" else f"b/{self.path}"
        header = f"diff --git a/{self.path} b/{self.path}\n--- {old}\n+++ {new}\n"
        if self.patch is None:
            return f"diff --git a/{self.path} b/{self.path}\nBinary files differ\n"
        return header + self.patch + "\n"
