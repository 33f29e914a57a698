"""Judge pushes and pull requests: one `judge` check run per head sha.

    pull_request opened/synchronize/reopened/ready_for_review ─┐
    push (not a deletion, with watched files) ─────────────────┼─> judge_target
    check_run / check_suite rerequested, "Re-judge" button ────┘
        claim the sha ── taken by another delivery ──> stop (one check run per sha)
        config from the default branch (cached) ── invalid ──> neutral run naming the line
        create the run in_progress ∥ list files and commits
        skip label / [skip judge] ──> neutral "skipped" run
        select watched files ── none ──> neutral "nothing to judge"
        fetch every file in one GraphQL query, judge each rubric group
        escalate ──> open (or comment on) the disagreement issue;  accept ──> close it
        complete the run (conclusion by verdict and mode), annotations in batches of 50

The decisions (targets, selection, conclusion, rendering) are pure functions in
`targets`, `bot.repo_config` and `bot.checks`; this module carries them out.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from cachetools import LRUCache
from gidgethub.routing import Router
from gidgethub.sansio import Event
from pydantic import ValidationError

from bot.checks import (
    CheckDetails,
    CheckRunOutput,
    LeftOut,
    Mode,
    SkipReason,
    render_check_run,
    render_config_error,
    render_in_progress,
    render_skipped,
)
from bot.dispatch import Context
from bot.features import disagreements
from bot.features.repo_settings import CONFIG_PATH, forget_repo_config, load_repo_config
from bot.features.targets import (
    Target,
    bypass_reason,
    linked_issues,
    people_of,
    target_from_pull_request,
    target_from_push,
)
from bot.github.client import GitHubApp
from bot.github.gateway import ChangedPath, CommitInfo, RepoGateway, added_lines_from_patch
from bot.judge.config import JudgeConfig
from bot.judge.engine import JudgeEngine, JudgeRequest
from bot.judge.records import JudgedFile, RubricName, TaskSpec, VerdictRecord
from bot.rendering import combined_verdict
from bot.repo_config import (
    ChangedFile,
    RepoConfig,
    RepoConfigError,
    author_matches,
    effective_mode,
    rubric_for,
    select_files,
)
from bot.storage.base import Storage

log = logging.getLogger(__name__)
router = Router()

STATE_NAMESPACE = "judged-sha"
CHECK_NAME = "judge"


def state_key(repository: str, head_sha: str) -> str:
    return f"{repository.lower()}@{head_sha}"


@dataclass(frozen=True)
class Services:
    github: GitHubApp
    engine: JudgeEngine
    judge_config: JudgeConfig
    shared: dict[str, Any]

    @classmethod
    def of(cls, context: Context) -> Services:
        return cls(
            github=context.services["github"],
            engine=context.services["judge"],
            judge_config=context.services["judge_config"],
            shared=context.services,
        )

    def engine_for(self, config: RepoConfig, storage: Storage) -> JudgeEngine:
        """The installation's engine, or one with the repository's own tier models.

        Raises RepoModelsError when those models break the four-eyes rule."""
        overrides = model_overrides(config)
        if not overrides:
            return self.engine
        engines: LRUCache[tuple[tuple[str, str | None], ...], JudgeEngine] = self.shared.setdefault(
            "repo_engines", LRUCache(maxsize=64)
        )
        key = tuple(sorted(overrides.items()))
        engine = engines.get(key)
        if engine is None:
            try:
                judge_config = JudgeConfig(**{**self.judge_config.model_dump(), **overrides})
            except ValidationError as exc:
                message = str(exc.errors()[0].get("msg", "invalid models")).removeprefix(
                    "Value error, "
                )
                raise RepoModelsError(message) from None
            engine = JudgeEngine.from_config(judge_config, self.shared["llm_client"], storage)
            engines[key] = engine
        return engine


class RepoModelsError(ValueError):
    """The repository's `models:` would seat two judges of one family."""


def model_overrides(config: RepoConfig) -> dict[str, str | None]:
    """JudgeConfig fields for the repository's tier models; a replaced model's family is
    guessed again from its name rather than inherited from the installation's model."""
    overrides: dict[str, str | None] = {}
    for tier in ("quick", "deep", "tiebreaker"):
        model = getattr(config.models, tier)
        if model:
            overrides[f"{tier}_model"] = model
            overrides[f"{tier}_family"] = None
    return overrides


# -- event handlers -----------------------------------------------------------------------


