"""One table of credential shapes, three consumers: each must catch every shape.

The judge's scanner reports it (and the mechanical check turns that into a hard
finding), the renderer's scrub removes it from GitHub output, and the log filter
removes it from log lines. Placeholders are not reported, but are still removed.
"""

from __future__ import annotations

import importlib
import logging
from typing import NamedTuple

import pytest

from bot.credentials import REDACTED, SHAPES, find_secrets, redact, scan_lines
from bot.gfm import scrub_secrets
from bot.judge.checks.mechanical import run_mechanical_checks
from bot.judge.records import JudgedFile
from bot.logs import SecretScrubber


class Sample(NamedTuple):
    label: str
    text: str
    value: str
    """The part that must never survive a scrub."""


def _bare(label: str, value: str) -> Sample:
    return Sample(label, value, value)


def _pem(kind: str, body: str) -> str:
    # assembled so no scanner sees a literal key block in this file
    return f"-----BEGIN {kind}PRIVATE KEY-----\n{body}\n-----END {kind}PRIVATE KEY-----"


_PEM_BODY = "MIIEowIBAAKCAQEA7Vx2v3Kq9Zr8Jt5Lp4Wm6Nb1Hc0Gd3Fe2Sa7Qy"
_JWT = "ey" + "JhbGciOiJIUzI1NiJ9" + ".eyJzdWIiOiI0MjEzIn0" + ".Tq8Vz2Lm5Nx7Bc4Kd9Hf3Jg6"
_BEARER_VALUE = "mF3kQ9zR7tW2xB8nL4pV6yH1"
_TOKEN_VALUE = "3f9a1c7e5b2d4f6a8c1e1b3d5f7a9c2e4b6d8f1a"

# One realistic but fake sample per shape, assembled so no literal trips a scanner.
SAMPLES: dict[str, Sample] = {
    "github classic": _bare("GitHub token", "gh" + "p_" + "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5"),
    "github installation": _bare(
        "GitHub token", "gh" + "s_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2"
    ),
    "github fine-grained": _bare(
        "GitHub fine-grained token",
        "github_" + "pat_" + ("11ABCDEFG0" + "aZ3x9Qw7Rt") * 4 + "Kp",
    ),
    "aws": _bare("AWS access key id", "AK" + "IA" + "Z7Q2W9E4R1T6Y3U8"),
    "aws session": _bare("AWS access key id", "AS" + "IA" + "Q4W8E2R6T1Y5U9I3"),
    "openai": _bare("API secret key (sk-)", "s" + "k-proj-" + "Tq8Vz2Lm5Nx7Bc4Kd9Hf3Jg6Ws1Ep0Ry"),
    "anthropic": _bare(
        "API secret key (sk-)", "s" + "k-ant-api03-" + "Hf3Jg6Ws1Ep0RyTq8Vz2Lm5Nx7Bc4Kd9"
    ),
    "slack": _bare("Slack token", "xo" + "xb-" + "2048613571-4095127368-Zq8Wv3Lk5Nm7Rt9Yp2Xc4Bd6"),
    "google": _bare("Google API key", "AI" + "za" + "SyD3fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5b"),
    "stripe": _bare("Stripe secret key", "s" + "k_live_" + "4eC39HqLyjWDarjtT1zdp7dc"),
    "stripe restricted": _bare("Stripe secret key", "r" + "k_live_" + "51HxQ2eZvKYlo2C8q9Lm5Nx7"),
    "jwt": _bare("JSON Web Token", _JWT),
    "bearer header": Sample(
        "bearer or token credential", "Authorization: Bearer " + _BEARER_VALUE, _BEARER_VALUE
    ),
    "token header": Sample(
        "bearer or token credential", "Authorization: token " + _TOKEN_VALUE, _TOKEN_VALUE
    ),
    "pem rsa": Sample("private key", _pem("RSA ", _PEM_BODY), _PEM_BODY),
    "pem pkcs8": Sample("private key", _pem("", _PEM_BODY), _PEM_BODY),
    "pem openssh": Sample("private key", _pem("OPENSSH ", _PEM_BODY), _PEM_BODY),
}

