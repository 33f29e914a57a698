"""`/judge` commands in PR and issue comments: parsing, authorisation, outcomes, replies.

Grammar (one command per comment; the first `/judge` line wins):

    /judge override accept|reject|cancel
    /judge rerun [deep]
    /judge help

The line must start with the word `/judge` (case-insensitive, up to three spaces of
indentation). Lines inside fenced code blocks, quoted (`>`) lines and lines indented
as code (four spaces or a tab) are ignored, so quoting or documenting a command never
runs it. Any other `/judge ...` line is an `invalid` command, answered with help.

Who may do what (`authorize`):

    command      bots     authors*   read/triage/none   write/maintain/admin
    help         no       yes        yes                yes
    invalid      no       yes        yes                yes
    rerun        no       no         no                 yes
    override     no       no         no                 yes

    * the PR author, or the author or committer of any judged commit.

Bots are refused everything, help included: the bot's own replies, or another bot's,
must never start a loop. `rerun` follows the override rules because re-rolling the
judges until one accepts would get around the four-eyes rule as surely as accepting
outright; an outage never blocks the author anyway (undetermined is neutral).
Permission comes from GitHub's collaborator permission API, whose `permission` field
holds the base role (maintain is reported as write, triage as read, custom roles as
their base); `role_name` is shown in replies only.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from bot.gfm import COMMENT_LIMIT, code, finish, one_line
from bot.judge.config import Mode
from bot.judge.markdown import unfenced_lines
from bot.judge.records import Verdict
from bot.judging.check_run import ACTION_OVERRIDE_ACCEPT, ACTION_REJUDGE_DEEP
from bot.judging.conclusion import conclusion_for

CommandKind = Literal["override", "rerun", "help", "invalid"]
OverrideAction = Literal["accept", "reject", "cancel"]

RAW_LIMIT = 100

_OVERRIDE_ACTIONS: dict[str, OverrideAction] = {
    "accept": "accept",
    "reject": "reject",
    "cancel": "cancel",
}
_COMMAND = re.compile(r"^ {0,3}/judge(?:\s+(?P<rest>.*))?$", re.IGNORECASE)


@dataclass(frozen=True)
class Command:
    kind: CommandKind
    action: OverrideAction | None = None
    deep: bool = False
    raw: str = ""
    problem: str | None = None


def _command_lines(body: str) -> list[str]:
    """Lines that could carry a command: outside fences, not quoted, not code."""
    return [
        line
        for _, line in unfenced_lines(body)
        if not line.lstrip().startswith(">") and not line.startswith(("    ", "\t"))
    ]


def _parse_words(words: list[str], raw: str) -> Command:
    if not words:
        return Command("invalid", raw=raw, problem="no subcommand given")
    head, args = words[0].lower(), [w.lower() for w in words[1:]]
    if head == "help":
        if args:
            return Command("invalid", raw=raw, problem="help takes no arguments")
        return Command("help", raw=raw)
    if head == "rerun":
        if not args:
            return Command("rerun", raw=raw)
        if args == ["deep"]:
            return Command("rerun", deep=True, raw=raw)
        return Command("invalid", raw=raw, problem="rerun takes only an optional `deep`")
    if head == "override":
        if len(args) == 1 and args[0] in _OVERRIDE_ACTIONS:
            return Command("override", action=_OVERRIDE_ACTIONS[args[0]], raw=raw)
        return Command(
            "invalid", raw=raw, problem="override needs exactly one of accept, reject, cancel"
        )
    return Command("invalid", raw=raw, problem=f"unknown subcommand {one_line(head, 30)!r}")


def parse_command(body: str) -> Command | None:
    """The first `/judge` command in a comment body, or None when there is none."""
    for line in _command_lines(body):
        match = _COMMAND.match(line.rstrip())
        if match is None:
            continue
        raw = one_line(line.strip(), RAW_LIMIT)
        return _parse_words((match.group("rest") or "").split(), raw)
    return None


def command_for_action(identifier: str) -> Command | None:
    """The command a check-run button stands for (the `requested_action` webhook)."""
    if identifier == ACTION_REJUDGE_DEEP:
        return Command("rerun", deep=True, raw=identifier)
    if identifier == ACTION_OVERRIDE_ACCEPT:
        return Command("override", action="accept", raw=identifier)
    return None


# --- authorisation --------------------------------------------------------------------

WRITE_PERMISSIONS = frozenset({"admin", "maintain", "write"})


@dataclass(frozen=True)
class Actor:
    """Who issued the command: GitHub's `sender` / `comment.user` (`login`, `type`)."""

    login: str
    type: str = "User"

    @property
    def is_bot(self) -> bool:
        return self.type.lower() == "bot" or self.login.lower().endswith("[bot]")


