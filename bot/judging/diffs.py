"""The diff of each judged file, as the judges read it. Pure.

GitHub's own patch when the file list carried one (a pull request's files, a compare).
When it did not, the diff is computed from the file at the base and at the head, which
the blob query fetches for exactly those files (`base_paths`): GitHub leaves the patch of
a large diff out of its lists ("patch truncated by GitHub"), and a push payload lists
paths without patches. An added file gets no diff: its content is the change.

The base of a computed diff is the event's: a pull request's base branch head as the
event saw it, a push's `before`. Where the base branch moved on after the pull request
branched and touched the same file, a computed diff also shows the base's own change
reversed; GitHub's patches (the usual case) are against the merge base and do not.

A computed diff is a shortest edit script between the lines (Myers' greedy algorithm,
after taking off the common start and end and the lines found on one side only). Its
cost grows with the square of the edits, and a pusher chooses both sides, so past
MAX_EDIT_LINES edits or MAX_DIFF_STEPS steps of search the file is judged whole instead
(NOTE_TOO_LARGE): a few KB of repetitive lines cannot hold up the event loop's thread.
"""

from __future__ import annotations

from collections.abc import Sequence

from bot.github.types import ChangedPath, RemoteFile
from bot.judge.engine.review_context import FileDiff

NOTE_TRUNCATED = "patch truncated by GitHub; computed from the base and head files"
NOTE_COMPUTED = "computed from the base and head files"
NOTE_PARTIAL = "GitHub returned only the start of the file, so the diff covers only that part"
NOTE_TOO_LARGE = "too large to diff here; judged on the full file"
NOTE_NO_BASE = "the file at the base could not be read; judged on the full file"
NOTE_RENAMED = "renamed from {previous} without changes"
DIFF_INPUT_LIMIT = 400_000
"""Characters of base and head text together past which no diff is computed. The search
is bounded by the two limits below whatever the size; this one bounds the rest, which is
linear (splitting, trimming and numbering the lines), and the memory it holds."""
MAX_EDIT_LINES = 1000
"""Deleted plus inserted lines, among lines found on both sides, past which no diff is
computed: the search visits about half the square of this many points. Lines found on
one side only do not count, so a rewritten block of any length still diffs."""
MAX_DIFF_STEPS = 2_000_000
"""Points visited and lines compared past which the search gives up: with many lines
between the edits each edit can cost a pass over them, so the edits alone do not bound
the time. Under a second of pure Python (0.6 to 0.75 s where it was measured); real
changes need far fewer: a 10,000-line file with 300 scattered edits takes 0.03 s."""
CONTEXT_LINES = 3


def needs_base(change: ChangedPath) -> bool:
    """A file whose diff must be computed: no patch listed, and there is a before."""
    return change.patch is None and change.status not in ("added", "removed")


def base_paths(changes: Sequence[ChangedPath]) -> dict[str, str]:
    """Judged path -> the path to read at the base (its old name when renamed)."""
    return {c.path: c.previous_path or c.path for c in changes if needs_base(c)}


def unified(old: str, new: str) -> str | None:
    """The hunks of a unified diff (`@@ ... @@` and their lines), without file headers;
    None when the change is past what is worth diffing here (`MAX_EDIT_LINES`,
    `MAX_DIFF_STEPS`).

    The edit script is a shortest one (Myers), so where several are equally short the
    lines it pairs up can differ from difflib's, whose script is not always minimal.
    Within a changed region the deleted lines come before the inserted ones."""
    a, b = old.splitlines(), new.splitlines()
    blocks = _matching_blocks(a, b)
    if blocks is None:
        return None
    rows: list[str] = []
    for group in _grouped(_opcodes(_slid_down(blocks, a, b)), CONTEXT_LINES):
        first, last = group[0], group[-1]
        rows.append(f"@@ -{_range(first[1], last[2])} +{_range(first[3], last[4])} @@")
        for same, i1, i2, j1, j2 in group:
            if same:
                rows.extend(" " + line for line in a[i1:i2])
                continue
            rows.extend("-" + line for line in a[i1:i2])
            rows.extend("+" + line for line in b[j1:j2])
    return "\n".join(rows)


Opcode = tuple[bool, int, int, int, int]
"""(unchanged, i1, i2, j1, j2): old lines [i1, i2) became new lines [j1, j2)."""
Block = tuple[int, int, int]
"""(i, j, size): old lines [i, i + size) are new lines [j, j + size)."""


