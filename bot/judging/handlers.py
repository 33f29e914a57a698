"""Judge pushes and pull requests: one `judge` check run per head sha.

    pull_request opened/synchronize/reopened/ready_for_review/labeled/unlabeled ─┐
    push (not a deletion, with watched files) ───────────────────────────────────┼─> judge_target
    re-judges (/judge rerun, Re-run, buttons; see `commands`) ───────────────────┘
        push: files and commits first (payload or compare); nothing to judge -> no run
        claim the sha (rules.claim_action) ── another delivery judges it ──> stop
        config from the default branch (cached) ── invalid ──> neutral run naming the line
        create the run in_progress ∥ list files and commits
        skip label / [skip judge] ──> neutral "skipped" run
        select watched files ── none ──> neutral "nothing to judge"
        fetch every file in one GraphQL query, judge each rubric group
        escalate ──> open / comment / reopen the disagreement issue;  accept ──> close it
        a pull request's automatic judgment held by loop prevention (a tripped circuit
            breaker, the cooldown) ──> neutral run saying why and how to go on
        the outcome goes to the merge queue (merging.approval.on_judged): accept may queue
            the pull request (the run then shows its position), anything else takes it out;
            the judges' non-accepts count toward the circuit breakers
        complete the run (conclusion by verdict and mode), annotations never sent twice
    A delivery on its last attempt that fails still completes its run (neutral), so no
    run is left in progress forever.

The decisions are pure functions in `rules` (the gate, claims), `target`, `repo_config`,
`conclusion` and `check_run` (rendering); this module fetches and carries them out.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from gidgethub.routing import Router
from gidgethub.sansio import Event
from pydantic import ValidationError

from bot.disagreement import sync as disagreements
from bot.github.client import RateLimited
from bot.github.gateway import RepoGateway
from bot.github.types import ChangedPath, CommitInfo, RemoteFile
from bot.intake.dispatch import Context
from bot.judge.config import JudgeConfig
from bot.judge.engine import JudgeEngine, JudgeRequest
from bot.judge.records import JudgedFile, RubricName, TaskSpec, VerdictRecord
from bot.judge.research_settings import ResearchRules
from bot.judging import rules
from bot.judging.check_run import CheckDetails, render_check_run
from bot.judging.conclusion import combined_verdict
from bot.judging.config_file import RepoConfigError
from bot.judging.config_store import CONFIG_PATH, forget_repo_config, load_repo_config
from bot.judging.four_eyes import Actor
from bot.judging.repo_config import (
    LeftOut,
    RepoConfig,
    Selection,
    effective_mode,
    rubric_for,
)
from bot.judging.run_handle import Abandoned, RunHandle, already_completed, claim
from bot.judging.run_notices import render_config_error, render_gave_up
from bot.judging.state import (
    LabelGrant,
    load_grant,
    save_grant,
    state_key,
)
from bot.judging.target import (
    Target,
    linked_issues,
    target_from_pull_request,
    target_from_push,
)
from bot.merging import approval as merge_approval
from bot.merging import breaker_flow
from bot.merging.breaker import fingerprint
from bot.notify.reporting import note_judgment
from bot.services import Services
from bot.storage.base import Storage

log = logging.getLogger(__name__)
A = TypeVar("A")
B = TypeVar("B")
T = TypeVar("T")
router = Router()


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


def engine_for(services: Services, config: RepoConfig, storage: Storage) -> JudgeEngine:
    """The installation's engine, or one with the repository's own tier models.

    Raises RepoModelsError when those models break the four-eyes rule."""
    overrides = model_overrides(config)
    if not overrides:
        return services.engine
    key = tuple(sorted(overrides.items()))
    engine = services.repo_engines.get(key)
    if engine is None:
        try:
            judge_config = JudgeConfig(**{**services.judge_config.model_dump(), **overrides})
        except ValidationError as exc:
            message = str(exc.errors()[0].get("msg", "invalid models"))
            raise RepoModelsError(message.removeprefix("Value error, ")) from None
        engine = JudgeEngine.from_config(judge_config, services.llm_client, storage)
        services.repo_engines[key] = engine
    return engine


# -- event handlers -----------------------------------------------------------------------


@router.register("pull_request", action="opened")
@router.register("pull_request", action="synchronize")
@router.register("pull_request", action="reopened")
@router.register("pull_request", action="ready_for_review")
async def on_pull_request(event: Event, context: Context) -> None:
    if context.installation_id is None:
        return
    if event.data["pull_request"].get("draft"):
        log.info("draft pull request: judged when ready", extra=context.log_extra())
        return
    target = target_from_pull_request(event.data, context.installation_id)
    await judge_target(target, context, owner=context.delivery.delivery_id)


@router.register("pull_request", action="labeled")
@router.register("pull_request", action="unlabeled")
async def on_skip_label(event: Event, context: Context) -> None:
    """Adding the skip label bypasses the judge at once; removing it judges again."""
    if context.installation_id is None or event.data["pull_request"].get("draft"):
        return
    label = str((event.data.get("label") or {}).get("name", ""))
    target = target_from_pull_request(event.data, context.installation_id)
    client = await context.services.github.installation_client(context.installation_id)
    gateway = RepoGateway(client, target.repository)
    config = await _config_or_none(gateway, context, target)
    if config is None or not config.skip_label or label != config.skip_label:
        return
    sender = str((event.data.get("sender") or {}).get("login", ""))
    await remember_grant(event.data, gateway, context.storage, target)
    await judge_target(
        replace(target, labeled_by=sender).rerun(f"pull_request.{event.data.get('action')}"),
        context,
        owner=context.delivery.delivery_id,
    )


async def remember_grant(
    payload: Mapping[str, Any], gateway: RepoGateway, storage: Storage, target: Target
) -> None:
    """Who added the skip label, with their access now; forgotten when it is removed.
    Blocking mode honours the label only from someone who could override the judges."""
    assert target.pull_number is not None
    if payload.get("action") != "labeled":
        await save_grant(storage, target.repository, target.pull_number, None)
        return
    actor = Actor.from_user(payload.get("sender"))
    permission, role = ("none", None) if actor.is_bot else await gateway.permission(actor.login)
    grant = LabelGrant(
        by=actor.login, by_type=actor.type, permission=permission, role_name=role or ""
    )
    await save_grant(storage, target.repository, target.pull_number, grant)


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


def touches_config(target: Target) -> bool:
    return target.changed is None or any(c.path == CONFIG_PATH for c in target.changed)


async def _config_or_none(
    gateway: RepoGateway, context: Context, target: Target
) -> RepoConfig | None:
    try:
        return await load_repo_config(
            gateway,
            context.storage,
            target.default_branch,
            context.clock(),
            allowed_models=context.services.judge_config.allowed_models,
        )
    except RepoConfigError:
        return None


# -- the flow -------------------------------------------------------------------------------


async def judge_target(target: Target, context: Context, *, owner: str) -> None:
    """Judge one head sha and report it (see the module docstring)."""
    services = context.services
    storage = context.storage
    client = await services.github.installation_client(target.installation_id)
    gateway = RepoGateway(client, target.repository)
    explicit = target.bypass_cache

    try:
        config: RepoConfig | None = await load_repo_config(
            gateway,
            storage,
            target.default_branch,
            context.clock(),
            allowed_models=services.judge_config.allowed_models,
        )
        config_error: RepoConfigError | None = None
    except RepoConfigError as error:
        config, config_error = None, error

    if target.pull_number is None and not explicit:
        # A push says little; learn its files and commits before showing anything.
        changed, commits = await changes_of(target, gateway)
        target = replace(target, changed=tuple(changed), commits=tuple(commits))
        if config is not None and rules.push_needs_no_run(config, target):
            return

    key = state_key(target.repository, target.head_sha)
    state = await claim(storage, key, target, owner=owner, explicit=explicit)
    if state is None:
        log.info("sha %s is judged by another delivery", target.head_sha, extra=context.log_extra())
        return
    if already_completed(state, owner):
        log.info("sha %s was already completed by this delivery", target.head_sha)
        return
    run = RunHandle(gateway, storage, key, state, owner, app_id=services.github.app_id)
    try:
        await _judge_claimed(target, context, services, gateway, config, config_error, run)
    except Abandoned:
        log.info(
            "sha %s was taken over; result dropped", target.head_sha, extra=context.log_extra()
        )
    except RateLimited:
        raise  # the worker defers the delivery to the reset; nothing has given up
    except Exception as exc:
        if context.delivery.attempts >= services.max_attempts and run.run_id is not None:
            await run.complete(
                render_gave_up(type(exc).__name__), verdict="undetermined", target=target
            )
        raise


async def _judge_claimed(
    target: Target,
    context: Context,
    services: Services,
    gateway: RepoGateway,
    config: RepoConfig | None,
    config_error: RepoConfigError | None,
    run: RunHandle,
) -> None:
    if config is None:
        assert config_error is not None
        await run.start(target)
        output = render_config_error(
            str(config_error), line=config_error.line, key=config_error.key
        )
        await judged(context, None, target, "undetermined")
        await run.complete(output, verdict="undetermined", target=target)
        return

    _, (changed, commits) = await both(run.start(target), changes_of(target, gateway))
    target = replace(target, changed=tuple(changed), commits=tuple(commits))
    mode = effective_mode(config, services.judge_config.mode)

    grant = None
    if config.skip_label in target.labels and target.pull_number is not None:
        grant = await load_grant(context.storage, target.repository, target.pull_number)
    gated = rules.gate(config, target, mode, grant)
    if isinstance(gated, rules.FinishEarly):
        await judged(context, config, target, gated.verdict)
        await run.complete(gated.output, verdict=gated.verdict, target=target, mode=mode)
        return
    try:
        engine = engine_for(services, config, context.storage)
    except RepoModelsError as error:
        output = render_config_error(str(error), key="models")
        await judged(context, config, target, "undetermined")
        await run.complete(output, verdict="undetermined", target=target, mode=mode)
        return

    files, left_out = await fetch_files(gateway, target, config, gated.selection)
    content = fingerprint(files)
    held = await breaker_flow.held(context, target, content)
    if held is not None:
        await judged(context, config, target, "skipped")
        await run.complete(held, verdict="skipped", target=target, mode=mode)
        return
    directives = await directives_for(target, config, gateway, files)
    records = await judge_groups(
        engine,
        target,
        config,
        JudgeInputs(files, commits, directives, gated.selection.sensitive),
        config.research.applied_to(services.research),
    )
    verdict = combined_verdict(r.final_decision for r in records)
    issue_url = await disagreements.reconcile(
        gateway,
        context.storage,
        target,
        records,
        verdict,
        run.url,
        owner=run.owner,
        notifier=services.notifier,
    )
    await note_judgment(services.notifier, context.storage, records)
    queue_line = await judged(context, config, target, verdict.value, content, records)
    details = CheckDetails(
        left_out=left_out,
        disagreement_issue_url=issue_url,
        notes=gated.notes,
        queue_line=queue_line,
    )
    output = render_check_run(records, mode, details=details)
    await run.complete(output, verdict=verdict.value, target=target, mode=mode, records=records)


async def judged(
    context: Context,
    config: RepoConfig | None,
    target: Target,
    verdict: str,
    content: str | None = None,
    records: Sequence[VerdictRecord] = (),
) -> str | None:
    """The final outcome goes to the merge queue (and loop prevention) before the run
    shows it, so the run can say the queue position or a tripped breaker; returns that
    line, if any. `content` fingerprints what the judges read."""
    return await merge_approval.on_judged(
        context,
        config,
        target,
        verdict,
        actor=f"judge ({context.delivery.delivery_id})",
        content=content,
        records=records,
    )


async def fetch_files(
    gateway: RepoGateway, target: Target, config: RepoConfig, selection: Selection
) -> tuple[list[JudgedFile], list[LeftOut]]:
    """The selected files at the head sha, in one GraphQL query, cut to the limits."""
    paths = [f.path for f in selection.files]
    blobs = await gateway.blobs([f"{target.head_sha}:{path}" for path in paths])
    texts = {path: _text(blobs[f"{target.head_sha}:{path}"]) for path in paths}
    truncated = {p for p in paths if (b := blobs[f"{target.head_sha}:{p}"]) and b.truncated}
    files, cut = rules.prepare_files(
        paths, texts, target.changed or (), config.limits.max_chars_per_file, truncated
    )
    return files, [*selection.left_out, *cut]


async def both(first: Awaitable[A], second: Awaitable[B]) -> tuple[A, B]:
    """Both at once. A failure propagates as itself, not inside an ExceptionGroup, so the
    callers' `except Abandoned` (and the worker's handling of GitHub's errors) see it; the
    other task is cancelled, as a TaskGroup would."""
    try:
        async with asyncio.TaskGroup() as group:
            one = group.create_task(_awaited(first))
            two = group.create_task(_awaited(second))
    except BaseExceptionGroup as failed:
        raise failed.exceptions[0] from None
    return one.result(), two.result()


async def _awaited(awaitable: Awaitable[T]) -> T:
    return await awaitable


def _text(blob: RemoteFile | None) -> str | None:
    return None if blob is None else str(blob.text)


async def changes_of(
    target: Target, gateway: RepoGateway
) -> tuple[list[ChangedPath], list[CommitInfo]]:
    """Files and commits of the change, asking GitHub only for what the event lacked."""
    if target.changed is not None and target.commits is not None:
        return list(target.changed), list(target.commits)
    if target.pull_number is not None:
        return await both(
            gateway.pull_files(target.pull_number), gateway.pull_commits(target.pull_number)
        )
    base = target.compare_base or target.default_branch
    return await gateway.compare(base, target.head_sha)


async def directives_for(
    target: Target, config: RepoConfig, gateway: RepoGateway, files: Sequence[JudgedFile]
) -> list[str]:
    """The pull request's description and its linked issues, plus the repository's standing
    directives. Linked issues are fetched only when a completion rubric will read them."""
    directives = list(config.task.directives)
    if target.body:
        directives.append(target.body)
    wants_completion = any(rubric_for(config, f.path) is RubricName.COMPLETION for f in files)
    if wants_completion and target.pull_number is not None:
        for number in linked_issues(target.body, target.repository)[:3]:
            issue = await gateway.issue(number)
            text = f"#{number} {issue.get('title', '')}\n\n{issue.get('body') or ''}".strip()
            directives.append(text)
    return directives


@dataclass(frozen=True)
class JudgeInputs:
    """What was fetched for one head sha, as the judges will read it."""

    files: Sequence[JudgedFile]
    commits: Sequence[CommitInfo]
    directives: Sequence[str]
    sensitive: frozenset[str]


async def judge_groups(
    engine: JudgeEngine,
    target: Target,
    config: RepoConfig,
    inputs: JudgeInputs,
    research: ResearchRules,
) -> list[VerdictRecord]:
    files, commits, directives, sensitive = (
        inputs.files,
        inputs.commits,
        inputs.directives,
        inputs.sensitive,
    )
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
            installation=target.installation_id,
            bypass_cache=target.bypass_cache,
            known_paths=known,
            research=research,
        )
        for rubric, group in sorted(groups.items())
    ]
    return list(await asyncio.gather(*(engine.judge(request) for request in requests)))
