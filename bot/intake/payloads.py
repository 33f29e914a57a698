"""Payloads the intake decoded, handed to the worker so a stored body is parsed only once.

Intake must parse every body to check it; the worker needs the same payload moments later.
Decoding a large body costs about as much as everything else intake does, so the intake's
result is kept here, keyed by delivery id, and the worker takes it. The cache is only a
shortcut: it is in-process, bounded, and loses its oldest entries first, so a worker that
finds nothing (another replica, a restart, an eviction, a retry) decodes the stored body,
which gives the same payload (both parse with `json`).

An entry is put only after its delivery was stored by this request, so the payload is
always the parse of the stored body, never of a redelivery's. Taking removes the entry:
a handler may change the dict it was given, and a retry must not see that.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Final

# A typical delivery is 5 to 30 KB of JSON and decodes to a few times that in objects; the
# bounds cap the memory at some tens of MB, far more than a burst between two claims needs.
DEFAULT_MAX_ENTRIES: Final = 256
DEFAULT_MAX_BODY_BYTES: Final = 8 * 1024 * 1024


class PayloadCache:
    """Delivery id -> decoded payload, at most `max_entries` and `max_body_bytes` of bodies."""

    def __init__(
        self,
        max_entries: int = DEFAULT_MAX_ENTRIES,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    ) -> None:
        self.max_entries = max_entries
        self.max_body_bytes = max_body_bytes
        self._entries: OrderedDict[str, tuple[dict[str, Any], int]] = OrderedDict()
        self._body_bytes = 0

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, delivery_id: object) -> bool:
        return delivery_id in self._entries

    @property
    def body_bytes(self) -> int:
        return self._body_bytes

    def put(self, delivery_id: str, payload: dict[str, Any], body_bytes: int) -> None:
        """Keep `payload` (decoded from `body_bytes` bytes), evicting the oldest entries to
        make room. A body larger than the whole budget is not kept."""
        self.take(delivery_id)
        if body_bytes > self.max_body_bytes or self.max_entries <= 0:
            return
        while self._entries and (
            len(self._entries) >= self.max_entries
            or self._body_bytes + body_bytes > self.max_body_bytes
        ):
            _, (_, evicted) = self._entries.popitem(last=False)
            self._body_bytes -= evicted
        self._entries[delivery_id] = (payload, body_bytes)
        self._body_bytes += body_bytes

    def take(self, delivery_id: str) -> dict[str, Any] | None:
        """The payload kept for `delivery_id`, removed from the cache; None if there is none."""
        entry = self._entries.pop(delivery_id, None)
        if entry is None:
            return None
        payload, body_bytes = entry
        self._body_bytes -= body_bytes
        return payload
