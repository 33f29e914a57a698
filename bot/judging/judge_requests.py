"""What each judge is asked for one head sha: one request per rubric group of files, or,
given a window budget, as many as the judges need to read every file whole. Pure.

The task's directives are the repository's standing ones, the pull request's
description, the issues it closes (when a completion rubric will read them) and what
people with write access wrote on it (bot/judging/remarks.py). Each group's review
context is the diffs of its files, the CI results on the head commit and the earlier
verdicts of its rubric on the same pull request (bot/judging/earlier.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from bot.github.types import CommitInfo, LinkedIssue, Remark
from bot.judge.config import JudgeConfig
from bot.judge.engine import JudgeRequest
from bot.judge.engine.review_context import CiResult, EarlierVerdict, FileDiff, ReviewContext
from bot.judge.records import JudgedFile, RubricName, TaskSpec, Tier
from bot.judge.rubrics.research_settings import ResearchRules
from bot.judging.earlier import earlier_verdicts
from bot.judging.remarks import binding_remarks
from bot.judging.repo_config import RepoConfig, rubric_for
from bot.judging.target import Target, people_of
from bot.judging.windows import Part, context_reserve, part_note, room_for, split_group

LINKED_ISSUES = 3


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


def window_budget(judge_config: JudgeConfig) -> int:
    """The characters one request may fill (`judge_requests`' `window_chars`): the largest
    `max_chars` of the configured deep and tiebreaker tiers, which decide an accept of
    what they read whole; quick's when neither is configured."""
    tiers = judge_config.tiers()
    deeper = [tiers[tier].max_chars for tier in (Tier.DEEP, Tier.TIEBREAKER) if tier in tiers]
    if deeper:
        return max(deeper)
    quick = tiers.get(Tier.QUICK)
    return quick.max_chars if quick is not None else judge_config.quick_max_chars


def judge_requests(
    target: Target,
    config: RepoConfig,
    inputs: JudgeInputs,
    research: ResearchRules,
    *,
    window_chars: int | None = None,
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
        parts = _parts(group, rubric, config, inputs, earlier, window_chars)
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


def _parts(
    group: Sequence[JudgedFile],
    rubric: RubricName,
    config: RepoConfig,
    inputs: JudgeInputs,
    earlier: Sequence[EarlierVerdict],
    window_chars: int | None,
) -> list[Part]:
    if window_chars is None:
        diffs = tuple(inputs.diffs[f.path] for f in group if f.path in inputs.diffs)
        return [Part(tuple(group), diffs)]
    return split_group(
        group,
        inputs.diffs,
        rubric=rubric,
        max_files=config.limits.max_files,
        room=room_for(window_chars, context_reserve(inputs.ci, earlier)),
        sensitive=inputs.sensitive,
    )
