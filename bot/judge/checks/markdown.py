"""Just enough Markdown to check links: headings, their GitHub anchors, and link targets.

Anchors follow GitHub's slugger: the heading's rendered text, lower-cased;
every character that is not a letter, digit, mark, space, hyphen or underscore
is dropped; each space becomes a hyphen (runs are not collapsed, so "A & B" is
`a--b`); a repeated slug gets `-1`, `-2`, ... Explicit `<a name=...>` and
`id=...` attributes also count. Fenced code blocks and inline code spans are
not scanned for links or headings; YAML front matter is skipped.

`shown_lines` is how `/judge` commands are found in comments: only text a person sees
as a line of its own counts. A command shown inside a code block is an example; one
inside an HTML comment is invisible on GitHub; one on a line right after a quoted
line is drawn inside the quote (a lazy continuation line). Both scanners must agree
with GitHub on where a block ends, and where they cannot be sure they hide too much
rather than too little: a hidden line taken for a command runs it, a visible one
taken for hidden only goes unanswered. Comments have no front matter, so skipping it
is the caller's choice.
"""

from __future__ import annotations

import re
import unicodedata
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Literal

MARKDOWN_SUFFIXES = (".md", ".markdown", ".mdown", ".mkd")

# A backtick fence's info string may not hold a backtick (```x` is text, not a fence).
_FENCE = re.compile(r"^ {0,3}(?:(`{3,})[^`]*$|(~{3,}))")
# Every pattern below sees an author's line. Each is written so that the scans started at
# different places in a line cannot each run on to its end (the link checks run on the
# App's event loop, where one slow line stalls every installation): headings and code
# spans are read by hand, tags end at the next `<`, and whitespace is taken whole.
_ATX_OPEN = re.compile(r" {0,3}(#{1,6})(?![^ \t])")
_SETEXT = re.compile(r"^ {0,3}(=+|-+)[ \t]*$")
_BACKTICK_RUN = re.compile(r"`+")
# An empty target is taken only when no title follows it (`[a]( "t")` reads `"t"` as the
# target): every caller skips empty targets, and allowing both made spaces quadratic.
_INLINE_LINK = re.compile(
    r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*+\]\(\s*+"
    r"(<[^<>\n]*>|(?>[^\s()]*(?:\([^\s()]*\)[^\s()]*)*))"
    r"(?:\s++(?:\"[^\"]*\"|'[^']*'|\([^()]*\)))?\s*+\)"
)
_REFERENCE_DEF = re.compile(r"^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)")
# A tag that never closes ends at the next `<`; its attributes are looked for inside it.
_LINKING_TAG = re.compile(r"<(?:a|img)\b[^<>]*", re.I)
_LINK_ATTRIBUTE = re.compile(r"\b(?:href|src)\s*=\s*[\"']([^\"']*)[\"']", re.I)
_ANY_TAG = re.compile(r"<[a-z][^<>]*", re.I)
_ANCHOR_ATTRIBUTE = re.compile(r"\b(?:name|id)\s*=\s*[\"']([^\"']+)[\"']", re.I)
_HTML_TAG = re.compile(r"<[^<>]+>")
_LINK_TEXT_OPEN = re.compile(r"!?\[([^\[\]]*)\]\(")
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


def _opens_fence(line: str) -> str | None:
    """The fence a line opens (its run of backticks or tildes), if it opens one."""
    opened = _FENCE.match(line)
    return None if opened is None else opened.group(1) or opened.group(2)


def _closes_fence(line: str, fence: str) -> bool:
    """Same character, at least as many, and nothing else on the line."""
    closing = _opens_fence(line)
    return (
        closing is not None
        and closing[0] == fence[0]
        and len(closing) >= len(fence)
        and not line.strip().strip(fence[0])
    )


def unfenced_lines(text: str, *, skip_front_matter: bool = False) -> Iterator[tuple[int, str]]:
    """(1-based number, line) outside fenced code blocks, fence lines excluded.

    A fence opens with three or more backticks or tildes (up to three spaces of
    indentation; a backtick fence's info string holds no backtick) and closes with the
    same character, at least as many, and nothing else on the line; an unclosed fence
    runs to the end of the text.
    """
    lines = text.splitlines()
    fence: str | None = None
    for index in range(_front_matter_end(lines) if skip_front_matter else 0, len(lines)):
        line = lines[index]
        if fence is None:
            fence = _opens_fence(line)
            if fence is None:
                yield index + 1, line
        elif _closes_fence(line, fence):
            fence = None


