"""One rubric group as requests that a judge can each read whole. Pure.

In blocking mode a pass must mean every watched file was read in full, and a judge reads
at most its tier's `max_chars` (bot/judge/engine/context_budget.py shares them). So a
group is split into parts, each one judge request, of at most `limits.max_files` files
whose text fits the room: the budget less what comes off the top of every prompt (the
earlier verdicts and one line per CI result, with a red check's first characters:
`context_reserve`), less the diffs where the rubric keeps diffs before files (code,
completion). Small files share a part (first fit, sensitive files placed first so they
share the deep tier's parts); each part keeps the files in the order given.

A file that does not fit alone is cut into windows at line boundaries, each its own
request; a line longer than a window is cut hard. Every character of the file is in
exactly one window, in order. Line numbers must still name lines of the real file, for
the mechanical findings, the annotations and the judges: the engine numbers a file's
lines from its content, and `JudgedFile` has no field for an offset, so a window's
content starts with one empty line per line before it ("padded"). That costs a character
per line; when a file has more lines than a quarter of the room, it is not padded, its
`added_lines` are renumbered to the window and the task says where the window starts
(the engine's findings then count from the window: `JudgedFile.first_line` would mend it).

When the deciding judge's model has a known context (bot/judge/engine/context_fit.py),
the room is what that context leaves (bot/judging/judge_requests.py `WindowBudget`) and
each file costs its fences and its line in the file list too (`fence`), so a window
planned to be read whole is sent whole.

A window's diff holds only the rows of the hunks that touch its lines, each hunk's header
recomputed; a diff that is not unified hunks goes whole to the first window. Where the
diff counts against the room it takes at most half of it (`DIFF_SHARE`), cut at a row,
so a window always has room for text: the file is what must be read in full.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

from bot.judge.engine.prompts import CI_FAILING_EXCERPT, CI_LISTED, EARLIER_LIMIT
from bot.judge.engine.review_context import CiResult, EarlierVerdict, FileDiff
from bot.judge.records import JudgedFile, RubricName
from bot.judge.rubrics import get_rubric

PAD_SHARE = 4
"""A file is padded when its line count is at most this fraction of the room."""
DIFF_SHARE = 2
"""A window's diff takes at most this fraction of the room (diff-first rubrics)."""
MIN_ROOM_SHARE = 4
"""The room never drops below this fraction of the budget, however much CI there is: the
prompt then trims the files, and the engine refuses an accept it did not read whole."""

_HEADER = re.compile(r"^@@ -(\d+)(?:,\d+)? \+(\d+)(?:,\d+)? @@(.*)$")


@dataclass(frozen=True)
class Window:
    """Where one window lies in its file: lines `first` to `last` (1-based)."""

    path: str
    first: int
    last: int
    number: int
    count: int
    padded: bool
    partial: bool
    """It starts or ends inside a line (a line longer than a window)."""


@dataclass(frozen=True)
class Part:
    """What one request of a group holds: whole files, or one window of one file."""

    files: tuple[JudgedFile, ...]
    diffs: tuple[FileDiff, ...]
    window: Window | None = None


def context_reserve(ci: Sequence[CiResult], earlier: Sequence[EarlierVerdict]) -> int:
    """An upper bound on what prompts.py sends whole before sharing `max_chars`: at most
    EARLIER_LIMIT of earlier verdicts, and for the CI_LISTED results it lists, a line each
    plus a red one's first CI_FAILING_EXCERPT characters (the largest such are counted)."""
    lines = sorted(
        (
            len(c.line()) + 1 + (min(len(c.excerpt), CI_FAILING_EXCERPT) if c.failing else 0)
            for c in ci
        ),
        reverse=True,
    )
    return (EARLIER_LIMIT if earlier else 0) + sum(lines[:CI_LISTED])


