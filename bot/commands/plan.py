"""What a `/judge` command does, decided from what the handler fetched. Pure.

    locate(command, actor, pinned_sha, pull_head)  the sha the command is about, or a reply
    plan_command(command, actor, facts)            Refusal | Reply | Rerun | ApplyOverride
                                                   | SetPriority (an override only for the
                                                   head it meant: `bot.commands.meant_head`;
                                                   a priority only on an open pull request)
    plan_override(command, actor, state, now)      the audit record, the run's new output,
                                                   the sha's new state and the reply

The handler fetches (the sha's state, the pull request, the actor's permission), calls
these, and carries out exactly what they return.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from bot.commands.grammar import Command
from bot.commands.meant_head import Origin, head_mismatch
from bot.commands.outcome import override_outcome
from bot.commands.policy import authorize
from bot.commands.replies import (
    render_head_refusal,
    render_help,
    render_override_reply,
    render_refusal,
)
from bot.disagreement.issue import CloseReason, render_close_comment
from bot.judge.engine.judgment import record_go_no_go
from bot.judge.records import Verdict, VerdictRecord
from bot.judge.settings import Mode
from bot.judging.check_run import (
    CheckDetails,
    CheckRunOutput,
    render_check_run,
    render_override,
)
from bot.judging.conclusion import run_outcome
from bot.judging.four_eyes import Actor, AuthorizationFacts
from bot.judging.repo_config import LeftOut
from bot.judging.state import Override as OverrideState
from bot.judging.state import ShaState
from bot.judging.target import Target, target_from_pull_request
from bot.storage.base import MergePriority


@dataclass(frozen=True)
class Reply:
    text: str


@dataclass(frozen=True)
class Refusal:
    code: str
    text: str


@dataclass(frozen=True)
class Rerun:
    target: Target


@dataclass(frozen=True)
class ApplyOverride:
    state: ShaState


@dataclass(frozen=True)
class SetPriority:
    """`/judge merge --priority`: the pull request's place in its base branch's queue (the
    App's, or GitHub's merge queue, where only `urgent` means something: jump)."""

    pull_number: int
    base_branch: str
    priority: MergePriority


Plan = Reply | Refusal | Rerun | ApplyOverride | SetPriority


@dataclass(frozen=True)
class CommandFacts:
    """What the handler fetched about the sha a command is about."""

    head_sha: str
    state: ShaState | None
    pull: Mapping[str, Any] | None
    repository: Mapping[str, Any]
    installation_id: int
    permission: str
    origin: Origin
    """A comment (with when it was written) or a check run's button."""
    role_name: str = ""


def outdated_override(command: Command, *, pinned_sha: str, current_head: str) -> bool:
    """An override from a check run of a commit that is no longer the pull request's head
    would decide a commit nobody judged: refused. Re-runs of an old commit are harmless."""
    return command.kind == "override" and pinned_sha != current_head


def answer_without_facts(command: Command) -> Reply | None:
    """Help, and help for a command not understood: anyone may ask (`policy.authorize`),
    so the answer needs nothing fetched about the change."""
    if command.kind in ("help", "invalid"):
        return Reply(render_help(command))
    return None


def locate(
    command: Command, actor: Actor, *, pinned_sha: str | None, pull_head: str | None
) -> str | Reply | None:
    """The sha a command acts on: the run's own sha for a checks-UI request, else the pull
    request's head. None when there is neither (nothing to act on). A merge priority is
    about the head the queue holds now, never the one an old disagreement issue names:
    the people of that newer head must not reorder it."""
    if pull_head is None or pinned_sha is None:
        return pinned_sha or pull_head
    if command.kind == "merge":
        return pull_head
    if outdated_override(command, pinned_sha=pinned_sha, current_head=pull_head):
        return Reply(
            f"@{actor.login}, that check run is for `{pinned_sha[:7]}`, no longer the "
            f"head of this pull request (`{pull_head[:7]}`); nothing was changed."
        )
    return pinned_sha


def authorization_facts(facts: CommandFacts) -> AuthorizationFacts:
    pull_user = (facts.pull or {}).get("user") or {}
    pr_author = str(pull_user["login"]) if pull_user.get("login") else None
    if pr_author is None and facts.state is not None and facts.state.target:
        pr_author = facts.state.target.get("pull_author")
    return AuthorizationFacts(
        permission=facts.permission,
        role_name=facts.role_name,
        pr_author=pr_author,
        commit_logins=facts.state.commit_people if facts.state is not None else (),
    )


