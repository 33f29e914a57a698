"""Installation rows from GitHub's own `installation` payloads (bot.installations.accounts)."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from bot.installations.accounts import installation_from_payload, repository_names
from tests.support.webhook_helpers import example

NOW = datetime(2026, 3, 1, tzinfo=UTC)


def test_installation_from_a_real_payload() -> None:
    payload = json.loads(example("installation", "created"))
    row = installation_from_payload(payload, suspended=False, now=NOW)
    installation = payload["installation"]
    assert row.installation_id == installation["id"]
    assert row.account == installation["account"]["login"]
    assert row.account_type == installation["account"]["type"]
    assert row.repository_selection == installation["repository_selection"]
    assert (row.suspended, row.updated_at) == (False, NOW)


def test_missing_account_and_selection_fall_back() -> None:
    row = installation_from_payload({"installation": {"id": 9}}, suspended=True, now=NOW)
    assert (row.account, row.account_type, row.repository_selection) == ("", "", "selected")
    assert row.suspended


def test_repository_names_ignore_what_is_not_a_list_of_objects() -> None:
    payload = json.loads(example("installation_repositories", "added"))
    expected = [r["full_name"] for r in payload["repositories_added"]]
    assert repository_names(payload["repositories_added"]) == expected
    assert repository_names(None) == []
    assert repository_names(["octo/repo", {"full_name": "octo/other"}]) == ["octo/other"]
