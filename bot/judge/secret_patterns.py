"""Credential shapes, found by line and described without ever quoting the value.

A private key block and the token formats below are reported as hard findings:
a change carrying a live credential must not be accepted, and a hard finding
also stops the engine from sending the content to any model provider.

Obvious placeholders are not reported: values containing EXAMPLE (AWS's own
documentation keys), runs such as xxxx or 0000, `your...` stand-ins, or with
fewer than six distinct characters in the random part.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class SecretPattern:
    label: str
    regex: re.Pattern[str]
    """Group 1 is the random part, checked for placeholders."""


PRIVATE_KEY_HEADER = re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")
# a PEM body line, or the headers an encrypted PEM or PGP block starts with
_KEY_BODY = re.compile(r"^\s*(?:[A-Za-z0-9+/=]{20,}|Proc-Type:.*|Version:.*|Comment:.*)\s*$")

SECRET_PATTERNS: tuple[SecretPattern, ...] = (
    SecretPattern(
        "GitHub token", re.compile(r"(?<![A-Za-z0-9_])gh[pousr]_([A-Za-z0-9]{36})(?![A-Za-z0-9])")
    ),
    SecretPattern(
        "GitHub fine-grained token",
        re.compile(r"(?<![A-Za-z0-9_])github_pat_([A-Za-z0-9_]{82})(?![A-Za-z0-9_])"),
    ),
    SecretPattern(
        "AWS access key id", re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA)([0-9A-Z]{16})(?![A-Z0-9])")
    ),
    SecretPattern(
        "API secret key (sk-)",
        re.compile(
            r"(?<![A-Za-z0-9_-])sk-(?:proj-|ant-(?:api\d\d-)?|svcacct-)?([A-Za-z0-9_-]{32,})"
        ),
    ),
    SecretPattern("Slack token", re.compile(r"(?<![A-Za-z0-9])xox[abposr]-([A-Za-z0-9-]{20,})")),
    SecretPattern(
        "Google API key", re.compile(r"(?<![A-Za-z0-9])AIza([0-9A-Za-z_-]{35})(?![0-9A-Za-z_-])")
    ),
    SecretPattern(
        "Stripe secret key", re.compile(r"(?<![A-Za-z0-9])[rs]k_live_([0-9A-Za-z]{20,})")
    ),
)

_PLACEHOLDER = re.compile(r"example|xxxx|0000|your|dummy|fake|redacted|placeholder", re.I)


def is_placeholder(body: str) -> bool:
    return bool(_PLACEHOLDER.search(body)) or len(set(body.lower())) < 6


def _looks_random(label: str, body: str) -> bool:
    if is_placeholder(body):
        return False
    if label == "API secret key (sk-)":
        # kebab-case prose such as sk-a-very-long-identifier-name is not a key
        return any(c.isdigit() for c in body) and any(c.isalpha() for c in body)
    return True


def find_secrets(line: str) -> Iterator[str]:
    """Labels of credentials on one line (one per match)."""
    for pattern in SECRET_PATTERNS:
        for match in pattern.regex.finditer(line):
            if _looks_random(pattern.label, match.group(1)):
                yield pattern.label


def scan_lines(lines: Sequence[str]) -> Iterator[tuple[int, str]]:
    """(1-based line, label) for each credential. A private key header counts
    only when key material follows it, so prose naming the header is not one."""
    for index, line in enumerate(lines):
        if PRIVATE_KEY_HEADER.search(line):
            following = next((ln for ln in lines[index + 1 : index + 4] if ln.strip()), "")
            if _KEY_BODY.match(following):
                yield index + 1, "private key"
        for label in find_secrets(line):
            yield index + 1, label


def redact(text: str) -> str:
    """`text` with every credential-shaped value replaced, placeholders included."""
    text = PRIVATE_KEY_HEADER.sub("[redacted]", text)
    for pattern in SECRET_PATTERNS:
        text = pattern.regex.sub("[redacted]", text)
    return text
