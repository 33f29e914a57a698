"""The batch planner, move by move, on plain data."""

from __future__ import annotations

import pytest

from bot.merging.batching import (
    Batch,
    Discard,
    Evict,
    FailedCheck,
    Form,
    Land,
    LandWay,
    Priority,
    QueuedPull,
    QueueState,
    apply,
    batching_on,
    combined_files,
    culprit,
    failure_text,
    land_way,
    plan,
    queue_order,
)
from bot.storage.base import CheckResult


def pull(number: int, *files: str, priority: Priority = Priority.NORMAL) -> QueuedPull:
    return QueuedPull(number, number, frozenset(files or {f"f{number}"}), priority=priority)


def state(
    *pulls: QueuedPull, batches: tuple[Batch, ...] = (), size: int = 2, parallel: int = 1
) -> QueueState:
    return QueueState("base", pulls, batches, size, parallel)


def test_forms_batches_up_to_the_parallel_checks_each_on_the_one_ahead() -> None:
    moves = plan(state(*(pull(n) for n in range(1, 6)), size=2, parallel=2))
    assert moves == (Form((1, 2), frozenset()), Form((3, 4), frozenset()))


def test_a_full_queue_forms_nothing_more() -> None:
    running = (Batch(1, (1, 2), "base", "t1"),)
    assert plan(state(pull(1), pull(2), pull(3), batches=running, parallel=1)) == ()


def test_forms_only_the_unbatched() -> None:
    running = (Batch(1, (1, 2), "base", "t1"),)
    moves = plan(state(pull(1), pull(2), pull(3), batches=running, parallel=2))
    assert moves == (Form((3,), frozenset()),)


def test_sizes_below_one_read_as_one() -> None:
    moves = plan(state(pull(1), pull(2), size=0, parallel=0))
    assert moves == (Form((1,), frozenset()),)


def test_priority_orders_the_batches_then_queue_order() -> None:
    pulls = (pull(1), pull(2, priority=Priority.HIGH), pull(3, priority=Priority.URGENT), pull(4))
    assert [p.number for p in queue_order(pulls)] == [3, 2, 1, 4]
    assert plan(state(*pulls, size=2))[0] == Form((3, 2), frozenset())


def test_independent_changes_need_no_re_read() -> None:
    assert combined_files([pull(1, "a"), pull(2, "b")], frozenset()) == frozenset()


def test_files_two_members_change_are_re_read() -> None:
    members = [pull(1, "a", "shared"), pull(2, "b", "shared"), pull(3, "c")]
    assert combined_files(members, frozenset()) == {"shared"}


def test_files_a_batch_ahead_changes_are_re_read() -> None:
    assert combined_files([pull(1, "a", "b")], frozenset({"b", "z"})) == {"b"}


def test_files_the_base_changed_since_are_re_read() -> None:
    changed = QueuedPull(1, 1, frozenset({"a", "b"}), base_changed=frozenset({"b"}))
    assert combined_files([changed], frozenset()) == {"b"}


def test_a_stacked_batch_re_reads_what_the_one_ahead_also_changes() -> None:
    moves = plan(state(pull(1, "x"), pull(2, "x"), size=1, parallel=2))
    assert moves == (Form((1,), frozenset()), Form((2,), frozenset({"x"})))


def test_a_passed_front_lands_and_the_next_passed_one_too() -> None:
    batches = (
        Batch(1, (1,), "base", "t1", check=CheckResult.PASSED),
        Batch(2, (2,), "t1", "t2", check=CheckResult.PASSED),
        Batch(3, (3,), "t2", "t3"),
    )
    moves = plan(state(pull(1), pull(2), pull(3), batches=batches, parallel=3))
    assert moves == (Land(1, (1,), "t1"), Land(2, (2,), "t2"))


def test_a_passed_batch_behind_a_running_front_waits() -> None:
    batches = (Batch(1, (1,), "base", "t1"), Batch(2, (2,), "t1", "t2", check=CheckResult.PASSED))
    assert plan(state(pull(1), pull(2), batches=batches, parallel=2)) == ()


