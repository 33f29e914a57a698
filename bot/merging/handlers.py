"""Merge queue events: what GitHub tells us that moves a pull request in or out of its
queue, or makes a waiting head worth another look.

    pull_request closed ─────────────── leaves (merged at the judged sha: recorded merged,
                                        counted on /metrics)
    pull_request converted_to_draft ─── leaves
    pull_request edited (base changed) ─ leaves;  edited otherwise ─> nudge
    pull_request synchronize ────────── leaves, unless the queue moved the head itself
    pull_request dequeued ───────────── GitHub's merge queue took it out: why, recorded
    (GitHub's merge queue: "leaves" is `dequeuePullRequest`, `github_handover`)
    pull_request labeled/unlabeled ──── hold label or merge label: admit again (enter/leave)
    pull_request_review submitted/dismissed ── admit again (human approval), nudge
    check_suite / check_run completed, status, push ── nudge the repository's queues
        (and try again the take-outs GitHub's queue refused while a group held them)
    merge_group checks_requested ── the `judge` run on the group's head (`merge_group`):
        its pull requests' accepts carried over, the group failed for a rejected one, or
        the group's change judged; its pull requests remembered (`group_runs`)
    merge_group destroyed ─────────── forget the group's sha, unless it was merged; retry
        the refused take-outs (the group no longer locks them)

A nudge makes the pending heads due now (a head being stepped: once its step settles)
and rings the worker (`worker`); the retry
delay is only the fallback when GitHub says nothing. Steps run in the worker, never here.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from gidgethub.abc import GitHubAPI
from gidgethub.routing import Router
from gidgethub.sansio import Event

from bot.intake.dispatch import Context
from bot.judging.check_run import CheckRunOutput, finish_output
from bot.judging.config_file import RepoConfigError
from bot.judging.config_store import load_repo_config
from bot.judging.flow import config_or_none, judge_target
from bot.judging.repo_config import RepoConfig
from bot.judging.run_handle import forget_sha
from bot.judging.run_notices import render_nothing_to_judge
from bot.judging.state import load_state, state_key
from bot.judging.target import Target, task_ref
from bot.merging.approval import admit_pull, queue_key
from bot.merging.batch_review import complete_without_judges
from bot.merging.eligibility import PullFacts, is_approval, merge_policy, pull_outcome
from bot.merging.github_calls import MergeCalls
from bot.merging.github_handover import (
    HandedOver,
    HandoverState,
    forget_group,
    handed_over,
    leaves,
    mark_left,
    mark_merged,
    pending_take_outs,
    prune,
    remember_group,
    take_out,
)
from bot.merging.group_runs import fail_groups
from bot.merging.merge_group import (
    REJECT,
    GroupPlan,
    GroupPull,
    decide_group,
    fail_summary,
    judge_reason,
    merged_heads,
    pass_summary,
    pull_with_head,
    pulls_named_by_ref,
)
from bot.merging.merge_metrics import observe_merge
from bot.storage.base import MergeStatus

log = logging.getLogger(__name__)
router = Router()

GroupParents = Mapping[str, Sequence[str]]


def _sender(data: dict[str, Any]) -> str:
    return str((data.get("sender") or {}).get("login") or "github")


async def _leave_github(
    context: Context, data: dict[str, Any], reason: str, sha: str | None = None
) -> HandedOver | None:
    """Out of GitHub's merge queue (`github_handover.leaves` says when); the record as it
    was, or None when it was not there."""
    repository = str(data["repository"]["full_name"])
    record = await handed_over(context.storage, repository, int(data["pull_request"]["number"]))
    if not leaves(record, sha) or context.installation_id is None:
        return None
    assert record is not None
    client = await context.services.github.installation_client(context.installation_id)
    await take_out(context.storage, client, record, reason, context.clock())
    return record


async def _leave(context: Context, data: dict[str, Any], status: MergeStatus, reason: str) -> None:
    if status is not MergeStatus.MERGED:
        await _leave_github(context, data, reason)
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
    full_name = str(event.data["repository"]["full_name"])
    repository = queue_key(full_name)
    if pull.merged and await _merged_by_github_queue(context, full_name, pull):
        return
    active = await context.storage.active_merge(repository, pull.number)
    if active is None:
        if pull.merged:
            await _count_app_merge(context, full_name, pull)
        else:
            await _leave_github(context, event.data, "closed")
        return
    if pull.merged and pull.head_sha == active.judged_sha:
        await _leave(context, event.data, MergeStatus.MERGED, "merged at the judged commit")
        await observe_merge(context, full_name, pull.number, "app", active.enqueued_at)
    else:
        await _leave(context, event.data, MergeStatus.DROPPED, "closed")


async def _merged_by_github_queue(context: Context, full_name: str, pull: PullFacts) -> bool:
    """GitHub's merge queue merged what the App handed it, at the judged head. A record
    already marked left counts too: GitHub's `dequeued` for the merge may come first, its
    reason saying nothing the App should guess from."""
    record = await handed_over(context.storage, full_name, pull.number)
    if record is None or record.state is HandoverState.MERGED or record.sha != pull.head_sha:
        return False
    await mark_merged(context.storage, record, context.clock())
    await observe_merge(context, full_name, pull.number, "github", record.enqueued_at)
    return True


async def _count_app_merge(context: Context, full_name: str, pull: PullFacts) -> None:
    """The queue's worker records its merge before GitHub's `closed` arrives: counted here,
    once per delivery, when the pull request's last move was that merge at this head."""
    events = await context.storage.list_merge_events(queue_key(full_name), pull.number)
    if not events or events[-1].to_status is not MergeStatus.MERGED:
        return
    if events[-1].judged_sha != pull.head_sha:
        return
    entered = next(
        (
            e.at
            for e in reversed(events)
            if e.entry_id == events[-1].entry_id and e.from_status is None
        ),
        events[-1].at,
    )
    await observe_merge(context, full_name, pull.number, "app", entered)


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


