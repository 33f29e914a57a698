"""`/judge` comment commands and the check run's buttons, authorised alike.

    issue_comment created (on a pull request, or on its disagreement issue)
    check_run requested_action ("Re-judge (deep)", "Accept (override)")
        parse -> find the judged head sha -> permission from GitHub -> authorize (pure)
        an override comment decides only the head it was written about (pinned, or
            written after judge-bot first saw the head: `meant_head`); otherwise a reply
            names the current head and nothing changes
        override accept|reject: the check run shows the human decision, an audit record
            with human_override=true is appended, the disagreement issue is closed; the
            outcome reaches the merge queue (an accept approves the head)
        override cancel: the judges' verdict and check run come back
        rerun: judge the head sha again, bypassing the verdict cache; it also resets the
            pull request's circuit breakers (merging.breaker_flow)
        merge --priority: the entry's place in the App's merge queue (recorded with who
            and when); on a branch handed to GitHub's merge queue, `urgent` takes it out
            and queues it again with `jump`. Authorised against the pull request's
            current head, even from a disagreement issue about an older one

Edited and deleted comments are ignored (only `created` is routed), and nothing a bot
says is ever obeyed.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import Any

from gidgethub.routing import Router
from gidgethub.sansio import Event

from bot.commands import plan
from bot.commands.grammar import Command, command_for_action, parse_command
from bot.commands.meant_head import FromComment, FromRun, Origin, written_at
from bot.commands.replies import render_github_queue_refusal, render_priority_reply
from bot.disagreement import sync as disagreements
from bot.github.gateway import RepoGateway
from bot.intake.dispatch import Context
from bot.judge.engine import append_record
from bot.judging.check_run import CHECK_NAME
from bot.judging.config_file import RepoConfigError
from bot.judging.config_store import load_repo_config
from bot.judging.flow import judge_target
from bot.judging.four_eyes import Actor
from bot.judging.reactions import REACTIONS, Concluded
from bot.judging.run_handle import show
from bot.judging.state import ShaState, load_state, save_state, state_key
from bot.judging.target import Target
from bot.merging import breaker_flow, github_handover
from bot.storage.base import MergePriority, Storage

log = logging.getLogger(__name__)
router = Router()

OVERRIDES_APPLIED = "override-applied"


@router.register("issue_comment", action="created")
async def on_comment(event: Event, context: Context) -> None:
    if context.installation_id is None:
        return
    comment = event.data["comment"]
    command = parse_command(str(comment.get("body") or ""))
    if command is None:
        return
    asker = await _asker(event, context, comment.get("user"))
    if asker is None:
        return
    issue = event.data["issue"]

    pull_number: int | None
    if issue.get("pull_request"):
        pull_number = int(issue["number"])
        fallback_sha = None
    else:
        known = await disagreements.change_for_issue(
            context.storage, asker.gateway.full_name, int(issue["number"])
        )
        if known is None:
            return  # not a pull request and not one of our issues: not for us
        pull_number = known.pull_number
        fallback_sha = known.head_sha

    await execute(
        command,
        asker,
        context,
        pull_number=pull_number,
        head_sha=fallback_sha,
        reply_to=int(issue["number"]),
        origin=FromComment(written_at(comment)),
    )


@router.register("check_run", action="requested_action")
async def on_button(event: Event, context: Context) -> None:
    identifier = str((event.data.get("requested_action") or {}).get("identifier"))
    command = command_for_action(identifier)
    if command is not None:
        await on_check_run_request(event, context, command)


@router.register("check_run", action="rerequested")
async def on_rerequested(event: Event, context: Context) -> None:
    """GitHub's "Re-run" is a `/judge rerun` by whoever clicked it, authorised alike."""
    await on_check_run_request(event, context, Command("rerun", raw="Re-run"))


@router.register("check_suite", action="rerequested")
async def on_suite_rerequested(event: Event, context: Context) -> None:
    suite = event.data["check_suite"]
    await act_on_sha(
        event,
        context,
        Command("rerun", raw="Re-run all"),
        head_sha=str(suite["head_sha"]),
        pulls=suite.get("pull_requests") or [],
    )