_COMMENT_OPEN = "<!--"
_COMMENT_CLOSE = "-->"
_COMMENT_BLOCK = re.compile(r"^ {0,3}<!--")
# Generous on purpose: an indented `>` line is code on GitHub, not a quote, and hiding
# it (and the lines after it) only hides more.
_QUOTE_MARKERS = re.compile(r"^(?:[ \t]*>)+")


@dataclass
class _Shown:
    """Where a `shown_lines` scan is: in a fence, in an HTML comment (a block of its own,
    or opened inside a paragraph), or in a block quote's paragraph."""

    fence: str | None = None
    comment: Literal["block", "inline"] | None = None
    quote_paragraph: bool = False


def shown_lines(text: str) -> Iterator[tuple[int, str]]:
    """(1-based number, visible text) of the lines GitHub shows as text of their own.

    Left out: fenced code blocks and their fences; HTML comments, as blocks (from a
    line starting `<!--` to the line holding `-->`, blank lines included) or inside a
    paragraph (up to `-->`, unless the paragraph ends first, which leaves `<!--` as
    literal text); block quotes and their lazy continuation lines (every line after a
    quoted line with text, until a blank line). A comment inside a shown line is cut
    out of its text. Lines indented as code are the caller's to judge.
    """
    scan = _Shown()
    for number, line in enumerate(text.splitlines(), start=1):
        shown = _shown_part(scan, line)
        if shown is not None:
            yield number, shown


def _shown_part(scan: _Shown, line: str) -> str | None:
    if scan.fence is not None:
        if _closes_fence(line, scan.fence):
            scan.fence = None
        return None
    if scan.comment == "block" or (scan.comment == "inline" and not _ends_paragraph(line)):
        if _COMMENT_CLOSE in line:
            # The rest of the closing line is HTML (a block) or the middle of a
            # paragraph (inline): neither starts a line a person reads as a command.
            scan.comment = None
        return None
    scan.comment = None
    return _block_start(scan, line)


def _ends_paragraph(line: str) -> bool:
    """Whether a line ends the paragraph a comment opened in (then `<!--` was text).
    Other blocks can end it too; missing them only keeps hiding until `-->`."""
    return not line.strip() or _opens_fence(line) is not None or bool(_QUOTE_MARKERS.match(line))


def _block_start(scan: _Shown, line: str) -> str | None:
    fence = _opens_fence(line)
    if fence is not None:
        scan.fence = fence
        scan.quote_paragraph = False
        return None
    if not line.strip():
        scan.quote_paragraph = False
        return None
    quoted = _QUOTE_MARKERS.match(line)
    if quoted:
        # A quoted line with text leaves a paragraph open that lazy lines continue.
        scan.quote_paragraph = bool(line[quoted.end() :].strip())
        return None
    # Checked before lazy lines: a comment block interrupts the quote's paragraph and,
    # unlike the paragraph, runs across blank lines.
    if _COMMENT_BLOCK.match(line):
        opened = line.index(_COMMENT_OPEN)
        if _COMMENT_CLOSE not in line[opened + 2 :]:
            scan.comment = "block"
        return None
    if scan.quote_paragraph:
        return None
    return _cut_comments(scan, line)


def _cut_comments(scan: _Shown, line: str) -> str:
    """The line without its inline comments; an unclosed one hides the rest of it.
    Code spans are not looked for: a `<!--` inside one only makes the scan hide more."""
    parts: list[str] = []
    at = 0
    while (start := line.find(_COMMENT_OPEN, at)) >= 0:
        parts.append(line[at:start])
        # `<!-->` and `<!--->` are whole comments on GitHub, hence + 2.
        end = line.find(_COMMENT_CLOSE, start + 2)
        if end < 0:
            scan.comment = "inline"
            return "".join(parts)
        at = end + len(_COMMENT_CLOSE)
    parts.append(line[at:])
    return "".join(parts)


def prose_lines(text: str) -> Iterator[tuple[int, str]]:
    """(1-based number, line) outside front matter and fenced code blocks."""
    return unfenced_lines(text, skip_front_matter=True)


@dataclass(frozen=True)
class CodeSpan:
    start: int
    end: int
    content: str