def room_for(window_chars: int, reserve: int) -> int:
    return max(window_chars - reserve, window_chars // MIN_ROOM_SHARE, 1)


def diffs_first(rubric: RubricName) -> bool:
    order = get_rubric(rubric).context_order
    return "diff" in order and order.index("diff") < order.index("file")


def split_group(
    files: Sequence[JudgedFile],
    diffs: Mapping[str, FileDiff],
    *,
    rubric: RubricName,
    max_files: int,
    room: int,
    sensitive: frozenset[str],
    fence: Callable[[str], int] | None = None,
) -> list[Part]:
    """The parts of one group: batches of whole files first, then the windows of each file
    too long for one request. `fence`: what a file costs besides its text (its fences and
    its line in the file list), where the room is the judge's whole context."""
    counted = diffs_first(rubric)
    ranked = sorted(range(len(files)), key=lambda i: files[i].path not in sensitive)
    batches: list[list[int]] = []
    used: list[int] = []
    windowed: list[Part] = []
    for index in ranked:
        file = files[index]
        around = fence(file.path) if fence is not None else 0
        cost = _whole_cost(file, diffs.get(file.path), counted) + around
        if cost > room and not windowable(file.path):
            # Whole, though no judge reads it at once: the engine then refuses the accept
            # (partial view) rather than a window failing a parse of half a document.
            windowed.append(Part((file,), (diffs[file.path],) if file.path in diffs else ()))
            continue
        if cost > room:
            windowed += file_windows(
                file, diffs.get(file.path), room=max(1, room - around), counted=counted
            )
            continue
        for number, batch in enumerate(batches):
            if len(batch) < max_files and used[number] + cost <= room:
                batch.append(index)
                used[number] += cost
                break
        else:
            batches.append([index])
            used.append(cost)
    parts = []
    for batch in batches:
        chosen = tuple(files[i] for i in sorted(batch))
        parts.append(Part(chosen, tuple(diffs[f.path] for f in chosen if f.path in diffs)))
    return parts + windowed


# Files the mechanical checks parse as one document (bot/judge/checks/mechanical.py): a
# window of one would fail the parse, and invalid JSON or TOML is a hard reject.
_WHOLE_DOCUMENTS = (".json", ".toml", ".yaml", ".yml")


def windowable(path: str) -> bool:
    """Whether a file may be judged in windows (line-oriented text, not a document whose
    validity needs all of it)."""
    return not path.lower().endswith(_WHOLE_DOCUMENTS)


def _whole_cost(file: JudgedFile, diff: FileDiff | None, counted: bool) -> int:
    # prompts.py counts a live file's content and, where diffs are kept first, every diff.
    text = 0 if file.removed else len(file.content)
    return text + (len(diff.diff) if counted and diff is not None else 0)


def file_windows(
    file: JudgedFile, diff: FileDiff | None, *, room: int, counted: bool
) -> list[Part]:
    """The windows of one file, in order; `counted`: its diff counts against the room."""
    lines = _lines(file.content)
    if not lines:
        return [Part((file,), (diff,) if diff is not None else ())]
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))
    hunks = _hunks(diff.diff, len(lines)) if diff is not None and diff.diff else []
    cap = room // DIFF_SHARE if counted else 0
    padded = len(lines) <= room // PAD_SHARE
    spans = _spans(lines, room, padded, _DiffCost(hunks) if counted else None, cap)
    parts = []
    for number, (start, end) in enumerate(spans, start=1):
        first = bisect.bisect_right(starts, start)
        last = bisect.bisect_right(starts, end - 1)
        partial = start != starts[first - 1] or end != starts[last]
        window = Window(file.path, first, last, number, len(spans), padded, partial)
        parts.append(_window_part(file, diff, hunks, window, file.content[start:end], cap))
    return parts


def _lines(text: str) -> list[str]:
    """Lines as git numbers them (split at newlines), each with its newline."""
    rows = text.split("\n")
    out = [row + "\n" for row in rows[:-1]]
    if rows[-1]:
        out.append(rows[-1])
    return out


def _spans(
    lines: Sequence[str], room: int, padded: bool, costs: _DiffCost | None, cap: int
) -> list[tuple[int, int]]:
    """Character ranges [start, end) of the windows: as many lines as fit, greedily."""
    spans: list[tuple[int, int]] = []
    position = 0
    index, offset = 0, 0
    while index < len(lines):
        pad = index if padded else 0
        seen: set[int] = set()
        text = diff = 0
        after = index
        while after < len(lines):
            piece = len(lines[after]) - (offset if after == index else 0)
            extra = costs.extra(after + 1, seen) if costs is not None else 0
            if pad + text + piece + min(diff + extra, cap) > room:
                break
            text, diff = text + piece, diff + extra
            if costs is not None:
                seen |= costs.hunks_at(after + 1)
            after += 1
        if after == index:
            # Not even the rest of this line fits: cut it hard. The diff takes at most half
            # of the room and the padding a quarter, so `take` is at least a quarter.
            extra = costs.extra(index + 1, set()) if costs is not None else 0
            take = max(1, room - pad - min(extra, cap))
            spans.append((position, position + take))
            position, offset = position + take, offset + take
            if offset >= len(lines[index]):
                index, offset = index + 1, 0
            continue
        end = position + text
        spans.append((position, end))
        position, index, offset = end, after, 0
    return spans


@dataclass(frozen=True)
class _Row:
    text: str
    line: int
    """The new file's line it belongs to (a removed row: the line it stands before)."""
    old: int
    new: int
    kind: str
    """`+`, `-`, `\\`, ` ` (context), or empty before any hunk header."""


@dataclass(frozen=True)
class _Hunk:
    tail: str | None
    """What follows the header's closing `@@`; None for rows before any header."""
    rows: tuple[_Row, ...]
    header_bound: int


