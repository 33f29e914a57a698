"""Merge queue events: what GitHub tells us that moves a pull request in or out of its
queue, or makes a waiting head worth another look.

    pull_request closed ─────────────── leaves (merged at the judged sha: recorded merged)
    pull_request converted_to_draft ─── leaves
    pull_request edited (base changed) ─ leaves;  edited otherwise ─> nudge
    pull_request synchronize ────────── leaves, unless the queue moved the head itself
    pull_request labeled/unlabeled ──── hold label or merge label: admit again (enter/leave)
    pull_request_review submitted/dismissed ── admit again (human approval), nudge
    check_suite / check_run completed, status, push ── nudge the repository's queues

A nudge makes the pending heads due now and rings the worker (`worker`); the retry
delay is only the fallback when GitHub says nothing. Steps run in the worker, never here.
"""

from __future__ import annotations

import logging
from typing import Any

from gidgethub.routing import Router
from gidgethub.sansio import Event

from bot.github.gateway import RepoGateway
from bot.intake.dispatch import Context
from bot.judging.config_file import RepoConfigError
from bot.judging.config_store import load_repo_config
from bot.judging.state import load_state, state_key
from bot.merging.approval import admit, queue_key
from bot.merging.eligibility import PullFacts, is_approval, merge_policy
from bot.merging.github_calls import MergeCalls
from bot.storage.base import MergeStatus

log = logging.getLogger(__name__)
router = Router()


def _sender(data: dict[str, Any]) -> str:
    return str((data.get("sender") or {}).get("login") or "github")


async def _leave(context: Context, data: dict[str, Any], status: MergeStatus, reason: str) -> None:
    pull = data["pull_request"]
    ended = await context.storage.leave_merge_queue(
        queue_key(str(data["repository"]["full_name"])),
        int(pull["number"]),
        status=status,
        actor=_sender(data),
        reason=reason,
        now=context.clock(),
    )
    if ended is not None:
        context.hub.merge_doorbell.ring()


async def _nudge(context: Context, data: dict[str, Any], pull_number: int | None = None) -> None:
    repository = (data.get("repository") or {}).get("full_name")
    if not repository:
        return
    changed = await context.storage.nudge_merge_queue(
        queue_key(str(repository)), context.clock(), pull_number=pull_number
    )
    if changed:
        context.hub.merge_doorbell.ring()


@router.register("pull_request", action="closed")
async def on_closed(event: Event, context: Context) -> None:
    pull = PullFacts.from_json(event.data["pull_request"])
    repository = queue_key(str(event.data["repository"]["full_name"]))
    active = await context.storage.active_merge(repository, pull.number)
    if active is None:
        return
    if pull.merged and pull.head_sha == active.judged_sha:
        await _leave(context, event.data, MergeStatus.MERGED, "merged at the judged commit")
    else:
        await _leave(context, event.data, MergeStatus.DROPPED, "closed")


@router.register("pull_request", action="converted_to_draft")
async def on_draft(event: Event, context: Context) -> None:
    await _leave(context, event.data, MergeStatus.DROPPED, "converted to draft")


@router.register("pull_request", action="edited")
async def on_edited(event: Event, context: Context) -> None:
    if "base" in (event.data.get("changes") or {}):
        base = str(event.data["pull_request"]["base"]["ref"])
        await _leave(context, event.data, MergeStatus.DROPPED, f"base branch changed to {base}")
    else:
        await _nudge(context, event.data, int(event.data["pull_request"]["number"]))


@router.register("pull_request", action="synchronize")
async def on_push_to_pull(event: Event, context: Context) -> None:
    """A new head leaves the queue, except the one the queue made itself (update-branch),
    or one the judge already accepted while this delivery waited (judging runs first)."""
    pull = event.data["pull_request"]
    repository = queue_key(str(event.data["repository"]["full_name"]))
    active = await context.storage.active_merge(repository, int(pull["number"]))
    if active is None:
        return
    after = str(event.data.get("after") or pull["head"]["sha"])
    before = str(event.data.get("before") or "")
    if active.judged_sha == after:
        return
    if active.judged_sha is None and active.updating_from == before:
        return
    await _leave(context, event.data, MergeStatus.DROPPED, "new commits pushed")


def _concerns_admission(event: Event, hold_label: str, merge_label: str | None) -> bool:
    """Only the hold label and the merge label move a pull request in or out: the queue's
    own escalation labels must not let it back in."""
    if event.event != "pull_request":
        return True
    name = str((event.data.get("label") or {}).get("name") or "").casefold()
    return name in {hold_label.casefold(), (merge_label or "").casefold()} - {""}


@router.register("pull_request", action="labeled")
@router.register("pull_request", action="unlabeled")
@router.register("pull_request_review", action="submitted")
@router.register("pull_request_review", action="dismissed")
async def on_admission_change(event: Event, context: Context) -> None:
    """A label or a review may let the pull request in or take it out."""
    if context.installation_id is None:
        return
    data = event.data
    repository = data["repository"]
    client = await context.services.github.installation_client(context.installation_id)
    gateway = RepoGateway(client, str(repository["full_name"]))
    try:
        config = await load_repo_config(
            gateway,
            context.storage,
            str(repository.get("default_branch") or "main"),
            context.clock(),
        )
    except RepoConfigError:
        return
    policy = merge_policy(config.merge, context.services.merge.merge_on_approve)
    if not policy.enabled or not _concerns_admission(event, policy.hold_label, policy.label):
        await _nudge(context, data, int(data["pull_request"]["number"]))
        return
    if event.event == "pull_request_review" and not policy.require_human_approval:
        await _nudge(context, data, int(data["pull_request"]["number"]))
        return
    calls = MergeCalls(client, gateway.full_name)
    pull = PullFacts.from_json(await calls.pull(int(data["pull_request"]["number"])))
    state = await load_state(context.storage, state_key(gateway.full_name, pull.head_sha))
    override = None if state is None or state.override is None else state.override.verdict.value
    accepted = state is not None and is_approval(state.verdict, override)
    await admit(
        context,
        calls,
        policy,
        pull,
        accepted_sha=pull.head_sha if accepted else None,
        actor=_sender(data),
    )
    await _nudge(context, data, pull.number)


@router.register("check_suite", action="completed")
@router.register("check_run", action="completed")
@router.register("status")
@router.register("push")
async def on_github_change(event: Event, context: Context) -> None:
    """Checks finished or a branch moved: waiting heads may be mergeable now."""
    await _nudge(context, event.data)
