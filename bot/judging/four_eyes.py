"""Four eyes for a person: who may decide about a change in place of the judges.

A person with write, maintain or admin access to the repository who is neither the pull
request's author nor an author or committer of the judged commits. Commands
(`bot.commands.policy`) and the skip label (`bot.judging.rules`) both ask this, so an
author can neither override nor skip their own change.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

WRITE_PERMISSIONS = frozenset({"admin", "maintain", "write"})


@dataclass(frozen=True)
class Actor:
    """Who issued the command: GitHub's `sender` / `comment.user` (`login`, `type`)."""

    login: str
    type: str = "User"

    @classmethod
    def from_user(cls, user: Mapping[str, Any] | None) -> Actor:
        """From a payload's `sender` or `comment.user` object."""
        user = user or {}
        return cls(str(user.get("login", "")), str(user.get("type", "User")))

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
class Authorization:
    allowed: bool
    code: DecisionCode
    reason: str


def _same_login(a: str, b: str) -> bool:
    return a.casefold() == b.casefold()


def person_decision(actor: Actor, facts: AuthorizationFacts) -> Authorization:
    """May `actor` decide about the change `facts` describe? Bots never may."""
    if actor.is_bot:
        return Authorization(False, "bot", "bots cannot decide for the judges")
    permission = facts.permission.lower()
    if permission not in WRITE_PERMISSIONS:
        role = facts.role_name or permission or "none"
        return Authorization(
            False,
            "permission",
            f"needs write, maintain or admin access to the repository (you have {role})",
        )
    if facts.pr_author and _same_login(actor.login, facts.pr_author):
        return Authorization(
            False, "pr-author", "the pull request author cannot judge their own change (four eyes)"
        )
    if any(_same_login(actor.login, login) for login in facts.commit_logins if login):
        return Authorization(
            False,
            "commit-author",
            "an author or committer of the judged commits cannot judge them (four eyes)",
        )
    return Authorization(True, "ok", "allowed")