@dataclass(frozen=True)
class AuthorizationFacts:
    """What the handler fetched: the actor's collaborator permission (`permission`:
    admin|maintain|write|triage|read|none, `role_name`), the PR author (None for a
    push without a PR) and the logins of the authors and committers of the judged
    commits (commits without a linked GitHub account contribute nothing)."""

    permission: str
    role_name: str = ""
    pr_author: str | None = None
    commit_logins: Sequence[str] = ()


DecisionCode = Literal["ok", "bot", "permission", "pr-author", "commit-author"]


@dataclass(frozen=True)
class Decision:
    allowed: bool
    code: DecisionCode
    reason: str


def _same_login(a: str, b: str) -> bool:
    return a.casefold() == b.casefold()


def authorize(command: Command, actor: Actor, facts: AuthorizationFacts) -> Decision:
    """May `actor` run `command`? Rules in the module docstring."""
    if actor.is_bot:
        return Decision(False, "bot", "commands from bots are ignored")
    if command.kind in ("help", "invalid"):
        return Decision(True, "ok", "anyone may ask for help")
    permission = facts.permission.lower()
    if permission not in WRITE_PERMISSIONS:
        role = facts.role_name or permission or "none"
        return Decision(
            False,
            "permission",
            f"needs write, maintain or admin access to the repository (you have {role})",
        )
    if facts.pr_author and _same_login(actor.login, facts.pr_author):
        return Decision(
            False, "pr-author", "the pull request author cannot judge their own change (four eyes)"
        )
    if any(_same_login(actor.login, login) for login in facts.commit_logins if login):
        return Decision(
            False,
            "commit-author",
            "an author or committer of the judged commits cannot judge them (four eyes)",
        )
    return Decision(True, "ok", "allowed")


# --- outcomes -------------------------------------------------------------------------


@dataclass(frozen=True)
class OverrideOutcome:
    """The verdict and conclusion after an override command."""

    final_verdict: Verdict
    conclusion: str
    human_override: bool | None


def override_outcome(command: Command, judged_verdict: Verdict, mode: Mode) -> OverrideOutcome:
    """Accept and reject replace the judges' verdict (the conclusion still follows the
    mode: a human reject fails only in blocking mode); cancel restores it."""
    if command.kind != "override" or command.action is None:
        raise ValueError("override_outcome needs an override command")
    if command.action == "cancel":
        return OverrideOutcome(judged_verdict, conclusion_for(judged_verdict, mode), None)
    verdict = Verdict.ACCEPT if command.action == "accept" else Verdict.REJECT
    return OverrideOutcome(verdict, conclusion_for(verdict, mode), True)


# --- replies --------------------------------------------------------------------------

# Commands are listed as list items in code spans, so no line of a reply starts with
# `/judge` and the bot can never parse its own reply as a command.
_HELP = """\
**judge-bot commands** (comment on the pull request or the disagreement issue):

- `/judge override accept`: accept the change despite the judges' verdict
- `/judge override reject`: reject the change despite the judges' verdict
- `/judge override cancel`: drop a previous override and restore the judges' verdict
- `/judge rerun`: judge the head commit again (`/judge rerun deep` starts at the deep judge)
- `/judge help`: show this message

Overrides and reruns need write, maintain or admin access, and cannot come from the pull
request author or an author or committer of the judged commits (four eyes). Put the
command on a line of its own; commands in quotes or code blocks are ignored."""


def render_help(problem: Command | None = None) -> str:
    """Help text; for an invalid command it first says what was not understood."""
    lead = ""
    if problem is not None and problem.kind == "invalid":
        lead = f"I did not understand {code(problem.raw, RAW_LIMIT)}"
        lead += f": {one_line(problem.problem, 120)}.\n\n" if problem.problem else ".\n\n"
    return finish(lead + _HELP, COMMENT_LIMIT)


def render_refusal(decision: Decision, command: Command, actor: Actor) -> str:
    """Why a command was not carried out."""
    who = f"@{one_line(actor.login, 39)}"
    return finish(
        f"{who}, I did not run {code(command.raw or command.kind, RAW_LIMIT)}: {decision.reason}.",
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
