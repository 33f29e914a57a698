"""The files each queued pull request changes, and those its base changed since it left,
as the batch planner needs them (`batching.QueuedPull`).

A pull request's files at its judged head never change, so they are read once per head
(a three-dot compare from the base, which also names the commit it left the base at);
what the base changed since that commit is read once per (fork point, base head), shared
by every pull request that left the base at the same commit. Both are kept in kv
(namespace `merge-batch-files`), so a queue stepped again costs no GitHub call for them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bot.github.types import ChangedPath
from bot.merging.batching import QueuedPull
from bot.merging.github_calls import MergeCalls
from bot.storage.base import MergeEntry, Storage

NAMESPACE = "merge-batch-files"


def paths_of(changed: Iterable[ChangedPath]) -> list[str]:
    """Every path a change touches: a rename's old path too."""
    paths = []
    for change in changed:
        paths.append(change.path)
        if change.previous_path:
            paths.append(change.previous_path)
    return sorted(set(paths))


@dataclass(frozen=True)
class ChangedFiles:
    """Paths a range of commits changes (kv `merge-batch-files`): a pull request's from
    the commit it left its base at (`fork`), or its base's since that commit (no fork)."""

    files: tuple[str, ...]
    fork: str | None = None

    def as_json(self) -> dict[str, Any]:
        row: dict[str, Any] = {"files": list(self.files)}
        if self.fork is not None:
            row["fork"] = self.fork
        return row

    @classmethod
    def of(cls, stored: Mapping[str, Any]) -> ChangedFiles | None:
        """None for a row of another shape: it is read from GitHub again."""
        files, fork = stored.get("files"), stored.get("fork")
        if not isinstance(files, list):
            return None
        return cls(tuple(str(path) for path in files), None if fork is None else str(fork))


async def _load(storage: Storage, key: str) -> ChangedFiles | None:
    stored = await storage.kv_get(NAMESPACE, key)
    return None if stored is None else ChangedFiles.of(stored)


async def _save(storage: Storage, key: str, changed: ChangedFiles) -> None:
    await storage.kv_put(NAMESPACE, key, changed.as_json())


async def _pull_files(
    storage: Storage, calls: MergeCalls, entry: MergeEntry, base_head: str
) -> ChangedFiles:
    sha = entry.judged_sha or ""
    key = f"{entry.repository}#{entry.pull_number}@{sha}"
    cached = await _load(storage, key)
    if cached is not None and cached.fork is not None:
        return cached
    changed, fork = await calls.changed_since_fork(base_head, sha)
    pull = ChangedFiles(tuple(paths_of(changed)), fork)
    await _save(storage, key, pull)
    return pull


async def _base_files(
    storage: Storage, calls: MergeCalls, repository: str, fork: str, base_head: str
) -> tuple[str, ...]:
    if not fork or fork == base_head:
        return ()
    key = f"{repository}:{fork}..{base_head}"
    cached = await _load(storage, key)
    if cached is not None:
        return cached.files
    changed, _ = await calls.changed_since_fork(fork, base_head)
    base = ChangedFiles(tuple(paths_of(changed)))
    await _save(storage, key, base)
    return base.files


async def queued_pulls(
    storage: Storage, calls: MergeCalls, entries: Sequence[MergeEntry], base_head: str
) -> list[QueuedPull]:
    """The queue's entries (each with a judged head) as the planner sees them."""
    pulls = []
    for entry in entries:
        pull = await _pull_files(storage, calls, entry, base_head)
        base_changed = await _base_files(
            storage, calls, entry.repository, pull.fork or "", base_head
        )
        pulls.append(
            QueuedPull(
                number=entry.pull_number,
                order=entry.id,
                files=frozenset(pull.files),
                base_changed=frozenset(base_changed),
                priority=entry.priority,
            )
        )
    return pulls
