"""The argparse types the commands' flags share, so a refused value reads alike in every
command (`--limit`, `--width`, `--days`, `--repo`)."""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable

_REPOSITORY = re.compile(r"^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$")


def whole_number(low: int, high: int | None = None) -> Callable[[str], int]:
    """A whole number of at least `low` (and at most `high`, when given)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if high is None and value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low}")
        if high is not None and not low <= value <= high:
            raise argparse.ArgumentTypeError(f"must be between {low} and {high}")
        return value

    return parse


def owner_name(text: str) -> str:
    """A repository as OWNER/NAME."""
    if not _REPOSITORY.fullmatch(text):
        raise argparse.ArgumentTypeError(f"{text!r} is not OWNER/NAME")
    return text
