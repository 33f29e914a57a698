"""Just enough Markdown to check links: headings, their GitHub anchors, and link targets.

Anchors follow GitHub's slugger: the heading's rendered text, lower-cased;
every character that is not a letter, digit, mark, space, hyphen or underscore
is dropped; each space becomes a hyphen (runs are not collapsed, so "A & B" is
`a--b`); a repeated slug gets `-1`, `-2`, ... Explicit `<a name=...>` and
`id=...` attributes also count. Fenced code blocks and inline code spans are
not scanned for links or headings; YAML front matter is skipped.

`unfenced_lines` is also how `/judge` commands are found in comments: a command, a
link or a heading shown inside a code block is an example, not the real thing, and
both must agree with GitHub on where a block ends. Comments have no front matter, so
skipping it is the caller's choice.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

MARKDOWN_SUFFIXES = (".md", ".markdown", ".mdown", ".mkd")

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_CODE_SPAN = re.compile(r"(`+)(.+?)\1")
_INLINE_LINK = re.compile(
    r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*(<[^>\n]*>|[^\s()]*(?:\([^\s()]*\)[^\s()]*)*)"
    r"(?:\s+(?:\"[^\"]*\"|'[^']*'|\([^)]*\)))?\s*\)"
)
_REFERENCE_DEF = re.compile(r"^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)")
_HTML_LINK = re.compile(r"<(?:a|img)\b[^>]*?\b(?:href|src)\s*=\s*[\"']([^\"']*)[\"']", re.I)
_HTML_ANCHOR = re.compile(r"<[a-z][^>]*?\b(?:name|id)\s*=\s*[\"']([^\"']+)[\"']", re.I)
_HTML_TAG = re.compile(r"<[^>]+>")
_LINK_TEXT = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_STARS = re.compile(r"[*~]+")
# emphasis underscores sit at word edges; snake_case keeps its underscore
_UNDERSCORES = re.compile(r"(?<![A-Za-z0-9])_+|_+(?![A-Za-z0-9])")


@dataclass(frozen=True)
class Link:
    line: int
    target: str


def is_markdown(path: str) -> bool:
    return path.lower().endswith(MARKDOWN_SUFFIXES)


def _front_matter_end(lines: Sequence[str]) -> int:
    """Index of the first line after YAML front matter (0 when there is none)."""
    if lines and lines[0].strip() == "---":
        for i in range(1, len(lines)):
            if lines[i].strip() in ("---", "..."):
                return i + 1
    return 0


def unfenced_lines(text: str, *, skip_front_matter: bool = False) -> Iterator[tuple[int, str]]:
    """(1-based number, line) outside fenced code blocks, fence lines excluded.

    A fence opens with three or more backticks or tildes (up to three spaces of
    indentation) and closes with the same character, at least as many, and nothing
    else on the line; an unclosed fence runs to the end of the text.
    """
    lines = text.splitlines()
    fence: str | None = None
    for index in range(_front_matter_end(lines) if skip_front_matter else 0, len(lines)):
        line = lines[index]
        opened = _FENCE.match(line)
        if fence is None:
            if opened:
                fence = opened.group(1)
                continue
            yield index + 1, line
        elif (
            opened
            and opened.group(1)[0] == fence[0]
            and len(opened.group(1)) >= len(fence)
            and not line.strip().strip(fence[0])
        ):
            fence = None


def prose_lines(text: str) -> Iterator[tuple[int, str]]:
    """(1-based number, line) outside front matter and fenced code blocks."""
    return unfenced_lines(text, skip_front_matter=True)


def _strip_inline(text: str) -> str:
    text = _LINK_TEXT.sub(lambda m: m.group(1), text)
    text = _HTML_TAG.sub("", text)
    text = _STARS.sub("", text)
    return _UNDERSCORES.sub("", text)


def _heading_text(raw: str) -> str:
    """Rendered text of a heading: code spans verbatim, markup elsewhere removed."""
    parts: list[str] = []
    last = 0
    for match in _CODE_SPAN.finditer(raw):
        parts.append(_strip_inline(raw[last : match.start()]))
        parts.append(match.group(2).strip())
        last = match.end()
    parts.append(_strip_inline(raw[last:]))
    return "".join(parts)


def slug(heading: str) -> str:
    kept = []
    for ch in heading.strip().lower():
        if ch in " -_" or unicodedata.category(ch)[0] in "LNM":
            kept.append(ch)
    return "".join(kept).replace(" ", "-")


def anchors(text: str) -> set[str]:
    """Every fragment a link may target in this Markdown document (lower-case)."""
    seen: dict[str, int] = {}
    out: set[str] = set()
    previous: str | None = None
    for _, line in prose_lines(text):
        for match in _HTML_ANCHOR.finditer(line):
            out.add(match.group(1).lower())
        heading: str | None = None
        atx = _ATX.match(line)
        if atx:
            heading = atx.group(2) or ""
            previous = None
        elif _SETEXT.match(line) and previous and previous.strip():
            heading = previous
            previous = None
        else:
            previous = line if not line.startswith((" " * 4, "\t")) else None
        if heading is None:
            continue
        base = slug(_heading_text(heading))
        candidate = base
        while candidate in out:
            seen[base] = seen.get(base, 0) + 1
            candidate = f"{base}-{seen[base]}"
        out.add(candidate)
    return out


def links(text: str) -> Iterator[Link]:
    """Link targets in prose, with the line they are on (code spans blanked)."""
    for number, line in prose_lines(text):
        visible = _CODE_SPAN.sub(lambda m: " " * len(m.group(0)), line)
        for match in _INLINE_LINK.finditer(visible):
            yield Link(number, match.group(1))
        definition = _REFERENCE_DEF.match(visible)
        if definition:
            yield Link(number, definition.group(1))
        for match in _HTML_LINK.finditer(visible):
            yield Link(number, match.group(1))