def _matching_blocks(a: Sequence[str], b: Sequence[str]) -> list[Block] | None:
    """The runs of lines kept, in order, ending with the (len(a), len(b), 0) sentinel;
    None past the limits. The common start and end are taken off first, so a small
    change in a long file costs the length of the file once, not once per edit."""
    shortest = min(len(a), len(b))
    prefix = 0
    while prefix < shortest and a[prefix] == b[prefix]:
        prefix += 1
    suffix = 0
    while suffix < shortest - prefix and a[-1 - suffix] == b[-1 - suffix]:
        suffix += 1
    pairs = _kept_pairs(a[prefix : len(a) - suffix], b[prefix : len(b) - suffix])
    if pairs is None:
        return None
    found: list[Block] = [(0, 0, prefix)]
    found.extend((i + prefix, j + prefix, 1) for i, j in pairs)
    found.append((len(a) - suffix, len(b) - suffix, suffix))
    merged: list[Block] = []
    for i, j, size in found:
        if merged and merged[-1][0] + merged[-1][2] == i and merged[-1][1] + merged[-1][2] == j:
            merged[-1] = (merged[-1][0], merged[-1][1], merged[-1][2] + size)
        elif size:
            merged.append((i, j, size))
    merged.append((len(a), len(b), 0))
    return merged


def _kept_pairs(old: Sequence[str], new: Sequence[str]) -> list[tuple[int, int]] | None:
    """(old index, new index) of every line a shortest edit script keeps; None past the
    limits. A line found on one side only is an edit in every script, so it is left out
    of the search: a rewritten block costs its length, not the square of it."""
    on_both = set(old) & set(new)
    old_kept = [i for i, line in enumerate(old) if line in on_both]
    new_kept = [j for j, line in enumerate(new) if line in on_both]
    # Integers compare in one step where equal lines of text compare character by character.
    numbers: dict[str, int] = {}
    snakes = _shortest_edit_snakes(
        [numbers.setdefault(old[i], len(numbers)) for i in old_kept],
        [numbers.setdefault(new[j], len(numbers)) for j in new_kept],
    )
    if snakes is None:
        return None
    return [
        (old_kept[i + step], new_kept[j + step]) for i, j, size in snakes for step in range(size)
    ]


def _shortest_edit_snakes(a: Sequence[int], b: Sequence[int]) -> list[Block] | None:
    """The runs of equal lines along a shortest edit script from `a` to `b` (Myers 1986,
    the greedy O((N+M)D) form), or None once the script needs more than MAX_EDIT_LINES
    edits or the search more than MAX_DIFF_STEPS steps: the search is quadratic in the
    edits, and a pusher chooses both sides of a computed diff.

    `rows[d][i]` is the furthest x reached with d edits on diagonal k = x - y = 2i - d."""
    n, m = len(a), len(b)
    if not n or not m:
        return []
    rows: list[list[int]] = []
    previous: list[int] = []
    steps = 0
    for edits in range(min(n + m, MAX_EDIT_LINES) + 1):
        row: list[int] = []
        for i in range(edits + 1):
            if edits == 0:
                x = 0
            elif i == 0 or (i != edits and previous[i - 1] < previous[i]):
                x = previous[i]  # an insertion from diagonal k + 1
            else:
                x = previous[i - 1] + 1  # a deletion from diagonal k - 1
            y = x - 2 * i + edits
            start = x
            while x < n and y < m and a[x] == b[y]:
                x, y = x + 1, y + 1
            steps += x - start + 1
            if steps > MAX_DIFF_STEPS:
                return None
            row.append(x)
            if x >= n and y >= m:
                rows.append(row)
                return _snakes_back(rows, i)
        rows.append(row)
        previous = row
    return None


def _snakes_back(rows: Sequence[Sequence[int]], end: int) -> list[Block]:
    """Walks the furthest-reaching points back from the end (index `end` of the last row)
    and returns the equal runs met on the way, in order."""
    snakes: list[Block] = []
    i = end
    for edits in range(len(rows) - 1, 0, -1):
        previous = rows[edits - 1]
        if i == 0 or (i != edits and previous[i - 1] < previous[i]):
            start, before = previous[i], i
        else:
            start, before = previous[i - 1] + 1, i - 1
        if rows[edits][i] > start:
            snakes.append((start, start - 2 * i + edits, rows[edits][i] - start))
        i = before
    if rows[0][0]:
        snakes.append((0, 0, rows[0][0]))
    snakes.reverse()
    return snakes


