"""Credential shapes: the one table every secret check in the app reads.

Three places need to recognise a credential, and they used to keep their own lists,
which drifted apart (a key one place caught slipped through another):

* the judge's mechanical check (`scan_lines`) reports a credential in a judged file as
  a hard finding, which also stops the content from reaching any model provider;
* the renderer (`bot.gfm.scrub_secrets`) scrubs every check-run, issue and comment
  string, since a judge can be steered into echoing a token;
* the log filter (`bot.logs.SecretScrubber`) scrubs every log line.

So each shape is listed once, with two forms. The scan form is precise, because a
finding rejects a change: exact lengths, word boundaries, and obvious placeholders
(`is_placeholder`) are not reported. The redaction form (`redact`) is deliberately
broader, because removing a harmless string from a comment or log costs nothing while
leaking a real one cannot be undone: it also catches shortened or glued tokens and
placeholders, and a PEM block cut off before its END line is removed to the end of the
text. Every redaction match is at least as long as REDACTED, so redacting never makes a
string longer (callers cut strings to GitHub's limits before redacting).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

REDACTED = "[redacted]"


@dataclass(frozen=True)
class CredentialShape:
    label: str
    scan: re.Pattern[str]
    """Precise form for findings; group 1 is the random part checked for placeholders
    (for a key block, the header, whose material is checked on the next lines)."""
    redact: tuple[str, ...]
    """Broad forms for scrubbing, each starting with a plain character (see below)."""
    mixed: bool = False
    """The random part must mix letters and digits: the shape also fits prose."""
    wrapper: bool = False
    """The value may itself be another shape (`Bearer ghp_...`); a match overlapping
    an earlier shape's match is not reported twice."""
    block: bool = False
    """A key block: the header counts only when key material follows it."""


# Redaction branches each start with a plain character so the regex engine can skip
# ahead to candidate positions (about ten times faster on long model answers than `\b`
# first); word-boundary checks are lookbehinds placed after that first character. A
# branch starting with a group, a class or an assertion turns the skip off.
_W = r"[A-Za-z0-9_]"
_AN = r"[A-Za-z0-9]"
# What follows `Bearer` or `token` in an Authorization header (RFC 6750 token68).
_HEADER_VALUE = r"\s+[A-Za-z0-9._~+/\-]{16,}=*"
_HEADER_WORDS = (("B", "earer"), ("b", "earer"), ("T", "oken"), ("t", "oken"))
# A JWT is redacted from any `eyJ`, even one glued to a word, so a run such as
# `eyJeyJeyJ...` offers a start every three characters. Each later `eyJ` of a run ends
# its first part where the first one's does, only shorter, so once the first fails they
# all fail; letting the engine try each one anyway scanned the run once per `eyJ`
# (a 100 KB run took seconds). The branch's second half instead takes the rest of the
# run as a match marked by this group, which `_spans` drops: each run is read once.
_JWT_PART = r"[A-Za-z0-9_\-]"
_NOT_A_CREDENTIAL = "not_a_credential"

