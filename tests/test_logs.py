"""Log hygiene (`bot/logs.py`): the webhook secret and credential shapes never reach a log
line, tracebacks included, and every line stays one JSON object."""

from __future__ import annotations

import io
import json
import logging

from bot.credentials import REDACTED
from bot.logs import JsonFormatter, SecretScrubber
from tests.support.webhook_helpers import SECRET


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
