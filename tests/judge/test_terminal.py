"""Leaving quietly when the reader of stdout goes away (bot.cli.terminal)."""

from __future__ import annotations

import pytest

from bot.cli.terminal import EXIT_STDOUT_CLOSED, err, guard_closed_stdout, out


def test_a_closed_pipe_ends_the_command_quietly() -> None:
    def command() -> int:
        raise BrokenPipeError

    assert guard_closed_stdout(command) == EXIT_STDOUT_CLOSED == 141


def test_a_command_that_finishes_keeps_its_status(capsys: pytest.CaptureFixture[str]) -> None:
    def command() -> int:
        out("one line")
        err("a note\n")
        return 3

    assert guard_closed_stdout(command) == 3
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("one line\n", "a note\n")
