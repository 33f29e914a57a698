"""The App's review ids per pull request, kept so that a newer verdict dismisses its own
earlier reviews; on both storage backends, with submissions at the same moment. And the
claim that submits each review once."""

from __future__ import annotations

import asyncio

from bot.reviews.submit import (
    KEPT_REVIEW_IDS,
    REVIEW_IDS,
    SUBMITTED,
    claim_submission,
    give_back_submission,
    remember_review,
)
from bot.storage.base import Storage

PULL = "o/r#7"


async def test_each_review_is_remembered_and_the_others_returned(storage: Storage) -> None:
    assert await remember_review(storage, PULL, 11) == []
    assert await remember_review(storage, PULL, 12) == [11]
    assert await remember_review(storage, "o/r#70", 13) == []  # not a prefix match of #7
    assert await remember_review(storage, PULL, 14) == [11, 12]


async def test_reviews_submitted_at_once_are_all_remembered(storage: Storage) -> None:
    # Each call runs its own statements interleaved with the others' (PostgreSQL's driver
    # yields on each): a read-modify-write of one list kept only the last writer's id.
    await asyncio.gather(*(remember_review(storage, PULL, rid) for rid in range(100, 120)))
    assert await remember_review(storage, PULL, 500) == list(range(100, 120))


async def test_a_list_stored_by_an_earlier_version_is_still_read(storage: Storage) -> None:
    await storage.kv_put(REVIEW_IDS, PULL, {"ids": [3, 4]})
    assert await remember_review(storage, PULL, 9) == [3, 4]


async def test_only_the_newest_are_kept(storage: Storage) -> None:
    for rid in range(1, KEPT_REVIEW_IDS + 6):
        await remember_review(storage, PULL, rid)
    kept = await storage.kv_list(REVIEW_IDS, f"{PULL}/")
    assert [value["id"] for _, value in kept] == list(range(6, KEPT_REVIEW_IDS + 6))


async def test_review_ids_keep_the_rows_shape(storage: Storage) -> None:
    """One row per review, `{"id": n}` under a zero-padded key, as installations hold them."""
    await remember_review(storage, PULL, 11)
    assert await storage.kv_get(REVIEW_IDS, f"{PULL}/{11:020d}") == {"id": 11}
    await storage.kv_put(REVIEW_IDS, f"{PULL}/{12:020d}", {"id": 12})
    assert await remember_review(storage, PULL, 13) == [11, 12]


async def test_a_review_is_claimed_once_until_given_back(storage: Storage) -> None:
    key = "o/r@abc:accept:"
    assert await claim_submission(storage, key, "APPROVE")
    assert await storage.kv_get(SUBMITTED, key) == {"event": "APPROVE"}
    assert not await claim_submission(storage, key, "APPROVE")
    await give_back_submission(storage, key)
    assert await claim_submission(storage, key, "APPROVE")
    await storage.kv_put(SUBMITTED, "o/r@def:reject:", {"event": "REQUEST_CHANGES"})
    assert not await claim_submission(storage, "o/r@def:reject:", "REQUEST_CHANGES")
