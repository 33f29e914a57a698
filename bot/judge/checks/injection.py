"""Prompt-injection defences: spotting text aimed at the judge, and fencing file content.

Detection (`detect_injection` over the files, `detect_task_injection` over the
task's description, acceptance criteria and directives) looks for instructions
addressed to an LLM judge: overriding earlier instructions, demanding a score, claiming the judge's
role, telling it what verdict to emit, fake system-prompt or chat-template
markers, claims of prior approval, and attempts to forge this module's file
delimiters. Matching is case-insensitive on a normalised copy of each file
(Unicode NFKC, zero-width characters removed, Markdown emphasis, backticks,
quotes and underscores read as spaces, all whitespace runs including newlines
collapsed), plus a letters-only copy for the few phrases an attacker might
letter-space ("i g n o r e  p r e v i o u s ...").

Rule on quoting: quoting does not exempt. A document that discusses prompt
injection and quotes "ignore previous instructions" is flagged, because the
quoted words reach the model exactly as an attack would; an attacker could
quote for the same reason. The consequence is mild by design: injection
findings are soft, never reject, and only turn an accept into an escalation
for a human. What is deliberately not flagged: a bare example verdict object
such as {"verdict": "accept", ...} in documentation (only an instruction to
emit one is), phrases like "ignore the previous section", "you are the
reviewer", or "score this 5-point scale".

Limits: instructions in other languages, encodings (base64) or split across
files are not detected; the fencing in `wrap_file` and the system prompt's
rule that fenced content is data are the main defence, detection is a tripwire.

Fencing (`wrap_file`): content goes between delimiters that carry a per-call
random nonce. In the content (and path) every `<` that follows two others gets
a backslash (`<<<` becomes `<<\\<`), so no run of three appears and no
delimiter of any nonce can be forged inside, even if the nonce leaked.
"""

from __future__ import annotations

import json
import re
import secrets
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from bot.judge.records import Finding, JudgedFile, TaskSpec

# every "<" that follows two others gets a backslash: a run of any length then
# never holds three in a row (four "<" become two, then backslash-"<" twice)
_RUN = re.compile(r"(?<=<<)<")
_NONCE = re.compile(r"^[A-Za-z0-9_-]{16,128}$")
_ZERO_WIDTH = frozenset("\u200b\u200c\u200d\u200e\u200f\u2060\u2061\u2062\u2063\u2064\ufeff\u00ad")
_SOFT = frozenset("*_`~\"'\u201c\u201d\u2018\u2019\u00ab\u00bb")


@dataclass(frozen=True)
class _Rule:
    name: str
    description: str
    regex: re.Pattern[str]


_SUBJECT = (
    r"(?:this|it|me|the\s+(?:change|content|code|file|files|pr|pull\s+request|document|"
    r"submission|diff|patch))"
)
_TOP = r"(?:5|five|10|ten|100|1\.0|perfect|full\s+marks|top\s+marks|max(?:imum)?|highest)(?![\w-])"
_ROLE = r"(?:judge|grader|evaluator|scorer)s?"
_OUTPUT = r"(?:respond|reply|answer|output|return|print|emit|say|write|produce)"