PRIVATE_KEY_HEADER = re.compile(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----")
# a PEM body line, or the headers an encrypted PEM or PGP block starts with
_KEY_BODY = re.compile(r"^\s*(?:[A-Za-z0-9+/=]{20,}|Proc-Type:.*|Version:.*|Comment:.*)\s*$")

SHAPES: tuple[CredentialShape, ...] = (
    CredentialShape(
        "GitHub token",
        re.compile(r"(?<![A-Za-z0-9_])gh[pousr]_([A-Za-z0-9]{36})(?![A-Za-z0-9])"),
        (r"gh[pousr]_[A-Za-z0-9]{20,}",),
    ),
    CredentialShape(
        "GitHub fine-grained token",
        re.compile(r"(?<![A-Za-z0-9_])github_pat_([A-Za-z0-9_]{82})(?![A-Za-z0-9_])"),
        (r"github_pat_[A-Za-z0-9_]{20,}",),
    ),
    CredentialShape(
        "AWS access key id",
        re.compile(r"(?<![A-Z0-9])(?:AKIA|ASIA)([0-9A-Z]{16})(?![A-Z0-9])"),
        (r"A(?<![A-Z0-9]A)(?:KIA|SIA)[0-9A-Z]{16}(?![A-Z0-9])",),
    ),
    CredentialShape(
        "API secret key (sk-)",
        re.compile(
            r"(?<![A-Za-z0-9_-])sk-(?:proj-|ant-(?:api\d\d-)?|svcacct-)?([A-Za-z0-9_-]{32,})"
        ),
        (rf"s(?<!{_W}s)k-[A-Za-z0-9_\-]{{16,}}",),
        # kebab-case prose such as sk-a-very-long-identifier-name is not a key
        mixed=True,
    ),
    CredentialShape(
        "Slack token",
        re.compile(r"(?<![A-Za-z0-9])xox[abposr]-([A-Za-z0-9-]{20,})"),
        (r"xox[abposr]-[A-Za-z0-9\-]{10,}",),
    ),
    CredentialShape(
        "Google API key",
        re.compile(r"(?<![A-Za-z0-9])AIza([0-9A-Za-z_-]{35})(?![0-9A-Za-z_-])"),
        (r"AIza[0-9A-Za-z_\-]{35}",),
    ),
    CredentialShape(
        "Stripe secret key",
        re.compile(r"(?<![A-Za-z0-9])[rs]k_live_([0-9A-Za-z]{20,})"),
        tuple(rf"{c}(?<!{_AN}{c})k_live_[0-9A-Za-z]{{20,}}" for c in "rs"),
    ),
    CredentialShape(
        "JSON Web Token",
        re.compile(
            r"(?<![A-Za-z0-9_-])eyJ([A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})"
        ),
        (
            rf"eyJ(?:{_JWT_PART}{{8,}}+\.{_JWT_PART}{{8,}}+\.{_JWT_PART}{{8,}}+"
            rf"|{_JWT_PART}{{7,}}+(?P<{_NOT_A_CREDENTIAL}>))",
        ),
    ),
    CredentialShape(
        "bearer or token credential",
        re.compile(r"(?<![A-Za-z0-9_])(?i:bearer|token)\s+([A-Za-z0-9._~+/-]{16,}=*)"),
        # any case (`Authorization: token ...` is how GitHub's API takes a token); the
        # first letter is spelled out in both cases to keep it a plain character
        tuple(f"{c}(?i:{rest}){_HEADER_VALUE}" for c, rest in _HEADER_WORDS),
        # "Bearer tokens/credentials" in prose is not a credential
        mixed=True,
        wrapper=True,
    ),
    CredentialShape(
        "private key",
        PRIVATE_KEY_HEADER,
        (
            r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
            r"(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
        ),
        block=True,
    ),
)

# One pattern per shape, not one alternation of all: an alternation takes the leftmost
# match and moves past it, so a `token ...` value running into a key block's header
# would hide the block. Separate passes find every shape; overlapping spans are merged.
_REDACTORS = tuple((re.compile("|".join(shape.redact)), shape.wrapper) for shape in SHAPES)


def _matches(pattern: re.Pattern[str], wrapper: bool, text: str) -> Iterator[re.Match[str]]:
    if not wrapper:
        yield from pattern.finditer(text)
        return
    # A wrapper's value can run into the next `Bearer`/`token` word and hide its value,
    # so look again from just after each start. Still linear: a nested match can only
    # start in the last word of the value, where whitespace ends it.
    match = pattern.search(text)
    while match is not None:
        yield match
        match = pattern.search(text, match.start() + 1)


def _spans(pattern: re.Pattern[str], wrapper: bool, text: str) -> Iterator[tuple[int, int]]:
    for match in _matches(pattern, wrapper, text):
        if match.lastgroup != _NOT_A_CREDENTIAL:
            yield match.span()


_PLACEHOLDER = re.compile(r"example|xxxx|0000|your|dummy|fake|redacted|placeholder", re.I)


def is_placeholder(body: str) -> bool:
    """AWS's documentation keys (EXAMPLE), runs such as xxxx or 0000, `your...`
    stand-ins, or fewer than six distinct characters in the random part."""
    return bool(_PLACEHOLDER.search(body)) or len(set(body.lower())) < 6


def _looks_random(shape: CredentialShape, body: str) -> bool:
    if is_placeholder(body):
        return False
    if shape.mixed:
        return any(c.isdigit() for c in body) and any(c.isalpha() for c in body)
    return True


def find_secrets(line: str) -> Iterator[str]:
    """Labels of credentials on one line (one per match; key blocks need `scan_lines`)."""
    taken = bytearray(len(line))  # characters inside an earlier shape's match
    for shape in SHAPES:
        if shape.block:
            continue
        for match in shape.scan.finditer(line):
            start, end = match.span()
            if shape.wrapper and any(taken[start:end]):
                continue
            taken[start:end] = b"\x01" * (end - start)
            if _looks_random(shape, match.group(1)):
                yield shape.label


def scan_lines(lines: Sequence[str]) -> Iterator[tuple[int, str]]:
    """(1-based line, label) for each credential. A private key header counts
    only when key material follows it, so prose naming the header is not one."""
    blocks = [shape for shape in SHAPES if shape.block]
    for index, line in enumerate(lines):
        for shape in blocks:
            if shape.scan.search(line):
                following = next((ln for ln in lines[index + 1 : index + 4] if ln.strip()), "")
                if _KEY_BODY.match(following):
                    yield index + 1, shape.label
        for label in find_secrets(line):
            yield index + 1, label


def redact(text: str) -> str:
    """`text` with every credential-shaped value replaced by REDACTED, placeholders
    included; a key block without its END line is removed to the end of `text`.
    Overlapping matches become one REDACTED, so the result is never longer."""
    spans = sorted(span for shape in _REDACTORS for span in _spans(*shape, text))
    if not spans:
        return text
    parts: list[str] = []
    kept_from = 0
    start, end = spans[0]
    for next_start, next_end in spans[1:]:
        if next_start < end:
            end = max(end, next_end)
            continue
        parts += [text[kept_from:start], REDACTED]
        kept_from, start, end = end, next_start, next_end
    parts += [text[kept_from:start], REDACTED, text[end:]]
    return "".join(parts)
