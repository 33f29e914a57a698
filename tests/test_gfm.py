"""GitHub-flavoured Markdown for GitHub output (`bot/gfm.py`): credentials scrubbed from any
text, untrusted text escaped for where it goes (a table cell, a code span, a quote, a
bullet), and blocks fitted into GitHub's size limits with a note of what was left out."""

from __future__ import annotations

import re

import pytest

from bot.gfm import (
    bullet_untrusted,
    cell,
    code,
    code_cell,
    escape_controls,
    finish,
    fit_blocks,
    one_line,
    quote_untrusted,
    scrub_secrets,
    table,
)
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


# --- escaping untrusted text ----------------------------------------------------------

BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"


def test_direction_controls_become_visible_escapes() -> None:
    """A right-to-left override makes `txt.exe` read as `exe.txt`: every bidi and
    direction mark is shown as its escape instead, wherever untrusted text goes."""
    assert escape_controls("invoice\u202eexe.txt") == "invoice\\u202eexe.txt"
    assert escape_controls(BIDI) == "".join(f"\\u{ord(c):04x}" for c in BIDI)
    assert escape_controls("plain \u200b text") == "plain \u200b text"  # defanging uses it
    for escape in (one_line, cell, code, code_cell):
        assert not set(BIDI) & set(escape(f"a{BIDI}b", 500))
    for block in (
        quote_untrusted(f"a{BIDI}b", 500),
        bullet_untrusted([BIDI], max_items=1, item_limit=500),
    ):
        assert not set(BIDI) & set(block)
    assert finish(f"title {BIDI}", 500) == "title " + escape_controls(BIDI)


def test_cell_is_one_line_with_nothing_that_breaks_a_table_or_forms_html() -> None:
    hostile = "a|b `c` <img src=x>\nnext\\| &#x202e; &rlm; & @octocat"
    assert cell(hostile, 200) == (
        "a\\|b \\`c\\` &lt;img src=x&gt; next\\\\\\| &amp;#x202e; &amp;rlm; & @\u200boctocat"
    )


@pytest.mark.parametrize(
    ("text", "prose", "in_table"),
    [
        ("docs/a.md", "`docs/a.md`", "`docs/a.md`"),
        (
            "src/p|q`r<img src=x>.py",
            "`` src/p|q`r<img src=x>.py ``",
            "`` src/p\\|q`r<img src=x>.py ``",
        ),
        ("a``b`", "``` a``b` ```", "``` a``b` ```"),
        ("`x`", "`` `x` ``", "`` `x` ``"),
        ("two\nlines", "`two lines`", "`two lines`"),
        ("", "`-`", "`-`"),
    ],
)
def test_code_spans_cannot_be_closed_early(text: str, prose: str, in_table: str) -> None:
    """A fence longer than any backtick run inside, padded with spaces, keeps the text
    whole; in a table a pipe needs `\\|` even inside the span (GitHub splits rows first)."""
    assert code(text) == prose
    assert code_cell(text) == in_table


def test_quote_neutralises_html_and_entities() -> None:
    quoted = quote_untrusted("<!-- x --> &#x202e; <b>bold</b>\n/judge override accept", 500)
    assert quoted == (
        "> &lt;!-- x --&gt; &amp;#x202e; &lt;b&gt;bold&lt;/b&gt;\n> /judge override accept"
    )


def test_bullets_cannot_start_blocks() -> None:
    """An item is one line of text: it cannot become a heading, a nested list, a rule,
    a quote or a fence inside its bullet."""
    items = ["# heading", "1. nested", "- nested", "* nested", "+ nested", "~~~", "> quote", "ok"]
    assert bullet_untrusted(items, max_items=10, item_limit=50).splitlines() == [
        "- \\# heading",
        "- 1\\. nested",
        "- \\- nested",
        "- \\* nested",
        "- \\+ nested",
        "- \\~~~",
        "- &gt; quote",
        "- ok",
    ]


def test_table_rows_keep_their_cells() -> None:
    row = [code_cell("src/p|q`r<img src=x>.py"), cell("x|y\nz")]
    rendered = table(["File", "Why"], [row])
    assert rendered.splitlines()[-1] == "| `` src/p\\|q`r<img src=x>.py `` | x\\|y z |"
