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
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence

from bot.github.types import ChangedPath, RemoteFile
from bot.judge.review_context import FileDiff

NOTE_TRUNCATED = "patch truncated by GitHub; computed from the base and head files"
NOTE_COMPUTED = "computed from the base and head files"
NOTE_PARTIAL = "GitHub returned only the start of the file, so the diff covers only that part"
NOTE_TOO_LARGE = "too large to diff here; judged on the full file"
NOTE_NO_BASE = "the file at the base could not be read; judged on the full file"
NOTE_RENAMED = "renamed from {previous} without changes"
DIFF_INPUT_LIMIT = 400_000
"""Characters of base and head text together past which no diff is computed (difflib's
time grows faster than the text)."""
CONTEXT_LINES = 3
AUTOJUNK_LINES = 4000


def needs_base(change: ChangedPath) -> bool:
    """A file whose diff must be computed: no patch listed, and there is a before."""
    return change.patch is None and change.status not in ("added", "removed")


def base_paths(changes: Sequence[ChangedPath]) -> dict[str, str]:
    """Judged path -> the path to read at the base (its old name when renamed)."""
    return {c.path: c.previous_path or c.path for c in changes if needs_base(c)}


def unified(old: str, new: str) -> str:
    """The hunks of a unified diff (`@@ ... @@` and their lines), without file headers.

    difflib's "junk" heuristic (on by default) treats lines frequent in a long file,
    blank lines and closing braces, as unmatchable, which can turn a one-line change
    into a whole-file rewrite; it stays off unless the files are long enough for its
    saving to matter."""
    a, b = old.splitlines(), new.splitlines()
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=len(a) + len(b) > AUTOJUNK_LINES)
    rows: list[str] = []
    for group in matcher.get_grouped_opcodes(CONTEXT_LINES):
        first, last = group[0], group[-1]
        rows.append(f"@@ -{_range(first[1], last[2])} +{_range(first[3], last[4])} @@")
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                rows.extend(" " + line for line in a[i1:i2])
                continue
            rows.extend("-" + line for line in a[i1:i2])
            rows.extend("+" + line for line in b[j1:j2])
    return "\n".join(rows)


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
    notes = [NOTE_TRUNCATED if patches_listed else NOTE_COMPUTED]
    if head.truncated or base.truncated:
        notes.append(NOTE_PARTIAL)
    return FileDiff(path=change.path, diff=unified(base.text, head.text), note="; ".join(notes))
