"""Loading `.github/judge.yml` from the default branch, cached by blob sha.

The file is always read from the repository's default branch, never from the change
being judged, so a pull request cannot switch its own judge off. A push to the default
branch that touches the file drops the cache; otherwise a fetched config is reused for
`CONFIG_TTL` so most events cost no request for it.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from bot.github.gateway import RepoGateway
from bot.judging.config_file import CONFIG_PATH, RepoConfigError, parse_repo_config
from bot.judging.repo_config import RepoConfig
from bot.storage.base import Storage

CONFIG_NAMESPACE = "repo-config"
CONFIG_TTL = timedelta(minutes=10)


def cache_is_fresh(entry: dict[str, Any] | None, now: datetime) -> bool:
    if entry is None:
        return False
    fetched = datetime.fromisoformat(str(entry["fetched_at"]))
    return now - fetched < CONFIG_TTL


async def load_repo_config(
    gateway: RepoGateway, storage: Storage, default_branch: str, now: datetime
) -> RepoConfig:
    """The repository's config (defaults when the file is absent). Raises RepoConfigError."""
    key = gateway.full_name.lower()
    entry = await storage.kv_get(CONFIG_NAMESPACE, key)
    if entry is None or not cache_is_fresh(entry, now):
        expression = f"{default_branch}:{CONFIG_PATH}"
        blob = (await gateway.blobs([expression]))[expression]
        entry = {
            "fetched_at": now.isoformat(),
            "blob_sha": None if blob is None else blob.blob_sha,
            "text": None if blob is None else blob.text,
        }
        await storage.kv_put(CONFIG_NAMESPACE, key, entry)
    text = entry.get("text")
    if text is None:
        return RepoConfig()
    return parse_repo_config(str(text))


async def forget_repo_config(storage: Storage, repository: str) -> None:
    await storage.kv_delete(CONFIG_NAMESPACE, repository.lower())


__all__ = ["CONFIG_PATH", "RepoConfigError", "forget_repo_config", "load_repo_config"]
