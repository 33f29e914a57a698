"""Shared helpers for turning verdict records into GitHub Markdown safely.

Everything a judge writes (reasoning, improvements, finding messages) is untrusted, and
so is everything an author names (paths, titles, labels, logins): a change under review
can steer a model into echoing a token, pinging people with @mentions, opening a code
fence that swallows the rest of a comment, or writing a `/judge override accept` line;
a file named ``src/p|q`r<img src=x>.py`` can split a table row and leave raw HTML; a
right-to-left override (U+202E) can make `txt.exe` read as `exe.txt`. So untrusted text
is scrubbed of secret shapes, defanged and escaped for where it goes before it reaches
Markdown: `cell` for text in a table cell or a line of prose, `code` / `code_cell` for
a code span in prose / in a table cell, `quote_untrusted` and `bullet_untrusted` for
blocks. Every finished string is scrubbed again as defence in depth (`finish`).

What each escape guards against: a pipe splits a table row, and GitHub splits rows
before it reads code spans, so a pipe needs `\\|` even inside a span in a cell; a
backtick closes a span early unless the span's fence is longer than any backtick run
inside; `<` and `>` form HTML (comments included) outside spans, and an entity such as
`&#x202e;` is decoded into the character it names; a newline ends a row or a bullet;
bidi and direction controls (U+202A-U+202E, U+2066-U+2069, U+200E, U+200F, U+061C)
become visible escapes such as `\\u202e`.

GitHub limits are met by summarising: output is built from whole blocks (a table, a
paragraph) and blocks that do not fit are dropped with a note saying how much was left
out. Nothing here raises because something is too long.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from bot.credentials import redact

# GitHub refuses an issue or comment body longer than this (characters).
COMMENT_LIMIT = 65_536


_CONTROLS = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def escape_controls(text: str) -> str:
    """Bidi and direction controls as visible escapes (`\\u202e`): they reorder what a
    reader sees without being seen. U+200B is left alone: `defang_mentions` uses it."""
    return _CONTROLS.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def scrub_secrets(text: str) -> str:
    """Replace anything shaped like a credential with `[redacted]`: every shape in
    `bot.credentials`, placeholders included, and a key block cut before its END line
    to the end of the text, so a truncated key leaks nothing either."""
    return redact(text)


_MENTION = re.compile(r"(?<![\w`@/])@(?=[A-Za-z0-9])")
_REFERENCE = re.compile(r"(?<!&)#(?=\d)")


def defang_mentions(text: str) -> str:
    """Keep `@name` and `#12` readable without notifying anyone or cross-referencing
    an issue (a zero-width space after the sigil)."""
    return _REFERENCE.sub("#\u200b", _MENTION.sub("@\u200b", text))


def plural(count: int, word: str, many: str | None = None) -> str:
    return f"{count} {word if count == 1 else (many or word + 's')}"


# Untrusted text is cut to its limit plus this margin before it is scrubbed: scrubbing
# a model's 300 kB answer only to show 6 kB of it is slow, and a secret cut at the
# first cut is removed again at the final, shorter one (PEM blocks match without END).
_PRECUT_MARGIN = 8_192


def shorten(text: str, limit: int, *, total: int | None = None) -> str:
    """At most `limit` characters, cut at a line (or word) boundary, with a note of
    how many characters were left out (of `total`, when `text` was already cut)."""
    if len(text) <= limit:
        return text
    note_room = 60
    budget = max(limit - note_room, 0)
    cut = text.rfind("\n", 0, budget)
    if cut < budget // 2:
        cut = text.rfind(" ", 0, budget)
    if cut < budget // 2:
        cut = budget
    left_out = max(total or 0, len(text)) - cut
    note = f"… ({left_out:,} characters left out)"
    return (text[:cut].rstrip() + "\n" + note)[:limit]


def one_line(text: str, limit: int) -> str:
    """Untrusted text as a single scrubbed line of at most `limit` characters, its
    direction controls escaped (titles and annotations are plain text, not Markdown)."""
    flat = " ".join(escape_controls(scrub_secrets(text[: 2 * limit + _PRECUT_MARGIN])).split())
    if len(flat) > limit:
        flat = flat[: max(limit - 1, 0)].rstrip() + "…"
    return flat


# `&name;` / `&#x202e;`: GitHub decodes these into the characters they name.
_ENTITY = re.compile(r"&(?=#?[A-Za-z0-9]+;)")


def _no_html(text: str) -> str:
    return _ENTITY.sub("&amp;", text).replace("<", "&lt;").replace(">", "&gt;")


def cell(text: str, limit: int = 120) -> str:
    """Text safe inside a Markdown table cell or a line of prose: one line, mentions
    defanged, pipes and backticks escaped (no row split, no code span), no HTML."""
    flat = defang_mentions(one_line(text, limit))
    flat = flat.replace("\\", "\\\\").replace("|", "\\|").replace("`", "\\`")
    return _no_html(flat)


def app_line(text: str, limit: int) -> str:
    """A sentence the app wrote around untrusted names (a login, a label): its Markdown
    kept, but one line, scrubbed, with no HTML, entity or direction control in it."""
    return _no_html(one_line(text, limit))


_BACKTICKS = re.compile(r"`+")


def _code_span(content: str) -> str:
    """A span no backtick run inside can close: its fence is longer than the longest
    run, and padded with spaces (GitHub strips one each side) when there are any."""
    longest = max((len(run) for run in _BACKTICKS.findall(content)), default=0)
    if not longest:
        return f"`{content}`"
    fence = "`" * (longest + 1)
    return f"{fence} {content} {fence}"


def code(text: str, limit: int = 200) -> str:
    """Untrusted text as one inline code span in prose, shown exactly (one line)."""
    flat = one_line(text, limit)
    return _code_span(flat) if flat else "`-`"


def code_cell(text: str, limit: int = 200) -> str:
    """`code` for a table cell: GitHub splits table rows on pipes before it reads code
    spans, so a pipe inside the span is written `\\|` (and shown as `|`)."""
    flat = one_line(text, limit)
    return _code_span(flat.replace("|", "\\|")) if flat else "`-`"


def quote_untrusted(text: str, limit: int) -> str:
    """Untrusted multi-line text as a Markdown blockquote: scrubbed, mentions defanged,
    HTML neutralised, capped. A quote also contains any code fence the text opens, and
    command parsing ignores quoted lines."""
    precut = text[: limit + _PRECUT_MARGIN]
    clean = _no_html(defang_mentions(escape_controls(scrub_secrets(precut)))).strip()
    if not clean:
        return "> _(empty)_"
    clean = shorten(clean, limit, total=len(clean) + len(text) - len(precut))
    return "\n".join(f"> {line}".rstrip() for line in clean.splitlines())


# What would make a bullet's text a block of its own: a heading, a nested list, a rule,
# a fence (a quote is already `&gt;`, a backtick fence already escaped).
_BLOCK_MARKER = re.compile(
    r"^(?:#{1,6}(?=[ \t]|$)|[*+-](?=[ \t]|$)|[-*_](?:[ \t]*[-*_]){2,}[ \t]*$|~{3,}"
    r"|\d{1,9}(?=[.)](?:[ \t]|$)))"
)


def _inline_only(text: str) -> str:
    marker = _BLOCK_MARKER.match(text)
    if marker is None:
        return text
    if marker.group().isdigit():
        return marker.group() + "\\" + text[marker.end() :]
    return "\\" + text


def bullet_untrusted(items: Sequence[str], *, max_items: int, item_limit: int) -> str:
    """Untrusted list items as Markdown bullets (each one line), capped in count."""
    lines = [f"- {_inline_only(cell(item, item_limit))}" for item in items[:max_items]]
    if len(items) > max_items:
        lines.append(f"- _… {plural(len(items) - max_items, 'more item')} left out_")
    return "\n".join(lines)


def table(header: Sequence[str], rows: Iterable[Sequence[str]]) -> str:
    """A Markdown table; callers pass cells already made safe with `cell`/`code_cell`."""
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    lines.extend("| " + " | ".join(row) + " |" for row in rows)
    return "\n".join(lines)


def fit_blocks(
    blocks: Sequence[str],
    limit: int,
    *,
    tail: Sequence[str] = (),
    what: str = "section",
    separator: str = "\n\n",
) -> str:
    """Join whole blocks within `limit` characters.

    `tail` blocks are always kept (at the end). Body blocks are kept in order until one
    does not fit; the rest are replaced by one note saying how many blocks and
    characters were left out, so a table is never cut in the middle. Only if the very
    first body block alone is too large is it shortened at a line boundary.
    """
    everything = [*blocks, *tail]
    joined = separator.join(b for b in everything if b)
    if len(joined) <= limit:
        return joined
    tail_text = separator.join(b for b in tail if b)
    note_room = 200
    budget = limit - len(tail_text) - note_room - (len(separator) if tail_text else 0)
    kept: list[str] = []
    used = 0
    dropped = 0
    dropped_chars = 0
    for block in (b for b in blocks if b):
        cost = len(block) + (len(separator) if kept else 0)
        if dropped == 0 and used + cost <= budget:
            kept.append(block)
            used += cost
            continue
        if dropped == 0 and not kept and budget > 0:
            short = shorten(block, budget)
            kept.append(short)
            used += len(short)
            dropped_chars += len(block) - len(short)
            continue
        dropped += 1
        dropped_chars += len(block)
    if dropped or dropped_chars:
        kept.append(
            f"_… {plural(dropped, what)} ({dropped_chars:,} characters) left out to stay "
            "within GitHub's size limit._"
        )
    if tail_text:
        kept.append(tail_text)
    result = separator.join(kept)
    # A tail larger than the limit is a caller bug; still never exceed the limit.
    return result if len(result) <= limit else shorten(result, limit)


def finish(text: str, limit: int) -> str:
    """Last step for every rendered string: scrub, escape any direction control that
    slipped through, then guarantee the limit."""
    return shorten(escape_controls(scrub_secrets(text)), limit)


# --- verdicts -------------------------------------------------------------------------


def short_sha(sha: str) -> str:
    return sha[:7]