@router.register("pull_request", action="synchronize")
async def on_push_to_github_queued(event: Event, context: Context) -> None:
    """A new head takes the pull request out of GitHub's queue (GitHub does so too; the
    record then says why), unless the queued head is the pull request's head now. The
    live head decides, not the event's `after`: a late or redelivered `synchronize` for an
    older head must not take out a newer head the judges accepted since."""
    data = event.data
    repository = str(data["repository"]["full_name"])
    record = await handed_over(context.storage, repository, int(data["pull_request"]["number"]))
    if record is None or record.state is not HandoverState.QUEUED or not context.installation_id:
        return
    client = await context.services.github.installation_client(context.installation_id)
    live = await MergeCalls(client, repository).pull(record.pull_number)
    await _leave_github(context, data, "new commits pushed", str(live["head"]["sha"]))


@router.register("pull_request", action="dequeued")
async def on_dequeued(event: Event, context: Context) -> None:
    """GitHub's merge queue took the pull request out (a failing group, a person, a
    push): the reason GitHub gives is what the dashboard shows."""
    data = event.data
    record = await handed_over(
        context.storage, str(data["repository"]["full_name"]), int(data["pull_request"]["number"])
    )
    if record is None or record.state is not HandoverState.QUEUED:
        return
    if (data.get("pull_request") or {}).get("merged"):
        return  # merged: `closed` says so, and counts it
    reason = str(data.get("reason") or "removed").replace("_", " ").lower()
    await mark_left(context.storage, record, f"GitHub's merge queue: {reason}", context.clock())


def _concerns_admission(event: Event, hold_label: str, merge_label: str | None) -> bool:
    """Only the hold label and the merge label move a pull request in or out: the queue's
    own escalation labels must not let it back in."""
    if event.event != "pull_request":
        return True
    name = str((event.data.get("label") or {}).get("name") or "").casefold()
    return name in {hold_label.casefold(), (merge_label or "").casefold()} - {""}


async def _accepted_at(context: Context, repository: str, number: int, head_sha: str) -> bool:
    state = await load_state(context.storage, state_key(repository, head_sha))
    return is_approval(pull_outcome(state, number))


async def _could_move(context: Context, data: dict[str, Any]) -> bool:
    """A label or a review moves only a pull request already queued, or one the judge
    accepted at the head the event names: anything else is answered from storage alone,
    without a token, a config read or a pull request fetch (most reviews and labels)."""
    pull = data["pull_request"]
    repository = str(data["repository"]["full_name"])
    if await context.storage.active_merge(queue_key(repository), int(pull["number"])):
        return True
    head_sha = str((pull.get("head") or {}).get("sha") or "")
    number = int(pull["number"])
    return bool(head_sha) and await _accepted_at(context, repository, number, head_sha)


