"""An override is logged once per delivery: the marker a retried delivery finds."""

from __future__ import annotations

from bot.commands.handlers import OVERRIDES_APPLIED, mark_override_applied
from bot.storage.base import Storage


async def test_the_first_application_is_marked_in_the_rows_shape(storage: Storage) -> None:
    assert await mark_override_applied(storage, "d-1", "octo/repo@abc")
    assert await storage.kv_get(OVERRIDES_APPLIED, "d-1") == {"key": "octo/repo@abc"}
    assert not await mark_override_applied(storage, "d-1", "octo/repo@abc")
    assert await mark_override_applied(storage, "d-2", "octo/repo@abc")


async def test_a_marker_written_by_an_earlier_version_holds(storage: Storage) -> None:
    await storage.kv_put(OVERRIDES_APPLIED, "d-3", {"key": "octo/repo@def"})
    assert not await mark_override_applied(storage, "d-3", "octo/repo@def")