def plan_command(command: Command, actor: Actor, facts: CommandFacts) -> Plan:
    """Rerun or override, once authorised (rules in `bot.commands.policy`)."""
    decision = authorize(command, actor, authorization_facts(facts))
    if not decision.allowed:
        return Refusal(decision.code, render_refusal(decision, command, actor))
    short = facts.head_sha[:7]
    if command.kind == "merge":
        return _plan_priority(command, actor, facts)
    if command.kind == "rerun":
        target = _rerun_target(facts)
        if target is None:
            return Reply(f"@{actor.login}, `{short}` was never judged; nothing to re-run.")
        return Rerun(target.rerun("command.rerun", force_deep=command.deep))
    if facts.state is None or not facts.state.judged:
        return Reply(f"@{actor.login}, there is no judged verdict for `{short}` to override yet.")
    mismatch = head_mismatch(
        command,
        head_sha=facts.head_sha,
        first_seen_at=facts.state.first_seen_at,
        origin=facts.origin,
    )
    if mismatch is not None:
        text = render_head_refusal(mismatch, command, actor, facts.head_sha)
        return Refusal(mismatch.value, text)
    return ApplyOverride(facts.state)


def _plan_priority(command: Command, actor: Actor, facts: CommandFacts) -> Plan:
    pull = facts.pull
    if pull is None or pull.get("state") != "open" or pull.get("merged"):
        return Reply(f"@{actor.login}, a merge priority is for an open pull request.")
    assert command.priority is not None, "the grammar gives `merge` its priority"
    base = str((pull.get("base") or {}).get("ref") or "")
    return SetPriority(int(pull["number"]), base, MergePriority(command.priority))


def _rerun_target(facts: CommandFacts) -> Target | None:
    judged = facts.state.judged_target("command.rerun") if facts.state is not None else None
    if judged is not None:
        return judged
    if facts.pull is not None and str(facts.pull["head"]["sha"]) == facts.head_sha:
        return target_from_pull_request(
            {"pull_request": facts.pull, "repository": facts.repository, "action": "rerun"},
            facts.installation_id,
        )
    return None


@dataclass(frozen=True)
class OverridePlan:
    record: VerdictRecord
    output: CheckRunOutput
    state: ShaState
    target: Target
    close_comment: str | None
    reply: str


def judged_details(state: ShaState) -> CheckDetails:
    """What the judges' run said besides its records, so a cancelled override shows it
    as it was: the files no judge read, and the outage rule."""
    unread = [LeftOut(path, reason, unread=True) for path, reason in state.unread]
    return CheckDetails(left_out=unread, on_outage=state.on_outage)


def plan_override(command: Command, actor: Actor, state: ShaState, now: datetime) -> OverridePlan:
    """Accept or reject replaces the judges' verdict on the run and closes the task's
    disagreement issue; cancel brings the judges' verdict back. Either is audited."""
    judged = Verdict(str(state.verdict))
    mode = state.mode or Mode.ADVISORY
    _, cause = run_outcome(state.records, unread=bool(state.unread))
    outcome = override_outcome(command, judged, mode, cause, state.on_outage)
    target = state.judged_target("command.override")
    assert target is not None, "an overridable state always carries its target"
    record = override_record(state.records[-1], outcome.final_verdict, actor.login, command, now)
    reply = render_override_reply(command, actor, outcome, judged_verdict=judged, mode=mode)
    if command.action == "cancel":
        return OverridePlan(
            record=record,
            output=render_check_run(state.records, mode, details=judged_details(state)),
            state=state.model_copy(update={"override": None}),
            target=target,
            close_comment=None,
            reply=reply,
        )
    overridden = OverrideState(verdict=outcome.final_verdict, by=actor.login)
    return OverridePlan(
        record=record,
        output=render_override(record, actor.login, mode, judged=judged),
        state=state.model_copy(update={"override": overridden}),
        target=target,
        close_comment=render_close_comment(
            CloseReason.OVERRIDDEN, actor.login, verdict=outcome.final_verdict
        ),
        reply=reply,
    )


def override_record(
    judged: VerdictRecord, verdict: Verdict, decided_by: str, command: Command, now: datetime
) -> VerdictRecord:
    """The audit record of a human decision: the judged record, re-stamped. A cancel is
    recorded too (human_override false) so the log shows the whole history."""
    cancelled = command.action == "cancel"
    updated = judged.model_copy(
        update={
            "verdict": verdict,
            "final_decision": verdict,
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
    # One GO/NO-GO rule for every record: a person's accept or reject decides it; after a
    # cancel the judges' scores do again.
    return updated.model_copy(update={"go_no_go": record_go_no_go(updated)})