def _hunks(diff: str, line_count: int) -> list[_Hunk]:
    rows_of = diff.removesuffix("\n").split("\n")
    hunks: list[_Hunk] = []
    rows: list[_Row] = []
    tail: str | None = None
    old = new = 1
    for text in [*rows_of, None]:
        header = _HEADER.match(text) if text is not None else None
        if text is None or header is not None:
            if rows or tail is not None:
                bound = 16 + 4 * len(str(max(old, new) + 1)) + len(tail or "")
                hunks.append(_Hunk(tail, tuple(rows), bound if tail is not None else 0))
            if header is not None:
                old, new, tail, rows = int(header[1]), int(header[2]), header[3], []
            continue
        kind = (text[:1] if text[:1] in ("+", "-", "\\") else " ") if tail is not None else ""
        at = min(max(new, 1), line_count)
        if kind == "\\" and rows:
            at = rows[-1].line
        rows.append(_Row(text, at, old, new, kind))
        old += kind in (" ", "-")
        new += kind in (" ", "+")
    return hunks


class _DiffCost:
    """What each new line adds to a window's diff, headers bounded from above."""

    def __init__(self, hunks: Sequence[_Hunk]) -> None:
        self._rows: dict[int, list[tuple[int, int]]] = {}
        self._bounds = [h.header_bound for h in hunks]
        for number, hunk in enumerate(hunks):
            for row in hunk.rows:
                self._rows.setdefault(row.line, []).append((number, len(row.text) + 1))

    def hunks_at(self, line: int) -> set[int]:
        return {number for number, _ in self._rows.get(line, ())}

    def extra(self, line: int, seen: set[int]) -> int:
        rows = self._rows.get(line, ())
        fresh = {number for number, _ in rows} - seen
        return sum(size for _, size in rows) + sum(self._bounds[n] for n in fresh)


def _window_part(
    file: JudgedFile,
    diff: FileDiff | None,
    hunks: Sequence[_Hunk],
    window: Window,
    text: str,
    cap: int,
) -> Part:
    first, last = window.first, window.last
    added = file.added_lines
    if added is not None:
        inside = [n for n in added if first <= n <= last]
        added = inside if window.padded else [n - first + 1 for n in inside]
    content = "\n" * (first - 1) + text if window.padded else text
    judged = file.model_copy(update={"content": content, "added_lines": added})
    return Part((judged,), _window_diff(diff, hunks, first, last, cap), window)


def _window_diff(
    diff: FileDiff | None, hunks: Sequence[_Hunk], first: int, last: int, cap: int
) -> tuple[FileDiff, ...]:
    if diff is None:
        return ()
    if not diff.diff:
        return (diff,)
    rows: list[str] = []
    for hunk in hunks:
        kept = [row for row in hunk.rows if first <= row.line <= last]
        if hunk.tail is not None:
            if not any(row.kind in ("+", "-") for row in kept):
                continue
            rows.append(_header(kept, hunk.tail))
        rows += [row.text for row in kept]
    notes = [diff.note] if diff.note else []
    notes.append(f"only the hunks of lines {first}-{last}")
    if cap and len("\n".join(rows)) > cap:
        size, keep = -1, 0
        while keep < len(rows) and size + len(rows[keep]) + 1 <= cap:
            size, keep = size + len(rows[keep]) + 1, keep + 1
        rows = rows[:keep]
        notes.append("cut to leave room for the file's lines")
    if not rows:
        return ()
    return (FileDiff(path=diff.path, diff="\n".join(rows), note="; ".join(notes)),)


def _header(kept: Sequence[_Row], tail: str) -> str:
    old_count = sum(row.kind in (" ", "-") for row in kept)
    new_count = sum(row.kind in (" ", "+") for row in kept)
    first = kept[0]
    return f"@@ -{_side(first.old, old_count)} +{_side(first.new, new_count)} @@{tail}"


def _side(start: int, count: int) -> str:
    # An empty side names the line before it, as unified diffs do.
    return f"{start if count else start - 1},{count}"


def part_note(part: Part, index: int, total: int, group_size: int, rubric: RubricName) -> str:
    """The directive telling the judge which share of the group this request holds; empty
    when the request holds the whole group."""
    window = part.window
    if window is None:
        if total == 1:
            return ""
        return (
            f"This request holds {len(part.files)} of the {group_size} files judged by the "
            f"{rubric.value} rubric (request {index} of {total}); the others are judged in "
            "separate requests, each of which must accept. Judge these files; do not hold "
            "the absence of the others against the change."
        )
    span = (
        f"line {window.first}"
        if window.first == window.last
        else (f"lines {window.first}-{window.last}")
    )
    if window.partial:
        span += " (a line longer than one window is cut between windows)"
    note = (
        f"This request holds {span} of {window.path} (window {window.number} of "
        f"{window.count}; request {index} of {total}). The file is too long for one judge "
        "to read whole, so each window is a separate request that must accept on its own: "
        "judge this part, and do not hold it against the change that it starts or ends "
        "inside the document."
    )
    if window.first > 1 and window.padded:
        note += (
            f" Lines 1-{window.first - 1} are left empty here so that line numbers match the file."
        )
    elif window.first > 1:
        note += (
            f" Its first line here is line {window.first} of the file: name lines by their "
            "number in the file."
        )
    return note
