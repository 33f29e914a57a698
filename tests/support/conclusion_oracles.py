"""Conclusion shorthands the tests check against, read off the product's table
(`bot/judging/conclusion.py`); the product itself asks `run_conclusion` per cause."""

from __future__ import annotations

from bot.judging.conclusion import UNDETERMINED_BLOCKING

# Causes the author could bring about or the judges never covered: in blocking mode the
# run waits for a maintainer.
REFUSALS = frozenset(
    c for c, conclusion in UNDETERMINED_BLOCKING.items() if conclusion != "neutral"
)
