"""The judging flow's decisions, as pure functions over plain data.

Judging's own modules fetch what these need, call them, and carry out what they return
(no other package calls them). Each is tested exhaustively in tests/judging/test_rules.py.
"""

from __future__ import annotations

import enum
import hashlib
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from bot.github.types import ChangedPath, added_lines_from_patch
from bot.judge.records import JudgedFile
from bot.judge.settings import Mode
from bot.judge.watched_authors import is_listed_author
from bot.judging.annotations import Annotation
from bot.judging.check_run import CheckRunOutput
from bot.judging.conclusion import Cause
from bot.judging.four_eyes import Actor, AuthorizationFacts, person_decision
from bot.judging.repo_config import LeftOut, RepoConfig, Selection, author_matches, select_files
from bot.judging.run_notices import (
    SkipReason,
    render_nothing_to_judge,
    render_skipped,
    render_unlisted,
)
from bot.judging.state import LabelGrant, ShaState
from bot.judging.target import SKIP_MARKERS, Target, people_of, vouched_people

# -- who judges a sha -------------------------------------------------------------------------


class ClaimAction(enum.StrEnum):
    CLAIM = "claim"  # nobody has: take it
    RESUME = "resume"  # this delivery had it (a retry)
    TAKE_OVER = "take-over"  # judge again on the same sha, reusing its check run
    SKIP = "skip"  # another delivery judges it: one check run per sha


def claim_action(
    state: ShaState | None,
    *,
    owner: str,
    incoming_is_pull: bool,
    explicit: bool,
    owner_failed: bool,
) -> ClaimAction:
    """Whether a delivery judges a sha another may already have claimed.

    A pull request's view (all its files, its labels and description, its author) is
    worth more than a push's (only the pushed commits), so a pull-request event takes
    over a sha a push claimed. An explicit re-judge (already authorised) always takes
    over, and so does anyone when the owner's delivery was parked as failed."""
    if state is None:
        return ClaimAction.CLAIM
    if state.owner == owner:
        return ClaimAction.RESUME
    if explicit or owner_failed:
        return ClaimAction.TAKE_OVER
    if incoming_is_pull and state.claimed_by_push:
        return ClaimAction.TAKE_OVER
    return ClaimAction.SKIP


# -- what is judged ---------------------------------------------------------------------------


def push_needs_no_run(config: RepoConfig, target: Target) -> bool:
    """A push with nothing to judge gets no check run at all (its files and commits known).
    One whose list GitHub cut may hide watched files: it gets a run."""
    if unlisted(target):
        return False
    if target.changed is not None and not select_files(config, target.changed).files:
        return True
    return target.commits is not None and not judges_authors(config, target)


def judges_authors(config: RepoConfig, target: Target) -> bool:
    """Whether `authors` lets this change be judged (an empty list judges everyone's).

    The accounts GitHub vouches for (the pull request's author, the pusher) always count;
    a commit's author and committer lines, which anyone types, may add people to judge
    but never take the vouched ones away."""
    vouched = vouched_people(target)
    if not config.authors or not vouched:
        # Nobody GitHub vouches for (a merge group of several pull requests): the typed
        # commit lines alone may not exempt anything, so it is judged.
        return True
    return author_matches(config, [*vouched, *people_of(target.commits or ())])


def marker_allowed(config: RepoConfig, target: Target) -> bool:
    """Whether `[skip judge]` may skip a blocking gate: every account GitHub vouches for
    behind the change (pull request author, pusher) is listed in `skip_marker_authors`.
    A commit's author line is never asked: `git -c user.name=...` writes anything."""
    vouched = vouched_people(target)
    return bool(config.skip_marker_authors and vouched) and all(
        is_listed_author(config.skip_marker_authors, [person]) for person in vouched
    )


def unlisted(target: Target) -> bool:
    """GitHub did not list every changed file (a pull request past 3,000, a compare past
    300): the ones it left out were never seen, watched or not."""
    return target.listed_files is not None and target.listed_files > len(target.changed or ())


@dataclass(frozen=True)
class Bypass:
    kind: Literal["label", "commit-message"]
    by: str  # the login that applied the label, or the head sha


def bypass_of(target: Target, skip_label: str | None, head_message: str) -> Bypass | None:
    if skip_label and skip_label in target.labels:
        return Bypass("label", target.labeled_by or "")
    lowered = head_message.lower()
    if any(marker in lowered for marker in SKIP_MARKERS):
        return Bypass("commit-message", target.head_sha)
    return None


def label_refusal(grant: LabelGrant | None, target: Target) -> str | None:
    """Why the skip label may not skip this change in blocking mode, or None when it may:
    it must have been added by someone who could override the judges (four eyes), at this
    head: a grant covers the commit it was given for, not what the author pushes later."""
    if grant is None:
        return "nobody is known to have added it (a maintainer may remove it and add it again)"
    facts = AuthorizationFacts(
        permission=grant.permission,
        role_name=grant.role_name,
        pr_author=target.pull_author,
        commit_logins=tuple(people_of(target.commits or ())),
    )
    decision = person_decision(Actor(grant.by, grant.by_type), facts)
    if not decision.allowed:
        return f"@{grant.by} added it, and {decision.reason}"
    if grant.head_sha != target.head_sha:
        at = f" at {grant.head_sha[:7]}" if grant.head_sha else ""
        return (
            f"@{grant.by} added it{at}, before this head was pushed (a maintainer may "
            "remove it and add it again to skip this head)"
        )
    return None


