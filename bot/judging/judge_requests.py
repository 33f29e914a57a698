"""What each judge is asked for one head sha: one request per rubric group of files, or,
given a window budget, as many as the judges need to read every file whole. Pure.

The window budget is the deciding judges' characters (`window_budget`), or, when their
models' contexts are known, what those contexts leave for the change once the prompt
around it is counted (`fitted_window_budget`, `WindowBudget`): a file that no longer fits
a judge whole is judged in windows, never cut.

The task's directives are the repository's standing ones, the pull request's
description, the issues it closes (when a completion rubric will read them) and what
people with write access wrote on it (bot/judging/remarks.py). Each group's review
context is the diffs of its files, the CI results on the head commit and the earlier
verdicts of its rubric on the same pull request (bot/judging/earlier.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from bot.github.types import CommitInfo, LinkedIssue, Remark
from bot.judge.checks.injection import wrap_file
from bot.judge.engine import JudgeRequest
from bot.judge.engine.context_fit import (
    RETRY_NOTE_CHARS,
    TierFit,
    fixed_chars,
    prompt_chars,
    prompt_room,
    schema_chars,
)
from bot.judge.engine.prompts import REASONING_LIMIT, compose_messages
from bot.judge.engine.review_context import CiResult, EarlierVerdict, FileDiff, ReviewContext
from bot.judge.records import JudgedFile, RubricName, TaskSpec, Tier
from bot.judge.rubrics import get_rubric
from bot.judge.rubrics.research_settings import ResearchRules
from bot.judge.settings import JudgeSettings
from bot.judging.earlier import earlier_verdicts
from bot.judging.remarks import binding_remarks
from bot.judging.repo_config import DEFAULT_MAX_FILES, RepoConfig, rubric_for
from bot.judging.target import Target, people_of
from bot.judging.windows import Part, context_reserve, part_note, room_for, split_group

LINKED_ISSUES = 3
PART_NOTE_CHARS = 800
"""The most `windows.part_note` adds to a request's directives, with its path."""
EARLIER_ROUNDS_CHARS = 2 * (REASONING_LIMIT + 1500)
"""What a tiebreaker is shown of the two rounds before it, at most (reasoning, scores,
improvements as prompts.py summarises them), planned for before they exist."""
MIN_WINDOW_CHARS = 1000
"""Windows are never planned smaller: a context that leaves less for a change is refused
by the engine, in its words, rather than split into a request per few lines."""
_PROBE_NONCE = "0" * 32


def directives_for(
    target: Target,
    config: RepoConfig,
    files: Sequence[JudgedFile],
    linked: Sequence[LinkedIssue],
    remarks: Sequence[Remark],
) -> list[str]:
    directives = list(config.task.directives)
    if target.body:
        directives.append(target.body)
    if any(rubric_for(config, f.path) is RubricName.COMPLETION for f in files):
        same = [i for i in linked if i.repository.lower() == target.repository.lower()]
        for issue in same[:LINKED_ISSUES]:
            directives.append(f"#{issue.number} {issue.title}\n\n{issue.body}".strip())
    people = people_of(target.commits or ())
    directives += binding_remarks(remarks, pull_author=target.pull_author, commit_people=people)
    return directives


@dataclass(frozen=True)
class JudgeInputs:
    """What was fetched for one head sha, as the judges will read it."""

    files: Sequence[JudgedFile]
    commits: Sequence[CommitInfo]
    directives: Sequence[str]
    sensitive: frozenset[str]
    diffs: Mapping[str, FileDiff] = field(default_factory=dict)
    ci: Sequence[CiResult] = ()
    earlier: Sequence[Mapping[str, Any]] = ()
    """The audit log's records of the same pull request, oldest first."""


