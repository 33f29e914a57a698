"""Where the App is installed, read from `installation` payloads. Pure: payload in, rows out."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from bot.storage.base import Installation


def installation_from_payload(
    payload: Mapping[str, Any], suspended: bool, now: datetime
) -> Installation:
    """Pure: the stored view of an `installation` object from a webhook payload."""
    installation = payload["installation"]
    account = installation.get("account") or {}
    return Installation(
        installation_id=int(installation["id"]),
        account=str(account.get("login", "")),
        account_type=str(account.get("type", "")),
        repository_selection=str(installation.get("repository_selection", "selected")),
        suspended=suspended,
        updated_at=now,
    )


def repository_names(entries: Any) -> list[str]:
    if not isinstance(entries, list):
        return []
    return [str(entry["full_name"]) for entry in entries if isinstance(entry, dict)]