_RULES: tuple[_Rule, ...] = (
    _Rule(
        "override",
        "asks to ignore earlier instructions",
        re.compile(
            r"\b(?:ignore|disregard|forget|override|bypass)\s+"
            r"(?:(?:all|any|the|your|of|everything|every)\s+)*"
            r"(?:previous|prior|above|earlier|preceding|foregoing|former|system|original|initial)"
            r"\s+(?:instructions?|prompts?|rules|directions|directives|guidelines|context|"
            r"messages?|commands?)\b"
        ),
    ),
    _Rule(
        "score-demand",
        "demands a score",
        re.compile(
            rf"\b(?:score|rate|grade|mark)\s+{_SUBJECT}\s+(?:as\s+|an?\s+|at\s+|with\s+(?:an?\s+)?)?{_TOP}"
            rf"|\bgive\s+{_SUBJECT}\s+(?:an?\s+)?(?:{_TOP}|passing\s+(?:grade|score)|accept)"
            rf"|\ball\s+(?:the\s+)?(?:scores|dimensions)\s+(?:should|must|are\s+to|will)\s+be\s+{_TOP}"
        ),
    ),
    _Rule(
        "role-claim",
        "addresses the judge or claims its role",
        re.compile(
            rf"\byou\s+are\s+(?:now\s+)?(?:the|an?|my)\s+(?:ai\s+|llm\s+|automated\s+|code\s+|"
            rf"content\s+|quality\s+)?{_ROLE}\b"
            rf"|\bas\s+(?:the|an?)\s+(?:ai\s+|llm\s+)?{_ROLE}\s*,?\s+you\s+(?:must|should|will|shall|need\s+to)\b"
            rf"|\b(?:note|message|instructions?|attention)\s+(?:to|for)\s+(?:the\s+|any\s+|all\s+)?"
            rf"(?:ai|llms?|language\s+models?|{_ROLE}|reviewer\s+(?:bots?|models?|ais?))\b"
            rf"|\b(?:dear|hey|hello|hi)\s+(?:ai|llm|{_ROLE}|language\s+model)\b"
            rf"|\b(?:ai|llm)\s+{_ROLE}\s*:"
        ),
    ),
    _Rule(
        "verdict-instruction",
        "tells the judge what verdict to emit",
        # Possessive spaces: a space either `\s*` could take made each repeated word
        # double the ways to fail ("say only only ... x" took exponential time).
        re.compile(
            rf"\b{_OUTPUT}\s+(?:(?:only|just|with|exactly|this|the\s+following)\s*+:?\s*+)*"
            r"(?:\{\s*)?verdict\s*+:?\s*+(?:accept|approve|pass|go)\b"
            rf"|\b{_OUTPUT}\s+(?:(?:only|just|with|exactly|this|the\s+following)\s*+:?\s*+)*"
            r"\{\s*pass\s*:\s*true\b"
            r"|\b(?:respond|reply|answer)\s+(?:only\s+|just\s+)?with\s+(?:an?\s+)?(?:accept|approve|pass|go)\b"
            r"|\b(?:the\s+)?verdict\s+(?:must|should|shall|has\s+to)\s+be\s+(?:accept|approved?|pass|go)\b"
        ),
    ),
    _Rule(
        "system-override",
        "imitates a system prompt or chat template",
        re.compile(
            # underscores read as spaces: <|im_start|> arrives as "<|im start|>"
            r"<\|\s*im\s?start\s*\|>\s*system|<\|\s*start\s?header\s?id\s*\|>\s*system"
            r"|\[/?inst\]|<<\s*/?sys\s*>>"
            r"|</?system>|\b(?:begin|start)\s+(?:of\s+)?(?:the\s+)?(?:new\s+)?system\s+"
            r"(?:prompt|message|instructions)"
            r"|\b(?:new|updated|revised|real|actual|true|overriding)\s+(?:system\s+)?"
            r"(?:prompt|instructions)\s*:"
            r"|\bsystem\s*(?:prompt)?\s*:\s*you\s+(?:are|must|will|shall)\b"
            r"|\bend\s+of\s+(?:the\s+)?(?:user\s+)?(?:input|content|file|document|data)\s*[.:]?\s*"
            r"(?:new|now|the\s+following\s+are)\s+(?:instructions|system)"
        ),
    ),
    _Rule(
        "approval-claim",
        "claims the judge already approved it",
        re.compile(
            rf"\b{_ROLE}\s+(?:has|have)\s+already\s+(?:approved|accepted|passed)"
            rf"|\balready\s+(?:been\s+)?(?:approved|accepted|passed)\s+by\s+(?:the\s+|an?\s+)?"
            rf"(?:ai\s+|llm\s+)?(?:{_ROLE}|system)\b"
        ),
    ),
    _Rule(
        "delimiter-forgery",
        "imitates the judge's file delimiters",
        re.compile(r"<<<\s*/?\s*(?:end-)?judged-file"),
    ),
)