async def _held_out_of_github(context: Context, event: Event, hold_label: str) -> None:
    """The hold label takes a pull request out of GitHub's queue even when merging was
    turned off (or judge.yml broke) after the App handed it over: nothing else would."""
    label = str((event.data.get("label") or {}).get("name") or "")
    labeled = event.event == "pull_request" and event.data.get("action") == "labeled"
    if labeled and label.casefold() == hold_label.casefold():
        await _leave_github(context, event.data, f"held by the `{hold_label}` label")


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
    if not await _could_move(context, data):
        await _nudge(context, data, int(data["pull_request"]["number"]))
        return
    client = await context.services.github.installation_client(context.installation_id)
    gateway = MergeCalls(client, str(repository["full_name"]))
    try:
        config: RepoConfig | None = await load_repo_config(
            gateway,
            context.storage,
            str(repository.get("default_branch") or "main"),
            context.clock(),
        )
    except RepoConfigError:
        config = None  # merging is off (`merge_policy`), the hold label still holds
    policy = merge_policy(
        None if config is None else config.merge, context.services.merge.merge_on_approve
    )
    if not policy.enabled:
        await _held_out_of_github(context, event, policy.hold_label)
    if not policy.enabled or not _concerns_admission(event, policy.hold_label, policy.label):
        await _nudge(context, data, int(data["pull_request"]["number"]))
        return
    if event.event == "pull_request_review" and not policy.require_human_approval:
        await _nudge(context, data, int(data["pull_request"]["number"]))
        return
    raw = await gateway.pull(int(data["pull_request"]["number"]))
    pull = PullFacts.from_json(raw)
    accepted = await _accepted_at(context, gateway.full_name, pull.number, pull.head_sha)
    await admit_pull(
        context,
        gateway,
        policy,
        raw,
        accepted_sha=pull.head_sha if accepted else None,
        actor=_sender(data),
    )
    await _nudge(context, data, pull.number)


@router.register("check_suite", action="completed")
@router.register("check_run", action="completed")
@router.register("status")
@router.register("push")
async def on_github_change(event: Event, context: Context) -> None:
    """Checks finished or a branch moved: waiting heads may be mergeable now, and a merge
    group that held a refused take-out may be done with it."""
    await _nudge(context, event.data)
    await _retry_take_outs(context, event.data)


async def _retry_take_outs(context: Context, data: dict[str, Any]) -> None:
    """The take-outs GitHub's queue refused (a group being tested locked the entry), tried
    again; they stay pending while GitHub still refuses."""
    repository = str((data.get("repository") or {}).get("full_name") or "")
    if not repository or context.installation_id is None:
        return
    pending = await pending_take_outs(context.storage, repository)
    if not pending:
        return
    client = await context.services.github.installation_client(context.installation_id)
    for record in pending:
        await take_out(context.storage, client, record, record.pending_out, context.clock())


# -- GitHub's merge queue -------------------------------------------------------------


def _group_target(data: dict[str, Any], installation_id: int) -> Target:
    group = data["merge_group"]
    repository = data["repository"]
    head = str(group["head_sha"])
    message = str((group.get("head_commit") or {}).get("message") or "")
    url = repository.get("html_url")
    return Target(
        repository=str(repository["full_name"]),
        installation_id=installation_id,
        head_sha=head,
        default_branch=str(repository.get("default_branch") or "main"),
        task=task_ref(str(repository["full_name"]), sha=head),
        trigger="merge_group.checks_requested",
        title=(message.splitlines() or [""])[0],
        body=message,
        compare_base=str(group["base_sha"]),
        html_url=str(url).rstrip("/") if isinstance(url, str) and url else None,
    )


