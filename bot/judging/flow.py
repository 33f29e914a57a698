"""The judging flow: one head sha in, one `judge` check run out (routers: `handlers`).

    pull_request opened/synchronize/reopened/ready_for_review/labeled/unlabeled ─┐
    push (not a deletion, with watched files) ───────────────────────────────────┼─> judge_target
    re-judges (/judge rerun, Re-run, buttons; see `commands`) ───────────────────┤
    check_run / check_suite completed, status: CI reran for a sha that waits ────┘
        push: files and commits first (payload or compare); nothing to judge -> no run
        claim the sha (rules.claim_action) ── another delivery judges it ──> stop
        config from the default branch (cached) ── invalid ──> neutral run naming the line
        create the run in_progress ∥ list the files (a pull request's, with GitHub's patches)
        one GraphQL query: the selected files (and a base version where a patch is
            missing), CI on the head commit, a pull request's commits, reviews,
            conversation and closing issues (`change_fetch`)
        skip label / [skip judge] ──> neutral "skipped" run
        select watched files ── none ──> neutral "nothing to judge"
        CI ended in an infrastructure failure or timeout ──> neutral run waiting for CI
            to rerun; the rerun's webhook judges the sha again, once (`ci_gate`)
        judge each rubric group, with the diffs, CI results, earlier verdicts and the
            directives of people with write access (`judge_requests`)
        announced through `reactions` (bot/reactions.py lists who reacts):
          hold: a pull request's automatic judgment held by loop prevention (a tripped
            circuit breaker, the cooldown) ──> neutral run saying why and how to go on
          judged: escalate ──> open / comment / reopen the disagreement issue; accept ──>
            close it; provider outages counted for notices
          concluded: the outcome goes to the merge queue: accept may queue the pull
            request (the run then shows its position), anything else takes it out; the
            judges' non-accepts count toward the circuit breakers
        complete the run (conclusion by verdict and mode; red required checks named),
            annotations never sent twice
    A delivery on its last attempt that fails still completes its run (neutral), so no
    run is left in progress forever.

The decisions are pure functions in `rules` (the gate, claims), `target`, `repo_config`,
`ci_gate`, `diffs`, `earlier`, `remarks`, `judge_requests`, `conclusion` and `check_run`
(rendering); this module and `change_fetch` fetch and carry them out.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Sequence
from dataclasses import replace
from typing import TypeVar

from pydantic import ValidationError

from bot.github.client import GitHubUnavailable, RateLimited
from bot.github.gateway import RepoGateway
from bot.github.types import CiCheck
from bot.intake.dispatch import Context
from bot.judge.engine import JudgeEngine, JudgeRequest
from bot.judge.records import VerdictRecord, fingerprint
from bot.judge.rubrics.research_settings import ResearchRules
from bot.judge.settings import JudgeSettings, Mode
from bot.judging import change_fetch, ci_gate, rules
from bot.judging.change_fetch import HeadRead
from bot.judging.check_run import CheckDetails, CheckRunOutput, render_check_run
from bot.judging.conclusion import Cause, run_outcome
from bot.judging.config_file import RepoConfigError
from bot.judging.config_store import load_repo_config
from bot.judging.judge_requests import (
    JudgeInputs,
    directives_for,
    fitted_window_budget,
    judge_requests,
)
from bot.judging.reactions import REACTIONS, Concluded, Judged
from bot.judging.repo_config import (
    LeftOut,
    RepoConfig,
    effective_mode,
    effective_on_outage,
    select_files,
)
from bot.judging.run_handle import Abandoned, RunHandle, already_completed, claim
from bot.judging.run_notices import concluded, render_config_error, render_gave_up
from bot.judging.state import (
    load_grant,
    state_key,
)
from bot.judging.target import (
    Target,
)
from bot.record_metrics import observe_record
from bot.services import Services
from bot.storage.base import Storage

log = logging.getLogger(__name__)
REQUESTS_AT_ONCE = 4
A = TypeVar("A")
B = TypeVar("B")
T = TypeVar("T")


class RepoModelsError(ValueError):
    """The repository's `models:` would seat two judges of one family."""


