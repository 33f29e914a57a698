"""The files each queued pull request changes, and those its base changed since it left,
as the batch planner needs them (`batching.QueuedPull`).

A pull request's files at its judged head never change, so they are read once per head
(a three-dot compare from the base, which also names the commit it left the base at);
what the base changed since that commit is read once per (fork point, base head), shared
by every pull request that left the base at the same commit. Both are kept in kv
(namespace `merge-batch-files`), so a queue stepped again costs no GitHub call for them.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

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


async def _pull_files(
    storage: Storage, calls: MergeCalls, entry: MergeEntry, base_head: str
) -> tuple[list[str], str]:
    sha = entry.judged_sha or ""
    key = f"{entry.repository}#{entry.pull_number}@{sha}"
    cached = await storage.kv_get(NAMESPACE, key)
    if cached is not None:
        return [str(path) for path in cached["files"]], str(cached["fork"])
    changed, fork = await calls.changed_since_fork(base_head, sha)
    files = paths_of(changed)
    await storage.kv_put(NAMESPACE, key, {"files": files, "fork": fork})
    return files, fork


async def _base_files(
    storage: Storage, calls: MergeCalls, repository: str, fork: str, base_head: str
) -> list[str]:
    if not fork or fork == base_head:
        return []
    key = f"{repository}:{fork}..{base_head}"
    cached = await storage.kv_get(NAMESPACE, key)
    if cached is not None:
        return [str(path) for path in cached["files"]]
    changed, _ = await calls.changed_since_fork(fork, base_head)
    files = paths_of(changed)
    await storage.kv_put(NAMESPACE, key, {"files": files})
    return files


async def queued_pulls(
    storage: Storage, calls: MergeCalls, entries: Sequence[MergeEntry], base_head: str
) -> list[QueuedPull]:
    """The queue's entries (each with a judged head) as the planner sees them."""
    pulls = []
    for entry in entries:
        files, fork = await _pull_files(storage, calls, entry, base_head)
        base_changed = await _base_files(storage, calls, entry.repository, fork, base_head)
        pulls.append(
            QueuedPull(
                number=entry.pull_number,
                order=entry.id,
                files=frozenset(files),
                base_changed=frozenset(base_changed),
                priority=entry.priority,
            )
        )
    return pulls
