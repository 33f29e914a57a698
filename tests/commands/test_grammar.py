"""`/judge` commands: parsing, the full authorisation matrix, override outcomes, replies."""

from __future__ import annotations

import itertools

import pytest

from bot.commands.grammar import (
    Actor,
    AuthorizationFacts,
    Command,
    Decision,
    authorize,
    command_for_action,
    override_outcome,
    parse_command,
    render_help,
    render_override_reply,
    render_refusal,
)
from bot.judge.config import Mode
from bot.judge.records import Verdict
from bot.judging.check_run import ACTION_OVERRIDE_ACCEPT, ACTION_REJUDGE_DEEP
from bot.judging.conclusion import conclusion_for
from tests.support.verdict_builders import FAKE_SECRETS, SECRET_FRAGMENTS

# --- parsing --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("/judge override accept", Command("override", action="accept")),
        ("/judge override reject", Command("override", action="reject")),
        ("/judge override cancel", Command("override", action="cancel")),
        ("/judge rerun", Command("rerun")),
        ("/judge rerun deep", Command("rerun", deep=True)),
        ("/judge help", Command("help")),
        ("/JUDGE Override ACCEPT", Command("override", action="accept")),
        ("  /judge   rerun  ", Command("rerun")),
        ("Looks fine to me.\n\n/judge override accept\n\nThanks!", Command("override", "accept")),
        ("first\r\n/judge help\r\n", Command("help")),
    ],
)
def test_parse_valid_commands(body: str, expected: Command) -> None:
    command = parse_command(body)
    assert command is not None
    assert (command.kind, command.action, command.deep) == (
        expected.kind,
        expected.action,
        expected.deep,
    )
    assert command.problem is None


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ("/judge", "no subcommand given"),
        ("/judge please", "unknown subcommand 'please'"),
        ("/judge override", "override needs exactly one of accept, reject, cancel"),
        ("/judge override maybe", "override needs exactly one of accept, reject, cancel"),
        ("/judge override accept now", "override needs exactly one of accept, reject, cancel"),
        ("/judge rerun quick", "rerun takes only an optional `deep`"),
        ("/judge help me", "help takes no arguments"),
    ],
)
def test_parse_invalid_commands(body: str, problem: str) -> None:
    """Anything else starting with the word /judge is invalid, so the bot answers help."""
    command = parse_command(body)
    assert command is not None
    assert command.kind == "invalid"
    assert command.problem == problem
    assert command.raw == body.strip()


@pytest.mark.parametrize(
    "body",
    [
        "",
        "LGTM",
        "please /judge rerun",
        "`/judge rerun`",
        "/judgement day",
        "/judge-override accept",
        "> /judge override accept",
        ">> /judge override accept",
        "  > /judge override accept",
        "```\n/judge override accept\n```",
        "~~~~\n/judge rerun\n~~~~",
        "```sh\n/judge rerun\n",  # an unclosed fence runs to the end
        "````\n```\n/judge rerun\n```\n````",  # a shorter fence does not close it
        "    /judge rerun",  # indented code
        "\t/judge rerun",
    ],
)
def test_text_that_is_not_a_command(body: str) -> None:
    assert parse_command(body) is None


def test_first_command_wins() -> None:
    body = "/judge rerun\n/judge override accept"
    command = parse_command(body)
    assert command is not None and command.kind == "rerun"
    invalid_first = parse_command("/judge overide accept\n/judge override accept")
    assert invalid_first is not None and invalid_first.kind == "invalid"


def test_command_after_closed_fence_and_quote_counts() -> None:
    body = "> /judge override reject\n```\n/judge rerun\n```\n/judge override accept"
    command = parse_command(body)
    assert command is not None
    assert (command.kind, command.action) == ("override", "accept")


def test_raw_is_capped_and_scrubbed() -> None:
    command = parse_command("/judge " + FAKE_SECRETS["github classic"] + " x" * 200)
    assert command is not None and command.kind == "invalid"
    assert len(command.raw) <= 100
    assert "A1b2C3d4E5f6" not in command.raw
    assert command.problem is not None and "A1b2C3d4E5f6" not in command.problem


