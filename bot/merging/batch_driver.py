"""The App's queue with batches: one step for a whole queue, by the worker holding its head.

A queue whose head asks for batches (`merge.batch_size` or `merge.parallel_checks` above
1) on a base branch where a tested combination can land (`BaseFacts.way`) is worked as a
whole: the lease on its head entry is the lease on the queue, and every batch write is
conditional on it (`Storage.open_merge_batch`), so one replica acts.

    read the base (head, protection) and the batches in flight
    a batch still `building` ─────────> discarded (its worker died while building it)
    each batch testing ───────────────> its required checks on the tip (`batch_checks`)
                                        and the judges' verdict there (`batch_review`)
    the queue as the planner sees it ─> `batching.plan` ─> the moves, in order:
      Discard  the batch ends, its queue branch is deleted; members keep their places
      Land     the base moves to the tested tip (or the members are merged in order at
               their judged shas); members leave merged, with a comment
      Evict    the culprit leaves with a comment naming the check that failed and where
      Form     members checked on GitHub (open, head = judged sha), the branch built on
               the tip ahead, the tip's `judge` run started
    the head entry is settled last: merged or dropped when it left, else it waits for
    the next poll (a webhook about the tip, the base or a member makes it due at once)

A move GitHub refuses (the base moved under a land, a conflict while building, a member
that changed) ends the step early: the head is due at once and the next step plans
again from what GitHub then says.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta

from bot.gfm import COMMENT_LIMIT, app_line, code, finish, short_sha
from bot.merging import batching
from bot.merging.batch_checks import required_checks
from bot.merging.batch_files import queued_pulls
from bot.merging.batch_review import review_of, review_tip, worker_context
from bot.merging.batching import (
    Batch,
    Discard,
    Evict,
    Form,
    Land,
    LandWay,
    Move,
    QueueState,
)
from bot.merging.driver import delete_merged_branch, run_step
from bot.merging.eligibility import PullFacts
from bot.merging.queue_branch import BaseFacts, Conflict, QueueBranchCalls
from bot.merging.step import Drop, MarkMerged, gone
from bot.merging.transitions import settle_for
from bot.services import ServiceHub
from bot.storage.base import (
    BatchState,
    BatchUpdate,
    CheckResult,
    MergeBatch,
    MergeEntry,
    MergeSettle,
    MergeStatus,
    NewMergeBatch,
    QueueLease,
    Storage,
)

log = logging.getLogger(__name__)

_LINE = 1_000


class HeadLeaseLost(Exception):
    """The queue's head lease is no longer this worker's: it stops acting."""


def wants_batches(entry: MergeEntry) -> bool:
    options = entry.options
    return options.batch_size > 1 or options.parallel_checks > 1


def landed_text(sha: str, base: str, batch: MergeBatch, branch_note: str) -> str:
    together = ", ".join(f"#{number}" for number in batch.numbers)
    text = (
        f"Merged {short_sha(sha)}, the judged commit, into {code(base)} with the merge "
        f"queue's batch {batch.id} ({together}), tested together on "
        f"{short_sha(batch.tip)}."
    )
    if branch_note:
        text += f" {branch_note}"
    return finish(app_line(text, _LINE), COMMENT_LIMIT)


def evicted_text(base: str, reason: str) -> str:
    text = (
        f"Left the merge queue for {code(base)}: {reason}. The other pull requests go on; "
        "a new push is judged again and, accepted, queued again."
    )
    return finish(app_line(text, _LINE), COMMENT_LIMIT)


@dataclass(frozen=True)
class Told:
    """A member that left, to be told why (`batch`: the batch it landed with)."""

    entry: MergeEntry
    status: MergeStatus
    reason: str
    batch: MergeBatch | None


def planner_batch(batch: MergeBatch) -> Batch:
    failure = batch.failure
    return Batch(
        id=batch.id,
        members=batch.numbers,
        built_on=batch.built_on,
        tip=batch.tip,
        check=batch.ci,
        review=batch.review,
        failure=None
        if failure is None
        else batching.FailedCheck(failure.check, failure.detail, frozenset(failure.files)),
    )


@dataclass
class QueueRun:
    """One step of one queue (the module docstring)."""

    head: MergeEntry
    hub: ServiceHub
    storage: Storage
    clock: Callable[[], datetime]
    calls: QueueBranchCalls
    facts: BaseFacts
    lease: QueueLease
    actor: str
    batches: dict[int, MergeBatch] = field(default_factory=dict)
    entries: dict[int, MergeEntry] = field(default_factory=dict)
    base: str = ""
    head_left: Drop | MarkMerged | None = None
    told: list[Told] = field(default_factory=list)
    again_now: bool = False

    @property
    def repository(self) -> str:
        return self.head.repository

    @property
    def base_branch(self) -> str:
        return self.head.base_branch

    async def update(self, batch: MergeBatch, update: BatchUpdate) -> None:
        if not await self.storage.update_merge_batch(batch.id, update, self.lease, self.clock()):
            raise HeadLeaseLost(f"batch {batch.id}")

    # -- reading -------------------------------------------------------------------

    async def refresh(self, batch: MergeBatch) -> MergeBatch:
        """A building batch is discarded; a testing one learns its checks and verdict."""
        if batch.state is BatchState.BUILDING:
            await self.discard(batch, "its worker stopped while building it")
            return batch
        ci, failure = batch.ci, batch.failure
        if ci is CheckResult.PENDING:
            runs, statuses = await self.calls.checks_on(batch.tip)
            report = required_checks(self.facts.required_checks, runs, statuses)
            ci, failure = report.result, report.failure
        review = batch.review
        if review is CheckResult.PENDING and ci is not CheckResult.FAILED:
            review, judged = await review_of(self.storage, batch)
            if review is CheckResult.PENDING:
                # The judgment started at its forming never finished (its worker died,
                # the model failed): asked again, by this step.
                await self.review(batch)
                review, judged = await review_of(self.storage, batch)
            failure = failure or judged
        if (ci, review, failure) != (batch.ci, batch.review, batch.failure):
            await self.update(batch, BatchUpdate(ci=ci, review=review, failure=failure))
        refreshed = replace(batch, ci=ci, review=review, failure=failure)
        self.batches[batch.id] = refreshed
        return refreshed

    # -- the moves -----------------------------------------------------------------

    async def carry_out(self, move: Move) -> bool:
        """False when GitHub refused and the rest of the plan no longer holds."""
        if isinstance(move, Discard):
            await self.discard(self.batches[move.batch], move.reason)
            return True
        if isinstance(move, Land):
            return await self.land(self.batches[move.batch])
        if isinstance(move, Evict):
            await self.leave(move.number, MergeStatus.DROPPED, move.reason)
            return True
        return await self.form(move)

    async def discard(self, batch: MergeBatch, reason: str) -> None:
        failed = CheckResult.FAILED in (batch.ci, batch.review)
        state = BatchState.FAILED if failed else BatchState.DISCARDED
        await self.update(batch, BatchUpdate(state=state, reason=reason))
        if failed:
            self.hub.services.metrics.merge_queue_batch_failures.inc()
        self.batches.pop(batch.id, None)
        building = batch.state is BatchState.BUILDING
        await self.calls.delete(self.base_branch, batch.id, building=building)

    async def land(self, batch: MergeBatch) -> bool:
        """The base reaches the batch's tested tree: moved there, or the members merged in
        order. A refused move of a base that did not move (a rule the protection shown
        did not say) falls back to the merges; a member GitHub refuses to merge leaves the
        queue, or the same batch would be built and tested again for ever."""
        if self.facts.way is LandWay.MOVE_BASE:
            moved = await self.calls.move_base(self.base_branch, batch.tip)
            if moved.status == 200:
                for number, _ in batch.members:
                    await self.leave(number, MergeStatus.MERGED, "landed", batch=batch)
                await self._landed(batch)
                return True
            now = await self.calls.base_facts(self.base_branch)
            if now.head != batch.built_on:
                await self.discard(batch, f"the base moved: {moved.message}")
                return False
            log.info("base %s not moved (%s): merging in order", self.base_branch, moved.message)
        for number, sha in batch.members:
            answer = await self.calls.merge(number, sha, self.entries[number].method)
            if answer.status != 200:
                await self.discard(batch, f"#{number} was not merged: {answer.message}")
                why = f"GitHub refused to merge it ({answer.status}): {answer.message}"
                await self.leave(number, MergeStatus.DROPPED, why)
                return False
            await self.leave(number, MergeStatus.MERGED, "landed", batch=batch)
        await self._landed(batch)
        return True

    async def _landed(self, batch: MergeBatch) -> None:
        reason = f"landed at {short_sha(batch.tip)}"
        await self.update(batch, BatchUpdate(state=BatchState.LANDED, reason=reason))
        self.batches.pop(batch.id, None)
        self.base = batch.tip
        await self.calls.delete(self.base_branch, batch.id)

    async def leave(
        self, number: int, status: MergeStatus, reason: str, *, batch: MergeBatch | None = None
    ) -> None:
        """The member leaves the queue (the head last of all, as the step's settle); the
        comment is said only by the step whose record ended the entry."""
        entry = self.entries[number]
        told = Told(entry, status, reason, batch)
        if batch is not None:
            sha = short_sha(entry.judged_sha or "")
            reason = f"merged at the judged commit {sha} with batch {batch.id}"
        if entry.id == self.head.id:
            self.head_left = MarkMerged(reason) if status is MergeStatus.MERGED else Drop(reason)
            self.told.append(told)
            return
        ended = await self.storage.leave_merge_queue(
            self.repository,
            number,
            status=status,
            actor=self.actor,
            reason=reason,
            now=self.clock(),
        )
        if ended is not None:
            await self.tell(told)

    async def tell(self, told: Told) -> None:
        entry, number = told.entry, told.entry.pull_number
        if told.batch is None:
            await self.calls.comment(number, evicted_text(self.base_branch, told.reason))
            return
        note = ""
        if entry.options.delete_branch:
            pull = PullFacts.from_json(await self.calls.pull(number))
            note = await delete_merged_branch(self.calls, entry, pull)
        sha = entry.judged_sha or ""
        await self.calls.comment(number, landed_text(sha, self.base_branch, told.batch, note))

    async def form(self, move: Form) -> bool:
        for number in move.members:
            entry = self.entries[number]
            pull = PullFacts.from_json(await self.calls.pull(number))
            left = gone(entry, pull)
            if left is None and pull.head_sha != entry.judged_sha:
                left = Drop("new commits after the judged one; they are judged again")
            if left is not None:
                await self.leave(number, MergeStatus.DROPPED, left.reason)
                return False
        on = self._tip_ahead()
        members = tuple((n, self.entries[n].judged_sha or "") for n in move.members)
        new = NewMergeBatch(
            self.repository,
            self.base_branch,
            members,
            on,
            tuple(sorted(move.review_files)),
            move.split_from,
        )
        opened = await self.storage.open_merge_batch(new, self.lease, self.clock())
        if opened is None:
            raise HeadLeaseLost("opening a batch")
        self.batches[opened.id] = opened
        metrics = self.hub.services.metrics
        metrics.merge_queue_batches.inc()
        if move.split_from is not None:
            metrics.merge_queue_batch_splits.inc()
        built = await self.calls.build(self.base_branch, opened.id, on, members)
        if isinstance(built, Conflict):
            await self.discard(opened, f"#{built.number} conflicts")
            why = (
                f"it conflicts with {code(self.base_branch)} and the pull requests ahead"
                f" of it ({built.message})"
            )
            await self.leave(built.number, MergeStatus.DROPPED, why)
            return False
        try:
            await self.update(opened, BatchUpdate(state=BatchState.TESTING, tip=built.tip))
        except HeadLeaseLost:
            # Another worker took the queue meanwhile and ended this batch: the branch
            # built after that must not stay for CI to test.
            await self.calls.delete(self.base_branch, opened.id)
            raise
        tested = replace(opened, tip=built.tip, state=BatchState.TESTING)
        self.batches[opened.id] = tested
        await self.review(tested)
        return True

    async def review(self, batch: MergeBatch) -> None:
        context = worker_context(
            self.storage, self.hub, self.clock, batch, self.head.installation_id
        )
        await review_tip(context, self.calls, batch, await self.calls.default_branch())

    def _tip_ahead(self) -> str:
        testing = [b for b in self.batches.values() if b.state is BatchState.TESTING]
        return max(testing, key=lambda b: b.id).tip if testing else self.base

    # -- the step --------------------------------------------------------------------

    async def run(
        self, in_flight: Sequence[MergeBatch], batch_size: int, parallel_checks: int
    ) -> None:
        """`in_flight`: the queue's batches as storage has them (`Storage.merge_batches`),
        read under the lease that alone writes them."""
        self.batches = {batch.id: batch for batch in in_flight}
        testing = []
        for batch in in_flight:
            refreshed = await self.refresh(batch)
            if refreshed.state is BatchState.TESTING:
                testing.append(refreshed)
        queue = await self.storage.merge_queue(self.repository, self.base_branch)
        self.entries = {entry.pull_number: entry for entry in queue if entry.judged_sha}
        pulls = await queued_pulls(self.storage, self.calls, list(self.entries.values()), self.base)
        state = QueueState(
            base=self.base,
            pulls=tuple(pulls),
            batches=tuple(planner_batch(batch) for batch in testing),
            batch_size=batch_size,
            parallel_checks=parallel_checks,
        )
        for move in batching.plan(state):
            if not await self.carry_out(move):
                self.again_now = True
                break

    async def settle(self, retry_delay_seconds: float) -> None:
        now = self.clock()
        if self.head_left is not None:
            settled = await self.storage.settle_merge(
                self.head.id, self.lease.worker_id, settle_for(self.head_left, self.actor), now
            )
        else:
            due = now if self.again_now else now + _seconds(retry_delay_seconds)
            waiting = MergeSettle(
                MergeStatus.PENDING,
                "the queue's batches are being tested" if self.batches else "waiting",
                self.actor,
                next_attempt_at=due,
            )
            settled = await self.storage.settle_merge(
                self.head.id, self.lease.worker_id, waiting, now
            )
        if settled:
            for told in self.told:
                await self.tell(told)


def _seconds(value: float) -> timedelta:
    return timedelta(seconds=value)


async def run_batch_step(
    entry: MergeEntry,
    hub: ServiceHub,
    storage: Storage,
    clock: Callable[[], datetime],
    worker_id: str,
) -> None:
    """The queue of `entry` (its claimed head), batched where it can be; else the serial
    step (`driver.run_step`), which a strict branch the App may not push to keeps."""
    services = hub.services
    client = await services.github.installation_client(entry.installation_id)
    calls = QueueBranchCalls(client, entry.repository)
    facts = await calls.base_facts(entry.base_branch)
    options = entry.options
    on = batching.batching_on(options.batch_size, options.parallel_checks, facts.way)
    in_flight = await storage.merge_batches(entry.repository, entry.base_branch)
    if not on and not in_flight:
        await run_step(entry, services, storage, clock, worker_id)
        return
    run = QueueRun(
        head=entry,
        hub=hub,
        storage=storage,
        clock=clock,
        calls=calls,
        facts=facts,
        lease=QueueLease(entry.id, worker_id),
        actor=f"merge queue ({worker_id})",
        base=facts.head,
    )
    try:
        if on:
            await run.run(in_flight, options.batch_size, options.parallel_checks)
        else:
            # The protection no longer lets a combination land (or batches were turned
            # off): the batches left are discarded and the queue goes on one at a time.
            for batch in in_flight:
                await run.discard(batch, "batches stopped for this branch")
            run.again_now = True
    except HeadLeaseLost as lost:
        log.info("merge queue %s of %s: lease lost (%s)", entry.base_branch, entry.repository, lost)
        return
    await run.settle(services.merge.merge_queue_retry_delay_ms / 1000)
