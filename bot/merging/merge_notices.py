"""What people read about the merge queue: the check-run line and the PR comments. Pure.

Branch and label names come from people, so they pass through `bot.gfm` like every
other untrusted name; each comment ends with the finishing step (scrubbed, capped).
"""

from __future__ import annotations

from bot.gfm import app_line, code, finish, short_sha
from bot.merging.step import CONFLICT_LABEL

COMMENT_LIMIT = 65_536
_LINE = 1_000


def ordinal_position(position: int) -> str:
    return "next" if position == 1 else f"position {position}"


def queue_line(base: str, position: int) -> str:
    """The line in the `judge` check run's summary when the accept put it in a queue."""
    return app_line(
        f"Merge queue: {ordinal_position(position)} for {code(base)}. It is merged at this "
        "commit once GitHub allows it (required checks and reviews still apply).",
        _LINE,
    )


def entered(base: str, position: int, sha: str, method: str, hold_label: str) -> str:
    text = (
        f"Accepted at {short_sha(sha)}: queued to merge into {code(base)} "
        f"({ordinal_position(position)}, {method}). It leaves the queue on a new push, a "
        f"verdict other than accept, the {code(hold_label)} label, closing or conversion "
        "to draft."
    )
    return finish(app_line(text, _LINE), COMMENT_LIMIT)


def merged(sha: str, base: str, method: str, branch_note: str = "") -> str:
    """`branch_note`: what became of the head branch (`branch_cleanup.deletion_sentence`)."""
    text = f"Merged {short_sha(sha)}, the judged commit, into {code(base)} ({method})."
    if branch_note:
        text += f" {branch_note}"
    return finish(app_line(text, _LINE), COMMENT_LIMIT)


def escalated(reason: str, label: str, base: str, conflict_files: str = "") -> str:
    """A pull request the queue gave up on, left for a person (seed 004's escalation).
    `conflict_files`: the sentence naming where it conflicts (`conflicts`)."""
    if label == CONFLICT_LABEL:
        head = (
            f"**[AutoFix-Conflict]** This pull request conflicts with {code(base)} and left "
            "the merge queue. Merge or rebase the base branch into it and resolve the "
            "conflicts; the new head is judged again and, once accepted, queued again."
        )
        if conflict_files:
            head += f"\n\n{conflict_files}"
    else:
        head = (
            f"**[Merge-Failed]** The merge queue gave up on this pull request: "
            f"{app_line(reason, _LINE)}. It stays open for a person. A new push or a "
            "`/judge rerun` that is accepted queues it again."
        )
    tail = f"Label: {code(label)}."
    return finish(f"{head}\n\n{tail}", COMMENT_LIMIT)