def test_command_for_action() -> None:
    assert command_for_action(ACTION_REJUDGE_DEEP) == Command(
        "rerun", deep=True, raw=ACTION_REJUDGE_DEEP
    )
    assert command_for_action(ACTION_OVERRIDE_ACCEPT) == Command(
        "override", action="accept", raw=ACTION_OVERRIDE_ACCEPT
    )
    assert command_for_action("lgtm|26764") is None


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


# --- override outcomes ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("action", "judged", "mode"),
    list(itertools.product(["accept", "reject", "cancel"], list(Verdict), list(Mode))),
)
def test_override_outcome(action: str, judged: Verdict, mode: Mode) -> None:
    command = parse_command(f"/judge override {action}")
    assert command is not None
    outcome = override_outcome(command, judged, mode)
    final = {"accept": Verdict.ACCEPT, "reject": Verdict.REJECT, "cancel": judged}[action]
    assert outcome.final_verdict is final
    assert outcome.conclusion == conclusion_for(final, mode)
    assert outcome.human_override is (None if action == "cancel" else True)


def test_override_outcome_examples() -> None:
    accept = Command("override", action="accept")
    reject = Command("override", action="reject")
    assert override_outcome(accept, Verdict.REJECT, Mode.BLOCKING).conclusion == "success"
    assert override_outcome(reject, Verdict.ACCEPT, Mode.BLOCKING).conclusion == "failure"
    assert override_outcome(reject, Verdict.ACCEPT, Mode.ADVISORY).conclusion == "neutral"
    cancel = Command("override", action="cancel")
    assert override_outcome(cancel, Verdict.ESCALATE, Mode.BLOCKING).conclusion == (
        "action_required"
    )


@pytest.mark.parametrize("command", [Command("rerun"), Command("help"), Command("override")])
def test_override_outcome_needs_an_override(command: Command) -> None:
    with pytest.raises(ValueError, match="override command"):
        override_outcome(command, Verdict.ACCEPT, Mode.BLOCKING)


# --- replies --------------------------------------------------------------------------


def test_help_lists_every_command_and_is_not_itself_a_command() -> None:
    text = render_help()
    for usage in (
        "/judge override accept",
        "/judge override reject",
        "/judge override cancel",
        "/judge rerun",
        "/judge rerun deep",
        "/judge help",
    ):
        assert f"`{usage}`" in text
    assert parse_command(text) is None


def test_help_for_invalid_command_says_what_was_wrong() -> None:
    invalid = parse_command("/judge overide accept")
    assert invalid is not None
    text = render_help(invalid)
    assert text.startswith(
        "I did not understand `/judge overide accept`: unknown subcommand 'overide'."
    )
    assert parse_command(text) is None


def test_refusal_reply() -> None:
    command = Command("override", action="accept", raw="/judge override accept")
    decision = Decision(False, "pr-author", "the pull request author cannot judge their own change")
    text = render_refusal(decision, command, Actor("mallory"))
    assert text == (
        "@mallory, I did not run `/judge override accept`: the pull request author cannot "
        "judge their own change."
    )
    assert parse_command(text) is None


def test_refusal_never_echoes_secrets() -> None:
    command = parse_command("/judge " + " ".join(FAKE_SECRETS.values()))
    assert command is not None
    decision = authorize(command, Actor("x[bot]"), AuthorizationFacts(permission="none"))
    text = render_refusal(decision, command, Actor("x[bot]"))
    for fragment in SECRET_FRAGMENTS:
        assert fragment not in text


def test_override_replies() -> None:
    accept = Command("override", action="accept", raw="/judge override accept")
    outcome = override_outcome(accept, Verdict.REJECT, Mode.BLOCKING)
    text = render_override_reply(
        accept, Actor("alice"), outcome, judged_verdict=Verdict.REJECT, mode=Mode.BLOCKING
    )
    assert "@alice overrode the judges' verdict **reject** with **accept**" in text
    assert "`success`" in text and "blocking mode" in text
    assert parse_command(text) is None
    cancel = Command("override", action="cancel")
    restored = override_outcome(cancel, Verdict.REJECT, Mode.BLOCKING)
    text = render_override_reply(
        cancel, Actor("alice"), restored, judged_verdict=Verdict.REJECT, mode=Mode.BLOCKING
    )
    assert text == (
        "@alice cancelled the override. The judges' verdict **reject** applies again; "
        "the check is `failure`."
    )
