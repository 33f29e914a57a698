"""`/judge` comment commands and the check run's buttons, authorised alike.

    issue_comment created (on a pull request, or on its disagreement issue)
    check_run requested_action ("Re-judge (deep)", "Accept (override)")
        parse -> find the judged head sha -> permission from GitHub -> authorize (pure)
        override accept|reject: the check run shows the human decision, an audit record
            with human_override=true is appended, the disagreement issue is closed
        override cancel: the judges' verdict and check run come back
        rerun: judge the head sha again, bypassing the verdict cache

Edited and deleted comments are ignored (only `created` is routed), and nothing a bot
says is ever obeyed.
"""

from __future__ import annotations

import logging
from datetime import datetime
from typing import Any

from gidgethub.routing import Router
from gidgethub.sansio import Event

from bot.commands.grammar import (
    Actor,
    AuthorizationFacts,
    Command,
    authorize,
    command_for_action,
    override_outcome,
    parse_command,
    render_help,
    render_override_reply,
    render_refusal,
)
from bot.disagreement import sync as disagreements
from bot.disagreement.issue import CloseReason, render_close_comment
from bot.github.gateway import RepoGateway
from bot.intake.dispatch import Context
from bot.judge.config import Mode
from bot.judge.engine import append_record
from bot.judge.records import Verdict, VerdictRecord, go_no_go_of
from bot.judging import rules
from bot.judging.check_run import CHECK_NAME, render_check_run, render_override
from bot.judging.handlers import (
    STATE_NAMESPACE,
    Services,
    judge_target,
    show,
    state_key,
)
from bot.judging.target import Target, target_from_pull_request

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
    user = comment.get("user") or {}
    actor = Actor(str(user.get("login", "")), str(user.get("type", "User")))
    if actor.is_bot:
        return
    repository = event.data["repository"]
    issue = event.data["issue"]
    services = Services.of(context)
    client = await services.github.installation_client(context.installation_id)
    gateway = RepoGateway(client, str(repository["full_name"]))

    pull_number: int | None
    if issue.get("pull_request"):
        pull_number = int(issue["number"])
        fallback_sha = None
    else:
        known = await disagreements.change_for_issue(
            context.storage, gateway.full_name, int(issue["number"])
        )
        if known is None:
            return  # not a pull request and not one of our issues: not for us
        pull_number = known.get("pull_number")
        fallback_sha = str(known["head_sha"])

    await execute(
        command,
        actor,
        context,
        gateway,
        repository=repository,
        pull_number=pull_number,
        head_sha=fallback_sha,
        reply_to=int(issue["number"]),
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
    if context.installation_id is None:
        return
    sender = event.data.get("sender") or {}
    actor = Actor(str(sender.get("login", "")), str(sender.get("type", "User")))
    if actor.is_bot:
        return
    repository = event.data["repository"]
    services = Services.of(context)
    client = await services.github.installation_client(context.installation_id)
    gateway = RepoGateway(client, str(repository["full_name"]))
    matching = [p for p in pulls if (p.get("head") or {}).get("sha") == head_sha] or pulls
    pull_number = int(matching[0]["number"]) if matching else None
    await execute(
        command,
        actor,
        context,
        gateway,
        repository=repository,
        pull_number=pull_number,
        head_sha=head_sha,
        reply_to=pull_number,
    )


async def execute(
    command: Command,
    actor: Actor,
    context: Context,
    gateway: RepoGateway,
    *,
    repository: dict[str, Any],
    pull_number: int | None,
    head_sha: str | None,
    reply_to: int | None,
) -> None:
    """Authorise and carry out a command. `head_sha` pins the commit (a checks-UI request is
    about its run's commit); without it the pull request's current head is meant."""
    assert context.installation_id is not None
    pinned = head_sha is not None

    if command.kind in ("help", "invalid"):
        if reply_to is not None:
            await gateway.comment(reply_to, render_help(command))
        return

    state = None
    if head_sha is not None:
        state = await context.storage.kv_get(
            STATE_NAMESPACE, state_key(gateway.full_name, head_sha)
        )
    judged = Target.from_json(state["target"], "command") if state and state.get("target") else None
    if pull_number is None and judged is not None:
        # Runs of fork branches carry no pull_requests: the judged target knows its PR.
        pull_number = judged.pull_number
    reply_to = reply_to if reply_to is not None else pull_number

    async def reply(text: str) -> None:
        if reply_to is not None:
            await gateway.comment(reply_to, text)

    pull: dict[str, Any] | None = None
    if pull_number is not None:
        pull = await gateway.pull(pull_number)
        current = str(pull["head"]["sha"])
        if not pinned:
            head_sha = current
        elif rules.outdated_override(command, pinned_sha=str(head_sha), current_head=current):
            await reply(
                f"@{actor.login}, that check run is for `{str(head_sha)[:7]}`, no longer the "
                f"head of this pull request (`{current[:7]}`); nothing was changed."
            )
            return
    if head_sha is None:
        return
    key = state_key(gateway.full_name, head_sha)
    if not pinned or state is None:
        state = await context.storage.kv_get(STATE_NAMESPACE, key)

    pr_author = str(pull["user"]["login"]) if pull and pull.get("user") else None
    if pr_author is None and state and state.get("target"):
        pr_author = (state["target"] or {}).get("pull_author")
    permission, role = await gateway.permission(actor.login)
    facts = AuthorizationFacts(
        permission=permission,
        role_name=role or "",
        pr_author=pr_author,
        commit_logins=tuple((state or {}).get("commit_people") or ()),
    )
    decision = authorize(command, actor, facts)
    if not decision.allowed:
        log.info("command refused: %s", decision.code, extra=context.log_extra())
        await reply(render_refusal(decision, command, actor))
        return

    if command.kind == "rerun":
        if state is not None and state.get("target"):
            target = Target.from_json(state["target"], "command.rerun")
        elif pull is not None and str(pull["head"]["sha"]) == head_sha:
            target = target_from_pull_request(
                {"pull_request": pull, "repository": repository, "action": "rerun"},
                context.installation_id,
            )
        else:
            await reply(f"@{actor.login}, `{head_sha[:7]}` was never judged; nothing to re-run.")
            return
        await judge_target(
            target.rerun("command.rerun", force_deep=command.deep),
            context,
            owner=context.delivery.delivery_id,
        )
        return

    if state is None or not state.get("records") or not state.get("check_run_id"):
        await reply(
            f"@{actor.login}, there is no judged verdict for `{head_sha[:7]}` to override yet."
        )
        return
    await apply_override(command, actor, context, gateway, state, key, reply_to)


async def apply_override(
    command: Command,
    actor: Actor,
    context: Context,
    gateway: RepoGateway,
    state: dict[str, Any],
    key: str,
    reply_to: int | None,
) -> None:
    records = [VerdictRecord.model_validate(r) for r in state["records"]]
    judged = Verdict(str(state["verdict"]))
    mode = Mode(str(state.get("mode") or "advisory"))
    outcome = override_outcome(command, judged, mode)
    target = Target.from_json(state["target"], "command.override")
    record = override_record(
        records[-1], outcome.final_verdict, actor.login, command, context.clock()
    )
    # A retried delivery must not log the same human decision twice.
    first_time = await context.storage.kv_put_if_absent(
        OVERRIDES_APPLIED, context.delivery.delivery_id, {"key": key}
    )
    if first_time:
        await append_record(context.storage, record)
    run_id = int(state["check_run_id"])
    if command.action == "cancel":
        output = render_check_run(records, mode)
        state["override"] = None
    else:
        output = render_override(record, actor.login, mode, judged=judged)
        state["override"] = {"verdict": outcome.final_verdict.value, "by": actor.login}
        await disagreements.close_for(
            gateway,
            context.storage,
            target,
            render_close_comment(
                CloseReason.OVERRIDDEN, actor.login, verdict=outcome.final_verdict
            ),
        )
    await show(gateway, run_id, state, output)
    await context.storage.kv_put(STATE_NAMESPACE, key, state)
    if reply_to is not None:
        await gateway.comment(
            reply_to,
            render_override_reply(command, actor, outcome, judged_verdict=judged, mode=mode),
        )


def override_record(
    judged: VerdictRecord, verdict: Verdict, decided_by: str, command: Command, now: datetime
) -> VerdictRecord:
    """The audit record of a human decision: the judged record, re-stamped. A cancel is
    recorded too (human_override false) so the log shows the whole history."""
    cancelled = command.action == "cancel"
    return judged.model_copy(
        update={
            "verdict": verdict,
            "final_decision": verdict,
            "go_no_go": go_no_go_of(verdict),
            "human_override": not cancelled,
            "decided_by": decided_by,
            "timestamp": now,
            "reason": (
                f"override cancelled by {decided_by}; the judges' verdict applies"
                if cancelled
                else f"human override by {decided_by}"
            ),
        }
    )
