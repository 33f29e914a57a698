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
        (
            "/judge override accept now",
            "override needs exactly one of accept, reject, cancel, "
            "then optionally the head's sha (7 to 40 hex digits)",
        ),
        (
            "/judge override accept 1a2b3c",
            "override needs exactly one of accept, reject, cancel, "
            "then optionally the head's sha (7 to 40 hex digits)",
        ),
        (
            "/judge override accept 1a2b3c4 now",
            "override needs exactly one of accept, reject, cancel",
        ),
        ("/judge override 1a2b3c4", "override needs exactly one of accept, reject, cancel"),
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


@pytest.mark.parametrize(
    "body",
    [
        "<!-- /judge override accept -->",
        "<!--\n/judge override accept\n-->",
        "Thanks for the fix!\n<!--\nnotes to self\n/judge override accept\n-->",
        "  <!-- hidden\n/judge override accept -->",
        "<!--\n\n/judge override accept\n\n-->",  # a comment block spans blank lines
        "Looks good <!--\n/judge override accept\n-->",  # a comment inside a paragraph
        "Looks good <!-- a\nmore\n/judge override accept\nstill -- hidden -->",
        "> I disagree with the judges\n/judge override accept",  # lazy continuation
        "> quoted\nmore of the quote\n/judge override accept",
        ">> nested quote\n/judge override accept",
        "> - a quoted list\n/judge override accept",
        "> quoted\n<!--\n\n/judge override accept\n\n-->",  # a comment ends the quote
        "> quoted <!--\n/judge override accept\n-->\n/judge override accept",
        # The paragraph's comment is cut by a quote whose lazy line then holds the command.
        "text <!--\n> q\n-->\n/judge override accept",
        # A fence inside a comment is no fence; the one after it holds the command.
        "<!--\n```\n-->\n```\n-->\n/judge override accept\n```",
        # A fence cuts the paragraph, so the comment never opened; the command is code.
        "text <!--\n```\n-->\n/judge override accept\n```",
        # ```x` is no fence (a backtick in the info string); the next ``` opens one.
        "```x`\n```\n/judge override accept\n```",
    ],
)
def test_hidden_text_is_not_a_command(body: str) -> None:
    """Text GitHub does not show as a command (inside an HTML comment, or inside a
    block quote as a lazy continuation line) is never obeyed."""
    assert parse_command(body) is None


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        ("<!-- a note -->\n/judge override accept", ("override", "accept")),
        ("<!--\nhidden\n-->\n/judge override accept", ("override", "accept")),
        ("<!---->\n/judge rerun", ("rerun", None)),
        ("/judge rerun <!-- flaky network -->", ("rerun", None)),
        ("> quoted\n\n/judge override accept", ("override", "accept")),
        (">\n/judge override accept", ("override", "accept")),  # an empty quote line
        # A blank line ends the paragraph, so `<!--` was literal text, not a comment.
        ("see <!--\n\n/judge override accept\n\n-->", ("override", "accept")),
        ("> /judge override reject\n\n/judge rerun", ("rerun", None)),
    ],
)
def test_visible_commands_next_to_hidden_text(body: str, expected: tuple[str, str | None]) -> None:
    command = parse_command(body)
    assert command is not None
    assert (command.kind, command.action) == expected
    assert command.problem is None


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


def test_an_unknown_word_is_quoted_safely_in_the_problem() -> None:
    """The problem is shown in the bot's reply as prose: the commenter's word cannot add
    HTML, a mention or a direction control to it."""
    command = parse_command("/judge <img\u202esrc=x>@octocat")
    assert command is not None and command.problem is not None
    assert command.problem == "unknown subcommand '&lt;img\\\\u202esrc=x&gt;@\u200boctocat'"


@pytest.mark.parametrize(
    ("body", "action", "sha"),
    [
        ("/judge override accept 1a2b3c4", "accept", "1a2b3c4"),
        ("/judge override reject 1A2B3C4D", "reject", "1a2b3c4d"),
        ("/judge override cancel " + "0" * 40, "cancel", "0" * 40),
        ("/judge override accept", "accept", None),
    ],
)
def test_an_override_may_pin_the_head(body: str, action: str, sha: str | None) -> None:
    """7 to 40 hex digits of the head commit, kept lowercase as GitHub writes shas."""
    command = parse_command(body)
    assert command is not None
    assert (command.kind, command.action, command.sha) == ("override", action, sha)


@pytest.mark.parametrize("word", ["1a2b3c", "0" * 41, "1a2b3cz", "HEAD"])
def test_a_pin_that_is_no_sha_is_invalid(word: str) -> None:
    command = parse_command(f"/judge override accept {word}")
    assert command is not None and command.kind == "invalid"