def _slid_down(blocks: Sequence[Block], a: Sequence[str], b: Sequence[str]) -> list[Block]:
    """Each run of only deleted (or only inserted) lines moved as far down as repeated
    lines allow, where difflib and git show it: taking one of three blank lines away
    shows the last one gone, not the first. The kept run below empties only at the end
    of the file, so changed regions never merge."""
    slid = [(0, 0, 0), *blocks]
    for n in range(len(slid) - 2):
        pi, pj, ps = slid[n]
        qi, qj, qs = slid[n + 1]
        if pj + ps == qj and pi + ps < qi:
            lines, gap, below = a, pi + ps, qi
        elif pi + ps == qi and pj + ps < qj:
            lines, gap, below = b, pj + ps, qj
        else:
            continue
        limit = qs if (qi + qs, qj + qs) == (len(a), len(b)) else qs - 1
        shift = 0
        while shift < limit and lines[gap + shift] == lines[below + shift]:
            shift += 1
        slid[n], slid[n + 1] = (pi, pj, ps + shift), (qi + shift, qj + shift, qs - shift)
    return [block for block in slid[:-1] if block[2]] + [slid[-1]]


def _opcodes(blocks: Sequence[Block]) -> list[Opcode]:
    """Alternating unchanged and changed regions, as difflib's `get_opcodes` gives them
    (its "replace", "delete" and "insert" all being one changed region here)."""
    codes: list[Opcode] = []
    i = j = 0
    for ai, bj, size in blocks:
        if i < ai or j < bj:
            codes.append((False, i, ai, j, bj))
        if size:
            codes.append((True, ai, ai + size, bj, bj + size))
        i, j = ai + size, bj + size
    return codes


def _grouped(opcodes: Sequence[Opcode], context: int) -> list[list[Opcode]]:
    """The hunks: changed regions with `context` unchanged lines around them, merged
    where no more than twice that separates them (difflib's `get_grouped_opcodes`)."""
    if not opcodes:
        return []
    codes = list(opcodes)
    if codes[0][0]:
        _, i1, i2, j1, j2 = codes[0]
        codes[0] = True, max(i1, i2 - context), i2, max(j1, j2 - context), j2
    if codes[-1][0]:
        _, i1, i2, j1, j2 = codes[-1]
        codes[-1] = True, i1, min(i2, i1 + context), j1, min(j2, j1 + context)
    groups: list[list[Opcode]] = []
    group: list[Opcode] = []
    for same, i1, i2, j1, j2 in codes:
        if same and i2 - i1 > 2 * context:
            group.append((True, i1, min(i2, i1 + context), j1, min(j2, j1 + context)))
            groups.append(group)
            group = []
            i1, j1 = max(i1, i2 - context), max(j1, j2 - context)
        group.append((same, i1, i2, j1, j2))
    if group and not (len(group) == 1 and group[0][0]):
        groups.append(group)
    return groups


def _range(start: int, stop: int) -> str:
    """A hunk side as unified diffs write it: 1-based start, and the length unless 1."""
    length = stop - start
    if length == 1:
        return str(start + 1)
    return f"{start + 1 if length else start},{length}"


def file_diff(
    change: ChangedPath,
    head: RemoteFile | None,
    base: RemoteFile | None,
    *,
    patches_listed: bool,
) -> FileDiff | None:
    """The judges' view of one file's change; None when there is nothing to show (an
    added file, a binary one). `patches_listed`: GitHub's list carried patches, so a
    missing one was left out by GitHub, not never given."""
    if change.status in ("added", "removed") or head is None:
        return None
    if change.patch is not None:
        if not change.patch and change.previous_path:
            return FileDiff(
                path=change.path, note=NOTE_RENAMED.format(previous=change.previous_path)
            )
        return FileDiff(path=change.path, diff=change.patch)
    if base is None:
        return FileDiff(path=change.path, note=NOTE_NO_BASE)
    if len(base.text) + len(head.text) > DIFF_INPUT_LIMIT:
        return FileDiff(path=change.path, note=NOTE_TOO_LARGE)
    diff = unified(base.text, head.text)
    if diff is None:
        return FileDiff(path=change.path, note=NOTE_TOO_LARGE)
    notes = [NOTE_TRUNCATED if patches_listed else NOTE_COMPUTED]
    if head.truncated or base.truncated:
        notes.append(NOTE_PARTIAL)
    return FileDiff(path=change.path, diff=diff, note="; ".join(notes))
