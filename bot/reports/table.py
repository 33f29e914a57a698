"""Plain-text tables that fit the terminal. Pure.

Columns keep their natural width (the widest cell) while the table fits; when it is
wider than the terminal, the columns marked `flex` (names, links: never numbers) give
up room, widest first, down to `MIN_FLEX`, and their cells end in "…". Every cell is
made safe for a terminal first: one line, control characters shown as escapes (judge
text and repository data must not move the cursor or recolour the screen), and
credential-shaped strings scrubbed.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from bot.gfm import escape_controls, scrub_secrets

MIN_FLEX = 8
GAP = "  "
_TERMINAL_CONTROLS = re.compile("[\x00-\x1f\x7f-\x9f]")


@dataclass(frozen=True)
class Column:
    title: str
    right: bool = False
    flex: bool = False


def plain(text: str) -> str:
    """`text` as one safe line for a terminal."""
    flat = " ".join(scrub_secrets(text).split())
    flat = _TERMINAL_CONTROLS.sub(lambda m: f"\\x{ord(m.group()):02x}", flat)
    return escape_controls(flat)


def clip(text: str, width: int) -> str:
    if len(text) <= width:
        return text
    return text[: max(width - 1, 0)] + "…"


def fit_line(text: str, width: int | None) -> str:
    """One safe line, cut to `width` (None: no limit)."""
    line = plain(text)
    return line if width is None else clip(line, width)


def column_widths(
    columns: Sequence[Column], rows: Sequence[Sequence[str]], width: int | None
) -> list[int]:
    widths = [max([len(c.title), *(len(row[i]) for row in rows)]) for i, c in enumerate(columns)]
    if width is None:
        return widths
    excess = sum(widths) + len(GAP) * (len(columns) - 1) - width
    flexible = [i for i, c in enumerate(columns) if c.flex]
    while excess > 0:
        shrinkable = [i for i in flexible if widths[i] > MIN_FLEX]
        if not shrinkable:
            break
        widest = max(shrinkable, key=lambda i: widths[i])
        widths[widest] -= 1
        excess -= 1
    return widths


def render_rows(
    columns: Sequence[Column], rows: Sequence[Sequence[str]], width: int | None
) -> list[str]:
    """The header line and one line per row."""
    safe = [[plain(cell) for cell in row] for row in rows]
    widths = column_widths(columns, safe, width)
    lines = []
    for row in [[c.title for c in columns], *safe]:
        cells = []
        for cell, column, size in zip(row, columns, widths, strict=True):
            text = clip(cell, size)
            cells.append(text.rjust(size) if column.right else text.ljust(size))
        lines.append(GAP.join(cells).rstrip())
    return lines