async def on_check_run_request(event: Event, context: Context, command: Command) -> None:
    run = event.data["check_run"]
    if run.get("name") != CHECK_NAME:
        return
    await act_on_sha(
        event, context, command, head_sha=str(run["head_sha"]), pulls=run.get("pull_requests") or []
    )


async def act_on_sha(
    event: Event, context: Context, command: Command, *, head_sha: str, pulls: list[Any]
) -> None:
    """A request from the checks UI is about the sha of the run it was made on."""
    asker = await _asker(event, context, event.data.get("sender"))
    if asker is None:
        return
    matching = [p for p in pulls if (p.get("head") or {}).get("sha") == head_sha] or pulls
    pull_number = int(matching[0]["number"]) if matching else None
    await execute(
        command,
        asker,
        context,
        pull_number=pull_number,
        head_sha=head_sha,
        reply_to=pull_number,
        origin=FromRun(),
    )


@dataclass(frozen=True)
class Asker:
    """Who made a request, the repository it was made on, and the gateway that answers."""

    actor: Actor
    repository: dict[str, Any]
    gateway: RepoGateway


async def _asker(event: Event, context: Context, user: Any) -> Asker | None:
    """None for a request that is never obeyed: one outside an installation, or a bot's."""
    if context.installation_id is None:
        return None
    actor = Actor.from_user(user)
    if actor.is_bot:
        return None
    repository = event.data["repository"]
    client = await context.services.github.installation_client(context.installation_id)
    return Asker(actor, repository, RepoGateway(client, str(repository["full_name"])))


async def execute(
    command: Command,
    asker: Asker,
    context: Context,
    *,
    pull_number: int | None,
    head_sha: str | None,
    reply_to: int | None,
    origin: Origin,
) -> None:
    """Authorise and carry out a command. `head_sha` pins the commit (a checks-UI request is
    about its run's commit); without it the pull request's current head is meant, and an
    override comment must have been written about that head (`origin`)."""
    assert context.installation_id is not None
    actor, gateway = asker.actor, asker.gateway
    answer = plan.answer_without_facts(command)
    if answer is not None:
        if reply_to is not None:
            await gateway.comment(reply_to, answer.text)
        return

    pinned_state = None
    if head_sha is not None:
        pinned_state = await load_state(context.storage, state_key(gateway.full_name, head_sha))
    judged = pinned_state.judged_target("command") if pinned_state is not None else None
    if pull_number is None and judged is not None:
        # Runs of fork branches carry no pull_requests: the judged target knows its PR.
        pull_number = judged.pull_number
    replies = Replies(gateway, reply_to if reply_to is not None else pull_number)

    pull = await gateway.pull(pull_number) if pull_number is not None else None
    pull_head = str(pull["head"]["sha"]) if pull is not None else None
    located = plan.locate(command, actor, pinned_sha=head_sha, pull_head=pull_head)
    if isinstance(located, plan.Reply):
        await replies.send(located.text)
        return
    if located is None:
        return
    key = state_key(gateway.full_name, located)
    if pinned_state is not None and located == head_sha:
        state: ShaState | None = pinned_state
    else:
        state = await load_state(context.storage, key)
    permission, role = await gateway.permission(actor.login)
    facts = plan.CommandFacts(
        head_sha=located,
        state=state,
        pull=pull,
        repository=asker.repository,
        installation_id=context.installation_id,
        permission=permission,
        origin=origin,
        role_name=role or "",
    )
    await carry_out(plan.plan_command(command, actor, facts), command, actor, context, replies)


@dataclass(frozen=True)
class Replies:
    """Answers go to the comment's thread, or the pull request of a checks-UI request."""

    gateway: RepoGateway
    number: int | None

    async def send(self, text: str) -> None:
        if self.number is not None:
            await self.gateway.comment(self.number, text)


async def carry_out(
    decided: plan.Plan, command: Command, actor: Actor, context: Context, replies: Replies
) -> None:
    if isinstance(decided, plan.Refusal):
        log.info("command refused: %s", decided.code, extra=context.log_extra())
        await replies.send(decided.text)
    elif isinstance(decided, plan.Reply):
        await replies.send(decided.text)
    elif isinstance(decided, plan.Rerun):
        await breaker_flow.reset(context, decided.target)
        await judge_target(decided.target, context, owner=context.delivery.delivery_id)
    elif isinstance(decided, plan.SetPriority):
        await replies.send(await apply_priority(decided, actor, context, replies.gateway))
    else:
        await apply_override(command, actor, context, replies, decided.state)


