"""What judge-bot answers to a command: help, a refusal, an override's confirmation, a
priority's confirmation.

Every reply goes through `gfm.finish` (secrets scrubbed, GitHub's length limit kept).
"""

from __future__ import annotations

from bot.commands.grammar import RAW_LIMIT, Command
from bot.commands.meant_head import Mismatch
from bot.commands.outcome import OverrideOutcome
from bot.gfm import COMMENT_LIMIT, code, finish, one_line
from bot.judge.records import Verdict
from bot.judge.settings import Mode
from bot.judging.four_eyes import Actor, Authorization

# Commands are listed as list items in code spans, so no line of a reply starts with
# `/judge` and the bot can never parse its own reply as a command.
_HELP = """\
**judge-bot commands** (comment on the pull request or the disagreement issue):

- `/judge override accept`: accept the change despite the judges' verdict
- `/judge override reject`: reject the change despite the judges' verdict
- `/judge override cancel`: drop a previous override and restore the judges' verdict
- `/judge override accept 1a2b3c4` (or reject, cancel): the override, pinned to the head
  commit by 7 or more characters of its sha; without a sha an override counts only for a
  head judge-bot had already seen when the comment was written
- `/judge rerun`: judge the head commit again (`/judge rerun deep` starts at the deep judge)
- `/judge merge --priority urgent` (or high, normal): put the pull request ahead of normal
  ones in the merge queue (urgent may restart the batches being tested; normal takes it back)
- `/judge help`: show this message

Overrides, reruns and priorities need write, maintain or admin access, and cannot come from the pull
request author or an author or committer of the judged commits (four eyes). Put the
command on a line of its own; commands in quotes or code blocks are ignored."""


def render_help(problem: Command | None = None) -> str:
    """Help text; for an invalid command it first says what was not understood."""
    lead = ""
    if problem is not None and problem.kind == "invalid":
        lead = f"I did not understand {code(problem.raw, RAW_LIMIT)}"
        lead += f": {one_line(problem.problem, 120)}.\n\n" if problem.problem else ".\n\n"
    return finish(lead + _HELP, COMMENT_LIMIT)


def render_refusal(decision: Authorization, command: Command, actor: Actor) -> str:
    """Why a command was not carried out."""
    who = f"@{one_line(actor.login, 39)}"
    return finish(
        f"{who}, I did not run {code(command.raw or command.kind, RAW_LIMIT)}: {decision.reason}.",
        COMMENT_LIMIT,
    )


_HEAD_REASONS = {
    Mismatch.PINNED_OTHER: "it names {pin}, but the head is now {head}",
    Mismatch.WRITTEN_BEFORE: (
        "it was written before judge-bot first saw {head}, the current head, so it may "
        "have been about an earlier commit"
    ),
    Mismatch.FIRST_SEEN_UNKNOWN: (
        "judge-bot cannot tell whether it was written after {head}, the current head, was pushed"
    ),
    Mismatch.WRITTEN_UNKNOWN: (
        "GitHub sent no creation time for the comment, so it may have been about a commit "
        "before {head}, the current head"
    ),
}


def render_head_refusal(mismatch: Mismatch, command: Command, actor: Actor, head_sha: str) -> str:
    """Why an override comment did not decide the current head, and how to go on: the
    command again, pinned to the head's short sha (in a code span mid-line, so the bot
    never reads its own reply as a command)."""
    who = f"@{one_line(actor.login, 39)}"
    head = code(head_sha[:7])
    reason = _HEAD_REASONS[mismatch].format(pin=code(command.sha or "-", 40), head=head)
    again = code(f"/judge override {command.action} {head_sha[:7]}")
    return finish(
        f"{who}, I did not run {code(command.raw or command.kind, RAW_LIMIT)}: {reason}; "
        f"nothing was changed. To decide {head}, comment {again}.",
        COMMENT_LIMIT,
    )


def render_override_reply(
    command: Command,
    actor: Actor,
    outcome: OverrideOutcome,
    *,
    judged_verdict: Verdict,
    mode: Mode,
) -> str:
    """Confirmation posted after an override was recorded."""
    who = f"@{one_line(actor.login, 39)}"
    if command.action == "cancel":
        body = (
            f"{who} cancelled the override. The judges' verdict **{judged_verdict.value}** "
            f"applies again; the check is `{outcome.conclusion}`."
        )
    else:
        body = (
            f"{who} overrode the judges' verdict **{judged_verdict.value}** with "
            f"**{outcome.final_verdict.value}**; the check is `{outcome.conclusion}` "
            f"({mode.value} mode). The override is recorded in the audit log. "
            "To undo it, comment `/judge override cancel`."
        )
    return finish(body, COMMENT_LIMIT)


def render_priority_reply(
    actor: Actor, priority: str, base: str, position: int | None, *, jumped: bool = False
) -> str:
    """The App's queue took the priority (`position` in it, 1 first), GitHub's queue let
    the pull request jump (`jumped`), or it is in no queue (nothing changed)."""
    who = f"@{one_line(actor.login, 39)}"
    branch = code(base, 100)
    if jumped:
        text = f"{who} put this pull request at the front of GitHub's merge queue for {branch}."
    elif position is None:
        text = (
            f"{who}, this pull request is not in the merge queue for {branch}; it takes a "
            "priority once the judges' accept has queued it. Nothing was changed."
        )
    else:
        text = (
            f"{who} set this pull request's merge priority to **{priority}**: "
            f"position {position} in the queue for {branch}."
        )
    return finish(text, COMMENT_LIMIT)


def render_github_queue_refusal(
    actor: Actor, priority: str, base: str, message: str, *, left: bool = False
) -> str:
    """GitHub's merge queue knows only jumping ahead (`urgent`), or refused the jump;
    `left`: it had taken the pull request out for the jump, so it is out of the queue."""
    who = f"@{one_line(actor.login, 39)}"
    branch = code(base, 100)
    if priority != "urgent":
        why = "GitHub's merge queue has no priority levels; only `urgent` jumps ahead"
    else:
        said = one_line(message, 300) or "no reason given"
        why = f"GitHub's merge queue refused the jump: {said}"
    after = (
        " The pull request is out of GitHub's queue; it goes back once its head is accepted."
        if left
        else ""
    )
    return finish(
        f"{who}, {branch} merges through GitHub's merge queue, and {why}.{after}", COMMENT_LIMIT
    )