def code_spans(line: str) -> Iterator[CodeSpan]:
    """A line's code spans, as CommonMark reads them: a run of backticks opens a span
    that the next run of exactly as many closes; a run nothing closes is plain text.

    Runs are indexed by length first, so each is looked at a bounded number of times
    (a pattern with a backreference retried every run against every later one)."""
    runs = [(run.start(), run.end()) for run in _BACKTICK_RUN.finditer(line)]
    later_runs: dict[int, deque[int]] = {}
    for index, (start, end) in enumerate(runs):
        later_runs.setdefault(end - start, deque()).append(index)
    index = 0
    while index < len(runs):
        start, end = runs[index]
        same_length = later_runs[end - start]
        while same_length and same_length[0] <= index:
            same_length.popleft()
        if not same_length:
            index += 1
            continue
        closing = same_length.popleft()
        yield CodeSpan(start, runs[closing][1], line[end : runs[closing][0]])
        index = closing + 1


def blank_code_spans(line: str) -> str:
    """The line with each code span replaced by as many spaces (columns are kept)."""
    parts: list[str] = []
    last = 0
    for span in code_spans(line):
        parts += [line[last : span.start], " " * (span.end - span.start)]
        last = span.end
    parts.append(line[last:])
    return "".join(parts)


def atx_heading(line: str) -> tuple[int, str] | None:
    """(level, text) of an ATX heading line: up to three spaces, one to six `#`, then a
    space, a tab or the end; the text loses its optional closing run of `#` (which must
    follow a space or tab) and the spaces and tabs around it."""
    opened = _ATX_OPEN.match(line)
    if opened is None:
        return None
    text = line[opened.end() :].strip(" \t")
    unclosed = text.rstrip("#")
    if unclosed != text and (not unclosed or unclosed[-1] in " \t"):
        text = unclosed.rstrip(" \t")
    return len(opened.group(1)), text


def _link_texts(text: str) -> str:
    """`[text](target)` and `![text](target)` replaced by their text. The target runs to
    the first `)`; when none follows an opening, none follows any later one either, so
    the scan stops there."""
    parts: list[str] = []
    last = 0
    for opening in _LINK_TEXT_OPEN.finditer(text):
        if opening.start() < last:
            continue  # inside the target of the link before
        closing = text.find(")", opening.end())
        if closing < 0:
            break
        parts += [text[last : opening.start()], opening.group(1)]
        last = closing + 1
    parts.append(text[last:])
    return "".join(parts)


def _strip_inline(text: str) -> str:
    text = _link_texts(text)
    text = _HTML_TAG.sub("", text)
    text = _STARS.sub("", text)
    return _UNDERSCORES.sub("", text)


def _heading_text(raw: str) -> str:
    """Rendered text of a heading: code spans verbatim, markup elsewhere removed."""
    parts: list[str] = []
    last = 0
    for span in code_spans(raw):
        parts += [_strip_inline(raw[last : span.start]), span.content.strip()]
        last = span.end
    parts.append(_strip_inline(raw[last:]))
    return "".join(parts)


def slug(heading: str) -> str:
    kept = []
    for ch in heading.strip().lower():
        if ch in " -_" or unicodedata.category(ch)[0] in "LNM":
            kept.append(ch)
    return "".join(kept).replace(" ", "-")


def _tag_attributes(line: str, tag: re.Pattern[str], attribute: re.Pattern[str]) -> Iterator[str]:
    """The value of the first `attribute` in each `tag` of the line."""
    for found in tag.finditer(line):
        value = attribute.search(found.group())
        if value is not None:
            yield value.group(1)


def anchors(text: str) -> set[str]:
    """Every fragment a link may target in this Markdown document (lower-case)."""
    seen: dict[str, int] = {}
    out: set[str] = set()
    previous: str | None = None
    for _, line in prose_lines(text):
        out.update(name.lower() for name in _tag_attributes(line, _ANY_TAG, _ANCHOR_ATTRIBUTE))
        heading: str | None = None
        atx = atx_heading(line)
        if atx is not None:
            heading = atx[1]
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
        visible = blank_code_spans(line)
        for match in _INLINE_LINK.finditer(visible):
            yield Link(number, match.group(1))
        definition = _REFERENCE_DEF.match(visible)
        if definition:
            yield Link(number, definition.group(1))
        for target in _tag_attributes(visible, _LINKING_TAG, _LINK_ATTRIBUTE):
            yield Link(number, target)
