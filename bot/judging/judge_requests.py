"""What each judge is asked for one head sha: one request per rubric group of files. Pure.

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
from bot.judge.engine import JudgeRequest
from bot.judge.engine.review_context import CiResult, FileDiff, ReviewContext
from bot.judge.records import JudgedFile, RubricName, TaskSpec
from bot.judge.rubrics.research_settings import ResearchRules
from bot.judging.earlier import earlier_verdicts
from bot.judging.remarks import binding_remarks
from bot.judging.repo_config import RepoConfig, rubric_for
from bot.judging.target import Target, people_of

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


def judge_requests(
    target: Target, config: RepoConfig, inputs: JudgeInputs, research: ResearchRules
) -> list[JudgeRequest]:
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
    return [
        JudgeRequest(
            task=task,
            files=group,
            rubric=rubric,
            sensitive=target.force_deep or any(f.path in inputs.sensitive for f in group),
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
                diffs=[inputs.diffs[f.path] for f in group if f.path in inputs.diffs],
                ci=list(inputs.ci),
                earlier=earlier_verdicts(inputs.earlier, target.head_sha, rubric),
            ),
        )
        for rubric, group in sorted(groups.items())
    ]