def test_a_green_check_waits_for_the_judges() -> None:
    batches = (Batch(1, (1,), "base", "t1", check=CheckResult.PASSED, review=CheckResult.PENDING),)
    assert plan(state(pull(1), batches=batches)) == ()


def test_a_failed_single_pull_request_is_evicted_and_the_ones_behind_rebuilt() -> None:
    failure = FailedCheck("ci / test", "https://ci/run/1")
    batches = (
        Batch(1, (1,), "base", "t1", check=CheckResult.FAILED, failure=failure),
        Batch(2, (2,), "t1", "t2", check=CheckResult.PASSED),
    )
    moves = plan(state(pull(1), pull(2), batches=batches, size=1, parallel=2))
    reason = "the `ci / test` check failed on the queue's batch of #1: https://ci/run/1"
    assert moves == (
        Discard(1, "batch 1 failed"),
        Discard(2, "batch 1 failed"),
        Evict(1, reason),
        Form((2,), frozenset()),
    )


def test_a_failure_citing_one_pull_requests_file_evicts_it_alone() -> None:
    failure = FailedCheck("ci / test", "", frozenset({"b.py"}))
    batches = (Batch(1, (1, 2, 3), "base", "t1", check=CheckResult.FAILED, failure=failure),)
    moves = plan(state(pull(1, "a.py"), pull(2, "b.py"), pull(3, "c.py"), batches=batches, size=3))
    assert moves[1] == Evict(
        2, "the `ci / test` check failed on the queue's batch of #1, #2, #3 (cites `b.py`)"
    )
    assert moves[2] == Form((1, 3), frozenset())


def test_a_failure_citing_a_file_two_changed_is_bisected() -> None:
    failure = FailedCheck("ci / test", "", frozenset({"shared"}))
    members = (pull(1, "shared"), pull(2, "shared"), pull(3, "c"), pull(4, "d"))
    batches = (Batch(7, (1, 2, 3, 4), "base", "t1", check=CheckResult.FAILED, failure=failure),)
    moves = plan(state(*members, batches=batches, size=4, parallel=1))
    assert moves == (
        Discard(7, "batch 7 failed"),
        Form((1, 2), frozenset({"shared"}), split_from=7),
        Form((3, 4), frozenset(), split_from=7),
    )


def test_a_failure_without_citations_is_bisected_even_beyond_the_parallel_checks() -> None:
    batches = (Batch(7, (1, 2, 3), "base", "t1", check=CheckResult.FAILED),)
    moves = plan(state(pull(1), pull(2), pull(3), pull(4), batches=batches, size=3, parallel=1))
    assert moves == (
        Discard(7, "batch 7 failed"),
        Form((1,), frozenset(), split_from=7),
        Form((2, 3), frozenset(), split_from=7),
    )


def test_a_combination_the_judges_did_not_accept_fails_the_batch() -> None:
    batches = (Batch(1, (1,), "base", "t1", check=CheckResult.PASSED, review=CheckResult.FAILED),)
    moves = plan(state(pull(1), batches=batches))
    assert moves[-1] == Evict(1, "the `judge` check failed on the queue's batch of #1")


def test_a_moved_base_discards_every_batch() -> None:
    batches = (Batch(1, (1,), "old", "t1", check=CheckResult.PASSED), Batch(2, (2,), "t1", "t2"))
    moves = plan(state(pull(1), pull(2), batches=batches, size=2, parallel=1))
    assert moves == (
        Discard(1, "the base branch moved"),
        Discard(2, "the base branch moved"),
        Form((1, 2), frozenset()),
    )


def test_a_broken_chain_discards_from_the_break() -> None:
    batches = (Batch(1, (1,), "base", "t1"), Batch(2, (2,), "elsewhere", "t2"))
    moves = plan(state(pull(1), pull(2), batches=batches, size=1, parallel=2))
    assert moves == (Discard(2, "the batch ahead was rebuilt"), Form((2,), frozenset()))


