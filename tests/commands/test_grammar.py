"""`/judge` commands: parsing comments and buttons (bot.commands.grammar)."""

from __future__ import annotations

import pytest

from bot.commands.grammar import Command, command_for_action, parse_command
from bot.judging.check_run import ACTION_OVERRIDE_ACCEPT, ACTION_REJUDGE_DEEP
from tests.support.verdict_builders import FAKE_SECRETS

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
