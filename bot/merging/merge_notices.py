"""What people read about the merge queue: the check-run line and the PR comments. Pure.

Branch and label names come from people, so they pass through `bot.gfm` like every
other untrusted name; each comment ends with the finishing step (scrubbed, capped).
"""

from __future__ import annotations

from bot.gfm import COMMENT_LIMIT, app_line, code, finish, short_sha
from bot.merging.step import CONFLICT_LABEL

_LINE = 1_000


def ordinal_position(position: int) -> str:
    return "next" if position == 1 else f"position {position}"


def queue_line(base: str, position: int, eta: str = "", batch: object = None) -> str:
    """The line in the `judge` check run's summary when the accept put it in a queue.
    `eta`: `queue_estimate.describe`'s words, "" to say nothing; `batch`: the batch the
    entry is tested in, when it is in one."""
    notes = []
    if batch is not None:
        notes.append(f"in batch {batch}")
    if eta:
        notes.append(f"merged in {eta}")
    extra = f" ({'; '.join(notes)})" if notes else ""
    return app_line(
        f"Merge queue: {ordinal_position(position)} for {code(base)}{extra}. It is merged at "
        "this commit once GitHub allows it (required checks and reviews still apply).",
        _LINE,
    )


def github_queue_line(base: str, position: int | None, eta: str = "") -> str:
    """The `judge` run's line when the accept handed the pull request to GitHub's queue."""
    notes = [] if position is None else [ordinal_position(position)]
    if eta:
        notes.append(f"merged in {eta}")
    extra = f" ({', '.join(notes)})" if notes else ""
    return app_line(
        f"Merge queue: handed to GitHub's merge queue for {code(base)}{extra}, at this "
        "commit. A new push or a verdict other than accept takes it out.",
        _LINE,
    )


def github_refused_line(base: str, message: str) -> str:
    return app_line(
        f"Merge queue: GitHub's merge queue for {code(base)} did not take it: {message}",
        _LINE,
    )


def entered_github(base: str, sha: str, position: int | None, hold_label: str) -> str:
    """The comment when the pull request was handed to GitHub's merge queue."""
    place = "" if position is None else f" ({ordinal_position(position)})"
    text = (
        f"Accepted at {short_sha(sha)}: handed to GitHub's merge queue for {code(base)}"
        f"{place}. GitHub merges it with the queue's own method once the merge group's "
        f"required checks pass. It leaves the queue on a new push, a verdict other than "
        f"accept, the {code(hold_label)} label, closing or conversion to draft."
    )
    return finish(app_line(text, _LINE), COMMENT_LIMIT)


def refused_by_github(base: str, sha: str, message: str) -> str:
    """GitHub's merge queue would not take an accepted pull request."""
    text = (
        f"**[Merge-Failed]** Accepted at {short_sha(sha)}, but GitHub's merge queue for "
        f"{code(base)} did not take it: {app_line(message, _LINE)}. Fix what GitHub names; "
        "a new push that is accepted, or a `/judge rerun`, hands it over again."
    )
    return finish(text, COMMENT_LIMIT)


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