def test_a_member_that_left_discards_its_batch_and_those_behind() -> None:
    batches = (
        Batch(1, (1,), "base", "t1"),
        Batch(2, (2, 3), "t1", "t2"),
        Batch(3, (4,), "t2", "t3"),
    )
    moves = plan(state(pull(1), pull(2), pull(4), batches=batches, size=2, parallel=3))
    assert moves == (
        Discard(2, "#3 left the queue"),
        Discard(3, "#3 left the queue"),
        Form((2, 4), frozenset()),
    )


def test_an_urgent_arrival_restarts_the_batches_without_an_urgent_one() -> None:
    urgent = pull(9, priority=Priority.URGENT)
    batches = (
        Batch(1, (8,), "base", "t1"),
        Batch(2, (1, 2), "t1", "t2"),
    )
    pulls = (pull(1), pull(2), pull(8, priority=Priority.URGENT), urgent)
    moves = plan(state(*pulls, batches=batches, size=2, parallel=2))
    assert moves == (Discard(2, "restarted for the urgent #9"), Form((9, 1), frozenset()))


def test_an_urgent_pull_request_already_batched_restarts_nothing() -> None:
    batches = (Batch(1, (9,), "base", "t1"),)
    assert plan(state(pull(9, priority=Priority.URGENT), batches=batches)) == ()


def test_high_priority_does_not_restart() -> None:
    batches = (Batch(1, (1,), "base", "t1"),)
    assert plan(state(pull(1), pull(2, priority=Priority.HIGH), batches=batches)) == ()


def test_culprit_needs_one_member_alone() -> None:
    members = [pull(1, "a"), pull(2, "b")]
    assert culprit(members, None) is None
    assert culprit(members, FailedCheck("ci", files=frozenset({"z"}))) is None
    assert culprit(members, FailedCheck("ci", files=frozenset({"a", "b"}))) is None
    assert culprit(members, FailedCheck("ci", files=frozenset({"a", "z"}))) == members[0]


def test_failure_text_without_a_recorded_failure_names_ci() -> None:
    batch = Batch(1, (1, 2), "base", "t1", check=CheckResult.FAILED)
    assert failure_text(batch) == "the `CI` check failed on the queue's batch of #1, #2"


def test_apply_gives_the_state_the_plan_assumed() -> None:
    batches = (
        Batch(1, (1,), "base", "t1", check=CheckResult.PASSED),
        Batch(2, (2,), "t1", "t2", check=CheckResult.FAILED),
    )
    before = state(pull(1), pull(2), pull(3), batches=batches, size=1, parallel=1)
    moves = plan(before)
    assert moves == (
        Land(1, (1,), "t1"),
        Discard(2, "batch 2 failed"),
        Evict(2, "the `CI` check failed on the queue's batch of #2"),
        Form((3,), frozenset()),
    )
    built = {3: Batch(5, (3,), "t1", "t5")}
    after = apply(before, moves, built)
    assert after.base == "t1"
    assert [p.number for p in after.pulls] == [3]
    assert after.batches == (built[3],)
    assert plan(after) == ()


@pytest.mark.parametrize(
    ("strict", "may_move_base", "way"),
    [
        (True, True, LandWay.MOVE_BASE),
        (False, True, LandWay.MOVE_BASE),
        (False, False, LandWay.MERGE_IN_ORDER),
        (True, False, LandWay.ONE_AT_A_TIME),
    ],
)
def test_land_way_follows_the_branch_protection(
    strict: bool, may_move_base: bool, way: LandWay
) -> None:
    assert land_way(strict=strict, may_move_base=may_move_base) is way


@pytest.mark.parametrize(
    ("size", "parallel", "way", "on"),
    [
        (1, 1, LandWay.MOVE_BASE, False),
        (2, 1, LandWay.MOVE_BASE, True),
        (1, 2, LandWay.MERGE_IN_ORDER, True),
        (4, 3, LandWay.ONE_AT_A_TIME, False),
    ],
)
def test_batching_is_on_only_when_asked_for_and_possible(
    size: int, parallel: int, way: LandWay, on: bool
) -> None:
    assert batching_on(size, parallel, way) is on
