"""The `Storage` methods written once for both backends, assembled: each backend's
store class adds its connection and what it does its own way (`sqlite`, `postgres`)."""

from __future__ import annotations

from bot.storage.deliveries import DeliveryLeases
from bot.storage.keyed import KeyedTables
from bot.storage.ledger import Ledger
from bot.storage.merge_queue import MergeQueue

__all__ = ["SharedTables"]


class SharedTables(DeliveryLeases, KeyedTables, Ledger, MergeQueue):
    """Deliveries (but recording and claiming them), installations and kv, verdicts and
    usage, merge queues (but claiming their heads)."""