def window_budget(judge_settings: JudgeSettings) -> int:
    """The characters one request may fill (`judge_requests`' `window_chars`): the largest
    `max_chars` of the configured deep and tiebreaker tiers, which decide an accept of
    what they read whole; quick's when neither is configured."""
    return max(room.max_chars for room in fitted_window_budget(judge_settings, {}).rooms)


@dataclass(frozen=True)
class TierRoom:
    """A tier that decides an accept: the characters it reads at most, and, when its
    model's context is known, the characters of prompt that context takes."""

    tier: Tier
    max_chars: int
    prompt_room: int | None = None


@dataclass(frozen=True)
class WindowBudget:
    """What one request may fill so that a deciding judge reads it whole, fitted to its
    model's context where that is known (the engine fits its prompts the same way)."""

    rooms: tuple[TierRoom, ...]

    @property
    def fitted(self) -> bool:
        return any(room.prompt_room is not None for room in self.rooms)

    def chars_for(self, rubric: RubricName, task: TaskSpec, context: ReviewContext) -> int:
        """The budget for this group's requests: the largest any deciding tier reads."""
        return max(_fitted_chars(room, rubric, task, context) for room in self.rooms)


def _fitted_chars(
    room: TierRoom, rubric: RubricName, task: TaskSpec, context: ReviewContext
) -> int:
    if room.prompt_room is None:
        return room.max_chars
    rules = get_rubric(rubric)
    least = compose_messages(
        rules, task, [], room.tier, nonce=_PROBE_NONCE, max_chars=1, context=context
    )
    planned = schema_chars(rules.response_schema()) + RETRY_NOTE_CHARS + PART_NOTE_CHARS
    if room.tier is Tier.TIEBREAKER:
        planned += EARLIER_ROUNDS_CHARS
    # The budget includes what comes off its top (`fixed_chars`), as compose_messages counts.
    chars = room.prompt_room - planned - (prompt_chars(least) - fixed_chars(least))
    return min(room.max_chars, max(MIN_WINDOW_CHARS, chars))


def file_fence(path: str) -> int:
    """What a file costs a prompt besides its text: its fence and its diff's, with the
    notes a cut or a window adds, and its line in the file list."""
    fences = len(wrap_file(path, "", _PROBE_NONCE)) + len(
        wrap_file(f"(diff) {path}", "", _PROBE_NONCE)
    )
    return fences + 2 * len(path) + 160


def fitted_window_budget(
    judge_settings: JudgeSettings, contexts: Mapping[Tier, int | None]
) -> WindowBudget:
    """`window_budget`'s tiers with their models' contexts (`contexts`, tokens or None per
    configured tier: `JudgeEngine.tier_contexts`)."""
    tiers = judge_settings.tiers()
    deciding: list[Tier] = [tier for tier in (Tier.DEEP, Tier.TIEBREAKER) if tier in tiers]
    if not deciding and Tier.QUICK in tiers:
        deciding = [Tier.QUICK]
    if not deciding:
        return WindowBudget((TierRoom(Tier.QUICK, judge_settings.quick_max_chars),))
    rooms = []
    for tier in deciding:
        seat = tiers[tier]
        fit = TierFit(contexts.get(tier), "")
        rooms.append(TierRoom(tier, seat.max_chars, prompt_room(fit, seat.max_output_tokens)))
    return WindowBudget(tuple(rooms))


