"""Which model families wrote a change, and which family a judge model belongs to.

Four-eyes needs both sides in one vocabulary: a family name such as
`anthropic`, `openai`, `moonshot`, `meta`, `google`. Families come from
ordered regular expressions (first match wins, case-insensitive), tried on the
model's own name before its provider path, so `github-copilot/claude-sonnet-4`
is anthropic and `opencode/gpt-5-nano` is openai.

Authorship is read only from trailer-like lines of commit messages
(`Co-authored-by:`, `Generated-by:`, `Agent-Model:`, ... anywhere in the
message, not only in the last paragraph, because agents are loose about
placement) and from "Generated with <tool>" lines such as Claude Code's. The
subject and body prose are not searched: "fix gpt parsing" is not authorship.

Families the configuration declares are also recognised by name
(`family_names`, from `JudgeSettings.family_names`): `Agent-Model: acme-large`
names family acme when a tier is declared `JUDGE_QUICK_FAMILY=acme`. A name
counts as a token, not as any substring: no letter may touch it on either side,
so `acme-large`, `acme/large`, `acme2` and `ACME` name acme while `acmefoo` and
`superacme` do not (a digit is a version, a letter makes another word). One
trailer may name several families; each counts.

A false positive only swaps a judge for one of another family; a false
negative lets a model judge its own work. Matching is therefore generous, e.g.
a human co-author named Claude counts as anthropic.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

DEFAULT_FAMILY_PATTERNS: dict[str, str] = {
    r"deepseek": "deepseek",
    r"claude|anthropic|\bopus\b|\bsonnet\b|\bhaiku\b": "anthropic",
    r"\bkimi|moonshot": "moonshot",
    r"chatgpt|\bgpt|openai|\bcodex\b|\bdall-?e": "openai",
    # the o-series (o1, o3-mini, o4-mini) only as a whole token
    r"(?:^|[^a-z0-9])o[1-9](?:-(?:mini|pro|preview))*(?:$|[^a-z0-9])": "openai",
    r"gemini|gemma|\bbard\b|palm-?2": "google",
    r"llama|\bmeta\b": "meta",
    r"mistral|mixtral|codestral|devstral|magistral|pixtral": "mistral",
    r"qwen|alibaba": "alibaba",
    r"\bglm|zhipu|\bz\.ai\b": "zhipu",
    r"\bgrok|\bx\.ai\b|\bxai\b": "xai",
    r"cohere|command-r": "cohere",
    r"\bphi-?\d": "microsoft",
}

AUTHORSHIP_TRAILERS = frozenset(
    {
        "co-authored-by",
        "generated-by",
        "generated-with",
        "agent-model",
        "agent",
        "model",
        "ai-model",
        "ai-assistant",
        "llm",
        "assisted-by",
        "authored-by",
        "created-by",
        "signed-off-by",
    }
)

_TRAILER = re.compile(r"^\s*([A-Za-z][A-Za-z0-9-]*)\s*:\s*(\S.*)$")
_GENERATED = re.compile(r"\bgenerated\s+(?:with|by)\b\s*(.+)$", re.IGNORECASE)


def _compiled(patterns: Mapping[str, str] | None) -> list[tuple[re.Pattern[str], str]]:
    merged: dict[str, str] = dict(patterns or {})
    for pattern, family in DEFAULT_FAMILY_PATTERNS.items():
        merged.setdefault(pattern, family)
    return [(re.compile(p, re.IGNORECASE), f) for p, f in merged.items()]


def _match(text: str, compiled: Iterable[tuple[re.Pattern[str], str]]) -> str | None:
    for regex, family in compiled:
        if regex.search(text):
            return family
    return None


def family_of_model(model: str, patterns: Mapping[str, str] | None = None) -> str:
    """Family of a model id; `unknown:<name>` when no pattern matches.

    Custom `patterns` are tried before the defaults, so they can override them.
    """
    name = model.strip().lower()
    base = name.rsplit("/", 1)[-1]
    compiled = _compiled(patterns)
    family = _match(base, compiled) or _match(name, compiled)
    return family if family is not None else f"unknown:{base or name}"


def _named(names: Mapping[str, str]) -> list[tuple[re.Pattern[str], str]]:
    """A token pattern per declared family name (names shorter than two characters would
    match initials, so they are left out)."""
    return [
        (re.compile(rf"(?<![a-z]){re.escape(name.lower())}(?![a-z])", re.IGNORECASE), family)
        for name, family in sorted(names.items())
        if len(name.strip()) >= 2
    ]


def _authorship_values(message: str) -> Iterable[str]:
    for line in message.splitlines():
        trailer = _TRAILER.match(line)
        if trailer and trailer.group(1).lower() in AUTHORSHIP_TRAILERS:
            yield trailer.group(2)
            continue
        generated = _GENERATED.search(line)
        if generated:
            yield generated.group(1)


def detect_authoring_families(
    commit_messages: Sequence[str],
    patterns: Mapping[str, str] | None = None,
    family_names: Mapping[str, str] | None = None,
) -> list[str]:
    """Sorted, de-duplicated families named by authorship trailers: the first pattern
    that matches a trailer, and every declared family name (name -> family) in it."""
    compiled = _compiled(patterns)
    named = _named(family_names or {})
    found: set[str] = set()
    for message in commit_messages:
        for value in _authorship_values(message):
            family = _match(value, compiled)
            if family is not None:
                found.add(family)
            found.update(family for regex, family in named if regex.search(value))
    return sorted(found)
