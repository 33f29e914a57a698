"""Who may run a command: the full authorisation matrix (bot.commands.policy)."""

from __future__ import annotations

import itertools

import pytest

from bot.commands.grammar import Command
from bot.commands.policy import authorize
from bot.judging.four_eyes import Actor, AuthorizationFacts

# --- authorisation matrix -------------------------------------------------------------

COMMANDS = {
    "help": Command("help"),
    "invalid": Command("invalid", problem="unknown"),
    "rerun": Command("rerun"),
    "rerun deep": Command("rerun", deep=True),
    "override accept": Command("override", action="accept"),
    "override reject": Command("override", action="reject"),
    "override cancel": Command("override", action="cancel"),
}
PRIVILEGED = {"rerun", "rerun deep", "override accept", "override reject", "override cancel"}

PR_AUTHOR = "Agent-Author"
COMMITTER = "Pusher"


def facts(permission: str, role_name: str = "") -> AuthorizationFacts:
    return AuthorizationFacts(
        permission=permission,
        role_name=role_name or permission,
        pr_author=PR_AUTHOR,
        commit_logins=["agent-author", COMMITTER, "web-flow"],
    )


# (row, actor, facts, expected code for help/invalid, expected code for rerun/override)
MATRIX = [
    ("admin", Actor("alice"), facts("admin"), "ok", "ok"),
    ("maintain (legacy write)", Actor("alice"), facts("write", "maintain"), "ok", "ok"),
    ("maintain (raw)", Actor("alice"), facts("maintain"), "ok", "ok"),
    ("write", Actor("alice"), facts("write"), "ok", "ok"),
    ("custom role on write", Actor("alice"), facts("write", "release-manager"), "ok", "ok"),
    ("triage (legacy read)", Actor("alice"), facts("read", "triage"), "ok", "permission"),
    ("triage (raw)", Actor("alice"), facts("triage"), "ok", "permission"),
    ("read-only", Actor("alice"), facts("read"), "ok", "permission"),
    ("non-collaborator", Actor("alice"), facts("none"), "ok", "permission"),
    ("empty permission", Actor("alice"), AuthorizationFacts(permission=""), "ok", "permission"),
    ("PR author, admin", Actor(PR_AUTHOR), facts("admin"), "ok", "pr-author"),
    ("PR author, other case", Actor("agent-AUTHOR"), facts("admin"), "ok", "pr-author"),
    ("PR author, read", Actor(PR_AUTHOR), facts("read"), "ok", "permission"),
    ("commit author, write", Actor("pusher"), facts("write"), "ok", "commit-author"),
    ("committer, admin", Actor("PUSHER"), facts("admin"), "ok", "commit-author"),
    ("bot by type", Actor("helper", type="Bot"), facts("admin"), "bot", "bot"),
    ("bot by login", Actor("judge-bot[bot]"), facts("write"), "bot", "bot"),
    ("bot, non-collaborator", Actor("x[bot]", type="Bot"), facts("none"), "bot", "bot"),
]


@pytest.mark.parametrize(
    ("row", "actor", "facts_", "open_code", "privileged_code", "command"),
    [(*row, name) for row, name in itertools.product(MATRIX, COMMANDS)],
    ids=[f"{row[0]}-{name}" for row, name in itertools.product(MATRIX, COMMANDS)],
)
def test_authorization_matrix(
    row: str,
    actor: Actor,
    facts_: AuthorizationFacts,
    open_code: str,
    privileged_code: str,
    command: str,
) -> None:
    expected = privileged_code if command in PRIVILEGED else open_code
    decision = authorize(COMMANDS[command], actor, facts_)
    assert decision.code == expected
    assert decision.allowed is (expected == "ok")
    assert decision.reason


def test_author_on_a_push_without_pr() -> None:
    """Without a PR, only the commit logins count for four eyes."""
    push = AuthorizationFacts(permission="write", commit_logins=["agent"])
    assert authorize(COMMANDS["override accept"], Actor("alice"), push).allowed
    assert authorize(COMMANDS["override accept"], Actor("Agent"), push).code == "commit-author"


def test_refusal_reasons_are_human() -> None:
    read = authorize(COMMANDS["rerun"], Actor("alice"), facts("read", "triage"))
    assert (
        read.reason == "needs write, maintain or admin access to the repository (you have triage)"
    )
    author = authorize(COMMANDS["override accept"], Actor(PR_AUTHOR), facts("admin"))
    assert "four eyes" in author.reason
    assert authorize(COMMANDS["help"], Actor("a[bot]"), facts("admin")).reason == (
        "commands from bots are ignored"
    )


def test_actor_is_bot() -> None:
    assert Actor("dependabot[bot]").is_bot
    assert Actor("x", type="Bot").is_bot
    assert Actor("X[BOT]").is_bot
    assert not Actor("robot").is_bot
    assert not Actor("octocat", type="User").is_bot


def test_actor_from_a_payload_user() -> None:
    assert Actor.from_user({"login": "ci[bot]", "type": "Bot"}) == Actor("ci[bot]", "Bot")
    assert Actor.from_user(None) == Actor("", "User")
    assert Actor.from_user({"login": "maria"}).is_bot is False
