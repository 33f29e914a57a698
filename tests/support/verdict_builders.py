"""Builders for verdict records with valid defaults: a test states only what it is about."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from bot.judge.records import (
    Finding,
    RoundRecord,
    RubricName,
    Tier,
    Truncation,
    Verdict,
    VerdictRecord,
    content_sha256,
    go_no_go_of,
)

WHEN = datetime(2026, 2, 17, 14, 30, tzinfo=UTC)
HEAD = "0123456789abcdef0123456789abcdef01234567"


def make_round(**overrides: Any) -> RoundRecord:
    """A successful quick round that asks for improvements."""
    fields: dict[str, Any] = {
        "round": 1,
        "judge_tier": Tier.QUICK,
        "model": "opencode/gpt-5-nano",
        "family": "openai",
        "verdict": Verdict.IMPROVE,
        "model_verdict": "improve",
        "scores": {"semantic": 3, "pragmatic": 3, "syntactic": 4},
        "average": 3.33,
        "reasoning": "Thin on examples.",
        "improvements": ["add an example"],
    }
    fields.update(overrides)
    return RoundRecord(**fields)


def make_record(**overrides: Any) -> VerdictRecord:
    """A deep-round accept after a quick improve, for one Markdown file."""
    files = overrides.get("files", ["docs/a.md"])
    final = overrides.get("final_decision", overrides.get("verdict", Verdict.ACCEPT))
    fields: dict[str, Any] = {
        "task_id": "octo/repo#7",
        "model": "opencode/kimi-k2.5-free",
        "mode": "deep",
        "verdict": Verdict.ACCEPT,
        "scores": {"semantic": 4, "pragmatic": 4, "syntactic": 5},
        "average": 4.33,
        "reasoning": "Accurate and actionable.",
        "improvements": [],
        "timestamp": WHEN,
        "round": 2,
        "judge_tier": Tier.DEEP,
        "previous_rounds": [make_round()],
        "consensus": None,
        "human_override": None,
        "rubric": RubricName.CONTENT,
        "prompt_version": "judge/1+content/1",
        "repository": "octo/repo",
        "head_sha": HEAD,
        "files": files,
        "content_hashes": {f: content_sha256(f) for f in files},
        "final_decision": final,
        "go_no_go": go_no_go_of(final),
    }
    fields.update(overrides)
    return VerdictRecord(**fields)


def make_unjudged(**overrides: Any) -> VerdictRecord:
    """A record where no model answered (a provider outage: the quick round failed):
    undetermined."""
    fields: dict[str, Any] = {
        "model": "",
        "mode": "quick",
        "verdict": Verdict.UNDETERMINED,
        "final_decision": Verdict.UNDETERMINED,
        "scores": {},
        "average": None,
        "reasoning": "",
        "round": 0,
        "judge_tier": None,
        "previous_rounds": [],
        "reason": "the quick round failed; failing open",
    }
    fields.update(overrides)
    return make_record(**fields)


def make_finding(**overrides: Any) -> Finding:
    fields: dict[str, Any] = {
        "source": "mechanical",
        "kind": "todo-marker",
        "severity": "hard",
        "path": "docs/a.md",
        "line": 3,
        "message": "TODO marker left in the text",
    }
    fields.update(overrides)
    return Finding(**fields)


def make_truncation(**overrides: Any) -> Truncation:
    fields: dict[str, Any] = {
        "path": "docs/a.md",
        "original_chars": 9000,
        "kept_chars": 4000,
        "tier": Tier.QUICK,
    }
    fields.update(overrides)
    return Truncation(**fields)


# Credential-shaped strings (fake values) for scrubber tests.
FAKE_SECRETS = {
    "github classic": "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
    "github installation": "ghs_" + "Z9y8X7w6V5u4T3s2R1q0P9o8N7m6L5k4J3i2",
    "github fine-grained": "github_pat_" + "11ABCDEFG0123456789_abcdefghijklmnopqrstuv",
    "openai": "sk-" + "proj-AbCdEfGhIjKlMnOpQrStUvWxYz012345",
    "anthropic": "sk-" + "ant-api03-AbCdEfGhIjKlMnOpQrStUv",
    "aws": "AKIA" + "IOSFODNN7EXAMPLE",
    "jwt": "eyJhbGciOiJSUzI1NiJ9" + ".eyJpc3MiOiIxMjM0NSJ9" + ".c2lnbmF0dXJlc2lnbmF0dXJl",
    "pem": "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA7bq\nq8Zk=\n"
    "-----END RSA PRIVATE KEY-----",
}
# A fragment that appears in each secret above and nowhere in ordinary output.
SECRET_FRAGMENTS = [
    "A1b2C3d4E5f6",
    "Z9y8X7w6V5u4",
    "11ABCDEFG0123",
    "proj-AbCdEf",
    "ant-api03",
    "IOSFODNN7",
    "eyJhbGciOiJSUzI1NiJ9",
    "MIIEowIBAAKCAQEA",
]


def assert_tables_whole(markdown: str) -> None:
    """Every table starts with a header and a separator row and no row is cut."""
    lines = markdown.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("|"):
            assert line.endswith("|"), f"cut table row: {line[:80]!r}"
            if i == 0 or not lines[i - 1].startswith("|"):
                assert i + 1 < len(lines) and re.fullmatch(r"\|( --- \|)+", lines[i + 1])
