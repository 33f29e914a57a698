"""What judge-bot answers to commands (bot.commands.replies)."""

from __future__ import annotations

from bot.commands.grammar import Command, parse_command
from bot.commands.outcome import override_outcome
from bot.commands.policy import authorize
from bot.commands.replies import render_help, render_override_reply, render_refusal
from bot.judge.records import Verdict
from bot.judge.settings import Mode
from bot.judging.four_eyes import Actor, Authorization, AuthorizationFacts
from tests.support.verdict_builders import FAKE_SECRETS, SECRET_FRAGMENTS

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
    decision = Authorization(
        False, "pr-author", "the pull request author cannot judge their own change"
    )
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
