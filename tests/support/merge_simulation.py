"""The App's merge queue against a model of what costs time on GitHub, in units of D.

Shared by `benchmarks/merge_queue.py --model` and tests/merging/test_batch_simulation.py,
so the figures the benchmark prints and the guarantees the tests hold come from one
simulation driving the real planner (`bot.merging.batching.plan`).

The model: every new head (a pull request's, an update-branch merge, a queue branch)
runs the required CI check, which takes D and is the only thing that costs time (the
judges, GitHub's API and the queue's own work take seconds). All pull requests open at 0
on the same base commit. A *failing* pull request breaks CI when it is put together with
another change: on a base that moved since it was opened, or in a batch with others (a
semantic conflict: green on its own head, red once combined, which is what a merge queue
is for); landed alone on the base it was written against, it passes. Pull requests in `shared`
also change `README.md`, so their combinations (or one after another has landed) are
re-read by the judges.

Counted, per merged pull request:
  CI runs       every pull request head once, each update-branch head, each batch
  model calls   each pull request judged once, each re-judgment of an updated head whose
                files the base changed (otherwise the verdict cache answers), each batch
                whose combination the judges re-read
  GitHub calls  serial: a pull read per step, update-branch, the merge, the comment;
                batched: create the queue branch, one merge per member into it, a compare
                for what the base changed, then landing (move the base: update-ref;
                in order: a merge per member), a comment per member, deleting the queue
                branch; a discarded batch deletes its branch; an evicted pull request gets
                a comment and a label
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from bot.merging.batching import (
    Batch,
    Discard,
    Evict,
    FailedCheck,
    Form,
    Land,
    LandWay,
    Move,
    Priority,
    QueuedPull,
    QueueState,
    apply,
    plan,
)
from bot.storage.base import CheckResult

SHARED_FILE = "README.md"
# Far more plans than any queue of these sizes needs: a planner that stops making
# progress fails the simulation instead of hanging it.
PLAN_LIMIT = 10_000


def own_file(number: int) -> str:
    return f"docs/pull-{number}.md"


@dataclass(frozen=True)
class Scenario:
    pulls: int = 20
    batch_size: int = 1
    parallel_checks: int = 1
    failing: frozenset[int] = frozenset()
    shared: frozenset[int] = frozenset()
    cited: bool = False
    """A failing CI run's annotations name the failing pull request's own file."""
    land: LandWay = LandWay.MOVE_BASE
    arrivals: Mapping[int, float] = field(default_factory=dict)
    """When a pull request joins the queue (default 0)."""
    priority: Mapping[int, Priority] = field(default_factory=dict)
    base_pushes: tuple[float, ...] = ()
    """When someone else pushes to the base (a change of its own, `other-<t>.md`)."""
    rejected: frozenset[int] = frozenset()
    """Pull requests whose combination with another the judges do not accept."""


@dataclass
class Figures:
    drain: float = 0.0
    merged: list[int] = field(default_factory=list)
    evicted: dict[int, str] = field(default_factory=dict)
    ci_runs: int = 0
    model_calls: int = 0
    api_calls: int = 0
    batches: int = 0
    splits: int = 0
    discarded: int = 0
    landed: list[frozenset[str]] = field(default_factory=list)
    """The base's tree after each land, as the set of changes it holds."""

    def per_merged(self, count: int) -> float:
        return count / len(self.merged) if self.merged else float("inf")


def files_of(number: int, scenario: Scenario) -> frozenset[str]:
    shared = {SHARED_FILE} if number in scenario.shared else set()
    return frozenset({own_file(number), *shared})


def _breaks(below: frozenset[str], members: tuple[int, ...], scenario: Scenario) -> str | None:
    """The file of a failing member put together with anything else, or None."""
    for number in members:
        if number in scenario.failing and (below or len(members) > 1):
            return own_file(number)
    return None


