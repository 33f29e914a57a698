"""How one judge call's character budget is shared between the files, their diffs and the
CI excerpts. Pure.

A tier reads at most `max_chars` characters of the change (`JUDGE_<TIER>_MAX_CHARS`).
Some parts are always sent whole and come off the top: the earlier verdicts (capped at
their own limit when read) and one line per CI result (name, state, required). What is
left goes to the rest in keep order, each kind taking what it needs before the next gets
any, so the kinds are trimmed in the reverse order:

    code, completion:   diffs, then full files, then CI excerpts
    content, research:  full files, then diffs, then CI excerpts

that is, CI excerpts are shortened first; then, for code, the full files (the diff
already shows each change with three lines around it) and last the diffs; for prose,
where the whole text is what is judged, the diffs before the files. Within a kind the
budget is shared smallest first: each piece gets at most an even share of what is left,
so small pieces arrive whole and the large ones split the rest evenly.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from bot.judge.records import RubricName
from bot.judge.rubrics import get_rubric
from bot.judge.rubrics.base import ContextKind

# Each rubric says what its judge keeps first (`Rubric.context_order`).
KEEP_ORDER: dict[RubricName, tuple[ContextKind, ...]] = {
    name: get_rubric(name).context_order for name in RubricName
}


@dataclass(frozen=True)
class Piece:
    kind: ContextKind
    name: str
    size: int


def share(sizes: Sequence[int], budget: int) -> list[int]:
    """Characters kept per piece: smallest first, each at most an even share of what is left."""
    kept = [0] * len(sizes)
    remaining = max(0, budget)
    order = sorted(range(len(sizes)), key=lambda i: sizes[i])
    for position, index in enumerate(order):
        portion = remaining // (len(order) - position)
        kept[index] = min(sizes[index], portion)
        remaining -= kept[index]
    return kept


def allot(pieces: Sequence[Piece], budget: int, *, fixed: int, rubric: RubricName) -> list[int]:
    """Characters kept of each piece, after `fixed` characters sent whole."""
    remaining = max(0, budget - fixed)
    kept = [0] * len(pieces)
    for kind in KEEP_ORDER[rubric]:
        indexes = [i for i, piece in enumerate(pieces) if piece.kind == kind]
        for index, amount in zip(
            indexes, share([pieces[i].size for i in indexes], remaining), strict=True
        ):
            kept[index] = amount
            remaining -= amount
    return kept
