"""Which head an override was about, and whether it may decide the current one. Pure.

An override decides one commit, and a comment is read when its delivery is worked on:
possibly long after it was written (a backlog, a retry, a rate-limit deferral, missed
deliveries recovered). By then the pull request may have a head the commenter never saw,
perhaps one the judges rejected, and approving that head would merge it unreviewed.

    written_at(comment)                 the comment's `created_at`, as GitHub stamped it
    head_mismatch(command, ...)         None when the override may decide `head_sha`,
                                        else why not (`Mismatch`)

The rule, for `/judge override accept|reject|cancel` written in a comment:

- with a pinned sha (`/judge override accept 1a2b3c4`) it acts only when the head starts
  with it; when the comment was written does not matter then;
- without one it acts only when the comment was written at or after the moment judge-bot
  first saw the head (`ShaState.first_seen_at`). GitHub's `created_at` has whole seconds
  and is never later than the real moment, so truncation can only refuse, never admit.

Cancel is held to the same rule: it brings the judges' verdict back, which can put a head
into the merge queue (or undo someone else's later decision about it) just as an accept does.

A button on the check run ("Accept (override)") is about the sha of the run it was pressed
on, and `plan.locate` refuses it once that run is no longer the head: it is pinned by
construction, so its origin (`FromRun`) passes here. `/judge rerun` is never held: judging
the current head again decides nothing by itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from bot.commands.grammar import Command


@dataclass(frozen=True)
class FromComment:
    """A command written in a comment; `written_at` is None when the payload has no time."""

    written_at: datetime | None


@dataclass(frozen=True)
class FromRun:
    """A command from a check run's button or re-run: about that run's own sha."""


Origin = FromComment | FromRun


class Mismatch(StrEnum):
    """Why an override comment may not decide the current head (the refusal's code)."""

    PINNED_OTHER = "pinned-other-head"
    WRITTEN_BEFORE = "written-before-head"
    FIRST_SEEN_UNKNOWN = "head-first-seen-unknown"
    WRITTEN_UNKNOWN = "comment-time-unknown"


def written_at(comment: Mapping[str, Any]) -> datetime | None:
    """When GitHub says the comment was created (it stamps `created_at`; the commenter
    cannot set it). None when absent or unreadable, which `head_mismatch` refuses."""
    raw = comment.get("created_at")
    if not isinstance(raw, str):
        return None
    try:
        return _utc(datetime.fromisoformat(raw))
    except ValueError:
        return None


def head_mismatch(
    command: Command, *, head_sha: str, first_seen_at: datetime | None, origin: Origin
) -> Mismatch | None:
    """None when `command` may act on `head_sha`; rules in the module docstring."""
    if command.kind != "override" or isinstance(origin, FromRun):
        return None
    if command.sha is not None:
        return None if head_sha.lower().startswith(command.sha) else Mismatch.PINNED_OTHER
    if origin.written_at is None:
        return Mismatch.WRITTEN_UNKNOWN
    if first_seen_at is None:
        # A row written before judge-bot recorded when it first saw a sha: nothing proves
        # the comment came after this head, so refuse; the reply names the head to pin,
        # which costs one more comment and only for heads judged before the upgrade.
        return Mismatch.FIRST_SEEN_UNKNOWN
    if _utc(origin.written_at) < _utc(first_seen_at):
        return Mismatch.WRITTEN_BEFORE
    return None


def _utc(moment: datetime) -> datetime:
    """Both times are UTC; a naive one (never expected) is read as UTC so that comparing
    never raises."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
