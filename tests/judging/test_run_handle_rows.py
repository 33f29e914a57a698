"""The rows of a sha's run (bot.judging.run_handle): its id, written once, and the token of
the delivery creating it, in the shape installations already hold."""

from __future__ import annotations

from bot.judging.run_handle import (
    CREATOR_NAMESPACE,
    RUN_NAMESPACE,
    RunRow,
    forget_sha,
    load_run,
    put_run_if_absent,
    take_creation,
)
from bot.judging.state import state_key
from bot.storage.base import Storage

KEY = state_key("octo/repo", "abc123")


async def test_the_run_is_written_once_in_the_rows_shape(storage: Storage) -> None:
    assert await put_run_if_absent(storage, KEY, RunRow(id=7, url="https://run/7"))
    assert await storage.kv_get(RUN_NAMESPACE, KEY) == {"id": 7, "url": "https://run/7"}
    assert not await put_run_if_absent(storage, KEY, RunRow(id=8))
    assert await load_run(storage, KEY) == RunRow(id=7, url="https://run/7")
    await storage.kv_put(RUN_NAMESPACE, "octo/repo@old", {"id": 9})
    assert await load_run(storage, "octo/repo@old") == RunRow(id=9, url="")


async def test_the_creation_token_names_its_holder(storage: Storage) -> None:
    """None: the token is the caller's now; else who holds it, the caller too on a retry."""
    assert await take_creation(storage, KEY, "d-1") is None
    assert await storage.kv_get(CREATOR_NAMESPACE, KEY) == {"owner": "d-1"}
    assert await take_creation(storage, KEY, "d-1") == "d-1"
    assert await take_creation(storage, KEY, "d-2") == "d-1"
    await storage.kv_put(CREATOR_NAMESPACE, "octo/repo@old", {"owner": "killed"})
    assert await take_creation(storage, "octo/repo@old", "d-3") == "killed"
    await forget_sha(storage, KEY)
    assert await take_creation(storage, KEY, "d-2") is None