@dataclass
class _Sim:
    scenario: Scenario
    figures: Figures = field(default_factory=Figures)
    trees: dict[str, frozenset[str]] = field(default_factory=lambda: {"b0": frozenset()})
    green: set[frozenset[str]] = field(default_factory=set)
    accepted: set[frozenset[str]] = field(default_factory=set)
    broken: dict[str, str | None] = field(default_factory=lambda: {"b0": None})
    """Per commit: the failing pull request's file that breaks CI there, if any."""
    pulls_in: dict[str, frozenset[int]] = field(default_factory=lambda: {"b0": frozenset()})
    reviewed: set[frozenset[tuple[str, frozenset[int]]]] = field(default_factory=set)
    """Combinations the judges read already: the verdict cache answers them again."""
    next_id: int = 1

    def tree_with(self, below: str, members: tuple[int, ...]) -> frozenset[str]:
        return self.trees[below].union(*(files_of(n, self.scenario) for n in members))


def simulate(scenario: Scenario) -> Figures:
    """Drain the queue with batches (`batch_size`, `parallel_checks`) through the planner."""
    sim = _Sim(scenario)
    figures = sim.figures
    figures.ci_runs = figures.model_calls = scenario.pulls  # each head's CI and judgment
    state = QueueState(
        "b0", (), batch_size=scenario.batch_size, parallel_checks=scenario.parallel_checks
    )
    events: list[tuple[float, int, str, int]] = []
    for number in range(1, scenario.pulls + 1):
        heapq.heappush(events, (scenario.arrivals.get(number, 0.0), 0, "arrive", number))
    for index, at in enumerate(scenario.base_pushes):
        heapq.heappush(events, (at, 1, "push", index))
    now = 0.0
    plans = 0
    while events:
        now = events[0][0]
        while events and events[0][0] == now:
            _, _, kind, value = heapq.heappop(events)
            state = _event(sim, state, kind, value, now)
        while True:
            plans += 1
            if plans > PLAN_LIMIT:
                raise AssertionError(f"no progress: {state}")
            moves = plan(_refresh(state, sim))
            if not moves:
                break
            state = _carry_out(sim, state, moves, now, events)
    if state.pulls or state.batches:
        raise AssertionError(f"the queue did not drain: {state}")
    figures.drain = now
    return figures


def _event(sim: _Sim, state: QueueState, kind: str, value: int, now: float) -> QueueState:
    scenario = sim.scenario
    if kind == "arrive":
        pull = QueuedPull(
            value,
            value,
            files_of(value, scenario),
            priority=scenario.priority.get(value, Priority.NORMAL),
        )
        return replace(state, pulls=(*state.pulls, pull))
    if kind == "push":
        tip = f"push{value}"
        sim.trees[tip] = sim.trees[state.base] | {f"other-{value}.md"}
        sim.pulls_in[tip] = sim.pulls_in[state.base]
        sim.broken[tip] = None
        return replace(state, base=tip)
    batches = []
    for batch in state.batches:
        if batch.id == value:
            batch = _checked(sim, batch)
        batches.append(batch)
    return replace(state, batches=tuple(batches))


def _checked(sim: _Sim, batch: Batch) -> Batch:
    tree = sim.trees[batch.tip]
    broken = sim.broken[batch.tip]
    if broken is None:
        sim.green.add(tree)
        return replace(batch, check=CheckResult.PASSED)
    cited = frozenset({broken}) if sim.scenario.cited else frozenset()
    return replace(
        batch, check=CheckResult.FAILED, failure=FailedCheck("ci / test", "run 1", cited)
    )


def _refresh(state: QueueState, sim: _Sim) -> QueueState:
    """What the base changed since each pull request left it (all left `b0`)."""
    changed = sim.trees[state.base]
    pulls = tuple(replace(pull, base_changed=changed & pull.files) for pull in state.pulls)
    return replace(state, pulls=pulls)


