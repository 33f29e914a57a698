"""Writing to the terminal from the judge's commands, and leaving quietly when the reader
goes away (`judge-bot verdicts export | head`)."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable

EXIT_STDOUT_CLOSED = 141
"""128 + SIGPIPE: what a shell reports for a command whose reader went away."""

Say = Callable[[str], None]
"""Where a command's lines for the person go: `out` or `err`, or a test's list."""


def out(text: str) -> None:
    sys.stdout.write(text if text.endswith("\n") else text + "\n")
    sys.stdout.flush()


def table_width(requested: int | None) -> int | None:
    """How wide a table may be: `--width` when given, else the terminal's; None (no
    limit) when stdout is not a terminal, so piped output is never cut."""
    if requested is not None:
        return requested
    return shutil.get_terminal_size().columns if sys.stdout.isatty() else None


def drop_stdout() -> None:
    """Point stdout at /dev/null: what the closed pipe refused stays buffered, and the
    interpreter's last flush would otherwise print "Exception ignored ... BrokenPipeError"."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass  # no file descriptor (captured in a test): nothing is flushed at exit either


def guard_closed_stdout(command: Callable[[], int]) -> int:
    """Run `command`; a reader that closed the pipe early ends it quietly with
    `EXIT_STDOUT_CLOSED` instead of a traceback."""
    try:
        try:
            return command()
        finally:
            # Flush here, inside the guard: help text, say, is only buffered when written.
            sys.stdout.flush()
    except BrokenPipeError:
        drop_stdout()
        return EXIT_STDOUT_CLOSED


def err(text: str) -> None:
    sys.stderr.write(text if text.endswith("\n") else text + "\n")
    sys.stderr.flush()