@router.register("pull_request", action="opened")
@router.register("pull_request", action="synchronize")
@router.register("pull_request", action="reopened")
@router.register("pull_request", action="ready_for_review")
async def on_pull_request(event: Event, context: Context) -> None:
    if context.installation_id is None:
        return
    pull = event.data["pull_request"]
    if pull.get("draft"):
        log.info("draft pull request: judged when ready", extra=context.log_extra())
        return
    target = target_from_pull_request(event.data, context.installation_id)
    await judge_target(target, context, owner=context.delivery.delivery_id)


@router.register("push")
async def on_push(event: Event, context: Context) -> None:
    if context.installation_id is None:
        return
    target = target_from_push(event.data, context.installation_id)
    if target is None:
        return
    if event.data.get("ref") == f"refs/heads/{target.default_branch}" and touches_config(target):
        await forget_repo_config(context.storage, target.repository)
    await judge_target(target, context, owner=context.delivery.delivery_id)


@router.register("check_run", action="rerequested")
async def on_check_run_rerequested(event: Event, context: Context) -> None:
    run = event.data["check_run"]
    if run.get("name") != CHECK_NAME or context.installation_id is None:
        return
    await rejudge(event.data, str(run["head_sha"]), context, trigger="check_run.rerequested")


@router.register("check_suite", action="rerequested")
async def on_check_suite_rerequested(event: Event, context: Context) -> None:
    if context.installation_id is None:
        return
    suite = event.data["check_suite"]
    await rejudge(event.data, str(suite["head_sha"]), context, trigger="check_suite.rerequested")


def touches_config(target: Target) -> bool:
    return target.changed is None or any(c.path == CONFIG_PATH for c in target.changed)


async def rejudge(
    payload: dict[str, Any],
    head_sha: str,
    context: Context,
    *,
    trigger: str,
    force_deep: bool = False,
) -> None:
    """Judge a sha again, bypassing the verdict cache, on the same check run."""
    assert context.installation_id is not None
    repository = str(payload["repository"]["full_name"])
    state = await context.storage.kv_get(STATE_NAMESPACE, state_key(repository, head_sha))
    if state is not None and state.get("target"):
        target = Target.from_json(state["target"], trigger)
    else:
        target = await target_for_sha(payload, head_sha, context)
    await judge_target(
        target.rerun(trigger, force_deep=force_deep), context, owner=context.delivery.delivery_id
    )


async def target_for_sha(payload: dict[str, Any], head_sha: str, context: Context) -> Target:
    """A sha we never judged (our storage was reset): rebuild from its pull request, if any."""
    assert context.installation_id is not None
    services = Services.of(context)
    repository = payload["repository"]
    client = await services.github.installation_client(context.installation_id)
    gateway = RepoGateway(client, str(repository["full_name"]))
    pulls = [
        p
        for p in (payload.get("check_run") or payload.get("check_suite") or {}).get("pull_requests")
        or []
        if p.get("head", {}).get("sha") == head_sha
    ]
    if pulls:
        pull = await gateway.pull(int(pulls[0]["number"]))
        return target_from_pull_request(
            {"pull_request": pull, "repository": repository, "action": "rerequested"},
            context.installation_id,
        )
    return Target(
        repository=str(repository["full_name"]),
        installation_id=context.installation_id,
        head_sha=head_sha,
        default_branch=str(repository.get("default_branch") or "main"),
        task=head_sha[:7],
        trigger="rerequested",
    )


# -- the flow -------------------------------------------------------------------------------


