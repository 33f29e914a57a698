"""`/judge` comments in a workflow: the App's commands (`bot/commands`: the parser, the
authorisation through GitHub's permission API, the plan), run where the pull request's
state may be missing.

A run takes no sha state from the Actions cache (`cache`; a comment's workflow runs on
the default branch and could not read the pull request's anyway), so the head's state is
never at hand. Before an authorised override
the head is judged first (the same flow; the verdict cache answers when it can), on the
head's existing `judge` run, which also says since when the head was shown judged: an
override comment written before that is refused, as in the App (`meant_head`). A rerun
needs only that run. Then the App's command handler does the rest.

`/judge merge --priority` orders the App's own merge queue, which a workflow has none of:
the reply says so, and nothing else is done.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from gidgethub.sansio import Event

from bot.action.github import WORKFLOW_INSTALLATION, learn_actions_app
from bot.commands import handlers as commands
from bot.commands.grammar import Command, parse_command
from bot.commands.policy import authorize
from bot.gfm import one_line
from bot.github.gateway import RepoGateway
from bot.github.types import github_time
from bot.intake.dispatch import Context
from bot.judging.check_run import CHECK_NAME
from bot.judging.flow import judge_target
from bot.judging.four_eyes import Actor, AuthorizationFacts
from bot.judging.state import ShaState, put_state_if_absent, state_key
from bot.judging.target import Target, target_from_pull_request

EARLIER_RUN = "earlier-run"


async def carry_out_comment(event: Event, context: Context) -> str | None:
    """Carry out a `/judge` comment; the pull request's head it was about, if any."""
    comment = event.data["comment"]
    command = parse_command(str(comment.get("body") or ""))
    actor = Actor.from_user(comment.get("user"))
    issue = event.data["issue"]
    if command is None or actor.is_bot:
        return None
    if command.kind == "merge" and issue.get("pull_request"):
        await _no_priority_here(event, context, actor)
        return None
    head_sha = None
    if issue.get("pull_request") and command.kind in ("override", "rerun"):
        client = await context.services.github.installation_client(WORKFLOW_INSTALLATION)
        gateway = RepoGateway(client, str(event.data["repository"]["full_name"]))
        pull = await gateway.pull(int(issue["number"]))
        head_sha = str(pull["head"]["sha"])
        await learn_actions_app(context.services.github, gateway.full_name, head_sha)
        if await may_act(gateway, command, actor, pull):
            target = target_from_pull_request(
                {"pull_request": pull, "repository": event.data["repository"], "action": "command"},
                WORKFLOW_INSTALLATION,
            )
            await prepare(context, gateway, target, command)
    await commands.on_comment(event, context)
    return head_sha


def is_command(payload: Mapping[str, Any]) -> bool:
    """Whether the event's comment is a `/judge` command (of anyone: authorisation is
    `may_act`'s)."""
    comment = payload.get("comment") or {}
    return parse_command(str(comment.get("body") or "")) is not None


def render_no_priority(actor: Actor) -> str:
    """`/judge merge --priority` orders the App's own merge queue, which a workflow has
    none of: say so rather than "not in the merge queue". Pure."""
    who = f"@{one_line(actor.login, 39)}"
    return (
        f"{who}, `/judge merge --priority` sets a place in the judge-bot App's own merge "
        "queue, and judge-bot's GitHub Action has no such queue (it hands an accepted pull "
        "request to GitHub's auto-merge or merge queue, which have no priorities of ours). "
        "Nothing was changed."
    )


async def _no_priority_here(event: Event, context: Context, actor: Actor) -> None:
    client = await context.services.github.installation_client(WORKFLOW_INSTALLATION)
    gateway = RepoGateway(client, str(event.data["repository"]["full_name"]))
    await gateway.comment(int(event.data["issue"]["number"]), render_no_priority(actor))


async def may_act(
    gateway: RepoGateway, command: Command, actor: Actor, pull: Mapping[str, Any]
) -> bool:
    """The App's rule, before anything is spent: a refused commenter costs no judgment
    (the handler then refuses with the App's reply, after its own full check)."""
    permission, role = await gateway.permission(actor.login)
    author = str((pull.get("user") or {}).get("login") or "") or None
    facts = AuthorizationFacts(permission=permission, role_name=role or "", pr_author=author)
    return authorize(command, actor, facts).allowed


async def prepare(context: Context, gateway: RepoGateway, target: Target, command: Command) -> None:
    """The head's state as the App would have it: its existing run adopted, and for an
    override a verdict to override (module docstring)."""
    # The run's storage starts empty (`cache` takes in no state): the head's run is
    # GitHub's word, and its verdict this run's own.
    key = state_key(target.repository, target.head_sha)
    state = None
    earlier = await earlier_run(gateway, target.head_sha)
    if earlier is not None:
        run_id, url, started = earlier
        state = ShaState.fresh(EARLIER_RUN, target, started).with_run(run_id, url)
        await put_state_if_absent(context.storage, key, state)
    if command.kind == "override" and (state is None or not state.judged):
        await judge_target(target, context, owner=context.delivery.delivery_id, take_over=True)


async def earlier_run(
    gateway: RepoGateway, head_sha: str
) -> tuple[int, str, datetime | None] | None:
    """The head's latest `judge` run: its id, page and when it started (None: GitHub did
    not say, and an override comment must then pin the sha), or None for no run."""
    run = await gateway.latest_check_run(head_sha, CHECK_NAME, None)
    if run is None:
        return None
    return int(run["id"]), str(run.get("html_url") or ""), started(run)


def started(run: Mapping[str, Any]) -> datetime | None:
    """When GitHub says a run started; None when it does not say it readably."""
    return github_time(run.get("started_at"))