_SQUASHED: tuple[tuple[str, str, re.Pattern[str]], ...] = (
    (
        "override",
        "asks to ignore earlier instructions",
        re.compile(
            r"(?:ignore|disregard|forget)(?:all|any|the|your)*(?:previous|prior|above|earlier)"
            r"(?:instructions?|prompts?|rules)"
        ),
    ),
    ("role-claim", "addresses the judge or claims its role", re.compile(r"youarenowthejudge")),
)


def _normalise(text: str, *, letters_only: bool) -> tuple[str, list[int]]:
    """The normalised text and, per character, the 1-based source line."""
    chars: list[str] = []
    lines: list[int] = []
    line = 1
    for raw in text:
        if raw == "\n":
            line += 1
        if raw in _ZERO_WIDTH:
            continue
        for ch in unicodedata.normalize("NFKC", raw).lower():
            if letters_only:
                if ch.isalnum():
                    chars.append(ch)
                    lines.append(line)
                continue
            if ch.isspace() or ch in _SOFT:
                if chars and chars[-1] != " ":
                    chars.append(" ")
                    lines.append(line)
                continue
            chars.append(ch)
            lines.append(line)
    return "".join(chars), lines


def scan_text(text: str) -> list[tuple[int, str, str]]:
    """(line, rule name, description) per hit, one per rule and line."""
    hits: dict[tuple[int, str], str] = {}
    spaced, spaced_lines = _normalise(text, letters_only=False)
    for rule in _RULES:
        for match in rule.regex.finditer(spaced):
            hits.setdefault((spaced_lines[match.start()], rule.name), rule.description)
    squashed, squashed_lines = _normalise(text, letters_only=True)
    for name, description, regex in _SQUASHED:
        for match in regex.finditer(squashed):
            hits.setdefault((squashed_lines[match.start()], name), description)
    return sorted((line, name, d) for (line, name), d in hits.items())


def detect_injection(files: Sequence[JudgedFile]) -> list[Finding]:
    """Findings for every live file. Files with NUL bytes are scanned too: their text
    reaches the judges like any other."""
    findings: list[Finding] = []
    for file in files:
        if file.removed:
            continue
        for line, name, description in scan_text(file.content):
            findings.append(
                Finding(
                    source="injection",
                    kind="judge-directed-instruction",
                    severity="soft",
                    path=file.path,
                    line=line,
                    message=f"text addressed to the judge: {description} ({name})",
                )
            )
    return findings


def detect_task_injection(task: TaskSpec) -> list[Finding]:
    """The same tripwire over the task's texts (they come from the change's author too
    and reach the judges), each under its pseudo-path such as `<task description>`."""
    return detect_injection(
        [JudgedFile(path=label, content=text) for label, text in task.labelled_texts()]
    )


def new_nonce() -> str:
    return secrets.token_hex(16)


def escape_untrusted(text: str) -> str:
    """Make `text` unable to contain any judged-file delimiter."""
    return _RUN.sub(r"\\<", text)


def _check_nonce(nonce: str) -> None:
    if not _NONCE.match(nonce):
        raise ValueError("nonce must be 16-128 characters of [A-Za-z0-9_-]")


def opening_delimiter(path: str, nonce: str, note: str = "") -> str:
    _check_nonce(nonce)
    label = escape_untrusted(json.dumps(path, ensure_ascii=True))
    suffix = f" {escape_untrusted(note)}" if note else ""
    return f"<<<JUDGED-FILE nonce={nonce} path={label}{suffix}>>>"


def closing_delimiter(nonce: str) -> str:
    _check_nonce(nonce)
    return f"<<<END-JUDGED-FILE nonce={nonce}>>>"


def wrap_file(path: str, text: str, nonce: str, note: str = "") -> str:
    """`text` fenced as data; the only delimiters in the result are the two added here."""
    body = escape_untrusted(text)
    if body and not body.endswith("\n"):
        body += "\n"
    return f"{opening_delimiter(path, nonce, note)}\n{body}{closing_delimiter(nonce)}"