def honoured_skip(
    config: RepoConfig, target: Target, mode: Mode, grant: LabelGrant | None = None
) -> tuple[Bypass | None, tuple[str, ...]]:
    """The skip that applies, and a sentence for each requested skip that was refused.

    Advisory mode honours every skip (nothing blocks anyway). Blocking mode honours the
    label only from a person allowed to override (`label_refusal`) and the commit marker
    only from the authors listed in `skip_marker_authors`: otherwise an author could pass
    their own required check."""
    commits = target.commits or ()
    head = commits[-1] if commits else None
    notes: list[str] = []
    label = config.skip_label
    if label and label in target.labels:
        by = grant.by if grant is not None else target.labeled_by or ""
        if mode is Mode.ADVISORY:
            return Bypass("label", by), ()
        refusal = label_refusal(grant, target)
        if refusal is None:
            return Bypass("label", by), ()
        notes.append(f"The `{label}` label was not honoured: {refusal}.")
    if head is not None and bypass_of(replace(target, labels=()), None, head.message):
        if mode is Mode.ADVISORY or marker_allowed(config, target):
            return Bypass("commit-message", target.head_sha), tuple(notes)
        notes.append(
            "The `[skip judge]` commit marker was not honoured: in blocking mode only when "
            "the accounts behind the change (the pull request's author and the pusher) are "
            "all listed in `skip_marker_authors`."
        )
    return None, tuple(notes)


@dataclass(frozen=True)
class FinishEarly:
    """The run ends without judging: what it shows, and the verdict remembered."""

    output: CheckRunOutput
    verdict: str
    cause: Cause


@dataclass(frozen=True)
class JudgeFiles:
    """The change is judged: these files, and the skips that were refused (said in the
    check run's summary)."""

    selection: Selection
    notes: tuple[str, ...] = ()


def gate(
    config: RepoConfig, target: Target, mode: Mode = Mode.ADVISORY, grant: LabelGrant | None = None
) -> FinishEarly | JudgeFiles:
    """Whether a change with known files and commits is judged, and which files.

    A skip (label or commit marker, `honoured_skip`) wins; then the `authors` filter; then
    the watched paths. The target's `changed` and `commits` must be known."""
    bypass, notes = honoured_skip(config, target, mode, grant)
    if bypass is not None:
        if bypass.kind == "label":
            label = config.skip_label or ""
            output = render_skipped(SkipReason.LABEL, bypass.by, label=label)
            return FinishEarly(output, "skipped", Cause.SKIP_GRANTED)
        output = render_skipped(SkipReason.COMMIT_MESSAGE, bypass.by)
        return FinishEarly(output, "skipped", Cause.SKIP_GRANTED)
    if not judges_authors(config, target):
        why = (
            "nobody behind this change (the pull request's author, the pusher, the commits' "
            "authors) is among the configured `authors`"
        )
        return FinishEarly(render_nothing_to_judge(why), "skipped", Cause.NOTHING_TO_JUDGE)
    selection = select_files(config, target.changed or ())
    if not selection.files and unlisted(target):
        listed = len(target.changed or ())
        return FinishEarly(render_unlisted(listed), "skipped", Cause.UNREAD)
    if not selection.files:
        output = render_nothing_to_judge("no watched file changed", selection.left_out)
        return FinishEarly(output, "skipped", Cause.NOTHING_TO_JUDGE)
    return JudgeFiles(selection, notes)


def prepare_files(
    paths: Sequence[str],
    texts: Mapping[str, str | None],
    changed: Sequence[ChangedPath],
    max_chars: int,
    truncated_by_github: Collection[str] = (),
) -> tuple[list[JudgedFile], list[LeftOut]]:
    """The files handed to the judges, cut to the repository's limit, and what was not."""
    by_path = {c.path: c for c in changed}
    files: list[JudgedFile] = []
    left_out: list[LeftOut] = []
    for path in paths:
        text = texts.get(path)
        if text is None:
            left_out.append(LeftOut(path, "binary or unreadable", unread=True))
            continue
        if path in truncated_by_github:
            why = "too large for GitHub to return whole; judged in part"
            left_out.append(LeftOut(path, why, unread=True))
        if len(text) > max_chars:
            why = f"cut to the first {max_chars:,} characters (limits.max_chars_per_file)"
            left_out.append(LeftOut(path, why, unread=True))
            text = text[:max_chars]
        change = by_path.get(path)
        files.append(
            JudgedFile(
                path=path,
                content=text,
                added_lines=added_lines_from_patch(change.patch if change else None),
                status=change.status if change else None,
            )
        )
    return files, left_out


# -- check-run annotations -------------------------------------------------------------------


def annotation_key(annotation: Annotation) -> str:
    text = "|".join(
        str(annotation.get(field, ""))
        for field in ("path", "start_line", "end_line", "annotation_level", "title", "message")
    )
    return hashlib.sha256(text.encode()).hexdigest()[:24]


def unsent(annotations: Sequence[Annotation], sent: Collection[str]) -> list[Annotation]:
    """GitHub appends the annotations of every update to a run: never send one twice."""
    seen = set(sent)
    fresh: list[Annotation] = []
    for annotation in annotations:
        key = annotation_key(annotation)
        if key not in seen:
            seen.add(key)
            fresh.append(annotation)
    return fresh
