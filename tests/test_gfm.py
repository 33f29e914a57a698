"""GitHub-flavoured Markdown for GitHub output (`bot/gfm.py`): credentials scrubbed from any
text, and blocks fitted into GitHub's size limits with a note of what was left out."""

from __future__ import annotations

import re

import pytest

from bot.gfm import fit_blocks, scrub_secrets
from tests.support.verdict_builders import FAKE_SECRETS


@pytest.mark.parametrize("name", list(FAKE_SECRETS))
def test_scrub_secrets_removes_each_shape(name: str) -> None:
    secret = FAKE_SECRETS[name]
    scrubbed = scrub_secrets(f"before {secret} after")
    assert scrubbed == "before [redacted] after"


def test_scrub_secrets_handles_cut_pem_and_keeps_ordinary_text() -> None:
    cut = "key:\n-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC"
    assert scrub_secrets(cut) == "key:\n[redacted]"
    ordinary = "task-management-framework uses ghp_short and sk-1 and AKIA; bearer of news"
    assert scrub_secrets(ordinary) == ordinary
    assert scrub_secrets("Authorization: Bearer abcdefghijklmnopqrstuvwxyz") == (
        "Authorization: [redacted]"
    )


def test_scrub_catches_glued_tokens_and_never_lengthens() -> None:
    token = FAKE_SECRETS["github classic"]
    assert scrub_secrets(f"url?token={token}&x=1") == "url?token=[redacted]&x=1"
    assert scrub_secrets(f'"{FAKE_SECRETS["openai"]}"') == '"[redacted]"'
    for secret in FAKE_SECRETS.values():
        assert len(scrub_secrets(secret)) <= len(secret)


def test_fit_blocks_keeps_tail_and_notes_what_was_dropped() -> None:
    blocks = ["a" * 400, "b" * 400, "c" * 400]
    out = fit_blocks(blocks, 1_000, tail=["TAIL"], what="part")
    assert out.startswith("a" * 400)
    assert "b" * 400 not in out and "c" * 400 not in out
    assert "_… 2 parts (800 characters) left out to stay within GitHub's size limit._" in out
    assert out.endswith("TAIL")
    assert len(out) <= 1_000
    assert fit_blocks(["x", "y"], 100, tail=["z"]) == "x\n\ny\n\nz"


def test_fit_blocks_shortens_a_single_oversized_block_at_a_line() -> None:
    block = "\n".join(f"line {i:04d}" for i in range(1_000))
    out = fit_blocks([block], 2_000)
    assert len(out) <= 2_000
    assert "characters left out" in out
    for line in out.splitlines():
        assert re.fullmatch(r"line \d{4}", line) or line.startswith(("…", "_…")) or not line