async def judge_target(target: Target, context: Context, *, owner: str) -> None:
    services = Services.of(context)
    storage = context.storage
    key = state_key(target.repository, target.head_sha)
    await storage.kv_put_if_absent(STATE_NAMESPACE, key, {"owner": owner, "check_run_id": None})
    state = await storage.kv_get(STATE_NAMESPACE, key) or {"owner": owner, "check_run_id": None}
    if state.get("owner") != owner and not target.bypass_cache:
        log.info(
            "sha %s is already judged by delivery %s",
            target.head_sha,
            state.get("owner"),
            extra=context.log_extra(),
        )
        return
    state["owner"] = owner

    client = await services.github.installation_client(target.installation_id)
    gateway = RepoGateway(client, target.repository)
    now = context.clock()

    try:
        config: RepoConfig | None = await load_repo_config(
            gateway, storage, target.default_branch, now
        )
        config_error: RepoConfigError | None = None
    except RepoConfigError as error:
        config, config_error = None, error

    if config is not None and target.pull_number is None and not target.bypass_cache:
        # A push tells us its files and commits: decide before showing anything.
        if (
            target.changed is not None
            and not select_files(config, as_changed(target.changed)).files
        ):
            await storage.kv_delete(STATE_NAMESPACE, key)
            return
        if (
            config.authors
            and target.commits is not None
            and not author_matches(config, people_of(target.commits))
        ):
            await storage.kv_delete(STATE_NAMESPACE, key)
            return

    async def ensure_check_run() -> int:
        if state.get("check_run_id"):
            run_id = int(state["check_run_id"])
            await gateway.update_check_run(run_id, in_progress_fields(render_in_progress([])))
            return run_id
        output = render_in_progress([])
        run_id, url = await gateway.create_check_run(
            {"name": CHECK_NAME, "head_sha": target.head_sha, **in_progress_fields(output)}
        )
        state["check_run_id"] = run_id
        state["check_run_url"] = url
        state["target"] = target.to_json()
        await storage.kv_put(STATE_NAMESPACE, key, state)
        return run_id

    if config_error is not None:
        run_id = await ensure_check_run()
        output = render_config_error(
            str(config_error), line=config_error.line, key=config_error.key
        )
        await complete(gateway, run_id, output)
        await remember(storage, key, state, target, verdict="undetermined", output=output)
        return
    assert config is not None

    run_id, (changed, commits) = await asyncio.gather(
        ensure_check_run(), changes_of(target, gateway)
    )
    target = _with_changes(target, changed, commits)
    state["target"] = target.to_json()
    mode = Mode(effective_mode(config, services.judge_config.mode))

    head_message = commits[-1].message if commits else ""
    reason = bypass_reason(target, config.skip_label, head_message)
    if reason is not None:
        if config.skip_label and config.skip_label in target.labels:
            output = render_skipped(
                SkipReason.LABEL, target.labeled_by or "", label=config.skip_label
            )
        else:
            output = render_skipped(SkipReason.COMMIT_MESSAGE, target.head_sha)
        await complete(gateway, run_id, output)
        await remember(storage, key, state, target, verdict="skipped", output=output)
        return

    if config.authors and not author_matches(config, people_of(commits)):
        output = nothing_to_judge(
            "no commit of this change was authored or committed by the configured `authors`"
        )
        await complete(gateway, run_id, output)
        await remember(storage, key, state, target, verdict="skipped", output=output)
        return

    selection = select_files(config, as_changed(changed))
    left_out = [LeftOut(item.path, item.reason.replace("_", " ")) for item in selection.left_out]
    if not selection.files:
        output = nothing_to_judge("no watched file changed", left_out)
        await complete(gateway, run_id, output)
        await remember(storage, key, state, target, verdict="skipped", output=output)
        return

    paths = [f.path for f in selection.files]
    texts = await gateway.texts_at(target.head_sha, paths)
    patches = {c.path: c.patch for c in changed}
    files: list[JudgedFile] = []
    limit = config.limits.max_chars_per_file
    for path in paths:
        text = texts.get(path)
        if text is None:
            left_out.append(LeftOut(path, "binary or unreadable"))
            continue
        if len(text) > limit:
            left_out.append(LeftOut(path, f"cut to the first {limit:,} characters"))
            text = text[:limit]
        files.append(
            JudgedFile(
                path=path,
                content=text,
                added_lines=added_lines_from_patch(patches.get(path)),
                status=next((c.status for c in changed if c.path == path), None),
            )
        )

    try:
        engine = services.engine_for(config, storage)
    except RepoModelsError as error:
        output = render_config_error(str(error), key="models")
        await complete(gateway, run_id, output)
        await remember(storage, key, state, target, verdict="undetermined", output=output)
        return
    directives = await directives_for(target, config, gateway, files)
    records = await judge_groups(
        engine, target, config, files, commits, directives, selection.sensitive
    )
    verdict = combined_verdict(r.final_decision for r in records)
    issue_url = await disagreements.reconcile(
        gateway, storage, target, records, verdict, str(state.get("check_run_url") or "")
    )
    output = render_check_run(
        records, mode, details=CheckDetails(left_out=left_out, disagreement_issue_url=issue_url)
    )
    await complete(gateway, run_id, output)
    await remember(
        storage,
        key,
        state,
        target,
        verdict=verdict.value,
        output=output,
        mode=mode,
        commits=commits,
        records=[r.model_dump(mode="json") for r in records],
    )


