"""Who may run a `/judge` command (`authorize`). Pure.

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

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from bot.commands.grammar import Command

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