async def _group_pulls(
    context: Context, gateway: MergeCalls, group: dict[str, Any], parents: GroupParents
) -> list[GroupPull]:
    """The group's pull requests in queue order (`merge_group` says how they are found),
    each with the verdict stored for its head and, when accepted, its files' blobs."""
    base = str(group.get("base_ref") or "").removeprefix("refs/heads/")
    heads: dict[int, str] = {}
    for head in merged_heads(parents, str(group["base_sha"]), str(group["head_sha"])):
        number = pull_with_head(await gateway.pulls_with_commit(head), head, base)
        if number is not None:
            heads.setdefault(number, head)
    for number in pulls_named_by_ref(str(group["head_ref"])):
        if number not in heads:
            heads[number] = str((await gateway.pull(number))["head"]["sha"])
    pulls = []
    for number, head in heads.items():
        state = await load_state(context.storage, state_key(gateway.full_name, head))
        verdict = pull_outcome(state, number)
        changed, blobs = await gateway.pull_blobs(number) if verdict == "accept" else ([], {})
        pulls.append(GroupPull(number, head, verdict, tuple(changed), blobs))
    return pulls


async def _fail_if_rejected_since(
    context: Context, client: GitHubAPI, target: Target, pulls: Sequence[GroupPull]
) -> None:
    """A reject of a member at the head the group merges, landing while the group was
    being decided, failed the group's run (`group_runs.fail_groups`); the group's own
    completion may have written its accept over that failure just after: fail it again."""
    for pull in pulls:
        state = await load_state(context.storage, state_key(target.repository, pull.head_sha))
        verdict = pull_outcome(state, pull.number)
        if verdict == REJECT:
            group = [target.head_sha]
            await fail_groups(
                context.storage,
                client,
                target.repository,
                group,
                pull.number,
                pull.head_sha,
                verdict,
            )
            return


@router.register("merge_group", action="checks_requested")
async def on_merge_group(event: Event, context: Context) -> None:
    """Required checks must report on merge groups, or the queue waits for ever."""
    if context.installation_id is None:
        return
    group = event.data["merge_group"]
    target = _group_target(event.data, context.installation_id)
    client = await context.services.github.installation_client(context.installation_id)
    gateway = MergeCalls(client, target.repository)
    config = await config_or_none(gateway, context, target.default_branch)
    change = await gateway.group_commits(str(group["base_sha"]), target.head_sha)
    # A list GitHub may have cut leaves files nobody saw: they count as unread.
    unseen = None if change.complete else len(change.files) + 1
    target = replace(
        target, changed=tuple(change.files), commits=tuple(change.commits), listed_files=unseen
    )
    if config is None:
        await judge_target(target, context, owner=context.delivery.delivery_id)
        return
    pulls = await _group_pulls(context, gateway, group, change.parents)
    members = [(p.number, p.head_sha) for p in pulls]
    await remember_group(
        context.storage, target.repository, target.head_sha, members, context.clock()
    )
    decision = decide_group(config, pulls, change.files, change.blobs, complete=change.complete)
    if decision.plan is GroupPlan.FAIL:
        title, summary = fail_summary(pulls, decision.rejected, target.head_sha)
        output = finish_output(CheckRunOutput(conclusion="failure", title=title, summary=summary))
        await complete_without_judges(context, gateway, target, output, "reject", "merge group")
        return
    if decision.plan is GroupPlan.PASS:
        title, summary = pass_summary(pulls, target.head_sha)
        output = finish_output(CheckRunOutput(conclusion="success", title=title, summary=summary))
        await complete_without_judges(context, gateway, target, output, "accept", "merge group")
    elif decision.plan is GroupPlan.NOTHING:
        output = render_nothing_to_judge("the merge group changes no watched file")
        await complete_without_judges(context, gateway, target, output, "skipped", "merge group")
    else:
        log.info(
            "merge group %s is judged: %s",
            target.head_sha,
            judge_reason(decision),
            extra=context.log_extra(),
        )
        await judge_target(target, context, owner=context.delivery.delivery_id)
    await _fail_if_rejected_since(context, client, target, pulls)


@router.register("merge_group", action="destroyed")
async def on_merge_group_destroyed(event: Event, context: Context) -> None:
    """A group that was merged is the base branch's new commit: its run and verdict stay,
    so the push of that commit is not judged again. Any other group's commit is gone.
    Either way the group no longer holds its pull requests: refused take-outs go again."""
    repository = str(event.data["repository"]["full_name"])
    head = str(event.data["merge_group"]["head_sha"])
    await forget_group(context.storage, repository, head)
    await prune(context.storage, repository, context.clock())
    await _retry_take_outs(context, event.data)
    if event.data.get("reason") == "merged":
        return
    await forget_sha(context.storage, state_key(repository, head))
