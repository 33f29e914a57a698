"""The judging routers: which webhooks start a judgment (the flow itself: `flow`).

    pull_request opened, synchronize, reopened, ready_for_review ──> judge_target
    pull_request labeled/unlabeled with the skip label ──> remember who granted it, judge
    pull_request edited with a new base branch ──> judge the head again
    push (not a deletion; watched files are learnt by the flow) ──> judge_target
    check_run / check_suite completed, status: CI reran for a sha that waits ──> judge it

Handler names are stored per delivery (`intake.dispatch`), so these functions stay here.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, TypeVar

from gidgethub.routing import Router
from gidgethub.sansio import Event

from bot.github.gateway import RepoGateway
from bot.intake.dispatch import Context
from bot.judging import ci_gate
from bot.judging.config_store import CONFIG_PATH, forget_repo_config
from bot.judging.flow import config_or_none, judge_target
from bot.judging.four_eyes import Actor
from bot.judging.state import (
    LabelGrant,
    claim_ci_rerun,
    load_state,
    save_grant,
    state_key,
)
from bot.judging.target import (
    Target,
    is_queue_branch,
    target_from_pull_request,
    target_from_push,
)
from bot.storage.base import Storage

log = logging.getLogger(__name__)
A = TypeVar("A")
B = TypeVar("B")
T = TypeVar("T")
router = Router()


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
    # A reopened pull request's head was judged when it was open, by another delivery;
    # taking it over judges it again (from the verdict cache: no model is asked), so an
    # accepted head re-enters the merge queue it left when the pull request closed.
    reopened = event.data.get("action") == "reopened"
    await judge_target(target, context, owner=context.delivery.delivery_id, take_over=reopened)


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
    config = await config_or_none(gateway, context, target.default_branch)
    if config is None or not config.skip_label or label != config.skip_label:
        return
    sender = str((event.data.get("sender") or {}).get("login", ""))
    await remember_grant(event.data, gateway, context.storage, target)
    # Taken over but not a rerun: anyone who can label (the author too) must not re-roll
    # the judges this way, so the verdict cache answers and loop prevention holds.
    await judge_target(
        replace(target, labeled_by=sender),
        context,
        owner=context.delivery.delivery_id,
        take_over=True,
    )


@router.register("pull_request", action="edited")
async def on_base_changed(event: Event, context: Context) -> None:
    """A pull request moved to another base branch brings other changes: the head's
    verdict was about the old base's diff, so it is judged again."""
    if context.installation_id is None or event.data["pull_request"].get("draft"):
        return
    if "base" not in (event.data.get("changes") or {}):
        return
    target = target_from_pull_request(event.data, context.installation_id)
    await judge_target(target, context, owner=context.delivery.delivery_id, take_over=True)


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
        by=actor.login,
        by_type=actor.type,
        permission=permission,
        role_name=role or "",
        head_sha=target.head_sha,
    )
    await save_grant(storage, target.repository, target.pull_number, grant)


@router.register("push")
async def on_push(event: Event, context: Context) -> None:
    if context.installation_id is None:
        return
    if is_queue_branch(str(event.data.get("ref") or "")):
        # The merge queue's own branches are no author's push: the queue asks the judges
        # for what a batch's combination changes (bot/merging/batch_review.py).
        return
    target = target_from_push(event.data, context.installation_id)
    if target is None:
        return
    if event.data.get("ref") == f"refs/heads/{target.default_branch}" and touches_config(target):
        await forget_repo_config(context.storage, target.repository)
    await judge_target(target, context, owner=context.delivery.delivery_id)


@router.register("check_suite", action="completed")
@router.register("check_run", action="completed")
@router.register("status")
async def on_ci_finished(event: Event, context: Context) -> None:
    """A sha skipped while its CI failed for want of infrastructure is judged once that
    CI has run again (bot/judging/ci_gate.py): the first webhook that ends the wait
    judges it, the others find the wait taken. Storage only, unless a sha waits."""
    if context.installation_id is None:
        return
    finished = ci_gate.ci_event(event.event, event.data)
    repository = (event.data.get("repository") or {}).get("full_name")
    if finished is None or not isinstance(repository, str):
        return
    key = state_key(repository, finished.head_sha)
    state = await load_state(context.storage, key)
    if state is None or not state.awaiting_ci:
        return
    if not ci_gate.rerun_finished(state.awaiting_ci, finished, context.services.github.app_id):
        return
    target = state.judged_target(f"{finished.kind}.completed")
    owner = context.delivery.delivery_id
    if target is None or not await claim_ci_rerun(context.storage, key, state, owner):
        return
    log.info("CI reran on %s: judging it", finished.head_sha, extra=context.log_extra())
    await judge_target(target, context, owner=owner, take_over=True)


def touches_config(target: Target) -> bool:
    return target.changed is None or any(c.path == CONFIG_PATH for c in target.changed)
