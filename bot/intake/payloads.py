"""Payloads the intake decoded, handed to the worker so a stored body is parsed only once.

Intake must parse every body to check it; the worker needs the same payload moments later.
Decoding a large body costs about as much as everything else intake does, so the intake's
result is kept here, keyed by delivery id, and the worker takes it. The cache is only a
shortcut: it is in-process and bounded, so a worker that finds nothing (another replica, a
restart, a full cache, a retry) decodes the stored body, which gives the same payload (both
parse with orjson).

When it is full, a new payload is not kept, rather than an older one dropped: workers claim
oldest first, so under a burst the oldest payloads are the next ones taken, and replacing
them would only trade one parse for another while keeping tens of thousands of objects alive
longer (measured: about 60 us more per delivery in a burst, mostly the garbage collector's).
An entry not taken within `max_age_seconds` (a delivery another replica claimed) is dropped
when the next payload is put.

An entry is put only after its delivery was stored by this request, so the payload is
always the parse of the stored body, never of a redelivery's. Taking removes the entry:
a handler may change the dict it was given, and a retry must not see that.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any, Final, NamedTuple

# A typical delivery is 5 to 30 KB of JSON and decodes to a few times that in objects; the
# bounds cap the memory at some tens of MB, far more than a burst between two claims needs.
DEFAULT_MAX_ENTRIES: Final = 256
DEFAULT_MAX_BODY_BYTES: Final = 8 * 1024 * 1024
# Claims take the oldest delivery first and a burst is worked off within seconds; a payload
# this old is one nobody here will take.
DEFAULT_MAX_AGE_SECONDS: Final = 300.0


class _Entry(NamedTuple):
    payload: dict[str, Any]
    body_bytes: int
    put_at: float


class PayloadCache:
    """Delivery id -> decoded payload, at most `max_entries` and `max_body_bytes` of bodies,
    each for at most `max_age_seconds`."""

    def __init__(
        self,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        max_age_seconds: float = DEFAULT_MAX_AGE_SECONDS,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_entries = max_entries
        self.max_body_bytes = max_body_bytes
        self.max_age_seconds = max_age_seconds
        self._monotonic = monotonic
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._body_bytes = 0

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, delivery_id: object) -> bool:
        return delivery_id in self._entries

    @property
    def body_bytes(self) -> int:
        return self._body_bytes

    def put(self, delivery_id: str, payload: dict[str, Any], body_bytes: int) -> None:
        """Keep `payload` (decoded from `body_bytes` bytes) if there is room once entries
        past their age are dropped; otherwise it is not kept."""
        self.take(delivery_id)
        now = self._monotonic()
        self._drop_older_than(now - self.max_age_seconds)
        if (
            len(self._entries) >= self.max_entries
            or self._body_bytes + body_bytes > self.max_body_bytes
        ):
            return
        self._entries[delivery_id] = _Entry(payload, body_bytes, now)
        self._body_bytes += body_bytes

    def take(self, delivery_id: str) -> dict[str, Any] | None:
        """The payload kept for `delivery_id`, removed from the cache; None if there is none."""
        entry = self._entries.pop(delivery_id, None)
        if entry is None:
            return None
        self._body_bytes -= entry.body_bytes
        return entry.payload

    def _drop_older_than(self, put_before: float) -> None:
        # Insertion order is age order: the oldest entries are at the front.
        while self._entries:
            oldest = next(iter(self._entries.values()))
            if oldest.put_at >= put_before:
                return
            self._entries.popitem(last=False)
            self._body_bytes -= oldest.body_bytes