def _carry_out(
    sim: _Sim,
    state: QueueState,
    moves: tuple[Move, ...],
    now: float,
    events: list[tuple[float, int, str, int]],
) -> QueueState:
    figures = sim.figures
    built: dict[int, Batch] = {}
    base, current = state.base, list(state.batches)
    for index, move in enumerate(moves):
        if isinstance(move, Land):
            _land(sim, move)
            base = move.tip
            current = [batch for batch in current if batch.id != move.batch]
        elif isinstance(move, Evict):
            figures.evicted[move.number] = move.reason
            figures.api_calls += 2
        elif isinstance(move, Discard):
            figures.discarded += 1
            figures.api_calls += 1
            current = [batch for batch in current if batch.id != move.batch]
        else:
            batch = _build(sim, move, current[-1].tip if current else base)
            built[index] = batch
            current.append(batch)
            heapq.heappush(events, (now + 1.0, 2, "checked", batch.id))
    return apply(state, moves, built)


def _build(sim: _Sim, move: Form, below: str) -> Batch:
    figures, scenario = sim.figures, sim.scenario
    batch_id = sim.next_id
    sim.next_id += 1
    tip = f"q{batch_id}"
    tree = sim.tree_with(below, move.members)
    sim.trees[tip] = tree
    sim.pulls_in[tip] = sim.pulls_in[below] | set(move.members)
    sim.broken[tip] = sim.broken[below] or _breaks(sim.trees[below], move.members, scenario)
    figures.batches += 1
    figures.splits += move.split_from is not None
    figures.ci_runs += 1
    figures.api_calls += 2 + len(move.members)
    review = CheckResult.PASSED
    if move.review_files:
        content = _review_content(sim, below, move)
        figures.model_calls += content not in sim.reviewed
        sim.reviewed.add(content)
        if scenario.rejected & set(move.members):
            review = CheckResult.FAILED
    failure = None
    if review is CheckResult.PASSED:
        sim.accepted.add(tree)
    else:
        failure = FailedCheck("judge", "the combination", move.review_files)
    return Batch(batch_id, move.members, below, tip, review=review, failure=failure)


def _review_content(sim: _Sim, below: str, move: Form) -> frozenset[tuple[str, frozenset[int]]]:
    """What the judges read: each re-read file as the changes in the tree make it."""
    numbers = sim.pulls_in[below] | set(move.members)
    scenario = sim.scenario
    return frozenset(
        (path, frozenset(n for n in numbers if path in files_of(n, scenario)))
        for path in move.review_files
    )


def _land(sim: _Sim, move: Land) -> None:
    figures, scenario = sim.figures, sim.scenario
    tree = sim.trees[move.tip]
    if tree not in sim.green or tree not in sim.accepted:
        raise AssertionError(f"the base reached a tree not tested green and accepted: {tree}")
    figures.landed.append(tree)
    figures.merged.extend(move.members)
    per_member = 2 if scenario.land is LandWay.MERGE_IN_ORDER else 1
    figures.api_calls += per_member * len(move.members) + 1
    figures.api_calls += scenario.land is LandWay.MOVE_BASE


def simulate_serial(scenario: Scenario) -> Figures:
    """Today's queue on a branch that requires up-to-date heads: one pull request at a
    time; each one behind its base is updated, tested and judged again before its merge."""
    figures = Figures(ci_runs=scenario.pulls, model_calls=scenario.pulls)
    base: frozenset[str] = frozenset()
    now = 1.0  # every pull request's own CI ran at once
    for number in range(1, scenario.pulls + 1):
        figures.api_calls += 1
        files = files_of(number, scenario)
        if base:
            figures.api_calls += 2
            figures.ci_runs += 1
            figures.model_calls += bool(files & base)
            now += 1.0
        if _breaks(base, (number,), scenario) is not None:
            figures.evicted[number] = "the required check failed after the update"
            figures.api_calls += 2
            continue
        base = base | files
        figures.landed.append(base)
        figures.merged.append(number)
        figures.api_calls += 2
    figures.drain = now
    return figures
