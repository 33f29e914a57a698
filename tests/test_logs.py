"""Log hygiene (`bot/logs.py`): the webhook secret and credential shapes never reach a log
line, tracebacks included, and every line stays one JSON object."""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Iterator

import pytest

from bot.credentials import REDACTED
from bot.logs import JsonFormatter, LogFormat, SecretScrubber, configure_logging, level_number
from tests.support.webhook_helpers import SECRET


@pytest.fixture
def restore_root_logger() -> Iterator[None]:
    """`configure_logging` replaces the root logger's handlers: put pytest's back."""
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)


def one_line(formatter: logging.Formatter, level: int, message: str) -> dict[str, object]:
    record = logging.LogRecord("bot", level, __file__, 1, message, None, None)
    line: dict[str, object] = json.loads(formatter.format(record))
    return line


def test_scrubber_removes_secrets_and_token_shapes() -> None:
    scrubber = SecretScrubber([SECRET])
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.addFilter(scrubber)
    handler.setFormatter(JsonFormatter())
    logger = logging.getLogger("test.scrub")
    logger.addHandler(handler)
    logger.propagate = False
    try:
        logger.warning("secret %s token ghs_%s", SECRET, "a" * 36)
        try:
            raise RuntimeError("Authorization: Bearer " + "b" * 40)
        except RuntimeError:
            logger.exception(
                "failed with key -----BEGIN RSA PRIVATE KEY-----\nabc\n"
                "-----END RSA PRIVATE KEY-----"
            )
    finally:
        logger.removeHandler(handler)
    output = stream.getvalue()
    assert SECRET not in output
    assert "ghs_" + "a" * 36 not in output
    assert "b" * 40 not in output
    assert "abc" not in output
    assert output.count(REDACTED) >= 4
    for line in output.strip().splitlines():
        json.loads(line)


def test_json_lines_keep_probots_level_and_message_knobs() -> None:
    """LOG_LEVEL_IN_STRING=false gives pino's numbers; LOG_MESSAGE_KEY renames the message."""
    default = one_line(JsonFormatter(), logging.WARNING, "hello")
    assert (default["level"], default["message"]) == ("warning", "hello")
    probot = one_line(JsonFormatter(level_in_string=False, message_key="msg"), logging.INFO, "hi")
    assert (probot["level"], probot["msg"]) == (30, "hi")
    assert "message" not in probot
    levels = [
        one_line(JsonFormatter(level_in_string=False), number, "x")["level"]
        for number in (logging.DEBUG, logging.INFO, logging.WARNING, logging.ERROR, 50)
    ]
    assert levels == [20, 30, 40, 50, 60]


@pytest.mark.usefixtures("restore_root_logger")
def test_silent_logs_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    configure_logging("SILENT", LogFormat.JSON)
    logging.getLogger("bot").critical("not shown")
    assert capsys.readouterr().err == ""
    configure_logging("DEBUG", LogFormat.JSON, level_in_string=False, message_key="msg")
    logging.getLogger("bot").debug("shown")
    line = json.loads(capsys.readouterr().err)
    assert (line["level"], line["msg"]) == (20, "shown")


def test_level_numbers() -> None:
    assert [level_number(name) for name in ("DEBUG", "CRITICAL")] == [10, 50]
    assert level_number("SILENT") > logging.CRITICAL
    with pytest.raises(ValueError, match="unknown log level"):
        level_number("LOUD")
