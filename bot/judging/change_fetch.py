"""Everything judging reads about a head sha, fetched in as few round trips as GitHub allows.

    the changed files      a pull request: `pulls/list-files` (GitHub's patches); a push:
                           its payload, or `compare` when the payload's lists are cut
    one GraphQL query      the selected files at the head, and at the base where a patch is
                           missing (bot/judging/diffs.py); CI on the head commit; for a
                           pull request its commits, reviews, conversation and the issues
                           it closes (bot/github/review_query.py)
    storage                the earlier verdicts on the same pull request

So a pull request event costs two reads before any model call, whatever its size (one
more per 100 files beyond the first 100, or per 100 commits beyond the newest 100).
The decisions about what was read are pure modules: `rules` (the gate, the files),
`diffs`, `ci_gate`, `earlier`, `remarks`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from bot.github.gateway import RepoGateway
from bot.github.review_query import HeadQuery
from bot.github.types import (
    COMPARE_FILE_LIMIT,
    ChangedPath,
    CiCheck,
    CommitInfo,
    LinkedIssue,
    Remark,
    RemoteFile,
)
from bot.judge.engine.review_context import FileDiff
from bot.judge.records import JudgedFile
from bot.judging import diffs, rules
from bot.judging.repo_config import LeftOut, RepoConfig
from bot.judging.target import Target
from bot.storage.base import Storage


@dataclass(frozen=True)
class HeadRead:
    """What the head query brought back, ready for the judges."""

    files: list[JudgedFile]
    left_out: list[LeftOut]
    diffs: dict[str, FileDiff]
    ci: tuple[CiCheck, ...]
    commits: tuple[CommitInfo, ...] | None
    remarks: tuple[Remark, ...]
    linked: tuple[LinkedIssue, ...]


async def changes_of(target: Target, gateway: RepoGateway) -> Target:
    """The target with its changed files, and its commits when they are known without the
    head query (a push's payload or compare); a pull request's commits come with the head
    query. A compare that may have cut its list says so in `listed_files` (at least one
    more than it listed), so the files it left out count as unread."""
    if target.changed is not None and target.commits is not None:
        return target
    if target.pull_number is not None:
        changed = await gateway.pull_files(target.pull_number)
        return replace(target, changed=tuple(changed), commits=None)
    base = target.compare_base or target.default_branch
    changed, commits = await gateway.compare(base, target.head_sha)
    cut = len(changed) >= COMPARE_FILE_LIMIT
    return replace(
        target,
        changed=tuple(changed),
        commits=tuple(commits),
        listed_files=len(changed) + 1 if cut else target.listed_files,
    )


async def read_head(
    gateway: RepoGateway, target: Target, config: RepoConfig, paths: Sequence[str]
) -> HeadRead:
    """The files at `paths` (the selection), their diffs, CI and the pull request's facts,
    in one query (bot/github/gateway.py `head_facts`)."""
    changes = {c.path: c for c in target.changed or ()}
    base = target.compare_base
    olds = diffs.base_paths([changes[p] for p in paths if p in changes]) if base else {}
    heads = {path: f"{target.head_sha}:{path}" for path in paths}
    bases = {path: f"{base}:{old}" for path, old in olds.items()}
    facts = await gateway.head_facts(
        HeadQuery([*heads.values(), *bases.values()], target.head_sha, target.pull_number)
    )
    head_blobs = {path: facts.blobs[expression] for path, expression in heads.items()}
    files, cut = rules.prepare_files(
        list(paths),
        {path: None if blob is None else blob.text for path, blob in head_blobs.items()},
        target.changed or (),
        config.limits.max_chars_per_file,
        {path for path, blob in head_blobs.items() if blob and blob.truncated},
    )
    base_blobs = {path: facts.blobs[expression] for path, expression in bases.items()}
    # Off the event loop: a computed diff can take up to a second of pure Python
    # (bot/judging/diffs.py), and a thread lets the loop run between GIL switches.
    found = await asyncio.to_thread(_diffs, target, changes, head_blobs, base_blobs)
    return HeadRead(
        files=files,
        left_out=cut,
        diffs=found,
        ci=facts.ci,
        commits=facts.commits,
        remarks=facts.remarks,
        linked=facts.linked,
    )


def _diffs(
    target: Target,
    changes: Mapping[str, ChangedPath],
    heads: Mapping[str, RemoteFile | None],
    bases: Mapping[str, RemoteFile | None],
) -> dict[str, FileDiff]:
    listed = target.pull_number is not None or any(c.patch is not None for c in changes.values())
    found: dict[str, FileDiff] = {}
    for path, head in heads.items():
        # Every selected path comes from the changed files.
        diff = diffs.file_diff(changes[path], head, bases.get(path), patches_listed=listed)
        if diff is not None:
            found[path] = diff
    return found


async def earlier_records(storage: Storage, target: Target) -> list[dict[str, Any]]:
    """The audit log's records of the same pull request (oldest first); none for a push."""
    if target.pull_number is None:
        return []
    stored = await storage.list_verdicts(task_id=target.task, repository=target.repository)
    return [row.record for row in stored]
