"""One workflow run of `judge-bot action`: the App's pieces, composed for a runner.

    the event (GITHUB_EVENT_PATH) ──> the App's handler for it, in this process:
        pull_request ── a fork's or Dependabot's, without the keys its judges need
                     │                 ──> the no-keys run (`forks`)
                     └─ otherwise ──> judging's router (the App's, unchanged); a new
                        head (synchronize) first revokes the auto-merge and the merge
                        queue entry an earlier accept started (`reactions.revoke_merge`)
        push ──────────────────────> judging's router
        merge_group checks_requested ──> merging's merge-group handler
        issue_comment ─────────────> the App's commands (`comments`)
    with: the App's GitHub client on the workflow's token (`github`), a fresh SQLite
    file in the runner's directory as storage (what the Actions cache keeps; of a
    restored one only its plain data is taken in, and its verdicts only where they
    cannot pass a gate: `cache`), and this package's reactions (`reactions`: no App
    queue; merge on accept)
    then: the sha's state ──> outputs, step summary, verdict records, exit status

No decision is made here: the flow, the conclusion table, the commands' authorisation
and the renderers are the App's.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
import httpx
from gidgethub import HTTPException
from gidgethub.sansio import Event

from bot.action import cache, comments, forks
from bot.action.environment import RunEnvironment
from bot.action.github import (
    GITHUB_ACTIONS_APP_ID,
    WORKFLOW_INSTALLATION,
    WorkflowGitHub,
    event_head,
    learn_actions_app,
)
from bot.action.outcome import RunOutcome, outcome_of, without_run
from bot.action.reactions import ActionReactions, revoke_merge
from bot.action.settings import ActionSettings, MergeOnAccept
from bot.github.client import RetryPolicy
from bot.github.gateway import RepoGateway
from bot.intake.dispatch import Context
from bot.judge.engine import JudgeEngine
from bot.judge.records import VerdictRecord
from bot.judge.settings import JudgeSettings, Mode
from bot.judging import handlers as judging
from bot.judging.flow import config_or_none
from bot.judging.reactions import REACTIONS
from bot.judging.repo_config import effective_mode
from bot.judging.state import load_state, state_key
from bot.judging.target import target_from_pull_request
from bot.merging import handlers as merging
from bot.services import ServiceHub, Services
from bot.settings.features import FeatureSettings
from bot.storage import storage_from_url
from bot.storage.base import Delivery, Storage
from bot.storage.sqlite_import import Restored

log = logging.getLogger(__name__)

CACHE_FILE = "verdict-cache.sqlite3"
RECORDS_FILE = "verdicts.jsonl"
# The pull request actions that judge its head (the others: judging's router decides).
JUDGING_ACTIONS = frozenset({"opened", "synchronize", "reopened", "ready_for_review"})
FORBIDDEN = 403


@dataclass(frozen=True)
class RunSettings:
    judge: JudgeSettings
    action: ActionSettings
    features: FeatureSettings
    write_interval: float = 1.0


@dataclass(frozen=True)
class Files:
    directory: Path

    @property
    def cache(self) -> Path:
        return self.directory / CACHE_FILE

    @property
    def records(self) -> Path:
        return self.directory / RECORDS_FILE


async def run_event(
    env: RunEnvironment, payload: dict[str, Any], settings: RunSettings, files: Files
) -> RunOutcome:
    """Handle the run's event (module docstring); the verdict records of this run are
    written to `files.records` whatever happens after the judges spoke."""
    files.directory.mkdir(parents=True, exist_ok=True)
    restored = cache.set_aside(files.cache)
    storage = storage_from_url(f"sqlite:///{files.cache}")
    await storage.open()
    before = await storage.last_verdict_seq()
    try:
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60), trust_env=True) as s,
            httpx.AsyncClient(timeout=httpx.Timeout(60.0, connect=10.0)) as llm,
        ):
            context = _context(env, payload, settings, storage, s, llm)
            head = event_head(env.event_name, payload)
            if head:
                await learn_actions_app(context.services.github, env.repository, head)
            if restored is not None:
                await take_in_restored(context, payload, settings, files.cache, restored)
            try:
                return await _handle(
                    Event(payload, event=env.event_name, delivery_id=env.run_name),
                    context,
                    settings,
                )
            finally:
                await write_records(storage, before, files.records)
    finally:
        await storage.close()


async def take_in_restored(
    context: Context, payload: Mapping[str, Any], settings: RunSettings, fresh: Path, restored: Path
) -> Restored:
    """The restored cache's plain data, in the run's fresh storage (`cache`)."""
    verdicts = await restored_verdicts_may_answer(context, payload, settings)
    taken = await asyncio.to_thread(cache.take_in, fresh, restored, verdicts=verdicts)
    if taken.refused:
        log.warning(cache.refused_line(taken.refused))
    return taken


async def restored_verdicts_may_answer(
    context: Context, payload: Mapping[str, Any], settings: RunSettings
) -> bool:
    """Whether a verdict this run did not reach itself may decide it: only where no
    verdict can pass a gate or start a merge (advisory mode, by the repository's config
    as judging reads it, and merge on accept off). A comment that is no command judges
    nothing and reads no config."""
    if settings.action.action_merge is not MergeOnAccept.OFF:
        return False
    if context.delivery.event == "issue_comment" and not comments.is_command(payload):
        return False
    repository = str(payload["repository"]["full_name"])
    branch = str(payload["repository"].get("default_branch") or "main")
    client = await context.services.github.installation_client(WORKFLOW_INSTALLATION)
    config = await config_or_none(RepoGateway(client, repository), context, branch)
    return effective_mode(config, settings.judge.mode) is Mode.ADVISORY


def _context(
    env: RunEnvironment,
    payload: Mapping[str, Any],
    settings: RunSettings,
    storage: Storage,
    session: aiohttp.ClientSession,
    llm: httpx.AsyncClient,
) -> Context:
    github = WorkflowGitHub(
        app_id=GITHUB_ACTIONS_APP_ID,
        private_key="",
        session=session,
        api_url=env.api_url,
        graphql_url=env.graphql_url,
        policy=RetryPolicy(write_interval=settings.write_interval),
        token=env.token,
    )
    services = Services(
        github=github,
        judge_settings=settings.judge,
        engine=JudgeEngine.from_settings(settings.judge, llm, storage),
        llm_client=llm,
        # One attempt: a run that fails completes its check run (gave up) rather than
        # leaving it in progress, and the job's log says why.
        max_attempts=1,
        research=settings.features.research,
    )
    hub = ServiceHub(services)
    action = settings.action
    hub.plug(REACTIONS, ActionReactions(action.action_merge, action.action_merge_method))
    now = datetime.now(UTC)
    delivery = Delivery.in_hand(
        env.run_name,
        env.event_name,
        action=str(payload.get("action") or "") or None,
        installation_id=WORKFLOW_INSTALLATION,
        repository=env.repository,
        body=b"",
        now=now,
    )
    return Context(delivery, storage, hub)


async def _handle(event: Event, context: Context, settings: RunSettings) -> RunOutcome:
    data = event.data
    repository = str(data["repository"]["full_name"])
    head_sha: str | None
    if event.event == "pull_request":
        why = forks.needs_keys(data, settings.judge) if _judges_head(data) else None
        if why is not None:
            return await _without_keys(data, context, why)
        if data.get("action") == "synchronize":
            await revoke_merge(
                context,
                target_from_pull_request(data, WORKFLOW_INSTALLATION),
                settings.action.action_merge,
            )
        await judging.router.dispatch(event, context)
        head_sha = str(data["pull_request"]["head"]["sha"])
    elif event.event == "push":
        await judging.router.dispatch(event, context)
        head_sha = str(data.get("after") or "")
    elif event.event == "merge_group":
        if data.get("action") == "checks_requested":
            await merging.on_merge_group(event, context)
        head_sha = str(data["merge_group"]["head_sha"])
    else:
        head_sha = await comments.carry_out_comment(event, context)
    return await outcome_for(context, repository, head_sha)


def _judges_head(data: Mapping[str, Any]) -> bool:
    return data.get("action") in JUDGING_ACTIONS and not data["pull_request"].get("draft")


async def _without_keys(
    data: Mapping[str, Any], context: Context, why: forks.Withheld
) -> RunOutcome:
    target = target_from_pull_request(data, WORKFLOW_INSTALLATION)
    client = await context.services.github.installation_client(WORKFLOW_INSTALLATION)
    gateway = RepoGateway(client, target.repository)
    output, mode = await forks.no_keys_output(target, context, gateway, why)
    try:
        await forks.conclude_without_keys(target, context, gateway, output, mode)
    except HTTPException as exc:
        if exc.status_code != FORBIDDEN:
            raise
        # A fork's token is read-only: the job's own result carries the conclusion.
        summary = (
            "GitHub refused the `judge` check run: a fork's workflow token cannot write "
            f"checks. This job's result stands for it.\n\n{output.summary}"
        )
        assert output.conclusion is not None
        return without_run("skipped", output.conclusion, output.title, summary)
    return await outcome_for(context, target.repository, target.head_sha)


async def outcome_for(context: Context, repository: str, head_sha: str | None) -> RunOutcome:
    """The sha's outcome as stored, with its run's title and summary read back."""
    if not head_sha:
        return RunOutcome()
    state = await load_state(context.storage, state_key(repository, head_sha))
    if state is None or state.check_run_id is None:
        return outcome_of(state)
    client = await context.services.github.installation_client(WORKFLOW_INSTALLATION)
    owner, name = repository.split("/", 1)
    shown = await client.getitem(
        "/repos/{owner}/{repo}/check-runs/{check_run_id}",
        {"owner": owner, "repo": name, "check_run_id": state.check_run_id},
    )
    return outcome_of(state, shown)


async def write_records(storage: Storage, after_seq: int, path: Path) -> int:
    """The verdict records this run appended (after `after_seq`), one JSON line each
    (`judge-bot verdicts export`'s lines); returns how many."""
    stored = await storage.list_verdicts()
    lines = [
        VerdictRecord.model_validate(v.record).to_jsonl() + "\n"
        for v in stored
        if v.seq > after_seq
    ]
    await asyncio.to_thread(path.write_text, "".join(lines), encoding="utf-8")
    return len(lines)