PLACEHOLDERS = [
    "AK" + "IAIOSFODNN7EXAMPLE",
    "gh" + "p_" + "x" * 36,
    "s" + "k-" + "0" * 40,
    "s" + "k-" + "this-is-a-long-kebab-case-identifier-name",
    "xo" + "xb-" + "your-slack-token-goes-here",
    "Authorization: Bearer " + "YOUR_TOKEN_HERE_1234567",
]


def test_every_shape_has_a_sample() -> None:
    assert {s.label for s in SAMPLES.values()} == {shape.label for shape in SHAPES}


@pytest.mark.parametrize("name", list(SAMPLES))
def test_judge_scanner_reports_each_shape(name: str) -> None:
    sample = SAMPLES[name]
    lines = f"config:\n  key: {sample.text}\n".splitlines()
    assert [label for _, label in scan_lines(lines)] == [sample.label]


@pytest.mark.parametrize("name", list(SAMPLES))
def test_mechanical_check_is_hard_and_never_echoes_each_shape(name: str) -> None:
    sample = SAMPLES[name]
    found = run_mechanical_checks([JudgedFile(path="cfg.txt", content=f"x\n{sample.text}\n")])
    assert [(f.kind, f.severity, f.line) for f in found] == [("secret", "hard", 2)]
    assert sample.value not in found[0].model_dump_json()


@pytest.mark.parametrize("name", list(SAMPLES))
def test_renderer_scrub_removes_each_shape(name: str) -> None:
    sample = SAMPLES[name]
    scrubbed = scrub_secrets(f"before {sample.text} after")
    assert sample.value not in scrubbed
    assert scrubbed.startswith("before ") and scrubbed.endswith(f"{REDACTED} after")


@pytest.mark.parametrize("name", list(SAMPLES))
def test_log_scrubber_removes_each_shape(name: str) -> None:
    sample = SAMPLES[name]
    record = logging.LogRecord("t", logging.WARNING, __file__, 1, "got %s", (sample.text,), None)
    SecretScrubber().filter(record)
    assert sample.value not in record.getMessage()
    assert REDACTED in record.getMessage()


@pytest.mark.parametrize("value", PLACEHOLDERS)
def test_placeholders_are_not_reported_but_are_redacted(value: str) -> None:
    assert list(scan_lines([f"use {value} here"])) == []
    assert REDACTED in scrub_secrets(value)
    assert REDACTED in SecretScrubber().scrub(value)


def test_a_wrapped_credential_is_reported_once_under_its_own_shape() -> None:
    github = SAMPLES["github classic"].value
    assert list(find_secrets(f"Authorization: Bearer {github}")) == ["GitHub token"]
    assert list(find_secrets(f"Authorization: Bearer {_JWT}")) == ["JSON Web Token"]
    assert list(find_secrets("Bearer tokens/credentials are described in the RFC")) == []


def test_key_header_in_prose_is_not_reported_but_a_cut_block_is_redacted() -> None:
    header = "-----BEGIN " + "RSA PRIVATE KEY-----"
    assert list(scan_lines([f"Keys start with `{header}` then base64."])) == []
    cut = f"key:\n{header}\n{_PEM_BODY[:30]}"
    assert scrub_secrets(cut) == f"key:\n{REDACTED}"
    assert SecretScrubber().scrub(cut) == f"key:\n{REDACTED}"


def test_overlapping_shapes_are_all_redacted() -> None:
    """A header value running into the next credential must not hide it."""
    pem = SAMPLES["pem rsa"]
    glued = "token " + "abcdefgh12345678" + pem.text
    assert pem.value not in redact(glued)
    hidden = "Token " + "S5C1TKWScNvVQiUR" + "-bearer\t" + _BEARER_VALUE
    assert _BEARER_VALUE not in redact(hidden)


def test_redaction_never_lengthens_and_keeps_its_fast_start() -> None:
    parser = importlib.import_module("re._parser")
    for shape in SHAPES:
        for branch in shape.redact:
            # a plain first character lets the engine skip ahead (see bot.credentials)
            assert branch[0] not in "([\\.^" and branch[1] not in "*+?{", branch
            assert parser.parse(branch).getwidth()[0] >= len(REDACTED), branch
    for sample in SAMPLES.values():
        assert len(redact(sample.text)) <= len(sample.text)