def judge_requests(
    target: Target,
    config: RepoConfig,
    inputs: JudgeInputs,
    research: ResearchRules,
    *,
    window_chars: int | WindowBudget | None = None,
) -> list[JudgeRequest]:
    """One request per rubric group; with `window_chars`, each group split into requests
    a judge with that budget reads whole (bot/judging/windows.py), all of one task."""
    groups: dict[RubricName, list[JudgedFile]] = {}
    for judged in inputs.files:
        groups.setdefault(rubric_for(config, judged.path), []).append(judged)
    task = TaskSpec(
        task_id=target.task,
        description=target.title,
        acceptance=config.task.acceptance,
        directives=list(inputs.directives),
    )
    known = frozenset(c.path for c in target.changed or ()) | {f.path for f in inputs.files}
    requests: list[JudgeRequest] = []
    for rubric, group in sorted(groups.items()):
        earlier = earlier_verdicts(inputs.earlier, target.head_sha, rubric)
        parts = _parts(group, rubric, config, inputs, earlier, window_chars, task)
        for index, part in enumerate(parts, start=1):
            note = part_note(part, index, len(parts), len(group), rubric)
            # First, so the cap on the task texts (prompts.TASK_TEXT_LIMIT) never cuts it.
            own = task.model_copy(update={"directives": [note, *task.directives]}) if note else task
            requests.append(
                JudgeRequest(
                    task=own,
                    files=list(part.files),
                    rubric=rubric,
                    sensitive=target.force_deep
                    or any(f.path in inputs.sensitive for f in part.files),
                    commit_messages=[c.message for c in inputs.commits],
                    repository=target.repository,
                    head_sha=target.head_sha,
                    scope=target.repository.lower(),
                    installation=target.installation_id,
                    bypass_cache=target.bypass_cache,
                    known_paths=known,
                    research=research,
                    tag_terms=config.tags,
                    context=ReviewContext(
                        diffs=list(part.diffs), ci=list(inputs.ci), earlier=earlier
                    ),
                )
            )
    return requests


@dataclass(frozen=True)
class PlannedPart:
    """One request of a split change, with the part of the change it holds (its files,
    or one window of one file) for saying what each judge saw."""

    request: JudgeRequest
    part: Part


def plan_request(
    request: JudgeRequest, budget: WindowBudget, *, max_files: int = DEFAULT_MAX_FILES
) -> list[PlannedPart]:
    """One request (all of one rubric, as `judge-bot judge` sends its files) as the
    requests a deciding judge reads whole, each with its part of the change: the same task,
    each told which part it holds, with its files' diffs and the same CI and earlier
    verdicts. A request that fits comes back alone, unchanged."""
    context = request.context
    chars = budget.chars_for(request.rubric, request.task, context)
    parts = split_group(
        request.files,
        {diff.path: diff for diff in context.diffs},
        rubric=request.rubric,
        max_files=max_files,
        room=room_for(chars, context_reserve(context.ci, context.earlier)),
        sensitive=frozenset(f.path for f in request.files) if request.sensitive else frozenset(),
        fence=file_fence if budget.fitted else None,
    )
    if len(parts) == 1:
        return [PlannedPart(request, parts[0])]
    out = []
    for index, part in enumerate(parts, start=1):
        note = part_note(part, index, len(parts), len(request.files), request.rubric)
        task = request.task.model_copy(update={"directives": [note, *request.task.directives]})
        one = replace(
            request,
            task=task,
            files=list(part.files),
            context=context.model_copy(update={"diffs": list(part.diffs)}),
        )
        out.append(PlannedPart(one, part))
    return out


def _parts(
    group: Sequence[JudgedFile],
    rubric: RubricName,
    config: RepoConfig,
    inputs: JudgeInputs,
    earlier: Sequence[EarlierVerdict],
    window_chars: int | WindowBudget | None,
    task: TaskSpec,
) -> list[Part]:
    if window_chars is None:
        diffs = tuple(inputs.diffs[f.path] for f in group if f.path in inputs.diffs)
        return [Part(tuple(group), diffs)]
    fence = None
    if isinstance(window_chars, WindowBudget):
        fence = file_fence if window_chars.fitted else None
        context = ReviewContext(ci=list(inputs.ci), earlier=list(earlier))
        window_chars = window_chars.chars_for(rubric, task, context)
    return split_group(
        group,
        inputs.diffs,
        rubric=rubric,
        max_files=config.limits.max_files,
        room=room_for(window_chars, context_reserve(inputs.ci, earlier)),
        sensitive=inputs.sensitive,
        fence=fence,
    )