async def apply_priority(
    decided: plan.SetPriority, actor: Actor, context: Context, gateway: RepoGateway
) -> str:
    """Reorder the App's queue, or let GitHub's queue jump; the reply to the commenter."""
    storage, now = context.storage, context.clock()
    repository, number = gateway.full_name, decided.pull_number
    priority = decided.priority.value
    entry = await storage.set_merge_priority(
        repository, number, decided.priority, actor=actor.login, now=now
    )
    if entry is not None:
        context.hub.merge_doorbell.ring()
        queue = await storage.merge_queue(repository, entry.base_branch)
        # None: the entry left the queue (merged, taken out) since its priority was set.
        position = next((i for i, queued in enumerate(queue, 1) if queued.id == entry.id), None)
        return render_priority_reply(actor, priority, entry.base_branch, position)
    record = await github_handover.handed_over(storage, repository, number)
    if record is None or record.state is not github_handover.HandoverState.QUEUED:
        return render_priority_reply(actor, priority, decided.base_branch, None)
    if decided.priority is not MergePriority.URGENT:
        return render_github_queue_refusal(actor, priority, record.base_branch, "")
    reason = f"queued again to jump ahead (urgent, @{actor.login})"
    out = await github_handover.take_out(storage, gateway.client, record, reason, now)
    if not out.ok:
        return render_github_queue_refusal(actor, priority, record.base_branch, out.message)
    again = github_handover.Handover(
        repository=repository,
        pull_number=number,
        base_branch=record.base_branch,
        node_id=record.node_id,
        sha=record.sha,
        actor=actor.login,
        jump=True,
    )
    answer = await github_handover.hand_over(storage, gateway.client, again, now)
    if not answer.ok:
        base = record.base_branch
        return render_github_queue_refusal(actor, priority, base, answer.message, left=True)
    return render_priority_reply(actor, priority, record.base_branch, 1, jumped=True)


async def apply_override(
    command: Command, actor: Actor, context: Context, replies: Replies, state: ShaState
) -> None:
    gateway = replies.gateway
    decided = plan.plan_override(command, actor, state, context.clock())
    key = state_key(gateway.full_name, decided.target.head_sha)
    # A retried delivery must not log the same human decision twice.
    if await mark_override_applied(context.storage, context.delivery.delivery_id, key):
        await append_record(context.storage, decided.record)
    if decided.close_comment is not None:
        await disagreements.close_for(
            gateway, context.storage, decided.target, decided.close_comment
        )
    assert state.check_run_id is not None
    output = decided.output
    line = await override_reaches_queue(context, gateway, decided.target, decided.state, actor)
    if line is not None:
        output = replace(output, summary=f"{output.summary}\n\n{line}")
    shown = await show(gateway, state.check_run_id, decided.state, output)
    await save_state(context.storage, key, shown)
    await replies.send(decided.reply)


async def mark_override_applied(storage: Storage, delivery_id: str, key: str) -> bool:
    """Whether the delivery applies its override for the first time. The row keeps the
    sha state's `key`, which nothing reads back."""
    return await storage.kv_put_if_absent(OVERRIDES_APPLIED, delivery_id, {"key": key})


async def override_reaches_queue(
    context: Context, gateway: RepoGateway, target: Target, state: ShaState, actor: Actor
) -> str | None:
    """An authorised override accept approves the head for the merge queue like the
    judges' accept; reject takes it out, cancel brings the judges' outcome back."""
    final = state.override.verdict.value if state.override is not None else state.verdict
    try:
        config = await load_repo_config(
            gateway, context.storage, target.default_branch, context.clock()
        )
    except RepoConfigError:
        config = None
    # Through the plug, as the judges' outcome goes: whoever reacts to an accept (the App's
    # queue, or the Action's hand-over to GitHub) reacts to this one alike.
    reactions = context.hub.plugged(REACTIONS)
    return await reactions.concluded(
        context, Concluded(config, target, str(final), actor=actor.login)
    )
