"""Batches and speculative checks for the App's own queue: the planner. Pure.

With `merge.batch_size` above 1, a base branch's queue tests its pull requests together:
each batch is one commit on a queue branch of its own (`judge-bot/queue/<base>/<n>`), the
batch's pull requests merged in queue order on top of what is ahead of it. Up to
`merge.parallel_checks` batches are tested at once, each built on the tip of the batch ahead
(speculative checks): when the front lands, the next is already tested on exactly the tree
the base then has.

    the base moved under the front (a person merged, another queue) ──> every batch discarded
    a batch's pull request left the queue ────────────────────────────> that batch and those
                                                                          behind it discarded
    an unbatched `urgent` pull request ─────> batches without an urgent one discarded (restart)
    the front: CI green and the judges accept the combination ────────> Land (then the next)
               CI red or the judges do not accept:
                 one pull request ──────────────────────────────────────> Evict it
                 the citations name a file one pull request alone changed > Evict that one
                 otherwise ─────────────────────────> split in two halves, both tested at once
               the batches behind a failed front are discarded: they were built on it
    free parallel slots ──> Form the next batch: the first `batch_size` unbatched pull
                            requests by priority (urgent, high, normal), then queue order

Verdicts compose by AND: every pull request in the queue was accepted at its judged head,
and a batch lands only when the judges also accept what the combination changes beyond each
pull request's own judged content: the files two pull requests in it (or one in it and one
in a batch ahead) both change, and the files the base changed since a pull request left it
(`combined_files`). A batch of independent changes has none, so it costs no model call.

`plan` takes one snapshot (`QueueState`) and returns the moves to make, in order; the edge
carries them out and calls it again when something changes (a check completed, a verdict,
a push to the base, an entry joined or left). Applying the moves to the snapshot
(`apply`) gives the state the plan assumed, so simulations and tests drive the same code.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from bot.storage.base import CheckResult, MergePriority

# Where a pull request goes in its queue; set by `/judge merge --priority`, kept by storage.
Priority = MergePriority


@dataclass(frozen=True)
class QueuedPull:
    """A pull request in the queue, accepted at its judged head."""

    number: int
    order: int
    """Its place in the queue (the entry's id): earlier first, within a priority."""
    files: frozenset[str]
    """The files its judged content changes."""
    base_changed: frozenset[str] = frozenset()
    """Files the base changed since the pull request left it."""
    priority: Priority = Priority.NORMAL


@dataclass(frozen=True)
class FailedCheck:
    """Why a batch failed: the check (a CI check's name, or `judge`), where to read about
    it, and the files its annotations or the judges' citations name."""

    check: str
    detail: str = ""
    files: frozenset[str] = frozenset()


@dataclass(frozen=True)
class Batch:
    """A batch in flight: `members` merged in order on `built_on` (the base's commit, or
    the tip of the batch ahead), giving the tested commit `tip`."""

    id: int
    members: tuple[int, ...]
    built_on: str
    tip: str
    check: CheckResult = CheckResult.PENDING
    review: CheckResult = CheckResult.PASSED
    """The judges' verdict on `combined_files` (PASSED when there is nothing to re-read)."""
    failure: FailedCheck | None = None


@dataclass(frozen=True)
class QueueState:
    base: str
    """The base branch's commit now."""
    pulls: tuple[QueuedPull, ...]
    """Every pull request in the queue, batched or not."""
    batches: tuple[Batch, ...] = ()
    """In flight, front first; each built on the tip of the one before it."""
    batch_size: int = 1
    parallel_checks: int = 1


@dataclass(frozen=True)
class Land:
    """Bring the base to the batch's tested tip (move it, or merge the members in order at
    their judged heads); the members leave the queue merged."""

    batch: int
    members: tuple[int, ...]
    tip: str


@dataclass(frozen=True)
class Evict:
    """The pull request leaves the queue; `reason` is said to people (which check failed
    and where)."""

    number: int
    reason: str


@dataclass(frozen=True)
class Discard:
    """The batch is no longer worth testing (its queue branch is deleted); its members go
    back to the queue, keeping their places."""

    batch: int
    reason: str


@dataclass(frozen=True)
class Form:
    """Build and test a new batch on the tip of the last batch in flight (or the base).
    `review_files` are what the judges re-read at its tip; `split_from` names the failed
    batch it is half of."""

    members: tuple[int, ...]
    review_files: frozenset[str]
    split_from: int | None = None


Move = Land | Evict | Discard | Form


@dataclass
class _Working:
    """The snapshot as the moves planned so far leave it."""

    base: str
    pulls: dict[int, QueuedPull]
    batches: list[Batch]
    moves: list[Move] = field(default_factory=list)

    def batched(self) -> set[int]:
        return {number for batch in self.batches for number in batch.members}

    def discard_from(self, index: int, reason: str) -> None:
        for batch in self.batches[index:]:
            self.moves.append(Discard(batch.id, reason))
        del self.batches[index:]

    def files_ahead(self) -> frozenset[str]:
        return frozenset(
            path
            for batch in self.batches
            for number in batch.members
            for path in self.pulls[number].files
        )


def queue_order(pulls: Iterable[QueuedPull]) -> list[QueuedPull]:
    """Urgent first, then high, then normal; within a priority, queue order."""
    return sorted(pulls, key=lambda pull: (-pull.priority.rank, pull.order))


def combined_files(members: Sequence[QueuedPull], ahead: frozenset[str]) -> frozenset[str]:
    """What the combination changes beyond each member's own judged content: a member's
    file that another member, a batch ahead (`ahead`) or the base since it left also
    changes. Its content at the batch's tip is something no judge has read."""
    touched: list[frozenset[str]] = []
    for index, pull in enumerate(members):
        others = frozenset(
            path for other, peer in enumerate(members) if other != index for path in peer.files
        )
        touched.append(pull.files & (others | ahead | pull.base_changed))
    return frozenset().union(*touched)


def culprit(members: Sequence[QueuedPull], failure: FailedCheck | None) -> QueuedPull | None:
    """The one member the failure's citations point at: the only member changing a cited
    file. None when the citations name no member's file, or several members'."""
    if failure is None:
        return None
    named = [pull for pull in members if pull.files & failure.files]
    return named[0] if len(named) == 1 else None


def failure_text(batch: Batch) -> str:
    """Which check failed, and where, for the comment on the pull request that leaves."""
    failure = batch.failure or FailedCheck("judge" if batch.review is CheckResult.FAILED else "CI")
    where = f": {failure.detail}" if failure.detail else ""
    cited = ", ".join(f"`{path}`" for path in sorted(failure.files))
    files = f" (cites {cited})" if cited else ""
    together = ", ".join(f"#{number}" for number in batch.members)
    return f"the `{failure.check}` check failed on the queue's batch of {together}{where}{files}"


def plan(state: QueueState) -> tuple[Move, ...]:
    """The moves that bring the queue forward from `state` (rules: the module docstring)."""
    work = _Working(
        base=state.base,
        pulls={pull.number: pull for pull in state.pulls},
        batches=list(state.batches),
    )
    _drop_broken(work)
    _restart_for_urgent(work)
    _settle_front(work)
    _form(work, max(state.batch_size, 1), max(state.parallel_checks, 1))
    return tuple(work.moves)


def _drop_broken(work: _Working) -> None:
    """Batches that no longer stand for what they test."""
    below = work.base
    for index, batch in enumerate(work.batches):
        if batch.built_on != below:
            why = "the base branch moved" if index == 0 else "the batch ahead was rebuilt"
            work.discard_from(index, why)
            return
        gone = [number for number in batch.members if number not in work.pulls]
        if gone:
            work.discard_from(index, f"#{gone[0]} left the queue")
            return
        below = batch.tip


def _restart_for_urgent(work: _Working) -> None:
    batched = work.batched()
    waiting = [
        pull
        for pull in work.pulls.values()
        if pull.priority is Priority.URGENT and pull.number not in batched
    ]
    if not waiting:
        return
    for index, batch in enumerate(work.batches):
        if all(work.pulls[n].priority is not Priority.URGENT for n in batch.members):
            work.discard_from(index, f"restarted for the urgent #{queue_order(waiting)[0].number}")
            return


def _settle_front(work: _Working) -> None:
    """Land the front while it passed; stop at one still running; split or evict a failed
    one."""
    while work.batches:
        front = work.batches[0]
        failed = CheckResult.FAILED in (front.check, front.review)
        if not failed and (front.check, front.review) != (CheckResult.PASSED, CheckResult.PASSED):
            return
        if not failed:
            work.moves.append(Land(front.id, front.members, front.tip))
            for number in front.members:
                del work.pulls[number]
            work.base = front.tip
            del work.batches[0]
            continue
        _fail_front(work, front)
        return


def _fail_front(work: _Working, front: Batch) -> None:
    members = [work.pulls[number] for number in front.members]
    work.discard_from(0, f"batch {front.id} failed")
    blamed = members[0] if len(members) == 1 else culprit(members, front.failure)
    if blamed is not None:
        work.moves.append(Evict(blamed.number, failure_text(front)))
        del work.pulls[blamed.number]
        return
    half = len(members) // 2
    for part in (members[:half], members[half:]):
        _append(work, part, split_from=front.id)


def _append(work: _Working, members: Sequence[QueuedPull], split_from: int | None = None) -> None:
    numbers = tuple(pull.number for pull in members)
    move = Form(numbers, combined_files(members, work.files_ahead()), split_from)
    work.moves.append(move)
    # A stand-in until the edge builds it: later forms in this plan stack on it.
    work.batches.append(Batch(-len(work.moves), numbers, "", ""))


def _form(work: _Working, batch_size: int, parallel_checks: int) -> None:
    batched = work.batched()
    waiting = [pull for pull in queue_order(work.pulls.values()) if pull.number not in batched]
    while waiting and len(work.batches) < parallel_checks:
        _append(work, waiting[:batch_size])
        waiting = waiting[batch_size:]


def apply(state: QueueState, moves: Iterable[Move], built: Mapping[int, Batch]) -> QueueState:
    """The state after `moves`, each `Form` at index i built as `built[i]` (the edge's
    batch with its id, base and tip); what `plan` assumed. Landed and evicted pull requests
    leave `pulls`; a land moves `base` to its tip."""
    pulls = {pull.number: pull for pull in state.pulls}
    batches = list(state.batches)
    base = state.base
    for index, move in enumerate(moves):
        if isinstance(move, Land):
            base = move.tip
            batches = [batch for batch in batches if batch.id != move.batch]
            for number in move.members:
                pulls.pop(number, None)
        elif isinstance(move, Evict):
            pulls.pop(move.number, None)
        elif isinstance(move, Discard):
            batches = [batch for batch in batches if batch.id != move.batch]
        else:
            batches.append(built[index])
    return replace(state, base=base, pulls=tuple(pulls.values()), batches=tuple(batches))


class LandWay(enum.Enum):
    """How a tested batch reaches the base, by what the branch protection allows."""

    MOVE_BASE = "move the base to the tested commit"
    MERGE_IN_ORDER = "merge the pull requests in order at their judged heads"
    ONE_AT_A_TIME = "one pull request at a time, updated and judged before its merge"


def land_way(*, strict: bool, may_move_base: bool) -> LandWay:
    """`strict`: the branch requires up-to-date heads; `may_move_base`: the App may push
    to the base (no required reviews in its way, not excluded from pushing). On a strict
    branch the App may not push to, a batch's combination cannot be what lands: each pull
    request must be updated with the base itself, so the queue stays serial."""
    if may_move_base:
        return LandWay.MOVE_BASE
    if not strict:
        return LandWay.MERGE_IN_ORDER
    return LandWay.ONE_AT_A_TIME


def batching_on(batch_size: int, parallel_checks: int, way: LandWay) -> bool:
    """Whether the planner runs the queue: batches above 1 or speculative checks asked
    for, where a tested combination can land. Both at 1 is the serial queue."""
    return (batch_size > 1 or parallel_checks > 1) and way is not LandWay.ONE_AT_A_TIME