def as_changed(changed: Sequence[ChangedPath]) -> list[ChangedFile]:
    return [ChangedFile(c.path, c.status, c.previous_path) for c in changed]


def _with_changes(
    target: Target, changed: Sequence[ChangedPath], commits: Sequence[CommitInfo]
) -> Target:
    return replace(target, changed=tuple(changed), commits=tuple(commits))


async def changes_of(
    target: Target, gateway: RepoGateway
) -> tuple[list[ChangedPath], list[CommitInfo]]:
    """Files and commits of the change, asking GitHub only for what the event lacked."""
    if target.changed is not None and target.commits is not None:
        return list(target.changed), list(target.commits)
    if target.pull_number is not None:
        files, commits = await asyncio.gather(
            gateway.pull_files(target.pull_number), gateway.pull_commits(target.pull_number)
        )
        return files, commits
    base = target.compare_base or target.default_branch
    return await gateway.compare(base, target.head_sha)


async def directives_for(
    target: Target, config: RepoConfig, gateway: RepoGateway, files: Sequence[JudgedFile]
) -> list[str]:
    """The pull request's description and its linked issues, plus the repository's standing
    directives. Linked issues are fetched only when a completion rubric will read them."""
    directives = [d for d in config.task.directives]
    if target.body:
        directives.append(target.body)
    wants_completion = any(rubric_for(config, f.path) is RubricName.COMPLETION for f in files)
    if wants_completion and target.pull_number is not None:
        for number in linked_issues(target.body, target.repository)[:3]:
            issue = await gateway.issue(number)
            text = f"#{number} {issue.get('title', '')}\n\n{issue.get('body') or ''}".strip()
            directives.append(text)
    return directives


async def judge_groups(
    engine: JudgeEngine,
    target: Target,
    config: RepoConfig,
    files: Sequence[JudgedFile],
    commits: Sequence[CommitInfo],
    directives: Sequence[str],
    sensitive: frozenset[str],
) -> list[VerdictRecord]:
    groups: dict[RubricName, list[JudgedFile]] = {}
    for judged in files:
        groups.setdefault(rubric_for(config, judged.path), []).append(judged)
    task = TaskSpec(
        task_id=target.task,
        description=target.title,
        acceptance=config.task.acceptance,
        directives=list(directives),
    )
    known = frozenset(c.path for c in target.changed or ()) | {f.path for f in files}
    requests = [
        JudgeRequest(
            task=task,
            files=group,
            rubric=rubric,
            sensitive=target.force_deep or any(f.path in sensitive for f in group),
            commit_messages=[c.message for c in commits],
            repository=target.repository,
            head_sha=target.head_sha,
            scope=target.repository.lower(),
            bypass_cache=target.bypass_cache,
            known_paths=known,
        )
        for rubric, group in sorted(groups.items())
    ]
    return list(await asyncio.gather(*(engine.judge(request) for request in requests)))


# -- check-run helpers ---------------------------------------------------------------------


def in_progress_fields(output: CheckRunOutput) -> dict[str, Any]:
    return {
        "status": "in_progress",
        "output": {"title": output.title, "summary": output.summary},
    }


async def complete(gateway: RepoGateway, run_id: int, output: CheckRunOutput) -> None:
    for payload in output.payloads():
        await gateway.update_check_run(run_id, payload)


def nothing_to_judge(why: str, left_out: Sequence[LeftOut] = ()) -> CheckRunOutput:
    lines = [f"Nothing to judge: {why}."]
    if left_out:
        lines.append("")
        lines.extend(f"- `{item.path}`: {item.reason}" for item in left_out[:50])
        if len(left_out) > 50:
            lines.append(f"- … and {len(left_out) - 50} more")
    return CheckRunOutput(conclusion="neutral", title="nothing to judge", summary="\n".join(lines))


async def remember(
    storage: Any,
    key: str,
    state: dict[str, Any],
    target: Target,
    *,
    verdict: str,
    output: CheckRunOutput,
    mode: Mode | None = None,
    commits: Sequence[CommitInfo] = (),
    records: Sequence[dict[str, Any]] = (),
) -> None:
    """What later commands and re-runs need about this sha."""
    state.update(
        {
            "target": target.to_json(),
            "verdict": verdict,
            "conclusion": output.conclusion,
            "mode": None if mode is None else mode.value,
            "commit_people": people_of(commits),
            "records": list(records),
            "override": None,
        }
    )
    await storage.kv_put(STATE_NAMESPACE, key, state)
