"""Loading `.github/judge.yml` from the default branch, cached by blob sha.

The file is always read from the repository's default branch, never from the change
being judged, so a pull request cannot switch its own judge off. A push to the default
branch that touches the file drops the cache; otherwise a fetched config is reused for
`CONFIG_TTL` so most events cost no request for it.

The text is anyone's with push access, so reading it is kept off the event loop (the
parse runs in a worker thread; its limits in `config_file` make that thread quick),
and every way it can fail becomes a `RepoConfigError`: the handlers turn that into a
neutral check run naming the problem, where an unexpected exception would fail the
delivery and leave every pull request without a check. A file found invalid is cached
with its problems, so it is parsed once per fetch rather than on every event. Errors
from GitHub or storage are not the file's fault and propagate, so the delivery is
retried.

A file that parses can still pick models the operator does not allow
(`JUDGE_ALLOWED_MODELS`, see `model_policy`); that refusal is a `RepoConfigError` too,
naming the line of each refused `models.<tier>`. It is decided on every load and never
cached, so an operator who changes the list and restarts is obeyed at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from bot.github.gateway import RepoGateway
from bot.github.types import RemoteFile
from bot.judging.config_file import (
    CONFIG_PATH,
    ConfigIssue,
    RepoConfigError,
    issues_at,
    parse_repo_config,
)
from bot.judging.model_policy import disallowed_models, refusal_message
from bot.judging.repo_config import RepoConfig
from bot.storage.base import Storage

CONFIG_NAMESPACE = "repo-config"
CONFIG_TTL = timedelta(minutes=10)

# Hints for the failures the parser's limits are there to prevent, should one slip through.
_HINTS: Mapping[type[BaseException], str] = {
    RecursionError: "it is nested too deeply or an alias refers to itself",
    MemoryError: "it expands to too much once its aliases are followed",
}


async def load_repo_config(
    gateway: RepoGateway,
    storage: Storage,
    default_branch: str,
    now: datetime,
    *,
    allowed_models: Sequence[str] = (),
) -> RepoConfig:
    """The repository's config (defaults when the file is absent).

    Raises RepoConfigError for anything wrong with the file, however it fails, and for
    `models:` outside `allowed_models` (globs; empty allows any); GitHub and storage
    errors propagate."""
    cached = await load_fresh_fetch(storage, gateway.full_name, now)
    if cached is not None:
        error = cached.error()
        if error is not None:
            raise error
        return await governed(await read_config(cached.text), cached.text, allowed_models)
    expression = f"{default_branch}:{CONFIG_PATH}"
    blob = (await gateway.blobs([expression]))[expression]
    try:
        config = await read_config(None if blob is None else blob.text)
    except RepoConfigError as error:
        await save_fetch(storage, gateway.full_name, CachedFetch.of(now, blob, error))
        raise
    await save_fetch(storage, gateway.full_name, CachedFetch.of(now, blob, None))
    return await governed(config, None if blob is None else blob.text, allowed_models)


async def governed(config: RepoConfig, text: str | None, allowed: Sequence[str]) -> RepoConfig:
    """`config`, unless it picks models outside `allowed`: then a RepoConfigError with one
    issue per refused model, on the line of its `models.<tier>` in `text`."""
    refused = disallowed_models(config, allowed)
    if not refused:
        return config
    problems = [(r.loc, refusal_message(r, allowed)) for r in refused]
    # Only a file sets models, so `text` is there; were it not, the issues fall on line 1.
    issues = await asyncio.to_thread(issues_at, text or "", problems)
    raise RepoConfigError(issues)


async def read_config(text: str | None) -> RepoConfig:
    """Parse off the event loop; any failure is a RepoConfigError."""
    if text is None:
        return RepoConfig()
    try:
        return await asyncio.to_thread(parse_repo_config, text)
    except RepoConfigError:
        raise
    except Exception as exc:
        raise RepoConfigError([unreadable(exc)]) from exc


def unreadable(exc: Exception) -> ConfigIssue:
    """The issue for a parser failure that is not a RepoConfigError. Where it happened
    is unknown, so it is put on line 1."""
    detail = str(exc).strip()
    text = type(exc).__name__ + (f": {detail}" if detail else "")
    if len(text) > 200:
        text = text[:197] + "..."
    hint = next((h for kind, h in _HINTS.items() if isinstance(exc, kind)), None)
    message = f"the file could not be read ({text})"
    if hint is not None:
        message += f"; {hint}"
    return ConfigIssue(1, 1, None, message)


# A file can hold thousands of problems; the check run shows the first and a count,
# so the cache keeps the first few and the count.
_CACHED_ISSUES = 20


@dataclass(frozen=True)
class CachedFetch:
    """One fetch of the file as the cache keeps it: its text (None: no file) and, for a
    file found invalid, its first issues and how many there were."""

    fetched_at: datetime
    blob_sha: str | None
    text: str | None
    issues: tuple[ConfigIssue, ...] = ()
    problems: int = 0

    @classmethod
    def of(
        cls, now: datetime, blob: RemoteFile | None, error: RepoConfigError | None
    ) -> CachedFetch:
        return cls(
            fetched_at=now,
            blob_sha=None if blob is None else blob.blob_sha,
            text=None if blob is None else blob.text,
            issues=() if error is None else error.issues[:_CACHED_ISSUES],
            problems=0 if error is None else error.problems,
        )

    def error(self) -> RepoConfigError | None:
        """The error the fetch found; None for a valid file (or for an entry written
        before errors were cached, whose text is then parsed again)."""
        if not self.issues:
            return None
        return RepoConfigError(self.issues, problems=self.problems)


def _to_row(fetch: CachedFetch) -> dict[str, Any]:
    row: dict[str, Any] = {
        "fetched_at": fetch.fetched_at.isoformat(),
        "blob_sha": fetch.blob_sha,
        "text": fetch.text,
    }
    # Only an invalid file's entry has these keys: entries of valid files stay as they
    # were before errors were cached.
    if fetch.issues:
        row["issues"] = [
            {"line": i.line, "column": i.column, "key": i.key, "message": i.message}
            for i in fetch.issues
        ]
        row["problems"] = fetch.problems
    return row


def _from_row(row: Mapping[str, Any], fetched_at: datetime) -> CachedFetch:
    issues = tuple(
        ConfigIssue(
            int(item["line"]),
            int(item["column"]),
            None if item.get("key") is None else str(item["key"]),
            str(item["message"]),
        )
        for item in row.get("issues") or ()
    )
    text, blob_sha = row.get("text"), row.get("blob_sha")
    return CachedFetch(
        fetched_at=fetched_at,
        blob_sha=None if blob_sha is None else str(blob_sha),
        text=None if text is None else str(text),
        issues=issues,
        # Only an invalid file's row holds a count, so only such a row is asked for one.
        problems=int(row.get("problems") or 0) if issues else 0,
    )


async def load_fresh_fetch(storage: Storage, repository: str, now: datetime) -> CachedFetch | None:
    """The repository's cached fetch while it is fresh. A stale entry is not read past its
    time: it is about to be replaced, whatever else it holds."""
    row = await storage.kv_get(CONFIG_NAMESPACE, repository.lower())
    if row is None:
        return None
    fetched_at = datetime.fromisoformat(str(row["fetched_at"]))
    if now - fetched_at >= CONFIG_TTL:
        return None
    return _from_row(row, fetched_at)


async def save_fetch(storage: Storage, repository: str, fetch: CachedFetch) -> None:
    await storage.kv_put(CONFIG_NAMESPACE, repository.lower(), _to_row(fetch))


async def forget_repo_config(storage: Storage, repository: str) -> None:
    await storage.kv_delete(CONFIG_NAMESPACE, repository.lower())


__all__ = ["CONFIG_PATH", "RepoConfigError", "forget_repo_config", "load_repo_config"]