def model_overrides(config: RepoConfig) -> dict[str, str | None]:
    """JudgeSettings fields for the repository's tier models; a replaced model's family is
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
            judge_settings = JudgeSettings(**{**services.judge_settings.model_dump(), **overrides})
        except ValidationError as exc:
            message = str(exc.errors()[0].get("msg", "invalid models"))
            raise RepoModelsError(message.removeprefix("Value error, ")) from None
        engine = JudgeEngine.from_settings(judge_settings, services.llm_client, storage)
        services.repo_engines[key] = engine
    return engine


async def repo_config_of(gateway: RepoGateway, context: Context, default_branch: str) -> RepoConfig:
    """`.github/judge.yml` as judging reads it: cached, its `models:` checked against
    JUDGE_ALLOWED_MODELS. Raises RepoConfigError for a file that is wrong."""
    return await load_repo_config(
        gateway,
        context.storage,
        default_branch,
        context.clock(),
        allowed_models=context.services.judge_settings.allowed_models,
    )


async def config_or_none(
    gateway: RepoGateway, context: Context, default_branch: str
) -> RepoConfig | None:
    """None for an invalid `.github/judge.yml`: the judging flow then shows its error."""
    try:
        return await repo_config_of(gateway, context, default_branch)
    except RepoConfigError:
        return None


# -- the flow -------------------------------------------------------------------------------


async def judge_target(
    target: Target, context: Context, *, owner: str, take_over: bool = False
) -> None:
    """Judge one head sha and report it (see the module docstring). `take_over`: judge
    it even though another delivery judged it last (CI reran after a skip)."""
    services = context.services
    storage = context.storage
    client = await services.github.installation_client(target.installation_id)
    gateway = RepoGateway(client, target.repository)
    explicit = target.bypass_cache or take_over

    try:
        config: RepoConfig | None = await repo_config_of(gateway, context, target.default_branch)
        config_error: RepoConfigError | None = None
    except RepoConfigError as error:
        config, config_error = None, error

    if target.pull_number is None and not explicit:
        # A push says little; learn its files and commits before showing anything.
        target = await change_fetch.changes_of(target, gateway)
        target = replace(target, commits=target.commits or ())
        if config is not None and rules.push_needs_no_run(config, target):
            return

    key = state_key(target.repository, target.head_sha)
    state = await claim(storage, key, target, owner=owner, explicit=explicit, now=context.clock())
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
    except (RateLimited, GitHubUnavailable):
        raise  # the worker defers the delivery (to the reset, or past the outage)
    except Exception as exc:
        if context.delivery.attempts >= services.max_attempts and run.run_id is not None:
            mode = _mode_of(config, services)
            output = concluded(render_gave_up(type(exc).__name__), Cause.GAVE_UP, mode)
            await run.complete(output, verdict="undetermined", target=target, mode=mode)
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
        # The installation's mode: the repository's own could not be read.
        mode = _mode_of(None, services)
        output = render_config_error(
            str(config_error), line=config_error.line, key=config_error.key
        )
        await judged(context, None, target, "undetermined")
        output = concluded(output, Cause.CONFIG_ERROR, mode)
        await run.complete(output, verdict="undetermined", target=target, mode=mode)
        return
    mode = _mode_of(config, services)
    ready = await _read_and_gate(target, context, gateway, config, run, mode)
    if ready is None:
        return
    target, gated, read, checks = ready
    try:
        engine = engine_for(services, config, context.storage)
    except RepoModelsError as error:
        output = render_config_error(str(error), key="models")
        await _finish(context, config, target, run, output, "undetermined", Cause.CONFIG_ERROR)
        return

    content = fingerprint(read.files)
    reactions = context.hub.plugged(REACTIONS)
    held = await reactions.hold(context, target, content)
    if held is not None:
        # Loop prevention saves the model calls; it never passes a blocking gate.
        await _finish(context, config, target, run, held, "skipped", Cause.HELD)
        return
    inputs = JudgeInputs(
        files=read.files,
        commits=target.commits or (),
        directives=directives_for(target, config, read.files, read.linked, read.remarks),
        sensitive=gated.selection.sensitive,
        diffs=read.diffs,
        ci=ci_gate.for_judges(checks),
        earlier=await change_fetch.earlier_records(context.storage, target),
    )
    records = await judge_groups(
        engine, target, config, inputs, config.research.applied_to(services.research)
    )
    for record in records:
        observe_record(services.metrics, record, mode.value)
    left_out = [*gated.selection.left_out, *read.left_out, *unlisted_files(target)]
    verdict, _ = run_outcome(records, unread=any(item.unread for item in left_out))
    issue_url = await reactions.judged(
        context, Judged(gateway, target, records, verdict, run.url, run.owner)
    )
    queue_line = await judged(context, config, target, verdict.value, content, records)
    details = CheckDetails(
        left_out=left_out,
        disagreement_issue_url=issue_url,
        notes=(*gated.notes, *ci_gate.summary_lines(checks)),
        queue_line=queue_line,
        on_outage=effective_on_outage(config, services.judge_settings.on_outage),
    )
    output = render_check_run(records, mode, details=details)
    await run.complete(
        output,
        verdict=verdict.value,
        target=target,
        mode=mode,
        records=records,
        unread=[(item.path, item.reason) for item in left_out if item.unread],
        on_outage=details.on_outage,
    )


async def _read_and_gate(
    target: Target,
    context: Context,
    gateway: RepoGateway,
    config: RepoConfig,
    run: RunHandle,
    mode: Mode,
) -> tuple[Target, rules.JudgeFiles, HeadRead, list[CiCheck]] | None:
    """Fetch what the judges read and pass it through the gates (skips, authors, watched
    files, CI that must rerun); None when the run was completed without judging.

    A push knows its commits before the head query, so a skip costs no more reads; a
    pull request's commits come with that query, and the gate runs after it."""
    _, target = await both(run.start(target), change_fetch.changes_of(target, gateway))
    changed = target.changed or ()
    grant = None
    if config.skip_label in target.labels and target.pull_number is not None:
        grant = await load_grant(context.storage, target.repository, target.pull_number)
    gated = rules.gate(config, target, mode, grant) if target.commits is not None else None
    if isinstance(gated, rules.FinishEarly):
        await _finish(context, config, target, run, gated.output, gated.verdict, gated.cause)
        return None
    selection = gated.selection if gated is not None else select_files(config, changed)
    read = await change_fetch.read_head(gateway, target, config, [f.path for f in selection.files])
    if gated is None:
        target = replace(target, commits=read.commits or ())
        gated = rules.gate(config, target, mode, grant)
        if isinstance(gated, rules.FinishEarly):
            await _finish(context, config, target, run, gated.output, gated.verdict, gated.cause)
            return None
    checks = ci_gate.others(read.ci, context.services.github.app_id)
    waiting = ci_gate.wait_for_ci(checks, target, config.ci.wait_for)
    if waiting is not None:
        await judged(context, config, target, "skipped")
        await run.complete(
            concluded(waiting.output, Cause.CI_WAIT, mode),
            verdict="skipped",
            target=target,
            mode=mode,
            awaiting_ci=waiting.awaiting,
        )
        return None
    return target, gated, read, checks


