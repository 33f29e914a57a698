"""The planner driven through whole queues: what lands, what it costs, and the targets of
issue 25 (the same simulation `benchmarks/merge_queue.py --model` prints)."""

from __future__ import annotations

import itertools

import pytest

from bot.merging.batching import LandWay, Priority
from bot.storage.base import CheckResult
from tests.support.merge_simulation import Scenario, simulate, simulate_serial


def assert_sound(scenario: Scenario) -> None:
    """Every pull request that can land lands once; the failing ones leave; the base only
    reached trees CI tested green and the judges accepted (simulate raises otherwise)."""
    figures = simulate(scenario)
    everyone = set(range(1, scenario.pulls + 1))
    assert sorted(figures.merged) == sorted(set(figures.merged))
    assert set(figures.merged) | set(figures.evicted) == everyone
    assert not set(figures.merged) & set(figures.evicted)
    assert set(figures.evicted) <= scenario.failing | scenario.rejected
    for before, after in itertools.pairwise(figures.landed):
        assert before < after


@pytest.mark.parametrize("size", [1, 2, 3, 4])
@pytest.mark.parametrize("parallel", [1, 2, 3])
@pytest.mark.parametrize("cited", [False, True])
def test_every_small_queue_drains_soundly(size: int, parallel: int, cited: bool) -> None:
    for count in range(1, 6):
        numbers = range(1, count + 1)
        for failing_count in range(count + 1):
            for failing in itertools.combinations(numbers, failing_count):
                scenario = Scenario(
                    count,
                    size,
                    parallel,
                    failing=frozenset(failing),
                    shared=frozenset(numbers[::2]),
                    cited=cited,
                )
                assert_sound(scenario)


def test_rejected_combinations_leave_and_the_rest_land() -> None:
    scenario = Scenario(6, 3, 2, shared=frozenset({1, 2, 5}), rejected=frozenset({2}))
    figures = simulate(scenario)
    assert set(figures.evicted) == {2}
    assert "`judge` check failed" in figures.evicted[2]
    assert_sound(scenario)


def test_a_push_to_the_base_discards_the_batches_and_they_are_tested_again() -> None:
    scenario = Scenario(8, 4, 2, base_pushes=(0.5,))
    figures = simulate(scenario)
    assert figures.discarded == 2
    assert sorted(figures.merged) == list(range(1, 9))
    assert all("other-0.md" in tree for tree in figures.landed)
    assert figures.drain == 1.5


def test_an_urgent_late_arrival_restarts_and_lands_first() -> None:
    scenario = Scenario(
        9, 4, 2, arrivals={9: 0.5}, priority={9: Priority.URGENT}, land=LandWay.MERGE_IN_ORDER
    )
    figures = simulate(scenario)
    assert figures.merged[0] == 9
    assert figures.discarded == 2


def test_a_high_priority_late_arrival_waits_for_the_running_batches() -> None:
    scenario = Scenario(9, 4, 2, arrivals={9: 0.5}, priority={9: Priority.HIGH})
    figures = simulate(scenario)
    assert figures.merged[-1] == 9
    assert figures.discarded == 0


def test_the_serial_baseline_is_about_twenty_checks() -> None:
    figures = simulate_serial(Scenario())
    assert figures.drain == 20
    assert figures.ci_runs == 39


def test_the_serial_baseline_re_judges_an_updated_head_whose_files_the_base_changed() -> None:
    figures = simulate_serial(Scenario(3, shared=frozenset({1, 3}), failing=frozenset({2})))
    assert figures.merged == [1, 3]
    assert figures.model_calls == 4


def test_targets_batch_four_without_failures() -> None:
    for parallel in (1, 2, 3):
        figures = simulate(
            Scenario(batch_size=4, parallel_checks=parallel, shared=frozenset({3, 11}))
        )
        assert figures.drain <= 6
        assert figures.per_merged(figures.model_calls) <= 1.2
        assert len(figures.merged) == 20


def test_targets_batch_four_with_ten_percent_failing() -> None:
    for parallel, cited in itertools.product((1, 2, 3), (False, True)):
        scenario = Scenario(
            batch_size=4,
            parallel_checks=parallel,
            failing=frozenset({6, 12}),
            shared=frozenset({3, 11}),
            cited=cited,
        )
        figures = simulate(scenario)
        assert figures.drain <= 10
        assert figures.per_merged(figures.model_calls) <= 1.2
        assert set(figures.evicted) == {6, 12}
        assert_sound(scenario)


def test_figures_of_an_empty_run() -> None:
    figures = simulate(Scenario(0))
    assert figures.per_merged(figures.ci_runs) == float("inf")
    assert figures.drain == 0


def test_every_pull_request_sharing_a_file_costs_re_reads() -> None:
    assert simulate(Scenario(4, 2, shared=frozenset(range(1, 5)))).model_calls == 6


def test_the_simulation_refuses_a_planner_that_lands_an_untested_tree(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from bot.merging import batching
    from tests.support import merge_simulation

    def hasty(state: batching.QueueState) -> tuple[batching.Move, ...]:
        moves = batching.plan(state)
        front = state.batches[0] if state.batches else None
        if front is not None and front.check is CheckResult.PENDING:
            return (batching.Land(front.id, front.members, front.tip),)
        return moves

    monkeypatch.setattr(merge_simulation, "plan", hasty)
    with pytest.raises(AssertionError, match="not tested green"):
        simulate(Scenario(2, 2))