async def _finish(
    context: Context,
    config: RepoConfig,
    target: Target,
    run: RunHandle,
    output: CheckRunOutput,
    verdict: str,
    cause: Cause,
) -> None:
    """End the run without a judgment (after telling the merge queue), concluded as its
    cause is in the repository's mode."""
    mode = _mode_of(config, context.services)
    await judged(context, config, target, verdict)
    output = concluded(output, cause, mode)
    await run.complete(output, verdict=verdict, target=target, mode=mode)


def _mode_of(config: RepoConfig | None, services: Services) -> Mode:
    return effective_mode(config, services.judge_settings.mode)


def unlisted_files(target: Target) -> list[LeftOut]:
    """The changed files GitHub never listed (a pull request's list stops at 3,000, a
    compare's at 300): nobody can judge them, so they count as unread."""
    if not rules.unlisted(target):
        return []
    listed = len(target.changed or ())
    why = (
        f"GitHub listed {listed:,} of the changed files and does not list the rest "
        f"({target.listed_files:,} or more in all), so no judge could read them"
    )
    return [LeftOut("…", why, unread=True)]


async def judged(
    context: Context,
    config: RepoConfig | None,
    target: Target,
    verdict: str,
    content: str | None = None,
    records: Sequence[VerdictRecord] = (),
) -> str | None:
    """The final outcome is announced (to the merge queue and loop prevention) before the
    run shows it, so the run can say the queue position or a tripped breaker; returns that
    line, if any. `content` fingerprints what the judges read."""
    reactions = context.hub.plugged(REACTIONS)
    return await reactions.concluded(context, Concluded(config, target, verdict, content, records))


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


async def judge_groups(
    engine: JudgeEngine,
    target: Target,
    config: RepoConfig,
    inputs: JudgeInputs,
    research: ResearchRules,
) -> list[VerdictRecord]:
    # Every request fits what the deepest judge reads whole: a long file is judged in
    # windows and a large change in batches, all of which must accept.
    window = fitted_window_budget(engine.settings, await engine.tier_contexts())
    requests = judge_requests(target, config, inputs, research, window_chars=window)
    # A change of many batches and windows must not flood the providers into refusals.
    slots = asyncio.Semaphore(REQUESTS_AT_ONCE)

    async def judged_in_turn(request: JudgeRequest) -> VerdictRecord:
        async with slots:
            return await engine.judge(request)

    return list(await asyncio.gather(*(judged_in_turn(request) for request in requests)))
